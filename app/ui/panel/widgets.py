"""The panel's small widgets and its constants: tooltips, a combo with reasons, a left-to-right
flow, where an item was drawn (for tests), number and time labels, flags and colours.
Used by the panel's parts (app/ui/panel/) and the tabs (app/ui/tabs/)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx, implot
from app.ui.legend import f4, u32

if TYPE_CHECKING:
    from app.ui.panel.state import PanelState

TITLE = "glshare##panel"
TOOLTIP_W = 420  # tooltips wrap at this width (or the window's, when narrower)
LANE_H_MIN, LANE_H_MAX = 15, 44
HIT_PX = 6  # a bar narrower than this is hovered within this many pixels
Y_FLOOR_MS = 0.01  # the timing plot's floor (log scale); shorter phases sit on it

# ImGui flags as plain ints, computed once (an enum "|" is slow in Python, too slow for every frame)
WINDOW_FLAGS = int(imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_saved_settings
                   | imgui.WindowFlags_.no_bring_to_front_on_focus)
PLOT_FLAGS = int(implot.Flags_.no_menus | implot.Flags_.no_box_select | implot.Flags_.no_mouse_text
                 | implot.Flags_.no_legend)
# columns as wide as their contents, every frame (proportional weights are fixed the first time the
# table is drawn, from whatever its cells held then: the owner columns could stay a few pixels wide);
# the object column takes what is left
OWN_TABLE = int(imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.sizing_fixed_fit)
TAB_BAR = int(imgui.TabBarFlags_.fitting_policy_scroll)
DISABLED = int(imgui.SelectableFlags_.disabled)
HOVER_DISABLED = int(imgui.HoveredFlags_.allow_when_disabled)
ALWAYS = int(imgui.Cond_.always)
FIRST_USE = int(imgui.Cond_.first_use_ever)
SET_SELECTED = int(imgui.TabItemFlags_.set_selected)
AXIS_X, AXIS_Y = int(implot.ImAxis_.x1), int(implot.ImAxis_.y1)
LOG10 = int(implot.Scale_.log10)
NO_TICK_LABELS = int(implot.AxisFlags_.no_tick_labels)

CLEAR = (0.0, 0.0, 0.0, 0.0)  # a zero-alpha fill is skipped by ImGui: no pixels for llvmpipe to shade
TEXT = u32(legend.TEXT_RGB)
DIM_U32 = u32(legend.DIM_RGB)
GRID = u32((78, 80, 98))
LANE_BG = u32((255, 255, 255), 10)
HIGHLIGHT = u32((255, 255, 255))
DIM = f4(legend.DIM_RGB)
RED = f4(legend.ERROR_RGB)
HAZARD = f4(legend.HAZARD_RGB)
GREEN = f4(legend.OK_RGB)
OWNER_F4 = {k: f4(v) for k, v in legend.OWNER_RGB.items()}
PHASE_F4 = {k: f4(v) for k, v in legend.PHASE_RGB.items()}


def tooltip(text: str) -> None:
    """A tooltip wrapped inside the window (long spec sentences, refusal reasons)."""
    io = imgui.get_io()
    width = max(min(TOOLTIP_W, io.display_size.x - 24), 80)
    with imgui_ctx.begin_tooltip():
        with imgui_ctx.push_text_wrap_pos(width):
            imgui.text_unformatted(text)


def hover_tip(text: str, flags: int = 0) -> None:
    if text and imgui.is_item_hovered(flags):
        tooltip(text)


def tab_count(n: int) -> str:
    """A count of fixed width for a tab title (so tabs never move under the cursor)."""
    return f"{n:>3d}" if n < 1000 else "1k+"


def nice_step(raw: float) -> float:
    """The 1-2-5 step at or above ``raw`` (> 0)."""
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    exp = math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10 ** exp >= raw - 1e-12:
            return m * 10 ** exp
    return 10.0 ** (exp + 1)


def time_label(ms: float, step: float) -> str:
    """A tick label with its unit: ms from 1 ms steps up, us below."""
    if step >= 1.0 - 1e-9:
        return f"{ms:.0f} ms"
    if step >= 0.1 - 1e-9:
        return f"{ms:.1f} ms"
    return f"{ms * 1e3:.0f} us"


def duration_label(ms: float) -> str:
    return f"{ms:.2f} ms" if ms >= 0.995 else f"{ms * 1e3:.0f} us"



def wrapping_text(text: str, color) -> None:
    """``text`` on the current line when it fits, else on the next (never clipped at the edge)."""
    imgui.same_line()
    if imgui.calc_text_size(text).x > imgui.get_content_region_avail().x:
        imgui.new_line()
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_colored(color, text)


def combo(label: str, width: float, current: str, options, state: PanelState | None = None,
           name: str = "") -> str | None:
    """A combo whose unavailable options are greyed out with their reason as a tooltip; with
    ``state``, where its box (the label beside it left out) and each option of its open list were
    drawn (``name``, ``name=option``)."""
    imgui.set_next_item_width(width)
    chosen = None
    x, y = imgui.get_cursor_screen_pos()
    opened = imgui.begin_combo(label, current)
    if state is not None:
        state.rects[name] = (int(x), int(y), int(x + width), int(y + imgui.get_frame_height()))
    if not opened:
        hover_tip(next((o.reason for o in options if o.name == current and o.reason), ""))
        return None
    try:
        for o in options:
            clicked, _ = imgui.selectable(o.name, o.name == current, 0 if o.available else DISABLED)
            if state is not None:
                item_rect(state, f"{name}={o.name}")
            if o.reason and imgui.is_item_hovered(HOVER_DISABLED):
                tooltip(o.reason if o.available else f"not available: {o.reason}")
            if clicked and o.available and o.name != current:
                chosen = o.name
    finally:
        imgui.end_combo()
    return chosen


class Flow:
    """Items left to right, wrapping onto a new line when the next one would not fit."""

    def __init__(self) -> None:
        self.right = imgui.get_cursor_screen_pos().x + imgui.get_content_region_avail().x
        self.first = True

    def next(self, width: float) -> None:
        if not self.first:
            imgui.same_line()
            if imgui.get_cursor_screen_pos().x + width + 4 > self.right:
                imgui.new_line()
        self.first = False


def label_w(label: str) -> float:
    return imgui.calc_text_size(label).x + imgui.get_style().item_inner_spacing.x



def item_rect(state: PanelState, name: str) -> None:
    """Remember where the last item was drawn (ImGui pixels), for tests driving the window."""
    a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    state.rects[name] = (int(a.x), int(a.y), int(b.x), int(b.y))
