"""Every acquire and release checked against its own call's error list, before the driver sees it.

One ``SpecValidator`` per backend, built with the backend's rule set, a family of the registry
(``app/validate/families.py``) whose module holds the rules: ``app/validate/gl.py``
(clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects, OpenCL 3.0.16's 5.5.15; gl_sharing and
host_copy use it) or ``app/validate/external_memory.py`` (cl_khr_external_memory, 5.5.1.1). A
family that joins the rule set with a semaphore validator (``app/validate/semaphores.py``) is
built as ``semaphores``.

Each rule is a verbatim English extract with its section (``Rule.source``), kept here beside the
check that enforces it. A broken rule with a CL code raises ``ValidationError`` (``.code``,
``.rule``, ``.quote``, ``.section``); a broken requirement the text gives no code for raises
``SpecViolation`` (``.code`` None): glshare invents no code. Both are spec violations, refused
before the driver call; the scheduler records them and ``--strict`` stops the run on them.

Rules every OpenCL enqueue obeys but 5.5.15 does not list (``basis="general rule"``): wait-list
events of another context. Appendix A.1: "Event objects can be created when a command is queued
to a command-queue. These event objects can be shared across multiple command-queues created
using the same context."; every core enqueue names the code, e.g. clEnqueueMarkerWithWaitList
(5.12): "CL_INVALID_CONTEXT if context associated with command_queue and events in
event_wait_list are not the same."

Liveness: memory objects are judged by glshare's registry (``app/validate/liveness.py``): a
released object, or one glshare never saw, is CL_INVALID_MEM_OBJECT; the validator never reads a
memory object's info. Events and queues are pyopencl wrappers that hold their handle while they
exist; an event's context is asked of the driver (a valid handle).

The C API's pointers are modelled in Python: ``NULL`` (None) is a NULL pointer, a list is a
pointer to that many elements (a count larger than the list reads past it: invalid elements), an
element that is None is a NULL handle. ``event_out`` is *where* the new event is written: NULL, a
separate place (any other value), or ``WaitListElement(i)``, the i-th slot of the
event_wait_list array itself. The alias rule ("event must not refer to an element of the
event_wait_list array") is about that place, not about values: two variables holding the same
cl_event are two places and break nothing. The Python API (``check_python``) returns the new
event instead of writing it anywhere, so it cannot break the rule.

Order of the checks. The texts list errors without a precedence; glshare fixes one (the error
lab's combination cases accept any listed code, and rows where the order alone decides accept
every defensible answer): the queue's handle, then the empty call ((0, NULL): 5.5.15's no-op; for
external memory a command that only waits, on any queue), the queue's device and context, the
(count, list) pair, the wait list (against the queue's context), then each memory object.

Cost (it runs twice a frame): a queue seen before, one or two shared objects accepted before and
at most one event: a few attribute reads and dict lookups plus one event-context query.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol

import pyopencl as cl

from app.errors import CL_CODES, SpecViolation, ValidationError
from app.memo import keep
from app.validate import families
from app.validate.findings import ERROR_CODE, KHR_APPENDIX_A, KHR_RUNTIME, Source
from app.validate.liveness import REGISTRY, ObjectRegistry

NULL = None  # a C NULL pointer, as opposed to an empty list

NOOP = "CL_SUCCESS_NOOP"  # CL_SUCCESS, nothing enqueued: 5.5.15's "does nothing"
EMPTY = "CL_SUCCESS_EMPTY"  # CL_SUCCESS for a command with no objects that still completes an event


@dataclass(frozen=True)
class WaitListElement:
    """``event_out`` pointing at element ``index`` of the event_wait_list array (the C alias)."""

    index: int = 0


@dataclass(frozen=True)
class Rule:
    """One rule of one call family: the CL code (None: the text names none), what breaking it
    leads to, the verbatim sentence, and where the code comes from."""

    code: str | None
    source: Source
    consequence: str = ERROR_CODE
    basis: str = "listed"  # "listed" in the call's error list, "general rule", or "requirement"
    note: str = ""

    @property
    def spec(self) -> str:
        return self.source.text


GENERAL_EVENT_CONTEXT = (
    Source("Event objects can be created when a command is queued to a command-queue. These event objects can "
           "be shared across multiple command-queues created using the same context.", "A.1",
           "Shared OpenCL Objects", KHR_APPENDIX_A),
    Source("CL_INVALID_CONTEXT if context associated with command_queue and events in event_wait_list are not "
           "the same.", "5.12", "Markers, Barriers and Waiting for Events (clEnqueueMarkerWithWaitList)",
           KHR_RUNTIME),
)


class EventFacts(Protocol):
    """What the wait-list rules ask of an event, by its handle (the backend passes app/cl/ext.py's
    ``event_info()``: clGetEventInfo through prepared calls). None: the driver refused the query."""

    def context(self, event_ptr: int) -> int | None: ...
    def status(self, event_ptr: int) -> int | None: ...


class SpecValidator:
    """Checks one acquire or release call against the backend's rule set.

    ``sharing_context`` is the context that plays the part of the GL-created context (for
    gl_sharing it is one; host_copy and external_memory designate their own); ``is_shared(mem)``
    tells whether a live memory object is one this backend shares (made from a GL object, or
    imported from external memory). ``events`` answers the wait-list rules' questions about events.
    """

    # the handle types the checks accept: pyopencl's wrappers here; glshare attach checks another
    # program's recorded handles with a subclass naming its own (app/attach/model.py)
    queue_types: tuple[type, ...] = (cl.CommandQueue,)
    mem_types: tuple[type, ...] = (cl.MemoryObjectHolder,)
    event_types: tuple[type, ...] = (cl.Event,)

    def __init__(self, sharing_context: cl.Context, is_shared: Callable[[Any], bool],
                 rule_set: str = "gl_sharing", registry: ObjectRegistry = REGISTRY, *, events: EventFacts) -> None:
        if rule_set not in families.rule_sets():
            raise ValueError(f"unknown rule set {rule_set!r} (one of {', '.join(families.rule_sets())})")
        self.sharing_context = sharing_context
        self.events = events
        self.is_shared = is_shared
        self.rule_set = rule_set
        self.registry = registry
        self.checked = 0
        self.refused = 0
        self._queue_ok: Any = _NO_QUEUE  # the last queue found to belong to sharing_context
        self._accepted: dict[int, Any] = {}  # id -> memory objects accepted, until the registry changes
        self._verdicts: dict[tuple, tuple] = {}  # calls without a wait list accepted (check_python)
        self._generation = registry.generation
        fam = self.family = families.get(rule_set)
        self.rules, self.entry_points = fam.rules, fam.entry_points
        self._noop = fam.empty_call == "noop"
        self._alias_rule = "event_aliases_wait_list" in fam.rules
        self._failed_events = "wait_list_failed_event" in fam.rules
        self.semaphores: Any = None
        for name in families.of_rule_set(rule_set):
            if families.get(name).validator == "semaphore":
                from app.validate.semaphores import SemaphoreValidator

                self.semaphores = SemaphoreValidator(sharing_context, registry, events=events)

    # -- the C form ------------------------------------------------------------------------------
    def check(self, call: str, queue: Any, num_objects: int, mem_objects: list | None,
              num_events: int, event_wait_list: list | None, event_out: Any = NULL) -> str:
        """One call in the C API's terms.

        Returns:
            ``"CL_SUCCESS"``; ``NOOP`` for 5.5.15's (0, NULL) "does nothing"; ``EMPTY`` for
            cl_khr_external_memory's (0, NULL), a command that still completes an event.
        Raises:
            ValidationError (a CL code) or SpecViolation (no code), each with ``.rule``.
        """
        self.checked += 1
        in_context = self._check_queue(call, queue)
        empty = num_objects == 0 and mem_objects is NULL
        if empty and self._noop:
            return NOOP  # "does nothing and returns CL_SUCCESS. Otherwise, ...": read literally
        if not in_context and not empty:  # an empty external-memory call names no object of the context
            self._fail("queue_other_device" if self._device_missing(queue) else self.family.other_context_rule,
                       call)
        if num_objects == 0 and mem_objects is not NULL:
            self._fail("num_zero_list_given", call)
        if num_objects > 0 and mem_objects is NULL:
            self._fail("num_given_list_null", call)
        check_wait_list(self, call, num_events, event_wait_list, failed_events=self._failed_events,
                        context_ptr=None if in_context else queue.context.int_ptr)
        if self._alias_rule and event_out is not NULL and event_wait_list is not NULL \
                and isinstance(event_out, WaitListElement) and 0 <= event_out.index < num_events:
            self._fail("event_aliases_wait_list", call)
        if num_objects == 0:
            return EMPTY
        self._check_objects(call, mem_objects[:num_objects], num_objects)
        return "CL_SUCCESS"

    def check_python(self, call: str, queue: Any, objects: Iterable | None, wait_for: Iterable | None) -> str:
        """The Python API's form: a list (or None) of objects and of events; [] counts as NULL.

        A call without a wait list that was accepted before, on the same queue with the same
        objects, while no CL object was released or forgotten since (the registry's generation),
        gets the same verdict without going through the rules again (a frame makes the same calls
        every frame); it still counts as checked. Refusals are never remembered."""
        objs = list(objects) if objects else NULL
        if wait_for:
            evs = list(wait_for)
            return self.check(call, queue, len(objs) if objs else 0, objs, len(evs), evs)
        key = (call, queue, *map(id, objs or ()))
        seen = self._verdicts.get(key)
        if seen is not None and seen[0] == self.registry.generation:
            self.checked += 1
            return seen[1]
        verdict = self.check(call, queue, len(objs) if objs else 0, objs, 0, NULL)
        # the objects are held with the verdict: no id in a key can be reused while it is kept
        keep(self._verdicts, key, (self.registry.generation, verdict, objs))
        return verdict

    # -- the parts -------------------------------------------------------------------------------
    def _check_queue(self, call: str, queue: Any) -> bool:
        if queue is self._queue_ok:
            return True
        if not (isinstance(queue, self.queue_types) and queue.int_ptr):
            self._fail("invalid_queue", call, "a NULL handle" if queue is None else f"not a command-queue: "
                                                                                     f"{type(queue).__name__}")
        if queue.context == self.sharing_context:
            self._queue_ok = queue
            return True
        return False

    def _device_missing(self, queue: Any) -> bool:
        """Whether the queue's device is not one of the sharing context's (the objects' context)."""
        return "queue_other_device" in self.rules and queue.device not in self.sharing_context.devices

    def _check_objects(self, call: str, objs: list, num_objects: int) -> None:
        if self._generation != self.registry.generation:
            self._accepted.clear()
            self._generation = self.registry.generation
        accepted = self._accepted
        doubled = num_objects > 1 and len({id(m) for m in objs}) < len(objs)
        if len(objs) == num_objects and not doubled:
            for m in objs:
                if id(m) not in accepted:
                    break
            else:
                return
        if len(objs) < num_objects:
            self._fail("invalid_mem_object", call, f"num_objects is {num_objects} but the list holds {len(objs)}: "
                                                   "the elements past it are not memory objects")
        registry = self.registry
        for m in objs:  # every invalid object before any valid one that is not shared
            if not (isinstance(m, self.mem_types) and registry.is_live(m)):
                self._fail("invalid_mem_object", call, registry.why_not_live(m))
        for m in objs:
            if not self.is_shared(m):
                self._fail(self.family.not_shared_rule, call,
                           "a valid memory object this backend did not share (made from a GL object, or imported)")
        twice = f"{call}_twice"
        if doubled and twice in self.rules:
            self._fail(twice, call, "the same memory object twice in one list")
        for m in objs:
            accepted[id(m)] = m

    def _fail(self, rule: str, call: str, detail: str = "") -> None:
        self.refused += 1
        raise rule_error(rule, call, self.rules, self.entry_points, detail)


_NO_QUEUE = object()  # never a queue (None is NULL, which must be checked)


def check_wait_list(v: Any, call: str, num_events: int, event_wait_list: list | None, *,
                    failed_events: bool, context_ptr: int | None = None) -> None:
    """The wait-list rules shared by every call family (each family's own wording is in its
    ``rules``: keys wait_list_null_n_given, wait_list_given_n_zero, wait_list_invalid_event,
    wait_list_other_context and, where the family lists it, wait_list_failed_event). The events must
    belong to the queue's context, whose handle is ``context_ptr`` (None: the sharing context's)."""
    if event_wait_list is NULL:
        if num_events > 0:
            v._fail("wait_list_null_n_given", call)
        return
    if num_events == 0:
        v._fail("wait_list_given_n_zero", call)
    events = event_wait_list[:num_events]
    if len(events) < num_events:
        v._fail("wait_list_invalid_event", call, f"num_events_in_wait_list is {num_events} but the list holds "
                                                 f"{len(events)}")
    event_types = getattr(v, "event_types", (cl.Event,))
    for e in events:
        if not (isinstance(e, event_types) and e.int_ptr):
            v._fail("wait_list_invalid_event", call, "a NULL event" if e is None else f"not an event: {type(e).__name__}")
    ctx = context_ptr if context_ptr is not None else v.sharing_context.int_ptr
    info = v.events  # asked of every event, every frame
    for e in events:
        got = info.context(e.int_ptr)
        if got is None:
            v._fail("wait_list_invalid_event", call, "the driver refuses clGetEventInfo on it")
        if got != ctx:
            v._fail("wait_list_other_context", call, "an event of another context")
    if failed_events:
        for e in events:
            status = info.status(e.int_ptr)
            if status is not None and status < 0:
                v._fail("wait_list_failed_event", call, f"an event whose execution status is {status}")


def rule_error(rule: str, call: str, rules: Mapping[str, Rule], entry_points: Mapping[str, str],
               detail: str = "") -> ValidationError | SpecViolation:
    """The error for a broken rule: ValidationError when the rule has a code, else SpecViolation."""
    r = rules[rule]
    where = entry_points.get(call, call)
    cite = r.source.where
    if r.code is None:
        return SpecViolation(rule, r.source.text, cite, where=where, consequence=r.consequence, detail=detail,
                             document=r.source.document, note=r.note)
    text = f"{detail}: " if detail else ""
    text += f"{r.source.text} [{cite}; rule {rule}]" + (f" ({r.note})" if r.note else "")
    return ValidationError(CL_CODES[r.code], where=where, detail=text, rule=rule, quote=r.source.text,
                           section=cite, document=r.source.document, basis=r.basis)
