"""The acquire/release rule book, checked before the driver sees a call.

Every rule is quoted from ../shared/spec/gl-acquire-release.txt (OpenCL 3.0, section 5.5.15,
clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects). The validator runs on every backend, so
host_copy and external_memory keep exactly the contract of cl_khr_gl_sharing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import pyopencl as cl

from app.errors import CL_CODES, ValidationError

NULL = None  # a C NULL pointer, as opposed to an empty list


@dataclass(frozen=True)
class Rule:
    code: str
    spec: str


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
    "event_aliases_wait_list": Rule("CL_INVALID_VALUE", "If event_wait_list and event are not NULL, event must not refer to an element of the event_wait_list array."),
}


def _valid_cl(obj: Any, cls: type) -> bool:
    """A live pyopencl object of that class (a released one has int_ptr 0 or raises)."""
    if not isinstance(obj, cls):
        return False
    try:
        return bool(obj.int_ptr)
    except Exception:  # noqa: BLE001 - released objects raise on access
        return False


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

    def check(self, call: str, queue: Any, num_objects: int, mem_objects: list | None,
              num_events: int, event_wait_list: list | None, event_out: Any = NULL) -> str:
        """Return ``"CL_SUCCESS"`` or ``"CL_SUCCESS_NOOP"`` (0 objects, NULL list), else raise ValidationError."""
        self.checked += 1
        where = f"clEnqueue{'Acquire' if call == 'acquire' else 'Release'}GLObjects"
        if not _valid_cl(queue, cl.CommandQueue):
            self._fail("invalid_queue", where)
        if queue.context != self.sharing_context:
            self._fail("context_not_from_gl", where)
        if num_objects == 0 and mem_objects is not NULL:
            self._fail("num_zero_list_given", where)
        if num_objects > 0 and mem_objects is NULL:
            self._fail("num_given_list_null", where)
        if event_wait_list is NULL and num_events > 0:
            self._fail("wait_list_null_n_given", where)
        if event_wait_list is not NULL and num_events == 0:
            self._fail("wait_list_given_n_zero", where)
        if event_wait_list is not NULL:
            if any(not _valid_cl(e, cl.Event) for e in event_wait_list[:num_events]):
                self._fail("wait_list_invalid_event", where)
            if event_out is not NULL and any(e is event_out for e in event_wait_list):
                self._fail("event_aliases_wait_list", where)
        if num_objects == 0:
            return "CL_SUCCESS_NOOP"
        objs = list(mem_objects[:num_objects])
        if any(not _valid_cl(m, cl.MemoryObjectHolder) for m in objs):
            self._fail("invalid_mem_object", where)
        if any(not self.is_shared(m) for m in objs):
            self._fail("not_gl_object", where)
        return "CL_SUCCESS"

    def check_python(self, call: str, queue: Any, objects: Iterable | None, wait_for: Iterable | None) -> str:
        """The Python API's form: a list (or None) of objects and of events; [] counts as NULL."""
        objs = list(objects) if objects else NULL
        evs = list(wait_for) if wait_for else NULL
        return self.check(call, queue, len(objs) if objs else 0, objs, len(evs) if evs else 0, evs)

    @staticmethod
    def _fail(rule: str, where: str) -> None:
        r = RULES[rule]
        exc = ValidationError(CL_CODES[r.code], where=where, detail=f"{r.spec} [rule {rule}]")
        exc.rule = rule
        raise exc
