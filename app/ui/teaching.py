"""The teaching-mode section: the phase strip, who owns each object, the spec text of the step.

Drawn from the teaching view (``app.schedule.teach.teaching_view``) only (no GL or CL call). The
buttons do not act here: ``draw_teaching`` returns the command they stand for ("teach" on/off,
"step" the next phase, "teach_finish" the frame), which runs after the frame.
"""
from __future__ import annotations

from imgui_bundle import imgui, imgui_ctx

GL_COLOR = (0.45, 0.80, 1.00, 1.0)
CL_COLOR = (1.00, 0.65, 0.25, 1.0)
DIM = (0.55, 0.57, 0.62, 1.0)
NOW = (1.00, 1.00, 0.45, 1.0)
DONE = (0.55, 0.85, 0.55, 1.0)


def _strip(snap: dict) -> None:
    """GL draw -> acquire -> kernel -> release -> GL draw, the step just run highlighted."""
    idx = snap.get("step_index", 0)
    for i, name in enumerate(snap.get("steps", [])):
        if i:
            imgui.same_line()
            imgui.text_colored(DIM, "->")
            imgui.same_line()
        color = NOW if i == idx else (DONE if i < idx else DIM)
        imgui.text_colored(color, f"[{name}]" if i == idx else name)


def _owners(snap: dict) -> None:
    """One row per shared object: a box in the GL column or in the CL column."""
    objects = snap.get("objects", [])
    if not objects:
        imgui.text_disabled("no shared objects")
        return
    flags = imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_stretch_prop
    with imgui_ctx.begin_table("##teach_owners", 3, int(flags)) as table:
        if not table:
            return
        for head in ("object", "GL", "CL"):
            imgui.table_setup_column(head)
        imgui.table_headers_row()
        for obj in objects:
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            imgui.text(f"{obj['label']} ({obj['kind']})")
            owner = obj.get("owner")
            imgui.table_set_column_index(1)
            if owner == "gl":
                imgui.text_colored(GL_COLOR, "[## owns ##]")
            else:
                imgui.text_disabled("   .")
            imgui.table_set_column_index(2)
            if owner == "cl":
                imgui.text_colored(CL_COLOR, "[## owns ##]")
            else:
                imgui.text_disabled("   .")


def draw_teaching(snap: dict) -> str | None:
    """Draw the teaching section. Returns the command of the button pressed, else None."""
    action = None
    active = bool(snap.get("active"))
    if imgui.button("Stop teaching (t)" if active else "Teaching mode (t)"):
        action = "teach"
    if not active:
        imgui.same_line()
        imgui.text_disabled("pause and step one phase at a time")
        return action
    imgui.same_line()
    if imgui.button(f"Next: {snap.get('next_title', '')} (n)"):
        action = "step"
    if snap.get("mid_frame"):
        imgui.same_line()
        if imgui.button("Finish frame"):
            action = "teach_finish"
    imgui.text(f"frame {snap.get('frame')}  backend {snap.get('backend')}  sync {snap.get('sync')}"
               + (f"  skipping {', '.join(snap['skip'])}" if snap.get("skip") else ""))
    _strip(snap)
    _owners(snap)
    if not snap.get("gl_may_draw", True):
        imgui.push_style_color(imgui.Col_.text, CL_COLOR)
        imgui.text_wrapped("CL owns the shared objects: GL does not draw them until the release (the screen shows "
                           "only the background).")
        imgui.pop_style_color()
    if snap.get("does"):
        imgui.text_wrapped(snap["does"])
    imgui.separator()
    imgui.text_colored(DIM, f"spec, {snap.get('last_title', '')}:")
    imgui.text_wrapped(snap.get("spec", ""))
    return action
