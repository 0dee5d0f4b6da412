"""The panel's model: typed, frozen parts (header, timing, timeline, controls, and each tab's part)
built from the session's read-only view, one module per concern:

- ``data``: ``PanelData``, which keeps what the panel shows between redraws; ``update(view)``
  returns a ``PanelModel``, with each tab's part built by its tab (app/ui/tabs/);
- ``parts``: the panel's own parts (header, timing, controls) and ``PanelModel``;
- ``history``: the timing plot's ring of phase durations, its median and p95;
- ``findings``: the run's errors and hazards, folded (app/schedule/history.py), as the tabs show them;
- ``timeline``: one frame's lanes, bars and markers on the host clock;
- who owned each shared object over a frame is app/schedule/owners.py's (``owner_spans``, ``owners_at_boundaries``), read here as the report and the trace read it;
- ``options``: the running scene's options as the panel's rows.

The Caps, Memory and Lab tabs' parts live in ``app/ui/model_tabs.py``, imported when one of those
tabs is first shown (8 frozen dataclasses, kept off the start-up path); this package still names them.
"""
from __future__ import annotations

from app.schedule.owners import owner_spans, owners_at_boundaries
from app.ui.model.data import SAMPLE_REACH, PanelData
from app.ui.model.findings import Finding, Findings, RunFindings
from app.ui.model.history import HISTORY, PLOT_FRAMES, SERIES, STATS_EVERY, PhaseHistory
from app.ui.model.options import OptionRow, option_rows
from app.ui.model.parts import ClockInfo, Column, ControlsPart, Header, PanelModel, Timing, empty_model
from app.ui.model.timeline import (
    CLOCK_CL,
    CLOCK_GL,
    CLOCK_HOST,
    KIND_BOOKKEEPING,
    KIND_GL,
    KIND_OWNER,
    KIND_PHASE,
    KIND_QUEUED,
    KIND_RUN,
    KIND_WAIT,
    LANE_CL,
    LANE_CPU,
    LANE_GL,
    LANE_WAIT,
    NOT_TIMED,
    WHERE_PHASE,
    Lane,
    Link,
    Marker,
    Row,
    Timeline,
    build_timeline,
)

__all__ = [
    "CLOCK_CL", "CLOCK_GL", "CLOCK_HOST", "HISTORY", "KIND_BOOKKEEPING", "KIND_GL", "KIND_OWNER", "KIND_PHASE",
    "KIND_QUEUED", "KIND_RUN", "KIND_WAIT", "LANE_CL", "LANE_CPU", "LANE_GL", "LANE_WAIT",
    "NOT_TIMED", "PLOT_FRAMES", "SAMPLE_REACH", "SERIES", "STATS_EVERY", "WHERE_PHASE",
    "ClockInfo", "Column", "ControlsPart", "Finding", "Findings", "Header", "Lane", "Link", "Marker", "OptionRow", "Row",
    "PanelData", "PanelModel", "PhaseHistory", "RunFindings", "Timeline", "Timing", "build_timeline", "empty_model",
    "option_rows", "owner_spans", "owners_at_boundaries",
]

TAB_PARTS = ("HandleRow", "Lifetime", "MemoryPart", "CapsPart", "LabCase", "LabHazard", "LabResults", "LabPart")


def __getattr__(name: str):
    """The Caps, Memory and Lab tabs' parts (``app/ui/model_tabs.py``, imported on first use)."""
    if name in TAB_PARTS:
        from app.ui import model_tabs

        return getattr(model_tabs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
