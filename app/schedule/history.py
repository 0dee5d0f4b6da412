"""The run's history: frame records of every set-up (segment) under one cap for the whole run,
the totals of every frame ever run, the switches, and the errors of the loop itself.

A segment is one set-up (scene, backend, sync mode) between two switches. Records of all segments
share one deque of ``cap`` entries, so a run's memory does not grow with its switches; the totals
count every frame, kept or not. Outputs (report, trace, panel) read the history, never the loop.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Callable, Iterator

from app.schedule.frame import ErrorRecord, FrameRecord

DEFAULT_CAP = 600
MAX_LOOP_ERRORS = 256


@dataclass
class Segment:
    """One set-up of the run, from ``first_frame`` on."""

    index: int
    scene: str
    backend: str
    sync: str
    first_frame: int
    frames: int = 0  # frames run in this segment (kept or not)

    def as_dict(self) -> dict:
        return {"index": self.index, "scene": self.scene, "backend": self.backend, "sync": self.sync,
                "first_frame": self.first_frame, "frames": self.frames}


@dataclass
class RunHistory:
    cap: int = DEFAULT_CAP
    records: collections.deque = field(init=False)
    segments: list[Segment] = field(default_factory=list)
    totals: collections.Counter = field(default_factory=collections.Counter)
    switches: list[dict] = field(default_factory=list)
    hand_backs: list[dict] = field(default_factory=list)  # the newest MAX_LOOP_ERRORS (``handed_back``)
    loop_errors: list[ErrorRecord] = field(default_factory=list)
    loop_errors_total: int = 0
    # called once with each record whose CL profiles have all been read (FrameScheduler.harvest):
    # the session's ClockMap.observe_frame, which tightens the CL clock's offset with its stamps
    on_harvested: Callable[[FrameRecord], None] | None = None

    def __post_init__(self) -> None:
        self.records = collections.deque(maxlen=self.cap)

    def begin_segment(self, scene: str, backend: str, sync: str, first_frame: int) -> Segment:
        seg = Segment(len(self.segments), scene, backend, sync, first_frame)
        self.segments.append(seg)
        return seg

    @property
    def segment(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    def add(self, rec: FrameRecord) -> None:
        """One finished frame (FrameScheduler calls it)."""
        self.records.append(rec)
        totals, counts = self.totals, rec.counts
        totals["acquire"] += counts["acquire"]
        totals["compute"] += counts["compute"]
        totals["release"] += counts["release"]
        totals["frames"] += 1
        if rec.errors:
            totals["errors"] += len(rec.errors)
        if rec.hazards:
            totals["hazards"] += len(rec.hazards)
        if self.segments:
            self.segments[-1].frames += 1

    def harvested(self, rec: FrameRecord) -> None:
        """``rec``'s CL profiles are all read (or failed): hand it to ``on_harvested``, once."""
        if self.on_harvested is not None:
            self.on_harvested(rec)

    def handed_back(self, calls: int, frame: int, why: str) -> None:
        """``calls`` release calls made outside any frame, before frame ``frame``, to match
        acquisitions that skipped releases left (``SharingBackend.hand_back``): the report's
        ``counts.handed_back``, and an instant event in the trace."""
        self.totals["handed_back"] += calls
        self.hand_backs.append({"frame": frame, "calls": calls, "why": why})
        del self.hand_backs[:-MAX_LOOP_ERRORS]

    def loop_error(self, err: ErrorRecord) -> None:
        """An error outside a frame (a refused switch, a resize, the panel): kept, the oldest dropped."""
        self.loop_errors.append(err)
        self.loop_errors_total += 1
        del self.loop_errors[:-MAX_LOOP_ERRORS]

    @property
    def last(self) -> FrameRecord | None:
        return self.records[-1] if self.records else None

    def recent(self, n: int) -> list[FrameRecord]:
        """The newest ``n`` records, oldest first."""
        out = []
        for rec in reversed(self.records):
            if len(out) == n:
                break
            out.append(rec)
        out.reverse()
        return out

    def __iter__(self) -> Iterator[FrameRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)
