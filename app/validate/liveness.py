"""Which CL objects are alive, from glshare's own registry, never by asking the driver.

A released OpenCL handle must not reach the driver: reading a freed object's info is undefined
(and segfaulted here), and pyopencl keeps a released wrapper's ``int_ptr`` as it was. So the
validator decides liveness from what glshare itself knows:

- ``created(obj, context)``: a backend made it (``SharingBackend._adopt``); ``handed(obj,
  context)``: a caller gave it to glshare on purpose (the error lab's plain buffer). Either way the
  entry records the handle and the context it belongs to.
- ``released(obj)``: glshare released it (``OwnershipTracker.remove``, before the release), or
  pyopencl did: ``MemoryObject.release`` is wrapped once, when this module is imported, so every
  object released through pyopencl is marked before its handle is freed.
- Anything else is *unknown*: the validator answers CL_INVALID_MEM_OBJECT (or
  CL_INVALID_SEMAPHORE_KHR) for it, because a live object and a dangling one look the same
  from Python.

Weak references where Python allows them: an entry of an object that can be weakly referenced
(glshare's own ``Semaphore`` wrapper, any Python subclass) disappears with the object. pyopencl's
wrappers cannot be ("cannot create weak reference to 'Buffer' object"), so their entries are kept by
``id()`` with the handle. That stays sound: an id can only be reused once the wrapper is gone, and a
new wrapper at that id is either live (it holds its own reference) or was released through
pyopencl, which marks it. Released wrappers are pinned (held) while they are remembered, so their
id cannot be reused by a live object; the oldest are forgotten first and then read as unknown
(refused as well). Liveness of *events* and *queues* needs no registry: pyopencl has no
``release()`` for them, a wrapper holds its handle until it is collected.
"""
from __future__ import annotations

import collections
import weakref
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

LIVE, RELEASED, UNKNOWN = "live", "released", "unknown"


def handle_of(obj: Any) -> int:
    """The raw handle of a pyopencl object (``int_ptr``) or of a glshare wrapper with a ctypes
    ``handle`` (semaphores); 0 for NULL, None or anything without one."""
    if obj is None:
        return 0
    ptr = getattr(obj, "int_ptr", None)
    if ptr is None:
        h = getattr(obj, "handle", None)
        ptr = getattr(h, "value", h)
    try:
        return int(ptr or 0)
    except (TypeError, ValueError):
        return 0


def _context_ptr(context: Any) -> int:
    return handle_of(context) if context is not None else 0


@dataclass
class Entry:
    handle: int
    context: int  # the context's handle, 0 when not recorded
    origin: str  # "created" or "handed"
    kind: str  # "mem", "semaphore"
    label: str
    ref: Any = None  # weakref.ref where the object allows one


class ObjectRegistry:
    """Live and released CL objects glshare knows of (see the module docstring)."""

    def __init__(self, released_max: int = 4096, live_max: int = 65536) -> None:
        self._live: dict[int, Entry] = {}
        self._released: collections.OrderedDict[int, tuple[Any, str]] = collections.OrderedDict()
        self.released_max, self.live_max = released_max, live_max
        self.generation = 0  # bumped whenever an object stops being live (validators drop caches)

    # -- registration ------------------------------------------------------------------------------
    def created(self, obj: Any, context: Any = None, *, label: str = "", kind: str = "mem") -> Any:
        """A glshare backend made ``obj`` in ``context``. Returns ``obj``."""
        return self._add(obj, context, "created", label, kind)

    def handed(self, obj: Any, context: Any = None, *, label: str = "", kind: str = "mem") -> Any:
        """A caller hands ``obj`` (of ``context``) to glshare: validators treat it as live until it
        is released (through glshare or pyopencl) or forgotten. Returns ``obj``."""
        return self._add(obj, context, "handed", label, kind)

    def _add(self, obj, context, origin, label, kind) -> Any:
        key = id(obj)
        self._released.pop(key, None)
        entry = Entry(handle_of(obj), _context_ptr(context), origin, kind, label)
        try:
            entry.ref = weakref.ref(obj, lambda _r, k=key: self._drop(k))
        except TypeError:  # pyopencl wrappers: no weak references (module docstring)
            entry.ref = None
        self._live[key] = entry
        while len(self._live) > self.live_max:  # forgotten entries read as unknown: refused, never trusted
            self._live.pop(next(iter(self._live)))
        return obj

    def _drop(self, key: int) -> None:
        if self._live.pop(key, None) is not None:
            self.generation += 1

    def released(self, obj: Any, how: str = "released through glshare") -> None:
        """``obj`` is released (or about to be): every later check refuses it. Recorded whether or
        not ``obj`` was registered, so that a released wrapper is known as such everywhere."""
        key = id(obj)
        self._live.pop(key, None)
        self._released[key] = (obj, how)  # pinned: its id cannot be reused while remembered
        self._released.move_to_end(key)
        while len(self._released) > self.released_max:
            self._released.popitem(last=False)
        self.generation += 1

    def forget(self, obj: Any) -> None:
        """Drop ``obj`` from the registry (it reads as unknown afterwards)."""
        key = id(obj)
        if self._live.pop(key, None) is not None or self._released.pop(key, None) is not None:
            self.generation += 1

    # -- queries -----------------------------------------------------------------------------------
    def entry(self, obj: Any) -> Entry | None:
        """The live entry of ``obj``, or None (released, unknown, or its handle changed)."""
        e = self._live.get(id(obj))
        if e is None:
            return None
        if e.ref is not None and e.ref() is not obj:
            return None
        if handle_of(obj) != e.handle:  # a glshare wrapper cleared its handle (Semaphore.release)
            return None
        return e

    def state(self, obj: Any) -> str:
        if self.entry(obj) is not None:
            return LIVE
        if id(obj) in self._released or (id(obj) in self._live and handle_of(obj) == 0):
            return RELEASED
        return UNKNOWN

    def is_live(self, obj: Any) -> bool:
        return self.entry(obj) is not None

    def why_not_live(self, obj: Any) -> str:
        """Why ``obj`` is not a live object glshare knows (for error details)."""
        if obj is None:
            return "a NULL handle"
        key = id(obj)
        if key in self._released:
            return self._released[key][1]
        e = self._live.get(key)
        if e is not None and handle_of(obj) != e.handle:
            return "released (its wrapper holds no handle any more)"
        name = type(obj).__name__
        return (f"glshare never saw this {name} (neither created by a backend nor handed with "
                "REGISTRY.handed): a live object and a released one look the same from Python, so it is "
                "not passed to the driver")

    def counts(self) -> dict[str, int]:
        return {"live": len(self._live), "released": len(self._released)}


REGISTRY = ObjectRegistry()


def _wrap_release(cls: type) -> None:
    original = cls.__dict__["release"]
    if getattr(original, "_glshare_marks", False):
        return

    def release(self, *args, **kwargs):
        REGISTRY.released(self, f"released through pyopencl ({type(self).__name__}.release)")
        return original(self, *args, **kwargs)

    release._glshare_marks = True  # type: ignore[attr-defined]
    release.__doc__ = original.__doc__
    cls.release = release


def install_release_hook() -> None:
    """Wrap ``pyopencl.MemoryObject.release`` (Buffer, Image, the GL and pipe objects inherit it)
    so that every release through pyopencl is recorded (idempotent). Memory-pool buffers
    (``PooledBuffer``, their own ``release``) are left alone: glshare shares none."""
    _wrap_release(cl.MemoryObject)


install_release_hook()
