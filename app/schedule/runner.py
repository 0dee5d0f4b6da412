"""The one runner of a frame: walks the plan's steps (app/schedule/plan.py) with an executor's calls
(app/schedule/executors.py), stamps each phase, samples the owners at each boundary, records the
waits and the errors, and applies the failure rules, the same for every executor.

A frame runs with the checked executor where it is stepped (the teaching mode), where faults are
injected or calls skipped on purpose (the hazard demonstrations), and on the first frame on each
copy of the objects; otherwise, on the backend's in-order queue, with the remembered one (both
hand-over calls accepted before, every shared object GL's: ``HandOver.steady``), or
the native one where the backend, the sync mode and the scene each prepare their calls. Every
executor gives the same record, tracker states, validator counts and pictures
(tests/contract/test_steady_frame.py, tests/schedule/test_runner.py).
"""
from __future__ import annotations

import logging
import operator
import time

from app.errors import as_glshare_error
from app.gl.context import check_gl
from app.memo import keep
from app.schedule.executors import Native, Remembered
from app.schedule.frame import FrameRecord, error_record
from app.schedule.native import prepare as prepare_native
from app.schedule.plan import FramePlan
from app.validate.findings import stops_on
from app.validate.ownership import CL

log = logging.getLogger(__name__)
ns = time.perf_counter_ns
STAMPS_WALL_FACTOR = 10  # a frame is timed at least every this many stamps intervals of the clock
_OWNER = operator.attrgetter("owner")
ALL_MADE = {"acquire": 1, "compute": 1, "release": 1}  # a record's counts where every step's calls were made


class FrameRunner:
    """The frame's walk; ``FrameScheduler`` (app/schedule/scheduler.py) sets up what it reads."""

    def _walk(self, frame: int, render_target, stepped: bool = False, checked: bool = False):
        """The frame as a generator: yields each phase's name after it ran ("acquire", "compute",
        "release", "render"). ``stepped``: the teaching mode steps it (the pauses are the user's);
        ``checked``: with the checked executor, whatever the case (a caller that looks at the
        tracker between the phases: the teaching mode, the contract tests). An executor whose
        ``sync_before`` made the steps up to the release, each gone through, says so in ``done``
        (the acquire's and the kernel's end, the events it made by step): those steps then only
        record what it made."""
        rec, plan, ex, events, kernel_event = self._begin(frame, stepped, checked)
        backend, scene, profiles, samples, phases = self.backend, self.scene, self.profiles, rec.owners, rec.phases
        # the owners at each boundary: the tracker's states sampled (``owned``), or where the steady case
        # holds (None) they follow from the transitions alone (all GL's at the start, CL's once acquired)
        owned, gl_owns, cl_owns = plan.owned if ex.checks_uses else None, plan.gl_owns, plan.cl_owns
        faults, skip, t, copied = self.faults, self.skip, rec.start_ns, backend.bytes_copied
        waits_on_cpu = profiles.cl_done = profiles.gl_done = self._waits_on_cpu
        profiles.gl_due = None
        ok = synced = True
        done = ev_a = ev_c = None
        try:  # the step "sync before", then "acquire"
            if faults is not None:
                faults("acquire", rec)
            if self.sync.bounded_run_ahead:
                self.in_flight.bound(rec, self._shadow_both)
            backend.gl_before_acquire(scene.shared)
            if waits_on_cpu:  # the CL stamps of earlier frames, in the wait for GL where a batch is due
                timer = self.gl_timer
                profiles.gl_due = timer.enabled and timer.due()  # (asked once a frame: the wait for CL reads)
                shadow = profiles.cl_in_wait if len(profiles.pending) >= profiles.due_at else None
            else:
                shadow = profiles.cl_in_wait
            synced = False
            wait_for = ex.sync_before(rec.waits, shadow)
            synced, done = True, ex.done
            if done is not None:  # (the steps up to the release each went through: one count each)
                rec.counts.update(ALL_MADE)
                if done[2]:
                    rec.events.update(done[2])
            elif "acquire" not in skip:
                ev_a = ex.acquire(wait_for, events)
                rec.counts["acquire"] = 1  # (each step runs at most once a frame)
                if ev_a is not None:
                    rec.events["acquire"] = ev_a
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            ok = self._fail(rec, exc, "acquire")
        phases["acquire"] = (t, t := ns() if done is None else done[0])
        samples.append(("acquire", t, cl_owns if ok else gl_owns) if owned is None else
                       ("acquire", t, tuple(map(_OWNER, owned))))
        yield "acquire"
        if stepped:  # (the time until the next step is the user's, not the next phase's)
            t = ns()
        if ok and done is None:  # (what CL took is handed back below even when the compute fails)
            try:
                if faults is not None:
                    faults("compute", rec)
                if owned is not None:
                    backend.handover.kernel_uses(scene.cl_uses)
                after = (None if self._in_order else [ev_a]) if ev_a is not None else (wait_for or None)
                compute = ex.compute or scene.compute
                ev_c = compute(self._queue, frame, after) if kernel_event else \
                    compute(self._queue, frame, after, event=False)  # (``Scene.compute_takes_null_event``)
                if ev_c is not None:
                    rec.events["compute"] = ev_c
                rec.counts["compute"] = 1
            except Exception as exc:  # noqa: BLE001
                self._fail(rec, exc, "compute")
        phases["compute"] = (t, t := ns() if done is None else done[1])
        samples.append(("compute", t, cl_owns if ok else gl_owns) if owned is None else
                       ("compute", t, tuple(map(_OWNER, owned))))
        yield "compute"
        if stepped:
            t = ns()
        owns = gl_owns if self._release(rec, ex, ok, synced, ev_c, events, done) else cl_owns
        phases["release"] = (t, t := ns())
        samples.append(("release", t, owns) if owned is None else ("release", t, tuple(map(_OWNER, owned))))
        yield "release"
        self._render(rec, render_target, ns() if stepped else t, copied, owned, owns)
        yield "render"

    def _begin(self, frame: int, stepped: bool, checked: bool) -> tuple:
        """The frame's record begun, its copy of the objects chosen, its plan, its executor, and
        whether its events are asked for: (record, plan, executor, events, kernel's event)."""
        backend, scene, sync = self.backend, self.scene, self.sync
        rec = FrameRecord.begin(frame, scene.name, backend.name, sync.name, self.segment, stepped)
        if scene.slots > 1:  # frames in flight on copies of the shared objects: frame n uses copy n % slots
            rec.slot = slot = frame % scene.slots
            scene.use_slot(slot)
            sync.use_slot(slot, scene.shared)
        self.current = self.profiles.rec = rec
        handover = backend.handover
        handover.begin_frame(frame)
        key = (backend.objects_version, *map(id, scene.shared))
        plan = self._plans.get(key)
        if plan is None:  # (the key's objects are held with it: no id in it can be reused while it is kept)
            plan = keep(self._plans, key, FramePlan(key, scene, handover))
        rec.owner_labels = plan.labels
        rec.start_ns = t = ns()
        interval, last = self.stamps_interval_ns, self._sampled_ns
        if stepped or last is None or self._work_since >= interval or t - last >= STAMPS_WALL_FACTOR * interval:
            self._sampled_ns, self._work_since = t, 0
            events = kernel_event = True
        else:  # an untimed frame's events are asked of the driver only where something reads them
            rec.sampled = False
            events, kernel_event = self._untimed_events, self._untimed_kernel_event
        # the steady case: the in-order queue, no faults or skipped calls, the scene's uses those of the
        # plan, both hand-over calls accepted before and every object GL's (``HandOver.steady``)
        if checked or not self._steady_mode or not self.steady or self.skip or self.faults is not None \
                or not plan.covered or scene.cl_uses is not plan.cl_uses or scene.gl_uses is not plan.gl_uses \
                or (hand_over := handover.steady(self._queue, key)) is None:
            ex = self._checked
            rec.owners.append(("start", t, tuple(map(_OWNER, plan.owned))))
        else:
            ex = None
            if self.native:  # (the hand-over is held with its executor: its identity cannot be reused while kept)
                ex = self._natives.get((hand_over, events, kernel_event, sync.native_variant(), scene.native_key()),
                                       False)
                if ex is False:
                    ex = self._native_for(hand_over, events, kernel_event)
            if ex is None:
                ex = plan.remembered
                if ex is None or ex.hand_over is not hand_over:
                    ex = plan.remembered = Remembered(backend, scene, sync, hand_over)
            rec.owners.append(("start", t, plan.gl_owns))
        self.executed = ex.name
        return rec, plan, ex, events, kernel_event

    def _native_for(self, hand_over, events: bool, kernel_event: bool) -> Native | None:
        """The native executor of the steady frame's calls prepared for one foreign call, or None
        where a piece makes its calls in Python (app/schedule/native.py); kept per (hand-over,
        events, kernel's event, the sync mode's variant, the scene's key)."""
        scene, backend, sync = self.scene, self.backend, self.sync
        variant = sync.native_variant()
        nf = prepare_native(backend, scene, sync, hand_over, events, kernel_event, variant)
        ex = None if nf is None else Native(backend, scene, sync, hand_over, nf, self.profiles)
        return keep(self._natives, (hand_over, events, kernel_event, variant, scene.native_key()), ex)

    def _release(self, rec: FrameRecord, ex, acquired: bool, synced: bool, ev_c, events: bool, done) -> bool:
        """The steps "release" (where the acquire went through) and "sync after" (where the sync's
        part before the acquire was reached: ``plan.STEPS``); whether the objects are GL's after
        them (released, or never acquired)."""
        ev_r, released = None, done is not None  # (done: made and recorded with the acquire)
        if acquired and not released:
            try:
                if self.faults is not None:
                    self.faults("release", rec)
                if "release" not in self.skip:
                    ev_r = ex.release(ev_c, events)
                    rec.counts["release"] = 1
                    if ev_r is not None:
                        rec.events["release"] = ev_r
                released = True
            except Exception as exc:  # noqa: BLE001
                self._fail(rec, exc, "release")
        if synced:
            try:
                profiles = self.profiles
                if done is not None:  # (its calls made with the rest: no wait of it is left to read in)
                    shadow = None
                elif self._waits_on_cpu:  # the GL timer's passes, in the wait for CL where a read is due
                    if profiles.gl_due is None:  # (not asked yet: the frame failed before its sync wait)
                        timer = self.gl_timer
                        profiles.gl_due = timer.enabled and timer.due()
                    shadow = profiles.read_gl_in_wait if profiles.gl_due else None
                else:
                    shadow = profiles.gl_in_wait
                ex.sync_after(self._queue, ev_r, rec.waits, shadow)
                if released:
                    self.backend.gl_after_release(self.scene.shared)
            except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
                self._fail(rec, exc, "release")
        return released or not acquired  # (never acquired: GL's still)

    def _render(self, rec: FrameRecord, render_target, t: int, copied: int, owned, owns) -> None:
        """The step "render": the scene's draw (its use checked where CL may hold the objects: ``owns``
        the owners after the release as they follow from the transitions; ``owned`` the tracker's
        states where those are sampled instead, else None), the run-ahead bound's fence past it, the
        frame's GL errors; then the frame's end: its findings, the bytes moved, into the history, the
        CL stamps due."""
        backend, scene, sync, profiles = self.backend, self.scene, self.sync, self.profiles
        try:
            if self.faults is not None:
                self.faults("render", rec)
            size = render_target()
            if not profiles.gl_done:  # (no wait for CL in this frame's sync mode took it)
                self.gl_timer.harvest()  # the frames before (done once the sync waited), before this frame's pass
            if size is not None:
                if owned is not None or CL in owns:
                    backend.handover.draw_uses(scene.gl_uses)
                if rec.sampled:
                    with self.gl_timer.span(rec, "gl render"):
                        scene.render(size)
                else:  # (the timer's span of a frame not timed does nothing)
                    scene.render(size)
            sync.after_gl_use(rec.waits)
            if sync.bounded_run_ahead:
                # where GL waited on the GPU for CL's release (``SyncMode.gl_waits_for_release``) a GL
                # fence past the draw says the release completed too: the bound asks no CL event's status
                self.in_flight.add(None if sync.gl_waits_for_release else rec.events.get("release"))
            # the GL calls made straight through ctypes (app/gl/raw.py) since the sync's, the draw's
            # and those after it (a copy's semaphore signal, the fence), are checked here, on their frame
            code = self._gl_error()
            if code:
                check_gl(f"render {scene.name}", code)
        except Exception as exc:  # noqa: BLE001
            self._fail(rec, exc, "render")
        rec.phases["render"] = (t, t := ns())
        rec.owners.append(("render", t, owns) if owned is None else ("render", t, tuple(map(_OWNER, owned))))
        rec.end_ns = t
        self._work_since += t - rec.start_ns
        rec.hazards = backend.handover.findings_of(rec.index)
        rec.bytes_moved = backend.bytes_copied - copied  # what the backend copied in this frame
        self.history.add(rec)
        profiles.pending.append(rec)
        self.current = None
        if not profiles.cl_done and len(profiles.pending) >= profiles.due_at:
            profiles.harvest(gl=False)  # (no wait for GL in this frame's sync mode took it)

    def _shadow_both(self) -> None:
        """The bookkeeping of earlier frames, where the CPU is about to wait for the run-ahead bound."""
        self.profiles.cl_in_wait()
        self.profiles.gl_in_wait()

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
