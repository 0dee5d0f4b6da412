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
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Mapping

import pyopencl as cl

from app.cl.device import ComputeQueue, DeviceChoice
from app.diagnostics import live
from app.errors import ClError, GlshareError, SharingUnavailable
from app.gl.formats import RGBA8, TexelFormat
from app.gl.objects import GlBuffer, GlTexture
from app.gl.upload import GL_PIXEL_PACK_BUFFER, GL_STREAM_COPY, copy_buffer, texture_to_pack_buffer
from app.memo import keep
from app.sharing.sync import SyncMode, sync_modes
from app.validate.liveness import REGISTRY
from app.validate.ownership import OwnershipTracker
from app.validate.spec import EMPTY, SpecValidator

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


@dataclass(eq=False)
class SharedObject:
    """A GL object and the CL memory object kernels use for it, with the hand-over state."""

    label: str
    gl: Any  # GlBuffer, GlTexture or GlBufferTexture
    mem: cl.MemoryObjectHolder  # what kernels take
    access: str
    backend: str
    live_kind: str = "cl_buffer"  # its name in the live-object counters
    handover: cl.MemoryObjectHolder | None = None  # what acquire/release name, when not ``mem``
    storage: GlBuffer | None = None  # the GL buffer holding a texture's texels (imported memory)
    row_pitch: int = 0  # bytes per row when a texture's texels lie in a buffer
    display_path: str = ""  # how GL shows a texture ("2D texture", "buffer texture", "copy into texture: why")
    owned: list = field(default_factory=list)  # GL objects released after ``gl`` (memory objects, storage)
    gl_generation: int = 0  # bumped whenever GL writes the data
    synced_generation: int = -1  # the GL generation CL's copy holds (copying backends)

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

    @property
    def pitch(self) -> int:
        """Bytes from one row of a texture's texels to the next, as CL sees them."""
        return self.row_pitch or self.gl.width * self.gl.bytes_per_pixel

    @property
    def handover_mem(self) -> cl.MemoryObjectHolder:
        return self.mem if self.handover is None else self.handover

    @property
    def gl_memory(self) -> int:
        """The GL buffer or texture name that holds the data (what GL semaphore operations name)."""
        return self.storage.name if self.storage is not None else self.gl.name

    def gl_wrote(self) -> None:
        """GL changed the data (upload, GL pass): a copying backend must bring it to CL at acquire."""
        self.gl_generation += 1

    def __repr__(self) -> str:
        return f"<SharedObject {self.label!r} {self.kind} via {self.backend}>"


class SteadyHandOver:
    """The frame's two hand-over calls in their steady case (``SharingBackend.steady_hand_over``):
    each what ``SharingBackend._hand_over`` does for a call the validator accepted before (counted
    as checked, the backend's own enqueue, then the tracker's transition), on objects known to be
    GL's before the acquire and CL's, acquired on this queue, before the release."""

    __slots__ = ("backend", "queue", "generation", "objects", "states")

    def __init__(self, backend: "SharingBackend", queue, generation: int, objects: list, states: list) -> None:
        self.backend, self.queue, self.generation, self.objects, self.states = backend, queue, generation, objects, states

    def acquire(self, out: bool) -> cl.Event | None:
        event = self._enqueue(self.backend._enqueue_acquire, "acquire", out)
        self.backend.tracker.acquired_states(self.states, self.queue)
        return event

    def release(self, after, out: bool) -> cl.Event | None:
        """``after``: the kernel's event, which the in-order queue needs in no wait list."""
        event = self._enqueue(self.backend._enqueue_release, "release", out)
        self.backend.tracker.released_states(self.states)
        return event

    def acquired(self, error: BaseException | None = None) -> None:
        """The acquire made elsewhere (a native call list: app/schedule/executors.py): counted as
        checked, then its transition, or ``error`` (the driver's) raised as ``acquire`` raises it."""
        self._made("acquire", error)
        self.backend.tracker.acquired_states(self.states, self.queue)

    def released(self, error: BaseException | None = None) -> None:
        """The release made elsewhere, as ``acquired``."""
        self._made("release", error)
        self.backend.tracker.released_states(self.states)

    def handed_over(self) -> None:
        """The acquire and the release both made elsewhere, both gone through, nothing of glshare's
        between them: both counted as checked, both transitions in one (the objects GL's again)."""
        self.backend.validator.checked += 2
        self.backend.tracker.handed_over_states(self.states)

    def _made(self, call: str, error: BaseException | None) -> None:
        self.backend.validator.checked += 1
        if error is not None:
            raise ClError.from_pyopencl(error, f"{self.backend.name}.{call}") from error

    def _enqueue(self, enqueue, call: str, out: bool) -> cl.Event | None:
        be = self.backend
        be.validator.checked += 1
        try:
            if out or not be.null_events:
                return enqueue(self.queue, self.objects, None)
            return enqueue(self.queue, self.objects, None, event=False)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{be.name}.{call}") from exc


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
    # Measured on NVIDIA's external memory; assumed of a driver not measured (a release too many is
    # an error the hand-back reports, a release too few hung the H200). glshare's own hand-overs
    # (host_copy, host_mapped) need one
    nests_acquisitions: ClassVar[bool] = True
    # its ``_enqueue_acquire`` / ``_enqueue_release`` take ``event=False``: the C API's NULL ``event``
    # argument where nothing will read the event (FrameScheduler: an untimed frame on an in-order
    # queue whose sync mode waits for CL on the CPU); they may return None then. False: never passed
    null_events: ClassVar[bool] = False
    registry: ClassVar[dict[str, type["SharingBackend"]]] = {}

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "name" in cls.__dict__:
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
        # the queue runs its commands in order: OpenCL 3.0, 5.1: "If the CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE
        # property of a command-queue is not set, the commands enqueued to a command-queue execute in
        # order". What the frame leaves out on such a queue (wait lists between its own commands, the
        # events of commands nothing else waits on) it names where the queue is not in order
        props = self._queue.queue.properties
        self.queue_in_order = not props & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        self.objects: list[SharedObject] = []
        self.objects_version = 0  # changes whenever ``objects`` does (what per-frame caches key on)
        self._splits: dict[tuple, tuple] = {}  # _validated's lists of objects, split: (objects, mems, shared)
        # _hand_over's accepted calls without a wait list: (call, *ids) -> (queue, generation, shared, given)
        self._accepted: dict[tuple, tuple] = {}
        self._remember = True  # (off while instrumented: each check then goes through the validator)
        # the frame's steady hand-overs (``steady_hand_over``), per the scheduler's key of its objects
        self._steady: dict[tuple, SteadyHandOver] = {}
        # [spec] strict: "off" | "spec" | "all" (True = "all"); both checked against the backend's own rule set
        self.tracker = OwnershipTracker(strict=strict, family=self.rule_set)
        self.validator = SpecValidator(self.context, self._is_shared, rule_set=self.rule_set)
        self.bypass_validation = False  # the hazard lab turns it off to let a mistake through
        self._closed = False
        self.bytes_copied = 0
        self.copy_ns = 0  # host time inside the calls that moved those bytes (a copying backend's own)
        # told of every hand-back that made release calls: (calls, why); the session records them
        # (the report's counts.handed_back, the trace's instant events)
        self.on_hand_back: Callable[[int, str], None] | None = None

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
    def _enqueue_acquire(self, queue, objects: list[SharedObject], wait_for) -> cl.Event | None: ...

    @abc.abstractmethod
    def _enqueue_release(self, queue, objects: list[SharedObject], wait_for) -> cl.Event | None: ...

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
        self._splits.clear()  # no list kept there pins the object any longer
        self._accepted.clear()
        self._steady.clear()
        self.tracker.remove(obj)
        self._unshare(obj)
        live.released(obj.live_kind, self.name)

    def _validated(self, call: str, queue, objects, wait_for) -> tuple[list[SharedObject], str]:
        """Check the call against its rule set (on the CL memory objects, as the driver would see
        them); return the shared objects to hand over and the verdict (``spec.NOOP``: GL sharing's
        (0, NULL) does nothing; ``spec.EMPTY``: external memory's still enqueues a command)."""
        objects = list(objects or ())
        key = tuple(map(id, objects))
        split = self._splits.get(key)
        if split is None:  # the memory objects and the shared ones among them, kept per list of objects
            mems = [o.mem if isinstance(o, SharedObject) else o for o in objects]
            # (the list is held with its key: no id in it can be reused while it is kept)
            split = keep(self._splits, key, (objects, mems, [o for o in objects if isinstance(o, SharedObject)]))
        verdict = "CL_SUCCESS"
        if not self.bypass_validation:
            verdict = self.validator.check_python(call, queue, split[1], wait_for)
        return split[2], verdict

    def acquire(self, queue, objects, wait_for=None, *, event: bool = False, out: bool = True) -> cl.Event | None:
        """Enqueue the hand-over GL -> CL. Returns the acquire's event, or None when nothing was
        enqueued (0 objects; a copying backend with nothing to copy in and no wait list).

        ``event=True`` is the C API's non-NULL ``event`` argument, "an event object that identifies
        this command and can be used to query or wait for this command to complete" (5.5.15): where
        the hand-over enqueued nothing it is complete already, and the event says so (a user event
        set to CL_COMPLETE: no command on the queue). The scheduler does not ask: it profiles every
        event it gets, and a user event has no profiling info.

        ``out=False``: the caller will not read the event (the C API's NULL ``event`` argument where
        the backend's calls take one, ``null_events``): None may come back."""
        ev = self._hand_over("acquire", queue, objects, wait_for, out)
        if ev is None and event:
            return completed_event(self.context)
        return ev

    def release(self, queue, objects, wait_for=None, *, out: bool = True) -> cl.Event | None:
        """Enqueue the hand-over CL -> GL. Returns the release's event (None for 0 objects; ``out``
        as in ``acquire``)."""
        return self._hand_over("release", queue, objects, wait_for, out)

    def _hand_over(self, call: str, queue, objects, wait_for, out: bool = True) -> cl.Event | None:
        """Validate, enqueue (the backend's own way), then record the new owner.

        The frame's steady case, a call without a wait list that the validator accepted before on
        the same queue and objects while no CL object was released since (the registry's
        generation), is one lookup here (``_accepted``): its shared objects, and the validator's
        remembered verdict, counted as checked as ``SpecValidator.check_python`` counts one, without
        the two calls that find it there. Not while the validator is bypassed or instrumented."""
        key = hit = None
        if not wait_for and objects and self._remember and not self.bypass_validation:
            key = (call, *map(id, objects))
            hit = self._accepted.get(key)
        if hit is not None and hit[0] is queue and hit[1] == self.validator.registry.generation:
            self.validator.checked += 1
            objects = hit[2]
        else:
            given = objects
            objects, verdict = self._validated(call, queue, objects, wait_for)
            if key is not None and objects and verdict == "CL_SUCCESS":
                # (the caller's objects are held with it: no id in the key can be reused while it is kept)
                keep(self._accepted, key, (queue, self.validator.registry.generation, objects, tuple(given)))
            if not objects:
                if verdict != EMPTY:
                    return None  # GL sharing's (0, NULL): "the function does nothing"
                # external memory's (0, NULL) "will trivially succeed after its event dependencies are
                # satisfied and will update its completion event" (cl_khr_external_memory, 5.5.1.1): a
                # marker with the same wait list is that command. Not forwarded: NVIDIA 580 refuses the
                # empty call with CL_INVALID_VALUE (the H200's errors-nvidia.json, the driver column)
                try:
                    return cl.enqueue_marker(queue, wait_for=list(wait_for) if wait_for else None)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"{self.name}.{call} (no objects: a marker)") from exc
        enqueue = self._enqueue_acquire if call == "acquire" else self._enqueue_release
        waits = list(wait_for) if wait_for else None
        try:
            if out or not self.null_events:
                event = enqueue(queue, objects, waits)
            else:
                event = enqueue(queue, objects, waits, event=False)
        except cl.Error as exc:
            raise ClError.from_pyopencl(exc, f"{self.name}.{call}") from exc
        (self.tracker.acquired if call == "acquire" else self.tracker.released)(objects, queue)
        return event

    def steady_hand_over(self, queue, key: tuple) -> "SteadyHandOver | None":
        """The frame's acquire and release of the objects whose ids follow ``objects_version`` in
        ``key`` (the scheduler's key of its shared objects) in their steady case, or None: both calls
        accepted before on ``queue`` without a wait list, no CL object released since (the registry's
        generation), the validator neither bypassed nor instrumented (``_hand_over``'s lookup), and
        every object GL's with no acquisition outstanding, so neither transition can flag anything.
        ``SteadyHandOver`` then makes the two calls as ``_hand_over`` would, with nothing to look up."""
        if not self._remember or self.bypass_validation:
            return None
        generation = self.validator.registry.generation
        ho = self._steady.get(key)
        if ho is None or ho.queue is not queue or ho.generation != generation:
            ids = key[1:]
            acq, rel = self._accepted.get(("acquire", *ids)), self._accepted.get(("release", *ids))
            if acq is None or rel is None or acq[0] is not queue or rel[0] is not queue \
                    or acq[1] != generation or rel[1] != generation or acq[2] != rel[2]:
                return None  # (the general frame's hand-over puts them there once accepted)
            states = [self.tracker.states[id(o)] for o in acq[2] if id(o) in self.tracker.states]
            if len({id(o) for o in acq[2]}) != len(acq[2]):
                return None  # an object twice in one call: the transitions count it twice
            # (the objects are held with it, as in _accepted: no id in the key can be reused while it is kept)
            ho = keep(self._steady, key, SteadyHandOver(self, queue, generation, acq[2], states))
        return ho if self.tracker.gl_owns_all(ho.states) else None

    def hand_back(self, queue=None, objects=None, *, gl: bool = False, why: str = "a skipped release") -> int:
        """Release every shared object (of ``objects``, default all) that CL still holds, once for
        each acquire call no release call matched where the driver nests acquisitions
        (``nests_acquisitions``), else once; then wait for the queue. Returns how many release calls
        that took (0: nothing was held). ``gl``: GL's side of each release follows (a texture's copy
        from its buffer), for a picture that goes on.

        What a skipped release (the hazard demonstration, a stopped frame) leaves behind. The
        acquire/release text (../shared/spec/gl-acquire-release.txt) defines no nesting, and
        cl_khr_external_memory leaves it to the implementation ("Acquiring a memory object multiple
        times without releasing it results in implementation-defined behavior", 5.5.1.1). NVIDIA's
        driver (580, H200) nests them, and destroying the context while its imported memory is still
        acquired hangs there (bench/probes/gpu_hazard_demos_probe.py). The releases bypass the
        validator and the tracker's findings: they repair the demonstration's state, they are not
        the program's hand-over. Each call that reached the driver is counted at once
        (``OwnershipTracker.handed_back``), so a failed call leaves no release to repeat; the calls
        made are told to ``on_hand_back`` with ``why``, a failure's too."""
        queue = queue if queue is not None else self.queue
        tracker, calls, released = self.tracker, 0, []
        pool = list(self.objects if objects is None else objects)
        try:
            while True:
                held = [o for o in pool if tracker.unreleased(o)]
                if not held:
                    break
                try:
                    self._enqueue_release(queue, held, None)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"{self.name}.release (handing back)") from exc
                calls += 1
                released.extend(o for o in held if o not in released)
                tracker.handed_back(held, all_of_them=not self.nests_acquisitions)
        finally:
            if calls and self.on_hand_back is not None:
                self.on_hand_back(calls, why)
        if calls:
            queue.finish()
            if gl:
                self.gl_after_release(released)
            log.info("%s: handed back %d unmatched acquisition(s) (%s)", self.name, calls, why)
        return calls

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
        Meanwhile every check goes through the validator (``_hand_over``'s lookup is off)."""
        undo = instrument_attributes(
            [(self.validator, "check_python", "validator"), (self, "_enqueue_acquire", "acquire call"),
             (self, "_enqueue_release", "release call")]
            + [(self.tracker, m, "ownership tracker") for m in ("acquired", "released", "cl_use", "gl_use")], wrap)
        self._remember = False

        def both() -> None:
            undo()
            self._remember = True

        return both

    def close(self) -> None:
        """Idempotent: CL objects of every shared object, then the queue, then the context."""
        if self._closed:
            return
        self._closed = True
        self._splits.clear()
        self._accepted.clear()
        self._steady.clear()
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
