"""The frame scheduler: brackets every frame's CL work with acquire and release, and records it.

Order (per frame): GL -> CL hand-over (sync mode) -> acquire -> compute -> release -> CL -> GL
hand-over -> GL draw: the plan's steps (app/schedule/plan.py), walked by the one runner
(app/schedule/runner.py) with one of the executors (app/schedule/executors.py). A failure inside a
frame is recorded on its FrameRecord (a raw CL or GL error as ClError / GlError with its phase) and
the loop goes on; ``strict`` raises the findings of the modes' kinds (``app/validate/findings.py``:
``stops_on``), and ``strict=True`` every failure. The CL stamps are read in batches
(app/schedule/harvest.py), inside the sync mode's CPU waits where it has any; under a mode with no
CPU wait the CPU runs at most ``frames_in_flight`` frames ahead (app/schedule/in_flight.py).

Frames shorter than ``stamps_interval_ns`` (0 here: every frame is timed; a session's is
``--stamps-ms``) are timed one per interval of their own time (``FrameRecord.sampled``): a frame is
timed when the frames since the last timed one took together at least the interval from start to
end, or when ``STAMPS_WALL_FACTOR`` intervals of the clock passed since it; a stepped frame always
is. A timed frame has its CL stamps read and its GL passes timed; the others' events are asked of
the driver only where something reads them: on an in-order queue under a mode that waits for CL on
the CPU (``SyncMode.waits_on_cpu``) none, the calls made with the C API's NULL event where the
backend and the scene can (``SharingBackend.null_events``, ``Scene.compute_takes_null_event``);
under the other modes the acquire's and the release's (the panel's owners in transition, the
run-ahead bound, GL's wait on CL's event).
"""
from __future__ import annotations

import collections
import functools
import os

from app.gl.raw import gl_function
from app.gl.timer import GlTimer
from app.native.calls import reason as native_calls_reason
from app.scenes.base import Scene
from app.schedule.executors import Checked, bound_hook
from app.schedule.frame import FrameRecord, error_record
from app.schedule.harvest import PROFILE_BATCH, Profiles
from app.schedule.history import RunHistory
from app.schedule.in_flight import InFlight
from app.schedule.runner import STAMPS_WALL_FACTOR, FrameRunner
from app.sharing.base import SharingBackend, Wrap, instrument_attributes
from app.sharing.sync import SyncMode
from app.validate.findings import normalize_strict

__all__ = ["FrameScheduler", "PROFILE_BATCH", "STAMPS_WALL_FACTOR", "error_record"]
_drive = collections.deque  # deque(generator, 0): runs a generator to its end, keeping nothing


class FrameScheduler(FrameRunner):
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
        # a frame's record begun (``FrameRecord.begin``): (frame, stepped=...) the rest this scheduler's
        self._record = functools.partial(FrameRecord.begin, scene=scene.name, backend=backend.name, sync=sync.name,
                                         segment=self.segment)
        self.skip: set[str] = set()  # hazard demonstrations: "acquire", "release"
        self._faults = None  # (``faults``)
        self._gl_error = gl_function("glGetError")
        # frames whose GPU work may still run, where the sync mode has no CPU wait per frame
        self.in_flight = InFlight(frames_in_flight)
        # on the backend's in-order queue (``SharingBackend.queue_in_order``) the frame's own commands
        # (acquire -> kernel -> release) need no wait lists between them; a queue that is not in order
        # gets each command's predecessor in its wait list
        self._in_order = backend.queue_in_order
        self._queue = backend.queue
        # what reads an untimed frame's events (``FrameRecord.sampled``): the wait lists of a queue not
        # in order; and the acquire's and the release's, where the frame may end before they complete
        # (every mode but one that waits for CL on the CPU, ``SyncMode.waits_on_cpu``)
        self._untimed_kernel_event = not (self._in_order and scene.compute_takes_null_event)
        self._untimed_events = not (self._in_order and sync.waits_on_cpu)
        self._copies = scene.slots > 1  # (the scene's copies are set before it is built: ``Scene.slots``)
        self.current: FrameRecord | None = None  # the frame in progress (teaching mode)
        self.last: FrameRecord | None = None  # the frame ended last
        self.gl_timer = GlTimer(f"gl timer {scene.name} on {backend.name}", owner=backend.name,
                                every=gl_timer_every)  # -> rec.gl_passes
        self.profiles = Profiles(self.history, self.gl_timer, in_order=self._in_order, submit=profile_submit,
                                 run_ahead=self.in_flight.depth if sync.bounded_run_ahead else 0)
        self._sampled_ns: int | None = None  # the start of the last frame timed
        self._work_since = 0  # the frames' own time (start to end) since then
        # one frame timed per this much of the frames' own time (``FrameRecord.sampled``): 0 times every frame
        self.stamps_interval_ns = stamps_interval_ns
        # a mode that waits on the CPU every frame (finish) is handed the bookkeeping only when some
        # is due, so it flushes before its waits only then; the frame then does none of it elsewhere
        self._waits_on_cpu = sync.waits_on_cpu
        self.profiles.cl_done = self.profiles.gl_done = self._waits_on_cpu  # (for good under such a mode)
        self._plans: dict[tuple, object] = {}  # FramePlan per (objects_version, ids of the shared objects)
        # the scene's uses are its shared objects (its class keeps Scene's ``cl_uses`` and ``gl_uses``):
        # the steady case's check of them is the one list's
        self._uses_shared = type(scene).cl_uses is Scene.cl_uses and type(scene).gl_uses is Scene.gl_uses
        self._checked = Checked(backend, scene, sync)
        self._handover = backend.handover  # the hand-over engine (the backend's for its life)
        self._bounded = sync.bounded_run_ahead
        self._after_gl_use = bound_hook(sync, "after_gl_use")
        self._native_variant, self._native_key = bound_hook(sync, "native_variant"), scene.native_key
        self.steady = True  # False: every frame checked (an A/B, the tests' reference)
        # the steady frame's calls made in one native call where every piece prepares its calls
        # (app/schedule/native.py); ``native_reason`` says why not where the machine cannot
        self.native_reason = native_calls_reason() or (
            "turned off (GLSHARE_NATIVE_FRAME=0)" if os.environ.get("GLSHARE_NATIVE_FRAME", "1") == "0" else "")
        # the backend's hand-over is Python (its class keeps SharingBackend's ``native_hand_over``, None):
        # no steady frame asks for a native executor
        self._python_hand_over = type(backend).native_hand_over is SharingBackend.native_hand_over
        self.native = not self.native_reason
        self._natives: dict[tuple, object] = {}  # Native executors per (hand-over, events, variant, scene key)
        self._ex = None  # the executor of the last frame begun (``executed``)

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
    def executed(self) -> str:
        """The executor of the last frame begun: "checked", "remembered" or "native" ("": none yet)."""
        return self._ex.name if self._ex is not None else ""

    @property
    def steady(self) -> bool:
        """Whether the steady frame (the remembered or the native executor) runs where its case holds;
        only on the backend's in-order queue, whatever this says. False: every frame checked."""
        return self._steady

    @steady.setter
    def steady(self, value: bool) -> None:
        self._steady = bool(value)
        self._steady_ok = self._steady and self._in_order and self._faults is None

    @property
    def faults(self):
        """Faults made on purpose (``--inject``): called as faults(phase, record) at the start of each
        phase, inside its error handling, so an injected failure is recorded like a real one (every
        frame then checked); None: none."""
        return self._faults

    @faults.setter
    def faults(self, value) -> None:
        self._faults = value
        self.steady = self._steady

    @property
    def native(self) -> bool:
        """Whether the steady frame's calls are made in one native call where every piece prepares
        them. False: in Python (an A/B; a test whose failure made on purpose replaces a Python
        method of a piece turns it off for that frame)."""
        return self._native

    @native.setter
    def native(self, value: bool) -> None:
        self._native = bool(value)
        self._try_native = self._native and not self._python_hand_over

    @property
    def stamps_interval_ns(self) -> int:
        """A frame is timed per this much of the frames' own time (``FrameRecord.sampled``), and at
        least every ``STAMPS_WALL_FACTOR`` of it by the clock; 0: every frame."""
        return self._interval

    @stamps_interval_ns.setter
    def stamps_interval_ns(self, value: int) -> None:
        self._interval = max(0, int(value))
        self._wall_ns = STAMPS_WALL_FACTOR * self._interval
        self._timed_by = -1 if self._sampled_ns is None else self._sampled_ns + self._wall_ns

    def time_next_frame(self) -> None:
        """The next frame is timed, whatever the interval says (as a run's first frame is)."""
        self._timed_by = -1

    @property
    def frames_in_flight(self) -> int:
        return self.in_flight.depth

    @property
    def profile_batch(self) -> int:
        """The frames whose CL stamps are read together (``Profiles.batch``)."""
        return self.profiles.batch

    @profile_batch.setter
    def profile_batch(self, value: int) -> None:
        self.profiles.batch = value

    @property
    def profile_submit(self) -> bool:
        """Whether CL_PROFILING_COMMAND_SUBMIT is read (only where an output shows it: the trace)."""
        return self.profiles.submit

    @profile_submit.setter
    def profile_submit(self, value: bool) -> None:
        self.profiles.submit = value

    @property
    def records(self):
        """The run's kept records (every segment's, oldest first)."""
        return self.history.records

    # -- one frame ---------------------------------------------------------------------------
    def run_frame(self, frame: int, render_target) -> FrameRecord:
        """``render_target()`` binds the framebuffer and returns its size, or None (minimized)."""
        _drive(self._walk(frame, render_target), 0)  # (its phases walked through, C-side)
        return self.last

    def frame_phases(self, frame: int, render_target, stepped: bool = False):
        """The frame as a generator: yields the name of each phase after it ran ("acquire",
        "compute", "release", "render"), so the teaching mode can pause between phases; driving
        it to the end is ``run_frame`` with the checked executor (the same record, states and
        pictures: tests/contract/test_steady_frame.py). ``stepped``: the teaching mode steps it (the pauses
        between its phases are the user's), and it is timed, its stamps read and its draw timed."""
        return self._walk(frame, render_target, stepped, checked=True)

    def native_frames(self) -> list:
        """The native executors prepared so far (each a ``NativeFrame`` in ``nf``)."""
        return [ex for ex in self._natives.values() if ex is not None]

    # -- profiling ---------------------------------------------------------------------------
    def harvest(self, wait: bool = False, gl: bool = True) -> None:
        """Read the CL profiling of frames whose events completed (``Profiles.harvest``)."""
        self.profiles.harvest(wait, gl)

    def finish(self) -> None:
        release = getattr(self.faults, "close", None)
        if release is not None:
            release()  # a queue stalled on purpose is let go before it is waited for
        self.backend.queue.finish()
        self.profiles.harvest(wait=True)

    def instrument(self, wrap: Wrap):
        """Put ``wrap(piece, fn)`` in place of each piece of bookkeeping the scheduler adds to a frame
        until the returned undo is called: "CL profiling harvest", "GL timer harvest" and "GL timer
        span" (entering and leaving the span around the scene's draw, each wrapped). The backend's
        own pieces: ``SharingBackend.instrument``. Nothing is rebound, and nothing costs, otherwise."""
        enter = wrap("GL timer span", lambda cm: cm.__enter__())
        leave = wrap("GL timer span", lambda cm, *exc: cm.__exit__(*exc))

        def spans(piece, span):
            return lambda rec, name: _WrappedSpan(span(rec, name), enter, leave)

        undo = instrument_attributes([(self.profiles, "harvest", "CL profiling harvest"),
                                      (self.gl_timer, "harvest", "GL timer harvest"),
                                      (self.gl_timer, "read", "GL timer harvest")], wrap)
        undo_span = instrument_attributes([(self.gl_timer, "span", "GL timer span")], spans)

        def both() -> None:
            undo_span()
            undo()

        return both

    def close(self) -> None:
        self.in_flight.drop()
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
