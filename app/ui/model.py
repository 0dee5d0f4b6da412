"""Frame records -> the panel's plain data: phase-time history, the timeline, ownership, folded errors.

Built incrementally (each record is read once, when the next one exists and its panel time is
known), kept in fixed numpy rings (``HISTORY`` frames), so a snapshot costs about the same at frame
10 and at frame 100 000 (0.1-0.4 ms on the 2-core machine). Nothing here holds a GL or CL object after it returns: ``ui/`` draws
from what this module hands out.

Times: host phases and CPU waits are ``perf_counter_ns``; CL profiling (device ns) and GL timer
queries (GL ns) are put on that clock by ``app/trace/clock.py``.
"""
from __future__ import annotations

import numpy as np

from app.schedule.frame import PHASES, ErrorRecord

SERIES = PHASES + ("panel", "frame")  # what the timing plot shows, in ms
HISTORY = 240  # frames kept for median / p95
PLOT_FRAMES = 120  # of those, plotted: on llvmpipe every point of the six lines costs ~0.3 us of setup
TIMELINE_FRAMES = 3  # complete frames in the Gantt
STATS_EVERY = 8  # median / p95 recomputed every 8 frames (they move slowly; the plot is live)
MAX_FOLDED = 64  # distinct errors / hazards kept; more are counted in "other"

# timeline rows and bar kinds (the panel colours a bar by its kind and name)
ROW_CPU, ROW_WAIT, ROW_CL, ROW_GL = 0, 1, 2, 3
ROWS = ("CPU", "CPU wait", "CL queue", "GL")
KIND_PHASE, KIND_WAIT, KIND_QUEUED, KIND_SUBMITTED, KIND_RUN, KIND_GL = range(6)


def frame_ms(rec, next_rec=None) -> float:
    """The whole frame: start to the next frame's start when that one directly follows (the loop
    period: panel, buffer swap and event polling included), else start to the end of its panel."""
    if next_rec is not None and next_rec.index == rec.index + 1 and next_rec.start_ns > rec.start_ns:
        return (next_rec.start_ns - rec.start_ns) / 1e6
    end = rec.phases.get("panel", (0, rec.end_ns))[1]
    return (max(end, rec.end_ns) - rec.start_ns) / 1e6


class PhaseHistory:
    """The last ``n`` frames' phase durations (ms) in a numpy ring, and their median / p95."""

    def __init__(self, n: int = HISTORY) -> None:
        self.n = n
        # every column is written twice (at i and i + n), so the last n frames in order are always
        # one contiguous slice: no concatenation per frame
        self.data = np.full((len(SERIES), 2 * n), np.nan, np.float64)
        self.frames = np.zeros(2 * n, np.float64)  # float64: ImPlot wants xs and ys of one dtype
        self.count = 0
        self._stats: dict | None = None
        self._stats_at = 0  # the count the cached statistics were computed at

    def push(self, rec, next_rec=None) -> None:
        i = self.count % self.n
        col = [np.nan] * len(SERIES)
        for k, name in enumerate(SERIES[:-1]):
            span = rec.phases.get(name)
            if span:
                col[k] = (span[1] - span[0]) / 1e6
        col[-1] = frame_ms(rec, next_rec)
        self.data[:, i] = self.data[:, i + self.n] = col
        self.frames[i] = self.frames[i + self.n] = rec.index
        self.count += 1
        if self.count < 16 or self.count - self._stats_at >= STATS_EVERY:
            self._stats = None

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """(frame indices, data[series, frame]) oldest first; copies, safe to hand out."""
        if self.count < self.n:
            return self.frames[: self.count].copy(), self.data[:, : self.count].copy()
        i = self.count % self.n
        return self.frames[i:i + self.n].copy(), self.data[:, i:i + self.n].copy()

    def stats(self) -> dict[str, tuple[float, float]]:
        """{series: (median, p95)} in ms over the ring, NaN (missing phases) left out, 0 when empty.

        Linear interpolation between order statistics, as numpy's default percentile; done by one
        sort of the ring (np.nanpercentile costs ~0.5 ms here, ten times more)."""
        if self._stats is None:
            m = min(self.count, self.n)
            out = {name: (0.0, 0.0) for name in SERIES}
            if m:
                ordered = np.sort(self.data[:, :m], axis=1)  # NaN sorts last
                valid = m - np.isnan(ordered).sum(axis=1)
                for k, name in enumerate(SERIES):
                    v = int(valid[k])
                    if v:
                        out[name] = (_quantile(ordered[k], v, 0.5), _quantile(ordered[k], v, 0.95))
            self._stats, self._stats_at = out, self.count
        return self._stats


def _quantile(sorted_row: np.ndarray, n: int, q: float) -> float:
    """The q-quantile of the first ``n`` (sorted) values, interpolated like numpy.percentile."""
    pos = q * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return float(sorted_row[lo] + (sorted_row[hi] - sorted_row[lo]) * (pos - lo))


class Folder:
    """Repeated errors (or hazards) folded into one entry with a count, first and last frame."""

    def __init__(self, limit: int = MAX_FOLDED) -> None:
        self.limit = limit
        self.entries: dict[tuple, dict] = {}
        self.other = 0
        self.total = 0

    def add(self, key: tuple, frame: int, fields: dict) -> None:
        self.total += 1
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= self.limit:
                self.other += 1
                return
            entry = self.entries[key] = {**fields, "count": 0, "first_frame": frame, "last_frame": frame}
        entry["count"] += 1
        entry["last_frame"] = frame
        entry["message"] = fields.get("message", entry.get("message", ""))

    def add_error(self, err: ErrorRecord) -> None:
        """Errors fold on (code, CL name, where); the last message is kept."""
        self.add((err.code, err.name, err.where), err.frame,
                 {"code": err.code, "name": err.name, "where": err.where, "meaning": err.meaning,
                  "message": err.message})

    def add_hazard(self, flag) -> None:
        self.add((flag.case, flag.label, flag.where), flag.frame,
                 {"case": flag.case, "label": flag.label, "where": flag.where, "spec": flag.spec})

    def as_list(self) -> list[dict]:
        """Most recent first."""
        return sorted((dict(e) for e in self.entries.values()), key=lambda e: -e["last_frame"])


CLOCK_HOST, CLOCK_CL, CLOCK_GL = 0, 1, 2


def frame_bars(rec) -> tuple:
    """One frame's timeline, raw: an int64 array of (row, kind, clock, start, end) rows, the bars'
    names and their frame index.

    CPU phases and waits on the host clock as recorded; each CL command as three segments queued ->
    submit, submit -> start, start -> end in device ns; GL passes from timer queries in GL ns.
    ``clock`` says which: the offsets of app/trace/clock.py are applied when the timeline is built.
    """
    rows, names = [], []
    for name, (s, e) in rec.phases.items():
        rows.append((ROW_CPU, KIND_PHASE, CLOCK_HOST, s, e))
        names.append(name)
    for name, s, e in rec.waits:
        rows.append((ROW_WAIT, KIND_WAIT, CLOCK_HOST, s, e))
        names.append(name)
    for name, (q, sub, st, en) in rec.cl_profile.items():
        rows += [(ROW_CL, KIND_QUEUED, CLOCK_CL, q, sub), (ROW_CL, KIND_SUBMITTED, CLOCK_CL, sub, st),
                 (ROW_CL, KIND_RUN, CLOCK_CL, st, en)]
        names += [name, name, name]
    for name, s, e in rec.gl_passes:
        rows.append((ROW_GL, KIND_GL, CLOCK_GL, s, e))
        names.append(name)
    arr = np.array(rows, np.int64).reshape(-1, 5)
    return arr, names, np.full(len(names), rec.index, np.int64)


class PanelData:
    """Keeps what the panel shows between frames; ``update(view)`` returns the panel snapshot."""

    def __init__(self) -> None:
        self.history = PhaseHistory()
        self.errors = Folder()
        self.hazards = Folder()
        self._last_index = -1
        self._loop_errors_seen = 0
        self._timeline_key = None
        self._timeline: dict = {}
        self._bars: dict[int, tuple] = {}  # frame index -> frame_bars(rec), for the frames shown

    # -- ingest --------------------------------------------------------------------------------
    def _ingest(self, records, clock) -> None:
        """Push every record that has a successor (so its panel time is known), once."""
        new = []
        for rec in reversed(records):
            if rec.index <= self._last_index:
                break
            new.append(rec)
        if len(new) < 2:
            return
        new.reverse()  # oldest first; the newest has no successor yet
        for rec, nxt in zip(new[:-1], new[1:]):
            self.history.push(rec, nxt)
            for err in rec.errors:
                self.errors.add_error(err)
            for flag in rec.hazards:
                self.hazards.add_hazard(flag)
            if clock is not None:
                clock.observe_frame(rec)
            self._last_index = rec.index

    def _ingest_loop_errors(self, history) -> None:
        new = history.loop_errors_total - self._loop_errors_seen
        if new > 0:
            for err in history.loop_errors[-min(new, len(history.loop_errors)):]:
                self.errors.add_error(err)
        self._loop_errors_seen = history.loop_errors_total

    # -- pieces --------------------------------------------------------------------------------
    def timing(self) -> dict:
        frames, data = self.history.ordered()  # NaN (a missing phase) is a gap in ImPlot's line
        frames, data = frames[-PLOT_FRAMES:], data[:, -PLOT_FRAMES:]
        return {"frames": frames, "series": {name: data[k] for k, name in enumerate(SERIES)},
                "stats": self.history.stats(), "count": int(data.shape[1])}

    def timeline(self, records, gl_timer, clock, n: int = TIMELINE_FRAMES) -> dict:
        """The last ``n`` frames whose CL profile and GL timer results are all in, on one clock (ms
        from the first one's start), as numpy arrays: row, kind, start, end, frame (+ names).
        Rebuilt only when that set of frames changes; each frame's bars are made once."""
        gl_pending = gl_timer.oldest_pending_frame
        every = gl_timer.every if gl_timer.enabled else 1
        chosen = []
        for rec in reversed(records):
            if rec.events or (gl_pending is not None and rec.index >= gl_pending):
                continue
            if not chosen and rec.index % every:
                continue  # the GL timer samples frames: end the window on one whose GL passes were timed
            chosen.append(rec)
            if len(chosen) == n:
                break
        chosen.reverse()
        key = tuple(r.index for r in chosen)
        if key == self._timeline_key:
            return self._timeline
        newest = records[-1] if records else None
        parts = []
        for rec in chosen:
            part = self._bars.get(rec.index)
            if part is None:
                part = frame_bars(rec)
                if rec is not newest:  # the newest may still get its panel phase: not final yet
                    self._bars[rec.index] = part
            parts.append(part)
        for index in [i for i in self._bars if i < key[0]] if key else list(self._bars):
            del self._bars[index]
        self._timeline_key = key
        if not parts or not sum(len(p[1]) for p in parts):
            self._timeline = {"count": 0, "frames": [], "span_ms": 0.0, "rows": ROWS}
            return self._timeline
        arr = np.concatenate([p[0] for p in parts])
        offsets = np.array([0, clock.cl.offset if clock else 0, clock.gl.offset if clock else 0], np.int64)
        t0 = min(r.start_ns for r in chosen)
        shift = offsets[arr[:, 2]] - t0
        start, end = (arr[:, 3] + shift) / 1e6, (arr[:, 4] + shift) / 1e6
        self._timeline = {
            "count": len(start), "row": arr[:, 0], "kind": arr[:, 1], "start": start, "end": end,
            "name": [name for p in parts for name in p[1]], "frame": np.concatenate([p[2] for p in parts]),
            "frames": [(r.index, (r.start_ns - t0) / 1e6) for r in chosen],
            "span_ms": max(float(end.max()), 1e-3), "rows": ROWS,
            "has_gl": any(r.gl_passes for r in chosen), "has_cl": any(r.cl_profile for r in chosen)}
        return self._timeline

    @staticmethod
    def ownership(view) -> list[dict]:
        return [{"label": o.label, "kind": o.kind, "owner": o.owner, "state": o.state, "since_frame": o.since_frame,
                 "acquires": o.acquires, "releases": o.releases} for o in view.owners]

    @staticmethod
    def caps(view, ui_caps: dict) -> dict:
        c = view.caps
        return {"platform": c.platform, "device": c.device, "gl": c.gl, "gl_vendor": c.gl_vendor,
                "surface": c.surface, "cl_extensions": list(c.cl_extensions), "gl_extensions": list(c.gl_extensions),
                "backends": list(c.backends), "chosen": c.chosen,
                "sync": [{"name": s.name, "available": s.available, "reason": s.reason} for s in c.sync],
                "memory": c.memory, "gl_timer": view.gl_timer.sampling, **ui_caps}

    @staticmethod
    def controls(view) -> dict:
        c = view.controls
        return {"scenes": [s.name for s in c.scenes], "backends": [(b.name, b.available, b.reason) for b in c.backends],
                "syncs": [(s.name, s.available, s.reason) for s in c.syncs], "sizes": list(c.sizes), "size": c.size,
                "vsync": view.setup.vsync, "headless": view.setup.headless}

    @staticmethod
    def extras(view, tab: str, lab: dict | None) -> dict:
        """The teaching and error-lab tabs' data, built only while the panel shows that tab or
        teaching mode runs; absent pieces are simply left out."""
        t = view.teaching
        out = {"teaching_active": t.active}
        if t.active or tab == "teach":
            out["teaching"] = {**{k: getattr(t, k) for k in t.__dataclass_fields__},
                               "objects": [{"label": o.label, "kind": o.kind, "owner": o.owner,
                                            "since_frame": o.since_frame, "acquires": o.acquires,
                                            "releases": o.releases} for o in t.objects],
                               "steps": list(t.steps), "skip": list(t.skip)}
        if tab == "lab":
            out["demos"] = {"backend": view.setup.backend, "strict": view.setup.strict, "last": view.status,
                            "demos": [{"demo": d.demo, "key": d.key, "title": d.title, "on": d.on, "flags": d.flags,
                                       "effect": d.effect} for d in view.demos],
                            "hazard_counts": view.hazard_counts}
            if lab is not None:
                out["lab"] = lab
        return out

    # -- all of it -----------------------------------------------------------------------------
    def update(self, view, *, tab: str = "", lab: dict | None = None, ui_caps: dict | None = None) -> dict:
        """The panel's snapshot of one redraw, from the session's read-only view."""
        history = view.history
        records = history.records
        clock = view.clock_map
        self._ingest(records, clock)
        self._ingest_loop_errors(history)
        s = view.setup
        return {
            "scene": s.scene, "scene_desc": s.scene_title, "backend": s.backend, "sync": s.sync, "frame": view.frame,
            "paused": view.paused, "status": view.status, "trace_written": view.trace_written,
            "timing": self.timing(),
            "timeline": self.timeline(records, view.gl_timer, clock),
            "clock": view.clock,
            "ownership": self.ownership(view),
            "errors": self.errors.as_list(),
            "errors_total": self.errors.total,
            "errors_other": self.errors.other,
            "hazards": self.hazards.as_list(),
            "hazards_total": self.hazards.total,
            "caps": self.caps(view, ui_caps or {}),
            "controls": self.controls(view),
            "gl_timer": {"timed": view.gl_timer.timed, "dropped": view.gl_timer.dropped},
        } | self.extras(view, tab, lab)
