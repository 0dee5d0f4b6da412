"""GPU probe: does the way a set-up was reached change glshare's sustained semaphore frame? The bench
(a session opened with the panel on and sync finish, then switched to semaphores and to each depth of
frames in flight) measured about 0.30 ms a frame at 4 and 8 copies where a fresh session with the
panel off (bench/probes/gpu_pieces_probe.py) measured 0.18. Four ways to the same set-up (image,
external_memory, semaphore, 8 frames in flight), each in its own process: fresh (panel off), panel
(panel on), switched (panel off, finish first, then switched), bench (panel on, finish, then switched
through depths 2, 1, 4, 8 as the bench does). For each: glshare's drained frame and the bare loop's,
interleaved, after a warm-up, with the median host time of each scheduler phase, and optionally a
cProfile of glshare's frames. Not part of the package; run from the project root:

    GLSHARE_CL_DEVICE=NVIDIA python3 bench/probes/gpu_setup_probe.py WAY 4096x4096 [profile]
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from OpenGL import GL  # noqa: E402

from app.bench.loops import BareLoop  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402

ns = time.perf_counter_ns
way = sys.argv[1]
size = tuple(int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "4096x4096").split("x"))
profile = len(sys.argv) > 3 and sys.argv[3] == "profile"
N = 1000
panel = way in ("panel", "bench")
first_sync = "finish" if way in ("switched", "bench") else os.environ.get("PROBE_SYNC", "semaphore")
cfg = RunConfig(scene="image", backend=os.environ.get("PROBE_BACKEND", "external_memory"), sync=first_sync, headless=True, size=size, panel=panel,
                frames_in_flight=8 if first_sync == "semaphore" else 2)
out = {"way": way, "size": size, "frames": N}
with Run(cfg) as rt:
    s = rt.session
    out["framebuffer"] = list(s.surface.framebuffer_size)
    out["ui"] = rt.ui is not None
    if first_sync == "finish":
        depths = (2, 1, 4, 8) if way == "bench" else (8,)
        for d in depths:
            s.cfg = s.cfg.with_(frames_in_flight=d)
            assert s.switch(sync=os.environ.get("PROBE_SYNC", "semaphore")).ok, s.history.loop_errors[-1:]
            for _ in range(300):
                s.step()
                s.surface.present()
    recs = []

    def frame():
        recs.append(s.step())
        s.surface.present()

    def drain():
        GL.glFinish()
        s.backend.queue.finish()

    def drained():
        drain()
        t0 = ns()
        for _ in range(N):
            frame()
        drain()
        return (ns() - t0) / N / 1e3

    bare = BareLoop(rt)
    warm = time.perf_counter() + 1.0
    while time.perf_counter() < warm:
        frame()
        bare.drained_semaphore_ms(5)
    ours, theirs = [], []
    for _ in range(3):
        recs.clear()
        ours.append(round(drained(), 1))
        theirs.append(round(bare.drained_semaphore_ms(N) * 1e3, 1))
    phases = {}
    for rec in recs:
        for name, (a, b) in rec.phases.items():
            phases.setdefault(name, []).append((b - a) / 1e3)
        phases.setdefault("waits", []).append(sum(e - a for _, a, e in rec.waits) / 1e3)
    out.update(glshare_us=ours, bare_us=theirs, phases_us_median={k: round(statistics.median(v), 1) for k, v in phases.items()},
               slots=s.scene.slots, frames_in_flight=s.scheduler.frames_in_flight,
               gl_timer={"every": s.scheduler.gl_timer.every, "dropped": s.scheduler.gl_timer.dropped},
               segments=len(s.history.segments))
    if profile:
        import cProfile
        import pstats

        p = cProfile.Profile()
        p.enable()
        for _ in range(N):
            frame()
        p.disable()
        drain()
        st = pstats.Stats(p, stream=sys.stdout)
        st.sort_stats("tottime").print_stats(25)
    bare.close()
print(json.dumps(out))
