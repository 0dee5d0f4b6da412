"""Where glshare's per-frame overhead goes: each piece the scheduler adds to a frame.

Two views on the live session of a cell (its backend, queue, scene and GL timer), main-thread CPU
time: ``in_frame`` wraps those pieces during real frames and sums their time per frame, amortized over
every frame where a piece runs on some frames only (what they
cost between the kernel and the draw, caches cold); ``alone`` times each piece in a tight loop (the
best case). The pieces: the validator's two checks, the ownership tracker, the acquire call (host_copy
enqueues nothing when nothing is copied in), reading the CL profiling of the frame's events (in
batches), the GL timer's span and harvest (one frame in a few on software GL). What the bare loop
does not pay; it explains scheduler_overhead_us.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
import pyopencl as cl
from OpenGL import GL

from app.schedule.frame import FrameRecord
from app.sharing.sync import timed_wait

PROFILE_INFO = (cl.profiling_info.QUEUED, cl.profiling_info.SUBMIT, cl.profiling_info.START, cl.profiling_info.END)


def _cpu_us(fn, reps: int, setup=None) -> float:
    out = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = time.thread_time_ns()
        fn()
        out.append(time.thread_time_ns() - t0)
    return round(float(np.median(out)) / 1e3, 1)


def overhead_in_frame(rt, frames: int) -> dict:
    """Run ``frames`` glshare frames with the scheduler's own pieces wrapped; us per frame (mean over
    all of them, so batched and sampled pieces count for their share)."""
    from app.bench.loops import glshare_frame

    backend, sched = rt.session.backend, rt.session.scheduler
    acc: dict[str, int] = {}

    def wrap(obj, attr: str, piece: str):
        orig = getattr(obj, attr)

        def timed_call(*a, **k):
            t0 = time.thread_time_ns()
            try:
                return orig(*a, **k)
            finally:
                acc[piece] = acc.get(piece, 0) + time.thread_time_ns() - t0

        setattr(obj, attr, timed_call)
        return lambda: delattr(obj, attr) if attr in vars(obj) else None

    timer = sched.gl_timer
    span_orig = timer.span

    @contextlib.contextmanager
    def span(rec, name):
        t0 = time.thread_time_ns()
        cm = span_orig(rec, name)
        cm.__enter__()
        acc["GL timer span"] = acc.get("GL timer span", 0) + time.thread_time_ns() - t0
        try:
            yield
        finally:
            t1 = time.thread_time_ns()
            cm.__exit__(None, None, None)
            acc["GL timer span"] += time.thread_time_ns() - t1

    undo = [wrap(backend.validator, "check_python", "validator"),
            wrap(backend, "_enqueue_acquire", "acquire call"),
            wrap(timer, "harvest", "GL timer harvest"), wrap(sched, "harvest", "CL profiling harvest")]
    undo += [wrap(backend.tracker, m, "ownership tracker") for m in ("acquired", "released", "cl_use", "gl_use")]
    timer.span = span
    per_frame: dict[str, list[int]] = {}
    try:
        for _ in range(frames):
            acc.clear()
            glshare_frame(rt, [])
            for k, v in acc.items():
                per_frame.setdefault(k, []).append(v)
    finally:
        del timer.span
        for u in undo:
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
    parts["frame record"] = _cpu_us(lambda: FrameRecord(0, scene.name, backend.name, "finish"), reps)
    events = [done] * 3

    def profile():  # as FrameScheduler.harvest reads them: the newest event's status, then every profile
        if events[-1].command_execution_status == cl.command_execution_status.COMPLETE:
            for ev in events:
                tuple(ev.get_profiling_info(i) for i in PROFILE_INFO)

    parts["CL profiling of 3 events"] = _cpu_us(profile, reps)
    timer = rt.session.scheduler.gl_timer
    if timer.enabled:
        rec = FrameRecord(0, scene.name, backend.name, "finish")

        def span():
            with timer.span(rec, "bench"):
                pass

        parts["GL timer span (2 glQueryCounter)"] = _cpu_us(span, reps, setup=lambda: (GL.glFinish(), timer.harvest()))
        parts["GL timer harvest of one pass"] = _cpu_us(timer.harvest, reps, setup=lambda: (span(), GL.glFinish()))
    waits: list = []
    parts["sync wait wrappers (2)"] = _cpu_us(lambda: (timed_wait(waits, "a", _noop), timed_wait(waits, "b", _noop)),
                                              reps, setup=waits.clear)
    done.wait()
    return {"parts_us": parts, "sum_us": round(sum(parts.values()), 1), "reps": reps}


def _noop() -> None:
    return None
