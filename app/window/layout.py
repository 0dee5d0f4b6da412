"""Where the panel sits in the window and where the scene is drawn beside it: pure geometry, no
ImGui and no GL, so the window size a scene opens (``Scene.window_size``), the session's viewport
and the tests all agree on it.

The panel is a column at the window's left, as tall as the window, its width chosen by the user
(resizable, collapsible); the scene is drawn in the rest of the window when that is at least
``SCENE_MIN_W`` wide, else under the panel.
"""
from __future__ import annotations

MARGIN = 8  # between the window's edge, the panel and the scene
PANEL_W = 440  # the panel's default width: its header and controls fit on three lines
PANEL_MIN_W = 300
PANEL_MAX_W = 720
SCENE_MIN_W = 200  # beside the panel the scene gets at least this many pixels, else it is drawn under it
PANEL_ROOM = MARGIN + PANEL_W + MARGIN  # what a window opened with the panel adds beside an image scene


def default_width(fb_w: int) -> int:
    """The panel's width before the user resizes it: PANEL_W, a third of a wide window, never more
    than the window."""
    return int(max(min(max(PANEL_W, fb_w * 0.34), PANEL_MAX_W, fb_w - 2 * MARGIN), 1))


def width_limits(fb_w: int) -> tuple[int, int]:
    """(narrowest, widest) the user may make the panel in a window ``fb_w`` wide."""
    widest = max(fb_w - 2 * MARGIN, 1)
    return min(PANEL_MIN_W, widest), min(PANEL_MAX_W, widest)


def panel_height(fb_h: int) -> int:
    return max(fb_h - 2 * MARGIN, 1)


def scene_viewport(fb: tuple[int, int], panel_right: int | None) -> tuple[int, int, int, int] | None:
    """Where the scene is drawn, as glViewport takes it (x, y from the bottom left, w, h), when the
    panel's right edge is at ``panel_right`` (ImGui's x, None: no panel shown or it is collapsed);
    None: the whole framebuffer (the panel is drawn over the scene)."""
    w, h = fb
    if panel_right is None or w <= 0 or h <= 0:
        return None
    x = int(panel_right) + MARGIN
    if w - x < SCENE_MIN_W:
        return None
    return (x, 0, w - x, h)


def fit(rect: tuple[int, int, int, int], size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The largest rectangle of ``size``'s aspect inside ``rect`` (x, y, w, h), centred: a scene
    whose image keeps a fixed size is shown undistorted."""
    x, y, w, h = rect
    iw, ih = size
    if iw <= 0 or ih <= 0 or w <= 0 or h <= 0:
        return rect
    scale = min(w / iw, h / ih)
    fw, fh = max(int(iw * scale), 1), max(int(ih * scale), 1)
    return (x + (w - fw) // 2, y + (h - fh) // 2, fw, fh)
