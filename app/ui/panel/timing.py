"""The timing plot (every phase and the whole frame, ms per frame on a log axis; a click chooses the
frame the timeline shows) and the median / p95 row under it."""
from __future__ import annotations

import numpy as np

from app.ui import legend
from app.ui.bundle import imgui, implot, implot_ctx
from app.ui.legend import cpu_name, f4, u32
from app.ui.model import SERIES, PanelModel
from app.ui.panel.state import PanelState
from app.ui.panel.widgets import (
    ALWAYS,
    AXIS_X,
    AXIS_Y,
    CLEAR,
    DIM_U32,
    LOG10,
    PLOT_FLAGS,
    TEXT,
    Y_FLOOR_MS,
    duration_label,
    hover_tip,
    item_rect,
    tooltip,
)

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


def draw_timing(m: PanelModel, state: PanelState, height: int) -> None:
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
                values = "".join(f"\n  {_series_name(n)}: {duration_label(ms)}" for n, ms in t.at(frame))
                tooltip(f"frame {frame}{values or ' (not in the plot)'}\nclick: show it in the timeline")
    item_rect(state, "plot")



def _series_name(name: str) -> str:
    """A series as the tooltip names it: the CPU's phases by their call (app/trace/names.py)."""
    return "frame (present to present)" if name == "frame" else cpu_name(name)


def draw_stats(m: PanelModel) -> None:
    """Median / p95 under the plot: plain text at fixed columns (an ImGui table costs ~10x more);
    the timing's own ``columns`` in place of the phases' where it has them."""
    t = m.timing
    if t.columns:
        return _draw_columns(t)
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
    hover_tip("the plot's legend: each line in its colour; the CPU's time in each phase ("
              + ", ".join(f"{n}: {cpu_name(n)}" for n in SERIES if n != "frame") + "); "
              f"median and 95th percentile over the last {t.in_stats} frames"
               + (f" of {t.stats_of}" if t.stats_of else "")
               + "; frame: present to present"
               + (f"; {t.left_out} frames without a present-to-present period (the first, the first after "
                  "a pause, stepped ones) are left out" if t.left_out else ""))


def _draw_columns(t) -> None:
    """The table of a view fed from another program (``Timing.columns``): each column what it measured."""
    dl = imgui.get_window_draw_list()
    x0, y0 = imgui.get_cursor_screen_pos()
    w = imgui.get_content_region_avail().x
    col_w = w / (len(t.columns) + 1)
    line = imgui.get_text_line_height_with_spacing()
    for r, label in enumerate(("ms", "median", "p95")):
        dl.add_text((x0, y0 + r * line), DIM_U32, label)
    for k, c in enumerate(t.columns):
        cx = x0 + (k + 1) * col_w
        dl.add_text((cx, y0), u32(c.rgb), c.name)
        dl.add_text((cx, y0 + line), TEXT, _ms(c.median))
        dl.add_text((cx, y0 + 2 * line), TEXT, _ms(c.p95))
    imgui.dummy((w, 3 * line))
    hover_tip("; ".join(f"{c.name}: {c.title}" for c in t.columns))


def _ms(v: float) -> str:
    """ms with two decimals, two significant digits under 0.1 ms (a call's few us are not 0.00)."""
    return f"{v:.2f}" if v >= 0.1 or v == 0 else f"{v:.2g}"
