"""The "Error lab" tab: the lab's table (spec, validator, driver) and the hazard demonstrations.

``draw_lab_tab(results)`` and ``draw_hazard_demos(state)`` only draw (no GL or CL call) and
return what was asked for; the lab itself runs as the ``run_lab`` command, after the ImGui frame.
"""
from __future__ import annotations

from imgui_bundle import imgui, imgui_ctx

RED = (1.0, 0.42, 0.35, 1.0)
GREEN = (0.45, 0.90, 0.45, 1.0)
DIM = (0.60, 0.62, 0.68, 1.0)
ON = (1.0, 0.75, 0.30, 1.0)


def draw_lab_tab(results: dict | None) -> bool:
    """Draw the lab's results (or an invitation to run it). Returns True when "Run" was pressed."""
    run = imgui.button("Run the error lab" if results is None else "Run again")
    if results is None:
        imgui.same_line()
        imgui.text_disabled("every acquire/release case and hazard against the spec")
        return run
    s = results.get("summary", {})
    imgui.same_line()
    color = GREEN if s.get("ok") else RED
    imgui.text_colored(color, f"validator {s.get('validator_agrees')}/{s.get('cases')} agree, "
                              f"hazards {s.get('hazards_ok')}/{s.get('hazards')}")
    imgui.text_wrapped(f"{results.get('implementation', '')}; backend {results.get('backend', '')}")
    imgui.text_colored(DIM, "driver: ")
    imgui.same_line()
    imgui.text_wrapped(results.get("driver_policy", ""))
    by_case: dict[str, dict[str, dict]] = {}
    for row in results.get("cases", []):
        by_case.setdefault(row["case"], {})[row["call"]] = row
    flags = imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_stretch_prop
    with imgui_ctx.begin_table("##lab_cases", 4, int(flags)) as table:
        if table:
            for head in ("case", "spec", "acquire", "release"):
                imgui.table_setup_column(head)
            imgui.table_headers_row()
            for case, calls in by_case.items():
                first = next(iter(calls.values()))
                imgui.table_next_row()
                imgui.table_set_column_index(0)
                imgui.text(case)
                if imgui.is_item_hovered():
                    imgui.set_tooltip(f"{first.get('what', '')}\n{first.get('note', '')}".strip())
                imgui.table_set_column_index(1)
                imgui.text(_short(first["spec_code"]))
                for col, call in ((2, "acquire"), (3, "release")):
                    imgui.table_set_column_index(col)
                    row = calls.get(call)
                    if row is not None:
                        _cell(row)
    imgui.text_disabled("cells: validator ('ok' = the spec's code), then the driver's answer where it was called")
    imgui.separator()
    for h in results.get("hazards", []):
        ok = h["flagged"] and h.get("strict_raises", True) and not h.get("also_flagged")
        imgui.text_colored(GREEN if ok else RED, ("flagged " if h["flagged"] else "MISSED  ") + h["case"])
        if imgui.is_item_hovered():
            imgui.set_tooltip(h["spec"])
    return run


def _short(code: str | None) -> str:
    return (code or "-").removeprefix("CL_").removeprefix("INVALID_")


def _cell(row: dict) -> None:
    """One call of one case: the validator's verdict, then the driver's code or 'not called'."""
    if row["agrees"]:
        imgui.text_colored(GREEN, "ok")
    else:
        imgui.text_colored(RED, _short(row["validator_code"]))
    imgui.same_line()
    if row.get("driver_called"):
        imgui.text_colored(RED if row.get("driver_differs") else GREEN, f"drv {_short(row['driver_code'])}")
    else:
        imgui.text_disabled("drv -")
    if imgui.is_item_hovered():
        tip = f"validator {row['validator_code']}; driver "
        tip += row["driver_code"] if row.get("driver_called") else f"not called: {row.get('driver_note', '')}"
        imgui.set_tooltip(tip)


def draw_hazard_demos(state: dict) -> str | None:
    """The demonstration toggles. Returns the name of the demonstration whose button was pressed."""
    pressed = None
    imgui.text(f"hazard demonstrations on {state.get('backend', '')}"
               + ("  (--strict: the first flag stops the run)" if state.get("strict") else ""))
    for d in state.get("demos", []):
        label = f"{'[on] ' if d['on'] else ''}{d['title']} ({d['key']})###demo{d['key']}"
        if d["on"]:
            imgui.push_style_color(imgui.Col_.text, ON)
        if imgui.button(label):
            pressed = d["demo"]
        if d["on"]:
            imgui.pop_style_color()
        if imgui.is_item_hovered():
            imgui.set_tooltip(f"flags: {d['flags']}")
        if d["on"]:
            imgui.text_wrapped(d["effect"])
    counts = state.get("hazard_counts") or {}
    if counts:
        imgui.text_colored(RED, "flagged: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
    return pressed
