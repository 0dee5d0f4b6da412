"""GL's side of the semaphore sync mode tracked with CL's (issue 37: "Double-signal tracking is not
connected to the external_memory backend's own GL semaphore calls").

No CPU machine exports memory or semaphores (PoCL and Intel's runtime list no
cl_khr_external_semaphore), so ``SemaphoreSync`` runs here on a real CL context and queue with its
driver calls stood in for: the Vulkan export and the imports (``_make``), the GL entry points and
the CL semaphores' enqueues record what they were called with, in one log, and can be made to fail.
Everything between them is the mode's own code: the order of its calls, the validator's checks and
the binary states of both sides. The real backend on NVIDIA: ``test_real_backend_tracks_gl_side``
(marker ``gpu``)."""
from __future__ import annotations

import ctypes
import itertools

import pyopencl as cl
import pytest

from app.errors import SpecViolation
from app.sharing.sync import semaphore as mode
from app.validate.liveness import REGISTRY
from app.validate.semaphores import GL_RULES, SemaphoreValidator
from tests.spec_texts import quote_found, spec_texts

VK_DOUBLE_SIGNAL = "must be unsignaled when the semaphore signal operation it defines is executed on the device"
GL_WAIT_RULE = "Calling WaitSemaphore on a semaphore that has not previously had a signal operation flushed"


class StandIn:
    """A CL semaphore as app.cl.ext.Semaphore is to the mode: a handle, a label, its two enqueues
    (logged; ``fail`` makes the next one the driver's refusal)."""

    def __init__(self, handle: int, label: str, log: list) -> None:
        self.handle, self.label, self.log, self.fail = ctypes.c_void_p(handle), label, log, False

    def _enqueue(self, what: str):
        if self.fail:
            self.fail = False
            self.log.append((what, self.label, "refused"))
            raise cl.Error("CL_OUT_OF_RESOURCES")
        self.log.append((what, self.label))

    def enqueue_wait(self, queue, event=True):
        self._enqueue("clEnqueueWaitSemaphoresKHR")

    def enqueue_signal(self, queue, wait_for=None, event=False):
        self._enqueue("clEnqueueSignalSemaphoresKHR")

    def release(self) -> None:
        self.handle = None


class Backend:
    """What SemaphoreSync asks of external_memory: its queue (in order), the validator, the shared
    objects (none: the GL calls name no buffer) and the exporter (closing nothing)."""

    queue_in_order = True
    objects_version = 0
    objects: list = []

    def __init__(self, host_copy) -> None:
        self.context, self.queue = host_copy.context, host_copy.queue
        self.validator = type("V", (), {})()
        self.validator.semaphores = SemaphoreValidator(self.context, events=host_copy.validator.events)
        self.exporter = type("E", (), {"destroy_semaphore": lambda self, sem: None})()


@pytest.fixture
def sync(host_copy, monkeypatch):
    """A SemaphoreSync over stand-ins; ``sync.log``: every GL and CL semaphore call, in order."""
    log: list = []
    names = itertools.count(1)
    made: list = []

    def make(self, label):
        sem = StandIn(0x7000 + next(names), label, log)
        REGISTRY.created(sem, self.backend.context, label=label, kind="semaphore")
        self._cl_sems.append(sem)
        made.append(sem)
        return next(names), sem

    def gl_entry(name):
        if name == "glFlush":
            return lambda: None
        return lambda semaphore, *rest: log.append((name, semaphore))

    monkeypatch.setattr(mode.SemaphoreSync, "_make", make)
    monkeypatch.setattr(mode, "gl_function", gl_entry)
    monkeypatch.setattr(mode, "check_gl", lambda where: None)
    s = mode.SemaphoreSync(Backend(host_copy))
    s.log = log
    s.gl_names = {s.gl_done_gl: "gl_done", s.cl_done_gl: "cl_done"}
    yield s
    s.close()
    for sem in made:
        REGISTRY.forget(sem)


def _frame(sync) -> None:
    sync.before_acquire([])
    sync.after_release(sync.backend.queue, None, [])


def _calls(sync) -> list[tuple]:
    """The log with GL's semaphore names written as the CL stand-in's labels (one payload each)."""
    return [(c[0], sync.gl_names.get(c[1], c[1]), *c[2:]) for c in sync.log]


STEADY = [("glSignalSemaphoreEXT", "gl_done"), ("clEnqueueWaitSemaphoresKHR", "gl_done"),
          ("clEnqueueSignalSemaphoresKHR", "cl_done"), ("glWaitSemaphoreEXT", "cl_done")]


def _no_repeat(calls: list[tuple]) -> None:
    """No payload signalled twice without a wait between, nor waited on with no signal pending."""
    state: dict[str, bool] = {}
    for call in calls:
        if call[-1] == "refused":
            continue
        signal = "Signal" in call[0]
        assert state.get(call[1], False) != signal, (call, calls)
        state[call[1]] = signal


def test_steady_frames_go_through_the_tracker(sync):
    sems = sync.backend.validator.semaphores
    for _ in range(3):
        _frame(sync)
    assert _calls(sync) == STEADY * 3
    assert sems.refused == 0 and sems.checked == 6


def test_a_gl_signal_is_not_repeated_after_a_refused_cl_wait(sync):
    """CL's wait refused by the driver: GL's signal stands, so the next frame's CL wait takes it and
    GL does not signal again (a binary semaphore signalled twice; Vulkan's rule, which GL's take)."""
    sync.gl_done_cl.fail = True
    with pytest.raises(cl.Error):
        _frame(sync)
    _frame(sync)
    _frame(sync)
    calls = _calls(sync)
    assert calls[:3] == [("glSignalSemaphoreEXT", "gl_done"), ("clEnqueueWaitSemaphoresKHR", "gl_done", "refused"),
                         ("clEnqueueWaitSemaphoresKHR", "gl_done")], calls
    _no_repeat(calls)
    assert sync.backend.validator.semaphores.refused == 0


def test_a_gl_double_signal_is_found_before_it_is_made(sync):
    """With copies, GL signals a copy's gl_done after its draw; were the mode to lose that (its
    pending flag), the next GL signal on the same payload is refused, citing Vulkan's rule, and not made."""
    sync.set_slots(2)
    sync.use_slot(0)
    sync.after_gl_use([])  # GL signalled gl_done after the copy's draw
    sync._pending[0] = False  # (the mode's bookkeeping lost)
    before = list(sync.log)
    with pytest.raises(SpecViolation) as err:
        sync.before_acquire([])
    assert err.value.rule == "gl_signal_twice" and err.value.where == "glSignalSemaphoreEXT"
    assert VK_DOUBLE_SIGNAL in err.value.quote and "VUID-vkQueueSubmit-pSignalSemaphores-00067" in err.value.section
    assert "was signalled by glSignalSemaphoreEXT" in str(err.value)
    assert sync.log == before  # neither GL's second signal nor CL's wait was made


def test_a_cl_signal_gl_never_waited_on_is_found_on_the_next(sync, monkeypatch):
    """Across the boundary: CL signalled cl_done but GL's wait was not made (the flush after the
    signal failed); the next frame's CL signal on that payload is refused (cl_khr_semaphore's
    double-signal sentence), naming CL's signal as the one no wait took."""
    calls = {"n": 0}
    real = mode.clext.flush

    def flush(queue):
        calls["n"] += 1
        if calls["n"] == 1:
            raise cl.Error("CL_OUT_OF_RESOURCES")
        real(queue)

    monkeypatch.setattr(mode.clext, "flush", flush)
    with pytest.raises(cl.Error):
        _frame(sync)
    with pytest.raises(SpecViolation) as err:
        _frame(sync)
    assert err.value.rule == "signal_twice" and err.value.where == "clEnqueueSignalSemaphoresKHR"
    assert "was signalled by clEnqueueSignalSemaphoresKHR and no wait took the signal" in str(err.value)
    assert [c[0] for c in _calls(sync)].count("clEnqueueSignalSemaphoresKHR") == 1


def test_a_refused_cl_signal_leaves_no_state_behind(sync):
    """The driver refused CL's signal: nothing was signalled, so the next frame's is no double signal."""
    sync.cl_done_cl.fail = True
    with pytest.raises(cl.Error):
        _frame(sync)
    _frame(sync)
    _no_repeat(_calls(sync))
    assert sync.backend.validator.semaphores.refused == 0


def test_the_native_hooks_track_as_the_python_frame(sync):
    """native_before / native_after (the native list's calls made between them) leave the states and
    counts the Python frame leaves; a list that stopped at CL's wait leaves GL's signal pending."""
    sems = sync.backend.validator.semaphores
    q = sync.backend.queue
    for _ in range(2):
        sync.native_before(q, sync.native_variant())
        sync.native_after(q)
    _frame(sync)  # the Python frame after native ones: no state out of step
    sync.native_before(q, sync.native_variant())  # the list's CL wait failed: native_after never runs
    assert sync.native_variant() == (0, True)
    sync.native_before(q, sync.native_variant())  # GL does not signal again, CL's wait takes the pending one
    sync.native_after(q)
    _frame(sync)
    assert sems.refused == 0 and sems.checked == 5 * 2 + 1  # two per frame; one where the list stopped at the wait


def test_the_native_hooks_refuse_before_any_call(sync):
    q = sync.backend.queue
    sems = sync.backend.validator.semaphores
    sems.track(sync.cl_done_cl, True, "clEnqueueSignalSemaphoresKHR")  # CL's signal, never waited on
    with pytest.raises(SpecViolation) as err:
        sync.native_before(q, sync.native_variant())
    assert err.value.rule == "signal_twice"
    assert sync.native_variant() == (0, False)  # nothing made: GL's signal taken back, nothing pending
    sems.track(sync.cl_done_cl)
    sync.native_before(q, sync.native_variant())
    sync.native_after(q)


def test_unchecked_tracks_nothing_then_starts_again(sync):
    sems = sync.backend.validator.semaphores
    with sync.unchecked():
        _frame(sync)
        sync.before_acquire([])  # (a bare loop's own business)
    assert sems.checked == 0
    _frame(sync)
    assert sems.refused == 0


def test_gl_rules_at_the_tracker(host_copy):
    """glWaitSemaphoreEXT with no signal pending (EXT_external_objects 4.2.3), and GL's signal twice."""
    v = SemaphoreValidator(host_copy.context, events=host_copy.validator.events)
    sem = StandIn(0x7100, "s", [])
    v.track(sem)
    with pytest.raises(SpecViolation) as err:
        v.waited(sem)
    assert err.value.rule == "gl_wait_unsignalled" and err.value.where == "glWaitSemaphoreEXT"
    assert GL_WAIT_RULE in err.value.quote and "it was never signalled" in str(err.value)
    v.signalled(sem)
    with pytest.raises(SpecViolation) as err:
        v.signalled(sem)
    assert err.value.rule == "gl_signal_twice"
    v.waited(sem)
    v.undo("gl_wait", [sem])  # (not made after all): the signal is pending again
    v.waited(sem)
    with pytest.raises(SpecViolation) as err:
        v.waited(sem)
    assert "its last operation was glWaitSemaphoreEXT" in str(err.value)


def test_gl_rules_quote_their_texts_verbatim():
    texts = spec_texts()
    for key, rule in GL_RULES.items():
        assert quote_found(rule.source.text, texts), key
        assert rule.code is None and rule.source.version in rule.source.where
    assert GL_RULES["gl_wait_unsignalled"].source.version == "EXT_external_objects rev. 13"
    assert GL_RULES["gl_signal_twice"].source.version == "Vulkan-Docs @090f1b1"


@pytest.mark.gpu
@pytest.mark.parametrize("native", [True, False])
def test_real_backend_tracks_gl_side(gl, native):
    """On NVIDIA: the real external_memory backend's semaphore frames (the image scene on two copies,
    native and Python), GL's calls tracked with CL's: 30 frames without a finding and the native frame
    still native; then each copy's pending GL signal lost on purpose: the next frame's GL signal on that
    payload is refused with Vulkan's rule, recorded on the frame, and not made."""
    from app.config import RunConfig
    from app.run import Run
    from app.window.egl_headless import EglSurface

    surface = EglSurface((256, 192))
    try:
        cfg = RunConfig(scene="image", size=(256, 192), backend="external_memory", sync="semaphore", headless=True,
                        overlay=False, frames=10_000, seed=7, cl_device="NVIDIA", frames_in_flight=2)
        with Run(cfg, surface=surface) as rt:
            sched = rt.session.scheduler
            sched.native = sched.native and native
            executed = []
            for _ in range(30):
                rec = rt.tick()
                assert rec.errors == [], rec.errors
                executed.append(sched.executed)
            sems = rt.session.backend.validator.semaphores
            assert sems.refused == 0 and sems.checked >= 60
            # the tracking keeps the steady frame native (its binary states checked around the one call)
            assert ("native" in executed[10:]) == (native and not sched.native_reason), (executed, sched.native_reason)
            sync = sched.sync
            assert len(sync._pairs) == 2 and all(sync._pending)  # each copy's GL signal waits for its next acquire
            sync._pending = [False, False]  # (the mode's bookkeeping lost)
            rec = rt.tick()
            found = [e for e in rec.errors if "gl_signal_twice" in e.message]
            assert found and found[0].where == "glSignalSemaphoreEXT", rec.errors
            assert "VUID-vkQueueSubmit-pSignalSemaphores-00067" in found[0].message
            assert sems.refused >= 1
            sync._pending = [True, True]  # the truth again (no refused signal was made): close() waits for them
            sync._track_pairs()
    finally:
        surface.close()
