"""The panel: header, controls, the timing plot, the frame timeline, and the tabs (app/ui/tabs/: owners,
errors, hazards, teaching, the error lab, memory, capabilities, ...).

Drawn with imgui-bundle (ImGui + ImPlot) from the panel model (``app/ui/model/``) only: no GL or
CL call in here, and no reference to the session. Controls never act in the middle of the ImGui
frame: they ``request`` a command of ``app/session/controls.py``, run after the frame.

The panel is a column at the window's left (``app/window/layout.py``): as tall as the window, as wide
as the user makes it (drag its right edge; collapse it with its title bar's arrow), scrolling when
the window is too short for it. The timeline is the instrument: one frame (the newest complete
one, or the one chosen by clicking the timing plot or with the slider while paused) on one clock,
a lane each for the CPU's phases, its waits, the CL queue, GL, and every shared object's owner;
wheel to zoom, drag to pan, double-click to fit. Colours come from ``app/ui/legend.py``.

Kept cheap: series arrive as numpy arrays, the timeline is a few dozen rectangles, and the parts of
the tabs not shown are not built.
"""
from __future__ import annotations

import logging

from app.ui import tabs
from app.ui.bundle import imgui, imgui_ctx
from app.ui.model import PanelModel
from app.ui.panel.controls import draw_controls
from app.ui.panel.header import draw_header
from app.ui.panel.state import PanelState
from app.ui.panel.timeline import draw_frame_choice, draw_timeline
from app.ui.panel.timing import draw_stats, draw_timing
from app.ui.panel.widgets import (
    ALWAYS,
    FIRST_USE,
    RED,
    SET_SELECTED,
    TAB_BAR,
    TITLE,
    WINDOW_FLAGS,
    item_rect,
    tab_count,
)
from app.ui.teaching import draw_teaching
from app.window import layout

log = logging.getLogger(__name__)


def draw_panel(model: PanelModel, state: PanelState, request) -> None:
    """Issue the panel's widgets for one ImGui frame (inside ``ImGuiLayer.draw``); ``request(name,
    **args)`` queues a command for after the frame."""
    io = imgui.get_io()
    fb_w, fb_h = max(int(io.display_size.x), 1), max(int(io.display_size.y), 1)
    lo, hi = layout.width_limits(fb_w)
    height = layout.panel_height(fb_h)
    if state.fill:  # the whole window is the panel's (glshare attach: no scene beside it)
        lo = hi = max(fb_w - 2 * layout.MARGIN, 1)
    imgui.set_next_window_pos((layout.MARGIN, layout.MARGIN), ALWAYS)
    imgui.set_next_window_size((layout.default_width(fb_w) if not state.fill else lo, height),
                               ALWAYS if state.fill else FIRST_USE)
    imgui.set_next_window_size_constraints((lo, height), (hi, height))
    imgui.set_next_window_bg_alpha(0.9)
    state.spots, state.rects = {}, {}
    with imgui_ctx.begin(TITLE, None, WINDOW_FLAGS) as window:
        pos, size = imgui.get_window_pos(), imgui.get_window_size()
        state.window = (int(pos.x), int(pos.y), int(pos.x + size.x), int(pos.y + size.y))
        state.collapsed = imgui.is_window_collapsed()
        state.scroll_y = imgui.get_scroll_y()
        if not window:
            return
        try:
            _body(model, state, request)
        except Exception as exc:  # noqa: BLE001 - the panel never stops the loop
            state.failures += 1
            if state.last_failure != str(exc):
                log.warning("panel: %s: %s", type(exc).__name__, exc, exc_info=True)
            state.last_failure = str(exc)
            imgui.text_colored(RED, f"panel failed ({state.failures}x): {type(exc).__name__}: {exc}")


def _body(m: PanelModel, state: PanelState, request) -> None:
    h = m.header
    teaching = h.teaching
    if teaching and not state._was_teaching:
        state.select = "teach"
    state._was_teaching = teaching
    if h.stop is not None and state._stop_shown != h.stop.frame:
        state._stop_shown = h.stop.frame
        state.select = "hazards" if h.stop.case else "errors"
    draw_header(m, state, request)
    if not teaching:  # teaching mode's buttons take the controls' place
        draw_controls(m, state, request)
    avail = imgui.get_content_region_avail()
    if teaching and m.teaching is not None:
        with imgui_ctx.begin_group():
            _teaching_block(m, request)
        item_rect(state, "teaching")
        avail = imgui.get_content_region_avail()
    else:
        plot_h = int(min(max(avail.y * 0.2, 70), 260))
        draw_timing(m, state, plot_h)
        draw_stats(m)
    avail = imgui.get_content_region_avail()
    draw_timeline(m.timeline, state, avail.y)
    draw_frame_choice(m, state)
    _tabs(m, state, request)


def _teaching_block(m: PanelModel, request) -> None:
    """Teaching mode, at the top: the buttons, the phase strip, what happened, the spec's words."""
    command = draw_teaching(m.teaching)
    if command:
        request(command)


def _tabs(m: PanelModel, state: PanelState, request) -> None:
    """The tab bar of every tab of the table (app/ui/tabs/), the shown one's body below it."""
    want, state.select = state.select, None
    avail = imgui.get_content_region_avail()
    height = max(avail.y, 110)
    with imgui_ctx.begin_tab_bar("##tabs", TAB_BAR) as bar:
        if not bar:
            return
        for tab in tabs.table():
            key = tab.key
            if m.tab_keys and key not in m.tab_keys:
                continue
            part = m.tabs.get(key)
            label = f"{tab.title} {tab_count(tab.count(part) if part is not None else 0)}" if tab.count else tab.title
            with imgui_ctx.begin_tab_item(f"{label}###{key}", SET_SELECTED if want == key else 0) as shown:
                item_rect(state, f"tab_{key}")
                if shown:
                    state.tab = key
                    with imgui_ctx.begin_child(f"##tab_{key}", (0, height - imgui.get_frame_height() - 8)):
                        pos, size = imgui.get_window_pos(), imgui.get_window_size()
                        state.rects["tab_body"] = (int(pos.x), int(pos.y), int(pos.x + size.x), int(pos.y + size.y))
                        if part is None:
                            imgui.text_disabled(tab.waiting)
                        else:
                            tab.draw(part, m, request)
