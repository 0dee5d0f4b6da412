"""GPU probe (NVIDIA H200, external_memory): how long an image frame with semaphore sync takes at each
depth of frames in flight, for glshare's own frame and for the same driver calls made straight
through ctypes with nothing around them ("lean"), with the CPU time of each call.

Not part of the package; run on the GPU machine from the project root after `source .device/activate`:

    GLSHARE_CL_DEVICE=NVIDIA python3 bench/probes/gpu_copies_probe.py 4096x4096 1500 1,2,4,8,16

Each figure is sustained: frames back to back, GL and CL finished before and after, per frame.
The lean loop is the semaphore protocol glshare uses with copies: frame i on copy i % N, CL waits on
the copy's gl_done (signalled by GL right after its last draw of that copy), acquire, kernel,
release, CL signals cl_done, GL waits on it, draws the copy, signals gl_done, a fence bounds the
CPU to N frames ahead. It writes probe-<W>x<H>.json into $OUT (or /tmp).
"""
import ctypes
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from OpenGL import GL  # noqa: E402
from OpenGL import platform as glplat  # noqa: E402

from app.cl import ext as clext  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.gl.raw import GLenum, uint_array  # noqa: E402
from app.scenes.image import ImageScene  # noqa: E402
from app.run import Run  # noqa: E402
from app.sharing.sync.semaphore import SemaphoreSync  # noqa: E402

ns = time.perf_counter_ns
vp = ctypes.c_void_p
size = tuple(int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "4096x4096").split("x"))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
depths = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "1,2,4,8,16").split(",")]
ImageScene.max_slots = max(ImageScene.max_slots, max(depths))
lib = clext.libopencl()
lib.clSetKernelArg.argtypes = [vp, ctypes.c_uint32, ctypes.c_size_t, vp]
lib.clEnqueueNDRangeKernel.argtypes = [vp, vp, ctypes.c_uint32, vp, vp, vp, ctypes.c_uint32, vp, vp]
lib.clFlush.argtypes = [vp]


def glf(name, res, *args):
    return ctypes.CFUNCTYPE(res, *args)(glplat.PLATFORM.getExtensionProcedure(name.encode()))


fence_sync = glf("glFenceSync", vp, ctypes.c_uint, ctypes.c_uint)
client_wait = glf("glClientWaitSync", ctypes.c_uint, vp, ctypes.c_uint, ctypes.c_uint64)
delete_sync = glf("glDeleteSync", None, vp)
out = {"size": size, "frames": N}


def sustained(frame, drain):
    for i in range(100):
        frame(i)
    drain()
    t0 = ns()
    for i in range(N):
        frame(i)
    drain()
    return round((ns() - t0) / N / 1e3, 1)


def glshare(depth):
    cfg = RunConfig(scene="image", backend="external_memory", sync="semaphore", headless=True, size=size,
                    panel=False, overlay=False, frames_in_flight=depth)
    with Run(cfg) as rt:
        s = rt.session

        def frame(_):
            s.step()
            s.surface.present()

        return sustained(frame, lambda: (GL.glFinish(), s.backend.queue.finish()))


def lean(depths):
    cfg = RunConfig(scene="image", backend="external_memory", sync="semaphore", headless=True, size=size,
                    panel=False, overlay=False, frames_in_flight=1)
    with Run(cfg) as rt:
        s = rt.session
        b, sc, q, surf = s.backend, s.scene, s.backend.queue, s.surface
        qp, lay = q.int_ptr, (GLenum * 1)(0)
        acq, rel = b._acquire_call.fn, b._release_call.fn
        waitsem, sigsem = b.ext.clEnqueueWaitSemaphoresKHR, b.ext.clEnqueueSignalSemaphoresKHR
        gsz, lsz = sc.launch(sc._global_size)
        g_arr = (ctypes.c_size_t * len(gsz))(*gsz)
        l_arr = (ctypes.c_size_t * len(gsz))(*lsz) if lsz else None
        cr, ci = ctypes.c_float(0.3), ctypes.c_float(-0.6)
        pairs = [SemaphoreSync(b) for _ in range(max(depths))]
        textures = [b.create_texture(f"probe[{i}]", size[0], size[1], access="write_only", drawn_by_quad=True)
                    for i in range(max(depths))]
        result = {}
        for depth in depths:
            calls: dict = {}
            first = [True] * depth
            fences = []

            def timed(name, fn, *args):
                t0 = ns()
                fn(*args)
                calls.setdefault(name, []).append(ns() - t0)

            def frame(i):
                slot = i % depth
                sy, t = pairs[slot], textures[slot]
                while len(fences) >= depth:
                    f = fences.pop(0)
                    timed("fence wait", client_wait, f, 1, 10**10)
                    delete_sync(f)
                objs, bufs = (vp * 1)(t.handover_mem.int_ptr), uint_array([t.gl_memory])
                if not first[slot]:
                    timed("cl wait semaphore", waitsem, qp, 1, sy.gl_done_cl._handle_ref, None, 0, None, None)
                first[slot] = False
                timed("acquire", acq, qp, 1, objs, 0, None, None)
                k = sc.kernel.int_ptr
                lib.clSetKernelArg(k, 0, 8, ctypes.byref(vp(t.mem.int_ptr)))
                lib.clSetKernelArg(k, sc._c_index, 4, ctypes.byref(cr))
                lib.clSetKernelArg(k, sc._c_index + 1, 4, ctypes.byref(ci))
                timed("kernel", lib.clEnqueueNDRangeKernel, qp, k, len(gsz), None, g_arr, l_arr, 0, None, None)
                timed("release", rel, qp, 1, objs, 0, None, None)
                timed("cl signal semaphore", sigsem, qp, 1, sy.cl_done_cl._handle_ref, None, 0, None, None)
                timed("clFlush", lib.clFlush, qp)
                timed("gl wait semaphore", sy._wait, sy.cl_done_gl, 1, bufs, 0, None, lay)
                surf.bind_target()
                timed("draw", sc.quad.draw, t.gl)
                timed("gl signal semaphore", sy._signal, sy.gl_done_gl, 1, bufs, 0, None, lay)
                fences.append(fence_sync(0x9117, 0))
                timed("present", surf.present)

            def drain():
                GL.glFinish()
                q.finish()

            frame_us = sustained(frame, drain)
            for slot in range(depth):  # each copy's last gl_done: waited once, so the pairs are balanced
                if not first[slot]:
                    waitsem(qp, 1, pairs[slot].gl_done_cl._handle_ref, None, 0, None, None)
            drain()
            result[depth] = {"frame_us": frame_us,
                             "calls_us_median": {k: round(statistics.median(v) / 1e3, 1) for k, v in calls.items()}}
            print("lean", depth, result[depth], flush=True)
        for t in textures:
            b.destroy(t)
        for p in pairs:
            p.close()
        return result


out["lean"] = lean(depths)
out["glshare"] = {}
for d in depths:
    out["glshare"][d] = glshare(d)
    print("glshare", d, out["glshare"][d], flush=True)
path = os.path.join(os.environ.get("OUT", "/tmp"), f"probe-{size[0]}x{size[1]}.json")
json.dump(out, open(path, "w"), indent=1)
