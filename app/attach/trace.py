"""The Chrome trace-event JSON of an attached program (``--trace``), for Perfetto: the same
format and names as glshare's own trace (``app/trace/chrome.py``), one Perfetto process per
recorded process:

- ``CPU thread <tid>``: each recorded call from its call record to its ret (``args``: call id,
  site, status, frame); a GL call without a ret (the library writes none for a void call that waits
  for nothing) is an instant at its issue, and the call the process died in an instant ``died in <fn>``;
- ``CL queue <handle>``: each command's execution from its device START to END stamps, put on the
  CPU clock (``app/attach/timeline.py``), raw stamps in ``args``; a queue without stamps has none;
- ``owner <object>``: who owns each shared object over time (``app/schedule/owners.py``'s
  intervals, named as in glshare's trace: GL, CL, GL -> CL, CL -> GL), its findings as instants;
- ``frames``: one slice per frame, swap to swap.

Times: ``ts`` in microseconds from the first record, CLOCK_MONOTONIC."""
from __future__ import annotations

import json

from app.attach.model import ProcessModel
from app.attach.timeline import Timeline, host_stamps
from app.outputs import write_text
from app.trace.chrome import NAMES

TID_FRAMES = 3_000_000  # above any thread id the records carry (their gettid)
TID_QUEUE_BASE = 1_000_000
TID_OWNER_BASE = 2_000_000


def _meta(pid: int, tid: int, name: str, sort: int) -> list[dict]:
    return [{"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}},
            {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": sort}}]


class _Events:
    def __init__(self, base_ns: int) -> None:
        self.base, self.events = base_ns, []

    def us(self, t_ns: int) -> float:
        return round((t_ns - self.base) / 1e3, 3)

    def slice(self, pid: int, tid: int, name: str, cat: str, start_ns: int, end_ns: int, args: dict) -> None:
        ts = self.us(start_ns)
        self.events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts,
                            "dur": round(self.us(max(end_ns, start_ns)) - ts, 3), "args": args})

    def instant(self, pid: int, tid: int, name: str, cat: str, t_ns: int, args: dict) -> None:
        self.events.append({"name": name, "cat": cat, "ph": "i", "s": "t", "pid": pid, "tid": tid,
                            "ts": self.us(t_ns), "args": args})


def _process(ev: _Events, model: ProcessModel, tl: Timeline, program: str) -> None:
    pid = model.pid
    ev.events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"{program} (pid {pid})"}})
    ev.events += _meta(pid, TID_FRAMES, "frames", 0)
    threads, queues, owners = {}, {}, {}
    died = {id(c) for c in model.unreturned()}
    for c in model.calls:
        if c.tid not in threads:
            threads[c.tid] = c.tid
            ev.events += _meta(pid, c.tid, f"CPU thread {c.tid}", 1 + len(threads))
        args = {"id": c.id, "src": c.src, "frame": c.frame, "site": c.site, "status": c.status}
        if c.ret is None:  # died in it, or a GL call its library writes no ret for (an instant at its issue)
            ev.instant(pid, c.tid, f"died in {c.fn}" if id(c) in died else c.fn, "ended" if id(c) in died else c.src,
                       c.t, args)
            continue
        ev.slice(pid, c.tid, c.fn, c.src, c.t, c.t_end, args)
        stamps = host_stamps(model, tl.clocks, c)
        if stamps is not None:
            q = c.rec.get("queue", "?")
            if q not in queues:
                queues[q] = TID_QUEUE_BASE + len(queues)
                ev.events += _meta(pid, queues[q], f"CL queue {q}", 100 + len(queues))
            ev.slice(pid, queues[q], c.fn.removeprefix("clEnqueue"), "cl.device", stamps[2], stamps[3],
                     {"id": c.id, "frame": c.frame, **{k: c.stamps.get(k) for k in ("queued", "submit", "start", "end")}})
    for iv in tl.owners:
        if iv.label not in owners:
            owners[iv.label] = TID_OWNER_BASE + len(owners)
            ev.events += _meta(pid, owners[iv.label], f"owner {iv.label}", 200 + len(owners))
        ev.slice(pid, owners[iv.label], iv.state, "owner", iv.start_ns, iv.end_ns,
                 {"object": iv.label, "source": iv.source, "note": iv.note})
    for f in model.findings + tl.races:
        call = model.by_id.get(("cl", f.call_id)) if f.fn.startswith("cl") else model.by_id.get(("gl", f.call_id))
        t = call.t if call is not None else model.calls[0].t
        tid = owners.get(f.object, call.tid if call is not None else TID_FRAMES)
        ev.instant(pid, tid, f"finding {f.case}", "finding", t, f.as_dict())
    start = model.calls[0].t if model.calls else None
    for swap in model.swaps:  # the swap ends its frame (Call.frame: the swaps before it)
        ev.slice(pid, TID_FRAMES, f"frame {swap.frame}", "frame", start, swap.t_end or swap.t, {"frame": swap.frame})
        start = swap.t_end or swap.t


def build_trace(models: dict[int, ProcessModel], timelines: dict[int, Timeline], program: str,
                other: dict | None = None) -> dict:
    first = [m.calls[0].t for m in models.values() if m.calls]
    ev = _Events(min(first) if first else 0)
    for pid, model in models.items():
        _process(ev, model, timelines[pid], program)
    data = {"names": {"owners": NAMES["owners"]}, "time_base": "ts = (CLOCK_MONOTONIC ns - first call) / 1000",
            **(other or {})}
    return {"traceEvents": ev.events, "displayTimeUnit": "ms", "otherData": data}


def write_trace(path, trace: dict) -> str:
    return write_text(path, json.dumps(trace, separators=(",", ":"), default=str))
