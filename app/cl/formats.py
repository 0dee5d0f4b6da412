"""GL texel formats as CL image formats: what cl_khr_gl_sharing maps each GL internal format to
(OpenCL 3.0 extension specification, cl_khr_gl_sharing, "Image formats" table), used by every
backend so a kernel sees the same texels whichever backend shares the texture."""
from __future__ import annotations

import pyopencl as cl

from app.gl.formats import TexelFormat

_ORDER = {1: cl.channel_order.R, 2: cl.channel_order.RG, 4: cl.channel_order.RGBA}


def cl_image_format(fmt: TexelFormat) -> cl.ImageFormat:
    """The CL image format with the same texel layout as ``fmt``."""
    if fmt.name == "RGBA32F":
        kind = cl.channel_type.FLOAT
    elif fmt.integer:
        kind = {1: cl.channel_type.UNSIGNED_INT8, 2: cl.channel_type.UNSIGNED_INT16}[fmt.component_bytes]
    else:
        kind = {1: cl.channel_type.UNORM_INT8, 2: cl.channel_type.UNORM_INT16}[fmt.component_bytes]
    return cl.ImageFormat(_ORDER[fmt.channels], kind)


RGBA8_IMAGE = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
