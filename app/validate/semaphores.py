"""The rules of clEnqueueWaitSemaphoresKHR / clEnqueueSignalSemaphoresKHR (cl_khr_semaphore).

OpenCL API 5.13.6 "Waiting On and Signaling Semaphores" (KhronosGroup/OpenCL-Docs,
api/opencl_runtime_layer.asciidoc at 1fb076b); both calls carry the same list. Unlike the
acquire calls there is no no-op: "CL_INVALID_VALUE if num_sema_objects is 0."; a list shorter
than the count breaks "The length of the list must be at least num_sema_objects." for which no
code is listed (undefined behaviour: refused as ``SpecViolation``).

Semaphores are glshare's own wrappers (``app.cl.ext.Semaphore``, or any object with a ctypes
``handle`` that its ``release()`` clears), registered in ``app/validate/liveness.py`` with
their context: ``REGISTRY.created(sem, context, kind="semaphore")``. An unregistered or
released one is CL_INVALID_SEMAPHORE_KHR. Payloads: glshare's semaphores are binary, which need
none ("This can be set to NULL or will be ignored if no semaphores in the list of sema_objects
require a payload."), so the payload rule is not checked.

Contexts: 5.13.6 errs only where the queue's context and a semaphore's (or an event's) differ:
a queue and semaphores that share one context are accepted whichever context it is. Semaphores
of a context that lacks the queue's device: CL_INVALID_COMMAND_QUEUE, listed beside
CL_INVALID_CONTEXT (both apply; glshare answers the first, the lab accepts either).

Binary state: "Signaling the same binary semaphore twice without an interleaving wait may lead to
undefined behavior." (and the same for waits). The same semaphore twice in one list breaks it on
its own; across calls, the state is known for a semaphore whose every signal and wait glshare
sees: its CL calls pass through here, and glshare issues GL's semaphore calls on the same payload
itself (the semaphore sync mode, app/sharing/sync/semaphore.py), each reported before it is made
with ``signalled`` / ``waited`` (glSignalSemaphoreEXT / glWaitSemaphoreEXT) and held to GL's rules
(``GL_RULES``): EXT_external_objects' wait rule, and for the signal Vulkan's, whose semantics GL's
semaphores take ("map directly to the semantics of Vulkan semaphores"; the extension states no
signal rule of its own, and the payload here is a Vulkan semaphore). A CL call the driver then
refuses, or a GL call not made after all, is taken back with ``undo``. ``track(sem)`` starts
following one (unsignalled: Vulkan makes binary semaphores so); an untracked semaphore's state is
never guessed. One state per payload: the CL wrapper names it on both sides.
"""
from __future__ import annotations

from typing import Any, Iterable

import pyopencl as cl

from app.memo import keep
from app.validate import families
from app.validate.findings import EXT_OBJECTS, KHR_RUNTIME, UNDEFINED, VK_SUBMIT, Source
from app.validate.liveness import REGISTRY, ObjectRegistry, handle_of
from app.validate.spec import NULL, EventFacts, Rule, check_wait_list, rule_error

SECTION = ("5.13.6", "Waiting On and Signaling Semaphores")
ENTRY_POINTS = {"wait": "clEnqueueWaitSemaphoresKHR", "signal": "clEnqueueSignalSemaphoresKHR"}


def _sem(text: str) -> Source:
    return Source(text, SECTION[0], SECTION[1], KHR_RUNTIME)


_WAIT = ("CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list is not 0, or if "
         "event_wait_list is not NULL and num_events_in_wait_list is 0, or if event objects in event_wait_list "
         "are not valid events.")
_CONTEXT = ("CL_INVALID_CONTEXT if the context associated with command_queue and any of the semaphore objects in "
            "sema_objects are not the same, or if the context associated with command_queue and that associated "
            "with events in event_wait_list are not the same.")

RULES: dict[str, Rule] = {
    "invalid_queue": Rule("CL_INVALID_COMMAND_QUEUE", _sem(
        "CL_INVALID_COMMAND_QUEUE if command_queue is not a valid command-queue")),
    "num_zero": Rule("CL_INVALID_VALUE", _sem("CL_INVALID_VALUE if num_sema_objects is 0.")),
    "sema_list_short": Rule(None, _sem("The length of the list must be at least num_sema_objects."),
                            consequence=UNDEFINED, basis="requirement",
                            note="no error code is listed for a NULL or short sema_objects list"),
    "queue_other_device": Rule("CL_INVALID_COMMAND_QUEUE", _sem(
        "CL_INVALID_COMMAND_QUEUE ... if one or more of sema_objects belong to a context that does not contain a device "
        "associated with command_queue.")),
    "signal_twice": Rule(None, _sem(
        "Signaling the same binary semaphore twice without an interleaving wait may lead to undefined behavior."),
        consequence=UNDEFINED, basis="requirement", note="the text names no error code for it"),
    "wait_twice": Rule(None, _sem(
        "Waiting on the same binary semaphore twice without an interleaving signal may lead to undefined "
        "behavior."), consequence=UNDEFINED, basis="requirement", note="the text names no error code for it"),
    "invalid_semaphore": Rule("CL_INVALID_SEMAPHORE_KHR", _sem(
        "CL_INVALID_SEMAPHORE_KHR if any of the semaphore objects specified by sema_objects is not valid.")),
    "semaphore_other_context": Rule("CL_INVALID_CONTEXT", _sem(_CONTEXT)),
    "wait_list_null_n_given": Rule("CL_INVALID_EVENT_WAIT_LIST", _sem(_WAIT)),
    "wait_list_given_n_zero": Rule("CL_INVALID_EVENT_WAIT_LIST", _sem(_WAIT)),
    "wait_list_invalid_event": Rule("CL_INVALID_EVENT_WAIT_LIST", _sem(_WAIT)),
    "wait_list_other_context": Rule("CL_INVALID_CONTEXT", _sem(_CONTEXT)),
    "wait_list_failed_event": Rule("CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", _sem(
        "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST if the execution status of any of the events in "
        "event_wait_list is a negative integer value.")),
}

# GL's semaphore calls on the same payloads (glshare makes them itself: module text)
GL_ENTRY_POINTS = {"gl_signal": "glSignalSemaphoreEXT", "gl_wait": "glWaitSemaphoreEXT"}
GL_RULES: dict[str, Rule] = {
    "gl_signal_twice": Rule(None, Source(
        "Each binary semaphore element of the pSignalSemaphores member of any element of pSubmits must be "
        "unsignaled when the semaphore signal operation it defines is executed on the device",
        "VUID-vkQueueSubmit-pSignalSemaphores-00067", "vkQueueSubmit", VK_SUBMIT),
        consequence=UNDEFINED, basis="requirement",
        note="GL_EXT_semaphore's semaphores 'map directly to the semantics of Vulkan semaphores' (EXT_external_objects, "
             "Overview) and it states no signal rule of its own; the payload is Vulkan's"),
    "gl_wait_unsignalled": Rule(None, Source(
        "Calling WaitSemaphore on a semaphore that has not previously had a signal operation flushed to the GL server "
        "or submitted by an external semaphore signaler since the semaphore was created or last waited on results in "
        "undefined behavior.", "4.2.3", "Waiting for Semaphores", EXT_OBJECTS),
        consequence=UNDEFINED, basis="requirement", note="the text names no GL error for it"),
}
_ALL_RULES = {**RULES, **GL_RULES}
_ALL_ENTRY_POINTS = {**ENTRY_POINTS, **GL_ENTRY_POINTS}
_GL_SIGNAL, _GL_WAIT = GL_ENTRY_POINTS["gl_signal"], GL_ENTRY_POINTS["gl_wait"]
_CL_SIGNAL, _CL_WAIT = ENTRY_POINTS["signal"], ENTRY_POINTS["wait"]
# per operation: whether it leaves the semaphore signalled, the rule a repeat of it breaks, its entry point
_OPS = {op: (signal, rule, _ALL_ENTRY_POINTS[op]) for op, signal, rule in (
    ("signal", True, "signal_twice"), ("wait", False, "wait_twice"),
    ("gl_signal", True, "gl_signal_twice"), ("gl_wait", False, "gl_wait_unsignalled"))}


class SemaphoreValidator:
    """Checks one clEnqueueWaitSemaphoresKHR / clEnqueueSignalSemaphoresKHR call."""

    rules = RULES
    entry_points = ENTRY_POINTS
    queue_types: tuple[type, ...] = (cl.CommandQueue,)  # glshare attach's model checks its own (app/attach/model.py)

    def __init__(self, sharing_context: cl.Context, registry: ObjectRegistry = REGISTRY, *,
                 events: EventFacts) -> None:
        self.sharing_context = sharing_context
        self.events = events
        self.registry = registry
        self.checked = 0
        self.refused = 0
        self._known_queue: tuple | None = None  # (queue, its context handle)
        # (queue, semaphores) -> (registry generation, their handles) when the call was accepted
        self._accepted: dict[tuple, tuple] = {}
        # check_python's accepted calls on one semaphore without a wait list:
        # (call, id) -> (queue, registry generation, the semaphore's handle object, the semaphore)
        self._one: dict[tuple, tuple] = {}
        # id -> (the semaphore, signalled, the entry point of its last operation (None: none since
        # made), (signalled, entry point) before that operation, for ``undo``): tracked semaphores only
        self._state: dict[int, tuple] = {}

    def check(self, call: str, queue: Any, num_semas: int, sema_objects: list | None,
              num_events: int, event_wait_list: list | None, event_out: Any = NULL) -> str:
        """One call in the C API's terms (binary semaphores: the payload list is NULL).

        Returns:
            ``"CL_SUCCESS"``.
        Raises:
            ValidationError (a CL code) or SpecViolation (no code), each with ``.rule``.
        """
        self.checked += 1
        if not (isinstance(queue, self.queue_types) and queue.int_ptr):
            self._fail("invalid_queue", call, "a NULL handle" if queue is None else f"not a command-queue: "
                                                                                     f"{type(queue).__name__}")
        if num_semas == 0:
            self._fail("num_zero", call)
        if sema_objects is NULL or len(sema_objects) < num_semas:
            self._fail("sema_list_short", call, "sema_objects is NULL" if sema_objects is NULL else
                       f"num_sema_objects is {num_semas} but the list holds {len(sema_objects)}")
        semas = sema_objects[:num_semas]
        registry = self.registry
        # the semaphores and the queue as they were accepted, while no object was created or released
        # since (the registry's generation) and each semaphore still holds the handle it had: the
        # verdict on them is the same. Kept per (queue, semaphores): frames in flight on copies name
        # another copy's semaphores every frame
        key = (queue, *semas)  # the key holds them: no id in it can be reused while it is kept
        state = (registry.generation, *map(handle_of, semas))
        if self._accepted.get(key) != state:
            for s in semas:
                e = registry.entry(s)
                if e is None or e.kind != "semaphore":
                    self._fail("invalid_semaphore", call, registry.why_not_live(s))
            queue_ctx = self._queue_context(queue)
            for s in semas:
                ctx = registry.entry(s).context
                if ctx and ctx != queue_ctx:
                    if not self._context_has_device(ctx, queue):
                        self._fail("queue_other_device", call, "the semaphore's context does not contain the queue's "
                                                               "device")
                    self._fail("semaphore_other_context", call,
                               "the semaphore belongs to another context than the queue")
            keep(self._accepted, key, state)
        check_wait_list(self, call, num_events, event_wait_list, failed_events=True,
                        context_ptr=self._queue_context(queue))
        self._check_binary_state(call, semas)
        return "CL_SUCCESS"

    # -- the binary state ------------------------------------------------------------------------
    def track(self, sema: Any, signalled: bool = False, by: str | None = None) -> None:
        """Follow ``sema``'s binary state from now on: every signal and wait on its payload is seen
        (CL's here, GL's through ``signalled`` / ``waited``); ``by``: the entry point that left it so."""
        self._state[id(sema)] = (sema, signalled, by, None)

    def untrack(self, sema: Any) -> None:
        self._state.pop(id(sema), None)

    def signalled(self, sema: Any) -> None:
        """glSignalSemaphoreEXT on ``sema``'s payload, about to be made (a tracked semaphore only):
        raises SpecViolation (``gl_signal_twice``) where a signal is still pending."""
        self.step_one("gl_signal", sema)

    def waited(self, sema: Any) -> None:
        """glWaitSemaphoreEXT on ``sema``'s payload, about to be made (a tracked semaphore only):
        raises SpecViolation (``gl_wait_unsignalled``) where no signal is pending."""
        self.step_one("gl_wait", sema)

    def undo(self, call: str, semas: Iterable) -> None:
        """The operation ``call`` ("signal", "wait", "gl_signal", "gl_wait") on ``semas`` was accepted
        but not made (the driver refused it, or a check after it refused the frame): each tracked one
        is as it was before."""
        for x in semas:
            seen = self._state.get(id(x))
            if seen is not None and seen[3] is not None and seen[2] == _ALL_ENTRY_POINTS[call]:
                self._state[id(x)] = (x, *seen[3], None)

    def expect(self, sema: Any, signalled: bool) -> None:
        """Raise where tracked ``sema`` is not ``signalled`` now: the rule CL's next operation on it
        would break (its wait where ``signalled`` is expected, else its signal), raised before any of a
        prepared list of calls is made (the native frame's)."""
        seen = self._state.get(id(sema))
        if seen is not None and seen[1] != signalled:
            self.step_one("wait" if signalled else "signal", sema)

    def list_before(self, gl_done: Any, cl_done: Any, gl_signals: bool) -> None:
        """The semaphore calls of one prepared list (the native frame: GL's signal of ``gl_done`` where
        ``gl_signals``, CL's wait on it, CL's signal of ``cl_done``, GL's wait on it), checked at once
        before any of them is made: raises the rule the first one would break. GL's signal is
        followed here, the rest in ``list_after``, once the list got past CL's wait."""
        st = self._state
        g, c = st.get(id(gl_done)), st.get(id(cl_done))
        if g is not None and c is not None and g[1] != gl_signals and not c[1]:  # the steady frame's states
            if gl_signals:
                st[id(gl_done)] = (gl_done, True, _GL_SIGNAL, (False, g[2]))
            return
        if gl_signals:
            self.step_one("gl_signal", gl_done)
        try:
            self.expect(gl_done, True)
            self.expect(cl_done, False)
        except BaseException:
            if gl_signals:
                self.undo("gl_signal", (gl_done,))
            raise

    def list_after(self, gl_done: Any, cl_done: Any) -> None:
        """``list_before``'s list made past CL's wait: gl_done waited on by CL; cl_done signalled by CL
        and waited on by GL (both, or neither where CL's signal failed: unsignalled either way)."""
        st = self._state
        g, c = st.get(id(gl_done)), st.get(id(cl_done))
        if g is not None:
            st[id(gl_done)] = (gl_done, False, _CL_WAIT, (g[1], g[2]))
        if c is not None:
            st[id(cl_done)] = (cl_done, False, _GL_WAIT, (True, _CL_SIGNAL))

    def step(self, call: str, semas) -> None:
        """``call`` on ``semas``, its other rules checked already: refused where it repeats a tracked
        one's last kind of operation (the rule that breaks, the entry point that left it so in the
        detail); else each tracked one's state follows."""
        if len(semas) == 1:
            self.step_one(call, semas[0])
            return
        for x in semas:
            self._refuse_repeat(call, x)
        for x in semas:
            self.step_one(call, x)

    def step_one(self, call: str, sema: Any) -> None:
        """``step`` on one semaphore (every frame's case: kept short)."""
        seen = self._state.get(id(sema))
        if seen is None:
            return
        signal, _, entry = _OPS[call]
        if seen[1] == signal:
            self._refuse_repeat(call, sema)
        self._state[id(sema)] = (sema, signal, entry, (seen[1], seen[2]))

    def _refuse_repeat(self, call: str, sema: Any) -> None:
        seen = self._state.get(id(sema))
        signal, rule, _ = _OPS[call]
        if seen is None or seen[1] != signal:
            return
        label = getattr(sema, "label", sema)
        if signal:
            why = f"{label!s} was signalled by {seen[2] or 'an earlier signal'} and no wait took the signal"
        elif seen[2] is None:
            why = f"{label!s} has no signal pending: it was never signalled"
        else:
            why = f"{label!s} has no signal pending: its last operation was {seen[2]}"
        self._fail(rule, call, why)

    def _check_binary_state(self, call: str, semas: list) -> None:
        if len(semas) > 1 and len({id(x) for x in semas}) < len(semas):
            self._fail(f"{call}_twice", call, "the same semaphore twice in one list")
        self.step(call, semas)

    def _context_has_device(self, ctx: int, queue: Any) -> bool:
        """Whether the context whose handle is ``ctx`` holds the queue's device (asked of the driver)."""
        return queue.device in cl.Context.from_int_ptr(ctx, retain=True).devices

    def _queue_context(self, queue: Any) -> int:
        """The queue's context handle, asked of the driver once per queue (every frame names the
        backend's queue twice: the answer cannot change while the queue lives, and the validator
        holds the queue it remembers)."""
        known = self._known_queue
        if known is not None and known[0] is queue:
            return known[1]
        ctx = queue.context.int_ptr
        self._known_queue = (queue, ctx)
        return ctx

    def check_python(self, call: str, queue: Any, semaphores: Iterable | None, wait_for: Iterable | None) -> str:
        """The Python form: semaphores (or None) and events (or None); [] counts as NULL.

        The frame's own case, one semaphore and no wait list, accepted before on the same queue while
        no CL object was released or forgotten since (the registry's generation) and while the
        semaphore holds the handle it had (its ``release()`` clears it), gets the same verdict
        without the rules run again: the same inputs, the same answer (``check``'s own cache keys its
        verdict on the same state); a tracked semaphore's binary state is still checked and followed.
        It still counts as checked; refusals are never remembered."""
        if not wait_for and type(semaphores) is list and len(semaphores) == 1:
            sema = semaphores[0]
            key = (call, id(sema))
            seen = self._one.get(key)
            if (seen is not None and seen[0] is queue and seen[1] == self.registry.generation
                    and seen[2] is getattr(sema, "handle", None)):
                self.checked += 1
                if id(sema) in self._state:  # (a tracked one's state is checked every call)
                    self.step(call, semaphores)
                return "CL_SUCCESS"
            verdict = self.check(call, queue, 1, semaphores, 0, NULL)
            handle = getattr(sema, "handle", None)
            if handle is not None:  # (held with it, as the semaphore: their ids cannot be reused while kept)
                keep(self._one, key, (queue, self.registry.generation, handle, sema))
            return verdict
        semas = list(semaphores) if semaphores else NULL
        evs = list(wait_for) if wait_for else NULL
        return self.check(call, queue, len(semas) if semas else 0, semas, len(evs) if evs else 0, evs)

    def remembers(self, call: str, queue: Any, semaphores: list) -> bool:
        """Whether ``check_python(call, queue, semaphores, None)`` would answer from its remembered
        verdict now (the frame's own case, accepted before: module text of ``check_python``), the
        binary state of a tracked semaphore aside (checked each call: ``expect``, ``step``)."""
        if type(semaphores) is not list or len(semaphores) != 1:
            return False
        sema = semaphores[0]
        seen = self._one.get((call, id(sema)))
        return (seen is not None and seen[0] is queue and seen[1] == self.registry.generation
                and seen[2] is getattr(sema, "handle", None))

    def _fail(self, rule: str, call: str, detail: str = "") -> None:
        self.refused += 1
        raise rule_error(rule, call, _ALL_RULES, _ALL_ENTRY_POINTS, detail)


# The lab's cases (the notation of app/validate/gl.py's LAB_CASES)
LAB_CASES: dict[str, dict] = {
    "valid": {},
    "num_zero": {"num": 0},
    "invalid_semaphore": {"objects": [None]},
    "released_semaphore": {"objects": ["@released_semaphore"]},
    "semaphore_wrong_type": {"objects": ["@shared"]},
    "invalid_queue": {"queue": None},
    "queue_wrong_type": {"queue": "@shared"},
    "semaphore_other_context": {"queue": "@other_queue"},
    "same_context_not_sharing": {"queue": "@other_queue", "objects": ["@other_semaphore"]},
    "sub_device_queue": {"queue": "@sub_device_queue"},
    "same_semaphore_twice": {"num": 2, "objects": ["@semaphore", "@semaphore"]},
    "wait_list_null_n_given": {"num_events": 1},
    "wait_list_given_n_zero": {"event_wait_list": ["@event"]},
    "wait_list_invalid_event": {"num_events": 1, "event_wait_list": [None]},
    "wait_list_other_context": {"num_events": 1, "event_wait_list": ["@other_event"]},
    "wait_list_failed_event": {"num_events": 1, "event_wait_list": ["@failed"]},
    "sema_list_null": {"objects": None},
    "event_aliases_wait_list": {"num_events": 1, "event_wait_list": ["@event"], "event_out": "@alias0"},
    "combo_num_zero_null_wait_list": {"num": 0, "num_events": 1},
    "combo_null_semaphore_other_context_event": {"objects": [None], "num_events": 1,
                                                 "event_wait_list": ["@other_event"]},
}

FAMILY = families.register(families.Family(
    "semaphore", ENTRY_POINTS, ("cl_khr_semaphore",), RULES, LAB_CASES, joins="external_memory",
    validator="semaphore"))
