"""The Chrome trace export, the clock mapping and the GL timer.

The 40-frame headless trace is checked for what Perfetto needs (valid JSON, complete events with
microsecond ts/dur on named tracks, matched flow events) and for what glshare promises (per
frame: acquire <= compute <= release by CL start stamps and by host phase starts, every event
carrying its frame). The clock is checked against simulated clocks with a known offset.
"""
from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from app.schedule.clock import ClockMap, OffsetEstimate
from app.schedule.frame import FrameRecord
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import HostMapped
from app.trace.chrome import build_trace

FRAMES = 40


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    from support import run_glshare  # the glshare fixture's function (a module-scoped run)

    path = tmp_path_factory.mktemp("trace") / "t.json"
    res = run_glshare("run", "--headless", "--frames", str(FRAMES), "--size", "4096", "--trace", str(path),
                      "--backend", "host_copy", "--screenshot", str(path.with_suffix(".png")))
    assert res.returncode == 0, res.stderr
    assert f"wrote trace {path}" in res.stdout
    return json.loads(path.read_text())


def _threads(trace) -> dict[int, str]:
    return {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}


def test_trace_is_valid_trace_event_json(trace):
    events = trace["traceEvents"]
    threads = _threads(trace)
    assert "CPU main thread" in threads.values() and "GL" in threads.values()
    assert any(name.startswith("CL queue host_copy") for name in threads.values())
    complete = [e for e in events if e["ph"] == "X"]
    for e in complete:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert e["pid"] == 1 and e["tid"] in threads, e
        assert isinstance(e["args"]["frame"], int), e
    names = {e["name"] for e in complete}
    for name in ("enqueue acquire", "enqueue kernel", "enqueue release + wait", "kernel", "release command"):
        assert name in names, name
    assert any(n.startswith("gl") for n in names)
    by_tid = collections.Counter(threads[e["tid"]].split()[0] for e in complete)
    assert by_tid["CPU"] >= FRAMES * 5 and by_tid["GL"] >= FRAMES, by_tid  # --trace: GL timed every frame
    cl_names = collections.Counter(e["name"] for e in complete if threads[e["tid"]].startswith("CL"))
    assert cl_names["kernel"] == cl_names["release command"] == FRAMES, cl_names
    # host_copy copies in only what GL wrote since CL's last copy: the initial upload, once, at frame 0;
    # every later acquire enqueues nothing (no CL event)
    # (a command the driver gave no stamps, NVIDIA's marker, has no CL slice: the frame's args name it)
    unstamped = {e["args"]["frame"]: set(e["args"]["cl_unstamped"]) for e in complete if e["cat"] == "cpu.frame"}
    stamped_acquire = [0] if "acquire" not in unstamped[0] else []
    n_unstamped = sum(len(u) for u in unstamped.values())
    acquires = [e["args"]["frame"] for e in complete if e["name"] == "acquire command" and threads[e["tid"]].startswith("CL")]
    assert acquires == stamped_acquire and by_tid["CL"] == 2 * FRAMES + 1 - n_unstamped, (acquires, by_tid)
    # flows: every start has its finish with the same id, and they join different tracks
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    kinds = collections.Counter(e["name"] for e in starts.values())
    assert kinds["release command -> gl"] == FRAMES - sum("release" in u for u in unstamped.values())
    # the wait joins CL's first command: the acquire, else the kernel
    assert (kinds["glFinish -> acquire command"], kinds["glFinish -> kernel"]) == (len(stamped_acquire),
                                                                                  FRAMES - len(stamped_acquire)), kinds
    assert kinds["release command -> clFinish"] == FRAMES
    for fid, s in starts.items():
        f = ends[fid]
        assert f["bp"] == "e" and s["tid"] != f["tid"] and f["ts"] >= s["ts"], (s, f)
    # async "queued" slices pair up too
    begins = collections.Counter(e["id"] for e in events if e["ph"] == "b")
    assert begins and begins == collections.Counter(e["id"] for e in events if e["ph"] == "e")


def test_trace_has_acquire_compute_release_in_order_every_frame(trace):
    threads = _threads(trace)
    cl, cpu = collections.defaultdict(dict), collections.defaultdict(dict)
    for e in trace["traceEvents"]:
        if e["ph"] != "X":
            continue
        track = threads[e["tid"]]
        if track.startswith("CL queue"):
            cl[e["args"]["frame"]][e["args"]["command"]] = e
        elif track == "CPU main thread" and e["cat"] == "cpu.phase":
            cpu[e["args"]["frame"]][e["args"]["phase"]] = e
    unstamped = {e["args"]["frame"]: set(e["args"]["cl_unstamped"]) for e in trace["traceEvents"]
                 if e.get("cat") == "cpu.frame"}
    assert sorted(cl) == sorted(cpu) == list(range(FRAMES))
    for f in range(FRAMES):
        cmds = [cl[f][n] for n in ("acquire", "compute", "release") if n in cl[f]]  # acquire: frame 0 only
        # each command has its CL slice unless the driver gave it no stamps (NVIDIA's markers)
        assert len(cmds) + len(unstamped[f]) == (3 if f == 0 else 2), (f, sorted(cl[f]), unstamped[f])
        raw = [ev["args"]["start_ns"] for ev in cmds]
        assert raw == sorted(raw), (f, raw)  # device stamps, as the driver gave them
        ts = [ev["ts"] for ev in cmds]
        assert ts == sorted(ts), f  # the same on the host clock
        for ev in cmds:
            q, s, st, en = (ev["args"][k] for k in ("queued_ns", "submit_ns", "start_ns", "end_ns"))
            assert q <= s <= st <= en, (f, ev["name"])
        host = [cpu[f][n]["ts"] for n in ("acquire", "compute", "release", "render")]
        assert host == sorted(host), (f, host)
        # one clock: each CL command starts after the host began enqueueing it (1 us of slack for
        # the rounding of ts to ns and the stated clock uncertainty)
        slack = 1.0 + trace["otherData"]["clock"]["cl"]["uncertainty_ns"] / 1e3
        for name in cl[f]:
            assert cl[f][name]["ts"] >= cpu[f][name]["ts"] - slack, (f, name)


def test_trace_clock_calibration_is_stated(trace):
    clock = trace["otherData"]["clock"]
    assert clock["cl"]["known"] and clock["gl"]["known"]
    # stated, not bounded: how tight the calibration is depends on the machine's load
    for side in ("cl", "gl"):
        u = clock[side]["uncertainty_ns"]
        assert isinstance(u, (int, float)) and u >= 0 and u == u and u != float("inf"), (side, u)


# -- the clock mapping ------------------------------------------------------------------------------
def test_offset_estimate_brackets_true_offset_and_maps_monotonically():
    rng = np.random.default_rng(5)
    true = -144_683_000  # device clock = host clock - true (PoCL's is ~144 ms off here)
    est = OffsetEstimate("sim")
    widths = []
    for _ in range(200):
        t0 = int(rng.integers(1_000_000, 10**12))
        read_at = t0 + int(rng.integers(0, 40_000))  # the other clock is read inside [t0, t1]
        t1 = read_at + int(rng.integers(0, 40_000))
        est.observe(t0, t1, read_at + true)
        widths.append(est.uncertainty_ns)
        assert est.lo <= -true <= est.hi  # the interval always holds the true offset
    assert est.resets == 0
    assert widths == sorted(widths, reverse=True)  # intersecting only tightens
    assert abs(est.offset - (-true)) <= est.uncertainty_ns < 5_000
    dev = np.sort(rng.integers(0, 10**12, 1000)).astype(np.int64)
    host = est.to_host(dev)
    assert np.all(np.diff(host) >= 0)  # monotonic: the order of device events is kept
    assert np.all(host - dev == est.offset) and est.to_host(int(dev[3])) == int(host[3])


def test_offset_estimate_restarts_when_the_clock_steps():
    est = OffsetEstimate("sim")
    est.observe(1000, 1100, 500)  # offset in [500, 600]
    est.observe(1000, 1050, 480)  # [520, 570]: tighter
    assert (est.lo, est.hi, est.resets) == (520, 570, 0)
    est.observe(5000, 5010, 1000)  # [4000, 4010]: disjoint: the other clock stepped
    assert (est.lo, est.hi, est.resets) == (4000, 4010, 1)


def test_clockmap_calibrates_pocl_and_gl(gl, device_choice):
    import pyopencl as cl

    ctx = cl.Context([device_choice.device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    clock = ClockMap.calibrate(device_choice.device, queue)
    assert clock.cl.known and clock.gl.known, clock.as_dict()
    # a fresh marker, bracketed by host reads, maps inside its bracket (within the uncertainty)
    import time

    t0 = time.perf_counter_ns()
    ev = cl.enqueue_marker(queue)
    t1 = time.perf_counter_ns()
    ev.wait()
    mapped = clock.cl_to_host(ev.profile.queued)
    u = clock.cl.uncertainty_ns
    assert t0 - u - 1000 <= mapped <= t1 + u + 1000, (t0, mapped, t1, clock.as_dict())
    queue.finish()


# -- the GL timer -----------------------------------------------------------------------------------
def test_gl_timer_reads_back_without_stalling(gl):
    from OpenGL import GL

    from app.diagnostics import live
    from app.gl.timer import GlTimer

    before = live.count("gl_query")
    timer = GlTimer("test timer", slots=2, owner="test")
    assert timer.enabled, timer.reason
    recs = [FrameRecord(i, "s", "b", "finish") for i in range(3)]
    for rec in recs:
        with timer.span(rec, "gl clear"):
            GL.glClear(GL.GL_COLOR_BUFFER_BIT)
    assert timer.dropped == 1 and recs[2].gl_passes == []  # ring full: untimed, never waited for
    assert timer.oldest_pending_frame == 0
    timer.harvest(wait=True)
    for rec in recs[:2]:
        (name, start, end), = rec.gl_passes
        assert name == "gl clear" and 0 < start <= end
    assert recs[0].gl_passes[0][1] <= recs[1].gl_passes[0][1]
    assert timer.oldest_pending_frame is None and timer.timed == 2
    timer.release()
    timer.release()  # idempotent
    assert live.count("gl_query") == before


@pytest.mark.parametrize("no_wait", [True, False])
def test_gl_timer_harvest_without_waiting_reads_what_waiting_reads(gl, no_wait):
    """harvest() never waits: from GL 4.4 the end stamp read with QUERY_RESULT_NO_WAIT tells whether
    a pass is done (two calls), before that QUERY_RESULT_AVAILABLE does (three). Once GL finished,
    either path reads each pass, the same stamps as a waiting read of the same queries."""
    from OpenGL import GL

    from app.gl.timer import GlTimer

    timer = GlTimer("no-wait timer", slots=4, owner="test")
    assert timer.enabled, timer.reason
    if no_wait and not timer._no_wait:
        timer.release()
        pytest.skip("this GL is older than 4.4: no QUERY_RESULT_NO_WAIT")
    timer._no_wait = no_wait
    recs = [FrameRecord(i, "s", "b", "finish") for i in range(3)]
    try:
        pairs = []
        for rec in recs:
            with timer.span(rec, "gl clear"):
                GL.glClear(GL.GL_COLOR_BUFFER_BIT)
            pairs.append(timer._pending[-1][2:])
        GL.glFinish()
        timer.harvest()  # the first calls of a harvest period read: done passes only, no wait
        assert [len(r.gl_passes) for r in recs] == [1, 1, 1] and timer.timed == 3
        for rec, (q0, q1) in zip(recs, pairs):
            (_, start, end), = rec.gl_passes
            assert (start, end) == (timer._result(q0), timer._result(q1)) and 0 < start <= end
    finally:
        timer.release()


# -- build_trace on hand-made records ----------------------------------------------------------------
def test_build_trace_links_release_to_gl_and_waits():
    rec = FrameRecord(7, "particles", "host_copy", "finish", start_ns=1_000_000, end_ns=1_100_000)
    rec.phases = {"acquire": (1_000_000, 1_020_000), "compute": (1_020_000, 1_040_000),
                  "release": (1_040_000, 1_070_000), "render": (1_070_000, 1_100_000)}
    rec.waits = [("glFinish", 1_001_000, 1_015_000), ("clFinish", 1_050_000, 1_069_000)]
    off = -5_000_000  # device clock = host - off (5 ms ahead; device stamps are unsigned)
    rec.cl_profile = {"acquire": (1_016_000 - off, 1_017_000 - off, 1_018_000 - off, 1_019_000 - off),
                      "compute": (1_030_000 - off, 1_031_000 - off, 1_032_000 - off, 1_045_000 - off),
                      "release": (1_046_000 - off, 1_047_000 - off, 1_048_000 - off, 1_060_000 - off)}
    rec.gl_passes = [("gl render", 1_075_000, 1_090_000)]
    clock = ClockMap()
    clock.gl.observe(0, 0, 0)  # GL clock == host clock
    clock.observe_frame(rec)  # as the scheduler's harvest does, once per record (RunHistory.on_harvested)
    before = clock.as_dict()
    trace = build_trace([rec], clock)
    assert build_trace([rec], clock) == trace and clock.as_dict() == before  # building reads the clock only
    ev = trace["traceEvents"]
    # the queued stamps inside the host phases alone pin the offset down to a few us
    assert abs(clock.cl.offset - off) <= clock.cl.uncertainty_ns <= 5_000
    cl_acq = next(e for e in ev if e["ph"] == "X" and e["name"] == "acquire command" and e["cat"] == "cl")
    want = (1_018_000 - off + clock.cl.offset - rec.start_ns) / 1e3
    assert cl_acq["ts"] == pytest.approx(want, abs=0.002) and cl_acq["dur"] == pytest.approx(1.0)
    assert cl_acq["args"]["frame"] == 7 and cl_acq["args"]["start_ns"] == 1_018_000 - off
    flows = {e["name"]: e for e in ev if e["ph"] == "s"}
    assert set(flows) == {"release command -> gl", "glFinish -> acquire command", "release command -> clFinish",
                          "enqueue acquire -> acquire command", "enqueue kernel -> kernel",
                          "enqueue release + wait -> release command"}
    finish = {e["id"]: e for e in ev if e["ph"] == "f"}
    gl_pass = next(e for e in ev if e["ph"] == "X" and e["name"] == "gl render")
    f = finish[flows["release command -> gl"]["id"]]
    assert f["tid"] == gl_pass["tid"] and gl_pass["ts"] <= f["ts"] <= gl_pass["ts"] + gl_pass["dur"]
    json.dumps(trace)  # serializable as is


def test_trace_across_a_switch_has_one_queue_track_per_backend(gl, tmp_path):
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend=HostCopy.name,
                    stamps_ms=0)  # every frame timed
    with Run(cfg, surface=gl) as rt:
        for _ in range(3):
            rt.tick()
        assert rt.session.switch(scene="image")
        for _ in range(3):
            rt.tick()
        rt.session.scheduler.finish()
        trace = json.loads(open(rt._write_trace(tmp_path / "switch.json")).read())
    threads = _threads(trace)
    queues = sorted(name for name in threads.values() if name.startswith("CL queue"))
    assert queues == ["CL queue host_copy"]  # the rebuilt queue stays on its backend's track
    cl = collections.defaultdict(set)
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and threads[e["tid"]].startswith("CL queue"):
            cl[e["args"]["segment"]].add(e["args"]["frame"])
    assert dict(cl) == {0: {0, 1, 2}, 1: {3, 4, 5}}  # args.segment says which set-up's queue
    assert [s["what"] for s in trace["otherData"]["switches"]] == ["scene"]
    switches = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["cat"] == "switch"]
    assert len(switches) == 1 and switches[0]["s"] == "g" and switches[0]["args"]["frame"] == 3
    owners = sorted(name for name in threads.values() if name.startswith("owner "))
    assert owners == ["owner image.julia", "owner particles.color", "owner particles.position"]


def test_gl_timer_samples_one_frame_in_every(gl):
    from OpenGL import GL

    from app.gl.timer import SOFTWARE_EVERY, GlTimer, default_every

    assert default_every("llvmpipe (LLVM 15.0.6, 256 bits)") == SOFTWARE_EVERY > 1
    assert default_every("NVIDIA H200/PCIe/SSE2") == 1
    timer = GlTimer("sampling timer", slots=8, owner="test", every=4)
    try:
        recs = [FrameRecord(i, "s", "b", "finish") for i in range(10)]
        for rec in recs:
            with timer.span(rec, "gl clear"):
                GL.glClear(GL.GL_COLOR_BUFFER_BIT)
        timer.harvest(wait=True)
        timed = [r.index for r in recs if r.gl_passes]
        assert timed == [0, 4, 8] and timer.timed == 3 and timer.dropped == 0
        assert timer.sampling == "one frame in 4"
    finally:
        timer.release()


def test_scheduler_reads_cl_profiles_in_batches(host_copy, surface):
    from app.config import RunConfig
    from app.scenes.particles import ParticlesScene
    from app.schedule.scheduler import PROFILE_BATCH, FrameScheduler

    scene = ParticlesScene(RunConfig(size=1024, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        for f in range(3):
            sched.run_frame(f, target)
        # not read yet: the events wait on the records for the batch (or for someone to ask)
        assert [bool(r.events) for r in sched.records] == [True] * 3
        assert all(not r.cl_profile for r in sched.records)
        sched.harvest()  # what the panel does before it reads the records
        assert all(not r.events and set(r.cl_profile) >= {"compute", "release"} for r in sched.records)
        for f in range(3, 3 + PROFILE_BATCH):
            sched.run_frame(f, target)
        # a full batch waits for the next CPU wait for GL: not read by the frame that filled it
        assert len(sched.profiles.pending) == PROFILE_BATCH and not sched.records[-1].cl_profile
        sched.run_frame(3 + PROFILE_BATCH, target)
        # the next frame read it before its glFinish, without being asked, and says so on its record
        filler, reader = sched.records[-2], sched.records[-1]
        assert list(sched.profiles.pending) == [reader] and all(r.cl_profile for r in list(sched.records)[:-1])
        # (a GL timer harvest is on a record only where it read a pass: one frame in 8 is timed here)
        names = [name for name, _, _ in reader.bookkeeping]
        assert names[0] == "CL profiling harvest" and set(names[1:]) <= {"GL timer harvest"}
        _, h0, h1 = reader.bookkeeping[0]
        finish = next(w for w in reader.waits if w[0] == "glFinish")
        cl_finish = next(w for w in reader.waits if w[0] == "clFinish")
        acquire, release = reader.phases["acquire"], reader.phases["release"]
        # inside the acquire phase, before glFinish; the GL timer's inside the release, before clFinish
        assert acquire[0] <= h0 <= h1 <= finish[1] <= finish[2] <= acquire[1]
        for _, g0, g1 in reader.bookkeeping[1:]:
            assert release[0] <= g0 <= g1 <= cl_finish[1] <= cl_finish[2] <= release[1]
        assert all(name == "GL timer harvest" for name, _, _ in filler.bookkeeping)
        # over the frames, the GL timer's passes were read in the windows before clFinish too
        gl_reads = [(r, span) for r in sched.records for span in r.bookkeeping if span[0] == "GL timer harvest"]
        assert gl_reads and sched.gl_timer.timed >= 1
        for r, (_, g0, g1) in gl_reads:
            cl_finish = next(w for w in r.waits if w[0] == "clFinish")
            assert r.phases["release"][0] <= g0 <= g1 <= cl_finish[1]
        for rec in list(sched.records)[:-1]:
            for q, sub, st, en in rec.cl_profile.values():
                assert 0 < q <= sub <= st <= en
            assert rec.cl_profile["compute"][2] <= rec.cl_profile["release"][2]
    finally:
        sched.close()
        scene.teardown()


def test_the_cl_stamps_of_one_frame_per_interval_are_read(host_copy, surface, monkeypatch):
    """Frames shorter than ``stamps_interval_ns`` are timed one per interval of their own time
    (its CL stamps read, its draw timed by the GL timer); the others' events are dropped unread
    once complete, their draws untimed; each record says which it was, and the report's device
    times are over the timed frames alone."""
    from types import SimpleNamespace

    import app.schedule.scheduler as mod
    from app.config import RunConfig
    from app.scenes.particles import ParticlesScene
    from app.trace.report import statistics
    from app.trace.stats import summary

    fake = [0]

    def clock():  # the scheduler's clock: 40 us a reading (a frame reads it about ten times)
        fake[0] += 40_000
        return fake[0]

    from app.schedule import harvest, in_flight, runner

    for module in (runner, harvest, in_flight):  # (every clock reading of the frame's)
        monkeypatch.setattr(module, "ns", clock)
    interval = 1_000_000
    scene = ParticlesScene(RunConfig(size=1024, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = mod.FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True,
                               stamps_interval_ns=interval)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        for f in range(40):
            sched.run_frame(f, target)
        sched.finish()
        recs = list(sched.records)
    finally:
        sched.close()
        scene.teardown()
    want, last, work = [], None, 0  # the rule, from the frames' recorded starts and ends
    for r in recs:
        take = last is None or work >= interval or r.start_ns - last >= mod.STAMPS_WALL_FACTOR * interval
        want.append(take)
        if take:
            last, work = r.start_ns, 0
        work += r.end_ns - r.start_ns
    assert [r.sampled for r in recs] == want
    assert 5 <= sum(want) <= 30  # both kinds occur
    for r in recs:
        assert not r.events  # every event released, read or not
        if r.sampled:
            assert {"compute", "release"} <= set(r.cl_profile)
            for q, _, st, en in r.cl_profile.values():
                assert 0 < q <= st <= en
            assert [name for name, _, _ in r.gl_passes] == ["gl render"]
        else:
            assert r.cl_profile == {} and r.unstamped == () and r.gl_passes == []
    for r in recs:
        r.period_ns = 1  # (the statistics keep frames run at the loop's pace)
    stats = statistics(recs)
    assert stats["frames_sampled"] == sum(want) and stats["frames_in_statistics"] == len(recs)
    spans = [(r.cl_profile["compute"][3] - r.cl_profile["compute"][2]) / 1e3 for r in recs if r.sampled]
    assert stats["cl_device_us"]["compute"] == summary(spans)
    # the trace names each frame's timing, and draws CL slices for the timed frames alone
    trace = build_trace(recs, ClockMap())
    frames = {e["args"]["frame"]: e["args"]["sampled"] for e in trace["traceEvents"] if e.get("cat") == "cpu.frame"}
    assert frames == {r.index: r.sampled for r in recs}
    threads = _threads(trace)
    with_cl = {e["args"]["frame"] for e in trace["traceEvents"]
               if e["ph"] == "X" and threads.get(e["tid"], "").startswith("CL queue")}
    assert with_cl == {r.index for r in recs if r.sampled}

    # the panel describes the newest complete frame whose stamps were read, and says why another has none
    from app.ui.model import PanelData, build_timeline

    newest_sampled = max(i for i, r in enumerate(recs) if r.sampled)
    recs.append(next(r for r in reversed(recs) if not r.sampled))  # an unsampled frame last
    view = SimpleNamespace(current=None, stop=None, teaching=SimpleNamespace(active=False), paused=False,
                           gl_timer=SimpleNamespace(enabled=False, every=1, oldest_pending_frame=None))
    rec, in_progress, chosen = PanelData()._described(view, recs, None)
    assert rec is recs[newest_sampled] and not in_progress and not chosen
    assert "not timed" in build_timeline(recs[-1], None).cl_note
    assert build_timeline(recs[newest_sampled], None).cl_note == ""


def test_harvest_reads_up_to_the_newest_complete_event(host_copy, surface):
    """Sync none lets the CPU run ahead: the batch is read up to the newest complete command
    (the queue is in order) and the rest waits for a later harvest, never read early."""
    import pyopencl as cl

    from app.config import RunConfig
    from app.scenes.particles import ParticlesScene
    from app.schedule.scheduler import FrameScheduler

    scene = ParticlesScene(RunConfig(size=256, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True)
    q = host_copy.queue
    gate = cl.UserEvent(host_copy.context)
    try:
        recs = [FrameRecord(i, "particles", "host_copy", "none") for i in range(3)]
        recs[0].events = {"compute": cl.enqueue_marker(q), "release": cl.enqueue_marker(q)}
        q.finish()
        recs[1].events = {"compute": cl.enqueue_marker(q, wait_for=[gate])}  # held by the gate
        recs[2].events = {"compute": cl.enqueue_marker(q), "release": cl.enqueue_marker(q)}  # queued behind it
        sched.profiles.pending.extend(recs)
        sched.harvest(gl=False)
        assert set(recs[0].cl_profile) == {"compute", "release"} and not recs[0].events
        assert not recs[1].cl_profile and not recs[2].cl_profile  # not complete: not read
        assert list(sched.profiles.pending) == recs[1:]
        gate.set_status(cl.command_execution_status.COMPLETE)
        q.finish()
        sched.harvest(gl=False)
        # read, or named unstamped where the driver gave a marker no stamps (NVIDIA's gated one)
        assert not sched.profiles.pending and [sorted(set(r.cl_profile) | set(r.unstamped)) for r in recs] == [
            ["compute", "release"], ["compute"], ["compute", "release"]]
        ends = [r.cl_profile[n][3] for r in recs for n in ("compute", "release") if n in r.cl_profile]
        assert ends == sorted(ends)  # in-order completion, as the shortcut assumes
    finally:
        if gate.command_execution_status != cl.command_execution_status.COMPLETE:
            gate.set_status(cl.command_execution_status.COMPLETE)  # never leave the queue held
        q.finish()
        sched.close()
        scene.teardown()


def test_owner_spans_follow_the_samples_and_the_hand_over_commands():
    """GL until the acquire command's START stamp, GL -> CL until its END, CL until the release
    command's START, CL -> GL until its END, then GL to the frame's end; an object whose owner never
    changes is GL throughout; an acquire with no device stamps hands over over the CPU's call."""
    from app.ui.model import owner_spans

    rec = FrameRecord(3, "particles", "host_copy", "finish", start_ns=1000, end_ns=9000)
    rec.phases = {"acquire": (1000, 2000), "compute": (2000, 3000), "release": (3000, 5000), "render": (5000, 9000),
                  "panel": (9000, 9500)}
    rec.owner_labels = ("a", "b")
    rec.owners = [("start", 1000, ("gl", "gl")), ("acquire", 2000, ("cl", "gl")), ("compute", 3000, ("cl", "gl")),
                  ("release", 5000, ("gl", "gl")), ("render", 9000, ("gl", "gl"))]
    off = 100  # host = device + off
    rec.cl_profile = {"acquire": (1500 - off, 1600 - off, 1700 - off, 1900 - off),
                      "release": (4000 - off, 4100 - off, 4200 - off, 6000 - off)}
    spans = owner_spans(rec, off)
    assert [s for s in spans if s[0] == 0] == [(0, 1000, 1700, "GL"), (0, 1700, 1900, "GL -> CL"),
                                               (0, 1900, 4200, "CL"), (0, 4200, 6000, "CL -> GL"),
                                               (0, 6000, 9500, "GL")]
    assert [s for s in spans if s[0] == 1] == [(1, 1000, 9500, "GL")]
    del rec.cl_profile["acquire"]
    assert [s for s in owner_spans(rec, off) if s[0] == 0][:2] == [(0, 1000, 2000, "GL -> CL"), (0, 2000, 4200, "CL")]


def test_trace_has_owner_tracks_hazards_counters_and_the_legend(gl, tmp_path):
    """A run with the release skipped for a while (hazard demonstration 2): each shared object's
    track has its owners, the hazards are instant events on it, the counters have one value per
    frame, and the slices carry the legend's names and colours."""
    from app.config import RunConfig
    from app.run import Run
    from app.ui import legend

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend=HostCopy.name)
    with Run(cfg, surface=gl) as rt:
        for _ in range(3):
            rt.tick()
        rt.controls.key("2")  # skip the release: gl_use_while_acquired, then double_acquire
        for _ in range(3):
            rt.tick()
        rt.controls.key("2")
        rt.tick()
        rt.session.scheduler.finish()
        trace = json.loads(open(rt._write_trace(tmp_path / "owners.json")).read())
        periods = {r.presented_ns - r.period_ns: r.period_ns for r in rt.session.history.records if r.period_ns}
    threads = _threads(trace)
    events = trace["traceEvents"]
    owner_tid = {name.removeprefix("owner "): tid for tid, name in threads.items() if name.startswith("owner ")}
    assert set(owner_tid) == {"particles.position", "particles.color"}
    tracks = {label: sorted((e for e in events if e["ph"] == "X" and e["cat"] == "owner" and e["tid"] == tid),
                            key=lambda e: e["ts"]) for label, tid in owner_tid.items()}
    for label, got in tracks.items():
        assert got and all(e["name"] in (legend.GL, legend.CL, legend.TO_CL, legend.TO_GL) for e in got)
        assert {e["args"]["frame"] for e in got} <= set(range(7))
        for a, b in zip(got, got[1:]):  # one after the other across the frames, no gap, no overlap
            assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=0.002), label
    render = {e["args"]["frame"]: e for e in events if e.get("cat") == "cpu.phase" and e["args"]["phase"] == "render"}

    def owner_at(label: str, ts: float) -> str:
        return next(e["name"] for e in tracks[label] if e["ts"] <= ts <= e["ts"] + e["dur"])

    # no release on frames 3 to 5: CL keeps the objects through their render phases
    skipped = [f for f in range(7) if owner_at("particles.color", render[f]["ts"] + render[f]["dur"] / 2) == legend.CL]
    assert skipped == [3, 4, 5]
    hazards = [e for e in events if e["ph"] == "i" and e["cat"] == "hazard"]
    assert {e["args"]["case"] for e in hazards} >= {"gl_use_while_acquired", "double_acquire"}
    assert all(e["tid"] == owner_tid[e["args"]["object"]] and e["s"] == "t" for e in hazards)
    counters = collections.Counter(e["name"] for e in events if e["ph"] == "C")
    assert counters == {"frame time": 6, "bytes moved": 7}  # the first frame has no present before it
    # the frame time is the records' present to present, each value from the present before it
    frame_time = sorted((e["ts"], e["args"]["ms"]) for e in events if e["name"] == "frame time")
    assert len(periods) == 6 and [ms for _, ms in frame_time] == [round(periods[k] / 1e6, 4) for k in sorted(periods)]
    moved = [e["args"]["bytes"] for e in events if e["name"] == "bytes moved"]
    # what host_copy really copied: both buffers at each release (and GL -> CL too where GL had written
    # them: the start state), nothing where the release was skipped
    assert set(moved) <= {0, 2 * 1024 * 16, 4 * 1024 * 16} and moved.count(0) == 3
    # Perfetto ignores cname: the tracks and names keep GL and CL apart, and the trace says what they mean
    assert not any("cname" in e for e in events)
    assert set(trace["otherData"]["names"]["owners"]) == {legend.GL, legend.CL, legend.TO_CL, legend.TO_GL}


# -- the report -------------------------------------------------------------------------------------
def test_report_statistics_are_per_set_up(gl):
    """Two backends' frames never share a median: each segment has its statistics, the top level
    is the last set-up's (named), every figure is over the same frames (stepped ones left out), and
    the period of the frame whose present waited for the switch is in no segment's frame time."""
    from app.config import RunConfig
    from app.run import Run
    from app.trace.report import build_report
    from app.trace.stats import summary

    # (every frame's CL stamps read: the statistics below are checked frame by frame)
    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend=HostCopy.name,
                    stamps_ms=0)
    with Run(cfg, surface=gl) as rt:
        probe = rt.session.registry.probes[HostMapped.name]
        if not probe.available:  # a GPU without host-unified memory (the H200): the switch below is refused
            pytest.skip(f"host_mapped is not available here: {probe.reason}")
        for _ in range(6):
            rt.tick()
        rt.controls.request("switch", backend=HostMapped.name)  # as the panel's combo: after frame 6's draw
        for _ in range(5):
            rt.tick()
        rt.controls.key("t")  # teaching mode: one frame stepped phase by phase
        for _ in range(4):
            rt.controls.key("n")
            rt.tick()
        rt.controls.key("t")
        for _ in range(3):
            rt.tick()
        rt.session.finish()
        report = build_report(rt.session.history, rt.facts())
        records = list(rt.session.history.records)
    segs = report["segments"]
    assert [(s["backend"], s["first_frame"]) for s in segs] == [("host_copy", 0), ("host_mapped", 7)]
    first = [r for r in records if r.segment == 0]
    second = [r for r in records if r.segment == 1]
    assert [r.index for r in first] == list(range(7)) and first[-1].period_ns > 0
    s0 = segs[0]["statistics"]
    # frame 0 has no present before it; frame 6's present came after the switch's teardown and build
    want0 = [r.period_ns / 1e3 for r in first[1:6]]
    assert s0["frames_in_statistics"] == 7 and s0["frames_with_period"] == 5
    assert s0["phases_us"]["frame"] == summary(want0)
    assert s0["phases_us"]["compute"] == summary(r.phase_us("compute") for r in first)
    stepped = [r for r in second if r.stepped]
    assert len(stepped) == 1
    steady = [r for r in second if r.steady]
    s1 = segs[1]["statistics"]
    assert s1["frames_in_statistics"] == len(steady) == len(second) - 1
    cl = [(r.cl_profile["compute"][3] - r.cl_profile["compute"][2]) / 1e3 for r in steady]
    assert s1["cl_device_us"]["compute"] == summary(cl)  # the stepped frame's kernel left out here too
    assert s1["waits_us"] == summary(sum(w[2] - w[1] for w in r.waits) / 1e3 for r in steady)
    assert s1["phases_us"]["frame"] == summary(r.frame_us for r in steady if r.frame_us is not None)
    assert report["statistics_of"] == {"index": 1, "scene": "particles", "backend": "host_mapped", "sync": "finish"}
    assert report["backend"] == "host_mapped" and report["frames_in_statistics"] == s1["frames_in_statistics"]
    for key in ("phases_us", "cl_device_us", "waits_us"):
        assert report[key] == s1[key], key


def test_every_harvested_record_tightens_the_clock_once(gl, tmp_path):
    """The CL clock is observed once per frame, when its profiles are read, whether the panel
    redraws or not; writing the trace (twice) observes nothing more."""
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, panel=False, backend=HostCopy.name,
                    stamps_ms=0)  # every frame's CL stamps read
    with Run(cfg, surface=gl) as rt:
        clock = rt.session.clock
        assert clock.as_dict()["frames_observed"] == 0
        for _ in range(20):
            rt.tick()
        rt.session.finish()  # every profile read
        frames = rt.session.history.totals["frames"]
        assert frames == 20 and clock.as_dict()["frames_observed"] == frames
        samples = clock.cl.samples
        assert samples >= 2 * frames  # compute and release stamps of every frame (host_copy: acquire on frame 0)
        rt._write_trace(tmp_path / "a.json")
        rt._write_trace(tmp_path / "b.json")
        assert clock.as_dict()["frames_observed"] == frames and clock.cl.samples == samples
        trace = json.loads((tmp_path / "b.json").read_text())
        assert trace["otherData"]["clock"]["frames_observed"] == frames


def test_report_counts_hand_overs_stamped_with_the_kernels_span():
    """A driver that stamps a batch with one span (NVIDIA with semaphore waits, measured on the H200)
    gives acquire and release the kernel's START and END: the report counts those frames, so the
    repeated device time is not read as the hand-over's own."""
    from app.schedule.frame import FrameRecord
    from app.trace.report import shared_stamps, statistics

    def rec(i, acquire, release):
        r = FrameRecord(i, "image", "external_memory", "semaphore")
        r.cl_profile = {"acquire": acquire, "compute": (10, 11, 100, 160), "release": release}
        return r

    kernel = (10, 11, 100, 160)
    own = [rec(0, (1, 2, 90, 91), (12, 13, 161, 162)), rec(1, (1, 2, 90, 91), (12, 13, 161, 162))]
    batch = [rec(2, (5, 6, 100, 160), (14, 15, 100, 160)), rec(3, (5, 6, 100, 160), (20, 21, 170, 171))]
    assert shared_stamps(own) == {"frames": 2, "acquire": 0, "release": 0}
    assert shared_stamps(own + batch) == {"frames": 4, "acquire": 2, "release": 1}
    stats = statistics(own + batch)
    assert stats["cl_stamps_shared"] == {"frames": 4, "acquire": 2, "release": 1}
    assert stats["cl_device_us"]["acquire"]["max"] == (kernel[3] - kernel[2]) / 1e3  # what the driver said


def test_a_command_the_driver_gave_no_stamps_has_no_device_time(host_copy, surface, monkeypatch):
    """NVIDIA's OpenCL returns zero for every profiling stamp of a marker (measured on the H200: the
    host_copy acquire's): a zero stamp is no stamp. The harvest keeps no profile for such a command
    and names it on the record; the report counts it instead of a device time of zero, and the trace
    draws no CL slice for it."""
    import app.schedule.harvest as scheduler_module
    from app.config import RunConfig
    from app.scenes.particles import ParticlesScene
    from app.schedule.scheduler import FrameScheduler
    from app.trace.report import statistics

    scene = ParticlesScene(RunConfig(size=1024, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        recs = [sched.run_frame(f, target) for f in range(3)]
        host_copy.queue.finish()
        unstamped = {rec.events["release"].int_ptr for rec in recs}
        real = scheduler_module.event_info()

        class ZeroForReleases:
            status = staticmethod(real.status)
            command = staticmethod(real.command)

            @staticmethod
            def profile(ptr, submit=True):
                return (0, None if not submit else 0, 0, 0) if ptr in unstamped else real.profile(ptr, submit)

            @staticmethod
            def profiles(ptrs, submit=True):  # the harvest's batch: the same, event by event
                return [ZeroForReleases.profile(p, submit) for p in ptrs]

        monkeypatch.setattr(scheduler_module, "event_info", lambda: ZeroForReleases())
        sched.harvest()
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
    # (NVIDIA leaves the first frame's acquire, a marker, unstamped by itself)
    assert all("release" in r.unstamped and "release" not in r.cl_profile and "compute" in r.cl_profile
               and "compute" not in r.unstamped for r in recs)
    stats = statistics(recs)
    assert stats["cl_unstamped"]["release"] == 3 and stats["cl_unstamped"]["compute"] == 0
    assert stats["cl_device_us"]["compute"]["median"] > 0
    trace = build_trace(recs, ClockMap())
    cl_names = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "cl"}
    assert "release command" not in cl_names and "kernel" in cl_names
    frames = [e for e in trace["traceEvents"] if e.get("cat") == "cpu.frame"]
    assert [e["args"]["cl_unstamped"] for e in frames] == [list(r.unstamped) for r in recs]


def test_harvest_on_a_queue_out_of_order_reads_only_up_to_the_first_incomplete_event(host_copy, surface):
    """The newest-complete shortcut holds only on an in-order queue: where commands may complete out
    of order, the harvest asks each event and stops at the first one not complete, never reading a
    profile early (a later command done before an earlier one is left for a later harvest)."""
    import time

    import numpy as np
    import pyopencl as cl

    from app.config import RunConfig
    from app.scenes.particles import ParticlesScene
    from app.schedule.scheduler import FrameScheduler

    props = cl.command_queue_properties
    try:
        ooo = cl.CommandQueue(host_copy.context, properties=props.OUT_OF_ORDER_EXEC_MODE_ENABLE | props.PROFILING_ENABLE)
    except cl.Error as exc:
        pytest.skip(f"the device makes no out-of-order queue: {exc}")
    scene = ParticlesScene(RunConfig(size=256, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True)
    sched.profiles.in_order = False  # as for a backend whose queue runs out of order
    gate = cl.UserEvent(host_copy.context)
    buf = cl.Buffer(host_copy.context, cl.mem_flags.READ_WRITE, 256)
    try:
        recs = [FrameRecord(i, "particles", "host_copy", "none") for i in range(3)]
        recs[0].events = {"compute": cl.enqueue_fill_buffer(ooo, buf, np.uint32(1), 0, 64)}
        ooo.finish()
        recs[1].events = {"compute": cl.enqueue_fill_buffer(ooo, buf, np.uint32(2), 64, 64, wait_for=[gate])}
        recs[2].events = {"compute": cl.enqueue_fill_buffer(ooo, buf, np.uint32(3), 128, 64)}  # waits on nothing
        later = recs[2].events["compute"]
        deadline = time.monotonic() + 2.0
        while later.command_execution_status != cl.command_execution_status.COMPLETE:
            if time.monotonic() > deadline:
                pytest.skip("this device runs an out-of-order queue's commands in order")
            time.sleep(0.01)
        sched.profiles.pending.extend(recs)
        sched.harvest(gl=False)
        assert not recs[0].events and recs[1].events and recs[2].events  # the later one waits its turn
        assert list(sched.profiles.pending) == recs[1:] and not recs[1].cl_profile and not recs[2].cl_profile
        gate.set_status(cl.command_execution_status.COMPLETE)
        ooo.finish()
        sched.harvest(gl=False)
        assert not sched.profiles.pending and all(not r.events for r in recs)
    finally:
        if gate.command_execution_status != cl.command_execution_status.COMPLETE:
            gate.set_status(cl.command_execution_status.COMPLETE)
        ooo.finish()
        sched.close()
        scene.teardown()


def test_a_begun_record_is_the_constructors_field_by_field():
    """FrameRecord.begin (the scheduler's, every frame) makes what the dataclass's constructor makes:
    every field set, equal, and containers of its own (a new field left out of begin fails here)."""
    import dataclasses

    for args in ((3, "particles", "host_mapped", "finish"), (4, "image", "external_memory", "semaphore", 2, True)):
        made = FrameRecord(*args[:5], stepped=args[5]) if len(args) > 5 else FrameRecord(*args)
        begun = FrameRecord.begin(*args)
        for f in dataclasses.fields(FrameRecord):
            assert getattr(begun, f.name) == getattr(made, f.name), f.name
        assert begun == made
    a, b = FrameRecord.begin(0, "s", "b", "finish"), FrameRecord.begin(1, "s", "b", "finish")
    for f in dataclasses.fields(FrameRecord):
        if isinstance(getattr(a, f.name), (list, dict)):
            assert getattr(a, f.name) is not getattr(b, f.name), f.name
    a.counts["acquire"] += 1
    assert b.counts["acquire"] == 0

