"""The error lab (``glshare errors``): every case of every call family the backend uses, and
every hazard, against the specification texts.

The expected answers come from ``app/lab/expected.toml``, transcribed by hand from the texts
(with sections), never from the validator. Each case changes a valid call (one shared object, no
events) so that the rule it names applies; combination cases break two rules the spec gives no
precedence between (any listed code is right); cases the spec gives no code for expect a refusal
without one. Families come from the registry (``app/validate/families.py``), each with its lab
cases: a backend runs its rule set's family and those that join it (gl_sharing: ``gl_sharing``
and ``planar``; external_memory: ``external_memory``, ``semaphore`` and ``planar``). A case
needing an object the lab cannot make here (a sub-device queue on a device that cannot
partition) is listed as not provoked, with the reason. Every deliberate deviation is a row and a
line of ``deviations`` (the panel's lab tab lists them).

Per row the lab sets the validator's answer and, where ``app/lab/drivers.py`` allows it, the
driver's own (raw pointers through ctypes, on a queue of the lab's own) beside the spec's, and
says where either differs. Driver calls never receive a dangling handle: an object glshare
released goes in as NULL, and arrays are padded with NULLs up to the counts. Around each driver
call the lab restores a clean state (a release case acquires first; a signal is followed by a
wait) and then lets the queue drain with a time limit, so a driver that blocks cannot hang the
lab: the remaining cases are then marked as not called. Where a driver is called at all, the lab
runs in a child process under a watchdog (``app.lab.isolate``): a case whose call hangs or
crashes the process gets "hung" or "crashed (SIGNAME)" as the driver's answer. Each hazard of
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
from app.validate import families as registry
from app.validate.findings import SPEC
from app.validate.liveness import REGISTRY, handle_of
from app.validate.ownership import CL, OwnershipTracker
from app.validate.spec import NULL, WaitListElement

log = logging.getLogger(__name__)

EXPECTED_PATH = Path(__file__).with_name("expected.toml")
# the order of a family's calls in the lab: the one that hands over first (a release, a wait needs it)
CALL_ORDER = ("acquire", "release", "signal", "wait", "get")
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
    table: tuple[str, str] = ()  # planar format rows: (channel order, "width, height" in the image's terms)
    deviation_table: tuple[str, str] = ()  # ... and the declared deviation's (PoCL's fallback)

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
                     c.get("note", ""), c.get("deviation", ""), c.get("deviation_code", ""), c.get("driver", True),
                     tuple(c.get("table", ())), tuple(c.get("deviation_table", ())))
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

    @property
    def stand_in(self) -> bool:
        """Whether no driver made it (its handle means nothing to a driver: never passed to one)."""
        return self._release is None

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
    other_semaphore: Any = None  # a semaphore of other_context (semaphore family)
    sub_device_queue: Any = None  # a queue on a sub-device, in a context of its own
    alias0: Any = WaitListElement(0)  # event_out pointing at event_wait_list[0]
    missing: dict = field(default_factory=dict)  # name -> why the lab could not make it
    yuv: Any = None  # planar family: an NV12 YuvImage (64 x 32), a P010 one, a released one, a plain image
    p010: Any = None
    released_yuv: Any = None
    plain_image: Any = None
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
        self._make_sub_device_queue(dev)
        return self

    @property
    def simulated_gl(self) -> bool:
        """Whether the backend's "GL context" is a plain one it designates (a copying backend checked
        against cl_khr_gl_sharing's rules): its rows answer for a simulated GL context."""
        return not getattr(self.backend, "zero_copy", True)

    def make_planar(self) -> None:
        """The planar family's objects: an NV12 and a P010 image, a released one, a plain image."""
        from app.yuv.formats import FORMATS
        from app.yuv.planar import YuvImage

        ctx = self.backend.context
        self.yuv = YuvImage.create(ctx, FORMATS["nv12"], 64, 32, label="lab.nv12")
        self.p010 = YuvImage.create(ctx, FORMATS["p010"], 64, 32, label="lab.p010")
        self.released_yuv = YuvImage.create(ctx, FORMATS["nv12"], 64, 32, label="lab.released_yuv")
        self.released_yuv.release()
        fmt = cl.ImageFormat(cl.channel_order.R, cl.channel_type.UNSIGNED_INT8)
        self.plain_image = REGISTRY.handed(cl.create_image(ctx, cl.mem_flags.READ_ONLY, fmt, shape=(64, 32)), ctx,
                                           label="lab.plain_image")

    def _close_planar(self) -> None:
        for img in (self.yuv, self.p010):
            if img is not None:
                img.release()
        if self.plain_image is not None:
            self.plain_image.release()
            REGISTRY.forget(self.plain_image)
        self.yuv = self.p010 = self.plain_image = None

    def _make_sub_device_queue(self, dev) -> None:
        """A queue on a sub-device of ``dev``, in a context of its own: a device the objects' context
        lacks, on one driver (5.5.1.1 and 5.13.6: CL_INVALID_COMMAND_QUEUE). Needs a device that
        partitions (CL_DEVICE_PARTITION_MAX_SUB_DEVICES > 1); otherwise the rows say why not."""
        try:
            if dev.partition_max_sub_devices < 2:
                raise LabSetupError(f"{dev.name.strip()!r} cannot be partitioned (CL_DEVICE_PARTITION_MAX_SUB_DEVICES "
                                    f"{dev.partition_max_sub_devices}) and the lab's contexts hold one device")
            sub = dev.create_sub_devices([cl.device_partition_property.EQUALLY, 1])[0]
            self._sub_context = cl.Context([sub])
            self.sub_device_queue = cl.CommandQueue(self._sub_context, sub)
        except (cl.Error, LabSetupError) as exc:
            why = str(exc) if isinstance(exc, LabSetupError) else f"clCreateSubDevices failed ({exc})"
            self.missing["sub_device_queue"] = why

    def resolve(self, value: Any) -> Any:
        """A lab case's value with every "@name" replaced by the object of that name (a list
        element by element). LabSetupError where the lab could not make the object."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not (isinstance(value, str) and value.startswith("@")):
            return value
        name = value[1:]
        if name in self.missing:
            raise LabSetupError(self.missing[name])
        obj = self.shared.mem if name == "shared" else getattr(self, name)
        if obj is None:
            raise LabSetupError(f"the lab made no {name} here")
        return obj

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
        self.other_semaphore = self._other_semaphore(with_driver and "clCreate" in how)
        return how

    def _other_semaphore(self, with_driver: bool):
        """A semaphore of ``other_context``: the driver's where it makes semaphores without an external
        handle, else a stand-in (its rows then leave the driver out: ``LabSemaphore.stand_in``)."""
        ctx = self.other_context
        sem = None
        if with_driver:
            with contextlib.suppress(cl.Error):
                sem = LabSemaphore(self.entry.create_semaphore(ctx.int_ptr), "lab.other_semaphore",
                                   self.entry.release_semaphore)
        if sem is None:
            sem = LabSemaphore(0x5E4A0010, "lab.other_semaphore")
        return REGISTRY.created(sem, ctx, label="lab.other_semaphore", kind="semaphore")

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
        for sem in (self.semaphore, self.released_semaphore, self.other_semaphore):
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
        if self.sub_device_queue is not None:
            self.sub_device_queue.finish()
        self.sub_device_queue = None
        self._close_planar()
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
        """The valid call of ``family`` with the changes its registered lab case ``case`` makes
        (``app/validate/families.py``). LabSetupError where an object it needs could not be made."""
        target = self.semaphore if registry.get(family).validator == "semaphore" else self.shared.mem
        changes = {k: self.resolve(v) for k, v in registry.get(family).lab_cases[case].items()}
        return replace(CallArgs(self.queue, 1, [target]), **changes)


# -- the validator's answer -------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    code: str | None  # the CL name, None for a refusal without a code
    refused: bool
    rule: str | None
    status: str = ""  # "CL_SUCCESS", NOOP or EMPTY when accepted


def validator_answer(backend, family: str, call: str, a: CallArgs) -> Answer:
    v = backend.validator.semaphores if registry.get(family).validator == "semaphore" else backend.validator
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

    def __init__(self, lab: LabObjects, entry, family: str, watch=None) -> None:
        self.lab, self.entry, self.family = lab, entry, family
        self.watch = watch  # app.lab.isolate.Watch in the lab's child process, else None
        self.semaphores = registry.get(family).validator == "semaphore"
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

    def _bracket(self, a: CallArgs) -> tuple[int, Any]:
        """(queue handle, object) of the valid calls around a case: the lab's queue and shared object,
        or the case's own queue and semaphore where it names the semaphore of another context (a
        wait on a semaphore nobody signalled would block that queue for good)."""
        if self.semaphores and a.objects and a.objects[0] is self.lab.other_semaphore:
            return _ptr(a.queue), self.lab.other_semaphore
        return self.lab.queue.int_ptr, (self.lab.semaphore if self.semaphores else self.lab.shared.mem)

    def _valid(self, call: str, bracket: tuple[int, Any] | None = None) -> int:
        queue, target = bracket or (self.lab.queue.int_ptr, self.lab.semaphore if self.semaphores else
                                    self.lab.shared.mem)
        return self._raw(call, queue, [target], 1)

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

    def run(self, call: str, case: str, a: CallArgs) -> tuple[int | str | None, str]:
        """(the driver's status, a note). None: not called (the note says why); a word ("hung",
        "crashed (SIGSEGV)"): what the driver did in an earlier child process (app/lab/isolate.py)."""
        key = f"{self.family}/{case}/{call}"
        preset = self.watch.preset(key) if self.watch is not None else None
        if preset is not None:
            return preset
        if self.watch is None:
            return self._run(call, case, a)
        self.watch.begin(key)
        try:
            return self._run(call, case, a)
        finally:
            self.watch.end(key)

    def _run(self, call: str, case: str, a: CallArgs) -> tuple[int | None, str]:
        if self.stuck or self.lab.stuck:
            after = self.stuck or "a call of another family"
            return None, f"not called: the lab's queue did not drain within {DRAIN_S:.0f} s after {after}"
        mem_family = not self.semaphores
        first = "acquire" if mem_family else "signal"
        bracket = self._bracket(a)
        if call != first:  # a release (a wait) needs an acquired (a signalled) object first
            pre = self._valid(first, bracket)
            if pre != 0:
                return None, f"the valid {first} before the {call} failed: {cl_error_name(pre)}"
        code = self._raw(call, _ptr(a.queue), a.objects, a.num, a.event_wait_list, a.num_events, a.event_out)
        target = bracket[1]
        ours = a.objects is not NULL and any(o is target for o in a.objects[:a.num])
        handed_over = code == 0 and ours  # the call acquired/released (signalled/waited) our object
        if handed_over == (call == first):
            self._valid("release" if mem_family else "wait", bracket)  # undo what the call did, or what it did not
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
        for case, h in registry.get(saved.family).hazards.items():
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
    if registry.get(family).empty_call == "noop":
        return ev is None, "nothing enqueued" if ev is None else "an event came back for a call that does nothing"
    if ev is not None:
        return True, "an event came back"
    return False, "glshare's Python API returns no event for the empty call (SharingBackend._hand_over)"


def _row(exp: Expected, family: str, call: str, ans: Answer) -> dict:
    if exp.basis == "undefined":
        agrees = ans.refused and ans.code is None
    else:
        agrees = ans.code in exp.codes
    accepted = agrees
    if exp.basis == "unknowable":  # either listed code could be right; which one, glshare cannot know
        agrees = False
    entry_point = registry.get(family).entry_points[call]
    return {"case": exp.id, "call": call, "family": family, "entry_point": entry_point,
            "spec_code": exp.spec_code, "spec_codes": list(exp.codes), "basis": exp.basis,
            "section": exp.section, "quote": exp.quote, "what": exp.what, "note": exp.note,
            "deviation": exp.deviation,
            "validator_code": ans.code, "validator_refused": ans.refused, "rule": ans.rule,
            # "agrees": as the spec says, or as the deliberate deviation says (its own code, checked)
            "validator_agrees": agrees,
            "agrees": accepted or bool(exp.deviation and ans.code == exp.deviation_code),
            "driver_called": False, "driver_code": None, "driver_agrees": None, "driver_differs": False,
            "driver_note": "", "disagreements": []}


def _finish_row(row: dict, exp: Expected) -> None:
    shown = row["validator_code"] or "a refusal without a code"
    if not row["validator_agrees"]:
        why = f" (deliberate: {exp.deviation})" if exp.deviation else ""
        if exp.basis == "unknowable":
            why = " (either listed code could be right and glshare cannot tell which: accepted, not agreement)"
        row["disagreements"].append(f"glshare answers {shown}, the spec {exp.spec_code}{why}")
    if row["driver_called"]:
        code = row["driver_code"]
        if exp.basis in ("undefined", "implementation-defined"):
            row["driver_agrees"] = True  # the spec leaves the outcome undefined: any answer is allowed
        else:
            row["driver_agrees"] = code in exp.codes
        row["driver_differs"] = not row["driver_agrees"]
        if row["driver_differs"]:
            row["disagreements"].append(f"the driver answers {code}, the spec {exp.spec_code}")


# -- the planar family -----------------------------------------------------------------------------
def _plane_size(expr: str, w: int, h: int) -> tuple[int, int]:
    """``"width/2, height/2"`` (the text's terms) for an image of ``w`` x ``h``."""
    def one(term: str, value: int) -> int:
        term = term.strip()
        name, _, div = term.partition("/")
        return value // int(div) if div else value
    a, b = expr.split(",")
    return one(a, w), one(b, h)


def _planar_call(lab: LabObjects, changes: dict):
    """(the answer's code name, the image returned or None, a note) of glshare's plane_image."""
    from app.yuv.planar import plane_image

    try:
        img = plane_image(changes.get("context", lab.backend.context), changes.get("mem", lab.yuv),
                          changes.get("plane", 0))
    except ClError as exc:
        return exc.name, None, ""
    return "CL_SUCCESS", img, ""


def _describe(img) -> str:
    order = {cl.channel_order.R: "CL_R", cl.channel_order.RG: "CL_RG"}.get(img.format.channel_order, "?")
    return f"{order} {img.width}x{img.height}"


def run_planar(lab: LabObjects, expected: list[Expected], reason: str | None, not_provokable: list) -> list[dict]:
    """Every case of clGetPlaneFromImageAMD's contract on glshare's YUV images (``plane_image``):
    codes, and for the format rows the returned image's channel order and size against the text's
    table (or the declared deviation's). The real entry point is called only where the platform
    lists cl_amd_planar_yuv and an image comes from Direct3D 11 interop, which glshare never makes:
    the driver column says so."""
    lab.make_planar()
    rows = []
    for exp in expected:
        raw = registry.get("planar").lab_cases[exp.id]
        try:
            changes = {k: lab.resolve(v) for k, v in raw.items() if k != "check"}
        except LabSetupError as exc:
            not_provokable.append({"family": "planar", "id": exp.id, "codes": list(exp.codes), "section": exp.section,
                                   "quote": exp.quote, "why": str(exc)})
            continue
        code, img, _ = _planar_call(lab, changes)
        row = _row(exp, "planar", "get", Answer(code, code != "CL_SUCCESS", None))
        try:
            if img is not None and raw.get("check") == "format":
                image = changes.get("mem", lab.yuv)
                w, h = image.layout.width, image.layout.height
                got = _describe(img)
                want = f"{exp.table[0]} {'x'.join(map(str, _plane_size(exp.table[1], w, h)))}"
                row["result"], row["spec_result"] = got, want
                ok = got == want
                if not ok and exp.deviation_table:
                    dev = f"{exp.deviation_table[0]} {'x'.join(map(str, _plane_size(exp.deviation_table[1], w, h)))}"
                    row["deviation_result"] = dev
                    row["agrees"] = got == dev
                    row["disagreements"].append(f"glshare returns {got}, the text's table {want} "
                                                f"(deliberate: {exp.deviation})")
                row["validator_agrees"] = row["validator_agrees"] and ok
                if not ok and not exp.deviation_table:
                    row["agrees"] = False
            elif img is not None and raw.get("check") == "new_image":
                stored = lab.yuv.stored_plane(0)
                new = img.int_ptr != stored.int_ptr
                row["result"] = "a new cl_mem" if new else "a new reference to the stored plane image"
                row["spec_result"] = "a new cl_mem (the call 'creates an OpenCL 2D image object')"
                row["validator_agrees"] = new
                row["agrees"] = new or bool(exp.deviation)
                if not new:
                    row["disagreements"].append(f"glshare returns {row['result']} (deliberate: {exp.deviation})")
        finally:
            if img is not None:
                img.release()
        row["driver_note"] = f"not called: {reason}" if reason else ("not called: glshare makes no Direct3D 11 "
                                                                      "interop image, the only kind the entry point takes")
        if not raw.get("check"):
            _finish_row(row, exp)
        rows.append(row)
    return rows


def deviations_of(rows: list[dict]) -> list[dict]:
    """Every deliberate deviation the lab showed: one line each (the panel's lab tab lists them)."""
    seen, out = set(), []
    for r in rows:
        if r["deviation"] and (r["family"], r["case"]) not in seen and not r["validator_agrees"]:
            seen.add((r["family"], r["case"]))
            out.append({"family": r["family"], "case": r["case"], "spec": r["spec_code"],
                        "glshare": r.get("result") or r["validator_code"] or "a refusal without a code",
                        "why": r["deviation"]})
    return out


def _case_row(backend, lab, runner, impl, reason, exp: Expected, fam: str, call: str, a: CallArgs) -> dict:
    """One case of a memory or semaphore family for one call: the validator's answer, and the
    driver's where it may be asked."""
    row = _row(exp, fam, call, validator_answer(backend, fam, call, a))
    unsafe = drivers.unsafe_reason(impl, fam, exp.id)
    if runner is not None and any(isinstance(o, LabSemaphore) and o.stand_in for o in (a.objects or ())):
        unsafe = "the lab has no semaphore the driver made for this case (a stand-in's handle is never passed on)"
    if runner is None:
        row["driver_note"] = f"not called: {reason}"
    elif not exp.driver:
        row["driver_note"] = f"not called: {exp.note or 'unsafe to call'}"
    elif unsafe:
        row["driver_note"] = f"not called: {unsafe}"
    else:
        code, note = runner.run(call, exp.id, a)
        row["driver_called"] = code is not None
        row["driver_code"] = code if isinstance(code, str) or code is None else cl_error_name(code)
        row["driver_note"] = note or drivers.known_answer(impl, fam, exp.id)
    _finish_row(row, exp)
    if exp.id == "success_empty":
        ok, what = _python_api_check(backend, fam, call)
        row["python_api"], row["python_api_agrees"] = what, ok
        if not ok:
            row["agrees"] = False
            row["disagreements"].append(f"glshare's Python API: {what}")
    if lab.simulated_gl and registry.get(fam).empty_call == "noop":
        row["context"] = "a simulated GL context (host_copy designates a plain context as the GL one)"
    return row


def driver_reasons(backend, families: tuple[str, ...], entry=None) -> dict[str, str | None]:
    """Per family: why no driver entry point of it is called here, or None (called case by case)."""
    platform, device = backend.env.choice.platform, backend.device
    impl = drivers.identify(platform)
    if entry is not None:
        return {fam: None if entry.offers(fam) else "the entry points given do not offer this family"
                for fam in families}
    return {fam: drivers.no_call_reason(impl, platform, device, backend.name, fam) for fam in families}


def lab_families(backend) -> tuple[str, ...]:
    return tuple(registry.of_rule_set(getattr(backend, "rule_set", "gl_sharing")))


def run_lab(backend, *, entry=None, families: tuple[str, ...] | None = None, watch=None) -> dict:
    """Run every case of the backend's call families for both calls, and every hazard, on ``backend``.

    Args:
        backend: an open SharingBackend whose queue is idle (between frames).
        entry: the driver's raw entry points (``drivers.EntryPoints``); None decides from
            ``drivers`` (no calls on PoCL or Intel's CPU runtime: they list none of the extensions).
            An ``entry`` given is called for every family it ``offers``.
        families: which families to run (default: those of ``backend.rule_set``).
        watch: in the lab's child process (app/lab/isolate.py), what is told where the lab is, and
            the driver answers an earlier child could not give (a hang, a crash).
    Returns:
        the lab's JSON document (see ``glshare errors --json``).
    """
    platform, device = backend.env.choice.platform, backend.device
    impl = drivers.identify(platform)
    families = tuple(families or lab_families(backend))
    expected, not_provokable = load_expected()
    not_provokable = [p for p in not_provokable if p["family"] in families]
    reasons = driver_reasons(backend, families, entry)
    entry = _entry_for_callable(platform, reasons, entry)
    rows: list[dict] = []
    with LabObjects(backend, entry) as lab:
        semaphores = _lab_semaphores(lab, families, reasons)
        for fam in families:
            if watch is not None:
                watch.phase(f"the {fam} family")
            if registry.get(fam).validator == "planar":
                rows += run_planar(lab, expected[fam], reasons[fam], not_provokable)
                continue
            runner = DriverRunner(lab, entry, fam, watch) if reasons[fam] is None else None
            rows += _family_rows(backend, lab, runner, impl, reasons[fam], fam, expected[fam], not_provokable)
        lab_simulated = lab.simulated_gl
    hazards_note = watch.skip_hazards if watch is not None else None
    if watch is not None and not hazards_note:
        from app.lab.isolate import HAZARDS

        watch.phase(HAZARDS)
    hazards = run_hazards(backend) if not hazards_note else []
    return {
        "implementation": implementation_text(platform, device),
        "implementation_key": impl.key,
        "backend": backend.name,
        "families": list(families),
        "gl_context": ("simulated: host_copy designates a plain context as the GL one, so its GL-sharing rows answer "
                       "for a simulated GL context" if lab_simulated else "created from GL"),
        "driver_policy": {fam: reasons[fam] or "called where drivers.py allows it" for fam in families},
        "semaphores": semaphores,
        "cases": rows,
        "not_provokable": not_provokable,
        "deviations": deviations_of(rows),
        "hazards": hazards,
        **({"hazards_note": hazards_note} if hazards_note else {}),
        "summary": _summary(rows, hazards),
    }


def _entry_for_callable(platform, reasons: dict[str, str | None], entry):
    """``entry``, or where none is given and some family may be called, the platform's raw entry
    points for those families; a family whose entry point the platform does not export gets that as
    its reason (in ``reasons``) and is not called."""
    if entry is None and any(r is None for r in reasons.values()):
        callable_families = tuple(f for f, r in reasons.items() if r is None)
        try:
            entry = drivers.RawEntryPoints(platform, callable_families)
        except LookupError as exc:  # listed, but the platform does not export it: nothing is called
            for fam in callable_families:
                reasons[fam] = str(exc)
    return entry


def _lab_semaphores(lab, families: tuple[str, ...], reasons: dict[str, str | None]):
    """The semaphores a semaphore family's cases use (None where no family is one), made for the
    driver where it is called; where they cannot be, the family's reason says why and the cases get
    semaphores for the validator column only."""
    fam = next((f for f in families if registry.get(f).validator == "semaphore"), None)
    if fam is None:
        return None
    try:
        return lab.make_semaphores(with_driver=reasons[fam] is None)
    except LabSetupError as exc:  # no semaphore to call the driver with: the validator column only
        reasons[fam] = str(exc)
        return lab.make_semaphores(with_driver=False)


def _family_rows(backend, lab, runner, impl, reason, fam: str, expected: list, not_provokable: list) -> list[dict]:
    """The rows of family ``fam``: every expected case for each of its calls; a case whose objects
    cannot be made here is added to ``not_provokable`` once (at the family's first call)."""
    rows = []
    for call in sorted(registry.get(fam).calls, key=CALL_ORDER.index):
        for exp in expected:
            try:
                a = lab.args(fam, exp.id)
            except LabSetupError as exc:  # an object this case needs cannot be made here
                if call == registry.get(fam).calls[0]:
                    not_provokable.append({"family": fam, "id": exp.id, "codes": list(exp.codes),
                                           "section": exp.section, "quote": exp.quote, "why": str(exc)})
                continue
            rows.append(_case_row(backend, lab, runner, impl, reason, exp, fam, call, a))
    return rows


def _summary(rows: list[dict], hazards: list[dict]) -> dict:
    """The lab's counts; ``ok`` when every case is accepted and every hazard is seen."""
    agree = sum(r["validator_agrees"] for r in rows)
    accepted = sum(r["agrees"] for r in rows)  # the spec's answer or the deviation's own, and the Python API right
    deviated = sum(bool(r["deviation"]) and not r["validator_agrees"] for r in rows)
    hz_ok = sum(h["ok"] for h in hazards)
    return {"cases": len(rows), "validator_agrees": agree, "accepted": accepted,
            "deliberate_deviations": deviated,
            "driver_called": sum(r["driver_called"] for r in rows),
            "driver_differs": sum(r["driver_differs"] for r in rows),
            "hazards": len(hazards), "hazards_ok": hz_ok,
            "ok": accepted == len(rows) and hz_ok == len(hazards)}


# -- output ---------------------------------------------------------------------------------------
def _short(code: str | None) -> str:
    return code if code is not None else "refused, no code"


def format_text(results: dict, color: bool = False) -> str:
    """A readable table; differences from the spec are marked (and red when ``color``)."""
    red = (lambda s: f"\x1b[31m{s}\x1b[0m") if color else (lambda s: s)
    lines = [f"glshare error lab on {results['implementation']}",
             f"backend {results['backend']}; families {', '.join(results['families'])}",
             f"GL context: {results.get('gl_context', '')}"]
    for fam, policy in results["driver_policy"].items():
        lines.append(f"  driver, {fam}: {policy}")
    head = f"{'case':<40} {'call':<8} {'spec':<46} {'validator':<28} driver"
    for fam in results["families"]:
        lines += ["", f"[{fam}] {' / '.join(registry.get(fam).entry_points.values())}", head, "-" * len(head)]
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
    if results.get("deviations"):
        lines += ["", "deliberate deviations glshare keeps:"]
        lines += [f"  [{d['family']}] {d['case']}: the text {d['spec']}, glshare {d['glshare']}: {d['why']}"
                  for d in results["deviations"]]
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
    if results.get("hazards_note"):
        lines.append(f"hazards {results['hazards_note']}")
    if results.get("teardown_note"):
        lines.append(results["teardown_note"])
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
    from app.window import open_surface  # a window's GLX context with --window, else headless EGL

    selector = cl_device_selector(getattr(args, "cl_device", None))
    choice = select_device(selector)
    window = getattr(args, "window", False)
    with contextlib.ExitStack() as stack:
        surface = open_surface(not window, (64, 64), title="glshare errors")
        stack.callback(surface.close)
        backend = open_lab_backend(choice, surface, getattr(args, "backend", None) or "auto")
        stack.callback(backend.close)
        isolated = any(r is None for r in driver_reasons(backend, lab_families(backend)).values())
        results = None if isolated else run_lab(backend)  # no driver called: in this process
        name = backend.name
    if isolated:  # a driver is called: in a child under a watchdog (app/lab/isolate.py)
        from app.errors import GlshareError
        from app.lab import isolate

        try:
            results = isolate.run_isolated(isolate.child_command(name, window, selector))
        except isolate.LabChildFailed as exc:
            raise GlshareError(str(exc)) from None
    if getattr(args, "json", False):
        print(json.dumps(results, indent=2))
    else:
        print(format_text(results, color=sys.stdout.isatty()))
    return 0 if results["summary"]["ok"] else 1
