"""Which acquire/release driver calls are safe on the OpenCL implementation at hand, and why.

This is the ONE place that lists them. The error lab (``app/lab/lab.py``) calls the driver's
clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects only where this table allows it, and only
when the device lists cl_khr_gl_sharing (an entry point the device does not list is never called:
PoCL aborts the process on them). Facts were measured on 2026-12-01: ../shared/PLATFORMS.md (the
CPU machine: PoCL, Mesa rusticl) and ../shared/gpu/README.md (NVIDIA H200).

The raw entry points take C pointers through ctypes, so the lab can pass what pyopencl refuses
to build (a NULL list with a count, a count with an empty list, a NULL handle in a list).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import pyopencl as cl

from app.validate.spec import ENTRY_POINTS

GL_SHARING_EXTENSIONS = ("cl_khr_gl_sharing", "cl_APPLE_gl_sharing")


@dataclass(frozen=True)
class Implementation:
    """An OpenCL implementation and what its acquire/release entry points do with bad input.

    ``no_calls``: when set, no GL-sharing entry point may be called at all (the reason).
    ``unsafe``: lab case -> why calling the driver with it is unsafe (both calls).
    ``known``: lab case -> what the driver was seen to answer instead of the spec's code.
    """

    key: str
    matches: tuple[str, ...]  # lower-case substrings of the platform's name, vendor or version
    no_calls: str = ""
    unsafe: dict[str, str] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        "pocl", ("portable computing language", "pocl"),
        no_calls="PoCL lists no cl_khr_gl_sharing and every GL-sharing entry point aborts the whole process "
                 "(clCreateFromGLBuffer: 'The entire clCreateFromGLBuffer call is unimplemented'; PoCL 3.1, "
                 "../shared/PLATFORMS.md): no driver call is safe for GL objects"),
    Implementation(
        "rusticl", ("rusticl",),
        unsafe={"num_given_list_null": "rusticl SEGFAULTS on (num_objects=1, mem_objects=NULL) (Mesa 25.0.7 and "
                                       "26.1.6, ../shared/PLATFORMS.md)"},
        known={"num_zero_list_given": "rusticl returned -34 (CL_INVALID_CONTEXT) for (0, non-NULL list), not "
                                      "CL_INVALID_VALUE (measured on a plain context, ../shared/PLATFORMS.md)",
               "not_gl_object": "rusticl returned -34 (CL_INVALID_CONTEXT) for a plain buffer, not "
                                "CL_INVALID_GL_OBJECT (measured on a plain context)"},
        notes=("rusticl lists cl_khr_gl_sharing only on hardware drivers (radeonsi, iris); on llvmpipe a "
               "GL-property context fails with -59, so glshare's gl_sharing backend is refused there",)),
    Implementation(
        "nvidia", ("nvidia",),
        no_calls="NVIDIA's OpenCL (driver 580.159.04) lists no cl_khr_gl_sharing and a GL-property context fails "
                 "with -59 (CL_INVALID_OPERATION); clCreateEventFromGLsyncKHR on a plain context crashed the "
                 "process (../shared/gpu/README.md)",
        notes=("zero-copy there goes through external memory (clEnqueueAcquireExternalMemObjectsKHR), which the "
               "validator checks with the same rules",)),
)

OTHER = Implementation("other", ())


def identify(platform: cl.Platform) -> Implementation:
    """The table entry for ``platform`` (``OTHER`` when none matches)."""
    text = " ".join((platform.name, platform.vendor, platform.version)).lower()
    for impl in IMPLEMENTATIONS:
        if any(m in text for m in impl.matches):
            return impl
    return OTHER


def lists_gl_sharing(platform: cl.Platform, device: cl.Device) -> bool:
    exts = set(device.extensions.split()) | set(platform.extensions.split())
    return any(e in exts for e in GL_SHARING_EXTENSIONS)


def no_call_reason(impl: Implementation, platform: cl.Platform, device: cl.Device, backend_name: str) -> str | None:
    """Why the driver may not be called at all here, or None when calls are allowed (case by case)."""
    if impl.no_calls:
        return impl.no_calls
    if not lists_gl_sharing(platform, device):
        return (f"{device.name.strip()!r} does not list cl_khr_gl_sharing: glshare never calls an extension entry "
                "point the device does not list")
    if backend_name != "gl_sharing":
        return f"the lab runs on {backend_name}, whose objects were not made from GL objects by the driver"
    return None


def unsafe_reason(impl: Implementation, case: str) -> str | None:
    return impl.unsafe.get(case)


class RawEntryPoints:
    """clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects from the ICD loader, taking raw pointers.

    Only construct it after ``no_call_reason`` returned None: looking the symbols up is harmless,
    calling them on an implementation of the table's ``no_calls`` is not.
    """

    def __init__(self) -> None:
        from app.cl.ext import libopencl

        vp = ctypes.c_void_p
        self._fns = {}
        for call, name in ENTRY_POINTS.items():
            fn = getattr(libopencl(), name)
            fn.restype = ctypes.c_int32
            fn.argtypes = [vp, ctypes.c_uint32, vp, ctypes.c_uint32, vp, vp]
            self._fns[call] = fn

    def __call__(self, call: str, queue: int, num_objects: int, mem_objects, num_events: int,
                 event_wait_list, event_out) -> int:
        """Pointers are ints, ctypes arrays or None (NULL). Returns the CL status."""
        return int(self._fns[call](queue or None, num_objects, mem_objects, num_events, event_wait_list, event_out))
