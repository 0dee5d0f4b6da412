"""The hand-over engine: validate -> enqueue -> track, and the hand-back, for one backend.

Every call is checked against the backend's rule set before anything is enqueued (``SpecValidator``,
../shared/spec/gl-acquire-release.txt, 5.5.15), made the backend's own way (its ``_enqueue_acquire``
/ ``_enqueue_release``: app/sharing/contract.py), then recorded on the ownership tracker. The
scheduler uses the engine through its methods only: the frame's steady hand-over
(``SteadyHandOver``: the verdicts of calls accepted before, reused), the tracker's checks of the
kernel's and the draw's uses, the tracker's states and findings of a frame.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyopencl as cl

from app.errors import ClError
from app.memo import keep
from app.sharing.objects import SharedObject
from app.validate.spec import EMPTY

if TYPE_CHECKING:
    from app.sharing.base import SharingBackend

log = logging.getLogger(__name__)


class SteadyHandOver:
    """The frame's two hand-over calls in their steady case (``HandOver.steady``): each what
    ``HandOver.hand_over`` does for a call the validator accepted before (counted as checked, the
    backend's own enqueue, then the tracker's transition), on objects known to be GL's before the
    acquire and CL's, acquired on this queue, before the release."""

    __slots__ = ("backend", "queue", "generation", "objects", "states")

    def __init__(self, backend: "SharingBackend", queue, generation: int, objects: list, states: list) -> None:
        self.backend, self.queue, self.generation, self.objects, self.states = backend, queue, generation, objects, states

    def acquire(self, wait_for, out: bool) -> cl.Event | None:
        """``out`` False: the caller reads no event, and none comes back (one the backend made anyway,
        its calls taking no NULL event, is let go). An acquire that waits on events (``wait_for``:
        the sync mode's) is the checked hand-over's: the list is new each frame."""
        be = self.backend
        if wait_for:
            return be.acquire(self.queue, self.objects, wait_for, out=out)
        be.validator.checked += 1
        try:
            event = be._enqueue_acquire(self.queue, self.objects, None) if out or not be.null_events else \
                be._enqueue_acquire(self.queue, self.objects, None, event=False)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{be.name}.acquire") from exc
        be.tracker.acquired_states(self.states, self.queue)
        return event if out else None

    def release(self, after, out: bool) -> cl.Event | None:
        """``after``: the kernel's event, which the in-order queue needs in no wait list; ``out`` as in
        ``acquire``."""
        be = self.backend
        be.validator.checked += 1
        try:
            event = be._enqueue_release(self.queue, self.objects, None) if out or not be.null_events else \
                be._enqueue_release(self.queue, self.objects, None, event=False)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{be.name}.release") from exc
        be.tracker.released_states(self.states)
        return event if out else None

    def acquired(self, error: BaseException | None = None) -> None:
        """The acquire made elsewhere (a native call list: app/schedule/executors.py): counted as
        checked, then its transition, or ``error`` (the driver's) raised as ``acquire`` raises it."""
        self._made("acquire", error)
        self.backend.tracker.acquired_states(self.states, self.queue)

    def released(self, error: BaseException | None = None) -> None:
        """The release made elsewhere, as ``acquired``."""
        self._made("release", error)
        self.backend.tracker.released_states(self.states)

    def handed_over(self) -> None:
        """The acquire and the release both made elsewhere, both gone through, nothing of glshare's
        between them: both counted as checked, both transitions in one (the objects GL's again)."""
        self.backend.validator.checked += 2
        self.backend.tracker.handed_over_states(self.states)

    def _made(self, call: str, error: BaseException | None) -> None:
        self.backend.validator.checked += 1
        if error is not None:
            raise ClError.from_pyopencl(error, f"{self.backend.name}.{call}") from error


class HandOver:
    """The hand-over of one backend's shared objects (``SharingBackend.handover``)."""

    def __init__(self, backend: "SharingBackend") -> None:
        self.backend = backend
        self._splits: dict[tuple, tuple] = {}  # validated's lists of objects, split: (objects, mems, shared)
        # hand_over's accepted calls without a wait list: (call, *ids) -> (queue, generation, shared, given)
        self._accepted: dict[tuple, tuple] = {}
        self.remember = True  # (off while instrumented: each check then goes through the validator)
        # the frame's steady hand-overs (``steady``), per the scheduler's key of its objects
        self._steady: dict[tuple, SteadyHandOver] = {}

    def forget(self) -> None:
        """Drop every remembered list and verdict (an object went: no list kept may pin it)."""
        self._splits.clear()
        self._accepted.clear()
        self._steady.clear()

    # -- what the scheduler asks of the tracker, through methods ----------------------------------
    def begin_frame(self, frame: int, queue, key: tuple) -> SteadyHandOver | None:
        """The frame whose findings and transitions follow; the steady case of its hand-over of the
        objects whose ids follow ``objects_version`` in ``key`` on ``queue``, or None (``steady``)."""
        be = self.backend
        be.tracker.frame = frame
        if not self.remember or be.bypass_validation:
            return None
        ho = self._steady.get(key)
        if ho is None or ho.queue is not queue or ho.generation != be.validator.registry.generation:
            ho = self._steady_for(queue, key)
            if ho is None:
                return None
        return ho if be.tracker.gl_owns_all(ho.states) else None

    def states_of(self, objects) -> list:
        """The tracker's state objects of those of ``objects`` it tracks (changed in place by
        acquire and release)."""
        states = self.backend.tracker.states
        return [states[id(o)] for o in objects if id(o) in states]

    def tracks(self, obj) -> bool:
        return id(obj) in self.backend.tracker.states

    def kernel_uses(self, objects) -> None:
        """The kernel uses ``objects``: each must be CL's (the tracker flags the others)."""
        self.backend.tracker.cl_use(objects, "kernel")

    def draw_uses(self, objects) -> None:
        """GL's draw uses ``objects``: each must be GL's."""
        self.backend.tracker.gl_use(objects, "draw")

    def findings_of(self, frame: int) -> list:
        """The tracker's findings of ``frame``, where the newest are its (they come in frame order)."""
        flags = self.backend.tracker.flags
        if not flags or flags[-1].frame != frame:
            return []
        first = len(flags) - 1
        while first > 0 and flags[first - 1].frame == frame:
            first -= 1
        return flags[first:]

    # -- validate -> enqueue -> track ------------------------------------------------------------
    def validated(self, call: str, queue, objects, wait_for) -> tuple[list[SharedObject], str]:
        """Check the call against its rule set (on the CL memory objects, as the driver would see
        them); return the shared objects to hand over and the verdict (``spec.NOOP``: GL sharing's
        (0, NULL) does nothing; ``spec.EMPTY``: external memory's still enqueues a command)."""
        be = self.backend
        objects = list(objects or ())
        key = tuple(map(id, objects))
        split = self._splits.get(key)
        if split is None:  # the memory objects and the shared ones among them, kept per list of objects
            mems = [o.mem if isinstance(o, SharedObject) else o for o in objects]
            # (the list is held with its key: no id in it can be reused while it is kept)
            split = keep(self._splits, key, (objects, mems, [o for o in objects if isinstance(o, SharedObject)]))
        verdict = "CL_SUCCESS"
        if not be.bypass_validation:
            verdict = be.validator.check_python(call, queue, split[1], wait_for)
        return split[2], verdict

    def hand_over(self, call: str, queue, objects, wait_for, out: bool = True) -> cl.Event | None:
        """Validate, enqueue (the backend's own way), then record the new owner.

        The frame's steady case, a call without a wait list that the validator accepted before on
        the same queue and objects while no CL object was released since (the registry's
        generation), is one lookup here (``_accepted``): its shared objects, and the validator's
        remembered verdict, counted as checked as ``SpecValidator.check_python`` counts one, without
        the two calls that find it there. Not while the validator is bypassed or instrumented.

        A call with a wait list is checked whole every time (the list is new each frame: gl_event's
        fence), but once accepted its queue and objects are recorded too: the rules on them do not
        depend on the list, and ``steady`` needs both calls' to run the frame's steady case, whose
        acquire with the sync's events is then this checked call (``Remembered.acquire``)."""
        be, key, hit = self.backend, None, None
        if objects and self.remember and not be.bypass_validation:
            key = (call, *map(id, objects))
            if not wait_for:
                hit = self._accepted.get(key)
        if hit is not None and hit[0] is queue and hit[1] == be.validator.registry.generation:
            be.validator.checked += 1
            objects = hit[2]
        else:
            given = objects
            objects, verdict = self.validated(call, queue, objects, wait_for)
            if key is not None and objects and verdict == "CL_SUCCESS":
                # (the caller's objects are held with it: no id in the key can be reused while it is kept)
                keep(self._accepted, key, (queue, be.validator.registry.generation, objects, tuple(given)))
            if not objects:
                if verdict != EMPTY:
                    return None  # GL sharing's (0, NULL): "the function does nothing"
                # external memory's (0, NULL) "will trivially succeed after its event dependencies are
                # satisfied and will update its completion event" (cl_khr_external_memory, 5.5.1.1): a
                # marker with the same wait list is that command. Not forwarded: NVIDIA's driver 580
                # refuses the empty call with CL_INVALID_VALUE (the lab's driver column,
                # errors-nvidia.json)
                try:
                    return cl.enqueue_marker(queue, wait_for=list(wait_for) if wait_for else None)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"{be.name}.{call} (no objects: a marker)") from exc
        enqueue = be._enqueue_acquire if call == "acquire" else be._enqueue_release
        waits = list(wait_for) if wait_for else None
        try:
            if out or not be.null_events:
                event = enqueue(queue, objects, waits)
            else:
                event = enqueue(queue, objects, waits, event=False)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{be.name}.{call}") from exc
        (be.tracker.acquired if call == "acquire" else be.tracker.released)(objects, queue)
        return event if out else None  # (an event not asked for is let go: nothing reads it)

    def steady(self, queue, key: tuple) -> SteadyHandOver | None:
        """The frame's acquire and release of the objects whose ids follow ``objects_version`` in
        ``key`` (the scheduler's key of its shared objects) in their steady case, or None: both calls
        accepted before on ``queue`` without a wait list, no CL object released since (the registry's
        generation), the validator neither bypassed nor instrumented (``_hand_over``'s lookup), and
        every object GL's with no acquisition outstanding, so neither transition can flag anything.
        ``SteadyHandOver`` then makes the two calls as ``_hand_over`` would, with nothing to look up."""
        return self.begin_frame(self.backend.tracker.frame, queue, key)

    def _steady_for(self, queue, key: tuple) -> SteadyHandOver | None:
        """``steady``'s hand-over made anew for the registry's generation, or None where the calls
        were not both accepted (the general frame's hand-over puts them there once accepted)."""
        be = self.backend
        generation, ids = be.validator.registry.generation, key[1:]
        acq, rel = self._accepted.get(("acquire", *ids)), self._accepted.get(("release", *ids))
        if acq is None or rel is None or acq[0] is not queue or rel[0] is not queue \
                or acq[1] != generation or rel[1] != generation or acq[2] != rel[2]:
            return None
        states = [be.tracker.states[id(o)] for o in acq[2] if id(o) in be.tracker.states]
        if len({id(o) for o in acq[2]}) != len(acq[2]):
            return None  # an object twice in one call: the transitions count it twice
        # (the objects are held with it, as in _accepted: no id in the key can be reused while it is kept)
        return keep(self._steady, key, SteadyHandOver(be, queue, generation, acq[2], states))

    def hand_back(self, queue=None, objects=None, *, gl: bool = False, why: str = "a skipped release") -> int:
        """Release every shared object (of ``objects``, default all) that CL still holds, once for
        each acquire call no release call matched where the driver nests acquisitions
        (``nests_acquisitions``), else once; then wait for the queue. Returns how many release calls
        that took (0: nothing was held). ``gl``: GL's side of each release follows (a texture's copy
        from its buffer), for a picture that goes on.

        What a skipped release (the hazard demonstration, a stopped frame) leaves behind. The
        acquire/release text (../shared/spec/gl-acquire-release.txt) defines no nesting, and
        cl_khr_external_memory leaves it to the implementation ("Acquiring a memory object multiple
        times without releasing it results in implementation-defined behavior", 5.5.1.1). NVIDIA's
        driver 580 nests them, and destroying the context while its imported memory is still
        acquired hangs there (bench/probes/gpu_hazard_demos_probe.py). The releases bypass the
        validator and the tracker's findings: they repair the demonstration's state, they are not
        the program's hand-over. Each call that reached the driver is counted at once
        (``OwnershipTracker.handed_back``), so a failed call leaves no release to repeat; the calls
        made are told to ``on_hand_back`` with ``why``, a failure's too."""
        be = self.backend
        queue = queue if queue is not None else be.queue
        tracker, calls, released = be.tracker, 0, []
        pool = list(be.objects if objects is None else objects)
        try:
            while True:
                held = [o for o in pool if tracker.unreleased(o)]
                if not held:
                    break
                try:
                    be._enqueue_release(queue, held, None)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"{be.name}.release (handing back)") from exc
                calls += 1
                released.extend(o for o in held if o not in released)
                tracker.handed_back(held, all_of_them=not be.nests_acquisitions)
        finally:
            if calls and be.on_hand_back is not None:
                be.on_hand_back(calls, why)
        if calls:
            queue.finish()
            if gl:
                be.gl_after_release(released)
            log.info("%s: handed back %d unmatched acquisition(s) (%s)", be.name, calls, why)
        return calls
