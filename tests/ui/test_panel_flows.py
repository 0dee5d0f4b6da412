"""The links between the CPU's calls and the device's execution (issue 36): each CL command is linked
to the CPU call that enqueued it, leaving the call at the command's QUEUED stamp and landing at its
START; the hand-overs as the trace's flows. One model (app/schedule/flows.py): the panel's timeline
joins the same bars the trace's flow events join, at the same times.

Synthetic records give exact times (ns on the host clock; tolerance 1e-9 ms, the trace's 1 ns
rounding); a run uses the small particles scene on host_copy (software CL, software GL)."""
from __future__ import annotations

import collections
import json

import pytest

from app.schedule.clock import ClockMap
from app.schedule.flows import COMMAND, ENQUEUE, HANDOVER, PASS, PHASE, WAIT, frame_flows
from app.schedule.frame import FrameRecord

OFF = -5_000_000  # the device clock runs 5 ms ahead of the host's: device = host - OFF


def _record() -> FrameRecord:
    rec = FrameRecord(7, "particles", "host_copy", "finish", start_ns=1_000_000, end_ns=1_100_000)
    rec.phases = {"acquire": (1_000_000, 1_020_000), "compute": (1_020_000, 1_040_000),
                  "release": (1_040_000, 1_070_000), "render": (1_070_000, 1_100_000)}
    rec.waits = [("glFinish", 1_001_000, 1_015_000), ("clFinish", 1_050_000, 1_069_000)]
    # (queued, submit, start, end) on the device clock; the release's QUEUED stamp lands 3 us before
    # its phase began (the clock's mapping is known to a few us): held inside the call
    rec.cl_profile = {"acquire": (1_016_000 - OFF, 1_017_000 - OFF, 1_018_000 - OFF, 1_019_000 - OFF),
                      "compute": (1_030_000 - OFF, 1_031_000 - OFF, 1_032_000 - OFF, 1_045_000 - OFF),
                      "release": (1_037_000 - OFF, 1_047_000 - OFF, 1_048_000 - OFF, 1_060_000 - OFF)}
    rec.gl_passes = [("gl render", 1_075_000, 1_090_000)]
    return rec


def test_each_command_links_to_the_call_that_enqueued_it():
    flows = {f.name: f for f in frame_flows(_record(), OFF, 0)}
    assert set(flows) == {"enqueue acquire -> acquire command", "enqueue kernel -> kernel",
                          "enqueue release + wait -> release command", "release command -> gl",
                          "glFinish -> acquire command", "release command -> clFinish"}
    kernel = flows["enqueue kernel -> kernel"]
    assert kernel.kind == ENQUEUE and (kernel.src.row, kernel.src.name) == (PHASE, "compute")
    assert (kernel.src.start_ns, kernel.src.end_ns) == (1_020_000, 1_040_000)
    assert (kernel.dst.row, kernel.dst.name, kernel.dst.start_ns, kernel.dst.end_ns) == (COMMAND, "compute", 1_032_000,
                                                                                         1_045_000)
    assert (kernel.from_ns, kernel.to_ns) == (1_030_000, 1_032_000)  # its QUEUED stamp, to its START
    acquire = flows["enqueue acquire -> acquire command"]
    assert (acquire.from_ns, acquire.to_ns) == (1_016_000, 1_018_000)
    release = flows["enqueue release + wait -> release command"]
    assert (release.from_ns, release.to_ns) == (1_040_000, 1_048_000)  # QUEUED 1_037_000: held inside the call
    to_gl = flows["release command -> gl"]
    assert to_gl.kind == HANDOVER and (to_gl.src.row, to_gl.dst.row) == (COMMAND, PASS)
    assert (to_gl.from_ns, to_gl.to_ns) == (1_060_000, 1_075_000)
    gl_first = flows["glFinish -> acquire command"]
    assert (gl_first.src.row, gl_first.from_ns, gl_first.to_ns) == (WAIT, 1_015_000, 1_018_000)
    waited = flows["release command -> clFinish"]
    assert (waited.dst.row, waited.from_ns, waited.to_ns) == (WAIT, 1_060_000, 1_069_000)  # the wait's end


def test_a_command_without_stamps_has_no_link():
    rec = _record()
    del rec.cl_profile["compute"]
    rec.unstamped = ("compute",)
    names = {f.name for f in frame_flows(rec, OFF, 0)}
    assert "enqueue kernel -> kernel" not in names and "enqueue acquire -> acquire command" in names


def _clock() -> ClockMap:
    clock = ClockMap()
    clock.cl.observe(OFF, OFF, 0)  # known exactly: device = host - OFF
    clock.gl.observe(0, 0, 0)
    return clock


def test_the_timeline_joins_the_bars_the_trace_joins():
    """Each link of the panel's timeline joins the bars of its two ends (the CPU's call on the CPU
    lane, the command on the CL lane ...) at the times frame_flows gives; the trace writes the
    same links as flow events, at the same times, on the slices of the same names."""
    from app.trace.chrome import build_trace
    from app.ui.model import LANE_CL, LANE_CPU, LANE_GL, LANE_WAIT, build_timeline

    rec, clock = _record(), _clock()
    assert clock.cl.offset == OFF
    tl = build_timeline(rec, clock)
    links = {k.name: k for k in tl.links}
    model = {f.name: f for f in frame_flows(rec, OFF, 0)}
    assert set(links) == set(model)
    lane = {PHASE: LANE_CPU, WAIT: LANE_WAIT, COMMAND: LANE_CL, PASS: LANE_GL}
    for name, flow in model.items():
        k = links[name]
        for bar, end in ((k.src, flow.src), (k.dst, flow.dst)):
            assert tl.lane[bar] == lane[end.row] and tl.names[bar] == end.name, (name, end)
            assert tl.start[bar] == pytest.approx((end.start_ns - rec.start_ns) / 1e6, abs=1e-9)
        assert k.from_ms == pytest.approx((flow.from_ns - rec.start_ns) / 1e6, abs=1e-9)
        assert k.to_ms == pytest.approx((flow.to_ns - rec.start_ns) / 1e6, abs=1e-9)
    kernel = links["enqueue kernel -> kernel"]
    assert tl.labels[kernel.src] == "enqueue kernel" and tl.labels[kernel.dst] == "kernel"
    assert (kernel.from_ms, kernel.to_ms) == (pytest.approx(0.030, abs=1e-9), pytest.approx(0.032, abs=1e-9))
    # hovering either end lights the link
    assert kernel in tl.links_of(kernel.src) and kernel in tl.links_of(kernel.dst)
    assert {k.name for k in tl.links_of(kernel.dst)} == {"enqueue kernel -> kernel"}
    from app.ui.model import KIND_QUEUED
    queued = next(i for i in range(tl.count) if tl.kind[i] == KIND_QUEUED and tl.names[i] == "compute")
    assert tl.links_of(queued) == tl.links_of(kernel.dst)  # the kernel's wait in its queue: its run's links

    trace = json.loads(json.dumps(build_trace([rec], clock)))
    ev = trace["traceEvents"]
    starts = {e["name"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert set(starts) == set(model)
    slices = [e for e in ev if e["ph"] == "X"]
    for name, k in links.items():
        s, f = starts[name], ends[starts[name]["id"]]
        # the panel's times, µs from the frame's start (the trace's base is this frame's start)
        if model[name].kind == ENQUEUE:
            assert s["ts"] == pytest.approx(k.from_ms * 1e3, abs=0.002), name
            assert f["ts"] == pytest.approx(k.to_ms * 1e3, abs=0.002), name
        src = next(e for e in slices if e["tid"] == s["tid"] and e["ts"] <= s["ts"] <= e["ts"] + e["dur"]
                   and e["name"] == tl.labels[k.src])
        dst = next(e for e in slices if e["tid"] == f["tid"] and e["ts"] <= f["ts"] <= e["ts"] + e["dur"]
                   and e["name"] == tl.labels[k.dst])
        assert src["ts"] == pytest.approx(tl.start[k.src] * 1e3, abs=0.002)
        assert dst["ts"] == pytest.approx(tl.start[k.dst] * 1e3, abs=0.002)


def test_a_stepped_frame_links_where_its_bars_are_drawn():
    """Teaching mode draws a stepped frame's pauses shortened: a link moves with its bars."""
    from app.ui.model import build_timeline
    from app.ui.model.timeline import TEACH_GAP_NS

    rec = _record()
    pause = 50_000_000  # the user read for 50 ms between the compute and the release
    shift = {"release": pause, "render": pause}
    rec.phases = {p: (s + shift.get(p, 0), e + shift.get(p, 0)) for p, (s, e) in rec.phases.items()}
    q, sub, st, en = rec.cl_profile["release"]
    rec.cl_profile["release"] = (q + pause, sub + pause, st + pause, en + pause)
    rec.waits = [(n, s + (pause if s >= 1_040_000 else 0), e + (pause if s >= 1_040_000 else 0)) for n, s, e in rec.waits]
    rec.gl_passes = [(n, s + pause, e + pause) for n, s, e in rec.gl_passes]
    rec.stepped = True
    tl = build_timeline(rec, _clock())
    link = next(k for k in tl.links if k.name == "enqueue release + wait -> release command")
    assert tl.start[link.src] == pytest.approx(link.from_ms, abs=1e-9)  # the call's start (QUEUED held inside)
    assert link.to_ms == pytest.approx(tl.start[link.dst], abs=1e-9)
    assert link.from_ms < 0.040 + TEACH_GAP_NS / 1e6 + 1e-9  # drawn after the shortened pause, not 50 ms later


def test_a_run_links_every_stamped_command(gl, tmp_path):
    """A headless run: every command with device stamps is linked to its CPU call on the panel's
    timeline, as in the trace written from the same records (count per frame and name)."""
    from app.config import RunConfig
    from app.run import Run
    from app.ui.model import build_timeline

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend="host_copy",
                    stamps_ms=0)  # every frame timed
    with Run(cfg, surface=gl) as rt:
        for _ in range(6):
            rt.tick()
        rt.session.scheduler.finish()
        records = list(rt.session.history.records)
        clock = rt.session.clock
        trace = json.loads(open(rt._write_trace(tmp_path / "t.json")).read())
    in_trace = collections.Counter((e["args"]["frame"], e["name"]) for e in trace["traceEvents"] if e["ph"] == "s")
    linked = 0
    for rec in records:
        tl = build_timeline(rec, clock)
        enqueues = {k.name for k in tl.links if k.kind == ENQUEUE}
        from app.trace.names import cpu_name, device_name
        assert enqueues == {f"{cpu_name(c)} -> {device_name(c)}" for c in rec.cl_profile}, rec.index
        assert collections.Counter((rec.index, k.name) for k in tl.links) == \
            collections.Counter({key: n for key, n in in_trace.items() if key[0] == rec.index}), rec.index
        for k in tl.links:
            if k.kind == ENQUEUE:  # leaves the call inside it, lands at the command's start
                assert tl.start[k.src] <= k.from_ms <= tl.end[k.src]
                assert k.to_ms == pytest.approx(tl.start[k.dst], abs=1e-9)
        linked += len(enqueues)
    assert linked >= len(records) * 2  # the kernel and the release command at least, every frame
