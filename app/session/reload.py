"""Hot reload of kernels and shaders while a run goes on.

``poll_sources(session)`` is called once per loop iteration, at the frame boundary. It costs one
clock read, except a few times a second (``POLL_INTERVAL_S``) when it stats the source files of
the programs built and not released (the set-up's few kernels and shaders: they list themselves,
app/cl/programs.py and app/gl/shaders.py). A file whose signature (mtime, size, inode) differs
from the one it had when its program was built, and did not change since the previous poll (an
editor may still be writing it), is rebuilt in place (``KernelProgram.reload``, ``Program.reload``).

A rebuild that fails leaves the last good program running: the error is recorded as a loop error
whose text carries the compiler's log (the panel's Errors tab shows it, the report lists it) and
the status line says so; it is tried again only when the file changes again. The fixed file is
rebuilt and runs from the next frame on.
"""
from __future__ import annotations

import logging
import time

from app.cl.programs import live_programs as cl_programs
from app.gl.shaders import live_programs as gl_programs
from app.source_files import shown, signature

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.25


class SourceWatch:
    """The polling state: when to look next, what each file looked like at the last look, and
    which changed files already failed to build (not retried until they change again)."""

    def __init__(self, interval_s: float = POLL_INTERVAL_S, clock=time.monotonic_ns) -> None:
        self.interval_ns = int(interval_s * 1e9)
        self.clock = clock
        self._next = 0
        self._last_seen: dict[tuple[int, object], tuple | None] = {}
        self._failed: dict[tuple[int, object], tuple | None] = {}
        self.reloads = 0
        self.failures = 0

    def poll(self, session) -> list[str]:
        """Rebuild what changed; returns one line per rebuild or failure (usually nothing)."""
        now = self.clock()
        if now < self._next:
            return []
        self._next = now + self.interval_ns
        return self.check(session)

    def check(self, session) -> list[str]:
        """Look at every source now (``poll`` without the interval)."""
        lines = []
        seen = set()
        for program in [*cl_programs(), *gl_programs()]:
            changed = []
            for path in program.sources:
                key = (id(program), path)
                seen.add(key)
                now = signature(path)
                previous = self._last_seen.get(key, program.signatures.get(path))
                self._last_seen[key] = now
                if now == program.signatures.get(path) or now != previous:
                    continue  # unchanged, or still changing: look again at the next poll
                if key in self._failed and self._failed[key] == now:
                    continue  # this very version failed already
                changed.append((key, path, now))
            if changed:
                lines.append(self._rebuild(session, program, changed))
        for key in set(self._last_seen) - seen:  # programs released since
            self._last_seen.pop(key, None)
            self._failed.pop(key, None)
        return lines

    def _rebuild(self, session, program, changed) -> str:
        names = ", ".join(shown(path) for _, path, _ in changed)
        try:
            program.reload()
        except Exception as exc:  # noqa: BLE001 - the last good program keeps running
            self.failures += 1
            for key, _, now in changed:
                self._failed[key] = now
            line = f"{names} changed but cannot be used; the last good build keeps running"
            session.status = line
            session.loop_error(exc, f"reload {names}")
            return line
        self.reloads += 1
        for key, _, _ in changed:
            self._failed.pop(key, None)
        line = f"reloaded {names}"
        session.status = line
        log.info("%s", line)
        return line


_watch = SourceWatch()


def poll_sources(session) -> list[str]:
    """The loop's one call (app/run.py, each iteration at the frame boundary)."""
    return _watch.poll(session)
