"""The lifetime demonstration of external memory: the payload outlives its exporter.

After GL and CL have imported one Vulkan allocation, the exporter's allocation and every fd glshare
held are released; then CL writes and GL reads, GL writes and CL reads. Both work because each
import holds its own reference to the payload (OPAQUE_FD, as the NT handles of
../shared/spec/external-memory-nt-handles.txt: "the imported memory object holds a reference to
its payload"). With a KMT (global share) handle, which "does not own a reference", freeing the
exporter would invalidate the payload for every importer.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from app.cl.ext import open_fds
from app.diagnostics import live
from app.gl import api as GL

KMT_NOTE = ("A KMT / global share handle (OPAQUE_WIN32_KMT, D3D11_TEXTURE_KMT) owns no reference: it "
            "'will become invalid when all memory objects and Direct3D resources associated with it are "
            "destroyed', so the exporter's allocation would have to stay alive for as long as GL or CL use it; "
            "freeing it first, as here, would leave both importers with an invalid payload.")


def _one_life(backend, prog: cl.Kernel, n: int, steps: list | None) -> None:
    """Import, free the exporter's side, CL writes / GL reads, GL writes / CL reads, destroy."""
    obj = backend.create_buffer("lifetime demo", n * 4)
    try:
        lt = backend.memory_tab()
        ok = [live.count("vk_memory") == 0 and lt["exporter_released"]]
        detail = [f"Vulkan allocations alive: {live.count('vk_memory')}; fds glshare closed: {lt['fds_closed']}; "
                  f"CL took its fd: {lt['cl_took_fd_ownership']}"]
        q = backend.queue
        ev = backend.acquire(q, [obj])
        ev = prog(q, (n,), None, obj.mem, wait_for=[ev])
        backend.release(q, [obj], [ev])
        q.finish()
        seen = obj.gl.read()
        ok.append(bool(np.array_equal(seen, np.arange(n, dtype=np.float32) * 0.5)))
        detail.append(f"GL read {seen[:4].tolist()}... (expected i/2)")
        GL.glClearNamedBufferData(obj.gl.name, GL.GL_R32F, GL.GL_RED, GL.GL_FLOAT, np.array([3.0], np.float32))
        GL.glFinish()
        back = np.empty(n, np.float32)
        ev = backend.acquire(q, [obj])
        cl.enqueue_copy(q, back, obj.mem, wait_for=[ev])
        backend.release(q, [obj])
        q.finish()
        ok.append(bool(np.all(back == 3.0)))
        detail.append(f"CL read {back[:4].tolist()}... (expected 3.0)")
    finally:
        backend.destroy(obj)
    if steps is not None:
        names = ("exporter released after both imports", "CL writes, GL reads", "GL writes, CL reads")
        steps += [{"step": s, "ok": o, "detail": d} for s, o, d in zip(names, ok, detail)]


def run_lifetime_demo(env, n: int = 4096) -> dict:
    """Returns {ok, steps: [{step, ok, detail}], open_fds_before, open_fds_after, kmt_note}.

    The object's life runs twice: the first pays the driver's one-time set-up (its first kernel
    launch, its first imports open descriptors it keeps), the second is measured for fds.
    """
    from app.sharing.backends.external_memory import ExternalMemory

    steps: list = []
    backend = ExternalMemory(env)  # the process's Vulkan exporter exists from here on (its own fds)
    try:
        prog = cl.Kernel(cl.Program(backend.context, "__kernel void fill(__global float* p) "
                                    "{ uint i = get_global_id(0); p[i] = (float)i * 0.5f; }").build(), "fill")
        _one_life(backend, prog, n, None)
        fds_before = open_fds()
        _one_life(backend, prog, n, steps)
        fds_after = open_fds()
    finally:
        backend.close()
    steps.append({"step": "no file descriptor left open by a shared object's life", "ok": fds_after == fds_before,
                  "detail": f"{fds_before} fds before, {fds_after} after"})
    return {"ok": all(s["ok"] for s in steps), "steps": steps, "open_fds_before": fds_before,
            "open_fds_after": fds_after, "kmt_note": KMT_NOTE}
