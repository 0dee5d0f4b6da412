"""The panel: timing plots, the frame timeline, ownership, errors, capabilities and the controls.

Drawn with imgui-bundle (ImGui + ImPlot) from ``Runtime.snapshot()`` only: no GL or CL call in
here. Controls never act in the middle of the ImGui frame: they queue a call on
``runtime.ui_actions`` (run by ``Runtime.draw_ui`` after the frame) or set a plain flag
(``runtime.paused``). The window sits at a fixed place on the right (``layout``), so the screenshot
tests know where the plot and the timeline are. Kept cheap (target: under 1 ms of CPU a frame):
series arrive as numpy arrays, the timeline is a few dozen rectangles, and the capability tab is
only built while it is shown.
"""
from __future__ import annotations

import logging

import numpy as np
from imgui_bundle import imgui, imgui_ctx, implot, implot_ctx

from app.trace.panel_data import (KIND_GL, KIND_QUEUED, KIND_RUN, KIND_SUBMITTED, KIND_WAIT, ROWS,
                                  SERIES)

log = logging.getLogger(__name__)

PANEL_WIDTH = 430
MARGIN = 8
TITLE_H = 19  # default font 13 px + 2 x frame padding 3
PAD = 8  # window padding
HEADER_H = 82  # two text lines + two rows of controls
PLOT_H = 150
STATS_H = 58
TIMELINE_H = 104
LABEL_W = 58


def _col(r: int, g: int, b: int, a: int = 255) -> int:
    return (a << 24) | (b << 16) | (g << 8) | r


PHASE_COLORS = {"acquire": (0.98, 0.62, 0.20), "compute": (0.35, 0.82, 0.35), "release": (0.30, 0.60, 1.00),
                "render": (0.80, 0.45, 0.95), "panel": (0.62, 0.62, 0.62), "frame": (0.95, 0.95, 0.95)}
BAR_COLORS = {name: _col(*(int(c * 255) for c in rgb)) for name, rgb in PHASE_COLORS.items()}
GL_COLORS = {"gl render": _col(235, 90, 140), "gl panel": _col(150, 120, 130)}
WAIT_COLOR = _col(230, 70, 60)
OTHER_COLOR = _col(180, 180, 100)
TIMELINE_BG = _col(22, 24, 32, 235)
GRID = _col(90, 90, 110, 255)
TEXT = _col(220, 220, 230, 255)
DIM = (0.62, 0.64, 0.70, 1.0)
RED = (1.0, 0.42, 0.35, 1.0)
GREEN = (0.45, 0.90, 0.45, 1.0)


def layout(width: int, height: int) -> dict[str, tuple[int, int, int, int]]:
    """Screen rectangles (x0, y0, x1, y1) of the panel window, its timing plot and its timeline
    for a framebuffer of ``width`` x ``height`` (the panel enforces them with fixed positions)."""
    w = min(PANEL_WIDTH, max(width - 2 * MARGIN, 200))
    x0, y0 = max(width - w - MARGIN, 0), MARGIN
    window = (x0, y0, x0 + w, max(height - MARGIN, y0 + 200))
    cx0, cx1 = x0 + PAD, x0 + w - PAD
    plot_y = y0 + TITLE_H + PAD + HEADER_H
    timeline_y = plot_y + PLOT_H + STATS_H
    return {"window": window, "plot": (cx0, plot_y, cx1, plot_y + PLOT_H),
            "stats": (cx0, plot_y + PLOT_H, cx1, timeline_y),
            "timeline": (cx0, timeline_y, cx1, timeline_y + TIMELINE_H),
            "tabs": (cx0, timeline_y + TIMELINE_H + 4, cx1, window[3] - PAD)}


class PanelState:
    """What the panel keeps between frames (on ``runtime.panel_state``)."""

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure = ""


def draw_panel(snap: dict, runtime) -> None:
    """Issue the panel's widgets for one ImGui frame (inside ``ImGuiLayer.draw``)."""
    state = runtime.panel_state
    if not isinstance(state, PanelState):
        state = runtime.panel_state = PanelState()
    io = imgui.get_io()
    rects = layout(int(io.display_size.x), int(io.display_size.y))
    x0, y0, x1, y1 = rects["window"]
    imgui.set_next_window_pos((x0, y0), imgui.Cond_.always.value)
    imgui.set_next_window_size((x1 - x0, y1 - y0), imgui.Cond_.always.value)
    imgui.set_next_window_bg_alpha(0.88)
    flags = imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_saved_settings
    with imgui_ctx.begin("glshare##panel", None, int(flags)) as window:
        if not window:
            return
        try:
            _header(snap)
            _controls(snap, runtime)
            _timing(snap, rects)
            _timeline(snap, rects)
            _tabs(snap, rects)
        except Exception as exc:  # noqa: BLE001 - the panel never stops the loop
            state.failures += 1
            if state.last_failure != str(exc):
                log.warning("panel: %s: %s", type(exc).__name__, exc, exc_info=True)
            state.last_failure = str(exc)
            imgui.text_colored(RED, f"panel failed ({state.failures}x): {type(exc).__name__}: {exc}")


# -- header and controls ----------------------------------------------------------------------
def _header(snap: dict) -> None:
    timing = snap.get("timing", {})
    med = timing.get("stats", {}).get("frame", (snap.get("frame_ms_median", 0.0), 0.0))[0]
    paused = "  PAUSED" if snap.get("paused") else ""
    imgui.text(f"{snap.get('scene_desc', '')}  |  {snap.get('backend')}  |  sync {snap.get('sync')}"
               f"  |  frame {snap.get('frame')}{paused}")
    clock = snap.get("clock", {})
    cl_u = clock.get("cl", {}).get("uncertainty_ns", 0) / 1e3
    gl_u = clock.get("gl", {}).get("uncertainty_ns", 0) / 1e3
    fps = 1000.0 / med if med > 0 else 0.0
    imgui.text(f"{med:.2f} ms/frame ({fps:.0f} fps)   clocks: CL +/-{cl_u:.0f} us, GL +/-{gl_u:.0f} us")
    n_err = snap.get("errors_total", snap.get("error_count", 0))
    n_haz = snap.get("hazards_total", 0)
    if n_err or n_haz:
        imgui.same_line()
        imgui.text_colored(RED, f"  {n_err} err, {n_haz} hazards")


def _combo(label: str, width: float, current: str, options: list[tuple[str, bool, str]]) -> str | None:
    """A combo whose unavailable options are greyed out with their reason as a tooltip."""
    imgui.set_next_item_width(width)
    chosen = None
    if not imgui.begin_combo(label, current):
        return None
    try:
        for name, ok, reason in options:
            flags = 0 if ok else int(imgui.SelectableFlags_.disabled)
            clicked, _ = imgui.selectable(name, name == current, flags)
            if reason and imgui.is_item_hovered(int(imgui.HoveredFlags_.allow_when_disabled)):
                imgui.set_tooltip(reason)
            if clicked and ok and name != current:
                chosen = name
    finally:
        imgui.end_combo()
    return chosen


def _controls(snap: dict, runtime) -> None:
    ctl = snap.get("controls")
    if not ctl:
        return
    actions = runtime.ui_actions
    scene = _combo("scene", 82, snap["scene"], [(s, True, "") for s in ctl["scenes"]])
    if scene:
        actions.append(lambda: runtime.switch(scene=scene))
    imgui.same_line()
    backend = _combo("backend", 96, snap["backend"], ctl["backends"])
    if backend:
        actions.append(lambda: runtime.switch(backend=backend))
    imgui.same_line()
    sync = _combo("sync", 72, snap["sync"], ctl["syncs"])
    if sync:
        actions.append(lambda: runtime.switch(sync=sync))
    size = _combo("size", 82, ctl["size"], [(s, True, "") for s in ctl["sizes"]])
    if size:
        from app.config import parse_size

        value = None if size == "window" else parse_size(snap["scene"], size)
        actions.append(lambda: runtime.set_size(value))
    imgui.same_line()
    changed, paused = imgui.checkbox("pause", bool(snap.get("paused")))
    if changed:
        runtime.paused = paused
    imgui.same_line()
    changed, _ = imgui.checkbox("vsync", ctl["vsync"])
    if changed:
        actions.append(lambda: runtime.handle_key("v"))  # the key's action: cfg.vsync and the swap interval
    imgui.same_line()
    if imgui.button("write trace"):
        runtime.request_trace()
    written = snap.get("trace_written") or {}
    if imgui.is_item_hovered():
        imgui.set_tooltip(f"last: {written.get('path') or written.get('error') or 'none yet'}")


# -- timing -----------------------------------------------------------------------------------
def _timing(snap: dict, rects: dict) -> None:
    timing = snap.get("timing")
    x0, y0, x1, y1 = rects["plot"]
    imgui.set_cursor_screen_pos((x0, y0))
    if not timing or timing["count"] < 2:
        imgui.text_disabled("timing: waiting for frames")
        imgui.set_cursor_screen_pos((x0, y1))
    else:
        xs = timing["frames"]
        series = timing["series"]
        top = max(timing["stats"]["frame"][1], 0.1) * 1.35
        flags = implot.Flags_.no_menus | implot.Flags_.no_box_select | implot.Flags_.no_mouse_text
        with implot_ctx.begin_plot("##timing", (x1 - x0, y1 - y0), int(flags)) as plot:
            if plot:
                implot.setup_axes("frame", "ms", 0, 0)
                implot.setup_axis_limits(implot.ImAxis_.x1.value, float(xs[0]), float(xs[-1]), imgui.Cond_.always.value)
                implot.setup_axis_limits(implot.ImAxis_.y1.value, 0.0, top, imgui.Cond_.always.value)
                implot.setup_legend(int(implot.Location_.north_west),
                                    int(implot.LegendFlags_.horizontal | implot.LegendFlags_.no_buttons))
                for name in SERIES:
                    spec = implot.Spec()
                    spec.line_color = (*PHASE_COLORS[name], 1.0)
                    spec.line_weight = 1.5 if name == "frame" else 1.0
                    implot.plot_line(name, xs, series[name], spec=spec)
    imgui.set_cursor_screen_pos((x0, y1 + 2))
    stats = (timing or {}).get("stats", {})
    tflags = imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.sizing_stretch_same
    with imgui_ctx.begin_table("##stats", len(SERIES) + 1, int(tflags)) as table:
        if table:
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            imgui.text_disabled("ms")
            for k, name in enumerate(SERIES):
                imgui.table_set_column_index(k + 1)
                imgui.text_colored((*PHASE_COLORS[name], 1.0), name)
            for label, idx in (("median", 0), ("p95", 1)):
                imgui.table_next_row()
                imgui.table_set_column_index(0)
                imgui.text_disabled(label)
                for k, name in enumerate(SERIES):
                    imgui.table_set_column_index(k + 1)
                    imgui.text(f"{stats.get(name, (0.0, 0.0))[idx]:.2f}")


# -- timeline ---------------------------------------------------------------------------------
def _bar_color(kind: int, name: str) -> int:
    if kind == KIND_WAIT:
        return WAIT_COLOR
    if kind == KIND_GL:
        return GL_COLORS.get(name, GL_COLORS["gl render"])
    col = BAR_COLORS.get(name, OTHER_COLOR)
    if kind == KIND_SUBMITTED:
        return (col & 0x00FFFFFF) | (110 << 24)
    if kind == KIND_QUEUED:
        return (col & 0x00FFFFFF) | (60 << 24)
    return col


def _timeline(snap: dict, rects: dict) -> None:
    """The last frames on the host clock: CPU phases, CPU waits, the CL queue, GL passes."""
    tl = snap.get("timeline") or {}
    x0, y0, x1, y1 = rects["timeline"]
    dl = imgui.get_window_draw_list()
    dl.add_rect_filled((x0, y0), (x1, y1), TIMELINE_BG)
    bars, span = tl.get("bars", []), tl.get("span_ms", 0.0)
    row_h = (y1 - y0 - 16) / len(ROWS)
    for r, name in enumerate(ROWS):
        dl.add_text((x0 + 4, y0 + r * row_h + row_h / 2 - 7), TEXT, name)
    bx0, bx1 = x0 + LABEL_W, x1 - 4
    if not bars or span <= 0:
        dl.add_text((bx0, y1 - 15), TEXT, "timeline: waiting for complete frames")
        imgui.set_cursor_screen_pos((x0, y1))
        imgui.dummy((x1 - x0, 1))
        return
    scale = (bx1 - bx0) / span
    for frame, start in tl.get("frames", []):
        fx = bx0 + start * scale
        dl.add_line((fx, y0), (fx, y1 - 14), GRID)
        dl.add_text((fx + 2, y1 - 15), TEXT, f"f{frame}")
    dl.add_text((bx1 - 60, y1 - 15), TEXT, f"{span:.2f} ms")
    arr = np.array([(b[0], b[2], b[3]) for b in bars], np.float64)
    xa = bx0 + arr[:, 1] * scale
    xb = np.maximum(bx0 + arr[:, 2] * scale, xa + 1.0)  # at least one pixel wide
    ya = y0 + 2 + arr[:, 0] * row_h
    mouse = imgui.get_mouse_pos()
    hovered = None
    for i, (row, kind, _s, _e, name, frame) in enumerate(bars):
        top, bottom = ya[i], ya[i] + row_h - 4
        if kind == KIND_QUEUED:
            top = bottom - 3
        elif kind == KIND_SUBMITTED:
            top = bottom - (row_h - 4) * 0.45
        dl.add_rect_filled((xa[i], top), (xb[i], bottom), _bar_color(kind, name))
        if xa[i] <= mouse.x <= xb[i] and top <= mouse.y <= bottom and kind in (KIND_RUN, KIND_GL, KIND_WAIT, 0):
            hovered = i
    imgui.set_cursor_screen_pos((x0, y0))
    imgui.invisible_button("##timeline", (max(x1 - x0, 1), max(y1 - y0, 1)))
    if hovered is not None and imgui.is_item_hovered():
        row, kind, s, e, name, frame = bars[hovered]
        imgui.set_tooltip(f"{ROWS[row]}: {name}  frame {frame}\n{s:.3f} -> {e:.3f} ms ({(e - s) * 1e3:.0f} us)")


# -- tabs: ownership, errors, hazards, capabilities --------------------------------------------
def _tabs(snap: dict, rects: dict) -> None:
    x0, y0, x1, y1 = rects["tabs"]
    imgui.set_cursor_screen_pos((x0, y0))
    n_err, n_haz = snap.get("errors_total", 0), snap.get("hazards_total", 0)
    with imgui_ctx.begin_tab_bar("##tabs") as bar:
        if not bar:
            return
        with imgui_ctx.begin_tab_item("Ownership") as tab:
            if tab:
                _ownership(snap)
        with imgui_ctx.begin_tab_item(f"Errors ({n_err})###errors") as tab:
            if tab:
                _errors(snap)
        with imgui_ctx.begin_tab_item(f"Hazards ({n_haz})###hazards") as tab:
            if tab:
                _hazards(snap)
        with imgui_ctx.begin_tab_item("Capabilities") as tab:
            if tab:
                _capabilities(snap)


def _ownership(snap: dict) -> None:
    rows = snap.get("ownership", [])
    if not rows:
        imgui.text_disabled("no shared objects")
        return
    flags = imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_stretch_prop
    with imgui_ctx.begin_table("##own", 5, int(flags)) as table:
        if not table:
            return
        for head in ("object", "owner", "since", "acq", "rel"):
            imgui.table_setup_column(head)
        imgui.table_headers_row()
        for row in rows:
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            imgui.text(row["label"])
            imgui.table_set_column_index(1)
            st = row.get("state", row["owner"].upper())
            imgui.text_colored(GREEN if st == "GL" else (0.5, 0.75, 1.0, 1.0) if st == "CL" else (1.0, 0.8, 0.3, 1.0), st)
            imgui.table_set_column_index(2)
            imgui.text(f"f{row['since_frame']}")
            imgui.table_set_column_index(3)
            imgui.text(str(row["acquires"]))
            imgui.table_set_column_index(4)
            imgui.text(str(row["releases"]))


def _errors(snap: dict) -> None:
    errors = snap.get("errors", [])
    if not errors:
        imgui.text_colored(GREEN, "no errors")
        return
    for e in errors[:12]:
        code = f" ({e['code']})" if e.get("code") is not None else ""
        imgui.text_colored(RED, f"x{e['count']}  {e['name']}{code}")
        imgui.same_line()
        imgui.text(f"in {e['where']}, frames {e['first_frame']}-{e['last_frame']}")
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(DIM, e.get("meaning") or e.get("message", ""))
    if snap.get("errors_other"):
        imgui.text_disabled(f"... and {snap['errors_other']} more of other kinds")


def _hazards(snap: dict) -> None:
    hazards = snap.get("hazards", [])
    if not hazards:
        imgui.text_colored(GREEN, "no hazards flagged")
        return
    for h in hazards[:10]:
        imgui.text_colored((1.0, 0.8, 0.3, 1.0), f"x{h['count']}  {h['case']}")
        imgui.same_line()
        imgui.text(f"{h['label']} at {h['where']}, frames {h['first_frame']}-{h['last_frame']}")
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(DIM, h["spec"])


def _capabilities(snap: dict) -> None:
    caps = snap.get("caps")
    if not caps:
        return
    with imgui_ctx.begin_child("##caps", (0, 0)):
        imgui.text(f"CL platform: {caps['platform']}")
        imgui.text(f"CL device:   {caps['device']}")
        imgui.text(f"GL:          {caps['gl']}")
        imgui.text(f"surface:     {caps['surface']}   GL timer: {caps['gl_timer']}")
        clock = snap.get("clock", {})
        for key in ("cl", "gl"):
            c = clock.get(key, {})
            imgui.text_colored(DIM, f"{key.upper()} clock: {c.get('method', '?')}, offset {c.get('offset_ns', 0) / 1e6:.3f} ms"
                                    f" +/- {c.get('uncertainty_ns', 0) / 1e3:.1f} us")
        imgui.separator_text("backends")
        for b in caps["backends"]:
            mark = "*" if b["name"] == caps["chosen"] else " "
            imgui.text_colored(GREEN if b["available"] else RED, f"{mark} {'yes' if b['available'] else 'no '} {b['name']}")
            with imgui_ctx.push_text_wrap_pos(0.0):
                imgui.text_colored(DIM, f"      {b['reason']}")
        imgui.separator_text("sync modes")
        for s in caps["sync"]:
            imgui.text_colored(GREEN if s["available"] else RED, f"{'yes' if s['available'] else 'no '} {s['name']}")
            if s["reason"]:
                imgui.same_line()
                with imgui_ctx.push_text_wrap_pos(0.0):
                    imgui.text_colored(DIM, s["reason"])
        for title, exts in (("CL sharing extensions", caps["cl_extensions"]), ("GL sharing extensions", caps["gl_extensions"])):
            imgui.separator_text(title)
            for i, (name, present) in enumerate(exts):
                if i % 2:
                    imgui.same_line(200)
                imgui.text_colored(GREEN if present else DIM, f"{'+' if present else '-'} {name}")
