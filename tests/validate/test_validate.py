"""The validator against each call family's text, the liveness registry, and every ownership
finding (its kind, flagged, raised as the strict mode says), on host_copy with raw objects and a
tiny particle scene.

EXPECTED / EXTERNAL are written from the texts here (../shared/spec/gl-acquire-release.txt,
app/validate/khr_extracts.txt), not imported from the code.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pyopencl as cl
import pytest

from app.errors import CL_CODES, HazardError, SpecViolation, ValidationError
from app.validate import families
from app.validate.findings import ADVICE, SPEC
from app.validate.liveness import REGISTRY
from app.validate.ownership import CL, GL, OwnershipTracker
from app.validate.spec import EMPTY, NOOP, NULL, WaitListElement
from tests.spec_texts import quote_found, spec_texts

HAZARDS = families.get("gl_sharing").hazards

EXPECTED = {  # case -> the spec's code (5.5.15), for clEnqueueAcquireGLObjects and clEnqueueReleaseGLObjects
    "valid": "CL_SUCCESS",
    "success_empty": "CL_SUCCESS",  # "If num_objects is 0 and mem_objects is NULL the function does nothing"
    "num_zero_list_given": "CL_INVALID_VALUE",
    "num_given_list_null": "CL_INVALID_VALUE",
    "invalid_mem_object": "CL_INVALID_MEM_OBJECT",
    "released_by_pyopencl": "CL_INVALID_MEM_OBJECT",
    "unseen_mem_object": "CL_INVALID_MEM_OBJECT",  # glshare's choice (spec: GL_OBJECT for a live one)
    "invalid_queue": "CL_INVALID_COMMAND_QUEUE",
    "context_not_from_gl": "CL_INVALID_CONTEXT",
    "not_gl_object": "CL_INVALID_GL_OBJECT",
    "wait_list_null_n_given": "CL_INVALID_EVENT_WAIT_LIST",
    "wait_list_given_n_zero": "CL_INVALID_EVENT_WAIT_LIST",
    "wait_list_invalid_event": "CL_INVALID_EVENT_WAIT_LIST",
    "wait_list_other_context": "CL_INVALID_CONTEXT",  # the general rule (A.1, 5.12)
    "event_aliases_wait_list": None,  # a requirement without a code: refused without one
}


class Objects:
    """Raw material of the cases: built by hand here (not with the lab's builder)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        ctx = backend.context
        self.shared = backend.create_buffer("t.shared", 64)
        gone = backend.create_buffer("t.gone", 64)
        backend.destroy(gone)
        self.gone = gone.mem
        self.plain = REGISTRY.handed(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64), ctx)
        self.pyreleased = REGISTRY.handed(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64), ctx)
        self.pyreleased.release()  # through pyopencl
        self.unseen = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)  # live, never handed
        self.other_context = cl.Context([backend.device])  # kept alive while its queue is used
        self.other_queue = cl.CommandQueue(self.other_context, backend.device)
        self.other_event = cl.enqueue_marker(self.other_queue)
        self.event = cl.enqueue_marker(backend.queue)
        self.event.wait()
        self.other_event.wait()

    def args(self, case: str) -> tuple:
        q, m, ev = self.backend.queue, self.shared.mem, self.event
        return {  # (queue, num_objects, mem_objects, num_events, event_wait_list, event_out)
            "valid": (q, 1, [m], 0, NULL, NULL),
            "success_empty": (q, 0, NULL, 0, NULL, NULL),
            "num_zero_list_given": (q, 0, [m], 0, NULL, NULL),
            "num_given_list_null": (q, 1, NULL, 0, NULL, NULL),
            "invalid_mem_object": (q, 1, [self.gone], 0, NULL, NULL),
            "released_by_pyopencl": (q, 1, [self.pyreleased], 0, NULL, NULL),
            "unseen_mem_object": (q, 1, [self.unseen], 0, NULL, NULL),
            "invalid_queue": (NULL, 1, [m], 0, NULL, NULL),
            "context_not_from_gl": (self.other_queue, 1, [m], 0, NULL, NULL),
            "not_gl_object": (q, 1, [self.plain], 0, NULL, NULL),
            "wait_list_null_n_given": (q, 1, [m], 1, NULL, NULL),
            "wait_list_given_n_zero": (q, 1, [m], 0, [ev], NULL),
            "wait_list_invalid_event": (q, 1, [m], 1, [NULL], NULL),
            "wait_list_other_context": (q, 1, [m], 1, [self.other_event], NULL),
            "event_aliases_wait_list": (q, 1, [m], 1, [ev], WaitListElement(0)),
        }[case]

    def close(self) -> None:
        self.other_queue.finish()
        self.plain.release()
        self.unseen.release()
        self.backend.destroy(self.shared)


@pytest.fixture
def objs(host_copy):
    o = Objects(host_copy)
    yield o
    o.close()


def _answer(validator, call, args) -> str | None:
    """The CL name the validator answers; None for a refusal without a code."""
    try:
        result = validator.check(call, *args)
    except ValidationError as exc:
        assert exc.code == CL_CODES[exc.name] and exc.rule and exc.quote and exc.section
        return exc.name
    except SpecViolation as exc:
        assert exc.code is None and exc.rule and exc.quote and exc.consequence
        return None
    assert result in ("CL_SUCCESS", NOOP, EMPTY)
    return "CL_SUCCESS"


@pytest.mark.parametrize("call", ["acquire", "release"])
@pytest.mark.parametrize("case", list(EXPECTED))
def test_every_case_against_the_spec(objs, call, case):
    assert _answer(objs.backend.validator, call, objs.args(case)) == EXPECTED[case]


def test_every_rule_quotes_its_text_verbatim():
    """Each rule's extract is a sentence of the seed or of app/validate/khr_extracts.txt (markup
    removed), not glshare's paraphrase."""
    texts = spec_texts()
    quotes = [(f"{fam}.{k}", r.source.text) for fam in families.names() for k, r in families.get(fam).rules.items()]
    quotes += [(f"{fam}.{k}", h.source.text) for fam in families.names()
               for k, h in families.get(fam).hazards.items() if h.source]
    for key, quote in quotes:
        assert quote_found(quote, texts), (key, quote)


def test_the_empty_call_enqueues_nothing(host_copy):
    q = host_copy.queue
    assert host_copy.validator.check("acquire", q, 0, NULL, 0, NULL) == NOOP
    copied = host_copy.bytes_copied
    assert host_copy.acquire(q, []) is None and host_copy.release(q, None) is None
    assert host_copy.bytes_copied == copied and host_copy.tracker.counts == {}


@pytest.mark.parametrize("call", ["acquire", "release"])
def test_python_api_refuses_before_the_driver(objs, call, monkeypatch):
    b = objs.backend
    fn = getattr(b, call)
    reached = []
    monkeypatch.setattr(b, f"_enqueue_{call}", lambda *a: reached.append(a))
    for args, code in (((b.queue, [objs.plain]), "CL_INVALID_GL_OBJECT"),
                       ((objs.other_queue, [objs.shared]), "CL_INVALID_CONTEXT"),
                       ((None, [objs.shared]), "CL_INVALID_COMMAND_QUEUE"),
                       ((b.queue, [objs.shared.gl]), "CL_INVALID_MEM_OBJECT"),  # the GL object, not the CL one
                       ((b.queue, [objs.pyreleased]), "CL_INVALID_MEM_OBJECT"),
                       ((b.queue, [objs.unseen]), "CL_INVALID_MEM_OBJECT"),
                       ((b.queue, [objs.shared], [objs.other_event]), "CL_INVALID_CONTEXT"),
                       ((b.queue, [objs.shared], [None]), "CL_INVALID_EVENT_WAIT_LIST")):
        with pytest.raises(ValidationError) as err:
            fn(*args)
        assert err.value.name == code, args
        assert reached == []  # nothing reached the backend
        assert b.tracker.state(objs.shared).owner == GL


def test_a_shared_object_released_through_pyopencl_is_refused(host_copy):
    """The object was accepted before (the validator's cache), then its CL side is released by
    hand: pyopencl keeps its int_ptr, glshare's registry knows."""
    obj = host_copy.create_buffer("t.byhand", 64)
    q = host_copy.queue
    host_copy.release(q, [obj], [host_copy.acquire(q, [obj])])
    handle = obj.mem.int_ptr
    obj.mem.release()
    assert obj.mem.int_ptr == handle  # what the issue saw: nothing in the wrapper says it is gone
    with pytest.raises(ValidationError) as err:
        host_copy.acquire(q, [obj])
    assert err.value.name == "CL_INVALID_MEM_OBJECT" and "released through pyopencl" in err.value.one_line()
    host_copy.objects.remove(obj)  # its CL side is gone already: only the GL object is left to delete
    host_copy.tracker.states.pop(id(obj))
    obj.gl.release()


def test_a_destroyed_object_is_refused_after_it_was_accepted(host_copy):
    """The validator's cache of accepted objects must not outlive the object."""
    obj = host_copy.create_buffer("t.short", 64)
    q = host_copy.queue
    host_copy.release(q, [obj], [host_copy.acquire(q, [obj])])
    host_copy.destroy(obj)
    with pytest.raises(ValidationError) as err:
        host_copy.acquire(q, [obj])
    assert err.value.name == "CL_INVALID_MEM_OBJECT"


def test_a_remembered_verdict_counts_and_binds_the_queue(host_copy):
    """check_python keeps the verdict of an accepted call without a wait list: the same call again
    counts as checked, while the same objects on a queue of another context are still refused."""
    import pyopencl as cl

    obj = host_copy.create_buffer("t.memo", 64)
    v, q = host_copy.validator, host_copy.queue
    try:
        before = v.checked
        assert v.check_python("acquire", q, [obj.mem], None) == "CL_SUCCESS"
        assert v.check_python("acquire", q, [obj.mem], None) == "CL_SUCCESS"
        assert v.checked == before + 2
        other = cl.CommandQueue(cl.Context([host_copy.device]))
        with pytest.raises(ValidationError):
            v.check_python("acquire", other, [obj.mem], None)
    finally:
        host_copy.destroy(obj)


def test_the_hand_over_looks_up_an_accepted_call_once(host_copy):
    """The backend's steady case (SharingBackend._hand_over): a call accepted before on the same
    queue and objects is not put to the validator again, counts as checked, and is checked again
    once a CL object is released (the registry's generation) or on another queue."""
    import pyopencl as cl

    obj = host_copy.create_buffer("t.lookup", 64)
    v, q = host_copy.validator, host_copy.queue
    asked = []
    real = v.check_python
    v.check_python = lambda *a: asked.append(a[0]) or real(*a)
    other = host_copy.create_buffer("t.other", 64)
    try:
        host_copy.acquire(q, [obj])
        host_copy.release(q, [obj])
        assert asked == ["acquire", "release"]  # the first: checked by the rules
        before = v.checked
        host_copy.acquire(q, [obj])
        assert asked == ["acquire", "release"] and v.checked == before + 1  # remembered, counted
        host_copy.release(q, [obj], [cl.enqueue_marker(q)])  # (a wait list: always the validator's)
        assert asked == ["acquire", "release", "release"]
        host_copy.destroy(other)  # a CL object released: every remembered call is checked again
        host_copy.acquire(q, [obj])
        host_copy.release(q, [obj])
        assert asked == ["acquire", "release", "release", "acquire", "release"]
        with pytest.raises(ValidationError):  # same objects, a queue of another context
            host_copy.acquire(cl.CommandQueue(cl.Context([host_copy.device])), [obj])
    finally:
        del v.check_python
        host_copy.destroy(obj)


def test_a_per_call_cache_is_emptied_at_its_bound():
    """app/memo.keep: what the frame's per-call caches keep stays under MOST entries."""
    from app.memo import MOST, keep

    cache: dict = {}
    for i in range(MOST):
        assert keep(cache, i, -i) == -i
    assert len(cache) == MOST and cache[0] == 0
    keep(cache, "next", 1)
    assert cache == {"next": 1}


def test_counts_beyond_the_lists(objs):
    v, q, m, ev = objs.backend.validator, objs.backend.queue, objs.shared.mem, objs.event
    assert _answer(v, "acquire", (q, 2, [m], 0, NULL, NULL)) == "CL_INVALID_MEM_OBJECT"
    assert _answer(v, "acquire", (q, 1, [m], 2, [ev], NULL)) == "CL_INVALID_EVENT_WAIT_LIST"
    assert _answer(v, "acquire", (q, 1, [m, objs.plain], 1, [ev, None], NULL)) == "CL_SUCCESS"  # counts bound


def test_the_alias_rule_is_about_the_place_not_the_value(objs):
    """'event must not refer to an element of the event_wait_list array': a second wrapper of the
    same cl_event (another place holding the same handle) breaks nothing; the array's own slot does."""
    v, q, m, ev = objs.backend.validator, objs.backend.queue, objs.shared.mem, objs.event
    twin = cl.Event.from_int_ptr(ev.int_ptr, retain=True)
    assert _answer(v, "acquire", (q, 1, [m], 1, [ev], twin)) == "CL_SUCCESS"
    assert _answer(v, "acquire", (q, 1, [m], 1, [ev], ev)) == "CL_SUCCESS"  # a value, not a slot of the array
    assert _answer(v, "acquire", (q, 1, [m], 1, [ev], WaitListElement(0))) is None
    assert _answer(v, "acquire", (q, 1, [m], 1, [ev], WaitListElement(1))) == "CL_SUCCESS"  # past the count
    with pytest.raises(SpecViolation) as err:
        v.check("release", q, 1, [m], 1, [ev], WaitListElement(0))
    assert err.value.name.startswith("no CL code") and "5.5.15" in err.value.section


def test_the_noop_comes_before_the_other_errors(objs):
    """'If num_objects is 0 and mem_objects is NULL the function does nothing and returns CL_SUCCESS.
    Otherwise, it returns one of the following errors' - glshare reads it literally (after the queue)."""
    v, q = objs.backend.validator, objs.backend.queue
    assert v.check("release", q, 0, NULL, 1, NULL) == NOOP
    assert _answer(v, "release", (objs.other_queue, 0, NULL, 0, NULL, NULL)) == "CL_SUCCESS"
    assert _answer(v, "release", (None, 0, NULL, 0, NULL, NULL)) == "CL_INVALID_COMMAND_QUEUE"


# -- cl_khr_external_memory and cl_khr_semaphore ------------------------------------------------------
EXTERNAL = {  # 5.5.1.1, written from the text here
    "valid": "CL_SUCCESS",
    "success_empty": "CL_SUCCESS",
    "num_zero_list_given": "CL_INVALID_VALUE",
    "num_given_list_null": "CL_INVALID_VALUE",
    "invalid_mem_object": "CL_INVALID_MEM_OBJECT",
    "unseen_mem_object": "CL_INVALID_MEM_OBJECT",
    "not_gl_object": "CL_INVALID_MEM_OBJECT",  # "not ... created using an external memory handle"
    "invalid_queue": "CL_INVALID_COMMAND_QUEUE",
    "context_not_from_gl": "CL_INVALID_CONTEXT",  # another context: the general rule
    "wait_list_null_n_given": "CL_INVALID_EVENT_WAIT_LIST",
    "wait_list_other_context": "CL_INVALID_CONTEXT",
    "event_aliases_wait_list": "CL_SUCCESS",  # 5.5.1.1 has no alias rule
}


@pytest.fixture
def external(objs):
    """host_copy's objects checked against cl_khr_external_memory's rules (what external_memory uses)."""
    from app.validate.spec import SpecValidator

    b = objs.backend
    return objs, SpecValidator(b.context, b._is_shared, rule_set="external_memory", events=b.validator.events)


@pytest.mark.parametrize("call", ["acquire", "release"])
@pytest.mark.parametrize("case", list(EXTERNAL))
def test_external_memory_cases(external, call, case):
    objs, v = external
    assert _answer(v, call, objs.args(case)) == EXTERNAL[case]


def test_external_memory_empty_call_is_a_command(external):
    """(0, NULL) 'will trivially succeed after its event dependencies are satisfied and will update
    its completion event': no 5.5.15-style no-op, the wait list is still checked, an event is due."""
    objs, v = external
    q = objs.backend.queue
    assert v.check("acquire", q, 0, NULL, 0, NULL) == EMPTY
    assert _answer(v, "acquire", (q, 0, NULL, 1, NULL, NULL)) == "CL_INVALID_EVENT_WAIT_LIST"
    failed = cl.UserEvent(objs.backend.context)
    failed.set_status(-1)
    assert _answer(v, "acquire", (q, 1, [objs.shared.mem], 1, [failed], NULL)) == \
        "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"


class Sem:
    """A semaphore wrapper as glshare's are: a ctypes handle its release() clears."""

    def __init__(self, value: int) -> None:
        self.handle = ctypes.c_void_p(value)

    def release(self) -> None:
        self.handle = None


def test_semaphore_rules(objs):
    from app.validate.semaphores import SemaphoreValidator

    b = objs.backend
    v = SemaphoreValidator(b.context, events=b.validator.events)
    sem = REGISTRY.created(Sem(0x1234), b.context, kind="semaphore")
    gone = REGISTRY.created(Sem(0x1235), b.context, kind="semaphore")
    gone.release()
    q, ev = b.queue, objs.event
    failed = cl.UserEvent(b.context)
    failed.set_status(-1)
    cases = [
        ((q, 1, [sem], 0, NULL), "CL_SUCCESS"),
        ((q, 0, [sem], 0, NULL), "CL_INVALID_VALUE"),  # no no-op here: "if num_sema_objects is 0"
        ((q, 1, [None], 0, NULL), "CL_INVALID_SEMAPHORE_KHR"),
        ((q, 1, [gone], 0, NULL), "CL_INVALID_SEMAPHORE_KHR"),
        ((q, 1, [Sem(0x99)], 0, NULL), "CL_INVALID_SEMAPHORE_KHR"),  # glshare never saw it
        ((None, 1, [sem], 0, NULL), "CL_INVALID_COMMAND_QUEUE"),
        ((objs.other_queue, 1, [sem], 0, NULL), "CL_INVALID_CONTEXT"),
        ((q, 1, [sem], 1, NULL), "CL_INVALID_EVENT_WAIT_LIST"),
        ((q, 1, [sem], 1, [objs.other_event]), "CL_INVALID_CONTEXT"),
        ((q, 1, [sem], 1, [failed]), "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"),
        ((q, 1, NULL, 0, NULL), None),  # "The length of the list must be at least num_sema_objects."
        ((q, 2, [sem], 0, NULL), None),
    ]
    for call in ("wait", "signal"):
        for args, code in cases:
            assert _answer(v, call, args) == code, (call, args)
    assert v.check_python("signal", q, [sem], [ev]) == "CL_SUCCESS"
    # frames in flight on copies alternate between pairs: each accepted verdict is kept, and a
    # semaphore released after it was accepted is refused at its next use
    other = REGISTRY.created(Sem(0x1236), b.context, kind="semaphore")
    for _ in range(2):
        assert _answer(v, "wait", (q, 1, [sem], 0, NULL)) == "CL_SUCCESS"
        assert _answer(v, "wait", (q, 1, [other], 0, NULL)) == "CL_SUCCESS"
    other.release()
    assert _answer(v, "wait", (q, 1, [sem], 0, NULL)) == "CL_SUCCESS"
    assert _answer(v, "wait", (q, 1, [other], 0, NULL)) == "CL_INVALID_SEMAPHORE_KHR"
    REGISTRY.forget(sem)
    REGISTRY.forget(gone)
    REGISTRY.forget(other)


def test_semaphore_check_python_remembers_one_accepted_semaphore(objs):
    """The frame's case, one semaphore and no wait list: accepted once, then counted without the
    rules (``check`` is not called), and checked again once the semaphore is released, on another
    queue, or with a wait list."""
    from app.validate.semaphores import SemaphoreValidator

    b = objs.backend
    v = SemaphoreValidator(b.context, events=b.validator.events)
    sem = REGISTRY.created(Sem(0x2234), b.context, kind="semaphore")
    q = b.queue
    calls = []
    real = v.check
    v.check = lambda *a: calls.append(a[0]) or real(*a)
    try:
        assert v.check_python("wait", q, [sem], None) == "CL_SUCCESS" and calls == ["wait"]
        before = v.checked
        assert v.check_python("wait", q, [sem], None) == "CL_SUCCESS"
        assert calls == ["wait"] and v.checked == before + 1  # remembered, counted
        assert v.check_python("signal", q, [sem], None) == "CL_SUCCESS" and calls == ["wait", "signal"]
        assert v.check_python("wait", q, [sem], [objs.event]) == "CL_SUCCESS" and len(calls) == 3
        with pytest.raises(ValidationError):  # another context's queue: the rules again, refused
            v.check_python("wait", objs.other_queue, [sem], None)
        sem.release()  # its handle cleared: refused at its next use
        with pytest.raises(ValidationError) as err:
            v.check_python("wait", q, [sem], None)
        assert err.value.name == "CL_INVALID_SEMAPHORE_KHR"
    finally:
        REGISTRY.forget(sem)


def test_registry_liveness():
    from app.validate.liveness import LIVE, RELEASED, UNKNOWN, ObjectRegistry

    reg = ObjectRegistry(released_max=2)
    s = reg.created(Sem(7), kind="semaphore")
    assert reg.state(s) == LIVE
    s.release()
    assert reg.state(s) == RELEASED  # the wrapper cleared its handle
    t = reg.handed(Sem(8))
    gen = reg.generation
    del t  # weak reference: the entry goes with the object
    import gc

    gc.collect()
    assert reg.generation > gen and reg.counts()["live"] == 1
    a, b, c = Sem(1), Sem(2), Sem(3)
    for x in (a, b, c):
        reg.released(x)
    assert reg.state(a) == UNKNOWN and reg.state(c) == RELEASED  # the oldest forgotten, then refused as unknown
    assert "never saw" in reg.why_not_live(a)


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


KINDS = {  # case -> (gl_sharing kind, external_memory kind), decided from the texts (ownership.py's table)
    "use_without_acquire": (SPEC, SPEC),
    "double_acquire": (ADVICE, SPEC),
    "release_without_acquire": (ADVICE, SPEC),
    "release_on_other_queue": (ADVICE, ADVICE),
    "gl_use_while_acquired": (SPEC, SPEC),
    "delete_gl_while_shared": (ADVICE, ADVICE),
}


def test_each_family_classifies_every_case():
    for i, family in enumerate(("gl_sharing", "external_memory")):
        table = families.get(family).hazards
        assert set(table) == set(KINDS)
        for case, h in table.items():
            assert h.kind == KINDS[case][i], (family, case)
            assert h.reasoning
            if h.kind == SPEC:  # a spec violation quotes the sentence it breaks
                assert h.source is not None and h.source.text in h.spec
            else:  # advice says it is advice, with its reasoning
                assert h.spec.startswith("advice: ") and h.reasoning in h.spec


@pytest.mark.parametrize("case", list(HAZARDS))
@pytest.mark.parametrize("strict", ["off", "spec", "all", True])
def test_each_hazard_is_flagged_and_strict_raises_by_kind(host_copy, case, strict):
    b = host_copy
    b.tracker.strict = strict
    obj = b.create_buffer(f"t.{case}", 64)
    other_queue = cl.CommandQueue(b.context, b.device)
    kind = KINDS[case][0]  # host_copy follows the GL-sharing rules; the kind decided from the texts
    assert HAZARDS[case].kind == kind
    raises = strict in ("all", True) or (strict == "spec" and kind == SPEC)
    try:
        if raises:
            with pytest.raises(HazardError) as err:
                _provoke(b, case, obj, other_queue)
            assert (err.value.case, err.value.label, err.value.spec, err.value.kind) == (
                case, obj.label, HAZARDS[case].spec, kind)
        else:
            _provoke(b, case, obj, other_queue)
        assert b.tracker.counts == {case: 1}
        flag = b.tracker.flags[-1]
        assert (flag.case, flag.label, flag.spec, flag.kind) == (case, obj.label, HAZARDS[case].spec, kind)
    finally:
        b.tracker.strict = False
        if obj in b.objects and b.tracker.state(obj).owner == CL:
            b.release(b.queue, [obj])
        b.destroy(obj)
        other_queue.finish()
        b.queue.finish()


def test_external_memory_findings_follow_its_text():
    """The same mistakes on imported memory: a second acquire and a release without acquire are
    spec violations there ('Each memory object must be acquired only once', 5.5.1.1)."""
    from types import SimpleNamespace

    t = OwnershipTracker(strict="spec", family="external_memory")
    obj = SimpleNamespace(label="imported")
    t.add(obj)
    t.acquired([obj], "q")
    with pytest.raises(HazardError) as err:
        t.acquired([obj], "q")
    assert err.value.kind == SPEC and "acquired only once" in err.value.spec
    t.strict = "off"
    t.released([obj], "q")
    t.released([obj], "q")
    assert t.flags[-1].case == "release_without_acquire" and t.flags[-1].kind == SPEC
    with pytest.raises(ValueError):
        OwnershipTracker(strict="always")


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


# -- #37: right against each text, second pass -----------------------------------------------------
def _sub_device_queue(device):
    """A queue on a sub-device of ``device`` in a context of its own (skips where it cannot partition)."""
    if device.partition_max_sub_devices < 2:
        pytest.skip(f"{device.name.strip()!r} cannot be partitioned")
    try:
        sub = device.create_sub_devices([cl.device_partition_property.EQUALLY, 1])[0]
    except cl.Error as exc:
        pytest.skip(f"clCreateSubDevices failed: {exc}")
    ctx = cl.Context([sub])
    return ctx, cl.CommandQueue(ctx, sub)


def test_external_memory_empty_call_on_another_contexts_queue_succeeds(external):
    """Item 1: 5.5.1.1's (0, NULL) 'will trivially succeed after its event dependencies are
    satisfied'; no listed error applies on a queue of another context (its events are that queue's)."""
    objs, v = external
    assert v.check("acquire", objs.other_queue, 0, NULL, 0, NULL) == EMPTY
    assert v.check("release", objs.other_queue, 0, NULL, 1, [objs.other_event]) == EMPTY
    assert _answer(v, "release", (objs.other_queue, 0, NULL, 1, [objs.event], NULL)) == "CL_INVALID_CONTEXT"


def test_semaphores_and_queue_of_one_other_context_are_accepted(objs):
    """Item 2: 5.13.6 errs only when the queue's context and the semaphores' differ."""
    from app.validate.semaphores import SemaphoreValidator

    v = SemaphoreValidator(objs.backend.context, events=objs.backend.validator.events)
    sem = REGISTRY.created(Sem(0x3234), objs.other_context, kind="semaphore")
    try:
        for call in ("signal", "wait"):
            assert _answer(v, call, (objs.other_queue, 1, [sem], 0, NULL)) == "CL_SUCCESS"
            assert _answer(v, call, (objs.other_queue, 1, [sem], 1, [objs.other_event])) == "CL_SUCCESS"
            assert _answer(v, call, (objs.backend.queue, 1, [sem], 0, NULL)) == "CL_INVALID_CONTEXT"
    finally:
        REGISTRY.forget(sem)


def test_a_queue_whose_device_the_objects_context_lacks(external):
    """Item 3: 5.5.1.1 lists CL_INVALID_COMMAND_QUEUE 'if one or more of mem_objects belong to a
    context that does not contain a device associated with command_queue' (a sub-device here)."""
    from app.validate.semaphores import SemaphoreValidator

    objs, v = external
    _, q = _sub_device_queue(objs.backend.device)
    assert _answer(v, "acquire", (q, 1, [objs.shared.mem], 0, NULL, NULL)) == "CL_INVALID_COMMAND_QUEUE"
    gl = objs.backend.validator  # 5.5.15 has no such rule: the queue's context was not made from GL
    assert _answer(gl, "acquire", (q, 1, [objs.shared.mem], 0, NULL, NULL)) == "CL_INVALID_CONTEXT"
    sv = SemaphoreValidator(objs.backend.context, events=objs.backend.validator.events)
    sem = REGISTRY.created(Sem(0x4234), objs.backend.context, kind="semaphore")
    try:
        assert _answer(sv, "signal", (q, 1, [sem], 0, NULL)) == "CL_INVALID_COMMAND_QUEUE"
    finally:
        REGISTRY.forget(sem)


def test_gl_use_while_acquired_is_undefined_behaviour_in_its_text():
    """Item 6: 3.0.16's 'Synchronizing OpenCL Operations With Other APIs' gives the consequence."""
    from app.validate.findings import UNDEFINED

    h = families.get("gl_sharing").hazards["gl_use_while_acquired"]
    assert h.consequence == UNDEFINED and h.source.text.startswith("Attempting to access the data store")
    assert "OpenCL 3.0.16" in h.spec and quote_found(h.source.text, spec_texts())


def test_the_same_object_twice_in_one_list(external):
    """External memory: 'Each memory object must be acquired only once' (implementation-defined, no
    code); GL sharing: no rule (accepted; the tracker advises)."""
    objs, v = external
    m = objs.shared.mem
    for call in ("acquire", "release"):
        assert _answer(v, call, (objs.backend.queue, 1, [m], 0, NULL, NULL)) == "CL_SUCCESS"  # remembered first
        with pytest.raises(SpecViolation) as err:
            v.check(call, objs.backend.queue, 2, [m, m], 0, NULL)
        assert err.value.rule == f"{call}_twice" and "only once" in err.value.quote
    assert _answer(objs.backend.validator, "acquire", (objs.backend.queue, 2, [m, m], 0, NULL, NULL)) == "CL_SUCCESS"


def test_a_double_signal_of_a_tracked_binary_semaphore(objs):
    """'Signaling the same binary semaphore twice without an interleaving wait may lead to undefined
    behavior': refused without a code for a semaphore whose every operation glshare sees."""
    from app.validate.semaphores import SemaphoreValidator

    b = objs.backend
    v = SemaphoreValidator(b.context, events=b.validator.events)
    sem = REGISTRY.created(Sem(0x5234), b.context, kind="semaphore")
    q = b.queue
    try:
        assert _answer(v, "signal", (q, 2, [sem, sem], 0, NULL)) is None  # twice in one list
        assert _answer(v, "signal", (q, 1, [sem], 0, NULL)) == "CL_SUCCESS"  # untracked: state unknown
        assert _answer(v, "signal", (q, 1, [sem], 0, NULL)) == "CL_SUCCESS"
        v.track(sem)
        assert v.check_python("signal", q, [sem], None) == "CL_SUCCESS"
        with pytest.raises(SpecViolation) as err:
            v.check_python("signal", q, [sem], None)
        assert err.value.rule == "signal_twice"
        assert v.check_python("wait", q, [sem], None) == "CL_SUCCESS"
        v.signalled(sem)  # GL signalled it (glshare issues GL's semaphore calls itself)
        with pytest.raises(SpecViolation):
            v.signalled(sem)
        assert v.check_python("wait", q, [sem], None) == "CL_SUCCESS"
        assert _answer(v, "wait", (q, 1, [sem], 0, NULL)) is None  # a double wait
    finally:
        REGISTRY.forget(sem)
