"""The CL profiling harvest: the frames whose events are still to be read, read in batches.

Profiling of CL events is read once they complete, in batches of ``PROFILE_BATCH`` frames or when
the panel or a report asks (``harvest``), so nothing waits just to measure and the frame itself
stays short. Where the sync mode waits on the CPU (``app/sharing/sync.py``, ``shadow``) the harvest
is done inside that wait (``cl_in_wait``), the GL timer's inside CL's wait (``gl_in_wait``,
``read_gl_in_wait``); each such span goes on the frame's record (``FrameRecord.bookkeeping``).
"""
from __future__ import annotations

import collections
import time

import pyopencl as cl

from app.cl.ext import event_info
from app.schedule.frame import CommandInfo, FrameRecord, error_record

ns = time.perf_counter_ns
CL_COMPLETE = cl.command_execution_status.COMPLETE
PROFILE_BATCH = 8


class Profiles:
    """The records whose CL events are not read yet (``pending``, oldest first), and their reading.

    A read is due once ``due_at`` frames wait (``batch``, plus the frames that may still run on the
    GPU where the sync mode runs ahead: their events are not complete yet)."""

    def __init__(self, history, gl_timer, *, in_order: bool, run_ahead: int, submit: bool = True) -> None:
        self.history, self.gl_timer = history, gl_timer
        self.pending: collections.deque[FrameRecord] = collections.deque()
        # every event on the records was enqueued on the backend's queue; in order, its commands
        # complete in order (OpenCL 3.0.16, 5.14), so the newest complete event says the older are done
        self.in_order = in_order
        self.run_ahead = run_ahead
        # CL_PROFILING_COMMAND_SUBMIT is read only where an output shows it (the trace's args)
        self.submit = submit
        self.batch = PROFILE_BATCH
        self.rec: FrameRecord | None = None  # the frame in progress: its waits' bookkeeping goes there
        self.cl_done = self.gl_done = False  # done in a wait of the frame in progress
        # the GL timer's read due in the frame's wait for CL (``GlTimer.due``, asked once a frame at its
        # start; False under a mode with no CPU wait for CL)
        self.gl_due = False

    @property
    def batch(self) -> int:
        return self._batch

    @batch.setter
    def batch(self, value: int) -> None:
        self._batch = max(1, int(value))
        self.due_at = self._batch + self.run_ahead

    def due(self) -> bool:
        return len(self.pending) >= self.due_at

    # -- inside a sync mode's CPU waits (``shadow``) ------------------------------------------------
    def cl_in_wait(self) -> None:
        """The CL stamps of earlier frames, read while the CPU would wait for GL: where a batch is
        due, as the frame's end would read it."""
        self.cl_done = True
        if len(self.pending) >= self.due_at:
            t0 = ns()
            self.harvest(gl=False)
            self.rec.bookkeeping.append(("CL profiling harvest", t0, ns()))

    def gl_in_wait(self) -> None:
        """The GL timer's finished passes, read while the CPU would wait for CL."""
        self.gl_done = True
        self._gl_read_on_record(self.gl_timer.harvest)

    def read_gl_in_wait(self) -> None:
        """The same, where the frame asked the timer whether a read is due (``GlTimer.due``): it is."""
        self._gl_read_on_record(self.gl_timer.read)

    def _gl_read_on_record(self, read) -> None:
        timer = self.gl_timer
        t0, timed = ns(), timer.timed
        read()
        if timer.timed != timed:  # on the record where a pass was read (the timer looks every few frames)
            self.rec.bookkeeping.append(("GL timer harvest", t0, ns()))

    # -- the harvest ---------------------------------------------------------------------------
    def harvest(self, wait: bool = False, gl: bool = True) -> None:
        """Read the CL profiling of frames whose events completed; drop the event references.
        GL timer results that arrived go onto their records too (never waiting unless ``wait``).
        ``gl=False`` (the end of each frame) leaves the GL timers to the next frame's render phase,
        before its own pass."""
        if gl:
            self.gl_timer.harvest(wait)
        pending = self.pending
        if not pending:
            return
        flat = [(rec, name, ev) for rec in pending for name, ev in rec.events.items()]
        info = event_info()  # clGetEventInfo / clGetEventProfilingInfo through prepared ctypes calls
        read = self._waited(flat) if wait else flat[:self._complete(flat, info)]
        # the timed frames' stamps (``FrameRecord.sampled``), in one call for the whole batch where
        # app/native is built (EventInfo.profiles); the other frames' events are dropped unread
        stamped = [item for item in read if item[0].sampled]
        ptrs = [ev.int_ptr for _, _, ev in stamped]
        for (rec, name, _), ptr, prof in zip(stamped, ptrs, info.profiles(ptrs, self.submit)):
            if isinstance(prof, cl.Error):
                rec.errors.append(error_record(rec.index, prof, f"profile {name}"))
            elif prof[0] and prof[2] and prof[3]:
                rec.cl_profile[name] = prof
            else:  # a zero stamp is none: the driver did not time the command (NVIDIA's markers)
                rec.unstamped += (name,)
            _command(rec, name, ptr, info)
        for rec, name, _ in read:
            del rec.events[name]
        while pending and not pending[0].events:
            self.history.harvested(pending.popleft())

    def _complete(self, flat: list, info) -> int:
        """How many of ``flat``'s events, oldest first, have completed (never waiting): in order, the
        newest complete one found walking back; else each asked, up to the first not complete."""
        if self.in_order:
            for i in range(len(flat) - 1, -1, -1):
                if info.status(flat[i][2].int_ptr) == CL_COMPLETE:
                    return i + 1
            return 0
        upto = 0
        while upto < len(flat) and info.status(flat[upto][2].int_ptr) == CL_COMPLETE:
            upto += 1
        return upto

    @staticmethod
    def _waited(flat: list) -> list:
        """Every event waited for; a command that failed has its error recorded and no profile."""
        waited = []
        for rec, name, ev in flat:
            try:
                ev.wait()
                waited.append((rec, name, ev))
            except cl.Error as exc:
                rec.errors.append(error_record(rec.index, exc, f"profile {name}"))
                del rec.events[name]
        return waited


def _command(rec: FrameRecord, name: str, ptr: int, info) -> None:
    """What the driver says of the timed command ``name``'s event, on its record (the panel's
    Events tab shows it as the call's arguments): its handle, queue, command type and status."""
    command = info.command(ptr)
    status = info.status(ptr)
    if command is None or status is None:
        return
    if rec.commands is None:
        rec.commands = {}
    rec.commands[name] = CommandInfo(ptr, command[0], command[1], status)
