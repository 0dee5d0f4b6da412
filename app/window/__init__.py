"""Where GL draws: a GLFW window or a headless EGL surface, both behind the ``Surface`` protocol.

PyOpenGL binds its platform (GLX or EGL) once, at its first import, from ``PYOPENGL_PLATFORM``
(../shared/PLATFORMS.md): ``select_platform`` must run before anything imports ``OpenGL``.
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from app.caches import mesa_shader_cache
from app.errors import GlshareError
from app.gl import api as GL


@dataclass(frozen=True)
class KeyEvent:
    key: str  # glfw key name in lower case: "s", "b", "space", "right", "escape", "f12" ...
    shift: bool = False


@dataclass(frozen=True)
class MouseEvent:
    """What the mouse did over the window since the last poll: a drag with the left button held
    ("drag": dx, dy pixels, y down) or wheel steps ("scroll": dy, positive away from the user)."""

    kind: str
    dx: float = 0.0
    dy: float = 0.0


class Surface(Protocol):
    """What the scene, the panel and the scheduler need from a drawing surface."""

    kind: str  # "window" or "headless"
    gl_platform: str  # "glx" or "egl": the GL binding CL sharing properties are built for
    label: str

    @property
    def framebuffer_size(self) -> tuple[int, int]: ...
    def should_close(self) -> bool: ...
    def poll_events(self) -> list[KeyEvent]: ...
    def mouse_events(self) -> list:
        """Mouse drags and wheel steps since the last poll (MouseEvent), for the scene's camera."""
    def bind_target(self) -> bool:
        """Bind the framebuffer to draw into; False when it has no pixels (minimized, 0x0)."""
    @property
    def draw_framebuffer(self) -> int:
        """The GL name ``bind_target`` binds (0: the window's default framebuffer), so nobody has to
        ask GL: a glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING) after a draw makes llvmpipe flush it
        (bench/results/README.md, 'Second session of 2026-12-01')."""
    @property
    def color_buffer(self) -> tuple[int, int, int] | None:
        """(GL name, GL_RENDERBUFFER or GL_TEXTURE_2D, internal format) of the colour buffer of
        ``draw_framebuffer``, single-sampled, or None where it has no name (a window's back buffer)."""
    def present(self) -> None: ...
    def read_pixels(self) -> np.ndarray:
        """The drawn frame as uint8 RGBA, H x W x 4, top row first."""
    def resize(self, width: int, height: int) -> None: ...
    def set_vsync(self, on: bool) -> None: ...
    def gl_sharing_properties(self) -> list[tuple[str, int]]:
        """(pyopencl context_properties name, value) pairs naming the current GL context."""
    def close(self) -> None: ...


@contextlib.contextmanager
def preserve_current_context():
    """Keep this thread's current GL context across a call that may change it.

    NVIDIA's driver 580 with headless EGL leaves no GL context current after a Vulkan
    instance/device is created or destroyed in the process, so later GL calls go nowhere (links
    fail without a log, extension entry points look absent). Vulkan work is wrapped in this.
    """
    if os.environ.get("PYOPENGL_PLATFORM") == "egl":
        from OpenGL import EGL  # PyOpenGL binds its platform at its first import: after select_platform

        saved = (EGL.eglGetCurrentDisplay(), EGL.eglGetCurrentSurface(EGL.EGL_DRAW),
                 EGL.eglGetCurrentSurface(EGL.EGL_READ), EGL.eglGetCurrentContext())
        try:
            yield
        finally:
            if EGL.eglGetCurrentContext() != saved[3] and saved[3]:
                EGL.eglMakeCurrent(*saved)
    else:
        from OpenGL import GLX  # PyOpenGL binds its platform at its first import: after select_platform

        saved = (GLX.glXGetCurrentDisplay(), GLX.glXGetCurrentDrawable(), GLX.glXGetCurrentContext())
        try:
            yield
        finally:
            if saved[2] and GLX.glXGetCurrentContext() != saved[2]:
                GLX.glXMakeCurrent(*saved)


def gl_max_framebuffer(limit: int | None = None) -> tuple[int, int]:
    """The largest framebuffer GL draws on the current context: GL_MAX_VIEWPORT_DIMS,
    GL_MAX_RENDERBUFFER_SIZE and GL_MAX_TEXTURE_SIZE (the panel's layer is a texture of the
    framebuffer's size), and ``limit`` (a window system's own, such as X's) where given."""
    vw, vh = (int(v) for v in GL.glGetIntegerv(GL.GL_MAX_VIEWPORT_DIMS))
    side = min(int(GL.glGetIntegerv(GL.GL_MAX_RENDERBUFFER_SIZE)), int(GL.glGetIntegerv(GL.GL_MAX_TEXTURE_SIZE)))
    if limit is not None:
        side = min(side, limit)
    return min(vw, side), min(vh, side)


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def select_platform(headless: bool) -> str:
    """Choose PyOpenGL's platform for this process: ``egl`` headless, ``glx`` for an X11 window.

    Raises GlshareError when OpenGL was already imported for the other platform.
    """
    want = "egl" if headless else "glx"
    if "OpenGL" in sys.modules:
        have = os.environ.get("PYOPENGL_PLATFORM", "glx")
        if have != want:
            raise GlshareError(
                f"PyOpenGL is already bound to {have}; a {'headless' if headless else 'window'} run "
                "needs its own process", where="select_platform")
        return have
    os.environ["PYOPENGL_PLATFORM"] = want
    mesa_shader_cache()  # Mesa reads its cache folder's variables when GL is loaded: before
    return want


def open_surface(headless: bool, size: tuple[int, int], title: str = "glshare", vsync: bool = False) -> Surface:
    """Open the window or the headless surface, with a current GL 3.3+ core context."""
    select_platform(headless)
    if headless:
        from app.window.egl_headless import EglSurface  # PyOpenGL's EGL: after select_platform

        return EglSurface(size)
    from app.window.glfw_window import GlfwWindow  # optional: GLFW only for a window

    return GlfwWindow(size, title=title, vsync=vsync)
