"""Read-only views of a session, handed to the UI, the outputs and teaching mode instead of the
session itself: frozen dataclasses of plain values (and the run history, read only)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.schedule.history import RunHistory
from app.schedule.teach import TeachingView


@dataclass(frozen=True)
class SetupView:
    """The set-up running now."""

    scene: str
    scene_title: str  # Scene.describe(): what it shows, its size, how GL draws it
    backend: str
    sync: str
    size_label: str
    size_kind: str  # "count" or "image"
    vsync: bool
    headless: bool
    strict: bool


@dataclass(frozen=True)
class OwnerView:
    """One shared object: who owns it (GL, CL) and whether a hand-over is still in flight."""

    label: str
    kind: str
    owner: str  # "gl" or "cl"
    state: str  # "GL", "CL", "GL -> CL" (acquire enqueued, not complete), "CL -> GL"
    since_frame: int
    acquires: int
    releases: int


@dataclass(frozen=True)
class Choice:
    """One option of a combo: its name, whether it can be chosen here, and why not."""

    name: str
    available: bool
    reason: str = ""


@dataclass(frozen=True)
class ControlsView:
    scenes: tuple[Choice, ...]
    backends: tuple[Choice, ...]
    syncs: tuple[Choice, ...]
    sizes: tuple[str, ...]
    size: str


@dataclass(frozen=True)
class CapsView:
    """What the machine offers, fixed for one set-up."""

    platform: str
    device: str
    gl: str
    gl_vendor: str
    surface: str
    cl_extensions: tuple[tuple[str, bool], ...]
    gl_extensions: tuple[tuple[str, bool], ...]
    backends: tuple[dict, ...]  # the registry's probes: name, available, reason
    chosen: str
    sync: tuple[Choice, ...]
    memory: dict  # the Memory tab: handle types, import types, the backend's own rows
    stamps: str = ""  # how the CL profiling and GL timer stamps are read (app/native, or why through ctypes)


@dataclass(frozen=True)
class GlTimerView:
    enabled: bool
    every: int
    sampling: str
    oldest_pending_frame: int | None
    timed: int
    dropped: int
    frames_timed: str = ""  # which frames are timed at all (FrameScheduler.stamps_interval_ns)


@dataclass(frozen=True)
class DemoView:
    demo: str
    key: str
    title: str
    on: bool
    flags: str
    effect: str


@dataclass(frozen=True)
class StopView:
    """Why the run stopped on a frame (``--strict`` in a window: paused on the offending frame)."""

    frame: int
    reason: str  # one line: "kernel: use_without_acquire on image.julia: These objects need ..."
    case: str = ""  # the hazard's case, when a hazard stopped it
    label: str = ""  # the shared object
    where: str = ""  # the phase or call
    spec: str = ""  # the spec sentence the hazard breaks

    @classmethod
    def from_error(cls, frame: int, exc: BaseException) -> "StopView":
        """From the error that stopped the run (a HazardError carries case, label and spec)."""
        one_line = getattr(exc, "one_line", None)
        reason = one_line() if callable(one_line) else f"{type(exc).__name__}: {exc}"
        return cls(frame, reason, getattr(exc, "case", ""), getattr(exc, "label", ""),
                   getattr(exc, "where", "") or "", getattr(exc, "spec", ""))


@dataclass(frozen=True)
class SessionView:
    setup: SetupView
    frame: int
    paused: bool
    history: RunHistory  # read only: records, totals, switches, loop errors
    current: Any  # the FrameRecord in progress (teaching mode) or None
    owners: tuple[OwnerView, ...]
    teaching: TeachingView
    demos: tuple[DemoView, ...]
    hazard_counts: dict
    clock: dict
    clock_map: Any  # app.schedule.clock.ClockMap: CL and GL time on the host clock
    caps: CapsView
    controls: ControlsView | None  # None: nothing to choose (glshare attach: the program runs on its own)
    gl_timer: GlTimerView
    status: str = ""  # what the last command did, or why it was refused
    trace_written: dict = field(default_factory=dict)
    stop: StopView | None = None  # the run stopped on a frame (--strict): why, where
    scene_options: tuple = ()  # the scene's own options (SceneOption: the command each one calls)
    notes: tuple[str, ...] = ()  # what the records shown could not see, one line each (glshare attach)
