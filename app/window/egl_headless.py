"""Headless GL: an EGL context with no window, drawing into an FBO (same interface as the window).

Tries, in order, Mesa's surfaceless platform, the EGL device platform and the default display
(NVIDIA's EGL, driver 580, answers the last two); the context is made current without a
surface where EGL_KHR_surfaceless_context is listed, else on a 16x16 pbuffer.
"""
from __future__ import annotations

import ctypes
import logging
import os

import numpy as np
from OpenGL import EGL, platform
from OpenGL.EGL.EXT.device_base import eglQueryDevicesEXT
from OpenGL.EGL.EXT.platform_base import eglGetPlatformDisplayEXT

from app.errors import GlshareError
from app.gl import api as GL
from app.gl.raw import gl_function
from app.window import KeyEvent, gl_max_framebuffer

log = logging.getLogger(__name__)

EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_PLATFORM_DEVICE_EXT = 0x313F


def _ptr_value(p) -> int:
    if p is None:
        return 0
    if isinstance(p, int):
        return p
    return ctypes.cast(p, ctypes.c_void_p).value or 0


def initialize_display(name: str) -> bool:
    """``eglInitialize`` the display of platform ``name`` (one of ``EglSurface._candidates()``:
    "surfaceless" or "default"; the device platform needs its device query first: not done here)
    through plain ctypes calls, which let the GIL go: a thread's work beside the imports
    (app/commands/run.py). Mesa loads its driver there; ``EglSurface`` gets the same display later
    and finds it initialized (EGL: initializing an initialized display does nothing more). Errors
    are not raised (the surface meets them again and says so); returns whether it was initialized."""
    lib = platform.PLATFORM.EGL
    vp = ctypes.c_void_p
    try:
        if name == "default":
            dpy = ctypes.CFUNCTYPE(vp, vp)(("eglGetDisplay", lib))(None)
        elif name == "surfaceless":
            address = ctypes.CFUNCTYPE(vp, ctypes.c_char_p)(("eglGetProcAddress", lib))(b"eglGetPlatformDisplayEXT")
            if not address:
                return False
            dpy = ctypes.CFUNCTYPE(vp, ctypes.c_uint32, vp, vp)(address)(EGL_PLATFORM_SURFACELESS_MESA, None, None)
        else:
            return False
        if not dpy:
            return False
        major, minor = ctypes.c_int32(), ctypes.c_int32()
        init = ctypes.CFUNCTYPE(ctypes.c_uint32, vp, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32))
        return bool(init(("eglInitialize", lib))(dpy, ctypes.byref(major), ctypes.byref(minor)))
    except (OSError, AttributeError):
        return False


class EglSurface:
    """An EGL GL context and an RGBA8 + depth FBO of the requested size."""

    kind = "headless"
    gl_platform = "egl"

    def __init__(self, size: tuple[int, int]) -> None:
        self.label = "headless EGL surface"
        # whatever was current before (another surface, in tests and the bench) is made current
        # again by close(); the EGLDisplay is shared, so it is never terminated here
        self._previous = (EGL.eglGetCurrentDisplay(), EGL.eglGetCurrentSurface(EGL.EGL_DRAW),
                          EGL.eglGetCurrentSurface(EGL.EGL_READ), EGL.eglGetCurrentContext())
        self._display = None
        self._context = None
        self._pbuffer = EGL.EGL_NO_SURFACE
        self.egl_platform = ""
        errors = []
        for name in self._candidates():
            try:
                self._open(name)
                self.egl_platform = name
                break
            except GlshareError as exc:
                errors.append(f"{name}: {exc.one_line()}")
                self._terminate()
        else:
            raise GlshareError("no EGL display gave a GL 3.3 core context (" + "; ".join(errors) + ")",
                               where="eglInitialize")
        self._fbo = 0
        self._color = 0
        self._depth = 0
        self._size = (0, 0)
        self._max_size: tuple[int, int] | None = None
        self.resize(*size)

    # -- EGL set-up ---------------------------------------------------------------------------
    @staticmethod
    def _candidates() -> list[str]:
        forced = os.environ.get("GLSHARE_EGL_PLATFORM")
        if forced:
            return [forced]
        client = EGL.eglQueryString(EGL.EGL_NO_DISPLAY, EGL.EGL_EXTENSIONS) or b""
        names = []
        if b"EGL_MESA_platform_surfaceless" in client:
            names.append("surfaceless")
        if b"EGL_EXT_platform_device" in client:
            names.append("device")
        names.append("default")
        return names

    def _get_display(self, name: str):
        if name == "default":
            return EGL.eglGetDisplay(EGL.EGL_DEFAULT_DISPLAY)
        if name == "surfaceless":
            return eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, None, None)
        devices = (EGL.EGLDeviceEXT * 8)()
        count = EGL.EGLint()
        if not eglQueryDevicesEXT(8, devices, ctypes.pointer(count)) or count.value == 0:
            raise GlshareError("eglQueryDevicesEXT found no device", where="eglQueryDevicesEXT")
        return eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devices[0], None)

    def _open(self, name: str) -> None:
        dpy = self._get_display(name)
        if not _ptr_value(dpy):
            raise GlshareError("no display", where="eglGetDisplay")
        major, minor = EGL.EGLint(), EGL.EGLint()
        if not EGL.eglInitialize(dpy, ctypes.pointer(major), ctypes.pointer(minor)):
            raise GlshareError(f"eglInitialize failed (0x{EGL.eglGetError():04X})", where="eglInitialize")
        self._display = dpy
        extensions = (EGL.eglQueryString(dpy, EGL.EGL_EXTENSIONS) or b"").decode()
        surfaceless = "EGL_KHR_surfaceless_context" in extensions
        EGL.eglBindAPI(EGL.EGL_OPENGL_API)
        attrs = [EGL.EGL_RENDERABLE_TYPE, EGL.EGL_OPENGL_BIT, EGL.EGL_RED_SIZE, 8, EGL.EGL_GREEN_SIZE, 8,
                 EGL.EGL_BLUE_SIZE, 8]
        attrs += [EGL.EGL_SURFACE_TYPE, 0 if surfaceless else EGL.EGL_PBUFFER_BIT, EGL.EGL_NONE]
        config = EGL.EGLConfig()
        n = EGL.EGLint()
        ok = EGL.eglChooseConfig(dpy, (EGL.EGLint * len(attrs))(*attrs), ctypes.pointer(config), 1, ctypes.pointer(n))
        if not ok or n.value < 1:
            raise GlshareError("no EGL config with OpenGL", where="eglChooseConfig")
        context = EGL.EGL_NO_CONTEXT
        for version in ((4, 6), (4, 5), (3, 3)):
            cattrs = [EGL.EGL_CONTEXT_MAJOR_VERSION, version[0], EGL.EGL_CONTEXT_MINOR_VERSION, version[1],
                      EGL.EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL.EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL.EGL_NONE]
            try:
                context = EGL.eglCreateContext(dpy, config, EGL.EGL_NO_CONTEXT, (EGL.EGLint * len(cattrs))(*cattrs))
            except EGL.EGLError:  # EGL_BAD_MATCH: that version is not offered; try the next
                context = EGL.EGL_NO_CONTEXT
            if _ptr_value(context):
                break
        if not _ptr_value(context):
            raise GlshareError(f"eglCreateContext failed (0x{EGL.eglGetError():04X})", where="eglCreateContext")
        self._context = context
        if not surfaceless:
            pattrs = (EGL.EGLint * 5)(EGL.EGL_WIDTH, 16, EGL.EGL_HEIGHT, 16, EGL.EGL_NONE)
            self._pbuffer = EGL.eglCreatePbufferSurface(dpy, config, pattrs)
        if not EGL.eglMakeCurrent(dpy, self._pbuffer, self._pbuffer, context):
            raise GlshareError(f"eglMakeCurrent failed (0x{EGL.eglGetError():04X})", where="eglMakeCurrent")
        log.info("EGL %s platform: %s", name, GL.glGetString(GL.GL_VERSION).decode())

    def _terminate(self) -> None:
        if self._display is not None:
            EGL.eglMakeCurrent(self._display, EGL.EGL_NO_SURFACE, EGL.EGL_NO_SURFACE, EGL.EGL_NO_CONTEXT)
            if _ptr_value(self._context):
                EGL.eglDestroyContext(self._display, self._context)
            if _ptr_value(self._pbuffer):
                EGL.eglDestroySurface(self._display, self._pbuffer)
            dpy, draw, read, ctx = self._previous
            if _ptr_value(ctx):
                EGL.eglMakeCurrent(dpy, draw, read, ctx)
        self._display, self._context, self._pbuffer = None, None, EGL.EGL_NO_SURFACE

    def make_current(self) -> None:
        """Make this surface's context current again (after another surface's)."""
        EGL.eglMakeCurrent(self._display, self._pbuffer, self._pbuffer, self._context)

    # -- Surface ------------------------------------------------------------------------------
    @property
    def framebuffer_size(self) -> tuple[int, int]:
        return self._size

    def resize(self, width: int, height: int) -> None:
        """Re-create the FBO at the new size; 0 in either dimension leaves no pixels to draw; larger
        than GL allows (GL_MAX_RENDERBUFFER_SIZE, GL_MAX_VIEWPORT_DIMS) is clamped, with a warning."""
        width, height = max(0, int(width)), max(0, int(height))
        max_w, max_h = self.max_size
        if width > max_w or height > max_h:
            log.warning("a headless surface of %dx%d is larger than GL allows here (%dx%d): made %dx%d",
                        width, height, max_w, max_h, min(width, max_w), min(height, max_h))
            width, height = min(width, max_w), min(height, max_h)
        self._free_fbo()
        self._size = (width, height)
        if width == 0 or height == 0:
            return
        self._fbo = int(GL.glGenFramebuffers(1))
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, self._fbo)
        self._color, self._depth = (int(x) for x in GL.glGenRenderbuffers(2))
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, self._color)
        GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, GL.GL_RGBA8, width, height)
        GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER, self._color)
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, self._depth)
        GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, GL.GL_DEPTH_COMPONENT24, width, height)
        GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_DEPTH_ATTACHMENT, GL.GL_RENDERBUFFER, self._depth)
        status = GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER)
        if status != GL.GL_FRAMEBUFFER_COMPLETE:
            raise GlshareError(f"headless FBO {width}x{height} incomplete (0x{status:04X})", where="glCheckFramebufferStatus")
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, 0)

    @property
    def max_size(self) -> tuple[int, int]:
        """The largest FBO GL draws here, the panel's layer included (cached: the context does not change)."""
        if self._max_size is None:
            self._max_size = gl_max_framebuffer()
        return self._max_size

    def _free_fbo(self) -> None:
        if self._fbo:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
            GL.glDeleteFramebuffers(1, [self._fbo])
            GL.glDeleteRenderbuffers(2, [self._color, self._depth])
        self._fbo = self._color = self._depth = 0

    def should_close(self) -> bool:
        return False

    def poll_events(self) -> list[KeyEvent]:
        return []

    def mouse_events(self) -> list:
        return []

    @property
    def draw_framebuffer(self) -> int:
        return int(self._fbo or 0)

    @property
    def color_buffer(self) -> tuple[int, int, int] | None:
        return (self._color, GL.GL_RENDERBUFFER, GL.GL_RGBA8) if self._fbo else None

    def bind_target(self) -> bool:
        if not self._fbo:
            return False
        gl_function("glBindFramebuffer")(GL.GL_FRAMEBUFFER, self._fbo)  # every frame: straight through ctypes
        gl_function("glViewport")(0, 0, *self._size)
        return True

    def present(self) -> None:
        gl_function("glFlush")()

    def read_pixels(self) -> np.ndarray:
        w, h = self._size
        if not self._fbo:
            return np.zeros((h, w, 4), np.uint8)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, self._fbo)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        data = GL.glReadPixels(0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE)
        return np.frombuffer(data, np.uint8).reshape(h, w, 4)[::-1].copy()

    def set_vsync(self, on: bool) -> None:  # nothing is shown: no vertical sync to wait for
        return None

    def gl_sharing_properties(self) -> list[tuple[str, int]]:
        return [("GL_CONTEXT_KHR", _ptr_value(EGL.eglGetCurrentContext())),
                ("EGL_DISPLAY_KHR", _ptr_value(EGL.eglGetCurrentDisplay()))]

    def close(self) -> None:
        """Idempotent: frees the FBO and the EGL context."""
        if self._display is None:
            return
        self._free_fbo()
        self._terminate()
