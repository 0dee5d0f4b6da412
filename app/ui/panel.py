"""The panel: header, controls, the timing plot, the frame timeline, and the tabs (owners, errors,
hazards, teaching, the error lab, memory, capabilities).

Drawn with imgui-bundle (ImGui + ImPlot) from the panel model (``app/ui/model.py``) only: no GL or
CL call in here, and no reference to the session. Controls never act in the middle of the ImGui
frame: they ``request`` a command of ``app/session/controls.py``, run after the frame.

The panel is a column at the window's left (``app/ui/layout.py``): as tall as the window, as wide
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
import math

import numpy as np

from app.ui import layout, legend
from app.ui.bundle import imgui, imgui_ctx, implot, implot_ctx
from app.ui.legend import f4, u32
from app.ui.model import (
    KIND_BOOKKEEPING,
    KIND_GL,
    KIND_OWNER,
    KIND_PHASE,
    KIND_QUEUED,
    KIND_WAIT,
    LANE_CPU,
    SERIES,
    Finding,
    PanelModel,
    Timeline,
)

log = logging.getLogger(__name__)

TITLE = "glshare##panel"
TOOLTIP_W = 420  # tooltips wrap at this width (or the window's, when narrower)
LANE_H_MIN, LANE_H_MAX = 15, 44
HIT_PX = 6  # a bar narrower than this is hovered within this many pixels
Y_FLOOR_MS = 0.01  # the timing plot's floor (log scale); shorter phases sit on it

# ImGui flags as plain ints, computed once (an enum "|" costs ~20 us in Python)
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
TABS = (("Owners", "ownership"), ("Errors", "errors"), ("Hazards", "hazards"), ("Teach", "teach"),
        ("Lab", "lab"), ("Memory", "memory"), ("Caps", "caps"))


class PanelState:
    """What the panel keeps between redraws (held by the UI host)."""

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure = ""
        self.tab = "ownership"  # the tab shown: the model builds the lab / caps parts only then
        self.select: str | None = None  # a tab to bring to the front at the next redraw
        self.chosen: int | None = None  # the frame the user chose; None: follow the run
        self.zoom: tuple[float, float] | None = None  # the timeline's view (ms from the frame's start)
        self.auto_span = 0.0  # the timeline's fitted span (ms): changes only when frames outgrow it
        self._small_for = 0
        self._small_max = 0.0
        self.window: tuple[int, int, int, int] | None = None  # the panel's rectangle (ImGui pixels)
        self.collapsed = False
        self.scroll_y = 0.0
        self.spots: dict[str, tuple[int, int, str]] = {}  # where some texts were drawn (tests)
        self.rects: dict[str, tuple[int, int, int, int]] = {}  # where some items were drawn (tests)
        self._was_teaching = False
        self._stop_shown: int | None = None


# -- small helpers ----------------------------------------------------------------------------------
def tooltip(text: str) -> None:
    """A tooltip wrapped inside the window (long spec sentences, refusal reasons)."""
    io = imgui.get_io()
    width = max(min(TOOLTIP_W, io.display_size.x - 24), 80)
    with imgui_ctx.begin_tooltip():
        with imgui_ctx.push_text_wrap_pos(width):
            imgui.text_unformatted(text)


def _hover_tip(text: str, flags: int = 0) -> None:
    if text and imgui.is_item_hovered(flags):
        tooltip(text)


def _count(n: int) -> str:
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


def draw_panel(model: PanelModel, state: PanelState, request) -> None:
    """Issue the panel's widgets for one ImGui frame (inside ``ImGuiLayer.draw``); ``request(name,
    **args)`` queues a command for after the frame."""
    io = imgui.get_io()
    fb_w, fb_h = max(int(io.display_size.x), 1), max(int(io.display_size.y), 1)
    lo, hi = layout.width_limits(fb_w)
    height = layout.panel_height(fb_h)
    imgui.set_next_window_pos((layout.MARGIN, layout.MARGIN), ALWAYS)
    imgui.set_next_window_size((layout.default_width(fb_w), height), FIRST_USE)
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
    _header(m, state, request)
    if not teaching:  # teaching mode's buttons take the controls' place
        _controls(m, state, request)
    avail = imgui.get_content_region_avail()
    if teaching and m.teaching is not None:
        with imgui_ctx.begin_group():
            _teaching_block(m, request)
        _item_rect(state, "teaching")
        avail = imgui.get_content_region_avail()
    else:
        plot_h = int(min(max(avail.y * 0.2, 70), 260))
        _timing(m, state, plot_h)
        _stats(m)
    avail = imgui.get_content_region_avail()
    _timeline(m.timeline, state, avail.y)
    _frame_choice(m, state)
    _tabs(m, state, request)


# -- header and controls ----------------------------------------------------------------------------
def _header(m: PanelModel, state: PanelState, request) -> None:
    h = m.header
    if h.model_error:
        imgui.text_colored(RED, f"panel model: {h.model_error}")
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_unformatted(h.scene_title or h.scene)
    # the frame the panel describes: the owners and the timeline show the same one
    imgui.text_unformatted(f"{h.backend} | sync {h.sync} | frame")
    imgui.same_line(0, 4)
    pos = imgui.get_cursor_screen_pos()
    number = "-" if h.frame is None else str(h.frame)
    imgui.text_unformatted(number)
    state.spots["header_frame"] = (int(pos.x), int(pos.y), number)
    tags = []
    if h.in_progress:
        tags.append("in progress" if h.stop is None else "stopped")
    elif h.chosen:
        tags.append(f"chosen; newest {h.newest}")
    elif h.newest is not None and h.frame is not None and h.newest != h.frame and not h.paused:
        tags.append(f"newest fully timed; run at {h.newest}")
    if h.setup_now:
        tags.append(f"an earlier set-up; running now: {h.setup_now}")
    if h.paused:
        tags.append("PAUSED")
    if tags:
        _wrapping_text("(" + ", ".join(tags) + ")", HAZARD if h.stop is not None else (1.0, 0.85, 0.4, 1.0))
    else:  # the line stays, empty: the rows below do not move under the cursor as the tags come and go
        imgui.text_unformatted(" ")
    imgui.text_unformatted(f"{h.frame_ms:.2f} ms/frame ({h.fps:.0f} fps, median"
                           + (" of the set-up now)" if h.setup_now else ")"))
    _wrapping_text(f"clock CL\u00b1{h.clock_cl_us:.0f} GL\u00b1{h.clock_gl_us:.0f} us", DIM)
    _item_rect(state, "clock")
    _hover_tip("CL device time and GL time are put on the host clock; +/- is how well (Caps tab)")
    if h.errors or h.hazards:
        _wrapping_text(f"{h.errors} errors, {h.hazards} hazards", RED)
        _hover_tip("counts since the last clear (the Errors and Hazards tabs)")
    if h.stop is not None:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(HAZARD, f"STOPPED at frame {h.stop.frame} (--strict): {h.stop.reason}")
    if h.status:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored((0.75, 0.85, 1.0, 1.0), f"> {h.status}")


def _wrapping_text(text: str, color) -> None:
    """``text`` on the current line when it fits, else on the next (never clipped at the edge)."""
    imgui.same_line()
    if imgui.calc_text_size(text).x > imgui.get_content_region_avail().x:
        imgui.new_line()
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_colored(color, text)


def _combo(label: str, width: float, current: str, options, state: PanelState | None = None,
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
        _hover_tip(next((o.reason for o in options if o.name == current and o.reason), ""))
        return None
    try:
        for o in options:
            clicked, _ = imgui.selectable(o.name, o.name == current, 0 if o.available else DISABLED)
            if state is not None:
                _item_rect(state, f"{name}={o.name}")
            if o.reason and imgui.is_item_hovered(HOVER_DISABLED):
                tooltip(o.reason if o.available else f"not available: {o.reason}")
            if clicked and o.available and o.name != current:
                chosen = o.name
    finally:
        imgui.end_combo()
    return chosen


class _Flow:
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


def _label_w(label: str) -> float:
    return imgui.calc_text_size(label).x + imgui.get_style().item_inner_spacing.x


def _controls(m: PanelModel, state: PanelState, request) -> None:
    c = m.controls
    if c is None:
        return
    flow = _Flow()
    frame_h = imgui.get_frame_height()
    flow.next(90 + _label_w("scene"))
    scene = _combo("scene", 90, c.scene, c.scenes)
    if scene:
        request("switch", scene=scene)
    flow.next(104 + _label_w("backend"))
    backend = _combo("backend", 104, c.backend, c.backends)
    if backend:
        request("switch", backend=backend)
    flow.next(76 + _label_w("sync"))
    sync = _combo("sync", 76, c.sync, c.syncs)
    if sync:
        request("switch", sync=sync)
    flow.next(90 + _label_w("size"))
    from app.session.views import Choice

    size = _combo("size", 90, c.size, tuple(Choice(s, True) for s in c.sizes))
    if size:
        from app.scenes import scene_class

        request("set_size", size=None if size == "window" else scene_class(c.scene).parse_size(size))
    flow.next(frame_h + _label_w("pause"))
    changed, paused = imgui.checkbox("pause", c.paused)
    if changed:
        request("set_paused", paused=paused)
    flow.next(frame_h + _label_w("vsync"))
    changed, _ = imgui.checkbox("vsync", c.vsync)
    if changed:
        request("toggle_vsync")
    flow.next(imgui.calc_text_size("write trace").x + 2 * imgui.get_style().frame_padding.x)
    if imgui.button("write trace"):
        request("write_trace")
    _item_rect(state, "write_trace")
    _hover_tip(f"last written: {c.trace_path}" if c.trace_path else (c.trace_error or "writes a Perfetto trace of "
                                                                     "the kept frames"))
    _scene_options(c.options, state, request)


def _scene_options(options, state: PanelState, request) -> None:
    """The running scene's own options (``Scene.options()``), below the controls: checkboxes, combos
    and sliders left to right, a text row (the camera, the Julia constant) on a line of its own with
    its button. Each change requests its controls command (run after the frame); the keys that
    step an option are its tooltip."""
    if not options:
        return
    from app.session.views import Choice

    style = imgui.get_style()
    frame_h = imgui.get_frame_height()
    pad = 2 * style.frame_padding.x
    flow = _Flow()
    # the widgets first, on shared lines; then each text row on one line with its button
    for o in sorted(options, key=lambda o: o.kind == "text"):
        tip = f"keys: {o.keys}" if o.keys else ""
        label = f"{o.title}##opt_{o.name}"
        if o.kind == "toggle":
            flow.next(frame_h + _label_w(o.title))
            changed, value = imgui.checkbox(label, bool(o.value))
            _item_rect(state, f"option_{o.name}")
            _hover_tip(tip)
            if changed and o.command:
                request(o.command, value=bool(value))
        elif o.kind in ("choice", "size"):
            width = max(imgui.calc_text_size(ch).x for ch in o.choices) + pad + frame_h + 4
            flow.next(width + _label_w(o.title))
            chosen = _combo(label, width, str(o.value), tuple(Choice(ch, True) for ch in o.choices), state,
                            f"option_{o.name}")
            _hover_tip(tip)
            if chosen and o.command:
                request(o.command, value=chosen)
        elif o.kind == "int":
            width = 110
            flow.next(width + _label_w(o.title))
            imgui.set_next_item_width(width)
            x, y = imgui.get_cursor_screen_pos()
            changed, value = imgui.slider_int(label, int(o.value), o.low, o.high)
            state.rects[f"option_{o.name}"] = (int(x), int(y), int(x + width), int(y + frame_h))  # the slider alone
            _hover_tip(tip + (f" ({o.low} .. {o.high})" if tip else f"{o.low} .. {o.high}"))
            if changed and value != o.value and o.command:
                request(o.command, value=int(value))
        else:  # "text": its title and value on one line (the title's parenthesis goes to the tooltip)
            short, _, more = o.title.partition(" (")
            tip = "; ".join(t for t in (more.rstrip(")"), tip) if t)
            imgui.text_disabled(f"{short}:")  # on a new line: no same_line after the widgets before it
            _item_rect(state, f"option_{o.name}")
            _hover_tip(tip)
            imgui.same_line()
            _wrapping_text(str(o.value), legend.f4(legend.TEXT_RGB))
            if o.button and o.command:
                imgui.same_line()
                bw = imgui.calc_text_size(o.button).x + pad
                if imgui.get_content_region_avail().x < bw:
                    imgui.new_line()
                if imgui.button(f"{o.button}##opt_{o.name}"):
                    request(o.command)
                _item_rect(state, f"option_{o.name}_button")
                _hover_tip(tip)
            flow.first = True  # the next option starts a line of its own


# -- teaching ------------------------------------------------------------------------------------------
def _teaching_block(m: PanelModel, request) -> None:
    """Teaching mode, at the top: the buttons, the phase strip, what happened, the spec's words."""
    from app.ui.teaching import draw_teaching

    command = draw_teaching(m.teaching)
    if command:
        request(command)


# -- timing ----------------------------------------------------------------------------------------------
_SPECS: dict = {}


def _specs() -> dict:
    """One ImPlot line style per series, made once (needs no context)."""
    if not _SPECS:
        for name in SERIES:
            spec = implot.Spec()
            spec.line_color = f4(legend.PHASE_RGB[name])
            spec.line_weight = 1.5 if name == "frame" else 1.0
            _SPECS[name] = spec
        spec = implot.Spec()
        spec.line_color = (1.0, 1.0, 1.0, 0.55)
        _SPECS["chosen"] = spec
    return _SPECS


def _timing(m: PanelModel, state: PanelState, height: int) -> None:
    t = m.timing
    w = imgui.get_content_region_avail().x
    if t.count < 2:
        imgui.text_disabled("timing: waiting for frames")
        imgui.dummy((w, max(height - imgui.get_text_line_height_with_spacing(), 1)))
        return
    xs = t.frames
    top = max(t.stats["frame"][1], 0.1) * 3.0  # headroom: the frame line never hugs the top
    shown = m.header.frame
    with implot_ctx.push_style_color(implot.Col_.frame_bg, CLEAR), \
            implot_ctx.push_style_color(implot.Col_.plot_bg, CLEAR), \
            implot_ctx.begin_plot("##timing", (w, height), PLOT_FLAGS) as plot:
        if plot:
            implot.setup_axis(AXIS_X, None, 0)  # frames
            implot.setup_axis(AXIS_Y, None, 0)
            implot.setup_axis_scale(AXIS_Y, LOG10)  # phases span 10 us .. 100 ms: all of them readable
            x_lo, x_hi = float(xs[0]), float(xs[-1])
            if x_hi <= x_lo:
                x_hi = x_lo + 1.0
            implot.setup_axis_limits(AXIS_X, x_lo, x_hi, ALWAYS)
            implot.setup_axis_limits(AXIS_Y, Y_FLOOR_MS, top, ALWAYS)
            specs = _specs()
            for name in SERIES:
                # a log axis shows no 0: anything under the floor sits on it (NaN stays a gap)
                implot.plot_line(name, xs, np.maximum(t.series[name], Y_FLOOR_MS), spec=specs[name])
            if shown is not None and x_lo <= shown <= x_hi:
                implot.plot_inf_lines("##shown", np.array([float(shown)]), spec=specs["chosen"])
            if implot.is_plot_hovered():
                frame = int(round(implot.get_plot_mouse_pos().x))
                if imgui.is_mouse_clicked(0):
                    state.chosen = frame
                tooltip(f"frame {frame}: click to show it in the timeline")
    _item_rect(state, "plot")


def _item_rect(state: PanelState, name: str) -> None:
    """Remember where the last item was drawn (ImGui pixels), for tests driving the window."""
    a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    state.rects[name] = (int(a.x), int(a.y), int(b.x), int(b.y))


def _stats(m: PanelModel) -> None:
    """Median / p95 under the plot: plain text at fixed columns (an ImGui table costs ~10x more)."""
    t = m.timing
    dl = imgui.get_window_draw_list()
    x0, y0 = imgui.get_cursor_screen_pos()
    w = imgui.get_content_region_avail().x
    col_w = w / (len(SERIES) + 1)
    line = imgui.get_text_line_height_with_spacing()
    for r, label in enumerate(("ms", "median", "p95")):
        dl.add_text((x0, y0 + r * line), DIM_U32, label)
    for k, name in enumerate(SERIES):
        cx = x0 + (k + 1) * col_w
        med, p95 = t.stats.get(name, (0.0, 0.0))
        dl.add_text((cx, y0), u32(legend.PHASE_RGB[name]), name)
        dl.add_text((cx, y0 + line), TEXT, f"{med:.2f}")
        dl.add_text((cx, y0 + 2 * line), TEXT, f"{p95:.2f}")
    imgui.dummy((w, 3 * line))
    _hover_tip(f"median and 95th percentile over the last {t.in_stats} frames"
               + (f" of {t.stats_of}" if t.stats_of else "")
               + "; frame: present to present"
               + (f"; {t.left_out} frames without a present-to-present period (the first, the first after "
                  "a pause, stepped ones) are left out" if t.left_out else ""))


# -- the timeline ---------------------------------------------------------------------------------------------
_COLOR_CACHE: dict = {}


def _bar_color(kind: int, name: str) -> int:
    col = _COLOR_CACHE.get((kind, name))
    if col is None:
        if kind == KIND_WAIT:
            rgb = legend.WAIT_RGB
        elif kind == KIND_BOOKKEEPING:
            rgb = legend.BOOKKEEPING_RGB
        elif kind == KIND_GL:
            rgb = legend.GL_PASS_RGB.get(name, legend.PHASE_RGB["render"])
        elif kind == KIND_OWNER:
            rgb = legend.OWNER_RGB.get(name, legend.OWNER_RGB[legend.GL])
        else:
            rgb = legend.PHASE_RGB.get(name, (180, 180, 100))
        col = _COLOR_CACHE[(kind, name)] = u32(rgb, 90 if kind == KIND_QUEUED else 255)
    return col


SHRINK_AFTER = 6  # redraws in a row that fit a smaller span before the timeline zooms in


def _stable_span(state: PanelState, extent: float) -> float:
    """The timeline's fitted span, a 1-2-5 step: grows at once to hold a longer frame, shrinks only
    after SHRINK_AFTER redraws in a row fitted a smaller one, so bars do not jump between redraws."""
    want = nice_step(max(extent, 1e-3) * 1.05)
    if want >= state.auto_span:
        state.auto_span, state._small_for, state._small_max = want, 0, 0.0
    else:
        state._small_for += 1
        state._small_max = max(state._small_max, want)
        if state._small_for >= SHRINK_AFTER:
            state.auto_span, state._small_for, state._small_max = state._small_max, 0, 0.0
    return state.auto_span


def _sequence_row(dl, tl: Timeline, x: float, y: float, right: float, left: float) -> float:
    """The frame's phases in the order they ran, each in its colour with its duration: the order at a
    glance, and the legend of the phase colours. Returns the row's bottom."""
    line = imgui.get_text_line_height()
    done = {}
    for i in np.nonzero((tl.lane == LANE_CPU) & (tl.kind == KIND_PHASE))[0].tolist():
        done[tl.names[i]] = float(tl.end[i] - tl.start[i])
    cx, cy = x, y
    for k, name in enumerate(("acquire", "compute", "release", "render", "panel")):
        text = f"{name} {duration_label(done[name])}" if name in done else name
        sep = " > " if k else ""
        w = imgui.calc_text_size(sep + text).x + 2
        if cx + w > right and cx > left:
            cx, cy, sep = left, cy + line + 1, ""
            w = imgui.calc_text_size(text).x + 2
        if sep:
            dl.add_text((cx, cy), DIM_U32, sep)
            cx += imgui.calc_text_size(sep).x
        rgb = legend.PHASE_RGB[name]
        dl.add_text((cx, cy), u32(rgb) if name in done else u32(rgb, 110), text)
        cx += imgui.calc_text_size(text).x + 2
    return cy + line + 1


def _legend_row(dl, x: float, y: float, right: float) -> float:
    """The legend of the other colours (the phases' is the sequence row): the CPU waiting, glshare's
    bookkeeping before a wait, and the owners of a shared object; returns the row's bottom."""
    line = imgui.get_text_line_height()
    box = line - 4
    items = [(legend.WAIT_RGB, "CPU waits"), (legend.BOOKKEEPING_RGB, "glshare's bookkeeping"), None,
             (legend.OWNER_RGB[legend.GL], "GL owns"), (legend.OWNER_RGB[legend.CL], "CL owns"),
             ("stripes", "hand-over in flight")]
    left = x
    cx, cy = x, y
    for item in items:
        if item is None:
            cx += 10
            continue
        rgb, text = item
        w = box + 3 + imgui.calc_text_size(text).x + 7
        if cx + w > right and cx > left:
            cx, cy = left, cy + line + 1
        if rgb == "stripes":
            _stripes(dl, cx, cy + 2, cx + box, cy + 2 + box)
        else:
            dl.add_rect_filled((cx, cy + 2), (cx + box, cy + 2 + box), u32(rgb))
        dl.add_text((cx + box + 3, cy), DIM_U32, text)
        cx += w
    return cy + line + 2


def _stripes(dl, x0: float, y0: float, x1: float, y1: float) -> None:
    """A hand-over: the two owners' colours in vertical stripes 3 px wide."""
    gl, cl = u32(legend.OWNER_RGB[legend.GL]), u32(legend.OWNER_RGB[legend.CL])
    x, k = x0, 0
    while x < x1:
        dl.add_rect_filled((x, y0), (min(x + 3, x1), y1), gl if k % 2 == 0 else cl)
        x, k = x + 3, k + 1


def _timeline(tl: Timeline, state: PanelState, avail_h: float) -> None:
    """One frame on the host clock: a lane per CPU phase row, wait, CL queue, GL and shared object."""
    dl = imgui.get_window_draw_list()
    x0, y0 = (int(v) for v in imgui.get_cursor_screen_pos())
    w = int(imgui.get_content_region_avail().x)
    x1 = x0 + w
    line = int(imgui.get_text_line_height())
    # title row: which frame (the header's), then the two legends
    title = "f" if not tl.in_progress else "now f"
    number = "-" if tl.frame is None else str(tl.frame)
    dl.add_text((x0, y0), TEXT, title)
    nx = x0 + int(imgui.calc_text_size(title).x)
    dl.add_text((nx, y0), TEXT, number)
    state.spots["timeline_frame"] = (nx, y0, number)
    y = int(_sequence_row(dl, tl, nx + imgui.calc_text_size(number + "  ").x, y0, x1, x0))
    y = int(_legend_row(dl, x0, y, x1))
    lanes = tl.lanes or ()
    n = max(len(lanes), 4)
    tabs_min = 120  # room left for the tabs under the timeline
    lane_h = int(min(max((avail_h - (y - y0) - 2 * line - 12 - tabs_min) / n, LANE_H_MIN), LANE_H_MAX))
    label_w = int(min(max([imgui.calc_text_size(lane.name).x for lane in lanes] + [50]) + 8, 120))
    bx0, bx1 = x0 + label_w, x1 - 4
    top = y + line + 2  # under the tick labels
    bottom = top + n * lane_h
    # ticks and lanes
    extent = tl.extent_ms if tl.frame is not None else 0.0
    if tl.frame is None:
        span = 1.0
    elif tl.stepped or tl.in_progress:  # teaching: the frame so far, growing phase by phase
        span = nice_step(max(extent, 0.5) * 1.1)
    else:
        span = _stable_span(state, max(extent, tl.next_ms or 0.0))
    t0, t1 = state.zoom if state.zoom is not None else (0.0, span)
    t1 = max(t1, t0 + 1e-4)
    scale = (bx1 - bx0) / (t1 - t0)
    step = nice_step((t1 - t0) / max(2.0, (bx1 - bx0) / 80.0))
    tick = math.ceil(t0 / step) * step
    while tick <= t1 + 1e-9:
        tx = bx0 + (tick - t0) * scale
        dl.add_line((tx, top - 2), (tx, bottom), GRID)
        text = time_label(tick, step)
        if tx + 2 + imgui.calc_text_size(text).x <= x1:
            dl.add_text((tx + 2, y), DIM_U32, text)
        tick += step
    for r in range(n):
        ly = top + r * lane_h
        if r % 2 == 0:
            dl.add_rect_filled((x0, ly), (x1, ly + lane_h), LANE_BG)
        if r < len(lanes):
            dl.add_text((x0 + 2, ly + (lane_h - line) / 2), TEXT, lanes[r].name)
    imgui.set_cursor_screen_pos((bx0, y))
    imgui.invisible_button("##timeline", (max(bx1 - bx0, 1), max(bottom - y, 1)))
    _item_rect(state, "timeline")
    hovered, active = imgui.is_item_hovered(), imgui.is_item_active()
    if hovered:
        imgui.set_item_key_owner(imgui.Key.mouse_wheel_y)  # the wheel zooms here, it does not scroll
    _interact(state, hovered, active, bx0, scale, t0, t1, span)
    if tl.frame is None or not tl.count:
        dl.add_text((bx0 + 4, top + 2), TEXT, "timeline: waiting for a complete frame")
    elif not _bars(dl, tl, state, bx0, bx1, top, lane_h, t0, scale, hovered) and hovered:
        tooltip(f"frame {tl.frame} on {tl.segment}\nwheel: zoom, drag: pan, double-click: fit"
                + ("" if state.zoom is None else " (zoomed now)") + "".join(f"\n{n}" for n in tl.notes))
    # lane labels' tooltips
    mouse = imgui.get_io().mouse_pos
    if x0 <= mouse.x < bx0 and top <= mouse.y < bottom and imgui.is_window_hovered():
        r = int((mouse.y - top) // lane_h)
        if 0 <= r < len(lanes):
            tooltip(lanes[r].title)
    for r, note in ((2, tl.cl_note), (3, tl.gl_note)):  # what a lane is missing, in the lane
        if note and r < len(lanes):
            dl.add_text((bx0 + 4, top + r * lane_h + (lane_h - line) / 2), DIM_U32, note)
    imgui.set_cursor_screen_pos((x0, bottom + 3))


def _interact(state: PanelState, hovered: bool, active: bool, bx0: float, scale: float, t0: float, t1: float,
              span: float) -> None:
    io = imgui.get_io()
    if hovered and imgui.is_mouse_double_clicked(0):
        state.zoom = None
        return
    if hovered and io.mouse_wheel:
        at = t0 + (io.mouse_pos.x - bx0) / scale
        factor = 0.8 ** io.mouse_wheel
        new_len = min(max((t1 - t0) * factor, 0.005), max(span * 4, 1.0))
        frac = (at - t0) / (t1 - t0)
        state.zoom = (at - frac * new_len, at - frac * new_len + new_len)
    if active and imgui.is_mouse_dragging(0, 2.0):
        dx = io.mouse_delta.x
        if dx:
            shift = -dx / scale
            a, b = state.zoom if state.zoom is not None else (t0, t1)
            state.zoom = (a + shift, b + shift)


def _frame_choice(m: PanelModel, state: PanelState) -> None:
    """While paused a slider over the kept frames; "follow" goes back to the newest frame."""
    h, t = m.header, m.timing
    if h.paused and not h.in_progress and not h.teaching and t.first_kept is not None and t.newest_kept > t.first_kept:
        imgui.set_next_item_width(max(imgui.get_content_region_avail().x - 130, 60))
        current = h.frame if h.frame is not None else t.newest_kept
        changed, value = imgui.slider_int("##frame", current, t.first_kept, t.newest_kept, "frame %d")
        if changed:
            state.chosen = value
        _hover_tip("any frame the run kept: the header, the owners and the timeline follow it")
        imgui.same_line()
    if h.chosen:
        if imgui.button("follow the run"):
            state.chosen = None
        _hover_tip("show the newest frame again")
    elif h.paused and not h.in_progress and not h.teaching:
        imgui.text_disabled("(newest)")


def _bars(dl, tl: Timeline, state: PanelState, bx0: float, bx1: float, top: float, lane_h: int, t0: float,
          scale: float, hovered: bool) -> bool:
    """Draw the bars, the owners, the markers; True when a tooltip for one of them was shown."""
    kind = tl.kind
    xa = bx0 + (tl.start - t0) * scale
    xb = bx0 + (tl.end - t0) * scale
    visible = (xb >= bx0) & (xa <= bx1)
    xa_c, xb_c = np.clip(xa, bx0, bx1), np.clip(xb, bx0, bx1)
    xb_c = np.maximum(xb_c, xa_c + 1.0)  # what ran is at least one pixel wide
    lane_top = top + tl.lane * lane_h
    queued = kind == KIND_QUEUED
    # thin, low in the lane: a command waiting in its queue, and glshare's bookkeeping inside a phase
    y_top = np.where(queued | (kind == KIND_BOOKKEEPING), lane_top + lane_h * 0.62, lane_top + 2)
    y_bot = lane_top + lane_h - 2
    names = tl.names
    idx = np.nonzero(visible)[0]
    # widest first, so a bar stretched to its one pixel is never covered by a neighbour
    idx = idx[np.argsort(-(xb_c[idx] - xa_c[idx]), kind="stable")]
    dl.push_clip_rect((bx0, top), (bx1 + 1, top + len(tl.lanes) * lane_h), True)
    label_room = imgui.calc_text_size("m").x
    for i, a, yt, b, yb, k in zip(idx.tolist(), xa_c[idx].tolist(), y_top[idx].tolist(), xb_c[idx].tolist(),
                                  y_bot[idx].tolist(), kind[idx].tolist()):
        name = names[i]
        if k == KIND_OWNER and name in legend.HANDOVER:
            _stripes(dl, a, yt, b, yb)
        else:
            dl.add_rect_filled((a, yt), (b, yb), _bar_color(k, name))
        if b - a > label_room * 4 and k not in (KIND_QUEUED, KIND_BOOKKEEPING):  # a label where it fits
            dur = tl.end[i] - tl.start[i]
            text = f"{name} {duration_label(dur)}"
            tw = imgui.calc_text_size(text).x
            if tw > b - a - 4:
                text = name
                tw = imgui.calc_text_size(text).x
            if tw <= b - a - 4:
                dark = k in (KIND_OWNER,) or name in ("acquire", "compute", "panel")
                dl.add_text((a + 2, yt + (yb - yt - imgui.get_text_line_height()) / 2),
                            u32((20, 20, 28)) if dark else u32((250, 250, 250)), text)
    if tl.current_phase:  # teaching: the phase that ran last, outlined on the CPU lane
        for i in np.nonzero((tl.lane == LANE_CPU) & (kind == KIND_PHASE))[0].tolist():
            if names[i] == tl.current_phase:
                dl.add_rect((float(xa_c[i]) - 2, top + 0.5), (float(xb_c[i]) + 2, top + lane_h - 0.5), HIGHLIGHT,
                            0.0, 2.0)
    if tl.next_ms is not None:
        nx = bx0 + (tl.next_ms - t0) * scale
        if bx0 <= nx <= bx1:
            dl.add_line((nx, top), (nx, top + len(tl.lanes) * lane_h), HIGHLIGHT, 1.0)
            dl.add_text((nx + 2, top), DIM_U32, f"f{tl.frame + 1}")
    marks = []
    for mk in tl.markers:
        mx = bx0 + (mk.t_ms - t0) * scale
        my = top + mk.lane * lane_h
        col = u32(legend.HAZARD_RGB if mk.kind == "hazard" else legend.ERROR_RGB)
        if mk.kind == "hazard":
            dl.add_triangle_filled((mx, my + lane_h - 2), (mx - 5, my + 2), (mx + 5, my + 2), col)
        else:
            dl.add_line((mx - 4, my + 3), (mx + 4, my + lane_h - 3), col, 2.0)
            dl.add_line((mx + 4, my + 3), (mx - 4, my + lane_h - 3), col, 2.0)
        marks.append((mx, my, mk))
    dl.pop_clip_rect()
    if not hovered:
        return False
    m = imgui.get_io().mouse_pos
    for mx, my, mk in marks:
        if abs(m.x - mx) <= HIT_PX and my <= m.y <= my + lane_h:
            tooltip(f"{mk.title} (frame {tl.frame})\n{mk.text}")
            return True
    lane = int((m.y - top) // lane_h)
    pad = np.maximum((HIT_PX - (xb_c - xa_c)) / 2, 0)
    hit = np.nonzero(visible & (tl.lane == lane) & (xa_c - pad <= m.x) & (m.x <= xb_c + pad))[0]
    if hit.size:
        i = int(hit[np.argmin(xb_c[hit] - xa_c[hit])])  # the narrowest under the cursor
        s, e = float(tl.start[i]), float(tl.end[i])
        what = tl.lanes[int(tl.lane[i])].name
        kind_text = {KIND_QUEUED: " (waiting in the queue)", KIND_OWNER: "",
                     KIND_BOOKKEEPING: " (glshare's reads of earlier frames' stamps, before the wait)"}.get(int(kind[i]), "")
        owner = legend.OWNER_TITLES.get(names[i], "") if int(kind[i]) == KIND_OWNER else ""
        tooltip(f"{what}: {owner or names[i]}{kind_text}, frame {tl.frame}\n"
                f"{s:.3f} -> {e:.3f} ms ({duration_label(e - s)})")
        return True
    return False


# -- tabs ------------------------------------------------------------------------------------------------------
def _tabs(m: PanelModel, state: PanelState, request) -> None:
    want, state.select = state.select, None
    counts = {"errors": m.errors.total, "hazards": m.hazards.total}
    avail = imgui.get_content_region_avail()
    height = max(avail.y, 110)
    with imgui_ctx.begin_tab_bar("##tabs", TAB_BAR) as bar:
        if not bar:
            return
        for title, key in TABS:
            label = f"{title} {_count(counts[key])}" if key in counts else title
            with imgui_ctx.begin_tab_item(f"{label}###{key}", SET_SELECTED if want == key else 0) as tab:
                _item_rect(state, f"tab_{key}")
                if tab:
                    state.tab = key
                    with imgui_ctx.begin_child(f"##tab_{key}", (0, height - imgui.get_frame_height() - 8)):
                        pos, size = imgui.get_window_pos(), imgui.get_window_size()
                        state.rects["tab_body"] = (int(pos.x), int(pos.y), int(pos.x + size.x), int(pos.y + size.y))
                        _TAB_BODIES[key](m, request, state)


def _ownership(m: PanelModel, request, state: PanelState) -> None:
    o = m.owners
    if not o.rows:
        imgui.text_disabled("no shared objects")
        return
    imgui.text_unformatted(f"frame {o.frame}: who owns each object at every phase boundary")
    bounds = o.rows[0].at
    cols = 2 + len(bounds) + 2
    with imgui_ctx.begin_table("##own", cols, OWN_TABLE) as table:
        if not table:
            return
        imgui.table_setup_column("object", imgui.TableColumnFlags_.width_stretch)
        imgui.table_setup_column("now")
        for b, _ in bounds:
            imgui.table_setup_column("start" if b == "start" else f"{b[:3]}.")
        imgui.table_setup_column("acquires")
        imgui.table_setup_column("releases")
        imgui.table_headers_row()
        for row in o.rows:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text_unformatted(row.label.split(".", 1)[-1])
            _hover_tip(f"{row.label} ({row.kind}), owned by {row.now or '?'} since frame {row.since_frame}")
            imgui.table_next_column()
            _owner_text(row.now)
            for _b, owner in row.at:
                imgui.table_next_column()
                _owner_text(owner)
            imgui.table_next_column()
            imgui.text_unformatted("-" if row.acquires is None else f"{row.acquires}x")
            imgui.table_next_column()
            imgui.text_unformatted("-" if row.releases is None else f"{row.releases}x")
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_disabled("start: before the acquire; acq./com./rel./ren.: after that phase. "
                            "acquires, releases: counts in this set-up")


def _owner_text(state: str) -> None:
    if state in legend.HANDOVER:
        imgui.text_colored((1.0, 1.0, 1.0, 1.0), state)
    elif state in OWNER_F4:
        imgui.text_colored(OWNER_F4[state], state)
    else:
        imgui.text_disabled(state or "-")


def _findings(part, kind: str, request) -> None:
    if imgui.button(f"clear {kind}s"):
        request("clear_findings")
    _hover_tip("forget the errors and hazards shown so far (the report keeps every one)")
    imgui.same_line()
    if not part.entries:
        imgui.text_colored(GREEN, f"no {kind}s" + (" flagged" if kind == "hazard" else ""))
        return
    imgui.text_unformatted(f"{part.total} since the last clear")
    for i, e in enumerate(part.entries[:12]):
        _finding(e, detail=i < 3)
    if part.other:
        imgui.text_disabled(f"... and {part.other} more of other kinds")


def _finding(e: Finding, detail: bool) -> None:
    color = RED if e.kind == "error" else HAZARD
    code = f" ({e.code})" if e.code is not None else ""
    imgui.text_colored(color, f"{e.count}x  {e.title}{code}")
    where = f"{e.label} " if e.label else ""
    _wrapping_text(f"{where}in {e.where}, frames {e.first_frame}-{e.last_frame}", legend.f4(legend.TEXT_RGB))
    text = e.text or e.message
    if detail and text:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(DIM, text)
    else:
        _hover_tip(text)


def _errors(m: PanelModel, request, state: PanelState) -> None:
    _findings(m.errors, "error", request)


def _hazards(m: PanelModel, request, state: PanelState) -> None:
    h = m.header
    if h.stop is not None and h.stop.case:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(HAZARD, f"the run stopped on frame {h.stop.frame}: {h.stop.case} on {h.stop.label} "
                                       f"({h.stop.where})")
            imgui.text_colored(DIM, h.stop.spec)
        imgui.separator()
    _findings(m.hazards, "hazard", request)


def _teach(m: PanelModel, request, state: PanelState) -> None:
    from app.ui.teaching import draw_owners, draw_teaching

    t = m.teaching
    if t is None:
        imgui.text_disabled("(teaching data from the next redraw on)")
        return
    if t.active:
        imgui.text_disabled("teaching mode is on: its steps are at the top of the panel")
        draw_owners(t)
        return
    command = draw_teaching(t)
    if command:
        request(command)


def _lab(m: PanelModel, request, state: PanelState) -> None:
    """app/ui/lab_tab.py: the hazard demonstrations (keys 1-4) and the error lab's table."""
    from app.ui.lab_tab import draw_hazard_demos, draw_lab_tab

    lab = m.lab
    if lab is None:
        imgui.text_disabled("(lab data from the next redraw on)")
        return
    demo = draw_hazard_demos(lab)
    if demo:
        request("demo", demo=demo)
    imgui.separator()
    if draw_lab_tab(lab.results):
        request("run_lab")


def _memory(m: PanelModel, request, state: PanelState) -> None:
    """External-memory handle types and who owns what; the payload's lifetime on external_memory."""
    mem = m.caps.memory if m.caps is not None else None
    if mem is None:
        imgui.text_disabled("(memory data from the next redraw on)")
        return
    with imgui_ctx.push_text_wrap_pos(0.0):
        life = mem.lifetime
        if life is not None:
            imgui.separator_text("lifetime of the shared payload")
            imgui.text_colored(GREEN if life.exporter_released else DIM,
                               f"exporter's Vulkan allocation {'released' if life.exporter_released else 'kept'} "
                               "after GL and CL imported it")
            imgui.text_wrapped(f"held by: {life.holders}; fds glshare closed: {life.fds_closed}; "
                               f"CL took its fd: {life.cl_took_fd_ownership}; open fds now: {life.open_fds}"
                               + ("" if life.gpu_bytes_copied is None else
                                  f"; bytes copied on the GPU: {life.gpu_bytes_copied:,}"))
            for label, path in life.display_paths:  # how GL shows each texture
                imgui.text_colored(DIM if path.startswith("copy") else GREEN, f"{label}: GL draws it by {path}")
            imgui.text_colored(DIM, mem.kmt_note)
        elif mem.unavailable:
            imgui.text_colored(DIM, f"external_memory unavailable: {mem.unavailable}")
        imgui.separator_text(f"handle types (the device imports: {', '.join(mem.import_types) or 'none'})")
        for h in mem.handle_types:
            color = GREEN if h.glshare.startswith("usable") else DIM
            imgui.text_colored(color, f"{h.hex} {h.name}{'  NT' if h.nt_handle else ''}"
                                      f"  owns ref: {'yes' if h.owns_reference else 'no'}")
            _hover_tip(h.rule)
            imgui.text_colored(DIM, f"    closes: {h.who_closes}")
            imgui.text_colored(DIM, f"    handle valid until {h.handle_valid_until}")
            imgui.text_colored(DIM, f"    memory lives until {h.memory_lives_until}")
            imgui.text_colored(DIM, f"    {h.glshare}" + (f"; in the text: OpenCL {h.versions}" if h.versions else ""))


def _capabilities(m: PanelModel, request, state: PanelState) -> None:
    part = m.caps
    if part is None:
        imgui.text_disabled("(capabilities from the next redraw on)")
        return
    caps, clock = part.caps, part.clock
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_wrapped(f"CL platform: {caps.platform}")
        imgui.text_wrapped(f"CL device: {caps.device}")
        imgui.text_wrapped(f"GL: {caps.gl}")
        imgui.text_wrapped(f"surface: {caps.surface}; GL timer queries: {part.gl_timer}; "
                           f"panel: {part.panel_refresh}")
        if caps.stamps:
            imgui.text_wrapped(caps.stamps)
        for name, method, off, unc in (("CL", clock.cl_method, clock.cl_offset_ms, clock.cl_uncertainty_us),
                                       ("GL", clock.gl_method, clock.gl_offset_ms, clock.gl_uncertainty_us)):
            imgui.text_colored(DIM, f"{name} clock on the host clock by {method}: offset {off:.3f} ms "
                                    f"\u00b1 {unc:.1f} us")
        imgui.separator_text("backends")
        for b in caps.backends:
            mark = "*" if b["name"] == caps.chosen else " "
            imgui.text_colored(GREEN if b["available"] else RED, f"{mark} {'yes' if b['available'] else 'no '} {b['name']}")
            imgui.text_colored(DIM, f"      {b['reason']}")
        imgui.separator_text("sync modes")
        for s in caps.sync:
            imgui.text_colored(GREEN if s.available else RED, f"{'yes' if s.available else 'no '} {s.name}")
            if s.reason:
                imgui.text_colored(DIM, f"      {s.reason}")
        for title, exts in (("CL sharing extensions", caps.cl_extensions), ("GL sharing extensions", caps.gl_extensions)):
            imgui.separator_text(title)
            for i, (name, present) in enumerate(exts):
                if i % 2:
                    imgui.same_line(200)
                imgui.text_colored(GREEN if present else DIM, f"{'+' if present else '-'} {name}")


_TAB_BODIES = {"ownership": _ownership, "errors": _errors, "hazards": _hazards, "teach": _teach, "lab": _lab,
               "memory": _memory, "caps": _capabilities}
