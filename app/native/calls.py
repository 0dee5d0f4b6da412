"""A frame's foreign calls prepared once and made in one native call (``stamps.c``,
``glshare_run_calls``): the scheduler's native frame (``app/schedule/native.py``).

Through ctypes every foreign call costs the calling thread its argument conversion on top of the
Python that prepares it, and a frame's hand-over is 3 to 12 such calls. Here each call's entry
point and arguments are written once into a C array (``CallList``) and the whole list is one ctypes
call, with the clock read after each call so the frame's phases and waits keep their times.

Every argument is an integer or a pointer (``arg``): a handle, a count, an enum, or the address of a
prepared array, of a value the frame rewrites in place (a kernel's scalar argument), of an event out
slot, or 0 for NULL; the library calls each entry point with ``stamps.c``'s GLSHARE_CALL_ARGS words,
which the System V x86-64 and the AArch64 calling conventions make safe for such arguments
(``reason`` refuses other machines).
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from dataclasses import dataclass

from app import native

ARGS = 10  # GLSHARE_CALL_ARGS in stamps.c
_MACHINES = ("x86_64", "amd64", "aarch64", "arm64")


class _Call(ctypes.Structure):
    _fields_ = [("fn", ctypes.c_void_p), ("status", ctypes.c_int32), ("reserved", ctypes.c_int32),
                ("a", ctypes.c_uint64 * ARGS)]


def address(fn) -> int:
    """The entry point of a ctypes function (a library's attribute or a CFUNCTYPE object)."""
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


def arg(value) -> int:
    """One argument as the word the library passes: None -> 0 (NULL); an int as it is (a negative one
    as its two's complement); a ctypes object -> its address (an array, a value, an out slot)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFFFFFFFFFFFFFFFF
    return ctypes.addressof(value)


@dataclass(frozen=True)
class Call:
    """One foreign call: the entry point (a ctypes function), its arguments (``arg``'s kinds; the
    ctypes objects are held by the list), whether it returns a CL status (else void: a GL call), the
    routine an error names with its ``detail``, and ``wait``: the name under which the call is one of
    the frame's CPU waits (glFinish, clFinish), or ""."""

    fn: object
    args: tuple
    routine: str
    status: bool = True
    detail: str = ""
    wait: str = ""


def reason() -> str:
    """"" where a frame's calls can be made natively here, else why not (one line)."""
    why = native.reason()
    if why:
        return why
    machine = os.uname().machine if hasattr(os, "uname") else "?"
    if not sys.platform.startswith("linux") or machine.lower() not in _MACHINES:
        return f"the native calls are made only on Linux x86-64 and AArch64 (this is {sys.platform} {machine})"
    return ""


class CallList:
    """``calls`` in a C array, made in order by ``run`` in one foreign call; ``stamps[i]`` is the clock
    (time.perf_counter_ns's) before call i, ``stamps[i + 1]`` after it."""

    __slots__ = ("calls", "n", "stamps", "run_all", "_array", "_keep", "_failed", "_failed_ref", "_run", "__weakref__")

    def __init__(self, calls) -> None:
        self.calls = tuple(calls)
        self.n = n = len(self.calls)
        self._array = (_Call * max(1, n))()
        self._keep = []  # the ctypes objects whose addresses are in the array
        for i, c in enumerate(self.calls):
            if len(c.args) > ARGS:
                raise ValueError(f"{c.routine}: {len(c.args)} arguments, the native calls take {ARGS}")
            entry = self._array[i]
            entry.fn, entry.status = address(c.fn), int(bool(c.status))
            for j, value in enumerate(c.args):
                entry.a[j] = arg(value)
            self._keep.append((c.fn, c.args))
        self.stamps = (ctypes.c_int64 * (n + 1))()
        self._failed = ctypes.c_int32(-1)
        self._failed_ref = ctypes.byref(self._failed)
        self._run = native.load().glshare_run_calls
        # ``run()`` bound once: the frame's every call with no Python frame of its own around the foreign one
        self.run_all = functools.partial(self._run, self._array, 0, n, self.stamps, self._failed_ref)

    def run(self, first: int = 0, stop: int | None = None) -> int:
        """Make calls ``first`` .. ``stop`` - 1 (default: the last); 0, or the CL status of the first
        that failed (``failed`` its index; the calls after it are not made)."""
        return self._run(self._array, first, self.n if stop is None else stop, self.stamps, self._failed_ref)

    @property
    def failed(self) -> int:
        """The index of the call that failed in the last ``run``, or -1."""
        return self._failed.value

    def replace_entry(self, index: int, fn) -> None:
        """Call ``fn`` (a ctypes function of the same arguments) instead of call ``index``'s entry point:
        the tests' failure made on purpose. ``fn`` is held by the list."""
        self._array[index].fn = address(fn)
        self._keep.append(fn)
