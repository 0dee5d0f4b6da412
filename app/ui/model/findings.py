"""Errors and hazards as the panel shows them: the run's own folding (app/schedule/history.py's
``Folded``: one entry per (code, name, where) or (case, object, where) with a count, its first and
last frame, for every frame of the run) read into frozen entries, less what "clear" put aside
(the Errors and Hazards tabs, the header's counts)."""
from __future__ import annotations

from dataclasses import dataclass


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
