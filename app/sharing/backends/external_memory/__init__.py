"""external_memory: Vulkan-exported memory and semaphores, imported by GL and by CL (zero-copy).

Where cl_khr_gl_sharing is absent (NVIDIA's driver 580 with EGL, ../shared/gpu/README.md) GL and CL can
still share device memory: Vulkan allocates it exportable (opaque fd), GL imports one dup of the fd
(GL_EXT_memory_object_fd: a successful import transfers the fd to GL), CL imports another
(cl_khr_external_memory_opaque_fd, clCreateBufferWithProperties). Acquire and release are
clEnqueueAcquireExternalMemObjectsKHR / clEnqueueReleaseExternalMemObjectsKHR.

Lifetime (the demonstration the panel shows): once GL and CL have imported the memory, the
exporter's Vulkan allocation is freed and every fd glshare holds is closed; GL and CL keep reading
and writing the payload because each import holds its own reference (OPAQUE_FD, like the NT
handles of ../shared/spec/external-memory-nt-handles.txt, "holds a reference to its payload"). A
KMT handle owns no reference: freeing the exporter's allocation would invalidate it, so glshare
would have to keep the allocation alive; no KMT path exists on Linux and none is claimed.

Textures: the CL side writes a shared *buffer*, row pitch ``SharedObject.row_pitch`` (kernels see
it as an image2d_t made from that buffer where the device has cl_khr_image2d_from_buffer, else as
the buffer itself: NVIDIA lists no image2d_from_buffer). GL shows it one of two ways, chosen per
texture and recorded as ``SharedObject.display_path`` (the Memory tab lists them):
  - "buffer texture": GL samples the imported buffer itself, a GL_TEXTURE_BUFFER over it
    (``GlBufferTexture``, drawn by ``BufferTextureQuad`` with texelFetch at y * row_length + x);
    nothing is copied per frame. Taken when the caller draws the texture only with glshare's
    quad (``create_texture(drawn_by_quad=True)``) and GL's buffer-texture rules allow it
    (``buffer_texture_refusal``).
  - "copy into texture: <why not a buffer texture>": after the release GL copies the buffer into
    a 2D texture on the GPU (glTexSubImage2D from GL_PIXEL_UNPACK_BUFFER, ``gl_after_release``), for
    callers that sample a 2D texture or images a buffer texture cannot hold. That copy is GPU work
    every frame that a buffer texture avoids (bench/results/README.md, 'How to read the H200 numbers').

Textures GL writes and CL reads (the post-process scene's rendering): GL cannot render into buffer
memory, so such a texture is a real 2D texture (``create_texture(drawn_by_quad=False)``, never a
buffer texture: an FBO takes no buffer texture) and ``gl_before_acquire`` copies it into its
imported buffer before each acquire where GL changed it since the last copy (glGetTexImage into the
buffer bound as GL_PIXEL_PACK_BUFFER, rows ``row_pitch`` apart). That copy runs on the GPU, ordered
before CL by the sync mode like any GL command, and it is a copy, not zero-copy: ``gpu_bytes_copied``
counts it (with the copies of ``gl_after_release``) and the Memory tab shows it. A texture on the
imported memory itself (glTexStorageMem2DEXT) could take the rendering, but its texel layout is the
driver's tiling while CL imports the memory as a linear buffer, so glshare does not claim that path.
Data a caller writes into the imported buffer itself (``upload``, the yuv scene's planes) needs no
copy: CL's side already holds it (``synced_generation``).
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import os
from typing import NoReturn

import pyopencl as cl

from app.cl import ext as clext
from app.cl.formats import cl_image_format
from app.diagnostics import live
from app.errors import ClError, SharingUnavailable, as_glshare_error
from app.gl import api as GL
from app.gl.context import check_gl
from app.gl.objects import (
    BUFFER_TEXTURE_FORMATS,
    GlBuffer,
    GlBufferTexture,
    GlTexture,
    buffer_texture_refusal,
    max_texture_buffer_texels,
)
from app.gl.upload import texture_from_unpack_buffer
from app.sharing.backends.external_memory import handles
from app.sharing.backends.external_memory.vulkan import close_fd, shared_exporter
from app.sharing.base import ACCESS_FLAGS, Capabilities, Probe, ProbeEnv, SharedObject, SharingBackend

log = logging.getLogger(__name__)

GL_HANDLE_TYPE_OPAQUE_FD_EXT = 0x9586
CL_EXTENSIONS = ("cl_khr_external_memory", "cl_khr_external_memory_opaque_fd")
CL_SEMAPHORE_EXTENSIONS = ("cl_khr_semaphore", "cl_khr_external_semaphore", "cl_khr_external_semaphore_opaque_fd")
GL_EXTENSIONS = ("GL_EXT_memory_object", "GL_EXT_memory_object_fd")
GL_SEMAPHORE_EXTENSIONS = ("GL_EXT_semaphore", "GL_EXT_semaphore_fd")
CL_DEVICE_UUID_KHR = 0x106A
CL_DEVICE_IMAGE_PITCH_ALIGNMENT = 0x104A
BUFFER_TEXTURE = "buffer texture"  # SharedObject.display_path when GL samples the imported buffer
# SharedObject.display_path of a 2D texture GL writes and CL only reads (gl_before_acquire)
READ_BY_CL = "2D texture; GL's writes reach CL's imported buffer by a GPU copy before the acquire"


def import_handle_types(device: cl.Device) -> list[int] | None:
    """CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, queried only where the device lists
    cl_khr_external_memory (None otherwise)."""
    if "cl_khr_external_memory" not in device.extensions.split():
        return None
    return clext.device_info_u32_list(device, clext.CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR) or []


def _cl_uuid(device: cl.Device) -> bytes | None:
    if "cl_khr_device_uuid" not in device.extensions.split():
        return None
    lib = clext.libopencl()
    buf = (ctypes.c_ubyte * 16)()
    if lib.clGetDeviceInfo(device.int_ptr, CL_DEVICE_UUID_KHR, 16, buf, None):
        return None
    return bytes(buf)


def _gl_uuid_mismatch(env: ProbeEnv) -> str | None:
    """The CL device must be GL's: its CL_DEVICE_UUID_KHR among GL_EXT_memory_object's device UUIDs."""
    from app.cl.device import all_devices, cl_device_uuid, gl_device_uuids, uuid_mismatch

    chosen = env.choice
    gl_uuids, mine = gl_device_uuids(), _cl_uuid(chosen.device)
    if not gl_uuids or mine is None or mine in gl_uuids:
        return None
    others = [(c.label, cl_device_uuid(c.device)) for c in all_devices() if c.device != chosen.device]
    return uuid_mismatch(chosen.label, mine, gl_uuids, others, getattr(chosen, "explicit", False))


def display_path(internal_format: int, texel_size: int, width: int, height: int, pitch: int, *,
                 asked: bool, max_texels: int) -> str:
    """How GL shows a texture kept in an imported pitched buffer: ``BUFFER_TEXTURE`` (GL samples the
    buffer, nothing copied) or "copy into texture: <reason>" (the copy in ``gl_after_release``).

    A buffer storing imported memory is a buffer object like any other (GL_EXT_memory_object,
    BufferStorageMemEXT: BufferStorage's buffer with its storage taken from the memory object), so
    TexBuffer may attach it; the limits are buffer textures' own (OpenGL 4.6 core, section 8.9).
    """
    if not asked:
        return "copy into texture: the caller samples a 2D texture"
    name = BUFFER_TEXTURE_FORMATS.get(int(internal_format), ("", 0))[0]
    if name.endswith("I"):  # R8I, RGBA16UI ...: an isamplerBuffer/usamplerBuffer, not the quad's samplerBuffer
        return f"copy into texture: {name} texels are integers and the quad's samplerBuffer reads floats"
    refusal = buffer_texture_refusal(internal_format, texel_size, width, height, pitch, max_texels)
    return BUFFER_TEXTURE if refusal is None else f"copy into texture: {refusal}"


def _reraise(exc: Exception, where: str) -> NoReturn:
    """Raise ``exc`` again, a raw CL or GL error as glshare's (``as_glshare_error``) naming ``where``."""
    err = as_glshare_error(exc, where)
    if err is exc:
        raise exc
    raise err from exc


def _gl_fn(name: str):
    """An entry point of GL_EXT_memory_object(_fd) or GL_EXT_semaphore(_fd), checked (app.gl.api)."""
    return getattr(GL, name)


class GlMemoryObject:
    """A GL memory object holding an imported payload (GL_EXT_memory_object)."""

    def __init__(self, label: str, fd: int, size: int) -> None:
        """Takes ``fd``: GL owns it after a successful import; on a failure it is closed here and
        the memory object deleted, then the error raised (GlError)."""
        self.label = label
        name = GL.GLuint()
        try:
            _gl_fn("glCreateMemoryObjectsEXT")(1, ctypes.byref(name))
            check_gl(f"glCreateMemoryObjectsEXT({label})")
            _gl_fn("glImportMemoryFdEXT")(name.value, size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd)
            check_gl(f"glImportMemoryFdEXT({label})")
        except Exception as exc:
            # GL_EXT_memory_object_fd: only a successful import transfers the fd to GL
            close_fd(fd)
            if name.value:
                with contextlib.suppress(Exception):
                    _gl_fn("glDeleteMemoryObjectsEXT")(1, (GL.GLuint * 1)(name.value))
            _reraise(exc, f"glImportMemoryFdEXT({label})")
        self.name = name.value  # GL owns fd now
        live.created("gl_memory_object", "external_memory")

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            _gl_fn("glDeleteMemoryObjectsEXT")(1, (GL.GLuint * 1)(name))
            live.released("gl_memory_object", "external_memory")


class ExternalMemory(SharingBackend):
    name = "external_memory"
    title = "Vulkan-exported memory and semaphores, imported by GL and CL (opaque fd), zero-copy"
    probe_order = 20
    capabilities = Capabilities(zero_copy=True, semaphores=True, buffer_textures=True)
    rule_set = "external_memory"  # validated against cl_khr_external_memory's error lists
    null_events = True  # its calls take the C API's NULL event (clext.MemObjectsCall)
    release_exporter = True  # free Vulkan's allocation once GL and CL imported it (lifetime demo)
    uploads_reach_cl = True  # uploads go into the imported buffer CL reads: no copy owed after them
    gpu_bytes_copied = 0  # bytes GL copied between 2D textures and their imported buffers (on the GPU)
    teaching = {
        "acquire": "clEnqueueAcquireExternalMemObjectsKHR on the Vulkan-exported memory GL and CL both imported.",
        "compute": "The kernel wrote into the shared device memory.",
        "release": "clEnqueueReleaseExternalMemObjectsKHR (textures on the copy path: then GL copies the buffer "
                   "into the texture).",
        "render": "GL drew from the imported memory.",
    }
    hazard_effects = {
        "skip_acquire": "The kernel runs on memory whose ownership never moved to CL: on NVIDIA the frame usually "
                        "still looks right, but nothing orders GL's last draw before the kernel, so stale or torn "
                        "frames are possible.",
        "skip_release": "GL reads memory CL never released: no ownership transfer back, so GL may see stale data "
                        "or a half-written frame; a texture's buffer -> texture copy still runs. Every frame "
                        "acquires again what CL still holds, and NVIDIA's driver nests those acquisitions: "
                        "turning the demonstration off releases each one (the status line counts them); left "
                        "acquired, destroying the CL context hung on the H200 (driver 580).",
        "sync_none": "Nothing orders GL and CL on the shared memory: GL may draw while the kernel writes: torn "
                     "particles or image bands, flicker.",
        "wrong_delete_order": "A scratch shared buffer's GL object is deleted before its CL memory object; the "
                              "imported payload stays alive while CL's import holds it, but the GL object that "
                              "names it is gone.",
        "unordered_render": "GL renders and copies the texture into the imported buffer after the acquire, right "
                            "before the kernel, and nothing (no glFinish, no semaphore) orders that GPU copy before "
                            "the kernel: CL may filter a buffer half overwritten by the new frame (bands of the old "
                            "and the new image) or the old frame whole; the tracker flags the draw into an object "
                            "CL holds.",
    }

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        dev = env.choice.device
        missing = [e for e in CL_EXTENSIONS if e not in env.device_extensions]
        if missing:
            return Probe(cls.name, False, f"device {dev.name.strip()!r} does not list {', '.join(missing)}")
        types = import_handle_types(dev) or []
        if clext.CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR not in types:
            listed = ", ".join(f"0x{t:04X}" for t in types) or "none"
            return Probe(cls.name, False, f"the CL device imports no OPAQUE_FD (0x2060) memory (it imports: {listed})")
        gl_missing = [e for e in GL_EXTENSIONS if not env.gl_info.has(e)]
        if gl_missing:
            return Probe(cls.name, False, f"GL ({env.gl_info.renderer}) lacks {', '.join(gl_missing)}")
        if env.gl_info.version_tuple < (4, 5) and not env.gl_info.has("GL_ARB_direct_state_access"):
            return Probe(cls.name, False, f"GL {env.gl_info.version} has no direct state access "
                         "(GL 4.5 or GL_ARB_direct_state_access), which glNamedBufferStorageMemEXT needs")
        why = _gl_uuid_mismatch(env)
        if why:
            return Probe(cls.name, False, why)
        try:
            shared_exporter(_cl_uuid(dev))  # kept for the backend (one exporter per process)
        except SharingUnavailable as exc:
            return Probe(cls.name, False, exc.reason)
        return Probe(cls.name, True, "Vulkan exports opaque-fd memory; GL and CL import it; zero-copy")

    def _create_context(self) -> cl.Context:
        ctx = cl.Context([self.device])
        self.exporter = shared_exporter(_cl_uuid(self.device))
        self.ext = clext.ExtensionFunctions(self.env.choice.platform)
        self._acquire_call, self._release_call = clext.external_mem_calls(self.ext)  # prepared once
        self._pack_staging: dict = {}  # id(shared object) -> the GL buffer its rendering is packed into
        self.cl_took_fd = None  # set at the first import: whether CL owns the fd it was given (5.5.2.1)
        self.fds_closed = 0
        self._kept: list = []  # exporter allocations kept when release_exporter is False
        return ctx

    # -- import -----------------------------------------------------------------------------------
    def _import(self, label: str, nbytes: int):
        """Vulkan allocation -> (GL buffer name, GL memory object, CL buffer); the exporter's side
        is freed afterwards when ``release_exporter`` (the imports keep the payload alive)."""
        vk_buffer, vk_memory, alloc = self.exporter.allocate(nbytes)
        fd = self.exporter.memory_fd(vk_memory)
        try:
            memobj = GlMemoryObject(label, os.dup(fd), alloc)  # closes its dup itself where the import fails
            name = GL.GLuint()
            try:
                GL.glCreateBuffers(1, ctypes.byref(name))
                _gl_fn("glNamedBufferStorageMemEXT")(name.value, nbytes, memobj.name, 0)
                check_gl(f"GL import of {label}")
                cl_fd = os.dup(fd)
                try:
                    mem = clext.import_memory_fd(self.context, self.device, cl_fd, nbytes, cl.mem_flags.READ_WRITE)
                except cl.Error as exc:
                    close_fd(cl_fd)  # a failed import leaves the fd the application's
                    raise ClError.from_pyopencl(exc, f"clCreateBufferWithProperties({label})") from exc
            except Exception as exc:
                if name.value:
                    with contextlib.suppress(Exception):
                        GL.glDeleteBuffers(1, [name.value])
                memobj.release()
                _reraise(exc, f"GL import of {label}")
            # 5.5.2.1 (OPAQUE_FD): the fd of a successful import is the implementation's; glshare never
            # closes it, on any implementation (handles.closer)
            self.cl_took_fd = handles.closer("OPAQUE_FD", imported=True) == "importer"
        finally:
            self.fds_closed += close_fd(fd)
            if self.release_exporter:
                self.exporter.free(vk_buffer, vk_memory)
        if not self.release_exporter:
            self._kept.append((vk_buffer, vk_memory))
        return name.value, memobj, mem

    def _new_buffer(self, label: str, nbytes: int, access: str) -> SharedObject:
        name, memobj, mem = self._import(label, nbytes)
        gl = GlBuffer.wrap(label, name, nbytes, owner=self.name)
        return self._wrap(gl, mem, access, owned=[memobj])

    def _new_texture(self, label: str, width: int, height: int, fmt, access: str,
                     drawn_by_quad: bool) -> SharedObject:
        """A texture whose storage is an imported pitched buffer CL writes (see the module docstring):
        ``obj.gl`` is a ``GlBufferTexture`` over it where the caller draws it with the quad and GL's
        rules allow, else a ``GlTexture`` filled by a copy after each release."""
        bpp = fmt.texel_bytes
        from_buffer = "cl_khr_image2d_from_buffer" in self.env.device_extensions
        align = bpp
        if from_buffer:
            # rows a multiple of CL_DEVICE_IMAGE_PITCH_ALIGNMENT pixels; queried by number because not
            # every pyopencl has Device.image_pitch_alignment
            got = clext.device_info_u32_list(self.device, CL_DEVICE_IMAGE_PITCH_ALIGNMENT) or [1]
            align *= max(1, got[0])
        pitch = -(-width * bpp // align) * align
        path = display_path(fmt.internal_format, bpp, width, height, pitch, asked=drawn_by_quad,
                            max_texels=max_texture_buffer_texels())
        if access == "read_only" and path != BUFFER_TEXTURE:  # GL writes it, CL reads it: the copy goes the other way
            path = READ_BY_CL
        name, memobj, buf = self._import(f"{label}.buffer", pitch * height)
        imported = GlBuffer.wrap(f"{label}.buffer", name, pitch * height, target=GL.GL_PIXEL_UNPACK_BUFFER,
                                 owner=self.name)
        tex = None
        try:
            if path == BUFFER_TEXTURE:
                tex = GlBufferTexture(label, imported, width, height, pitch, fmt=fmt, owner=self.name)
            else:
                tex = GlTexture(label, width, height, fmt=fmt, owner=self.name)
            check_gl(f"{label} ({path})")
            if from_buffer:
                desc = cl.ImageDescriptor()
                desc.image_type = cl.mem_object_type.IMAGE2D
                desc.shape = (width, height)
                desc.pitches = (pitch,)
                desc.buffer = buf
                try:
                    image = cl.Image(self.context, ACCESS_FLAGS[access], cl_image_format(fmt), desc=desc)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"image2d from buffer ({label})") from exc
            else:
                # no cl_khr_image2d_from_buffer (NVIDIA lists none): kernels write the pitched buffer
                # itself (SharedObject.row_pitch tells them the row length)
                image = buf
        except BaseException:
            buf.release()
            if tex is not None:
                tex.release()  # the texture before the buffer it may read
            imported.release()
            memobj.release()
            raise
        # storage: the imported buffer, GL's view of the memory CL writes (copied from on the copy
        # path; named by the semaphores; uploads go into it)
        obj = self._wrap(tex, image, access, handover=buf if image is not buf else None, storage=imported,
                         row_pitch=pitch, display_path=path, owned=[imported, memobj])
        log.debug("%s %dx%d, row pitch %d B: %s", label, width, height, pitch, path)
        return obj

    def _upload(self, obj: SharedObject, data) -> None:
        """Imported storage is immutable (no glBufferSubData): GL copies from a staging buffer."""
        tmp = GL.GLuint()
        GL.glCreateBuffers(1, ctypes.byref(tmp))
        GL.glNamedBufferData(tmp.value, data.nbytes, data, GL.GL_STREAM_COPY)
        # into the imported buffer itself: for a texture obj.gl is the texture (or the buffer texture)
        GL.glCopyNamedBufferSubData(tmp.value, obj.gl_memory, 0, 0, data.nbytes)
        GL.glDeleteBuffers(1, [tmp.value])
        check_gl(f"upload {obj.label}")

    # -- acquire / release ------------------------------------------------------------------------
    def gl_before_acquire(self, objects) -> None:
        """GL's side of the hand-over of a 2D texture GL wrote (rendered into) that CL reads: a GPU
        copy of the texture into its imported buffer, only where GL changed it since the last copy
        (``gl_generation``). Buffers, buffer textures and write-only textures need nothing."""
        # packed into a plain GL buffer, then copied buffer to buffer into the imported memory: packed
        # straight into it (glGetTexImage into the imported buffer), CL reads the frame before's
        # data on NVIDIA's driver 580, with finish and with semaphore sync alike; buffer copies it sees
        self.gpu_bytes_copied += self._copy_written_textures(objects, staging=self._pack_staging)

    def _enqueue_acquire(self, queue, objects, wait_for, event=True):
        return self._acquire_call(queue, [o.handover_mem for o in objects], wait_for, event)

    def _enqueue_release(self, queue, objects, wait_for, event=True):
        return self._release_call(queue, [o.handover_mem for o in objects], wait_for, event)

    def native_hand_over(self, queue, objects, event):
        mems = [o.handover_mem for o in objects]
        acquire_out, release_out = (clext.vp(), clext.vp()) if event else (None, None)
        return ([self._acquire_call.prepared(queue, mems, acquire_out)],
                [self._release_call.prepared(queue, mems, release_out)], acquire_out, release_out)

    def gl_after_release(self, objects) -> None:
        """GL's side of a texture hand-over on the copy path: shared buffer -> texture, on the GPU
        (after the sync). Buffer textures read the shared buffer itself: nothing to do for them."""
        for obj in objects:
            if obj.storage is None or isinstance(obj.gl, GlBufferTexture) or obj.access == "read_only":
                continue
            texture_from_unpack_buffer(obj.gl, obj.storage.name, obj.row_pitch)
            self.gpu_bytes_copied += obj.nbytes

    def memory_tab(self) -> dict:
        """The lifetime of the payload the panel's Memory tab shows."""
        return {"exporter_released": self.release_exporter, "fds_closed": self.fds_closed,
                "cl_took_fd_ownership": self.cl_took_fd, "open_fds": clext.open_fds(collect=False),
                "holders": "GL memory object + CL buffer (each import holds a reference to the payload)",
                "display_paths": {o.label: o.display_path for o in self.objects if o.display_path},
                "gpu_bytes_copied": self.gpu_bytes_copied}

    def _unshare(self, obj: SharedObject) -> None:
        staging = self._pack_staging.pop(id(obj), None)
        if staging is not None:
            staging.release()
        super()._unshare(obj)

    def _close_extra(self) -> None:
        for vk_buffer, vk_memory in self._kept:
            self.exporter.free(vk_buffer, vk_memory)
        self._kept = []  # the exporter itself is the process's (vulkan.shared_exporter)
