"""The error lab (``glshare errors``): every acquire/release case and every hazard, against the spec.

Each case changes one argument of a valid call (one shared buffer, no events) so that exactly one
rule of ../shared/spec/gl-acquire-release.txt applies; the validator's answer is set beside the
spec's code and, where ``app/lab/drivers.py`` says it is safe, beside the driver's own. Each
hazard of ``app/validate/ownership.py`` is provoked on a fresh shared buffer, once to see it
flagged and once under strict to see it raised. The panel's "Error lab" tab shows the same
results (``app/ui/lab_tab.py``).
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyopencl as cl

from app.errors import ClError, HazardError, ValidationError, cl_error_name
from app.lab import drivers
from app.validate.ownership import CL, HAZARDS, OwnershipTracker
from app.validate.spec import CALLS, NOOP, NULL, RETIRED, RULES

log = logging.getLogger(__name__)

CASES: tuple[str, ...] = ("valid", "success_empty", "num_zero_list_given", "num_given_list_null",
                          "invalid_mem_object", "invalid_queue", "context_not_from_gl", "not_gl_object",
                          "wait_list_null_n_given", "wait_list_given_n_zero", "wait_list_invalid_event",
                          "event_aliases_wait_list")
SPEC_CODES: dict[str, str] = {"valid": "CL_SUCCESS", **{name: rule.code for name, rule in RULES.items()}}
CASE_TEXT: dict[str, str] = {
    "valid": "one shared object, no wait list",
    "success_empty": "num_objects 0, mem_objects NULL",
    "num_zero_list_given": "num_objects 0, mem_objects a list",
    "num_given_list_null": "num_objects 1, mem_objects NULL",
    "invalid_mem_object": "a memory object already released",
    "invalid_queue": "command_queue NULL",
    "context_not_from_gl": "a queue of a plain (non-GL) context",
    "not_gl_object": "a plain CL buffer, not made from a GL object",
    "wait_list_null_n_given": "event_wait_list NULL, num_events 1",
    "wait_list_given_n_zero": "event_wait_list a list, num_events 0",
    "wait_list_invalid_event": "event_wait_list holds a NULL event",
    "event_aliases_wait_list": "event points at event_wait_list[0]",
}
LAB_BYTES = 256


@dataclass
class CallArgs:
    """One call in the C API's terms (see ``SpecValidator.check``)."""

    queue: Any
    num_objects: int
    mem_objects: list | None
    num_events: int = 0
    event_wait_list: list | None = NULL
    event_out: Any = NULL


@dataclass
class LabObjects:
    """What the cases are made of, on one backend: a shared buffer, a released one, a plain CL
    buffer, a queue of another (plain) context, and one completed event."""

    backend: Any
    shared: Any = None
    released_mem: Any = None
    plain: Any = None
    other_queue: Any = None
    event: Any = None
    _extra: list = field(default_factory=list)

    def __enter__(self) -> "LabObjects":
        b = self.backend
        self.shared = b.create_buffer("lab.shared", LAB_BYTES)
        gone = b.create_buffer("lab.released", LAB_BYTES)
        b.destroy(gone)  # CL object released through the sharing layer: RETIRED, invalid from now on
        self.released_mem = gone.mem
        self.plain = cl.Buffer(b.context, cl.mem_flags.READ_WRITE, LAB_BYTES)
        other_context = cl.Context([b.device])
        self.other_queue = cl.CommandQueue(other_context, b.device)
        self.event = cl.enqueue_marker(b.queue)
        self.event.wait()
        return self

    def __exit__(self, *exc) -> None:
        self.backend.queue.finish()
        if self.other_queue is not None:
            self.other_queue.finish()
            self.other_queue = None
        if self.plain is not None:
            self.plain.release()
            self.plain = None
        if self.shared is not None:
            self.backend.destroy(self.shared)
            self.shared = None

    def args(self, case: str) -> CallArgs:
        """The valid call with the one change ``case`` makes."""
        q, mem, ev = self.backend.queue, self.shared.mem, self.event
        a = CallArgs(q, 1, [mem])
        changes: dict[str, dict] = {
            "valid": {},
            "success_empty": {"num_objects": 0, "mem_objects": NULL},
            "num_zero_list_given": {"num_objects": 0},
            "num_given_list_null": {"mem_objects": NULL},
            "invalid_mem_object": {"mem_objects": [self.released_mem]},
            "invalid_queue": {"queue": NULL},
            "context_not_from_gl": {"queue": self.other_queue},
            "not_gl_object": {"mem_objects": [self.plain]},
            "wait_list_null_n_given": {"num_events": 1},
            "wait_list_given_n_zero": {"event_wait_list": [ev]},
            "wait_list_invalid_event": {"num_events": 1, "event_wait_list": [NULL]},
            "event_aliases_wait_list": {"num_events": 1, "event_wait_list": [ev], "event_out": ev},
        }
        return replace(a, **changes[case])


def validator_answer(validator, call: str, a: CallArgs) -> tuple[str, str | None]:
    """(CL name the validator answers, the rule it cites or None)."""
    try:
        result = validator.check(call, a.queue, a.num_objects, a.mem_objects, a.num_events, a.event_wait_list,
                                 a.event_out)
    except ValidationError as exc:
        return exc.name, getattr(exc, "rule", None)
    return "CL_SUCCESS", ("success_empty" if result == NOOP else None)


# -- the driver -----------------------------------------------------------------------------------
def _ptr(obj: Any) -> int:
    """The raw handle to give the driver; NULL for None and for objects glshare released (never
    a dangling pointer: the driver would read freed memory)."""
    if obj is None or id(obj) in RETIRED:
        return 0
    return int(obj.int_ptr)


class DriverRunner:
    """Makes the real driver call of a case (raw pointers), restoring a clean state around it:
    a release case acquires first; an acquire that succeeded is released again."""

    def __init__(self, lab: LabObjects, entry) -> None:
        self.lab, self.entry = lab, entry
        self.calls: list[tuple[str, str]] = []

    def _array(self, items: list | None):
        if items is NULL:
            return None
        arr = (ctypes.c_void_p * max(1, len(items)))(*[_ptr(x) for x in items])
        return arr

    def _valid(self, call: str) -> int:
        q = self.lab.backend.queue
        mems = self._array([self.lab.shared.mem])
        return self.entry(call, _ptr(q), 1, ctypes.addressof(mems), 0, None, None)

    def run(self, call: str, case: str, a: CallArgs) -> tuple[int | None, str]:
        note = ""
        if call == "release":
            pre = self._valid("acquire")
            if pre != 0:
                return None, f"the acquire before the release failed: {cl_error_name(pre)}"
        mems, evs = self._array(a.mem_objects), self._array(a.event_wait_list)
        first_event = evs[0] if evs is not None else None
        event_out = ctypes.addressof(evs) if (a.event_out is not NULL and evs is not None) else None
        self.calls.append((call, case))
        code = self.entry(call, _ptr(a.queue), a.num_objects, ctypes.addressof(mems) if mems is not None else None,
                          a.num_events, ctypes.addressof(evs) if evs is not None else None, event_out)
        if event_out is not None and code == 0 and evs[0] and evs[0] != first_event:
            cl.Event.from_int_ptr(evs[0], retain=False)  # the event the driver wrote: released with the wrapper
        ours = a.mem_objects is not NULL and any(m is self.lab.shared.mem for m in a.mem_objects[:a.num_objects])
        handed_over = code == 0 and ours  # the call acquired (or released) the shared buffer
        if handed_over == (call == "acquire"):
            self._valid("release")  # back to GL: an acquire that took it, or a release that did not
        with contextlib.suppress(cl.Error):
            self.lab.backend.queue.finish()
        return code, note


# -- hazards --------------------------------------------------------------------------------------
def _provoke(backend, case: str, obj, other_queue) -> None:
    q = backend.queue
    if case == "use_without_acquire":
        backend.tracker.cl_use([obj], "kernel")
        if not backend.zero_copy:  # on a zero-copy driver the command itself would be undefined behaviour
            cl.enqueue_fill_buffer(q, obj.mem, np.uint8(7), 0, obj.nbytes)
    elif case == "double_acquire":
        backend.acquire(q, [obj])
        backend.acquire(q, [obj])
        backend.release(q, [obj])
    elif case == "release_without_acquire":
        backend.release(q, [obj])
    elif case == "release_on_other_queue":
        backend.acquire(q, [obj])
        backend.release(other_queue, [obj])
        other_queue.finish()
    elif case == "gl_use_while_acquired":
        backend.acquire(q, [obj])
        backend.upload(obj, np.zeros(obj.nbytes, np.uint8))
        backend.release(q, [obj])
    elif case == "delete_gl_while_shared":
        backend.delete_gl_first(obj)
    else:
        raise KeyError(case)


def _hazard_once(backend, case: str, strict: bool, other_queue) -> dict:
    tracker = OwnershipTracker(strict=strict)
    backend.tracker = tracker
    obj = backend.create_buffer(f"lab.{case}", LAB_BYTES)
    out: dict = {"raised": False, "counts": {}, "driver_error": ""}
    try:
        _provoke(backend, case, obj, other_queue)
    except HazardError as exc:
        if not strict or exc.case != case:
            raise
        out["raised"] = True
    except ClError as exc:  # a zero-copy driver may refuse the mistake itself
        out["driver_error"] = exc.one_line()
    finally:
        tracker.strict = False
        if obj in backend.objects:
            if tracker.owner_of(obj) == CL:
                with contextlib.suppress(ClError):
                    backend.release(backend.queue, [obj])
            backend.destroy(obj)
        backend.queue.finish()
    out["counts"] = dict(tracker.counts)
    return out


def run_hazards(backend) -> list[dict]:
    """Every hazard, on its own buffer and tracker (the backend's own tracker is put back)."""
    saved = backend.tracker
    other_queue = cl.CommandQueue(backend.context, backend.device)
    results = []
    try:
        for case, spec in HAZARDS.items():
            plain = _hazard_once(backend, case, False, other_queue)
            strict = _hazard_once(backend, case, True, other_queue)
            others = sorted(k for k in plain["counts"] if k != case)
            results.append({"case": case, "flagged": plain["counts"].get(case, 0) > 0, "spec": spec,
                            "strict_raises": strict["raised"], "also_flagged": others,
                            "driver_error": plain["driver_error"] or strict["driver_error"]})
    finally:
        backend.tracker = saved
        other_queue.finish()
    return results


# -- the lab --------------------------------------------------------------------------------------
def implementation_text(choice_platform, device) -> str:
    version = choice_platform.version.split(",")[0].strip()  # PoCL appends its build options
    return f"{choice_platform.name.strip()} ({version}) / {device.name.strip()}"


def run_lab(backend, *, entry=None) -> dict:
    """Run every case for both calls, and every hazard, on ``backend``.

    Args:
        backend: an open SharingBackend whose queue is idle (between frames).
        entry: the driver's raw entry points; None decides from ``drivers`` (no calls on PoCL).
    Returns:
        the lab's JSON document (see ``glshare errors --json``).
    """
    platform, device = backend.env.choice.platform, backend.device
    impl = drivers.identify(platform)
    no_calls = drivers.no_call_reason(impl, platform, device, backend.name) if entry is None else None
    if entry is None and no_calls is None:
        entry = drivers.RawEntryPoints()
    cases = []
    with LabObjects(backend) as lab:
        runner = DriverRunner(lab, entry) if entry is not None else None
        for call in CALLS:
            for case in CASES:
                a = lab.args(case)
                spec_code = SPEC_CODES[case]
                code, rule = validator_answer(backend.validator, call, a)
                row = {"case": case, "call": call, "spec_code": spec_code, "validator_code": code,
                       "driver_called": False, "driver_code": None, "rule": rule,
                       "agrees": code == spec_code, "what": CASE_TEXT[case], "note": ""}
                if case in RULES and RULES[case].note:
                    row["note"] = RULES[case].note
                unsafe = drivers.unsafe_reason(impl, case)
                if runner is None:
                    row["driver_note"] = no_calls or "no driver entry points"
                elif unsafe:
                    row["driver_note"] = f"not called: {unsafe}"
                else:
                    dcode, dnote = runner.run(call, case, a)
                    row["driver_called"] = dcode is not None
                    row["driver_code"] = cl_error_name(dcode) if dcode is not None else None
                    row["driver_note"] = dnote or impl.known.get(case, "")
                row["driver_differs"] = row["driver_code"] is not None and row["driver_code"] != spec_code
                if case == "success_empty":  # "does nothing": the Python API enqueues nothing either
                    row["nothing_enqueued"] = (getattr(backend, call)(backend.queue, []) is None)
                    row["agrees"] = row["agrees"] and row["nothing_enqueued"]
                cases.append(row)
    hazards = run_hazards(backend)
    agree = sum(r["agrees"] for r in cases)
    hz_ok = sum(h["flagged"] and h["strict_raises"] and not h["also_flagged"] for h in hazards)
    return {
        "implementation": implementation_text(platform, device),
        "implementation_key": impl.key,
        "backend": backend.name,
        "driver_policy": no_calls or "driver called where drivers.py allows it",
        "cases": cases,
        "hazards": hazards,
        "summary": {"cases": len(cases), "validator_agrees": agree,
                    "driver_called": sum(r["driver_called"] for r in cases),
                    "driver_differs": sum(r["driver_differs"] for r in cases),
                    "hazards": len(hazards), "hazards_ok": hz_ok,
                    "ok": agree == len(cases) and hz_ok == len(hazards)},
    }


# -- output ---------------------------------------------------------------------------------------
def format_text(results: dict, color: bool = False) -> str:
    """A readable table; differences from the spec are marked (and red when ``color``)."""
    red = (lambda s: f"\x1b[31m{s}\x1b[0m") if color else (lambda s: s)
    lines = [f"glshare error lab on {results['implementation']}",
             f"validator on backend {results['backend']}; driver: {results['driver_policy']}", ""]
    head = f"{'case':<26} {'call':<8} {'spec':<27} {'validator':<27} driver"
    lines += [head, "-" * len(head)]
    for r in results["cases"]:
        v = r["validator_code"] if r["agrees"] else red(f"{r['validator_code']} << differs")
        if r["driver_called"]:
            d = r["driver_code"] if not r["driver_differs"] else red(f"{r['driver_code']} << differs")
        else:
            d = "not called"
        lines.append(f"{r['case']:<26} {r['call']:<8} {r['spec_code']:<27} {v:<27} {d}")
    notes = sorted({r["note"] for r in results["cases"] if r["note"]})
    dnotes = sorted({r.get("driver_note", "") for r in results["cases"] if r.get("driver_note")})
    for n in notes:
        lines.append(f"  note: {n}")
    for n in dnotes:
        lines.append(f"  driver: {n}")
    lines += ["", f"{'hazard':<26} {'flagged':<8} {'strict':<8} spec", "-" * 60]
    for h in results["hazards"]:
        ok = h["flagged"] and h["strict_raises"] and not h["also_flagged"]
        mark = "" if ok else red("  << " + ("also " + ", ".join(h["also_flagged"]) if h["also_flagged"] else "missed"))
        lines.append(f"{h['case']:<26} {'yes' if h['flagged'] else red('NO'):<8} "
                     f"{'raises' if h['strict_raises'] else red('no'):<8} {h['spec']}{mark}")
        if h.get("driver_error"):
            lines.append(f"{'':<26} driver: {h['driver_error']}")
    s = results["summary"]
    lines += ["", f"validator agrees with the spec in {s['validator_agrees']}/{s['cases']} cases; "
                  f"driver called in {s['driver_called']} ({s['driver_differs']} differ from the spec); "
                  f"hazards flagged and raised: {s['hazards_ok']}/{s['hazards']}"]
    return "\n".join(lines)


def open_lab_backend(choice, surface):
    """gl_sharing where the probe accepts it (so the driver can be asked), else host_copy."""
    from app.gl.context import gl_info
    from app.sharing.base import ProbeEnv
    from app.sharing.registry import Registry

    registry = Registry(ProbeEnv(choice, surface, gl_info()))
    name = "gl_sharing" if "gl_sharing" in registry.available else "host_copy"
    return registry.open(name)


def main(args) -> int:
    """``glshare errors [--json]``: exit 0 when the validator agrees with the spec everywhere
    (and every hazard is flagged and raised under strict), 1 otherwise."""
    from app.cl.device import select_device
    from app.config import cl_device_selector
    from app.window.egl_headless import EglSurface

    choice = select_device(cl_device_selector(getattr(args, "cl_device", None)))
    with contextlib.ExitStack() as stack:
        surface = EglSurface((64, 64))
        stack.callback(surface.close)
        backend = open_lab_backend(choice, surface)
        stack.callback(backend.close)
        results = run_lab(backend)
    if getattr(args, "json", False):
        print(json.dumps(results, indent=2))
    else:
        print(format_text(results, color=sys.stdout.isatty()))
    return 0 if results["summary"]["ok"] else 1
