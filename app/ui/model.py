"""The panel's model: typed, frozen parts (header, timing, timeline, owners, errors, hazards,
controls, capabilities, memory, teaching, lab) built from the session's read-only view.

``PanelData.update(view)`` is called at every redraw of the panel (2 to 5 times a second and after
any input) and returns a ``PanelModel``; the panel (``app/ui/panel.py``) reads its attributes and
nothing else. Frame records are ingested incrementally (each is read once) into fixed numpy rings
(``HISTORY`` frames), so an update costs about the same at frame 10 and at frame 100 000; the
timeline of a frame is built once and kept while that frame is shown. Nothing here holds a GL or
CL object.

The header, the owners and the timeline always describe the same frame (``Header.frame``): the
frame the user chose (clicking the timing plot, or the slider while paused), the frame in progress
(teaching mode, or the frame a ``--strict`` stop abandoned), else the newest frame whose
measurements are all in (its CL profile read and, where the GL timer sampled it, its GL passes).

Times: host phases and CPU waits are ``perf_counter_ns``; CL profiling (device ns) and GL timer
queries (GL ns) are put on that clock by the offsets of ``app/trace/clock.py``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from app.schedule.frame import PHASES, ErrorRecord
from app.schedule.owners import WHERE_PHASE, owner_spans  # the one model of ownership (stamps first)
from app.ui import legend

if TYPE_CHECKING:
    from app.schedule.teach import TeachingView
    from app.session.views import Choice, StopView
    from app.ui.model_tabs import CapsPart, HandleRow, LabPart, LabResults  # imported when their tab is shown

SERIES = PHASES + ("panel", "frame")  # what the timing plot shows, in ms
HISTORY = 240  # frames kept for median / p95
PLOT_FRAMES = 120  # of those, plotted: on llvmpipe every point of the six lines costs ~0.3 us of setup
STATS_EVERY = 8  # median / p95 recomputed every 8 frames (they move slowly; the plot is live)
MAX_FOLDED = 64  # distinct errors / hazards kept; more are counted in "other"
# how many records further back than the GL timer's period the panel looks for a timed frame
# (FrameRecord.sampled: frames shorter than 1 ms are timed one per ms of their time; at 0.1 ms, one in ten)
SAMPLE_REACH = 32
# a lane's note on a frame that was not timed (FrameRecord.sampled False); the interval is the run's
NOT_TIMED = "not timed on this frame (frames shorter than --stamps-ms are timed one per interval)"
TEACH_GAP_NS = 200_000  # a stepped frame's pause between two phases, drawn as this much time

# timeline lanes and bar kinds (the panel colours a bar by its kind and name)
LANE_CPU, LANE_WAIT, LANE_CL, LANE_GL = range(4)  # then one lane per shared object
KIND_PHASE, KIND_WAIT, KIND_QUEUED, KIND_RUN, KIND_GL, KIND_OWNER, KIND_BOOKKEEPING = range(7)
CLOCK_HOST, CLOCK_CL, CLOCK_GL = range(3)


# -- the parts ----------------------------------------------------------------------------------
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


@dataclass(frozen=True, slots=True)
class Lane:
    name: str
    kind: str  # "cpu", "wait", "cl", "gl", "object"
    title: str  # what the lane shows (tooltip)


@dataclass(frozen=True, slots=True)
class Marker:
    """A hazard or an error where it happened: its time (ms from the frame's start) and lane."""

    t_ms: float
    lane: int
    kind: str  # "hazard" or "error"
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Timeline:
    """One frame on the host clock, in ms from its start: a bar per phase, wait, CL command and GL
    pass, the owner of each shared object over time, and the hazards and errors."""

    frame: int | None
    in_progress: bool = False
    current_phase: str = ""  # teaching: the phase that ran last (highlighted)
    next_phase: str = ""  # teaching: the phase the next step runs
    lanes: tuple[Lane, ...] = ()
    lane: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    names: tuple[str, ...] = ()
    markers: tuple[Marker, ...] = ()
    extent_ms: float = 0.0  # the frame's start to the end of its last event
    next_ms: float | None = None  # the next frame's start, when it directly followed
    segment: str = ""  # "scene / backend / sync" the frame ran on
    notes: tuple[str, ...] = ()  # what is missing and why (GL not timed on this frame ...)
    cl_note: str = ""  # the CL lane's note (no profile ...), drawn in the lane
    gl_note: str = ""
    stepped: bool = False  # the pauses between its phases are drawn shortened

    @property
    def count(self) -> int:
        return len(self.names)


@dataclass(frozen=True, slots=True)
class OwnerRow:
    label: str
    kind: str
    now: str  # the live state: "GL", "CL", "GL -> CL", "CL -> GL" (legend names), "" when not live
    at: tuple[tuple[str, str], ...]  # the described frame: (boundary, owner) at each phase boundary
    since_frame: int | None
    acquires: int | None  # counts (this set-up), None when the object is not live any more
    releases: int | None


@dataclass(frozen=True, slots=True)
class Owners:
    frame: int | None
    rows: tuple[OwnerRow, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """An error or a hazard, folded: one entry per (code, name, where) or (case, object, where)."""

    kind: str  # "error" or "hazard"
    title: str  # the CL / error name, or the hazard case
    where: str
    count: int
    first_frame: int
    last_frame: int
    text: str  # the spec's meaning of the error, or the spec sentence the hazard breaks
    message: str = ""  # the last message
    code: int | None = None
    label: str = ""  # the shared object (hazards)


@dataclass(frozen=True, slots=True)
class Findings:
    entries: tuple[Finding, ...]  # most recent first
    total: int  # since the last clear
    other: int  # of kinds beyond MAX_FOLDED


@dataclass(frozen=True, slots=True)
class OptionRow:
    """One of the running scene's own options (``Scene.options()``: a SceneOption), as the panel
    draws it under the controls: a checkbox ("toggle"), a combo ("choice"; "size": a local work
    size), a slider from ``low`` to ``high`` ("int"), or its value as text ("text") with a button
    when it has a command. A change calls ``request(command, value=...)``; a text row's button
    calls ``request(command)``."""

    name: str
    title: str
    kind: str
    value: bool | int | str
    command: str  # the controls command (app/session/controls.py); "" for a read-only row
    choices: tuple[str, ...] = ()  # "choice", "size": what the combo offers, the value among them
    low: int = 0
    high: int = 0
    keys: str = ""  # the keys that change it (the row's tooltip)
    button: str = ""  # a text row's button ("reset", "animate")


BUTTONS = {"reset_camera": "reset", "julia_animate": "animate"}  # a text row's button, by its command


def option_rows(options) -> tuple[OptionRow, ...]:
    """The panel's rows of ``SessionView.scene_options`` (SceneOption rows, plain values)."""
    rows = []
    for o in options:
        kind = o.kind
        if kind == "toggle":
            value = bool(o.value)
        elif kind == "int":
            value = int(o.value)
        else:
            value = str(o.value)
        choices = tuple(str(c) for c in o.choices)
        if kind in ("choice", "size") and value not in choices:
            choices = (value,) + choices  # a value set elsewhere (a key, --local-size 4x4) is shown too
        low = int(o.low) if o.low is not None else 0
        high = int(o.high) if o.high is not None else low
        button = BUTTONS.get(o.command, o.command.replace("_", " ")) if kind == "text" and o.command else ""
        rows.append(OptionRow(o.name, o.title, kind, value, o.command, choices, low, high, o.keys, button))
    return tuple(rows)


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
    header: Header
    timing: Timing
    timeline: Timeline
    owners: Owners
    errors: Findings
    hazards: Findings
    controls: ControlsPart | None
    caps: CapsPart | None
    teaching: TeachingView | None
    lab: LabPart | None


# -- statistics -----------------------------------------------------------------------------------
class PhaseHistory:
    """The last ``n`` frames' phase durations (ms) in a numpy ring, and their median / p95."""

    def __init__(self, n: int = HISTORY) -> None:
        self.n = n
        # every column is written twice (at i and i + n), so the last n frames in order are always
        # one contiguous slice: no concatenation per frame
        self.data = np.full((len(SERIES), 2 * n), np.nan, np.float64)
        self.frames = np.zeros(2 * n, np.float64)  # float64: ImPlot wants xs and ys of one dtype
        self.count = 0
        self._stats: dict | None = None
        self._stats_at = 0  # the count the cached statistics were computed at

    def push(self, rec) -> None:
        """One frame: its phases and its whole frame, present to present (``FrameRecord.period_ns``;
        NaN where it has none)."""
        i = self.count % self.n
        col = [np.nan] * len(SERIES)
        for k, name in enumerate(SERIES[:-1]):
            span = rec.phases.get(name)
            if span:
                col[k] = (span[1] - span[0]) / 1e6
        if rec.period_ns:
            col[-1] = rec.period_ns / 1e6
        self.data[:, i] = self.data[:, i + self.n] = col
        self.frames[i] = self.frames[i + self.n] = rec.index
        self.count += 1
        if self.count < 16 or self.count - self._stats_at >= STATS_EVERY:
            self._stats = None

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """(frame indices, data[series, frame]) oldest first; copies, safe to hand out."""
        if self.count < self.n:
            return self.frames[: self.count].copy(), self.data[:, : self.count].copy()
        i = self.count % self.n
        return self.frames[i:i + self.n].copy(), self.data[:, i:i + self.n].copy()

    def stats(self) -> dict[str, tuple[float, float]]:
        """{series: (median, p95)} in ms over the ring, NaN (missing phases) left out, 0 when empty.

        Linear interpolation between order statistics, as numpy's default percentile; done by one
        sort of the ring (np.nanpercentile costs ~0.5 ms here, ten times more)."""
        if self._stats is None:
            m = min(self.count, self.n)
            out = {name: (0.0, 0.0) for name in SERIES}
            if m:
                ordered = np.sort(self.data[:, :m], axis=1)  # NaN sorts last
                valid = m - np.isnan(ordered).sum(axis=1)
                for k, name in enumerate(SERIES):
                    v = int(valid[k])
                    if v:
                        out[name] = (_quantile(ordered[k], v, 0.5), _quantile(ordered[k], v, 0.95))
            self._stats, self._stats_at = out, self.count
        return self._stats


def _quantile(sorted_row: np.ndarray, n: int, q: float) -> float:
    """The q-quantile of the first ``n`` (sorted) values, interpolated like numpy.percentile."""
    pos = q * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return float(sorted_row[lo] + (sorted_row[hi] - sorted_row[lo]) * (pos - lo))


class Folder:
    """Repeated errors (or hazards) folded into one entry with a count, first and last frame."""

    def __init__(self, kind: str, limit: int = MAX_FOLDED) -> None:
        self.kind = kind
        self.limit = limit
        self.entries: dict[tuple, list] = {}  # key -> [fields, count, first, last, message]
        self.other = 0
        self.total = 0
        self._version = 0
        self._cached: tuple[int, tuple[Finding, ...]] = (-1, ())

    def add(self, key: tuple, frame: int, fields: dict, message: str = "") -> None:
        self.total += 1
        self._version += 1
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= self.limit:
                self.other += 1
                return
            entry = self.entries[key] = [fields, 0, frame, frame, message]
        entry[1] += 1
        entry[3] = frame
        entry[4] = message or entry[4]

    def add_error(self, err: ErrorRecord) -> None:
        """Errors fold on (code, name, where); the last message is kept."""
        self.add((err.code, err.name, err.where), err.frame,
                 {"title": err.name, "where": err.where, "text": err.meaning, "code": err.code}, err.message)

    def add_hazard(self, flag) -> None:
        self.add((flag.case, flag.label, flag.where), flag.frame,
                 {"title": flag.case, "where": flag.where, "text": flag.spec, "label": flag.label})

    def clear(self) -> None:
        self.entries.clear()
        self.other = self.total = 0
        self._version += 1

    def as_tuple(self) -> tuple[Finding, ...]:
        """Most recent first (built again only after a change)."""
        version, cached = self._cached
        if version != self._version:
            cached = tuple(sorted((Finding(self.kind, f["title"], f["where"], count, first, last, f.get("text", ""),
                                           message, f.get("code"), f.get("label", ""))
                                   for f, count, first, last, message in self.entries.values()),
                                  key=lambda e: -e.last_frame))
            self._cached = (self._version, cached)
        return cached

    def part(self) -> Findings:
        return Findings(self.as_tuple(), self.total, self.other)


# -- the timeline of one frame ------------------------------------------------------------------------
def _nice_label(name: str, scene: str) -> str:
    """A shared object's lane name: its label without the scene's prefix ("particles.position")."""
    return name.split(".", 1)[1] if name.startswith(scene + ".") else name


class _Bars:
    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, int]] = []  # lane, kind, clock, start ns, end ns
        self.names: list[str] = []

    def add(self, lane: int, kind: int, clock: int, s: int, e: int, name: str) -> None:
        self.rows.append((lane, kind, clock, int(s), int(max(e, s))))
        self.names.append(name)


def _compressor(rec):
    """For a stepped frame: a function mapping host ns to the ns drawn, with each pause between two
    phases (the user reading) shortened to TEACH_GAP_NS; the phases keep their own durations."""
    spans = sorted(rec.phases[p] for p in PHASES if p in rec.phases)
    cuts = [(e0, s1) for (_, e0), (s1, _) in zip(spans, spans[1:]) if s1 - e0 > TEACH_GAP_NS]
    if not cuts:
        return None
    a = np.array([c[0] for c in cuts], np.int64)
    b = np.array([c[1] for c in cuts], np.int64)
    removed = np.concatenate([[0], np.cumsum(b - a - TEACH_GAP_NS)])  # removed before cut i: removed[i]

    def shown(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(a, t, side="right")  # cuts that start at or before t
        i = np.maximum(k - 1, 0)
        inside = (k > 0) & (t < b[i])
        after = np.where(k > 0, t - removed[k], t)
        return np.where(inside, a[i] - removed[i] + np.minimum(t - a[i], TEACH_GAP_NS), after)

    return shown


def build_timeline(rec, clock, *, next_rec=None, in_progress: bool = False, live: Mapping[str, str] | None = None,
                   current_phase: str = "", next_phase: str = "", gl_note: str = "", stop=None) -> Timeline:
    """The timeline of ``rec`` (a FrameRecord), on the host clock, in ms from its start.

    Lanes: the CPU's phases, the CPU's waits, the CL queue (each command's wait in its queue, then
    its run), the GL passes, and one lane per shared object with who owns it: GL, CL, or a hand-over
    in flight (an acquire or release enqueued and not complete: from the command's queued stamp to
    its end stamp). ``live`` (label -> state now) extends the owners of a frame in progress;
    ``stop`` (a StopView) marks the hazard or error that stopped the run on this frame."""
    scene = rec.scene
    labels = rec.owner_labels
    lanes = [Lane("CPU", "cpu", "the main thread's phases (host clock); the thin bars inside them: glshare reading "
                                "earlier frames' stamps while the GPU finishes, before a wait"),
             Lane("CPU wait", "wait", "the CPU blocked: glFinish, clFinish, event waits"),
             Lane(f"CL {rec.backend}", "cl", f"the CL command queue of {rec.backend}: thin while queued, full while it ran"),
             Lane("GL", "gl", "GL passes from GL_TIMESTAMP queries")]
    lanes += [Lane(_nice_label(lab, scene), "object", f"{lab}: who owns it") for lab in labels]
    bars = _Bars()
    for name, (s, e) in rec.phases.items():
        bars.add(LANE_CPU, KIND_PHASE, CLOCK_HOST, s, e, name)
    for name, s, e in rec.bookkeeping:
        bars.add(LANE_CPU, KIND_BOOKKEEPING, CLOCK_HOST, s, e, name)
    for name, s, e in rec.waits:
        bars.add(LANE_WAIT, KIND_WAIT, CLOCK_HOST, s, e, name)
    for name, (q, _sub, st, en) in rec.cl_profile.items():
        if st > q:
            bars.add(LANE_CL, KIND_QUEUED, CLOCK_CL, q, st, name)
        bars.add(LANE_CL, KIND_RUN, CLOCK_CL, st, en, name)
    for name, s, e in rec.gl_passes:
        bars.add(LANE_GL, KIND_GL, CLOCK_GL, s, e, name)

    cl_off = clock.cl.offset if clock is not None else 0
    for k, s, e, state in owner_spans(rec, cl_off, in_progress=in_progress, live=live):
        bars.add(4 + k, KIND_OWNER, CLOCK_HOST, s, e, state)

    arr = np.array(bars.rows, np.int64).reshape(-1, 5)
    offsets = np.array([0, cl_off, clock.gl.offset if clock is not None else 0], np.int64)
    start_ns = arr[:, 3] + offsets[arr[:, 2]]
    end_ns = arr[:, 4] + offsets[arr[:, 2]]
    squeeze = _compressor(rec) if rec.stepped else None
    if squeeze is not None:
        start_ns, end_ns = squeeze(start_ns), squeeze(end_ns)
    t0 = rec.start_ns
    start, end = (start_ns - t0) / 1e6, (end_ns - t0) / 1e6
    phase_at = {}
    for name in PHASES:
        span = rec.phases.get(name)
        if span is not None:
            mid = np.array([(span[0] + span[1]) // 2], np.int64)
            phase_at[name] = float(((squeeze(mid) if squeeze else mid)[0] - t0) / 1e6)
    markers = []
    lane_of = {label: 4 + k for k, label in enumerate(labels)}
    for flag in rec.hazards:
        phase = WHERE_PHASE.get(flag.where, "")
        markers.append(Marker(phase_at.get(phase, 0.0), lane_of.get(flag.label, LANE_CPU), "hazard",
                              f"hazard {flag.case} on {flag.label} ({flag.where})", flag.spec))
    for err in rec.errors:
        phase = WHERE_PHASE.get(err.where.removeprefix("profile "), "")
        markers.append(Marker(phase_at.get(phase, 0.0), LANE_CPU, "error", f"{err.name} in {err.where}",
                              err.message))
    if stop is not None:
        phase = WHERE_PHASE.get(stop.where, "")
        markers.append(Marker(phase_at.get(phase, float(end.max()) if len(end) else 0.0),
                              lane_of.get(stop.label, LANE_CPU), "hazard" if stop.case else "error",
                              f"stopped here: {stop.case or 'error'}{' on ' + stop.label if stop.label else ''}",
                              stop.spec or stop.reason))
    extent = float(end.max()) if len(end) else 0.0
    next_ms = None
    if next_rec is not None and next_rec.index == rec.index + 1 and not rec.stepped:
        next_ms = (next_rec.start_ns - t0) / 1e6
    notes = []
    cl_note = ""
    if rec.unstamped:  # what the driver gave no device stamps: no bar for it, and the lane says why
        cl_note = f"no device stamps from the driver for {', '.join(rec.unstamped)}"
    elif not rec.cl_profile:
        if not rec.sampled:
            cl_note = NOT_TIMED
        elif in_progress or rec.events:
            cl_note = "profiled when the frame's commands complete"
        else:
            cl_note = "no command profiled on this frame"
    if rec.stepped:
        notes.append("stepped frame: the pauses between its phases are drawn 0.2 ms long")
    return Timeline(rec.index, in_progress, current_phase, next_phase, tuple(lanes), arr[:, 0].copy(),
                    arr[:, 1].copy(), start, end, tuple(bars.names), tuple(markers), max(extent, 1e-3), next_ms,
                    f"{rec.scene} / {rec.backend} / {rec.sync}", tuple(notes), cl_note, gl_note, rec.stepped)


# -- everything ------------------------------------------------------------------------------------------
def _find(records, index: int):
    """The kept record of frame ``index`` (records are consecutive frames, oldest first), or None."""
    if not records:
        return None
    pos = index - records[0].index
    if 0 <= pos < len(records) and records[pos].index == index:
        return records[pos]
    for rec in reversed(records):  # a gap (should not happen): search
        if rec.index == index:
            return rec
    return None


class PanelData:
    """Keeps what the panel shows between redraws; ``update(view)`` returns the PanelModel."""

    def __init__(self) -> None:
        self.history = PhaseHistory()
        self.errors = Folder("error")
        self.hazards = Folder("hazard")
        self._stats_index = -1  # the newest frame pushed into the statistics
        self._findings_index = -1  # the newest frame whose errors and hazards were folded
        self._loop_errors_seen = 0
        self.left_out = 0  # frames kept out of the statistics (no period, or stepped)
        self._stats_segment: int | None = None  # the set-up (RunHistory segment) the statistics are of
        self._stats_of = ""  # "scene / backend / sync" of that segment
        self._hazard_base: dict[str, int] = {}
        self._timeline_key = None
        self._timeline = Timeline(None)
        self._caps_key = None
        self._handles: tuple[HandleRow, ...] = ()
        self._lab_key = None
        self._lab: LabResults | None = None
        self._options_key: tuple | None = None
        self._options: tuple[OptionRow, ...] = ()

    # -- ingest --------------------------------------------------------------------------------
    def _ingest(self, records) -> None:
        """Fold the errors and hazards of every complete record once; push every presented record
        into the statistics once.

        The statistics hold the frames of one set-up (a switch starts them again: two backends'
        frames never share a median) that have a present-to-present period
        (``FrameRecord.frame_us``): the first frame, the first after a pause, frames stepped while
        paused or in teaching mode have none and are left out (``left_out``), and so is the time
        paused. The newest record waits for its present, which gives its period."""
        new = []
        for rec in reversed(records):
            if rec.index <= min(self._stats_index, self._findings_index):
                break
            new.append(rec)
        new.reverse()
        for rec in new:
            if rec.index > self._findings_index:
                if rec.events:
                    break  # still in flight: its profile (and profile errors) come later
                for err in rec.errors:
                    self.errors.add_error(err)
                for flag in rec.hazards:
                    self.hazards.add_hazard(flag)
                self._findings_index = rec.index
        newest = records[-1] if records else None
        for rec in new:
            if rec.index <= self._stats_index:
                continue
            if rec is newest and not rec.presented_ns:
                break  # its present is still to come
            if rec.segment != newest.segment:  # a set-up switched away from (the last frame's period
                self._stats_index = rec.index  # holds the switch): not the statistics of the run now
                continue
            if rec.segment != self._stats_segment:  # another set-up: its statistics start again
                self.history = PhaseHistory(self.history.n)
                self.left_out = 0
                self._stats_segment = rec.segment
                self._stats_of = f"{rec.scene} / {rec.backend} / {rec.sync}"
            if rec.frame_us is not None:  # a period, at the loop's pace
                self.history.push(rec)
            else:
                self.left_out += 1
            self._stats_index = rec.index

    def _ingest_loop_errors(self, history) -> None:
        new = history.loop_errors_total - self._loop_errors_seen
        if new > 0:
            for err in history.loop_errors[-min(new, len(history.loop_errors)):]:
                self.errors.add_error(err)
        self._loop_errors_seen = history.loop_errors_total

    def clear_findings(self, hazard_counts: Mapping[str, int] | None = None) -> None:
        """"clear": the errors and hazards shown so far are forgotten (the report keeps them)."""
        self.errors.clear()
        self.hazards.clear()
        self._hazard_base = dict(hazard_counts or {})

    # -- choosing the frame -----------------------------------------------------------------------
    def _described(self, view, records, chosen: int | None):
        """(record, in_progress, chosen) of the frame the panel describes."""
        current = view.current
        stop = view.stop
        if stop is not None and current is not None and current.index == stop.frame:
            return current, True, False
        if view.teaching.active and view.teaching.mid_frame and current is not None and chosen is None:
            return current, True, False
        if chosen is not None:
            rec = _find(records, chosen)
            if rec is not None:
                return rec, False, True
        timer = view.gl_timer
        every = timer.every if timer.enabled and not view.paused else 1  # paused: the frame stepped last
        pending = timer.oldest_pending_frame
        complete = None
        # the newest complete frame timed on both APIs (``FrameRecord.sampled``: one per ms of frame
        # time where frames are shorter; the GL timer's one in ``every`` on software GL),
        # else the newest complete one
        for k, rec in enumerate(reversed(records)):
            if k > 2 * every + SAMPLE_REACH:
                break
            gl_sampled = timer.enabled and rec.sampled and (timer.every == 1 or rec.index % timer.every == 0)
            if rec.events or (gl_sampled and pending is not None and rec.index >= pending):
                continue
            if complete is None:
                complete = rec
            if (gl_sampled or every == 1) and rec.sampled:
                if complete.index - rec.index < every + SAMPLE_REACH:
                    return rec, False, False
                break
        return complete, False, False

    def _timeline_for(self, rec, records, view, in_progress: bool) -> Timeline:
        if rec is None:
            return Timeline(None)
        t = view.teaching
        teaching = t.active and (t.mid_frame or t.step_index > 0) and (in_progress or rec is records[-1])
        current = t.last if teaching else ""
        upcoming = t.next if teaching and t.mid_frame else ""
        timer = view.gl_timer
        gl_note = ""
        if not rec.gl_passes:
            if not timer.enabled:
                gl_note = f"not timed ({timer.sampling})"
            elif not rec.sampled:
                gl_note = NOT_TIMED
            elif timer.every > 1 and rec.index % timer.every:
                gl_note = f"not timed on this frame ({timer.sampling})"
            elif in_progress or (timer.oldest_pending_frame is not None and rec.index >= timer.oldest_pending_frame):
                gl_note = "timer results not in yet"
        nxt = _find(records, rec.index + 1) if not in_progress else None
        live = {o.label: o.state for o in view.owners} if in_progress else None
        clock = view.clock_map  # its offsets tighten as records are harvested: the bars move with them
        key = (rec.index, id(rec), in_progress, len(rec.phases), len(rec.cl_profile), rec.unstamped, len(rec.gl_passes),
               len(rec.owners), len(rec.hazards), len(rec.errors), nxt is not None, current, upcoming,
               tuple(sorted(live.items())) if live else None, gl_note,
               (clock.cl.offset, clock.gl.offset) if clock is not None else None)
        if key != self._timeline_key:
            stop = view.stop if in_progress and view.stop is not None and view.stop.frame == rec.index else None
            self._timeline = build_timeline(rec, view.clock_map, next_rec=nxt, in_progress=in_progress, live=live,
                                            current_phase=current, next_phase=upcoming, gl_note=gl_note, stop=stop)
            self._timeline_key = key
        return self._timeline

    # -- parts ---------------------------------------------------------------------------------------
    def _timing(self, records) -> Timing:
        frames, data = self.history.ordered()  # NaN (a missing phase) is a gap in ImPlot's line
        frames, data = frames[-PLOT_FRAMES:], data[:, -PLOT_FRAMES:]
        return Timing(frames, {name: data[k] for k, name in enumerate(SERIES)}, self.history.stats(),
                      int(data.shape[1]), min(self.history.count, self.history.n), self.left_out,
                      records[0].index if records else None, records[-1].index if records else None,
                      self._stats_of)

    @staticmethod
    def _owners(rec, view) -> Owners:
        live = {o.label: o for o in view.owners}
        rows = []
        if rec is not None and rec.owner_labels:
            for k, label in enumerate(rec.owner_labels):
                o = live.get(label)
                at = tuple((b, legend.owner_state(owners[k])) for b, _t, owners in rec.owners)
                rows.append(OwnerRow(label, o.kind if o else "", o.state if o else "", at,
                                     o.since_frame if o else None, o.acquires if o else None,
                                     o.releases if o else None))
        else:  # no frame yet: the live owners alone
            rows = [OwnerRow(o.label, o.kind, o.state, (), o.since_frame, o.acquires, o.releases) for o in view.owners]
        return Owners(rec.index if rec is not None else None, tuple(rows))

    def _caps_part(self, view, ui_caps: Mapping) -> CapsPart:
        from app.ui.model_tabs import CapsPart, MemoryPart, _handle_rows, _lifetime

        mem = view.caps.memory
        memory = None
        if mem:
            table = mem.get("handle_types")
            if id(table) != self._caps_key:  # the handle table is the set-up's, made once
                self._handles, self._caps_key = _handle_rows(mem), id(table)
            memory = MemoryPart(self._handles, tuple(mem.get("import_types") or ()), _lifetime(mem.get("lifetime")),
                                mem.get("kmt_note", ""), mem.get("unavailable", ""))
        timer = view.gl_timer
        timing = f"{timer.sampling}; frames timed: {timer.frames_timed}" if timer.frames_timed else timer.sampling
        return CapsPart(view.caps, ClockInfo.of(view.clock), timing,
                        str(ui_caps.get("panel_refresh", "")), memory)

    def _lab_part(self, view, lab: Mapping | None) -> LabPart:
        from app.ui.model_tabs import LabPart, LabResults

        if lab is not None and id(lab) != self._lab_key:
            self._lab, self._lab_key = LabResults.of(lab), id(lab)
        counts = tuple(sorted((k, v - self._hazard_base.get(k, 0)) for k, v in view.hazard_counts.items()
                              if v - self._hazard_base.get(k, 0) > 0))
        return LabPart(view.setup.backend, view.setup.strict, view.status, tuple(view.demos), counts,
                       self._lab if lab is not None else None)

    # -- all of it -------------------------------------------------------------------------------------
    def update(self, view, *, tab: str = "", lab: Mapping | None = None, ui_caps: Mapping | None = None,
               chosen: int | None = None) -> PanelModel:
        """The panel's model of one redraw, from the session's read-only view. ``chosen``: the frame
        the user picked (None: follow the run). ``tab``: the tab shown (its part is built only then)."""
        history = view.history
        records = history.records
        self._ingest(records)
        self._ingest_loop_errors(history)
        rec, in_progress, was_chosen = self._described(view, records, chosen)
        timing = self._timing(records)
        timeline = self._timeline_for(rec, records, view, in_progress)
        s = view.setup
        med = timing.stats["frame"][0]
        clock = ClockInfo.of(view.clock)
        # the header names the set-up of the frame it describes (as the timeline does); the title
        # is the scene's now (Scene.describe), shown only when that frame is of the set-up now
        segment = history.segment
        now = rec is None or segment is None or rec.segment == segment.index
        scene, backend, sync = (s.scene, s.backend, s.sync) if rec is None else (rec.scene, rec.backend, rec.sync)
        header = Header(
            scene, s.scene_title if now else "", backend, sync, rec.index if rec is not None else None,
            records[-1].index if records else None, was_chosen, in_progress, view.paused, view.teaching.active,
            med, 1000.0 / med if med > 0 else 0.0, clock.cl_uncertainty_us, clock.gl_uncertainty_us,
            self.errors.total, self.hazards.total, view.status, view.stop,
            setup_now="" if now else f"{s.scene} / {s.backend} / {s.sync}")
        c = view.controls
        tw = view.trace_written or {}
        if view.scene_options != self._options_key:  # the scene's options: rows again when one changed
            self._options, self._options_key = option_rows(view.scene_options), view.scene_options
        controls = ControlsPart(s.scene, s.backend, s.sync, c.scenes, c.backends, c.syncs, c.sizes, c.size, s.vsync,
                                s.headless, view.paused, view.teaching.active, str(tw.get("path", "")),
                                str(tw.get("error", "")), self._options)
        return PanelModel(
            header=header, timing=timing, timeline=timeline, owners=self._owners(rec, view),
            errors=self.errors.part(), hazards=self.hazards.part(), controls=controls,
            caps=self._caps_part(view, ui_caps or {}) if tab in ("caps", "memory") else None,
            teaching=view.teaching, lab=self._lab_part(view, lab) if tab == "lab" else None)


TAB_PARTS = ("HandleRow", "Lifetime", "MemoryPart", "CapsPart", "LabCase", "LabHazard", "LabResults", "LabPart")


def __getattr__(name: str):
    """The Caps, Memory and Lab tabs' parts live in ``app/ui/model_tabs.py`` (imported when one of
    those tabs is first shown: 8 frozen dataclasses, ~8 ms of start-up on the 2-core CPU machine);
    ``app.ui.model.LabPart`` and the others still name them."""
    if name in TAB_PARTS:
        from app.ui import model_tabs

        return getattr(model_tabs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def empty_model(error: str = "") -> PanelModel:
    """What the panel draws when the model could not be built (the error says why)."""
    header = Header("", "", "", "", None, None, False, False, False, False, 0.0, 0.0, 0.0, 0.0, 0, 0, "",
                    None, error)
    none = Findings((), 0, 0)
    timing = Timing(np.zeros(0), {name: np.zeros(0) for name in SERIES}, {name: (0.0, 0.0) for name in SERIES},
                    0, 0, 0, None, None)
    return PanelModel(header, timing, Timeline(None), Owners(None, ()), none, none, None, None, None, None)
