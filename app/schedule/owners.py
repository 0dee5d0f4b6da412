"""Who owns each shared object over time, from the frame's stamps: one model for the panel's lanes,
the report and the trace.

An object changes hands at a boundary of the scheduler's frame (``FrameRecord.owners``, sampled
after each phase): GL -> CL in the acquire, CL -> GL in the release. Where the command that makes
the change was profiled (``FrameRecord.cl_profile``, CL device ns put on the host clock by
``cl_offset``), the intervals come from the device:

- the old owner keeps the object until the command's START stamp ("CL owns" runs to the release
  command's start, not to the CPU's enqueue);
- the hand-over is the command's execution, START to END, and for a release GL's wait on it: a
  CPU wait of the release phase (clFinish, an event wait) that returns after the command's END
  ends it there; GL may use the object only after a release has completed (cl_khr_gl_sharing,
  5.5.15: "These objects need to be released before they can be used by OpenGL.");
- the new owner has it from then on, across the frame's end, until the next frame's first change:
  the lanes are continuous from frame to frame.

Where the driver gave no device stamps (a command not timed on this frame, or returned with zero
stamps: ``FrameRecord.unstamped``), the CPU's call stands in for it (the phase, start to end) and
the interval says so (``source = "cpu"`` and ``note``). A driver that stamps a batch of commands
with one span (the acquire's or release's START and END equal to the kernel's:
``app/trace/report.py``'s ``shared_stamps``) gives the hand-over no time of its own: the interval is
the batch's, ``source = "device (batch)"``. Times are host ns (``perf_counter_ns``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

GL, CL, TO_CL, TO_GL = "GL", "CL", "GL -> CL", "CL -> GL"  # the legend's names (app/ui/legend.py)
HANDOVER = (TO_CL, TO_GL)
CHANGES = {"acquire": TO_CL, "release": TO_GL}  # the boundary's command and the hand-over it makes
DEVICE, BATCH, CPU = "device", "device (batch)", "cpu"
# a frame in progress (teaching mode): its owners drawn this far past its last step
IN_PROGRESS_TAIL_NS = 200_000
# the phase in which a finding's or an error's ``where`` happened (the panel's marks, the trace's
# instants); an error's "profile <command>" names its command. Hazard demonstration 5 (app/scenes/
# postprocess.py, ``_render_during_kernel``) names its GL pass in the compute phase.
WHERE_PHASE = {"acquire": "acquire", "compute": "compute", "release": "release", "render": "render",
               "kernel": "compute", "draw": "render", "upload": "render",
               "3-D pass during the kernel (hazard demo)": "compute"}


def owner_state(owner: str) -> str:
    """The legend's name for a tracker owner ("gl" / "cl"; "" not tracked)."""
    return {"gl": GL, "cl": CL}.get(owner, owner.upper() if owner else "?")


@dataclass(frozen=True, slots=True)
class OwnerInterval:
    """``label`` (``FrameRecord.owner_labels[obj]``) was in ``state`` from ``start_ns`` to ``end_ns``
    (host clock), as frame ``frame`` saw it; ``source``: DEVICE, BATCH or CPU, ``note`` why not DEVICE."""

    obj: int
    label: str
    state: str
    start_ns: int
    end_ns: int
    frame: int
    source: str = DEVICE
    note: str = ""

    @property
    def us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3


@dataclass(frozen=True, slots=True)
class Change:
    """One hand-over of one frame: the command at ``boundary`` ("acquire" / "release") moved
    ``objects`` from one owner to the other over ``start_ns`` .. ``end_ns`` (host clock)."""

    boundary: str
    start_ns: int
    end_ns: int
    source: str
    note: str


def command_span(rec, name: str, cl_offset: int) -> tuple[int, int, str, str]:
    """(start, end, source, note) of CL command ``name`` of ``rec`` on the host clock: its device
    START and END where stamped, else the CPU phase that enqueued it."""
    prof = rec.cl_profile.get(name)
    if prof is not None:
        start, end = prof[2] + cl_offset, prof[3] + cl_offset
        kernel = rec.cl_profile.get("compute")
        if name != "compute" and kernel is not None and prof[2:] == kernel[2:]:
            return start, end, BATCH, (f"the driver stamped the batch as one span: the {name} command has no "
                                       "device time of its own (the kernel's START and END)")
        return start, end, DEVICE, ""
    phase = rec.phases.get(name)
    if name in rec.unstamped:
        note = f"no device stamps from the driver for the {name}: the CPU's call"
    elif not rec.sampled:
        note = f"the {name} not timed on this frame: the CPU's call"
    else:
        note = f"no device time for the {name}: the CPU's call"
    if phase is None:
        return 0, 0, CPU, note
    return phase[0], phase[1], CPU, note


def changes(rec, cl_offset: int = 0) -> list[Change]:
    """The frame's hand-overs in order, each from its command's stamps (or the CPU's call)."""
    out = []
    for boundary in CHANGES:
        if boundary not in rec.phases and boundary not in rec.cl_profile:
            continue
        start, end, source, note = command_span(rec, boundary, cl_offset)
        if not start and not end:
            continue
        if boundary == "release":  # GL's wait on it: a CPU wait of the release phase that returns later
            phase = rec.phases.get("release")
            if phase is not None:
                for _name, ws, we in rec.waits:
                    if phase[0] <= ws and we <= phase[1] and we > end:
                        end = we
        out.append(Change(boundary, start, end, source, note))
    return out


def _frame_end(rec) -> int:
    return max([rec.end_ns, rec.presented_ns] + [s[1] for s in rec.phases.values()])


def owner_intervals(rec, cl_offset: int = 0, *, start_ns: int | None = None, until_ns: int | None = None,
                    in_progress: bool = False, live: Mapping[str, str] | None = None) -> list[OwnerInterval]:
    """Who owned each shared object of ``rec`` from ``start_ns`` (default: the frame's start) to
    ``until_ns`` (default: the frame's end; ``owner_timeline`` passes the next frame's first
    change), in order per object, each interval starting where the one before ended. A frame in
    progress ends ``IN_PROGRESS_TAIL_NS`` after its last step, and ``live`` (label -> state now)
    shows a hand-over still in flight there."""
    samples, labels = rec.owners, rec.owner_labels
    if not samples or not labels:
        return []
    by_boundary = {c.boundary: c for c in changes(rec, cl_offset)}
    begin = rec.start_ns if start_ns is None else start_ns
    if in_progress:
        until = samples[-1][1] + IN_PROGRESS_TAIL_NS
    else:
        until = _frame_end(rec) if until_ns is None else until_ns
    out: list[OwnerInterval] = []
    f = rec.index
    for k, label in enumerate(labels):
        cur, since, src, why = samples[0][2][k], begin, DEVICE, ""
        for boundary, t, owners in samples[1:]:
            new = owners[k]
            if new == cur:
                continue
            c = by_boundary.get(boundary)
            if c is not None:
                change, done, csrc, cnote = max(c.start_ns, since), max(c.end_ns, c.start_ns, since), c.source, c.note
            else:  # a change no command explains (a failure, a hand-back): at the boundary
                change = done = max(t, since)
                csrc, cnote = CPU, f"changed in the {boundary} phase with no command profiled: at its end"
            if change > since:
                out.append(OwnerInterval(k, label, owner_state(cur), since, change, f, src, why))
            if done > change:
                out.append(OwnerInterval(k, label, f"{owner_state(cur)} -> {owner_state(new)}", change, done, f,
                                         csrc, cnote))
            cur, since, src, why = new, done, csrc, cnote
        state = owner_state(cur)
        if in_progress and live and live.get(label) in HANDOVER:
            state = live[label]  # enqueued, not complete yet
        out.append(OwnerInterval(k, label, state, since, max(until, since), f, src, why))
    return out


def first_change_ns(rec, cl_offset: int = 0) -> int | None:
    """When ``rec``'s first hand-over began (host ns), or None where it made none."""
    cs = changes(rec, cl_offset)
    return min((c.start_ns for c in cs), default=None)


def owner_timeline(records: Iterable, cl_offset: int = 0) -> list[OwnerInterval]:
    """The intervals of ``records`` (consecutive frames, oldest first) as one continuous timeline
    per object within each set-up (``FrameRecord.segment``): each frame's last owner runs to the
    next frame's first change, an object a frame does not use (frames in flight on copies) keeps its
    owner until a frame uses it again, and an interval that goes on across frames in the same
    state is one interval (the frame that began it)."""
    records = list(records)
    out: list[OwnerInterval] = []
    last: dict[str, int] = {}  # label -> index in ``out`` of its newest interval
    resume: dict[str, int] = {}  # label -> where its next interval starts
    for i, rec in enumerate(records):
        nxt = records[i + 1] if i + 1 < len(records) else None
        until = None
        if nxt is not None and nxt.segment == rec.segment and nxt.owner_labels == rec.owner_labels:
            first = first_change_ns(nxt, cl_offset)
            until = first if first is not None else nxt.start_ns
        begun: set[str] = set()
        for iv in owner_intervals(rec, cl_offset, until_ns=until):
            # an object's first interval of the frame starts where its last one ended (no gap)
            begin = resume[iv.label] if iv.label in resume and iv.label not in begun else \
                max(iv.start_ns, resume.get(iv.label, iv.start_ns))
            if iv.end_ns <= begin and iv.label in last:
                continue  # nothing left of it (a change that ended where the next began)
            begun.add(iv.label)
            iv = OwnerInterval(iv.obj, iv.label, iv.state, begin, max(iv.end_ns, begin), iv.frame, iv.source, iv.note)
            j = last.get(iv.label)
            if j is not None and out[j].state == iv.state and out[j].end_ns == iv.start_ns:
                prev = out[j]
                out[j] = OwnerInterval(prev.obj, prev.label, prev.state, prev.start_ns, iv.end_ns, prev.frame,
                                       prev.source, prev.note)
            else:
                last[iv.label] = len(out)
                out.append(iv)
            resume[iv.label] = out[last[iv.label]].end_ns
        if nxt is None or nxt.segment != rec.segment:
            resume.clear()  # another set-up (or the end): the next frame starts its own timeline
            last.clear()
    return out


def owner_spans(rec, cl_offset: int = 0, *, in_progress: bool = False,
                live: Mapping[str, str] | None = None) -> list[tuple[int, int, int, str]]:
    """``owner_intervals`` of one frame as (object index, start ns, end ns, state): the panel's lanes."""
    return [(iv.obj, iv.start_ns, iv.end_ns, iv.state)
            for iv in owner_intervals(rec, cl_offset, in_progress=in_progress, live=live)]


def owners_at_boundaries(rec, cl_offset: int = 0) -> list[tuple[str, tuple[str, ...]]]:
    """(boundary, state per object) at each of ``rec.owners``' boundaries, read from the intervals
    (the state the stamps give at the boundary's host time, a hand-over still in flight included):
    what the panel's Owners table shows, so that it agrees with the lanes."""
    ivs = owner_intervals(rec, cl_offset)
    by_obj: dict[int, list[OwnerInterval]] = {}
    for iv in ivs:
        by_obj.setdefault(iv.obj, []).append(iv)
    out = []
    for boundary, t, _owners in rec.owners:
        states = []
        for k in range(len(rec.owner_labels)):
            inside = [iv for iv in by_obj.get(k, ()) if iv.start_ns <= t < iv.end_ns]
            states.append(inside[0].state if inside else by_obj[k][-1].state if by_obj.get(k) else "?")
        out.append((boundary, tuple(states)))
    return out


def owner_summary(intervals: Iterable[OwnerInterval]) -> dict:
    """Per object: microseconds in each state, the number of intervals, and how many of them came
    from device stamps, from a batch's span or from CPU times (the report's ``owners``)."""
    out: dict[str, dict] = {}
    for iv in intervals:
        entry = out.setdefault(iv.label, {"us": {GL: 0.0, CL: 0.0, TO_CL: 0.0, TO_GL: 0.0}, "intervals": 0,
                                          "sources": {DEVICE: 0, BATCH: 0, CPU: 0}})
        entry["us"][iv.state] = entry["us"].get(iv.state, 0.0) + iv.us
        entry["intervals"] += 1
        entry["sources"][iv.source] += 1
    for entry in out.values():
        entry["us"] = {k: round(v, 3) for k, v in entry["us"].items()}
    return out
