"""FrameRecord: everything that happened in one frame, host times in ns (perf_counter_ns)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from app.errors import ClError, GlshareError

PHASES = ("acquire", "compute", "release", "render")  # the scheduler's phases, in order
LOOP_PHASES = PHASES + ("panel", "present")  # and the loop's: the UI drawn, the buffer swapped
BOUNDARIES = ("start",) + PHASES  # where owners are sampled: the frame's start, then after each phase
_new = object.__new__


@dataclass
class ErrorRecord:
    frame: int
    where: str
    code: int | None
    name: str
    message: str
    meaning: str = ""

    def as_dict(self) -> dict:
        return {"frame": self.frame, "where": self.where, "code": self.code, "name": self.name,
                "message": self.message, "meaning": self.meaning}


def error_record(frame: int, exc: BaseException, where: str) -> ErrorRecord:
    """The record of a failure of frame ``frame`` in ``where``: a raw CL error as glshare's ClError."""
    if isinstance(exc, ClError):
        return ErrorRecord(frame, exc.where or where, exc.code, exc.name, exc.one_line(), exc.meaning)
    if isinstance(exc, cl.Error):
        wrapped = ClError.from_pyopencl(exc, where)
        return ErrorRecord(frame, where, wrapped.code, wrapped.name, wrapped.one_line(), wrapped.meaning)
    if isinstance(exc, GlshareError):
        code = getattr(exc, "code", None)
        # ``details``: a compiler's log (a failed build or reload): the panel shows it under the error
        details = getattr(exc, "details", "")
        meaning = getattr(exc, "meaning", "") or (f"{exc.one_line()}\n{details}" if details else "")
        return ErrorRecord(frame, exc.where or where, code if isinstance(code, int) else None,
                           getattr(exc, "name", type(exc).__name__), exc.one_line(), meaning)
    return ErrorRecord(frame, where, None, type(exc).__name__, str(exc))


@dataclass(frozen=True, slots=True)
class CommandInfo:
    """What the driver said of one CL command of a frame, asked of its event when its stamps were
    read (app/schedule/harvest.py): clGetEventInfo's queue, command type and execution status."""

    event: int  # the cl_event handle the enqueue call returned
    queue: int  # CL_EVENT_COMMAND_QUEUE: the cl_command_queue it was enqueued on
    command_type: int  # CL_EVENT_COMMAND_TYPE (CL_COMMAND_NDRANGE_KERNEL, CL_COMMAND_ACQUIRE_GL_OBJECTS ...)
    status: int  # CL_EVENT_COMMAND_EXECUTION_STATUS when read: CL_COMPLETE (0), or the command's error (< 0)


@dataclass(slots=True)
class FrameRecord:
    index: int
    scene: str
    backend: str
    sync: str
    segment: int = 0  # the set-up it ran in (RunHistory.segments)
    start_ns: int = 0
    end_ns: int = 0
    phases: dict[str, tuple[int, int]] = field(default_factory=dict)  # host (start, end)
    waits: list[tuple[str, int, int]] = field(default_factory=list)  # CPU waits: glFinish, clFinish ...
    # glshare's own bookkeeping of earlier frames done inside this frame's waits (the CL and GL stamps
    # read while the GPU finished: FrameScheduler's ``shadow``), (name, start, end); inside a phase
    bookkeeping: list[tuple[str, int, int]] = field(default_factory=list)
    events: dict[str, Any] = field(default_factory=dict)  # CL events until their profile is read
    # queued, submit, start, end; submit None where not read (FrameScheduler.profile_submit: --trace reads it)
    cl_profile: dict[str, tuple[int, int | None, int, int]] = field(default_factory=dict)
    # False: not timed (its CL stamps left unread, its GL passes not timed): frames came faster than
    # one in FrameScheduler.stamps_interval_ns
    sampled: bool = True
    # the commands whose profile came back without device stamps (0: NVIDIA's markers), kept out of cl_profile
    unstamped: tuple[str, ...] = ()
    # what the driver said of each profiled command's event (CommandInfo), by command; None: none read
    commands: dict[str, CommandInfo] | None = None
    gl_passes: list[tuple[str, int, int]] = field(default_factory=list)  # GL timer queries (GL clock)
    errors: list[ErrorRecord] = field(default_factory=list)
    hazards: list[Any] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"acquire": 0, "compute": 0, "release": 0})
    bytes_moved: int = 0
    presented_ns: int = 0  # when the loop's present (buffer swap) returned
    period_ns: int = 0  # present to present, where the loop ran this frame right after the last one
    # who owns each shared object at every phase boundary: (boundary, host ns, owner per object, in
    # the order of owner_labels), boundary one of BOUNDARIES; owner "gl", "cl", or "" (not tracked)
    owner_labels: tuple[str, ...] = ()
    owners: list[tuple[str, int, tuple[str, ...]]] = field(default_factory=list)
    slot: int = 0  # the copy of the shared objects it used (frames in flight on copies: Scene.max_slots)
    stepped: bool = False  # run phase by phase (teaching mode): the gaps between phases are the user's
    paused: bool = False  # run while the session was paused (one frame stepped): the wait before it is the user's

    @classmethod
    def begin(cls, index: int, scene: str, backend: str, sync: str, segment: int = 0,
              stepped: bool = False) -> "FrameRecord":
        """A new frame's record, equal to ``FrameRecord(index, scene, backend, sync, segment,
        stepped=stepped)`` field by field (tests/trace/test_trace.py holds them to it), made
        without the generated constructor's default factories: the scheduler makes one every frame,
        and this is about half the Python (bench/probes/frame_opcodes_probe.py)."""
        rec = _new(cls)
        rec.index, rec.scene, rec.backend, rec.sync, rec.segment = index, scene, backend, sync, segment
        rec.start_ns = rec.end_ns = rec.bytes_moved = rec.presented_ns = rec.period_ns = rec.slot = 0
        rec.phases, rec.events, rec.cl_profile = {}, {}, {}
        rec.waits, rec.bookkeeping, rec.gl_passes, rec.errors, rec.hazards, rec.owners = [], [], [], [], [], []
        rec.counts = {"acquire": 0, "compute": 0, "release": 0}
        rec.sampled, rec.unstamped, rec.owner_labels, rec.commands = True, (), (), None
        rec.stepped, rec.paused = stepped, False
        return rec

    def phase_us(self, name: str) -> float | None:
        span = self.phases.get(name)
        return (span[1] - span[0]) / 1e3 if span else None

    @property
    def work_us(self) -> float:
        """The scheduler's part of the frame: the acquire's start to the render's end."""
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def steady(self) -> bool:
        """Run at the loop's own pace, neither stepped in teaching mode nor while paused: the
        frames whose times the statistics (panel, report) hold."""
        return not (self.stepped or self.paused)

    @property
    def frame_us(self) -> float | None:
        """The frame as a user sees it: present to present (None where unknown or not the loop's
        pace: the first frame, a frame after a pause, a frame stepped)."""
        return self.period_ns / 1e3 if self.period_ns and self.steady else None

    @property
    def complete(self) -> bool:
        return not self.events
