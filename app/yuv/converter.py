"""The CL conversion of a YUV frame to RGBA8 (kernels/yuv.cl), used by the yuv scene and ``convert``.

Both callers go through the same steps: plane images from ``plane_image`` (cl_amd_planar_yuv's
contract), one kernel launch per frame into an RGBA8 (CL_RGBA, CL_UNORM_INT8) image. Where a
backend gives textures to CL as pitched buffers (external_memory on NVIDIA), ``enqueue_buffers``
runs the same arithmetic (one inline function in kernels/yuv.cl) on the buffers.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from app.cl.formats import RGBA8_IMAGE as RGBA8
from app.cl.programs import KernelProgram
from app.cl.worksize import launch_sizes
from app.yuv.formats import MATRICES, YuvFormat, check_choice, range_params
from app.yuv.planar import CL_YUV_IMAGE_UV_PLANE_AMD, CL_YUV_IMAGE_Y_PLANE_AMD, PlaneLayout, YuvImage, plane_image


class YuvConverter:
    """The built kernel for one plane layout; ``enqueue`` converts one frame."""

    def __init__(self, context: cl.Context, layout: PlaneLayout, owner: str = "") -> None:
        self.layout = layout
        self.label = f"yuv converter ({layout.fmt.name})"
        self.program = KernelProgram(context, "yuv.cl", layout.kernel_options, owner=owner)
        self.program.kernel("yuv420_to_rgba")  # a missing kernel is found at build, not at the first frame

    def enqueue(self, queue: cl.CommandQueue, y_plane: cl.Image, uv_plane: cl.Image, out: cl.Image,
                fmt: YuvFormat, matrix: str, range_: str, wait_for=None,
                local_size: tuple[int, int] | None = None) -> cl.Event:
        """Convert the planes into ``out`` (RGBA8, the frame's size); returns the kernel's event.
        One work-item per 2x2 block; ``local_size``: work-groups of that shape (checked by the
        caller, app/cl/worksize.py; the global size is rounded up to it), None for the driver's."""
        check_choice(matrix, range_)
        kr, kb = MATRICES[matrix]
        y_off, y_scale, c_off, c_scale = range_params(fmt, range_)
        kernel = self.program.kernel("yuv420_to_rgba")  # the current one: a hot reload replaces it
        kernel.set_args(y_plane, uv_plane, out, np.uint32(fmt.shift), np.float32(kr), np.float32(kb),
                             np.float32(y_off), np.float32(y_scale), np.float32(c_off), np.float32(c_scale))
        w, h = self.layout.width, self.layout.height
        global_size, local = launch_sizes((w // 2, h // 2), local_size)
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, local, wait_for=wait_for)

    def enqueue_buffers(self, queue: cl.CommandQueue, y_plane: cl.Buffer, y_pitch: int, uv_plane: cl.Buffer,
                        uv_pitch: int, out: cl.Buffer, out_pitch: int, fmt: YuvFormat, matrix: str, range_: str,
                        wait_for=None, local_size: tuple[int, int] | None = None) -> cl.Event:
        """The same conversion on pitched buffers (pitches in bytes): for textures whose CL side
        is a buffer (external_memory without cl_khr_image2d_from_buffer). Returns the kernel's
        event; ``local_size`` as for ``enqueue``."""
        check_choice(matrix, range_)
        kr, kb = MATRICES[matrix]
        y_off, y_scale, c_off, c_scale = range_params(fmt, range_)
        w, h = self.layout.width, self.layout.height
        word = fmt.word_bytes
        kernel = self.program.kernel("yuv420_to_rgba_buffer")
        kernel.set_args(y_plane, np.int32(y_pitch // word), uv_plane, np.int32(uv_pitch // word), out,
                        np.int32(out_pitch // 4), np.int32(w), np.int32(h), np.uint32(fmt.shift), np.float32(kr),
                        np.float32(kb), np.float32(y_off), np.float32(y_scale), np.float32(c_off), np.float32(c_scale))
        global_size, local = launch_sizes((w // 2, h // 2), local_size)
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, local, wait_for=wait_for)

    def release(self) -> None:
        self.program.release()

    def __repr__(self) -> str:
        return f"<YuvConverter {self.label!r}>"


def planes_of(context: cl.Context, image: YuvImage) -> tuple[cl.Image, cl.Image]:
    """(Y, UV) plane images of ``image``; the caller releases both."""
    y = plane_image(context, image, CL_YUV_IMAGE_Y_PLANE_AMD)
    try:
        uv = plane_image(context, image, CL_YUV_IMAGE_UV_PLANE_AMD)
    except BaseException:
        y.release()
        raise
    return y, uv


def convert_frame(context: cl.Context, queue: cl.CommandQueue, fmt: YuvFormat, y: np.ndarray, uv: np.ndarray,
                  matrix: str, range_: str) -> np.ndarray:
    """One frame through the CL path on a plain context: uint8 H x W x 4 (RGBA), row 0 first."""
    height, width = y.shape
    image = YuvImage.create(context, fmt, width, height, label="convert input", owner="convert")
    converter = None
    planes: tuple = ()
    out = None
    try:
        image.write(queue, y, uv)
        planes = planes_of(context, image)
        converter = YuvConverter(context, image.layout, owner="convert")
        out = cl.create_image(context, cl.mem_flags.WRITE_ONLY, RGBA8, shape=(width, height))
        ev = converter.enqueue(queue, planes[0], planes[1], out, fmt, matrix, range_)
        rgba = np.empty((height, width, 4), np.uint8)
        cl.enqueue_copy(queue, rgba, out, origin=(0, 0), region=(width, height), wait_for=[ev], is_blocking=True)
        return rgba
    finally:
        if out is not None:
            out.release()
        for p in planes:
            p.release()
        if converter is not None:
            converter.release()
        image.release()
