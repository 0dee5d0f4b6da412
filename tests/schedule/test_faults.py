"""Faults made on purpose (--inject KIND@FRAME): recorded on their frame, shown in the panel and the
report; the loop goes on (the objects CL took are handed back), or ends cleanly where it cannot."""
from __future__ import annotations

import json

import pytest
from support import panel_snapshot

from app.config import RunConfig
from app.schedule.faults import STALL_TIMEOUT_S, Fault, parse_fault


def test_each_fault_on_its_frame_and_the_loop_goes_on(glshare, tmp_path):
    report = tmp_path / "r.json"
    res = glshare("run", "--headless", "--frames", "14", "--size", "4096", "--report", str(report),
                  "--inject", "enqueue@2", "--inject", "out_of_resources@4", "--inject", "gl-error@6",
                  "--inject", "stall@8", timeout=120)
    assert res.returncode == 0, res.stderr
    r = json.loads(report.read_text())
    assert r["frames"] == 14 and r["hazards"] == []
    # the kernel of frames 2 and 4 was not enqueued; every acquire was released
    assert r["counts"] == {"acquire": 14, "compute": 12, "release": 14}
    got = [(e["frame"], e["where"], e["name"], e["code"]) for e in r["errors"]]
    assert got == [(2, "compute", "CL_INVALID_VALUE", -30), (4, "compute", "CL_OUT_OF_RESOURCES", -5),
                   (6, "render", "GL_INVALID_ENUM", 0x0500), (8, "stall watchdog", "queue stalled", None)]
    assert "clEnqueueCopyBuffer" in r["errors"][0]["message"]  # the driver's own refusal
    assert "no driver call failed" in r["errors"][1]["message"]
    stalled_ms = float(r["errors"][3]["message"].split("completed nothing for ")[1].split(" ms")[0])
    assert stalled_ms >= STALL_TIMEOUT_S * 1e3
    assert r["errors_total"] == 4


def test_lost_context_ends_the_run_cleanly(glshare, tmp_path):
    report, shot, trace = tmp_path / "r.json", tmp_path / "s.png", tmp_path / "t.json"
    res = glshare("run", "--headless", "--frames", "50", "--size", "4096", "--inject", "lost_context@5",
                  "--report", str(report), "--screenshot", str(shot), "--trace", str(trace), timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines == ["glshare: error: the run stopped early: the GL context was lost at frame 5 (GL_CONTEXT_LOST, "
                     "made on purpose by --inject lost_context@5): nothing more can be drawn (stopped at frame 5)"], \
        res.stderr
    r = json.loads(report.read_text())
    assert r["stopped"]["how"] == "fault" and r["stopped"]["frame"] == 5 and r["stopped"]["exit_code"] == 1
    assert r["frames"] == 6 and [(e["frame"], e["name"], e["code"]) for e in r["errors"]] == [(5, "GL_CONTEXT_LOST",
                                                                                              0x0507)]
    assert shot.stat().st_size > 0 and json.loads(trace.read_text())["otherData"]["frames"] == 6


@pytest.mark.parametrize("args, needle", [
    (["--inject", "meltdown@3"], "unknown fault 'meltdown'"),
    (["--inject", "stall"], "expected KIND@FRAME"),
    (["--inject", "stall@-1"], "expected KIND@FRAME"),
    (["--inject", "stall@5"], "stall@5: the run has only 4 frames"),
    (["--inject", "stall@1", "--inject", "stall@1"], "the same fault is given twice"),
])
def test_bad_fault_is_one_line(glshare, tmp_path, args, needle):
    res = glshare("run", "--headless", "--frames", "4", "--report", str(tmp_path / "r.json"), *args)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and needle in lines[0], res.stderr
    assert not (tmp_path / "r.json").exists()


def test_parse():
    assert parse_fault("Out-Of-Resources@12") == Fault(12, "out_of_resources")
    assert str(parse_fault("stall@0")) == "stall@0"


@pytest.mark.parametrize("scene, size", [("particles", 2048), ("image", (64, 64)), ("yuv", (64, 36))])
def test_every_scene_hands_back_after_a_failed_compute_and_shows_it(gl, scene, size):
    from app.run import Run

    faults = (Fault(1, "enqueue"), Fault(2, "stall"), Fault(3, "gl_error"), Fault(4, "out_of_resources"))
    cfg = RunConfig(scene=scene, size=size, headless=True, frames=10_000, inject=faults)
    with Run(cfg, surface=gl) as rt:
        recs = [rt.tick() for _ in range(7)]
        session = rt.session
        owners = {st.owner for st in session.backend.tracker.states.values()}
        snap = panel_snapshot(rt)
    assert owners == {"gl"}  # nothing left with CL after the failed computes
    assert [bool(r.errors) for r in recs] == [False, True, True, True, True, False, False]
    assert [r.counts["compute"] for r in recs] == [1, 0, 1, 1, 0, 1, 1]
    assert all(r.counts["acquire"] == r.counts["release"] == 1 and r.hazards == [] for r in recs)
    shown = {(e.title, e.where, e.first_frame) for e in snap.errors.entries}
    assert shown == {("CL_INVALID_VALUE", "compute", 1), ("queue stalled", "stall watchdog", 2),
                     ("GL_INVALID_ENUM", "render", 3), ("CL_OUT_OF_RESOURCES", "compute", 4)}


def test_a_stall_left_open_is_let_go_at_teardown(gl):
    """Teaching mode stops after the compute phase of a stalled frame; the run ends there: the
    queue is let go before it is waited for (no hang)."""
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, overlay=False, frames=10_000,
                    inject=(Fault(1, "stall"),))
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        rt.session.set_teaching(True)
        rt.session.step_once = True
        rt.tick()  # acquire of frame 1
        rt.session.step_once = True
        rt.tick()  # compute of frame 1: the queue is stalled now
        plan = rt.session.scheduler.faults
        assert plan._gate is not None
    assert plan._gate is None  # let go by the teardown (finish_teaching_frame ran the release)
