"""The panel model's own parts (the tabs' parts are the tabs': app/ui/tabs/): the header, the
timing plot's series, the controls, and ``PanelModel``, what one redraw of the panel reads."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from app.ui.model.history import SERIES
from app.ui.model.options import OptionRow
from app.ui.model.timeline import Timeline

if TYPE_CHECKING:
    from app.schedule.teach import TeachingView
    from app.session.views import Choice, StopView


@dataclass(frozen=True, slots=True)
class ClockInfo:
    """How CL and GL time were put on the host clock (Capabilities, the header's +/-)."""

    cl_method: str = "none"
    cl_offset_ms: float = 0.0
    cl_uncertainty_us: float = 0.0
    gl_method: str = "none"
    gl_offset_ms: float = 0.0
    gl_uncertainty_us: float = 0.0

    @classmethod
    def of(cls, clock: Mapping) -> "ClockInfo":
        cl, gl = clock.get("cl") or {}, clock.get("gl") or {}
        return cls(cl.get("method", "none"), cl.get("offset_ns", 0) / 1e6, cl.get("uncertainty_ns", 0) / 1e3,
                   gl.get("method", "none"), gl.get("offset_ns", 0) / 1e6, gl.get("uncertainty_ns", 0) / 1e3)


@dataclass(frozen=True, slots=True)
class Header:
    scene: str  # scene, backend and sync: those ``frame`` ran on (the set-up now before any frame)
    scene_title: str
    backend: str
    sync: str
    frame: int | None  # the frame the header, the owners and the timeline describe
    newest: int | None  # the newest frame recorded
    chosen: bool  # the user chose ``frame`` (plot, slider); else the panel follows the run
    in_progress: bool  # ``frame`` is being stepped (teaching) or was abandoned (--strict)
    paused: bool
    teaching: bool
    frame_ms: float  # median of the whole frame (present to present) over the statistics' frames (the set-up now)
    fps: float
    clock_cl_us: float
    clock_gl_us: float
    errors: int  # since the last "clear"
    hazards: int
    status: str  # what the last command did, or why it was refused
    stop: StopView | None = None  # the run stopped on a frame (--strict)
    model_error: str = ""
    # "scene / backend / sync" running now, where ``frame`` ran on an earlier set-up (then scene,
    # backend and sync are that frame's, and scene_title, which describes the scene now, is "")
    setup_now: str = ""
    notes: tuple[str, ...] = ()  # what the view's source could not see (SessionView.notes), one line each


@dataclass(frozen=True, slots=True)
class Column:
    """A column of the median / p95 table a view fed from another program gives in place of the
    phases' (``PanelData(columns_of=...)``; glshare attach): what it measured, per frame."""

    name: str
    rgb: tuple[int, int, int]
    median: float  # ms
    p95: float
    title: str  # what it sums, and over which frames


@dataclass(frozen=True, slots=True)
class Timing:
    frames: np.ndarray  # frame indices, oldest first
    series: Mapping[str, np.ndarray]  # ms per frame (NaN: the phase did not run), per SERIES name
    stats: Mapping[str, tuple[float, float]]  # (median, p95) ms per SERIES name
    count: int  # frames plotted
    in_stats: int  # frames in the statistics
    left_out: int  # frames of this set-up kept out of them: no present-to-present period, or stepped
    first_kept: int | None  # the oldest and newest frames the timeline can show
    newest_kept: int | None
    stats_of: str = ""  # "scene / backend / sync": the set-up the plot and the statistics are of
    columns: tuple[Column, ...] = ()  # the table's columns in place of SERIES' (): the phases and the frame

    def at(self, frame: int) -> tuple[tuple[str, float], ...]:
        """The plot's values of ``frame``: (series, ms) for each series that has one; () where the
        plot does not hold the frame."""
        hit = np.flatnonzero(self.frames == frame)
        if not hit.size:
            return ()
        k = int(hit[-1])
        return tuple((name, float(v[k])) for name, v in self.series.items() if k < len(v) and np.isfinite(v[k]))


@dataclass(frozen=True, slots=True)
class ControlsPart:
    scene: str
    backend: str
    sync: str
    scenes: tuple[Choice, ...]
    backends: tuple[Choice, ...]
    syncs: tuple[Choice, ...]
    sizes: tuple[str, ...]
    size: str
    vsync: bool
    headless: bool
    paused: bool
    teaching: bool
    trace_path: str  # the absolute path of the last trace written, or ""
    trace_error: str
    options: tuple[OptionRow, ...] = ()  # the scene's own options, drawn below the controls



@dataclass(frozen=True, slots=True)
class PanelModel:
    """One redraw's model: the panel's own parts, and each tab's part by its key (``tabs``: the
    tabs built at every redraw, and the tab shown; app/ui/tabs/)."""

    header: Header
    timing: Timing
    timeline: Timeline
    controls: ControlsPart | None
    teaching: TeachingView | None  # teaching mode's steps, drawn at the panel's top while it is on
    tabs: Mapping[str, Any] = field(default_factory=dict)
    tab_keys: tuple[str, ...] = ()  # the tabs drawn, in the table's order (): every tab (PanelData's tab_keys)

    # the parts of the first tabs by the names the window driver and the probes read
    @property
    def owners(self):
        return self.tabs.get("ownership")

    @property
    def errors(self):
        return self.tabs.get("errors")

    @property
    def hazards(self):
        return self.tabs.get("hazards")

    @property
    def caps(self):
        return self.tabs.get("caps")

    @property
    def lab(self):
        return self.tabs.get("lab")


def empty_model(error: str = "") -> PanelModel:
    """What the panel draws when the model could not be built (the error says why)."""
    header = Header("", "", "", "", None, None, False, False, False, False, 0.0, 0.0, 0.0, 0.0, 0, 0, "",
                    None, error)
    timing = Timing(np.zeros(0), {name: np.zeros(0) for name in SERIES}, {name: (0.0, 0.0) for name in SERIES},
                    0, 0, 0, None, None)
    return PanelModel(header, timing, Timeline(None), None, None)
