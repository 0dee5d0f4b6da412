"""Errors met by a session and its loop: a refused switch or size leaves the old set-up running,
recorded once, and nothing behind; a frame's raw CL and GL errors are glshare's; --strict stops
only on findings (every other error is recorded and the loop goes on); the tracker's bookkeeping
is done before it raises; every output of a run is attempted; a window's screenshot is the last
frame presented; external memory's imports leave no fd or object behind when one fails."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pyopencl as cl
import pytest
from support import ROOT

from app.config import RunConfig
from app.diagnostics import live
from app.errors import ClError, GlError, HazardError, OutputError, UsageError
from app.run import Run
from app.schedule.faults import Fault
from app.sharing.backends.host_copy import HostCopy

ns = time.perf_counter_ns
needs_display = pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")


def _cfg(**kw) -> RunConfig:
    base = dict(headless=True, overlay=False, frames=10_000)
    base.update(kw)
    return RunConfig(**base)


# -- switches and sizes ------------------------------------------------------------------------------
def test_a_failed_switch_under_strict_rebuilds_the_old_set_up_and_is_recorded_once(gl, monkeypatch):
    """The key path: Controls.key -> switch -> a build error that is no finding."""
    from app.scenes.image import ImageScene

    def broken(self, backend, size):
        raise RuntimeError("image build broke")

    monkeypatch.setattr(ImageScene, "_build", broken)
    with Run(_cfg(scene="particles", size=1024, strict="spec"), surface=gl) as rt:
        rt.tick()
        baseline = live.snapshot()
        assert rt.session.next_choice("scene") == "image"
        assert rt.controls.key("s") == "scene refused: RuntimeError: image build broke"
        s = rt.session
        assert (s.cfg.scene, s.scene.name) == ("particles", "particles") and s.scheduler is not None
        assert [(e.where, e.name, e.message) for e in s.history.loop_errors] == [
            ("switch scene", "RuntimeError", "image build broke")]
        rec = rt.tick()
        assert rec is not None and rec.scene == "particles" and rec.errors == [] and rt.strict_stop is None
        assert live.snapshot() == baseline


@pytest.mark.parametrize("strict, kind, raised", [
    ("spec", "spec", True), ("spec", "advice", False), ("all", "advice", True), ("off", "spec", False)])
def test_a_finding_that_refuses_a_switch_is_raised_after_the_old_set_up_is_back(gl, monkeypatch, strict, kind,
                                                                                 raised):
    from app.scenes.image import ImageScene

    built = ImageScene.build

    def flagged(self, backend, size):
        built(self, backend, size)  # a whole build, then the finding
        raise HazardError("use_without_acquire", "image.julia", "a sentence", where="build", kind=kind)

    monkeypatch.setattr(ImageScene, "build", flagged)
    with Run(_cfg(scene="particles", size=1024, strict=strict), surface=gl) as rt:
        rt.tick()
        baseline = live.snapshot()
        if raised:
            with pytest.raises(HazardError):
                rt.session.switch(scene="image")
        else:
            outcome = rt.session.switch(scene="image")
            assert not outcome and outcome.message.startswith("scene refused: build: use_without_acquire")
        s = rt.session
        assert s.scene.name == "particles" and s.scheduler is not None and s.backend is not None
        assert [e.message for e in s.history.loop_errors] == ["build: use_without_acquire on image.julia: "
                                                               "a sentence"]  # once, raised or not
        assert rt.tick().errors == []
        assert live.snapshot() == baseline  # the image scene that built whole was torn down


def test_a_size_that_fails_to_build_rebuilds_the_size_before_it(gl, monkeypatch):
    from app.scenes.particles import ParticlesScene

    build = ParticlesScene._build

    def fussy(self, backend):
        if self.current_size == 4096:
            raise UsageError("4096 particles refused (test)")
        build(self, backend)

    monkeypatch.setattr(ParticlesScene, "_build", fussy)
    with Run(_cfg(scene="particles", size=1024), surface=gl) as rt:
        rt.tick()
        baseline = live.snapshot()
        s = rt.session
        outcome = s.set_size(4096)
        assert not outcome and outcome.what == "size" and "4096 particles refused" in outcome.message
        assert (s.scene.n, s.sizes["particles"], s.cfg.size) == (1024, 1024, 1024)
        assert [e.where for e in s.history.loop_errors] == ["switch size"] and s.history.switches == []
        assert rt.tick().errors == [] and live.snapshot() == baseline
        assert s.set_size(2048) and s.scene.n == 2048
        assert [sw["what"] for sw in s.history.switches] == ["size"]


def test_a_switch_whose_old_set_up_cannot_be_rebuilt_ends_the_run_with_an_error(gl, monkeypatch):
    from app.errors import GlshareError
    from app.scenes.image import ImageScene
    from app.scenes.particles import ParticlesScene

    def broken(self, *args):
        raise RuntimeError(f"{self.name} build broke")

    before = live.snapshot()
    with Run(_cfg(scene="particles", size=256), surface=gl) as rt:
        rt.tick()
        monkeypatch.setattr(ImageScene, "_build", broken)
        monkeypatch.setattr(ParticlesScene, "_build", broken)
        with pytest.raises(GlshareError) as err:
            rt.session.switch(scene="image")
        assert "could not be rebuilt: RuntimeError: particles build broke" in err.value.one_line()
        assert rt.session.scheduler is None and rt.tick() is None  # recorded, no crash
        stop = rt.loop()
    assert (stop.how, stop.frame, stop.exit_code) == ("error", 1, 1)
    assert stop.message.startswith("no set-up left to run: scene: image / ")
    assert live.snapshot() == before


def test_a_refused_sync_is_not_kept_as_the_user_s_choice(gl):
    with Run(_cfg(scene="particles", size=256), surface=gl) as rt:
        s = rt.session
        assert not s.switch(sync="semaphore")  # host_copy has no exported semaphores
        assert s.requested_sync == "finish"
        assert s.switch(sync="none") and s.requested_sync == "none"


def _image_local_size_refused(monkeypatch):
    import app.scenes.base as base

    check = base.check_local_size

    def limited(local, device, kernels, dims, what):
        if what == "the image scene":
            raise UsageError(f"{what}: local size 8x8 is 64 work-items a group, more than kernel julia's "
                             "CL_KERNEL_WORK_GROUP_SIZE = 32 on this device (test)")
        return check(local, device, kernels, dims, what)

    monkeypatch.setattr(base, "check_local_size", limited)


def _image_program_fails(monkeypatch):
    import app.scenes.image as image

    def no_program(*a, **kw):
        raise ClError(-11, where="clBuildProgram", detail="julia.cl did not build (test)")

    monkeypatch.setattr(image, "julia_program", no_program)  # after the quad was made


def _particles_shader_fails(monkeypatch):
    import app.scenes.particles as particles

    def no_shader(*a, **kw):
        raise GlError(0x0502, where="glLinkProgram", detail="particles did not link (test)")

    monkeypatch.setattr(particles, "Program", no_shader)  # after the shared and CL-only buffers, the kernel


def _gl_check_after_the_image_build_fails(monkeypatch):
    import app.session.session as session_mod

    check = session_mod.check_gl

    def failing(where, code=None):
        if where.startswith("build image"):
            raise GlError(0x0505, where=where, detail="(test)")
        return check(where, code)

    monkeypatch.setattr(session_mod, "check_gl", failing)


@pytest.mark.parametrize("start, to, spoil", [
    ("particles", "image", _image_local_size_refused),
    ("particles", "image", _image_program_fails),
    ("image", "particles", _particles_shader_fails),
    ("particles", "image", _gl_check_after_the_image_build_fails),
])
def test_a_failed_switch_leaves_no_live_object_behind(gl, monkeypatch, start, to, spoil):
    size = 1024 if start == "particles" else (64, 48)
    with Run(_cfg(scene=start, size=size, local_size=(8, 8)), surface=gl) as rt:
        rt.tick()
        baseline = live.snapshot()
        assert baseline  # the running set-up's objects are counted
        spoil(monkeypatch)
        outcome = rt.session.switch(scene=to)
        assert not outcome and "(test)" in outcome.message
        assert rt.session.scene.name == start
        assert rt.tick().errors == []  # (a quad makes its GL program at its first draw)
        assert live.snapshot() == baseline  # the new scene's objects, built or half built, are gone


# -- a frame's errors ----------------------------------------------------------------------------------
def _scene_and_target(backend, surface, size=256):
    from app.scenes.particles import ParticlesScene

    scene = ParticlesScene(RunConfig(size=size, seed=1))
    scene.build(backend, surface.framebuffer_size)
    return scene, (lambda: surface.framebuffer_size if surface.bind_target() else None)


def test_raw_cl_and_gl_errors_of_a_frame_are_recorded_as_glshare_s_with_their_phase(host_copy, gl):
    from OpenGL import GL

    from app.schedule.scheduler import FrameScheduler

    scene, target = _scene_and_target(host_copy, gl)
    small = cl.Buffer(host_copy.context, cl.mem_flags.READ_WRITE, 4)

    def bad_copy(queue, frame, wait_for):
        return cl.enqueue_copy(queue, small, small, byte_count=8)  # the driver refuses: a raw pyopencl.Error

    def bad_enum(size):
        GL.glEnable(0x7FFF)  # PyOpenGL raises its GLError (GL_INVALID_ENUM)

    scene.compute, scene.render = bad_copy, bad_enum
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict="spec")
    try:
        rec = sched.run_frame(0, target)  # --strict: neither is a finding, both are recorded
        got = [(e.where, e.name, e.code) for e in rec.errors]
        assert got == [("compute", "CL_INVALID_VALUE", -30), ("render", "GL_INVALID_ENUM", 0x0500)]
        assert rec.counts == {"acquire": 1, "compute": 0, "release": 1}
        sched.strict = True  # the tests' form: every failure raised, as glshare's error
        del scene.compute  # the scene's own kernel again: only the render fails
        with pytest.raises(GlError) as err:
            sched.run_frame(1, target)
        assert err.value.where == "render" and err.value.name == "GL_INVALID_ENUM"
        assert isinstance(err.value.__cause__, GL.GLError)
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
        small.release()


def test_a_gl_fence_that_times_out_is_recorded_as_a_stall(host_copy, gl, monkeypatch):
    from OpenGL import GL

    import app.schedule.scheduler as scheduler_mod
    from app.sharing.sync import SyncMode

    class NoWait(SyncMode):  # like semaphores, no CPU wait per frame (no name on the class: unregistered)
        bounded_run_ahead = True

        def __init__(self, backend) -> None:
            super().__init__(backend)
            self.name = "test-no-wait"

    statuses = iter([GL.GL_ALREADY_SIGNALED, GL.GL_TIMEOUT_EXPIRED])
    scene, target = _scene_and_target(host_copy, gl)
    sched = scheduler_mod.FrameScheduler(host_copy, scene, NoWait(host_copy), strict="spec", frames_in_flight=1)
    monkeypatch.setattr(sched.in_flight, "_client_wait", lambda fence, flags, timeout: next(statuses))
    try:
        recs = [sched.run_frame(f, target) for f in range(3)]
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
    assert [[(e.where, e.name) for e in r.errors] for r in recs] == [[], [], [("frames in flight", "queue stalled")]]
    assert "timed out" in recs[2].errors[0].message
    assert all(r.counts == {"acquire": 1, "compute": 1, "release": 1} for r in recs)  # the frame went on


# -- the tracker ---------------------------------------------------------------------------------------
class _Shared:
    def __init__(self, label: str) -> None:
        self.label = label


def test_a_transition_that_raises_updates_every_object_first():
    from app.validate.ownership import OwnershipTracker

    t = OwnershipTracker(strict="all")
    a, b, c = (_Shared(x) for x in "abc")
    for o in (a, b, c):
        t.add(o)
    t.acquired([a, b], "q1")
    with pytest.raises(HazardError) as err:
        t.acquired([a, b, c], "q1")  # a and b: double_acquire; the driver acquired all three
    assert err.value.case == "double_acquire" and err.value.label == "a"
    assert [t.owner_of(o) for o in (a, b, c)] == ["cl"] * 3
    assert [t.state(o).acquires for o in (a, b, c)] == [2, 2, 1] and t.counts == {"double_acquire": 2}
    with pytest.raises(HazardError) as err:
        t.released([a, b, c], "q2")  # every one on another queue
    assert err.value.case == "release_on_other_queue" and err.value.label == "a"
    assert [t.owner_of(o) for o in (a, b, c)] == ["gl"] * 3 and all(t.state(o).queue is None for o in (a, b, c))
    assert t.counts == {"double_acquire": 2, "release_on_other_queue": 3}
    with pytest.raises(HazardError):
        t.cl_use([a, b, c])
    assert t.flagged("use_without_acquire") == 3  # one flag per object, the first one raised


# -- --strict stops on findings only -----------------------------------------------------------------
@pytest.mark.parametrize("strict", ["spec", "all"])
def test_strict_goes_on_after_injected_faults(gl, strict):
    faults = (Fault(3, "out_of_resources"), Fault(5, "gl_error"))
    with Run(_cfg(scene="particles", size=1024, frames=8, strict=strict, inject=faults), surface=gl) as rt:
        stop = rt.loop()
        errors = [(r.index, e.where, e.name) for r in rt.session.history.records for e in r.errors]
    assert (stop.how, stop.frame, stop.exit_code) == ("frames", 8, 0) and rt.strict_stop is None
    assert errors == [(3, "compute", "CL_OUT_OF_RESOURCES"), (5, "render", "GL_INVALID_ENUM")]


def test_strict_lost_context_ends_as_a_fault_at_its_frame(gl):
    with Run(_cfg(scene="particles", size=1024, frames=50, strict="spec", inject=(Fault(5, "lost_context"),)),
             surface=gl) as rt:
        stop = rt.loop()
    assert (stop.how, stop.frame, stop.exit_code) == ("fault", 5, 1)
    assert stop.message.startswith("the run stopped early: the GL context was lost at frame 5")


def test_a_reload_that_fails_under_strict_keeps_the_last_good_build_running(gl, tmp_path, monkeypatch):
    import app.cl.programs as programs
    from app.session import reload

    folder = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", folder)
    monkeypatch.setattr(programs, "KERNELS_DIR", folder)
    monkeypatch.setattr(reload, "_watch", reload.SourceWatch(interval_s=0))  # the loop's poll looks every time
    julia = folder / "julia.cl"
    with Run(_cfg(scene="image", size=(32, 32), strict="spec", backend=HostCopy.name), surface=gl) as rt:
        rt.tick()
        st = os.stat(julia)
        julia.write_text(julia.read_text() + "\n__kernel void broken( { }\n")
        os.utime(julia, ns=(st.st_mtime_ns + 10**9, st.st_mtime_ns + 10**9))
        recs = [rt.tick() for _ in range(3)]  # the first poll sees the change, the second rebuilds
        assert rt.strict_stop is None and not rt.session.paused
        assert all(r is not None and r.errors == [] for r in recs)
        errs = rt.session.history.loop_errors
        assert [e.name for e in errs] == ["KernelBuildFailed"] and errs[0].where.endswith("julia.cl")
        assert rt.session.status.endswith("the last good build keeps running")


def test_a_panel_that_fails_under_strict_is_recorded_and_the_loop_goes_on(gl, monkeypatch):
    with Run(_cfg(scene="particles", size=256, strict="spec"), surface=gl) as rt:
        def broken(rec=None):
            raise RuntimeError("the panel broke")

        monkeypatch.setattr(rt, "draw_ui", broken)
        recs = [rt.tick() for _ in range(2)]
        assert [r.index for r in recs] == [0, 1] and rt.strict_stop is None
        assert [(e.where, e.message) for e in rt.session.history.loop_errors] == [("panel", "the panel broke")] * 2


# -- the loop's timing ---------------------------------------------------------------------------------
def test_the_present_phase_starts_after_the_controls_the_reload_poll_and_the_screenshot(gl, tmp_path,
                                                                                        monkeypatch):
    import app.run as loop_mod

    marks: dict[str, int] = {}
    with Run(_cfg(scene="particles", size=256, frames=1, screenshot=tmp_path / "s.png"), surface=gl) as rt:
        surface, controls = rt.session.surface, rt.controls
        apply, poll, read, present = controls.apply, loop_mod.poll_sources, surface.read_pixels, surface.present

        def mark(name, fn):
            def wrapped(*a):
                out = fn(*a)
                marks[name] = ns()
                return out
            return wrapped

        def timed_present():
            marks["present_called"] = ns()
            present()

        monkeypatch.setattr(controls, "apply", mark("apply", apply))
        monkeypatch.setattr(loop_mod, "poll_sources", mark("poll", poll))
        monkeypatch.setattr(surface, "read_pixels", mark("read", read))
        monkeypatch.setattr(surface, "present", timed_present)
        rec = rt.tick()
    start, end = rec.phases["present"]
    assert rec.phases["panel"][1] <= marks["apply"] <= marks["poll"] <= marks["read"] <= start
    assert start <= marks["present_called"] <= end == rec.presented_ns


# -- outputs ---------------------------------------------------------------------------------------------
def test_every_output_is_attempted_and_the_loop_s_error_is_kept(gl, tmp_path, monkeypatch):
    import app.run as loop_mod

    def no_png(path, pixels):
        raise OutputError(f"cannot write {path}: no space left on device (test)")

    def loop_then_break(self):
        for _ in range(3):
            self.tick()
        raise RuntimeError("the loop broke")

    monkeypatch.setattr(loop_mod, "write_png", no_png)
    monkeypatch.setattr(loop_mod.Run, "loop", loop_then_break)
    report, shot, trace = tmp_path / "r.json", tmp_path / "s.png", tmp_path / "t.json"
    said = []
    cfg = _cfg(scene="particles", size=256, report=report, screenshot=shot, trace=trace)
    with pytest.raises(RuntimeError, match="the loop broke"):
        loop_mod.run(cfg, said=lambda written, failed: said.append((written, failed)))
    [(written, failed)] = said
    assert sorted(written) == ["report", "trace"] and [kind for kind, _ in failed] == ["screenshot"]
    assert isinstance(failed[0][1], OutputError) and not shot.exists()
    r = json.loads(report.read_text())
    assert r["stopped"]["how"] == "error" and r["stopped"]["message"] == "the loop broke" and r["frames"] == 3
    assert json.loads(trace.read_text())["otherData"]["frames"] == 3


def test_an_output_not_written_is_one_line_the_others_are_said_and_the_exit_is_1(tmp_path):
    code = ("import sys\n"
            "import app.trace.png as png\n"
            "from app.errors import OutputError\n"
            "def no_png(path, pixels):\n"
            "    raise OutputError(f'cannot write {path}: no space left on device (test)')\n"
            "png.write_png = no_png\n"
            "from app.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    report, shot = tmp_path / "r.json", tmp_path / "s.png"
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", code, "run", "--headless", "--frames", "3", "--size", "256", "--quiet",
                          "--report", str(report), "--screenshot", str(shot)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 1, res.stderr
    assert res.stdout.splitlines() == [f"glshare: wrote report {report}"]
    assert res.stderr.strip().splitlines() == [
        f"glshare: error: screenshot not written: cannot write {shot}: no space left on device (test)"]
    assert json.loads(report.read_text())["frames"] == 3 and not shot.exists()


# -- a window's screenshot -------------------------------------------------------------------------------
W, H = 160, 120


def _is_julia(px: np.ndarray, frame: int) -> bool:
    from app.scenes.image import julia_reference

    ref = julia_reference(W, H, frame)[..., :3]
    if px.shape != ref.shape:
        return False
    d = np.abs(px.astype(int) - ref.astype(int)).max(-1)
    return bool((d > 1).mean() < 0.02)  # the bound test_window's headless comparison uses


def _window_env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}


@pytest.mark.window
@needs_display
def test_a_window_run_ended_by_sigterm_shoots_the_last_frame_presented(tmp_path):
    from app.trace.png import read_png

    report, shot = tmp_path / "r.json", tmp_path / "s.png"
    proc = subprocess.Popen([sys.executable, "-m", "app", "run", "--scene", "image", "--size", f"{W}x{H}",
                             "--no-overlay", "--frames", "100000000", "--report", str(report), "--screenshot",
                             str(shot)], cwd=ROOT, env=_window_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()  # the first frame-rate line: frames are being presented
        assert "fps" in first, proc.stderr.read() if proc.poll() is not None else first
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143
    stopped = json.loads(report.read_text())["stopped"]
    assert stopped["how"] == "terminate" and stopped["frame"] > 1
    assert _is_julia(read_png(shot), stopped["frame"] - 1)


@pytest.mark.window
@needs_display
def test_a_window_run_ended_by_q_shoots_the_frame_presented_not_the_back_buffer_after_it(tmp_path):
    """'q' arrives with the window's events of the sixth iteration; after that frame's swap the back
    buffer is undefined (made red here on purpose): the screenshot is still the frame presented."""
    from app.trace.png import read_png

    shot = tmp_path / "q.png"
    code = ("import sys\n"
            "from app.window import KeyEvent, select_platform\n"
            "select_platform(False)\n"
            "from OpenGL import GL\n"
            "from app.config import RunConfig\n"
            "from app.run import Run\n"
            f"cfg = RunConfig(scene='image', size=({W}, {H}), headless=False, overlay=False, fps_lines=False, "
            "screenshot=sys.argv[1])\n"
            "with Run(cfg) as rt:\n"
            "    surface = rt.session.surface\n"
            "    for _ in range(5):\n"
            "        rt.tick()\n"
            "    events = surface.poll_events\n"
            "    surface.poll_events = lambda: [*events(), KeyEvent('q')]\n"
            "    rt.tick()\n"
            "    surface.bind_target()\n"
            "    GL.glClearColor(1.0, 0.0, 0.0, 1.0)\n"
            "    GL.glClear(GL.GL_COLOR_BUFFER_BIT)\n"
            "    stop = rt.loop()\n"
            "    written = rt.finish()\n"
            "print(stop.how, stop.frame, sorted(written), rt.failed_outputs)\n")
    res = subprocess.run([sys.executable, "-c", code, str(shot)], cwd=ROOT, env=_window_env(), capture_output=True,
                         text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["quit", "6", "['screenshot']", "[]"], res.stdout
    px = read_png(shot)
    assert (px == np.array([255, 0, 0], np.uint8)).all(-1).mean() < 0.5  # not the red back buffer
    assert _is_julia(px, 5)


# -- external memory's imports (their cleanup, with the GL and CL calls stood in for) -----------------------
class _FakeClSemaphore:
    """Stands in for clext.Semaphore: owns the fd it was given after a successful import (the
    spec's rule) and closes it at its release; fails for ``fail_label``."""

    fail_label = ""
    released: list = []

    def __init__(self, ext, context, device, fd, label) -> None:
        from app.cl.ext import _raise

        if label == self.fail_label:
            _raise(-1142, "clCreateSemaphoreWithPropertiesKHR")
        self.fd, self.label = fd, label

    def release(self) -> None:
        os.close(self.fd)  # OSError where glshare closed the fd CL owns (a double close)
        _FakeClSemaphore.released.append(self.label)


def _fake_semaphore_env(monkeypatch, platform: str):
    from types import SimpleNamespace

    import app.sharing.sync.semaphore as em

    gl_fds: dict[int, int] = {}
    names = iter(range(7, 100))

    def gen(n, ref):
        ref._obj.value = next(names)  # ctypes.byref(GL.GLuint())

    def import_fd(name, handle_type, fd):
        gl_fds[name] = fd  # GL owns it now

    def delete(n, arr):
        os.close(gl_fds.pop(arr[0]))

    fns = {"glGenSemaphoresEXT": gen, "glImportSemaphoreFdEXT": import_fd, "glDeleteSemaphoresEXT": delete}
    monkeypatch.setattr(em, "_gl_fn", fns.__getitem__)
    monkeypatch.setattr(em, "gl_function", lambda name: (lambda *a: None))
    monkeypatch.setattr(em.clext, "Semaphore", _FakeClSemaphore)
    made, destroyed = [], []

    def semaphore():
        r, w = os.pipe()
        os.close(w)
        made.append(f"vk{len(made)}")
        return made[-1], r

    exporter = SimpleNamespace(semaphore=semaphore, destroy_semaphore=destroyed.append)
    backend = SimpleNamespace(exporter=exporter, ext=None, context=None, device=None, fds_closed=0,
                              env=SimpleNamespace(choice=SimpleNamespace(platform=SimpleNamespace(name=platform))),
                              validator=SimpleNamespace(semaphores=_Tracked()))
    return em, backend, made, destroyed, gl_fds


class _Tracked:
    """The validator's binary-state tracking, as SemaphoreSync uses it: what it follows."""

    check_python = None

    def __init__(self) -> None:
        self.ids: set[int] = set()

    def track(self, sema, signalled: bool = False, by=None) -> None:
        self.ids.add(id(sema))

    def untrack(self, sema) -> None:
        self.ids.discard(id(sema))

    def signalled(self, sema) -> None: ...
    def waited(self, sema) -> None: ...
    def undo(self, *a) -> None: ...


@pytest.mark.parametrize("platform", ["Portable Computing Language", "NVIDIA CUDA"])
@pytest.mark.parametrize("fail", ["", "gl_done", "cl_done"])
def test_semaphore_sync_releases_what_it_made_and_closes_each_fd_once(gl, monkeypatch, platform, fail):
    """#37 item 4: on every platform the fd CL took at a successful import is CL's; glshare never
    closes it (a driver that closes its own would meet a double close of a reused number)."""
    from app.cl.ext import open_fds

    em, backend, made, destroyed, gl_fds = _fake_semaphore_env(monkeypatch, platform)
    monkeypatch.setattr(_FakeClSemaphore, "fail_label", fail)
    monkeypatch.setattr(_FakeClSemaphore, "released", [])
    fds, sems = open_fds(), live.count("gl_semaphore")
    if fail:
        with pytest.raises(ClError) as err:
            em.SemaphoreSync(backend)
        assert err.value.code == -1142 and fail in err.value.where
    else:
        sync = em.SemaphoreSync(backend)
        assert live.count("gl_semaphore") == sems + 2 and len(gl_fds) == 2
        sync.close()
        sync.close()  # idempotent
    made_cl = {"": ["gl_done", "cl_done"], "gl_done": [], "cl_done": ["gl_done"]}[fail]
    assert _FakeClSemaphore.released == made_cl and destroyed == made
    assert gl_fds == {} and live.count("gl_semaphore") == sems
    assert open_fds() == fds  # every fd closed, none twice (the fake CL raises on a closed one)
    assert backend.fds_closed == 0
    assert backend.validator.semaphores.ids == set()  # nothing closed is still followed


def test_a_failed_gl_memory_import_closes_its_fd_and_deletes_the_object(gl, monkeypatch):

    from OpenGL import GL
    from OpenGL.error import GLError

    import app.sharing.backends.external_memory as em
    from app.cl.ext import open_fds

    deleted = []

    def create(n, ref):
        ref._obj.value = 11

    def import_fd(name, size, handle_type, fd):
        raise GLError(err=GL.GL_INVALID_VALUE, result=None, cArguments=(name, size, handle_type, fd),
                      baseOperation=None)

    fns = {"glCreateMemoryObjectsEXT": create, "glImportMemoryFdEXT": import_fd,
           "glDeleteMemoryObjectsEXT": lambda n, arr: deleted.append(arr[0])}
    monkeypatch.setattr(em, "_gl_fn", fns.__getitem__)
    fds, objects = open_fds(), live.count("gl_memory_object")
    r, w = os.pipe()
    os.close(w)
    with pytest.raises(GlError) as err:
        em.GlMemoryObject("test.memory", r, 4096)
    assert err.value.name == "GL_INVALID_VALUE" and "glImportMemoryFdEXT" in err.value.where
    assert deleted == [11] and live.count("gl_memory_object") == objects
    assert open_fds() == fds  # the fd GL did not take is closed
