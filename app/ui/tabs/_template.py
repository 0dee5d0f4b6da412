"""The recipe for a new panel tab: copy this module to ``app/ui/tabs/NAME.py`` and change its
``TAB``'s key and title, its part, ``build`` and ``draw``. That one module is the whole tab (and its
test, in ``tests/ui/``): ``app.ui.tabs.table()`` finds every module of the package by its ``TAB``
(modules whose name starts with "_", like this one, are not tabs), the model builds its part, the
panel draws its title in the tab bar and, while it is shown, its body.

What a tab implements (``app/ui/tabs/__init__.py`` says each one's contract):

- its part: a frozen dataclass of plain values (no GL or CL object, nothing of the session's
  that could change under it), what ``draw`` reads;
- ``build(inp: TabInput) -> part``: from the session's read-only view (``inp.view``), the frame the
  panel describes (``inp.record``: the header's and the timeline's), the folded errors and hazards;
  ``inp.cache`` keeps what it builds once per set-up; return None while there is nothing to show
  (the panel draws ``waiting`` then);
- ``draw(part, model, request)``: ImGui widgets only; a control calls ``request(command, **args)``
  (a command of ``app/session/controls.py``, run after the ImGui frame);
- ``TAB = Tab(key, title, order, build, draw)``: ``order`` places it in the bar; ``count=`` shows a
  number in its title; ``always=True`` builds its part at every redraw (else only while shown).

A tab that needs something the session's view does not carry yet adds it to
``app/session/views.py`` (``SessionView``) and to ``Session.view``: the one place the UI reads the
session from.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.schedule.frame import PHASES
from app.ui.bundle import imgui
from app.ui.panel.widgets import DIM
from app.ui.tabs import Tab, TabInput


@dataclass(frozen=True, slots=True)
class PhaseTimes:
    """The described frame's CPU phases, in the order they ran: (phase, ms)."""

    frame: int
    phases: tuple[tuple[str, float], ...]


def build(inp: TabInput) -> PhaseTimes | None:
    rec = inp.record
    if rec is None:
        return None
    spans = sorted((span[0], name, (span[1] - span[0]) / 1e6) for name, span in rec.phases.items() if name in PHASES)
    return PhaseTimes(rec.index, tuple((name, ms) for _start, name, ms in spans))


def draw(part: PhaseTimes, model, request) -> None:
    imgui.text_unformatted(f"frame {part.frame}: its phases in the order they ran")
    for name, ms in part.phases:
        imgui.text_colored(DIM, f"{name:>8}  {ms:.3f} ms")


TAB = Tab("template", "Template", 90, build, draw, waiting="(no frame yet)")
