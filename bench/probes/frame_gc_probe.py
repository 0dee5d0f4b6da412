"""Probe: what Python's cyclic garbage collector costs glshare's frames, against the bare loop's
(app/bench/loops.py BareLoop): the collections each loop's frames set off (gc.callbacks), their time
per frame and the longest one, generation by generation. Two ways of keeping the records: as a run
does (the history's 600, full: each new record's containers replace the oldest one's, so the
collector's count of new objects stays level), and every record kept besides, as the bench's cells
keep theirs for their statistics (each frame's containers then add to that count, and a collection
falls inside some frame every few dozen). Not part of the package; run from a project root:

    python3 bench/probes/frame_gc_probe.py [scene size backend frames]   # particles 16384 host_mapped 3000
    SYNC=semaphore ...

Measurement only.
"""
import gc
import os
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from app.bench import python_reference_us  # noqa: E402
from app.bench.loops import BareLoop, glshare_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402
from bench.probes._args import scene_args  # noqa: E402

scene, size_arg, size, backend, frames = scene_args("16384", "host_mapped", 3000)
sync = os.environ.get("SYNC", "finish")
events: list = []
gc.callbacks.append(lambda phase, info: events.append((phase, info["generation"], time.perf_counter_ns())))


def collections() -> dict:
    """{generation: (collections, total us, longest us)} since the last call."""
    out, start = {0: [0, 0, 0], 1: [0, 0, 0], 2: [0, 0, 0]}, None
    for phase, gen, t in events:
        if phase == "start":
            start = t
        elif start is not None:
            spent = (t - start) / 1e3
            row = out[gen]
            row[0], row[1], row[2] = row[0] + 1, row[1] + spent, max(row[2], spent)
    del events[:]
    return out


cfg = RunConfig(scene=scene, backend=backend, sync=sync, headless=True, size=size, panel=False, overlay=False)
with Run(cfg) as rt:
    bare, records = BareLoop(rt), []
    for _ in range(700):  # the history full, as in a run past its first 600 frames
        glshare_frame(rt, records)
        bare.frame()
    del records[:]
    print(f"# the host's Python reference (app/bench PYTHON_REF_WHAT): {python_reference_us()} us", flush=True)
    print(f"# {scene} {size_arg} {backend} {sync}, {frames} frames a loop; {len(gc.get_objects())} objects tracked, "
          f"thresholds {gc.get_threshold()}", flush=True)
    for state in ("as a run keeps them", "every record kept"):
        kept = state == "every record kept"
        for name, loop in (("glshare", lambda: glshare_frame(rt, records)), ("bare", bare.frame)):
            collections()
            t0 = time.perf_counter_ns()
            for _ in range(frames):
                loop()
                if not kept:
                    del records[:]
            wall = (time.perf_counter_ns() - t0) / frames / 1e3
            rows = collections()
            per = sum(r[1] for r in rows.values()) / frames
            text = ", ".join(f"gen{g} {r[0]} ({r[1] / frames:.2f} us a frame, longest {r[2]:.0f} us)"
                             for g, r in rows.items())
            del records[:]
            print(f"{state:<20} {name:<8} frame {wall:7.1f} us | collector {per:5.2f} us a frame: {text}", flush=True)
    bare.close()
