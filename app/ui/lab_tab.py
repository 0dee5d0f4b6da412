"""The "Error lab" tab: the lab's table (spec, validator, driver) and the hazard demonstrations.

``draw_lab_tab(results)`` and ``draw_hazard_demos(lab)`` only draw from the panel model's
``LabResults`` and ``LabPart`` (no GL or CL call) and return what was asked for; the lab itself runs
as the ``run_lab`` command, after the ImGui frame.
"""
from __future__ import annotations

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.legend import f4
from app.ui.panel.widgets import tooltip

RED = f4(legend.ERROR_RGB)
GREEN = f4(legend.OK_RGB)
DIM = f4(legend.DIM_RGB)
ON = f4(legend.HAZARD_RGB)


def _tip(text: str) -> None:
    if text and imgui.is_item_hovered():
        tooltip(text)


def draw_lab_tab(results) -> bool:
    """Draw the lab's results (the model's ``LabResults``, or None: an invitation to run it).
    Returns True when "Run" was pressed."""
    run = imgui.button("Run the error lab" if results is None else "Run again")
    if results is None:
        imgui.same_line()
        imgui.text_disabled("every acquire/release case and hazard against the spec")
        return run
    imgui.same_line()
    imgui.text_colored(GREEN if results.ok else RED, f"validator {results.agree}/{results.n_cases} agree, "
                                                     f"hazards {results.hazards_ok}/{results.n_hazards}")
    imgui.text_wrapped(f"{results.implementation}; backend {results.backend}")
    if results.gl_context:
        imgui.text_colored(DIM, f"GL context: {results.gl_context}")
    # one table per call family (those the backend's rule set runs), with its driver policy
    policy = dict(results.driver_policy)
    by_family: dict[str, dict[str, dict]] = {}
    for row in results.cases:
        by_family.setdefault(row.family, {}).setdefault(row.case, {})[row.call] = row
    flags = imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_stretch_prop
    for family, cases in by_family.items():
        calls = list(dict.fromkeys(c for per in cases.values() for c in per))
        imgui.separator_text(family)
        imgui.text_colored(DIM, "driver: ")
        imgui.same_line()
        imgui.text_wrapped(policy.get(family, ""))
        with imgui_ctx.begin_table(f"##lab_cases_{family}", 2 + len(calls), int(flags)) as table:
            if table:
                for head in ("case", "spec", *calls):
                    imgui.table_setup_column(head)
                imgui.table_headers_row()
                for case, per in cases.items():
                    first = next(iter(per.values()))
                    imgui.table_next_row()
                    imgui.table_set_column_index(0)
                    imgui.text(case)
                    _tip("\n".join(t for t in (first.what, f"{first.section}: \u201c{first.quote}\u201d"
                                                if first.quote else "", first.note, first.deviation) if t))
                    imgui.table_set_column_index(1)
                    imgui.text(" | ".join(_short(c) for c in first.spec_codes))
                    for col, call in enumerate(calls, start=2):
                        imgui.table_set_column_index(col)
                        row = per.get(call)
                        if row is not None:
                            _cell(row)
    imgui.text_disabled("cells: validator ('ok' = a code the spec allows), then the driver's answer where it was called")
    if results.deviations:
        imgui.separator_text("deliberate deviations glshare keeps")
        for line in results.deviations:
            imgui.bullet()
            imgui.same_line()
            imgui.text_wrapped(line)
    imgui.separator()
    for h in results.hazards:
        imgui.text_colored(GREEN if h.ok else RED, ("flagged " if h.flagged else "MISSED  ") + h.case
                           + (f" ({h.kind})" if h.kind else ""))
        _tip(h.spec)
    return run


def _short(code: str | None) -> str:
    return (code or "no code").removeprefix("CL_").removeprefix("INVALID_")


def _cell(row) -> None:
    """One call of one case: the validator's verdict, then the driver's code or 'not called'."""
    if row.validator_agrees:
        imgui.text_colored(GREEN, "ok")
    else:
        imgui.text_colored(ON if row.deviation else RED, _short(row.validator_code))
    imgui.same_line()
    if row.driver_called:
        imgui.text_colored(RED if row.driver_differs else GREEN, f"drv {_short(row.driver_code)}")
    else:
        imgui.text_disabled("drv -")
    tip = f"validator {row.validator_code}; driver "
    tip += row.driver_code if row.driver_called else (row.driver_note or "not called")
    tip += "".join(f"\n{d}" for d in row.disagreements)
    _tip(tip)


def draw_hazard_demos(lab) -> str | None:
    """The demonstration toggles (the model's ``LabPart``). Returns the name of the demonstration
    pressed."""
    pressed = None
    imgui.text(f"hazard demonstrations on {lab.backend}")
    if lab.strict:
        imgui.text_colored(ON, "--strict: the first flag stops the run on its frame")
    for d in lab.demos:
        label = f"{'[on] ' if d.on else ''}{d.title} ({d.key})###demo{d.key}"
        if d.on:
            imgui.push_style_color(imgui.Col_.text, ON)
        if imgui.button(label):
            pressed = d.demo
        if d.on:
            imgui.pop_style_color()
        _tip(f"flags: {d.flags}")
        if d.on and d.effect:
            with imgui_ctx.push_text_wrap_pos(0.0):
                imgui.text_colored(DIM, d.effect)
    if lab.hazard_counts:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(ON, "flagged since the last clear: "
                               + ", ".join(f"{k} {v} times" for k, v in lab.hazard_counts))
    return pressed
