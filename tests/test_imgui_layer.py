"""The cached panel layer: redrawn at panel_hz and after input, blitted into every frame."""
from __future__ import annotations

import numpy as np

from app.config import RunConfig
from app.diagnostics import live
from app.runtime import Runtime
from app.window.egl_headless import EglSurface


def test_layer_is_reused_between_redraws_and_redrawn_on_input(gl):
    surface = EglSurface((640, 480))
    before = live.snapshot()
    try:
        cfg = RunConfig(scene="image", headless=True, frames=10_000, panel_hz=1e-3)  # no timed redraw here
        with Runtime(cfg, surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            assert rt.overlay.redraws == 2  # ImGui lays a new window out over two frames
            rects = rt.overlay._layer.rects
            assert rects and all(x1 > x0 and y1 > y0 for x0, y0, x1, y1 in rects)
            x0, y0, x1, y1 = rects[0]
            h = surface.framebuffer_size[1]
            region = (slice(h - y1, h - y0), slice(x0, x1))  # GL rows -> image rows (top first)
            a = surface.read_pixels()
            rt.tick()
            b = surface.read_pixels()
            assert rt.overlay.redraws == 2
            assert np.array_equal(a[region], b[region])  # the cached panel, although the frame advanced
            assert a[region].std() > 5  # and it is the panel, not an empty layer
            outside = np.ones(a.shape[:2], bool)
            outside[region] = False
            assert not np.array_equal(a[outside], b[outside])  # the Julia set moved on under it
            rt.overlay.mark_dirty()  # what mouse or keyboard input does
            rt.tick()
            c = surface.read_pixels()
            assert rt.overlay.redraws == 3
            assert not np.array_equal(b[region], c[region])  # redrawn: the frame number changed
    finally:
        surface.close()
    assert live.snapshot() == before  # the layer's texture and FBO were released


def test_memory_tab_shows_the_handle_table(gl):
    surface = EglSurface((640, 600))
    try:
        with Runtime(RunConfig(headless=True, frames=10_000, size=2048, panel_hz=0), surface=surface) as rt:
            for _ in range(3):
                rt.tick()
                rt.panel_state.select = "memory"
            base = surface.read_pixels()
            rt.tick()
            mem = rt.snapshot()["caps"]["memory"]
            assert [h["value"] for h in mem["handle_types"]] == list(range(0x2060, 0x2068))
            assert "cl_khr_external_memory" in mem["unavailable"] and mem["lifetime"] is None
            assert rt.panel_state.failures == 0 and rt.loop_errors == []
            assert base[..., :3].std() > 5
    finally:
        surface.close()
