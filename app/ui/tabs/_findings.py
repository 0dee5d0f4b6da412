"""What the Errors and Hazards tabs draw: the folded findings, most recent first, with "clear"."""
from __future__ import annotations

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.model import Finding, Findings
from app.ui.panel.widgets import DIM, GREEN, HAZARD, RED, hover_tip


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


def finding_lines(e: Finding, detail: bool) -> tuple[tuple[str, str], ...]:
    """What an entry shows, (style, text) each: its count and name, where and on which frames, then
    (``detail``) an error's own message (what failed, from the call that raised it) before what the
    spec says of its code, or the spec sentence a hazard breaks; "tip": only in its tooltip."""
    code = f" ({e.code})" if e.code is not None else ""
    where = f"{e.label} " if e.label else ""
    lines = [(e.kind, f"{e.count}x  {e.title}{code}"),
             ("text", f"{where}in {e.where}, frames {e.first_frame}-{e.last_frame}")]
    for style, text in (("message", e.message), ("meaning", e.text)):
        if text:
            lines.append((style if detail else "tip", text))
    return tuple(lines)


_STYLE = {"error": RED, "hazard": HAZARD, "text": legend.f4(legend.TEXT_RGB), "message": legend.f4(legend.TEXT_RGB),
          "meaning": DIM}


def _finding(e: Finding, detail: bool) -> None:
    tips = []
    for style, text in finding_lines(e, detail):
        if style == "tip":
            tips.append(text)
        elif style in (e.kind,):
            imgui.text_colored(_STYLE[style], text)
        else:
            with imgui_ctx.push_text_wrap_pos(0.0):
                imgui.text_colored(_STYLE[style], text)
    if tips:
        hover_tip("\n".join(tips))
