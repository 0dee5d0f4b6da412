"""Live-object counters: every GL and CL object glshare makes is counted until it is released.

Leak tests assert that the counts go back to where they were (after a resize, a backend switch).
"""
from __future__ import annotations

from collections import Counter
from threading import Lock


class LiveObjects:
    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = Lock()

    def created(self, kind: str, owner: str = "") -> None:
        with self._lock:
            self._counts[(kind, owner)] += 1

    def released(self, kind: str, owner: str = "") -> None:
        with self._lock:
            self._counts[(kind, owner)] -= 1
            if self._counts[(kind, owner)] == 0:
                del self._counts[(kind, owner)]

    def count(self, kind: str | None = None, owner: str | None = None) -> int:
        with self._lock:
            return sum(n for (k, o), n in self._counts.items()
                       if (kind is None or k == kind) and (owner is None or o == owner))

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {f"{k}[{o}]" if o else k: n for (k, o), n in sorted(self._counts.items())}


live = LiveObjects()
