"""The Chrome trace-event JSON of a run (``--trace PATH``, the panel's "write trace"), for Perfetto.

Format: the JSON object form of Google's Trace Event Format, which ui.perfetto.dev and
chrome://tracing both open. One process ("glshare"), one track (tid) per timeline:

- ``CPU main thread``: a ``frame N`` slice around each frame, the host phases (acquire, compute,
  release, render, panel) inside it and the CPU waits (glFinish, clFinish, ...) inside those;
- ``CL queue <backend> #k``: one per command queue (each backend set-up makes its own): the CL
  commands ``acquire``, ``compute``, ``release`` from their start to end stamps, with all four raw
  device stamps (queued, submit, start, end, ns) in ``args``; the queued -> start wait of each
  command is an async slice (``ph`` b/e) named ``<command> queued`` beside it;
- ``GL``: the GL passes (``gl render``, ``gl panel``) from GL_TIMESTAMP queries, raw GL ns in ``args``.

Slices are complete events (``ph: "X"``, ``ts``/``dur`` in microseconds from the first frame's
start, on the host clock: CL and GL time are mapped there by app/trace/clock.py, whose calibration
is written in ``otherData.clock``). Every event's ``args`` holds its ``frame``. Flow events
(``ph`` s/f, ``bp: "e"``) draw the hand-overs: a CL release to the GL pass that uses the released
objects, a CPU wait before acquire (glFinish: GL's work done) to the CL acquire it orders, and a
CL release to the CPU wait after it (clFinish) that waits for it.
"""
from __future__ import annotations

import json
import logging

from app.outputs import write_text
from app.trace.clock import ClockMap

log = logging.getLogger(__name__)

PID = 1
TID_CPU = 1
TID_GL = 2
TID_CL_BASE = 10
CL_COMMANDS = ("acquire", "compute", "release")
EPS_US = 0.001  # 1 ns: a flow end strictly inside the slice it binds to


def _us(t_ns: int, base_ns: int) -> float:
    return round((t_ns - base_ns) / 1e3, 3)


def _meta(tid: int, name: str, sort: int) -> list[dict]:
    return [{"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": name}},
            {"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": sort}}]


def _x(name: str, cat: str, tid: int, ts: float, dur: float, args: dict) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "pid": PID, "tid": tid, "ts": ts, "dur": max(round(dur, 3), 0.0),
            "args": args}


def _inside(ts: float, dur: float, at_end: bool) -> float:
    """A time strictly inside the slice [ts, ts + dur] (its end, or its start), for flow binding."""
    if dur <= 2 * EPS_US:
        return round(ts + dur / 2, 4)
    return round(ts + dur - EPS_US if at_end else ts + EPS_US, 4)


class _Flows:
    def __init__(self) -> None:
        self.next_id = 1
        self.events: list[dict] = []

    def link(self, name: str, src: dict, dst: dict, frame: int) -> None:
        """An arrow from the end of slice ``src`` to slice ``dst`` (start, or end for a wait that ends there)."""
        fid = self.next_id
        self.next_id += 1
        src_ts = _inside(src["ts"], src["dur"], at_end=True)
        dst_ts = max(_inside(dst["ts"], dst["dur"], at_end=dst.get("cat") == "cpu.wait"), src_ts)
        if dst_ts > dst["ts"] + dst["dur"]:  # clocks disagree by more than the slice: bind at its end
            dst_ts = _inside(dst["ts"], dst["dur"], at_end=True)
        common = {"name": name, "cat": "flow", "id": fid, "pid": PID, "args": {"frame": frame}}
        self.events.append({**common, "ph": "s", "tid": src["tid"], "ts": src_ts})
        self.events.append({**common, "ph": "f", "bp": "e", "tid": dst["tid"], "ts": dst_ts})


def build_trace(records: list, clock: ClockMap | None, meta: dict | None = None) -> dict:
    """The trace-event object for ``records`` (FrameRecords, oldest first)."""
    clock = clock or ClockMap()
    for rec in records:
        clock.observe_frame(rec)  # tighten the CL offset with every frame's queued stamps
    events: list[dict] = [{"ph": "M", "pid": PID, "name": "process_name", "args": {"name": "glshare"}}]
    events += _meta(TID_CPU, "CPU main thread", 0)
    events += _meta(TID_GL, "GL", 1)
    if not records:
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {**(meta or {}), "clock": clock.as_dict()}}
    base = min(r.start_ns for r in records)
    cl_off, gl_off = clock.cl.offset, clock.gl.offset
    queue_tids: dict[tuple, int] = {}
    flows = _Flows()
    async_id = 1
    for rec in records:
        qkey = (rec.segment, rec.backend)  # each set-up (segment) built its own queue
        if qkey not in queue_tids:
            tid = queue_tids[qkey] = TID_CL_BASE + len(queue_tids)
            events += _meta(tid, f"CL queue {rec.backend} #{len(queue_tids)}", 2 + len(queue_tids))
        cl_tid = queue_tids[qkey]
        f = rec.index
        end_ns = max([rec.end_ns] + [s[1] for s in rec.phases.values()])
        events.append(_x(f"frame {f}", "cpu.frame", TID_CPU, _us(rec.start_ns, base), (end_ns - rec.start_ns) / 1e3,
                         {"frame": f, "scene": rec.scene, "backend": rec.backend, "sync": rec.sync,
                          "bytes_moved": rec.bytes_moved}))
        phase_ev = {}
        for name, (s, e) in rec.phases.items():
            phase_ev[name] = ev = _x(name, "cpu.phase", TID_CPU, _us(s, base), (e - s) / 1e3, {"frame": f})
            events.append(ev)
        wait_ev = []
        for name, s, e in rec.waits:
            ev = _x(name, "cpu.wait", TID_CPU, _us(s, base), (e - s) / 1e3, {"frame": f})
            phase = next((p for p, (ps, pe) in rec.phases.items() if ps <= s and e <= pe), None)
            wait_ev.append((phase, ev))
            events.append(ev)
        cl_ev = {}
        for name, (q, sub, st, en) in rec.cl_profile.items():
            args = {"frame": f, "queued_ns": q, "submit_ns": sub, "start_ns": st, "end_ns": en,
                    "queued_to_start_us": round((st - q) / 1e3, 3)}
            cl_ev[name] = ev = _x(name, "cl", cl_tid, _us(st + cl_off, base), (en - st) / 1e3, args)
            events.append(ev)
            wait_common = {"name": f"{name} queued", "cat": "cl.queued", "id": async_id, "pid": PID, "tid": cl_tid}
            async_id += 1
            events.append({**wait_common, "ph": "b", "ts": _us(q + cl_off, base),
                           "args": {"frame": f, "queued_ns": q, "submit_ns": sub}})
            events.append({**wait_common, "ph": "e", "ts": _us(max(st, q) + cl_off, base), "args": {"frame": f}})
        gl_ev = {}
        for name, s, e in rec.gl_passes:
            ev = _x(name, "gl", TID_GL, _us(s + gl_off, base), (e - s) / 1e3, {"frame": f, "gl_start_ns": s, "gl_end_ns": e})
            gl_ev.setdefault(name, ev)
            events.append(ev)
        for err in rec.errors:
            events.append({"name": f"error {err.name}", "cat": "error", "ph": "i", "s": "t", "pid": PID,
                           "tid": TID_CPU, "ts": _us(rec.start_ns, base), "args": {**err.as_dict()}})
        # the hand-overs
        release = cl_ev.get("release")
        first_gl = gl_ev.get("gl render") or next(iter(gl_ev.values()), None)
        if release is not None and first_gl is not None:
            flows.link("release -> gl", release, first_gl, f)
        # the wait before the acquire orders GL before CL's first command of the frame: the acquire,
        # or the kernel when the acquire enqueued nothing (host_copy with nothing to copy in)
        first_cl = next((n for n in ("acquire", "compute") if n in cl_ev), None)
        for phase, ev in wait_ev:
            if phase == "acquire" and first_cl is not None:
                flows.link(f"{ev['name']} -> {first_cl}", ev, cl_ev[first_cl], f)
            elif phase == "release" and release is not None:
                flows.link(f"release -> {ev['name']}", release, ev, f)
            elif phase == "render" and first_gl is not None:
                flows.link(f"gl -> {ev['name']}", first_gl, ev, f)
    events += flows.events
    other = {**(meta or {}), "clock": clock.as_dict(), "frames": len(records),
             "time_base": "ts = (perf_counter_ns - first frame start) / 1000"}
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def write_trace(path, records: list, clock: ClockMap | None, meta: dict) -> str:
    """Write the trace of ``records`` (every record kept, all set-ups) to ``path``."""
    if clock is not None:
        try:
            clock.calibrate_gl(3)  # one more bracket: GL drift since the start shows as resets
        except Exception as exc:  # noqa: BLE001
            log.debug("GL re-calibration failed: %s", exc)
    trace = build_trace(records, clock, meta)
    return write_text(path, json.dumps(trace, separators=(",", ":"), default=str))
