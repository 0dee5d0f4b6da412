"""Local work sizes: checked against the device's and the kernel's limits before any launch, and
the global size rounded up so that every launch divides evenly.

``--local-size WxH`` (or the panel) asks for one work-group shape; None leaves the choice to the
driver (``local_work_size = NULL``). The rules are clEnqueueNDRangeKernel's (OpenCL 3.0 API
specification, 5.10): CL_INVALID_WORK_GROUP_SIZE when the work-items of a group exceed
CL_KERNEL_WORK_GROUP_SIZE (at most CL_DEVICE_MAX_WORK_GROUP_SIZE), CL_INVALID_WORK_ITEM_SIZE when
one dimension exceeds CL_DEVICE_MAX_WORK_ITEM_SIZES, and, without non-uniform work-groups
(OpenCL 1.x, or 3.0 devices that do not support them), CL_INVALID_WORK_GROUP_SIZE when the global
size is not a multiple of the local size. glshare's kernels return early for work-items past the
image or the count, so ``launch_sizes`` rounds the global size up instead of refusing sizes.
"""
from __future__ import annotations

from typing import Iterable

import pyopencl as cl

from app.errors import UsageError

LocalSize = tuple[int, int]


def group_items(local: LocalSize) -> int:
    return int(local[0]) * int(local[1])


def local_shape(local: LocalSize | None, dims: int) -> tuple[int, ...] | None:
    """The local size as a launch of ``dims`` dimensions takes it: (W, H) for 2-D kernels, (W * H,)
    for 1-D ones (the particles); None stays None (the driver's choice)."""
    if local is None:
        return None
    if dims == 1:
        return (group_items(local),)
    return (int(local[0]), int(local[1]))


def check_local_size(local: LocalSize | None, device: cl.Device, kernels: Iterable[cl.Kernel], dims: int,
                     what: str) -> LocalSize | None:
    """``local`` when every kernel of ``kernels`` can run with it on ``device``, else UsageError
    with one line naming the limit; None (the driver's choice) always passes."""
    if local is None:
        return None
    w, h = int(local[0]), int(local[1])
    if w < 1 or h < 1:
        raise UsageError(f"{what}: local size {w}x{h}: both sides must be at least 1")
    shape = local_shape((w, h), dims)
    items = group_items((w, h))
    sizes = list(device.max_work_item_sizes)
    for axis, n in enumerate(shape):
        limit = int(sizes[axis])
        if n > limit:
            raise UsageError(f"{what}: local size {w}x{h}: dimension {axis} is {n} work-items, more than the "
                             f"device's CL_DEVICE_MAX_WORK_ITEM_SIZES[{axis}] = {limit}")
    device_max = int(device.max_work_group_size)
    if items > device_max:
        raise UsageError(f"{what}: local size {w}x{h} is {items} work-items a group, more than the device's "
                         f"CL_DEVICE_MAX_WORK_GROUP_SIZE = {device_max}")
    for kernel in kernels:
        kernel_max = int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))
        if items > kernel_max:
            raise UsageError(f"{what}: local size {w}x{h} is {items} work-items a group, more than kernel "
                             f"{kernel.function_name}'s CL_KERNEL_WORK_GROUP_SIZE = {kernel_max} on this device")
    return (w, h)


def launch_sizes(global_size: tuple[int, ...], local: tuple[int, ...] | None) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """(global, local) for clEnqueueNDRangeKernel: each global dimension rounded up to a multiple of
    the local one (the kernels skip the extra work-items), or unchanged with no local size."""
    if local is None:
        return tuple(int(g) for g in global_size), None
    return tuple(-(-int(g) // int(n)) * int(n) for g, n in zip(global_size, local)), tuple(int(n) for n in local)
