"""The frame scheduler: brackets every frame's CL work with acquire and release, and records it.

Order (per frame): GL -> CL hand-over (sync mode) -> acquire -> compute -> release -> CL -> GL
hand-over -> GL draw. A failure inside a frame is recorded on its FrameRecord (a raw CL or GL error
as ClError / GlError with its phase) and the loop goes on; ``strict`` raises the findings of the
modes' kinds (``app/validate/findings.py``: ``stops_on``), and ``strict=True`` every failure.
Profiling of CL events is read once they complete, in batches of
``PROFILE_BATCH`` frames or when the panel or a report asks (``harvest``), so nothing waits just to
measure and the frame itself stays short. That harvest and the GL timer's are done inside the sync
mode's CPU waits where it has any (``app/sharing/sync.py``, ``shadow``): the CL stamps of earlier
frames while GL finishes (before glFinish, or the run-ahead bound's fence wait), the GL timer's
while CL finishes (before clFinish); each such span is on the record (``FrameRecord.bookkeeping``).
A frame whose sync mode has no CPU wait does them where it always did: the GL timer's before the
draw, the CL stamps at the frame's end.

Frames shorter than ``stamps_interval_ns`` (0 here: every frame is timed; a session's is
``--stamps-ms``, 1 ms by default) are timed one per interval of their own time
(``FrameRecord.sampled``): a frame is timed when the frames since the last timed one took together
at least the interval from start to end, or when ``STAMPS_WALL_FACTOR`` intervals of the clock
passed since it (a window at 60 Hz times every frame); a stepped frame always is. A timed frame has
its CL stamps read and its GL passes timed; the others' events are dropped unread once they
complete and their draws get no timer queries. So reading the stamps costs at most about 1.5% of the
frames' own time, in a bench that interleaves other loops as in a run. On the H200 each command's three
stamps cost the calling thread 5 us (NVIDIA 580, bench/probes/frame_primitives_probe.py), 15 us a
frame, a third of what glshare added to a 0.5 ms frame. A trace times every frame.

An untimed frame asks the driver only for the events something reads: each costs the calling thread
2.2 us on the H200. On an in-order queue under a mode that waits for CL on the CPU
(``SyncMode.waits_on_cpu``: finish) that is none, the kernel, the acquire and the release enqueued
with the C API's NULL event where the backend and the scene can (``SharingBackend.null_events``,
``Scene.compute_takes_null_event``); under the other modes the acquire's and the release's stay (the
panel's owners in transition, the run-ahead bound, GL's wait on CL's event) and only the kernel's is
left out. Such a mode is handed the bookkeeping for its waits only when some is due, so it flushes
before them only then.

``run_frame`` runs most frames as the steady frame (``_steady_frame``): where a frame's objects and
hand-over calls are those of the frame before (the validator accepted both, every shared object is
GL's), it is the general frame without the branches of the cases that cannot arise, the same
record, states and counts (tests/contract/test_steady_frame.py). The teaching mode's stepped
frames, injected faults, skipped calls and the first frame on each copy of the objects run the
general one (``frame_phases``). Where the backend, the sync mode and the scene each prepare their
calls (external_memory and host_mapped; finish, semaphore and none; both scenes), the steady frame's
hand-over is one native call (``_native_hand_over``, app/schedule/native.py); ``native`` False, or
GLSHARE_NATIVE_FRAME=0, makes it in Python.
"""
from __future__ import annotations

import collections
import logging
import operator
import os
import time

import pyopencl as cl

from app.cl.ext import call_error, event_info
from app.errors import ClError, GlshareError, QueueStalled, as_glshare_error
from app.gl import api as GL
from app.gl.context import check_gl
from app.gl.raw import gl_function
from app.gl.timer import GlTimer
from app.memo import keep
from app.native.calls import reason as native_calls_reason
from app.schedule.frame import ErrorRecord, FrameRecord
from app.schedule.history import RunHistory
from app.schedule.native import ACQUIRE, BEFORE, COMPUTE, RELEASE, NativeFrame
from app.schedule.native import prepare as prepare_native
from app.sharing.base import SharingBackend, Wrap, instrument_attributes
from app.sharing.sync import SyncMode
from app.validate.findings import normalize_strict, stops_on
from app.validate.ownership import CL as CL_OWNS
from app.validate.ownership import GL as GL_OWNS

log = logging.getLogger(__name__)
ns = time.perf_counter_ns
CL_COMPLETE = cl.command_execution_status.COMPLETE
PROFILE_BATCH = 8
STAMPS_WALL_FACTOR = 10  # a frame is timed at least every this many stamps intervals of the clock
GL_TIMEOUT_NS = 10_000_000_000  # a GL fence not signalled within 10 s is a stalled GPU
_OWNER = operator.attrgetter("owner")


def error_record(frame: int, exc: BaseException, where: str) -> ErrorRecord:
    if isinstance(exc, ClError):
        return ErrorRecord(frame, exc.where or where, exc.code, exc.name, exc.one_line(), exc.meaning)
    if isinstance(exc, cl.Error):
        wrapped = ClError.from_pyopencl(exc, where)
        return ErrorRecord(frame, where, wrapped.code, wrapped.name, wrapped.one_line(), wrapped.meaning)
    if isinstance(exc, GlshareError):
        code = getattr(exc, "code", None)
        # ``details``: a compiler's log (a failed build or reload): the panel shows it under the error
        details = getattr(exc, "details", "")
        meaning = getattr(exc, "meaning", "") or (f"{exc.one_line()}\n{details}" if details else "")
        return ErrorRecord(frame, exc.where or where, code if isinstance(code, int) else None,
                           getattr(exc, "name", type(exc).__name__), exc.one_line(), meaning)
    return ErrorRecord(frame, where, None, type(exc).__name__, str(exc))


class FrameScheduler:
    """Runs frames of one scene on one backend with one sync strategy."""

    def __init__(self, backend: SharingBackend, scene, sync: SyncMode, *, history: RunHistory | None = None,
                 strict: bool | str = False, gl_timer_every: int = 1, frames_in_flight: int = 2,
                 profile_submit: bool = True, stamps_interval_ns: int = 0) -> None:
        self.backend, self.scene, self.sync = backend, scene, sync
        self.strict = strict  # which failures of a frame are raised, not only recorded (the property)
        self.history = history if history is not None else RunHistory()
        if self.history.segment is None or (self.history.segment.scene, self.history.segment.backend,
                                            self.history.segment.sync) != (scene.name, backend.name, sync.name):
            self.history.begin_segment(scene.name, backend.name, sync.name, 0)
        self.segment = self.history.segment.index
        self._pending: collections.deque[FrameRecord] = collections.deque()
        self.skip: set[str] = set()  # hazard demonstrations: "acquire", "release"
        # faults made on purpose (``--inject``): called as faults(phase, record) at the start of each
        # phase, inside its error handling, so an injected failure is recorded like a real one
        self.faults = None
        self._gl_error = gl_function("glGetError")
        # the frames-in-flight fences, every frame: straight through ctypes (app/gl/raw.py)
        self._fence, self._client_wait = gl_function("glFenceSync"), gl_function("glClientWaitSync")
        self._delete_sync = gl_function("glDeleteSync")
        # frames whose GPU work may still run, (release event, GL fence after the draw), where the sync
        # mode has no CPU wait per frame: at most ``frames_in_flight`` of them (1: each frame waits
        # for the one before)
        self.frames_in_flight = max(1, int(frames_in_flight))
        self._in_flight_wait = f"{self.frames_in_flight} frames in flight"  # the wait's name on a record
        self._in_flight: collections.deque = collections.deque()
        # on the backend's in-order queue (``SharingBackend.queue_in_order``) the frame's own commands
        # (acquire -> kernel -> release) need no wait lists between them; a queue that is not in order
        # gets each command's predecessor in its wait list
        self._in_order = backend.queue_in_order
        # what reads an untimed frame's events (``FrameRecord.sampled``): the wait lists of a queue not
        # in order; and the acquire's and the release's, where the frame may end before they complete,
        # the panel's owners in transition, the run-ahead bound and a sync mode's GPU waits (every
        # mode but one that waits for CL on the CPU, ``SyncMode.waits_on_cpu``). Timed frames keep all
        self._untimed_kernel_event = not (self._in_order and scene.compute_takes_null_event)
        self._untimed_events = not (self._in_order and sync.waits_on_cpu)
        self.current: FrameRecord | None = None  # the frame in progress (teaching mode)
        self.gl_timer = GlTimer(f"gl timer {scene.name} on {backend.name}", owner=backend.name,
                                every=gl_timer_every)  # -> rec.gl_passes
        # CL profiles are read in batches of this many frames (and whenever the panel or a report
        # asks, ``harvest()``): one frame's reads right after a draw find the caches cold on llvmpipe,
        # a batch reads them warm
        self.profile_batch = PROFILE_BATCH
        # CL_PROFILING_COMMAND_SUBMIT is read only where an output shows it (the trace's args): the
        # panel, the report and the clock mapping use queued, start and end; unread, it is None
        self.profile_submit = profile_submit
        # one frame timed per this much of the frames' own time (``FrameRecord.sampled``; the others'
        # CL stamps left unread, no GL timer queries for them): 0 times every frame
        self.stamps_interval_ns = max(0, int(stamps_interval_ns))
        self._sampled_ns = None  # the start of the last frame timed
        self._work_since = 0  # the frames' own time (start to end) since then
        # the tracker's states of the scene's shared objects and their labels, per (objects_version, ids)
        self._owned: dict[tuple, tuple] = {}
        # the bookkeeping handed to the sync mode's CPU waits (``shadow``), once each a frame: bound once
        self._shadow_cl, self._shadow_gl = self._harvest_cl_in_wait, self._harvest_gl_in_wait
        self._read_gl = self._read_gl_in_wait
        self._cl_harvested = self._gl_harvested = False  # done in a wait of the frame in progress
        # a mode that waits on the CPU every frame (finish) is handed the bookkeeping only when some
        # is due, so it flushes before its waits only then (a flush costs NVIDIA's calling thread
        # 2.2 us); the frame then does none of it elsewhere
        self._waits_on_cpu = sync.waits_on_cpu
        # on the in-order queue the frame's steady case (``_steady_frame``) applies whenever its
        # objects and its calls are those of the frame before
        self._steady_mode = self._in_order
        self.steady = True  # False: every frame the general one (an A/B, the tests' reference)
        # the steady frame's hand-over made in one native call where every piece prepares its calls
        # (app/schedule/native.py); ``native_reason`` says why not where the machine cannot
        self.native_reason = native_calls_reason() or (
            "turned off (GLSHARE_NATIVE_FRAME=0)" if os.environ.get("GLSHARE_NATIVE_FRAME", "1") == "0" else "")
        self.native = not self.native_reason  # False: the steady frame's hand-over in Python (an A/B)
        self._natives: dict[tuple, NativeFrame | None] = {}  # per (hand-over, events, sync variant, scene key)

    @property
    def strict(self) -> str:
        """"off", "spec" or "all": the findings a frame raises (``findings.stops_on``); every other
        failure is recorded on the frame and the loop goes on. Set from a mode name or a bool:
        True (the Python API's form, the tests') is "all" and raises every failure of a frame too,
        so that a test sees the error that broke its frame."""
        return self._strict

    @strict.setter
    def strict(self, value: bool | str) -> None:
        self._strict = normalize_strict(value)
        self._raise_every = value is True

    @property
    def profile_batch(self) -> int:
        """The frames whose CL stamps are read together. A read is due once that many frames are
        waiting beyond those that may still run on the GPU (``frames_in_flight``, under a mode that
        runs ahead): their events are not complete yet, and with the due point at the batch alone
        every frame read again, walking the frames in flight. The reads themselves cost the same
        (bench/probes/frame_opcodes_probe.py, the H200's semaphore frame: 96 instructions a frame
        of harvest before, 92 after)."""
        return self._profile_batch

    @profile_batch.setter
    def profile_batch(self, value: int) -> None:
        self._profile_batch = max(1, int(value))
        self._harvest_at = self._profile_batch + (self.frames_in_flight if self.sync.bounded_run_ahead else 0)

    @property
    def records(self) -> collections.deque[FrameRecord]:
        """The run's kept records (every segment's, oldest first)."""
        return self.history.records

    # -- one frame ---------------------------------------------------------------------------
    def run_frame(self, frame: int, render_target) -> FrameRecord:
        """``render_target()`` binds the framebuffer and returns its size, or None (minimized)."""
        if self._steady_mode and self.steady and not self.skip and self.faults is None:
            rec = self._steady_frame(frame, render_target)
            if rec is not None:
                return rec
        steps = self.frame_phases(frame, render_target)
        for _ in steps:
            pass
        return self.history.last

    def _owned_states(self, key: tuple) -> tuple:
        """(the tracker's states of the scene's shared objects, their labels, the objects, the
        scene's cl_uses and gl_uses then, whether every tracked object of those is a shared one,
        the owners' sample of those states all GL's and all CL's),
        for the ``key`` of the backend's objects and the scene's: the tracker's state objects are
        changed in place by acquire and release, so a frame looks them up once and each boundary's
        sample is one tuple of their owners (kept per set of objects, one per copy of them)."""
        found = self._owned.get(key)
        if found is None:
            scene, states = self.scene, self.backend.tracker.states
            owned = [states[id(o)] for o in scene.shared if id(o) in states]
            cl_uses, gl_uses = scene.cl_uses, scene.gl_uses
            shared = {id(o) for o in scene.shared}
            covered = all(id(o) in shared or id(o) not in states for o in (*cl_uses, *gl_uses))
            # (the key's objects are held with it: no id in it can be reused while it is kept)
            found = keep(self._owned, key, (owned, tuple(s.label for s in owned), list(scene.shared),
                                            cl_uses, gl_uses, covered, (GL_OWNS,) * len(owned), (CL_OWNS,) * len(owned)))
        return found

    def _steady_frame(self, frame: int, render_target) -> FrameRecord | None:
        """``frame_phases`` driven to its end, where the frame can differ from the frame before only
        in its times, its copy of the shared objects and its scene's values: the backend's in-order
        queue, no faults or skipped calls, both hand-over calls accepted before and every shared
        object GL's (``SharingBackend.steady_hand_over``), and the scene's kernel and draw using only
        shared objects (so the tracker's use checks cannot flag: each is CL's during the kernel,
        GL's during the draw). Any sync mode: one that waits on the CPU (finish) gets the
        bookkeeping only when some is due, one that runs ahead its bound and its fence, one whose
        acquire waits on events (gl_event) the general hand-over for that call. The same record,
        tracker states, validator counts and history as the general frame
        (tests/contract/test_steady_frame.py holds them to it), with none of its branches for the
        cases above: the bench's overhead frame at about two thirds of the Python over the bare
        loop (bench/probes/frame_opcodes_probe.py). None where the case does not hold, having done
        nothing but select the frame's copy of the objects: the caller runs the general frame."""
        backend, scene, sync = self.backend, self.scene, self.sync
        if scene.slots > 1:  # (as the general frame: the copy first, then its objects' key)
            slot = frame % scene.slots
            scene.use_slot(slot)
            sync.use_slot(slot, scene.shared)
        key = (backend.objects_version, *map(id, scene.shared))
        found = self._owned_states(key)
        if not found[5] or scene.cl_uses is not found[3] or scene.gl_uses is not found[4]:
            return None
        hand_over = backend.steady_hand_over(backend.queue, key)
        if hand_over is None:
            return None
        # the owners at each boundary follow from the transitions alone: all GL's at the start (the
        # hand-over's steady case), all CL's once the acquire went through, GL's again once the release did
        queue, gl_owns, cl_owns = hand_over.queue, found[6], found[7]
        rec = FrameRecord.begin(frame, scene.name, backend.name, sync.name, self.segment)
        if scene.slots > 1:
            rec.slot = slot
        self.current = rec
        backend.tracker.frame = frame
        rec.owner_labels = found[1]
        samples, phases, pending = rec.owners, rec.phases, self._pending
        rec.start_ns = t = ns()
        interval, last = self.stamps_interval_ns, self._sampled_ns
        if last is None or self._work_since >= interval or t - last >= STAMPS_WALL_FACTOR * interval:
            self._sampled_ns, self._work_since = t, 0
            events = kernel_event = True
        else:
            rec.sampled = False
            events, kernel_event = self._untimed_events, self._untimed_kernel_event
        samples.append(("start", t, gl_owns))
        copied = backend.bytes_copied
        waits_on_cpu = self._cl_harvested = self._gl_harvested = self._waits_on_cpu
        native = self._native_for(hand_over, events, kernel_event) if self.native else None
        if native is not None:
            released, t = self._native_hand_over(native, rec, frame, hand_over, t, gl_owns, cl_owns)
        else:  # the hand-over in Python
            ok = released = synced = True
            wait_for = None
            try:
                if sync.bounded_run_ahead:
                    self._bound_run_ahead(rec)
                backend.gl_before_acquire(scene.shared)
                synced = False
                if waits_on_cpu:  # the CL stamps of earlier frames, in the wait for GL where a batch is due
                    wait_for = sync.before_acquire(rec.waits, self._shadow_cl if len(pending) >= self._harvest_at else None)
                else:
                    wait_for = sync.before_acquire(rec.waits, self._shadow_cl)
                synced = True
                if wait_for:  # (an acquire that waits on the sync's events: the general hand-over checks the list)
                    ev_a = backend.acquire(queue, scene.shared, wait_for, out=events)
                else:
                    ev_a = hand_over.acquire(events)
                rec.counts["acquire"] = 1
                if ev_a is not None:
                    rec.events["acquire"] = ev_a
            except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
                ok = self._fail(rec, exc, "acquire")
            phases["acquire"] = (t, t := ns())
            samples.append(("acquire", t, cl_owns if ok else gl_owns))
            if ok:
                try:
                    after = None if ev_a is not None else (wait_for or None)  # (in order: nothing between its own)
                    ev_c = scene.compute(queue, frame, after) if kernel_event else \
                        scene.compute(queue, frame, after, event=False)
                    if ev_c is not None:
                        rec.events["compute"] = ev_c
                    rec.counts["compute"] = 1
                except Exception as exc:  # noqa: BLE001
                    self._fail(rec, exc, "compute")
                phases["compute"] = (t, t := ns())
                samples.append(("compute", t, cl_owns))
                try:
                    released = False
                    ev_r = hand_over.release(events)
                    released = True
                    rec.counts["release"] = 1
                    if ev_r is not None:
                        rec.events["release"] = ev_r
                    if waits_on_cpu:  # the GL timer's passes, in the wait for CL where a read is due
                        timer = self.gl_timer
                        sync.after_release(queue, ev_r, rec.waits, self._read_gl if timer.enabled and timer.due() else None)
                    else:
                        sync.after_release(queue, ev_r, rec.waits, self._shadow_gl)
                    backend.gl_after_release(scene.shared)
                except Exception as exc:  # noqa: BLE001
                    self._fail(rec, exc, "release")
                    if not released:  # (the sync's side still runs: ``_sync_after``)
                        self._sync_after(rec, None, None)
                phases["release"] = (t, t := ns())
            else:  # as the general frame: a compute and a release of nothing, with their spans
                phases["compute"] = (t, t := ns())
                samples.append(("compute", t, gl_owns))
                if synced:
                    self._sync_after(rec, None, None)
                phases["release"] = (t, t := ns())
        owns = gl_owns if released else cl_owns
        samples.append(("release", t, owns))
        try:
            size = render_target()
            if not self._gl_harvested:  # (no wait for CL in this frame's sync mode took it)
                self.gl_timer.harvest()
            if size is not None:
                if not released:  # (CL may hold them still: the draw's use is checked as the general frame's)
                    backend.tracker.gl_use(scene.gl_uses, "draw")
                if rec.sampled:
                    with self.gl_timer.span(rec, "gl render"):
                        scene.render(size)
                else:  # (the timer's span of a frame not timed does nothing)
                    scene.render(size)
            sync.after_gl_use(rec.waits)
            self._after_draw(rec)
        except Exception as exc:  # noqa: BLE001
            self._fail(rec, exc, "render")
        phases["render"] = (t, t := ns())
        samples.append(("render", t, owns))
        rec.end_ns = t
        self._work_since += t - rec.start_ns
        flags = backend.tracker.flags
        if flags and flags[-1].frame == frame:  # (none of this frame's own: an earlier run's, same index)
            first = len(flags) - 1
            while first > 0 and flags[first - 1].frame == frame:
                first -= 1
            rec.hazards = flags[first:]
        rec.bytes_moved = backend.bytes_copied - copied
        self.history.add(rec)
        pending.append(rec)
        self.current = None
        if not self._cl_harvested and len(pending) >= self._harvest_at:
            self.harvest(gl=False)  # (no wait for GL in this frame's sync mode took it)
        return rec

    def _native_for(self, hand_over, events: bool, kernel_event: bool) -> NativeFrame | None:
        """The steady frame's hand-over prepared for one native call (app/schedule/native.py), or None:
        a piece makes its calls in Python, or a test replaced one of their methods on the instance (a
        failure made on purpose: the Python frame calls it)."""
        scene, backend, sync = self.scene, self.backend, self.sync
        if "compute" in scene.__dict__ or "_enqueue_acquire" in backend.__dict__ or "_enqueue_release" in backend.__dict__:
            return None
        variant = sync.native_variant()
        key = (hand_over, events, kernel_event, variant, scene.native_key())
        found = self._natives.get(key, False)
        if found is False:  # (the hand-over is held with it: its identity cannot be reused while kept)
            found = keep(self._natives, key, prepare_native(backend, scene, sync, hand_over, events, kernel_event,
                                                            variant))
        return found

    def _native_hand_over(self, nf: NativeFrame, rec: FrameRecord, frame: int, hand_over, t: int, gl_owns,
                          cl_owns) -> tuple[bool, int]:
        """The steady frame's acquire, compute and release phases with their calls made by ``nf``'s one
        native call: the same record, states and counts as the Python hand-over of ``_steady_frame``.
        A call that fails is recorded as the Python frame records it, and the frame goes on as that
        one does: a failed sync wait or acquire skips the kernel and the release, a failed kernel
        still releases, a failed release leaves the objects CL's; the sync mode's part after the
        release runs wherever its part before it ran (``_sync_after``). Returns (whether the objects
        are GL's after it: released, or never acquired; the release phase's end)."""
        backend, scene, sync, queue = self.backend, self.scene, self.sync, hand_over.queue
        calls, ends = nf.calls, nf.ends
        samples, phases = rec.owners, rec.phases
        synced = True
        try:  # (as the Python hand-over's acquire phase, up to its first call)
            if sync.bounded_run_ahead:
                self._bound_run_ahead(rec)
            backend.gl_before_acquire(scene.shared)
            synced = False
            sync.native_before(queue, nf.variant)
            if self._waits_on_cpu and len(self._pending) >= self._harvest_at:
                sync.native_shadow(queue, self._shadow_cl, True)  # the CL stamps of earlier frames, before glFinish
            if nf.stage is not None:
                nf.stage(frame)
            # the GL timer's passes, read before clFinish where a read is due (asked last: once a frame)
            timer = self.gl_timer
            read_gl = self._waits_on_cpu and timer.enabled and timer.due()
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            self._fail(rec, exc, "acquire")
            phases["acquire"] = (t, t := ns())
            samples.append(("acquire", t, gl_owns))
            phases["compute"] = (t, t := ns())
            samples.append(("compute", t, gl_owns))
            if synced:
                self._sync_after(rec, None, None)
            phases["release"] = (t, t := ns())
            return True, t  # (nothing changed hands: GL's still, as the Python hand-over's ``released``)
        status = calls.run(0, ends[RELEASE]) if read_gl else calls.run_all()
        if status or read_gl:
            return self._native_slow(nf, rec, hand_over, t, gl_owns, cl_owns, status, read_gl)
        # the frame's common case: every call went through (both transitions at once: nothing ran between them)
        stamps, events = calls.stamps, rec.events
        for i, name in nf.waits_before:
            rec.waits.append((name, stamps[i], stamps[i + 1]))
        backend.validator.checked += 2  # (the acquire's and the release's remembered verdicts: SteadyHandOver)
        backend.tracker.handed_over_states(hand_over.states)
        rec.counts = {"acquire": 1, "compute": 1, "release": 1}
        if nf.acquire_out is not None:
            events["acquire"] = cl.Event.from_int_ptr(nf.acquire_out.value, retain=False)
        if nf.kernel_out is not None:
            events["compute"] = cl.Event.from_int_ptr(nf.kernel_out.value, retain=False)
        if nf.release_out is not None:
            events["release"] = cl.Event.from_int_ptr(nf.release_out.value, retain=False)
        phases["acquire"] = (t, t := stamps[nf.acquire_end])
        samples.append(("acquire", t, cl_owns))
        phases["compute"] = (t, t := stamps[nf.compute_end])
        samples.append(("compute", t, cl_owns))
        for i, name in nf.waits_after:
            rec.waits.append((name, stamps[i], stamps[i + 1]))
        try:
            sync.native_after(queue)
            backend.gl_after_release(scene.shared)
        except Exception as exc:  # noqa: BLE001
            self._fail(rec, exc, "release")
        phases["release"] = (t, t := ns())
        return True, t

    def _native_slow(self, nf: NativeFrame, rec: FrameRecord, hand_over, t: int, gl_owns, cl_owns, status: int,
                     read_gl: bool) -> tuple[bool, int]:
        """``_native_hand_over`` where the list stopped: a call failed (``status``), or before the sync
        mode's part after the release, for the GL timer's read ahead of its wait (``read_gl``). Each
        segment's outcome in turn, as the Python hand-over's phases go, the list made on from where
        that hand-over goes on."""
        backend, sync, queue = self.backend, self.sync, hand_over.queue
        calls, ends, be = nf.calls, nf.ends, backend.name
        samples, phases, counts, events = rec.owners, rec.phases, rec.counts, rec.events
        failed = calls.failed if status else calls.n
        stamps = calls.stamps

        def error():
            return call_error(status, calls.calls[failed])

        def event(out):  # (an out slot is read once, and only where its call was made in this frame)
            value, out.value = out.value, None
            return cl.Event.from_int_ptr(value, retain=False)

        if failed >= ends[BEFORE]:
            for i, name in nf.waits_before:
                rec.waits.append((name, stamps[i], stamps[i + 1]))
        if failed < ends[ACQUIRE]:  # the sync's wait (synced: no) or the acquire failed
            if failed < ends[BEFORE]:
                self._fail(rec, error(), "acquire")
                synced = False
            else:
                backend.validator.checked += 1
                exc = error()
                self._fail(rec, ClError.from_pyopencl(exc, f"{be}.acquire"), "acquire")
                synced = True
            phases["acquire"] = (t, t := ns())
            samples.append(("acquire", t, gl_owns))
            phases["compute"] = (t, t := ns())
            samples.append(("compute", t, gl_owns))
            if synced:
                self._native_after(nf, rec, hand_over, read_gl, released=False)
            phases["release"] = (t, t := ns())
            return True, t  # (nothing changed hands: GL's still)
        backend.validator.checked += 1
        backend.tracker.acquired_states(hand_over.states, queue)
        counts["acquire"] = 1
        if nf.acquire_out is not None:
            events["acquire"] = event(nf.acquire_out)
        phases["acquire"] = (t, t := ns())
        samples.append(("acquire", t, cl_owns))
        stop = ends[RELEASE] if read_gl else calls.n
        if failed < ends[COMPUTE]:  # a clSetKernelArg or the launch failed: the release still goes
            self._fail(rec, error(), "compute")
            status = calls.run(ends[COMPUTE], stop)
            failed = calls.failed if status else calls.n
        else:
            if nf.kernel_out is not None:
                events["compute"] = event(nf.kernel_out)
            counts["compute"] = 1
        phases["compute"] = (t, t := ns())
        samples.append(("compute", t, cl_owns))
        backend.validator.checked += 1
        if failed < ends[RELEASE]:  # the release failed: the objects stay CL's, the sync's part still runs
            exc = error()
            self._fail(rec, ClError.from_pyopencl(exc, f"{be}.release"), "release")
            self._native_after(nf, rec, hand_over, read_gl, released=False)
            released = False
        else:
            backend.tracker.released_states(hand_over.states)
            counts["release"] = 1
            if nf.release_out is not None:
                events["release"] = event(nf.release_out)
            if failed < calls.n:  # the sync's part after the release failed (read_gl False: it ran)
                sync.native_after(queue)  # (after_release checks before its first call)
                self._fail(rec, error(), "release")
            elif read_gl:
                self._native_after(nf, rec, hand_over, read_gl, released=True)
            else:
                self._native_after_done(nf, rec, hand_over, released=True)
            released = True
        phases["release"] = (t, t := ns())
        return released, t

    def _native_after(self, nf: NativeFrame, rec: FrameRecord, hand_over, read_gl: bool, released: bool) -> None:
        """The sync mode's part after the release made on its own (``_sync_after``'s): the GL timer's
        read first where one is due, then the segment's calls; a failure recorded on the release."""
        queue, calls = hand_over.queue, nf.calls
        try:
            if read_gl:
                self.sync.native_shadow(queue, self._read_gl, False)
            status = calls.run(nf.ends[RELEASE])
            if status:
                self.sync.native_after(queue)  # (after_release checks before its first call)
                raise call_error(status, calls.calls[calls.failed])
            self._native_after_done(nf, rec, hand_over, released)
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            self._fail(rec, exc, "release")

    def _native_after_done(self, nf: NativeFrame, rec: FrameRecord, hand_over, released: bool) -> None:
        """What follows the sync mode's part after the release once its calls went through: its
        waits on the record, its own checks, GL's side of the hand-over where the release went through."""
        stamps = nf.calls.stamps
        for i, name in nf.waits_after:
            rec.waits.append((name, stamps[i], stamps[i + 1]))
        self.sync.native_after(hand_over.queue)
        if released:
            self.backend.gl_after_release(self.scene.shared)

    def frame_phases(self, frame: int, render_target, stepped: bool = False):
        """The frame as a generator: yields the name of each phase after it ran ("acquire",
        "compute", "release", "render"), so the teaching mode can pause between phases; driving
        it to the end is exactly ``run_frame``. ``stepped``: the teaching mode steps it (the pauses
        between its phases are the user's), and it is timed, its stamps read and its draw timed."""
        backend, scene, queue = self.backend, self.scene, self.backend.queue
        rec = FrameRecord.begin(frame, scene.name, backend.name, self.sync.name, self.segment, stepped)
        if scene.slots > 1:  # frames in flight on copies of the shared objects: frame n uses copy n % slots
            rec.slot = slot = frame % scene.slots
            scene.use_slot(slot)
            self.sync.use_slot(slot, scene.shared)
        self.current = rec
        backend.tracker.frame = frame
        # the tracker's state objects are changed in place by acquire and release: looked up once a
        # frame, each boundary's sample is one tuple of their owners
        # (kept per set of objects, one per copy of them, while the backend's are the same: ``objects_version``)
        found = self._owned_states((backend.objects_version, *map(id, scene.shared)))
        owned, rec.owner_labels = found[0], found[1]
        samples = rec.owners
        rec.start_ns = t = ns()
        interval, last = self.stamps_interval_ns, self._sampled_ns
        if stepped or last is None or self._work_since >= interval or t - last >= STAMPS_WALL_FACTOR * interval:
            self._sampled_ns, self._work_since = t, 0
            events = kernel_event = True
        else:
            rec.sampled = False
            # an untimed frame's events are asked of the driver only where something reads them
            # (each costs the calling thread 2.2 us on the H200: bench/results/README.md)
            events, kernel_event = self._untimed_events, self._untimed_kernel_event
        samples.append(("start", t, tuple(map(_OWNER, owned))))
        copied = backend.bytes_copied
        waits_on_cpu = self._cl_harvested = self._gl_harvested = self._waits_on_cpu
        ok = synced = True
        try:
            if self.faults is not None:
                self.faults("acquire", rec)
            if self.sync.bounded_run_ahead:
                self._bound_run_ahead(rec)
            backend.gl_before_acquire(scene.shared)
            if waits_on_cpu:  # the CL stamps of earlier frames, in the wait for GL where a batch is due
                shadow = self._shadow_cl if len(self._pending) >= self._harvest_at else None
            else:
                shadow = self._shadow_cl
            synced = False
            wait_for = self.sync.before_acquire(rec.waits, shadow)
            synced = True
            ev_a = None
            if "acquire" not in self.skip:
                ev_a = backend.acquire(queue, scene.shared, wait_for or None, out=events)
                rec.counts["acquire"] += 1
            if ev_a is not None:
                rec.events["acquire"] = ev_a
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            ok = self._fail(rec, exc, "acquire")
        rec.phases["acquire"] = (t, t := ns())
        samples.append(("acquire", t, tuple(map(_OWNER, owned))))
        yield "acquire"
        acquired = ok  # what CL took is handed back below even when the compute fails
        t = ns()  # stepped (teaching mode): the time until the next step is not the next phase's
        ev_c = None
        if ok:
            try:
                if self.faults is not None:
                    self.faults("compute", rec)
                backend.tracker.cl_use(scene.cl_uses, "kernel")
                if ev_a is not None:
                    after = None if self._in_order else [ev_a]
                else:  # no acquire enqueued (skipped, or nothing to hand over): the sync's events, if any
                    after = wait_for or None
                if kernel_event:
                    ev_c = scene.compute(queue, frame, after)
                else:  # (a scene whose ``compute_takes_null_event``)
                    ev_c = scene.compute(queue, frame, after, event=False)
                if ev_c is not None:
                    rec.events["compute"] = ev_c
                rec.counts["compute"] += 1
            except Exception as exc:  # noqa: BLE001
                ok = self._fail(rec, exc, "compute")
        rec.phases["compute"] = (t, t := ns())
        samples.append(("compute", t, tuple(map(_OWNER, owned))))
        yield "compute"
        t = ns()  # stepped (teaching mode): the time until the next step is not the next phase's
        ev_r, released = None, False
        if acquired:
            try:
                if self.faults is not None:
                    self.faults("release", rec)
                if "release" not in self.skip:
                    ev_r = backend.release(queue, scene.shared,
                                           [ev_c] if ev_c is not None and not self._in_order else None, out=events)
                    rec.counts["release"] += 1
                    if ev_r is not None:
                        rec.events["release"] = ev_r
                released = True
            except Exception as exc:  # noqa: BLE001
                self._fail(rec, exc, "release")
        if synced:  # the sync's side of the frame, whatever became of the hand-over (``_sync_after``)
            self._sync_after(rec, ev_r, scene.shared if released else None)
        rec.phases["release"] = (t, t := ns())
        samples.append(("release", t, tuple(map(_OWNER, owned))))
        yield "release"
        t = ns()  # stepped (teaching mode): the time until the next step is not the next phase's
        try:
            if self.faults is not None:
                self.faults("render", rec)
            size = render_target()
            if not self._gl_harvested:  # (no wait for CL in this frame's sync mode took it)
                self.gl_timer.harvest()  # the frames before (done once the sync waited), before this frame's pass
            if size is not None:
                backend.tracker.gl_use(scene.gl_uses, "draw")
                with self.gl_timer.span(rec, "gl render"):
                    scene.render(size)
            self.sync.after_gl_use(rec.waits)
            self._after_draw(rec)
        except Exception as exc:  # noqa: BLE001
            self._fail(rec, exc, "render")
        rec.phases["render"] = (t, t := ns())
        samples.append(("render", t, tuple(map(_OWNER, owned))))
        rec.end_ns = t
        self._work_since += t - rec.start_ns
        flags = backend.tracker.flags
        if flags and flags[-1].frame == frame:  # flags are appended in frame order: this frame's are last
            first = len(flags) - 1
            while first > 0 and flags[first - 1].frame == frame:
                first -= 1
            rec.hazards = flags[first:]
        rec.bytes_moved = backend.bytes_copied - copied  # what the backend copied in this frame
        self.history.add(rec)
        self._pending.append(rec)
        self.current = None
        if not self._cl_harvested and len(self._pending) >= self._harvest_at:
            self.harvest(gl=False)  # (no wait for GL in this frame's sync mode took it)
        yield "render"

    def _after_draw(self, rec: FrameRecord) -> None:
        """The end of a frame's render phase: the run-ahead bound's fence past the draw, then the
        frame's GL errors."""
        if self.sync.bounded_run_ahead:
            # where GL waited on the GPU for CL's release (``SyncMode.gl_waits_for_release``) a GL
            # fence past the draw says the release completed too: the bound asks no CL event's status
            release = None if self.sync.gl_waits_for_release else rec.events.get("release")
            self._in_flight.append((release, self._fence(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)))
        # the GL calls made straight through ctypes (app/gl/raw.py) since the sync's, the draw's and
        # those after it (a copy's semaphore signal, the fence), are checked here, on their frame
        code = self._gl_error()
        if code:
            check_gl(f"render {self.scene.name}", code)

    def _sync_after(self, rec: FrameRecord, ev_r, released) -> None:
        """The sync mode's ``after_release`` on every frame whose ``before_acquire`` ran, even where the
        acquire, the compute or the release failed or was skipped: each frame's pair of the sync's
        operations stays whole. Semaphores make it a rule: the frame's CL wait on GL's binary
        semaphore was enqueued, and glshare flushes CL's queue at ``after_release``; a frame without
        it left that wait unflushed while the next frame's GL signalled the same semaphore again (a
        binary semaphore must be unsignaled when a signal operation on it executes: Vulkan,
        vkQueueSubmit), and the H200 hung in clFinish
        (bench/probes/release_failure_probe.py, bench/results/README.md, fourteenth session). GL then
        waits for CL's commands, so its draw reads what the kernel finished even where the objects
        stayed CL's (the draw is flagged, as before). ``released``: the objects whose release went
        through, for GL's side of the hand-over (``gl_after_release``), or None."""
        try:
            if self._waits_on_cpu:  # the GL timer's passes, in the wait for CL where a read is due
                timer = self.gl_timer
                shadow = self._read_gl if timer.enabled and timer.due() else None
            else:
                shadow = self._shadow_gl
            self.sync.after_release(self.backend.queue, ev_r, rec.waits, shadow)
            if released is not None:
                self.backend.gl_after_release(released)
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            self._fail(rec, exc, "release")

    def _harvest_cl_in_wait(self) -> None:
        """The CL stamps of earlier frames, read while the CPU would wait for GL (a sync mode's
        ``shadow``): where a batch is due, as the frame's end would read it."""
        self._cl_harvested = True
        if len(self._pending) >= self._harvest_at:
            t0 = ns()
            self.harvest(gl=False)
            self.current.bookkeeping.append(("CL profiling harvest", t0, ns()))

    def _harvest_gl_in_wait(self) -> None:
        """The GL timer's finished passes, read while the CPU would wait for CL (a sync mode's ``shadow``)."""
        self._gl_harvested = True
        self._gl_read_on_record(self.gl_timer.harvest)

    def _read_gl_in_wait(self) -> None:
        """The same, where the frame asked the timer whether a read is due (``GlTimer.due``): it is."""
        self._gl_read_on_record(self.gl_timer.read)

    def _gl_read_on_record(self, read) -> None:
        timer = self.gl_timer
        t0, timed = ns(), timer.timed
        read()
        if timer.timed != timed:  # on the record where a pass was read (the timer looks every few frames)
            self.current.bookkeeping.append(("GL timer harvest", t0, ns()))

    def _bound_run_ahead(self, rec: FrameRecord) -> None:
        """Wait, on the CPU, until no more than ``frames_in_flight - 1`` earlier frames may still run
        on the GPU (their release complete, GL past their draw); the wait is one of the frame's."""
        if len(self._in_flight) >= self.frames_in_flight:
            # the CPU is about to wait for the GPU: the bookkeeping of earlier frames first (``shadow``)
            self._shadow_cl()
            self._shadow_gl()
        while len(self._in_flight) >= self.frames_in_flight:
            release, fence = self._in_flight.popleft()
            t0 = ns()
            if release is not None and event_info().status(release.int_ptr) != CL_COMPLETE:
                release.wait()  # (asked first: a frame that far back has usually completed)
            try:
                status = self._client_wait(fence, GL.GL_SYNC_FLUSH_COMMANDS_BIT, GL_TIMEOUT_NS)
            finally:
                self._delete_sync(fence)
            t1 = ns()
            rec.waits.append((self._in_flight_wait, t0, t1))
            if status not in (GL.GL_ALREADY_SIGNALED, GL.GL_CONDITION_SATISFIED):
                # GL_TIMEOUT_EXPIRED: the fence of an earlier frame's draw did not signal in
                # GL_TIMEOUT_NS; GL_WAIT_FAILED: an error (OpenGL 4.6 section 4.1.1, ClientWaitSync)
                # recorded on this frame (as the stall watchdog records one), which goes on
                what = "timed out" if status == GL.GL_TIMEOUT_EXPIRED else f"failed (status 0x{int(status):04X})"
                exc = QueueStalled(f"glClientWaitSync on the GL fence of an earlier frame's draw {what} after "
                                   f"{(t1 - t0) / 1e6:.0f} ms (limit {GL_TIMEOUT_NS / 1e9:.0f} s): the GPU did not "
                                   "finish that draw", where="frames in flight", name="queue stalled")
                rec.errors.append(error_record(rec.index, exc, "frames in flight"))
                log.warning("frame %d: %s", rec.index, exc.one_line())

    def _drop_in_flight(self) -> None:
        while self._in_flight:
            self._delete_sync(self._in_flight.popleft()[1])

    def _fail(self, rec: FrameRecord, exc: BaseException, phase: str) -> bool:
        """Record the error on the frame, a raw CL or GL error as glshare's (ClError, GlError, naming
        the phase); raise it where ``strict`` says (a finding of its kinds; True: any failure).
        False: later CL phases skip."""
        err = as_glshare_error(exc, phase)
        rec.errors.append(error_record(rec.index, err, phase))
        log.debug("frame %d %s failed: %s", rec.index, phase, err)
        if self._raise_every or stops_on(self._strict, err):
            if err is exc:
                raise exc
            raise err from exc
        return False

    # -- profiling ---------------------------------------------------------------------------
    def harvest(self, wait: bool = False, gl: bool = True) -> None:
        """Read the CL profiling of frames whose events completed; drop the event references.
        GL timer results that arrived go onto their records too (never waiting unless ``wait``).

        ``gl=False`` (the end of each frame) leaves the GL timers to the next frame's render phase,
        before its own pass: asking whether a query issued a moment ago has its result made llvmpipe
        flush and wait for the frame's draw right there, while after the next frame's sync wait the
        results are in."""
        if gl:
            self.gl_timer.harvest(wait)
        pending = self._pending
        if not pending:
            return
        # every event on the records was enqueued on the backend's queue; where it is in order (every
        # backend's is) its commands complete in order, so the newest complete event says every older
        # one is done too: walk back from the newest to find it (one status query when the queue has
        # drained, as with sync finish), then read everything up to it without asking each its status.
        flat = [(rec, name, ev) for rec in pending for name, ev in rec.events.items()]
        upto = len(flat)
        info = event_info()  # clGetEventInfo / clGetEventProfilingInfo through prepared ctypes calls
        submit = self.profile_submit
        if not wait:
            upto = 0
            if self._in_order:
                for i in range(len(flat) - 1, -1, -1):
                    if info.status(flat[i][2].int_ptr) == CL_COMPLETE:
                        upto = i + 1
                        break
            else:  # commands may complete out of order: each is asked, up to the first not complete
                while upto < len(flat) and info.status(flat[upto][2].int_ptr) == CL_COMPLETE:
                    upto += 1
        read = flat[:upto]
        if wait:
            waited = []
            for rec, name, ev in read:
                try:
                    ev.wait()
                    waited.append((rec, name, ev))
                except cl.Error as exc:  # a command that failed: its error, and no profile to read
                    rec.errors.append(error_record(rec.index, exc, f"profile {name}"))
                    del rec.events[name]
            read = waited
        # the timed frames' stamps (``FrameRecord.sampled``), in one call for the whole batch where
        # app/native is built (EventInfo.profiles); the other frames' events are dropped unread
        stamped = [item for item in read if item[0].sampled]
        for (rec, name, _), prof in zip(stamped, info.profiles([ev.int_ptr for _, _, ev in stamped], submit)):
            if isinstance(prof, cl.Error):
                rec.errors.append(error_record(rec.index, prof, f"profile {name}"))
            elif prof[0] and prof[2] and prof[3]:
                rec.cl_profile[name] = prof
            else:  # a zero stamp is none: the driver did not time the command (NVIDIA's markers)
                rec.unstamped += (name,)
        for rec, name, _ in read:
            del rec.events[name]
        while pending and not pending[0].events:
            self.history.harvested(pending.popleft())

    def finish(self) -> None:
        release = getattr(self.faults, "close", None)
        if release is not None:
            release()  # a queue stalled on purpose is let go before it is waited for
        self.backend.queue.finish()
        self.harvest(wait=True)

    def instrument(self, wrap: Wrap):
        """Put ``wrap(piece, fn)`` in place of each piece of bookkeeping the scheduler adds to a frame
        until the returned undo is called: "CL profiling harvest", "GL timer harvest" and "GL timer
        span" (entering and leaving the span around the scene's draw, each wrapped). The backend's
        own pieces: ``SharingBackend.instrument``. Nothing is rebound, and nothing costs, otherwise."""
        enter = wrap("GL timer span", lambda cm: cm.__enter__())
        leave = wrap("GL timer span", lambda cm, *exc: cm.__exit__(*exc))

        def spans(piece, span):
            return lambda rec, name: _WrappedSpan(span(rec, name), enter, leave)

        undo = instrument_attributes([(self, "harvest", "CL profiling harvest"),
                                      (self.gl_timer, "harvest", "GL timer harvest"),
                                      (self.gl_timer, "read", "GL timer harvest")], wrap)
        undo_span = instrument_attributes([(self.gl_timer, "span", "GL timer span")], spans)

        def both() -> None:
            undo_span()
            undo()

        return both

    def close(self) -> None:
        self._drop_in_flight()
        self.sync.close()
        self.gl_timer.release()


class _WrappedSpan:
    """A context manager whose enter and exit go through instrumented callables."""

    def __init__(self, cm, enter, leave) -> None:
        self.cm, self.enter, self.leave = cm, enter, leave

    def __enter__(self):
        return self.enter(self.cm)

    def __exit__(self, *exc):
        return self.leave(self.cm, *exc)
