"""The sharing contract every backend keeps: share GL objects with CL, acquire, release, close.

A backend is a subclass of ``SharingBackend`` in its own module under ``app/sharing/backends/``;
it registers itself by ``name`` and carries its own capabilities and texts (teaching mode's
explanations, what each hazard demonstration does on it, the Memory tab), so adding one touches
that module and its tests only.

The contract is cl_khr_gl_sharing's (../shared/spec/gl-acquire-release.txt, 5.5.15): CL may use a
shared object only between an acquire and the matching release, GL only outside that bracket.
Every backend validates each call against that text before doing anything (``SpecValidator``)
and tracks ownership (``OwnershipTracker``), so host_copy teaches the same rules as zero-copy.
"""
from __future__ import annotations

import abc
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterator, Mapping

import pyopencl as cl

from app.cl.device import ComputeQueue, DeviceChoice
from app.cl.ext import event_info
from app.diagnostics import live
from app.errors import ClError, GlshareError, SharingUnavailable
from app.gl.formats import RGBA8, TexelFormat
from app.gl.objects import GlBuffer, GlTexture
from app.gl.upload import GL_PIXEL_PACK_BUFFER, GL_STREAM_COPY, copy_buffer, texture_to_pack_buffer
from app.sharing.contract import check_backend
from app.sharing.handover import HandOver, SteadyHandOver
from app.sharing.objects import SharedObject
from app.sharing.sync import SyncMode, sync_modes
from app.validate.liveness import REGISTRY
from app.validate.ownership import OwnershipTracker
from app.validate.spec import SpecValidator

log = logging.getLogger(__name__)

ACCESS_FLAGS = {"read_write": cl.mem_flags.READ_WRITE, "write_only": cl.mem_flags.WRITE_ONLY,
                "read_only": cl.mem_flags.READ_ONLY}


Wrap = Callable[[str, Callable], Callable]  # instrument(): (piece, the callable) -> what replaces it


def instrument_attributes(targets: list[tuple[Any, str, str]], wrap: Wrap) -> Callable[[], None]:
    """Rebind each ``(obj, attribute, piece)`` to ``wrap(piece, obj.attribute)`` on the instance;
    returns the undo, which puts back exactly what was there (idempotent)."""
    saved = []
    for obj, attr, piece in targets:
        own = vars(obj)
        saved.append((obj, attr, attr in own, own.get(attr)))
        setattr(obj, attr, wrap(piece, getattr(obj, attr)))

    def undo() -> None:
        while saved:
            obj, attr, had, old = saved.pop()
            if had:
                setattr(obj, attr, old)
            else:
                vars(obj).pop(attr, None)

    return undo


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


def completed_event(context: cl.Context) -> cl.UserEvent:
    """An event that is already CL_COMPLETE: what a hand-over that enqueued nothing returns when the
    caller asks for its event (a user event: no command on any queue, no profiling info)."""
    event = cl.UserEvent(context)
    event.set_status(cl.command_execution_status.COMPLETE)
    return event


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared once on its class; sync modes and scenes read these."""

    zero_copy: bool  # GL and CL use the same memory: nothing is copied per frame
    gl_context: bool = False  # its CL context is created from the GL context (cl_khr_gl_event possible)
    semaphores: bool = False  # its memory comes with exported semaphores GL and CL both import
    buffer_textures: bool = False  # a texture may live in a buffer CL writes, drawn from a buffer texture


class SharingBackend(abc.ABC):
    """Base of every backend. Subclasses implement the ``_`` methods; the public ones validate,
    track ownership and count objects, with one signature for every backend."""

    name: ClassVar[str]
    title: ClassVar[str] = ""  # one line: what it is
    probe_order: ClassVar[int] = 50  # ``auto`` takes the available backend of the lowest order
    capabilities: ClassVar[Capabilities]
    teaching: ClassVar[Mapping[str, str]] = {}  # phase (acquire, compute, release, render) -> what it does
    hazard_effects: ClassVar[Mapping[str, str]] = {}  # hazard demonstration -> what the user sees here
    uploads_reach_cl: ClassVar[bool] = False  # ``upload`` writes the memory CL reads (no GL -> CL copy owed)
    rule_set: ClassVar[str] = "gl_sharing"  # the calls' error lists it is validated against (app/validate)
    # the driver counts acquisitions: an object acquired n times needs n releases (``hand_back``).
    # NVIDIA's driver 580 nests external memory's acquisitions; a driver not known otherwise is
    # assumed to (a release too many is an error the hand-back reports, a release too few can leave
    # the context's destruction hanging in the driver). glshare's own hand-overs (host_copy,
    # host_mapped) need one
    nests_acquisitions: ClassVar[bool] = True
    # its ``_enqueue_acquire`` / ``_enqueue_release`` take ``event=False``: the C API's NULL ``event``
    # argument where nothing will read the event (FrameScheduler: an untimed frame on an in-order
    # queue whose sync mode waits for CL on the CPU); they may return None then. False: never passed
    null_events: ClassVar[bool] = False
    registry: ClassVar[dict[str, type["SharingBackend"]]] = {}

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "name" in cls.__dict__:
            check_backend(cls)  # (a hook with another signature than the contract's fails here, at import)
            SharingBackend.registry[cls.name] = cls

    @property
    def zero_copy(self) -> bool:
        return self.capabilities.zero_copy

    def __init__(self, env: ProbeEnv, *, strict: bool | str = False) -> None:
        self.env = env
        self.device = env.choice.device
        self.context = self._create_context()
        live.created("cl_context", self.name)
        self._queue = ComputeQueue(self.context, self.device, f"{self.name} queue", owner=self.name)
        # the queue runs its commands in order: OpenCL 3.0.16, 5.14: "If the CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE
        # property of a command-queue is not set, the commands enqueued to a command-queue execute in
        # order". What the frame leaves out on such a queue (wait lists between its own commands, the
        # events of commands nothing else waits on) it names where the queue is not in order
        props = self._queue.queue.properties
        self.queue_in_order = not props & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.objects: list[SharedObject] = []
        self.objects_version = 0  # changes whenever ``objects`` does (what per-frame caches key on)
        # [spec] strict: "off" | "spec" | "all" (True = "all"); both checked against the backend's own rule set
        self.tracker = OwnershipTracker(strict=strict, family=self.rule_set)
        self.validator = SpecValidator(self.context, self._is_shared, rule_set=self.rule_set, events=event_info())
        self.bypass_validation = False  # the hazard lab turns it off to let a mistake through
        self._closed = False
        self.bytes_copied = 0
        self.copy_ns = 0  # host time inside the calls that moved those bytes (a copying backend's own)
        # told of every hand-back that made release calls: (calls, why); the session records them
        # (the report's counts.handed_back, the trace's instant events)
        self.on_hand_back: Callable[[int, str], None] | None = None
        self.handover = HandOver(self)  # validate -> enqueue -> track (app/sharing/handover.py)

    # -- to implement ---------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        """Available here, or why not: never calls an entry point the device does not list."""

    @abc.abstractmethod
    def _create_context(self) -> cl.Context: ...

    def _share_buffer(self, gl: GlBuffer, access: str) -> cl.MemoryObjectHolder:
        """The CL memory object for an existing GL buffer (backends whose memory GL allocates)."""
        raise SharingUnavailable(self.name, "an existing GL buffer cannot be shared: its storage must come from "
                                 "memory the backend imports (use create_buffer)")

    def _share_texture(self, gl: GlTexture, access: str) -> cl.MemoryObjectHolder:
        raise SharingUnavailable(self.name, "an existing GL texture cannot be shared: use create_texture")

    def _new_buffer(self, label: str, nbytes: int, access: str) -> SharedObject:
        """A new GL buffer and its CL memory object (default: GL allocates, ``_share_buffer`` shares)."""
        gl = GlBuffer(label, nbytes, owner=self.name)
        try:
            return self._wrap(gl, self._share_gl(self._share_buffer, gl, access), access)
        except BaseException:
            gl.release()
            raise

    def _new_texture(self, label: str, width: int, height: int, fmt: TexelFormat, access: str,
                     drawn_by_quad: bool) -> SharedObject:
        """A new GL texture and its CL memory object (default: a 2D texture shared as an image)."""
        gl = GlTexture(label, width, height, fmt=fmt, owner=self.name)
        try:
            obj = self._wrap(gl, self._share_gl(self._share_texture, gl, access), access)
        except BaseException:
            gl.release()
            raise
        obj.display_path = "2D texture"
        return obj

    @abc.abstractmethod
    def _enqueue_acquire(self, queue, objects: list[SharedObject], wait_for, event: bool = True) -> cl.Event | None:
        ...

    @abc.abstractmethod
    def _enqueue_release(self, queue, objects: list[SharedObject], wait_for, event: bool = True) -> cl.Event | None:
        ...

    def _upload(self, obj: SharedObject, data) -> None:
        obj.gl.upload(data)

    def _unshare(self, obj: SharedObject) -> None:
        obj.mem.release()
        if obj.handover is not None and obj.handover is not obj.mem:
            obj.handover.release()

    def gl_before_acquire(self, objects: list[SharedObject]) -> None:
        """GL's part of the hand-over before the acquire is ordered (a copy into the memory CL reads)."""
        return None

    def _copy_written_textures(self, objects: list[SharedObject], staging: dict | None = None) -> int:
        """GL's copy of each 2D texture it wrote (rendered into) since CL last saw it into the buffer
        whose texels CL reads (``storage``), for backends that keep texels in buffers; the bytes
        copied. Buffers, buffer textures and textures CL only writes need nothing.

        ``staging``: {id(obj): GlBuffer} of plain GL buffers to pack the texture into first and copy
        from buffer to buffer (where packing straight into the storage is not seen by CL in time:
        NVIDIA's imported memory); the caller owns and releases them."""
        copied = 0
        for obj in objects:
            if (obj.storage is None or not isinstance(obj.gl, GlTexture) or obj.access == "write_only"
                    or obj.synced_generation == obj.gl_generation):
                continue
            if staging is None:
                texture_to_pack_buffer(obj.gl, obj.storage.name, obj.row_pitch)
            else:
                nbytes = obj.pitch * obj.gl.height
                buf = staging.get(id(obj))
                if buf is None:
                    buf = staging[id(obj)] = GlBuffer(f"{obj.label}.pack", nbytes, target=GL_PIXEL_PACK_BUFFER,
                                                      usage=GL_STREAM_COPY, owner=self.name)
                texture_to_pack_buffer(obj.gl, buf.name, obj.row_pitch)
                copy_buffer(buf.name, obj.storage.name, nbytes)
            obj.synced_generation = obj.gl_generation
            copied += obj.nbytes
        return copied

    def gl_after_release(self, objects: list[SharedObject]) -> None:
        """GL's part of the hand-over after the release is ordered (a copy out of the memory CL wrote)."""
        return None

    def memory_tab(self) -> dict | None:
        """What the panel's Memory tab shows about this backend's memory, or None."""
        return None

    def _close_extra(self) -> None:
        return None

    # -- sync modes -----------------------------------------------------------------------------
    @classmethod
    def sync_refusal(cls, env: ProbeEnv, mode: str) -> str | None:
        """None when sync ``mode`` works with this backend here, else the reason (no backend built)."""
        modes = sync_modes()
        mode_cls = modes.get(mode)
        if mode_cls is None:
            return f"unknown sync mode {mode!r}; modes: {', '.join(modes)}"
        return mode_cls.refusal(cls, env)

    def sync_unavailable_reason(self, mode: str) -> str | None:
        return type(self).sync_refusal(self.env, mode)

    def make_sync(self, mode: str) -> SyncMode:
        reason = self.sync_unavailable_reason(mode)
        if reason:
            raise SharingUnavailable(f"sync {mode}", reason)
        return SyncMode.registry[mode](self)

    # -- public API -----------------------------------------------------------------------------
    @property
    def queue(self) -> cl.CommandQueue:
        return self._queue.queue

    def _is_shared(self, mem) -> bool:
        return any(o.mem is mem or o.mem == mem for o in self.objects)

    def _share_gl(self, share, gl, access: str) -> cl.MemoryObjectHolder:
        try:
            return share(gl, access)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{self.name}: sharing {gl.label}") from exc

    def _wrap(self, gl, mem, access: str, **fields) -> SharedObject:
        kind = "cl_image" if isinstance(mem, cl.Image) else "cl_buffer"
        return SharedObject(gl.label, gl, mem, access, self.name, live_kind=kind, **fields)

    def _adopt(self, obj: SharedObject) -> SharedObject:
        REGISTRY.created(obj.mem, self.context, label=obj.label)  # live for the validator until unshare()
        if obj.handover is not None:
            REGISTRY.created(obj.handover, self.context, label=f"{obj.label} (hand-over buffer)")
        live.created(obj.live_kind, self.name)
        self.objects.append(obj)
        self.objects_version += 1
        self.tracker.add(obj)
        return obj

    def share_buffer(self, gl: GlBuffer, access: str = "read_write") -> SharedObject:
        """Share an existing GL buffer (where the backend's memory is GL's own); the caller keeps ``gl``."""
        return self._adopt(self._wrap(gl, self._share_gl(self._share_buffer, gl, access), access))

    def share_texture(self, gl: GlTexture, access: str = "write_only") -> SharedObject:
        """Share an existing 2D texture as a CL image of the same texel format."""
        obj = self._adopt(self._wrap(gl, self._share_gl(self._share_texture, gl, access), access))
        obj.display_path = "2D texture"
        return obj

    def create_buffer(self, label: str, nbytes: int, *, access: str = "read_write", data=None) -> SharedObject:
        """A new GL buffer shared with CL (a backend may back it with imported memory)."""
        obj = self._adopt(self._new_buffer(label, nbytes, access))
        if data is not None:
            self.upload(obj, data)
        return obj

    def create_texture(self, label: str, width: int, height: int, *, fmt: TexelFormat = RGBA8,
                       access: str = "write_only", drawn_by_quad: bool = False) -> SharedObject:
        """A new GL texture shared with CL in the same texel format.

        ``drawn_by_quad``: GL only ever draws it with ``app.gl.quad.ImageQuad`` (never samples it
        otherwise), so a backend may keep it as a buffer texture over the memory CL writes.
        ``obj.display_path`` says what it got.
        """
        return self._adopt(self._new_texture(label, width, height, fmt, access, drawn_by_quad))

    def upload(self, obj: SharedObject, data) -> None:
        """GL writes ``data`` into the object (GL must own it); CL sees it after the next acquire."""
        self.tracker.gl_use([obj], "upload")
        self._upload(obj, data)
        obj.gl_wrote()
        if self.uploads_reach_cl:
            obj.synced_generation = obj.gl_generation

    def destroy(self, obj: SharedObject) -> None:
        """CL memory object first, then the GL object (cl_khr_gl_sharing's order). Idempotent."""
        self.unshare(obj)
        obj.gl.release()
        owned, obj.owned = obj.owned, []
        for extra in owned:
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
        if self.tracker.unreleased(obj):  # destroyed while CL holds it (a resize during the demonstration)
            try:
                self.hand_back(objects=[obj], why=f"{obj.label} unshared while CL held it")
            except GlshareError as exc:  # the CL object goes all the same; the driver said why
                log.warning("%s: handing back %s before unsharing it: %s", self.name, obj.label, exc.one_line())
        self.objects.remove(obj)
        self.objects_version += 1
        self.handover.forget()  # no list kept there pins the object any longer
        self.tracker.remove(obj)
        self._unshare(obj)
        live.released(obj.live_kind, self.name)

    def acquire(self, queue, objects, wait_for=None, *, event: bool = False, out: bool = True) -> cl.Event | None:
        """Enqueue the hand-over GL -> CL. Returns the acquire's event, or None when nothing was
        enqueued (0 objects; a copying backend with nothing to copy in and no wait list).

        ``event=True`` is the C API's non-NULL ``event`` argument, "an event object that identifies
        this command and can be used to query wait for this command to complete" (OpenCL 3.0.16, 5.5.15,
        clEnqueueAcquireGLObjects' own wording, "or" missing there; the release's has it): where
        the hand-over enqueued nothing it is complete already, and the event says so (a user event
        set to CL_COMPLETE: no command on the queue). The scheduler does not ask: it profiles every
        event it gets, and a user event has no profiling info.

        ``out=False``: the caller will not read the event (the C API's NULL ``event`` argument where
        the backend's calls take one, ``null_events``): None may come back."""
        ev = self.handover.hand_over("acquire", queue, objects, wait_for, out)
        if ev is None and event:
            return completed_event(self.context)
        return ev

    def release(self, queue, objects, wait_for=None, *, out: bool = True) -> cl.Event | None:
        """Enqueue the hand-over CL -> GL. Returns the release's event (None for 0 objects; ``out``
        as in ``acquire``)."""
        return self.handover.hand_over("release", queue, objects, wait_for, out)

    def steady_hand_over(self, queue, key: tuple) -> SteadyHandOver | None:
        """The frame's acquire and release in their steady case, or None (``HandOver.steady``)."""
        return self.handover.steady(queue, key)

    def hand_back(self, queue=None, objects=None, *, gl: bool = False, why: str = "a skipped release") -> int:
        """Release every shared object CL still holds (``HandOver.hand_back``); how many release calls."""
        return self.handover.hand_back(queue, objects, gl=gl, why=why)

    def native_hand_over(self, queue, objects: list, event: bool):
        """(the acquire's calls, the release's calls, the acquire's event out slot, the release's) that
        ``_enqueue_acquire`` and ``_enqueue_release`` make for ``objects`` on ``queue`` without a wait
        list (``event`` False: with the C API's NULL event, where ``null_events`` says the backend's
        calls take it), as prepared calls for a native call list (``app.native.calls.Call``); an out
        slot is None where that call makes no event. None where this backend's hand-over is made in
        Python (the default)."""
        return None

    def bare_acquire(self, queue, objects, wait_for=None) -> cl.Event | None:
        """The hand-over GL -> CL alone: what a user's loop would call by hand (no validation, no
        ownership tracking: the bench's bare loop)."""
        self.gl_before_acquire(objects)
        return self._enqueue_acquire(queue, list(objects), wait_for)

    def bare_release(self, queue, objects, wait_for=None) -> cl.Event | None:
        """The hand-over CL -> GL alone (see ``bare_acquire``); GL's part follows in ``gl_after_release``."""
        return self._enqueue_release(queue, list(objects), wait_for)

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

    def instrument(self, wrap: Wrap) -> Callable[[], None]:
        """Put ``wrap(piece, fn)`` in place of each per-frame piece of the hand-over until the
        returned undo is called: "validator" (both spec checks), "ownership tracker" (its four
        transitions), "acquire call" and "release call" (the backend's enqueue). ``wrap`` may return
        ``fn`` itself to leave a piece alone. Nothing is rebound, and nothing costs, otherwise.
        Meanwhile every check goes through the validator (``HandOver.hand_over``'s lookup is off)."""
        undo = instrument_attributes(
            [(self.validator, "check_python", "validator"), (self, "_enqueue_acquire", "acquire call"),
             (self, "_enqueue_release", "release call")]
            + [(self.tracker, m, "ownership tracker") for m in ("acquired", "released", "cl_use", "gl_use")], wrap)
        self.handover.remember = False

        def both() -> None:
            undo()
            self.handover.remember = True

        return both

    def close(self) -> None:
        """Idempotent: CL objects of every shared object, then the queue, then the context."""
        if self._closed:
            return
        self._closed = True
        self.handover.forget()
        try:  # nothing may stay acquired when the memory objects and the context go (hand_back)
            self.hand_back(why="the backend closed")
        except Exception as exc:  # noqa: BLE001 - closing goes on; the driver said why
            log.warning("%s: handing back before close: %s", self.name, exc)
        for obj in list(self.objects):
            self.unshare(obj)
        self._queue.release()
        self._close_extra()
        live.released("cl_context", self.name)
        self.context = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} on {self.device.name.strip()!r}>"
