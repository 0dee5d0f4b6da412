"""The panel's header: the scene, the set-up and the frame it describes, the frame time, the clock's
uncertainty, the error and hazard counts, a --strict stop and the last command's status."""
from __future__ import annotations

from app.ui.bundle import imgui, imgui_ctx
from app.ui.model import PanelModel
from app.ui.panel.state import PanelState
from app.ui.panel.widgets import DIM, HAZARD, RED, hover_tip, item_rect, wrapping_text


def draw_header(m: PanelModel, state: PanelState, request) -> None:
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
        wrapping_text("(" + ", ".join(tags) + ")", HAZARD if h.stop is not None else (1.0, 0.85, 0.4, 1.0))
    else:  # the line stays, empty: the rows below do not move under the cursor as the tags come and go
        imgui.text_unformatted(" ")
    imgui.text_unformatted(f"{h.frame_ms:.2f} ms/frame ({h.fps:.0f} fps, median"
                           + (" of the set-up now)" if h.setup_now else ")"))
    wrapping_text(f"clock CL\u00b1{h.clock_cl_us:.0f} GL\u00b1{h.clock_gl_us:.0f} us", DIM)
    item_rect(state, "clock")
    hover_tip("CL device time and GL time are put on the host clock; +/- is how well (Caps tab)")
    if h.errors or h.hazards:
        wrapping_text(f"{h.errors} errors, {h.hazards} hazards", RED)
        hover_tip("counts since the last clear (the Errors and Hazards tabs)")
    if h.stop is not None:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(HAZARD, f"STOPPED at frame {h.stop.frame} (--strict): {h.stop.reason}")
    if h.status:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored((0.75, 0.85, 1.0, 1.0), f"> {h.status}")
    if h.notes:
        imgui.set_next_item_open(True, imgui.Cond_.first_use_ever)
    if h.notes and imgui.tree_node(f"what the recording cannot see ({len(h.notes)})###notes"):
        with imgui_ctx.push_text_wrap_pos(0.0):
            for note in h.notes:
                imgui.text_colored(DIM, f"- {note}")
        imgui.tree_pop()
