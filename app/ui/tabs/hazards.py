"""The Hazards tab: every hazard the ownership tracker flagged since the last clear, folded by
(case, object, where), with the spec sentence it breaks; a --strict stop on one first."""
from __future__ import annotations

from app.ui.bundle import imgui, imgui_ctx
from app.ui.model import Findings
from app.ui.panel.widgets import DIM, HAZARD
from app.ui.tabs import Tab, TabInput
from app.ui.tabs._findings import draw_findings


def build(inp: TabInput) -> Findings:
    return inp.hazards.part()


def draw(part: Findings, m, request) -> None:
    h = m.header
    if h.stop is not None and h.stop.case:
        with imgui_ctx.push_text_wrap_pos(0.0):
            imgui.text_colored(HAZARD, f"the run stopped on frame {h.stop.frame}: {h.stop.case} on {h.stop.label} "
                                       f"({h.stop.where})")
            imgui.text_colored(DIM, h.stop.spec)
        imgui.separator()
    draw_findings(part, "hazard", request)


TAB = Tab("hazards", "Hazards", 30, build, draw, count=lambda part: part.total, always=True)
