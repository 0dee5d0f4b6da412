"""Probe: glshare's frame against the bare loop's, interleaved frame by frame in one process, on the
figure the bench's scheduler_overhead_us reads (main-thread CPU) or on wall time. Not part of the
package; run from a project root:

    python3 bench/probes/overhead_pairs_probe.py [scene size backend frames]   # particles 1024 host_mapped 3000
    ATTR=wall python3 bench/probes/overhead_pairs_probe.py                     # wall time instead
    ROUNDS=6 python3 bench/probes/overhead_pairs_probe.py ...   # rounds alternating the bookkeeping
                                                                # inside the waits (on) and after them (off)

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
from app.session.loop import Run  # noqa: E402

scene = sys.argv[1] if len(sys.argv) > 1 else "particles"
size_arg = sys.argv[2] if len(sys.argv) > 2 else "1024"
backend = sys.argv[3] if len(sys.argv) > 3 else "host_mapped"
frames = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
attr = os.environ.get("ATTR", "thread")  # a Sample's field: thread (main-thread CPU), wall, process
size = tuple(int(x) for x in size_arg.split("x")) if "x" in size_arg else int(size_arg)


def quartiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 4], statistics.median(xs), xs[3 * len(xs) // 4]


cfg = RunConfig(scene=scene, backend=backend, sync="finish", headless=True, size=size, panel=False, overlay=False)
with Run(cfg) as rt:
    bare = BareLoop(rt)
    records: list = []
    loops = (lambda: glshare_frame(rt, records), bare.frame, bare.checked_frame)
    for _ in range(200):  # warm-up
        for loop in loops:
            loop()
    sched = rt.session.scheduler
    shadow = (sched._shadow_cl, sched._shadow_gl)

    def measure(on: bool) -> str:
        # off: the sync's waits get no bookkeeping, which the frame then does where it did before
        sched._shadow_cl, sched._shadow_gl = shadow if on else (None, None)
        times: list[list[float]] = [[], [], []]
        for _ in range(frames):
            for loop, out in zip(loops, times):
                out.append(getattr(loop(), attr) / 1e3)
            del records[:-100]
        g, b, c = times
        q1, overhead, q3 = quartiles([x - y for x, y in zip(g, b)])
        return (f"{attr}: glshare {statistics.median(g):.1f} bare {statistics.median(b):.1f} "
                f"checked {statistics.median(c):.1f} | overhead (pairs) {overhead:.1f} iqr {q1:.1f}..{q3:.1f}"
                f" | checked floor {statistics.median(x - y for x, y in zip(c, b)):.1f}")

    rounds = int(os.environ.get("ROUNDS", "0"))
    if not rounds:
        print(measure(True))
    for r in range(rounds):
        on = r % 2 == 0
        print(f"round {r} bookkeeping {'in the waits' if on else 'after them'}: {measure(on)}", flush=True)
    sched._shadow_cl, sched._shadow_gl = shadow
    bare.close()
