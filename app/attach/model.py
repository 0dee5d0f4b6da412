"""An attached program's calls fed to glshare's own checks: the validator of every acquire and
release (``app/validate/spec.py``, each family's error list) and the ownership tracker
(``app/validate/ownership.py``), the same ones glshare's scenes use.

The records name handles (``wire``); the checks ask for objects. Each handle the records show
becomes one object here (a context, a queue, a memory object, an event) that lives as long as the
program's handle: the validator's liveness registry (``app/validate/liveness.py``) gets one per
process, fed by the records (a memory object is live from its creation record to its
``clReleaseMemObject``). ``RecordedValidator`` is the scenes' ``SpecValidator`` told to accept these
objects instead of pyopencl's wrappers (its ``*_types``): the rules and their order are the same.

What the records cannot tell is assumed, and said (``ProcessModel.assumed``): a memory object no
creation record names (one made by a call the layer does not record, or before it was loaded) is
live and not shared (the GL-sharing creations are all recorded, so it is not made from GL); an event no call
returned is of the calling queue's context, its status unknown. A memory object holds the
program's references: one from its creation, one more per recorded ``clRetainMemObject``; the
``clReleaseMemObject`` that takes the last one ends it (one never seen created holds one). Where an
acquire's event is written is recorded as far as the alias rule (``event_aliases_wait_list``) asks:
the wait-list slot it points at (``event_in_wait``), or elsewhere. Semaphore waits and
signals go to glshare's semaphore validator (``app/validate/semaphores.py``) with its binary-state
rules: a semaphore made with clCreateSemaphoreWithPropertiesKHR is live until the process ends
(clReleaseSemaphoreKHR is not recorded), one no creation record names is live and its state not
followed, and one shared with another API (imported, or exportable) is checked against the error
list but its state is not followed (the other API's operations are not recorded). A finding that rests
on an assumption is recorded but never turned into a strict verdict: the driver answers those.

Feeding is in the order the records arrive on the pipe, which is the order the program made its
calls on each thread (a record is written before the call, its ``ret`` after); calls of several
threads interleave as their records did.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

from app.attach import wire
from app.errors import SpecViolation, ValidationError
from app.validate.findings import SPEC
from app.validate.liveness import ObjectRegistry
from app.validate.ownership import OwnershipTracker
from app.validate.semaphores import ENTRY_POINTS as SEMAPHORE_ENTRY_POINTS
from app.validate.semaphores import SemaphoreValidator
from app.validate.spec import NULL, SpecValidator, WaitListElement

CL_GL_CONTEXT_KHR = 0x2008  # cl_gl.h (OpenCL 3.0 appendix, cl_khr_gl_sharing): a context property
CL_EXTERNAL_MEMORY_HANDLE_TYPES = range(0x2060, 0x2070)  # cl_khr_external_memory: CL_EXTERNAL_MEMORY_HANDLE_*_KHR (OPAQUE_FD 0x2060 ...)
GL_KINDS = {"clCreateFromGLBuffer": "buffer", "clCreateFromGLTexture": "texture",
            "clCreateFromGLTexture2D": "texture", "clCreateFromGLTexture3D": "texture",
            "clCreateFromGLRenderbuffer": "renderbuffer"}
HAND_OVERS = {"clEnqueueAcquireGLObjects": ("gl_sharing", "acquire"),
              "clEnqueueReleaseGLObjects": ("gl_sharing", "release"),
              "clEnqueueAcquireExternalMemObjectsKHR": ("external_memory", "acquire"),
              "clEnqueueReleaseExternalMemObjectsKHR": ("external_memory", "release")}
SEMAPHORE_CALLS = {fn: op for op, fn in SEMAPHORE_ENTRY_POINTS.items()}  # entry point -> "wait" / "signal"
# cl_semaphore_properties_khr (cl_ext.h, cl_khr_semaphore / cl_khr_external_semaphore)
CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR = 0x203D, 1
CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR = 0x203F
CL_SEMAPHORE_HANDLE_TYPES = range(0x2055, 0x205A)  # OPAQUE_FD, OPAQUE_WIN32(_KMT), SYNC_FD, D3D12_FENCE: imported
UNSEEN_SEMAPHORE = "a semaphore no creation record named is taken as live, its binary state unknown"
KERNELS = ("clEnqueueNDRangeKernel", "clEnqueueTask")
COPIES = ("clEnqueueReadBuffer", "clEnqueueWriteBuffer", "clEnqueueCopyBuffer", "clEnqueueFillBuffer",
          "clEnqueueMapBuffer", "clEnqueueReadImage", "clEnqueueWriteImage", "clEnqueueCopyImage",
          "clEnqueueFillImage", "clEnqueueMapImage", "clEnqueueUnmapMemObject", "clEnqueueCopyBufferToImage",
          "clEnqueueCopyImageToBuffer", "clEnqueueReadBufferRect", "clEnqueueWriteBufferRect",
          "clEnqueueCopyBufferRect")
CPU_WAITS = ("clFinish", "clWaitForEvents", "glFinish", "glClientWaitSync")
SWAPS = ("glXSwapBuffers", "eglSwapBuffers")
GL_DRAWS = ("glDraw", "glMultiDraw")  # prefixes: glDrawArrays, glDrawElementsBaseVertex, ... every draw
GL_UPLOADS = ("glBufferData", "glBufferSubData", "glTexImage2D", "glTexSubImage2D", "glMapBuffer",
              "glMapBufferRange", "glUnmapBuffer", "glTexImage3D", "glTexSubImage3D")
ELSEWHERE = "event"  # an event pointer outside the wait list (any value but NULL and a WaitListElement)
KEEP_HANDLES = 65_536  # events and released memory objects remembered per process
KEEP_NOTES = 100  # the libraries' notes and the reader's remarks kept per process
KEEP_FINDINGS = 10_000  # findings kept in full per process (every one is counted)
KEEP_CALLS = 100_000  # calls kept per process for the timeline and the trace (a long run keeps its last ones)
UNSEEN_MEM = "a memory object no creation record named is taken as live and not shared"
GL_DELETES = {"glDeleteBuffers": "buffer", "glDeleteTextures": "texture", "glDeleteRenderbuffers": "renderbuffer"}


def _keep(table: collections.OrderedDict, key, value) -> None:
    """``table[key] = value`` as its newest entry, the oldest dropped beyond KEEP_HANDLES."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > KEEP_HANDLES:
        table.popitem(last=False)


def _py_site(where: dict) -> str:
    """A Python site as findings name it, "file:line (func)", from a "site" record or a call's "py"."""
    func = f" ({where['func']})" if where.get("func") else ""
    return f"{where.get('file', '?')}:{where.get('line', '?')}{func}"


def event_out(rec: dict):
    """Where the call writes its event, as the validators take it (``app/validate/spec.py``): NULL, the
    wait-list slot ``event_in_wait`` points at, or elsewhere (the layer records the slot only where
    the pointer is into the wait list)."""
    if not rec.get("event_out"):
        return NULL
    slot = rec.get("event_in_wait")
    return WaitListElement(slot) if isinstance(slot, int) else ELSEWHERE


def gl_use(fn: str) -> str:
    """"draw" or "upload" for a GL call that uses the buffers and textures its record names, else ""."""
    if fn.startswith(GL_DRAWS):
        return "draw"
    return "upload" if fn in GL_UPLOADS else ""


# the extension an entry point belongs to (OpenCL 3.0 Extension spec: cl_khr_gl_sharing 9.5,
# cl_khr_gl_event, cl_khr_external_memory, cl_khr_semaphore); one of wire.SHARING_EXTENSIONS
NEEDS_EXTENSION = {**{fn: "cl_khr_gl_sharing" for fn in (*GL_KINDS, "clEnqueueAcquireGLObjects",
                                                          "clEnqueueReleaseGLObjects")},
                   "clCreateEventFromGLsyncKHR": "cl_khr_gl_event",
                   "clEnqueueAcquireExternalMemObjectsKHR": "cl_khr_external_memory",
                   "clEnqueueReleaseExternalMemObjectsKHR": "cl_khr_external_memory",
                   "clCreateSemaphoreWithPropertiesKHR": "cl_khr_semaphore",
                   "clEnqueueWaitSemaphoresKHR": "cl_khr_semaphore",
                   "clEnqueueSignalSemaphoresKHR": "cl_khr_semaphore"}


@dataclass(eq=False)
class Context:
    int_ptr: int
    gl_context: int = 0  # CL_GL_CONTEXT_KHR's value; 0: not created from GL
    devices: tuple[int, ...] = ()
    devices_info: tuple[dict, ...] = ()  # the ret record's (wire): name, platform, the extensions listed

    @property
    def from_gl(self) -> bool:
        return bool(self.gl_context)


NOT_FROM_GL = Context(0)  # the sharing context of a validator whose queue's context has no GL context


@dataclass(eq=False)
class Queue:
    int_ptr: int
    context: Context
    device: int = 0
    profiling_by_layer: bool = False


@dataclass(eq=False)
class Mem:
    int_ptr: int
    context: Context | None
    label: str
    gl_kind: str = ""  # "buffer", "texture", "renderbuffer": made from a GL object of that kind
    gl_name: int = 0
    external: bool = False  # imported (cl_khr_external_memory)
    seen: bool = True  # False: no creation record named it (assumed live, not shared)
    refs: int = 1  # the program's references: its creation's and its recorded retains, less its releases


@dataclass(eq=False)
class Semaphore:
    int_ptr: int
    context: Context | None
    label: str
    shared: bool = False  # imported, or made to be exported: another API signals and waits on it unseen
    seen: bool = True  # False: no creation record named it (assumed live)

    def __str__(self) -> str:
        return self.label


@dataclass(eq=False)
class Event:
    int_ptr: int
    queue: Queue | None = None


class RecordedValidator(SpecValidator):
    """The scenes' validator, on the objects the records name (module docstring)."""

    queue_types = (Queue,)
    mem_types = (Mem,)
    event_types = (Event,)


class RecordedSemaphoreValidator(SemaphoreValidator):
    """glshare's semaphore validator (``app/validate/semaphores.py``) on the objects the records name:
    the same rules in the same order; a context's devices are those its creation record named."""

    queue_types = (Queue,)

    def __init__(self, model: "ProcessModel") -> None:
        super().__init__(NOT_FROM_GL, model.registry, events=model._event_facts)
        self.model = model

    def _context_has_device(self, ctx: int, queue: Queue) -> bool:
        context = self.model.contexts.get(ctx)
        return context is None or not context.devices or queue.device in context.devices


@dataclass
class Call:
    """One recorded call and what followed it: its ``ret`` and its command's ``stamps``."""

    rec: dict
    frame: int
    site: str = ""
    ret: dict | None = None
    stamps: dict | None = None
    verdict: int | None = None  # the strict answer sent (None: not asked)
    checked: str = ""  # the validator's result ("CL_SUCCESS", "CL_SUCCESS_NOOP", a rule id)
    objects: list = field(default_factory=list)  # the shared objects (Mem) it names, as they were then

    @property
    def fn(self) -> str:
        return self.rec.get("fn", "?")

    @property
    def id(self) -> int:
        return self.rec["id"]

    @property
    def src(self) -> str:
        return self.rec["src"]

    @property
    def tid(self) -> int:
        return self.rec.get("tid", 0)

    @property
    def t(self) -> int:
        return self.rec["t"]

    @property
    def t_end(self) -> int | None:
        return self.ret["t"] if self.ret is not None else None

    @property
    def status(self) -> int | None:
        """What the program saw: the driver's status (or the strict verdict); None for GL calls and
        for a call that has not returned."""
        if self.ret is None:
            return None
        return self.ret.get("verdict", self.ret.get("status"))


@dataclass
class Finding:
    """One finding with the program's call it was found in."""

    case: str  # a validator rule, a tracker case, or a race case
    kind: str  # "spec" or "advice"
    source: str  # "validator", "ownership", "races"
    pid: int
    frame: int
    fn: str = ""
    call_id: int | None = None
    tid: int = 0
    site: str = ""
    object: str = ""
    code: int | None = None
    code_name: str = ""
    spec: str = ""
    section: str = ""
    detail: str = ""
    assumed: bool = False  # rests on something the records could not tell
    driver_status: int | None = None
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "extra"}
        out.update(self.extra)
        return out


class _EventFacts:
    """The validator's questions about events (``app/validate/spec.py``'s EventFacts), from the records."""

    def __init__(self, model: "ProcessModel") -> None:
        self.model = model
        self.assumed_context = 0  # the calling queue's context: an event no call returned

    def context(self, event_ptr: int) -> int | None:
        ev = self.model.events.get(event_ptr)
        if ev is not None and ev.queue is not None:
            return ev.queue.context.int_ptr
        self.model.assume("an event no recorded call returned is taken as one of the calling queue's context")
        return self.assumed_context

    def status(self, event_ptr: int) -> int | None:
        return self.model.event_status.get(event_ptr)


class ProcessModel:
    """One process's record stream, fed record by record (``feed``), checked as it comes."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.frame = 0  # swaps seen so far
        # the last KEEP_CALLS calls (the timeline's and the trace's); counts and findings cover them all
        self.swaps: collections.deque[Call] = collections.deque(maxlen=KEEP_CALLS)
        self.calls: collections.deque[Call] = collections.deque(maxlen=KEEP_CALLS)
        self.calls_seen = 0
        self.sources: set[str] = set()  # the writers whose calls came ("cl", "gl")
        self._counts: dict[str, int] = {}
        self.by_id: dict[tuple[str, int], Call] = {}
        self.contexts: dict[int, Context] = {}
        self.queues: dict[int, Queue] = {}
        self.mems: dict[int, Mem] = {}
        # the newest KEEP_HANDLES of each: a handle older than that reads as one never seen (assumed)
        self.released_mems: collections.OrderedDict[int, Mem] = collections.OrderedDict()
        self.events: collections.OrderedDict[int, Event] = collections.OrderedDict()
        self.event_status: collections.OrderedDict[int, int] = collections.OrderedDict()
        self.registry = ObjectRegistry()
        self.trackers = {f: OwnershipTracker("off", f) for f in ("gl_sharing", "external_memory")}
        self._validators: dict[tuple[str, int], RecordedValidator] = {}
        self._event_facts = _EventFacts(self)
        self.semaphores: dict[int, Semaphore] = {}
        self.semaphore_validator = RecordedSemaphoreValidator(self)
        self._sites: dict[int, str] = {}  # tid -> the Python site of its next call
        self.findings: list[Finding] = []  # the first KEEP_FINDINGS, in order
        self.finding_counts: dict[str, int] = {}  # case -> how many, over the whole run
        self._last_validator: Finding | None = None  # the newest validator finding (the strict answer's)
        self.hellos: dict[str, dict] = {}
        self.clocks: list[dict] = []
        self.notes: list[str] = []
        self.notes_total = 0
        self.assumed: dict[str, int] = {}
        self.checked = 0
        self._assuming = False
        self._labels: dict[str, int] = {}  # label -> objects given it so far

    # -- bookkeeping -------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        """A remark for the report, the first KEEP_NOTES of them (the rest counted)."""
        self.notes_total += 1
        if len(self.notes) < KEEP_NOTES:
            self.notes.append(text)

    def assume(self, what: str) -> None:
        self.assumed[what] = self.assumed.get(what, 0) + 1
        self._assuming = True

    def feed(self, rec: dict) -> dict | None:
        """Take one record; returns the strict answer (``{"id", "status"}``) where the record asks for one."""
        kind = rec["k"]
        if kind == "call":
            return self._call(rec)
        if kind == "ret":
            call = self.by_id.get((rec["src"], rec["id"]))
            if call is None:
                self.note(f"a ret record for call {rec['src']} {rec['id']} that was never seen")
                return None
            call.ret = rec
            self._returned(call)
        elif kind == "stamps":
            call = self.by_id.get((rec["src"], rec["id"]))
            if call is not None:
                call.stamps = rec
                if "error" in rec and isinstance(rec.get("status"), int) and call.ret and call.ret.get("event"):
                    _keep(self.event_status, wire.handle(call.ret["event"]), rec["status"])
        elif kind == "site":
            self._sites[rec.get("tid", 0)] = _py_site(rec)
        elif kind == "clock":
            self.clocks.append(rec)
        elif kind == "hello":
            self.hellos[rec["src"]] = rec
        elif kind == "note":
            self.note(f"{rec['src']}: {rec.get('text', '')}")
        return None

    def _call(self, rec: dict) -> dict | None:
        tid = rec.get("tid", 0)
        # a Python call's site names its entry point; the kernel arguments pyopencl sets first share it
        own = self._sites.get(tid, "") if rec.get("fn") == "clSetKernelArg" else self._sites.pop(tid, "")
        # the libraries' own reading of the Python frame (a call made holding the GIL) comes first
        site = (_py_site(rec["py"]) if isinstance(rec.get("py"), dict) else "") or own or rec.get("site", "")
        call = Call(rec, self.frame, site)
        if len(self.calls) == KEEP_CALLS:
            old = self.calls[0]
            self.by_id.pop((old.src, old.id), None)  # its ret and stamps, if they still come, are dropped
        self.calls.append(call)
        self.calls_seen += 1
        self.by_id[(rec["src"], rec["id"])] = call
        fn = call.fn
        self.sources.add(call.src)
        self._counts[fn] = self._counts.get(fn, 0) + 1
        for tracker in self.trackers.values():
            tracker.frame = self.frame
        if fn in HAND_OVERS:
            self._check_hand_over(call)
        elif fn in SEMAPHORE_CALLS:
            self._check_semaphores(call)
        elif fn in KERNELS or fn in COPIES:
            self._cl_use(call, "kernel" if fn in KERNELS else "copy")
        elif gl_use(fn):
            self._gl_use(call, gl_use(fn))
        elif fn in GL_DELETES:
            self._gl_delete(call)
        elif fn == "clReleaseMemObject":
            self._release_mem(call)
        elif fn == "clRetainMemObject":
            mem = self.mem(call.rec.get("mem"))
            if mem is not None:  # (counted at the call: a retain that fails is said by its ret, below)
                mem.refs += 1
        elif fn in SWAPS:
            self.swaps.append(call)
            self.frame += 1
        if rec.get("verdict"):
            call.verdict = self._verdict(call)
            return {"id": call.id, "status": call.verdict}
        return None

    def _returned(self, call: Call) -> None:
        fn, ret = call.fn, call.ret
        if (fn in HAND_OVERS or fn in SEMAPHORE_CALLS) and "status" in ret and not ret.get("verdict"):  # the driver's answer
            f = self._last_validator
            if f is not None and f.call_id == call.id:
                f.driver_status = ret["status"]
        if ret.get("event"):
            queue = self.queues.get(wire.handle(call.rec.get("queue")))
            ptr = wire.handle(ret["event"])
            if ptr:
                _keep(self.events, ptr, Event(ptr, queue))
        if fn == "clRetainMemObject" and call.status not in (0, None):
            mem = self.mems.get(wire.handle(call.rec.get("mem")))
            if mem is not None:
                mem.refs -= 1  # refused: no reference taken
        if fn in SEMAPHORE_CALLS and call.status not in (0, None) and call.checked == "CL_SUCCESS":
            # refused by the driver (or the strict verdict): no semaphore changed state
            self.semaphore_validator.undo(SEMAPHORE_CALLS[fn], self._semaphores_of(call))
        new = wire.handle(ret.get("handle"))
        if not new or ret.get("status", 0) != 0:
            if fn in HAND_OVERS and call.status == 0:
                self._hand_over_done(call)
            return
        if fn == "clCreateSemaphoreWithPropertiesKHR":
            self._new_semaphore(new, call)
            return
        if fn in ("clCreateContext", "clCreateContextFromType"):
            gl = next((v for k, v in call.rec.get("props") or () if k == CL_GL_CONTEXT_KHR), 0)
            info = tuple(d for d in ret.get("devices_info") or () if isinstance(d, dict))
            devices = tuple(wire.handle(d) for d in call.rec.get("devices") or ()) or \
                tuple(wire.handle(d.get("device")) for d in info)
            self.contexts[new] = Context(new, int(gl or 0), devices, info)
        elif fn in ("clCreateCommandQueue", "clCreateCommandQueueWithProperties"):
            ctx = self._context(call.rec.get("context"))
            self.queues[new] = Queue(new, ctx, wire.handle(call.rec.get("device")), bool(call.rec.get("profiling")))
        elif fn in GL_KINDS:
            kind, name = GL_KINDS[fn], int(call.rec.get("gl_object") or 0)
            self._new_mem(new, call, f"GL {kind} {name}", gl_kind=kind, gl_name=name)
        elif fn in ("clCreateBuffer", "clCreateImage", "clCreateImage2D", "clCreateImage3D", "clCreateSubBuffer"):
            self._new_mem(new, call, f"cl mem {new:#x}")
        elif fn in ("clCreateBufferWithProperties", "clCreateImageWithProperties"):
            props = call.rec.get("props") or ()
            external = any(k in CL_EXTERNAL_MEMORY_HANDLE_TYPES for k, _v in props)
            what = "imported buffer" if fn == "clCreateBufferWithProperties" else "imported image"
            self._new_mem(new, call, f"{what} {new:#x}" if external else f"cl mem {new:#x}", external=external)

    def _context(self, text) -> Context:
        ptr = wire.handle(text)
        ctx = self.contexts.get(ptr)
        if ctx is None:
            self.assume("a context no recorded call created is taken as not created from GL")
            ctx = self.contexts[ptr] = Context(ptr)
        return ctx

    def _new_mem(self, ptr: int, call: Call, label: str, **kw) -> Mem:
        ctx = self._context(call.rec.get("context"))
        self.released_mems.pop(ptr, None)
        self._labels[label] = n = self._labels.get(label, 0) + 1
        if n > 1:  # a second object from the same GL name (another context, or after a release)
            label = f"{label} #{n}"
        mem = self.mems[ptr] = Mem(ptr, ctx, label, **kw)
        self.registry.created(mem, ctx, label=label)
        family = "gl_sharing" if mem.gl_kind else "external_memory" if mem.external else ""
        if family:
            self.trackers[family].add(mem)
        return mem

    def mem(self, text) -> Mem | None:
        """The object a handle names now: a live one, a released one, or one never seen (assumed live)."""
        ptr = wire.handle(text)
        if not ptr:
            return None
        found = self.mems.get(ptr) or self.released_mems.get(ptr)
        if found is None:
            self.assume(UNSEEN_MEM)
            found = self.mems[ptr] = Mem(ptr, None, f"cl mem {ptr:#x}", seen=False)
            self.registry.handed(found, None, label=found.label)
        elif not found.seen:
            self.assume(UNSEEN_MEM)
        return found

    # -- the checks --------------------------------------------------------------------------------
    def validator(self, family: str, queue: Queue) -> RecordedValidator:
        ctx = queue.context if family != "gl_sharing" or queue.context.from_gl else NOT_FROM_GL
        key = (family, id(ctx))
        v = self._validators.get(key)
        if v is None:
            shared = (lambda m: bool(m.gl_kind)) if family == "gl_sharing" else \
                (lambda m, c=ctx: m.external and m.context is c)
            v = self._validators[key] = RecordedValidator(ctx, shared, family, self.registry, events=self._event_facts)
        return v

    def _check_hand_over(self, call: Call) -> None:
        family, which = HAND_OVERS[call.fn]
        self._check_call(call, which, "mems", self.mem,
                         lambda q: self.validator(family, q if q is not None else Queue(0, NOT_FROM_GL)))

    def _check_call(self, call: Call, which: str, key: str, object_of, validator_of) -> None:
        """One recorded call against its error list (and the rules its validator follows), as glshare's
        own frames are checked: its objects (``key``: the record's list, made glshare objects by
        ``object_of``), its wait list and its event, on the validator ``validator_of(queue)``."""
        rec = call.rec
        qptr = wire.handle(rec.get("queue"))
        queue = self.queues.get(qptr)
        if queue is None and qptr:
            self.note(f"{call.fn} (call {call.id}) on a queue no recorded call created: not checked")
            return
        self._assuming = False
        items = rec.get(key)
        objs = NULL if items is None else [object_of(x) for x in items]
        wait = rec.get("wait")
        events = NULL if wait is None else [self._event(e) for e in wait]
        if queue is not None:
            self._event_facts.assumed_context = queue.context.int_ptr
        v = validator_of(queue)
        self.checked += 1
        try:
            call.checked = v.check(which, queue, int(rec.get("num") or 0), objs, int(rec.get("num_wait") or 0), events,
                                   event_out(rec))
        except (ValidationError, SpecViolation) as exc:
            call.checked = exc.rule
            self._validator_finding(call, exc)

    def _new_semaphore(self, ptr: int, call: Call) -> None:
        """A semaphore made: registered live in its context; its binary state followed from here
        (unsignalled, as cl_khr_semaphore makes it) where the records see every signal and wait on
        it: a binary one neither imported nor exportable (another API's operations on a shared
        payload are not recorded). Its props are read as pairs up to the first zero name: a nested
        list (export handle types, devices) ends them, after its key was seen."""
        props = call.rec.get("props") or ()
        keys = {k for k, _v in props}
        shared = CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR in keys or any(k in CL_SEMAPHORE_HANDLE_TYPES for k in keys)
        binary = all(v == CL_SEMAPHORE_TYPE_BINARY_KHR for k, v in props if k == CL_SEMAPHORE_TYPE_KHR)
        ctx = self._context(call.rec.get("context"))
        sem = self.semaphores[ptr] = Semaphore(ptr, ctx, f"semaphore {ptr:#x}", shared=shared)
        self.registry.created(sem, ctx, label=sem.label, kind="semaphore")
        if binary and not shared:
            self.semaphore_validator.track(sem)
        else:
            self.assume("a semaphore shared with another API (imported or exportable): its binary state is "
                        "not followed, the other API's signals and waits are not recorded")

    def semaphore(self, text) -> Semaphore | None:
        """The semaphore a handle names: one made, or one never seen (assumed live, not followed)."""
        ptr = wire.handle(text)
        if not ptr:
            return None
        found = self.semaphores.get(ptr)
        if found is None:
            found = self.semaphores[ptr] = Semaphore(ptr, None, f"semaphore {ptr:#x}", seen=False)
            self.registry.handed(found, None, label=found.label, kind="semaphore")
        if not found.seen:
            self.assume(UNSEEN_SEMAPHORE)
        return found

    def _semaphores_of(self, call: Call) -> list:
        sems = call.rec.get("semaphores")
        return [] if sems is None else [self.semaphore(x) for x in sems[:int(call.rec.get("num") or 0)]]

    def _check_semaphores(self, call: Call) -> None:
        """clEnqueueWait/SignalSemaphoresKHR against its error list and the binary-state rules
        (signal twice without a wait, wait without a signal), as glshare's own frames are checked."""
        self._check_call(call, SEMAPHORE_CALLS[call.fn], "semaphores", self.semaphore,
                         lambda q: self.semaphore_validator)

    def _event(self, text) -> Event | None:
        ptr = wire.handle(text)
        if not ptr:
            return None
        return self.events.get(ptr) or Event(ptr)

    def found(self, f: Finding) -> None:
        """Record a finding: counted always, kept while fewer than KEEP_FINDINGS are."""
        self.finding_counts[f.case] = self.finding_counts.get(f.case, 0) + 1
        if len(self.findings) < KEEP_FINDINGS:
            self.findings.append(f)

    def _validator_finding(self, call: Call, exc) -> None:
        code = getattr(exc, "code", None)
        self._last_validator = f = Finding(
            exc.rule, SPEC, "validator", self.pid, call.frame, call.fn, call.id, call.tid, call.site,
            code=code, code_name=getattr(exc, "name", ""), spec=exc.quote, section=exc.section,
            detail=exc.one_line(), assumed=self._assuming)
        self.found(f)

    def _verdict(self, call: Call) -> int:
        """The strict answer: the code of the call's listed error where the validator found one on
        recorded facts alone; 0 (the driver decides) otherwise."""
        last = self._last_validator
        if last is None or last.call_id != call.id:
            return 0
        if last.code is None or last.assumed:
            return 0
        return int(last.code)

    def _hand_over_done(self, call: Call) -> None:
        """The driver (or the strict verdict) let the hand-over through: ownership changes."""
        family, which = HAND_OVERS[call.fn]
        queue = self.queues.get(wire.handle(call.rec.get("queue")))
        objs = [m for m in (self.mem(p) for p in call.rec.get("mems") or ()) if m is not None]
        call.objects = [m for m in objs if m.gl_kind or m.external]
        tracker = self.trackers[family]
        tracker.frame = call.frame
        (tracker.acquired if which == "acquire" else tracker.released)(objs, queue)
        self._harvest(tracker, call)

    def _harvest(self, tracker: OwnershipTracker, call: Call) -> None:
        for flag in tracker.flags:
            self.found(Finding(
                flag.case, flag.kind, "ownership", self.pid, flag.frame, call.fn, call.id, call.tid, call.site,
                object=flag.label, spec=flag.spec, section=flag.source.where if flag.source else "",
                detail=flag.reasoning))
        tracker.flags.clear()

    def _cl_use(self, call: Call, where: str) -> None:
        objs = [m for m in (self.mem(p) for p in call.rec.get("mems") or ()) if m is not None]
        call.objects = [m for m in objs if m.gl_kind or m.external]
        for tracker in self.trackers.values():
            tracker.cl_use(objs, where)
            self._harvest(tracker, call)

    def gl_objects(self, call: Call, names: dict[str, list[int]]) -> list[Mem]:
        """The live memory objects made from the GL objects ``names`` ({kind: [names]}) of the call's
        GL context (any context where the record or the CL context does not say which)."""
        ctx = wire.handle(call.rec.get("ctx"))
        out = []
        for mem in self.mems.values():
            if mem.gl_kind and mem.gl_name in names.get(mem.gl_kind, ()) and (
                    not ctx or mem.context is None or not mem.context.gl_context or mem.context.gl_context == ctx):
                out.append(mem)
        return out

    def _gl_use(self, call: Call, where: str) -> None:
        rec = call.rec
        names = {"buffer": list(rec.get("buffers") or ()) + ([rec["buffer"]] if rec.get("buffer") else []),
                 "texture": list(rec.get("textures") or ()) + ([rec["texture"]] if rec.get("texture") else [])}
        objs = call.objects = self.gl_objects(call, names)
        if objs:
            tracker = self.trackers["gl_sharing"]
            tracker.gl_use(objs, where)
            self._harvest(tracker, call)

    def _gl_delete(self, call: Call) -> None:
        tracker = self.trackers["gl_sharing"]
        for mem in self.gl_objects(call, {GL_DELETES[call.fn]: list(call.rec.get("names") or ())}):
            tracker.gl_delete(mem, call.fn)
        self._harvest(tracker, call)

    def _release_mem(self, call: Call) -> None:
        ptr = wire.handle(call.rec.get("mem"))
        mem = self.mems.get(ptr)
        if mem is None:
            return
        mem.refs -= 1
        if mem.refs > 0:  # the program holds it still (its retains)
            return
        del self.mems[ptr]
        _keep(self.released_mems, ptr, mem)
        self.registry.released(mem, f"released by the program (clReleaseMemObject, call {call.id})")
        for tracker in self.trackers.values():
            tracker.remove(mem)

    # -- what the stream says at its end -----------------------------------------------------------
    def unreturned(self) -> list[Call]:
        """The calls the process was in when its stream ended (it died in them, or was cut there).
        The CL layer writes a ret for every call it records once the call returns: a CL call without
        one never returned, whatever the thread recorded after it (a driver that calls exit() inside
        the call runs the exit handlers on that thread, and their GL calls are recorded: they do not
        mean the CL call came back). The GL library writes a ret only for the calls that return a
        value or wait: such a GL call without one is open where it is its thread's last call."""
        with_ret = {c.fn for c in self.calls if c.ret is not None}
        last: dict[int, Call] = {}
        for c in self.calls:
            last[c.tid] = c
        cl_open = [c for c in self.calls if c.src == "cl" and c.ret is None]
        return cl_open + [c for c in last.values() if c.src != "cl" and c.ret is None and c.fn in with_ret]

    def context_of(self, call: Call) -> Context | None:
        """The CL context a call works in: its ``context``, or its queue's (None where neither was seen)."""
        if call.rec.get("context"):
            return self.contexts.get(wire.handle(call.rec["context"]))
        queue = self.queues.get(wire.handle(call.rec.get("queue")))
        return queue.context if queue is not None else None

    def missing_extension(self, call: Call) -> list[dict]:
        """The devices of the call's context whose extension list (the context's ret record) lacks the
        extension the call's entry point belongs to: [{"device", "name", "platform", "extension"}]."""
        ext = NEEDS_EXTENSION.get(call.fn)
        ctx = self.context_of(call)
        if ext is None or ctx is None:
            return []
        return [{"device": d.get("device"), "name": d.get("name", ""), "platform": d.get("platform", ""),
                 "extension": ext}
                for d in ctx.devices_info if isinstance(d.get("lists"), list) and ext not in d["lists"]]

    def counts(self) -> dict[str, int]:
        """Calls per entry point, over the whole run."""
        return dict(sorted(self._counts.items()))
