"""``glshare attach --panel``: glshare's panel in glshare's own window (GLFW, in glshare's process;
the program keeps its own windows), following the attached program while it runs and held after
it ended until the window is closed.

Nothing of the panel is re-implemented here: the attach model's records become the session's
read-only view (``SessionView``) the panel's model reads for glshare's own runs
(``app/ui/model/data.py``):

- the hand-overs, laid out by ``app/attach/timeline.py`` as glshare's frame records (one per
  acquire that went through: acquire, the CL commands on its objects, release, GL's use; a process
  that made none: its frames, swap to swap), go into a ``RunHistory`` as the scheduler's do: the
  timeline, the timing plot, the Owners and Events tabs read them as theirs; the timeline's added
  rows (``PanelData(rows_of=...)``, the model's ``Row``) are the program's CPU threads and CL
  queues over the record's span, each bar coloured by what the call is (``call_kind``: a CL call
  or its command, a GL call, a wait, a swap; app/legend.py's ``CALL_RGB``), each finding marked at
  its call on its thread's row (where no object lane holds it); glshare's own lanes (CPU phases,
  CPU wait, CL, GL) stand only where the program's records fill them (``measured_lanes``);
- the median / p95 table is what was measured per frame (``columns``: the frame, and the CPU time
  of each kind of call, each queue's device time), not glshare's phases, which a frame made of
  swaps does not have;
- every finding (validator, ownership, races) is folded into the history's errors (a finding with
  a CL code: the call's error) or hazards (the others), with the program's call and site; a
  hazard whose call falls in a hand-over is also marked on that record's timeline;
- the header's notes are what the recording cannot see (``report.cannot_see``), and its status
  line says whether the program runs or how it ended.

Threads. ``launch.run`` runs in a thread of its own (the program, the reader and the checks); the
window runs on the main thread (GLFW's); the views are built on a third (``LiveView.start``). The
records are fed under ``LiveRecorder.lock`` and each view is built under it, when records came
since the last one (``version``), paced by the build's own cost: the checks wait for a build, the
program does not (without ``--strict`` its records wait in the reader's queue meanwhile; under
``--strict`` an answer may wait for one build), and the window's redraws read the newest view.
"""
from __future__ import annotations

import bisect
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.attach.launch import Outcome, Recorder, run
from app.attach.model import COPIES, CPU_WAITS, HAND_OVERS, KERNELS, SWAPS, Call, ProcessModel, gl_use
from app.attach.report import cannot_see, ending, queue_stamps
from app.attach.timeline import GL_NOT_TIMED, Timeline, build, host_stamps
from app.errors import UsageError
from app.legend import CALL_RGB, PHASE_RGB
from app.schedule.frame import FrameRecord
from app.schedule.history import RunHistory
from app.session.views import (
    CapsView,
    GlTimerView,
    OwnerView,
    SessionView,
    SetupView,
)

log = logging.getLogger(__name__)

WINDOW_SIZE = (1280, 800)
TABS = ("ownership", "errors", "hazards", "events", "caps")  # the tabs that describe an attached program
TITLE = "hand-overs"  # what the panel's "frames" are here: one per acquire that went through
POLL_S = 1 / 60  # the window's loop: events polled and the cached panel copied this often
BUILD_MIN_S = 0.2  # between two builds of the view
BUILD_PACE = 4.0  # ... and at least this many times the last build's own time
ROW_BARS = 4096  # calls a frame's rows show at most (its newest; a long frame: the lane's title says so)


@dataclass
class LiveRecorder(Recorder):
    """launch's Recorder, each record fed under ``lock`` (the panel reads the models under it);
    ``version`` counts the records fed."""

    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    version: int = 0

    def feed_line(self, line: bytes) -> bytes | None:
        with self.lock:
            self.version += 1
            return super().feed_line(line)


class Program:
    """The attached program, run by ``launch.run`` in a thread; ``outcome`` once it ended and its
    records are read (``error``: what kept it from starting)."""

    def __init__(self, argv: list[str], libs: dict[str, str | None], strict: bool) -> None:
        self.argv, self.libs, self.strict = argv, libs, strict
        self.recorder = LiveRecorder()
        self.outcome: Outcome | None = None
        self.error: BaseException | None = None
        self.started_ns = time.monotonic_ns()
        self._thread = threading.Thread(target=self._run, name="glshare attach program", daemon=True)

    def start(self) -> "Program":
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.outcome = run(self.argv, self.libs, strict=self.strict, recorder=self.recorder)
        except BaseException as exc:  # noqa: BLE001 - raised again on the main thread (wait)
            self.error = exc

    @property
    def ended(self) -> bool:
        """It ran and its records are all read (False before ``start``)."""
        return self._thread.ident is not None and not self._thread.is_alive()

    def wait(self) -> Outcome:
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.outcome


def _so_far(program: Program) -> Outcome:
    """The outcome once the program ended, else one that says so far (``cannot_see`` reads its libraries)."""
    if program.outcome is not None:
        return program.outcome
    return Outcome(program.argv, 0, 0, program.recorder, program.libs, program.strict,
                   time.monotonic_ns() - program.started_ns)


class LiveView:
    """The program's records as the session view the panel reads (module docstring); ``view()``
    builds it again only when records came or the program ended."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._key: tuple | None = None  # (records fed, the program ended) of the view built last
        self._builder: threading.Thread | None = None
        self._view: SessionView | None = None
        self._index: dict[tuple[int, int], int] = {}  # (pid, its start: the acquire's call) -> its frame index
        self._hand_overs = False  # whether the frames of the last build were hand-overs (else swaps)
        self.timelines: dict[int, Timeline] = {}
        self._rows: dict[tuple, tuple] = {}  # (frame index, build) -> its rows: the described record's only
        self._spans: dict[int, tuple[int, int, int]] = {}  # frame index -> (pid, start ns, end ns)
        self._models: dict[int, ProcessModel] = {}
        self._calls: dict[int, tuple[list[int], list]] = {}  # pid -> (each kept call's t, the calls), as built
        self._marks: dict[int, tuple[list[int], list]] = {}  # pid -> (each finding's call t, (t, tid, mark)), as built
        self.columns: tuple = ()  # the median / p95 table's columns (app/ui/model's Column), as built

    def rows_of(self, rec: FrameRecord) -> tuple:
        """The timeline's rows of ``rec`` (``PanelData(rows_of=...)``): the calls its process issued
        from its start to its end, made once per record and build."""
        with self.program.recorder.lock:  # (the builder replaces what it reads)
            key = (rec.index, self._key)
            if key not in self._rows:
                span = self._spans.get(rec.index)
                if span is None:
                    return ()
                pid, start, end = span
                self._rows = {key: _rows(self._models[pid], self.timelines[pid], self._calls[pid], start, end,
                                         self._marks[pid], set(rec.owner_labels))}
            return self._rows[key]

    @property
    def final(self) -> bool:
        """The view holds the program's last records (it ended, and was built since)."""
        return self._key is not None and self._key[1]

    def view(self) -> SessionView:
        """The newest view: built here when none was yet (or no builder runs), else the builder's."""
        if self._view is None or self._builder is None:
            self._refresh()
        return self._view

    def start(self) -> "LiveView":
        """Build the views on a thread of their own from now on (``_build_loop``)."""
        self._builder = threading.Thread(target=self._build_loop, name="glshare attach panel view", daemon=True)
        self._builder.start()
        return self

    def _build_loop(self) -> None:
        """A view whenever records came, paced by the build's own time (``BUILD_PACE`` of it between
        two builds, at least ``BUILD_MIN_S``): the window's redraws never wait for a build, and a long
        program's build does not hold the checks' lock most of the time. Ends once the program's
        last records are built."""
        while True:
            t0 = time.perf_counter()
            built = self._refresh()
            if built and self.final:
                return
            time.sleep(max(BUILD_MIN_S, BUILD_PACE * (time.perf_counter() - t0) if built else BUILD_MIN_S))

    def _refresh(self) -> bool:
        """Build the view again where records came or the program ended since the last; True if built."""
        p = self.program
        key = (p.recorder.version, p.ended)
        if key == self._key and self._view is not None:
            return False
        try:
            with p.recorder.lock:
                view = self._build()
        except Exception:  # noqa: BLE001 - the panel never stops the window: the last view stays
            if self._view is None:
                raise
            log.warning("glshare attach: the panel's view could not be built", exc_info=True)
            view = self._view
        self._view, self._key = view, key
        return True

    # -- the parts -------------------------------------------------------------------------------
    def _build(self) -> SessionView:
        p = self.program
        outcome = _so_far(p)
        models = self._models = dict(p.recorder.models)
        self.timelines = {pid: build(m) for pid, m in models.items()}
        self._calls = {}
        for pid, m in models.items():
            calls = sorted(m.calls, key=lambda c: c.t)
            self._calls[pid] = ([c.t for c in calls], calls)
        self._marks = {pid: _row_marks(m, self.timelines[pid]) for pid, m in models.items()}
        history = RunHistory(cap=10**9)  # the attach model keeps its own bounds (KEEP_CALLS)
        history.begin_segment("attach", " ".join(os.path.basename(a) for a in p.argv[:1]), TITLE, 0)
        records = self._records(models)
        prev = None
        for rec in records:
            rec.presented_ns = rec.end_ns
            rec.period_ns = rec.start_ns - prev.start_ns if prev is not None else 0  # acquire to acquire
            prev = rec
            history.add(rec)
        for pid, model in models.items():
            _fold(history, model, self.timelines[pid])
        self.columns = _columns(models, self.timelines, self._calls, records, self._spans)
        notes = []
        for pid, model in models.items():
            notes += [f"pid {pid}: {line}" for line in cannot_see(outcome, model, self.timelines[pid])
                      + _panel_notes(model, self.timelines[pid])]
        frames = sum(m.frame for m in models.values())
        setup = SetupView("attach", self._title(models, frames), f"pid {outcome.pid or '?'}", TITLE, "", "count",
                          False, False, p.strict)
        return SessionView(
            setup=setup, frame=records[-1].index if records else 0, paused=False, history=history, current=None,
            owners=_owners(records), teaching=_NO_TEACHING, demos=(), hazard_counts=_counts(models),
            clock=_clock(self.timelines), clock_map=_HOST_CLOCK, caps=self._caps(models), controls=None,
            gl_timer=_GL_NOT_TIMED, status=self._status(outcome, models), notes=tuple(notes))

    def _records(self, models: dict[int, ProcessModel]) -> list[FrameRecord]:
        """Every process's hand-overs as frame records, in the order they began, each with the same
        index at every build (a hand-over is known by its acquire call)."""
        out = []
        hand_overs = any(self.timelines[pid].records for pid in models)
        if hand_overs != self._hand_overs:  # swap frames until the first hand-over: numbered afresh then
            self._index, self._hand_overs = {}, hand_overs
        for pid, model in models.items():
            tl = self.timelines[pid]
            out += [(rec.start_ns, pid, rec) for rec in tl.records or _swap_frames(model, self._calls[pid][1])]
        out.sort(key=lambda x: (x[0], x[1]))
        recs, self._spans = [], {}
        for _t, pid, rec in out:
            rec.index = self._index.setdefault((pid, rec.start_ns), len(self._index))
            rec.segment, rec.sync = 0, rec.sync or TITLE
            self._spans[rec.index] = (pid, rec.start_ns, _end(rec))
            recs.append(rec)
        recs.sort(key=lambda r: r.index)
        _mark(models, self.timelines, recs, self._spans)
        return recs

    def _title(self, models: dict[int, ProcessModel], frames: int) -> str:
        prog = " ".join(os.path.basename(a) if os.sep in a else a for a in self.program.argv)
        calls = sum(m.calls_seen for m in models.values())
        hand_overs = any(tl.records for tl in self.timelines.values())
        return (f"attached: {prog} ({len(models)} process{'es' if len(models) != 1 else ''}, {calls:,} calls, "
                f"{frames} swaps); the panel's frames are its "
                + ("hand-overs, acquire to the next acquire" if hand_overs else
                   "swaps (no hand-over recorded)" if frames else "whole run (no hand-over, no swap recorded)"))

    def _status(self, outcome: Outcome, models: dict[int, ProcessModel]) -> str:
        p = self.program
        if p.error is not None:
            return f"the program could not start: {p.error}"
        if not p.ended:
            return f"the program runs: {p.recorder.records:,} records so far"
        return (f"the program {ending(outcome)['said']}; {p.recorder.records:,} records read. "
                "This window stays until you close it")

    def _caps(self, models: dict[int, ProcessModel]) -> CapsView:
        libs = ", ".join(f"{k}: {os.path.basename(v) if v else 'off'}" for k, v in self.program.libs.items())
        queues = []
        for pid, model in models.items():
            for q, c in queue_stamps(model).items():
                queues.append(f"pid {pid} queue {q}: {c['stamped']} of {c['commands']} commands with device stamps"
                              + (f" ({c['why']})" if c["why"] else ""))
        return CapsView(
            platform=f"the attached program's own: {' '.join(self.program.argv)}",
            device=", ".join(f"pid {pid}: {len(m.queues)} queues, {len(m.contexts)} contexts" for pid, m in models.items())
            or "no CL context recorded yet",
            gl="the program's own context: GL calls stand where the CPU issued them (no GL timer is read in it)",
            gl_vendor="", surface=f"glshare's own window; the program keeps its own. Recorders: {libs}",
            cl_extensions=(), gl_extensions=(), backends=(), chosen="", sync=(), memory={},
            stamps="; ".join(queues) or "no CL command recorded yet")


@dataclass
class PanelOptions:
    """The window's: its size, the frames it stays after the program ended (None: until closed),
    where its last frame is written as PNG, and a function called after each frame (tests)."""

    size: tuple[int, int] = WINDOW_SIZE
    frames_after: int | None = None
    screenshot: str | None = None
    on_frame: Callable[[object, LiveView, Program], None] | None = None


def panel_data(live: LiveView):
    """The panel's model over ``live``: the tabs that describe an attached program, its rows, its
    measured lanes only, its measured columns."""
    from app.ui.model import PanelData

    return PanelData(tab_keys=TABS, rows_of=live.rows_of, measured_lanes=True, columns_of=lambda _records: live.columns)


def run_with_panel(argv: list[str], libs: dict[str, str | None], strict: bool, options: PanelOptions) -> Outcome:
    """Open glshare's window, then run the program recorded, the panel following it; returns the
    program's outcome once the window is closed and the program ended (a window closed first:
    glshare waits for the program, which is never stopped for it)."""
    import sys

    from app.window import has_display

    if not has_display():
        raise UsageError("glshare attach --panel: no display (DISPLAY or WAYLAND_DISPLAY): glshare's window "
                         "needs one; without --panel the same is recorded headless")
    program = Program(argv, libs, strict)
    show(program, options)
    if not program.ended:
        print(f"glshare attach: glshare's window was closed; waiting for {os.path.basename(argv[0])} to end",
              file=sys.stderr)
    return program.wait()


def show(program: Program, options: PanelOptions) -> LiveView:
    """glshare's window over ``program`` (started here, once the window is open), until it is closed
    (Escape or q outside a text field, the window's close button, a signal once the program ended),
    or ``options.frames_after`` frames after the program ended."""
    from app.window import select_platform

    select_platform(False)
    from app.gl import api as GL
    from app.gl.context import gl_info
    from app.signals import SIGNALS
    from app.trace.png import write_png
    from app.ui.bundle import complete
    from app.ui.host import UiHost
    from app.window import open_surface

    complete()  # imgui_bundle before the window: one GLFW library for both (app/window/glfw_window.py)
    surface = open_surface(False, options.size, title=f"glshare attach: {os.path.basename(program.argv[0])}")
    ui = None
    try:
        ui = UiHost(surface, gl_info())
        live = LiveView(program).start()
        ui.model = panel_data(live)
        ui.state.fill = True

        def request(name: str, **_args) -> None:
            if name == "clear_findings":
                ui.clear_findings()

        program.start()
        ended_at, frame, final = None, 0, False
        while not surface.should_close():
            for ev in surface.poll_events():
                if ev.key in ("escape", "q") and not ui.wants_keyboard:
                    surface.request_close()
            if ended_at is None and program.ended:
                ended_at = frame
            if not final and live.final:
                final = True
                ui.mark_dirty()  # the program's last records, at the next frame
            if ended_at is not None and SIGNALS.received:
                break
            last = options.frames_after is not None and ended_at is not None and frame - ended_at + 1 >= options.frames_after
            if surface.bind_target():
                GL.glClearColor(0.08, 0.08, 0.10, 1.0)
                GL.glClear(GL.GL_COLOR_BUFFER_BIT)
                ui.draw(live.view, request)
                if last and options.screenshot:
                    write_png(options.screenshot, surface.read_pixels()[:, :, :3])
                surface.present()
            if options.on_frame is not None:
                options.on_frame(ui, live, program)
            frame += 1
            if last:
                break
            time.sleep(POLL_S)
        return live
    finally:
        if ui is not None:
            ui.close()
        surface.close()


@dataclass(frozen=True)
class _Offset:
    offset: int = 0
    uncertainty_ns: int = 0


@dataclass(frozen=True)
class _HostClock:
    """The records' stamps are on the host clock already (app/attach/timeline.py maps each device)."""

    cl: _Offset = _Offset()
    gl: _Offset = _Offset()


_HOST_CLOCK = _HostClock()
_GL_NOT_TIMED = GlTimerView(False, 1, "not read: GL calls stand where the program's CPU issued them", None, 0, 0)


def _clock(timelines: dict[int, Timeline]) -> dict:
    """The header's and the Caps tab's clock: the widest device uncertainty of any process."""
    unc = max((tl.clocks.uncertainty(d) for tl in timelines.values() for d in tl.clocks.devices), default=0)
    return {"cl": {"method": "each command's QUEUED stamp inside its enqueue call", "offset_ns": 0,
                   "uncertainty_ns": unc}, "gl": {"method": "not read", "offset_ns": 0, "uncertainty_ns": 0}}


@dataclass(frozen=True)
class _Mark:
    """A finding of the tracker or the races where it happened, as the timeline's markers read a
    hazard of its record (``FrameRecord.hazards``): its case, object, phase and sentence."""

    case: str
    label: str
    where: str
    spec: str
    frame: int


def _phase(fn: str) -> str:
    if fn in HAND_OVERS:
        return HAND_OVERS[fn][1]
    return "compute" if fn in KERNELS or fn in COPIES else ("render" if gl_use(fn) else "")


def _mark(models: dict[int, ProcessModel], timelines: dict[int, Timeline], recs: list[FrameRecord],
          spans: dict[int, tuple[int, int, int]]) -> None:
    """Each hazard-kind finding (no CL code) on the hand-over record its call falls in, if any."""
    by_pid: dict[int, list[FrameRecord]] = {}
    for rec in recs:
        if rec.owner_labels:
            by_pid.setdefault(spans[rec.index][0], []).append(rec)
    for pid, own in by_pid.items():
        starts = [r.start_ns for r in own]
        model = models[pid]
        for f in model.findings + timelines[pid].races:
            call = model.by_id.get(("cl" if f.fn.startswith("cl") else "gl", f.call_id))
            if f.code is not None or call is None:
                continue
            k = bisect.bisect_right(starts, call.t) - 1
            if k >= 0 and call.t <= spans[own[k].index][2] and f.object in own[k].owner_labels:
                own[k].hazards.append(_Mark(f.case, f.object, _phase(call.fn), f.spec or f.detail, f.frame))


def _counts(models: dict[int, ProcessModel]) -> dict[str, int]:
    """Findings per case over every process (the races are counted in the timeline's hazards)."""
    out: dict[str, int] = {}
    for m in models.values():
        for case, n in m.finding_counts.items():
            out[case] = out.get(case, 0) + n
    return out


def _end(rec: FrameRecord) -> int:
    ends = [e for _s, e in rec.phases.values()] + [e for _n, _s, e in rec.gl_passes] + [rec.end_ns]
    return max(ends)


def call_kind(call: Call) -> str:
    """What a call is, as its bar is coloured (app/legend.py's ``CALL_RGB``): "swap", "wait" (a CPU
    wait, or a transfer or map the program made blocking), "GL call" or "CL call"."""
    fn = call.fn
    if fn in SWAPS:
        return "swap"
    if fn in CPU_WAITS or call.rec.get("blocking") is True:
        return "wait"
    return "CL call" if fn.startswith("cl") else "GL call"


def _row_marks(model: ProcessModel, tl: Timeline) -> tuple[list[int], list]:
    """Every finding at its call, in call order: (the call's t, (t, tid, case, (t, kind, title, text)))."""
    out = []
    for f in model.findings + tl.races:
        call = model.by_id.get(("cl" if f.fn.startswith("cl") else "gl", f.call_id))
        if call is None:
            continue
        if f.code is not None:
            mark = (call.t, "error", f"{f.code_name or f.code} in {f.fn} (call {f.call_id})",
                    f"{f.case}{' (assumed)' if f.assumed else ''}: {f.detail or f.object}"
                    + (f"\n{f.spec}" if f.spec else ""))
        else:
            mark = (call.t, "hazard", f"hazard {f.case} on {f.object} ({f.fn}, call {f.call_id})", f.spec or f.detail)
        out.append((call.t, call.tid, f.object if f.code is None else None, mark))
    out.sort(key=lambda x: x[0])
    return [x[0] for x in out], out


def _rows(model: ProcessModel, tl: Timeline, calls: tuple[list[int], list], start: int, end: int,
          marks: tuple[list[int], list] = ([], []), objects: set[str] = frozenset()):
    """The program's CPU threads (each call, issue to return) and CL queues (each command, device
    START to END on the host clock) issued from ``start`` to ``end``: the timeline's rows, each bar
    coloured by its call's kind; the findings at their calls on their thread's row (a hazard on an
    object of ``objects``, which has its own lane and mark there, left out)."""
    from app.ui.model.timeline import Row

    times, kept = calls
    threads: dict[int, tuple[list, list]] = {}
    queues: dict[str, list] = {}
    first, last = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
    left_out = max(last - first - ROW_BARS, 0)
    more = f"; its first {left_out:,} calls left out (the newest {ROW_BARS:,} shown)" if left_out else ""
    for c in kept[first + left_out:last]:
        bars, kinds = threads.setdefault(c.tid, ([], []))
        bars.append((c.fn, c.t, c.t_end if c.t_end is not None else c.t))
        kinds.append(call_kind(c))
        stamps = host_stamps(model, tl.clocks, c)
        if stamps is not None and stamps[2] is not None and stamps[3] is not None:
            q = c.rec.get("queue", "?")
            queues.setdefault(q, []).append((c.fn.removeprefix("clEnqueue"), stamps[2], stamps[3]))
    at, found = marks
    on: dict[int, list] = {}
    for _t, tid, obj, mark in found[bisect.bisect_left(at, start):bisect.bisect_right(at, end)]:
        if obj is None or obj not in objects:
            on.setdefault(tid, []).append(mark)
            threads.setdefault(tid, ([], []))
    rows = [Row(f"thread {tid}", "cpu", f"pid {model.pid}, thread {tid}: each recorded call, issue to return{more}",
                tuple(bars), tuple(kinds), tuple(on.get(tid, ()))) for tid, (bars, kinds) in sorted(threads.items())]
    rows += [Row(f"queue {q[-6:]}", "cl", f"pid {model.pid}, CL queue {q} (device {device_of_queue(model, q):#x}): "
                 "each command from its device START to END", tuple(bars), ("CL call",) * len(bars))
             for q, bars in queues.items()]
    return tuple(rows)


COLUMN_FRAMES = 240  # the newest frames the table's median / p95 are of (the phases' table: HISTORY)


def _columns(models: dict[int, ProcessModel], timelines: dict[int, Timeline], calls: dict[int, tuple[list[int], list]],
             records: list[FrameRecord], spans: dict[int, tuple[int, int, int]]) -> tuple:
    """The median / p95 table: the frame (its period, as the plot's) and, per frame, the CPU time
    of each kind of call issued from its start to its end (issue to return) and each queue's device
    time (START to END) of the commands enqueued in it, over the newest ``COLUMN_FRAMES`` frames
    that have a period. A frame where a call of the kind has no time (no return recorded: GL's draws
    and uploads are recorded at their issue only) has no value for it; a kind without a value in
    any of those frames, or none but 0 (a queue used outside them), has no column."""
    import numpy as np

    from app.ui.model.parts import Column

    recs = [r for r in records if r.period_ns][-COLUMN_FRAMES:]
    if not recs:
        return ()
    # pid -> key -> (each call's t, running sum of its ns, running count of calls without a time)
    sums: dict[int, dict[str, tuple[list[int], list[int], list[int]]]] = {}
    since: dict[int, int] = {}  # pid -> the start of its oldest frame in the table: calls before it are not read
    for rec in recs:
        pid, start, _end = spans[rec.index]
        since[pid] = min(since.get(pid, start), start)
    for pid, (times, kept) in calls.items():
        per: dict[str, tuple[list[int], list[int], list[int]]] = {}
        for c in kept[bisect.bisect_left(times, since[pid]):] if pid in since else ():
            key = call_kind(c)
            stamps = host_stamps(models[pid], timelines[pid].clocks, c) if key != "GL call" else None
            dev = [(f"queue {c.rec.get('queue', '?')[-6:]}", stamps[3] - stamps[2])] \
                if stamps is not None and stamps[2] is not None and stamps[3] is not None else []
            for k, ns in [(key, c.t_end - c.t if c.t_end is not None else None)] + dev:
                t, run, untimed = per.setdefault(k, ([], [0], [0]))
                t.append(c.t)
                run.append(run[-1] + (ns or 0))
                untimed.append(untimed[-1] + (ns is None))
        sums[pid] = per
    names = {"CL call": "CL calls", "GL call": "GL calls", "wait": "waits", "swap": "swaps"}
    keys = [k for k in names if any(k in per for per in sums.values())]
    keys += sorted({k for per in sums.values() for k in per if k not in names})
    table = np.full((len(keys) + 1, len(recs)), np.nan)
    for j, rec in enumerate(recs):
        pid, start, end = spans[rec.index]
        table[0, j] = rec.period_ns / 1e6
        for i, k in enumerate(keys, start=1):
            t, run, untimed = sums[pid].get(k, ([], [0], [0]))
            a, b = bisect.bisect_left(t, start), bisect.bisect_left(t, end)
            if untimed[b] == untimed[a]:
                table[i, j] = (run[b] - run[a]) / 1e6
    titles = {"CL call": "the CPU time of the CL calls issued in the frame (issue to return), waits apart",
              "GL call": "the CPU time of the GL calls issued in the frame, waits and swaps apart",
              "wait": "the CPU time of the waits (clFinish, clWaitForEvents, glFinish, glClientWaitSync, "
                      "blocking transfers and maps) issued in the frame", "swap": "the CPU time of the frame's swaps"}
    cols = [Column("frame", PHASE_RGB["frame"], *_median_p95(table[0]),
                   f"the frame's period, over the newest {len(recs)} frames")]
    for i, k in enumerate(keys, start=1):
        values = table[i][~np.isnan(table[i])]
        if not values.any():
            continue
        cols.append(Column(names.get(k, f"{k} (device)"), CALL_RGB.get(k, CALL_RGB["CL call"]), *_median_p95(values),
                           f"{titles.get(k, 'the device time (START to END) of the commands enqueued in the frame')}, "
                           f"over the newest {len(values)} frames whose calls of it all have a time"))
    return tuple(cols)


def _median_p95(values) -> tuple[float, float]:
    import numpy as np

    return float(np.median(values)), float(np.percentile(values, 95))


def _swap_frames(model: ProcessModel, calls: list) -> list[FrameRecord]:
    """A process that made no hand-over: its frames (swap to swap; no swap: the whole run as frame 0)
    as frame records without phases, so the timeline shows its threads' and queues' rows."""
    if not calls:
        return []
    ends = [sw.t_end or sw.t for sw in model.swaps] or [max(c.t_end or c.t for c in calls)]
    out, start = [], calls[0].t
    for k, end in enumerate(ends):
        rec = FrameRecord.begin(k, "attach", f"pid {model.pid}", "swaps" if model.swaps else "no swap")
        rec.start_ns, rec.end_ns = start, end
        out.append(rec)
        start = end
    return out


def device_of_queue(model: ProcessModel, queue: str) -> int:
    from app.attach.wire import handle

    q = model.queues.get(handle(queue))
    return (q.device or q.int_ptr) if q is not None else handle(queue)


def _owners(records: list[FrameRecord]) -> tuple[OwnerView, ...]:
    """Each shared object's owner after its newest hand-over, and its acquires and releases."""
    out: dict[str, dict] = {}
    for rec in records:
        state = rec.owners[-1][2] if rec.owners else ()
        for k, label in enumerate(rec.owner_labels):
            o = out.setdefault(label, {"acquires": 0, "releases": 0})
            o["acquires"] += 1
            o["releases"] += "release" in rec.phases
            o["owner"] = state[k] if k < len(state) else ""
            o["since"] = rec.index
    return tuple(OwnerView(label, "shared", o["owner"], o["owner"].upper(), o["since"], o["acquires"], o["releases"])
                 for label, o in out.items())


def _fold(history: RunHistory, model: ProcessModel, tl: Timeline) -> None:
    """The process's findings into the history's folding, as the panel's Errors and Hazards tabs
    read it: a finding with a CL code is the call's error, the others hazards; where: the program's
    call and its site; frames: the program's (swaps)."""
    from app.schedule.frame import ErrorRecord

    for f in model.findings + tl.races:
        where = f"{f.fn} (call {f.call_id}, pid {f.pid}{', ' + f.site if f.site else ''})"
        if f.code is not None:
            history.errors.add_error(ErrorRecord(f.frame, where, f.code, f.code_name or str(f.code),
                                                 f"{f.case}{' (assumed)' if f.assumed else ''}: {f.detail or f.object}",
                                                 f.spec))
        else:
            history.hazards.add((f.case, f.object, where), f.frame,
                                {"case": f.case, "kind": f.kind, "object": f.object, "label": f.object,
                                 "where": where, "spec": f.spec or f.detail})


def _panel_notes(model: ProcessModel, tl: Timeline) -> list[str]:
    """What the panel cannot show of a process beyond what the recording could not see."""
    out = []
    if not tl.records and model.swaps:
        out.append("no hand-over recorded: its frames are its swaps, without glshare's phases (acquire, compute, "
                   "release, render); the table sums its calls per frame instead")
    if "gl" in model.sources and GL_NOT_TIMED not in tl.blind:
        out.append("GL calls stand where the CPU issued them (the preload library reads no GL timer): "
                   "GL's own GPU time is not seen")
    return out


def _no_teaching():
    from app.schedule.teach import TeachingView

    return TeachingView(False, False, 0, False, "", "", "", "", (), 0, (), (), True, "", "", "", "", "", "", "",
                        "", ())


_NO_TEACHING = _no_teaching()
