"""Probe: what a live session does to the speed of the main thread's Python. Not part of the package;
run from a project root:

    python3 bench/probes/session_threads_probe.py [scene size backend frames]   # particles 16384 external_memory 300

The host's Python reference (app/bench ``PYTHON_REF_WHAT``) is read before any GL or CL exists, with
the session built, and after its frames; around the last reading every thread of the process is
listed with the CPU time it used meanwhile (/proc/self/task), so a driver thread that keeps a core
busy while the main thread runs Python shows up. On the H200 the bench's process read 0.51-0.53 us
at its start and end and 1.09-1.33 us at the cell of scheduler_overhead_us (2026-12-03).
"""
import os
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from app.bench import python_reference_us  # noqa: E402
from bench.probes._args import scene_args  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def threads() -> dict[int, tuple[str, int, int]]:
    """tid -> (name, CPU ticks user + system, the core it last ran on)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[int(tid)] = (name, int(fields[11]) + int(fields[12]), int(fields[36]))
    return out


def busy_while(fn) -> str:
    before, t0 = threads(), time.perf_counter()
    value = fn()
    after, dt = threads(), time.perf_counter() - t0
    rows = []
    for tid, (name, ticks, core) in sorted(after.items()):
        used = (ticks - before.get(tid, (name, 0, core))[1]) / TICK
        rows.append(f"    thread {tid} {name!r} on core {core}: {100 * used / dt:5.1f} % of a core")
    return f"{value} us ({len(after)} threads, {dt:.2f} s)\n" + "\n".join(rows)


scene, size_arg, size, backend, frames = scene_args("16384", "external_memory", 300)
print(f"# before any GL or CL: {busy_while(lambda: python_reference_us(60000))}", flush=True)
from app.bench.loops import glshare_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402

cfg = RunConfig(scene=scene, backend=backend, sync="finish", headless=True, size=size, panel=False, overlay=False)
with Run(cfg) as rt:
    print(f"# session built ({scene} {size_arg} {backend}): {busy_while(lambda: python_reference_us(60000))}",
          flush=True)
    records: list = []
    for _ in range(frames):
        glshare_frame(rt, records)
        del records[:-100]
    print(f"# after {frames} frames: {busy_while(lambda: python_reference_us(60000))}", flush=True)
    rt.session.scheduler.finish()
    print(f"# queue drained: {busy_while(lambda: python_reference_us(60000))}", flush=True)
print(f"# session closed: {busy_while(lambda: python_reference_us(60000))}", flush=True)
