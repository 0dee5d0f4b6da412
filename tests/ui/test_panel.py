"""The panel: error folding and phase statistics against numpy, the typed model (no GL or CL
object in it), the panel drawn headless from any model without raising, the "write trace" control,
and the window screenshot under Xvfb.

Pixel checks compare against a ``--no-panel`` run of the same frames and against the colours the
panel draws with (app/ui/legend.py), with stated tolerances; no wall-clock time is asserted.
"""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from support import panel_snapshot

from app.schedule.frame import ErrorRecord, FrameRecord
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import HostMapped
from app.trace.png import read_png
from app.ui.model import SERIES, PhaseHistory, RunFindings
from app.ui.tabs import table


# -- folding and statistics ----------------------------------------------------------------------
def test_errors_fold_by_code_name_and_where():
    """The Errors tab reads the run's folding (RunHistory.errors): one entry per (code, name,
    where), most recent first, its count, first and last frame, the last message; "clear" puts
    them aside, and what comes after counts from there."""
    from app.schedule.history import Folded

    folded = Folded("error", limit=3)
    shown = RunFindings("error")
    for f in range(10):
        folded.add_error(ErrorRecord(f, "acquire", -38, "CL_INVALID_MEM_OBJECT", f"frame {f}: bad", "not valid"))
    folded.add_error(ErrorRecord(4, "release", -38, "CL_INVALID_MEM_OBJECT", "bad", "not valid"))
    folded.add_error(ErrorRecord(12, "compute", -5, "CL_OUT_OF_RESOURCES", "oom", "no resources"))
    folded.add_error(ErrorRecord(13, "panel", None, "ValueError", "x"))  # over the limit of 3 kinds
    part = shown.read(folded)
    entries = part.entries
    assert [e.where for e in entries] == ["compute", "acquire", "release"]  # most recent first
    acq = entries[1]
    assert (acq.count, acq.first_frame, acq.last_frame) == (10, 0, 9)
    assert acq.code == -38 and acq.title == "CL_INVALID_MEM_OBJECT" and acq.text == "not valid"
    assert acq.message == "frame 9: bad"  # the last message is kept
    assert entries[2].count == 1 and entries[0].count == 1
    assert part.total == 13 and part.other == 1
    assert shown.read(folded) is part  # unchanged: not built again
    shown.clear(folded)
    assert shown.read(folded).entries == () and shown.total == shown.part().other == 0
    folded.add_error(ErrorRecord(20, "acquire", -38, "CL_INVALID_MEM_OBJECT", "later", "not valid"))
    (e,) = shown.read(folded).entries
    assert (e.count, e.first_frame, e.last_frame, e.message) == (1, 20, 20, "later") and shown.total == 1


def _rec(i: int, t0: int, spans_us: dict) -> FrameRecord:
    rec = FrameRecord(i, "particles", "host_copy", "finish", start_ns=t0)
    t = t0
    for name in ("acquire", "compute", "release", "render", "panel"):
        if name in spans_us:
            rec.phases[name] = (t, t := t + int(spans_us[name] * 1000))
    rec.end_ns = rec.phases.get("render", (t0, t))[1]
    return rec


def test_phase_history_stats_match_numpy_percentile():
    rng = np.random.default_rng(3)
    hist = PhaseHistory(n=50)
    recs, t = [], 0
    for i in range(80):  # more than the ring: only the last 50 count
        spans = {k: float(rng.uniform(10, 2000)) for k in ("acquire", "compute", "release", "render")}
        if i % 7:
            spans["panel"] = float(rng.uniform(100, 900))  # some frames without a panel: NaN, left out
        rec = _rec(i, t, spans)
        rec.period_ns = int(rng.uniform(8, 30) * 1e6) if i % 5 else 0  # no period: NaN, left out
        recs.append(rec)
        t += 10_000_000
    for rec in recs:
        hist.push(rec)
    frames, data = hist.ordered()
    assert list(frames) == list(range(30, 80))  # oldest first
    stats = hist.stats()
    pushed = recs[30:80]
    for k, name in enumerate(SERIES):
        if name == "frame":  # present to present, the record's own period
            ref = np.array([r.period_ns / 1e6 if r.period_ns else np.nan for r in pushed])
        else:
            ref = np.array([(r.phases[name][1] - r.phases[name][0]) / 1e6 if name in r.phases else np.nan
                            for r in pushed])
        np.testing.assert_allclose(data[k], ref, rtol=0, atol=1e-9, equal_nan=True)
        want = np.nanpercentile(ref, [50, 95])
        assert stats[name] == pytest.approx(tuple(want), abs=1e-9), name


# -- the panel drawn in-process -----------------------------------------------------------------------
@pytest.fixture
def small_runtime(gl, tmp_path):
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=2048, headless=True, frames=10_000, trace=tmp_path / "t.json",
                    backend=HostCopy.name)
    with Run(cfg, surface=gl) as rt:
        yield rt


def test_panel_survives_any_model(small_runtime):
    """A model with empty parts, inconsistent arrays, NaN and inf: drawn as far as it goes, never
    raised into the loop."""
    from app.ui.model import Timeline, empty_model
    from app.ui.panel import draw_panel

    rt = small_runtime
    for _ in range(5):
        rt.tick()
    good = panel_snapshot(rt)
    bad_timeline = Timeline(5, lanes=good.timeline.lanes, lane=np.array([0, 9]), kind=np.array([99, 0]),
                            start=np.array([np.nan, 0.0]), end=np.array([np.inf, -1.0]), names=("?",))
    broken = [empty_model("model failed"), dataclasses.replace(good, timeline=bad_timeline),
              dataclasses.replace(good, tabs={**good.tabs, "ownership": 42}), dataclasses.replace(good, timing=dataclasses.replace(
                  good.timing, count=5))]
    for model in broken + [good]:
        rt.ui.layer.draw(lambda m=model: draw_panel(m, rt.ui.state, rt.controls.request), force=True)  # past the cache
    assert rt.ui.state.failures >= 1  # the broken ones were caught and counted
    rec = rt.tick()
    assert rec.errors == [] and rt.session.history.loop_errors == []


def test_write_trace_control(small_runtime, tmp_path):
    rt = small_runtime
    for _ in range(4):
        rt.tick()
    rt.controls.request("write_trace", path=str(tmp_path / "button.json"))  # what the panel's button does
    rt.tick()  # written after that frame's panel
    assert rt.trace_written.get("path") == str(tmp_path / "button.json"), rt.trace_written
    assert rt.session.status == f"wrote trace {tmp_path / 'button.json'}"  # the absolute path, shown
    trace = json.loads((tmp_path / "button.json").read_text())
    names = {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert {"enqueue acquire", "enqueue kernel", "kernel", "release command"} <= names
    model = panel_snapshot(rt)
    assert model.controls.trace_path.endswith("button.json") and model.header.status.endswith("button.json")
    tl = model.timeline
    assert model.timing.count >= 3 and tl.count == len(tl.start) == len(tl.names) > 0
    assert np.all(tl.end >= tl.start) and tl.start.min() >= 0  # ms from the frame's start


def _walk(x, path, seen):
    """Every value reachable from a model part: plain values, numpy arrays, frozen dataclasses."""
    if id(x) in seen:
        return
    seen.add(id(x))
    if dataclasses.is_dataclass(x):
        assert type(x).__dataclass_params__.frozen, (path, type(x))
        for f in dataclasses.fields(x):
            _walk(getattr(x, f.name), f"{path}.{f.name}", seen)
    elif isinstance(x, dict):
        for k, v in x.items():
            _walk(v, f"{path}[{k!r}]", seen)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _walk(v, f"{path}[{i}]", seen)
    else:
        assert isinstance(x, (str, int, float, bool, type(None), np.ndarray, np.floating, np.integer)), (path, type(x))


def test_model_is_typed_plain_data(small_runtime):
    """The panel model: frozen dataclasses of plain values and numpy arrays, no GL or CL object, and
    the header, the owners and the timeline describe the same frame."""
    rt = small_runtime
    for _ in range(6):
        rt.tick()
    for tab in table():  # every tab's part, as if it were shown
        model = panel_snapshot(rt, tab=tab.key)
        assert tab.key in model.tabs, tab.key
        _walk(model, "model", set())
    assert model.header.frame is not None
    assert model.header.frame == model.timeline.frame == model.owners.frame
    assert {row.label for row in model.owners.rows} == {"particles.position", "particles.color"}
    assert all(row.now == "GL" for row in model.owners.rows)  # between frames GL owns them
    # the owners at each phase boundary of that frame, read from the stamps (app/schedule/owners.py):
    # GL after the release (--sync finish waits for it), CL or on its way from the acquire on (the
    # acquire command's START may lie within the clocks' uncertainty of the frame's start)
    for row in model.owners.rows:
        at = dict(row.at)
        assert list(at) == ["start", "acquire", "compute", "release", "render"], row.at
        assert at["release"] == at["render"] == "GL", row.at
        assert {at["start"], at["acquire"], at["compute"]} <= {"GL", "GL -> CL", "CL"} and at["compute"] != "GL", row.at
    assert [b["name"] for b in panel_snapshot(rt, tab="caps").caps.caps.backends] == [
        "gl_sharing", "external_memory", "host_mapped", "host_copy"]
    lanes = [lane.name for lane in model.timeline.lanes]
    assert lanes[:2] == ["CPU", "CPU wait"] and lanes[2].startswith("CL ") and lanes[3] == "GL"
    assert lanes[4:] == ["position", "color"]  # one lane per shared object


# -- the window, under Xvfb -----------------------------------------------------------------------------
def _near(px: np.ndarray, rgb, tol: int = 40) -> int:
    """How many pixels lie within ``tol`` (per channel) of ``rgb``."""
    return int((np.abs(px.astype(np.int16) - np.array(rgb, np.int16)).max(axis=-1) <= tol).sum())


def _crop(px: np.ndarray, rect) -> np.ndarray:
    x0, y0, x1, y1 = (int(v) for v in rect)
    return px[y0:y1, x0:x1]


@pytest.mark.window
@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test / xvfb-run -a)")
def test_window_panel_screenshot(glshare, tmp_path):
    from app.ui import legend
    from app.window import layout

    shots = {}
    for name, extra in (("panel", ()), ("plain", ("--no-panel",))):
        shots[name] = tmp_path / f"{name}.png"
        res = glshare("run", "--frames", "90", "--size", "4096", "--screenshot", str(shots[name]), *extra)
        assert res.returncode == 0, res.stderr
        assert "no display" not in res.stderr
    panel, plain = read_png(shots["panel"]), read_png(shots["plain"])
    # the scene's 800x600 (the samples' window) beside the panel; without the panel, that alone
    assert panel.shape[:2] == (600, 800 + layout.PANEL_ROOM) and plain.shape[:2] == (600, 800)
    beside = panel[:, layout.PANEL_ROOM:].astype(np.int16)
    below_overlay = slice(200, 600)  # the --no-panel run's minimal overlay is at its top left
    diff = np.abs(beside[below_overlay] - plain[below_overlay].astype(np.int16)).max(axis=-1)
    assert (diff > 2).mean() < 0.001, f"{(diff > 2).mean():.2%} of the scene differs beside the panel"
    m = layout.MARGIN
    window = (m, m, m + layout.default_width(panel.shape[1]), 600 - m)
    win_a, win_b = _crop(panel, window), _crop(plain, window)
    changed = (np.abs(win_a.astype(np.int16) - win_b.astype(np.int16)).max(axis=-1) > 24).mean()
    assert changed > 0.5, f"only {changed:.0%} of the panel's area differs from the --no-panel run"
    for name in ("acquire", "compute", "release", "render", "panel", "frame"):  # plot lines, stats, bars
        assert _near(win_a, legend.PHASE_RGB[name], 30) > 6, f"no {name} colour in the panel"
    assert _near(win_a, legend.WAIT_RGB, 30) > 3, "no CPU wait (glFinish/clFinish) in the timeline"
    for owner in (legend.GL, legend.CL):  # the owners' lanes and the Owners tab
        assert _near(win_a, legend.OWNER_RGB[owner], 30) > 20, f"no {owner} owner colour in the panel"


def test_size_control_rebuilds_the_scene(small_runtime):
    rt = small_runtime
    rt.tick()
    rt.controls.request("set_size", size=1024)  # what the panel's size combo queues
    rt.tick()
    assert rt.session.cfg.size == 1024 and rt.session.scene.n == 1024
    assert rt.session.history.switches[-1]["what"] == "size"
    rec = rt.tick()
    assert rec.errors == [] and panel_snapshot(rt).controls.size == "1024"


def test_ownership_follows_a_stepped_frame(small_runtime):
    """Teaching mode stops between phases: after the acquire CL owns the objects (or they are on
    their way), after the render GL owns them again; the panel's Teach tab shows up by itself."""
    rt = small_runtime
    rt.tick()
    rt.controls.key("t")  # teaching mode: paused, one phase per step
    rt.tick()
    rt.controls.key("n")
    rt.tick()  # the acquire ran
    model = panel_snapshot(rt)
    assert model.header.teaching and model.teaching.active and model.header.in_progress
    assert {row.now for row in model.owners.rows} <= {"CL", "GL -> CL"}, model.owners
    assert model.timeline.current_phase == "acquire" and model.timeline.frame == model.header.frame
    for _ in range(3):  # compute, release, render
        rt.controls.key("n")
        rt.tick()
    model = panel_snapshot(rt)
    assert {row.now for row in model.owners.rows} == {"GL"}
    assert rt.ui.state.tab == "teach" and rt.ui.state.failures == 0
    rt.controls.key("t")  # leaving teaching mode: the loop runs on
    rec = rt.tick()
    assert rec is not None and rec.errors == []


# -- feedback: status lines, refusals, clearing, --strict stops -----------------------------------------
def test_every_command_says_what_it_did(small_runtime):
    """Every command of the table returns a status line, and the header shows it."""
    from app.session.controls import COMMANDS

    rt = small_runtime
    rt.tick()
    args = {"switch": {"sync": "finish"}, "set_size": {"size": 2048}, "set_paused": {"paused": False},
            "demo": {"demo": "skip_release"}, "write_trace": {}, "orbit": {"dx": 3, "dy": 1}, "zoom": {"steps": 1},
            "set_round_points": {"value": True}, "set_view": {"value": "side"}, "set_julia_c": {"value": (0.1, 0.2)}, "set_filter": {"value": "blur"},
            "set_blur_radius": {"value": 3}, "set_local_size": {"value": "driver"}}
    for cmd in COMMANDS:
        if cmd.name == "quit":
            continue
        status = rt.controls.run(cmd.name, **args.get(cmd.name, {}))
        assert status, cmd.name
        rt.tick()
        assert panel_snapshot(rt).header.status == rt.session.status, cmd.name
    assert rt.session.history.loop_errors == []


def test_a_refused_scene_option_says_why_and_keeps_the_old_value(small_runtime):
    """The scene options set through the controls: a value the scene refuses is a status line, the
    scene and the session's config keep what they had; an option of another scene says which."""
    rt = small_runtime
    rt.tick()
    assert rt.controls.run("set_view", value="top") == "view refused: view 'top': choose one of sample, side"
    assert rt.session.scene.view == rt.session.cfg.view == "sample"
    assert rt.controls.run("set_view", value="side").startswith("particles: from the side")
    assert rt.session.scene.view == rt.session.cfg.view == "side"
    status = rt.controls.run("set_blur_radius", value=3)
    assert status.startswith("blur radius: the postprocess scene only"), status
    assert rt.session.cfg.blur_radius == 2


def test_a_refused_switch_says_why(small_runtime):
    rt = small_runtime
    rt.tick()
    rt.controls.request("switch", backend=KhrGlSharing.name)  # the panel's backend combo
    rt.tick()
    status = panel_snapshot(rt).header.status
    assert status.startswith("backend refused") and "cl_khr_gl_sharing" in status, status
    assert rt.session.backend_name == "host_copy"


def test_clear_forgets_the_findings_shown_not_the_report(small_runtime):
    rt = small_runtime
    rt.tick()
    rt.controls.key("2")  # skip the release: hazards every frame
    for _ in range(3):
        rt.tick()
    rt.controls.key("2")
    rt.tick()
    model = panel_snapshot(rt, tab="lab")
    assert model.hazards.total > 0 and model.header.hazards == model.hazards.total and model.lab.hazard_counts
    totals = rt.session.history.totals["hazards"]
    rt.controls.request("clear_findings")  # the tabs' "clear" button
    rt.tick()
    model = panel_snapshot(rt, tab="lab")
    assert model.hazards.total == model.header.hazards == 0 and model.hazards.entries == ()
    assert model.lab.hazard_counts == () and rt.session.history.totals["hazards"] == totals
    assert "cleared" in rt.session.status


def test_a_strict_stop_is_shown_on_its_frame(gl):
    """--strict in a window: the loop pauses on the offending frame and hands the view its reason;
    the panel describes that frame, marks the hazard on the object's lane and opens the Hazards tab."""
    from app.config import RunConfig
    from app.run import Run
    from app.ui.panel import draw_panel
    from app.window.egl_headless import EglSurface

    surface = EglSurface((800, 600))
    try:
        cfg = RunConfig(scene="image", size=(64, 48), headless=True, frames=10_000, strict=True, panel_hz=0)
        with Run(cfg, surface=surface) as rt:
            rt.tick()
            rt.controls.key("1")  # skip the acquire: the kernel uses an object CL does not own
            assert rt.tick() is None  # the frame stopped on the hazard; the loop keeps it (a window pauses)
            stopped = rt.session.scheduler.current
            stop = rt.stop_view
            assert stop.case == "use_without_acquire" and stop.label == "image.julia" and stop.where == "kernel"
            view = rt.session.view(demos=rt.controls.demo_views(), stop=stop)
            assert stop.frame == stopped.index and rt.strict_stop.how == "strict"
            model = rt.ui.model.update(view, tab="hazards")
            h, tl = model.header, model.timeline
            assert h.stop is stop and h.in_progress and h.frame == tl.frame == stopped.index
            mark = [m for m in tl.markers if m.kind == "hazard"]
            assert len(mark) == 1 and tl.lanes[mark[0].lane].name == "julia" and "use_without_acquire" in mark[0].title
            rt.ui.layer.draw(lambda: draw_panel(model, rt.ui.state, rt.controls.request), force=True)
            rt.ui.layer.draw(lambda: draw_panel(model, rt.ui.state, rt.controls.request), force=True)
            assert rt.ui.state.tab == "hazards" and rt.ui.state.failures == 0
    finally:
        surface.close()


def test_paused_and_stepped_time_stays_out_of_the_statistics(small_runtime):
    """A long pause, frames stepped with the arrow key and a frame stepped in teaching mode: none of
    them, nor the pause, enters the timing statistics or the plot."""
    import time

    rt = small_runtime
    for _ in range(20):
        rt.tick()
    rt.controls.key("p")
    rt.tick()
    pause_s = 1.0  # any frame whose time held a pause would be at least this long
    for _ in range(2):
        time.sleep(pause_s)  # the user looks at the frame
        rt.controls.key("right")
        rt.tick()
    rt.controls.key("p")
    for _ in range(5):
        rt.tick()
    rt.controls.key("t")
    for _ in range(4):
        time.sleep(pause_s / 2)
        rt.controls.key("n")
        rt.tick()
    rt.controls.key("t")
    for _ in range(20):
        rt.tick()
    rt.ui.state.tab = "ownership"
    model = panel_snapshot(rt)
    t = model.timing
    assert t.left_out >= 3, t.left_out  # the two arrow-key frames and the teaching one
    # not a speed check: a frame that counted a pause would hold at least pause_s of it
    assert np.nanmax(t.series["frame"]) < pause_s * 1000 / 2, np.nanmax(t.series["frame"])
    assert t.stats["frame"][1] < pause_s * 1000 / 2


def test_the_panel_frame_is_the_records_present_to_present(small_runtime):
    """The timing plot's and the header's frame is FrameRecord.period_ns (the report's and the
    overlay's too); the first frame, which has no present before it, is left out."""
    rt = small_runtime
    for _ in range(12):
        rt.tick()
    model = panel_snapshot(rt)
    t = model.timing
    recs = {r.index: r for r in rt.session.history.records}
    assert len(t.frames) == t.in_stats == 11 and t.left_out == 1 and recs[0].period_ns == 0
    want = np.array([recs[int(f)].period_ns / 1e6 for f in t.frames])
    assert want.min() > 0
    np.testing.assert_allclose(t.series["frame"], want, rtol=0, atol=1e-9)
    assert t.stats["frame"][0] == pytest.approx(float(np.median(want)), abs=1e-9)
    assert model.header.frame_ms == t.stats["frame"][0]
    assert t.stats_of == "particles / host_copy / finish"


def test_statistics_start_again_after_a_switch(small_runtime):
    """A backend switch: the plot and the median / p95 hold the new set-up's frames alone (the frame
    whose present waited for the switch included)."""
    rt = small_runtime
    # a zero-copy backend this machine has: host_mapped on a CPU, external_memory on the H200 (which
    # refuses host_mapped: no host-unified memory)
    probes = rt.session.registry.probes
    other = next((b for b in (HostMapped.name, ExternalMemory.name) if probes[b].available), None)
    if other is None:
        pytest.skip("neither host_mapped nor external_memory is available here to switch to")
    for _ in range(8):
        rt.tick()
    assert panel_snapshot(rt).timing.in_stats == 7
    rt.controls.request("switch", backend=other)  # the backend combo: applied after frame 8's draw
    for _ in range(5):
        rt.tick()
    t = panel_snapshot(rt).timing
    recs = {r.index: r for r in rt.session.history.records}
    assert recs[8].segment == 0 and recs[9].segment == 1
    assert t.stats_of == f"particles / {other} / finish"
    assert [int(f) for f in t.frames] == [9, 10, 11, 12] and t.in_stats == 4 and t.left_out == 0
    periods = [recs[i].period_ns / 1e6 for i in range(9, 13)]
    assert t.stats["frame"][0] == pytest.approx(float(np.median(periods)), abs=1e-9)
    # the header names the set-up of the frame it describes: the newest, then one before the switch
    h = panel_snapshot(rt).header
    assert (h.backend, h.setup_now) == (other, "") and h.scene_title == rt.session.scene.describe()
    rt.ui.state.chosen = 3  # clicked on the plot (or the slider while paused)
    model = panel_snapshot(rt)
    rt.ui.state.chosen = None
    h = model.header
    assert h.frame == model.timeline.frame == 3 and h.chosen
    assert (h.scene, h.backend, h.sync) == ("particles", "host_copy", "finish")
    assert model.timeline.segment == "particles / host_copy / finish"
    assert h.scene_title == "" and h.setup_now == f"particles / {other} / finish"


def test_the_timeline_follows_the_clock(small_runtime):
    """The timeline of a frame is kept while it is shown, and built again when the clock's offsets
    move (its CL and GL bars are placed by them)."""
    from app.ui.model import KIND_GL

    rt = small_runtime
    for _ in range(6):
        rt.tick()
    rt.session.finish()  # every profile read: the clock moves no more by itself
    a = panel_snapshot(rt).timeline
    assert panel_snapshot(rt).timeline is a  # nothing changed: the same timeline
    gl = a.kind == KIND_GL
    assert gl.any()
    est = rt.session.clock.gl
    old = est.offset
    moved = old + 1_000_000 + 2 * est.uncertainty_ns  # a bracket outside the current one: a reset there
    est.observe(moved, moved, 0)
    assert est.offset == moved
    b = panel_snapshot(rt).timeline
    assert b.frame == a.frame and b is not a
    np.testing.assert_allclose(b.start[gl] - a.start[gl], (moved - old) / 1e6, atol=1e-9)
    np.testing.assert_array_equal(b.start[~gl], a.start[~gl])  # the host's bars stay where they were


def test_the_cl_lane_says_which_commands_the_driver_left_unstamped():
    """A command whose profile came back without stamps (NVIDIA's markers) has no bar in the CL lane,
    and the lane says so instead of showing nothing."""
    from app.ui.model import KIND_RUN, build_timeline

    rec = FrameRecord(4, "particles", "host_copy", "finish", start_ns=1_000_000, end_ns=1_100_000)
    rec.phases = {"acquire": (1_000_000, 1_010_000), "compute": (1_010_000, 1_040_000),
                  "release": (1_040_000, 1_070_000), "render": (1_070_000, 1_100_000)}
    rec.cl_profile = {"compute": (1_012_000, 1_013_000, 1_015_000, 1_030_000)}
    rec.unstamped = ("acquire", "release")
    tl = build_timeline(rec, None)
    runs = [tl.names[i] for i in np.flatnonzero(tl.kind == KIND_RUN)]
    assert runs == ["compute"]
    assert tl.cl_note == "no device stamps from the driver for acquire, release"
    rec.unstamped = ()
    assert build_timeline(rec, None).cl_note == ""


def test_the_cpu_lane_shows_the_bookkeeping_done_inside_a_wait():
    """The reads of earlier frames' stamps done before a wait are thin bars in the CPU lane, where
    they ran, and not phases: the sequence of phases stays the scheduler's four."""
    from app.ui.model import KIND_BOOKKEEPING, KIND_PHASE, LANE_CPU, build_timeline

    rec = FrameRecord(9, "particles", "external_memory", "finish", start_ns=2_000_000, end_ns=2_400_000)
    rec.phases = {"acquire": (2_000_000, 2_200_000), "compute": (2_200_000, 2_220_000),
                  "release": (2_220_000, 2_350_000), "render": (2_350_000, 2_400_000)}
    rec.waits = [("glFinish", 2_030_000, 2_190_000), ("clFinish", 2_240_000, 2_340_000)]
    rec.bookkeeping = [("CL profiling harvest", 2_005_000, 2_025_000), ("GL timer harvest", 2_225_000, 2_232_000)]
    tl = build_timeline(rec, None)
    book = np.flatnonzero(tl.kind == KIND_BOOKKEEPING)
    assert [tl.names[i] for i in book] == ["CL profiling harvest", "GL timer harvest"]
    assert (tl.lane[book] == LANE_CPU).all()
    np.testing.assert_allclose(tl.start[book], [0.005, 0.225], atol=1e-9)  # ms from the frame's start
    np.testing.assert_allclose(tl.end[book], [0.025, 0.232], atol=1e-9)
    phases = [tl.names[i] for i in np.flatnonzero((tl.lane == LANE_CPU) & (tl.kind == KIND_PHASE))]
    assert phases == ["acquire", "compute", "release", "render"]


def test_memory_tab_reads_the_payload_lifetime_now(small_runtime):
    """The Memory tab's counters are the backend's now, not those of the set-up's first view; each
    handle type says both how long its handle is valid and how long its memory lives."""
    from app.ui.panel import draw_panel

    rt = small_runtime
    rt.tick()
    now = {"open_fds": 10, "fds_closed": 1}

    def memory_tab():  # external_memory's rows (that backend needs a GPU): counters that move
        return {"exporter_released": True, "holders": "GL memory object + CL buffer", "fds_closed": now["fds_closed"],
                "cl_took_fd_ownership": True, "open_fds": now["open_fds"],
                "display_paths": {"particles.position": "sampled in place"}, "gpu_bytes_copied": 100 * now["open_fds"]}

    rt.session.backend.memory_tab = memory_tab
    a = panel_snapshot(rt, tab="memory").tabs["memory"]
    now.update(open_fds=12, fds_closed=3)
    rt.tick()
    b = panel_snapshot(rt, tab="memory").tabs["memory"]
    assert (a.lifetime.open_fds, a.lifetime.fds_closed, a.lifetime.gpu_bytes_copied) == (10, 1, 1000)
    assert (b.lifetime.open_fds, b.lifetime.fds_closed, b.lifetime.gpu_bytes_copied) == (12, 3, 1200)
    assert b.handle_types is a.handle_types  # the set-up's table, made once
    fd = {h.name: h for h in b.handle_types}["OPAQUE_FD"]
    assert fd.handle_valid_until.startswith("a successful import") and "exporter's allocation" in fd.memory_lives_until
    rt.ui.state.select = "memory"
    model = panel_snapshot(rt, tab="memory")
    for _ in range(2):
        rt.ui.layer.draw(lambda: draw_panel(model, rt.ui.state, rt.controls.request), force=True)
    assert rt.ui.state.tab == "memory" and rt.ui.state.failures == 0


def test_composite_path_claims_no_skip_it_does_not_make(small_runtime):
    """The Caps tab's "composited by": a layer copied into every frame (headless, the scene under the
    panel) is never said to be skipped, even after a probe found that the swap keeps the back buffer."""
    rt = small_runtime
    rt.tick()
    layer = rt.ui.layer
    layer._kept = True  # what a probe of a copy swap finds
    copies = layer.composites
    rt.tick()
    assert layer.composites == copies + 1  # copied this frame
    assert layer.composite_path == "glCopyImageSubData"
    caps = panel_snapshot(rt, tab="caps").caps
    assert caps.panel_refresh.endswith("composited by glCopyImageSubData")
    from app import native

    assert caps.caps.stamps == native.describe()  # how the time stamps are read, said as glshare info says it


def test_every_scenes_options_are_drawn_in_the_panel(small_runtime):
    """Each scene's option rows drawn: a widget per row (a button for a text row with a command),
    inside the panel, under the controls, with nothing failing."""
    from app.ui.panel import draw_panel

    rt = small_runtime
    for scene in ("particles", "image", "postprocess", "yuv"):
        if scene != "particles":
            assert rt.session.switch(scene=scene)
        rt.tick()
        model = panel_snapshot(rt)
        for _ in range(2):  # ImGui lays a window out over two frames
            rt.ui.layer.draw(lambda m=model: draw_panel(m, rt.ui.state, rt.controls.request), force=True)
        rects, (x0, _y0, x1, _y1) = rt.ui.state.rects, rt.ui.state.window
        opts = model.controls.options
        assert opts and rt.ui.state.failures == 0, scene
        for o in opts:
            r = rects[f"option_{o.name}"]
            assert x0 <= r[0] < r[2] <= x1 and r[1] >= rects["write_trace"][3], (scene, o.name, r)
            assert (f"option_{o.name}_button" in rects) == bool(o.button), (scene, o.name)
    assert rt.controls.pending == []  # drawing requests nothing by itself


def test_tab_titles_keep_their_width_as_counts_grow(gl):
    """The Errors and Hazards tabs show their counts in a fixed width: no tab moves under the cursor."""
    from app.config import RunConfig
    from app.run import Run
    from app.window.egl_headless import EglSurface

    surface = EglSurface((800, 600))
    try:
        with Run(RunConfig(scene="particles", size=1024, headless=True, frames=10_000, panel_hz=0),
                 surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            widths = {k: v[2] - v[0] for k, v in rt.ui.state.rects.items() if k.startswith("tab_") and k != "tab_body"}
            rt.controls.key("2")  # skip the release: hazards pile up by the frame
            for _ in range(12):
                rt.tick()
            rt.controls.key("2")
            rt.tick()
            assert rt.ui.last_model.hazards.total >= 10
            grown = {k: v[2] - v[0] for k, v in rt.ui.state.rects.items() if k.startswith("tab_") and k != "tab_body"}
            assert grown == widths and sorted(widths) == sorted(f"tab_{t.key}" for t in table())
    finally:
        surface.close()


def test_overlay_shows_hazards_and_the_status(gl):
    """--no-panel: the minimal overlay names the last hazard and the last command's status."""
    from app.config import RunConfig
    from app.run import Run
    from app.ui import legend
    from app.window.egl_headless import EglSurface

    surface = EglSurface((640, 200))
    try:
        with Run(RunConfig(scene="particles", size=1024, headless=True, frames=10_000, panel=False, panel_hz=0),
                 surface=surface) as rt:
            rt.tick()
            base = surface.read_pixels()
            rt.controls.key("2")
            for _ in range(3):
                rt.tick()
            px = surface.read_pixels()
            assert rt.ui.failures == 0 and rt.session.history.loop_errors == []
            assert _near(px[:120, :, :3], legend.HAZARD_RGB, 30) > 30 > _near(base[:120, :, :3], legend.HAZARD_RGB, 30)
    finally:
        surface.close()


# -- pure parts: the legends, the layout, the timeline's scale -------------------------------------------
def test_phase_and_owner_legends_are_distinct():
    """No owner colour is close to a phase colour (or a mark's): a lane reads one way only."""
    from app.ui import legend

    phases = {k: v for k, v in legend.PHASE_RGB.items()} | {"wait": legend.WAIT_RGB}
    others = dict(legend.OWNER_RGB) | {"hazard": legend.HAZARD_RGB, "error": legend.ERROR_RGB}
    for a, ca in others.items():
        for b, cb in phases.items():
            assert max(abs(x - y) for x, y in zip(ca, cb)) >= 50, (a, b)
    gl, cl = legend.OWNER_RGB[legend.GL], legend.OWNER_RGB[legend.CL]
    assert max(abs(x - y) for x, y in zip(gl, cl)) >= 100
    for a, ca in phases.items():
        for b, cb in phases.items():
            if a < b:
                assert max(abs(x - y) for x, y in zip(ca, cb)) >= 50, (a, b)


def test_windows_open_with_room_for_the_panel_beside_the_scene():
    from app.scenes import scene_class
    from app.window import layout

    image = scene_class("image")
    assert image.window_size(None) == (512, 512)  # headless, or no panel: as before
    fb = image.window_size(None, panel_room=layout.PANEL_ROOM)
    assert fb == (512 + layout.PANEL_ROOM, 512)
    right = layout.MARGIN + layout.default_width(fb[0])  # the panel's right edge before any resize
    assert layout.scene_viewport(fb, right) == (layout.PANEL_ROOM, 0, 512, 512)  # the image 1:1, uncovered
    assert layout.scene_viewport((640, 400), right) is None  # too little room: the scene under the panel
    assert layout.scene_viewport(fb, None) is None  # no panel, or collapsed: the whole window
    assert layout.fit((456, 0, 640, 512), (640, 360)) == (456, 76, 640, 360)  # a fixed size, undistorted
    particles = scene_class("particles")  # a 3-D scene keeps the samples' 800x600 beside the panel
    fb = particles.window_size(None, panel_room=layout.PANEL_ROOM)
    assert fb == (800 + layout.PANEL_ROOM, 600) and particles.window_size(None) == (800, 600)
    assert particles.window_size(None, (640, 400), panel_room=layout.PANEL_ROOM) == (640, 400)  # asked: as asked
    right = layout.MARGIN + layout.default_width(fb[0])
    assert layout.scene_viewport(fb, right) == (layout.PANEL_ROOM, 0, 800, 600)


def test_timeline_steps_and_labels_have_units():
    from app.ui.panel import duration_label, nice_step, time_label

    assert [nice_step(x) for x in (0.7, 1.0, 1.3, 3.0, 7.7, 44.0, 0.012)] == [1.0, 1.0, 2.0, 5.0, 10.0, 50.0, 0.02]
    assert time_label(20.0, 10.0) == "20 ms" and time_label(0.5, 0.5) == "0.5 ms" and time_label(0.04, 0.02) == "40 us"
    assert duration_label(1.29) == "1.29 ms" and duration_label(0.069) == "69 us"


@pytest.mark.parametrize("stamps_ms, says", [(0.0, "frames timed: every frame, CL and GL"),
                                             (2.5, "frames timed: frames shorter than 2.5 ms: one per 2.5 ms of "
                                                   "frame time, CL and GL")])
def test_the_caps_tab_says_which_frames_are_timed(gl, stamps_ms, says):
    """The Caps tab names the GL timer's sampling and which frames are timed at all (--stamps-ms)."""
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, backend=HostCopy.name,
                    stamps_ms=stamps_ms)
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        sampling = rt.session.scheduler.gl_timer.sampling
        part = panel_snapshot(rt, tab="caps").caps
    assert part.gl_timer == f"{sampling}; {says}"
