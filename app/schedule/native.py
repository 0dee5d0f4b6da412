"""The native frame: the steady frame's calls prepared for one foreign call (the native executor's).

In the steady frame everything between GL's last command on the shared objects and GL's first draw
from them is a fixed list of foreign calls: the sync mode's part before the acquire (GL's semaphore
signal, CL's wait; or glFinish), the backend's acquire, the scene's kernel (its changing scalars set
first), the release, and the sync mode's part after it (CL's signal, GL's wait; or clFinish). Each
piece prepares its calls once (``SyncMode.native_calls``, ``SharingBackend.native_hand_over``,
``Scene.native_compute``); ``NativeFrame`` puts them in one ``app.native.calls.CallList``, in five
segments, one per step of the plan (app/schedule/plan.py), and the native executor
(app/schedule/executors.py) makes the list with one ctypes call a frame instead of one per call.
The runner records what it records for any executor (tests/contract/test_steady_frame.py,
tests/schedule/test_runner.py); a failed call is the same error on the same step, and the failure rules
call the steps after it as for the Python executors: a step the list did not reach has its calls
made from there on.

A piece that cannot prepare its calls (a backend whose hand-over is Python, host_copy's copies; a
sync mode with its own logic, gl_event's) says None, and the frame is the remembered executor's.
"""
from __future__ import annotations

import logging

from app.native.calls import CallList

log = logging.getLogger(__name__)

BEFORE, ACQUIRE, COMPUTE, RELEASE, AFTER = range(5)  # the segments, in the list's order


class NativeFrame:
    """One frame's hand-over prepared: its ``CallList``, where each segment ends in it (``ends[s]``:
    one past its last call; an empty segment ends where the one before it does), the event out slots
    of the acquire, the kernel and the release (None: no event asked), the scene's ``stage`` of the
    frame's values, the sync mode's ``variant`` it was made for, and the calls that are CPU waits
    (index, name) of the before and of the after segment."""

    __slots__ = ("calls", "ends", "acquire_end", "compute_end", "acquire_out", "kernel_out", "release_out", "stage",
                 "variant", "waits_before", "waits_after")

    def __init__(self, segments, acquire_out, kernel_out, release_out, stage, variant) -> None:
        flat = [c for part in segments for c in part]
        self.calls = CallList(flat)
        ends, n = [], 0
        for part in segments:
            n += len(part)
            ends.append(n)
        self.ends = tuple(ends)
        self.acquire_end, self.compute_end = ends[ACQUIRE], ends[COMPUTE]
        self.acquire_out, self.kernel_out, self.release_out = acquire_out, kernel_out, release_out
        self.stage, self.variant = stage, variant
        waits = [(i, c.wait) for i, c in enumerate(flat) if c.wait]
        self.waits_before = tuple(w for w in waits if w[0] < ends[BEFORE])
        self.waits_after = tuple(w for w in waits if w[0] >= ends[RELEASE])


def prepare(backend, scene, sync, hand_over, events: bool, kernel_event: bool, variant) -> NativeFrame | None:
    """The native form of the steady frame whose hand-over is ``hand_over`` (events out as the
    scheduler asks them, the sync mode in ``variant``), or None where a piece has none."""
    queue = hand_over.queue
    try:
        sync_calls = sync.native_calls(queue, variant)
        if sync_calls is None:
            return None
        # (as SteadyHandOver._enqueue: the event out unless nothing reads it and the backend's calls take NULL)
        handed = backend.native_hand_over(queue, hand_over.objects, events or not backend.null_events)
        if handed is None:
            return None
        computed = scene.native_compute(queue, kernel_event)
        if computed is None:
            return None
    except Exception as exc:  # noqa: BLE001 - the Python frame then; said once per set-up
        log.warning("the native frame is not used for %s on %s: %s", scene.name, backend.name, exc)
        return None
    before, after = sync_calls
    acquire, release, acquire_out, release_out = handed
    compute, kernel_out, stage = computed
    if not (before or acquire or compute or release or after):
        return None  # (nothing to call: the Python frame is as short)
    return NativeFrame((before, acquire, compute, release, after), acquire_out, kernel_out, release_out, stage,
                       variant)
