"""The frames the bench times: glshare's own (Session.step), the bare loop and the memcpy floor.

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

import time
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from app.gl import api as GL
from app.gl.objects import GlBuffer
from app.gl.upload import mapped_bytes  # the same mapping a user's code would make

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
    return rt.session.surface.framebuffer_size if rt.session.surface.bind_target() else None


# -- glshare's frames -----------------------------------------------------------------------------
def glshare_frame(rt, records: list) -> Sample:
    """One frame exactly as ``Run.loop`` does it headless, without the panel."""

    def frame():
        records.append(rt.session.step())
        rt.session.surface.present()

    return timed(frame)


def glshare_finished_frame(rt, records: list) -> Sample:
    """The same frame, its GL work finished inside the sample and nothing of an earlier frame's left
    for it to wait on: frames of two sessions on one context can be timed in turn without either
    paying for the other's rasterization (with sync finish the next frame's acquire would wait for
    this frame's draw anyway)."""
    GL.glFinish()

    def frame():
        records.append(rt.session.step())
        rt.session.surface.present()
        GL.glFinish()

    return timed(frame)


def glshare_dry_copy_frame(rt, records: list) -> Sample:
    """``glshare_finished_frame`` of a host_copy session with its copies left out
    (``HostCopy.dry_copies``): every other call of the frame made, GL drawing the data of its last
    copy. Its time is host_copy's frame minus its copies, measured, not subtracted."""
    backend = rt.session.backend
    backend.dry_copies = True
    try:
        return glshare_finished_frame(rt, records)
    finally:
        backend.dry_copies = False


def glshare_panel_frame(rt, records: list) -> Sample:
    """The same frame with the panel drawn (``Run.draw_ui``: app/ui/panel.py)."""

    def frame():
        records.append(rt.session.step())
        t0 = ns()
        rt.draw_ui()
        t1 = ns()
        rt.session.surface.present()
        return {"draw_ui": t1 - t0}

    return timed(frame)


def glshare_ui_frame(rt, draw: bool) -> Sample:
    """A frame whose scene GL work is finished before the UI: the sample times only what drawing
    the UI adds (``draw``: Run.draw_ui, the panel or the overlay as ``rt.ui.show_panel`` says;
    False: nothing, the same barrier alone), with its GL work finished inside the sample, so
    llvmpipe's rasterising threads are counted too. ``extra["redrew"]``: the cached layer was
    redrawn in this frame."""
    records = [rt.session.step()]
    GL.glFinish()
    before = rt.ui.redraws if rt.ui is not None else 0

    def part():
        if draw:
            rt.draw_ui()
        GL.glFinish()

    sample = timed(part)
    sample.extra["redrew"] = (rt.ui.redraws if rt.ui is not None else 0) != before
    rt.session.surface.present()
    del records
    return sample


def show_panel(rt, on: bool) -> None:
    """What the "h" key does: the full panel or the minimal overlay, redrawn at once."""
    rt.ui.show_panel = on
    if rt.ui is not None:
        rt.ui.mark_dirty()


def glshare_copy_frame(rt) -> Sample:
    """A frame driven phase by phase (the teaching mode's generator) with the kernel finished before
    the release and GL finished after the draw, so acquire + release time only glshare's copies and
    its own bookkeeping. Returns that time in ``extra["copy"]`` (ns), and the time inside the copy
    calls alone (the backend's ``copy_ns``: the bytes moving, none of the hand-over's bookkeeping
    that a zero-copy backend pays too) in ``extra["copy_calls"]``."""

    def frame():
        GL.glFinish()  # the frame before (a floor frame, say) drew: not this frame's wait
        backend = rt.session.backend
        copied = backend.copy_ns
        steps = rt.session.scheduler.frame_phases(rt.session.frame, lambda: render_target(rt))
        next(steps)  # acquire
        next(steps)  # compute
        backend.queue.finish()
        resumed = ns()  # the release phase's clock ran while the kernel finished: start it here
        for _ in steps:  # release, render
            pass
        rt.session.frame += 1
        GL.glFinish()
        rec = rt.session.scheduler.records[-1]
        acquire, release = rec.phases["acquire"], rec.phases["release"]
        return {"copy": (acquire[1] - acquire[0]) + (release[1] - resumed), "errors": len(rec.errors),
                "copy_calls": backend.copy_ns - copied}

    return timed(frame)


# -- the bare loop ---------------------------------------------------------------------------------
class BareLoop:
    """The hand-written loop on the objects of ``rt``'s scene (see the module docstring)."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self.backend = rt.session.backend
        self.scene = rt.session.scene
        self.queue = cl.CommandQueue(rt.session.backend.context, rt.session.choice.device)  # no profiling: a plain queue
        self.frame_index = 0
        self._pbos: dict[int, GlBuffer] = {}
        self._kept: list = []  # checked_frame's records

    # the hand-over alone: the backend's own enqueue calls, without validation or ownership tracking
    def _acquire(self):
        return self.backend.bare_acquire(self.queue, self.scene.shared)

    def _release(self, kernel_event) -> None:
        self.backend.bare_release(self.queue, self.scene.shared, [kernel_event])

    def _pbo(self, obj) -> GlBuffer:
        pbo = self._pbos.get(id(obj))
        if pbo is None:
            pbo = self._pbos[id(obj)] = GlBuffer(f"bench bare pbo {obj.label}", obj.gl.nbytes,
                                                 target=GL.GL_PIXEL_UNPACK_BUFFER, usage=GL.GL_STREAM_DRAW,
                                                 owner="bench")
        return pbo

    def _draw(self) -> None:
        self.backend.gl_after_release(self.scene.shared)  # GL's part of the hand-over (a texture's copy)
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
            self.rt.session.surface.present()
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
            rec = FrameRecord.begin(self.frame_index, scene.name, be.name, "finish")
            t = ns()
            GL.glFinish()
            validator.check_python("acquire", vq, mems, None)
            ev = self._acquire()
            tracker.acquired(shared, vq)
            rec.phases["acquire"] = (t, t := ns())
            tracker.cl_use(shared, "kernel")
            k = scene.compute(q, self.frame_index, [ev] if ev is not None else None)
            rec.phases["compute"] = (t, t := ns())
            validator.check_python("release", vq, mems, None)  # as glshare's frame: in order, no wait list
            self._release(k)
            tracker.released(shared, vq)
            q.finish()
            rec.phases["release"] = (t, t := ns())
            tracker.gl_use(shared, "draw")
            self._draw()
            rec.phases["render"] = (t, t := ns())
            self._kept.append(rec)  # kept as the scheduler keeps its history
            del self._kept[:-600]
            self.rt.session.surface.present()
            self.frame_index += 1

        return timed(run)

    # -- the bare loop with frames in flight (semaphore sync) ---------------------------------------
    def drained_semaphore_ms(self, frames: int) -> float:
        """The hand-written loop of a sync mode that does not wait on the CPU (semaphores), sustained
        like ``cells._drained_ms``: per frame the copy of the shared objects glshare would use, the
        sync mode's own GPU waits and signals (its validator checks taken out), the backend's bare
        acquire and release, the kernel, the draw, a GL fence, the present, and the same bound on
        frames in flight, with no scheduler, validator, ownership tracking, profiling or frame
        record. What the machine sustains for glshare's frame with none of glshare around it."""
        from app.gl.raw import gl_function

        session = self.rt.session
        be, scene, sync, q = self.backend, self.scene, session.scheduler.sync, self.backend.queue
        depth = session.scheduler.frames_in_flight
        fence, client_wait, delete = (gl_function(n) for n in ("glFenceSync", "glClientWaitSync", "glDeleteSync"))
        waits: list = []
        fences: list = []
        GL.glFinish()
        q.finish()
        t0 = ns()
        try:
            with sync.unchecked():  # the bare loop validates nothing
                for _ in range(frames):
                    i = self.frame_index
                    self.frame_index += 1
                    if scene.slots > 1:
                        scene.use_slot(i % scene.slots)
                        sync.use_slot(i % scene.slots, scene.shared)
                    while len(fences) >= depth:
                        f = fences.pop(0)
                        client_wait(f, GL.GL_SYNC_FLUSH_COMMANDS_BIT, 10_000_000_000)
                        delete(f)
                    wait_for = sync.before_acquire(waits)
                    ev = be.bare_acquire(q, scene.shared, wait_for or None)
                    k = scene.compute(q, i, [ev] if ev is not None else None)
                    rel = be.bare_release(q, scene.shared, [k])
                    sync.after_release(q, rel, waits)
                    self._draw()
                    sync.after_gl_use(waits)
                    fences.append(fence(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0))
                    self.rt.session.surface.present()
                    waits.clear()
            GL.glFinish()
            q.finish()
            return round((ns() - t0) / frames / 1e6, 4)
        finally:
            for f in fences:
                delete(f)

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
            self.rt.session.surface.present()
            self.frame_index += 1
            return {"floor": spent}

        return timed(run)

    def _floor_copy(self, obj) -> int:
        q, gl = self.queue, obj.gl
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
        # one memcpy from CL's mapping into GL's, as host_copy's path makes one copy (enqueue_copy into
        # the mapped GL buffer or pixel-unpack buffer): the fewest a copy through the host can do
        if flat_src.ndim == 1:
            np.copyto(dst, flat_src)
        else:
            np.copyto(dst.reshape(src.shape), src)
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

