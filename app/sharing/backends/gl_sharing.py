"""gl_sharing: cl_khr_gl_sharing, zero-copy, through pyopencl's GL API.

The CL context is created with the properties naming the current GL context (GLX, EGL, WGL or
CGL); its device is the one clGetGLContextInfoKHR (CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR) names.
Acquire and release are clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects. Nothing here is
called unless the device lists cl_khr_gl_sharing: PoCL aborts the process on clCreateFromGLBuffer.
"""
from __future__ import annotations

import logging
import sys

import pyopencl as cl

from app.cl.device import GL_SHARING_EXTENSIONS
from app.cl.ext import ExtensionFunctions, create_event_from_gl_sync
from app.errors import ClError, SharingUnavailable, cl_error_name
from app.gl import api as GL
from app.gl.objects import GlBuffer, GlTexture
from app.sharing.base import ACCESS_FLAGS, Capabilities, Probe, ProbeEnv, SharingBackend
from app.sharing.sync import SyncMode

log = logging.getLogger(__name__)



def _gl_context_properties(env: ProbeEnv) -> list:
    """CL context properties for the current GL context. pyopencl's helper builds GLX, WGL and
    CGL; EGL (CL_EGL_DISPLAY_KHR) it does not, so the surface supplies the pairs itself."""
    if sys.platform in ("win32", "darwin"):
        from pyopencl.tools import get_gl_sharing_context_properties

        return get_gl_sharing_context_properties() + [(cl.context_properties.PLATFORM, env.choice.platform)]
    props = [(getattr(cl.context_properties, key), value) for key, value in env.surface.gl_sharing_properties()]
    return props + [(cl.context_properties.PLATFORM, env.choice.platform)]


def _refusal(env: ProbeEnv) -> str | None:
    """Every reason gl_sharing cannot work here, or None."""
    reasons = []
    if not cl.have_gl():
        reasons.append("pyopencl was built without GL support (pyopencl.have_gl() is False); rebuild it with "
                       "PYOPENCL_ENABLE_GL=1 pip install --no-binary pyopencl pyopencl")
    exts = env.device_extensions | frozenset(env.choice.platform.extensions.split())
    if not any(e in exts for e in GL_SHARING_EXTENSIONS):
        reasons.append(f"device {env.choice.device.name.strip()!r} ({env.choice.platform.name.strip()}) does not "
                       "list cl_khr_gl_sharing, so no GL-sharing entry point is called (PoCL aborts the process "
                       "on clCreateFromGLBuffer)")
    return "; and ".join(reasons) or None


class KhrGlSharing(SharingBackend):
    name = "gl_sharing"
    title = "cl_khr_gl_sharing: CL images and buffers made from GL objects, zero-copy"
    probe_order = 10
    capabilities = Capabilities(zero_copy=True, gl_context=True)
    teaching = {
        "acquire": "clEnqueueAcquireGLObjects: the driver hands the GL storage itself to CL (zero-copy).",
        "compute": "The kernel wrote into the GL object's storage.",
        "release": "clEnqueueReleaseGLObjects: the storage goes back to GL.",
        "render": "GL drew straight from the storage the kernel wrote.",
    }
    hazard_effects = {
        "skip_acquire": "Undefined behaviour ('These objects need to be acquired before they can be used by any "
                        "OpenCL commands ... or the behaviour is undefined'): many drivers keep drawing normally, "
                        "others show stale or torn frames or fail the kernel; GL's pending work is no longer "
                        "ordered before the kernel.",
        "skip_release": "GL draws objects CL still owns (undefined): with shared storage the picture often keeps "
                        "moving, but GL's reads are not ordered after the kernel: torn or stale frames.",
        "sync_none": "Without glFinish before the acquire (and no cl_khr_gl_event) the spec's ordering does not "
                     "hold: GL commands may still run when the kernel starts, and GL may draw before the kernel "
                     "ends: torn or stale frames where the driver does not synchronise implicitly.",
        "wrong_delete_order": "A scratch shared buffer's GL object is deleted before its CL memory object, which "
                              "still refers to storage GL may reuse: a kernel using it would write into whatever "
                              "GL allocates there next.",
        "unordered_render": "The kernel reads the texture's storage while GL is still rendering into it (nothing "
                            "orders GL's pass before the kernel: not glFinish, not the acquire): edges of a half "
                            "drawn frame, objects missing or doubled, bands of the background where the driver "
                            "does not serialise GL and CL by itself; the tracker flags the draw into an object "
                            "CL holds.",
    }

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        reason = _refusal(env)
        if reason:
            return Probe(cls.name, False, reason)
        try:
            cls._make_context(env)  # dropped at once: the backend makes its own
        except SharingUnavailable as exc:
            return Probe(cls.name, False, exc.reason)
        return Probe(cls.name, True, f"cl_khr_gl_sharing with a {env.surface.gl_platform.upper()} context, zero-copy")

    @staticmethod
    def _gl_device(env: ProbeEnv, props: list) -> cl.Device:
        """The device clGetGLContextInfoKHR names for the current GL context (where it answers),
        else the chosen one. Only reached when the device lists cl_khr_gl_sharing."""
        try:
            named = cl._cl.get_gl_context_info_khr(props, cl.gl_context_info.CURRENT_DEVICE_FOR_GL_CONTEXT_KHR,
                                                   env.choice.platform)
        except cl.Error as exc:
            log.info("clGetGLContextInfoKHR: %s; using the chosen device", cl_error_name(exc.code))
            return env.choice.device
        named = named[0] if isinstance(named, list) and named else named
        if isinstance(named, cl.Device):
            if named != env.choice.device:
                log.warning("the GL context runs on %s, not the chosen %s: sharing needs the GL device",
                            named.name.strip(), env.choice.device.name.strip())
            return named
        return env.choice.device

    @classmethod
    def _make_context(cls, env: ProbeEnv) -> tuple[cl.Context, cl.Device]:
        props = _gl_context_properties(env)
        device = cls._gl_device(env, props)
        try:
            return cl.Context(devices=[device], properties=props), device
        except cl.Error as exc:
            raise SharingUnavailable("gl_sharing", f"clCreateContext with {env.surface.gl_platform.upper()} GL "
                                     f"properties failed: {cl_error_name(exc.code)} ({exc.code})") from exc

    def _create_context(self) -> cl.Context:
        context, self.device = self._make_context(self.env)
        return context

    def _share_buffer(self, gl: GlBuffer, access: str):
        GL.glFinish()
        return cl.GLBuffer(self.context, ACCESS_FLAGS[access], gl.name)

    def _share_texture(self, gl: GlTexture, access: str):
        GL.glFinish()
        return cl.GLTexture(self.context, ACCESS_FLAGS[access], GL.GL_TEXTURE_2D, 0, gl.name, 2)

    def _enqueue_acquire(self, queue, objects, wait_for, event=True):
        return cl.enqueue_acquire_gl_objects(queue, [o.mem for o in objects], wait_for=wait_for)

    def _enqueue_release(self, queue, objects, wait_for, event=True):
        return cl.enqueue_release_gl_objects(queue, [o.mem for o in objects], wait_for=wait_for)


class GlEventSync(SyncMode):
    """cl_khr_gl_event: a GL fence becomes a CL event in acquire's wait list (no glFinish); the
    release is ordered before later GL commands by the extension's implicit synchronisation, and
    with GL_ARB_cl_event GL waits on the release's event on the GPU (glWaitSync)."""

    name = "gl_event"
    order = 20
    title = "GL fence as a CL event (cl_khr_gl_event)"
    explanation = ("A GL fence becomes a CL event the acquire waits on (no glFinish on the CPU); GL waits on the "
                   "release's event on the GPU where GL_ARB_cl_event allows.")

    bounded_run_ahead = True

    @classmethod
    def refusal(cls, backend, env) -> str | None:
        if not backend.capabilities.gl_context:
            return (f"gl_event needs cl_khr_gl_event on a CL context created from the GL context; {backend.name} "
                    "uses a plain context (and clCreateEventFromGLsyncKHR crashed NVIDIA's driver on one)")
        if "cl_khr_gl_event" not in env.device_extensions:
            return "the device does not list cl_khr_gl_event"
        return None

    def __init__(self, backend: KhrGlSharing) -> None:
        super().__init__(backend)
        self.ext = ExtensionFunctions(backend.env.choice.platform)
        self._fences: list = []

    def before_acquire(self, waits: list, shadow=None) -> list[cl.Event]:
        for fence in self._fences:  # the previous frame's fences are complete (its acquire waited)
            GL.glDeleteSync(fence)
        fence = GL.glFenceSync(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)
        GL.glFlush()
        self._fences = [fence]
        address = fence or 0  # app.gl.api's glFenceSync: the GLsync as an int (None: no fence)
        try:
            return [create_event_from_gl_sync(self.ext, self.backend.context, address)]
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, "clCreateEventFromGLsyncKHR") from exc

    def after_release(self, queue, release_event, waits, shadow=None) -> None:
        queue.flush()
        if release_event is not None and self.backend.env.gl_info.has("GL_ARB_cl_event"):
            sync = GL.glCreateSyncFromCLeventARB(self.backend.context.int_ptr, release_event.int_ptr, 0)
            GL.glWaitSync(sync, 0, GL.GL_TIMEOUT_IGNORED)
            GL.glDeleteSync(sync)

    def close(self) -> None:
        for fence in self._fences:
            GL.glDeleteSync(fence)
        self._fences = []

