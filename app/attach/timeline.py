"""An attached program's time: device stamps put on the CPU clock, and its hand-overs laid out as
glshare's frame records so that ownership (``app/schedule/owners.py``) and races
(``app/schedule/races.py``) come from the same code as for glshare's scenes.

Clock. Every record's ``t`` is CLOCK_MONOTONIC. A command's ``CL_PROFILING_COMMAND_QUEUED`` stamp
is taken by the driver inside the enqueue call (OpenCL 3.0, 5.14: "when the command identified by
event is enqueued in a command-queue by the host"), so the call's ``t`` and its ret's ``t`` bracket
it: one reading per stamped command, as glshare's own ``observe_frame`` does, intersected by
``app/schedule/clock.py``'s ``OffsetEstimate`` per device (its uncertainty is half the interval).
A ``clock`` record (clGetDeviceAndHostTimer) is used for a device no bracket reached, where its host
reading is within a second of the record's ``t`` (the same clock); otherwise the device's
commands keep no host time and the report says so.

Hand-overs. One *bracket* per acquire that went through: the acquire, the CL commands that used
its objects, the release, the CPU waits between the release and GL's first use (clFinish,
clWaitForEvents, glFinish, glClientWaitSync) and the GL calls that used the objects after the
release and before the next acquire. Each bracket is one ``FrameRecord`` (phases acquire, compute,
release, render on the CPU clock; ``cl_profile`` its commands' stamps already mapped, so the offset
passed on is 0); the brackets of one set of objects follow each other as one set-up does, so
``owner_timeline`` draws one continuous lane per object. GL calls stand where the CPU made them:
the preload library reads no GL timer, so a GL "pass" is its call (its issue, before its
execution). A race of GL after CL's release is then GL issued before the release completed with no
wait between; a race of CL before GL's completion cannot be seen (GL's completion is not recorded).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from app.attach.model import (
    COPIES,
    CPU_WAITS,
    HAND_OVERS,
    KERNELS,
    SWAPS,
    Call,
    Finding,
    ProcessModel,
    gl_use,
)
from app.attach.wire import handle
from app.schedule.clock import OffsetEstimate
from app.schedule.frame import FrameRecord
from app.schedule.owners import OwnerInterval, owner_timeline
from app.schedule.races import find_races

# OpenGL 4.6 core, "Flush and Finish": "Finish does not return until all effects from previously issued
# commands on GL client and server state and the framebuffer are fully realized."
GL_COMPLETE = ("glFinish",)
CLOCK_SAME_NS = 1_000_000_000  # a clock record's host reading this close to its ``t``: the same clock
GL_NOT_TIMED = ("GL calls at their CPU issue (the preload library reads no GL timer): a CL command started "
                "before GL's work on the object completed cannot be seen")


def device_of(model: ProcessModel, call: Call) -> int:
    """The device a CL call's command ran on (its queue's), else its queue's handle."""

    q = model.queues.get(handle(call.rec.get("queue")))
    return (q.device or q.int_ptr) if q is not None else handle(call.rec.get("queue"))


def _stamped(call: Call) -> bool:
    s = call.stamps
    return s is not None and "error" not in s and all(isinstance(s.get(k), int) for k in ("queued", "start", "end"))


@dataclass
class Clocks:
    """Per device: host_ns = device_ns + offset."""

    devices: dict[int, OffsetEstimate] = field(default_factory=dict)

    def to_host(self, device: int, device_ns: int) -> int | None:
        est = self.devices.get(device)
        return None if est is None or not est.known else est.to_host(device_ns)

    def uncertainty(self, device: int) -> int:
        est = self.devices.get(device)
        return est.uncertainty_ns if est is not None else 0

    def as_dict(self) -> dict:
        return {f"{dev:#x}": est.as_dict() for dev, est in self.devices.items()}


def map_clocks(model: ProcessModel) -> Clocks:
    clocks = Clocks()
    for call in model.calls:
        if _stamped(call) and call.ret is not None:
            dev = device_of(model, call)
            est = clocks.devices.setdefault(dev, OffsetEstimate(f"device {dev:#x}", method="queued stamp in the enqueue"))
            est.observe(call.t, call.ret["t"], call.stamps["queued"])
    for rec in model.clocks:
        dev = handle(rec.get("device"))
        if "error" in rec or dev in clocks.devices or not isinstance(rec.get("host_ns"), int):
            continue
        if abs(rec["host_ns"] - rec["t"]) < CLOCK_SAME_NS:
            est = clocks.devices[dev] = OffsetEstimate(f"device {dev:#x}", method="clGetDeviceAndHostTimer")
            est.observe(rec["host_ns"], rec["t"], rec["device_ns"])
    return clocks


def host_stamps(model: ProcessModel, clocks: Clocks, call: Call) -> tuple[int, int | None, int, int] | None:
    """(queued, submit, start, end) of the call's command on the host clock, or None."""
    if not _stamped(call):
        return None
    dev = device_of(model, call)
    s = call.stamps
    off = [clocks.to_host(dev, s[k]) if isinstance(s.get(k), int) else None for k in ("queued", "submit", "start", "end")]
    if off[0] is None:
        return None
    return off[0], off[1], off[2], off[3]


@dataclass
class Bracket:
    labels: tuple[str, ...]
    acquire: Call
    frame: int
    uses: list[Call] = field(default_factory=list)
    release: Call | None = None
    waits: list[Call] = field(default_factory=list)
    gl_uses: list[Call] = field(default_factory=list)


def brackets(model: ProcessModel) -> list[Bracket]:
    """Every acquire that went through, with what followed it (module docstring), in call order."""
    out: list[Bracket] = []
    current: dict[int, Bracket] = {}  # id(Mem) -> its newest bracket
    for call in model.calls:
        fn = call.fn
        if fn in HAND_OVERS and call.objects and call.status == 0:
            if HAND_OVERS[fn][1] == "acquire":
                b = Bracket(tuple(m.label for m in call.objects), call, call.frame)
                out.append(b)
                for m in call.objects:
                    current[id(m)] = b
            else:
                for b in {id(b): b for b in (current.get(id(m)) for m in call.objects) if b is not None}.values():
                    if b.release is None:
                        b.release = call
        elif fn in KERNELS or fn in COPIES:
            for b in _open(current, call, released=False):
                b.uses.append(call)
        elif gl_use(fn):
            for b in _open(current, call, released=True):
                b.gl_uses.append(call)
        elif fn in CPU_WAITS:
            for b in {id(b): b for b in current.values()}.values():
                if b.release is not None and not b.gl_uses:
                    b.waits.append(call)
    return out


def _open(current: dict[int, Bracket], call: Call, *, released: bool) -> list[Bracket]:
    found = {id(b): b for b in (current.get(id(m)) for m in call.objects) if b is not None}
    return [b for b in found.values() if (b.release is not None) == released]


def _span(calls: list[Call]) -> tuple[int, int] | None:
    ends = [c.t_end for c in calls if c.t_end is not None]
    return (calls[0].t, max(ends or [calls[-1].t])) if calls else None


def frame_record(model: ProcessModel, clocks: Clocks, b: Bracket, index: int, segment: int,
                 completions: tuple[list[int], list[int]] = ([], [])) -> FrameRecord:
    """The bracket as glshare's frame record (module docstring)."""
    rec = FrameRecord.begin(index, "attach", f"pid {model.pid}", "", segment)
    n = len(b.labels)
    rec.owner_labels = b.labels
    acq_end = b.acquire.t_end or b.acquire.t
    rec.phases["acquire"] = (b.acquire.t, acq_end)
    rec.owners = [("start", b.acquire.t, ("gl",) * n), ("acquire", acq_end, ("cl",) * n)]
    profile = {"acquire": host_stamps(model, clocks, b.acquire)}
    if b.uses:
        rec.phases["compute"] = _span(b.uses)
        rec.owners.append(("compute", rec.phases["compute"][1], ("cl",) * n))
        first, last = host_stamps(model, clocks, b.uses[0]), host_stamps(model, clocks, b.uses[-1])
        profile["compute"] = (first[0], first[1], first[2], last[3]) if first and last else None
    end = rec.phases.get("compute", rec.phases["acquire"])[1]
    if b.release is not None:
        rel_end = max([b.release.t_end or b.release.t] + [w.t_end or w.t for w in b.waits])
        rec.phases["release"] = (b.release.t, rel_end)
        rec.waits = [(w.fn, w.t, w.t_end or w.t) for w in b.waits]
        rec.owners.append(("release", rel_end, ("gl",) * n))
        profile["release"] = host_stamps(model, clocks, b.release)
        end = rel_end
    if b.gl_uses:
        rec.phases["render"] = _span(b.gl_uses)
        rec.gl_passes = [(f"{c.fn} #{c.id}", c.t, gl_done_by(c, completions)) for c in b.gl_uses]
        rec.owners.append(("render", rec.phases["render"][1], ("gl",) * n))
        end = max(end, rec.phases["render"][1])
    rec.cl_profile = {k: v for k, v in profile.items() if v is not None}
    rec.unstamped = tuple(k for k, v in profile.items() if v is None)
    rec.sampled = "acquire" in rec.cl_profile and ("release" in rec.cl_profile or b.release is None)
    rec.start_ns, rec.end_ns = b.acquire.t, end
    return rec


def gl_completions(model: ProcessModel) -> tuple[list[int], list[int]]:
    """(call t, ret t) of the process's glFinish calls and swaps, in call order: after a glFinish
    returned, the GL work issued before it is done; a swap ends the frame's GL calls."""
    done = [(c.t, c.ret["t"]) for c in model.calls if c.ret is not None and (c.fn in GL_COMPLETE or c.fn in SWAPS)]
    return [t for t, _ in done], [e for _, e in done]


def gl_done_by(call: Call, completions: tuple[list[int], list[int]]) -> int:
    """When a GL call's work was done at the latest, as far as the records tell: the return of the
    next glFinish or swap of its process after its issue, else its own return."""
    starts, ends = completions
    i = bisect.bisect_right(starts, call.t)
    return ends[i] if i < len(ends) else (call.t_end or call.t)


@dataclass
class Timeline:
    clocks: Clocks
    records: list[FrameRecord]  # one per bracket, grouped by set of objects (segment)
    owners: list[OwnerInterval]
    races: list[Finding]
    blind: dict[str, int]
    checked: int  # brackets whose stamps were checked for races


def build(model: ProcessModel) -> Timeline:
    clocks = map_clocks(model)
    completions = gl_completions(model)
    groups: dict[tuple[str, ...], list[Bracket]] = {}
    for b in brackets(model):
        groups.setdefault(b.labels, []).append(b)
    records, owners, races, blind, checked = [], [], [], {}, 0
    for segment, group in enumerate(groups.values()):
        recs = [frame_record(model, clocks, b, i, segment, completions) for i, b in enumerate(group)]
        records += recs
        owners += owner_timeline(recs, 0)
        prev = None
        for b, rec in zip(group, recs):
            unc = clocks.uncertainty(device_of(model, b.acquire))
            found = find_races(rec, prev, 0, 0, unc)
            prev = rec
            checked += found.checked and not found.blind
            for why in found.blind:
                blind[why] = blind.get(why, 0) + 1
            races += [_race_finding(model, b, flag) for flag in found.races]
    if records:
        blind[GL_NOT_TIMED] = len(records)
    return Timeline(clocks, records, owners, races, blind, checked)


def _race_finding(model: ProcessModel, b: Bracket, flag) -> Finding:
    gl_call = next((c for c in b.gl_uses if f"{c.fn} #{c.id}" == flag.gl_what), None)
    at = gl_call or b.release or b.acquire
    return Finding(flag.case, flag.kind, "races", model.pid, at.frame, at.fn, at.id, at.tid, at.site,
                   object=flag.label, spec=flag.spec, section=flag.source.where if flag.source else "",
                   detail=flag.reasoning, extra={"race": flag.as_dict()})
