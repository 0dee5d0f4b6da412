"""The panel: error folding and phase statistics against numpy, the panel drawn headless from any
snapshot without raising, the "write trace" control, and the window screenshot under Xvfb.

Pixel checks compare against a ``--no-panel`` run of the same frames and against the colours the
panel draws with (app/ui/panel.py), with stated tolerances; no wall-clock time is asserted.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import panel_snapshot

from app.schedule.frame import ErrorRecord, FrameRecord
from app.trace.png import read_png
from app.ui.model import SERIES, Folder, PhaseHistory


# -- folding and statistics ----------------------------------------------------------------------
def test_errors_fold_by_code_name_and_where():
    folder = Folder(limit=3)
    for f in range(10):
        folder.add_error(ErrorRecord(f, "acquire", -38, "CL_INVALID_MEM_OBJECT", f"frame {f}: bad", "not valid"))
    folder.add_error(ErrorRecord(4, "release", -38, "CL_INVALID_MEM_OBJECT", "bad", "not valid"))
    folder.add_error(ErrorRecord(12, "compute", -5, "CL_OUT_OF_RESOURCES", "oom", "no resources"))
    folder.add_error(ErrorRecord(13, "panel", None, "ValueError", "x"))  # over the limit of 3 kinds
    entries = folder.as_list()
    assert [e["where"] for e in entries] == ["compute", "acquire", "release"]  # most recent first
    acq = entries[1]
    assert (acq["count"], acq["first_frame"], acq["last_frame"]) == (10, 0, 9)
    assert acq["code"] == -38 and acq["name"] == "CL_INVALID_MEM_OBJECT" and acq["meaning"] == "not valid"
    assert acq["message"] == "frame 9: bad"  # the last message is kept
    assert entries[2]["count"] == 1 and entries[0]["count"] == 1
    assert folder.total == 13 and folder.other == 1


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
        recs.append(_rec(i, t, spans))
        t += 10_000_000
    for rec, nxt in zip(recs[:-1], recs[1:]):
        hist.push(rec, nxt)
    frames, data = hist.ordered()
    assert list(frames) == list(range(29, 79))  # oldest first, the newest without a successor left out
    stats = hist.stats()
    pushed = recs[29:79]
    for k, name in enumerate(SERIES):
        if name == "frame":
            ref = np.full(50, 10.0)  # start to next start, 10 ms apart
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
    from app.session.loop import Run

    cfg = RunConfig(scene="particles", size=2048, headless=True, frames=10_000, trace=tmp_path / "t.json")
    with Run(cfg, surface=gl) as rt:
        yield rt


def test_panel_survives_any_snapshot(small_runtime):
    """Missing keys, wrong types, NaN: drawn as far as it goes, never raised into the loop."""
    from app.ui.panel import draw_panel

    rt = small_runtime
    for _ in range(5):
        rt.tick()
    good = panel_snapshot(rt)
    broken = [{}, {"timing": {"count": 5}}, {**good, "timeline": {"count": 2, "kind": "x", "span_ms": 1.0}},
              {**good, "errors": [{"count": 1}]}, {**good, "ownership": None}]
    for snap in broken + [good]:
        rt.ui.layer.draw(lambda s=snap: draw_panel(s, rt.ui.state, rt.controls.request), force=True)  # past the cache
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
    assert {"acquire", "compute", "release"} <= names
    snap = panel_snapshot(rt)
    assert snap["trace_written"]["path"].endswith("button.json")
    tl = snap["timeline"]
    assert snap["timing"]["count"] >= 3 and tl["count"] == len(tl["start"]) == len(tl["name"]) > 0
    assert np.all(tl["end"] >= tl["start"]) and tl["start"].min() >= 0  # ms from the first frame shown


def test_snapshot_is_plain_data(small_runtime):
    """Nothing in the snapshot is a GL or CL object: only builtins and numpy arrays."""
    rt = small_runtime
    for _ in range(6):
        rt.tick()
    snap = panel_snapshot(rt)
    allowed = (str, int, float, bool, type(None), np.ndarray, np.floating, np.integer)

    def walk(x, path="snap"):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}")
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        else:
            assert isinstance(x, allowed), (path, type(x))

    walk(snap)
    for key in ("timing", "timeline", "ownership", "errors", "caps", "controls", "clock"):
        assert key in snap, key
    assert {row["label"] for row in snap["ownership"]} == {"particles.position", "particles.color"}
    assert all(row["state"] == "GL" for row in snap["ownership"])  # between frames GL owns them
    assert [b["name"] for b in snap["caps"]["backends"]] == ["gl_sharing", "external_memory", "host_mapped", "host_copy"]


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
    from app.ui.panel import PHASE_COLORS, layout

    shots = {}
    for name, extra in (("panel", ()), ("plain", ("--no-panel",))):
        shots[name] = tmp_path / f"{name}.png"
        res = glshare("run", "--frames", "90", "--size", "4096", "--screenshot", str(shots[name]), *extra)
        assert res.returncode == 0, res.stderr
        assert "no display" not in res.stderr
    panel, plain = read_png(shots["panel"]), read_png(shots["plain"])
    assert panel.shape == plain.shape and panel.shape[:2] == (600, 800)  # the default 800x600 window
    rects = layout(800, 600)
    win_a, win_b = _crop(panel, rects["window"]), _crop(plain, rects["window"])
    changed = (np.abs(win_a.astype(np.int16) - win_b.astype(np.int16)).max(axis=-1) > 24).mean()
    assert changed > 0.5, f"only {changed:.0%} of the panel's area differs from the --no-panel run"
    plot = _crop(panel, rects["plot"])
    assert plot.std() > 10 and len(np.unique(plot.reshape(-1, 3), axis=0)) > 30, "the timing plot is flat"
    x0, y0, x1, y1 = rects["plot"]
    inner = _crop(panel, (x0 + 40, y0 + 4, x1 - 6, y1 - 24))  # inside the axes: no tick labels (no legend)
    frame_line = _near(inner, (242, 242, 242), 30)  # the white whole-frame series
    assert frame_line > 100, f"no whole-frame line in the plot ({frame_line} px)"
    for name in ("acquire", "render"):
        rgb = tuple(int(c * 255) for c in PHASE_COLORS[name])
        assert _near(inner, rgb, 40) > 20, f"no {name} line in the plot"
    timeline = _crop(panel, rects["timeline"])
    for name in ("acquire", "release", "render", "panel"):  # CPU phase bars of the last frames
        rgb = tuple(int(c * 255) for c in PHASE_COLORS[name])
        assert _near(timeline, rgb, 30) > 6, f"no {name} bar in the timeline"
    assert _near(timeline, (230, 70, 60), 30) > 3, "no CPU wait (glFinish/clFinish) in the timeline"


def test_size_control_rebuilds_the_scene(small_runtime):
    rt = small_runtime
    rt.tick()
    rt.controls.request("set_size", size=1024)  # what the panel's size combo queues
    rt.tick()
    assert rt.session.cfg.size == 1024 and rt.session.scene.n == 1024
    assert rt.session.history.switches[-1]["what"] == "size"
    rec = rt.tick()
    assert rec.errors == [] and panel_snapshot(rt)["controls"]["size"] == "1024"


def test_ownership_follows_a_stepped_frame(small_runtime):
    """Teaching mode stops between phases: after the acquire CL owns the objects (or they are on
    their way), after the render GL owns them again; the panel's Teach tab shows up by itself."""
    rt = small_runtime
    rt.tick()
    rt.controls.key("t")  # teaching mode: paused, one phase per step
    rt.tick()
    rt.controls.key("n")
    rt.tick()  # the acquire ran
    snap = panel_snapshot(rt)
    assert snap["teaching_active"] and "teaching" in snap
    assert {row["state"] for row in snap["ownership"]} <= {"CL", "GL -> CL"}, snap["ownership"]
    for _ in range(3):  # compute, release, render
        rt.controls.key("n")
        rt.tick()
    assert {row["state"] for row in panel_snapshot(rt)["ownership"]} == {"GL"}
    assert rt.ui.state.tab == "teach" and rt.ui.state.failures == 0
    rt.controls.key("t")  # leaving teaching mode: the loop runs on
    rec = rt.tick()
    assert rec is not None and rec.errors == []
