"""The panel: timing plots, the frame timeline, ownership, errors, capabilities and the controls.

Drawn with imgui-bundle (ImGui + ImPlot) from the panel model (``app/ui/model.py``) only: no GL
or CL call in here, and no reference to the session. Controls never act in the middle of the
ImGui frame: they ``request`` a command of ``app/session/controls.py``, run after the frame. The window sits at a fixed place on the left (``layout``), so the screenshot
tests know where the plot and the timeline are. Kept cheap (target: under 1 ms of CPU a frame):
series arrive as numpy arrays, the timeline is a few dozen rectangles, and the capability tab is
only built while it is shown.
"""
from __future__ import annotations

import logging

import numpy as np
from imgui_bundle import imgui, imgui_ctx, implot, implot_ctx

from app.ui.model import KIND_GL, KIND_QUEUED, KIND_SUBMITTED, KIND_WAIT, ROWS, SERIES

log = logging.getLogger(__name__)

PANEL_WIDTH = 430
MARGIN = 8
TITLE_H = 19  # default font 13 px + 2 x frame padding 3
PAD = 8  # window padding
HEADER_H = 82  # two text lines + two rows of controls
PLOT_H = 150
STATS_H = 58
TIMELINE_H = 104
LABEL_W = 64

# ImGui flags as plain ints, computed once (an enum "|" costs ~20 us in Python)
WINDOW_FLAGS = int(imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_saved_settings
                   | imgui.WindowFlags_.no_scrollbar | imgui.WindowFlags_.no_scroll_with_mouse)
# no ImPlot legend: the coloured column heads of the median / p95 table under the plot are the legend.
# ImPlot places an outside legend from the size it measured the frame before, so a panel redrawn a
# few times a second sometimes drew it over the top of the data (the whole-frame line hidden under it)
PLOT_FLAGS = int(implot.Flags_.no_menus | implot.Flags_.no_box_select | implot.Flags_.no_mouse_text
                 | implot.Flags_.no_legend)
OWN_TABLE = int(imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.sizing_stretch_prop)
DISABLED = int(imgui.SelectableFlags_.disabled)
HOVER_DISABLED = int(imgui.HoveredFlags_.allow_when_disabled)
ALWAYS = int(imgui.Cond_.always)
AXIS_X, AXIS_Y = int(implot.ImAxis_.x1), int(implot.ImAxis_.y1)
LOG10 = int(implot.Scale_.log10)
Y_FLOOR_MS = 0.01  # the timing plot's floor (log scale); shorter phases sit on it


def _col(r: int, g: int, b: int, a: int = 255) -> int:
    return (a << 24) | (b << 16) | (g << 8) | r


PHASE_COLORS = {"acquire": (0.98, 0.62, 0.20), "compute": (0.35, 0.82, 0.35), "release": (0.30, 0.60, 1.00),
                "render": (0.80, 0.45, 0.95), "panel": (0.62, 0.62, 0.62), "frame": (0.95, 0.95, 0.95)}
BAR_COLORS = {name: _col(*(int(c * 255) for c in rgb)) for name, rgb in PHASE_COLORS.items()}
DIM_U32 = _col(158, 163, 178)
GL_COLORS = {"gl render": _col(235, 90, 140), "gl panel": _col(150, 120, 130)}
WAIT_COLOR = _col(230, 70, 60)
OTHER_COLOR = _col(180, 180, 100)
ROW_LINE = _col(60, 62, 78, 255)
CLEAR = (0.0, 0.0, 0.0, 0.0)  # a zero-alpha fill is skipped by ImGui: no pixels for llvmpipe to shade
GRID = _col(90, 90, 110, 255)
TEXT = _col(220, 220, 230, 255)
DIM = (0.62, 0.64, 0.70, 1.0)
RED = (1.0, 0.42, 0.35, 1.0)
GREEN = (0.45, 0.90, 0.45, 1.0)


def layout(width: int, height: int) -> dict[str, tuple[int, int, int, int]]:
    """Screen rectangles (x0, y0, x1, y1) of the panel window, its timing plot and its timeline
    for a framebuffer of ``width`` x ``height`` (the panel enforces them with fixed positions)."""
    w = min(PANEL_WIDTH, max(width - 2 * MARGIN, 200))
    x0, y0 = MARGIN, MARGIN  # top left, where the minimal overlay sits too
    window = (x0, y0, x0 + w, max(height - MARGIN, y0 + 200))
    cx0, cx1 = x0 + PAD, x0 + w - PAD
    plot_y = y0 + TITLE_H + PAD + HEADER_H
    timeline_y = plot_y + PLOT_H + STATS_H
    return {"window": window, "plot": (cx0, plot_y, cx1, plot_y + PLOT_H),
            "stats": (cx0, plot_y + PLOT_H, cx1, timeline_y),
            "timeline": (cx0, timeline_y, cx1, timeline_y + TIMELINE_H),
            "tabs": (cx0, timeline_y + TIMELINE_H + 4, cx1, window[3] - PAD)}


class PanelState:
    """What the panel keeps between frames (held by the UI host)."""

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure = ""
        self.tab = "ownership"  # the tab shown: panel_data builds the teach / lab data only then
        self.lab_results: dict | None = None  # the error lab's last run (app/ui/lab_tab.py)
        self.select: str | None = None  # a tab to bring to front on the next frame (tests, teaching)
        self._was_teaching = False


def draw_panel(snap: dict, state: PanelState, request) -> None:
    """Issue the panel's widgets for one ImGui frame (inside ``ImGuiLayer.draw``); ``request(name,
    **args)`` queues a command for after the frame."""
    io = imgui.get_io()
    rects = layout(int(io.display_size.x), int(io.display_size.y))
    x0, y0, x1, y1 = rects["window"]
    imgui.set_next_window_pos((x0, y0), ALWAYS)
    imgui.set_next_window_size((x1 - x0, y1 - y0), ALWAYS)
    imgui.set_next_window_bg_alpha(0.88)
    with imgui_ctx.begin("glshare##panel", None, WINDOW_FLAGS) as window:
        if not window:
            return
        try:
            _header(snap)
            _controls(snap, request)
            _timing(snap, rects)
            _timeline(snap, rects)
            _tabs(snap, rects, request, state)
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
    imgui.text(f"{snap.get('scene_desc', '')} | {snap.get('backend')} | {snap.get('sync')} | frame {snap.get('frame')}{paused}")
    clock = snap.get("clock", {})
    cl_u = clock.get("cl", {}).get("uncertainty_ns", 0) / 1e3
    gl_u = clock.get("gl", {}).get("uncertainty_ns", 0) / 1e3
    fps = 1000.0 / med if med > 0 else 0.0
    imgui.text(f"{med:.2f} ms/frame ({fps:.0f} fps)  clock CL\u00b1{cl_u:.0f} GL\u00b1{gl_u:.0f} us")
    if imgui.is_item_hovered():
        imgui.set_tooltip("CL device time and GL time are put on the host clock; +/- is how well (Capabilities)")
    if snap.get("panel_data_error"):
        imgui.text_colored(RED, f"panel data: {snap['panel_data_error']}")
    n_err = snap.get("errors_total", snap.get("error_count", 0))
    n_haz = snap.get("hazards_total", 0)
    if n_err or n_haz:
        imgui.same_line()
        imgui.text_colored(RED, f" {n_err} err {n_haz} haz")


def _combo(label: str, width: float, current: str, options: list[tuple[str, bool, str]]) -> str | None:
    """A combo whose unavailable options are greyed out with their reason as a tooltip."""
    imgui.set_next_item_width(width)
    chosen = None
    if not imgui.begin_combo(label, current):
        return None
    try:
        for name, ok, reason in options:
            clicked, _ = imgui.selectable(name, name == current, 0 if ok else DISABLED)
            if reason and imgui.is_item_hovered(HOVER_DISABLED):
                imgui.set_tooltip(reason)
            if clicked and ok and name != current:
                chosen = name
    finally:
        imgui.end_combo()
    return chosen


def _controls(snap: dict, request) -> None:
    ctl = snap.get("controls")
    if not ctl:
        return
    scene = _combo("scene", 90, snap["scene"], [(s, True, "") for s in ctl["scenes"]])
    if scene:
        request("switch", scene=scene)
    imgui.same_line()
    backend = _combo("backend", 96, snap["backend"], ctl["backends"])
    if backend:
        request("switch", backend=backend)
    imgui.same_line()
    sync = _combo("sync", 72, snap["sync"], ctl["syncs"])
    if sync:
        request("switch", sync=sync)
    size = _combo("size", 82, ctl["size"], [(s, True, "") for s in ctl["sizes"]])
    if size:
        from app.scenes import scene_class

        request("set_size", size=None if size == "window" else scene_class(snap["scene"]).parse_size(size))
    imgui.same_line()
    changed, paused = imgui.checkbox("pause", bool(snap.get("paused")))
    if changed:
        request("set_paused", paused=paused)
    imgui.same_line()
    changed, _ = imgui.checkbox("vsync", ctl["vsync"])
    if changed:
        request("toggle_vsync")
    imgui.same_line()
    if imgui.button("write trace"):
        request("write_trace")
    written = snap.get("trace_written") or {}
    if imgui.is_item_hovered():
        imgui.set_tooltip(f"last: {written.get('path') or written.get('error') or 'none yet'}")


# -- timing -----------------------------------------------------------------------------------
_SPECS: dict = {}


def _specs() -> dict:
    """One ImPlot line style per series, made once (needs no context)."""
    if not _SPECS:
        for name in SERIES:
            spec = implot.Spec()
            spec.line_color = (*PHASE_COLORS[name], 1.0)
            spec.line_weight = 1.5 if name == "frame" else 1.0
            _SPECS[name] = spec
    return _SPECS


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
        top = max(timing["stats"]["frame"][1], 0.1) * 3.0  # headroom: the frame line never hugs the top
        # no plot backgrounds over the window's own: on llvmpipe every covered pixel costs CPU time
        with implot_ctx.push_style_color(implot.Col_.frame_bg, CLEAR), \
                implot_ctx.push_style_color(implot.Col_.plot_bg, CLEAR), \
                implot_ctx.begin_plot("##timing", (x1 - x0, y1 - y0), PLOT_FLAGS) as plot:
            if plot:
                implot.setup_axis(AXIS_X, None, 0)  # frames; the table below says ms
                implot.setup_axis(AXIS_Y, None, 0)
                implot.setup_axis_scale(AXIS_Y, LOG10)  # phases span 10 us .. 100 ms: all of them readable
                implot.setup_axis_limits(AXIS_X, float(xs[0]), float(xs[-1]), ALWAYS)
                implot.setup_axis_limits(AXIS_Y, Y_FLOOR_MS, top, ALWAYS)
                for name, spec in _specs().items():
                    implot.plot_line(name, xs, series[name], spec=spec)
    # median / p95 under the plot: plain text at fixed columns (an ImGui table costs ~10x more here)
    stats = (timing or {}).get("stats", {})
    dl = imgui.get_window_draw_list()
    col_w = (x1 - x0) / (len(SERIES) + 1)
    ty = y1 + 4
    line = imgui.get_text_line_height_with_spacing()
    for r, label in enumerate(("ms", "median", "p95")):
        dl.add_text((x0, ty + r * line), DIM_U32, label)
    for k, name in enumerate(SERIES):
        cx = x0 + (k + 1) * col_w
        med, p95 = stats.get(name, (0.0, 0.0))
        dl.add_text((cx, ty), BAR_COLORS[name], name)
        dl.add_text((cx, ty + line), TEXT, f"{med:.2f}")
        dl.add_text((cx, ty + 2 * line), TEXT, f"{p95:.2f}")


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


_COLOR_CACHE: dict = {}
# bar height as a fraction of the row: full for what ran, less for a command waiting in its queue
_HEIGHT = {KIND_QUEUED: 0.15, KIND_SUBMITTED: 0.45}


def _timeline(snap: dict, rects: dict) -> None:
    """The last frames on the host clock: CPU phases, CPU waits, the CL queue, GL passes."""
    tl = snap.get("timeline") or {}
    x0, y0, x1, y1 = rects["timeline"]
    dl = imgui.get_window_draw_list()
    span = tl.get("span_ms", 0.0)
    row_h = (y1 - y0 - 16) / len(ROWS)
    for r, name in enumerate(ROWS):
        dl.add_text((x0 + 4, y0 + r * row_h + row_h / 2 - 7), TEXT, name)
        dl.add_line((x0, y0 + (r + 1) * row_h), (x1, y0 + (r + 1) * row_h), ROW_LINE)
    bx0, bx1 = x0 + LABEL_W, x1 - 4
    imgui.set_cursor_screen_pos((x0, y0))
    imgui.invisible_button("##timeline", (max(x1 - x0, 1), max(y1 - y0, 1)))
    if not tl.get("count") or span <= 0:
        dl.add_text((bx0, y1 - 15), TEXT, "timeline: waiting for complete frames")
        return
    scale = (bx1 - bx0) / span
    for frame, start in tl.get("frames", []):
        fx = bx0 + start * scale
        dl.add_line((fx, y0), (fx, y1 - 14), GRID)
        dl.add_text((fx + 2, y1 - 15), TEXT, f"f{frame}")
    dl.add_text((x0 + 4, y1 - 15), TEXT, f"{span:.1f} ms")  # the span shown, under the row names
    kind = tl["kind"]
    xa = bx0 + tl["start"] * scale
    xb = bx0 + tl["end"] * scale
    waiting = (kind == KIND_QUEUED) | (kind == KIND_SUBMITTED)
    keep = ~waiting | (xb - xa >= 1.0)  # a queue wait under a pixel wide is not drawn
    xb = np.maximum(xb, xa + 1.0)  # what ran is at least one pixel wide
    bottom = y0 + 2 + tl["row"] * row_h + row_h - 4
    frac = np.where(kind == KIND_QUEUED, _HEIGHT[KIND_QUEUED], np.where(kind == KIND_SUBMITTED, _HEIGHT[KIND_SUBMITTED], 1.0))
    top = bottom - (row_h - 4) * frac
    names = tl["name"]
    cache = _COLOR_CACHE
    add = dl.add_rect_filled
    idx = np.nonzero(keep)[0]
    # widest first, so a bar stretched to its one pixel is never covered by the neighbour that starts
    # inside that pixel (an acquire of 60 us in a 30 ms timeline is under a pixel wide)
    idx = idx[np.argsort(-(xb[idx] - xa[idx]), kind="stable")]
    for i, a, t, b, btm, k in zip(idx.tolist(), xa[idx].tolist(), top[idx].tolist(), xb[idx].tolist(),
                                  bottom[idx].tolist(), kind[idx].tolist()):
        col = cache.get((k, names[i]))
        if col is None:
            col = cache[(k, names[i])] = _bar_color(k, names[i])
        add((a, t), (b, btm), col)
    if imgui.is_item_hovered():
        m = imgui.get_mouse_pos()
        hit = np.nonzero(keep & (xa <= m.x) & (m.x <= xb) & (top <= m.y) & (m.y <= bottom))[0]
        if hit.size:
            i = int(hit[-1])
            s, e = tl["start"][i], tl["end"][i]
            imgui.set_tooltip(f"{ROWS[int(tl['row'][i])]}: {names[i]}  frame {int(tl['frame'][i])}\n"
                              f"{s:.3f} -> {e:.3f} ms ({(e - s) * 1e3:.0f} us)")


# -- tabs: ownership, errors, hazards, capabilities --------------------------------------------
SET_SELECTED = int(imgui.TabItemFlags_.set_selected)


def _tabs(snap: dict, rects: dict, request, state: PanelState) -> None:
    x0, y0, x1, y1 = rects["tabs"]
    imgui.set_cursor_screen_pos((x0, y0))
    n_err, n_haz = snap.get("errors_total", 0), snap.get("hazards_total", 0)
    teaching = bool(snap.get("teaching_active"))
    if teaching and not state._was_teaching:
        state.select = "teach"  # teaching mode just started: show its tab
    state._was_teaching = teaching
    want, state.select = state.select, None

    def sel(name: str) -> int:
        return SET_SELECTED if want == name else 0

    with imgui_ctx.begin_tab_bar("##tabs") as bar:
        if not bar:
            return
        tabs = (("Owners", "ownership", lambda: _ownership(snap)),
                (f"Errors {n_err}", "errors", lambda: _errors(snap)),
                (f"Hazards {n_haz}", "hazards", lambda: _hazards(snap)),
                ("Teach", "teach", lambda: _teach(snap, request)),
                ("Lab", "lab", lambda: _lab(snap, request)),
                ("Memory", "memory", lambda: _memory(snap)),
                ("Caps", "caps", lambda: _capabilities(snap)))
        for title, key, draw in tabs:  # "###key": the tab keeps its identity while its title counts
            with imgui_ctx.begin_tab_item(f"{title}###{key}", sel(key)) as tab:
                if tab:
                    state.tab = key
                    draw()


def _teach(snap: dict, request) -> None:
    """app/ui/teaching.py's section; its buttons stand for commands, run after the frame."""
    if "teaching" not in snap:
        imgui.text_disabled("(teaching data from the next frame on)")
        return
    from app.ui.teaching import draw_teaching

    with imgui_ctx.begin_child("##teach", (0, 0)):
        command = draw_teaching(snap["teaching"])
    if command:
        request(command)


def _lab(snap: dict, request) -> None:
    """app/ui/lab_tab.py: the hazard demonstrations (keys 1-4) and the error lab's table."""
    from app.ui.lab_tab import draw_hazard_demos, draw_lab_tab

    with imgui_ctx.begin_child("##lab", (0, 0)):
        if "demos" in snap:
            demo = draw_hazard_demos(snap["demos"])
            if demo:
                request("demo", demo=demo)
            imgui.separator()
        if draw_lab_tab(snap.get("lab")):
            request("run_lab")


def _ownership(snap: dict) -> None:
    rows = snap.get("ownership", [])
    if not rows:
        imgui.text_disabled("no shared objects")
        return
    with imgui_ctx.begin_table("##own", 5, OWN_TABLE) as table:
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
    for i, h in enumerate(hazards[:10]):
        imgui.text_colored((1.0, 0.8, 0.3, 1.0), f"x{h['count']}  {h['case']}")
        imgui.same_line()
        imgui.text(h["label"])
        imgui.text_colored(DIM, f"    at {h['where']}, frames {h['first_frame']}-{h['last_frame']}")
        if i < 3:  # the spec sentence of the most recent ones; the rest on hover
            with imgui_ctx.push_text_wrap_pos(0.0):
                imgui.text_colored(DIM, h["spec"])
        elif imgui.is_item_hovered():
            imgui.set_tooltip(h["spec"])


def _memory(snap: dict) -> None:
    """External-memory handle types and who owns what; the payload's lifetime on external_memory."""
    mem = (snap.get("caps") or {}).get("memory")
    if not mem:
        return
    with imgui_ctx.begin_child("##memory", (0, 0)), imgui_ctx.push_text_wrap_pos(0.0):
        life = mem.get("lifetime")
        if life:
            imgui.separator_text("lifetime of the shared payload")
            imgui.text_colored(GREEN if life["exporter_released"] else DIM,
                               f"exporter's Vulkan allocation {'released' if life['exporter_released'] else 'kept'} "
                               "after GL and CL imported it")
            imgui.text_wrapped(f"held by: {life['holders']}; fds glshare closed: {life['fds_closed']}; "
                               f"CL took its fd: {life['cl_took_fd_ownership']}; open fds now: {life['open_fds']}")
            for label, path in (life.get("display_paths") or {}).items():  # how GL shows each texture
                imgui.text_colored(DIM if path.startswith("copy") else GREEN, f"{label}: GL draws it by {path}")
            imgui.text_colored(DIM, mem["kmt_note"])
        elif mem.get("unavailable"):
            imgui.text_colored(DIM, f"external_memory unavailable: {mem['unavailable']}")
        imgui.separator_text(f"handle types (the device imports: {', '.join(mem['import_types']) or 'none'})")
        for h in mem["handle_types"]:
            color = GREEN if h["glshare"].startswith("usable") else DIM
            imgui.text_colored(color, f"{h['hex']} {h['name']}{'  NT' if h['nt_handle'] else ''}"
                                      f"  owns ref: {'yes' if h['owns_reference'] else 'no'}")
            if imgui.is_item_hovered():
                imgui.set_tooltip(h["rule"])
            imgui.text_colored(DIM, f"    closes: {h['who_closes']}; invalid when {h['becomes_invalid_when']}")
            imgui.text_colored(DIM, f"    {h['glshare']}")


def _capabilities(snap: dict) -> None:
    caps = snap.get("caps")
    if not caps:
        return
    with imgui_ctx.begin_child("##caps", (0, 0)), imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_wrapped(f"CL platform: {caps['platform']}")
        imgui.text_wrapped(f"CL device: {caps['device']}")
        imgui.text_wrapped(f"GL: {caps['gl']}")
        imgui.text_wrapped(f"surface: {caps['surface']}; GL timer queries: {caps['gl_timer']}; "
                           f"panel: {caps.get('panel_refresh', '')}")
        clock = snap.get("clock", {})
        for key in ("cl", "gl"):
            c = clock.get(key, {})
            imgui.text_colored(DIM, f"{key.upper()} clock on the host clock by {c.get('method', '?')}: offset "
                                    f"{c.get('offset_ns', 0) / 1e6:.3f} ms \u00b1 {c.get('uncertainty_ns', 0) / 1e3:.1f} us")
        imgui.separator_text("backends")
        for b in caps["backends"]:
            mark = "*" if b["name"] == caps["chosen"] else " "
            imgui.text_colored(GREEN if b["available"] else RED, f"{mark} {'yes' if b['available'] else 'no '} {b['name']}")
            imgui.text_colored(DIM, f"      {b['reason']}")
        imgui.separator_text("sync modes")
        for s in caps["sync"]:
            imgui.text_colored(GREEN if s["available"] else RED, f"{'yes' if s['available'] else 'no '} {s['name']}")
            if s["reason"]:
                imgui.text_colored(DIM, f"      {s['reason']}")
        for title, exts in (("CL sharing extensions", caps["cl_extensions"]), ("GL sharing extensions", caps["gl_extensions"])):
            imgui.separator_text(title)
            for i, (name, present) in enumerate(exts):
                if i % 2:
                    imgui.same_line(200)
                imgui.text_colored(GREEN if present else DIM, f"{'+' if present else '-'} {name}")
