"""The ImGui renderer: imgui-bundle's C++ OpenGL 3 backend, with its GLFW backend in a window.

Headless, the display size and time step are fed by hand, so the same panel code draws into the
FBO. The OpenGL 3 backend saves and restores the GL bindings around its draw. This is the only
module of ``ui/`` that touches GL; panel code draws from a snapshot.

The panel is redrawn at ``redraw_hz`` (5 by default), and at once after any mouse or keyboard
input, into a cached layer (an FBO) that is copied into every frame with glBlitFramebuffer, one
rectangle per ImGui window (the bounds of its draw list's vertices). ImGui's Python widgets, its
draw lists and, on llvmpipe, the rasterisation of a half-transparent window cost several
milliseconds of CPU; a blended full-window composite still cost llvmpipe about 7 ms a frame at
800x600, a blit of the windows' rectangles a fraction of that. Windows are therefore shown as
opaque (the layer is cleared to black). ``redraw_hz=0`` draws ImGui straight into every frame.
"""
from __future__ import annotations

import contextlib
import ctypes
import time

import numpy as np
from imgui_bundle import imgui, implot
from OpenGL import GL

from app.diagnostics import live


class _Layer:
    """The cached panel: an FBO with one RGBA8 colour texture of the framebuffer's size."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size
        self.rects: list[tuple[int, int, int, int]] = []  # GL window coordinates (x0, y0, x1, y1)
        self.texture = int(GL.glGenTextures(1))
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.texture)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MIN_FILTER, GL.GL_NEAREST)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAG_FILTER, GL.GL_NEAREST)
        GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, GL.GL_RGBA8, size[0], size[1], 0, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, None)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        self.fbo = int(GL.glGenFramebuffers(1))
        previous = GL.glGetIntegerv(GL.GL_DRAW_FRAMEBUFFER_BINDING)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, self.fbo)
        GL.glFramebufferTexture2D(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_TEXTURE_2D, self.texture, 0)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, int(previous))
        live.created("gl_texture", "ui")
        live.created("gl_framebuffer", "ui")

    def release(self) -> None:
        if not self.fbo:
            return
        GL.glDeleteFramebuffers(1, [self.fbo])
        GL.glDeleteTextures(1, [self.texture])
        self.fbo = self.texture = 0
        live.released("gl_texture", "ui")
        live.released("gl_framebuffer", "ui")

    def measure(self, draw_data) -> None:
        """One rectangle per draw list: the bounds of its vertices (ImDrawVert: pos, uv, col)."""
        w, h = self.size
        rects = []
        for dl in draw_data.cmd_lists:
            n = dl.vtx_buffer.size()
            if not n:
                continue
            raw = np.ctypeslib.as_array((ctypes.c_float * (n * 5)).from_address(dl.vtx_buffer.data_address()))
            pos = raw.reshape(n, 5)[:, :2]
            x0, y0 = np.floor(pos.min(axis=0)).astype(int)
            x1, y1 = np.ceil(pos.max(axis=0)).astype(int)
            x0, x1 = max(0, x0), min(w, x1)
            y0, y1 = max(0, y0), min(h, y1)
            if x1 > x0 and y1 > y0:
                rects.append((int(x0), int(h - y1), int(x1), int(h - y0)))  # ImGui y down -> GL y up
        self.rects = rects

    def clear(self) -> None:
        """Clear what the last redraw drew (all of it the first time): llvmpipe pays per pixel."""
        GL.glClearColor(0, 0, 0, 0)
        if not self.rects:
            GL.glClear(GL.GL_COLOR_BUFFER_BIT)
            return
        GL.glEnable(GL.GL_SCISSOR_TEST)
        for x0, y0, x1, y1 in self.rects:
            GL.glScissor(x0, y0, x1 - x0, y1 - y0)
            GL.glClear(GL.GL_COLOR_BUFFER_BIT)
        GL.glDisable(GL.GL_SCISSOR_TEST)

    def composite(self) -> None:
        target = int(GL.glGetIntegerv(GL.GL_DRAW_FRAMEBUFFER_BINDING))
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, self.fbo)
        for x0, y0, x1, y1 in self.rects:
            GL.glBlitFramebuffer(x0, y0, x1, y1, x0, y0, x1, y1, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, target)


class ImGuiLayer:
    def __init__(self, surface, redraw_hz: float = 5.0) -> None:
        self.surface = surface
        self._ctx = imgui.create_context()
        self._plot_ctx = implot.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")  # no imgui.ini written into the user's folder
        self.windowed = surface.kind == "window"
        # frames still to redraw: ImGui lays out a new or changed window over two frames (it hides a
        # window on its first frame to measure it), so input or a change asks for two redraws
        self.dirty = 2
        if self.windowed:
            # ours first: ImGui's GLFW backend chains the callbacks installed before it
            surface.on_input(self.mark_dirty)
            imgui.backends.glfw_init_for_opengl(surface.window_address, True)
        imgui.backends.opengl3_init("#version 330")
        self.redraw_interval_ns = int(1e9 / redraw_hz) if redraw_hz > 0 else 0
        self._layer: _Layer | None = None
        self._last = time.perf_counter()
        self._last_redraw_ns = 0
        self.redraws = 0
        self._open = True

    def mark_dirty(self, *_args) -> None:
        self.dirty = 2

    def draw(self, build, *, force: bool = False, span=None) -> bool:
        """Draw the UI over the bound framebuffer; returns True when ImGui ran (``build()`` was called).

        ``build()`` issues the widgets. Between redraws the cached layer is composited instead.
        ``span()``, a context manager, wraps the ImGui rendering only (the GL pass worth timing).
        """
        span = span or contextlib.nullcontext
        if not self.redraw_interval_ns:
            with span():
                self._imgui_frame(build)
            return True
        size = tuple(self.surface.framebuffer_size)
        now = time.perf_counter_ns()
        redraw = force or self.dirty > 0 or now - self._last_redraw_ns >= self.redraw_interval_ns
        if self._layer is None or self._layer.size != size:
            if self._layer is not None:
                self._layer.release()
            self._layer = _Layer(size)
            redraw = True
        if redraw:
            target = int(GL.glGetIntegerv(GL.GL_DRAW_FRAMEBUFFER_BINDING))
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, self._layer.fbo)
            GL.glViewport(0, 0, *size)
            self._layer.clear()
            try:
                with span():
                    self._layer.measure(self._imgui_frame(build))
            finally:
                GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, target)
                GL.glViewport(0, 0, *size)
            self._last_redraw_ns = now
            self.dirty = max(0, self.dirty - 1)
            self.redraws += 1
        self._layer.composite()
        return redraw

    def _imgui_frame(self, build):
        if self.windowed:
            imgui.backends.glfw_new_frame()
        else:
            io = imgui.get_io()
            io.display_size = tuple(float(x) for x in self.surface.framebuffer_size)
            now = time.perf_counter()
            io.delta_time = max(now - self._last, 1e-4)
            self._last = now
        imgui.backends.opengl3_new_frame()
        imgui.new_frame()
        try:
            build()
        finally:
            imgui.render()
        draw_data = imgui.get_draw_data()
        imgui.backends.opengl3_render_draw_data(draw_data)
        return draw_data

    @property
    def wants_keyboard(self) -> bool:
        return bool(imgui.get_io().want_capture_keyboard)

    def close(self) -> None:
        """Idempotent: GL objects of the renderer first, while the context is current."""
        if not self._open:
            return
        self._open = False
        if self._layer is not None:
            self._layer.release()
            self._layer = None
        imgui.backends.opengl3_shutdown()
        if self.windowed:
            imgui.backends.glfw_shutdown()
        implot.destroy_context(self._plot_ctx)
        imgui.destroy_context(self._ctx)
