"""The acquire/release rule book, checked before the driver sees a call.

Every rule is quoted from ../shared/spec/gl-acquire-release.txt (OpenCL 3.0, section 5.5.15,
clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects). The validator runs on every backend, so
host_copy and external_memory keep exactly the contract of cl_khr_gl_sharing.

Order of the checks. The spec lists the errors without a precedence, so glshare fixes one:
1. the queue (an ICD loader dispatches on it, so no implementation can answer anything else for
   an invalid queue);
2. the no-op: "If num_objects is 0 and mem_objects is NULL the function does nothing and returns
   CL_SUCCESS. Otherwise, it returns one of the following errors" - read literally, it comes
   before every other error;
3. the context, the (num_objects, mem_objects) pair, the wait list, the returned event, then each
   memory object: not a valid memory object before not made from a GL object.

The C API's pointers are modelled in Python: ``NULL`` (None) is a NULL pointer, a list is a
pointer to that many elements (a count larger than the list reads past it: invalid elements), an
element that is None is a NULL handle. ``event_out`` is the object the caller wants the new event
written over; it aliases the wait list when it is (or wraps the same cl_event as) an element.

A CL memory object released *through glshare's sharing layer* (``SharingBackend.unshare``, which
calls ``OwnershipTracker.remove``) is remembered in ``RETIRED`` and refused as invalid. One
released elsewhere cannot be told from a live one: pyopencl keeps no readable flag and reading a
released object's info segfaults, so the validator never touches a memory object's info.

Cost (it runs twice a frame; the bench measures it): the common case is a queue seen before,
one or two shared objects and at most one event: a few attribute reads and dict lookups, no CL
call. Memory objects the backend accepted as shared are remembered (by identity, the wrapper held)
until the next ``retire``, the only way an object stops being shared.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any, Iterable

import pyopencl as cl

from app.errors import CL_CODES, ValidationError

NULL = None  # a C NULL pointer, as opposed to an empty list

CALLS = ("acquire", "release")
ENTRY_POINTS = {"acquire": "clEnqueueAcquireGLObjects", "release": "clEnqueueReleaseGLObjects"}
NOOP = "CL_SUCCESS_NOOP"  # what check() returns for (0, NULL): CL_SUCCESS, nothing enqueued


@dataclass(frozen=True)
class Rule:
    code: str
    spec: str
    note: str = ""  # where glshare had to choose (the spec names no code)

    @property
    def spec_names_code(self) -> bool:
        return not self.note


RULES: dict[str, Rule] = {
    "success_empty": Rule("CL_SUCCESS", "If num_objects is 0 and mem_objects is NULL the function does nothing and returns CL_SUCCESS."),
    "num_zero_list_given": Rule("CL_INVALID_VALUE", "CL_INVALID_VALUE if num_objects is zero and mem_objects is not a NULL value"),
    "num_given_list_null": Rule("CL_INVALID_VALUE", "CL_INVALID_VALUE ... if num_objects > 0 and mem_objects is NULL."),
    "invalid_mem_object": Rule("CL_INVALID_MEM_OBJECT", "CL_INVALID_MEM_OBJECT if memory objects in mem_objects are not valid OpenCL memory objects."),
    "invalid_queue": Rule("CL_INVALID_COMMAND_QUEUE", "CL_INVALID_COMMAND_QUEUE if command_queue is not a valid command-queue."),
    "context_not_from_gl": Rule("CL_INVALID_CONTEXT", "CL_INVALID_CONTEXT if context associated with command_queue was not created from an OpenGL context"),
    "not_gl_object": Rule("CL_INVALID_GL_OBJECT", "CL_INVALID_GL_OBJECT if memory objects in mem_objects have not been created from an OpenGL object(s)."),
    "wait_list_null_n_given": Rule("CL_INVALID_EVENT_WAIT_LIST", "CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list > 0"),
    "wait_list_given_n_zero": Rule("CL_INVALID_EVENT_WAIT_LIST", "... or event_wait_list is not NULL and num_events_in_wait_list is 0"),
    "wait_list_invalid_event": Rule("CL_INVALID_EVENT_WAIT_LIST", "... or if event objects in event_wait_list are not valid events."),
    "event_aliases_wait_list": Rule(
        "CL_INVALID_VALUE",
        "If event_wait_list and event are not NULL, event must not refer to an element of the event_wait_list array.",
        note="the spec names no error code for this (the behaviour is undefined); glshare refuses the call "
             "with CL_INVALID_VALUE, the code the spec uses for the other invalid arguments"),
}

# Memory objects glshare's sharing layer released (id -> the pyopencl wrapper, kept so that its id
# cannot be reused by a live object). Bounded: the oldest are forgotten first.
RETIRED: collections.OrderedDict[int, Any] = collections.OrderedDict()
RETIRED_MAX = 1024
_RETIRE_COUNT = [0]  # bumped by every retire(): validators drop their cache of shared objects


def retire(mem: Any) -> None:
    """Remember that ``mem`` was released by glshare (called before the release itself)."""
    RETIRED[id(mem)] = mem
    _RETIRE_COUNT[0] += 1
    while len(RETIRED) > RETIRED_MAX:
        RETIRED.popitem(last=False)


_NO_QUEUE = object()  # never a queue (None is NULL, which must be checked)


def _live(obj: Any, cls: type) -> bool:
    """A pyopencl object of that class with a non-NULL handle, not released by glshare."""
    return isinstance(obj, cls) and bool(obj.int_ptr) and id(obj) not in RETIRED


def _live_event(e: Any) -> bool:
    return isinstance(e, cl.Event) and bool(e.int_ptr)


def _same_event(a: Any, b: Any) -> bool:
    if a is b:
        return True
    return isinstance(a, cl.Event) and isinstance(b, cl.Event) and a.int_ptr == b.int_ptr


class SpecValidator:
    """Checks one acquire or release call.

    ``sharing_context`` is the context that plays the part of the GL-created context (for
    gl_sharing it is one; host_copy and external_memory designate their own), and ``is_shared``
    tells whether a memory object was made from a GL object by this backend.
    """

    def __init__(self, sharing_context: cl.Context, is_shared) -> None:
        self.sharing_context = sharing_context
        self.is_shared = is_shared
        self.checked = 0
        self.refused = 0
        self._queue_ok: Any = _NO_QUEUE  # the last queue found to belong to sharing_context
        self._shared: dict[int, Any] = {}  # id -> memory objects is_shared() accepted, until a retire()
        self._retires = _RETIRE_COUNT[0]

    def check(self, call: str, queue: Any, num_objects: int, mem_objects: list | None,
              num_events: int, event_wait_list: list | None, event_out: Any = NULL) -> str:
        """One call in the C API's terms.

        Returns:
            ``"CL_SUCCESS"``, or ``NOOP`` for 0 objects with a NULL list (nothing to enqueue).
        Raises:
            ValidationError with ``.code``/``.name`` (the spec's CL code) and ``.rule`` (a RULES key).
        """
        self.checked += 1
        # 1. the queue
        in_context = True
        if queue is not self._queue_ok:
            if not _live(queue, cl.CommandQueue):
                self._fail("invalid_queue", call)
            in_context = queue.context == self.sharing_context
            if in_context:
                self._queue_ok = queue
        # 2. the spec's no-op
        if num_objects == 0 and mem_objects is NULL:
            return NOOP
        # 3. the arguments
        if not in_context:
            self._fail("context_not_from_gl", call)
        if num_objects == 0:
            self._fail("num_zero_list_given", call)
        if mem_objects is NULL:
            self._fail("num_given_list_null", call)
        if event_wait_list is NULL:
            if num_events > 0:
                self._fail("wait_list_null_n_given", call)
        else:
            if num_events == 0:
                self._fail("wait_list_given_n_zero", call)
            events = event_wait_list[:num_events]
            if len(events) < num_events or not all(_live_event(e) for e in events):
                self._fail("wait_list_invalid_event", call)
            if event_out is not NULL and any(_same_event(event_out, e) for e in events):
                self._fail("event_aliases_wait_list", call)
        objs = mem_objects[:num_objects]
        if self._retires != _RETIRE_COUNT[0]:
            self._shared.clear()
            self._retires = _RETIRE_COUNT[0]
        known = self._shared
        if len(objs) == num_objects:
            for m in objs:
                if id(m) not in known:
                    break
            else:
                return "CL_SUCCESS"
        if len(objs) == num_objects and all(self.is_shared(m) for m in objs):
            for m in objs:
                known[id(m)] = m
            return "CL_SUCCESS"
        # the rare path: say which rule the list breaks
        if len(objs) < num_objects or not all(_live(m, cl.MemoryObjectHolder) for m in objs):
            self._fail("invalid_mem_object", call)
        self._fail("not_gl_object", call)
        raise AssertionError("unreachable")

    def check_python(self, call: str, queue: Any, objects: Iterable | None, wait_for: Iterable | None) -> str:
        """The Python API's form: a list (or None) of objects and of events; [] counts as NULL."""
        objs = list(objects) if objects else NULL
        evs = list(wait_for) if wait_for else NULL
        return self.check(call, queue, len(objs) if objs else 0, objs, len(evs) if evs else 0, evs)

    def _fail(self, rule: str, call: str) -> None:
        self.refused += 1
        raise rule_error(rule, call)


def rule_error(rule: str, call: str) -> ValidationError:
    """The ValidationError for a broken rule (``.rule``, ``.code``, ``.name``, ``.spec``)."""
    r = RULES[rule]
    detail = f"{r.spec} [rule {rule}]" + (f" ({r.note})" if r.note else "")
    exc = ValidationError(CL_CODES[r.code], where=ENTRY_POINTS.get(call, call), detail=detail)
    exc.rule = rule
    exc.spec = r.spec
    return exc
