"""Probe: glshare's sustained semaphore frame with one frame timed per millisecond of frame time
(the default, ``--stamps-ms 1``) against every frame timed, in rounds alternating in one process,
next to the bare loop of the same depth. Not part of the package; run from a project root:

    python3 bench/probes/semaphore_stamps_probe.py [size depth frames rounds]   # 4096x4096 8 600 8

Prints each round's sustained frame (ms, GL and CL finished before and after, as the bench's
``_drained_ms``) for glshare and for the bare loop measured right after it, and each one's
main-thread CPU time a frame over the same span (NVIDIA's waits spin: CPU time there counts the
waits too), and glshare's frame outside its CPU waits (acquire start to render end, less the
run-ahead bound's fence wait): where that is the sustained frame, glshare is CPU-bound.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from app.bench.loops import BareLoop, glshare_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.gl import api as GL  # noqa: E402
from app.run import Run  # noqa: E402

size = tuple(int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "4096x4096").split("x"))
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 8
frames = int(sys.argv[3]) if len(sys.argv) > 3 else 600
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 8
cfg = RunConfig(scene="image", size=size, backend="external_memory", sync="semaphore", headless=True, panel=False,
                overlay=False, frames_in_flight=depth)
with Run(cfg) as rt:
    sched = rt.session.scheduler
    interval = sched.stamps_interval_ns
    bare = BareLoop(rt)
    for _ in range(3):  # warm-up
        for _ in range(frames):
            glshare_frame(rt, [])
        bare.drained_semaphore_ms(frames)
    from app.bench import python_reference_us

    print(f"# the host's Python reference (app/bench PYTHON_REF_WHAT): {python_reference_us()} us", flush=True)
    got: dict[str, list] = {"sampled": [], "every": []}
    for r in range(rounds):
        on = r % 2 == 0
        sched.stamps_interval_ns = interval if on else 0
        GL.glFinish()
        rt.session.backend.queue.finish()
        records: list = []
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(frames):
            glshare_frame(rt, records)
        GL.glFinish()
        rt.session.backend.queue.finish()
        c1_run, w1 = time.thread_time_ns(), time.perf_counter_ns()
        ms = (w1 - w0) / frames / 1e6  # as _drained_ms
        # each frame's own time outside its CPU waits (the run-ahead bound's fence): glshare's CPU work
        # (the present after it left out)
        busy = statistics.median((rec.end_ns - rec.start_ns - sum(w[2] - w[1] for w in rec.waits)) / 1e6
                                 for rec in records)
        c1 = time.thread_time_ns()
        bare_ms = bare.drained_semaphore_ms(frames)
        c2 = time.thread_time_ns()
        cpu, bare_cpu = (c1_run - c0) / frames / 1e6, (c2 - c1) / frames / 1e6  # main-thread CPU a frame
        got["sampled" if on else "every"].append((ms, bare_ms))
        print(f"round {r} {'one timed per ms' if on else 'every frame timed'}: glshare {ms:.4f} ms, "
              f"bare {bare_ms:.4f} ms, ratio {ms / bare_ms:.3f} | main-thread CPU a frame: glshare {cpu:.4f} ms, "
              f"bare {bare_cpu:.4f} ms | glshare's frame outside its waits {busy:.4f} ms (median)", flush=True)
    sched.stamps_interval_ns = interval
    for k, v in got.items():
        print(f"{k}: glshare median {statistics.median(x for x, _ in v):.4f} ms, "
              f"ratio median {statistics.median(x / y for x, y in v):.3f}")
    bare.close()
