"""The Error lab tab: the hazard demonstrations (keys 1-5) and the lab's table of every acquire /
release case against the spec (app/ui/lab_tab.py draws them; the lab runs as the ``run_lab`` command)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from app.ui.bundle import imgui
from app.ui.lab_tab import draw_hazard_demos, draw_lab_tab
from app.ui.tabs import Tab, TabInput

if TYPE_CHECKING:
    from app.ui.model_tabs import LabPart


def build(inp: TabInput) -> LabPart:
    """The demonstrations, the hazard counts since the last clear, the lab's results (read once per run of it)."""
    from app.ui.model_tabs import LabPart, LabResults  # the tab's parts: imported when it is first shown

    view, lab, cache = inp.view, inp.lab, inp.cache
    if lab is not None and id(lab) != cache.get("key"):
        cache["results"], cache["key"] = LabResults.of(lab), id(lab)
    base = inp.hazard_base
    counts = tuple(sorted((k, v - base.get(k, 0)) for k, v in view.hazard_counts.items() if v - base.get(k, 0) > 0))
    return LabPart(view.setup.backend, view.setup.strict, view.status, tuple(view.demos), counts,
                   cache.get("results") if lab is not None else None)


def draw(lab: LabPart, m, request) -> None:
    demo = draw_hazard_demos(lab)
    if demo:
        request("demo", demo=demo)
    imgui.separator()
    if draw_lab_tab(lab.results):
        request("run_lab")


TAB = Tab("lab", "Lab", 50, build, draw, waiting="(lab data from the next redraw on)")
