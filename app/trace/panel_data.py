"""Frame records -> the panel's plain data: phase-time history, the timeline, ownership, folded errors.

Built incrementally (each record is read once, when the next one exists and its panel time is
known), kept in fixed numpy rings (``HISTORY`` frames), so a snapshot costs about the same at frame
10 and at frame 100 000. Nothing here holds a GL or CL object after it returns: ``ui/`` draws
from what this module hands out.

Times: host phases and CPU waits are ``perf_counter_ns``; CL profiling (device ns) and GL timer
queries (GL ns) are put on that clock by ``app/trace/clock.py``.
"""
from __future__ import annotations

import numpy as np

from app.schedule.frame import PHASES, ErrorRecord

SERIES = PHASES + ("panel", "frame")  # what the timing plot shows, in ms
HISTORY = 240  # frames kept for the plots
TIMELINE_FRAMES = 3  # complete frames in the Gantt
MAX_FOLDED = 64  # distinct errors / hazards kept; more are counted in "other"
CL_COMMANDS = ("acquire", "compute", "release")

# timeline rows and bar kinds (the panel colours by kind, the trace export names tracks by row)
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
        self.data = np.full((len(SERIES), n), np.nan, np.float64)
        self.frames = np.zeros(n, np.int64)
        self.count = 0
        self._stats: dict | None = None

    def push(self, rec, next_rec=None) -> None:
        i = self.count % self.n
        col = self.data[:, i]
        for k, name in enumerate(SERIES[:-1]):
            span = rec.phases.get(name)
            col[k] = (span[1] - span[0]) / 1e6 if span else np.nan
        col[-1] = frame_ms(rec, next_rec)
        self.frames[i] = rec.index
        self.count += 1
        self._stats = None

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """(frame indices, data[series, frame]) oldest first; copies, safe to hand out."""
        if self.count < self.n:
            return self.frames[: self.count].copy(), self.data[:, : self.count].copy()
        i = self.count % self.n
        return (np.concatenate((self.frames[i:], self.frames[:i])),
                np.concatenate((self.data[:, i:], self.data[:, :i]), axis=1))

    def stats(self) -> dict[str, tuple[float, float]]:
        """{series: (median, p95)} in ms over the ring (NaN-free; 0 when empty)."""
        if self._stats is None:
            m = min(self.count, self.n)
            out = {}
            if m:
                with np.errstate(all="ignore"):
                    q = np.nanpercentile(self.data[:, :m], [50, 95], axis=1)
                for k, name in enumerate(SERIES):
                    med, p95 = q[0, k], q[1, k]
                    out[name] = (float(med) if med == med else 0.0, float(p95) if p95 == p95 else 0.0)
            else:
                out = {name: (0.0, 0.0) for name in SERIES}
            self._stats = out
        return self._stats


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


def frame_bars(rec, clock) -> list[tuple]:
    """One frame's timeline on the host clock: (row, kind, start_ns, end_ns, name, frame) tuples.

    CPU phases and waits as recorded; each CL command as three segments queued -> submit,
    submit -> start, start -> end (device time mapped by ``clock``); GL passes from timer queries.
    """
    f = rec.index
    bars = [(ROW_CPU, KIND_PHASE, s, e, name, f) for name, (s, e) in rec.phases.items()]
    bars += [(ROW_WAIT, KIND_WAIT, s, e, name, f) for name, s, e in rec.waits]
    off = clock.cl.offset if clock is not None else 0
    for name, (q, sub, st, en) in rec.cl_profile.items():
        bars.append((ROW_CL, KIND_QUEUED, q + off, sub + off, name, f))
        bars.append((ROW_CL, KIND_SUBMITTED, sub + off, st + off, name, f))
        bars.append((ROW_CL, KIND_RUN, st + off, en + off, name, f))
    goff = clock.gl.offset if clock is not None else 0
    bars += [(ROW_GL, KIND_GL, s + goff, e + goff, name, f) for name, s, e in rec.gl_passes]
    return bars


class PanelData:
    """Keeps what the panel shows between frames; ``update(runtime)`` returns the new keys."""

    def __init__(self) -> None:
        self.history = PhaseHistory()
        self.errors = Folder()
        self.hazards = Folder()
        self._last_index = -1
        self._loop_errors_seen = 0
        self._caps: dict | None = None
        self._caps_key = None
        self._timeline_key = None
        self._timeline: dict = {}
        self._yuv: bool | None = None

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

    def _ingest_loop_errors(self, loop_errors: list) -> None:
        for err in loop_errors[self._loop_errors_seen:]:
            self.errors.add_error(err)
        self._loop_errors_seen = len(loop_errors)

    # -- pieces --------------------------------------------------------------------------------
    def timing(self) -> dict:
        frames, data = self.history.ordered()
        data = np.nan_to_num(data, nan=0.0)  # a missing phase plots as 0 (ImPlot draws NaN as a jump)
        return {"frames": frames.astype(np.float64), "series": {name: data[k] for k, name in enumerate(SERIES)},
                "stats": self.history.stats(), "count": int(data.shape[1])}

    def timeline(self, records, scheduler, clock, n: int = TIMELINE_FRAMES) -> dict:
        """The last ``n`` frames whose CL profile and GL timer results are all in, on one clock (ms
        from the first one's start). Rebuilt only when that set of frames changes."""
        gl_pending = scheduler.gl_timer.oldest_pending_frame if scheduler is not None else None
        chosen = []
        for rec in reversed(records):
            if rec.events or (gl_pending is not None and rec.index >= gl_pending):
                continue
            chosen.append(rec)
            if len(chosen) == n:
                break
        chosen.reverse()
        key = tuple(r.index for r in chosen)
        if key == self._timeline_key:
            return self._timeline
        bars = [b for r in chosen for b in frame_bars(r, clock)]
        if not bars:
            self._timeline_key, self._timeline = key, {"bars": [], "frames": [], "span_ms": 0.0, "rows": ROWS}
            return self._timeline
        t0 = min(r.start_ns for r in chosen)
        t1 = max(b[3] for b in bars)
        out_bars = [(row, kind, (s - t0) / 1e6, (e - t0) / 1e6, name, f) for row, kind, s, e, name, f in bars]
        frames = [(r.index, (r.start_ns - t0) / 1e6) for r in chosen]
        self._timeline_key = key
        self._timeline = {"bars": out_bars, "frames": frames, "span_ms": max((t1 - t0) / 1e6, 1e-3), "rows": ROWS,
                          "has_gl": any(r.gl_passes for r in chosen), "has_cl": any(r.cl_profile for r in chosen)}
        return self._timeline

    @staticmethod
    def ownership(backend, scheduler) -> list[dict]:
        """Each shared object: GL, CL, or in transition (its acquire / release enqueued, not complete)."""
        if backend is None:
            return []
        rows = backend.tracker.snapshot()
        rec = None
        if scheduler is not None:
            rec = scheduler.current or (scheduler.records[-1] if scheduler.records else None)
        pending = {}
        if rec is not None:
            import pyopencl as cl

            for name in ("acquire", "release"):
                ev = rec.events.get(name)
                if ev is not None:
                    try:
                        pending[name] = ev.command_execution_status != cl.command_execution_status.COMPLETE
                    except Exception:  # noqa: BLE001 - a bad event is shown as settled, never raised
                        pending[name] = False
        for row in rows:
            state = row["owner"].upper()
            if row["owner"] == "cl" and pending.get("acquire"):
                state = "GL -> CL"
            elif row["owner"] == "gl" and pending.get("release"):
                state = "CL -> GL"
            row["state"] = state
        return rows

    def caps(self, rt) -> dict:
        """Platform, device, GL, sharing extensions and every backend's verdict (cached per set-up)."""
        key = (rt.backend_name, rt.cfg.sync, rt.cfg.scene)
        if self._caps is not None and key == self._caps_key:
            return self._caps
        from app.config import SYNC_MODES
        from app.info import CL_SHARING_EXTENSIONS

        choice = rt.choice
        cl_exts = set(choice.device.extensions.split()) | set(choice.platform.extensions.split())
        info = rt.gl_info.as_dict()
        backend = rt.backend
        sync = []
        for mode in SYNC_MODES:
            reason = backend.sync_unavailable_reason(mode) if backend is not None else "no backend"
            sync.append({"name": mode, "available": not reason, "reason": reason or ""})
        timer = rt.scheduler.gl_timer if rt.scheduler is not None else None
        self._caps_key = key
        self._caps = {
            "platform": f"{choice.platform.name.strip()} ({choice.platform.version.strip()})",
            "device": f"{choice.device.name.strip()} ({choice.device.version.strip()})",
            "gl": f"{info['renderer']} | {info['version']}",
            "gl_vendor": info["vendor"],
            "surface": getattr(rt.surface, "label", rt.surface.kind),
            "cl_extensions": [(e, e in cl_exts) for e in CL_SHARING_EXTENSIONS],
            "gl_extensions": list(info["sharing_extensions"].items()),
            "backends": rt.registry.as_list(),
            "chosen": rt.backend_name,
            "sync": sync,
            "gl_timer": "on" if timer is not None and timer.enabled else (timer.reason if timer else "off"),
        }
        return self._caps

    def controls(self, rt) -> dict:
        from app.config import SCENES

        if self._yuv is None:
            self._yuv = rt._yuv_available()
        caps = self.caps(rt)
        if rt.cfg.scene == "particles":
            sizes = [str(n) for n in (4096, 16384, 65536, 262144, 1048576)]
            current = str(rt.cfg.particle_count)
        else:
            sizes = ["window", "256x256", "512x512", "1024x1024", "2048x2048"]
            current = f"{rt.cfg.size[0]}x{rt.cfg.size[1]}" if isinstance(rt.cfg.size, tuple) else "window"
        if current not in sizes:
            sizes.insert(0, current)
        return {"scenes": [s for s in SCENES if s != "yuv" or self._yuv],
                "backends": [(b["name"], b["available"], b["reason"]) for b in caps["backends"]],
                "syncs": [(s["name"], s["available"], s["reason"]) for s in caps["sync"]],
                "sizes": sizes, "size": current, "vsync": bool(rt.cfg.vsync),
                "headless": rt.surface.kind == "headless"}

    # -- all of it -----------------------------------------------------------------------------
    def update(self, rt) -> dict:
        """The panel's keys of ``Runtime.snapshot()``. Never raises for a record it cannot read."""
        scheduler = rt.scheduler
        records = scheduler.records if scheduler is not None else ()
        clock = getattr(rt, "clock", None)
        self._ingest(records, clock)
        self._ingest_loop_errors(rt.loop_errors)
        return {
            "timing": self.timing(),
            "timeline": self.timeline(records, scheduler, clock),
            "clock": clock.as_dict() if clock is not None else {},
            "ownership": self.ownership(rt.backend, scheduler),
            "errors": self.errors.as_list(),
            "errors_total": self.errors.total,
            "errors_other": self.errors.other,
            "hazards": self.hazards.as_list(),
            "hazards_total": self.hazards.total,
            "caps": self.caps(rt),
            "controls": self.controls(rt),
            "gl_timer": {"timed": scheduler.gl_timer.timed, "dropped": scheduler.gl_timer.dropped}
            if scheduler is not None else {},
        }
