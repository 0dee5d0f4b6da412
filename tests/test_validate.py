"""The acquire/release validator against the spec table, and every ownership hazard (flagged, and
raised under strict), on the host_copy backend with raw objects and a tiny particle scene.

EXPECTED is written from ../shared/spec/gl-acquire-release.txt here, not imported from the code.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from app.errors import CL_CODES, HazardError, ValidationError
from app.validate.ownership import CL, GL, HAZARDS
from app.validate.spec import NOOP, NULL

EXPECTED = {  # case -> the spec's code (5.5.15), for clEnqueueAcquireGLObjects and clEnqueueReleaseGLObjects
    "valid": "CL_SUCCESS",
    "success_empty": "CL_SUCCESS",  # "If num_objects is 0 and mem_objects is NULL the function does nothing"
    "num_zero_list_given": "CL_INVALID_VALUE",
    "num_given_list_null": "CL_INVALID_VALUE",
    "invalid_mem_object": "CL_INVALID_MEM_OBJECT",
    "invalid_queue": "CL_INVALID_COMMAND_QUEUE",
    "context_not_from_gl": "CL_INVALID_CONTEXT",
    "not_gl_object": "CL_INVALID_GL_OBJECT",
    "wait_list_null_n_given": "CL_INVALID_EVENT_WAIT_LIST",
    "wait_list_given_n_zero": "CL_INVALID_EVENT_WAIT_LIST",
    "wait_list_invalid_event": "CL_INVALID_EVENT_WAIT_LIST",
    "event_aliases_wait_list": "CL_INVALID_VALUE",  # "refused": the spec names no code, glshare's choice
}


class Objects:
    """Raw material of the cases: built by hand here (not with the lab's builder)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.shared = backend.create_buffer("t.shared", 64)
        gone = backend.create_buffer("t.gone", 64)
        backend.destroy(gone)
        self.gone = gone.mem
        self.plain = cl.Buffer(backend.context, cl.mem_flags.READ_WRITE, 64)
        self.other_queue = cl.CommandQueue(cl.Context([backend.device]), backend.device)
        self.event = cl.enqueue_marker(backend.queue)
        self.event.wait()

    def args(self, case: str) -> tuple:
        q, m, ev = self.backend.queue, self.shared.mem, self.event
        return {  # (queue, num_objects, mem_objects, num_events, event_wait_list, event_out)
            "valid": (q, 1, [m], 0, NULL, NULL),
            "success_empty": (q, 0, NULL, 0, NULL, NULL),
            "num_zero_list_given": (q, 0, [m], 0, NULL, NULL),
            "num_given_list_null": (q, 1, NULL, 0, NULL, NULL),
            "invalid_mem_object": (q, 1, [self.gone], 0, NULL, NULL),
            "invalid_queue": (NULL, 1, [m], 0, NULL, NULL),
            "context_not_from_gl": (self.other_queue, 1, [m], 0, NULL, NULL),
            "not_gl_object": (q, 1, [self.plain], 0, NULL, NULL),
            "wait_list_null_n_given": (q, 1, [m], 1, NULL, NULL),
            "wait_list_given_n_zero": (q, 1, [m], 0, [ev], NULL),
            "wait_list_invalid_event": (q, 1, [m], 1, [NULL], NULL),
            "event_aliases_wait_list": (q, 1, [m], 1, [ev], ev),
        }[case]

    def close(self) -> None:
        self.other_queue.finish()
        self.plain.release()
        self.backend.destroy(self.shared)


@pytest.fixture
def objs(host_copy):
    o = Objects(host_copy)
    yield o
    o.close()


def _answer(validator, call, args) -> str:
    try:
        result = validator.check(call, *args)
    except ValidationError as exc:
        assert exc.code == CL_CODES[exc.name] and exc.rule and exc.spec
        return exc.name
    assert result in ("CL_SUCCESS", NOOP)
    return "CL_SUCCESS"


@pytest.mark.parametrize("call", ["acquire", "release"])
@pytest.mark.parametrize("case", list(EXPECTED))
def test_every_case_against_the_spec(objs, call, case):
    assert _answer(objs.backend.validator, call, objs.args(case)) == EXPECTED[case]


def test_the_empty_call_enqueues_nothing(host_copy):
    q = host_copy.queue
    assert host_copy.validator.check("acquire", q, 0, NULL, 0, NULL) == NOOP
    copied = host_copy.bytes_copied
    assert host_copy.acquire(q, []) is None and host_copy.release(q, None) is None
    assert host_copy.bytes_copied == copied and host_copy.tracker.counts == {}


@pytest.mark.parametrize("call", ["acquire", "release"])
def test_python_api_refuses_before_the_driver(objs, call):
    b = objs.backend
    fn = getattr(b, call)
    for args, code in (((b.queue, [objs.plain]), "CL_INVALID_GL_OBJECT"),
                       ((objs.other_queue, [objs.shared]), "CL_INVALID_CONTEXT"),
                       ((None, [objs.shared]), "CL_INVALID_COMMAND_QUEUE"),
                       ((b.queue, [objs.shared.gl]), "CL_INVALID_MEM_OBJECT"),  # the GL object, not the CL one
                       ((b.queue, [objs.shared], [None]), "CL_INVALID_EVENT_WAIT_LIST")):
        copied = b.bytes_copied
        with pytest.raises(ValidationError) as err:
            fn(*args)
        assert err.value.name == code, args
        assert b.bytes_copied == copied  # nothing reached the backend
        assert b.tracker.state(objs.shared).owner == GL


def test_a_destroyed_object_is_refused_after_it_was_accepted(host_copy):
    """The validator's cache of accepted objects must not outlive the object."""
    obj = host_copy.create_buffer("t.short", 64)
    q = host_copy.queue
    host_copy.release(q, host_copy.acquire(q, [obj]) and [obj])
    host_copy.destroy(obj)
    with pytest.raises(ValidationError) as err:
        host_copy.acquire(q, [obj])
    assert err.value.name == "CL_INVALID_MEM_OBJECT"


def test_counts_beyond_the_lists(objs):
    v, q, m, ev = objs.backend.validator, objs.backend.queue, objs.shared.mem, objs.event
    assert _answer(v, "acquire", (q, 2, [m], 0, NULL, NULL)) == "CL_INVALID_MEM_OBJECT"
    assert _answer(v, "acquire", (q, 1, [m], 2, [ev], NULL)) == "CL_INVALID_EVENT_WAIT_LIST"
    assert _answer(v, "acquire", (q, 1, [m, objs.plain], 1, [ev, None], NULL)) == "CL_SUCCESS"  # counts bound


def test_the_noop_comes_before_the_other_errors(objs):
    """'If num_objects is 0 and mem_objects is NULL the function does nothing and returns CL_SUCCESS.
    Otherwise, it returns one of the following errors' - glshare reads it literally (after the queue)."""
    v, q = objs.backend.validator, objs.backend.queue
    assert v.check("release", q, 0, NULL, 1, NULL) == NOOP
    assert _answer(v, "release", (objs.other_queue, 0, NULL, 0, NULL, NULL)) == "CL_SUCCESS"
    assert _answer(v, "release", (None, 0, NULL, 0, NULL, NULL)) == "CL_INVALID_COMMAND_QUEUE"


# -- hazards ------------------------------------------------------------------------------------
def _provoke(backend, case, obj, other_queue):
    q = backend.queue
    if case == "use_without_acquire":
        backend.tracker.cl_use([obj])
    elif case == "double_acquire":
        backend.acquire(q, [obj])
        backend.acquire(q, [obj])
    elif case == "release_without_acquire":
        backend.release(q, [obj])
    elif case == "release_on_other_queue":
        backend.acquire(q, [obj])
        backend.release(other_queue, [obj])
    elif case == "gl_use_while_acquired":
        backend.acquire(q, [obj])
        backend.upload(obj, np.zeros(16, np.float32))
    elif case == "delete_gl_while_shared":
        backend.delete_gl_first(obj)


@pytest.mark.parametrize("case", list(HAZARDS))
@pytest.mark.parametrize("strict", [False, True])
def test_each_hazard_is_flagged_and_strict_raises(host_copy, case, strict):
    b = host_copy
    b.tracker.strict = strict
    obj = b.create_buffer(f"t.{case}", 64)
    other_queue = cl.CommandQueue(b.context, b.device)
    try:
        if strict:
            with pytest.raises(HazardError) as err:
                _provoke(b, case, obj, other_queue)
            assert err.value.case == case and err.value.label == obj.label and err.value.spec == HAZARDS[case]
        else:
            _provoke(b, case, obj, other_queue)
            assert b.tracker.counts == {case: 1}
            flag = b.tracker.flags[-1]
            assert (flag.case, flag.label, flag.spec) == (case, obj.label, HAZARDS[case])
    finally:
        b.tracker.strict = False
        if obj in b.objects and b.tracker.state(obj).owner == CL:
            b.release(b.queue, [obj])
        b.destroy(obj)
        other_queue.finish()
        b.queue.finish()


def test_the_right_order_flags_nothing(host_copy):
    b, q = host_copy, host_copy.queue
    obj = b.create_buffer("t.right", 64, data=np.arange(16, dtype=np.float32))
    with b.acquired(q, [obj]) as events:
        b.tracker.cl_use([obj])
        events.append(cl.enqueue_fill_buffer(q, obj.mem, np.float32(2.5), 0, 64))
    q.finish()
    b.tracker.gl_use([obj])
    np.testing.assert_array_equal(obj.gl.read(), np.full(16, 2.5, np.float32))
    b.destroy(obj)
    assert b.tracker.flags == []


def _tiny_particles(backend, n=256):
    from app.config import RunConfig
    from app.scenes import scene_class
    from app.schedule.scheduler import FrameScheduler

    scene = scene_class("particles")(RunConfig(size=n, seed=3))
    scene.build(backend, (64, 64))
    return scene, FrameScheduler(backend, scene, backend.make_sync("finish"), strict=backend.tracker.strict)


def test_skipping_the_release_freezes_the_host_copy_frame(host_copy, surface):
    """host_copy: the release is the CL -> GL copy, so GL keeps the old data; the flags say why."""
    b = host_copy
    b.tracker.strict = False
    scene, sched = _tiny_particles(b)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        sched.run_frame(0, target)
        gl_before = scene.position.gl.read()
        sched.skip = {"release"}
        for f in (1, 2):
            rec = sched.run_frame(f, target)
        sched.finish()
        np.testing.assert_array_equal(scene.position.gl.read(), gl_before)  # frozen in GL
        cl_now = np.empty_like(gl_before)
        cl.enqueue_copy(b.queue, cl_now, scene.position.mem)
        assert np.abs(cl_now - gl_before).max() > 1e-3  # CL ran on
        kinds = {h.case for h in rec.hazards}
        assert kinds == {"double_acquire", "gl_use_while_acquired"}, kinds
        sched.skip = set()
        sched.run_frame(3, target)  # the release of frame 3 brings CL's data to GL again
        sched.finish()
        assert np.abs(scene.position.gl.read() - gl_before).max() > 1e-3
    finally:
        sched.close()
        scene.teardown()


def test_skipping_the_acquire_is_flagged_and_strict_stops_the_frame(host_copy, surface):
    b = host_copy
    scene, sched = _tiny_particles(b)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        sched.skip = {"acquire"}
        with pytest.raises(HazardError) as err:  # host_copy fixture is strict
            sched.run_frame(0, target)
        assert err.value.case == "use_without_acquire"
        b.tracker.strict = sched.strict = False
        rec = sched.run_frame(1, target)
        assert {h.case for h in rec.hazards} == {"use_without_acquire", "release_without_acquire"}
        assert rec.errors == []
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
