"""The cached panel layer: redrawn at panel_hz and after input, blitted into every frame."""
from __future__ import annotations

import numpy as np
import pytest
from support import panel_snapshot

from app.config import RunConfig
from app.diagnostics import live
from app.run import Run
from app.window.egl_headless import EglSurface


def test_layer_is_reused_between_redraws_and_redrawn_on_input(gl):
    surface = EglSurface((640, 480))
    before = live.snapshot()
    try:
        cfg = RunConfig(scene="image", headless=True, frames=10_000, panel_hz=1e-3)  # no timed redraw here
        with Run(cfg, surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            assert rt.ui.redraws == 2  # ImGui lays a new window out over two frames
            rects = rt.ui.layer._layer.rects
            assert rects and all(x1 > x0 and y1 > y0 for x0, y0, x1, y1 in rects)
            x0, y0, x1, y1 = rects[0]
            h = surface.framebuffer_size[1]
            region = (slice(h - y1, h - y0), slice(x0, x1))  # GL rows -> image rows (top first)
            a = surface.read_pixels()
            rt.tick()
            b = surface.read_pixels()
            assert rt.ui.redraws == 2
            assert np.array_equal(a[region], b[region])  # the cached panel, although the frame advanced
            assert a[region].std() > 5  # and it is the panel, not an empty layer
            outside = np.ones(a.shape[:2], bool)
            outside[region] = False
            assert not np.array_equal(a[outside], b[outside])  # the Julia set moved on under it
            rt.ui.mark_dirty()  # what mouse or keyboard input does
            rt.tick()
            c = surface.read_pixels()
            assert rt.ui.redraws == 3
            assert not np.array_equal(b[region], c[region])  # redrawn: the frame number changed
    finally:
        surface.close()
    assert live.snapshot() == before  # the layer's texture and FBO were released


def test_memory_tab_shows_the_handle_table(gl):
    surface = EglSurface((640, 600))
    try:
        with Run(RunConfig(headless=True, frames=10_000, size=2048, panel_hz=0), surface=surface) as rt:
            for _ in range(3):
                rt.tick()
                rt.ui.state.select = "memory"
            base = surface.read_pixels()
            rt.tick()
            mem = panel_snapshot(rt, tab="memory").tabs["memory"]
            assert [int(h.hex, 16) for h in mem.handle_types] == [*range(0x2060, 0x2068), 0x2069, 0x2070]
            assert "cl_khr_external_memory" in mem.unavailable and mem.lifetime is None
            assert rt.ui.state.failures == 0 and rt.session.history.loop_errors == []
            assert base[..., :3].std() > 5
    finally:
        surface.close()


def test_disjoint_rects_cover_the_union_exactly():
    """What the layer copies: the union of the windows' rectangles, no pixel twice, none outside."""
    from app.ui.imgui_layer import disjoint_rects

    assert disjoint_rects([]) == [] and disjoint_rects([(5, 5, 5, 9)]) == []  # empty ones dropped
    apart = [(0, 0, 10, 10), (20, 0, 30, 10)]
    assert disjoint_rects(apart) == apart  # two windows apart never become their bounding box
    rects = [(0, 0, 10, 10), (5, 5, 15, 15), (14, 14, 20, 30), (40, 40, 50, 50), (0, 0, 4, 4)]
    out = disjoint_rects(rects)
    union, cover = np.zeros((60, 60), bool), np.zeros((60, 60), np.int32)
    for x0, y0, x1, y1 in rects:
        union[y0:y1, x0:x1] = True
    for x0, y0, x1, y1 in out:
        cover[y0:y1, x0:x1] += 1
    assert cover.max() == 1 and np.array_equal(cover == 1, union)


def test_layer_reaches_the_frame_by_the_cheapest_copy(gl):
    """Headless, the frame is an RGBA8 renderbuffer: the layer is copied with glCopyImageSubData, and
    what arrives is exactly what the layer holds; the default panel rate follows the renderer."""
    from OpenGL import GL

    from app.gl.context import GlInfo, gl_info
    from app.ui.imgui_layer import default_panel_hz

    def named(renderer):
        return GlInfo("vendor", renderer, "4.6", "4.60", frozenset())

    assert default_panel_hz(named("llvmpipe (LLVM 15.0.6, 256 bits)")) == 2.0
    assert default_panel_hz(named("NVIDIA H200/PCIe/SSE2")) == 5.0
    info = gl_info()
    surface = EglSurface((320, 240))
    try:
        with Run(RunConfig(headless=True, frames=10_000, size=1024), surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            layer = rt.ui.layer._layer
            assert rt.ui.layer.composite_path == "glCopyImageSubData"
            assert rt.ui.layer.redraw_hz == default_panel_hz(info)
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, layer.fbo)
            raw = GL.glReadPixels(0, 0, 320, 240, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE)
            held = np.frombuffer(raw, np.uint8).reshape(240, 320, 4)[::-1]  # GL rows -> image rows
            shown = surface.read_pixels()
            for x0, y0, x1, y1 in layer.rects:
                region = (slice(240 - y1, 240 - y0), slice(x0, x1))
                assert np.array_equal(shown[region][..., :3], held[region][..., :3])  # copied exactly
            assert layer.rects and held[..., :3].std() > 5
    finally:
        surface.close()


class _Sized:
    """A surface that reports another framebuffer size (everything else is the real one's)."""

    def __init__(self, surface, size) -> None:
        self._surface, self.framebuffer_size = surface, size

    def __getattr__(self, name):
        return getattr(self._surface, name)


def test_a_layer_that_cannot_be_made_fails_once_in_one_line_and_leaks_nothing(gl, monkeypatch):
    """A framebuffer wider than GL lets a texture be: the layer is clamped to GL's limit; where it
    still cannot be made (here the limit is lied about), the failure is one line, raised once, the
    same failure is then only counted, nothing is leaked, and the panel comes back at a good size."""
    from OpenGL import GL

    import app.ui.imgui_layer as layer_mod
    from app.errors import GlError

    surface = EglSurface((320, 240))
    try:
        with Run(RunConfig(headless=True, frames=10_000, size=1024, panel_hz=0.5), surface=surface) as rt:
            rt.tick()
            layer = rt.ui.layer
            assert layer._layer.size == (320, 240)
            limit = layer_mod.layer_limit()
            before = live.snapshot()
            layer.surface = _Sized(surface, (limit[0] + 100, 240))
            monkeypatch.setattr(layer_mod, "layer_limit", lambda: (1 << 20, 1 << 20))
            surface.bind_target()
            with pytest.raises(GlError) as err:
                layer.draw(lambda: None)
            assert "GL_INVALID_VALUE" in err.value.one_line() and "\n" not in err.value.one_line()
            assert GL.glGetError() == GL.GL_NO_ERROR  # drained: the frame's own check stays clean
            for _ in range(3):
                assert layer.draw(lambda: None) is False  # the same failure: counted, not raised
            assert layer.failures == 1 and live.count("gl_texture", "ui") == 0  # the old layer released
            monkeypatch.setattr(layer_mod, "layer_limit", lambda: limit)
            layer._failed_at = 0.0  # as if a second had passed
            assert layer.draw(lambda: None) is True and layer._layer.size == (limit[0], 240)  # clamped
            layer._layer.release()
            layer._layer = None
            layer.surface = surface
            for _ in range(3):
                rt.tick()
            assert live.snapshot() == before and rt.ui.layer._layer.size == (320, 240)
            assert rt.session.history.loop_errors == [] and rt.ui.state.failures == 0
    finally:
        surface.close()


def test_imgui_recovers_the_frame_after_a_failure(gl):
    """A frame whose widgets raise (here: a window left open) is one line, once; ImGui is rebuilt
    and the next frame draws."""
    from imgui_bundle import imgui

    from app.errors import GlshareError
    from app.ui.imgui_layer import ImGuiLayer

    layer = ImGuiLayer(gl, redraw_hz=0)
    try:
        def broken():
            imgui.begin("left open")
            raise RuntimeError("widget failed")

        drawn = []
        gl.bind_target()
        with pytest.raises(GlshareError) as err:
            layer.draw(broken)
        assert err.value.one_line().startswith("panel direct: RuntimeError")
        gl.bind_target()
        assert layer.draw(lambda: (imgui.begin("fine"), imgui.text("ok"), imgui.end(), drawn.append(1))) is True
        assert drawn == [1] and layer.failures == 1
    finally:
        layer.close()
