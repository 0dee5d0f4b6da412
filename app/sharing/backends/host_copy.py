"""host_copy: the acquire/release contract done with copies; runs on every machine.

CL works on its own buffers and images. Release copies CL -> GL straight into a mapped GL buffer
(``glMapBufferRange`` + ``enqueue_copy`` into the mapping: one copy, not two); for textures the
mapping is a pixel-unpack buffer that ``glTexSubImage2D`` then reads on the GL side, except where
CL memory is host memory (CL_DEVICE_HOST_UNIFIED_MEMORY: CPU OpenCL), where the mapped CL image is
handed to ``glTexSubImage2D`` directly: one copy instead of two. Acquire copies GL -> CL only when
GL changed the data since CL last saw it (``SharedObject.gl_generation``), and never for write-only
objects; with nothing to copy and nothing to wait for it enqueues nothing (and returns an already
complete event where the caller asks for one: ``acquire(..., event=True)``).
"""
from __future__ import annotations

import time

import pyopencl as cl

from app.cl.formats import cl_image_format
from app.gl import api as GL
from app.gl.objects import GlBuffer
from app.gl.upload import (
    READ,
    WRITE_DISCARD,
    mapped,
    texture_from_address,
    texture_from_unpack_buffer,
    texture_to_pack_buffer,
)
from app.sharing.base import ACCESS_FLAGS, Capabilities, Probe, ProbeEnv, SharedObject, SharingBackend

ns = time.perf_counter_ns


class HostCopy(SharingBackend):
    name = "host_copy"
    title = "copies through mapped GL buffers (any OpenCL device, GL 3.3)"
    probe_order = 90
    capabilities = Capabilities(zero_copy=False)
    nests_acquisitions = False  # glshare's own hand-over: one release hands back any number of acquires
    teaching = {
        "acquire": "host_copy: copied GL -> CL where GL changed the data since CL's last copy (write-only "
                   "objects: nothing to copy). Sync 'finish' waited in glFinish first.",
        "compute": "The kernel ran on CL's own buffers/images.",
        "release": "host_copy: copied CL's result into a mapped GL buffer (textures: a pixel-unpack buffer, then "
                   "glTexSubImage2D). Sync 'finish' waited in clFinish after.",
        "render": "GL drew the scene from the objects it owns again.",
    }
    hazard_effects = {
        "skip_acquire": "particles and image: nothing changes on screen. host_copy's acquire only copies GL -> CL "
                        "when GL changed the data (particles: once, at build; the image is write-only), so CL's "
                        "copy is already current: the mistake is invisible there, which is why the flag matters. "
                        "yuv and postprocess: the picture freezes, because GL changes what CL reads every frame "
                        "(the uploaded planes, the rendered image) and the skipped acquire is where host_copy "
                        "copies it to CL: CL keeps converting or filtering its last copy.",
        "skip_release": "Frozen frame: the release is where host_copy copies CL's result into the GL buffer or "
                        "texture, so GL keeps drawing the last released data while the kernel runs on in CL. "
                        "Turn it off and the animation jumps to where CL got to.",
        "sync_none": "No visible change: host_copy's copies are blocking (enqueue_copy into a mapped GL buffer "
                     "waits for both sides), so they synchronise by themselves; the frame time drops by the "
                     "glFinish/clFinish waits (see the timeline).",
        "wrong_delete_order": "A scratch shared buffer is made and its GL object deleted before its CL memory "
                              "object. Nothing on screen changes (the scene's objects are untouched); host_copy's "
                              "CL buffer is its own storage, so nothing breaks - the flag is the lesson.",
        "unordered_render": "No tearing: CL filters the copy the acquire made before GL's pass, so the picture shows "
                            "the 3-D image of the frame before (one frame late, too little to see); GL's new image "
                            "reaches CL at the next acquire. The tracker flags the draw into an object CL holds, "
                            "and the timeline shows the GL pass inside the compute phase.",
    }

    # the bench's "host_copy's frame minus its copies" (app/bench/races.py): True makes every call of
    # the frame but the copies themselves, so GL draws what it last got; never set in a run
    dry_copies = False

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        return Probe(cls.name, True, "copies through mapped GL buffers; works with any OpenCL device and GL 3.3")

    def _create_context(self) -> cl.Context:
        try:
            self.unified_memory = bool(self.device.host_unified_memory)
        except cl.Error:  # deprecated in OpenCL 3.0: a device may not answer
            self.unified_memory = False
        self._pbos: dict[tuple[int, int], GlBuffer] = {}  # (id(shared object), target) -> its PBO
        return cl.Context([self.device])

    def _share_buffer(self, gl: GlBuffer, access: str):
        return cl.Buffer(self.context, ACCESS_FLAGS[access], gl.nbytes)

    def _share_texture(self, gl, access: str):
        return cl.create_image(self.context, ACCESS_FLAGS[access], cl_image_format(gl.texel_format),
                               shape=(gl.width, gl.height))

    def _pbo(self, obj: SharedObject, target: int) -> GlBuffer:
        pbo = self._pbos.get((id(obj), target))
        if pbo is None:
            usage = GL.GL_STREAM_DRAW if target == GL.GL_PIXEL_UNPACK_BUFFER else GL.GL_STREAM_READ
            pbo = self._pbos[(id(obj), target)] = GlBuffer(f"{obj.label}.pbo", obj.gl.nbytes, target=target,
                                                           usage=usage, owner=self.name)
        return pbo

    # -- GL -> CL ---------------------------------------------------------------------------------
    def _enqueue_acquire(self, queue, objects, wait_for, event=True):
        events = []
        for obj in objects:
            if obj.access == "write_only" or obj.synced_generation == obj.gl_generation:
                continue
            obj.synced_generation = obj.gl_generation
            if self.dry_copies:
                continue
            t0 = ns()
            events.append(self._copy_gl_to_cl(queue, obj, wait_for))
            self.copy_ns += ns() - t0
            self.bytes_copied += obj.nbytes
        if len(events) == 1:
            return events[0]
        if not events and not wait_for:
            # nothing to copy in and nothing to order after: the hand-over is bookkeeping only (the
            # validator and the ownership tracker ran), no CL command; the panel shows the acquire
            # as a host phase without a CL bar
            return None
        return cl.enqueue_marker(queue, wait_for=events or wait_for)

    def _copy_gl_to_cl(self, queue, obj: SharedObject, wait_for) -> cl.Event:
        gl = obj.gl
        if isinstance(gl, GlBuffer):
            with mapped(GL.GL_COPY_READ_BUFFER, gl.name, gl.nbytes, READ) as view:
                return cl.enqueue_copy(queue, obj.mem, view, wait_for=wait_for, is_blocking=True)
        pbo = self._pbo(obj, GL.GL_PIXEL_PACK_BUFFER)
        texture_to_pack_buffer(gl, pbo.name)
        with mapped(GL.GL_PIXEL_PACK_BUFFER, pbo.name, gl.nbytes, READ) as view:
            return cl.enqueue_copy(queue, obj.mem, view, origin=(0, 0), region=(gl.width, gl.height),
                                   wait_for=wait_for, is_blocking=True)

    # -- CL -> GL ---------------------------------------------------------------------------------
    def _enqueue_release(self, queue, objects, wait_for, event=True):
        events = []
        for obj in objects:
            if obj.access == "read_only":
                continue
            obj.synced_generation = obj.gl_generation
            if self.dry_copies:
                continue
            t0 = ns()  # a blocking copy: it includes waiting for the commands before it (the kernel)
            events.append(self._copy_cl_to_gl(queue, obj, wait_for))
            self.copy_ns += ns() - t0
            self.bytes_copied += obj.nbytes
        if events:
            # every copy was blocking, so the last one's event is complete no earlier than the others:
            # no marker to join them
            return events[-1]
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def _copy_cl_to_gl(self, queue, obj: SharedObject, wait_for) -> cl.Event:
        gl = obj.gl
        if isinstance(gl, GlBuffer):
            with mapped(GL.GL_COPY_WRITE_BUFFER, gl.name, gl.nbytes, WRITE_DISCARD) as view:
                return cl.enqueue_copy(queue, view, obj.mem, wait_for=wait_for, is_blocking=True)
        if self.unified_memory and isinstance(obj.mem, cl.Image):
            return self._upload_mapped_image(queue, obj, wait_for)
        pbo = self._pbo(obj, GL.GL_PIXEL_UNPACK_BUFFER)
        with mapped(GL.GL_PIXEL_UNPACK_BUFFER, pbo.name, gl.nbytes, WRITE_DISCARD) as view:
            event = cl.enqueue_copy(queue, view, obj.mem, origin=(0, 0), region=(gl.width, gl.height),
                                    wait_for=wait_for, is_blocking=True)
        texture_from_unpack_buffer(gl, pbo.name)
        return event

    def _upload_mapped_image(self, queue, obj: SharedObject, wait_for) -> cl.Event:
        """Map the CL image (no copy where CL memory is host memory) and let glTexSubImage2D read
        the mapping into the texture. GL has read client memory when the call returns, so the
        image is unmapped right after; the map's event is the release's."""
        gl = obj.gl
        mapped_image, event, row_pitch, _ = cl.enqueue_map_image(
            queue, obj.mem, cl.map_flags.READ, (0, 0), (gl.width, gl.height),
            (gl.height, gl.width, gl.bytes_per_pixel), "uint8", wait_for=wait_for, is_blocking=True)
        try:
            texture_from_address(gl, mapped_image.ctypes.data, row_pitch)
        finally:
            mapped_image.base.release(queue=queue)
        return event

    def _unshare(self, obj: SharedObject) -> None:
        for target in (GL.GL_PIXEL_PACK_BUFFER, GL.GL_PIXEL_UNPACK_BUFFER):
            pbo = self._pbos.pop((id(obj), target), None)
            if pbo is not None:
                pbo.release()
        super()._unshare(obj)
