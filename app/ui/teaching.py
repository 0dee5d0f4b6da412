"""The teaching-mode section: the buttons, the phase strip, who owns each object, what glshare did
and the specification's words for the step, quoted and cited.

Drawn from the teaching view (``app.schedule.teach.TeachingView``) only (no GL or CL call), with
the phase and owner colours of ``app/ui/legend.py`` and the phase names of the timeline. The
buttons do not act here: ``draw_teaching`` returns the command they stand for ("teach" on/off,
"step" the next phase, "teach_finish" the frame), which runs after the frame. Laid out so the step
and its explanation are visible at the top of the panel without scrolling (800x600 and up).
"""
from __future__ import annotations

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.legend import f4, u32
from app.ui.panel.widgets import tooltip

DIM = f4(legend.DIM_RGB)
NOW = (1.00, 1.00, 1.00, 1.0)
QUOTE_BAR = u32((120, 160, 220))
QUOTE_TEXT = (0.80, 0.86, 0.98, 1.0)


def _strip(t) -> None:
    """acquire -> compute -> release -> render, in the phase colours: done, [the step just run], next."""
    idx = t.step_index
    for i, name in enumerate(t.steps):
        if i:
            imgui.same_line(0, 4)
            imgui.text_colored(DIM, "->")
            imgui.same_line(0, 4)
        rgb = legend.PHASE_RGB.get(name, legend.TEXT_RGB)
        if i + 1 == idx:
            imgui.text_colored(f4(rgb), f"[{name}]")
        elif i + 1 < idx:
            imgui.text_colored(f4(rgb, 0.8), name)
        else:
            imgui.text_colored(DIM, name)


def _owner_line(t) -> None:
    """Who owns each object now, in the owner colours (the timeline's object lanes say when)."""
    if not t.objects:
        imgui.text_disabled("no shared objects")
        return
    imgui.text_unformatted("owners:")
    for o in t.objects:
        imgui.same_line()
        state = o.state
        rgb = legend.OWNER_RGB.get(state)
        imgui.text_unformatted(o.label.split(".", 1)[-1])
        imgui.same_line(0, 4)
        if rgb is None:
            imgui.text_colored(NOW, state)  # a hand-over in flight
        else:
            imgui.text_colored(f4(rgb), state)


def quote(text: str, cite: str) -> None:
    """A quotation of the specification: a bar at its left, the words in quotes, where they come from."""
    dl = imgui.get_window_draw_list()
    x, y = imgui.get_cursor_screen_pos()
    imgui.indent(10)
    with imgui_ctx.begin_group():
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(QUOTE_TEXT, f'"{text}"')
            short, _, source = cite.partition(" (")
            imgui.text_colored(DIM, f"-- {short}")
    if source and imgui.is_item_hovered():
        tooltip(f"quoted from {source.rstrip(')')}")
    bottom = imgui.get_item_rect_max().y
    imgui.unindent(10)
    dl.add_rect_filled((x + 2, y), (x + 5, bottom), QUOTE_BAR)


def draw_owners(t) -> None:
    """One row per shared object: a box in the GL column or in the CL column (the Teach tab)."""
    if not t.objects:
        imgui.text_disabled("no shared objects")
        return
    flags = imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_stretch_prop
    with imgui_ctx.begin_table("##teach_owners", 3, int(flags)) as table:
        if not table:
            return
        for head in ("object", "GL", "CL"):
            imgui.table_setup_column(head)
        imgui.table_headers_row()
        for obj in t.objects:
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            imgui.text(f"{obj.label} ({obj.kind})")
            for col, who in ((1, "gl"), (2, "cl")):
                imgui.table_set_column_index(col)
                if obj.owner == who:
                    imgui.text_colored(f4(legend.OWNER_RGB[legend.owner_state(who)]), "[## owns ##]")
                else:
                    imgui.text_disabled("   .")


def draw_teaching(t) -> str | None:
    """Draw the teaching section. Returns the command of the button pressed, else None."""
    action = None
    if imgui.button("Stop teaching (t)" if t.active else "Teaching mode (t)"):
        action = "teach"
    if not t.active:
        imgui.same_line()
        imgui.text_disabled("pause and step one phase at a time")
        return action
    imgui.same_line()
    if imgui.button(f"Next: {t.next_title} (n)"):
        action = "step"
    if t.mid_frame:
        imgui.same_line()
        if imgui.button("Finish frame (f)"):
            action = "teach_finish"
    extra = f"  skipping {', '.join(t.skip)}" if t.skip else ""
    imgui.text_unformatted(f"frame {t.frame}{extra}")
    imgui.same_line()
    _strip(t)
    _owner_line(t)
    with imgui_ctx.push_text_wrap_pos(0.0):
        if t.step_index == 0:
            imgui.text_unformatted("Between frames: GL owns every shared object. The next step runs the acquire.")
        else:
            if not t.gl_may_draw:
                imgui.text_colored(f4(legend.OWNER_RGB[legend.CL]),
                                   "CL owns them: GL draws only the background until the release.")
            imgui.text_unformatted(f"glshare: {t.note}")
            if t.does:
                imgui.text_colored(DIM, t.does if t.does.startswith(f"{t.backend}:") else f"{t.backend}: {t.does}")
    quote(t.spec if t.step_index else t.next_spec, t.cite if t.step_index else t.next_cite)
    return action
