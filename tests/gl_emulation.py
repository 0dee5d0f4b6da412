"""An emulated cl_khr_gl_sharing driver at the level of the C entry points (app/cl/gl_sharing.py).

No machine of the CPU suite shares GL with CL (PoCL and Intel's CPU runtime end the trial's child
process), so the entry points are replaced by C callbacks with the same signatures
(``app.cl.gl_sharing.SIGNATURES``) that keep a plain CL object per GL object and copy at acquire
and release. Everything of glshare above the C functions runs whole: the context properties, the
ctypes calls and their error handling, the objects handed to pyopencl, the validator, the tracker,
every scene. What it cannot show is a real driver's zero-copy hand-over: that is the ``gpu`` tests'.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np
import pyopencl as cl
from OpenGL import GL

from app.cl import gl_sharing as glcl
from app.cl.ext import libopencl
from app.cl.formats import cl_image_format
from app.gl.formats import FORMATS

vp = ctypes.c_void_p
FAILED = -9999  # what a callback returns when the emulation itself broke (recorded in ``errors``)
CL_INVALID_EVENT = -58


def _retain(kind: str, ptr: int) -> None:
    fn = getattr(libopencl(), f"clRetain{kind}")
    fn.argtypes, fn.restype = [vp], ctypes.c_int32
    assert fn(ptr) == 0


class EmulatedGlSharingDriver:
    """The entry points, emulated with copies (see the module docstring). ``calls``: each call's
    name and what matters of its arguments; ``context_keys``: the property keys of each context."""

    def __init__(self, gl_device: cl.Device | None = None) -> None:
        self.objects: dict[int, tuple] = {}  # cl_mem -> ("buffer", name, size) | ("texture", name, w, h, fmt)
        self.calls: list[tuple] = []
        self.context_keys: list[list[int]] = []
        self.errors: list[BaseException] = []
        self.gl_device = gl_device  # what clGetGLContextInfoKHR names (None: the platform's first device)
        self.fail: dict[str, int] = {}  # entry point -> the CL status it returns instead of working
        # linked events (clCreateEventFromGLsyncKHR) as NVIDIA 580 answered for them: usable in an acquire's
        # wait list, and spent once that acquire consumed them (any later wait on one fails, as
        # clWaitForEvents answered CL_INVALID_EVENT there at teardown); False: a complete user event
        self.spent_linked_events = False
        self.linked: dict[int, tuple] = {}  # a linked event's handle -> (its user event, its GLsync)
        # (entry point, its C arguments) -> "hang" (the call never returns), "crash" (SIGSEGV) or None:
        # a driver stuck in a call or crashing the process (the error lab's child meets them)
        self.stall = None
        self._callbacks: dict[str, object] = {}
        real = ctypes.cast(libopencl().clCreateContext, vp).value
        restype, argtypes = glcl.SIGNATURES["clCreateContext"]
        self._real_create_context = ctypes.CFUNCTYPE(restype, *argtypes)(real)

    # -- the resolver -----------------------------------------------------------------------------
    def address(self, platform_ptr: int, name: str) -> int:
        if name not in self._callbacks:
            restype, argtypes = glcl.SIGNATURES[name]
            impl = getattr(self, name)

            def guarded(*args, _impl=impl, _name=name):
                what = self.stall(_name, args) if self.stall is not None else None
                if what == "hang":
                    while True:
                        time.sleep(3600)
                if what == "crash":
                    ctypes.string_at(0)  # a read of address 0: SIGSEGV, as a driver's own fault
                if _name in self.fail:
                    self.calls.append((_name, "failed"))
                    return self._fail(args, self.fail[_name])
                try:
                    return _impl(*args)
                except BaseException as exc:  # noqa: BLE001 - kept, and the test fails on it
                    self.errors.append(exc)
                    return self._fail(args, FAILED)

            self._callbacks[name] = ctypes.CFUNCTYPE(restype, *argtypes)(guarded)
        return ctypes.cast(self._callbacks[name], vp).value

    @staticmethod
    def _fail(args, code: int):
        """A create call returns NULL and writes the status through its last argument; the rest return it."""
        last = args[-1]
        if isinstance(last, ctypes._Pointer) and last._type_ is ctypes.c_int32 and last:
            last[0] = code
            return None
        return code

    def install(self, monkeypatch, gl_event: bool = False) -> None:
        """Every GL-sharing entry point resolves here, the trial's verdict is a success, and (``gl_event``)
        the device lists cl_khr_gl_event, so gl_event sync runs on the emulation too."""
        from app.sharing import gl_trial
        from app.sharing.base import ProbeEnv

        monkeypatch.setattr(glcl, "entry_point_address", self.address)
        monkeypatch.setattr(gl_trial, "verdict", lambda env: gl_trial.Verdict(True, "", True))
        if gl_event:
            base = ProbeEnv.device_extensions.fget
            monkeypatch.setattr(ProbeEnv, "device_extensions", property(lambda env: base(env) | {"cl_khr_gl_event"}))

    # -- the entry points ---------------------------------------------------------------------------
    @staticmethod
    def _props(props) -> dict[int, int]:
        out, i = {}, 0
        while props[i]:
            out[props[i]] = props[i + 1]
            i += 2
        return out

    def clGetGLContextInfoKHR(self, props, param, size, value, size_ret):
        keys = self._props(props)
        self.calls.append(("clGetGLContextInfoKHR", param))
        platform = cl.Platform.from_int_ptr(keys[glcl.CL_CONTEXT_PLATFORM])
        device = self.gl_device or platform.get_devices()[0]
        if value:
            ctypes.cast(value, ctypes.POINTER(vp))[0] = device.int_ptr
        if size_ret:
            size_ret[0] = ctypes.sizeof(vp)
        return 0

    def clCreateContext(self, props, n, devices, notify, user_data, err):
        keys = self._props(props)
        self.context_keys.append(list(keys))
        self.calls.append(("clCreateContext", tuple(keys)))
        plain = (glcl.intptr * 3)(glcl.CL_CONTEXT_PLATFORM, keys[glcl.CL_CONTEXT_PLATFORM], 0)
        return self._real_create_context(plain, n, devices, None, None, err)

    def _made(self, mem: cl.MemoryObjectHolder, meta: tuple, err) -> int:
        _retain("MemObject", mem.int_ptr)  # the caller's pyopencl object owns this reference
        self.objects[mem.int_ptr] = meta
        err[0] = 0
        return mem.int_ptr

    def clCreateFromGLBuffer(self, ctx, flags, name, err):
        context = cl.Context.from_int_ptr(ctx, retain=True)
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, name)
        size = int(GL.glGetBufferParameteriv(GL.GL_COPY_READ_BUFFER, GL.GL_BUFFER_SIZE))
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
        self.calls.append(("clCreateFromGLBuffer", name))
        return self._made(cl.Buffer(context, cl.mem_flags.READ_WRITE, size), ("buffer", name, size), err)

    def clCreateFromGLTexture(self, ctx, flags, target, level, name, err):
        context = cl.Context.from_int_ptr(ctx, retain=True)
        GL.glBindTexture(GL.GL_TEXTURE_2D, name)
        w = int(GL.glGetTexLevelParameteriv(GL.GL_TEXTURE_2D, 0, GL.GL_TEXTURE_WIDTH))
        h = int(GL.glGetTexLevelParameteriv(GL.GL_TEXTURE_2D, 0, GL.GL_TEXTURE_HEIGHT))
        internal = int(GL.glGetTexLevelParameteriv(GL.GL_TEXTURE_2D, 0, GL.GL_TEXTURE_INTERNAL_FORMAT))
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        fmt = FORMATS[internal]
        self.calls.append(("clCreateFromGLTexture", name))
        image = cl.create_image(context, cl.mem_flags.READ_WRITE, cl_image_format(fmt), shape=(w, h))
        return self._made(image, ("texture", name, w, h, fmt), err)

    def clGetGLObjectInfo(self, mem, kind, name):
        meta = self.objects.get(mem)
        if meta is None:
            return -60  # CL_INVALID_GL_OBJECT
        if kind:
            kind[0] = glcl.CL_GL_OBJECT_BUFFER if meta[0] == "buffer" else glcl.CL_GL_OBJECT_TEXTURE2D
        if name:
            name[0] = meta[1]
        return 0

    def _checked_arguments(self, queue, n, mems, n_waits, waits) -> int:
        """What a driver answers before it looks at the objects (the lab gives it broken calls on
        purpose): 0 where the queue and the wait list are sound. 5.5.15's codes. (A memory object
        given as the queue is refused by handle: PoCL's clGetCommandQueueInfo crashes on one.)"""
        info = libopencl().clGetCommandQueueInfo
        info.argtypes, info.restype = [vp, ctypes.c_uint32, ctypes.c_size_t, vp, vp], ctypes.c_int32
        out = vp()
        if not queue or queue in self.objects or info(queue, 0x1090, ctypes.sizeof(vp), ctypes.byref(out), None):
            return -36  # CL_INVALID_COMMAND_QUEUE (0x1090: CL_QUEUE_CONTEXT)
        if (n and not mems) or (mems and not n):
            return -30  # CL_INVALID_VALUE
        if (n_waits and not waits) or (waits and not n_waits):
            return -57  # CL_INVALID_EVENT_WAIT_LIST
        status = ctypes.c_int32()
        event_info = libopencl().clGetEventInfo
        event_info.argtypes, event_info.restype = [vp, ctypes.c_uint32, ctypes.c_size_t, vp, vp], ctypes.c_int32
        for i in range(n_waits):  # CL_EVENT_COMMAND_EXECUTION_STATUS
            if not waits[i] or event_info(waits[i], 0x11D3, 4, ctypes.byref(status), None):
                return -57
            if status.value < 0:
                return -14  # CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
        return 0

    def _hand_over(self, routine, queue, n, mems, n_waits, waits, event, to_cl: bool):
        refused = self._checked_arguments(queue, n, mems, n_waits, waits)
        if refused:
            self.calls.append((routine, "refused", refused))
            return refused
        q = cl.CommandQueue.from_int_ptr(queue, retain=True)
        handles = [waits[i] for i in range(n_waits)]
        consumed = [self.linked[h] for h in handles if h in self.linked]
        if consumed and not to_cl:
            raise AssertionError(f"{routine} got a linked event in its wait list: only an acquire may consume one")
        for _, sync in consumed:  # cl_khr_gl_event: the GL sync stays valid while its event is in use
            if not GL.glIsSync(sync):
                raise AssertionError(f"{routine}: a linked event's GL sync was deleted before the acquire used it")
        wait_for = [cl.Event.from_int_ptr(h, retain=True) for h in handles if h not in self.linked] or None
        self.calls.append((routine, n, n_waits))
        for i in range(n):
            ptr = mems[i]
            meta = self.objects.get(ptr)
            if meta is None:
                return -60  # CL_INVALID_GL_OBJECT: not made from a GL object
            (self._to_cl if to_cl else self._to_gl)(q, ptr, meta, wait_for)
        marker = cl.enqueue_marker(q, wait_for=wait_for)
        for user_event, _ in consumed:  # spent: its status says so from now on
            user_event.set_status(CL_INVALID_EVENT)
        if event:
            _retain("Event", marker.int_ptr)  # the caller's pyopencl event owns this reference
            event[0] = marker.int_ptr
        return 0

    def clEnqueueAcquireGLObjects(self, queue, n, mems, n_waits, waits, event):
        return self._hand_over("clEnqueueAcquireGLObjects", queue, n, mems, n_waits, waits, event, True)

    def clEnqueueReleaseGLObjects(self, queue, n, mems, n_waits, waits, event):
        return self._hand_over("clEnqueueReleaseGLObjects", queue, n, mems, n_waits, waits, event, False)

    def clCreateEventFromGLsyncKHR(self, ctx, sync, err):
        """A GL fence as a user event (the emulation's GL is done when the acquire copies): complete,
        or (``spent_linked_events``) one only the acquire may consume, spent by it."""
        context = cl.Context.from_int_ptr(ctx, retain=True)
        GL.glClientWaitSync(sync, GL.GL_SYNC_FLUSH_COMMANDS_BIT, GL.GL_TIMEOUT_IGNORED)
        event = cl.UserEvent(context)
        if self.spent_linked_events:
            self.linked[event.int_ptr] = (event, sync)
        else:
            event.set_status(cl.command_execution_status.COMPLETE)
        self.calls.append(("clCreateEventFromGLsyncKHR",))
        _retain("Event", event.int_ptr)
        err[0] = 0
        return event.int_ptr

    # -- the copies that stand in for shared storage ------------------------------------------------
    @staticmethod
    def _to_cl(queue, ptr, meta, wait_for) -> None:
        kind, name, *rest = meta
        if kind == "buffer":
            mem = cl.Buffer.from_int_ptr(ptr, retain=True)
            host = np.empty(rest[0], np.uint8)
            GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, name)
            GL.glGetBufferSubData(GL.GL_COPY_READ_BUFFER, 0, host.nbytes, host.ctypes.data_as(ctypes.c_void_p))
            GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
            cl.enqueue_copy(queue, mem, host, wait_for=wait_for, is_blocking=True)
        else:
            w, h, fmt = rest
            mem = cl.Image.from_int_ptr(ptr, retain=True)
            host = np.empty((h, w, fmt.channels), fmt.numpy_dtype)
            GL.glBindTexture(GL.GL_TEXTURE_2D, name)
            GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
            GL.glGetTexImage(GL.GL_TEXTURE_2D, 0, fmt.format, fmt.type, host.ctypes.data_as(ctypes.c_void_p))
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            cl.enqueue_copy(queue, mem, host, origin=(0, 0), region=(w, h), wait_for=wait_for, is_blocking=True)

    @staticmethod
    def _to_gl(queue, ptr, meta, wait_for) -> None:
        kind, name, *rest = meta
        if kind == "buffer":
            mem = cl.Buffer.from_int_ptr(ptr, retain=True)
            host = np.empty(rest[0], np.uint8)
            cl.enqueue_copy(queue, host, mem, wait_for=wait_for, is_blocking=True)
            GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, name)
            GL.glBufferSubData(GL.GL_COPY_WRITE_BUFFER, 0, host.nbytes, host)
            GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
        else:
            w, h, fmt = rest
            mem = cl.Image.from_int_ptr(ptr, retain=True)
            host = np.empty((h, w, fmt.channels), fmt.numpy_dtype)
            cl.enqueue_copy(queue, host, mem, origin=(0, 0), region=(w, h), wait_for=wait_for, is_blocking=True)
            GL.glBindTexture(GL.GL_TEXTURE_2D, name)
            GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
            GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, w, h, fmt.format, fmt.type, host)
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
