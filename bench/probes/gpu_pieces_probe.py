"""GPU probe: what each piece glshare adds to a frame costs the sustained frame, switched off one
at a time on a live run (image scene, semaphore sync by default), with the main thread's CPU time
per frame. Not part of the package; run from a project root (or with GLSHARE_ROOT naming another
checkout, to compare two commits in one loan):

    GLSHARE_CL_DEVICE=NVIDIA python3 bench/probes/gpu_pieces_probe.py 4096x4096 2000 8 [backend sync]

Each variant runs the same frames as the bench's glshare frame (``Session.step`` then the present),
back to back, GL and CL drained before and after, after a second of frames (a new set-up's first
frames run slow); rounds interleave the variants, each round starting at another one and ending with
the base again, so a slow spell of the host touches all of them. Writes pieces-<label>.json into $OUT (or /tmp).
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
ROOT = os.environ.get("GLSHARE_ROOT", os.getcwd())
sys.path.insert(0, ROOT)
from OpenGL import GL  # noqa: E402

from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402

ns = time.perf_counter_ns
size = tuple(int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "4096x4096").split("x"))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 8
backend = sys.argv[4] if len(sys.argv) > 4 else "external_memory"
sync = sys.argv[5] if len(sys.argv) > 5 else "semaphore"
rounds = int(os.environ.get("PIECES_ROUNDS", "3"))
label = os.environ.get("PIECES_LABEL", "run")


def switches(s):
    """name -> (off, on): each piece switched off and back on, on the live session ``s``."""
    sch, b, tr = s.scheduler, s.backend, s.backend.tracker
    saved = {}

    def harvest_off():
        saved["harvest"] = sch.harvest

        def drop(wait=False, gl=True):
            if gl:
                sch.gl_timer.harvest(wait)
            while sch._pending:
                sch._pending.popleft().events.clear()

        sch.harvest = drop

    def validator_off():
        b.bypass_validation = True
        if hasattr(s.scheduler.sync, "_check"):
            saved["check"] = s.scheduler.sync._check
            s.scheduler.sync._check = lambda *a: None

    def validator_on():
        b.bypass_validation = False
        if "check" in saved:
            s.scheduler.sync._check = saved.pop("check")

    def tracker_off():
        for m in ("acquired", "released", "cl_use", "gl_use"):
            setattr(tr, m, lambda *a, **k: None)

    def tracker_on():
        for m in ("acquired", "released", "cl_use", "gl_use"):
            tr.__dict__.pop(m, None)

    def timer(on):
        sch.gl_timer.enabled = on

    from app.cl.ext import event_info

    info, kept = event_info(), (event_info()._batch, sch.gl_timer._batch)

    def native(on):  # app/native's batch reads (CL profiling, GL timer) or the ctypes reads call by call
        info._batch, sch.gl_timer._batch = kept if on else (None, None)

    out = {"native": (lambda: native(False), lambda: native(True)),
           "profiling": (harvest_off, lambda: sch.__dict__.pop("harvest", None)),
           "validator": (validator_off, validator_on),
           "GL timer": (lambda: timer(False), lambda: timer(True)),
           "tracker": (tracker_off, tracker_on)}
    return out


def main():
    cfg = RunConfig(scene="image", backend=backend, sync=sync, headless=True, size=size, panel=False,
                    overlay=False, frames_in_flight=depth)
    result = {"size": size, "frames": N, "depth": depth, "backend": backend, "sync": sync, "root": ROOT,
              "variants": {}}
    with Run(cfg) as rt:
        s = rt.session
        sw = switches(s)
        variants = ["base"] + [f"no {k}" for k in sw] + ["none of them"]

        def frame():
            s.step()
            s.surface.present()

        def drain():
            GL.glFinish()
            s.backend.queue.finish()

        def measure():
            for _ in range(100):
                frame()
            drain()
            t0, c0 = ns(), time.thread_time_ns()
            for _ in range(N):
                frame()
            drain()
            return (ns() - t0) / N / 1e3, (time.thread_time_ns() - c0) / N / 1e3

        from app.bench.loops import BareLoop

        bare = BareLoop(rt)

        def bare_measure():
            drain()
            c0 = time.thread_time_ns()
            ms = bare.drained_semaphore_ms(N)
            return ms * 1e3, (time.thread_time_ns() - c0) / N / 1e3

        # right after the set-up, before any warm-up: each loop once, in the order asked, to see whether
        # a new set-up's first frames are slow whichever loop runs them
        for name in os.environ.get("PIECES_COLD", "bare,glshare").split(","):
            wall, cpu = bare_measure() if name == "bare" else measure()
            result["variants"][f"cold {name}"] = {"frame_us": [round(wall, 1)], "cpu_us": [round(cpu, 1)]}
            print(label, "cold", name, round(wall, 1), round(cpu, 1), flush=True)
        warm_end = time.perf_counter() + float(os.environ.get("PIECES_WARM_S", "1.0"))
        while time.perf_counter() < warm_end:  # a new set-up's first frames run slow (the bench's drain_warm_s)
            frame()
        drain()
        import gc
        gc_before = [g["collections"] for g in gc.get_stats()]
        dropped_before = s.scheduler.gl_timer.dropped
        for r in range(rounds):
            k = r % len(variants)  # each round starts at another variant, base measured again last
            for v in variants[k:] + variants[:k] + ["base", "bare loop"]:
                if v == "bare loop":
                    wall, cpu = bare_measure()
                    result["variants"].setdefault(v, {"frame_us": [], "cpu_us": []})
                    result["variants"][v]["frame_us"].append(round(wall, 1))
                    result["variants"][v]["cpu_us"].append(round(cpu, 1))
                    print(label, r, v, round(wall, 1), round(cpu, 1), flush=True)
                    continue
                names = list(sw) if v == "none of them" else ([v[3:]] if v != "base" else [])
                for n in names:
                    sw[n][0]()
                try:
                    wall, cpu = measure()
                finally:
                    for n in names:
                        sw[n][1]()
                result["variants"].setdefault(v, {"frame_us": [], "cpu_us": []})
                result["variants"][v]["frame_us"].append(round(wall, 1))
                result["variants"][v]["cpu_us"].append(round(cpu, 1))
                print(label, r, v, round(wall, 1), round(cpu, 1), flush=True)
        errors = sum(len(rec.errors) for rec in s.scheduler.records)
        result["errors_in_kept_records"] = errors
        result["gc_collections"] = [g["collections"] - b for g, b in zip(gc.get_stats(), gc_before)]
        result["gl_timer_dropped"] = s.scheduler.gl_timer.dropped - dropped_before
        bare.close()
    for d in result["variants"].values():
        d["frame_us_median"] = statistics.median(d["frame_us"])
        d["cpu_us_median"] = statistics.median(d["cpu_us"])
    path = os.path.join(os.environ.get("OUT", "/tmp"), f"pieces-{label}-{size[0]}x{size[1]}-d{depth}.json")
    json.dump(result, open(path, "w"), indent=1)
    print(json.dumps({v: (d["frame_us_median"], d["cpu_us_median"]) for v, d in result["variants"].items()}))


main()
