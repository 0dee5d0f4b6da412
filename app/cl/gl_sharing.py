"""cl_khr_gl_sharing and cl_khr_gl_event through ctypes: the PyPI wheel of pyopencl is enough.

The entry points of the OpenCL 3.0 extension specification, "cl_khr_gl_sharing" (9.6) and
"cl_khr_gl_event" (9.7): clGetGLContextInfoKHR and clCreateEventFromGLsyncKHR are extension
functions (clGetExtensionFunctionAddressForPlatform); clCreateFromGLBuffer, clCreateFromGLTexture,
clGetGLObjectInfo and clEnqueue{Acquire,Release}GLObjects are exported by the ICD loader, which
dispatches them to the implementation owning the context or queue. The context, memory objects and
events come back as pyopencl objects (``from_int_ptr``), owned by them, for kernels and queues.

Every address is found through ``entry_point_address`` (looked up at call time, so the contract
suite's emulated driver stands in for the C functions themselves and the code here runs whole).
Nothing here may be called on an implementation the GL-sharing trial refused
(``app.sharing.gl_trial``): PoCL aborts the process on clCreateFromGLBuffer.
"""
from __future__ import annotations

import ctypes

import pyopencl as cl

from app.cl.ext import MemObjectsCall, _raise, libopencl

vp = ctypes.c_void_p
cl_int = ctypes.c_int32
cl_uint = ctypes.c_uint32
cl_ulong = ctypes.c_uint64
intptr = ctypes.c_ssize_t  # cl_context_properties
P = ctypes.POINTER

CL_CONTEXT_PLATFORM = 0x1084
# cl_gl.h: context properties naming a GL context and its display
CL_GL_CONTEXT_KHR = 0x2008
CL_EGL_DISPLAY_KHR = 0x2009
CL_GLX_DISPLAY_KHR = 0x200A
CL_WGL_HDC_KHR = 0x200B
CL_CGL_SHAREGROUP_KHR = 0x200C
PROPERTY_KEYS = {"GL_CONTEXT_KHR": CL_GL_CONTEXT_KHR, "EGL_DISPLAY_KHR": CL_EGL_DISPLAY_KHR,
                 "GLX_DISPLAY_KHR": CL_GLX_DISPLAY_KHR, "WGL_HDC_KHR": CL_WGL_HDC_KHR,
                 "CGL_SHAREGROUP_KHR": CL_CGL_SHAREGROUP_KHR}
# clGetGLContextInfoKHR's param_name
CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR = 0x2006
CL_DEVICES_FOR_GL_CONTEXT_KHR = 0x2007
# clGetGLObjectInfo's gl_object_type
CL_GL_OBJECT_BUFFER = 0x2000
CL_GL_OBJECT_TEXTURE2D = 0x2001
CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR = -1000

SIGNATURES = {
    "clGetGLContextInfoKHR": (cl_int, [P(intptr), cl_uint, ctypes.c_size_t, vp, P(ctypes.c_size_t)]),
    "clCreateContext": (vp, [P(intptr), cl_uint, P(vp), vp, vp, P(cl_int)]),
    "clCreateFromGLBuffer": (vp, [vp, cl_ulong, cl_uint, P(cl_int)]),
    "clCreateFromGLTexture": (vp, [vp, cl_ulong, cl_uint, cl_int, cl_uint, P(cl_int)]),
    "clGetGLObjectInfo": (cl_int, [vp, P(cl_uint), P(cl_uint)]),
    "clEnqueueAcquireGLObjects": (cl_int, [vp, cl_uint, P(vp), cl_uint, P(vp), P(vp)]),
    "clEnqueueReleaseGLObjects": (cl_int, [vp, cl_uint, P(vp), cl_uint, P(vp), P(vp)]),
    "clCreateEventFromGLsyncKHR": (vp, [vp, vp, P(cl_int)]),
}
EXTENSION_FUNCTIONS = frozenset({"clGetGLContextInfoKHR", "clCreateEventFromGLsyncKHR"})


def entry_point_address(platform_ptr: int, name: str) -> int:
    """The address of ``name``: an extension function from the platform, the rest from the loader.
    0 where there is none."""
    lib = libopencl()
    if name in EXTENSION_FUNCTIONS:
        return lib.clGetExtensionFunctionAddressForPlatform(platform_ptr, name.encode()) or 0
    try:
        return ctypes.cast(getattr(lib, name), vp).value or 0
    except AttributeError:
        return 0


def context_properties(pairs: list[tuple[str, int]], platform: cl.Platform) -> list[tuple[int, int]]:
    """(key, value) pairs for a context from the surface's GL pairs (``Surface.gl_sharing_properties``:
    "GL_CONTEXT_KHR", "GLX_DISPLAY_KHR" | "EGL_DISPLAY_KHR" ...) and the platform: cl_khr_gl_sharing
    9.6.5, "CL_GL_CONTEXT_KHR ... together with ... CL_GLX_DISPLAY_KHR / CL_EGL_DISPLAY_KHR"."""
    return [(PROPERTY_KEYS[key], int(value)) for key, value in pairs] + [(CL_CONTEXT_PLATFORM, platform.int_ptr)]


def _property_array(props: list[tuple[int, int]]):
    flat = [v for kv in props for v in kv] + [0]
    return (intptr * len(flat))(*flat)


class GlSharingFunctions:
    """The GL-sharing entry points of one platform, each resolved once by name."""

    def __init__(self, platform: cl.Platform) -> None:
        self.platform = platform
        self._calls: dict[str, MemObjectsCall] = {}

    def __getattr__(self, name: str):
        if name not in SIGNATURES:
            raise AttributeError(name)
        address = entry_point_address(self.platform.int_ptr, name)
        if not address:
            _raise(-59, name, f"{name} is not exported by platform {self.platform.name.strip()!r}")
        restype, argtypes = SIGNATURES[name]
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(address)
        setattr(self, name, fn)
        return fn

    # -- context ---------------------------------------------------------------------------------
    def devices_for_gl_context(self, props: list[tuple[int, int]], current: bool = True) -> list[int]:
        """clGetGLContextInfoKHR: the device handle(s) of the GL context (CURRENT_DEVICE_FOR_GL_CONTEXT_KHR,
        or every device that can share with it). Raises a pyopencl-style error with the CL status."""
        param = CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR if current else CL_DEVICES_FOR_GL_CONTEXT_KHR
        array = _property_array(props)
        out = (vp * 16)()
        size = ctypes.c_size_t()
        err = self.clGetGLContextInfoKHR(array, param, ctypes.sizeof(out), out, ctypes.byref(size))
        if err:
            _raise(err, "clGetGLContextInfoKHR")
        return [p for p in out[: size.value // ctypes.sizeof(vp)] if p]

    def create_context(self, props: list[tuple[int, int]], devices: list[cl.Device]) -> cl.Context:
        """clCreateContext with the GL properties (pyopencl's wheel cannot name them)."""
        err = cl_int()
        handles = (vp * len(devices))(*[d.int_ptr for d in devices])
        ptr = self.clCreateContext(_property_array(props), len(devices), handles, None, None, ctypes.byref(err))
        if err.value or not ptr:
            _raise(err.value or -5, "clCreateContext")
        return cl.Context.from_int_ptr(ptr, retain=False)

    # -- memory objects ----------------------------------------------------------------------------
    def create_from_gl_buffer(self, context: cl.Context, flags: int, name: int) -> cl.Buffer:
        err = cl_int()
        ptr = self.clCreateFromGLBuffer(context.int_ptr, flags, name, ctypes.byref(err))
        if err.value or not ptr:
            _raise(err.value or -5, "clCreateFromGLBuffer")
        return cl.Buffer.from_int_ptr(ptr, retain=False)

    def create_from_gl_texture(self, context: cl.Context, flags: int, target: int, level: int, name: int) -> cl.Image:
        err = cl_int()
        ptr = self.clCreateFromGLTexture(context.int_ptr, flags, target, level, name, ctypes.byref(err))
        if err.value or not ptr:
            _raise(err.value or -5, "clCreateFromGLTexture")
        return cl.Image.from_int_ptr(ptr, retain=False)

    def gl_object_info(self, mem: cl.MemoryObjectHolder) -> tuple[int, int]:
        """clGetGLObjectInfo: (CL_GL_OBJECT_* type, GL name) of a memory object made from a GL object."""
        kind, name = cl_uint(), cl_uint()
        err = self.clGetGLObjectInfo(mem.int_ptr, ctypes.byref(kind), ctypes.byref(name))
        if err:
            _raise(err, "clGetGLObjectInfo")
        return kind.value, name.value

    def hand_over_calls(self) -> tuple[MemObjectsCall, MemObjectsCall]:
        """(acquire, release): prepared calls of clEnqueue{Acquire,Release}GLObjects (their C
        signature is cl_khr_external_memory's, so one prepared form serves both families)."""
        return (MemObjectsCall(self.clEnqueueAcquireGLObjects, "clEnqueueAcquireGLObjects"),
                MemObjectsCall(self.clEnqueueReleaseGLObjects, "clEnqueueReleaseGLObjects"))

    # -- cl_khr_gl_event ---------------------------------------------------------------------------
    def create_event_from_gl_sync(self, context: cl.Context, gl_sync: int) -> cl.Event:
        """Only ever on a context created from a GL context: on a plain one NVIDIA's driver 580
        crashes (the process, not an error code)."""
        err = cl_int()
        ptr = self.clCreateEventFromGLsyncKHR(context.int_ptr, vp(gl_sync), ctypes.byref(err))
        if err.value or not ptr:
            _raise(err.value or -5, "clCreateEventFromGLsyncKHR")
        return cl.Event.from_int_ptr(ptr, retain=False)


def current_gl_pairs(gl_platform: str) -> list[tuple[str, int]]:
    """The current GL context's pairs for ``context_properties`` (GLX or EGL), read through the
    window system's own library; a 0 value where none is current."""
    if gl_platform == "glx":
        lib = ctypes.CDLL("libGL.so.1")
        get_ctx, get_dpy = lib.glXGetCurrentContext, lib.glXGetCurrentDisplay
        key = "GLX_DISPLAY_KHR"
    elif gl_platform == "egl":
        lib = ctypes.CDLL("libEGL.so.1")
        get_ctx, get_dpy = lib.eglGetCurrentContext, lib.eglGetCurrentDisplay
        key = "EGL_DISPLAY_KHR"
    else:
        raise ValueError(f"no GL-sharing properties for a {gl_platform!r} context")
    get_ctx.restype = get_dpy.restype = vp
    get_ctx.argtypes = get_dpy.argtypes = []
    return [("GL_CONTEXT_KHR", get_ctx() or 0), (key, get_dpy() or 0)]


def device_by_handle(platform: cl.Platform, handle: int) -> cl.Device | None:
    """The platform's pyopencl device of a cl_device_id handle (None: not one of its devices)."""
    for device in platform.get_devices():
        if device.int_ptr == handle:
            return device
    return None


__all__ = ["GlSharingFunctions", "context_properties", "current_gl_pairs", "device_by_handle"]
