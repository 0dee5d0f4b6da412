"""What the Errors and Hazards tabs draw: the folded findings, most recent first, with "clear"."""
from __future__ import annotations

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.model import Finding, Findings
from app.ui.panel.widgets import DIM, GREEN, HAZARD, RED, hover_tip, wrapping_text


def draw_findings(part: Findings, kind: str, request) -> None:
    if imgui.button(f"clear {kind}s"):
        request("clear_findings")
    hover_tip("forget the errors and hazards shown so far (the report keeps every one)")
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
    wrapping_text(f"{where}in {e.where}, frames {e.first_frame}-{e.last_frame}", legend.f4(legend.TEXT_RGB))
    text = e.text or e.message
    if detail and text:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(DIM, text)
    else:
        hover_tip(text)
