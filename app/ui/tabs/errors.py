"""The Errors tab: every CL / GL error since the last clear, folded by (code, name, where), with
the spec's meaning of the code."""
from __future__ import annotations

from app.ui.model import Findings
from app.ui.tabs import Tab, TabInput
from app.ui.tabs._findings import draw_findings


def build(inp: TabInput) -> Findings:
    return inp.errors.part()


def draw(part: Findings, m, request) -> None:
    draw_findings(part, "error", request)


TAB = Tab("errors", "Errors", 20, build, draw, count=lambda part: part.total, always=True)
