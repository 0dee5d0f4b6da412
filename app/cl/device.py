"""Choose the OpenCL device (``--cl-device PLATFORM_SUBSTRING[:INDEX]`` or ``GLSHARE_CL_DEVICE``)."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import re
from dataclasses import dataclass

import pyopencl as cl

from app.diagnostics import live
from app.errors import UsageError

GL_SHARING_EXTENSIONS = ("cl_khr_gl_sharing", "cl_APPLE_gl_sharing")  # either names the GL-sharing entry points
# the CL extensions that matter for sharing with GL (info, the panel's Capabilities tab)
CL_SHARING_EXTENSIONS = (
    "cl_khr_gl_sharing", "cl_khr_gl_event", "cl_khr_gl_depth_images", "cl_khr_gl_msaa_sharing",
    "cl_khr_egl_image", "cl_khr_egl_event", "cl_khr_external_memory", "cl_khr_external_memory_opaque_fd",
    "cl_khr_external_memory_dma_buf", "cl_khr_external_memory_win32", "cl_khr_semaphore",
    "cl_khr_external_semaphore", "cl_khr_external_semaphore_opaque_fd", "cl_amd_planar_yuv",
    "cl_khr_image2d_from_buffer",
)


@dataclass(frozen=True)
class DeviceChoice:
    platform: cl.Platform
    device: cl.Device
    index: int  # within the platform
    explicit: bool = False  # named by --cl-device / GLSHARE_CL_DEVICE (not glshare's default choice)

    @property
    def label(self) -> str:
        return f"{self.platform.name.strip()}: {self.device.name.strip()}"


def all_devices(problems: list[str] | None = None) -> list[DeviceChoice]:
    """Every device of every platform; a platform that answers with an error (or no device) adds a
    line to ``problems`` when a list is given."""
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        platforms = []
        if problems is not None:
            problems.append(f"the ICD loader found no platform ({exc})")
    for platform in platforms:
        try:
            devices = platform.get_devices()
        except cl.Error as exc:
            devices = []
            if problems is not None:
                problems.append(f"{platform.name.strip()}: {exc}")
        if not devices and problems is not None:
            why = pocl_cache_problem() if "portable" in platform.name.lower() else None
            if why:
                problems.append(why)
        out.extend(DeviceChoice(platform, d, i) for i, d in enumerate(devices))
    return out


def load_drivers() -> bool:
    """Have the OpenCL ICD loader that pyopencl uses load every platform's driver and list each
    platform's devices, through ctypes (whose calls let the GIL go): a thread's work, beside the
    imports (app/commands/run.py). pyopencl's own clGetPlatformIDs then gets the platforms the
    loader keeps, already loaded. Returns whether the loader was found and asked; errors are not
    raised here (``select_device`` meets them again and reports them)."""
    from app.cl.ext import loader_path  # (imported by the run in any case)

    try:
        lib = ctypes.CDLL(loader_path())  # (its own function objects: their argtypes set here only)
        count = ctypes.c_uint32()
        if lib.clGetPlatformIDs(0, None, ctypes.byref(count)) != 0 or not count.value:
            return True
        platforms = (ctypes.c_void_p * count.value)()
        if lib.clGetPlatformIDs(count.value, platforms, None) != 0:
            return True
        lib.clGetDeviceIDs.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_uint32)]
        for platform in platforms:
            n = ctypes.c_uint32()
            lib.clGetDeviceIDs(platform, cl.device_type.ALL, 0, None, ctypes.byref(n))
    except (OSError, AttributeError):
        return False
    return True


def pocl_cache_folder() -> str:
    """The kernel cache folder PoCL makes at start-up: $POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl/kcache,
    else $HOME/.cache/pocl/kcache (PoCL's pocl_cache_init_topdir)."""
    if os.environ.get("POCL_CACHE_DIR"):
        return os.environ["POCL_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME") or "/", ".cache")
    return os.path.join(base, "pocl", "kcache")


def pocl_cache_problem() -> str | None:
    """Why PoCL cannot make its kernel cache folder (it then lists no device at all), or None.

    Nothing is created: the first folder on the way that exists must be a writable folder."""
    folder = pocl_cache_folder()
    p = folder
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    if os.path.isdir(p) and os.access(p, os.W_OK | os.X_OK) and not (os.statvfs(p).f_flag & os.ST_RDONLY):
        return None
    if not os.path.isdir(p):
        cause = f"{p} is not a folder"
    elif os.statvfs(p).f_flag & os.ST_RDONLY:
        cause = f"{p} is on a read-only file system"
    else:
        cause = f"{p} is not writable"
    source = "POCL_CACHE_DIR" if os.environ.get("POCL_CACHE_DIR") else (
        "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "HOME")
    fix = ("point POCL_CACHE_DIR at a writable folder" if source == "POCL_CACHE_DIR"
           else f"set POCL_CACHE_DIR to a writable folder, or fix ${source}")
    return f"PoCL lists no device because it cannot create its kernel cache {folder} ({cause}, from ${source}): {fix}"


def describe_devices(choices: list[DeviceChoice], problems: list[str] | None = None) -> str:
    if not choices:
        if problems:
            return "; ".join(problems)
        return "no OpenCL device at all (is an ICD such as pocl-opencl-icd installed?)"
    return "; ".join(f"{c.platform.name.strip()}:{c.index} = {c.device.name.strip()}" for c in choices)


def _named(selector: str) -> str:
    source = getattr(selector, "source", "--cl-device")
    return f"{source}={str(selector)!r}" if source.isupper() else f"{source} {str(selector)!r}"


def parse_selector(selector: str | None) -> tuple[str, int] | None:
    """(platform substring, index) of ``PLATFORM[:INDEX]``; None for no selector. Raises
    UsageError (one line) when INDEX is not a whole number of 0 or more, or PLATFORM is empty."""
    if not selector:
        return None
    text, sep, index_text = str(selector).rpartition(":")
    if not sep:
        text, index_text = str(selector), ""
    if not text.strip():
        raise UsageError(f"{_named(selector)}: give a platform name (or part of one) before the ':'")
    if index_text == "":
        return text, 0
    if not re.fullmatch(r"\d+", index_text.strip()):
        raise UsageError(f"{_named(selector)}: INDEX must be a whole number of 0 or more (the device's place "
                         f"on its platform), not {index_text!r}")
    return text, int(index_text)


def select_device(selector: str | None) -> DeviceChoice:
    """The device the selector names; without one, the first GPU, else PoCL, else the first device.

    Raises UsageError (exit 2) listing the devices that exist when nothing matches, and naming
    the real cause when there are none (PoCL without a cache folder).
    """
    parsed = parse_selector(selector)
    problems: list[str] = []
    choices = all_devices(problems)
    if not choices:
        raise UsageError("no OpenCL device found: " + describe_devices(choices, problems))
    if parsed is None:
        # a GPU where there is one; else PoCL, the CPU implementation glshare is tested against
        # (../shared/PLATFORMS.md), whatever order the ICD loader found the platforms in
        gpus = [c for c in choices if c.device.type & cl.device_type.GPU]
        pocl = [c for c in choices if "portable computing language" in c.platform.name.lower()]
        return (gpus or pocl or choices)[0]
    text, index = parsed
    matching = [c for c in choices if text.lower() in c.platform.name.lower() or text.lower() in c.platform.vendor.lower()]
    if not matching:
        raise UsageError(f"{_named(selector)} matches no platform; devices: {describe_devices(choices)}")
    if index >= len(matching):
        raise UsageError(f"{_named(selector)}: no device {index} on that platform; devices: {describe_devices(choices)}")
    return dataclasses.replace(matching[index], explicit=True)


class ComputeQueue:
    """A profiling-enabled command queue with its label, counted while it lives."""

    def __init__(self, context: cl.Context, device: cl.Device, label: str, owner: str = "") -> None:
        self.label, self.owner = label, owner
        self.queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
        live.created("cl_queue", owner)

    def release(self) -> None:
        queue, self.queue = self.queue, None
        if queue is not None:
            queue.finish()  # pyopencl frees the queue with its last reference (no release())
            live.released("cl_queue", self.owner)

    def __repr__(self) -> str:
        return f"<ComputeQueue {self.label!r}>"


# -- the device GL runs on -----------------------------------------------------------------------------
CL_DEVICE_UUID_KHR = 0x106A  # cl_khr_device_uuid: 16 bytes, CL_UUID_SIZE_KHR
GL_NUM_DEVICE_UUIDS_EXT = 0x9596  # GL_EXT_memory_object: the GL context's devices ...
GL_DEVICE_UUID_EXT = 0x9597  # ... each one's UUID through glGetUnsignedBytei_vEXT (GL_UUID_SIZE_EXT 16)


def uuid_text(uuid: bytes | None) -> str:
    """A 16-byte UUID as 8-4-4-4-12 hex (what nvidia-smi and vulkaninfo print); "none" for None."""
    if not uuid:
        return "none"
    h = uuid.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def cl_device_uuid(device) -> bytes | None:
    """cl_khr_device_uuid's CL_DEVICE_UUID_KHR, or None where the device does not list it."""
    import ctypes

    if "cl_khr_device_uuid" not in device.extensions.split():
        return None
    from app.cl.ext import libopencl

    buf = (ctypes.c_ubyte * 16)()
    if libopencl().clGetDeviceInfo(device.int_ptr, CL_DEVICE_UUID_KHR, 16, buf, None):
        return None
    return bytes(buf)


def gl_device_uuids() -> list[bytes]:
    """The current GL context's device UUIDs (GL_EXT_memory_object: GL_NUM_DEVICE_UUIDS_EXT, then
    glGetUnsignedBytei_vEXT(GL_DEVICE_UUID_EXT, i)); [] where GL does not export the query."""
    import ctypes

    from OpenGL import platform

    address = platform.PLATFORM.getExtensionProcedure(b"glGetUnsignedBytei_vEXT")
    if not address:
        return []
    from app.gl import api as GL

    get = ctypes.CFUNCTYPE(None, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_ubyte))(address)
    out = []
    for i in range(int(GL.glGetIntegerv(GL_NUM_DEVICE_UUIDS_EXT))):
        buf = (ctypes.c_ubyte * 16)()
        get(GL_DEVICE_UUID_EXT, i, buf)
        out.append(bytes(buf))
    return out


def uuid_mismatch(chosen: str, chosen_uuid: bytes | None, gl_uuids: list[bytes],
                  others: list[tuple[str, bytes | None]], explicit: bool) -> str | None:
    """Why memory shared through UUID-matched devices (external memory: "the device UUIDs must
    match", Vulkan's and GL_EXT_memory_object's rule, which cl_khr_external_memory follows) cannot
    work from the chosen CL device, or None. Nothing to compare (no UUID on either side) is None.
    ``others``: (label, UUID) of the other CL devices, to name the one that matches."""
    if not gl_uuids or chosen_uuid is None or chosen_uuid in gl_uuids:
        return None
    gl_text = ", ".join(uuid_text(u) for u in gl_uuids)
    match = next((label for label, u in others if u is not None and u in gl_uuids), None)
    which = "--cl-device names" if explicit else "glshare chose"
    hint = f"; {match} is GL's: choose it with --cl-device" if match else "; no CL device has GL's UUID"
    return f"{which} {chosen} (UUID {uuid_text(chosen_uuid)}), but GL runs on the device with UUID {gl_text}{hint}"
