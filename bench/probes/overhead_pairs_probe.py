"""Probe: glshare's frame against the bare loop's, interleaved frame by frame in one process, on the
figure the bench's scheduler_overhead_us reads (main-thread CPU) or on wall time. Not part of the
package; run from a project root:

    python3 bench/probes/overhead_pairs_probe.py [scene size backend frames]   # particles 1024 host_mapped 3000
    ATTR=wall python3 bench/probes/overhead_pairs_probe.py                     # wall time instead
    ROUNDS=6 AB=steady python3 bench/probes/overhead_pairs_probe.py ...   # rounds alternating an A/B (on, off)
    AB=queue ...        # alternating glshare's profiling queue and a plain one (its events then not read)
    AB=gltimer ...      # alternating glshare's GL timer on and off (what its two stamps a frame cost)
    AB=stamps ...       # alternating one frame timed a millisecond (the default) and every frame timed
    AB=events ...       # alternating untimed frames without the events nothing reads (the default) and with
                        # all three, and finish's bookkeeping handed to its waits only when due and always
    AB=steady ...       # (the default) alternating the steady frame (where it applies) and the general one always
    AB=native ...       # alternating the steady frame's hand-over in one native call (the default, where it
                        # applies) and in Python
    BARE_QUEUE=glshare  # the bare loops enqueue on glshare's profiling queue, not a plain one of their own

Prints each loop's median (us), the median of the pairs' differences with its interquartile range,
and the checked floor (the bare frame plus the validator, the tracker and a record, inline).
"""
import os
import statistics
import sys

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from app.bench.loops import BareLoop, glshare_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402
from bench.probes._args import scene_args  # noqa: E402

scene, size_arg, size, backend, frames = scene_args("1024", "host_mapped", 3000)
attr = os.environ.get("ATTR", "thread")  # a Sample's field: thread (main-thread CPU), wall, process


def quartiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 4], statistics.median(xs), xs[3 * len(xs) // 4]


cfg = RunConfig(scene=scene, backend=backend, sync="finish", headless=True, size=size, panel=False, overlay=False)
with Run(cfg) as rt:
    bare = BareLoop(rt)
    if os.environ.get("BARE_QUEUE") == "glshare":
        bare.queue = rt.session.backend.queue  # (CL_QUEUE_PROFILING_ENABLE: what profiling alone costs)
    records: list = []
    loops = (lambda: glshare_frame(rt, records), bare.frame, bare.checked_frame)
    for _ in range(200):  # warm-up
        for loop in loops:
            loop()
    sched = rt.session.scheduler
    ab = os.environ.get("AB", "steady")
    switch = {"queue": ("profiling queue", "plain queue"),
              "gltimer": ("GL timer on", "GL timer off"),
              "stamps": ("one frame timed a millisecond", "every frame timed"),
              "events": ("untimed frames' events only where read, flushes only when due",
                         "every event made, flushes every frame"),
              "steady": ("the steady frame", "the general frame"),
              "native": ("the hand-over native", "the hand-over in Python")}[ab]
    native_on = sched.native
    timer_on = sched.gl_timer.enabled
    interval = sched.stamps_interval_ns
    lean = (sched._untimed_events, sched._untimed_kernel_event, sched._waits_on_cpu)
    backend = rt.session.backend
    profiling_queue = backend.queue
    plain_queue = None
    if ab == "queue":
        import pyopencl as cl
        plain_queue = cl.CommandQueue(backend.context, rt.session.choice.device)

    def measure(on: bool) -> str:
        if ab == "queue":  # off: the frames on a queue without CL_QUEUE_PROFILING_ENABLE
            profiling_queue.finish()
            backend._queue.queue = profiling_queue if on else plain_queue
        elif ab == "stamps":
            sched.stamps_interval_ns = interval if on else 0
        elif ab == "steady":
            sched.steady = on
        elif ab == "native":
            sched.native = native_on and on
        elif ab == "events":  # off: as before 2026-12-03's eleventh session (each untimed frame's 3 events, 2 flushes)
            sched._untimed_events, sched._untimed_kernel_event, sched._waits_on_cpu = lean if on else (True, True, False)
        else:
            sched.gl_timer.enabled = timer_on and on
        times: list[list[float]] = [[], [], []]
        for _ in range(frames):
            for loop, out in zip(loops, times):
                out.append(getattr(loop(), attr) / 1e3)
            del records[:-100]
            if backend.queue is plain_queue:  # (events without stamps: never harvested)
                sched.profiles.pending.clear()
        g, b, c = times
        q1, overhead, q3 = quartiles([x - y for x, y in zip(g, b)])
        return (f"{attr}: glshare {statistics.median(g):.1f} bare {statistics.median(b):.1f} "
                f"checked {statistics.median(c):.1f} | overhead (pairs) {overhead:.1f} iqr {q1:.1f}..{q3:.1f}"
                f" | checked floor {statistics.median(x - y for x, y in zip(c, b)):.1f}")

    from app.bench import python_reference_us

    print(f"# the host's Python reference (app/bench PYTHON_REF_WHAT): {python_reference_us()} us", flush=True)
    rounds = int(os.environ.get("ROUNDS", "0"))
    if not rounds:
        print(measure(True))
    for r in range(rounds):
        on = r % 2 == 0
        print(f"round {r} {switch[0] if on else switch[1]}: {measure(on)}", flush=True)
    sched.gl_timer.enabled, backend._queue.queue = timer_on, profiling_queue
    sched.stamps_interval_ns = interval
    sched.steady, sched.native = True, native_on
    sched._untimed_events, sched._untimed_kernel_event, sched._waits_on_cpu = lean
    bare.close()
