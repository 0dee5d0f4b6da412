"""Choose the OpenCL device (``--cl-device PLATFORM_SUBSTRING[:INDEX]`` or ``GLSHARE_CL_DEVICE``)."""
from __future__ import annotations

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

    @property
    def label(self) -> str:
        return f"{self.platform.name.strip()}: {self.device.name.strip()}"


def all_devices() -> list[DeviceChoice]:
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    for platform in platforms:
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        out.extend(DeviceChoice(platform, d, i) for i, d in enumerate(devices))
    return out


def describe_devices(choices: list[DeviceChoice]) -> str:
    if not choices:
        return "no OpenCL device at all (is an ICD such as pocl-opencl-icd installed?)"
    return "; ".join(f"{c.platform.name.strip()}:{c.index} = {c.device.name.strip()}" for c in choices)


def select_device(selector: str | None) -> DeviceChoice:
    """The device the selector names; without one, the first GPU, else PoCL, else the first device.

    Raises UsageError (exit 2) listing the devices that exist when nothing matches.
    """
    choices = all_devices()
    if not choices:
        raise UsageError("no OpenCL device found: " + describe_devices(choices))
    if not selector:
        # a GPU where there is one; else PoCL, the CPU implementation glshare was measured on
        # (../shared/PLATFORMS.md), whatever order the ICD loader found the platforms in
        gpus = [c for c in choices if c.device.type & cl.device_type.GPU]
        pocl = [c for c in choices if "portable computing language" in c.platform.name.lower()]
        return (gpus or pocl or choices)[0]
    text, _, index_text = selector.rpartition(":") if ":" in selector else (selector, "", "")
    if not text:
        text, index_text = selector, ""
    try:
        index = int(index_text) if index_text else 0
    except ValueError:
        raise UsageError(f"--cl-device {selector!r}: INDEX must be a number; devices: {describe_devices(choices)}")
    matching = [c for c in choices if text.lower() in c.platform.name.lower() or text.lower() in c.platform.vendor.lower()]
    if not matching:
        raise UsageError(f"--cl-device {selector!r} matches no platform; devices: {describe_devices(choices)}")
    if index >= len(matching):
        raise UsageError(f"--cl-device {selector!r}: no device {index} on that platform; devices: {describe_devices(choices)}")
    return matching[index]


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
