"""The error lab (``glshare errors``): every case of every call family the backend uses, and
every hazard, against the specification texts.

The expected answers come from ``app/lab/expected.toml``, transcribed by hand from the texts
(with sections), never from the validator. Each case changes a valid call (one shared object, no
events) so that the rule it names applies; combination cases break two rules the spec gives no
precedence between (any listed code is right); cases the spec gives no code for expect a refusal
without one. Families: a backend checked against cl_khr_gl_sharing runs ``gl_sharing``; the
external_memory backend runs ``external_memory`` and ``semaphore``.

Per row the lab sets the validator's answer and, where ``app/lab/drivers.py`` allows it, the
driver's own (raw pointers through ctypes, on a queue of the lab's own) beside the spec's, and
says where either differs. Driver calls never receive a dangling handle: an object glshare
released goes in as NULL, and arrays are padded with NULLs up to the counts. Around each driver
call the lab restores a clean state (a release case acquires first; a signal is followed by a
wait) and then lets the queue drain with a time limit, so a driver that blocks cannot hang the
lab: the remaining cases are then marked as not called. Each hazard of
``app/validate/ownership.py`` is provoked on a fresh shared buffer under the three strict modes.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import sys
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl

from app.cl.device import select_device
from app.cl.ext import Semaphore
from app.config import cl_device_selector
from app.errors import ClError, HazardError, SpecViolation, UsageError, ValidationError, cl_error_name
from app.gl.context import gl_info
from app.lab import drivers
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.external_memory.vulkan import close_fd
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.sharing.base import ProbeEnv
from app.sharing.registry import Registry
from app.validate.findings import SPEC
from app.validate.liveness import REGISTRY, handle_of
from app.validate.ownership import CL, HAZARDS_BY_FAMILY, OwnershipTracker
from app.validate.spec import NULL, WaitListElement

log = logging.getLogger(__name__)

EXPECTED_PATH = Path(__file__).with_name("expected.toml")
FAMILY_CALLS = {"gl_sharing": ("acquire", "release"), "external_memory": ("acquire", "release"),
                "semaphore": ("signal", "wait")}
FAMILIES_OF_RULE_SET = {"gl_sharing": ("gl_sharing",), "external_memory": ("external_memory", "semaphore")}
LAB_BYTES = 256
DRAIN_S = 5.0  # how long a queue may take to drain after a driver call before the lab stops calling


# -- the expected answers --------------------------------------------------------------------------
@dataclass(frozen=True)
class Expected:
    family: str
    id: str
    what: str
    codes: tuple[str, ...]  # () for "undefined": a refusal without a code is right
    basis: str
    section: str
    quote: str
    note: str = ""
    deviation: str = ""
    deviation_code: str = ""  # the code glshare answers instead, on purpose (checked like the spec's)
    driver: bool = True  # False: the case is never given to a driver

    @property
    def spec_code(self) -> str:
        if not self.codes:
            return "no code (undefined behaviour)"
        return " | ".join(self.codes)


def load_expected(path: Path = EXPECTED_PATH) -> tuple[dict[str, list[Expected]], list[dict]]:
    """(family -> cases in file order, the not-provokable entries) from ``expected.toml``."""
    data = tomllib.loads(path.read_text())
    cases: dict[str, list[Expected]] = {}
    for c in data["case"]:
        e = Expected(c["family"], c["id"], c["what"], tuple(c["codes"]), c["basis"], c["section"], c["quote"],
                     c.get("note", ""), c.get("deviation", ""), c.get("deviation_code", ""), c.get("driver", True))
        cases.setdefault(e.family, []).append(e)
    return cases, list(data.get("not_provokable", []))


# -- the objects the cases are made of ------------------------------------------------------------
class LabSetupError(RuntimeError):
    """The lab could not make an object it needs for the driver's column (the reason)."""


@dataclass
class CallArgs:
    """One call in the C API's terms (see ``SpecValidator.check``); ``objects`` are memory objects
    or semaphores."""

    queue: Any
    num: int
    objects: list | None
    num_events: int = 0
    event_wait_list: list | None = NULL
    event_out: Any = NULL


class LabSemaphore:
    """A semaphore the lab made (or a stand-in where no driver is called): ``handle`` is a
    ctypes pointer, cleared by ``release()`` (idempotent), as ``app.cl.ext.Semaphore`` does."""

    def __init__(self, handle: int, label: str, release=None) -> None:
        self.handle: ctypes.c_void_p | None = ctypes.c_void_p(handle)
        self.label, self._release = label, release

    def release(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None and self._release is not None:
            self._release(handle.value)

    def __repr__(self) -> str:
        return f"<LabSemaphore {self.label!r}{' released' if self.handle is None else ''}>"


@dataclass
class LabObjects:
    """What the cases are made of, on one backend: a shared object, one released through glshare,
    one released through pyopencl, a plain buffer handed to glshare and one it never saw, a queue
    of the lab's own, a queue and an event of another context, a completed event, a failed user
    event, and (semaphore family) a live and a released semaphore."""

    backend: Any
    entry: Any = None  # drivers.EntryPoints, when some family calls the driver
    shared: Any = None
    queue: Any = None
    released_mem: Any = None
    pyreleased: Any = None
    plain: Any = None
    unseen: Any = None
    other_context: Any = None
    other_queue: Any = None
    other_event: Any = None
    event: Any = None
    failed: Any = None
    semaphore: Any = None
    released_semaphore: Any = None
    stuck: bool = False  # a driver call left the lab's queue unable to drain: it is not finished
    _vk_semaphores: list = field(default_factory=list)

    def __enter__(self) -> "LabObjects":
        b = self.backend
        ctx, dev = b.context, b.device
        self.shared = b.create_buffer("lab.shared", LAB_BYTES)
        gone = b.create_buffer("lab.released", LAB_BYTES)
        b.destroy(gone)  # released through the sharing layer: refused from now on
        self.released_mem = gone.mem
        self.pyreleased = REGISTRY.handed(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, LAB_BYTES), ctx,
                                          label="lab.pyreleased")
        self.pyreleased.release()  # through pyopencl: the registry's release hook marks it
        self.plain = REGISTRY.handed(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, LAB_BYTES), ctx, label="lab.plain")
        self.unseen = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, LAB_BYTES)  # never handed
        self.queue = cl.CommandQueue(ctx, dev)  # the lab's own: a driver that blocks cannot take b.queue with it
        # kept: a queue does not keep its context's reference count up (Intel's runtime then refuses
        # the context's handle: clRetainContext CL_INVALID_CONTEXT)
        self.other_context = cl.Context([dev])
        self.other_queue = cl.CommandQueue(self.other_context, dev)
        self.other_event = cl.enqueue_marker(self.other_queue)
        self.other_event.wait()
        self.event = cl.enqueue_marker(self.queue)
        self.event.wait()
        self.failed = cl.UserEvent(ctx)
        self.failed.set_status(-1)  # a negative execution status (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        return self

    def make_semaphores(self, with_driver: bool) -> str:
        """A live and a released binary semaphore, and how they were made (returned).

        With the driver: ``entry.create_semaphore`` (clCreateSemaphoreWithPropertiesKHR, a binary
        semaphore without an external handle, as the conformance tests make); where the driver
        refuses that, semaphores Vulkan exports and CL imports (the external_memory backend's own
        path). Without a driver: stand-ins whose handles only the validator sees.
        """
        ctx = self.backend.context
        made, how = [], "stand-ins (no driver is called for semaphores here)"
        for label in ("lab.semaphore", "lab.released_semaphore"):
            sem = None
            if with_driver:
                sem, how = self._driver_semaphore(label)
            if sem is None:
                sem = LabSemaphore(0x5E4A0000 + len(made), label)  # a stand-in: only the validator sees it
            made.append(REGISTRY.created(sem, ctx, label=label, kind="semaphore"))
        self.semaphore, self.released_semaphore = made
        self.released_semaphore.release()
        return how

    def _driver_semaphore(self, label: str):
        b = self.backend
        try:
            sem = LabSemaphore(self.entry.create_semaphore(b.context.int_ptr), label, self.entry.release_semaphore)
            return sem, "clCreateSemaphoreWithPropertiesKHR (binary, no external handle)"
        except cl.Error as exc:
            refused = f"clCreateSemaphoreWithPropertiesKHR failed ({cl_error_name(exc.code)})"
        exporter, ext = getattr(b, "exporter", None), getattr(b, "ext", None)
        if exporter is None or ext is None:
            raise LabSetupError(f"{refused}, and the backend exports no semaphores")
        vk_sem, fd = exporter.semaphore()
        cl_fd = os.dup(fd)
        try:
            sem = Semaphore(ext, b.context, b.device, cl_fd, label)
        finally:
            close_fd(cl_fd)
            close_fd(fd)
        self._vk_semaphores.append(vk_sem)
        return sem, f"{refused}: Vulkan-exported binary semaphores imported by CL (opaque fd)"

    def __exit__(self, *exc) -> None:
        b = self.backend
        b.queue.finish()
        for sem in (self.semaphore, self.released_semaphore):
            if sem is not None:
                sem.release()
                REGISTRY.forget(sem)
        for vk_sem in self._vk_semaphores:
            self.backend.exporter.destroy_semaphore(vk_sem)
        self._vk_semaphores = []
        if self.queue is not None and not self.stuck:
            self.queue.finish()
        if self.other_queue is not None:
            self.other_queue.finish()
        for buf in (self.plain, self.unseen):
            if buf is not None:
                buf.release()
        for buf in (self.pyreleased, self.released_mem, self.plain):
            REGISTRY.forget(buf)
        self.plain = self.unseen = self.other_queue = self.other_context = self.queue = None
        if self.shared is not None:
            b.destroy(self.shared)
            self.shared = None

    # -- the arguments of each case ----------------------------------------------------------------
    def args(self, family: str, case: str) -> CallArgs:
        """The valid call of ``family`` with the change(s) ``case`` makes."""
        q, ev, other, failed = self.queue, self.event, self.other_event, self.failed
        if family == "semaphore":
            base = CallArgs(q, 1, [self.semaphore])
            changes = {
                "valid": {},
                "num_zero": {"num": 0},
                "invalid_semaphore": {"objects": [NULL]},
                "released_semaphore": {"objects": [self.released_semaphore]},
                "invalid_queue": {"queue": NULL},
                "semaphore_other_context": {"queue": self.other_queue},
                "wait_list_null_n_given": {"num_events": 1},
                "wait_list_given_n_zero": {"event_wait_list": [ev]},
                "wait_list_invalid_event": {"num_events": 1, "event_wait_list": [NULL]},
                "wait_list_other_context": {"num_events": 1, "event_wait_list": [other]},
                "wait_list_failed_event": {"num_events": 1, "event_wait_list": [failed]},
                "sema_list_null": {"objects": NULL},
                "event_aliases_wait_list": {"num_events": 1, "event_wait_list": [ev], "event_out": WaitListElement(0)},
                "combo_num_zero_null_wait_list": {"num": 0, "num_events": 1},
                "combo_null_semaphore_other_context_event": {"objects": [NULL], "num_events": 1,
                                                             "event_wait_list": [other]},
            }
            return replace(base, **changes[case])
        mem = self.shared.mem
        base = CallArgs(q, 1, [mem])
        changes = {
            "valid": {},
            "success_empty": {"num": 0, "objects": NULL},
            "success_empty_bad_wait_list": {"num": 0, "objects": NULL, "num_events": 1},
            "num_zero_list_given": {"num": 0},
            "num_given_list_null": {"objects": NULL},
            "invalid_mem_object": {"objects": [self.released_mem]},
            "released_by_pyopencl": {"objects": [self.pyreleased]},
            "unseen_mem_object": {"objects": [self.unseen]},
            "invalid_queue": {"queue": NULL},
            "context_not_from_gl": {"queue": self.other_queue},
            "queue_other_context": {"queue": self.other_queue},
            "not_gl_object": {"objects": [self.plain]},
            "not_external_memory": {"objects": [self.plain]},
            "wait_list_null_n_given": {"num_events": 1},
            "wait_list_given_n_zero": {"event_wait_list": [ev]},
            "wait_list_invalid_event": {"num_events": 1, "event_wait_list": [NULL]},
            "wait_list_other_context": {"num_events": 1, "event_wait_list": [other]},
            "wait_list_failed_event": {"num_events": 1, "event_wait_list": [failed]},
            "event_aliases_wait_list": {"num_events": 1, "event_wait_list": [ev], "event_out": WaitListElement(0)},
            "combo_null_queue_null_list": {"queue": NULL, "objects": NULL},
            "combo_plain_buffer_null_event": {"objects": [self.plain], "num_events": 1, "event_wait_list": [NULL]},
            "combo_released_wait_list_n_zero": {"objects": [self.released_mem], "event_wait_list": [ev]},
            "combo_plain_context_num_zero": {"queue": self.other_queue, "num": 0},
            "combo_released_failed_event": {"objects": [self.released_mem], "num_events": 1,
                                            "event_wait_list": [failed]},
        }
        return replace(base, **changes[case])


# -- the validator's answer -------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    code: str | None  # the CL name, None for a refusal without a code
    refused: bool
    rule: str | None
    status: str = ""  # "CL_SUCCESS", NOOP or EMPTY when accepted


def validator_answer(backend, family: str, call: str, a: CallArgs) -> Answer:
    v = backend.validator.semaphores if family == "semaphore" else backend.validator
    try:
        status = v.check(call, a.queue, a.num, a.objects, a.num_events, a.event_wait_list, a.event_out)
    except ValidationError as exc:
        return Answer(exc.name, True, exc.rule)
    except SpecViolation as exc:
        return Answer(None, True, exc.rule)
    return Answer("CL_SUCCESS", False, None, status)


# -- the driver -----------------------------------------------------------------------------------
def _ptr(obj: Any) -> int:
    """The raw handle to give the driver: NULL for None and for every object glshare knows as
    released (never a dangling pointer: the driver would read freed memory)."""
    if obj is None or REGISTRY.state(obj) == "released":
        return 0
    return handle_of(obj)


class DriverRunner:
    """Makes the real driver call of a case and restores a clean state around it."""

    def __init__(self, lab: LabObjects, entry, family: str) -> None:
        self.lab, self.entry, self.family = lab, entry, family
        self.calls: list[tuple[str, str]] = []
        self.stuck: str | None = None  # the case after which the queue did not drain

    @staticmethod
    def _array(items: list | None, count: int):
        """A C array of handles, padded with NULLs up to ``count`` (a count past the list reads NULLs,
        never memory beyond the array)."""
        if items is NULL:
            return None
        handles = [_ptr(x) for x in items]
        handles += [0] * max(0, count - len(handles))
        return (ctypes.c_void_p * max(1, len(handles)))(*handles)

    def _raw(self, call: str, queue: int, objects: list | None, num: int, events=None, num_events: int = 0,
             event_out=None) -> int:
        objs = self._array(objects, num)
        evs = self._array(events, num_events)
        out = None
        if isinstance(event_out, WaitListElement) and evs is not None:
            out = ctypes.addressof(evs) + event_out.index * ctypes.sizeof(ctypes.c_void_p)
        self.calls.append((call, "raw"))
        code = self.entry(self.family, call, queue, num, ctypes.addressof(objs) if objs is not None else None,
                          num_events, ctypes.addressof(evs) if evs is not None else None, out)
        if out is not None and code == 0:
            written = evs[event_out.index]
            original = _ptr(events[event_out.index]) if events and event_out.index < len(events) else 0
            if written and written != original:
                cl.Event.from_int_ptr(written, retain=False)  # the driver's new event: released with the wrapper
        return code

    def _valid(self, call: str) -> int:
        target = self.lab.semaphore if self.family == "semaphore" else self.lab.shared.mem
        return self._raw(call, self.lab.queue.int_ptr, [target], 1)

    def _drain(self) -> bool:
        """Let the lab's queue finish, with a time limit (True when it did)."""
        marker = cl.enqueue_marker(self.lab.queue)
        self.lab.queue.flush()
        deadline = time.monotonic() + DRAIN_S
        while marker.command_execution_status > 0:  # negative: a failed command, done as well
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    def run(self, call: str, case: str, a: CallArgs) -> tuple[int | None, str]:
        """(the driver's status, a note). None: not called (the note says why)."""
        if self.stuck or self.lab.stuck:
            after = self.stuck or "a call of another family"
            return None, f"not called: the lab's queue did not drain within {DRAIN_S:.0f} s after {after}"
        mem_family = self.family != "semaphore"
        first = "acquire" if mem_family else "signal"
        if call != first:  # a release (a wait) needs an acquired (a signalled) object first
            pre = self._valid(first)
            if pre != 0:
                return None, f"the valid {first} before the {call} failed: {cl_error_name(pre)}"
        code = self._raw(call, _ptr(a.queue), a.objects, a.num, a.event_wait_list, a.num_events, a.event_out)
        target = self.lab.shared.mem if mem_family else self.lab.semaphore
        ours = a.objects is not NULL and any(o is target for o in a.objects[:a.num])
        handed_over = code == 0 and ours  # the call acquired/released (signalled/waited) our object
        if handed_over == (call == first):
            self._valid("release" if mem_family else "wait")  # undo what the call did, or what it did not
        if not self._drain():
            self.stuck = f"{case}/{call}"
            self.lab.stuck = True
            return code, f"the queue did not drain within {DRAIN_S:.0f} s after this call"
        return code, ""


# -- hazards --------------------------------------------------------------------------------------
def _provoke(backend, case: str, obj, other_queue) -> None:
    """Break the hand-over the way ``case`` names. On a zero-copy backend the calls whose outcome the
    spec leaves undefined or implementation-defined go to the tracker only, not to the driver."""
    q, t, zero = backend.queue, backend.tracker, backend.zero_copy
    if case == "use_without_acquire":
        t.cl_use([obj], "kernel")
        if not zero:
            cl.enqueue_fill_buffer(q, obj.mem, np.uint8(7), 0, obj.nbytes)
    elif case == "double_acquire":
        backend.acquire(q, [obj])
        if zero:
            t.acquired([obj], q)
        else:
            backend.acquire(q, [obj])
        backend.release(q, [obj])
    elif case == "release_without_acquire":
        if zero:
            t.released([obj], q)
        else:
            backend.release(q, [obj])
    elif case == "release_on_other_queue":
        backend.acquire(q, [obj])
        q.finish()  # the hazard is the ordering; the lab's own commands are done before it
        backend.release(other_queue, [obj])
        other_queue.finish()
    elif case == "gl_use_while_acquired":
        backend.acquire(q, [obj])
        if zero:
            t.gl_use([obj], "upload")
        else:
            backend.upload(obj, np.zeros(obj.nbytes, np.uint8))
        backend.release(q, [obj])
    elif case == "delete_gl_while_shared":
        backend.delete_gl_first(obj)
    else:
        raise KeyError(case)


def _hazard_once(backend, case: str, strict: str, other_queue) -> dict:
    tracker = OwnershipTracker(strict=strict, family=backend.tracker.family)
    backend.tracker = tracker
    obj = backend.create_buffer(f"lab.{case}", LAB_BYTES)
    out: dict = {"raised": False, "raised_kind": None, "counts": {}, "driver_error": ""}
    try:
        _provoke(backend, case, obj, other_queue)
    except HazardError as exc:
        if exc.case != case:
            raise
        out["raised"], out["raised_kind"] = True, exc.kind
    except ClError as exc:  # a zero-copy driver may refuse the mistake itself
        out["driver_error"] = exc.one_line()
    finally:
        tracker.strict = "off"
        if obj in backend.objects:
            if tracker.owner_of(obj) == CL:
                with contextlib.suppress(ClError):
                    backend.release(backend.queue, [obj])
            backend.destroy(obj)
        backend.queue.finish()
    out["counts"] = dict(tracker.counts)
    return out


def run_hazards(backend) -> list[dict]:
    """Every hazard of the backend's family, on its own buffer and tracker, under strict "off",
    "spec" and "all" (the backend's own tracker is put back)."""
    saved = backend.tracker
    other_queue = cl.CommandQueue(backend.context, backend.device)
    results = []
    try:
        for case, h in HAZARDS_BY_FAMILY[saved.family].items():
            off = _hazard_once(backend, case, "off", other_queue)
            spec = _hazard_once(backend, case, "spec", other_queue)
            every = _hazard_once(backend, case, "all", other_queue)
            others = sorted(k for k in off["counts"] if k != case)
            flagged = off["counts"].get(case, 0) > 0
            ok = flagged and every["raised"] and spec["raised"] == (h.kind == SPEC) and not others
            results.append({"case": case, "kind": h.kind, "consequence": h.consequence, "flagged": flagged,
                            "raises_strict_spec": spec["raised"], "raises_strict_all": every["raised"],
                            "spec": h.spec, "reasoning": h.reasoning,
                            "source": h.source.cite() if h.source else None, "also_flagged": others,
                            "driver_error": off["driver_error"] or spec["driver_error"] or every["driver_error"],
                            "ok": ok})
    finally:
        backend.tracker = saved
        other_queue.finish()
    return results


# -- the lab --------------------------------------------------------------------------------------
def implementation_text(choice_platform, device) -> str:
    version = choice_platform.version.split(",")[0].strip()  # PoCL appends its build options
    return f"{choice_platform.name.strip()} ({version}) / {device.name.strip()}"


def _python_api_check(backend, family: str, call: str) -> tuple[bool, str]:
    """The spec's empty call through glshare's Python API: 5.5.15 "does nothing" (nothing may be
    enqueued); cl_khr_external_memory's "will update its completion event" (an event is due)."""
    try:
        ev = getattr(backend, call)(backend.queue, [])
    except ClError as exc:  # glshare enqueues a marker for external memory's empty call: the CL runtime refused it
        return False, f"the empty call the spec allows was refused: {exc.name} ({exc.code})"
    if family == "gl_sharing":
        return ev is None, "nothing enqueued" if ev is None else "an event came back for a call that does nothing"
    if ev is not None:
        return True, "an event came back"
    return False, "glshare's Python API returns no event for the empty call (SharingBackend._hand_over)"


def _row(exp: Expected, family: str, call: str, ans: Answer) -> dict:
    if exp.basis == "undefined":
        agrees = ans.refused and ans.code is None
    else:
        agrees = ans.code in exp.codes
    entry_point = drivers.ENTRY_POINTS[family][call]
    return {"case": exp.id, "call": call, "family": family, "entry_point": entry_point,
            "spec_code": exp.spec_code, "spec_codes": list(exp.codes), "basis": exp.basis,
            "section": exp.section, "quote": exp.quote, "what": exp.what, "note": exp.note,
            "deviation": exp.deviation,
            "validator_code": ans.code, "validator_refused": ans.refused, "rule": ans.rule,
            # "agrees": as the spec says, or as the deliberate deviation says (its own code, checked)
            "validator_agrees": agrees,
            "agrees": agrees or bool(exp.deviation and ans.code == exp.deviation_code),
            "driver_called": False, "driver_code": None, "driver_agrees": None, "driver_differs": False,
            "driver_note": "", "disagreements": []}


def _finish_row(row: dict, exp: Expected) -> None:
    shown = row["validator_code"] or "a refusal without a code"
    if not row["validator_agrees"]:
        why = f" (deliberate: {exp.deviation})" if exp.deviation else ""
        row["disagreements"].append(f"glshare answers {shown}, the spec {exp.spec_code}{why}")
    if row["driver_called"]:
        code = row["driver_code"]
        if exp.basis == "undefined":
            row["driver_agrees"] = True  # the spec leaves the outcome undefined: any answer is allowed
        else:
            row["driver_agrees"] = code in exp.codes
        row["driver_differs"] = not row["driver_agrees"]
        if row["driver_differs"]:
            row["disagreements"].append(f"the driver answers {code}, the spec {exp.spec_code}")


def run_lab(backend, *, entry=None, families: tuple[str, ...] | None = None) -> dict:
    """Run every case of the backend's call families for both calls, and every hazard, on ``backend``.

    Args:
        backend: an open SharingBackend whose queue is idle (between frames).
        entry: the driver's raw entry points (``drivers.EntryPoints``); None decides from
            ``drivers`` (no calls on PoCL or Intel's CPU runtime: they list none of the extensions).
            An ``entry`` given is called for every family it ``offers``.
        families: which families to run (default: those of ``backend.rule_set``).
    Returns:
        the lab's JSON document (see ``glshare errors --json``).
    """
    platform, device = backend.env.choice.platform, backend.device
    impl = drivers.identify(platform)
    families = tuple(families or FAMILIES_OF_RULE_SET[getattr(backend, "rule_set", "gl_sharing")])
    expected, not_provokable = load_expected()
    reasons: dict[str, str | None] = {}
    for fam in families:
        if entry is not None:
            reasons[fam] = None if entry.offers(fam) else "the entry points given do not offer this family"
        else:
            reasons[fam] = drivers.no_call_reason(impl, platform, device, backend.name, fam)
    if entry is None and any(r is None for r in reasons.values()):
        callable_families = tuple(f for f, r in reasons.items() if r is None)
        try:
            entry = drivers.RawEntryPoints(platform, callable_families)
        except LookupError as exc:  # listed, but the platform does not export it: nothing is called
            for fam in callable_families:
                reasons[fam] = str(exc)
    rows: list[dict] = []
    with LabObjects(backend, entry) as lab:
        semaphores = None
        if "semaphore" in families:
            try:
                semaphores = lab.make_semaphores(with_driver=reasons["semaphore"] is None)
            except LabSetupError as exc:  # no semaphore to call the driver with: the validator column only
                reasons["semaphore"] = str(exc)
                semaphores = lab.make_semaphores(with_driver=False)
        for fam in families:
            runner = DriverRunner(lab, entry, fam) if reasons[fam] is None else None
            for call in FAMILY_CALLS[fam]:
                for exp in expected[fam]:
                    a = lab.args(fam, exp.id)
                    row = _row(exp, fam, call, validator_answer(backend, fam, call, a))
                    unsafe = drivers.unsafe_reason(impl, fam, exp.id)
                    if runner is None:
                        row["driver_note"] = f"not called: {reasons[fam]}"
                    elif not exp.driver:
                        row["driver_note"] = f"not called: {exp.note or 'unsafe to call'}"
                    elif unsafe:
                        row["driver_note"] = f"not called: {unsafe}"
                    else:
                        code, note = runner.run(call, exp.id, a)
                        row["driver_called"] = code is not None
                        row["driver_code"] = cl_error_name(code) if code is not None else None
                        row["driver_note"] = note or drivers.known_answer(impl, fam, exp.id)
                    _finish_row(row, exp)
                    if exp.id == "success_empty" and fam != "semaphore":
                        ok, what = _python_api_check(backend, fam, call)
                        row["python_api"], row["python_api_agrees"] = what, ok
                        if not ok:
                            row["agrees"] = False
                            row["disagreements"].append(f"glshare's Python API: {what}")
                    rows.append(row)
    hazards = run_hazards(backend)
    agree = sum(r["validator_agrees"] for r in rows)
    accepted = sum(r["agrees"] for r in rows)  # the spec's answer or the deviation's own, and the Python API right
    deviations = sum(bool(r["deviation"]) and not r["validator_agrees"] for r in rows)
    hz_ok = sum(h["ok"] for h in hazards)
    return {
        "implementation": implementation_text(platform, device),
        "implementation_key": impl.key,
        "backend": backend.name,
        "families": list(families),
        "driver_policy": {fam: reasons[fam] or "called where drivers.py allows it" for fam in families},
        "semaphores": semaphores,
        "cases": rows,
        "not_provokable": [p for p in not_provokable if p["family"] in families],
        "hazards": hazards,
        "summary": {"cases": len(rows), "validator_agrees": agree, "accepted": accepted,
                    "deliberate_deviations": deviations,
                    "driver_called": sum(r["driver_called"] for r in rows),
                    "driver_differs": sum(r["driver_differs"] for r in rows),
                    "hazards": len(hazards), "hazards_ok": hz_ok,
                    "ok": accepted == len(rows) and hz_ok == len(hazards)},
    }


# -- output ---------------------------------------------------------------------------------------
def _short(code: str | None) -> str:
    return code if code is not None else "refused, no code"


def format_text(results: dict, color: bool = False) -> str:
    """A readable table; differences from the spec are marked (and red when ``color``)."""
    red = (lambda s: f"\x1b[31m{s}\x1b[0m") if color else (lambda s: s)
    lines = [f"glshare error lab on {results['implementation']}",
             f"backend {results['backend']}; families {', '.join(results['families'])}"]
    for fam, policy in results["driver_policy"].items():
        lines.append(f"  driver, {fam}: {policy}")
    head = f"{'case':<40} {'call':<8} {'spec':<46} {'validator':<28} driver"
    for fam in results["families"]:
        lines += ["", f"[{fam}] {' / '.join(drivers.ENTRY_POINTS[fam].values())}", head, "-" * len(head)]
        for r in (r for r in results["cases"] if r["family"] == fam):
            v = _short(r["validator_code"])
            if not r["validator_agrees"]:
                v = red(f"{v} << {'deliberate' if r['deviation'] else 'differs'}")
            if r["driver_called"]:
                d = r["driver_code"] if not r["driver_differs"] else red(f"{r['driver_code']} << differs")
            else:
                d = "not called"
            spec = r["spec_code"] + (" (any)" if r["basis"] == "combination" else "")
            lines.append(f"{r['case']:<40} {r['call']:<8} {spec:<46} {v:<28} {d}")
        notes = sorted({f"{r['case']}: {r['note']}" for r in results["cases"] if r["family"] == fam and r["note"]})
        notes += sorted({f"{r['case']}: {d}" for r in results["cases"] if r["family"] == fam for d in r["disagreements"]})
        lines += [f"  note: {n}" for n in notes]
        dnotes = sorted({r["driver_note"] for r in results["cases"] if r["family"] == fam and r["driver_note"]})
        lines += [f"  driver: {n}" for n in dnotes]
    if results.get("not_provokable"):
        lines += ["", "not provoked (with why):"]
        for p in results["not_provokable"]:
            lines.append(f"  [{p['family']}] {p['id']} ({', '.join(p['codes']) or 'no code'}): {p['why']}")
    lines += ["", f"{'hazard':<26} {'kind':<7} {'flagged':<8} {'strict=spec':<12} {'strict=all':<11} why",
              "-" * 80]
    for h in results["hazards"]:
        mark = "" if h["ok"] else red("  << " + ("also " + ", ".join(h["also_flagged"]) if h["also_flagged"]
                                                else "not as the kind says"))
        lines.append(f"{h['case']:<26} {h['kind']:<7} {'yes' if h['flagged'] else red('NO'):<8} "
                     f"{'raises' if h['raises_strict_spec'] else '-':<12} "
                     f"{'raises' if h['raises_strict_all'] else red('no'):<11} {h['spec']}{mark}")
        if h.get("driver_error"):
            lines.append(f"{'':<26} driver: {h['driver_error']}")
    s = results["summary"]
    lines += ["", f"validator agrees with the spec in {s['validator_agrees']}/{s['cases']} calls "
                  f"({s['deliberate_deviations']} deliberate deviations, explained above); {s['accepted']}/{s['cases']} "
                  f"as expected, counting each deviation's own code and glshare's Python API for the empty call; "
                  f"driver called in {s['driver_called']} ({s['driver_differs']} differ from the spec); "
                  f"hazards as their kind says: {s['hazards_ok']}/{s['hazards']}"]
    return "\n".join(lines)


def open_lab_backend(choice, surface, name: str = "auto"):
    """The backend to run the lab on: ``name``, or the first of gl_sharing, external_memory,
    host_copy that the probe accepts (so the driver can be asked wherever it may be)."""
    registry = Registry(ProbeEnv(choice, surface, gl_info()))
    if name == "auto":
        name = next(n for n in (KhrGlSharing.name, ExternalMemory.name, HostCopy.name) if n in registry.available)
    elif name not in registry.available:
        raise UsageError(f"--backend {name}: not available here: {registry.probes[name].reason}")
    return registry.open(name)


def main(args) -> int:
    """``glshare errors [--json] [--backend NAME]``: exit 0 when the validator agrees with the
    spec everywhere (deliberate deviations aside) and every hazard behaves as its kind says."""
    from app.window.egl_headless import EglSurface  # PyOpenGL's EGL: not in a window run's process (GLX)

    choice = select_device(cl_device_selector(getattr(args, "cl_device", None)))
    with contextlib.ExitStack() as stack:
        surface = EglSurface((64, 64))
        stack.callback(surface.close)
        backend = open_lab_backend(choice, surface, getattr(args, "backend", None) or "auto")
        stack.callback(backend.close)
        results = run_lab(backend)
    if getattr(args, "json", False):
        print(json.dumps(results, indent=2))
    else:
        print(format_text(results, color=sys.stdout.isatty()))
    return 0 if results["summary"]["ok"] else 1
