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
        self._bars: dict[int, tuple] = {}  # frame index -> frame_bars(rec), for the frames shown
        self._controls_key = None
        self._controls: dict = {}

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
        frames, data = self.history.ordered()  # NaN (a missing phase) is a gap in ImPlot's line
        frames, data = frames[-PLOT_FRAMES:], data[:, -PLOT_FRAMES:]
        return {"frames": frames, "series": {name: data[k] for k, name in enumerate(SERIES)},
                "stats": self.history.stats(), "count": int(data.shape[1])}

    def timeline(self, records, scheduler, clock, n: int = TIMELINE_FRAMES) -> dict:
        """The last ``n`` frames whose CL profile and GL timer results are all in, on one clock (ms
        from the first one's start), as numpy arrays: row, kind, start, end, frame (+ names).
        Rebuilt only when that set of frames changes; each frame's bars are made once."""
        timer = scheduler.gl_timer if scheduler is not None else None
        gl_pending = timer.oldest_pending_frame if timer is not None else None
        every = timer.every if timer is not None and timer.enabled else 1
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

    @staticmethod
    def live_caps(rt) -> dict:
        """The capabilities that change within one set-up (the timer may turn itself off, the layer's
        copy path is known once it was composited): not cached with the others."""
        timer = rt.scheduler.gl_timer if rt.scheduler is not None else None
        overlay = getattr(rt, "overlay", None)
        return {"gl_timer": timer.sampling if timer is not None else "off",
                "panel_refresh": (f"{overlay.redraw_hz:g} Hz, composited by {overlay.composite_path}"
                                  if overlay is not None else "no panel")}

    def caps(self, rt) -> dict:
        """Platform, device, GL, sharing extensions and every backend's verdict (cached per set-up)."""
        key = (rt.backend_name, rt.cfg.sync, rt.cfg.scene)
        if self._caps is not None and key == self._caps_key:
            return self._caps
        from app.commands.info import CL_SHARING_EXTENSIONS
        from app.config import SYNC_MODES

        choice = rt.choice
        cl_exts = set(choice.device.extensions.split()) | set(choice.platform.extensions.split())
        info = rt.gl_info.as_dict()
        backend = rt.backend
        sync = []
        for mode in SYNC_MODES:
            reason = backend.sync_unavailable_reason(mode) if backend is not None else "no backend"
            sync.append({"name": mode, "available": not reason, "reason": reason or ""})
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

            "memory": self._memory(rt),
        }
        return self._caps

    @staticmethod
    def _memory(rt) -> dict:
        """The external-memory handle types (cl_khr_external_memory) and, on external_memory, the
        lifetime of the payload (exporter released, fds closed)."""
        from app.sharing.backends.external_memory import import_handle_types
        from app.sharing.backends.external_memory.handles import handle_table
        from app.sharing.backends.external_memory.lifetime import KMT_NOTE

        types = import_handle_types(rt.choice.device)
        lifetime = rt.backend.lifetime() if hasattr(rt.backend, "lifetime") else None
        return {"handle_types": handle_table(types), "import_types": [f"0x{t:04X}" for t in types or []],
                "lifetime": lifetime, "kmt_note": KMT_NOTE,
                "unavailable": rt.registry.probes["external_memory"].reason
                if not rt.registry.probes["external_memory"].available else ""}

    def controls(self, rt) -> dict:
        """The choices of the panel's combos (cached until the set-up or the size changes)."""
        from app.config import SCENES

        key = (rt.backend_name, rt.cfg.sync, rt.cfg.scene, rt.cfg.size, rt.cfg.vsync)
        if key == self._controls_key:
            return self._controls
        caps = self.caps(rt)
        if rt.cfg.scene == "particles":
            sizes = [str(n) for n in (4096, 16384, 65536, 262144, 1048576)]
            current = str(rt.cfg.particle_count)
        else:
            sizes = ["window", "256x256", "512x512", "1024x1024", "2048x2048"]
            current = f"{rt.cfg.size[0]}x{rt.cfg.size[1]}" if isinstance(rt.cfg.size, tuple) else "window"
        if current not in sizes:
            sizes.insert(0, current)
        self._controls_key = key
        self._controls = {"scenes": list(SCENES),
                "backends": [(b["name"], b["available"], b["reason"]) for b in caps["backends"]],
                "syncs": [(s["name"], s["available"], s["reason"]) for s in caps["sync"]],
                "sizes": sizes, "size": current, "vsync": bool(rt.cfg.vsync),
                "headless": rt.surface.kind == "headless"}
        return self._controls

    @staticmethod
    def extras(rt) -> dict:
        """The teaching and error-lab tabs' data, built only while the panel shows that tab
        (``panel_state.tab``) or teaching mode runs; absent pieces are simply left out."""
        out = {}
        stepper = getattr(rt, "stepper", None)
        active = bool(getattr(stepper, "active", False))
        out["teaching_active"] = active
        tab = getattr(rt.panel_state, "tab", "")
        if active or tab == "teach":
            try:
                from app.schedule.teach import teaching_snapshot

                out["teaching"] = teaching_snapshot(rt)
            except ImportError:
                pass
        demos = getattr(rt, "demos", None)
        if tab == "lab" and demos is not None:
            out["demos"] = demos.state(rt)
        lab = getattr(rt.panel_state, "lab_results", None)
        if tab == "lab" and lab is not None:
            out["lab"] = lab
        return out

    # -- all of it -----------------------------------------------------------------------------
    def update(self, rt) -> dict:
        """The panel's keys of ``Runtime.snapshot()`` (``Runtime._panel_snapshot`` catches any failure)."""
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
            "caps": self.caps(rt) | self.live_caps(rt),
            "controls": self.controls(rt),
            "gl_timer": {"timed": scheduler.gl_timer.timed, "dropped": scheduler.gl_timer.dropped}
            if scheduler is not None else {},
        } | self.extras(rt)
