"""The Chrome trace-event JSON of a run (``--trace PATH``, the panel's "write trace"), for Perfetto.

Format: the JSON object form of Google's Trace Event Format, which ui.perfetto.dev and
chrome://tracing both open. One process ("glshare"), one track (tid) per timeline, as the panel's
timeline has one lane each:

- ``CPU main thread``: a ``frame N`` slice around each frame, the host phases inside it named for
  the CPU's calls (``enqueue acquire``, ``enqueue kernel``, ``enqueue release + wait``, ``render
  (GL calls)``, ``panel (UI drawn)``: app/trace/names.py) and the CPU waits (glFinish, clFinish, ...)
  inside those; the errors recorded on a frame as instant events where their phase ran;
- ``CL queue <backend>``: one per backend, across its rebuilds (each set-up makes its own queue,
  ``args.segment`` says which): the device's execution of the CL commands, ``acquire command``,
  ``kernel``, ``release command``, from their
  start to end stamps, with the raw device stamps (queued, submit, start, end, ns) in ``args``
  (submit is read in runs that record a trace, ``--trace``; null in a trace written from the panel
  of a run without it); the queued -> start wait of each command is an async slice (``ph`` b/e) named
  ``<command> queued`` beside it;
- ``GL``: the GL passes (``gl render``, ``gl panel``) from GL_TIMESTAMP queries, raw GL ns in ``args``;
- ``owner <object>``: one per shared object, who owns it over time (slices named ``GL``, ``CL``,
  ``GL -> CL``, ``CL -> GL``: app/schedule/owners.py's intervals, from the commands' device stamps
  where there are some, continuous from frame to frame: one after the other, never overlapping;
  ``args.source`` says "device", "device (batch)" or "cpu" and ``args.note`` why), and the
  hazards flagged on it as instant events; a race seen in the stamps (app/schedule/races.py) is
  one at the start of the overlap, with both intervals in ``args``;
- counters ``frame time`` (ms, present to present: ``FrameRecord.period_ns``, sampled at the
  previous present so that each value spans the frame it measures; a frame without a period, the
  first or one after a pause or a step, has no sample) and ``bytes moved`` (per frame);
  switches of scene, backend, sync mode or size as global instant events, and so are the hand-backs
  (release calls made between frames for acquisitions a skipped release left).

Perfetto colours a slice by its name (it ignores ``cname``, which is not written): GL and CL are
kept apart by their tracks and names. ``otherData.findings`` holds every error and finding of the
run folded (case, object, where, first and last frame, count), kept frames or not, and the races'
check (``frames_checked``, what the stamps ``cannot_see``).

Every track's complete slices are nested or disjoint (Perfetto drops a slice that overlaps another
without nesting): times are rounded to the nanosecond at both ends, and a slice's ``dur`` is the
difference of its rounded ends.

Slices are complete events (``ph: "X"``, ``ts``/``dur`` in microseconds from the first frame's
start, on the host clock: CL and GL time are mapped there by app/schedule/clock.py, whose calibration
is written in ``otherData.clock``). Every event's ``args`` holds its ``frame``. Flow events
(``ph`` s/f, ``bp: "e"``) are the frame's links (app/schedule/flows.py, the links the panel's
timeline draws): each CL command from the CPU call that enqueued it (``enqueue kernel -> kernel``,
leaving the call at the command's QUEUED stamp), and the hand-overs: a CL release to the GL pass
that uses the released objects, a CPU wait before acquire (glFinish: GL's work done) to the CL
acquire it orders, and a CL release to the CPU wait after it (clFinish) that waits for it.
"""
from __future__ import annotations

import json
import logging

from app.outputs import write_text
from app.schedule.clock import ClockMap
from app.schedule.flows import COMMAND, ENQUEUE, PASS, PHASE, WAIT, frame_flows
from app.schedule.owners import CL, GL, TO_CL, TO_GL, WHERE_PHASE, owner_timeline
from app.schedule.races import RaceFlag
from app.trace.names import CPU_NAMES, cpu_name, device_name

log = logging.getLogger(__name__)

PID = 1
TID_CPU = 1
TID_GL = 2
TID_CL_BASE = 10
TID_OWNER_BASE = 100
CL_COMMANDS = ("acquire", "compute", "release")
EPS_US = 0.001  # 1 ns: a flow end strictly inside the slice it binds to


# what the slices' names mean (``otherData.names``)
NAMES = {"cpu phases": CPU_NAMES, "cl commands (device)": {"acquire command": "the acquire's execution",
                                                           "kernel": "the kernel's execution",
                                                           "release command": "the release's execution"},
         "owners": {GL: "GL owns it", CL: "CL owns it", TO_CL: "hand-over GL -> CL (the acquire's execution)",
                    TO_GL: "hand-over CL -> GL (the release's execution and GL's wait on it)"}}


def _us(t_ns: int, base_ns: int) -> float:
    return round((t_ns - base_ns) / 1e3, 3)


def _meta(tid: int, name: str, sort: int) -> list[dict]:
    return [{"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": name}},
            {"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": sort}}]


def _x(name: str, cat: str, tid: int, ts: float, dur: float, args: dict) -> dict:
    """A complete slice; ``ts`` and ``ts + dur`` rounded to the nanosecond each, ``dur`` their difference."""
    end = round(ts + max(dur, 0.0), 3)
    return {"name": name, "cat": cat, "ph": "X", "pid": PID, "tid": tid, "ts": ts, "dur": round(end - ts, 3),
            "args": args}


def _instant(name: str, cat: str, tid: int | None, ts: float, args: dict, scope: str = "t") -> dict:
    ev = {"name": name, "cat": cat, "ph": "i", "s": scope, "pid": PID, "ts": ts, "args": args}
    if tid is not None:
        ev["tid"] = tid
    return ev


def _phase_mid(rec, where: str) -> int:
    """Host ns in the middle of the phase a hazard's or an error's ``where`` names (the frame's
    start when it names none)."""
    span = rec.phases.get(WHERE_PHASE.get(where.removeprefix("profile "), ""))
    return (span[0] + span[1]) // 2 if span else rec.start_ns


def _inside(ts: float, dur: float, at_end: bool) -> float:
    """A time strictly inside the slice [ts, ts + dur] (its end, or its start), for flow binding."""
    if dur <= 2 * EPS_US:
        return round(ts + dur / 2, 4)
    return round(ts + dur - EPS_US if at_end else ts + EPS_US, 4)


class _Flows:
    def __init__(self) -> None:
        self.next_id = 1
        self.events: list[dict] = []

    def link(self, name: str, src: dict, dst: dict, frame: int, src_ts: float | None = None) -> None:
        """An arrow from slice ``src`` (its end, or ``src_ts`` held inside it) to slice ``dst`` (start,
        or end for a wait that ends there)."""
        fid = self.next_id
        self.next_id += 1
        end_ts = _inside(src["ts"], src["dur"], at_end=True)
        src_ts = end_ts if src_ts is None else min(max(src_ts, _inside(src["ts"], src["dur"], at_end=False)), end_ts)
        dst_ts = max(_inside(dst["ts"], dst["dur"], at_end=dst.get("cat") == "cpu.wait"), src_ts)
        if dst_ts > dst["ts"] + dst["dur"]:  # clocks disagree by more than the slice: bind at its end
            dst_ts = _inside(dst["ts"], dst["dur"], at_end=True)
        common = {"name": name, "cat": "flow", "id": fid, "pid": PID, "args": {"frame": frame}}
        self.events.append({**common, "ph": "s", "tid": src["tid"], "ts": src_ts})
        self.events.append({**common, "ph": "f", "bp": "e", "tid": dst["tid"], "ts": dst_ts})


def build_trace(records: list, clock: ClockMap | None, meta: dict | None = None) -> dict:
    """The trace-event object for ``records`` (FrameRecords, oldest first); ``meta["switches"]``
    (RunHistory.switches) and ``meta["hand_backs"]`` (RunHistory.hand_backs) become instant events
    on the first kept frame at or after theirs. Reads ``clock`` and changes nothing: the records'
    own stamps were observed once, when they were harvested (RunHistory.on_harvested)."""
    clock = clock or ClockMap()
    events: list[dict] = [{"ph": "M", "pid": PID, "name": "process_name", "args": {"name": "glshare"}}]
    events += _meta(TID_CPU, "CPU main thread", 0)
    events += _meta(TID_GL, "GL", 1)
    other = {**(meta or {}), "clock": clock.as_dict(), "names": NAMES}
    if not records:
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}
    trace = _Trace(events, min(r.start_ns for r in records), clock)
    for rec in records:
        trace.add_frame(rec)
    for iv in owner_timeline(records, trace.cl_off):  # one continuous timeline per object, over the frames
        events.append(_x(iv.state, "owner", trace.owner_tids[iv.label], trace.us(iv.start_ns), iv.us,
                         {"frame": iv.frame, "object": iv.label, "source": iv.source, "note": iv.note}))
    events += _run_instants(records, meta or {}, trace.base)
    events += trace.flows.events
    other.update({"frames": len(records), "time_base": "ts = (perf_counter_ns - first frame start) / 1000"})
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


class _Trace:
    """The events of the frames, appended frame by frame to ``events``: each frame's CPU, CL and GL
    slices, its hazards and errors, and the flows of its hand-overs (``flows``)."""

    def __init__(self, events: list[dict], base: int, clock: ClockMap) -> None:
        self.events, self.base = events, base
        self.cl_off, self.gl_off = clock.cl.offset, clock.gl.offset
        self.queue_tids: dict[str, int] = {}
        self.owner_tids: dict[str, int] = {}
        self.flows = _Flows()
        self.async_id = 1

    def us(self, t_ns: int) -> float:
        return _us(t_ns, self.base)

    def add_frame(self, rec) -> None:
        cl_tid = self._tracks(rec)
        self._frame(rec)
        cpu_ev = self._cpu(rec)
        cl_ev = self._cl(rec, cl_tid)
        gl_ev = {}
        for name, s, e in rec.gl_passes:
            ev = _x(name, "gl", TID_GL, self.us(s + self.gl_off), (e - s) / 1e3,
                    {"frame": rec.index, "gl_start_ns": s, "gl_end_ns": e})
            gl_ev.setdefault(name, ev)
            self.events.append(ev)
        self._flags(rec)
        self._flows(rec, cpu_ev, cl_ev, gl_ev)

    def _tracks(self, rec) -> int:
        """The record's CL queue track and its objects' owner tracks, named at their first frame; the
        queue's tid."""
        if rec.backend not in self.queue_tids:  # one track per backend: its rebuilt queues follow each other
            tid = self.queue_tids[rec.backend] = TID_CL_BASE + len(self.queue_tids)
            self.events.extend(_meta(tid, f"CL queue {rec.backend}", 2 + len(self.queue_tids)))
        for label in rec.owner_labels:
            if label not in self.owner_tids:
                tid = self.owner_tids[label] = TID_OWNER_BASE + len(self.owner_tids)
                self.events.extend(_meta(tid, f"owner {label}", 50 + len(self.owner_tids)))
        return self.queue_tids[rec.backend]

    def _frame(self, rec) -> None:
        """The ``frame N`` slice and the frame's counters."""
        f = rec.index
        end_ns = max([rec.end_ns] + [s[1] for s in rec.phases.values()])
        self.events.append(_x(f"frame {f}", "cpu.frame", TID_CPU, self.us(rec.start_ns), (end_ns - rec.start_ns) / 1e3,
                              {"frame": f, "scene": rec.scene, "backend": rec.backend, "sync": rec.sync,
                               "bytes_moved": rec.bytes_moved, "stepped": rec.stepped, "frame_us": rec.frame_us,
                               "cl_unstamped": list(rec.unstamped),  # commands the driver gave no device stamps
                               # False: not timed (no CL or GL slices for it: frames shorter than
                               # --stamps-ms are timed one per interval; a run with --trace times every frame)
                               "sampled": rec.sampled}))
        if rec.frame_us is not None:
            self.events.append({"name": "frame time", "ph": "C", "pid": PID,
                                "ts": max(self.us(rec.presented_ns - rec.period_ns), 0.0),
                                "args": {"ms": round(rec.period_ns / 1e6, 4)}})
        self.events.append({"name": "bytes moved", "ph": "C", "pid": PID, "ts": self.us(rec.start_ns),
                            "args": {"bytes": rec.bytes_moved}})

    def _cpu(self, rec) -> dict[tuple[str, str, int], dict]:
        """The host phases, the CPU waits and the bookkeeping; the phases' and the waits' slices by
        (row, name, host start ns): app/schedule/flows.py's ends."""
        f, slices = rec.index, {}
        for name, (s, e) in rec.phases.items():
            slices[(PHASE, name, s)] = ev = _x(cpu_name(name), "cpu.phase", TID_CPU, self.us(s), (e - s) / 1e3,
                                               {"frame": f, "phase": name})
            self.events.append(ev)
        for name, s, e in rec.waits:
            slices[(WAIT, name, s)] = ev = _x(name, "cpu.wait", TID_CPU, self.us(s), (e - s) / 1e3, {"frame": f})
            self.events.append(ev)
        for name, s, e in rec.bookkeeping:  # glshare's reads of earlier frames' stamps, inside a wait's window
            self.events.append(_x(name, "cpu.bookkeeping", TID_CPU, self.us(s), (e - s) / 1e3, {"frame": f}))
        return slices

    def _cl(self, rec, cl_tid: int) -> dict[str, dict]:
        """The CL commands' slices from their device stamps, each with its queued -> start wait; by command."""
        f, cl_off = rec.index, self.cl_off
        cl_ev = {}
        for name, (q, sub, st, en) in rec.cl_profile.items():
            args = {"frame": f, "command": name, "segment": rec.segment, "queued_ns": q, "submit_ns": sub,
                    "start_ns": st, "end_ns": en, "queued_to_start_us": round((st - q) / 1e3, 3)}
            cl_ev[name] = ev = _x(device_name(name), "cl", cl_tid, self.us(st + cl_off), (en - st) / 1e3, args)
            self.events.append(ev)
            wait_common = {"name": f"{device_name(name)} queued", "cat": "cl.queued", "id": self.async_id,
                           "pid": PID, "tid": cl_tid}
            self.async_id += 1
            self.events.append({**wait_common, "ph": "b", "ts": self.us(q + cl_off),
                                "args": {"frame": f, "queued_ns": q, "submit_ns": sub}})
            self.events.append({**wait_common, "ph": "e", "ts": self.us(max(st, q) + cl_off), "args": {"frame": f}})
        return cl_ev

    def _flags(self, rec) -> None:
        """The frame's hazards (on their object's track) and errors, as instant events."""
        f = rec.index
        for flag in rec.hazards:
            race = flag.as_dict if isinstance(flag, RaceFlag) else None  # seen in the stamps: at the overlap's start
            at = max(flag.gl_ns[0], flag.cl_ns[0]) if race is not None else _phase_mid(rec, flag.where)
            self.events.append(_instant(f"hazard {flag.case}", "hazard", self.owner_tids.get(flag.label, TID_CPU),
                                        self.us(at),
                                        {"frame": f, "case": flag.case, "object": flag.label, "where": flag.where,
                                         "spec": flag.spec, **({"race": race()} if race is not None else {})}))
        for err in rec.errors:
            self.events.append(_instant(f"error {err.name}", "error", TID_CPU, self.us(_phase_mid(rec, err.where)),
                                        {**err.as_dict()}))

    def _flows(self, rec, cpu_ev: dict, cl_ev: dict, gl_ev: dict) -> None:
        """The frame's links (app/schedule/flows.py, as the panel draws them): each CL command from
        the CPU call that enqueued it (leaving it at the command's QUEUED stamp), and the hand-overs."""
        for flow in frame_flows(rec, self.cl_off, self.gl_off):
            src, dst = (self._slice(end, cpu_ev, cl_ev, gl_ev) for end in (flow.src, flow.dst))
            if src is not None and dst is not None:
                self.flows.link(flow.name, src, dst, rec.index,
                                self.us(flow.from_ns) if flow.kind == ENQUEUE else None)

    def _slice(self, end, cpu_ev: dict, cl_ev: dict, gl_ev: dict) -> dict | None:
        """The slice of a link's end."""
        if end.row == COMMAND:
            return cl_ev.get(end.name)
        if end.row == PASS:
            return gl_ev.get(end.name)
        return cpu_ev.get((end.row, end.name, end.start_ns))  # (phases and waits: host ns as recorded)


def _run_instants(records: list, meta: dict, base: int) -> list[dict]:
    """The switches and the hand-backs as global instant events, each on the first kept record at or
    after its frame (none where no such frame was kept)."""
    events = []

    def at_frame(item: dict):
        return next((r for r in records if r.index >= item.get("frame", 0)), None)

    for sw in meta.get("switches", ()):
        if (at := at_frame(sw)) is None:
            continue
        old = " / ".join(str(v) for v in (sw.get("from") or {}).values())
        new = " / ".join(str(v) for v in (sw.get("to") or {}).values())
        events.append(_instant(f"switch {sw.get('what', '')}: {old} -> {new}", "switch", None,
                               _us(at.start_ns, base), {"frame": sw.get("frame"), **sw}, scope="g"))
    for hb in meta.get("hand_backs", ()):
        if (at := at_frame(hb)) is None:
            continue
        events.append(_instant(f"hand back: {hb.get('calls')} release call(s) ({hb.get('why', '')})", "handback",
                               None, _us(at.start_ns, base), dict(hb), scope="g"))
    return events


def write_trace(path, records: list, clock: ClockMap | None, meta: dict) -> str:
    """Write the trace of ``records`` (every record kept, all set-ups) to ``path``."""
    if clock is not None:
        try:
            clock.calibrate_gl(3)  # one more bracket: GL drift since the start shows as resets
        except Exception as exc:  # noqa: BLE001
            log.debug("GL re-calibration failed: %s", exc)
    trace = build_trace(records, clock, meta)
    return write_text(path, json.dumps(trace, separators=(",", ":"), default=str))
