"""FrameRecord: everything that happened in one frame, host times in ns (perf_counter_ns)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("acquire", "compute", "release", "render")
BOUNDARIES = ("start",) + PHASES  # where owners are sampled: the frame's start, then after each phase


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
    events: dict[str, Any] = field(default_factory=dict)  # CL events until their profile is read
    cl_profile: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # queued, submit, start, end
    gl_passes: list[tuple[str, int, int]] = field(default_factory=list)  # GL timer queries (GL clock)
    errors: list[ErrorRecord] = field(default_factory=list)
    hazards: list[Any] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"acquire": 0, "compute": 0, "release": 0})
    bytes_moved: int = 0
    # who owns each shared object at every phase boundary: (boundary, host ns, owner per object, in
    # the order of owner_labels), boundary one of BOUNDARIES; owner "gl", "cl", or "" (not tracked)
    owner_labels: tuple[str, ...] = ()
    owners: list[tuple[str, int, tuple[str, ...]]] = field(default_factory=list)
    stepped: bool = False  # run phase by phase (teaching mode): the gaps between phases are the user's

    def phase_us(self, name: str) -> float | None:
        span = self.phases.get(name)
        return (span[1] - span[0]) / 1e3 if span else None

    @property
    def frame_us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def complete(self) -> bool:
        return not self.events
