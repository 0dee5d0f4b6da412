"""The Teach tab: the owners of the frame being stepped and, outside teaching mode, the way into it
(app/ui/teaching.py draws both; teaching mode's own steps are at the panel's top)."""
from __future__ import annotations

from app.schedule.teach import TeachingView
from app.ui.bundle import imgui
from app.ui.tabs import Tab, TabInput
from app.ui.teaching import draw_owners, draw_teaching


def build(inp: TabInput) -> TeachingView:
    return inp.view.teaching


def draw(t: TeachingView, m, request) -> None:
    if t.active:
        imgui.text_disabled("teaching mode is on: its steps are at the top of the panel")
        draw_owners(t)
        return
    command = draw_teaching(t)
    if command:
        request(command)


TAB = Tab("teach", "Teach", 40, build, draw, always=True, waiting="(teaching data from the next redraw on)")
