"""external_memory: Vulkan-exported memory and semaphores, imported by GL and by CL (zero-copy).

Where cl_khr_gl_sharing is absent (NVIDIA's H200 driver, ../shared/gpu/README.md) GL and CL can
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
texture and recorded as ``obj.private["display_path"]`` (``lifetime()["display_paths"]``):
  - "buffer texture": GL samples the imported buffer itself, a GL_TEXTURE_BUFFER over it
    (``GlBufferTexture``, drawn by ``BufferTextureQuad`` with texelFetch at y * row_length + x);
    nothing is copied per frame. Taken when the caller asks (``create_texture(buffer_texture=True)``,
    the image scene) and GL's buffer-texture rules allow it (``buffer_texture_refusal``).
  - "copy into texture: <why not a buffer texture>": after the release GL copies the buffer into
    a 2D texture on the GPU (glTexSubImage2D from GL_PIXEL_UNPACK_BUFFER, ``gl_after_release``), for
    callers that sample a 2D texture (the yuv scene) or images a buffer texture cannot hold. With
    that copy of a 4096x4096 RGBA8 frame (64 MiB) and one quad, the H200's frame was 2.17 ms, 1.74 of
    them glFinish waiting for that GL work (how it splits between the two was not measured), against
    a 73 us kernel (bench/results/2026-12-01-gpu-h200-nvidia-quick.json).
"""
from __future__ import annotations

import ctypes
import logging
import os

import pyopencl as cl
from OpenGL import GL

from app.cl import ext as clext
from app.diagnostics import live
from app.errors import ClError, GlError, SharingUnavailable
from app.gl.context import check_gl
from app.gl.objects import (
    BUFFER_TEXTURE_FORMATS,
    GlBuffer,
    GlBufferTexture,
    GlTexture,
    buffer_texture_refusal,
    max_texture_buffer_texels,
    texel_bytes,
)
from app.sharing.backends.external_memory.vulkan import close_fd, shared_exporter
from app.sharing.backends.host_copy import cl_image_format_for
from app.sharing.base import ACCESS_FLAGS, Probe, ProbeEnv, SharedObject, SharingBackend, SyncStrategy

log = logging.getLogger(__name__)

GL_HANDLE_TYPE_OPAQUE_FD_EXT = 0x9586
CL_EXTENSIONS = ("cl_khr_external_memory", "cl_khr_external_memory_opaque_fd")
CL_SEMAPHORE_EXTENSIONS = ("cl_khr_semaphore", "cl_khr_external_semaphore", "cl_khr_external_semaphore_opaque_fd")
GL_EXTENSIONS = ("GL_EXT_memory_object", "GL_EXT_memory_object_fd")
GL_SEMAPHORE_EXTENSIONS = ("GL_EXT_semaphore", "GL_EXT_semaphore_fd")
CL_DEVICE_UUID_KHR = 0x106A
CL_DEVICE_IMAGE_PITCH_ALIGNMENT = 0x104A
BUFFER_TEXTURE = "buffer texture"  # obj.private["display_path"] when GL samples the imported buffer


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


def _gl_fn(name: str):
    from OpenGL.GL.EXT import memory_object, memory_object_fd, semaphore, semaphore_fd

    for mod in (memory_object, memory_object_fd, semaphore, semaphore_fd):
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(name)


class GlMemoryObject:
    """A GL memory object holding an imported payload (GL_EXT_memory_object)."""

    def __init__(self, label: str, fd: int, size: int) -> None:
        self.label = label
        name = GL.GLuint()
        _gl_fn("glCreateMemoryObjectsEXT")(1, ctypes.byref(name))
        self.name = name.value
        _gl_fn("glImportMemoryFdEXT")(self.name, size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd)  # GL now owns fd
        live.created("gl_memory_object", "external_memory")

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            _gl_fn("glDeleteMemoryObjectsEXT")(1, (GL.GLuint * 1)(name))
            live.released("gl_memory_object", "external_memory")


class ExternalMemory(SharingBackend):
    name = "external_memory"
    zero_copy = True
    rule_set = "external_memory"  # [spec] checked against cl_khr_external_memory's error lists
    sync_modes = ("finish", "semaphore", "none")
    release_exporter = True  # free Vulkan's allocation once GL and CL imported it (lifetime demo)
    buffer_texture_display = True  # create_texture(buffer_texture=True): GL may sample the imported buffer

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
        try:
            shared_exporter(_cl_uuid(dev))  # kept for the backend (one exporter per process)
        except SharingUnavailable as exc:
            return Probe(cls.name, False, exc.reason)
        return Probe(cls.name, True, "Vulkan exports opaque-fd memory; GL and CL import it; zero-copy")

    @classmethod
    def sync_probe(cls, env: ProbeEnv, mode: str) -> str | None:
        if mode == "gl_event":
            return ("gl_event needs a CL context created from the GL context (cl_khr_gl_sharing); external_memory "
                    "uses a plain one, where clCreateEventFromGLsyncKHR crashed NVIDIA's driver")
        if mode != "semaphore":
            return super().sync_probe(env, mode)
        missing = [e for e in CL_SEMAPHORE_EXTENSIONS if e not in env.device_extensions]
        missing += [e for e in GL_SEMAPHORE_EXTENSIONS if not env.gl_info.has(e)]
        if missing:
            return f"missing {', '.join(missing)}"
        types = clext.device_info_u32_list(env.choice.device, clext.CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR) or []
        if clext.CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR not in types:
            return "the CL device imports no OPAQUE_FD semaphores"
        return None

    def _create_context(self) -> cl.Context:
        ctx = cl.Context([self.device])
        self.exporter = shared_exporter(_cl_uuid(self.device))
        self.ext = clext.ExtensionFunctions(self.env.choice.platform)
        self.cl_took_fd = None  # learnt at the first import: does CL close the fd it was given?
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
            memobj = GlMemoryObject(label, os.dup(fd), alloc)
            name = GL.GLuint()
            GL.glCreateBuffers(1, ctypes.byref(name))
            _gl_fn("glNamedBufferStorageMemEXT")(name.value, nbytes, memobj.name, 0)
            try:
                check_gl(f"GL import of {label}")
            except GlError:
                GL.glDeleteBuffers(1, [name.value])
                memobj.release()
                raise
            cl_fd = os.dup(fd)
            try:
                mem = clext.import_memory_fd(self.context, self.device, cl_fd, nbytes, cl.mem_flags.READ_WRITE)
            except cl.Error as exc:
                GL.glDeleteBuffers(1, [name.value])
                memobj.release()
                close_fd(cl_fd)
                raise ClError.from_pyopencl(exc, f"clCreateBufferWithProperties({label})") from exc
            # cl_khr_external_memory: importing does not transfer the fd (as with the NT handles of
            # the spec text); we close our dup. If the driver did take it, close() says so.
            closed = close_fd(cl_fd)
            self.cl_took_fd = not closed
            self.fds_closed += closed
        finally:
            self.fds_closed += close_fd(fd)
            if self.release_exporter:
                self.exporter.free(vk_buffer, vk_memory)
        if not self.release_exporter:
            self._kept.append((vk_buffer, vk_memory))
        return name.value, memobj, mem

    def create_buffer(self, label: str, nbytes: int, *, access: str = "read_write", data=None) -> SharedObject:
        name, memobj, mem = self._import(label, nbytes)
        gl = GlBuffer.wrap(label, name, nbytes, owner=self.name)
        obj = self._adopt(gl, mem, access, "cl_buffer")
        obj.private["gl_extra"] = [memobj]
        obj.private["acquire_mem"] = mem
        if data is not None:
            self.upload(obj, data)
        return obj

    def create_texture(self, label: str, width: int, height: int, *, internal_format: int = GL.GL_RGBA8,
                       fmt: int = GL.GL_RGBA, dtype: int = GL.GL_UNSIGNED_BYTE,
                       access: str = "write_only", buffer_texture: bool = False) -> SharedObject:
        """A texture whose storage is an imported pitched buffer CL writes (see the module docstring).

        Args:
            buffer_texture: the caller can draw a ``GlBufferTexture`` (``BufferTextureQuad``): where
                ``display_path`` allows, ``obj.gl`` is one over the imported buffer and nothing is
                copied after the release; otherwise ``obj.gl`` is a ``GlTexture`` filled by a copy.
        Returns:
            The shared object; ``private["display_path"]`` says which GL object it is and why.
        """
        bpp = texel_bytes(fmt, dtype)
        from_buffer = "cl_khr_image2d_from_buffer" in self.env.device_extensions
        align = bpp
        if from_buffer:
            # rows a multiple of CL_DEVICE_IMAGE_PITCH_ALIGNMENT pixels; queried by number because not
            # every pyopencl has Device.image_pitch_alignment
            got = clext.device_info_u32_list(self.device, CL_DEVICE_IMAGE_PITCH_ALIGNMENT) or [1]
            align *= max(1, got[0])
        pitch = -(-width * bpp // align) * align
        path = display_path(internal_format, bpp, width, height, pitch, asked=buffer_texture,
                            max_texels=max_texture_buffer_texels())
        name, memobj, buf = self._import(f"{label}.buffer", pitch * height)
        imported = GlBuffer.wrap(f"{label}.buffer", name, pitch * height, target=GL.GL_PIXEL_UNPACK_BUFFER,
                                 owner=self.name)
        tex = None
        try:
            if path == BUFFER_TEXTURE:
                tex = GlBufferTexture(label, imported, width, height, pitch, internal_format=internal_format,
                                      fmt=fmt, dtype=dtype, owner=self.name)
            else:
                tex = GlTexture(label, width, height, internal_format=internal_format, fmt=fmt, dtype=dtype,
                                owner=self.name)
            check_gl(f"{label} ({path})")
            if from_buffer:
                desc = cl.ImageDescriptor()
                desc.image_type = cl.mem_object_type.IMAGE2D
                desc.shape = (width, height)
                desc.pitches = (pitch,)
                desc.buffer = buf
                try:
                    image = cl.Image(self.context, ACCESS_FLAGS[access], cl_image_format_for(tex), desc=desc)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"image2d from buffer ({label})") from exc
                kind = "cl_image"
            else:
                # no cl_khr_image2d_from_buffer (NVIDIA lists none): kernels write the pitched buffer
                # itself (SharedObject.row_pitch tells them the row length)
                image, kind = buf, "cl_buffer"
        except BaseException:
            buf.release()
            if tex is not None:
                tex.release()  # the texture before the buffer it may read
            imported.release()
            memobj.release()
            raise
        obj = self._adopt(tex, image, access, kind)
        # "staging": the imported buffer, GL's view of the memory CL writes (copied from on the copy
        # path; named by the semaphores; the yuv scene copies its uploads into it)
        obj.private.update(gl_extra=[imported, memobj], acquire_mem=buf, pitch=pitch, staging=imported,
                           display_path=path)
        obj.row_pitch = pitch
        log.debug("%s %dx%d, row pitch %d B: %s", label, width, height, pitch, path)
        return obj

    def _share_buffer(self, gl, access):
        raise SharingUnavailable(self.name, "an existing GL buffer cannot be shared: its storage must come "
                                 "from imported memory (use create_buffer)")

    def _share_texture(self, gl, access):
        raise SharingUnavailable(self.name, "an existing GL texture cannot be shared: use create_texture")

    def upload(self, obj: SharedObject, data) -> None:
        """Imported storage is immutable (no glBufferSubData): GL copies from a staging buffer."""
        self.tracker.gl_use([obj], "upload")
        tmp = GL.GLuint()
        GL.glCreateBuffers(1, ctypes.byref(tmp))
        GL.glNamedBufferData(tmp.value, data.nbytes, data, GL.GL_STREAM_COPY)
        # into the imported buffer itself: for a texture obj.gl is the texture (or the buffer texture)
        dest = obj.private["staging"].name if "staging" in obj.private else obj.gl.name
        GL.glCopyNamedBufferSubData(tmp.value, dest, 0, 0, data.nbytes)
        GL.glDeleteBuffers(1, [tmp.value])
        obj.gl_wrote()
        check_gl(f"upload {obj.label}")

    def _unshare(self, obj: SharedObject) -> None:
        obj.mem.release()
        buf = obj.private.get("acquire_mem")
        if buf is not None and buf is not obj.mem:
            buf.release()

    # -- acquire / release ------------------------------------------------------------------------
    def _enqueue_acquire(self, queue, objects, wait_for):
        mems = [o.private["acquire_mem"] for o in objects]
        return clext.enqueue_acquire_external(self.ext, queue, mems, wait_for)

    def _enqueue_release(self, queue, objects, wait_for):
        mems = [o.private["acquire_mem"] for o in objects]
        return clext.enqueue_release_external(self.ext, queue, mems, wait_for)

    def gl_after_release(self, objects) -> None:
        """GL's side of a texture hand-over on the copy path: shared buffer -> texture, on the GPU
        (after the sync). Buffer textures read the shared buffer itself: nothing to do for them."""
        for obj in objects:
            staging = obj.private.get("staging")
            if staging is None or isinstance(obj.gl, GlBufferTexture):
                continue
            tex = obj.gl
            GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, staging.name)
            GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, obj.private["pitch"] // tex.bytes_per_pixel)
            GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
            GL.glBindTexture(GL.GL_TEXTURE_2D, tex.name)
            GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, tex.width, tex.height, tex.format, tex.dtype,
                               ctypes.c_void_p(0))
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, 0)
            GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)

    def gl_buffer_names(self, objects) -> list[int]:
        """The GL buffers backed by imported memory (what GL semaphore operations name)."""
        out = []
        for obj in objects:
            out.append(obj.private["staging"].name if "staging" in obj.private else obj.gl.name)
        return out

    def make_sync(self, mode: str) -> SyncStrategy:
        if mode == "semaphore":
            reason = self.sync_unavailable_reason(mode)
            if reason:
                raise SharingUnavailable("sync semaphore", reason)
            return SemaphoreSync(self)
        return super().make_sync(mode)

    def lifetime(self) -> dict:
        """What the panel's lifetime demonstration shows."""
        return {"exporter_released": self.release_exporter, "fds_closed": self.fds_closed,
                "cl_took_fd_ownership": self.cl_took_fd, "open_fds": clext.open_fds(collect=False),
                "holders": "GL memory object + CL buffer (each import holds a reference to the payload)",
                "display_paths": {o.label: o.private["display_path"] for o in self.objects
                                  if "display_path" in o.private}}

    def _close_extra(self) -> None:
        for vk_buffer, vk_memory in self._kept:
            self.exporter.free(vk_buffer, vk_memory)
        self._kept = []  # the exporter itself is the process's (vulkan_export.shared_exporter)


class SemaphoreSync(SyncStrategy):
    """Binary semaphores exported by Vulkan, imported by GL (GL_EXT_semaphore_fd) and CL
    (cl_khr_external_semaphore_opaque_fd). GL signals ``gl_done`` when its commands on the shared
    objects are issued and CL waits on it before the acquire; CL signals ``cl_done`` after the
    release and GL waits on it before using the objects. No CPU wait per frame."""

    name = "semaphore"

    def __init__(self, backend: ExternalMemory) -> None:
        super().__init__(backend)
        self._vk: list = []
        self.gl_done_gl, self.gl_done_cl = self._make("gl_done")
        self.cl_done_gl, self.cl_done_cl = self._make("cl_done")
        check_gl("semaphore import")

    def _make(self, label: str):
        b = self.backend
        vk_sem, fd = b.exporter.semaphore()
        self._vk.append(vk_sem)
        cl_fd = os.dup(fd)
        try:
            cl_sem = clext.Semaphore(b.ext, b.context, b.device, cl_fd, label)
        except cl.Error as exc:
            close_fd(fd)
            close_fd(cl_fd)
            raise ClError.from_pyopencl(exc, f"clCreateSemaphoreWithPropertiesKHR({label})") from exc
        close_fd(cl_fd)
        name = GL.GLuint()
        _gl_fn("glGenSemaphoresEXT")(1, ctypes.byref(name))
        _gl_fn("glImportSemaphoreFdEXT")(name.value, GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd)  # GL owns fd now
        live.created("gl_semaphore", "external_memory")
        return name.value, cl_sem

    def _buffers(self):
        names = self.backend.gl_buffer_names(self.backend.objects)
        return len(names), (GL.GLuint * max(1, len(names)))(*names)

    def before_acquire(self, waits: list) -> list[cl.Event]:
        n, bufs = self._buffers()
        layouts = (GL.GLenum * 1)(0)
        _gl_fn("glSignalSemaphoreEXT")(self.gl_done_gl, n, bufs, 0, None, layouts)
        GL.glFlush()
        return [self.gl_done_cl.enqueue_wait(self.backend.queue)]

    def after_release(self, queue, release_event, waits) -> None:
        self.cl_done_cl.enqueue_signal(queue, [release_event] if release_event is not None else None)
        queue.flush()
        n, bufs = self._buffers()
        layouts = (GL.GLenum * 1)(0)
        _gl_fn("glWaitSemaphoreEXT")(self.cl_done_gl, n, bufs, 0, None, layouts)

    def close(self) -> None:
        for cl_sem in (self.gl_done_cl, self.cl_done_cl):
            cl_sem.release()
        for name in (self.gl_done_gl, self.cl_done_gl):
            if name:
                _gl_fn("glDeleteSemaphoresEXT")(1, (GL.GLuint * 1)(name))
                live.released("gl_semaphore", "external_memory")
        self.gl_done_gl = self.cl_done_gl = 0
        for sem in self._vk:
            self.backend.exporter.destroy_semaphore(sem)
        self._vk = []
