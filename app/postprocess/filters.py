"""The post-process filters' CL side: kernels/postprocess.cl built once, one launch per frame.

``PostprocessFilters.enqueue`` filters an RGBA8 image (CL_RGBA, CL_UNORM_INT8: what a GL RGBA8
texture is in CL) into another of the same size; ``enqueue_buffers`` does the same on pitched
uchar4 buffers, for a backend that gives textures to CL as buffers. The filters and their
arithmetic are described in kernels/postprocess.cl; app/postprocess/reference.py is the numpy
reference that matches them exactly.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from app.cl.programs import KernelProgram
from app.cl.worksize import launch_sizes
from app.errors import UsageError
from app.postprocess.reference import MAX_BLUR_RADIUS, check_radius

FILTERS = ("sobel", "blur")


def check_filter(name: str) -> str:
    if name not in FILTERS:
        raise UsageError(f"unknown filter {name!r}; choose {' or '.join(FILTERS)}")
    return name


class PostprocessFilters:
    """kernels/postprocess.cl on one context. ``kind`` is "sobel" or "blur" (with ``radius``)."""

    max_radius = MAX_BLUR_RADIUS

    def __init__(self, context: cl.Context, owner: str = "") -> None:
        self.label = "postprocess filters"
        self.program = KernelProgram(context, "postprocess.cl", owner=owner)

    def enqueue(self, queue: cl.CommandQueue, src: cl.Image, dst: cl.Image, kind: str, radius: int = 1,
                wait_for=None, local_size: tuple[int, int] | None = None) -> cl.Event:
        """Filter ``src`` into ``dst`` (both RGBA8 images of one size); returns the kernel's event.
        ``local_size``: work-groups of that shape (checked by the caller, app/cl/worksize.py; the
        global size is rounded up to it), None for the driver's choice.

        Raises:
            UsageError: an unknown filter, a radius outside 0 .. max_radius, sizes that differ.
        """
        check_filter(kind)
        w, h = src.get_image_info(cl.image_info.WIDTH), src.get_image_info(cl.image_info.HEIGHT)
        dw, dh = dst.get_image_info(cl.image_info.WIDTH), dst.get_image_info(cl.image_info.HEIGHT)
        if (w, h) != (dw, dh):
            raise UsageError(f"postprocess: source {w}x{h} and destination {dw}x{dh} differ")
        if kind == "sobel":
            kernel = self.program.kernel("sobel")
            kernel.set_args(src, dst)
        else:
            kernel = self.program.kernel("box_blur")
            kernel.set_args(src, dst, np.int32(check_radius(radius)))
        global_size, local = launch_sizes((w, h), local_size)
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, local, wait_for=wait_for)

    def enqueue_buffers(self, queue: cl.CommandQueue, src: cl.Buffer, src_pitch: int, dst: cl.Buffer,
                        dst_pitch: int, width: int, height: int, kind: str, radius: int = 1,
                        wait_for=None, local_size: tuple[int, int] | None = None) -> cl.Event:
        """The same filters on pitched uchar4 buffers (pitches in bytes, whole pixels); returns the
        event. ``local_size`` as for ``enqueue``.

        Raises:
            UsageError: an unknown filter, a bad radius, a pitch that is not whole pixels or is
                narrower than the width, an empty size.
        """
        check_filter(kind)
        if width < 1 or height < 1:
            raise UsageError(f"postprocess: {width}x{height} is empty")
        for name, pitch in (("source", src_pitch), ("destination", dst_pitch)):
            if pitch % 4 or pitch < 4 * width:
                raise UsageError(f"postprocess: {name} pitch {pitch} bytes is not whole RGBA8 pixels of at "
                                 f"least a {width}-pixel row")
        args = [src, np.int32(src_pitch // 4), dst, np.int32(dst_pitch // 4), np.int32(width), np.int32(height)]
        if kind == "sobel":
            kernel = self.program.kernel("sobel_buffer")
        else:
            kernel = self.program.kernel("box_blur_buffer")
            args.append(np.int32(check_radius(radius)))
        kernel.set_args(*args)
        global_size, local = launch_sizes((width, height), local_size)
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, local, wait_for=wait_for)

    def release(self) -> None:
        self.program.release()

    def __repr__(self) -> str:
        return f"<PostprocessFilters {self.label!r}>"
