"""``glshare attach --panel``'s timeline and table show what was measured for the attached program,
and only that: checked on the panel's model (no window), fed the records as the reader feeds them.

- the median / p95 table: the frame and, per frame, the CPU time of each kind of call and each
  queue's device time, never glshare's phases where the program's frames are its swaps;
- glshare's own lanes (CPU phases, CPU wait, CL, GL) only where the program's records fill them;
- the thread rows' bars coloured by kind (CL call, GL call, wait, swap), the legend naming them;
- a validator finding with a CL code marked at its call on its thread's row."""
from __future__ import annotations

import numpy as np
from test_attach_model import GLCTX, QUEUE, Stream
from test_attach_panel import fed, stamped_frame

from app.legend import CALL_RGB, CALL_TITLES

TOL_MS = 1e-9  # the records' stamps are integer ns: sums are exact up to float rounding


def swap_frame(s: Stream, draw_returns: bool = True) -> None:
    """A frame without hand-over: a kernel (2 us on the CPU, 1 us on the device), a blocking read
    (3 us), clFinish (4 us), a draw (5 us; ``draw_returns`` False: recorded at its issue only, as
    the GL library records draws), the swap (6 us)."""
    cid = s.kernel(dur=2000)
    s.device(cid, s.t + 100, s.t + 1100)
    s.call("clEnqueueReadBuffer", queue=hex(QUEUE), mems=["0xb0"], blocking=True, size=64, num_wait=0, wait=None,
           event_out=False, dur=3000)
    s.call("clFinish", queue=hex(QUEUE), dur=4000)
    if draw_returns:
        s.draw()
        s.records[-1]["t"] = s.records[-2]["t"] + 5000  # the draw's return: 5 us after its issue
        s.t = s.records[-1]["t"]
    else:
        s.call("glDrawArrays", src="gl", ctx=hex(GLCTX), mode=0, count=64, buffers=[3], textures=[], returns=False)
    s.swap()
    s.records[-1]["t"] = s.records[-2]["t"] + 6000
    s.t = s.records[-1]["t"]


def swaps_program(frames: int = 4, draw_returns: bool = True) -> Stream:
    s = Stream()
    s.setup()
    for _ in range(frames):
        swap_frame(s, draw_returns)
    return s


def lane_bars(tl, name: str) -> list[int]:
    k = [lane.name for lane in tl.lanes].index(name)
    return [i for i in range(tl.count) if tl.lane[i] == k]


def test_the_table_of_swap_frames_is_what_was_measured_not_glshares_phases():
    live, data = fed(swaps_program())
    m = data.update(live.view())
    cols = {c.name: (c.median, c.p95) for c in m.timing.columns}
    assert list(cols) == ["frame", "CL calls", "GL calls", "waits", "swaps", "queue 0x10 (device)"]
    # frames 1..3 have a period (frame 0: the program's start to its first swap, none); 2 and 3
    # are one frame's records long: 26 us (each record 1 us after the last, the returns as given)
    assert abs(cols["frame"][0] - 0.026) < TOL_MS
    for name, ms in (("CL calls", 0.002), ("waits", 0.007), ("GL calls", 0.005), ("swaps", 0.006),
                     ("queue 0x10 (device)", 0.001)):
        assert abs(cols[name][0] - ms) < TOL_MS and abs(cols[name][1] - ms) < TOL_MS, (name, cols[name])
    assert not {"acquire", "compute", "release", "render", "panel"} & set(cols)
    assert any("without glshare's phases" in n for n in m.header.notes)  # the header says why
    # GL's draws recorded at their issue only: their CPU time is not known, and no column claims one
    live, data = fed(swaps_program(draw_returns=False))
    cols = [c.name for c in data.update(live.view()).timing.columns]
    assert cols == ["frame", "CL calls", "waits", "swaps", "queue 0x10 (device)"]


def test_glshares_own_lanes_stand_only_where_the_program_fills_them():
    live, data = fed(swaps_program())
    m = data.update(live.view())
    tl = m.timeline
    assert [lane.name for lane in tl.lanes] == ["thread 1", "queue 0x10"]  # no CPU, CPU wait, CL, GL lane
    assert tl.cl_note == tl.gl_note == "" and tl.sequence() == ()
    assert [tl.names[i] for i in lane_bars(tl, "queue 0x10")] == ["NDRangeKernel"]

    s = Stream()  # a hand-over frame with device stamps: its phases, its CPU wait, its CL commands, its draw
    s.setup()
    stamped_frame(s)
    live, data = fed(s)
    tl = data.update(live.view()).timeline
    names = [lane.name for lane in tl.lanes]
    assert names[:4] == ["CPU", "CPU wait", "CL pid 4242", "GL"] and names[4:] == ["GL buffer 3", "thread 1",
                                                                                       "queue 0x10"]
    for k in range(4):  # each of glshare's lanes kept holds the program's bars, and says nothing is missing
        assert (tl.lane == k).any(), names[k]
    assert tl.cl_note == ""
    assert sorted(tl.names[i] for i in lane_bars(tl, "CL pid 4242")) == ["acquire", "compute", "release"]


def test_the_rows_bars_are_coloured_by_kind_and_the_legend_names_them():
    live, data = fed(swaps_program(2))
    tl = data.update(live.view()).timeline
    kinds = {tl.names[i]: tl.colors[i] for i in lane_bars(tl, "thread 1")}
    assert kinds == {"clEnqueueNDRangeKernel": "CL call", "clEnqueueReadBuffer": "wait", "clFinish": "wait",
                     "glDrawArrays": "GL call", "glXSwapBuffers": "swap"}
    assert {tl.colors[i] for i in lane_bars(tl, "queue 0x10")} == {"CL call"}
    assert tl.legend == ("CL call", "wait", "GL call", "swap")
    assert len({CALL_RGB[k] for k in tl.legend}) == 4 and all(CALL_TITLES[k] for k in tl.legend)
    # glshare's own run: no key, its bars coloured by phase as before
    from app.schedule.frame import FrameRecord
    from app.ui.model import build_timeline

    rec = FrameRecord.begin(0, "image", "gl_sharing", "finish")
    rec.phases = {"acquire": (0, 10), "compute": (10, 20)}
    own = build_timeline(rec, None)
    assert own.colors == () and own.legend == () and [lane.name for lane in own.lanes][:4] == [
        "CPU", "CPU wait", "CL gl_sharing", "GL"]


def test_a_finding_with_a_cl_code_is_marked_at_its_call():
    s = Stream()
    s.setup()
    swap_frame(s)
    s.hand_over("clEnqueueAcquireGLObjects", queue=0)  # CL_INVALID_COMMAND_QUEUE: the validator's error
    bad_t = s.last_call_t
    swap_frame(s)
    live, data = fed(s)
    m = data.update(live.view())
    assert m.errors.total == 1
    tl = m.timeline
    rec = live.view().history.records[-1]
    marks = [(mk.kind, tl.lanes[mk.lane].name, mk.t_ms, mk.title) for mk in tl.markers]
    assert len(marks) == 1
    kind, lane, t_ms, title = marks[0]
    assert (kind, lane) == ("error", "thread 1") and "CL_INVALID_COMMAND_QUEUE" in title
    assert "clEnqueueAcquireGLObjects" in title
    assert np.isclose(t_ms, (bad_t - rec.start_ns) / 1e6, rtol=0, atol=TOL_MS)
