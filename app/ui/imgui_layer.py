"""The ImGui renderer: imgui-bundle's C++ OpenGL 3 backend, with its GLFW backend in a window.

Headless, the display size and time step are fed by hand, so the same panel code draws into the
FBO. The OpenGL 3 backend saves and restores the GL bindings around its draw. This is the only
module of ``ui/`` that touches GL; panel code draws from the panel model.

The panel is redrawn at ``redraw_hz`` (``default_panel_hz``: 5, or 2 on software GL), and at once
after any mouse or keyboard input, into a cached layer (an FBO) that is copied into the frame: only
the pixels ImGui's windows cover (the panel, and any tooltip, popup or open combo), as disjoint
rectangles, so the scene around them is never touched: the rectangles of ImGui's top-level windows
(asked of ImGui, never guessed from vertex positions, which a clipped or NaN vertex made wrong).

The copy is ``glCopyImageSubData`` (GL 4.3) where the frame's colour buffer is a texture or
renderbuffer of the layer's format (the headless FBO), else ``glBlitFramebuffer`` (a window's back
buffer: llvmpipe blits into its sRGB BGRA8 format with a shader, whatever the layer's format, at a
cost per pixel: bench/results). Where the swap keeps the back buffer (a
copy swap, as Mesa's software winsys does: probed on the frame itself, never assumed) and the
scene drew only beside the panel (``scene_rect``), the panel's pixels are still there from the
frame before and the copy is skipped until the layer is redrawn. The frame's framebuffer comes
from the surface (``Surface.draw_framebuffer``), never from glGetIntegerv: asked right after the
scene's draw, that query makes llvmpipe flush, every frame.

The layer is never larger than GL allows (GL_MAX_TEXTURE_SIZE, GL_MAX_RENDERBUFFER_SIZE, the
viewport's maximum): in a bigger window it covers the top left, where the panel is. A failure to
make it (or to draw ImGui) is raised once, as one line, and the same failure at the same size is
then only counted; ImGui is rebuilt after a frame it could not finish, so the panel comes back at
the next redraw. ``redraw_hz=0`` draws ImGui straight into every frame.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import time

from app.diagnostics import live
from app.errors import GlError, GlshareError
from app.gl import api as GL
from app.ui.bundle import imgui, implot

log = logging.getLogger(__name__)

SOFTWARE_PANEL_HZ = 2.0
PANEL_HZ = 5.0
MAX_FRAMEBUFFER_SCALE = 4.0  # ImGui's fonts are rasterised at this scale at most
PROBE_EVERY = 120  # frames between two checks that the swap kept the panel's pixels
RETRY_S = 1.0  # a layer that could not be made at a size is tried again after this long

Rect = tuple[int, int, int, int]


def default_panel_hz(info) -> float:
    """Redraws per second of the panel: ``PANEL_HZ``, or ``SOFTWARE_PANEL_HZ`` where the GL
    rasterizes on the CPU (``GlInfo.software``): each redraw there is a long stretch of CPU
    rasterizing, and the average it adds to a frame (glshare bench, panel_cost_ms) is proportional
    to the rate (bench/results/README.md, 'Second session of 2026-12-01'). Input still redraws at
    once."""
    return SOFTWARE_PANEL_HZ if info.software else PANEL_HZ


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _subtract(a: Rect, b: Rect) -> list[Rect]:
    """``a`` minus ``b`` as up to four rectangles (bands above and below, then left and right)."""
    if not _overlaps(a, b):
        return [a]
    x0, y0, x1, y1 = a
    out = []
    if b[1] > y0:
        out.append((x0, y0, x1, b[1]))
    if b[3] < y1:
        out.append((x0, b[3], x1, y1))
    my0, my1 = max(y0, b[1]), min(y1, b[3])
    if b[0] > x0:
        out.append((x0, my0, b[0], my1))
    if b[2] < x1:
        out.append((b[2], my0, x1, my1))
    return out


def disjoint_rects(rects: list[Rect]) -> list[Rect]:
    """The union of ``rects`` as rectangles that do not overlap (no pixel copied twice, and none
    copied that no rectangle covers: two windows apart never become their bounding box)."""
    out: list[Rect] = []
    for r in rects:
        if r[2] <= r[0] or r[3] <= r[1]:
            continue
        pieces = [r]
        for done in out:
            pieces = [p for piece in pieces for p in _subtract(piece, done)]
            if not pieces:
                break
        out += pieces
    return out


_CHILD_WINDOW = int(imgui.WindowFlags_.child_window)
_COPY_IMAGE: list[bool] = []
_LIMITS: list[tuple[int, int]] = []


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


def layer_limit() -> tuple[int, int]:
    """The largest layer GL allows: (width, height) within GL_MAX_TEXTURE_SIZE,
    GL_MAX_RENDERBUFFER_SIZE and GL_MAX_VIEWPORT_DIMS (asked once per process)."""
    if not _LIMITS:
        tex = int(GL.glGetIntegerv(GL.GL_MAX_TEXTURE_SIZE))
        rb = int(GL.glGetIntegerv(GL.GL_MAX_RENDERBUFFER_SIZE))
        vp = GL.glGetIntegerv(GL.GL_MAX_VIEWPORT_DIMS)
        _LIMITS.append((min(tex, rb, int(vp[0])), min(tex, rb, int(vp[1]))))
    return _LIMITS[0]


TRIM_BYTES = 8 << 20  # replacing a layer this big by a smaller one hands the freed memory back to the system
TRIM_AFTER = 8  # frames later, when the window's own big buffers are gone too


def _trim_heap() -> None:
    """glibc keeps freed memory in its arenas (llvmpipe's threads have their own): after a huge
    window's buffers are gone, give it back to the system (malloc_trim), so RSS returns to its
    baseline. A no-op where there is no glibc."""
    try:
        libc = ctypes.CDLL(None)
        trim = getattr(libc, "malloc_trim", None)
        if trim is not None:
            trim(0)
    except OSError:
        pass


def _gl_error(exc: BaseException, where: str) -> GlError:
    """A failed GL call (``GL.GLError``: the call and its code) or anything else raised while the
    layer was made, as glshare's one-line GlError naming ``where``."""
    if isinstance(exc, GL.GLError):
        return GlError(exc.code, where=where, detail=exc.call)
    return GlError(GL.GL_INVALID_OPERATION, where=where, detail=f"{type(exc).__name__}: {exc}".splitlines()[0])


class _Layer:
    """The cached panel: an FBO with one RGBA8 colour texture covering the framebuffer's top left
    (all of it, unless the framebuffer is larger than GL allows a texture to be)."""

    def __init__(self, fb_size: tuple[int, int], limit: tuple[int, int]) -> None:
        self.fb_size = fb_size
        self.size = (max(min(fb_size[0], limit[0]), 1), max(min(fb_size[1], limit[1]), 1))
        self.rects: list[Rect] = []  # layer GL coordinates (x0, y0, x1, y1), disjoint
        self.composite_path = "not composited yet"
        self.texture = self.fbo = 0
        try:
            self.texture = int(GL.glGenTextures(1))
            GL.glBindTexture(GL.GL_TEXTURE_2D, self.texture)
            GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MIN_FILTER, GL.GL_NEAREST)
            GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAG_FILTER, GL.GL_NEAREST)
            GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, GL.GL_RGBA8, self.size[0], self.size[1], 0, GL.GL_RGBA,
                            GL.GL_UNSIGNED_BYTE, None)
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            self.fbo = int(GL.glGenFramebuffers(1))
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, self.fbo)
            GL.glFramebufferTexture2D(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_TEXTURE_2D, self.texture, 0)
            status = GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER)
            if status != GL.GL_FRAMEBUFFER_COMPLETE:
                raise GlError(GL.GL_INVALID_FRAMEBUFFER_OPERATION, where=f"panel layer {self.size[0]}x{self.size[1]}",
                              detail=f"framebuffer incomplete (0x{int(status):04X})")
        except GL.GLError as exc:  # a call's error, named by the layer: nothing left behind
            self._free()
            raise _gl_error(exc, f"panel layer {self.size[0]}x{self.size[1]}") from None
        except GlError:
            self._free()
            raise
        except Exception as exc:  # noqa: BLE001 - one line, nothing left behind
            self._free()
            raise _gl_error(exc, f"panel layer {self.size[0]}x{self.size[1]}") from None
        live.created("gl_texture", "ui")
        live.created("gl_framebuffer", "ui")

    def _free(self) -> None:
        with contextlib.suppress(Exception):
            if self.fbo:
                GL.glDeleteFramebuffers(1, [self.fbo])
            if self.texture:
                GL.glDeleteTextures(1, [self.texture])
        self.fbo = self.texture = 0
        while GL.glGetError() != GL.GL_NO_ERROR:
            pass

    def release(self) -> None:
        if not self.fbo:
            return
        GL.glDeleteFramebuffers(1, [self.fbo])
        GL.glDeleteTextures(1, [self.texture])
        self.fbo = self.texture = 0
        live.released("gl_texture", "ui")
        live.released("gl_framebuffer", "ui")

    def measure(self) -> None:
        """The rectangles of the ImGui windows drawn this frame (the panel, and any tooltip, popup or
        open combo: the top-level windows, each with its child windows inside it), clipped to the
        layer and made disjoint: only these pixels are ever copied into the frame."""
        w, h = self.size
        rects = []
        child = _CHILD_WINDOW
        for win in imgui.get_current_context().windows:
            if not win.active or win.hidden or int(win.flags) & child:
                continue
            dl = win.draw_list
            if dl is None or not dl.vtx_buffer.size():
                continue  # nothing drawn (ImGui's implicit debug window)
            r = win.outer_rect_clipped
            x0, y0, x1, y1 = r.min.x, r.min.y, r.max.x, r.max.y
            if not all(map(math.isfinite, (x0, y0, x1, y1))):
                continue
            x0, y0 = max(int(math.floor(x0)), 0), max(int(math.floor(y0)), 0)
            x1, y1 = min(int(math.ceil(x1)), w), min(int(math.ceil(y1)), h)
            if x1 > x0 and y1 > y0:
                rects.append((x0, h - y1, x1, h - y0))  # ImGui y down -> GL y up
        self.rects = disjoint_rects(rects)

    def clear(self) -> None:
        """Clear the whole layer: a full clear is llvmpipe's fast path, cheaper than a
        scissored clear of the panel alone."""
        GL.glClearColor(0, 0, 0, 0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)

    def composite(self, target: int, color: tuple[int, int, int] | None, rects: list[Rect] | None = None) -> None:
        """Copy the windows' rectangles (or ``rects``, a subset) into the draw framebuffer ``target``
        (bound), whose colour buffer the surface describes (``Surface.color_buffer``): both are
        passed in, never asked of GL (asking for the binding makes llvmpipe flush, every frame)."""
        rects = self.rects if rects is None else rects
        dy = self.fb_size[1] - self.size[1]  # the layer is the framebuffer's top: GL rows shift by this
        if color is not None and color[2] == GL.GL_RGBA8 and copy_image_supported():
            name, kind, _ = color
            try:
                for x0, y0, x1, y1 in rects:
                    GL.glCopyImageSubData(self.texture, GL.GL_TEXTURE_2D, 0, x0, y0, 0,
                                          name, kind, 0, x0, y0 + dy, 0, x1 - x0, y1 - y0, 1)
                self.composite_path = "glCopyImageSubData"
                return
            except GL.GLError as exc:  # a driver that refuses the copy: blit from now on, say why
                err = _gl_error(exc, "glCopyImageSubData")
                log.warning("panel layer: %s; blitting instead", err.one_line())
                _COPY_IMAGE[:] = [False]
                self.composite_path = f"glBlitFramebuffer (glCopyImageSubData failed: {err.one_line()})"
        elif color is None:
            self.composite_path = "glBlitFramebuffer (the frame's colour buffer has no name: a window's back buffer)"
        elif color[2] != GL.GL_RGBA8:
            self.composite_path = f"glBlitFramebuffer (the frame's colour buffer is 0x{color[2]:04X}, not RGBA8)"
        else:
            self.composite_path = "glBlitFramebuffer (no glCopyImageSubData: GL 4.3 or ARB_copy_image)"
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, self.fbo)
        for x0, y0, x1, y1 in rects:
            GL.glBlitFramebuffer(x0, y0, x1, y1, x0, y0 + dy, x1, y1 + dy, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, target)

    def texel(self, x: int, y: int) -> bytes:
        """One pixel of the layer (GL coordinates), as RGBA bytes."""
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, self.fbo)
        return bytes(GL.glReadPixels(x, y, 1, 1, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE))


class ImGuiLayer:
    def __init__(self, surface, redraw_hz: float = PANEL_HZ) -> None:
        self.surface = surface
        self.redraw_hz = redraw_hz
        self.windowed = surface.kind == "window"
        self.redraw_interval_ns = int(1e9 / redraw_hz) if redraw_hz > 0 else 0
        # frames still to redraw: ImGui lays out a new or changed window over two frames (it hides a
        # window on its first frame to measure it), so input or a change asks for two redraws
        self.dirty = 2
        self._layer: _Layer | None = None
        self._last = time.perf_counter()
        self._last_redraw_ns = 0
        self.redraws = 0
        self.composites = 0  # frames the layer was copied into (the rest kept it from the frame before)
        self.failures = 0
        self.last_failure = ""
        self._failed: tuple | None = None  # (what, size) of the failure raised last
        self._failed_at = 0.0  # when the layer last failed to be made (tried again after RETRY_S)
        self._trim_in = 0  # frames until the heap is trimmed after a huge layer went
        self._broken = False  # ImGui could not finish a frame: rebuilt before the next one
        self._fresh = True  # the layer changed since its last full copy into the frame
        self._kept: bool | None = None  # the swap keeps the back buffer: None until probed
        self._skipping = False  # the last frame's copy was skipped where the kept back buffer held the panel
        self._probe_in = 0
        self._listening = False  # our input callback is on the window (installed once)
        self._open = True
        self._start_imgui()

    # -- ImGui's context and backends -------------------------------------------------------------
    def _start_imgui(self) -> None:
        self._ctx = imgui.create_context()
        self._plot_ctx = implot.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")  # no imgui.ini written into the user's folder
        limit = layer_limit()
        io.fonts.tex_max_width = min(io.fonts.tex_max_width or limit[0], limit[0], 8192)
        io.fonts.tex_max_height = min(io.fonts.tex_max_height or limit[1], limit[1], 8192)
        if self.windowed:
            if not self._listening:
                # ours first: ImGui's GLFW backend chains the callbacks installed before it
                self.surface.on_input(self.mark_dirty)
                self._listening = True
            imgui.backends.glfw_init_for_opengl(self.surface.window_address, True)
        imgui.backends.opengl3_init("#version 330")

    def _stop_imgui(self) -> None:
        with contextlib.suppress(Exception):
            imgui.backends.opengl3_shutdown()
        if self.windowed:
            with contextlib.suppress(Exception):
                imgui.backends.glfw_shutdown()
        with contextlib.suppress(Exception):
            implot.destroy_context(self._plot_ctx)
        with contextlib.suppress(Exception):
            imgui.destroy_context(self._ctx)

    def _rebuild_imgui(self) -> None:
        """After a frame ImGui could not finish: a fresh context, so the next frame starts clean."""
        log.info("panel: ImGui rebuilt after a failed frame (%s)", self.last_failure)
        self._stop_imgui()
        self._start_imgui()
        self._broken = False
        self.dirty = 2

    def mark_dirty(self, *_args) -> None:
        self.dirty = 2

    # -- drawing --------------------------------------------------------------------------------
    def draw(self, build, *, force: bool = False, span=None, scene_rect: Rect | None = None) -> bool:
        """Draw the UI over the bound framebuffer; returns True when ImGui ran (``build()`` was called).

        ``build()`` issues the widgets. Between redraws the cached layer is composited instead.
        ``span()``, a context manager, wraps the ImGui rendering only (the GL pass worth timing).
        ``scene_rect`` (GL x, y, w, h): the only part of the framebuffer the scene drew this frame;
        None: all of it.
        Raises:
            GlError: once per failure and size (making the layer, or ImGui's frame), as one line.
        """
        span = span or contextlib.nullcontext
        if self._broken:
            self._rebuild_imgui()
        if not self.redraw_interval_ns:
            with span():
                self._guarded(lambda: self._imgui_frame(build, None), ("direct", None))
            return True
        fb = tuple(int(v) for v in self.surface.framebuffer_size)
        if self._trim_in:
            self._trim_in -= 1
            if not self._trim_in:
                _trim_heap()
        if fb[0] <= 0 or fb[1] <= 0:
            return False
        now = time.perf_counter_ns()
        redraw = force or self.dirty > 0 or now - self._last_redraw_ns >= self.redraw_interval_ns
        if self._layer is None or self._layer.fb_size != fb:
            if self._layer is not None:
                old = self._layer.size[0] * self._layer.size[1] * 4
                self._layer.release()
                self._layer = None
                if old >= TRIM_BYTES and fb[0] * fb[1] * 4 < old:
                    self._trim_in = TRIM_AFTER  # once the driver let go of the big buffers too
            if self._failed == ("layer", fb) and time.monotonic() - self._failed_at < RETRY_S:
                return False  # it failed at this size a moment ago: not tried again yet
            self._layer = self._guarded(lambda: _Layer(fb, layer_limit()), ("layer", fb))
            if self._layer is None:
                return False
            redraw = True
            self._kept = None if self._kept is not False else False  # a new back buffer: probe again
        layer = self._layer
        target = self.surface.draw_framebuffer  # bound by the caller (Run.draw_ui: bind_target)
        if redraw:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, layer.fbo)
            GL.glViewport(0, 0, *layer.size)
            GL.glDisable(GL.GL_SCISSOR_TEST)
            layer.clear()
            try:
                with span():
                    data = self._guarded(lambda: self._imgui_frame(build, layer), ("imgui", fb))
                if data is not None:
                    layer.measure()
            finally:
                GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, target)
                GL.glViewport(0, 0, *fb)
            self._last_redraw_ns = now
            self.dirty = max(0, self.dirty - 1)
            self.redraws += 1
            self._fresh = True
        GL.glDisable(GL.GL_SCISSOR_TEST)  # the scene's scissor (drawn beside the panel) must not clip the copy
        self._composite(layer, target, scene_rect)
        return redraw

    def _guarded(self, fn, what: tuple):
        """Run ``fn``; a failure is raised once as a one-line GlError (the frame records it), then
        only counted while it repeats for the same ``what``; returns None after a failure."""
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001
            self.failures += 1
            if what[0] != "layer":
                self._broken = True  # ImGui's frame did not finish: rebuild before the next one
            if isinstance(exc, GL.GLError):
                err = _gl_error(exc, f"panel {what[0]}")
            elif isinstance(exc, GlshareError):
                err = exc
            else:  # ImGui's own assertion, or the panel's code: one line, where it happened
                err = GlshareError(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                                   where=f"panel {what[0]}")
            self.last_failure = err.one_line()
            self._failed_at = time.monotonic()
            if self._failed == what:
                log.debug("panel: %s (again)", self.last_failure)
                return None
            self._failed = what
            log.warning("panel: %s", self.last_failure)
            raise err from None
        if self._failed is not None and self._failed[0] == what[0]:
            self._failed = None
        return out

    def _composite(self, layer: _Layer, target: int, scene_rect: Rect | None) -> None:
        """Copy what the frame needs: everything after a redraw or where the swap does not keep the
        back buffer; else only the windows' rectangles the scene drew over this frame."""
        rects = layer.rects
        if not rects:
            return
        color = self.surface.color_buffer
        keep = self.windowed and scene_rect is not None and self._kept is not False
        self._skipping = False
        if keep and not self._fresh:
            if self._kept is None or self._probe_in <= 0:
                self._kept = self._probe(layer, target)
                self._probe_in = PROBE_EVERY
                if not self._kept:
                    log.info("panel: the swap does not keep the back buffer: the layer is copied every frame")
            self._probe_in -= 1
            if self._kept:
                self._skipping = True
                dy = layer.fb_size[1] - layer.size[1]
                sx0, sy0, sw, sh = scene_rect
                over = [r for r in rects if _overlaps((r[0], r[1] + dy, r[2], r[3] + dy), (sx0, sy0, sx0 + sw, sy0 + sh))]
                if over:
                    layer.composite(target, color, over)
                    self.composites += 1
                return
        if keep:  # and the margins left of the scene, which nothing else draws into
            lw, lh = layer.size
            dy = layer.fb_size[1] - lh
            column = (0, max(0, -dy), min(scene_rect[0], lw), lh)
            layer.composite(target, color, disjoint_rects(rects + [column]))
        else:
            layer.composite(target, color)
        self.composites += 1
        self._fresh = not keep  # a full copy into a kept back buffer lasts until the next redraw

    def _probe(self, layer: _Layer, target: int) -> bool:
        """Whether the back buffer still holds the panel copied into it one frame ago: one pixel of
        the panel's first rectangle, read back from both (done every PROBE_EVERY frames)."""
        x0, y0, x1, y1 = layer.rects[0]
        x, y = (x0 + x1) // 2, (y0 + y1) // 2
        try:
            want = layer.texel(x, y)
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, target)
            if target == 0:
                GL.glReadBuffer(GL.GL_BACK)
            dy = layer.fb_size[1] - layer.size[1]
            got = bytes(GL.glReadPixels(x, y + dy, 1, 1, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE))
        except Exception as exc:  # noqa: BLE001 - no probe: copy every frame
            log.debug("panel: back buffer probe failed: %s", exc)
            return False
        finally:
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, target)
        return got[:3] == want[:3]

    def _imgui_frame(self, build, layer: _Layer | None):
        io = imgui.get_io()
        if self.windowed:
            imgui.backends.glfw_new_frame()
            # GLFW's window and framebuffer sizes can disagree for a frame during fast resizes
            # (a 1x1 window with a 2000x2000 framebuffer): ImGui would rasterise its fonts at that
            # scale and run out of texture room
            sx, sy = io.display_framebuffer_scale.x, io.display_framebuffer_scale.y
            if not (0 < sx <= MAX_FRAMEBUFFER_SCALE and 0 < sy <= MAX_FRAMEBUFFER_SCALE):
                io.display_framebuffer_scale = (1.0, 1.0)
        else:
            io.display_size = tuple(float(x) for x in self.surface.framebuffer_size)
            now = time.perf_counter()
            io.delta_time = max(now - self._last, 1e-4)
            self._last = now
        if io.display_size.x <= 0 or io.display_size.y <= 0:
            io.display_size = (1.0, 1.0)
        imgui.backends.opengl3_new_frame()
        imgui.new_frame()
        if self.popup_open and imgui.is_key_pressed(imgui.Key.escape):
            imgui.internal.close_popups_except_modals()  # Esc closes the open combo or popup first
        try:
            build()
        finally:
            imgui.render()
        draw_data = imgui.get_draw_data()
        if layer is not None:
            scale = draw_data.framebuffer_scale
            shown = (layer.size[0] / max(scale.x, 1e-6), layer.size[1] / max(scale.y, 1e-6))
            if shown[0] < draw_data.display_size.x or shown[1] < draw_data.display_size.y:
                draw_data.display_size = shown  # a framebuffer larger than a layer can be: its top left
        imgui.backends.opengl3_render_draw_data(draw_data)
        return draw_data

    @property
    def composite_path(self) -> str:
        """How the cached layer reaches the frame (the panel's capabilities tab shows it)."""
        if not self.redraw_interval_ns:
            return "drawn into every frame (no cached layer)"
        if self._layer is None:
            return "no layer yet"
        path = self._layer.composite_path
        if self._skipping:
            path += "; skipped while the swap keeps the panel's pixels"
        return path

    @property
    def back_buffer_kept(self) -> bool | None:
        """Whether the swap keeps the back buffer (the panel's pixels stay between frames): None
        until probed."""
        return self._kept

    @property
    def wants_mouse(self) -> bool:
        return bool(imgui.get_io().want_capture_mouse)

    @property
    def popup_open(self) -> bool:
        """A combo or popup of the panel is open (ImGui's popup stack, kept between its frames)."""
        flags = imgui.PopupFlags_.any_popup_id | imgui.PopupFlags_.any_popup_level
        return self._open and bool(imgui.is_popup_open("", flags))

    @property
    def wants_keyboard(self) -> bool:
        """ImGui takes the keys: a text field has them, or a popup is open (Esc closes it, in the
        next ImGui frame, instead of quitting the run)."""
        return bool(imgui.get_io().want_capture_keyboard) or self.popup_open

    def close(self) -> None:
        """Idempotent: GL objects of the renderer first, while the context is current."""
        if not self._open:
            return
        self._open = False
        if self._layer is not None:
            self._layer.release()
            self._layer = None
        self._stop_imgui()
