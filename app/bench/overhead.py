"""Where glshare's per-frame overhead goes: each piece the scheduler adds to a frame.

Two views on the live session of a cell (its backend, queue, scene and GL timer), main-thread CPU
time: ``in_frame`` times those pieces during real frames through the hooks the backend and the
scheduler offer (``instrument``) and sums their time per frame, amortized over every frame where a
piece runs on some frames only (what they cost between the kernel and the draw, caches cold);
``alone`` times each piece in a tight loop (the best case). The pieces: the validator's two checks,
the ownership tracker, the acquire call (host_copy enqueues nothing when nothing is copied in),
reading the CL profiling of the frame's events (in batches), the GL timer's span and harvest (one
frame in a few on software GL). What the bare loop does not pay; it explains scheduler_overhead_us.
"""
from __future__ import annotations

import time

import numpy as np
import pyopencl as cl

from app import native
from app.cl.ext import event_info
from app.gl import api as GL
from app.schedule.frame import FrameRecord
from app.sharing.sync import timed_wait


def _cpu_us(fn, reps: int, setup=None) -> float:
    out = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = time.thread_time_ns()
        fn()
        out.append(time.thread_time_ns() - t0)
    return round(float(np.median(out)) / 1e3, 1)


# the pieces glshare adds to a frame, as the backend's and the scheduler's ``instrument`` name them;
# "release call" is left out: host_copy's copy is the work itself, not bookkeeping
IN_FRAME_PIECES = ("validator", "ownership tracker", "acquire call", "CL profiling harvest", "GL timer harvest",
                   "GL timer span")


def overhead_in_frame(rt, frames: int) -> dict:
    """Run ``frames`` glshare frames with the pieces instrumented (``SharingBackend.instrument``,
    ``FrameScheduler.instrument``) and their main-thread CPU summed; us per frame (mean over all of
    them, so batched and sampled pieces count for their share)."""
    from app.bench.loops import glshare_frame

    acc: dict[str, int] = {}

    def wrap(piece: str, fn):
        if piece not in IN_FRAME_PIECES:
            return fn

        def timed_call(*a, **k):
            t0 = time.thread_time_ns()
            try:
                return fn(*a, **k)
            finally:
                acc[piece] = acc.get(piece, 0) + time.thread_time_ns() - t0

        return timed_call

    undo = [rt.session.backend.instrument(wrap), rt.session.scheduler.instrument(wrap)]
    per_frame: dict[str, list[int]] = {}
    try:
        for _ in range(frames):
            acc.clear()
            glshare_frame(rt, [])
            for k, v in acc.items():
                per_frame.setdefault(k, []).append(v)
    finally:
        for u in reversed(undo):
            u()
    # amortized: a piece that runs on some frames only (the CL profiles are read in batches, the GL
    # timer samples frames) counts for its share of every frame
    parts = {k: round(sum(v) / frames / 1e3, 1) for k, v in per_frame.items()}
    per_call = {k: round(float(np.median(v)) / 1e3, 1) for k, v in per_frame.items()}
    return {"parts_us": parts, "sum_us": round(sum(parts.values()), 1), "frames": frames,
            "per_call_median_us": per_call, "frames_with_call": {k: len(v) for k, v in per_frame.items()}}


def overhead_breakdown(rt, reps: int = 200) -> dict:
    """{"in_frame": ..., "alone": ...}: us per frame of each piece, and their sums."""
    return {"in_frame": overhead_in_frame(rt, max(10, reps // 5)), "alone": overhead_alone(rt, reps),
            "what": "main-thread CPU of each piece glshare adds to a frame: wrapped during real frames, "
                    "amortized over all of them "
                    "(in_frame), and each timed alone in a tight loop (alone)"}


def overhead_alone(rt, reps: int = 200) -> dict:
    """{piece: us per frame} and their sum, each piece in a tight loop."""
    backend, scene, queue = rt.session.backend, rt.session.scene, rt.session.backend.queue
    mems = [o.mem for o in scene.shared]
    done = cl.enqueue_marker(queue)
    done.wait()
    tracker = backend.tracker
    parts: dict[str, float] = {}
    parts["validator (acquire + release checks)"] = _cpu_us(lambda: (
        backend.validator.check_python("acquire", queue, mems, None),
        backend.validator.check_python("release", queue, mems, [done])), reps)

    def track():
        tracker.acquired(scene.shared, queue)
        tracker.cl_use(scene.cl_uses, "kernel")
        tracker.released(scene.shared, queue)
        tracker.gl_use(scene.gl_uses, "draw")

    parts["ownership tracker (4 transitions)"] = _cpu_us(track, reps)
    parts["frame record"] = _cpu_us(lambda: FrameRecord.begin(0, scene.name, backend.name, "finish"), reps)
    events = [done] * 3

    info = event_info()
    submit = rt.session.scheduler.profile_submit

    def profile():  # as FrameScheduler.harvest reads them: the newest event's status, then every profile
        if info.status(events[-1].int_ptr) == cl.command_execution_status.COMPLETE:
            info.profiles([ev.int_ptr for ev in events], submit)

    def profile_call_by_call():  # the same through ctypes, one call per stamp (where app/native is not built)
        if info.status(events[-1].int_ptr) == cl.command_execution_status.COMPLETE:
            for ev in events:
                info.profile(ev.int_ptr, submit)

    parts["CL profiling of 3 events"] = _cpu_us(profile, reps)
    # beside the parts (not in their sum): what the native batch saves, measured in the same run
    compared = {"stamps": native.describe(),
                "CL profiling of 3 events, call by call": _cpu_us(profile_call_by_call, reps)}
    timer = rt.session.scheduler.gl_timer
    if timer.enabled:
        rec = FrameRecord(0, scene.name, backend.name, "finish")

        def span():
            with timer.span(rec, "bench"):
                pass

        parts["GL timer span (2 glQueryCounter)"] = _cpu_us(span, reps, setup=lambda: (GL.glFinish(), timer.harvest()))
        parts["GL timer harvest of one pass"] = _cpu_us(timer.harvest, reps, setup=lambda: (span(), GL.glFinish()))
        if timer.batched:
            with timer.call_by_call():
                compared["GL timer harvest of one pass, call by call"] = _cpu_us(
                    timer.harvest, reps, setup=lambda: (span(), GL.glFinish()))
    waits: list = []
    parts["sync wait wrappers (2)"] = _cpu_us(lambda: (timed_wait(waits, "a", _noop), timed_wait(waits, "b", _noop)),
                                              reps, setup=waits.clear)
    done.wait()
    return {"parts_us": parts, "sum_us": round(sum(parts.values()), 1), "reps": reps, "compared": compared}


def _noop() -> None:
    return None
