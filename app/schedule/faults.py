"""Faults made on purpose inside a frame (``glshare run --inject KIND@FRAME``), so that the way
glshare records and survives them can be seen and tested.

The scheduler calls the plan as ``plan(phase, record)`` at the start of each phase, inside that
phase's error handling (``FrameScheduler.faults``): what the plan raises is recorded on the frame
exactly like a real failure, shown in the panel's Errors tab and listed in the report. What each
kind does, and how honest it is:

``enqueue`` (compute phase)
    A real enqueue the driver refuses: a copy past the end of a 4-byte buffer on the backend's own
    queue (clEnqueueCopyBuffer answers CL_INVALID_VALUE, OpenCL 3.0 section 5.2.2, as in
    app/validate/khr_extracts.txt). The frame's kernel is not enqueued; the release still hands the
    objects back.
``out_of_resources`` (compute phase)
    CL_OUT_OF_RESOURCES (-5) as clEnqueueNDRangeKernel would return it; no driver call fails (a
    device cannot be made to run out of resources on cue), the kernel is not enqueued.
``gl_error`` (render phase)
    A real GL error: ``glEnable`` with an enum no GL version defines (GL_INVALID_ENUM, OpenGL 4.6
    section 2.3.1), read back with glGetError. The frame is not drawn.
``stall`` (compute -> release)
    A real stall: at the start of the compute phase a marker waiting on a user event nobody sets
    is enqueued, so the in-order queue runs nothing after it (the frame's kernel waits behind
    it). At the start of the release phase, before any blocking wait, the plan polls that marker
    for ``stall_timeout_s``: still not complete means the queue stalled, which is recorded on the
    frame (QueueStalled); the plan then completes the user event, the queue drains and the frame
    ends normally. The detection is a bounded poll of an event, which is what a watchdog on any
    queue would do; glshare's loop itself has no such watchdog around its own blocking waits
    (clFinish and blocking copies have no timeout in OpenCL), so a real driver hang would still
    hang the loop.
``lost_context`` (render phase)
    GL_CONTEXT_LOST (0x0507, OpenGL 4.6 sections 2.3.1 and 2.3.2) as glGetError would report it
    after a GPU reset. Nothing in the driver is lost (a context cannot be reset on cue; llvmpipe
    never resets): the error is recorded on the frame and ``stop`` says why the run cannot go on,
    so the loop ends at the frame boundary and the outputs are written.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

import pyopencl as cl

from app.errors import ClError, ContextLost, GlError, GlshareError, QueueStalled

log = logging.getLogger(__name__)

STALL_TIMEOUT_S = 0.5
GL_CONTEXT_LOST = 0x0507
UNDEFINED_GL_ENUM = 0x7FFF  # no GL version defines a capability of this value

# kind -> the phase it happens in
KINDS: dict[str, str] = {
    "enqueue": "compute",
    "out_of_resources": "compute",
    "gl_error": "render",
    "stall": "compute",
    "lost_context": "render",
}


@dataclass(frozen=True, order=True)
class Fault:
    frame: int
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}@{self.frame}"


def parse_fault(text: str) -> Fault:
    """``KIND@FRAME`` (``-`` or ``_`` in the kind); raises ValueError with one line on bad input."""
    m = re.fullmatch(r"\s*([A-Za-z_-]+)@([0-9]+)\s*", text)
    kinds = ", ".join(KINDS)
    if not m:
        raise ValueError(f"expected KIND@FRAME such as stall@30 (kinds: {kinds}), got {text!r}")
    kind = m.group(1).lower().replace("-", "_")
    if kind not in KINDS:
        raise ValueError(f"unknown fault {m.group(1)!r}; kinds: {kinds}")
    return Fault(int(m.group(2)), kind)


def check_faults(faults, frames: int | None) -> tuple[Fault, ...]:
    """The faults in frame order; ValueError when one falls after the run's last frame or two of
    one kind share a frame."""
    out = tuple(sorted(set(faults)))
    if len(out) != len(tuple(faults)):
        raise ValueError("the same fault is given twice")
    if frames is not None:
        late = [str(f) for f in out if f.frame >= frames]
        if late:
            raise ValueError(f"{', '.join(late)}: the run has only {frames} frames (0 to {frames - 1})")
    return out


class FaultPlan:
    """The faults of one run, for one backend's queue (a new plan per set-up; faults are keyed by
    the simulation frame, which runs once)."""

    def __init__(self, faults, backend, *, stall_timeout_s: float = STALL_TIMEOUT_S) -> None:
        self.backend = backend
        self.stall_timeout_s = stall_timeout_s
        self._by_frame: dict[int, list[str]] = {}
        for f in faults:
            self._by_frame.setdefault(f.frame, []).append(f.kind)
        self._gate: cl.UserEvent | None = None
        self._marker: cl.Event | None = None
        self._gate_frame = -1
        self.stop: str | None = None  # why the run cannot go on (a lost context), else None
        self.stop_frame: int | None = None  # the frame that failed so (``stop``)

    @classmethod
    def for_config(cls, cfg, backend) -> "FaultPlan | None":
        """The plan of ``cfg.inject`` on ``backend``, or None when no fault is asked for (the
        scheduler then pays nothing)."""
        return cls(cfg.inject, backend) if getattr(cfg, "inject", ()) else None

    def __call__(self, phase: str, rec) -> None:
        """Make every fault of this frame and phase: a stall first (it raises nothing), then each
        kind that fails the phase, in order; every failure but the last is recorded on the frame
        here and the last is raised (the phase's own handling records it), so that none is lost
        behind another."""
        if self._gate is not None and phase in ("release", "render"):
            self._detect_stall(rec)
        kinds = self._by_frame.get(rec.index)
        if not kinds:
            return
        failures = []
        for kind in sorted((k for k in kinds if KINDS[k] == phase), key=lambda k: k != "stall"):
            log.info("frame %d: fault %s made on purpose", rec.index, kind)
            try:
                getattr(self, f"_{kind}")(rec)
            except GlshareError as exc:
                failures.append(exc)
        if failures:
            from app.schedule.scheduler import error_record

            for earlier in failures[:-1]:
                rec.errors.append(error_record(rec.index, earlier, phase))
            raise failures[-1]

    # -- the kinds ----------------------------------------------------------------------------
    def _enqueue(self, rec) -> None:
        queue = self.backend.queue
        small = cl.Buffer(self.backend.context, cl.mem_flags.READ_WRITE, 4)
        try:
            cl.enqueue_copy(queue, small, small, byte_count=8)
        except cl.Error as exc:
            raise ClError(int(exc.code), where="compute",
                          detail=f"{getattr(exc, 'routine', 'the enqueue')} refused a copy past the end of a 4-byte "
                                 f"buffer (--inject enqueue@{rec.index}); the frame's kernel was not enqueued") from exc
        finally:
            small.release()
        raise ClError(-30, where="compute", detail="the driver accepted a copy past the end of a buffer "
                      f"(--inject enqueue@{rec.index} expected CL_INVALID_VALUE); the kernel was not enqueued")

    def _out_of_resources(self, rec) -> None:
        raise ClError(-5, where="compute", detail=f"as clEnqueueNDRangeKernel would return it (--inject "
                      f"out_of_resources@{rec.index}; no driver call failed); the kernel was not enqueued")

    def _gl_error(self, rec) -> None:
        from app.gl import api as GL

        try:
            GL.glEnable(UNDEFINED_GL_ENUM)
        except GL.GLError as exc:  # the checked call read glGetError already
            code = exc.code
        else:
            code = int(GL.glGetError())
        if code == GL.GL_NO_ERROR:
            raise GlError(GL.GL_INVALID_ENUM, where="render", detail=f"glEnable(0x{UNDEFINED_GL_ENUM:04X}) was "
                          f"accepted (--inject gl_error@{rec.index} expected GL_INVALID_ENUM); the frame was not drawn")
        raise GlError(code, where="render", detail=f"glEnable(0x{UNDEFINED_GL_ENUM:04X}) (--inject "
                      f"gl_error@{rec.index}); the frame was not drawn")

    def _stall(self, rec) -> None:
        self._open_gate()  # one stall at a time
        self._gate = cl.UserEvent(self.backend.context)
        self._marker = cl.enqueue_marker(self.backend.queue, wait_for=[self._gate])
        self._gate_frame = rec.index

    def _lost_context(self, rec) -> None:
        self.stop_frame = rec.index
        self.stop = (f"the GL context was lost at frame {rec.index} (GL_CONTEXT_LOST, made on purpose by "
                     f"--inject lost_context@{rec.index}): nothing more can be drawn")
        raise ContextLost(f"GL_CONTEXT_LOST: the context is gone (as after a GPU reset; --inject "
                          f"lost_context@{rec.index}, nothing in the driver was lost); the run ends at this frame",
                          where="render", code=GL_CONTEXT_LOST, name="GL_CONTEXT_LOST")

    # -- stalls -------------------------------------------------------------------------------
    def _detect_stall(self, rec) -> None:
        """Poll the stalled marker for ``stall_timeout_s`` (never a blocking wait), record the stall
        on the frame when it did not complete, then let the queue go."""
        marker, waited = self._marker, 0.0
        t0 = time.perf_counter()
        deadline = t0 + self.stall_timeout_s
        complete = cl.command_execution_status.COMPLETE
        while marker.command_execution_status != complete and time.perf_counter() < deadline:
            time.sleep(0.002)
        waited = time.perf_counter() - t0
        stalled = marker.command_execution_status != complete
        frame = self._gate_frame
        self._open_gate()
        if stalled:
            from app.schedule.scheduler import error_record

            exc = QueueStalled(f"the queue completed nothing for {waited * 1e3:.0f} ms (a marker waiting on a user "
                               f"event nobody set, --inject stall@{frame}); the event was then set and the queue "
                               "drained", where="stall watchdog", name="queue stalled")
            rec.errors.append(error_record(rec.index, exc, "stall watchdog"))
            log.warning("frame %d: %s", rec.index, exc.one_line())

    def _open_gate(self) -> None:
        gate, self._gate, self._marker = self._gate, None, None
        if gate is not None:
            gate.set_status(cl.command_execution_status.COMPLETE)

    def close(self) -> None:
        """Let a stalled queue go (a teardown in the middle of a stalled frame)."""
        self._open_gate()


def stop_reason(scheduler) -> tuple[str, int] | None:
    """(why the run must end at this frame boundary, the frame that failed so), or None."""
    plan = getattr(scheduler, "faults", None)
    reason = getattr(plan, "stop", None)
    return (reason, plan.stop_frame) if reason else None
