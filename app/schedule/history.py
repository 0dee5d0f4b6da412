"""The run's history: frame records of every set-up (segment) under one cap for the whole run,
the totals of every frame ever run, the switches, and the errors of the loop itself.

A segment is one set-up (scene, backend, sync mode) between two switches. Records of all segments
share one deque of ``cap`` entries, so a run's memory does not grow with its switches; the totals
count every frame, kept or not, and the findings (hazards, races, errors) of every frame are folded
into ``findings`` (case, object, where: first and last frame, count) when the frame's stamps are in,
whatever the cap. Outputs (report, trace, panel) read the history, never the loop.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Callable, Iterator

from app.schedule.frame import ErrorRecord, FrameRecord
from app.schedule.races import NOT_TIMED, RaceFlag, find_races

DEFAULT_CAP = 600
MAX_LOOP_ERRORS = 256
MAX_FOLDED = 256  # distinct findings kept per kind; more are counted in ``other``


@dataclass
class Folded:
    """Findings of one kind ("hazard" or "error") of the whole run, folded on (case, object, where):
    each entry counts its frames and keeps the first and last and the newest details."""

    kind: str
    limit: int = MAX_FOLDED
    entries: dict = field(default_factory=dict)
    total: int = 0
    other: int = 0

    def add(self, key: tuple, frame: int, fields: dict) -> None:
        self.total += 1
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= self.limit:
                self.other += 1
                return
            # "frame": the first, as the report's unfolded entries named it (schema 2)
            entry = self.entries[key] = {**fields, "frame": frame, "first_frame": frame, "last_frame": frame,
                                         "count": 0}
        entry["count"] += 1
        entry["last_frame"] = frame
        for k, v in fields.items():  # the newest details (an error's message)
            if v not in (None, ""):
                entry[k] = v

    def add_hazard(self, flag) -> None:
        fields = {"case": flag.case, "kind": flag.kind, "object": flag.label, "label": flag.label,
                  "where": flag.where, "spec": flag.spec}
        if isinstance(flag, RaceFlag):  # a race: both intervals (the last one seen)
            fields["last"] = flag.as_dict()
        self.add((flag.case, flag.label, flag.where), flag.frame, fields)

    def add_error(self, err: ErrorRecord) -> None:
        self.add((err.code, err.name, err.where), err.frame,
                 {"name": err.name, "code": err.code, "where": err.where, "message": err.message,
                  "meaning": err.meaning})

    def as_list(self) -> list[dict]:
        """First seen first."""
        return sorted(self.entries.values(), key=lambda e: (e["first_frame"], e["last_frame"]))

    def as_dict(self) -> dict:
        return {"total": self.total, "distinct": len(self.entries), "other": self.other, "folded": self.as_list()}


@dataclass
class RaceStats:
    """How many frames the stamps were checked for races, and what they could not show on how many."""

    checked: int = 0
    found: int = 0
    blind: collections.Counter = field(default_factory=collections.Counter)

    def as_dict(self) -> dict:
        return {"frames_checked": self.checked, "found": self.found, "cannot_see": dict(self.blind)}


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
    # the session's ClockMap (app/trace/clock.py): with it, each harvested frame's stamps are
    # checked for races (app/schedule/races.py); without it (a bare scheduler) they are not
    clock: object | None = None
    hazards: Folded = field(default_factory=lambda: Folded("hazard"))
    errors: Folded = field(default_factory=lambda: Folded("error"))
    races: RaceStats = field(default_factory=RaceStats)
    _prev: FrameRecord | None = field(default=None, repr=False)

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
        totals["bytes_moved"] += rec.bytes_moved
        if rec.errors:
            totals["errors"] += len(rec.errors)
        if rec.hazards:
            totals["hazards"] += len(rec.hazards)
        if self.segments:
            self.segments[-1].frames += 1

    def harvested(self, rec: FrameRecord) -> None:
        """``rec``'s CL profiles are all read (or failed): hand it to ``on_harvested``, once; check
        its stamps for races (added to ``rec.hazards``, so the panel shows them), and fold its
        findings and errors into the run's."""
        if self.on_harvested is not None:
            self.on_harvested(rec)
        clock = self.clock
        if clock is not None and not rec.sampled:
            # a frame not timed has no stamps to check: counted as find_races counts it, without the
            # clock's offsets or the per-object walk (every frame pays this; most are not timed)
            # (boundary, time, owners): after the acquire first, CL's in nearly every frame (a record in
            # the history has every boundary's sample)
            if "cl" in rec.owners[1][2] or any("cl" in o for _b, _t, o in rec.owners):
                races = self.races
                races.checked += 1
                races.blind[NOT_TIMED] += 1
        elif clock is not None:
            check = find_races(rec, self._prev, clock.cl.offset, clock.gl.offset,
                               clock.cl.uncertainty_ns + clock.gl.uncertainty_ns)
            self.races.checked += check.checked
            self.races.blind.update(check.blind)
            if check.races:
                self.races.found += len(check.races)
                rec.hazards.extend(check.races)  # (``totals`` counts the tracker's; ``hazards`` folds both)
        self._prev = rec
        for flag in rec.hazards:
            self.hazards.add_hazard(flag)
        for err in rec.errors:
            self.errors.add_error(err)

    def handed_back(self, calls: int, frame: int, why: str) -> None:
        """``calls`` release calls made outside any frame, before frame ``frame``, to match
        acquisitions that skipped releases left (``SharingBackend.hand_back``): the report's
        ``counts.handed_back``, and an instant event in the trace."""
        self.totals["handed_back"] += calls
        self.hand_backs.append({"frame": frame, "calls": calls, "why": why})
        del self.hand_backs[:-MAX_LOOP_ERRORS]

    def loop_error(self, err: ErrorRecord) -> None:
        """An error outside a frame (a refused switch, a resize, the panel): kept, the oldest
        dropped; folded into ``errors`` for the whole run."""
        self.loop_errors.append(err)
        self.loop_errors_total += 1
        self.errors.add_error(err)
        del self.loop_errors[:-MAX_LOOP_ERRORS]

    def findings(self) -> dict:
        """Every error and finding of the run folded, and the races' check (the trace's
        ``otherData.findings``; the report carries the same parts)."""
        return {"hazards": self.hazards.as_dict(), "errors": self.errors.as_dict(), "races": self.races.as_dict()}

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
