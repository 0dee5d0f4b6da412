"""The frame timeline: one frame on the host clock, a lane each for the CPU's phases, its waits,
the CL queue, GL, and every shared object's owner; wheel to zoom, drag to pan, double-click to fit;
and, while paused, the slider over the kept frames. Colours come from ``app/ui/legend.py``."""
from __future__ import annotations

import math

import numpy as np

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.legend import u32
from app.ui.model import (
    KIND_BOOKKEEPING,
    KIND_GL,
    KIND_OWNER,
    KIND_PHASE,
    KIND_QUEUED,
    KIND_RUN,
    KIND_WAIT,
    LANE_CPU,
    Link,
    PanelModel,
    Timeline,
)
from app.ui.panel.state import PanelState
from app.ui.panel.widgets import (
    DIM,
    DIM_U32,
    GRID,
    HIGHLIGHT,
    HIT_PX,
    LANE_BG,
    LANE_H_MAX,
    LANE_H_MIN,
    TEXT,
    duration_label,
    hover_tip,
    item_rect,
    nice_step,
    time_label,
    tooltip,
)

_COLOR_CACHE: dict = {}


def _bar_color(kind: int, name: str, key: str = "") -> int:
    """A bar's colour: its legend key's (``Timeline.colors``) where it has one, else by its kind and name."""
    col = _COLOR_CACHE.get((kind, name, key))
    if col is None:
        if key:
            rgb = legend.CALL_RGB[key]
        elif kind == KIND_WAIT:
            rgb = legend.WAIT_RGB
        elif kind == KIND_BOOKKEEPING:
            rgb = legend.BOOKKEEPING_RGB
        elif kind == KIND_GL:
            rgb = legend.GL_PASS_RGB.get(name, legend.PHASE_RGB["render"])
        elif kind == KIND_OWNER:
            rgb = legend.OWNER_RGB.get(name, legend.OWNER_RGB[legend.GL])
        else:
            rgb = legend.PHASE_RGB.get(name, (180, 180, 100))
        col = _COLOR_CACHE[(kind, name, key)] = u32(rgb, 90 if kind == KIND_QUEUED else 255)
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
    """The frame's CPU phases in the order they ran, each in its colour with its duration, named by
    what the CPU did ("enqueue kernel": the device's run is the CL lane's "kernel" bar): the order
    at a glance, and the legend of the phase colours; the panel's own phase only where the line has
    room. Returns the row's bottom."""
    line = imgui.get_text_line_height()
    cx, cy = x, y
    for k, (phase, name, ms) in enumerate(tl.sequence()):
        text = name if ms is None else f"{name} {duration_label(ms)}"
        sep = " > " if k else ""
        w = imgui.calc_text_size(sep + text).x + 2
        if cx + w > right and cx > left:
            if phase == "panel":  # glshare's own UI, not the sharing: it takes no line of its own
                break
            cx, cy, sep = left, cy + line + 1, ""
            w = imgui.calc_text_size(text).x + 2
        if sep:
            dl.add_text((cx, cy), DIM_U32, sep)
            cx += imgui.calc_text_size(sep).x
        rgb = legend.PHASE_RGB[phase]
        dl.add_text((cx, cy), u32(rgb) if ms is not None else u32(rgb, 110), text)
        cx += imgui.calc_text_size(text).x + 2
    return cy + line + 1


def _legend_row(dl, x: float, y: float, right: float, keys: tuple[str, ...] = (), owners: bool = True) -> float:
    """The legend of the other colours (the phases' is the sequence row): the CPU waiting, glshare's
    bookkeeping before a wait (or, for ``keys``, the timeline's ``legend``: those of its calls), and
    the owners of a shared object (``owners``); returns the row's bottom."""
    line = imgui.get_text_line_height()
    box = line - 4
    items = [(legend.CALL_RGB[k], legend.CALL_TITLES[k]) for k in keys] or [
        (legend.WAIT_RGB, "CPU waits"), (legend.BOOKKEEPING_RGB, "glshare's bookkeeping")]
    if owners:
        items += [None, (legend.OWNER_RGB[legend.GL], "GL owns"), (legend.OWNER_RGB[legend.CL], "CL owns"),
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


def draw_timeline(tl: Timeline, state: PanelState, avail_h: float) -> None:
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
    y = int(_legend_row(dl, x0, y, x1, tl.legend, not tl.legend or bool((tl.kind == KIND_OWNER).any())))
    lanes = tl.lanes or ()
    n = len(lanes) or 4  # (no frame yet: room for glshare's four lanes)
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
    _zoom_indicator(state, x0, y, span)
    imgui.set_cursor_screen_pos((bx0, y))
    imgui.invisible_button("##timeline", (max(bx1 - bx0, 1), max(bottom - y, 1)))
    item_rect(state, "timeline")
    hovered, active = imgui.is_item_hovered(), imgui.is_item_active()
    if hovered:
        imgui.set_item_key_owner(imgui.Key.mouse_wheel_y)  # the wheel zooms here, it does not scroll
    _interact(state, hovered, active, bx0, scale, t0, t1, span)
    if imgui.is_key_pressed(ZOOM_KEY, False) and not imgui.get_io().want_text_input:
        zoom_to_handover(tl, state)
    if tl.frame is None or not tl.count:
        dl.add_text((bx0 + 4, top + 2), TEXT, "timeline: waiting for a complete frame")
    elif not _bars(dl, tl, state, bx0, bx1, top, lane_h, t0, scale, hovered) and hovered:
        tooltip(f"frame {tl.frame} on {tl.segment}\nwheel: zoom, drag: pan, double-click: fit, "
                "z: zoom to the hand-over; hover a bar: its links (the CPU call that enqueued a CL "
                "command, the hand-overs) light up"
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


ZOOM_KEY = imgui.Key.z  # "zoom to the hand-over" (no command of app/session/controls.py takes z)


def zoom_to_handover(tl: Timeline, state: PanelState) -> bool:
    """The timeline's view on the frame's hand-overs (``Timeline.handover_ms``); False where none."""
    view = tl.handover_ms() if tl.frame is not None and tl.count else None
    if view is None:
        return False
    state.zoom = view
    return True


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


def _zoom_indicator(state: PanelState, x: float, y: float, span: float) -> None:
    """Left of the tick labels: how far the timeline is zoomed in ("1x": the whole frame), a
    button back to the whole frame while zoomed."""
    imgui.set_cursor_screen_pos((x, y))
    if state.zoom is None:
        imgui.text_disabled("zoom 1x")
        hover_tip("the whole frame; wheel over the timeline: zoom, drag: pan, z: zoom to the hand-over")
        return
    a, b = state.zoom
    if imgui.small_button(f"fit {span / max(b - a, 1e-9):.3g}x"):
        state.zoom = None
    item_rect(state, "zoom")
    hover_tip(f"the timeline shows {duration_label(b - a)} from {a:.3f} ms: back to the whole frame "
              "(or double-click the timeline)")


KEYS_HELP = "left / right: the frame before / after; right on the newest: step the run one frame"


def _keys(state: PanelState, frame: int, chosen: bool, first: int, newest: int) -> None:
    """While paused: left shows the frame before the one shown; right, while a frame is chosen, the
    one after it. On the newest, right is the run's "step" (``UiHost.takes_key`` leaves it to the
    run there): the frame it ran is the newest kept by this redraw, and the panel chooses it."""
    if imgui.get_io().want_text_input:
        return
    if imgui.is_key_pressed(imgui.Key.left_arrow, True) and frame > first:
        state.chosen = frame - 1
    elif chosen and imgui.is_key_pressed(imgui.Key.right_arrow, True) and frame < newest:
        state.chosen = frame + 1


def draw_frame_choice(m: PanelModel, state: PanelState) -> None:
    """While paused a slider over the kept frames and a button to zoom on the hand-over; "follow"
    goes back to the newest frame."""
    h, t = m.header, m.timing
    browsing = h.paused and not h.in_progress and not h.teaching
    if browsing and h.frame is not None and t.first_kept is not None:
        _keys(state, h.frame, h.chosen, t.first_kept, t.newest_kept)
    if browsing and m.timeline.frame is not None and m.timeline.handover_ms() is not None:
        if imgui.small_button("hand-over (z)"):
            zoom_to_handover(m.timeline, state)
        hover_tip("zoom the timeline on the frame's hand-overs (key z)")
        imgui.same_line()
    if browsing and t.first_kept is not None and t.newest_kept > t.first_kept:
        imgui.set_next_item_width(max(imgui.get_content_region_avail().x - 130, 60))
        current = h.frame if h.frame is not None else t.newest_kept
        changed, value = imgui.slider_int("##frame", current, t.first_kept, t.newest_kept, "frame %d")
        if changed:
            state.chosen = value
        hover_tip(f"any frame the run kept: the header, the owners and the timeline follow it; {KEYS_HELP}")
        imgui.same_line()
    if h.chosen:
        if imgui.button("follow the run"):
            state.chosen = None
        hover_tip("show the newest frame again (resuming does too)")
    elif browsing:
        imgui.text_disabled("(newest)")
    if browsing:  # the help line, under the row: what the keys do while paused
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(DIM, f"keys: {KEYS_HELP}; z: zoom to the hand-over")


FOLD_PX = 1.0  # bars narrower than this (px), this close to each other on one lane, are drawn as one block
FOLD_RGB = (150, 150, 165)


def fold_narrow(lane: np.ndarray, xa: np.ndarray, xb: np.ndarray, candidates: np.ndarray,
                px: float = FOLD_PX) -> list[tuple[int, float, float, list[int]]]:
    """Sub-pixel zones folded: among ``candidates`` (bar indices), the bars narrower than ``px``
    whose starts lie within ``px`` of the group's end on the same lane, two or more, as (lane, x0,
    x1, members): drawn as one labelled block instead of vanishing under one another."""
    narrow = [i for i in candidates.tolist() if xb[i] - xa[i] < px]
    narrow.sort(key=lambda i: (int(lane[i]), float(xa[i])))
    groups: list[tuple[int, float, float, list[int]]] = []
    cur: list[int] = []
    ln, x0, x1 = -1, 0.0, 0.0
    for i in narrow:
        if cur and int(lane[i]) == ln and float(xa[i]) <= x1 + px:
            cur.append(i)
            x1 = max(x1, float(xb[i]))
            continue
        if len(cur) > 1:
            groups.append((ln, x0, x1, cur))
        cur, ln, x0, x1 = [i], int(lane[i]), float(xa[i]), float(xb[i])
    if len(cur) > 1:
        groups.append((ln, x0, x1, cur))
    return groups


def _folded_blocks(dl, blocks, bx0: float, bx1: float, top: float, lane_h: int) -> None:
    """The sub-pixel zones folded into one grey block each, with how many they hold."""
    block_col = u32(FOLD_RGB, 200)
    for ln, a, b, members in blocks:
        a, b = max(a, bx0), min(max(b, a + 3.0), bx1)
        yt = top + ln * lane_h + 2
        dl.add_rect_filled((a, yt), (b, yt + lane_h - 4), block_col)
        text = str(len(members))
        if imgui.calc_text_size(text).x <= b - a - 2:
            dl.add_text((a + 1, yt + (lane_h - 4 - imgui.get_text_line_height()) / 2), u32((20, 20, 28)), text)
        else:  # the count beside it
            dl.add_text((b + 1, yt - 2), DIM_U32, f"{len(members)}")


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
    # sub-pixel zones (not the owners: those are continuous) folded into one block each
    blocks = fold_narrow(tl.lane, xa, xb, idx[kind[idx] != KIND_OWNER])
    if blocks:
        folded = np.zeros(len(names), bool)
        for _ln, _a, _b, members in blocks:
            folded[members] = True
        idx = idx[~folded[idx]]
    # widest first, so a bar stretched to its one pixel is never covered by a neighbour
    idx = idx[np.argsort(-(xb_c[idx] - xa_c[idx]), kind="stable")]
    dl.push_clip_rect((bx0, top), (bx1 + 1, top + len(tl.lanes) * lane_h), True)
    label_room = imgui.calc_text_size("m").x
    for i, a, yt, b, yb, k in zip(idx.tolist(), xa_c[idx].tolist(), y_top[idx].tolist(), xb_c[idx].tolist(),
                                  y_bot[idx].tolist(), kind[idx].tolist()):
        name = names[i]
        key = tl.colors[i] if tl.colors else ""
        if k == KIND_OWNER and name in legend.HANDOVER:
            _stripes(dl, a, yt, b, yb)
        else:
            dl.add_rect_filled((a, yt), (b, yb), _bar_color(k, name, key))
        if b - a > label_room * 4 and k not in (KIND_QUEUED, KIND_BOOKKEEPING):  # a label where it fits
            dur = tl.end[i] - tl.start[i]
            label = tl.labels[i] if i < len(tl.labels) else name
            text = f"{label} {duration_label(dur)}"
            tw = imgui.calc_text_size(text).x
            if tw > b - a - 4:
                text = label
                tw = imgui.calc_text_size(text).x
            if tw <= b - a - 4:
                dark = k in (KIND_OWNER,) or name in ("acquire", "compute", "panel") or key in ("CL call", "swap")
                dl.add_text((a + 2, yt + (yb - yt - imgui.get_text_line_height()) / 2),
                            u32((20, 20, 28)) if dark else u32((250, 250, 250)), text)
    _folded_blocks(dl, blocks, bx0, bx1, top, lane_h)
    for i in np.nonzero(visible & (kind == KIND_RUN))[0].tolist():  # where the CL commands were drawn (tests)
        state.rects[f"bar {tl.labels[i]}"] = (int(xa_c[i]), int(y_top[i]), int(xb_c[i]), int(y_bot[i]))
    hot = _hit_bar(tl, visible, xa_c, xb_c, top, lane_h) if hovered else None
    state.hot = (tl.frame, hot, tuple(k.name for k in tl.links_of(hot))) if hot is not None else None
    _links(dl, tl, hot, bx0, top, lane_h, t0, scale, xa_c, xb_c)
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
    return _bar_tooltip(tl, marks, blocks, hot, top, lane_h)


LINK_RGB = (235, 235, 245)  # a link's arrow: dim for every link of the frame, bright for the hovered bar's
LINK_DIM, LINK_HOT = u32(LINK_RGB, 70), u32(LINK_RGB, 255)


def _links(dl, tl: Timeline, hot: int | None, bx0: float, top: float, lane_h: int, t0: float, scale: float,
           xa_c, xb_c) -> None:
    """The frame's links as arrows, Perfetto's flows drawn as the trace writes them: from where a
    link leaves its source bar (a CL command's enqueue: its QUEUED stamp on the CPU's call) to where
    it lands (the command's start), each from the edge of the source's lane that faces the target's;
    those of the hovered bar ``hot`` bright, with both bars outlined."""
    lit = tl.links_of(hot) if hot is not None else ()
    for link in tl.links:
        if link not in lit:
            _arrow(dl, link, tl, bx0, top, lane_h, t0, scale, LINK_DIM, 1.0)
    for link in lit:
        _arrow(dl, link, tl, bx0, top, lane_h, t0, scale, LINK_HOT, 2.0)
        for i in (link.src, link.dst):
            yt = top + int(tl.lane[i]) * lane_h
            dl.add_rect((float(xa_c[i]) - 1, yt + 1), (float(xb_c[i]) + 1, yt + lane_h - 1), LINK_HOT, 0.0, 2.0)


def _arrow(dl, link: Link, tl: Timeline, bx0: float, top: float, lane_h: int, t0: float, scale: float, col: int,
           thick: float) -> None:
    a, b = int(tl.lane[link.src]), int(tl.lane[link.dst])
    down = b >= a
    x0, x1 = bx0 + (link.from_ms - t0) * scale, bx0 + (link.to_ms - t0) * scale
    y0 = top + (a + 1) * lane_h - 2 if down else top + a * lane_h + 2
    y1 = top + b * lane_h + 2 if down else top + (b + 1) * lane_h - 2
    bend = (y1 - y0) / 2
    dl.add_bezier_cubic((x0, y0), (x0, y0 + bend), (x1, y1 - bend), (x1, y1), col, thick)
    head = 5.0 if down else -5.0
    dl.add_triangle_filled((x1, y1), (x1 - 3.5, y1 - head), (x1 + 3.5, y1 - head), col)


def _hit_bar(tl: Timeline, visible, xa_c, xb_c, top: float, lane_h: int) -> int | None:
    """The narrowest bar under the cursor, or None."""
    m = imgui.get_io().mouse_pos
    lane = int((m.y - top) // lane_h)
    pad = np.maximum((HIT_PX - (xb_c - xa_c)) / 2, 0)
    hit = np.nonzero(visible & (tl.lane == lane) & (xa_c - pad <= m.x) & (m.x <= xb_c + pad))[0]
    return int(hit[np.argmin(xb_c[hit] - xa_c[hit])]) if hit.size else None


def _link_lines(tl: Timeline, i: int) -> str:
    """What bar ``i`` is linked to, a line each: the CPU call that enqueued a command, the command a
    call enqueued (with the time between: the enqueue to the start), the hand-overs."""
    lines = []
    for k in tl.links_of(i):
        other = k.dst if k.src == i else k.src
        label = tl.labels[other] if other < len(tl.labels) else tl.names[other]
        what = tl.lanes[int(tl.lane[other])].name
        gap = duration_label(k.to_ms - k.from_ms)
        if k.src == i:
            lines.append(f"-> {what}: {label} at {k.to_ms:.3f} ms ({gap} later)")
        else:
            lines.append(f"<- {what}: {label} at {k.from_ms:.3f} ms ({gap} before)")
    return "".join(f"\n{line}" for line in lines)


def _bar_tooltip(tl: Timeline, marks, blocks, hot: int | None, top: float, lane_h: int) -> bool:
    """The tooltip of the marker, else of the narrowest bar (``hot``), under the cursor; True when
    one was shown."""
    kind, names = tl.kind, tl.names
    m = imgui.get_io().mouse_pos
    for mx, my, mk in marks:
        if abs(m.x - mx) <= HIT_PX and my <= m.y <= my + lane_h:
            tooltip(f"{mk.title} (frame {tl.frame})\n{mk.text}")
            return True
    lane = int((m.y - top) // lane_h)
    for ln, a, b, members in blocks:
        if ln == lane and a - HIT_PX / 2 <= m.x <= max(b, a + 3.0) + HIT_PX / 2:
            shown = members[:10]
            lines = [f"{tl.labels[i] if i < len(tl.labels) else tl.names[i]} {tl.start[i]:.3f} ms, "
                     f"{duration_label(float(tl.end[i] - tl.start[i]))}" for i in shown]
            more = f"\n... and {len(members) - len(shown)} more" if len(members) > len(shown) else ""
            tooltip(f"{len(members)} zones too short to draw at this zoom (wheel to zoom in), frame {tl.frame}:\n"
                    + "\n".join(lines) + more)
            return True
    if hot is not None:
        i = hot
        s, e = float(tl.start[i]), float(tl.end[i])
        what = tl.lanes[int(tl.lane[i])].name
        kind_text = {KIND_QUEUED: " (waiting in the queue)", KIND_OWNER: "",
                     KIND_BOOKKEEPING: " (glshare's reads of earlier frames' stamps, before the wait)"}.get(int(kind[i]), "")
        owner = legend.OWNER_TITLES.get(names[i], "") if int(kind[i]) == KIND_OWNER else ""
        label = tl.labels[i] if i < len(tl.labels) else names[i]
        tooltip(f"{what}: {owner or label}{kind_text}, frame {tl.frame}\n"
                f"{s:.3f} -> {e:.3f} ms ({duration_label(e - s)})" + _link_lines(tl, i))
        return True
    return False
