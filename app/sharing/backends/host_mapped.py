"""host_mapped: zero-copy where CL and GL both work in host memory and no sharing extension exists.

A CPU OpenCL device (PoCL, Intel's CPU runtime) and a GL that keeps buffers in host memory (Mesa's
llvmpipe) can use the very same bytes without any interop extension: GL makes a buffer with
immutable storage (glBufferStorage) and maps it once, persistently and coherently
(``GlMappedBuffer``); CL makes its buffer or image over that mapping with CL_MEM_USE_HOST_PTR.
Where the device's memory is host memory (CL_DEVICE_HOST_UNIFIED_MEMORY) and the mapping is
aligned as the device needs (CL_DEVICE_MEM_BASE_ADDR_ALIGN), the CL object is the mapping itself.
The probe does not take that on trust: it makes one buffer (and one image) that way and checks
that GL's writes are CL's data, CL's writes are GL's data and CL's map returns GL's address.

The hand-over is cl_khr_gl_sharing's rule without its entry points (gl-acquire-release.txt,
5.5.15 of OpenCL 3.0.16): before CL uses the memory GL's commands on it must be complete, after CL's release GL may
use it once CL's commands are complete. The sync mode does the waiting: ``finish`` waits in glFinish
before the acquire (with MAP_COHERENT_BIT, GL's writes are visible to the client once a fence or
glFinish after them completed: ARB_buffer_storage, OpenGL 4.4 core section 6.2) and in clFinish
after the release. The acquire itself enqueues nothing unless asked to wait for events, the
release a marker on the kernel's event; nothing is copied.

Textures: the texels live in a mapped GL buffer, tightly packed; CL sees them as the buffer itself
(``SharedObject.row_pitch``; the scenes run the buffer variants of their kernels) on a CPU device,
whose image reads and writes are format conversions in software, and elsewhere as an image made
over the mapping (CL_MEM_USE_HOST_PTR with the row pitch) where the probe found such images work
in place (``textures_as_images``). GL shows them one of three ways, recorded as ``display_path``:
  - "buffer texture": drawn with glshare's quad (``create_texture(drawn_by_quad=True)``) in a
    format a samplerBuffer reads, GL samples the mapped buffer itself (``GlBufferTexture``);
    nothing is copied.
  - "2D texture + mapped storage CL reads": a read-only texture (the yuv planes). GL's uploads
    write the 2D texture and the mapped buffer (``upload``, or the scene writing
    ``SharedObject.storage``); CL reads the mapping; the hand-over copies nothing.
  - "copy into texture: <why>": a texture CL writes that GL samples as a 2D texture, or that a
    buffer texture cannot hold. After the release GL copies the mapping into the texture
    (glTexSubImage2D from the mapped buffer as a pixel-unpack buffer): a copy on GL's side, counted
    in ``bytes_copied``. glshare's scenes never take this path; it exists so that callers that
    sample a 2D texture still work.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from app.cl.formats import cl_image_format
from app.errors import ClError, GlshareError, SharingUnavailable
from app.gl import api as GL
from app.gl.formats import RGBA8, TexelFormat
from app.gl.objects import (
    BUFFER_TEXTURE_FORMATS,
    GlBufferTexture,
    GlMappedBuffer,
    GlTexture,
    buffer_texture_refusal,
    max_texture_buffer_texels,
)
from app.gl.upload import texture_from_unpack_buffer
from app.sharing.base import ACCESS_FLAGS, Capabilities, Probe, ProbeEnv, SharedObject, SharingBackend

log = logging.getLogger(__name__)

NAME = "host_mapped"
BUFFER_TEXTURE = "buffer texture"
READ_ONLY_TEXTURE = "2D texture + mapped storage CL reads"
PROBE_BYTES = 64 * 1024
PROBE_IMAGE = (16, 8)  # RGBA8 texels


def gl_refusal(gl_info) -> str | None:
    """Why GL cannot give persistently mapped buffers here, or None (OpenGL 4.4 or GL_ARB_buffer_storage)."""
    if gl_info.version_tuple >= (4, 4) or gl_info.has("GL_ARB_buffer_storage"):
        return None
    return (f"GL {gl_info.version} ({gl_info.renderer}) has neither OpenGL 4.4 nor GL_ARB_buffer_storage: no "
            "persistently mapped buffers for CL to use")


def unified_refusal(device) -> str | None:
    """Why the device's memory is not host memory, or None (CL_DEVICE_HOST_UNIFIED_MEMORY true)."""
    name = device.name.strip()
    try:
        unified = bool(device.host_unified_memory)
    except cl.Error as exc:  # deprecated since OpenCL 2.0: a device may not answer
        return (f"device {name!r} does not answer CL_DEVICE_HOST_UNIFIED_MEMORY ({exc}): whether its memory is "
                "host memory is unknown")
    if not unified:
        return (f"device {name!r} reports no host-unified memory (CL_DEVICE_HOST_UNIFIED_MEMORY is false): a CL "
                "buffer over a GL mapping would be copied to the device's own memory")
    return None


def base_alignment(device) -> int:
    """CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes (the device reports bits)."""
    return max(1, int(device.mem_base_addr_align) // 8)


def alignment_refusal(address: int, align: int) -> str | None:
    if address % align:
        return (f"GL's mapping at 0x{address:x} is not a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN ({align} bytes): "
                "CL_MEM_USE_HOST_PTR would not use it in place")
    return None


@dataclass(frozen=True)
class RoundTrip:
    """What the probe's round trip found: ``reason`` is None when buffers work in place."""

    reason: str | None
    images: bool  # CL images over a mapping work in place too
    image_note: str  # why not, where not
    address: int  # where the probe's GL mapping was (for the probe's text)


def _mapped_address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def round_trip(device) -> RoundTrip:
    """Make a CL buffer (and, where the device has images, an RGBA8 image) over a GL mapping and
    check, with a GL context current: GL's write is CL's data, CL's write is GL's data, CL's map
    returns GL's address. Everything made is released before returning."""
    align = base_alignment(device)
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    made: list = []
    try:
        buf = GlMappedBuffer(f"{NAME}.probe", PROBE_BYTES, target=GL.GL_COPY_WRITE_BUFFER, owner=f"{NAME} probe")
        made.append(buf)
        refusal = alignment_refusal(buf.address, align)
        if refusal:
            return RoundTrip(refusal, False, "", buf.address)
        mem = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=buf.view)
        made.append(mem)
        pattern = (np.arange(PROBE_BYTES, dtype=np.uint32) * 2654435761 % 251).astype(np.uint8)
        buf.upload(pattern)  # GL writes ...
        GL.glFinish()
        seen = np.empty(PROBE_BYTES, np.uint8)
        cl.enqueue_copy(queue, seen, mem, is_blocking=True)  # ... CL reads
        if not np.array_equal(seen, pattern):
            return RoundTrip("CL did not read what GL wrote into the mapped buffer: the device keeps its own copy",
                             False, "", buf.address)
        cl.enqueue_fill_buffer(queue, mem, np.uint32(0x5A17C0DE), 0, PROBE_BYTES)  # CL writes ...
        queue.finish()
        got = buf.read(np.uint32)  # ... GL reads
        if not np.all(got == 0x5A17C0DE):
            return RoundTrip("GL did not see CL's write into the buffer made over its mapping: the device writes a "
                             "copy", False, "", buf.address)
        mapped, _ = cl.enqueue_map_buffer(queue, mem, cl.map_flags.READ, 0, (PROBE_BYTES,), np.uint8, is_blocking=True)
        at = _mapped_address(mapped)
        mapped.base.release(queue=queue)
        if at != buf.address:
            return RoundTrip(f"CL's map of the buffer returned 0x{at:x}, not GL's mapping 0x{buf.address:x}: the "
                             "device copies (CL_MEM_USE_HOST_PTR not in place)", False, "", buf.address)
        images, note = _image_round_trip(ctx, queue, device, align, made)
        return RoundTrip(None, images, note, buf.address)
    finally:
        queue.finish()
        for thing in reversed(made):  # CL objects before the GL buffers under them
            thing.release()


def _image_round_trip(ctx, queue, device, align: int, made: list) -> tuple[bool, str]:
    """An RGBA8 image over a mapping: CL's fill is GL's data and CL's map returns GL's address."""
    if not device.image_support:
        return False, "the device has no images: textures are pitched buffers"
    w, h = PROBE_IMAGE
    buf = GlMappedBuffer(f"{NAME}.probe.image", w * h * 4, target=GL.GL_COPY_WRITE_BUFFER, owner=f"{NAME} probe")
    made.append(buf)
    if alignment_refusal(buf.address, align):
        return False, alignment_refusal(buf.address, align)
    try:
        image = cl.create_image(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, cl_image_format(RGBA8),
                                shape=(w, h), pitches=(w * 4,), hostbuf=buf.view)
    except cl.Error as exc:
        return False, f"an image over a mapping was refused ({exc}): textures are pitched buffers"
    made.append(image)
    cl.enqueue_fill_image(queue, image, np.array([1.0, 0.0, 0.2, 1.0], np.float32), (0, 0), (w, h))
    queue.finish()
    if not np.all(buf.read(np.uint8).reshape(-1, 4) == (255, 0, 51, 255)):
        return False, "GL did not see CL's write into an image over its mapping: textures are pitched buffers"
    mapped, _, row_pitch, _ = cl.enqueue_map_image(queue, image, cl.map_flags.READ, (0, 0), (w, h), (h, w, 4),
                                                   np.uint8, is_blocking=True)
    at = _mapped_address(mapped)
    mapped.base.release(queue=queue)
    if at != buf.address or row_pitch != w * 4:
        return False, (f"CL's map of an image over a mapping returned 0x{at:x} (row pitch {row_pitch}), not GL's "
                       f"0x{buf.address:x}: textures are pitched buffers")
    return True, ""


_ROUND_TRIPS: dict[int, RoundTrip] = {}  # device -> what the probe found (the backend builds on it)


def cached_round_trip(device) -> RoundTrip:
    key = device.int_ptr
    if key not in _ROUND_TRIPS:
        _ROUND_TRIPS[key] = round_trip(device)
    return _ROUND_TRIPS[key]


CPU_IMAGES = ("a CPU device: its image reads and writes are per-texel format conversions in software, "
              "plain loads and stores are not")


def textures_as_images(device, trip: RoundTrip) -> bool:
    """Whether kernels see textures as images over the mapping: where images work in place and the
    device is not a CPU (a CPU has no texture units, so a pitched buffer is the faster view of the
    same bytes; the kernels give the same texels either way)."""
    return trip.images and not device.type & cl.device_type.CPU


def display_path(fmt: TexelFormat, width: int, height: int, pitch: int, access: str, drawn_by_quad: bool) -> str:
    """How GL shows a texture kept in a mapped buffer (see the module docstring)."""
    if drawn_by_quad:
        if fmt.integer:
            why = f"{BUFFER_TEXTURE_FORMATS.get(int(fmt.internal_format), (fmt.name,))[0]} texels are integers " \
                  "and the quad's samplerBuffer reads floats"
        else:
            why = buffer_texture_refusal(fmt.internal_format, fmt.texel_bytes, width, height, pitch,
                                         max_texture_buffer_texels())
            if why is None:
                return BUFFER_TEXTURE
    else:
        why = "the caller samples a 2D texture"
    if access == "read_only":
        return READ_ONLY_TEXTURE
    return f"copy into texture: {why}"


class HostMapped(SharingBackend):
    name = NAME
    title = "CL buffers and images over persistently mapped GL buffers (CPU OpenCL, GL in host memory), zero-copy"
    probe_order = 80  # after the extensions (gl_sharing, external_memory), before host_copy
    capabilities = Capabilities(zero_copy=True, buffer_textures=True)
    nests_acquisitions = False  # glshare's own hand-over: one release hands back any number of acquires
    null_events = True  # the release's marker left out where nothing reads its event
    teaching = {
        "acquire": "host_mapped: GL's commands on the shared memory are complete (sync 'finish' waited in "
                   "glFinish), so CL may use it; nothing is enqueued or copied: CL's buffer is GL's mapped buffer.",
        "compute": "The kernel wrote straight into the GL buffer's storage (CL_MEM_USE_HOST_PTR over GL's "
                   "persistent mapping).",
        "release": "host_mapped: a marker after the kernel; sync 'finish' waited in clFinish, so GL reads only "
                   "finished data. Nothing copied.",
        "render": "GL drew from the same memory the kernel wrote (textures: a buffer texture over it).",
    }
    hazard_effects = {
        "skip_acquire": "Nothing changes on screen: the memory is one and the same, and sync 'finish' still waits "
                        "for GL before the kernel. The acquire is where ownership moves: without it nothing says "
                        "GL is done, which is why the flag matters.",
        "skip_release": "Usually nothing changes on screen: sync 'finish' still waits in clFinish before GL draws. "
                        "Without the release GL draws memory CL still owns; with a sync that does not wait GL "
                        "would draw while the kernel writes.",
        "sync_none": "GL may draw while the kernel writes the same bytes, and the kernel may write while GL still "
                     "draws the frame before: torn particles or image bands, flicker (llvmpipe rasterizes on "
                     "other threads while PoCL runs the kernel).",
        "wrong_delete_order": "A scratch shared buffer's GL object is deleted before its CL buffer: GL unmaps and "
                              "frees the storage the CL buffer uses as its host memory (CL_MEM_USE_HOST_PTR), so "
                              "any CL command on it would touch freed memory. The scratch buffer is used by no "
                              "command, so nothing shows; the flag is the lesson.",
    }

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        dev = env.choice.device
        reason = gl_refusal(env.gl_info) or unified_refusal(dev)
        if reason:
            return Probe(cls.name, False, reason)
        try:
            trip = cached_round_trip(dev)
        except (cl.Error, GlshareError) as exc:
            return Probe(cls.name, False, f"the round trip through a mapped buffer failed: {exc}")
        if trip.reason:
            return Probe(cls.name, False, trip.reason)
        if textures_as_images(dev, trip):
            textures = "textures as images over the mapping"
        else:
            textures = f"textures as pitched buffers ({trip.image_note or CPU_IMAGES})"
        return Probe(cls.name, True, f"CL_MEM_USE_HOST_PTR over persistently mapped GL buffers, aligned to "
                     f"{base_alignment(dev)} B; checked at probe time: CL's writes are GL's data and CL's map "
                     f"returns GL's address; {textures}; zero-copy")

    def _create_context(self) -> cl.Context:
        reason = gl_refusal(self.env.gl_info) or unified_refusal(self.device)
        if reason:
            raise SharingUnavailable(self.name, reason)
        trip = cached_round_trip(self.device)
        if trip.reason:
            raise SharingUnavailable(self.name, trip.reason)
        self.images = textures_as_images(self.device, trip)
        self.alignment = base_alignment(self.device)
        return cl.Context([self.device])

    # -- memory -----------------------------------------------------------------------------------
    def _mapped(self, label: str, nbytes: int, target: int) -> GlMappedBuffer:
        buf = GlMappedBuffer(label, nbytes, target=target, owner=self.name)
        refusal = alignment_refusal(buf.address, self.alignment)
        if refusal:
            buf.release()
            raise SharingUnavailable(self.name, f"{label}: {refusal}")
        return buf

    def _cl_over(self, label: str, buf: GlMappedBuffer, access: str, image=None) -> cl.MemoryObjectHolder:
        """A CL buffer (or, with ``image`` = (format, width, height, pitch), an image) over ``buf``'s mapping."""
        flags = ACCESS_FLAGS[access] | cl.mem_flags.USE_HOST_PTR
        try:
            if image is None:
                return cl.Buffer(self.context, flags, hostbuf=buf.view)
            fmt, width, height, pitch = image
            return cl.create_image(self.context, flags, cl_image_format(fmt), shape=(width, height),
                                   pitches=(pitch,), hostbuf=buf.view)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{self.name}: CL_MEM_USE_HOST_PTR over {label}") from exc

    def _new_buffer(self, label: str, nbytes: int, access: str) -> SharedObject:
        gl = self._mapped(label, nbytes, GL.GL_ARRAY_BUFFER)
        try:
            mem = self._cl_over(label, gl, access)
        except BaseException:
            gl.release()
            raise
        return self._wrap(gl, mem, access)

    def _new_texture(self, label: str, width: int, height: int, fmt: TexelFormat, access: str,
                     drawn_by_quad: bool) -> SharedObject:
        """The texels in a mapped buffer (tight rows), CL's image or buffer over it, and the GL object
        ``display_path`` names (see the module docstring)."""
        pitch = width * fmt.texel_bytes
        path = display_path(fmt, width, height, pitch, access, drawn_by_quad)
        storage = self._mapped(f"{label}.buffer", pitch * height, GL.GL_PIXEL_UNPACK_BUFFER)
        mem = tex = None
        try:
            mem = self._cl_over(label, storage, access, (fmt, width, height, pitch) if self.images else None)
            if path == BUFFER_TEXTURE:
                tex = GlBufferTexture(label, storage, width, height, pitch, fmt=fmt, owner=self.name)
            else:
                tex = GlTexture(label, width, height, fmt=fmt, owner=self.name)
        except BaseException:
            if mem is not None:
                mem.release()
            if tex is not None:
                tex.release()
            storage.release()
            raise
        log.debug("%s %dx%d %s over 0x%x: %s", label, width, height, fmt.name, storage.address, path)
        return self._wrap(tex, mem, access, storage=storage, row_pitch=pitch, display_path=path, owned=[storage])

    def _upload(self, obj: SharedObject, data) -> None:
        """GL writes the memory CL reads (glBufferSubData into the mapped buffer) and, where GL keeps a
        2D texture, the texture too."""
        if obj.storage is None:
            obj.gl.upload(data)
            return
        obj.storage.upload(np.ascontiguousarray(data).reshape(-1).view(np.uint8))
        if isinstance(obj.gl, GlTexture):
            obj.gl.upload(data)

    def _unshare(self, obj: SharedObject) -> None:
        # CL's commands on the memory end before its GL storage can go (destroy deletes it next)
        self.queue.finish()
        super()._unshare(obj)

    # -- acquire / release ------------------------------------------------------------------------
    def _enqueue_acquire(self, queue, objects, wait_for, event=True):
        """Nothing to move: GL's commands were waited for by the sync mode. A marker only where the
        acquire must wait for events (so that commands after it wait too)."""
        if not wait_for:
            return None
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def _enqueue_release(self, queue, objects, wait_for, event=True):
        """A marker after the kernel: complete when CL is done with the memory. Where nothing reads
        it (``event=False``, on an in-order queue: ``null_events``) and it waits on nothing, none: the
        sync mode's clFinish is CL's completion then."""
        if not event and not wait_for:
            return None
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def native_hand_over(self, queue, objects, event):
        """As ``_enqueue_acquire`` and ``_enqueue_release`` without a wait list: no acquire call, and
        the release's marker only where its event is asked for."""
        if not event:
            return [], [], None, None
        from app.cl.ext import prepared_core, vp

        out = vp()
        return [], [prepared_core("clEnqueueMarkerWithWaitList", queue.int_ptr, 0, None, out)], None, out

    def gl_before_acquire(self, objects) -> None:
        """A 2D texture GL rendered into (the post-process scene's), whose texels CL reads from its
        mapped storage: GL copies it there before the acquire (llvmpipe: a host copy, counted)."""
        self.bytes_copied += self._copy_written_textures(objects)

    def gl_after_release(self, objects) -> None:
        """The copy path only: GL copies a texture CL wrote from its mapped buffer into the 2D texture."""
        for obj in objects:
            if obj.storage is None or not isinstance(obj.gl, GlTexture) or obj.access == "read_only":
                continue
            texture_from_unpack_buffer(obj.gl, obj.storage.name, obj.row_pitch)
            self.bytes_copied += obj.nbytes
