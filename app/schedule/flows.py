"""The links of a frame, from its record: one model for the panel's arrows and the trace's flow events.

Two kinds, each joining a span on one row to a span on another:

- ``ENQUEUE``: a CL command's execution to the CPU call that enqueued it (``FrameRecord.phases``:
  the step's phase, "enqueue kernel"; ``FrameRecord.cl_profile``: the command, "kernel"). The
  link leaves the CPU call at the command's QUEUED stamp ("the device time counter ... when the
  command identified by event is enqueued in a command-queue by the host", OpenCL 3.0.16, 5.14,
  clGetEventProfilingInfo) put on the host clock and held inside the call (the clock's mapping is
  known to its stated uncertainty, so the stamp may land a few us outside), and lands at the
  command's START stamp;
- ``HANDOVER``: what orders the two APIs: a CL release to the GL pass that uses the released
  objects, the CPU's wait before the acquire (glFinish: GL's work done) to CL's first command of
  the frame (the acquire, else the kernel), a CL release to the CPU's wait after it (clFinish)
  that waits for it, a GL pass to the CPU's wait on it. They leave their source at its end and
  land at their target's start (a wait's end: it waits until then).

Only what the record holds is linked: a command without device stamps (``FrameRecord.unstamped``,
a frame not timed) has no link. Times are host ns (``perf_counter_ns``); ``cl_offset`` and
``gl_offset`` put CL device ns and GL ns on that clock (app/schedule/clock.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from app.legend import cpu_name, device_name

ENQUEUE, HANDOVER = "enqueue", "hand-over"
PHASE, WAIT, COMMAND, PASS = "cpu", "wait", "cl", "gl"  # the row of an end: the CPU's call, its wait, CL, GL
CL_STEPS = ("acquire", "compute", "release")  # the steps whose calls enqueue a CL command (cl_profile's keys)


@dataclass(frozen=True, slots=True)
class End:
    """One end of a link: a span of the record, on the host clock."""

    row: str  # PHASE, WAIT, COMMAND or PASS
    name: str  # the record's name of it: the phase or the command ("compute"), the wait's, the pass's
    start_ns: int
    end_ns: int


@dataclass(frozen=True, slots=True)
class Flow:
    name: str  # "enqueue kernel -> kernel", "release command -> gl" (the trace's flow names)
    kind: str  # ENQUEUE or HANDOVER
    src: End
    dst: End
    from_ns: int  # where the link leaves ``src`` (host ns)
    to_ns: int  # where it lands in ``dst``


def _wait_phase(rec, s: int, e: int) -> str | None:
    """The phase a CPU wait ran in (its span inside the phase's), or None."""
    return next((p for p, (ps, pe) in rec.phases.items() if ps <= s and e <= pe), None)


def frame_flows(rec, cl_offset: int = 0, gl_offset: int = 0) -> tuple[Flow, ...]:
    """Every link of ``rec`` (a FrameRecord): each command to its enqueue, then the hand-overs."""
    commands = {name: End(COMMAND, name, st + cl_offset, en + cl_offset)
                for name, (_q, _sub, st, en) in rec.cl_profile.items()}
    flows = []
    for name in CL_STEPS:
        cmd, call = commands.get(name), rec.phases.get(name)
        if cmd is None or call is None:
            continue
        queued = rec.cl_profile[name][0] + cl_offset
        src = End(PHASE, name, call[0], call[1])
        flows.append(Flow(f"{cpu_name(name)} -> {device_name(name)}", ENQUEUE, src, cmd,
                          min(max(queued, call[0]), call[1]), cmd.start_ns))
    passes = [End(PASS, n, s + gl_offset, e + gl_offset) for n, s, e in rec.gl_passes]
    first_gl = next((p for p in passes if p.name == "gl render"), passes[0] if passes else None)
    release = commands.get("release")
    if release is not None and first_gl is not None:
        flows.append(Flow("release command -> gl", HANDOVER, release, first_gl, release.end_ns, first_gl.start_ns))
    # the wait before the acquire orders GL before CL's first command of the frame: the acquire,
    # or the kernel when the acquire enqueued nothing (host_copy with nothing to copy in)
    first_cl = next((commands[n] for n in ("acquire", "compute") if n in commands), None)
    for name, s, e in rec.waits:
        wait, phase = End(WAIT, name, s, e), _wait_phase(rec, s, e)
        if phase == "acquire" and first_cl is not None:
            flows.append(Flow(f"{name} -> {device_name(first_cl.name)}", HANDOVER, wait, first_cl, e,
                              first_cl.start_ns))
        elif phase == "release" and release is not None:
            flows.append(Flow(f"release command -> {name}", HANDOVER, release, wait, release.end_ns, e))
        elif phase == "render" and first_gl is not None:
            flows.append(Flow(f"gl -> {name}", HANDOVER, first_gl, wait, first_gl.end_ns, e))
    return tuple(flows)
