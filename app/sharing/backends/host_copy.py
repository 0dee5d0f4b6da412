"""host_copy: the acquire/release contract done with copies; runs on every machine.

CL works on its own buffers and images. Release copies CL -> GL straight into a mapped GL buffer
(``glMapBufferRange`` + ``enqueue_copy`` into the mapping: one copy, not two); for textures the
mapping is a pixel-unpack buffer that ``glTexSubImage2D`` then reads on the GL side, except where
CL memory is host memory (CL_DEVICE_HOST_UNIFIED_MEMORY: CPU OpenCL), where the mapped CL image is
handed to ``glTexSubImage2D`` directly: one copy instead of two (1024x1024 RGBA8 on PoCL +
llvmpipe: 2.4 ms -> about 1 ms, ``glshare bench``). Acquire copies
GL -> CL only when GL changed the data since CL last saw it (``SharedObject.gl_generation``), and
never for write-only objects; with nothing to copy and nothing to wait for it enqueues nothing (and
returns an already complete event when the caller asks: ``acquire(..., event=True)``). Measured on llvmpipe + a CPU OpenCL (../shared/PLATFORMS.md), the
mapped path costs 12.3 ms for 16 MiB against 14.7 ms for a copy to numpy plus glBufferSubData.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pyopencl as cl
from OpenGL import GL

from app.diagnostics import live
from app.errors import GlError
from app.gl.objects import GlBuffer, GlTexture
from app.sharing.base import ACCESS_FLAGS, Probe, ProbeEnv, SharedObject, SharingBackend

RGBA8 = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)


def cl_image_format_for(tex: GlTexture) -> cl.ImageFormat:
    """The CL image format with the same texel layout as the GL texture's internal format."""
    table = {
        GL.GL_RGBA8: (cl.channel_order.RGBA, cl.channel_type.UNORM_INT8),
        GL.GL_R8: (cl.channel_order.R, cl.channel_type.UNORM_INT8),
        GL.GL_RG8: (cl.channel_order.RG, cl.channel_type.UNORM_INT8),
        GL.GL_R16: (cl.channel_order.R, cl.channel_type.UNORM_INT16),
        GL.GL_RG16: (cl.channel_order.RG, cl.channel_type.UNORM_INT16),
        GL.GL_R8UI: (cl.channel_order.R, cl.channel_type.UNSIGNED_INT8),
        GL.GL_RG8UI: (cl.channel_order.RG, cl.channel_type.UNSIGNED_INT8),
        GL.GL_R16UI: (cl.channel_order.R, cl.channel_type.UNSIGNED_INT16),
        GL.GL_RG16UI: (cl.channel_order.RG, cl.channel_type.UNSIGNED_INT16),
        GL.GL_RGBA32F: (cl.channel_order.RGBA, cl.channel_type.FLOAT),
    }
    order, ctype = table[tex.internal_format]
    return cl.ImageFormat(order, ctype)


def completed_event(context: cl.Context) -> cl.UserEvent:
    """An event that is already CL_COMPLETE: what a hand-over that enqueued nothing returns when the
    caller asks for its event (a user event: no command on any queue, no profiling info)."""
    event = cl.UserEvent(context)
    event.set_status(cl.command_execution_status.COMPLETE)
    return event


def mapped_bytes(target: int, nbytes: int, access: int) -> np.ndarray:
    """Map the buffer bound to ``target`` and view the mapping as bytes."""
    ptr = GL.glMapBufferRange(target, 0, nbytes, access)
    address = ptr if isinstance(ptr, int) else ctypes.cast(ptr, ctypes.c_void_p).value
    if not address:
        raise GlError(GL.glGetError(), where="glMapBufferRange", detail=f"mapping {nbytes} bytes failed")
    return np.ctypeslib.as_array((ctypes.c_ubyte * nbytes).from_address(address))


class HostCopy(SharingBackend):
    name = "host_copy"
    zero_copy = False

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        return Probe(cls.name, True, "copies through mapped GL buffers; works with any OpenCL device and GL 3.3")

    def _create_context(self) -> cl.Context:
        try:
            self.unified_memory = bool(self.device.host_unified_memory)
        except cl.Error:  # deprecated in OpenCL 3.0: a device may not answer
            self.unified_memory = False
        return cl.Context([self.device])

    def _share_buffer(self, gl: GlBuffer, access: str):
        return cl.Buffer(self.context, ACCESS_FLAGS[access], gl.nbytes)

    def _share_texture(self, gl: GlTexture, access: str):
        return cl.create_image(self.context, ACCESS_FLAGS[access], cl_image_format_for(gl), shape=(gl.width, gl.height))

    def _pbo(self, obj: SharedObject, target: int) -> int:
        key = f"pbo{target}"
        name = obj.private.get(key)
        if name is None:
            name = obj.private[key] = int(GL.glGenBuffers(1))
            GL.glBindBuffer(target, name)
            usage = GL.GL_STREAM_DRAW if target == GL.GL_PIXEL_UNPACK_BUFFER else GL.GL_STREAM_READ
            GL.glBufferData(target, obj.gl.nbytes, None, usage)
            GL.glBindBuffer(target, 0)
            live.created("gl_pbo", self.name)
        return name

    # -- GL -> CL ---------------------------------------------------------------------------------
    def acquire(self, queue, objects, wait_for=None, *, event: bool = False) -> cl.Event | None:
        """The hand-over GL -> CL (``SharingBackend.acquire``). ``event=True`` is the C API's
        non-NULL ``event`` argument, "an event object that identifies this command and can be used
        to query or wait for this command to complete" (5.5.15): when the hand-over enqueued nothing
        (nothing to copy in, no wait list) it is complete already and the event says so, a user event
        set to CL_COMPLETE (0.35 us on PoCL, no command on the queue; a marker there costs 21 us on
        an idle queue). Without it such an acquire returns None, as the scheduler wants it: it
        profiles every event it is given, and a user event has no profiling info."""
        # [spec] the event when the caller asks for it
        ev = super().acquire(queue, objects, wait_for)
        if ev is None and event:
            return completed_event(self.context)
        return ev

    def _enqueue_acquire(self, queue, objects, wait_for):
        events = []
        for obj in objects:
            if obj.access == "write_only" or obj.synced_generation == obj.gl_generation:
                continue
            events.append(self._copy_gl_to_cl(queue, obj, wait_for))
            obj.synced_generation = obj.gl_generation
            self.bytes_copied += obj.nbytes
        if len(events) == 1:
            return events[0]
        if not events and not wait_for:
            # nothing to copy in and nothing to order after: the hand-over is bookkeeping only (the
            # validator and the ownership tracker ran), no CL command. A marker here cost 40-80 us
            # of the frame on PoCL (glshare bench, overhead_breakdown); the panel shows the acquire
            # as a host phase without a CL bar.
            return None
        return cl.enqueue_marker(queue, wait_for=events or wait_for)

    def _copy_gl_to_cl(self, queue, obj: SharedObject, wait_for) -> cl.Event:
        gl = obj.gl
        if isinstance(gl, GlBuffer):
            GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, gl.name)
            view = mapped_bytes(GL.GL_COPY_READ_BUFFER, gl.nbytes, GL.GL_MAP_READ_BIT)
            try:
                event = cl.enqueue_copy(queue, obj.mem, view, wait_for=wait_for, is_blocking=True)
            finally:
                GL.glUnmapBuffer(GL.GL_COPY_READ_BUFFER)
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
            return event
        pbo = self._pbo(obj, GL.GL_PIXEL_PACK_BUFFER)
        GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, pbo)
        GL.glBindTexture(GL.GL_TEXTURE_2D, gl.name)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        GL.glGetTexImage(GL.GL_TEXTURE_2D, 0, gl.format, gl.dtype, ctypes.c_void_p(0))
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        view = mapped_bytes(GL.GL_PIXEL_PACK_BUFFER, gl.nbytes, GL.GL_MAP_READ_BIT)
        try:
            event = cl.enqueue_copy(queue, obj.mem, view, origin=(0, 0), region=(gl.width, gl.height),
                                    wait_for=wait_for, is_blocking=True)
        finally:
            GL.glUnmapBuffer(GL.GL_PIXEL_PACK_BUFFER)
            GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, 0)
        return event

    # -- CL -> GL ---------------------------------------------------------------------------------
    def _enqueue_release(self, queue, objects, wait_for):
        events = []
        for obj in objects:
            if obj.access == "read_only":
                continue
            events.append(self._copy_cl_to_gl(queue, obj, wait_for))
            obj.synced_generation = obj.gl_generation
            self.bytes_copied += obj.nbytes
        if events:
            # every copy was blocking, so the last one's event is complete no earlier than the others:
            # no marker to join them (a marker cost 10 to 40 us a frame on PoCL; glshare bench)
            return events[-1]
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def _copy_cl_to_gl(self, queue, obj: SharedObject, wait_for) -> cl.Event:
        gl = obj.gl
        write = GL.GL_MAP_WRITE_BIT | GL.GL_MAP_INVALIDATE_BUFFER_BIT
        if isinstance(gl, GlBuffer):
            GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, gl.name)
            view = mapped_bytes(GL.GL_COPY_WRITE_BUFFER, gl.nbytes, write)
            try:
                event = cl.enqueue_copy(queue, view, obj.mem, wait_for=wait_for, is_blocking=True)
            finally:
                GL.glUnmapBuffer(GL.GL_COPY_WRITE_BUFFER)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
            return event
        if self.unified_memory and isinstance(obj.mem, cl.Image):
            return self._upload_mapped_image(queue, obj, wait_for)
        pbo = self._pbo(obj, GL.GL_PIXEL_UNPACK_BUFFER)
        GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, pbo)
        view = mapped_bytes(GL.GL_PIXEL_UNPACK_BUFFER, gl.nbytes, write)
        try:
            event = cl.enqueue_copy(queue, view, obj.mem, origin=(0, 0), region=(gl.width, gl.height),
                                    wait_for=wait_for, is_blocking=True)
        finally:
            GL.glUnmapBuffer(GL.GL_PIXEL_UNPACK_BUFFER)
        GL.glBindTexture(GL.GL_TEXTURE_2D, gl.name)
        GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
        GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, gl.width, gl.height, gl.format, gl.dtype, ctypes.c_void_p(0))
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)
        return event

    def _upload_mapped_image(self, queue, obj: SharedObject, wait_for) -> cl.Event:
        """Map the CL image (no copy where CL memory is host memory) and let glTexSubImage2D read
        the mapping into the texture. GL has read client memory when the call returns, so the
        image is unmapped right after; the map's event is the release's."""
        gl = obj.gl
        bpp = gl.bytes_per_pixel
        mapped, event, row_pitch, _ = cl.enqueue_map_image(
            queue, obj.mem, cl.map_flags.READ, (0, 0), (gl.width, gl.height), (gl.height, gl.width, bpp), np.uint8,
            wait_for=wait_for, is_blocking=True)
        try:
            GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)
            GL.glBindTexture(GL.GL_TEXTURE_2D, gl.name)
            GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
            GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, row_pitch // bpp if row_pitch != gl.width * bpp else 0)
            GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, gl.width, gl.height, gl.format, gl.dtype,
                               ctypes.c_void_p(mapped.ctypes.data))
        finally:
            GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, 0)
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            mapped.base.release(queue=queue)
        return event

    def _unshare(self, obj: SharedObject) -> None:
        for target in (GL.GL_PIXEL_PACK_BUFFER, GL.GL_PIXEL_UNPACK_BUFFER):
            name = obj.private.pop(f"pbo{target}", None)
            if name is not None:
                GL.glDeleteBuffers(1, [name])
                live.released("gl_pbo", self.name)
        obj.mem.release()
