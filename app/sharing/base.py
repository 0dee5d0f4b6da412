"""The sharing contract every backend keeps: share GL objects with CL, acquire, release, close.

The contract is cl_khr_gl_sharing's (../shared/spec/gl-acquire-release.txt, 5.5.15): CL may use a
shared object only between an acquire and the matching release, GL only outside that bracket.
Every backend validates each call against that text before doing anything (``SpecValidator``)
and tracks ownership (``OwnershipTracker``), so host_copy teaches the same rules as zero-copy.
"""
from __future__ import annotations

import abc
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator

import pyopencl as cl
from OpenGL import GL

from app.cl.device import ComputeQueue, DeviceChoice
from app.diagnostics import live
from app.errors import ClError, SharingUnavailable
from app.gl.objects import GlBuffer, GlTexture
from app.validate.liveness import REGISTRY
from app.validate.ownership import OwnershipTracker
from app.validate.spec import SpecValidator

log = logging.getLogger(__name__)

ACCESS_FLAGS = {"read_write": cl.mem_flags.READ_WRITE, "write_only": cl.mem_flags.WRITE_ONLY,
                "read_only": cl.mem_flags.READ_ONLY}


@dataclass(frozen=True)
class Probe:
    name: str
    available: bool
    reason: str  # why not, or what it will use

    def as_dict(self) -> dict:
        return {"name": self.name, "available": self.available, "reason": self.reason}


@dataclass
class ProbeEnv:
    """What a probe may look at: the chosen CL device, the surface and its GL context facts."""

    choice: DeviceChoice
    surface: Any
    gl_info: Any

    @property
    def device_extensions(self) -> frozenset[str]:
        return frozenset(self.choice.device.extensions.split())


@dataclass(eq=False)
class SharedObject:
    """A GL object and the CL memory object kernels use for it, with the hand-over state."""

    label: str
    gl: GlBuffer | GlTexture
    mem: cl.MemoryObjectHolder
    access: str
    backend: str
    gl_generation: int = 0  # bumped whenever GL writes the data
    synced_generation: int = -1  # the GL generation CL's copy holds (host_copy only)
    private: dict = field(default_factory=dict)  # backend's own per-object state (PBOs, imports)
    row_pitch: int = 0  # bytes per row when a texture's CL side is a plain buffer (``is_image`` False)

    @property
    def is_image(self) -> bool:
        """Whether kernels see a texture as an image (else as a pitched buffer of texels)."""
        return isinstance(self.mem, cl.Image)

    @property
    def kind(self) -> str:
        return self.gl.kind

    @property
    def nbytes(self) -> int:
        return self.gl.nbytes

    def gl_wrote(self) -> None:
        """GL changed the data (upload, GL pass): a copying backend must bring it to CL at acquire."""
        self.gl_generation += 1

    def __repr__(self) -> str:
        return f"<SharedObject {self.label!r} {self.kind} via {self.backend}>"


class SyncStrategy:
    """How GL's work is ordered before CL's (before acquire) and CL's before GL's (after release).

    ``waits`` collects (name, start_ns, end_ns) CPU waits for the frame record.
    """

    name: ClassVar[str] = "none"

    def __init__(self, backend: "SharingBackend") -> None:
        self.backend = backend

    def before_acquire(self, waits: list) -> list[cl.Event]:
        return []

    def after_release(self, queue: cl.CommandQueue, release_event: cl.Event | None, waits: list) -> None:
        queue.flush()

    def after_gl_use(self, waits: list) -> None:
        return None

    def close(self) -> None:
        return None


def timed_wait(waits: list, name: str, fn) -> None:
    t0 = time.perf_counter_ns()
    fn()
    waits.append((name, t0, time.perf_counter_ns()))


class FinishSync(SyncStrategy):
    """The portable rule: glFinish before acquire, clFinish after release."""

    name = "finish"

    def before_acquire(self, waits: list) -> list[cl.Event]:
        timed_wait(waits, "glFinish", GL.glFinish)
        return []

    def after_release(self, queue, release_event, waits) -> None:
        timed_wait(waits, "clFinish", queue.finish)


class NoSync(SyncStrategy):
    """No wait at all: only for the hazard demonstrations."""

    name = "none"


class SharingBackend(abc.ABC):
    """Base of every backend. Subclasses implement the ``_`` methods; the public ones validate,
    track ownership and count objects."""

    name: ClassVar[str]
    zero_copy: ClassVar[bool]
    rule_set: ClassVar[str] = "gl_sharing"  # [spec] the calls' error lists it is checked against (app/validate)
    sync_modes: ClassVar[tuple[str, ...]] = ("finish", "none")

    def __init__(self, env: ProbeEnv, *, strict: bool | str = False) -> None:
        self.env = env
        self.device = env.choice.device
        self.context = self._create_context()
        live.created("cl_context", self.name)
        self._queue = ComputeQueue(self.context, self.device, f"{self.name} queue", owner=self.name)
        self.objects: list[SharedObject] = []
        # [spec] strict: "off" | "spec" | "all" (True = "all"); both checked against the backend's own rule set
        self.tracker = OwnershipTracker(strict=strict, family=self.rule_set)
        self.validator = SpecValidator(self.context, self._is_shared, rule_set=self.rule_set)
        self.bypass_validation = False  # the hazard lab turns it off to let a mistake through
        self._closed = False
        self.bytes_copied = 0

    # -- to implement ---------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        """Available here, or why not: never calls an entry point the device does not list."""

    @abc.abstractmethod
    def _create_context(self) -> cl.Context: ...

    @abc.abstractmethod
    def _share_buffer(self, gl: GlBuffer, access: str) -> cl.MemoryObjectHolder: ...

    @abc.abstractmethod
    def _share_texture(self, gl: GlTexture, access: str) -> cl.MemoryObjectHolder: ...

    @abc.abstractmethod
    def _enqueue_acquire(self, queue, objects: list[SharedObject], wait_for) -> cl.Event | None: ...

    @abc.abstractmethod
    def _enqueue_release(self, queue, objects: list[SharedObject], wait_for) -> cl.Event | None: ...

    def _unshare(self, obj: SharedObject) -> None:
        obj.mem.release()

    def gl_after_release(self, objects: list[SharedObject]) -> None:
        """GL's part of the hand-over after the release is ordered (external_memory: buffer -> texture)."""
        return None

    @classmethod
    def sync_probe(cls, env: ProbeEnv, mode: str) -> str | None:
        """None when sync ``mode`` works with this backend here, else the reason (no backend built)."""
        if mode in ("finish", "none"):
            return None
        if mode == "gl_event":
            return (f"gl_event needs cl_khr_gl_event on a CL context created from the GL context; {cls.name} "
                    "uses a plain context (and clCreateEventFromGLsyncKHR crashed NVIDIA's driver on one)")
        if mode == "semaphore":
            return "semaphore sync needs the external_memory backend (Vulkan-exported semaphores)"
        return f"unknown sync mode {mode!r}"

    def sync_unavailable_reason(self, mode: str) -> str | None:
        """None when ``mode`` works with this backend here, else the reason."""
        return type(self).sync_probe(self.env, mode)

    def make_sync(self, mode: str) -> SyncStrategy:
        reason = self.sync_unavailable_reason(mode)
        if reason:
            raise SharingUnavailable(f"sync {mode}", reason)
        return {"finish": FinishSync, "none": NoSync}[mode](self)

    # -- public API -----------------------------------------------------------------------------
    @property
    def queue(self) -> cl.CommandQueue:
        return self._queue.queue

    def _is_shared(self, mem) -> bool:
        return any(o.mem is mem or o.mem == mem for o in self.objects)

    def share_buffer(self, gl: GlBuffer, access: str = "read_write") -> SharedObject:
        try:
            mem = self._share_buffer(gl, access)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{self.name}.share_buffer({gl.label})") from exc
        return self._adopt(gl, mem, access, "cl_buffer")

    def share_texture(self, gl: GlTexture, access: str = "write_only") -> SharedObject:
        try:
            mem = self._share_texture(gl, access)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{self.name}.share_texture({gl.label})") from exc
        return self._adopt(gl, mem, access, "cl_image" if isinstance(mem, cl.Image) else "cl_buffer")

    def _adopt(self, gl, mem, access: str, kind: str) -> SharedObject:
        obj = SharedObject(gl.label, gl, mem, access, self.name)
        obj.private["live_kind"] = kind
        REGISTRY.created(mem, self.context, label=gl.label)  # [spec] live for the validator until unshare()
        live.created(kind, self.name)
        self.objects.append(obj)
        self.tracker.add(obj)
        return obj

    def create_buffer(self, label: str, nbytes: int, *, access: str = "read_write",
                      data=None) -> SharedObject:
        """A new GL buffer shared with CL (a backend may back it with imported memory)."""
        gl = GlBuffer(label, nbytes, owner=self.name)
        obj = self.share_buffer(gl, access)
        if data is not None:
            self.upload(obj, data)
        return obj

    def create_texture(self, label: str, width: int, height: int, *, internal_format: int = GL.GL_RGBA8,
                       fmt: int = GL.GL_RGBA, dtype: int = GL.GL_UNSIGNED_BYTE,
                       access: str = "write_only") -> SharedObject:
        """A new GL texture shared with CL as an image of the same texel format."""
        gl = GlTexture(label, width, height, internal_format=internal_format, fmt=fmt, dtype=dtype, owner=self.name)
        return self.share_texture(gl, access)

    def upload(self, obj: SharedObject, data) -> None:
        """GL writes ``data`` into the object (GL must own it); CL sees it after the next acquire."""
        self.tracker.gl_use([obj], "upload")
        obj.gl.upload(data)
        obj.gl_wrote()

    def destroy(self, obj: SharedObject) -> None:
        """CL memory object first, then the GL object (cl_khr_gl_sharing's order). Idempotent."""
        self.unshare(obj)
        obj.gl.release()
        for extra in obj.private.pop("gl_extra", []):
            extra.release()

    def delete_gl_first(self, obj: SharedObject) -> None:
        """The wrong order, for the hazard demonstration: flags delete_gl_while_shared."""
        self.tracker.gl_delete(obj, "glDeleteBuffers/glDeleteTextures")
        obj.gl.release()
        self.unshare(obj)

    def unshare(self, obj: SharedObject) -> None:
        """Release the CL side of ``obj`` (always before its GL object is deleted). Idempotent."""
        if obj not in self.objects:
            return
        self.objects.remove(obj)
        self.tracker.remove(obj)
        self._unshare(obj)
        live.released(obj.private["live_kind"], self.name)

    def _validated(self, call: str, queue, objects, wait_for) -> list[SharedObject]:
        """Check the call against the spec (on the CL memory objects, as the driver would see
        them); return the shared objects to hand over ([] for the spec's no-op case)."""
        objects = list(objects or ())
        if not self.bypass_validation:
            mems = [o.mem if isinstance(o, SharedObject) else o for o in objects]
            if self.validator.check_python(call, queue, mems, wait_for) == "CL_SUCCESS_NOOP":
                return []
        return [o for o in objects if isinstance(o, SharedObject)]

    def acquire(self, queue, objects, wait_for=None) -> cl.Event | None:
        """Enqueue the hand-over GL -> CL. Returns the acquire's event, or None when nothing was
        enqueued (0 objects; host_copy with nothing to copy in and no wait list)."""
        return self._hand_over("acquire", queue, objects, wait_for)

    def release(self, queue, objects, wait_for=None) -> cl.Event | None:
        """Enqueue the hand-over CL -> GL. Returns the release's event (None for 0 objects)."""
        return self._hand_over("release", queue, objects, wait_for)

    def _hand_over(self, call: str, queue, objects, wait_for) -> cl.Event | None:
        """Validate, enqueue (the backend's own way), then record the new owner."""
        objects = self._validated(call, queue, objects, wait_for)
        if not objects:
            return None
        enqueue = self._enqueue_acquire if call == "acquire" else self._enqueue_release
        try:
            event = enqueue(queue, objects, list(wait_for) if wait_for else None)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{self.name}.{call}") from exc
        (self.tracker.acquired if call == "acquire" else self.tracker.released)(objects, queue)
        return event

    @contextlib.contextmanager
    def acquired(self, queue, objects, wait_for=None) -> Iterator[list]:
        """``with backend.acquired(q, objs) as events:`` acquire, yield, release.

        ``events`` is a list holding the acquire event; append the last CL command's event to it
        and the release waits on it. After the block, ``events[-1]`` is the release event.
        """
        events = [self.acquire(queue, objects, wait_for)]
        try:
            yield events
        finally:
            last = [e for e in events[-1:] if e is not None]
            events.append(self.release(queue, objects, last or None))

    def close(self) -> None:
        """Idempotent: CL objects of every shared object, then the queue, then the context."""
        if self._closed:
            return
        self._closed = True
        for obj in list(self.objects):
            self.unshare(obj)
        self._queue.release()
        self._close_extra()
        live.released("cl_context", self.name)
        self.context = None

    def _close_extra(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} on {self.device.name.strip()!r}>"
