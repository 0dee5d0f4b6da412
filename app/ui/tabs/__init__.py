"""The panel's tabs: each module here (its name not starting with "_") declares one tab as ``TAB``,
a ``Tab``: its key, title and place, how it builds its part of the panel model from a read-only
``TabInput``, and how it draws that part. ``table()`` finds them all, in their order: adding a tab
is one module and its test (``_template.py`` says what the module implements).

A tab's part is built at every redraw where the tab is ``always`` built (its title shows a count,
or the part is the panel's too), else only while the tab is shown; the panel draws the tab's
``waiting`` line while its part is not built yet. Drawing issues ImGui widgets only: a control
``request``s a command of ``app/session/controls.py``, run after the ImGui frame.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.session.views import SessionView
    from app.ui.model.findings import RunFindings
    from app.ui.model.parts import PanelModel


@dataclass(frozen=True)
class TabInput:
    """What a tab builds its part from, read only (the cache aside)."""

    view: SessionView  # the session's read-only view
    record: Any  # the FrameRecord the panel describes (as the header and the timeline), or None
    errors: RunFindings  # the run's errors and hazards, folded, since the last clear
    hazards: RunFindings
    hazard_base: Mapping[str, int]  # the hazard counts at the last clear
    lab: Mapping | None  # the error lab's result (app/lab/lab.py run_lab), None before it ran
    ui_caps: Mapping  # what the UI host says of itself (the panel's refresh rate)
    cache: dict  # the tab's own, kept between redraws (what it builds once per set-up)
    rows: tuple = ()  # the timeline's added rows of ``record`` (app/ui/model/timeline.py's Row; glshare attach)


@dataclass(frozen=True)
class Tab:
    """One tab of the panel. ``build(TabInput)`` returns its part (frozen plain data, or None: the
    ``waiting`` line is drawn); ``draw(part, model, request)`` issues its widgets (``model``: the
    whole PanelModel, for what the tab shows of the header); ``count(part)``: a number shown in its
    title, in a fixed width."""

    key: str
    title: str
    order: int
    build: Callable[[TabInput], Any]
    draw: Callable[[Any, "PanelModel", Callable], None]
    count: Callable[[Any], int] | None = None
    always: bool = False
    waiting: str = "(from the next redraw on)"


@lru_cache(maxsize=1)
def table() -> tuple[Tab, ...]:
    """Every tab, in its ``order``: the ``TAB`` of each module of this package."""
    tabs = [importlib.import_module(f"{__name__}.{m.name}").TAB
            for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    keys = [t.key for t in tabs]
    if len(set(keys)) != len(keys):
        raise RuntimeError(f"two panel tabs with one key: {sorted(keys)}")
    return tuple(sorted(tabs, key=lambda t: (t.order, t.key)))
