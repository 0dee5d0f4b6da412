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


class FrameRunner:
    """The frame's walk; ``FrameScheduler`` (app/schedule/scheduler.py) sets up what it reads."""

    def _walk(self, frame: int, render_target, stepped: bool = False, checked: bool = False):
        """The frame as a generator: yields each phase's name after it ran ("acquire", "compute",
        "release", "render"). ``stepped``: the teaching mode steps it (the pauses are the user's);
        ``checked``: with the checked executor, whatever the case (a caller that looks at the tracker
        between the phases)."""
        # the owners at each boundary: the tracker's states sampled (``owned``: a checked frame, the one with
        # faults and skipped calls), or following from the transitions (all GL's, CL's once acquired)
        rec, ex, owned, gl_owns, cl_owns, events, kernel_event, t = self._begin(frame, stepped, checked)
        profiles, samples, phases = self.profiles, rec.owners, rec.phases
        if not (waits_on_cpu := self._waits_on_cpu):  # (a mode that waits on the CPU: each done in its waits)
            profiles.cl_done = profiles.gl_done = False
        # (the GL timer asked once a frame whether a read is due: the wait for CL reads it)
        profiles.gl_due = waits_on_cpu and self.gl_timer.enabled and self.gl_timer.due()
        done = ev_a = ev_c = None
        ok = synced = True
        try:  # the step "sync before", then "acquire"
            if owned is not None and self.faults is not None:
                self.faults("acquire", rec)
            if self._bounded:
                self.in_flight.bound(rec, self._shadow_both)
            self.backend.gl_before_acquire(self.scene.shared)
            shadow = profiles.cl_in_wait if not waits_on_cpu or profiles.pending and \
                len(profiles.pending) >= profiles.due_at else None  # (earlier frames' stamps where a batch is due)
            synced = False
            wait_for = ex.sync_before(rec.waits, shadow)
            synced = True
            if (done := ex.done) is None:
                if owned is None or "acquire" not in self.skip:
                    ev_a = ex.acquire(wait_for, events)
                    rec.counts["acquire"] = 1  # (each step runs at most once a frame)
                    if ev_a is not None:
                        rec.events["acquire"] = ev_a
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            ok = self._fail(rec, exc, "acquire")
        if done is not None:  # the steps up to the release made, each gone through: what they made recorded
            rec.counts = {"acquire": 1, "compute": 1, "release": 1}
            if done[2] is not None:
                rec.events.update(done[2])
            phases["acquire"] = (t, a := done[0])
            phases["compute"] = (a, t := done[1])
            samples += (("acquire", a, cl_owns), ("compute", t, cl_owns))
            yield "acquire"
        else:
            owns = cl_owns if ok else gl_owns  # (after the acquire and the compute, where not sampled)
            phases["acquire"] = (t, t := ns())
            samples.append(("acquire", t, owns) if owned is None else ("acquire", t, tuple(map(_OWNER, owned))))
            yield "acquire"
            if stepped:  # (the time until the next step is the user's, not the next phase's)
                t = ns()
            if ok:  # the step "compute" (what CL took is handed back below even when it fails)
                try:
                    if owned is not None:  # (a checked frame: faults made on purpose, the kernel's uses checked)
                        if self.faults is not None:
                            self.faults("compute", rec)
                        self._handover.kernel_uses(self.scene.cl_uses)
                    after = (None if self._in_order else [ev_a]) if ev_a is not None else (wait_for or None)
                    # (the scene's own looked up each frame: a test may replace it on the instance)
                    ev_c = (ex.compute or self.scene.compute)(self._queue, frame, after) if kernel_event else \
                        (ex.compute or self.scene.compute)(self._queue, frame, after, event=False)  # (a NULL event)
                    if ev_c is not None:
                        rec.events["compute"] = ev_c
                    rec.counts["compute"] = 1
                except Exception as exc:  # noqa: BLE001
                    self._fail(rec, exc, "compute")
            phases["compute"] = (t, t := ns())
            samples.append(("compute", t, owns) if owned is None else ("compute", t, tuple(map(_OWNER, owned))))
        yield "compute"
        if stepped:
            t = ns()
        if done is not None:  # (every later call made: GL's side of the release is left)
            owns = gl_owns
            self._gl_side(rec)
        else:
            owns = gl_owns if self._release(rec, ex, ok, synced, ev_c, events, owned) else cl_owns
        phases["release"] = (t, t := ns())
        samples.append(("release", t, owns) if owned is None else ("release", t, tuple(map(_OWNER, owned))))
        yield "release"
        self._render(rec, render_target, ns() if stepped else t, owned, owns)
        yield "render"

    def _begin(self, frame: int, stepped: bool, checked: bool) -> tuple:
        """The frame's record begun, its copy of the objects chosen, its plan, its executor, and
        whether its events are asked for: (record, executor, the tracker's states sampled or None,
        the owners all GL's, all CL's, events, kernel's event, its start)."""
        scene = self.scene
        rec = self._record(frame, stepped=stepped)
        if self._copies:  # frames in flight on copies of the shared objects: frame n uses copy n % slots
            rec.slot = slot = frame % scene.slots
            scene.use_slot(slot)
            self.sync.use_slot(slot, scene.shared)
        self.current = self.profiles.rec = rec
        self._copied = self.backend.bytes_copied
        key = (self.backend.objects_version, *map(id, scene.shared))
        # the steady case's hand-over (both calls accepted before and every object GL's: ``HandOver.steady``)
        hand_over = self._handover.begin_frame(frame, self._queue, key)
        plan = self._plans.get(key)
        if plan is None:  # (the key's objects are held with it: no id in it can be reused while it is kept)
            plan = keep(self._plans, key, FramePlan(key, scene, self._handover))
        rec.owner_labels = plan.labels
        rec.start_ns = t = ns()
        if stepped or self._work_since >= self._interval or t >= self._timed_by:
            self._sampled_ns, self._timed_by, self._work_since = t, t + self._wall_ns, 0
            events = kernel_event = True
        else:  # an untimed frame's events are asked of the driver only where something reads them
            rec.sampled = False
            events, kernel_event = self._untimed_events, self._untimed_kernel_event
        # the steady case: the in-order queue, no faults (``_steady_ok``) or skipped calls, the scene's uses
        # those of the plan (None where they are not all shared objects: ``FramePlan.covered``)
        if hand_over is None or checked or not self._steady_ok or self.skip \
                or (scene.shared is not plan.cl_uses if self._uses_shared else
                    scene.cl_uses is not plan.cl_uses or scene.gl_uses is not plan.gl_uses):
            ex, owned = self._checked, plan.owned
            rec.owners.append(("start", t, tuple(map(_OWNER, owned))))
        else:
            if self._try_native:  # (the hand-over is held with its executor: its identity cannot be reused while kept)
                variant = self._native_variant and self._native_variant()  # (None: the mode's calls never vary)
                ex = self._natives.get((hand_over, events, kernel_event, variant, self._native_key()), False)
                if ex is False:
                    ex = self._native_for(hand_over, events, kernel_event)
            if not self._try_native or ex is None:
                ex = plan.remembered
                if ex is None or ex.hand_over is not hand_over:
                    ex = plan.remembered = Remembered(self.backend, scene, self.sync, hand_over)
            rec.owners.append(("start", t, plan.gl_owns))
            owned = None
        self._ex = ex
        return rec, ex, owned, plan.gl_owns, plan.cl_owns, events, kernel_event, t

    def _native_for(self, hand_over, events: bool, kernel_event: bool) -> Native | None:
        """The native executor of the steady frame's calls prepared for one foreign call, or None
        where a piece makes its calls in Python (app/schedule/native.py); kept per (hand-over,
        events, kernel's event, the sync mode's variant, the scene's key)."""
        scene, backend, sync = self.scene, self.backend, self.sync
        variant = sync.native_variant()
        nf = prepare_native(backend, scene, sync, hand_over, events, kernel_event, variant)
        ex = None if nf is None else Native(backend, scene, sync, hand_over, nf, self.profiles)
        return keep(self._natives, (hand_over, events, kernel_event, variant, scene.native_key()), ex)

    def _release(self, rec: FrameRecord, ex, acquired: bool, synced: bool, ev_c, events: bool, owned) -> bool:
        """The steps "release" (where the acquire went through) and "sync after" (where the sync's
        part before the acquire was reached: ``plan.STEPS``); whether the objects are GL's after
        them (released, or never acquired)."""
        released = ev_r = None  # (None: not released)
        if acquired:
            try:
                if owned is None or not self._skipped(rec, "release"):
                    ev_r = ex.release(ev_c, events)
                    rec.counts["release"] = 1
                    if ev_r is not None:
                        rec.events["release"] = ev_r
                released = True
            except Exception as exc:  # noqa: BLE001
                self._fail(rec, exc, "release")
        if synced:  # the GL timer's passes, in the wait for CL where a read is due
            if self._waits_on_cpu:
                shadow = self.profiles.read_gl_in_wait if self.profiles.gl_due else None
            else:
                shadow = self.profiles.gl_in_wait
            try:
                ex.sync_after(self._queue, ev_r, rec.waits, shadow)
                if released:  # GL's side (as ``_gl_side``: the done frame's)
                    self.backend.gl_after_release(self.scene.shared)
            except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
                self._fail(rec, exc, "release")
        return released or not acquired  # (never acquired: GL's still; released None: not)

    def _skipped(self, rec: FrameRecord, step: str) -> bool:
        """A checked frame's ``step``: its fault made on purpose first (raising it); whether its call
        is skipped (the hazard demonstrations)."""
        if self.faults is not None:
            self.faults(step, rec)
        return step in self.skip

    def _gl_side(self, rec: FrameRecord) -> None:
        """GL's side of the release (``SharingBackend.gl_after_release``: a texture's copy from its
        buffer) where the executor made every call before it (``done``); its failure is the
        release's, as in ``_release``."""
        try:
            self.backend.gl_after_release(self.scene.shared)
        except Exception as exc:  # noqa: BLE001 - recorded, shown in the panel; the loop goes on
            self._fail(rec, exc, "release")

    def _render(self, rec: FrameRecord, render_target, t: int, owned, owns) -> None:
        """The step "render": the scene's draw (its use checked where CL may hold the objects: ``owns``
        the owners after the release as they follow from the transitions; ``owned`` the tracker's
        states where those are sampled instead, else None), the run-ahead bound's fence past it, the
        frame's GL errors; then the frame's end: its findings, the bytes moved, into the history, the
        CL stamps due."""
        profiles = self.profiles
        try:
            if owned is not None and self.faults is not None:
                self.faults("render", rec)
            size = render_target()
            if not profiles.gl_done:  # (no wait for CL in this frame's sync mode took it)
                self.gl_timer.harvest()  # the frames before (done once the sync waited), before this frame's pass
            if size is not None:
                if owned is not None or CL in owns:
                    self._handover.draw_uses(self.scene.gl_uses)
                if rec.sampled:
                    with self.gl_timer.span(rec, "gl render"):
                        self.scene.render(size)
                else:  # (the timer's span of a frame not timed does nothing)
                    self.scene.render(size)
            if self._after_gl_use is not None:  # (a mode whose hook does something: ``bound_hook``)
                self._after_gl_use(rec.waits)
            if self._bounded:
                # where GL waited on the GPU for CL's release (``SyncMode.gl_waits_for_release``) a GL
                # fence past the draw says the release completed too: the bound asks no CL event's status
                self.in_flight.add(None if self.sync.gl_waits_for_release else rec.events.get("release"))
            # the GL calls made straight through ctypes (app/gl/raw.py) since the sync's, the draw's
            # and those after it (a copy's semaphore signal, the fence), are checked here, on their frame
            code = self._gl_error()
            if code:
                check_gl(f"render {self.scene.name}", code)
        except Exception as exc:  # noqa: BLE001
            self._fail(rec, exc, "render")
        rec.phases["render"] = (t, t := ns())
        rec.owners.append(("render", t, owns) if owned is None else ("render", t, tuple(map(_OWNER, owned))))
        rec.end_ns = t
        self._work_since += t - rec.start_ns
        rec.hazards = self._handover.findings_of(rec.index)  # (a scene's own GL pass may flag: postprocess)
        rec.bytes_moved = self.backend.bytes_copied - self._copied  # what the backend copied in this frame
        self.history.add(rec)
        self.current, self.last = None, rec
        if rec.events or profiles.pending:  # (its CL stamps, or an earlier frame's, still to be read)
            profiles.pending.append(rec)
            if not profiles.cl_done and len(profiles.pending) >= profiles.due_at:
                profiles.harvest(gl=False)  # (no wait for GL in this frame's sync mode took it)
        else:  # nothing of it to read and no frame before it waiting: harvested now, in frame order
            self.history.harvested(rec)

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
