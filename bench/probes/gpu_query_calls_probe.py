"""GPU probe: what each driver query glshare makes every frame costs by itself, on a live session
(the bench's scheduler_overhead_us cell: particles 16,384, external_memory, sync finish). Not part of
the package; run from a project root:

    GLSHARE_CL_DEVICE=NVIDIA python3 bench/probes/gpu_query_calls_probe.py [reps]

After 300 frames, the frame's own commands are enqueued once more by hand (the backend's acquire, the
scene's kernel, the release) plus a marker, each waited for; then each query is called ``reps``
times in a row, main-thread CPU per call (median of 5 blocks): clGetEventInfo's status, each
clGetEventProfilingInfo stamp, ``EventInfo.profile`` as the scheduler reads it, and GL's
glQueryCounter and glGetQueryObjectui64v (QUERY_RESULT and QUERY_RESULT_NO_WAIT) through ctypes.
The stamps each event came back with are printed (zero: the driver did not time it).
Prints one JSON object and writes it to $OUT/query-calls.json (or /tmp).
"""
import ctypes
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())

from app.cl.ext import PROFILING_PARAMS, event_info  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.gl import api as GL  # noqa: E402
from app.gl.raw import gl_function  # noqa: E402
from app.run import Run  # noqa: E402

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
cpu = time.thread_time_ns


def per_call_us(fn) -> float:
    blocks = []
    for _ in range(5):
        t0 = cpu()
        for _ in range(reps):
            fn()
        blocks.append((cpu() - t0) / reps / 1e3)
    return round(statistics.median(blocks), 3)


cfg = RunConfig(scene="particles", size=16_384, backend="external_memory", sync="finish", headless=True,
                overlay=False, frames=10_000)
out: dict = {"reps": reps}
with Run(cfg) as rt:
    s = rt.session
    for _ in range(300):
        s.step()
        s.surface.present()
    s.scheduler.harvest(wait=True)
    GL.glFinish()
    b, q, scene = s.backend, s.backend.queue, s.scene
    b.gl_before_acquire(scene.shared)
    ev = {"acquire": b.acquire(q, scene.shared, None)}
    ev["compute"] = scene.compute(q, s.frame, None)
    ev["release"] = b.release(q, scene.shared, None)
    b.gl_after_release(scene.shared)
    import pyopencl as cl

    ev["marker"] = cl.enqueue_marker(q)
    q.finish()
    info = event_info()
    raw = info._profiling
    u64 = ctypes.c_uint64()
    ref = ctypes.byref(u64)
    out["stamps"] = {k: (info.profile(e.int_ptr) if e is not None else None) for k, e in ev.items()}
    calls: dict = {}
    for name, e in ev.items():
        if e is None:
            continue
        ptr = e.int_ptr
        calls[f"{name}: clGetEventInfo status"] = per_call_us(lambda p=ptr: info.status(p))
        for param, label in zip(PROFILING_PARAMS, ("QUEUED", "SUBMIT", "START", "END")):
            calls[f"{name}: clGetEventProfilingInfo {label}"] = per_call_us(
                lambda p=ptr, par=param: raw(p, par, 8, ref, None))
        calls[f"{name}: EventInfo.profile (no SUBMIT)"] = per_call_us(lambda p=ptr: info.profile(p, False))
    counter = gl_function("glQueryCounter")
    get64 = gl_function("glGetQueryObjectui64v")
    q0 = GL.glGenQueries(1)
    counter(q0, 0x8E28)
    GL.glFinish()
    calls["GL: glQueryCounter(TIMESTAMP)"] = per_call_us(lambda: counter(q0, 0x8E28))
    GL.glFinish()
    calls["GL: glGetQueryObjectui64v QUERY_RESULT (available)"] = per_call_us(lambda: get64(q0, 0x8866, ref))
    calls["GL: glGetQueryObjectui64v QUERY_RESULT_NO_WAIT (available)"] = per_call_us(lambda: get64(q0, 0x9194, ref))
    GL.glDeleteQueries(1, [q0])
    calls["GL: glGetError"] = per_call_us(gl_function("glGetError"))
    calls["python: a ctypes call of nothing (ctypes.c_int.from_param)"] = per_call_us(lambda: ctypes.c_int.from_param(1))
    out["per_call_us"] = calls
    out["cl"] = s.env.choice.device.name if hasattr(s, "env") else ""

text = json.dumps(out, indent=1)
print(text)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "query-calls.json"), "w") as f:
    f.write(text + "\n")
