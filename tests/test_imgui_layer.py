"""The cached panel layer: redrawn at panel_hz and after input, blitted into every frame."""
from __future__ import annotations

import numpy as np
from conftest import panel_snapshot

from app.config import RunConfig
from app.diagnostics import live
from app.session.loop import Run
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
            mem = panel_snapshot(rt, tab="memory").caps.memory
            assert [int(h.hex, 16) for h in mem.handle_types] == list(range(0x2060, 0x2068))
            assert "cl_khr_external_memory" in mem.unavailable and mem.lifetime is None
            assert rt.ui.state.failures == 0 and rt.session.history.loop_errors == []
            assert base[..., :3].std() > 5
    finally:
        surface.close()


def test_merge_rects_joins_only_overlapping_ones():
    from app.ui.imgui_layer import merge_rects

    assert merge_rects([]) == []
    apart = [(0, 0, 10, 10), (20, 0, 30, 10)]
    assert merge_rects(apart) == apart  # touching nothing: kept as they are
    assert merge_rects([(0, 0, 10, 10), (10, 0, 20, 10)]) == [(0, 0, 10, 10), (10, 0, 20, 10)]  # edges only
    # a chain: a overlaps b, b overlaps c, so all three become one box; d stays
    out = merge_rects([(0, 0, 10, 10), (5, 5, 15, 15), (14, 14, 20, 30), (40, 40, 50, 50)])
    assert sorted(out) == [(0, 0, 20, 30), (40, 40, 50, 50)]


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
