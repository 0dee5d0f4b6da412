"""Which driver calls the error lab may make on the OpenCL implementation at hand, and how.

This is the ONE place that decides it. Each call family (``app/validate/families.py``) registers
its entry points and the extension the device (or platform) must list; the planar family's entry
point takes only Direct3D 11 interop images, which glshare never makes: it is never called.

An entry point the device does not list is never looked up or called (PoCL aborts the whole
process on GL-sharing entry points), except GL sharing's where the gl_sharing backend opened: its
trial in a child process (app/sharing/gl_trial.py) saw them work (NVIDIA lists none and shares). Beyond that, ``IMPLEMENTATIONS`` records per implementation
what is unsafe or known (../shared/PLATFORMS.md for PoCL, rusticl and Intel's CPU runtime;
../shared/gpu/README.md for NVIDIA's driver 580, where clCreateEventFromGLsyncKHR on a non-GL
context crashes the process: the lab never calls it).

The raw entry points take C pointers through ctypes (ints, ctypes arrays, None for NULL), so the
lab can pass what pyopencl refuses to build. The lab never hands them a dangling handle: objects
glshare released go in as NULL (``app/lab/lab.py``). ``EntryPoints`` is the interface the lab
calls; tests substitute a recording stand-in for it.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Protocol

import pyopencl as cl

from app.cl.ext import libopencl
from app.validate import families as _registry

CL_SEMAPHORE_TYPE_KHR = 0x203D
CL_SEMAPHORE_TYPE_BINARY_KHR = 1


@dataclass(frozen=True)
class Implementation:
    """An OpenCL implementation and what its entry points do with bad input.

    ``no_calls``: family -> why none of its entry points may be called here.
    ``unsafe``: (family, case) -> why calling the driver with that case is unsafe.
    ``known``: (family, case) -> what the driver was seen to answer instead of the spec's code.
    """

    key: str
    matches: tuple[str, ...]  # lower-case substrings of the platform's name, vendor or version
    excludes: tuple[str, ...] = ()  # ... and substrings that rule it out (another product of the vendor)
    no_calls: dict[str, str] = field(default_factory=dict)
    unsafe: dict[tuple[str, str], str] = field(default_factory=dict)
    known: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


_POCL_ABORT = ("PoCL lists no cl_khr_gl_sharing and every GL-sharing entry point aborts the whole process "
               "(clCreateFromGLBuffer: 'The entire clCreateFromGLBuffer call is unimplemented'; PoCL 3.1, "
               "../shared/PLATFORMS.md)")

IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        "pocl", ("portable computing language", "pocl"),
        no_calls={"gl_sharing": _POCL_ABORT,
                  "external_memory": "PoCL 3.1 lists no cl_khr_external_memory (it imports no external memory)",
                  "semaphore": "PoCL 3.1 lists no cl_khr_semaphore"}),
    Implementation(
        "intel-cpu", ("intel(r) opencl",), excludes=("graphics",),  # not Intel's GPU runtime (NEO)
        no_calls={"gl_sharing": "Intel's CPU runtime (intel-opencl-rt 2026.2) lists no cl_khr_gl_sharing",
                  "external_memory": "Intel's CPU runtime (intel-opencl-rt 2026.2) lists no cl_khr_external_memory",
                  "semaphore": "Intel's CPU runtime (intel-opencl-rt 2026.2) lists no cl_khr_semaphore"}),
    Implementation(
        "rusticl", ("rusticl",),
        unsafe={("gl_sharing", "num_given_list_null"): "rusticl SEGFAULTS on (num_objects=1, mem_objects=NULL) "
                                                       "(Mesa 25.0.7 and 26.1.6, ../shared/PLATFORMS.md)",
                ("gl_sharing", "combo_null_queue_null_list"): "it passes (num_objects=1, mem_objects=NULL), on "
                                                              "which rusticl SEGFAULTS"},
        known={("gl_sharing", "num_zero_list_given"): "rusticl returned -34 (CL_INVALID_CONTEXT) for (0, non-NULL "
                                                      "list), not CL_INVALID_VALUE (a plain context, "
                                                      "../shared/PLATFORMS.md)",
               ("gl_sharing", "not_gl_object"): "rusticl returned -34 (CL_INVALID_CONTEXT) for a plain buffer, not "
                                                "CL_INVALID_GL_OBJECT (a plain context)"},
        notes=("rusticl lists cl_khr_gl_sharing only on hardware drivers (radeonsi, iris); on llvmpipe a "
               "GL-property context fails with -59, so glshare's gl_sharing backend is refused there",)),
    Implementation(
        "nvidia", ("nvidia",),
        notes=("NVIDIA's OpenCL (driver 580) lists no cl_khr_gl_sharing, yet shares with a GLX context (glshare's "
               "trial in a child process sees it work): the lab calls the gl_sharing family where the gl_sharing "
               "backend opened (glshare errors --window); with an EGL context the GL-property context fails "
               "with -59, and the lab calls only external memory and semaphores there. "
               "clCreateEventFromGLsyncKHR, which crashed the process on a plain context, is never called by the lab",)),
)

OTHER = Implementation("other", ())


def identify(platform: cl.Platform) -> Implementation:
    """The table entry for ``platform`` (``OTHER`` when none matches)."""
    text = " ".join((platform.name, platform.vendor, platform.version)).lower()
    for impl in IMPLEMENTATIONS:
        if any(m in text for m in impl.matches) and not any(x in text for x in impl.excludes):
            return impl
    return OTHER


def listed_extensions(platform: cl.Platform, device: cl.Device) -> set[str]:
    return set(device.extensions.split()) | set(platform.extensions.split())


def no_call_reason(impl: Implementation, platform: cl.Platform, device: cl.Device, backend_name: str,
                   family: str = "gl_sharing") -> str | None:
    """Why no entry point of ``family`` may be called here, or None (then case by case)."""
    if family in impl.no_calls:
        return impl.no_calls[family]
    fam = _registry.get(family)
    if fam.validator == "planar":
        return ("clGetPlaneFromImageAMD takes only Direct3D 11 interop images, which glshare never makes "
                "(glshare runs without Direct3D 11): the contract is emulated on glshare's own YUV images")
    if family == "gl_sharing" and backend_name == "gl_sharing":
        return None  # the backend opened: glshare's trial in a child process saw these entry points work
    wanted = fam.extensions
    if not listed_extensions(platform, device) & set(wanted):
        return (f"{device.name.strip()!r} does not list {wanted[0]}: glshare never calls an extension entry point "
                "the device does not list")
    needed = fam.backend  # the objects a family's calls take must have been made by that backend
    if needed and backend_name != needed:
        return f"the lab runs on {backend_name}, whose objects were not made by {needed}"
    return None


def unsafe_reason(impl: Implementation, family: str, case: str) -> str | None:
    return impl.unsafe.get((family, case))


def known_answer(impl: Implementation, family: str, case: str) -> str:
    return impl.known.get((family, case), "")


class EntryPoints(Protocol):
    """What the lab calls. Pointers are ints, ctypes arrays or None (NULL); returns the CL status."""

    def offers(self, family: str) -> bool: ...

    def __call__(self, family: str, call: str, queue: int, num: int, objects, num_events: int,
                 event_wait_list, event_out) -> int: ...

    def create_semaphore(self, context: int) -> int: ...

    def release_semaphore(self, handle: int) -> None: ...


_vp = ctypes.c_void_p
_u32 = ctypes.c_uint32
_GL_ENTRY_POINTS = ("clEnqueueAcquireGLObjects", "clEnqueueReleaseGLObjects")
_MEM_CALL = ctypes.CFUNCTYPE(ctypes.c_int32, _vp, _u32, _vp, _u32, _vp, _vp)
_SEM_CALL = ctypes.CFUNCTYPE(ctypes.c_int32, _vp, _u32, _vp, _vp, _u32, _vp, _vp)
_SEM_CREATE = ctypes.CFUNCTYPE(_vp, _vp, _vp, ctypes.POINTER(ctypes.c_int32))
_SEM_RELEASE = ctypes.CFUNCTYPE(ctypes.c_int32, _vp)


class RawEntryPoints:
    """The driver's entry points of the families ``families``, taking raw pointers.

    GL sharing's come from the ICD loader's exports; the KHR extensions' from
    clGetExtensionFunctionAddressForPlatform. Build it only with families ``no_call_reason``
    allowed: looking a symbol up is harmless, calling an unlisted one is not.
    """

    def __init__(self, platform: cl.Platform, families: tuple[str, ...]) -> None:
        from app.cl import gl_sharing as glcl

        self.families = frozenset(families)
        lib = libopencl()
        self._fns: dict[tuple[str, str], object] = {}
        semaphores = {f for f in self.families if _registry.get(f).validator == "semaphore"}
        for family in self.families:
            proto = _SEM_CALL if family in semaphores else _MEM_CALL
            for call, name in _registry.get(family).entry_points.items():
                # the ICD loader exports the cl_khr_gl_sharing entry points, found where glshare's own
                # calls find them (app.cl.gl_sharing.entry_point_address); the KHR extensions' are looked up
                address = glcl.entry_point_address(platform.int_ptr, name) if name in _GL_ENTRY_POINTS else 0
                if address:
                    self._fns[family, call] = proto(address)
                    continue
                try:
                    fn = getattr(lib, name)
                    fn.restype = ctypes.c_int32
                    fn.argtypes = list(proto._argtypes_)
                except AttributeError:
                    fn = self._extension(lib, platform, name, proto)
                self._fns[family, call] = fn
        if semaphores:
            self._create = self._extension(lib, platform, "clCreateSemaphoreWithPropertiesKHR", _SEM_CREATE)
            self._release = self._extension(lib, platform, "clReleaseSemaphoreKHR", _SEM_RELEASE)

    @staticmethod
    def _extension(lib, platform: cl.Platform, name: str, proto):
        address = lib.clGetExtensionFunctionAddressForPlatform(platform.int_ptr, name.encode())
        if not address:
            raise LookupError(f"{name} is not exported by platform {platform.name.strip()!r}")
        return proto(address)

    def offers(self, family: str) -> bool:
        return family in self.families

    def __call__(self, family: str, call: str, queue: int, num: int, objects, num_events: int,
                 event_wait_list, event_out) -> int:
        fn = self._fns[family, call]
        if _registry.get(family).validator == "semaphore":  # binary semaphores: sema_payload_list NULL
            return int(fn(queue or None, num, objects, None, num_events, event_wait_list, event_out))
        return int(fn(queue or None, num, objects, num_events, event_wait_list, event_out))

    def create_semaphore(self, context: int) -> int:
        """A binary semaphore without an external handle (what the conformance tests make)."""
        props = (ctypes.c_uint64 * 3)(CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR, 0)
        err = ctypes.c_int32(0)
        handle = self._create(context, props, ctypes.byref(err))
        if err.value or not handle:
            raise cl.RuntimeError(cl._cl._ErrorRecord(msg="clCreateSemaphoreWithPropertiesKHR failed",
                                                      code=int(err.value or -5),
                                                      routine="clCreateSemaphoreWithPropertiesKHR"))
        return int(handle)

    def release_semaphore(self, handle: int) -> None:
        self._release(handle)
