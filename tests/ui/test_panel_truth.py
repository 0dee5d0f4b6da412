"""The panel tells what the stamps tell (issue 36): the CPU's calls and the device's execution never
share a name; the Owners table, the lanes and the report read one ownership model; a race's mark
sits where its two intervals start to overlap; the Errors and Hazards tabs count the run's folded
findings, equal to the report's; an error shows its own message.

Synthetic records give exact times (ns on the host clock; tolerance 1e-9 ms); runs use the small
particles scene on host_copy (software CL, software GL)."""
from __future__ import annotations

import collections
from types import SimpleNamespace

import numpy as np
import pytest
from support import panel_snapshot

from app.schedule.frame import ErrorRecord, FrameRecord
from app.sharing.backends.host_copy import HostCopy
from app.trace.names import CPU_NAMES, DEVICE_NAMES, cpu_name, device_name


def _record() -> FrameRecord:
    """A frame whose kernel runs long after the CPU enqueued it, and whose release command completes
    after the release phase returned (the CPU's sample already says GL)."""
    rec = FrameRecord(3, "particles", "gl_sharing", "none", start_ns=1_000_000, end_ns=1_900_000)
    rec.phases = {"acquire": (1_000_000, 1_010_000), "compute": (1_010_000, 1_040_000),
                  "release": (1_040_000, 1_070_000), "render": (1_070_000, 1_900_000)}
    # (queued, submitted, start, end) on the device clock (offset 0 here)
    rec.cl_profile = {"acquire": (1_001_000, 1_002_000, 1_020_000, 1_030_000),
                      "compute": (1_012_000, 1_013_000, 1_030_000, 1_322_000),
                      "release": (1_045_000, 1_046_000, 1_322_000, 1_400_000)}
    rec.owner_labels = ("particles.position",)
    rec.owners = [("start", 1_000_000, ("gl",)), ("acquire", 1_010_000, ("cl",)), ("compute", 1_040_000, ("cl",)),
                  ("release", 1_070_000, ("gl",)), ("render", 1_900_000, ("gl",))]
    return rec


def test_cpu_calls_and_device_runs_never_share_a_name():
    """The sequence row names the CPU's phases by the CPU's call ("enqueue kernel 30 us"), the CL
    lane's bars by the device's execution ("kernel 292 us"): no word names both."""
    from app.ui.model import KIND_RUN, LANE_CL, build_timeline

    tl = build_timeline(_record(), None)
    seq = tl.sequence()
    assert [(p, name) for p, name, _ms in seq] == [(p, cpu_name(p)) for p in
                                                    ("acquire", "compute", "release", "render", "panel")]
    np.testing.assert_allclose([ms for _p, _n, ms in seq[:4]], [0.010, 0.030, 0.030, 0.830], atol=1e-9)
    runs = np.flatnonzero((tl.lane == LANE_CL) & (tl.kind == KIND_RUN))
    assert {tl.labels[i] for i in runs} == {device_name(c) for c in ("acquire", "compute", "release")}
    kernel = next(i for i in runs if tl.names[i] == "compute")
    assert tl.labels[kernel] == "kernel" and tl.end[kernel] - tl.start[kernel] == pytest.approx(0.292, abs=1e-9)
    assert not set(CPU_NAMES.values()) & set(DEVICE_NAMES.values())
    assert not {name for _p, name, _ms in seq} & {tl.labels[i] for i in runs}


def test_the_owners_table_reads_the_stamps_not_the_cpu_samples():
    """When the release phase returns, the kernel still runs on the device and the release command
    has not started: the Owners table says CL there (the CPU's sample says GL), and GL still owns
    the object when the acquire phase returns (its command starts later); as the lane does."""
    from app.schedule.owners import owners_at_boundaries
    from app.ui.model import KIND_OWNER, build_timeline
    from app.ui.tabs import ownership

    rec = _record()
    view = SimpleNamespace(owners=(), clock_map=None)
    part = ownership.build(SimpleNamespace(record=rec, view=view))
    at = dict(part.rows[0].at)
    assert (at["acquire"], at["compute"], at["release"]) == ("GL", "CL", "CL"), at
    assert part.rows[0].at == tuple((b, st[0]) for b, st in owners_at_boundaries(rec))
    tl = build_timeline(rec, None)
    own = np.flatnonzero(tl.kind == KIND_OWNER)
    for boundary, t_ns, _samples in rec.owners[:-1]:
        t = (t_ns - rec.start_ns) / 1e6
        lane = [tl.names[i] for i in own if tl.start[i] <= t < tl.end[i]]
        assert lane == [at[boundary]], (boundary, lane)


def test_the_owners_table_the_lanes_and_the_report_agree(small_runtime):
    """One run: the Owners table's state at each boundary is the lanes' state at that time, and each
    is a state the report's owner summary gives time to for that object."""
    from app.schedule.owners import owners_at_boundaries
    from app.trace.report import build_report
    from app.ui.model import KIND_OWNER

    rt = small_runtime
    for _ in range(8):
        rt.tick()
    rt.session.finish()
    model = panel_snapshot(rt)
    rec = next(r for r in rt.session.history.records if r.index == model.header.frame)
    offset = rt.session.clock_map.cl.offset if hasattr(rt.session, "clock_map") else rt.session.clock.cl.offset
    states = owners_at_boundaries(rec, offset)
    tl = model.timeline
    report = build_report(rt.session.history, rt.facts())["owners"]
    assert model.owners.frame == tl.frame == rec.index
    for k, row in enumerate(model.owners.rows):
        assert row.at == tuple((b, st[k]) for b, st in states)
        own = np.flatnonzero((tl.kind == KIND_OWNER) & (tl.lane == 4 + k))
        for (boundary, t_ns, _s), (_b, state) in zip(rec.owners, row.at):
            t = (t_ns - rec.start_ns) / 1e6
            lane = [tl.names[i] for i in own if tl.start[i] <= t < tl.end[i]]
            if lane:  # (the frame's last boundary may be its end: no interval after it)
                assert lane == [state], (row.label, boundary, lane, state)
            assert report[row.label]["us"].get(state, 0) > 0, (row.label, state, report[row.label])


def test_a_race_is_marked_where_the_overlap_starts():
    """A race seen in the stamps is marked at the later of its two intervals' starts (where they
    begin to overlap), not at the middle of a phase."""
    from app.schedule.races import GL_BEFORE_RELEASE, _flag
    from app.ui.model import build_timeline

    rec = _record()
    rec.hazards = [_flag(GL_BEFORE_RELEASE, "particles.position", 3, "render", ("gl scene", 1_300_000, 1_500_000),
                         ("release", 1_322_000, 1_400_000), 78_000, 1_000, "device")]
    tl = build_timeline(rec, None)
    (mark,) = tl.markers
    assert mark.kind == "hazard" and mark.lane == 4
    assert mark.t_ms == pytest.approx(0.322, abs=1e-9)  # the release command's start: 1.322 ms - 1.000 ms


@pytest.fixture
def small_runtime(gl, tmp_path):
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=2048, headless=True, frames=10_000, trace=tmp_path / "t.json",
                    backend=HostCopy.name)
    with Run(cfg, surface=gl) as rt:
        yield rt


def test_the_findings_tabs_count_the_whole_run_as_the_report(small_runtime):
    """A run longer than the ring of kept frames: the Hazards tab and the header count every hazard
    of the run, folded (case, object, where, first and last frame), as the report does."""
    from app.trace.report import build_report

    rt = small_runtime
    h = rt.session.history
    h.records = collections.deque(h.records, maxlen=3)  # as a run of more frames than the ring keeps
    rt.tick()
    rt.controls.key("2")  # skip the release: hazards every frame
    for _ in range(8):
        rt.tick()
    rt.controls.key("2")
    rt.tick()
    rt.session.finish()
    model = panel_snapshot(rt, tab="hazards")
    report = build_report(h, rt.facts())
    assert report["hazards_total"] > 0
    assert model.hazards.total == model.header.hazards == report["hazards_total"]
    assert model.errors.total == model.header.errors == report["errors_total"]
    want = {(e["case"], e["label"], e["where"]): (e["first_frame"], e["last_frame"], e["count"])
            for e in report["hazards"]}
    got = {(f.title, f.label, f.where): (f.first_frame, f.last_frame, f.count) for f in model.hazards.entries}
    assert got == want


def test_an_error_shows_its_own_message():
    """The Errors tab shows the error's message (what failed, where) and the code's meaning beside
    it: the message is never replaced by the meaning."""
    from app.schedule.history import RunHistory
    from app.ui.model.findings import RunFindings
    from app.ui.tabs._findings import finding_lines

    h = RunHistory()
    h.errors.add_error(ErrorRecord(5, "compute", -30, "CL_INVALID_VALUE",
                                   "clEnqueueCopyBuffer: offset 8 + size 4 past the end of a 4-byte buffer",
                                   "clEnqueueAcquireGLObjects: num_objects is 0 and mem_objects is not NULL"))
    shown = RunFindings("error")
    (e,) = shown.read(h.errors).entries
    assert e.message.startswith("clEnqueueCopyBuffer") and e.title == "CL_INVALID_VALUE" and e.count == 1
    lines = finding_lines(e, detail=True)
    assert [style for style, _t in lines] == ["error", "text", "message", "meaning"]
    assert lines[2][1] == e.message and lines[3][1].startswith("clEnqueueAcquireGLObjects")
    assert {t for style, t in finding_lines(e, detail=False) if style == "tip"} == {e.message, lines[3][1]}
    shown.clear(h.errors)
    assert shown.read(h.errors).entries == () and shown.total == 0
    h.errors.add_error(ErrorRecord(9, "compute", -30, "CL_INVALID_VALUE", "again", ""))
    (e,) = shown.read(h.errors).entries
    assert (e.count, e.first_frame, e.last_frame, e.message) == (1, 9, 9, "again")


def test_the_events_tab_lists_the_frames_calls_and_their_statistics():
    """The Events tab lists the frame's calls in the order they began, each with its duration and
    the clock that measured it; the statistics of each phase and command equal numpy's over the
    same durations (tolerance 1e-9 ms)."""
    from app.ui.tabs.events import CPU, DEVICE, GL, WAIT, frame_events, statistics

    rec = _record()
    rec.waits = [("clFinish", 1_045_000, 1_069_000)]
    rec.gl_passes = [("gl scene", 1_100_000, 1_500_000)]
    events = frame_events(rec, cl_offset=0, gl_offset=0)
    assert [(e.name, e.source) for e in events] == [
        ("enqueue acquire", CPU), ("enqueue kernel", CPU), ("acquire command", DEVICE), ("kernel", DEVICE),
        ("enqueue release + wait", CPU), ("clFinish", WAIT), ("render (GL calls)", CPU), ("gl scene", GL),
        ("release command", DEVICE)]
    kernel = events[3]
    assert kernel.start_ms == pytest.approx(0.030, abs=1e-9) and kernel.ms == pytest.approx(0.292, abs=1e-9)
    # another frame, the kernel 100 us longer: the statistics of two
    other = _record()
    q, sub, st, en = other.cl_profile["compute"]
    other.cl_profile = {**other.cl_profile, "compute": (q, sub, st, en + 100_000)}
    stats = {(s.name, s.source): s for s in statistics([rec, other])}
    k = stats[("kernel", DEVICE)]
    want = np.array([0.292, 0.392])
    assert k.count == 2
    np.testing.assert_allclose([k.min, k.median, k.p95, k.max],
                               [want.min(), np.median(want), np.percentile(want, 95), want.max()], atol=1e-9)
    assert stats[("enqueue kernel", CPU)].median == pytest.approx(0.030, abs=1e-9)


def test_the_events_tab_describes_the_panels_frame(small_runtime):
    rt = small_runtime
    for _ in range(5):
        rt.tick()
    rt.session.finish()
    model = panel_snapshot(rt, tab="events")
    part = model.tabs["events"]
    assert part.frame == model.header.frame
    names = {e.name for e in part.events}
    assert {"enqueue kernel", "kernel"} <= names, names
    assert all(s.count >= 1 and s.min <= s.median <= s.p95 <= s.max for s in part.stats)


def test_zoom_to_the_hand_over_holds_every_hand_over():
    """"z" (and the button) zooms the timeline on the frame's hand-overs: the view holds each
    hand-over bar of the owner lanes, with a quarter of their span more on each side."""
    from app.ui.model import KIND_OWNER, build_timeline
    from app.ui.panel.state import PanelState
    from app.ui.panel.timeline import zoom_to_handover

    tl = build_timeline(_record(), None)
    hand = [i for i in np.flatnonzero(tl.kind == KIND_OWNER) if tl.names[i] in ("GL -> CL", "CL -> GL")]
    assert len(hand) == 2
    a, b = float(tl.start[hand].min()), float(tl.end[hand].max())
    assert (a, b) == pytest.approx((0.020, 0.400), abs=1e-9)  # the acquire command's start, the release's end
    state = PanelState()
    assert zoom_to_handover(tl, state)
    assert state.zoom == pytest.approx((a - 0.25 * (b - a), b + 0.25 * (b - a)), abs=1e-9)
    rec = _record()
    rec.owners = [(b_, t, ("gl",)) for b_, t, _o in rec.owners]  # no hand-over: the view stays
    state.zoom = None
    assert not zoom_to_handover(build_timeline(rec, None), state) and state.zoom is None


def test_resuming_releases_the_chosen_frame(small_runtime):
    """A frame chosen while paused stays chosen while paused; resuming follows the run again."""
    rt = small_runtime
    for _ in range(4):
        rt.tick()
    rt.controls.key("p")
    rt.tick()
    frame = panel_snapshot(rt).header.frame
    rt.ui.state.chosen = frame - 1
    rt.ui.mark_dirty()
    rt.tick()
    assert rt.ui.state.chosen == frame - 1 and rt.ui.last_model.header.chosen
    rt.controls.key("p")  # resume
    rt.ui.mark_dirty()
    rt.tick()
    rt.ui.mark_dirty()
    rt.tick()
    assert rt.ui.state.chosen is None and not rt.ui.last_model.header.chosen


def test_sub_pixel_zones_fold_into_one_block():
    """Bars narrower than a pixel, next to each other on one lane, are one block listing them; a
    lone narrow bar, a wide one, and narrow bars on another lane or far away stay as they are."""
    from app.ui.panel.timeline import fold_narrow

    lane = np.array([0, 0, 0, 0, 1, 0, 0])
    xa = np.array([10.0, 10.4, 11.2, 30.0, 10.5, 50.0, 12.0])
    xb = np.array([10.3, 10.9, 11.6, 40.0, 10.6, 50.5, 12.5])
    groups = fold_narrow(lane, xa, xb, np.arange(7), px=1.0)
    assert groups == [(0, 10.0, 12.5, [0, 1, 2, 6])]
    assert fold_narrow(lane, xa, xb, np.array([0, 3, 4, 5]), px=1.0) == []


def test_the_timing_plot_gives_each_frames_values(small_runtime):
    """Hovering a frame of the timing plot shows its value of every line (the model's ``at``): the
    plotted values of that frame, exactly; none for a frame the plot does not hold."""
    rt = small_runtime
    for _ in range(8):
        rt.tick()
    t = panel_snapshot(rt).timing
    assert t.count >= 2
    k = len(t.frames) - 2
    values = dict(t.at(int(t.frames[k])))
    assert set(values) >= {"acquire", "compute", "release", "render", "frame"}
    for name, ms in values.items():
        assert ms == t.series[name][k]
    assert t.at(-5) == ()
