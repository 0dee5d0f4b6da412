"""Teaching mode: a stepped frame visits the phases in order, hands the objects GL -> CL -> GL, and
leaves the same GL buffers and pixels as a normal frame; the runtime's keys drive it."""
from __future__ import annotations

import numpy as np
import pytest

from app.config import RunConfig
from app.scenes import scene_class
from app.scenes.particles import initial_state, reference_steps
from app.schedule.scheduler import FrameScheduler
from app.schedule.teach import TeachingStepper
from app.sharing.backends.host_copy import HostCopy
from app.validate.ownership import CL, GL

N = 512


def _build(backend, surface):
    scene = scene_class("particles")(RunConfig(size=N, seed=11))
    scene.build(backend, surface.framebuffer_size)
    return scene, FrameScheduler(backend, scene, backend.make_sync("finish"), strict=True)


def _target(surface):
    return lambda: surface.framebuffer_size if surface.bind_target() else None


def test_stepping_visits_phases_in_order_and_matches_a_normal_frame(host_copy, surface):
    frames = 3
    stepped, sched_a = _build(host_copy, surface)
    normal, sched_b = _build(host_copy, surface)
    stepper = TeachingStepper()
    owners = []
    try:
        for f in range(frames):
            # the stepped scene, one phase at a time
            for expected in ("acquire", "compute", "release", "render"):
                phase, rec = stepper.advance(sched_a, f, _target(surface))
                assert phase == expected
                assert (rec is not None) == (phase == "render")
                owners.append({host_copy.tracker.owner_of(o) for o in stepped.shared})
            assert stepper.visited == ["acquire", "compute", "release", "render"] and not stepper.mid_frame
            sched_a.finish()
            px_stepped = surface.read_pixels()
            # the same frame, run normally
            rec = sched_b.run_frame(f, _target(surface))
            assert rec.errors == [] and rec.hazards == []
            sched_b.finish()
            px_normal = surface.read_pixels()
            np.testing.assert_array_equal(px_stepped, px_normal)
        assert px_normal.std() > 1  # something was drawn
        assert owners[:4] == [{CL}, {CL}, {GL}, {GL}]
        for name in ("position", "color"):
            a, b = getattr(stepped, name).gl.read(), getattr(normal, name).gl.read()
            np.testing.assert_array_equal(a, b)  # same kernel, same inputs: bit for bit
        ref = reference_steps(initial_state(N, 11), frames)
        got = stepped.position.gl.read().reshape(N, 4)
        np.testing.assert_allclose(got, ref["position"], atol=1e-4)  # float32 kernel vs float64 numpy
        assert [r.counts for r in sched_a.records] == [r.counts for r in sched_b.records]
    finally:
        for sched, scene in ((sched_a, stepped), (sched_b, normal)):
            sched.finish()
            sched.close()
            scene.teardown()


def test_a_phase_that_raises_abandons_the_frame(host_copy, surface):
    scene, sched = _build(host_copy, surface)
    stepper = TeachingStepper()
    try:
        sched.skip = {"acquire"}
        from app.errors import HazardError

        assert stepper.advance(sched, 0, _target(surface))[0] == "acquire"
        with pytest.raises(HazardError):  # strict: the kernel on an object CL does not own
            stepper.advance(sched, 0, _target(surface))
        assert not stepper.mid_frame
        sched.skip = set()
        host_copy.tracker.strict = sched.strict = False
        assert [stepper.advance(sched, 1, _target(surface))[0] for _ in range(4)] == [
            "acquire", "compute", "release", "render"]
    finally:
        sched.finish()
        sched.close()
        scene.teardown()


def test_runtime_keys_drive_teaching_and_hazard_demos(gl):
    from app.run import Run
    from app.window.egl_headless import EglSurface

    surface = EglSurface((96, 72))
    try:
        cfg = RunConfig(scene="particles", size=1024, headless=True, overlay=True, frames=10_000, seed=2,
                        backend=HostCopy.name)  # its hazard texts are asserted
        with Run(cfg, surface=surface) as rt:
            rt.tick()
            frame = rt.session.frame
            rt.controls.key("t")
            assert rt.session.paused and rt.session.stepper.active
            rt.tick()  # paused: nothing runs
            assert rt.session.frame == frame and not rt.session.stepper.mid_frame
            snap = rt.session.teaching_view(rt.session.owners())
            assert snap.step_index == 0 and snap.next == "acquire"
            seen = []
            for _ in range(4):
                rt.controls.key("n")
                rec = rt.tick()
                snap = rt.session.teaching_view(rt.session.owners())
                seen.append((snap.last, snap.step_index, {o.owner for o in snap.objects}, snap.gl_may_draw,
                             rec is not None))
            assert seen == [("acquire", 1, {"cl"}, False, False), ("compute", 2, {"cl"}, False, False),
                            ("release", 3, {"gl"}, True, False), ("render", 4, {"gl"}, True, True)]
            assert rt.session.frame == frame + 1
            rt.controls.key("right")
            rt.tick()
            assert rt.session.stepper.mid_frame
            rt.controls.key("t")  # leaving finishes the frame in progress
            assert not rt.session.stepper.active and not rt.session.paused and not rt.session.stepper.mid_frame
            assert rt.session.frame == frame + 2
            # hazard demonstrations: 2 skips the release, and the next frames are flagged
            rt.controls.key("2")
            assert rt.session.scheduler.skip == {"release"}
            rec = rt.tick()
            rec = rt.tick()
            assert {"double_acquire", "gl_use_while_acquired"} <= {h.case for h in rec.hazards}
            rt.controls.key("2")
            rt.controls.key("3")  # sync none, skips kept across that switch
            assert rt.session.cfg.sync == "none" and rt.session.scheduler.skip == set()
            rt.controls.key("1")
            rt.controls.key("3")
            assert rt.session.cfg.sync == "finish" and rt.session.scheduler.skip == {"acquire"}
            rt.controls.key("1")
            rt.controls.key("4")
            rec = rt.tick()
            assert "delete_gl_while_shared" in {h.case for h in rec.hazards}
            demos = rt.controls.demo_views()
            assert [d.key for d in demos] == ["1", "2", "3", "4", "5"] and rt.controls.deletes == 1
            assert "Frozen frame" in demos[1].effect
            assert "one frame late" in demos[4].effect and not demos[4].on  # host_copy: the postprocess demo
    finally:
        surface.close()


def test_teaching_panel_draws_headless(gl):
    from app.schedule.teach import TeachingStepper, teaching_view
    from app.session.views import OwnerView
    from app.ui.imgui_layer import ImGuiLayer
    from app.ui.teaching import draw_owners, draw_teaching

    stepper = TeachingStepper()
    stepper.start()
    objects = (OwnerView("particles.position", "buffer", "cl", "CL", 4, 5, 4),)
    active = teaching_view(stepper, frame=4, paused=True, objects=objects, backend="host_copy",
                           does={"render": "host_copy: drew"}, sync="finish", skip=set())
    idle = teaching_view(TeachingStepper(), frame=4, paused=False, objects=(), backend="host_copy", does={},
                         sync="finish", skip=())
    layer = ImGuiLayer(gl)
    try:
        from imgui_bundle import imgui

        got = []

        def build():
            imgui.begin("teach")
            got.append(draw_teaching(active))
            got.append(draw_teaching(idle))
            draw_owners(active)
            imgui.end()

        gl.bind_target()
        layer.draw(build)
        assert got == [None, None]
    finally:
        layer.close()


def test_teaching_quotes_are_the_spec_words_and_cited():
    """Each step's quote is in the seed text (whitespace aside), cited with its section; glshare's
    own explanation is separate and not part of any quote; the steps are the timeline's phases."""
    import re

    from support import ROOT

    from app.schedule.frame import PHASES
    from app.schedule.teach import NOTES, STEPS, citation, quote
    from tests.spec_texts import quote_found, spec_texts

    seed_file = ROOT.parent / "shared" / "spec" / "gl-acquire-release.txt"
    if not seed_file.exists():
        seed_file = ROOT / "shared" / "spec" / "gl-acquire-release.txt"
    if not seed_file.exists():
        pytest.skip(f"the seed text is not here ({seed_file})")
    seed = seed_file.read_text()
    flat = " ".join(seed.split())
    section = re.search(r"^(\d+(?:\.\d+)+)\.? Acquiring", seed, re.M).group(1)
    assert STEPS == PHASES
    texts = spec_texts()
    for sync in ("finish", "none", "gl_event"):
        for phase in PHASES:
            words, cite = quote(phase, "gl_sharing", sync), citation(phase, "gl_sharing", sync)
            assert quote_found(words, texts), (sync, phase)
            assert f"section {section}" in cite and "OpenCL 3.0.16" in cite, cite  # the version named
            assert "clEnqueue" in cite
    # cl_khr_gl_event's paragraphs only under gl_event; without it the application finishes the other API's work
    for phase in ("acquire", "release"):
        bound = "If an OpenGL context is bound to the current thread"
        assert quote(phase, "gl_sharing", "gl_event").startswith(bound) and "cl_khr_gl_event" in citation(
            phase, "gl_sharing", "gl_event")
        assert not quote(phase, "gl_sharing", "finish").startswith(bound)
        assert " ".join(quote(phase, "gl_sharing", "gl_event").split()) in flat
    assert quote("acquire", "gl_sharing", "finish").startswith("Prior to acquiring objects shared with the other API")
    assert quote("release", "gl_sharing", "none").startswith("After releasing a shared memory object")
    for phase in PHASES:
        assert NOTES[phase] and NOTES[phase] not in flat  # glshare's words, not the spec's


def test_external_memory_teaching_quotes_its_own_extension():
    """A backend validated against cl_khr_external_memory is taught in that extension's words (from
    app/validate/khr_extracts.txt, whitespace aside), cited with its entry points, not 5.5.15's."""
    from support import ROOT

    from app.schedule.frame import PHASES
    from app.schedule.teach import TeachingStepper, citation, quote, teaching_view

    flat = " ".join((ROOT / "app" / "validate" / "khr_extracts.txt").read_text().split())
    for phase in PHASES:
        words = quote(phase, "external_memory")
        assert " ".join(words.split()) in flat, phase
        assert words != quote(phase, "gl_sharing")
        assert "ExternalMemObjectsKHR" in citation(phase, "external_memory") and "5.5.15" not in citation(
            phase, "external_memory")
    view = teaching_view(TeachingStepper(), frame=3, paused=True, objects=(), backend="external_memory", does={},
                         sync="semaphore", skip=(), rule_set="external_memory")
    assert view.spec == quote("render", "external_memory") and "clEnqueueReleaseExternalMemObjectsKHR" in view.cite


def test_strict_run_stops_on_the_first_hazard(gl, tmp_path):
    """--strict headless: the demonstration's first flag stops the run at that frame boundary; the
    report of what was recorded is written and says how and where it stopped (exit status 1)."""
    import json

    from app.run import Run
    from app.window.egl_headless import EglSurface

    surface = EglSurface((64, 48))
    try:
        cfg = RunConfig(scene="image", size=(32, 24), headless=True, overlay=False, frames=10_000, strict=True,
                        report=tmp_path / "r.json")
        with Run(cfg, surface=surface) as rt:
            assert rt.tick().hazards == []
            rt.controls.key("1")
            assert rt.tick() is None  # the frame stopped at the kernel: no record completed
            stop = rt.loop()  # ends at once, at the frame boundary
            written = rt.finish()
        assert stop.how == "strict" and stop.exit_code == 1 and stop.frame == 1
        assert stop.message.startswith("kernel: use_without_acquire on image.julia")
        report = json.loads((tmp_path / "r.json").read_text())
        assert written["report"] == str(tmp_path / "r.json")
        assert report["stopped"]["how"] == "strict" and report["stopped"]["frame"] == 1
        assert any(e["frame"] == 1 and "use_without_acquire" in e["message"] for e in report["errors"])
        assert report["frames"] == 1
    finally:
        surface.close()


def test_strict_demo_command_stops_too(gl):
    from app.run import Run
    from app.window.egl_headless import EglSurface

    surface = EglSurface((64, 48))
    try:
        cfg = RunConfig(scene="image", size=(32, 24), headless=True, overlay=False, frames=10_000, strict=True)
        with Run(cfg, surface=surface) as rt:
            rt.tick()
            rt.controls.request("demo", demo="wrong_delete_order")  # as the panel's button queues it
            rt.tick()
            assert rt.strict_stop is not None and "delete_gl_while_shared" in rt.strict_stop.message
            assert rt.loop().how == "strict"
    finally:
        surface.close()


def test_a_stepped_frame_is_always_timed(host_copy, surface):
    """However short the frames before it, a frame stepped phase by phase has its CL stamps read and
    its draw timed (FrameRecord.sampled), while frames run normally in between are not."""
    scene = scene_class("particles")(RunConfig(size=N, seed=11))
    scene.build(host_copy, surface.framebuffer_size)
    day = 86_400 * 10**9  # one frame timed per day of frame time: only the first, unless stepped
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True, stamps_interval_ns=day)
    stepper = TeachingStepper()
    try:
        sched.run_frame(0, _target(surface))
        sched.run_frame(1, _target(surface))
        rec = None
        while rec is None:
            _, rec = stepper.advance(sched, 2, _target(surface))
        sched.run_frame(3, _target(surface))
        sched.finish()
        recs = list(sched.records)
        assert [r.sampled for r in recs] == [True, False, True, False]
        assert [bool(r.cl_profile) for r in recs] == [True, False, True, False]
        assert [bool(r.gl_passes) for r in recs] == [True, False, True, False]
        assert recs[2].stepped and recs[2].cl_profile["compute"][2] <= recs[2].cl_profile["compute"][3]
    finally:
        sched.close()
        scene.teardown()
