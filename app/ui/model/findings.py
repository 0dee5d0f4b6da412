"""Errors and hazards, folded: one entry per (code, name, where) or (case, object, where) with a
count, its first and last frame (the Errors and Hazards tabs, the header's counts)."""
from __future__ import annotations

from dataclasses import dataclass

from app.schedule.frame import ErrorRecord

MAX_FOLDED = 64  # distinct errors / hazards kept; more are counted in "other"


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


class RunFindings:
    """The run's errors (or hazards) as the Errors and Hazards tabs show them: the run's own folded
    findings (``RunHistory.errors`` / ``.hazards``, app/schedule/history.py: every frame, whatever
    the ring size, the report's and the trace's too), less what was there at the last "clear".
    Without a clear the counts, first and last frames are the report's; after one, an entry's first
    frame is the newest frame it had been seen on before the panel saw it again."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._base: dict[tuple, int] = {}  # key -> count at the last clear
        self._base_total = self._base_other = 0
        self._first: dict[tuple, int] = {}  # key -> first frame seen since the clear (cleared keys only)
        self._key = None
        self._part = Findings((), 0, 0)

    @property
    def total(self) -> int:
        return self._part.total

    def clear(self, folded) -> None:
        self._base = {k: e["count"] for k, e in folded.entries.items()}
        self._base_total, self._base_other = folded.total, folded.other
        self._first.clear()
        self._key = None

    def read(self, folded) -> Findings:
        """The part from ``folded`` (a ``Folded``), built again only when it changed."""
        key = (id(folded), folded.total, folded.other, len(folded.entries))
        if key == self._key:
            return self._part
        out = []
        for k, e in folded.entries.items():
            count = e["count"] - self._base.get(k, 0)
            if count <= 0:
                continue
            first = e["first_frame"]
            if k in self._base:
                first = self._first.setdefault(k, e["last_frame"])
            if self.kind == "error":
                out.append(Finding("error", e.get("name", ""), e.get("where", ""), count, first, e["last_frame"],
                                   e.get("meaning", ""), e.get("message", ""), e.get("code")))
            else:
                out.append(Finding("hazard", e.get("case", ""), e.get("where", ""), count, first, e["last_frame"],
                                   e.get("spec", ""), label=e.get("label", "")))
        out.sort(key=lambda f: -f.last_frame)
        self._part = Findings(tuple(out), folded.total - self._base_total, folded.other - self._base_other)
        self._key = key
        return self._part

    def part(self) -> Findings:
        return self._part
