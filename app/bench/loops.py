"""The frames the bench times: glshare's own (Runtime.step), the bare loop and the memcpy floor.

Every timed frame ends where ``glshare run``'s loop ends one (``surface.present()``), so the next
frame's sync wait pays for this frame's GL work in every kind of frame alike.

The bare loop is what a user writes by hand on the same device, the same GL objects and the same
kernel: acquire, kernel, release, finish, draw, with no scheduler, validator, ownership tracker,
profiling queue or frame record. For host_copy that is the same copies as the backend's (map the
GL buffer, ``enqueue_copy`` into the mapping, unmap; for a texture a pixel-unpack buffer and
glTexSubImage2D, or, where CL memory is host memory, the mapped CL image handed to
glTexSubImage2D). The memcpy floor is numpy copying the same bytes twice, CL -> host -> GL, from the
same CL memory into the same GL memory, right after the kernel, as glshare's copy would.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl
from OpenGL import GL

from app.gl.objects import GlBuffer
from app.sharing.backends.host_copy import mapped_bytes  # the same mapping a user's code would make

ns = time.perf_counter_ns


@dataclass
class Sample:
    """One timed frame: wall, main-thread CPU and whole-process CPU time (ns)."""

    wall: int
    thread: int
    process: int
    extra: dict = field(default_factory=dict)


def timed(fn) -> Sample:
    w0, t0, p0 = ns(), time.thread_time_ns(), time.process_time_ns()
    extra = fn() or {}
    return Sample(ns() - w0, time.thread_time_ns() - t0, time.process_time_ns() - p0, extra)


def render_target(rt):
    return rt.surface.framebuffer_size if rt.surface.bind_target() else None


# -- glshare's frames -----------------------------------------------------------------------------
def glshare_frame(rt, records: list) -> Sample:
    """One frame exactly as ``Runtime.run`` does it headless, without the panel."""

    def frame():
        records.append(rt.step())
        rt.surface.present()

    return timed(frame)


def glshare_panel_frame(rt, records: list) -> Sample:
    """The same frame with the panel drawn (``Runtime.draw_ui``: app/ui/panel.py)."""

    def frame():
        records.append(rt.step())
        t0 = ns()
        rt.draw_ui()
        t1 = ns()
        rt.surface.present()
        return {"draw_ui": t1 - t0}

    return timed(frame)


def glshare_ui_frame(rt, draw: bool) -> Sample:
    """A frame whose scene GL work is finished before the UI: the sample times only what drawing
    the UI adds (``draw``: Runtime.draw_ui, the panel or the overlay as ``rt.show_panel`` says;
    False: nothing, the same barrier alone), with its GL work finished inside the sample, so
    llvmpipe's rasterising threads are counted too. ``extra["redrew"]``: the cached layer was
    redrawn in this frame."""
    records = [rt.step()]
    GL.glFinish()
    before = rt.overlay.redraws if rt.overlay is not None else 0

    def part():
        if draw:
            rt.draw_ui()
        GL.glFinish()

    sample = timed(part)
    sample.extra["redrew"] = (rt.overlay.redraws if rt.overlay is not None else 0) != before
    rt.surface.present()
    del records
    return sample


def show_panel(rt, on: bool) -> None:
    """What the "h" key does: the full panel or the minimal overlay, redrawn at once."""
    rt.show_panel = on
    if rt.overlay is not None:
        rt.overlay.mark_dirty()


def glshare_copy_frame(rt) -> Sample:
    """A frame driven phase by phase (the teaching mode's generator) with the kernel finished before
    the release and GL finished after the draw, so acquire + release time only glshare's copies and
    its own bookkeeping. Returns that time in ``extra["copy"]`` (ns)."""

    def frame():
        GL.glFinish()  # the frame before (a floor frame, say) drew: not this frame's wait
        steps = rt.scheduler.frame_phases(rt.frame, lambda: render_target(rt))
        next(steps)  # acquire
        next(steps)  # compute
        rt.backend.queue.finish()
        resumed = ns()  # the release phase's clock ran while the kernel finished: start it here
        for _ in steps:  # release, render
            pass
        rt.frame += 1
        GL.glFinish()
        rec = rt.scheduler.records[-1]
        acquire, release = rec.phases["acquire"], rec.phases["release"]
        return {"copy": (acquire[1] - acquire[0]) + (release[1] - resumed), "errors": len(rec.errors)}

    return timed(frame)


# -- the bare loop ---------------------------------------------------------------------------------
class BareLoop:
    """The hand-written loop on the objects of ``rt``'s scene (see the module docstring)."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self.backend = rt.backend
        self.scene = rt.scene
        self.kind = rt.backend_name
        self.queue = cl.CommandQueue(rt.backend.context, rt.choice.device)  # no profiling: a plain queue
        self.frame_index = 0
        self._pbos: dict[int, GlBuffer] = {}
        self._staging: dict[int, np.ndarray] = {}
        self._kept: list = []  # checked_frame's records
        if self.kind == "external_memory":
            self.mems = [o.private["acquire_mem"] for o in self.scene.shared]
        else:
            self.mems = [o.mem for o in self.scene.shared]

    # the hand-over, written out per backend
    def _acquire(self):
        if self.kind == "external_memory":
            from app.cl import ext as clext

            return clext.enqueue_acquire_external(self.backend.ext, self.queue, self.mems)
        if self.kind == "gl_sharing":
            return cl.enqueue_acquire_gl_objects(self.queue, self.mems)
        return None  # host_copy: GL wrote nothing since CL's copy, so there is nothing to copy in

    def _release(self, kernel_event) -> None:
        q = self.queue
        if self.kind == "external_memory":
            from app.cl import ext as clext

            clext.enqueue_release_external(self.backend.ext, q, self.mems, [kernel_event])
            return
        if self.kind == "gl_sharing":
            cl.enqueue_release_gl_objects(q, self.mems, wait_for=[kernel_event])
            return
        write = GL.GL_MAP_WRITE_BIT | GL.GL_MAP_INVALIDATE_BUFFER_BIT
        for obj in self.scene.shared:
            if obj.access == "read_only":
                continue
            gl = obj.gl
            if gl.kind == "buffer":
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, gl.name)
                view = mapped_bytes(GL.GL_COPY_WRITE_BUFFER, gl.nbytes, write)
                cl.enqueue_copy(q, view, obj.mem, wait_for=[kernel_event], is_blocking=True)
                GL.glUnmapBuffer(GL.GL_COPY_WRITE_BUFFER)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
            elif getattr(self.backend, "unified_memory", False):  # as HostCopy does where CL memory is host memory
                mapped, _, pitch, _ = cl.enqueue_map_image(
                    q, obj.mem, cl.map_flags.READ, (0, 0), (gl.width, gl.height),
                    (gl.height, gl.width, gl.bytes_per_pixel), np.uint8, wait_for=[kernel_event], is_blocking=True)
                GL.glBindTexture(GL.GL_TEXTURE_2D, gl.name)
                GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
                GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, pitch // gl.bytes_per_pixel)
                GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, gl.width, gl.height, gl.format, gl.dtype,
                                   ctypes.c_void_p(mapped.ctypes.data))
                GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, 0)
                GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
                mapped.base.release(queue=q)
            else:
                GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, self._pbo(obj).name)
                view = mapped_bytes(GL.GL_PIXEL_UNPACK_BUFFER, gl.nbytes, write)
                cl.enqueue_copy(q, view, obj.mem, origin=(0, 0), region=(gl.width, gl.height),
                                wait_for=[kernel_event], is_blocking=True)
                GL.glUnmapBuffer(GL.GL_PIXEL_UNPACK_BUFFER)
                GL.glBindTexture(GL.GL_TEXTURE_2D, gl.name)
                GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
                GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, gl.width, gl.height, gl.format, gl.dtype,
                                   ctypes.c_void_p(0))
                GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
                GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)

    def _pbo(self, obj) -> GlBuffer:
        pbo = self._pbos.get(id(obj))
        if pbo is None:
            pbo = self._pbos[id(obj)] = GlBuffer(f"bench bare pbo {obj.label}", obj.gl.nbytes,
                                                 target=GL.GL_PIXEL_UNPACK_BUFFER, usage=GL.GL_STREAM_DRAW,
                                                 owner="bench")
        return pbo

    def _draw(self) -> None:
        if self.kind == "external_memory":
            self.backend.gl_after_release(self.scene.shared)  # textures on the copy path: buffer -> texture
        size = render_target(self.rt)
        if size is not None:
            self.scene.render(size)

    def frame(self) -> Sample:
        def run():
            GL.glFinish()
            ev = self._acquire()
            k = self.scene.compute(self.queue, self.frame_index, [ev] if ev is not None else None)
            self._release(k)
            self.queue.finish()
            self._draw()
            self.rt.surface.present()
            self.frame_index += 1

        return timed(run)

    def checked_frame(self) -> Sample:
        """The bare frame plus only the duties glshare cannot drop, written inline at their cheapest:
        both calls checked against the spec (the backend's SpecValidator), the four ownership
        transitions (its OwnershipTracker), and one FrameRecord with its four phase stamps. Against
        the bare frame next to it this is the floor under scheduler_overhead_us: what validating and
        recording a frame costs in Python on this machine, before any scheduling."""
        from app.schedule.frame import FrameRecord

        be, scene, q = self.backend, self.scene, self.queue
        validator, tracker, shared = be.validator, be.tracker, scene.shared
        vq = be.queue  # checked and tracked as glshare's queue (the validator remembers the last good one)
        mems = [o.mem for o in shared]  # what the backend's own calls are checked on

        def run():
            rec = FrameRecord(self.frame_index, scene.name, be.name, "finish")
            t = ns()
            GL.glFinish()
            validator.check_python("acquire", vq, mems, None)
            ev = self._acquire()
            tracker.acquired(shared, vq)
            rec.phases["acquire"] = (t, t := ns())
            tracker.cl_use(shared, "kernel")
            k = scene.compute(q, self.frame_index, [ev] if ev is not None else None)
            rec.phases["compute"] = (t, t := ns())
            validator.check_python("release", vq, mems, [k])
            self._release(k)
            tracker.released(shared, vq)
            q.finish()
            rec.phases["release"] = (t, t := ns())
            tracker.gl_use(shared, "draw")
            self._draw()
            rec.phases["render"] = (t, t := ns())
            self._kept.append(rec)  # kept as the scheduler keeps its history
            del self._kept[:-600]
            self.rt.surface.present()
            self.frame_index += 1

        return timed(run)

    # -- the memcpy floor (host_copy) ---------------------------------------------------------------
    def floor_frame(self) -> Sample:
        """The bare frame with the copies replaced by numpy copying the same bytes twice, CL -> host ->
        GL; only the two copies are timed (``extra["floor"]``, ns)."""

        def run():
            GL.glFinish()
            k = self.scene.compute(self.queue, self.frame_index, None)
            k.wait()
            spent = 0
            for obj in self.scene.shared:
                if obj.access == "read_only":
                    continue
                spent += self._floor_copy(obj)
            self.queue.finish()
            self._draw()
            self.rt.surface.present()
            self.frame_index += 1
            return {"floor": spent}

        return timed(run)

    def _floor_copy(self, obj) -> int:
        q, gl = self.queue, obj.gl
        staging = self._staging.get(id(obj))
        if staging is None:
            staging = self._staging[id(obj)] = np.zeros(gl.nbytes, np.uint8)
        if gl.kind == "buffer":
            src, _ = cl.enqueue_map_buffer(q, obj.mem, cl.map_flags.READ, 0, (gl.nbytes,), np.uint8,
                                           is_blocking=True)
            target, name = GL.GL_COPY_WRITE_BUFFER, gl.name
        else:
            src = cl.enqueue_map_image(q, obj.mem, cl.map_flags.READ, (0, 0), (gl.width, gl.height),
                                       (gl.height, gl.width, gl.nbytes // (gl.width * gl.height)), np.uint8,
                                       is_blocking=True)[0]  # (array, event, row pitch...)
            target, name = GL.GL_PIXEL_UNPACK_BUFFER, self._pbo(obj).name
        GL.glBindBuffer(target, name)
        dst = mapped_bytes(target, gl.nbytes, GL.GL_MAP_WRITE_BIT | GL.GL_MAP_INVALIDATE_BUFFER_BIT)
        flat_src = src.reshape(-1) if src.flags.c_contiguous else src
        t0 = ns()
        if flat_src.ndim == 1:
            np.copyto(staging, flat_src)  # CL -> host
        else:
            np.copyto(staging.reshape(src.shape), src)
        np.copyto(dst, staging)  # host -> GL
        spent = ns() - t0
        GL.glUnmapBuffer(target)
        GL.glBindBuffer(target, 0)
        src.base.release(queue=q)
        return spent

    def close(self) -> None:
        """Idempotent: the queue drained, the bench's own PBOs deleted."""
        if self.queue is not None:
            self.queue.finish()
            self.queue = None
        for pbo in self._pbos.values():
            pbo.release()
        self._pbos.clear()

