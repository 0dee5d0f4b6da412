"""The ImGui renderer: imgui-bundle's C++ OpenGL 3 backend, with its GLFW backend in a window.

Headless, the display size and time step are fed by hand, so the same panel code draws into the
FBO. The OpenGL 3 backend saves and restores the GL bindings around its draw. This is the only
module of ``ui/`` that touches GL; panel code draws from a snapshot.

The panel is redrawn at ``redraw_hz`` (``default_panel_hz``: 5, or 2 on software GL), and at once
after any mouse or keyboard input, into a cached layer (an FBO) that is copied into every frame,
one rectangle per ImGui window (the bounds of its draw list's vertices, overlapping ones merged).
ImGui's Python widgets, its draw lists and, on llvmpipe, the rasterisation of the panel cost
about 11 ms of CPU a redraw at 800x600 (4 ms on the main thread, 7 on llvmpipe's threads); a
blended full-window composite still cost llvmpipe about 7 ms a frame, a copy of the windows'
rectangles a fraction of that. The copy is ``glCopyImageSubData`` (GL 4.3) where the frame's
colour buffer is a texture or renderbuffer of the layer's format (the headless FBO), a plain
memory copy on llvmpipe (0.39 ms for a 430x584 panel after a particles frame, against 0.40 for
``glBlitFramebuffer`` between the same RGBA8 buffers: scratch measurements, 2-core machine); the
default framebuffer of a window gets the blit, which llvmpipe does with a shader there (its back
buffer is sRGB BGRA8): 1.3-2.3 ms of CPU. The frame's framebuffer comes from the surface
(``Surface.draw_framebuffer``), never from glGetIntegerv: asked right after the scene's draw, that
query made llvmpipe flush, ~250 us a frame. Windows are shown as opaque (the layer is cleared to black). ``redraw_hz=0`` draws
ImGui straight into every frame.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import time

import numpy as np
from imgui_bundle import imgui, implot
from OpenGL import GL

from app.diagnostics import live

log = logging.getLogger(__name__)

SOFTWARE_PANEL_HZ = 2.0
PANEL_HZ = 5.0


def default_panel_hz(info) -> float:
    """Redraws per second of the panel: ``PANEL_HZ``, or ``SOFTWARE_PANEL_HZ`` where the GL
    rasterizes on the CPU (``GlInfo.software``): at 5 Hz llvmpipe's ~11 ms redraws cost a 50 fps
    frame about 1.1 ms on average, at 2 Hz about 0.45 ms (glshare bench, panel_cost_ms). Input
    still redraws at once."""
    return SOFTWARE_PANEL_HZ if getattr(info, "software", False) else PANEL_HZ


def merge_rects(rects: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Replace rectangles that overlap by their bounding box until none overlap (few: one per window)."""
    out = list(rects)
    merged = True
    while merged:
        merged = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                a, b = out[i], out[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    out[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    del out[j]
                    merged = True
                    break
            if merged:
                break
    return out


_COPY_IMAGE: list[bool] = []


def copy_image_supported() -> bool:
    """glCopyImageSubData is there: GL 4.3 or ARB_copy_image (asked once per process)."""
    if not _COPY_IMAGE:
        major = int(GL.glGetIntegerv(GL.GL_MAJOR_VERSION))
        minor = int(GL.glGetIntegerv(GL.GL_MINOR_VERSION))
        ok = (major, minor) >= (4, 3)
        if not ok:
            n = int(GL.glGetIntegerv(GL.GL_NUM_EXTENSIONS))
            ok = any(GL.glGetStringi(GL.GL_EXTENSIONS, i) == b"GL_ARB_copy_image" for i in range(n))
        _COPY_IMAGE.append(ok and bool(GL.glCopyImageSubData))
    return _COPY_IMAGE[0]


class _Layer:
    """The cached panel: an FBO with one RGBA8 colour texture of the framebuffer's size."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size
        self.rects: list[tuple[int, int, int, int]] = []  # GL window coordinates (x0, y0, x1, y1)
        self.composite_path = "not composited yet"
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
        """One rectangle per draw list: the bounds of its vertices (ImDrawVert: pos, uv, col);
        rectangles that overlap are merged, so no pixel is copied twice."""
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
        self.rects = merge_rects(rects)

    def clear(self) -> None:
        """Clear the whole layer: a full clear is llvmpipe's fast path (0.55 ms at 800x600 against
        1.1 ms for a scissored clear of the panel alone: scratch measurement)."""
        GL.glClearColor(0, 0, 0, 0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)

    def composite(self, target: int, color: tuple[int, int, int] | None) -> None:
        """Copy the windows' rectangles into the draw framebuffer ``target`` (bound), whose colour
        buffer the surface describes (``Surface.color_buffer``): both are passed in, never asked of
        GL (asking for the binding made llvmpipe flush, ~250 us a frame)."""
        if color is not None and color[2] == GL.GL_RGBA8 and copy_image_supported():
            name, kind, _ = color
            try:
                for x0, y0, x1, y1 in self.rects:
                    GL.glCopyImageSubData(self.texture, GL.GL_TEXTURE_2D, 0, x0, y0, 0,
                                          name, kind, 0, x0, y0, 0, x1 - x0, y1 - y0, 1)
                self.composite_path = "glCopyImageSubData"
                return
            except GL.GLError as exc:  # a driver that refuses the copy: blit from now on, say why
                log.warning("panel layer: glCopyImageSubData failed (%s); blitting instead", exc)
                _COPY_IMAGE[:] = [False]
                self.composite_path = f"glBlitFramebuffer (glCopyImageSubData failed: {exc})"
        elif color is None:
            self.composite_path = "glBlitFramebuffer (the frame's colour buffer has no name: a window's back buffer)"
        elif color[2] != GL.GL_RGBA8:
            self.composite_path = f"glBlitFramebuffer (the frame's colour buffer is 0x{color[2]:04X}, not RGBA8)"
        else:
            self.composite_path = "glBlitFramebuffer (no glCopyImageSubData: GL 4.3 or ARB_copy_image)"
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, self.fbo)
        for x0, y0, x1, y1 in self.rects:
            GL.glBlitFramebuffer(x0, y0, x1, y1, x0, y0, x1, y1, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, target)


class ImGuiLayer:
    def __init__(self, surface, redraw_hz: float = PANEL_HZ) -> None:
        self.surface = surface
        self.redraw_hz = redraw_hz
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
        target = self.surface.draw_framebuffer  # bound by the caller (Runtime.draw_ui: bind_target)
        if redraw:
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
        self._layer.composite(target, self.surface.color_buffer)
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
    def composite_path(self) -> str:
        """How the cached layer reaches the frame (the panel's capabilities tab shows it)."""
        if not self.redraw_interval_ns:
            return "drawn into every frame (no cached layer)"
        return self._layer.composite_path if self._layer is not None else "no layer yet"

    @property
    def wants_mouse(self) -> bool:
        return bool(imgui.get_io().want_capture_mouse)

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
