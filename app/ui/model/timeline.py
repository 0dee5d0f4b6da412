"""The timeline of one frame: its lanes, bars and markers on the host clock, in ms from the frame's
start (``build_timeline``), as the panel draws it.

Times: host phases and CPU waits are ``perf_counter_ns``; CL profiling (device ns) and GL timer
queries (GL ns) are put on that clock by the offsets of ``app/schedule/clock.py``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from app.schedule.flows import COMMAND, PASS, PHASE, WAIT, frame_flows
from app.schedule.frame import PHASES
from app.schedule.owners import HANDOVER, IN_PROGRESS_TAIL_NS, WHERE_PHASE, owner_spans
from app.ui.legend import cpu_name, device_name

# a stepped frame's pause between two phases (the user reading) is drawn as long as a frame in
# progress runs past its last step: one length for both
TEACH_GAP_NS = IN_PROGRESS_TAIL_NS

# a lane's note on a frame that was not timed (FrameRecord.sampled False); the interval is the run's
NOT_TIMED = "not timed on this frame (frames shorter than --stamps-ms are timed one per interval)"

# timeline lanes and bar kinds (the panel colours a bar by its kind and name)
LANE_CPU, LANE_WAIT, LANE_CL, LANE_GL = range(4)  # then one lane per shared object
KIND_PHASE, KIND_WAIT, KIND_QUEUED, KIND_RUN, KIND_GL, KIND_OWNER, KIND_BOOKKEEPING = range(7)
CLOCK_HOST, CLOCK_CL, CLOCK_GL = range(3)


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
class Link:
    """A link of the frame (app/schedule/flows.py, the trace's flow events) between two of its bars:
    a CL command and the CPU call that enqueued it, or a hand-over; ms from the frame's start."""

    name: str  # "enqueue kernel -> kernel"
    kind: str  # flows.ENQUEUE or flows.HANDOVER
    src: int  # the bars it joins (indices into the Timeline's arrays)
    dst: int
    from_ms: float  # where it leaves ``src`` (an enqueue: the command's QUEUED stamp) and lands in ``dst``
    to_ms: float


@dataclass(frozen=True, slots=True)
class Row:
    """A lane a record's feeder adds after the shared objects' (``PanelData(rows_of=...)``; glshare
    attach: the program's CPU threads and CL queues): its bars on the host clock, (name, start ns, end ns)."""

    name: str
    kind: str  # "cpu" (a thread's calls) or "cl" (a queue's commands, as the device ran them)
    title: str
    bars: tuple[tuple[str, int, int], ...]
    colors: tuple[str, ...] = ()  # each bar's key of app/legend.py's CALL_RGB (): by its kind and name
    marks: tuple[tuple[int, str, str, str], ...] = ()  # findings on this row: (host ns, "error"/"hazard", title, text)


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
    # what each bar is called where it is drawn (app/trace/names.py): the CPU's call ("enqueue
    # kernel") on the CPU lane, the device's execution ("kernel") on the CL lane; ``names`` keys colours
    labels: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    colors: tuple[str, ...] = ()  # each bar's key of app/legend.py's CALL_RGB, "" (or ()): by its kind and name
    legend: tuple[str, ...] = ()  # the CALL_RGB keys its bars use, for the legend row (): glshare's own legend
    phases: bool = True  # the CPU lane of glshare's phases is shown (its sequence row with it)

    @property
    def count(self) -> int:
        return len(self.names)

    def links_of(self, bar: int) -> tuple[Link, ...]:
        """The links that join bar ``bar`` to another (hovering either end lights both); a command's
        wait in its queue has its run's."""
        if self.kind[bar] == KIND_QUEUED:
            name = self.names[bar]
            bar = next((i for i in np.flatnonzero((self.lane == LANE_CL) & (self.kind == KIND_RUN)).tolist()
                        if self.names[i] == name), bar)
        return tuple(k for k in self.links if bar in (k.src, k.dst))

    def handover_ms(self, margin: float = 0.25) -> tuple[float, float] | None:
        """The view that holds every hand-over of the frame (its owner lanes' "GL -> CL" and
        "CL -> GL"), ``margin`` of its length more on each side; None where the frame made none."""
        hit = [i for i in np.flatnonzero(self.kind == KIND_OWNER).tolist() if self.names[i] in HANDOVER]
        if not hit:
            return None
        a, b = float(self.start[hit].min()), float(self.end[hit].max())
        pad = max((b - a) * margin, 0.002)
        return a - pad, b + pad

    def sequence(self) -> tuple[tuple[str, str, float | None], ...]:
        """The CPU's phases in the order they ran: (phase, its CPU name, ms or None not run yet);
        () where the CPU lane of phases is not shown."""
        if not self.phases:
            return ()
        done = {}
        for i in np.nonzero((self.lane == LANE_CPU) & (self.kind == KIND_PHASE))[0].tolist():
            done[self.names[i]] = float(self.end[i] - self.start[i])
        return tuple((p, cpu_name(p), done.get(p)) for p in ("acquire", "compute", "release", "render", "panel"))



def _nice_label(name: str, scene: str) -> str:
    """A shared object's lane name: its label without the scene's prefix ("particles.position")."""
    return name.split(".", 1)[1] if name.startswith(scene + ".") else name


class _Bars:
    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, int]] = []  # lane, kind, clock, start ns, end ns
        self.names: list[str] = []

        self.at: dict[tuple[str, str, int], int] = {}  # a link's end (flows.End's row, name, start) -> its bar

    def add(self, lane: int, kind: int, clock: int, s: int, e: int, name: str, end: str = "") -> None:
        """A bar; ``end``: the row of app/schedule/flows.py's ends it is (keyed by its own start)."""
        if end:
            self.at.setdefault((end, name, int(s)), len(self.rows))
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
                   current_phase: str = "", next_phase: str = "", gl_note: str = "", stop=None,
                   rows: tuple[Row, ...] = (), measured_lanes: bool = False) -> Timeline:
    """The timeline of ``rec`` (a FrameRecord), on the host clock, in ms from its start.

    Lanes: the CPU's phases, the CPU's waits, the CL queue (each command's wait in its queue, then
    its run), the GL passes, and one lane per shared object with who owns it: GL, CL, or a hand-over
    (``app/schedule/owners.py``: from the command's START stamp to its END, or GL's wait on it;
    the CPU's call where the driver gave no stamps). ``live`` (label -> state now) extends the owners of a frame in progress;
    ``stop`` (a StopView) marks the hazard or error that stopped the run on this frame. ``rows``: lanes
    after the objects' (``Row``), their bars on the host clock. ``measured_lanes`` (a view fed from
    another program: glshare attach): the CPU, CPU wait, CL and GL lanes only where they hold a bar,
    so no empty lane stands for a measurement that was not made."""
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
        bars.add(LANE_CPU, KIND_PHASE, CLOCK_HOST, s, e, name, PHASE)
    for name, s, e in rec.bookkeeping:
        bars.add(LANE_CPU, KIND_BOOKKEEPING, CLOCK_HOST, s, e, name)
    for name, s, e in rec.waits:
        bars.add(LANE_WAIT, KIND_WAIT, CLOCK_HOST, s, e, name, WAIT)
    for name, (q, _sub, st, en) in rec.cl_profile.items():
        if st > q:
            bars.add(LANE_CL, KIND_QUEUED, CLOCK_CL, q, st, name)
        bars.add(LANE_CL, KIND_RUN, CLOCK_CL, st, en, name, COMMAND)
    for name, s, e in rec.gl_passes:
        bars.add(LANE_GL, KIND_GL, CLOCK_GL, s, e, name, PASS)

    cl_off = clock.cl.offset if clock is not None else 0
    for k, s, e, state in owner_spans(rec, cl_off, in_progress=in_progress, live=live):
        bars.add(4 + k, KIND_OWNER, CLOCK_HOST, s, e, state)
    colors = [""] * len(bars.names)
    row_marks = []
    for r, row in enumerate(rows, start=4 + len(labels)):
        lanes.append(Lane(row.name, row.kind, row.title))
        for name, s, e in row.bars:
            bars.add(r, KIND_RUN if row.kind == "cl" else KIND_PHASE, CLOCK_HOST, s, e, name)
        colors += list(row.colors) + [""] * (len(row.bars) - len(row.colors))
        row_marks += [(r, mark) for mark in row.marks]

    arr = np.array(bars.rows, np.int64).reshape(-1, 5)
    offsets = np.array([0, cl_off, clock.gl.offset if clock is not None else 0], np.int64)
    start_ns = arr[:, 3] + offsets[arr[:, 2]]
    end_ns = arr[:, 4] + offsets[arr[:, 2]]
    squeeze = _compressor(rec) if rec.stepped else None
    if squeeze is not None:
        start_ns, end_ns = squeeze(start_ns), squeeze(end_ns)
    t0 = rec.start_ns
    start, end = (start_ns - t0) / 1e6, (end_ns - t0) / 1e6
    markers = _markers(rec, squeeze, end, stop)
    markers += [Marker(float((t - t0) / 1e6), r, kind, title, text) for r, (t, kind, title, text) in row_marks]
    links = _links(rec, bars.at, cl_off, int(offsets[2]), squeeze)
    extent = float(end.max()) if len(end) else 0.0
    next_ms = None
    if next_rec is not None and next_rec.index == rec.index + 1 and not rec.stepped:
        next_ms = (next_rec.start_ns - t0) / 1e6
    notes = (f"stepped frame: the pauses between its phases are drawn {TEACH_GAP_NS / 1e6:g} ms long",) \
        if rec.stepped else ()
    cl_note = _cl_note(rec, in_progress)
    lane = arr[:, 0].copy()
    labels_drawn = _labels(lane, arr[:, 1], bars.names)
    phases = True
    if measured_lanes:
        lanes, lane, markers, (cl_note, gl_note), moved = _measured(lanes, lane, markers, (cl_note, gl_note))
        notes += moved
        phases = lanes[0].kind == "cpu" and lanes[0].name == "CPU"
    used = tuple(dict.fromkeys(c for c in colors if c))
    return Timeline(rec.index, in_progress, current_phase, next_phase, tuple(lanes), lane,
                    arr[:, 1].copy(), start, end, tuple(bars.names), tuple(markers), max(extent, 1e-3), next_ms,
                    f"{rec.scene} / {rec.backend} / {rec.sync}", notes, cl_note, gl_note, rec.stepped,
                    labels_drawn, links, tuple(colors) if used else (), used, phases)


def _measured(lanes: list[Lane], lane: np.ndarray, markers: list[Marker], notes: tuple[str, str]):
    """The lanes without glshare's four (CPU, CPU wait, CL, GL) where they hold no bar, the bars'
    and markers' lanes renumbered (a marker on a lane left out: on the first lane), and the CL and
    GL lanes' notes (drawn in lanes 2 and 3) kept in them only while those lanes stay where they
    were; a kept lane's note that moved is returned for the timeline's notes."""
    keep = [r for r in range(len(lanes)) if r >= 4 or bool((lane == r).any())]
    if len(keep) == len(lanes):
        return lanes, lane, markers, notes, ()
    new = np.full(len(lanes), 0, np.int64)
    new[keep] = np.arange(len(keep))
    markers = [Marker(mk.t_ms, int(new[mk.lane]), mk.kind, mk.title, mk.text) for mk in markers]
    stays = [r in keep and int(new[r]) == r for r in (2, 3)]
    moved = tuple(f"{lanes[r].name}: {note}" for r, note, ok in zip((2, 3), notes, stays)
                  if note and r in keep and not ok)
    notes = tuple(note if ok else "" for note, ok in zip(notes, stays))
    return [lanes[r] for r in keep], new[lane], markers, notes, moved


def _links(rec, at: dict, cl_off: int, gl_off: int, squeeze) -> tuple[Link, ...]:
    """The frame's links (app/schedule/flows.py) between its bars, in ms from its start (a stepped
    frame's pauses shortened as its bars are)."""
    out = []
    own = {PHASE: 0, WAIT: 0, COMMAND: cl_off, PASS: gl_off}  # a bar is keyed by its own clock's start
    for flow in frame_flows(rec, cl_off, gl_off):
        src = at.get((flow.src.row, flow.src.name, flow.src.start_ns - own[flow.src.row]))
        dst = at.get((flow.dst.row, flow.dst.name, flow.dst.start_ns - own[flow.dst.row]))
        if src is None or dst is None:
            continue
        t = np.array([flow.from_ns, flow.to_ns], np.int64)
        a, b = ((squeeze(t) if squeeze is not None else t) - rec.start_ns) / 1e6
        out.append(Link(flow.name, flow.kind, src, dst, float(a), float(b)))
    return tuple(out)


def _labels(lane: np.ndarray, kind: np.ndarray, names: list[str]) -> tuple[str, ...]:
    """Each bar's drawn name: CPU phases by the CPU's call, CL commands by the device's execution."""
    out = []
    for ln, k, name in zip(lane.tolist(), kind.tolist(), names):
        if ln == LANE_CPU and k == KIND_PHASE:
            out.append(cpu_name(name))
        elif ln == LANE_CL:
            out.append(device_name(name))
        else:
            out.append(name)
    return tuple(out)


def _markers(rec, squeeze, end: np.ndarray, stop) -> list[Marker]:
    """The hazards and errors of ``rec`` where they happened, on their object's lane: a race seen in
    the stamps (``RaceFlag``) at the start of the overlap of its GL and CL intervals, anything else
    at the middle of its phase; and the stop's. ``end``: the bars' ends (ms), for a stop outside any
    phase."""
    t0 = rec.start_ns
    labels = rec.owner_labels
    phase_at = {}
    for name in PHASES:
        span = rec.phases.get(name)
        if span is not None:
            mid = np.array([(span[0] + span[1]) // 2], np.int64)
            phase_at[name] = float(((squeeze(mid) if squeeze else mid)[0] - t0) / 1e6)
    markers = []
    lane_of = {label: 4 + k for k, label in enumerate(labels)}
    def at(ns: int) -> float:
        t = np.array([ns], np.int64)
        return float(((squeeze(t) if squeeze else t)[0] - t0) / 1e6)

    for flag in rec.hazards:
        phase = WHERE_PHASE.get(flag.where, "")
        gl, cl = getattr(flag, "gl_ns", (0, 0)), getattr(flag, "cl_ns", (0, 0))
        t_ms = at(max(gl[0], cl[0])) if gl[1] > gl[0] and cl[1] > cl[0] else phase_at.get(phase, 0.0)
        markers.append(Marker(t_ms, lane_of.get(flag.label, LANE_CPU), "hazard",
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
    return markers


def _cl_note(rec, in_progress: bool) -> str:
    """What the CL lane is missing on ``rec``, and why ("" when it has its bars)."""
    if rec.unstamped:  # what the driver gave no device stamps: no bar for it, and the lane says why
        return f"no device stamps from the driver for {', '.join(rec.unstamped)}"
    if rec.cl_profile:
        return ""
    if not rec.sampled:
        return NOT_TIMED
    if in_progress or rec.events:
        return "profiled when the frame's commands complete"
    return "no command profiled on this frame"
