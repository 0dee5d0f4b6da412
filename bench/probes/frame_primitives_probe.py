"""Probe: what each primitive of glshare's frame costs on the calling thread, on this machine's
drivers, each in a tight loop (main-thread CPU and wall, median of the repetitions, us). Not part
of the package; run from a project root:

    python3 bench/probes/frame_primitives_probe.py [scene size backend reps]   # particles 16384 external_memory 2000

The primitives: the clocks the frame reads, pyopencl's Event wrapper around a returned handle,
an event's status and its stamps, glGetError, a GL fence made and deleted, glQueryCounter, and the
hand-over calls themselves (acquire then release of the scene's shared objects, then clFinish):
with an event out and with NULL, on glshare's profiling queue and on a plain one. What the frame
pays for a piece that the bare loop pays too is not glshare's overhead: this says which pieces
are the driver's and which are Python's.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
import ctypes  # noqa: E402

import pyopencl as cl  # noqa: E402

from app.cl.ext import event_info, flush  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.gl import api as GL  # noqa: E402
from app.gl.raw import gl_function  # noqa: E402
from app.run import Run  # noqa: E402
from bench.probes._args import scene_args  # noqa: E402

scene, size_arg, size, backend_name, reps = scene_args("16384", "external_memory", 2000)
ns, tns = time.perf_counter_ns, time.thread_time_ns


def cost(name, fn, setup=None, n=reps):
    wall, cpu = [], []
    for _ in range(n):
        if setup is not None:
            setup()
        w0, c0 = ns(), tns()
        fn()
        c1, w1 = tns(), ns()
        wall.append(w1 - w0)
        cpu.append(c1 - c0)
    print(f"{name:58s} cpu {statistics.median(cpu) / 1e3:7.2f}  wall {statistics.median(wall) / 1e3:7.2f} us")


cfg = RunConfig(scene=scene, backend=backend_name, sync="finish", headless=True, size=size, panel=False, overlay=False)
with Run(cfg) as rt:
    be, sc = rt.session.backend, rt.session.scene
    prof_q = be.queue
    plain_q = cl.CommandQueue(be.context, rt.session.choice.device)
    for _ in range(100):
        rt.session.step()
        rt.session.surface.present()
    rt.session.finish()
    print(f"# {scene} {size_arg} {backend_name}, {reps} repetitions each; device {rt.session.choice.device.name}")
    from app.bench import python_reference_us

    print(f"# the host's Python reference (app/bench PYTHON_REF_WHAT): {python_reference_us()} us")
    cost("empty (the two clocks' own cost)", lambda: None)
    cost("time.perf_counter_ns", ns)
    cost("time.thread_time_ns", tns)
    done = cl.enqueue_marker(prof_q)
    done.wait()
    info = event_info()
    cost("clGetEventInfo status (prepared ctypes)", lambda: info.status(done.int_ptr))
    cost("clGetEventProfilingInfo x3 (one event, batch call)", lambda: info.profiles([done.int_ptr], False))
    cost("clRetainEvent + Event.from_int_ptr + release (wrapper)",
         lambda: cl.Event.from_int_ptr(done.int_ptr, retain=True))
    gl_error = gl_function("glGetError")
    cost("glGetError (raw ctypes)", gl_error)
    fence, delete = gl_function("glFenceSync"), gl_function("glDeleteSync")
    cost("glFenceSync + glDeleteSync", lambda: delete(fence(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)))
    timer = rt.session.scheduler.gl_timer
    if timer.enabled:
        qc = timer._query_counter
        q = timer._all[0]
        cost("glQueryCounter (raw ctypes; GL_TIMESTAMP)", lambda: qc(q, 0x8E28))
    GL.glFinish()
    cost("glFinish (idle GL)", GL.glFinish)
    cost("clFinish (idle queue)", prof_q.finish)
    cost("clFlush (idle queue, prepared ctypes)", lambda: flush(prof_q))
    objs = sc.shared
    if hasattr(be, "_acquire_call"):
        acq, rel = be._acquire_call, be._release_call
        mems = [o.handover_mem for o in objs]
        arr = (ctypes.c_void_p * len(mems))(*[m.int_ptr for m in mems])
        for q, qname in ((prof_q, "profiling queue"), (plain_q, "plain queue")):
            def with_event(q=q):
                e1 = acq(q, mems)
                e2 = rel(q, mems)
                del e1, e2

            def null_event(q=q):
                if acq.fn(q.int_ptr, len(mems), arr, 0, None, None) or rel.fn(q.int_ptr, len(mems), arr, 0, None, None):
                    raise RuntimeError("hand-over refused")

            for fn, how in ((with_event, "events out"), (null_event, "NULL events")):
                GL.glFinish()
                q.finish()
                cost(f"acquire + release ({how}, {qname})", fn, setup=q.finish, n=reps // 2)
                cost(f"acquire + release + clFinish ({how}, {qname})", lambda fn=fn, q=q: (fn(), q.finish()), n=reps // 2)
    be.hand_back(why="the probe's end")
