"""Typed ctypes bindings for the CL entry points pyopencl does not wrap.

cl_khr_external_memory, cl_khr_external_semaphore (+ _opaque_fd), cl_khr_gl_event's
clCreateEventFromGLsyncKHR and clCreateBufferWithProperties (OpenCL 3.0). Extension entry points
are found with clGetExtensionFunctionAddressForPlatform, and only after the caller checked that
the device lists the extension (an unlisted entry point may abort the process, as PoCL does).
Results come back as pyopencl objects; failures raise pyopencl-style errors (``cl.LogicError`` /
``cl.RuntimeError`` with the CL status as ``code``), which glshare wraps in ``ClError``.
"""
from __future__ import annotations

import ctypes
import os
from functools import lru_cache

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl

from app.diagnostics import live
from app.errors import cl_error_name
from app.memo import keep

vp = ctypes.c_void_p
cl_int = ctypes.c_int32
cl_uint = ctypes.c_uint32
cl_ulong = ctypes.c_uint64

# cl_khr_external_memory handle types (cl_external_memory_handle_type_khr)
CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR = 0x2060
CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR = 0x204F
CL_MEM_DEVICE_HANDLE_LIST_KHR = 0x2051
# cl_khr_semaphore / cl_khr_external_semaphore
CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR = 0x204D
CL_SEMAPHORE_TYPE_KHR = 0x203D
CL_SEMAPHORE_TYPE_BINARY_KHR = 1
CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR = 0x2055


def _error(code: int, routine: str, what: str = "") -> cl.Error:
    """The pyopencl-style error pyopencl itself would raise for a CL status."""
    record = _cl._ErrorRecord(msg=what or cl_error_name(code), code=int(code), routine=routine)
    return (cl.RuntimeError if code in (-4, -5, -6) else cl.LogicError)(record)


def _raise(code: int, routine: str, what: str = "") -> None:
    raise _error(code, routine, what)


def call_error(code: int, call) -> cl.Error:
    """The error of a prepared call (``app.native.calls.Call``) that returned ``code``: the one its
    ctypes form below raises (``detail``: the argument a clSetKernelArg names)."""
    return _error(code, call.routine, f"{cl_error_name(code)}: {call.detail}" if call.detail else "")


def loader_path() -> str:
    """The OpenCL ICD loader pyopencl calls: the one its wheel brings (``pyopencl/.libs/libOpenCL-*``,
    auditwheel's renamed copy) where there is one, else the system's ``libOpenCL.so.1``. glshare's
    ctypes calls go through that same loader, so the process has one loader: one table of platforms,
    and a loader layer (``glshare attach``'s, cl_loader_layers) sees every call glshare makes."""
    import glob

    bundled = sorted(glob.glob(os.path.join(os.path.dirname(_cl.__file__), ".libs", "libOpenCL*.so*")))
    return bundled[0] if bundled else "libOpenCL.so.1"


@lru_cache(maxsize=1)
def libopencl() -> ctypes.CDLL:
    lib = ctypes.CDLL(loader_path())
    lib.clGetExtensionFunctionAddressForPlatform.restype = vp
    lib.clGetExtensionFunctionAddressForPlatform.argtypes = [vp, ctypes.c_char_p]
    lib.clGetDeviceInfo.restype = cl_int
    lib.clGetDeviceInfo.argtypes = [vp, cl_uint, ctypes.c_size_t, vp, ctypes.POINTER(ctypes.c_size_t)]
    return lib


def device_info_u32_list(device: cl.Device, param: int) -> list[int] | None:
    """A cl_uint-array device query; None when the device rejects the query."""
    lib = libopencl()
    size = ctypes.c_size_t()
    if lib.clGetDeviceInfo(device.int_ptr, param, 0, None, ctypes.byref(size)):
        return None
    arr = (cl_uint * max(1, size.value // 4))()
    if lib.clGetDeviceInfo(device.int_ptr, param, size.value, arr, None):
        return None
    return list(arr[: size.value // 4])


class ExtensionFunctions:
    """Extension entry points of one platform, each looked up once by name."""

    SIGNATURES = {
        "clEnqueueAcquireExternalMemObjectsKHR": (cl_int, [vp, cl_uint, ctypes.POINTER(vp), cl_uint, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "clEnqueueReleaseExternalMemObjectsKHR": (cl_int, [vp, cl_uint, ctypes.POINTER(vp), cl_uint, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "clCreateSemaphoreWithPropertiesKHR": (vp, [vp, ctypes.POINTER(cl_ulong), ctypes.POINTER(cl_int)]),
        "clEnqueueWaitSemaphoresKHR": (cl_int, [vp, cl_uint, ctypes.POINTER(vp), ctypes.POINTER(cl_ulong), cl_uint, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "clEnqueueSignalSemaphoresKHR": (cl_int, [vp, cl_uint, ctypes.POINTER(vp), ctypes.POINTER(cl_ulong), cl_uint, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "clReleaseSemaphoreKHR": (cl_int, [vp]),
        "clCreateEventFromGLsyncKHR": (vp, [vp, vp, ctypes.POINTER(cl_int)]),
    }

    def __init__(self, platform: cl.Platform) -> None:
        self.platform = platform

    def __getattr__(self, name: str):
        """Resolve an entry point the first time it is asked for (called only while it is not yet an
        attribute): the function is then kept as the instance's attribute of that name, so every
        later lookup, every frame's semaphore wait and signal among them, is a plain one."""
        if name not in self.SIGNATURES:
            raise AttributeError(name)
        address = libopencl().clGetExtensionFunctionAddressForPlatform(self.platform.int_ptr, name.encode())
        if not address:
            _raise(-59, name, f"{name} is not exported by platform {self.platform.name.strip()!r}")
        restype, argtypes = self.SIGNATURES[name]
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(address)
        setattr(self, name, fn)
        return fn


def _events(wait_for) -> tuple[int, object]:
    evs = [e for e in (wait_for or ()) if e is not None]
    if not evs:
        return 0, None
    return len(evs), (vp * len(evs))(*[e.int_ptr for e in evs])


def create_buffer_with_properties(context: cl.Context, properties: list[int], flags: int, size: int) -> cl.Buffer:
    """clCreateBufferWithProperties (OpenCL 3.0) -> a pyopencl Buffer owning the new cl_mem."""
    lib = libopencl()
    fn = lib.clCreateBufferWithProperties
    fn.restype = vp
    fn.argtypes = [vp, ctypes.POINTER(cl_ulong), cl_ulong, ctypes.c_size_t, vp, ctypes.POINTER(cl_int)]
    props = (cl_ulong * (len(properties) + 1))(*properties, 0)
    err = cl_int()
    ptr = fn(context.int_ptr, props, flags, size, None, ctypes.byref(err))
    if err.value or not ptr:
        _raise(err.value or -5, "clCreateBufferWithProperties")
    return cl.Buffer.from_int_ptr(ptr, retain=False)


def import_memory_fd(context: cl.Context, device: cl.Device, fd: int, size: int,
                     flags: int = cl.mem_flags.READ_WRITE) -> cl.Buffer:
    """Import an opaque fd as a CL buffer; the CL import holds its own reference to the payload.

    A successful import takes ``fd``: "importing memory from a file descriptor transfers ownership
    of the file descriptor from the application to the OpenCL implementation" (cl_khr_external_memory
    5.5.2.1), so the caller passes a dup and must not use or close it afterwards, on any
    implementation. On a failure (pyopencl.Error) the fd is still the caller's to close."""
    # The form NVIDIA's driver 580 accepts (../shared/gpu/README.md): no device handle list, so the
    # import is for every device of the context (glshare's contexts hold one device).
    props = [CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, fd]
    return create_buffer_with_properties(context, props, flags, size)


class WaitList:
    """A reusable cl_event array: the wait list of an enqueue filled in place, no allocation."""

    def __init__(self, size: int = 16) -> None:
        self.array = (vp * size)()

    def fill(self, wait_for) -> tuple[int, object]:
        n = 0
        array = self.array
        for e in wait_for or ():
            if e is not None:
                if n == len(array):
                    return _events(wait_for)  # longer than prepared: a one-off array
                array[n] = e.int_ptr
                n += 1
        return n, (array if n else None)


class MemObjectsCall:
    """clEnqueue{Acquire,Release}ExternalMemObjectsKHR with its arguments prepared: the memory
    objects' handle arrays kept per list, the wait list and the event out reused (``event=False``:
    the C API's NULL ``event`` argument, no event made; None returned)."""

    def __init__(self, fn, routine: str) -> None:
        self.fn, self.routine = fn, routine
        self._arrays: dict[tuple, object] = {}  # the handles of a list of memory objects -> their C array
        self._waits = WaitList()
        self._out = vp()
        self._out_ref = ctypes.byref(self._out)

    def __call__(self, queue: cl.CommandQueue, mems: list, wait_for=None, event: bool = True) -> cl.Event | None:
        # by the objects' identities: a pyopencl object's handle is fixed for its life, and each
        # array is kept with its objects, so no id in a key can be reused while it is kept
        key = tuple(map(id, mems))
        found = self._arrays.get(key)
        if found is None:  # one array per list of objects (frames in flight on copies alternate lists)
            handles = [m.int_ptr for m in mems]
            found = keep(self._arrays, key, ((vp * len(handles))(*handles) if handles else None, len(handles),
                                             tuple(mems)))
        n, evs = self._waits.fill(wait_for)
        err = self.fn(queue.int_ptr, found[1], found[0], n, evs, self._out_ref if event else None)
        if err:
            _raise(err, self.routine)
        return cl.Event.from_int_ptr(self._out.value, retain=False) if event else None

    def prepared(self, queue: cl.CommandQueue, mems: list, out: vp | None):
        """The same call on ``mems`` without a wait list, prepared for a native call list
        (``app.native.calls``): its event into ``out`` (None: the C API's NULL event)."""
        from app.native.calls import Call

        handles = [m.int_ptr for m in mems]
        array = (vp * len(handles))(*handles) if handles else None
        return Call(self.fn, (queue.int_ptr, len(handles), array, 0, None, out), self.routine)


@lru_cache(maxsize=1)
def _clflush():
    fn = libopencl().clFlush
    fn.restype, fn.argtypes = cl_int, [vp]
    return fn


def flush(queue: cl.CommandQueue) -> None:
    """clFlush through ctypes (a frame flushes its queue once or twice); a refusal raises a
    pyopencl-style error with the CL status, as ``queue.flush()`` would."""
    err = _clflush()(queue.int_ptr)
    if err:
        _raise(err, "clFlush")


@lru_cache(maxsize=1)
def _core_calls():
    """clSetKernelArg and clEnqueueNDRangeKernel with their argument types declared once."""
    lib = libopencl()
    set_arg = lib.clSetKernelArg
    set_arg.restype, set_arg.argtypes = cl_int, [vp, cl_uint, ctypes.c_size_t, vp]
    nd = lib.clEnqueueNDRangeKernel
    nd.restype = cl_int
    nd.argtypes = [vp, vp, cl_uint, vp, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
                   cl_uint, ctypes.POINTER(vp), ctypes.POINTER(vp)]
    return set_arg, nd


CL_EVENT_COMMAND_QUEUE = 0x11D0
CL_EVENT_COMMAND_TYPE = 0x11D1
CL_EVENT_CONTEXT = 0x11D4
CL_EVENT_COMMAND_EXECUTION_STATUS = 0x11D3
PROFILING_PARAMS = (0x1280, 0x1281, 0x1282, 0x1283)  # CL_PROFILING_COMMAND_QUEUED, SUBMIT, START, END
_WITHOUT_SUBMIT = (0x1280, 0x1282, 0x1283)  # QUEUED, START, END


class EventInfo:
    """clGetEventInfo of an event's context and execution status through ctypes with prepared
    output buffers (the validator asks both of every event in a wait list, every frame)."""

    def __init__(self) -> None:
        fn = libopencl().clGetEventInfo
        fn.restype, fn.argtypes = cl_int, [vp, cl_uint, ctypes.c_size_t, vp, vp]
        self._fn = fn
        self._ptr, self._status = vp(), cl_int()
        self._ptr_ref, self._status_ref = ctypes.byref(self._ptr), ctypes.byref(self._status)
        prof = libopencl().clGetEventProfilingInfo
        prof.restype, prof.argtypes = cl_int, [vp, cl_uint, ctypes.c_size_t, vp, vp]
        self._profiling = prof
        self._u64 = cl_ulong()
        self._u64_ref = ctypes.byref(self._u64)
        # a batch of events' stamps in one foreign call (app/native/stamps.c) where it is built
        from app import native

        try:
            self._batch = native.load().glshare_read_stamps
            self._profiling_addr = ctypes.cast(prof, vp).value
        except native.NativeUnavailable:
            self._batch = None
        self._capacity = 0
        self._events = self._stamps = None
        self._failed = cl_int()
        self._failed_ref = ctypes.byref(self._failed)

    @property
    def batched(self) -> bool:
        """Whether ``profiles`` reads a batch in one call to the native library."""
        return self._batch is not None

    def context(self, event_ptr: int) -> int | None:
        """The event's cl_context handle, or None where the driver refuses the query."""
        if self._fn(event_ptr, CL_EVENT_CONTEXT, ctypes.sizeof(vp), self._ptr_ref, None):
            return None
        return self._ptr.value

    def status(self, event_ptr: int) -> int | None:
        """CL_EVENT_COMMAND_EXECUTION_STATUS (negative: the command failed), or None where refused."""
        if self._fn(event_ptr, CL_EVENT_COMMAND_EXECUTION_STATUS, 4, self._status_ref, None):
            return None
        return self._status.value

    def command(self, event_ptr: int) -> tuple[int, int] | None:
        """The event's command queue handle and command type (CL_EVENT_COMMAND_QUEUE,
        CL_EVENT_COMMAND_TYPE), or None where the driver refuses either query."""
        if self._fn(event_ptr, CL_EVENT_COMMAND_QUEUE, ctypes.sizeof(vp), self._ptr_ref, None):
            return None
        queue = self._ptr.value or 0
        if self._fn(event_ptr, CL_EVENT_COMMAND_TYPE, 4, self._status_ref, None):
            return None
        return queue, self._status.value

    def profile(self, event_ptr: int, submit: bool = True) -> tuple[int, int | None, int, int]:
        """clGetEventProfilingInfo's QUEUED, SUBMIT, START and END (ns, the device's clock); with
        ``submit=False`` SUBMIT is not asked (None in its place: one driver call fewer per event,
        for a run whose outputs show only queued, start and end). A QUEUED stamp of 0 is a command
        the driver did not time (NVIDIA's markers come back with four zero stamps): the other
        stamps are not asked and come back as 0 (two or three driver calls fewer for each such
        command, every frame; the caller counts any zero stamp as no device time). Raises a
        pyopencl-style error (``cl.RuntimeError`` / ``cl.LogicError`` with the CL status) where the
        driver refuses one (not complete, a queue without profiling)."""
        fn, out, ref = self._profiling, self._u64, self._u64_ref
        stamps = []
        for param in PROFILING_PARAMS if submit else _WITHOUT_SUBMIT:
            err = fn(event_ptr, param, 8, ref, None)
            if err:
                _raise(err, "clGetEventProfilingInfo")
            if not out.value and not stamps:  # QUEUED is 0: unstamped
                return 0, 0 if submit else None, 0, 0
            stamps.append(out.value)
        if submit:
            return tuple(stamps)
        return stamps[0], None, stamps[1], stamps[2]

    def profiles(self, event_ptrs: list[int], submit: bool = True) -> list:
        """``profile`` of each event, in order: its stamps, or the pyopencl-style error of a refused
        query (not raised: the other events are still read). Through the native library a batch is
        one foreign call (a refusal ends it there; the rest is read in the next call), else one
        ``profile`` per event."""
        if self._batch is None:
            out = []
            for ptr in event_ptrs:
                try:
                    out.append(self.profile(ptr, submit))
                except cl.Error as exc:
                    out.append(exc)
            return out
        n = len(event_ptrs)
        if not n:  # (before the first batch there are no buffers to fill)
            return []
        if n > self._capacity:  # the buffers grow to the largest batch and are kept
            self._capacity = max(n, 2 * self._capacity, 32)
            self._events = (vp * self._capacity)()
            self._stamps = (cl_ulong * (4 * self._capacity))()
        events, stamps = self._events, self._stamps
        events[:n] = event_ptrs
        out: list = []
        start = 0
        while start < n:
            err = self._batch(self._profiling_addr, ctypes.byref(events, start * ctypes.sizeof(vp)), n - start,
                              1 if submit else 0, ctypes.byref(stamps, 4 * start * 8), self._failed_ref)
            stop = n if not err else start + self._failed.value
            flat = stamps[4 * start:4 * stop]
            if submit:
                out += [tuple(flat[i:i + 4]) for i in range(0, len(flat), 4)]
            else:
                out += [(flat[i], None, flat[i + 2], flat[i + 3]) for i in range(0, len(flat), 4)]
            if not err:
                break
            out.append(_error(err, "clGetEventProfilingInfo"))
            start = stop + 1
        return out


@lru_cache(maxsize=1)
def event_info() -> EventInfo:
    return EventInfo()


# numpy scalar types a kernel argument is set from by value, and their C types
_SCALAR_CTYPES = {np.float32: ctypes.c_float, np.int32: ctypes.c_int32, np.uint32: ctypes.c_uint32,
                  np.int64: ctypes.c_int64, np.uint64: ctypes.c_uint64, np.float64: ctypes.c_double}


def set_kernel_arg(kernel_ptr: int, index: int, value, buffers: dict | None = None) -> bool:
    """clSetKernelArg straight through ctypes for a numpy scalar or a memory object (one call, no
    per-call type inference); False for any other value, which the caller hands to pyopencl.
    ``buffers`` ({index: (C value, reference)}): a scalar argument's C value kept and reused from
    call to call. Raises a pyopencl-style error (``cl.LogicError`` with the CL status) on a failure."""
    set_arg = _core_calls()[0]
    ctype = _SCALAR_CTYPES.get(type(value))
    if ctype is not None:
        kept = buffers.get(index) if buffers is not None else None
        if kept is None or type(kept[0]) is not ctype:
            arg = ctype()
            kept = (arg, ctypes.byref(arg))
            if buffers is not None:
                buffers[index] = kept
        kept[0].value = value
        err = set_arg(kernel_ptr, index, ctypes.sizeof(ctype), kept[1])
    elif isinstance(value, cl.MemoryObjectHolder):
        arg = vp(value.int_ptr)
        err = set_arg(kernel_ptr, index, ctypes.sizeof(vp), ctypes.byref(arg))
    else:
        return False
    if err:
        _raise(err, "clSetKernelArg", f"{cl_error_name(err)}: argument {index}")
    return True


class NDRangeCall:
    """clEnqueueNDRangeKernel with its arguments prepared: the size arrays kept while the sizes are
    the same, the wait list and the event out reused; returns the command's event (``event=False``:
    the C API's NULL ``event`` argument, no event made; None returned)."""

    def __init__(self) -> None:
        self._key: tuple = ()
        self._sizes: tuple = (0, None, None)
        self._waits = WaitList()
        self._out = vp()
        self._out_ref = ctypes.byref(self._out)

    def __call__(self, queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size=None,
                 wait_for=None, event: bool = True) -> cl.Event | None:
        key = (tuple(global_size), tuple(local_size) if local_size else None)
        if key != self._key:
            g, local = key
            self._key = key
            self._sizes = (len(g), (ctypes.c_size_t * len(g))(*g),
                           (ctypes.c_size_t * len(local))(*local) if local else None)
        dims, g_arr, l_arr = self._sizes
        n, evs = self._waits.fill(wait_for)
        err = _core_calls()[1](queue.int_ptr, kernel.int_ptr, dims, None, g_arr, l_arr, n, evs,
                               self._out_ref if event else None)
        if err:
            _raise(err, "clEnqueueNDRangeKernel")
        return cl.Event.from_int_ptr(self._out.value, retain=False) if event else None

    @staticmethod
    def prepared(queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size, out: vp | None):
        """The same launch without a wait list, prepared for a native call list (``app.native.calls``):
        its event into ``out`` (None: the C API's NULL event)."""
        from app.native.calls import Call

        g = tuple(global_size)
        local = tuple(local_size) if local_size else None
        return Call(_core_calls()[1], (queue.int_ptr, kernel.int_ptr, len(g), None, (ctypes.c_size_t * len(g))(*g),
                                       (ctypes.c_size_t * len(local))(*local) if local else None, 0, None, out),
                    "clEnqueueNDRangeKernel")


def prepared_scalar_arg(kernel: cl.Kernel, index: int, value):
    """clSetKernelArg of scalar argument ``index`` from ``value`` (a ctypes value the frame rewrites
    before each native call list), prepared for the list (``app.native.calls``)."""
    from app.native.calls import Call

    return Call(_core_calls()[0], (kernel.int_ptr, index, ctypes.sizeof(value), value), "clSetKernelArg",
                detail=f"argument {index}")


def prepared_core(name: str, *args, wait: str = ""):
    """A core entry point of the ICD loader (clFlush, clFinish, clEnqueueMarkerWithWaitList) prepared
    for a native call list (``app.native.calls``); ``wait``: the CPU wait it is, by name."""
    from app.native.calls import Call

    return Call(getattr(libopencl(), name), args, name, wait=wait)


def external_mem_calls(ext: ExtensionFunctions) -> tuple[MemObjectsCall, MemObjectsCall]:
    """(acquire, release) for one backend: prepared calls of cl_khr_external_memory's two entry points."""
    return (MemObjectsCall(ext.clEnqueueAcquireExternalMemObjectsKHR, "clEnqueueAcquireExternalMemObjectsKHR"),
            MemObjectsCall(ext.clEnqueueReleaseExternalMemObjectsKHR, "clEnqueueReleaseExternalMemObjectsKHR"))


class Semaphore:
    """A cl_semaphore_khr imported from an opaque fd (binary). ``release()`` is idempotent."""

    def __init__(self, ext: ExtensionFunctions, context: cl.Context, device: cl.Device, fd: int, label: str) -> None:
        self.ext, self.label = ext, label
        props = (cl_ulong * 5)(CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                               CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR, fd, 0)
        err = cl_int()
        ptr = ext.clCreateSemaphoreWithPropertiesKHR(context.int_ptr, props, ctypes.byref(err))
        if err.value or not ptr:
            _raise(err.value or -5, "clCreateSemaphoreWithPropertiesKHR")
        self.handle = vp(ptr)
        self._handle_ref = ctypes.byref(self.handle)
        self._waits = WaitList()
        self._out = vp()
        self._out_ref = ctypes.byref(self._out)
        live.created("cl_semaphore", "external_memory")

    def _enqueue(self, fn, routine, queue, wait_for, event: bool = True) -> cl.Event | None:
        n, evs = self._waits.fill(wait_for)
        err = fn(queue.int_ptr, 1, self._handle_ref, None, n, evs, self._out_ref if event else None)
        if err:
            _raise(err, routine)
        return cl.Event.from_int_ptr(self._out.value, retain=False) if event else None

    def prepared(self, queue, signal: bool):
        """This semaphore's wait (``signal`` False) or signal on ``queue``, without a wait list or an
        event, prepared for a native call list (``app.native.calls``)."""
        from app.native.calls import Call

        routine = "clEnqueueSignalSemaphoresKHR" if signal else "clEnqueueWaitSemaphoresKHR"
        return Call(getattr(self.ext, routine), (queue.int_ptr, 1, self.handle, None, 0, None, None), routine)

    def enqueue_wait(self, queue, wait_for=None, event: bool = True) -> cl.Event | None:
        """``event=False``: the C API's NULL ``event`` argument (an in-order queue orders what follows)."""
        return self._enqueue(self.ext.clEnqueueWaitSemaphoresKHR, "clEnqueueWaitSemaphoresKHR", queue, wait_for,
                             event)

    def enqueue_signal(self, queue, wait_for=None, event: bool = True) -> cl.Event | None:
        """``event=False``: the C API's NULL ``event`` argument (nothing waits on the signal itself)."""
        return self._enqueue(self.ext.clEnqueueSignalSemaphoresKHR, "clEnqueueSignalSemaphoresKHR", queue, wait_for,
                             event)

    def release(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            self.ext.clReleaseSemaphoreKHR(handle)
            live.released("cl_semaphore", "external_memory")

    def __repr__(self) -> str:
        return f"<Semaphore {self.label!r}>"


def create_event_from_gl_sync(ext: ExtensionFunctions, context: cl.Context, gl_sync: int) -> cl.Event:
    """cl_khr_gl_event. Only ever call it on a context created from a GL context: on a plain
    context NVIDIA's driver 580 crashes the process (../shared/gpu/README.md)."""
    err = cl_int()
    ptr = ext.clCreateEventFromGLsyncKHR(context.int_ptr, vp(gl_sync), ctypes.byref(err))
    if err.value or not ptr:
        _raise(err.value or -5, "clCreateEventFromGLsyncKHR")
    return cl.Event.from_int_ptr(ptr, retain=False)


def open_fds(collect: bool = True) -> int:
    """How many file descriptors this process holds (leak checks), after a garbage-collector pass:
    pyopencl frees a CL object when Python drops it, and objects in reference cycles wait for the
    collector: with the pass, a create/destroy cycle leaves the count where it was."""
    import gc

    if collect:
        gc.collect()
    return len(os.listdir("/proc/self/fd"))
