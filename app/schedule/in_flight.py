"""The frames-in-flight bound: how far the CPU may run ahead of the GPU under a sync mode with no
CPU wait per frame (``SyncMode.bounded_run_ahead``).

Each frame leaves (its release event, a GL fence past its draw); before the next acquire the CPU
waits until no more than ``depth - 1`` earlier frames may still run on the GPU.
"""
from __future__ import annotations

import collections
import logging
import time

import pyopencl as cl

from app.cl.ext import event_info
from app.errors import QueueStalled
from app.gl import api as GL
from app.gl.raw import gl_function
from app.schedule.frame import FrameRecord, error_record

log = logging.getLogger(__name__)
ns = time.perf_counter_ns
CL_COMPLETE = cl.command_execution_status.COMPLETE
GL_TIMEOUT_NS = 10_000_000_000  # a GL fence not signalled within 10 s is a stalled GPU


class InFlight:
    """At most ``depth`` frames whose GPU work may still run (1: each frame waits for the one before)."""

    def __init__(self, depth: int) -> None:
        self.depth = max(1, int(depth))
        self.wait_name = f"{self.depth} frames in flight"  # the wait's name on a record
        self.frames: collections.deque = collections.deque()  # (release event or None, GL fence)
        # every frame: straight through ctypes (app/gl/raw.py)
        self._fence, self._client_wait = gl_function("glFenceSync"), gl_function("glClientWaitSync")
        self._delete_sync = gl_function("glDeleteSync")

    def __len__(self) -> int:
        return len(self.frames)

    def full(self) -> bool:
        return len(self.frames) >= self.depth

    def add(self, release) -> None:
        """The frame just drawn: ``release`` (its release event, or None where a GL fence past the
        draw says the release completed too: ``SyncMode.gl_waits_for_release``) and a fence now."""
        self.frames.append((release, self._fence(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)))

    def bound(self, rec: FrameRecord, before_wait) -> None:
        """Wait, on the CPU, until no more than ``depth - 1`` earlier frames may still run on the GPU;
        each wait is one of ``rec``'s. ``before_wait()`` runs first where the CPU is about to wait
        (the bookkeeping of earlier frames: a sync mode's ``shadow``)."""
        if len(self.frames) >= self.depth:
            before_wait()
        while len(self.frames) >= self.depth:
            release, fence = self.frames.popleft()
            t0 = ns()
            if release is not None and event_info().status(release.int_ptr) != CL_COMPLETE:
                release.wait()  # (asked first: a frame that far back has usually completed)
            try:
                status = self._client_wait(fence, GL.GL_SYNC_FLUSH_COMMANDS_BIT, GL_TIMEOUT_NS)
            finally:
                self._delete_sync(fence)
            t1 = ns()
            rec.waits.append((self.wait_name, t0, t1))
            if status not in (GL.GL_ALREADY_SIGNALED, GL.GL_CONDITION_SATISFIED):
                self._stalled(rec, status, t1 - t0)

    @staticmethod
    def _stalled(rec: FrameRecord, status: int, waited_ns: int) -> None:
        """GL_TIMEOUT_EXPIRED: the fence of an earlier frame's draw did not signal in GL_TIMEOUT_NS;
        GL_WAIT_FAILED: an error (OpenGL 4.6 section 4.1.1, ClientWaitSync). Recorded on this frame
        (as the stall watchdog records one), which goes on."""
        what = "timed out" if status == GL.GL_TIMEOUT_EXPIRED else f"failed (status 0x{int(status):04X})"
        exc = QueueStalled(f"glClientWaitSync on the GL fence of an earlier frame's draw {what} after "
                           f"{waited_ns / 1e6:.0f} ms (limit {GL_TIMEOUT_NS / 1e9:.0f} s): the GPU did not "
                           "finish that draw", where="frames in flight", name="queue stalled")
        rec.errors.append(error_record(rec.index, exc, "frames in flight"))
        log.warning("frame %d: %s", rec.index, exc.one_line())

    def drop(self) -> None:
        """Forget every frame, deleting its fence (the scheduler closes)."""
        while self.frames:
            self._delete_sync(self.frames.popleft()[1])
