"""The frame's executors: how the runner's steps make their calls (app/schedule/runner.py walks them).

Every executor offers the same five calls, and nothing else differs between them: the runner
stamps, samples the owners, records waits and errors and applies the failure rules, whichever
executor made the calls.

- ``sync_before(waits, shadow)``: the sync mode's part before the acquire (``SyncMode.before_acquire``);
  returns the events the acquire waits on (raises where the mode's wait failed); where it made the
  calls of every later step too, each gone through (and their transitions, and the sync mode's
  part after the release), it says so in ``done`` (the acquire's end, the kernel's end, the events
  it made by step, or None) until the next frame's, and the runner makes no call of those steps
  but GL's side of the release (``SharingBackend.gl_after_release``);
- ``acquire(wait_for, out)``, ``compute(queue, frame, after[, event])`` (None: the scene's own),
  ``release(ev_c, out)``: the hand-over and the kernel, each the event it made (None: none asked,
  or nothing enqueued);
- ``sync_after(queue, ev_r, waits, shadow)``: the sync mode's part after the release
  (``SyncMode.after_release``).

``Checked`` makes each hand-over call through the backend's validator and ownership tracker (the
general frame, the one the teaching mode steps; ``checks_uses``: the tracker also checks the
kernel's and the draw's uses). ``Remembered`` reuses the verdicts of calls accepted before
(``SteadyHandOver``: the steady frame). ``Native`` makes the prepared calls of the sync mode, the
hand-over and the kernel in one foreign call (``NativeFrame``), then tells each step what became
of its calls; a step the list did not reach (a call before it failed, and the failure rules still
call the step) has its calls made from there on.
"""
from __future__ import annotations

import time

import pyopencl as cl

from app.cl.ext import call_error
from app.schedule.native import ACQUIRE, BEFORE, COMPUTE, RELEASE, NativeFrame
from app.sharing.sync import SyncMode

ns = time.perf_counter_ns


class Checked:
    """Each call validated and tracked (``SharingBackend.acquire`` / ``release``)."""

    name = "checked"
    checks_uses = True  # the kernel's and the draw's uses checked by the tracker, the owners sampled
    done = None  # the steps up to the release made in ``sync_before``, each gone through (only ``Native``'s)
    compute = None  # the scene's own (looked up each frame: a test may replace it on the instance)

    def __init__(self, backend, scene, sync) -> None:
        self.backend, self.scene = backend, scene
        self.queue = backend.queue
        self.in_order = backend.queue_in_order
        self.sync_before, self.sync_after = sync.before_acquire, sync.after_release

    def acquire(self, wait_for, out: bool):
        return self.backend.acquire(self.queue, self.scene.shared, wait_for or None, out=out)

    def release(self, ev_c, out: bool):
        after = [ev_c] if ev_c is not None and not self.in_order else None
        return self.backend.release(self.queue, self.scene.shared, after, out=out)


class Remembered(Checked):
    """The steady frame's calls: the verdicts of the hand-over calls accepted before reused
    (``SharingBackend.steady_hand_over``), on the in-order queue, every shared object GL's at the
    start and the kernel and the draw using shared objects only (their uses cannot flag)."""

    name = "remembered"
    checks_uses = False

    def __init__(self, backend, scene, sync, hand_over) -> None:
        super().__init__(backend, scene, sync)
        self.hand_over = hand_over
        # (wait_for, out): one with the sync's events checked whole; (ev_c, out): no wait list in order
        self.acquire, self.release = hand_over.acquire, hand_over.release


class Native(Remembered):
    """The steady frame's calls made by ``frame``'s one foreign call (``NativeFrame``): the list runs
    at ``sync_before``, up to the release where the GL timer is read in the wait after it
    (``Profiles.gl_due``), else to its end; where every call went through, every later step is
    ``done`` (both transitions made at once: nothing of glshare's ran between them), else each
    later step reads its segment's outcome."""

    name = "native"

    def __init__(self, backend, scene, sync, hand_over, frame: NativeFrame, profiles) -> None:
        super().__init__(backend, scene, sync, hand_over)
        self.nf, self.sync, self.profiles = frame, sync, profiles
        self.sync_before, self.sync_after = self._sync_before, self._sync_after
        self.acquire, self.release = self._acquire, self._release
        self.compute = self._compute
        calls = frame.calls
        self.ran = 0  # the first call not made (the failed one where ``status``), in the last run
        self.status = 0
        self.stop = self.n = calls.n
        # what every frame's common case reads, looked up once (the list's arrays are its own for good)
        self.run_all, self.stamps = calls.run_all, calls.stamps
        self.before, self.after = bound_hook(sync, "native_before"), bound_hook(sync, "native_after")
        self.variant, self.stage = frame.variant, frame.stage
        self.acquire_end, self.compute_end = frame.acquire_end, frame.compute_end
        # the CPU waits of the before and of the after segment: (name, the stamp before, the stamp after)
        self.waits_before = tuple((name, i, i + 1) for i, name in frame.waits_before)
        self.waits_after = tuple((name, i, i + 1) for i, name in frame.waits_after)
        self.waits = self.waits_before + self.waits_after  # (the common case's, every call made)
        self.outs = tuple((name, slot) for name, slot in zip(("acquire", "compute", "release"),
                                                             (frame.acquire_out, frame.kernel_out, frame.release_out))
                          if slot is not None)  # (step, out slot) of the calls whose events are asked

    def _run(self, first: int, stop: int) -> None:
        calls = self.nf.calls
        self.status = status = calls.run_all() if first == 0 and stop == calls.n else calls.run(first, stop)
        self.ran = calls.failed if status else stop

    def _went(self, lo: int, hi: int) -> bool:
        """Whether the calls ``lo`` .. ``hi`` - 1 went through: made from ``lo`` on where the list
        stopped before them; False where one of them failed (``_error``)."""
        if self.ran < hi and not (self.status and self.ran >= lo):
            self._run(lo, self.stop)
        return self.ran >= hi

    def _error(self) -> cl.Error:
        return call_error(self.status, self.nf.calls.calls[self.ran])

    def _sync_before(self, waits: list, shadow):
        queue = self.queue
        self.done = None
        if self.before is not None:
            self.before(queue, self.variant)
        if shadow is not None:  # the CL stamps of earlier frames, before the wait for GL
            self.sync.native_shadow(queue, shadow, True)
        if self.stage is not None:
            self.stage(self.profiles.rec.index)
        stamps = self.stamps
        if self.profiles.gl_due:  # (a mode that waits on the CPU, the GL timer's read due: it comes before
            self.stop = self.nf.ends[RELEASE]  # the wait after the release, where the list stops)
            self._run(0, self.stop)
        else:
            status = self.run_all()
            if not status:  # the common case: every call went through (``ran`` and the rest then unread)
                for name, i, j in self.waits:
                    waits.append((name, stamps[i], stamps[j]))
                if self.after is not None:
                    self.after(queue)  # (the list made the sync mode's calls after the release too)
                self.hand_over.handed_over()
                self.done = (stamps[self.acquire_end], stamps[self.compute_end], self._made() if self.outs else None)
                return None
            self.status, self.stop, self.ran = status, self.n, self.nf.calls.failed
        if self.ran < self.nf.ends[BEFORE]:
            raise self._error()
        for name, i, j in self.waits_before:
            waits.append((name, stamps[i], stamps[j]))
        return None

    def _made(self) -> dict:
        """The events of the calls of the acquire, the kernel and the release, by step, where asked."""
        made = {}
        for name, slot in self.outs:
            made[name] = cl.Event.from_int_ptr(slot.value, retain=False)
        return made

    def _acquire(self, wait_for, out: bool):
        nf = self.nf
        self.hand_over.acquired(None if self._went(nf.ends[BEFORE], nf.ends[ACQUIRE]) else self._error())
        return _event(nf.acquire_out)

    def _compute(self, queue, frame: int, after, event: bool = True):
        nf = self.nf
        if not self._went(nf.ends[ACQUIRE], nf.ends[COMPUTE]):
            raise self._error()
        return _event(nf.kernel_out)

    def _release(self, ev_c, out: bool):
        nf = self.nf
        self.hand_over.released(None if self._went(nf.ends[COMPUTE], nf.ends[RELEASE]) else self._error())
        return _event(nf.release_out)

    def _sync_after(self, queue, ev_r, waits: list, shadow) -> None:
        """(Never called where ``done``: the list made this part too.)"""
        lo, n = self.nf.ends[RELEASE], self.n
        if self.ran < lo or self.stop < n:  # not reached yet: the GL timer's read ahead of the wait first
            if shadow is not None:
                self.sync.native_shadow(queue, shadow, False)
            self.stop = n
        if not self._went(lo, n):
            if self.after is not None:
                self.after(queue)  # (after_release checks before its first call)
            raise self._error()
        stamps = self.stamps
        for name, i, j in self.waits_after:
            waits.append((name, stamps[i], stamps[j]))
        if self.after is not None:
            self.after(queue)


def bound_hook(sync, name: str):
    """``sync``'s ``name`` bound once, or None where its class keeps ``SyncMode``'s, documented to do
    nothing (the frame then makes no call for it)."""
    return None if getattr(type(sync), name) is getattr(SyncMode, name) else getattr(sync, name)


def _event(slot):
    """The event a call made in this frame put in its out slot (None: no event asked of it)."""
    return None if slot is None else cl.Event.from_int_ptr(slot.value, retain=False)
