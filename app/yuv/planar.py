"""Planar YUV images on every platform: cl_amd_planar_yuv's plane contract (``plane_image``).

../shared/spec/cl_amd_planar_yuv.txt defines ``clGetPlaneFromImageAMD(context, mem, plane)``: it
returns a new 2D image of the Y plane (CL_R, width x height) or of the interleaved UV plane
(CL_RG, R = U, G = V, width/2 x height/2) of an NV12 (CL_UNSIGNED_INT8) or P010
(CL_UNSIGNED_INT16) image, and fails with
    CL_INVALID_CONTEXT      if context is not a valid context,
    CL_INVALID_VALUE        if plane is not CL_YUV_IMAGE_Y_PLANE_AMD / CL_YUV_IMAGE_UV_PLANE_AMD
                            or mem is NULL,
    CL_INVALID_MEM_OBJECT   if mem is not a valid cl_mem object,
    CL_INVALID_D3D11_RESOURCE_KHR  if mem is not a valid interop image from a YUV texture
                            allocated in D3D11.
The extension only takes images made by clCreateFromD3D11Texture2DKHR. glshare runs without
Direct3D 11, so the contract is emulated on glshare's own ``YuvImage`` (both plane images, the
format, the size): ``plane_image`` makes the same checks, in an order of glshare's (the text lists
its errors in no order: the context's handle, then NULL mem and the plane, then the object; whether
a context is the image's can only be asked of a valid image), then either calls the real entry
point (only where the platform lists cl_amd_planar_yuv and the image carries a D3D11 interop
``native`` cl_mem, which glshare never makes) or returns a new reference to the stored plane image.
The text's call "creates" an image; the emulation returns the stored one (the caller releases it as
it would a created one; the YuvImage stays valid): a deviation the error lab declares
(``returns_new_image``).

One rule is glshare's, not the text's: a valid context other than the image's is refused with
CL_INVALID_CONTEXT (the text errs only "if context is not a valid context"; the plane images live in
the image's context). The lab's ``foreign_context`` row shows it as a deliberate deviation.

A pyopencl memory object that is not a YuvImage is a valid cl_mem that is not a YUV interop
image: CL_INVALID_D3D11_RESOURCE_KHR, unless glshare's registry knows it was released
(``app/validate/liveness.py`` records every release through pyopencl): CL_INVALID_MEM_OBJECT.
The object itself is never touched, so no freed memory is read either way.

A third deviation, forced by the device (the lab's ``*_uv_format`` rows): PoCL 3.1 has no two-channel image format at all (it lists
R, A, RGBA, BGRA, ARGB; clCreateImage with CL_RG returns CL_INVALID_OPERATION). Where the context
does not list (CL_RG, type) the UV plane is a CL_R image of width x height/2 holding the same
interleaved bytes (U at even x, V at odd x): ``PlaneLayout.uv_pairs`` says so and kernels/yuv.cl
is built with -DGLSHARE_UV_PAIRS. Wherever CL_RG is listed the table's format is used.
"""
from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from app.cl.ext import ExtensionFunctions, cl_int, cl_uint, vp
from app.diagnostics import live
from app.errors import ClError, GlshareError
from app.validate.liveness import REGISTRY, RELEASED
from app.yuv.formats import YuvFormat, check_size

log = logging.getLogger(__name__)

CL_YUV_IMAGE_Y_PLANE_AMD = 0x0
CL_YUV_IMAGE_UV_PLANE_AMD = 0x1
EXTENSION = "cl_amd_planar_yuv"
WHERE = "clGetPlaneFromImageAMD"

CL_INVALID_VALUE = -30
CL_INVALID_CONTEXT = -34
CL_INVALID_MEM_OBJECT = -38
CL_INVALID_D3D11_RESOURCE_KHR = -1007
CL_INVALID_IMAGE_FORMAT_DESCRIPTOR = -39
CL_INVALID_IMAGE_SIZE = -40


def channel_type(fmt: YuvFormat) -> int:
    """The table's channel data type: CL_UNSIGNED_INT8 for NV12, CL_UNSIGNED_INT16 for P010."""
    return cl.channel_type.UNSIGNED_INT8 if fmt.word_bytes == 1 else cl.channel_type.UNSIGNED_INT16


@dataclass(frozen=True)
class PlaneLayout:
    """Formats and sizes (width, height) of the two plane images of one YUV image."""

    fmt: YuvFormat
    width: int
    height: int
    uv_pairs: bool  # True: UV stored as CL_R, width x height/2 (the device has no CL_RG)

    @property
    def y_format(self) -> cl.ImageFormat:
        return cl.ImageFormat(cl.channel_order.R, channel_type(self.fmt))

    @property
    def y_shape(self) -> tuple[int, int]:
        return (self.width, self.height)

    @property
    def uv_format(self) -> cl.ImageFormat:
        order = cl.channel_order.R if self.uv_pairs else cl.channel_order.RG
        return cl.ImageFormat(order, channel_type(self.fmt))

    @property
    def uv_shape(self) -> tuple[int, int]:
        return (self.width, self.height // 2) if self.uv_pairs else (self.width // 2, self.height // 2)

    @property
    def kernel_options(self) -> list[str]:
        """Build options of kernels/yuv.cl for this layout."""
        word = "uchar" if self.fmt.word_bytes == 1 else "ushort"
        return [f"-DGLSHARE_WORD={word}"] + (["-DGLSHARE_UV_PAIRS=1"] if self.uv_pairs else [])

    def describe(self) -> str:
        uv = "CL_R pairs (no CL_RG on this device)" if self.uv_pairs else "CL_RG"
        return f"Y CL_R {self.width}x{self.height}, UV {uv} {self.uv_shape[0]}x{self.uv_shape[1]}"


def supports_rg(context: cl.Context, fmt: YuvFormat, flags: int = cl.mem_flags.READ_ONLY) -> bool:
    """Whether the context lists (CL_RG, the format's channel type) for 2D images with ``flags``."""
    want = channel_type(fmt)
    try:
        formats = cl.get_supported_image_formats(context, flags, cl.mem_object_type.IMAGE2D)
    except cl.Error:
        return False
    return any(f.channel_order == cl.channel_order.RG and f.channel_data_type == want for f in formats)


def plane_layout(context: cl.Context, fmt: YuvFormat, width: int, height: int,
                 flags: int = cl.mem_flags.READ_ONLY) -> PlaneLayout:
    """The layout this context can hold: the extension's table, or UV as CL_R pairs (module doc)."""
    check_size(width, height)
    return PlaneLayout(fmt, int(width), int(height), uv_pairs=not supports_rg(context, fmt, flags))


def _same_format(a: cl.ImageFormat, b: cl.ImageFormat) -> bool:
    return a.channel_order == b.channel_order and a.channel_data_type == b.channel_data_type


class YuvImage:
    """An NV12 or P010 image: the Y and UV plane images, their layout, the context they live in.

    ``create`` allocates both planes (owned: ``release()`` frees them); ``wrap`` adopts plane images
    someone else owns (the yuv scene's shared GL textures). ``release()`` is idempotent; afterwards
    ``plane_image`` answers CL_INVALID_MEM_OBJECT.
    """

    def __init__(self, context: cl.Context, layout: PlaneLayout, y: cl.Image, uv: cl.Image, *,
                 label: str, owns: bool, native: cl.MemoryObjectHolder | None = None, owner: str = "") -> None:
        self.context, self.layout, self.label, self.owns, self.owner = context, layout, label, owns, owner
        self.native = native  # a D3D11 interop image clGetPlaneFromImageAMD accepts (never made here)
        self._planes: tuple[cl.Image, cl.Image] | None = (y, uv)
        live.created("yuv_image", owner)

    @classmethod
    def create(cls, context: cl.Context, fmt: YuvFormat, width: int, height: int, *,
               flags: int = cl.mem_flags.READ_ONLY, label: str = "yuv image", owner: str = "") -> "YuvImage":
        layout = plane_layout(context, fmt, width, height, flags)
        y = None
        try:
            y = cl.create_image(context, flags, layout.y_format, shape=layout.y_shape)
            uv = cl.create_image(context, flags, layout.uv_format, shape=layout.uv_shape)
        except cl.Error as exc:
            if y is not None:
                y.release()  # the UV plane failed: the Y plane goes with it
            raise ClError.from_pyopencl(exc, f"create {label}") from exc
        return cls(context, layout, y, uv, label=label, owns=True, owner=owner)

    @classmethod
    def wrap(cls, context: cl.Context, fmt: YuvFormat, width: int, height: int, y: cl.Image, uv: cl.Image, *,
             label: str = "yuv image", owner: str = "") -> "YuvImage":
        """Adopt existing plane images; raises ClError when their formats or sizes are not a layout's."""
        check_size(width, height)
        uv_pairs = uv.format.channel_order == cl.channel_order.R
        layout = PlaneLayout(fmt, int(width), int(height), uv_pairs)
        for name, img, want_fmt, want_shape in (("Y", y, layout.y_format, layout.y_shape),
                                                ("UV", uv, layout.uv_format, layout.uv_shape)):
            if not _same_format(img.format, want_fmt):
                raise ClError(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, where=f"YuvImage.wrap({label})",
                              detail=f"{name} plane is {img.format}, {fmt.name.upper()} needs {want_fmt}")
            if (img.width, img.height) != want_shape:
                raise ClError(CL_INVALID_IMAGE_SIZE, where=f"YuvImage.wrap({label})",
                              detail=f"{name} plane is {img.width}x{img.height}, {width}x{height} "
                                     f"{fmt.name.upper()} needs {want_shape[0]}x{want_shape[1]}")
        return cls(context, layout, y, uv, label=label, owns=False, owner=owner)

    @property
    def fmt(self) -> YuvFormat:
        return self.layout.fmt

    @property
    def valid(self) -> bool:
        return self._planes is not None

    def stored_plane(self, plane: int) -> cl.Image:
        """The plane image itself (not a new reference); only for a valid image."""
        if self._planes is None:
            raise ClError(CL_INVALID_MEM_OBJECT, where=self.label, detail="the YUV image was released")
        return self._planes[plane]

    def write(self, queue: cl.CommandQueue, y: np.ndarray, uv: np.ndarray, wait_for=None) -> cl.Event:
        """Copy host planes (words: H x W and H/2 x W/2 x 2) into the plane images (blocking)."""
        ly = self.layout
        y = np.ascontiguousarray(y, self.fmt.dtype)
        uv = np.ascontiguousarray(uv, self.fmt.dtype)
        if y.shape != (ly.height, ly.width) or uv.shape != (ly.height // 2, ly.width // 2, 2):
            raise ValueError(f"planes {y.shape} / {uv.shape} do not fit {ly.width}x{ly.height}")
        cl.enqueue_copy(queue, self.stored_plane(0), y, origin=(0, 0), region=ly.y_shape, wait_for=wait_for)
        return cl.enqueue_copy(queue, self.stored_plane(1), uv, origin=(0, 0), region=ly.uv_shape,
                               is_blocking=True)

    def release(self) -> None:
        planes, self._planes = self._planes, None
        if planes is None:
            return
        if self.owns:
            for img in planes:
                img.release()
        live.released("yuv_image", self.owner)

    def __repr__(self) -> str:
        state = self.layout.describe() if self.valid else "released"
        return f"<YuvImage {self.label!r} {self.fmt.name} {state}>"


class PlanarExtensionFunctions(ExtensionFunctions):
    """ExtensionFunctions plus clGetPlaneFromImageAMD."""

    SIGNATURES = {**ExtensionFunctions.SIGNATURES,
                  WHERE: (vp, [vp, vp, cl_uint, ctypes.POINTER(cl_int)])}


def platform_lists_extension(platform: cl.Platform) -> bool:
    """cl_amd_planar_yuv is a platform extension; a device listing it counts too."""
    names = set(platform.extensions.split())
    for device in platform.get_devices():
        names.update(device.extensions.split())
    return EXTENSION in names


class PlanarDriverError(GlshareError):
    """The real clGetPlaneFromImageAMD broke its own contract (NULL with CL_SUCCESS): no CL code is
    invented for it."""


def _fail(code: int, detail: str) -> ClError:
    return ClError(code, where=WHERE, detail=detail)


def plane_image(context: cl.Context, image: YuvImage | None, plane: int) -> cl.Image:
    """clGetPlaneFromImageAMD's contract for a YuvImage: a new image of one plane (caller releases).

    Raises:
        ClError CL_INVALID_CONTEXT: ``context`` is not a pyopencl Context, or not the image's.
        ClError CL_INVALID_VALUE: ``plane`` is not 0 (Y) or 1 (UV), or ``image`` is None (NULL).
        ClError CL_INVALID_MEM_OBJECT: ``image`` is not a memory object, or a released one (a
            released YuvImage, or a pyopencl object released through pyopencl).
        ClError CL_INVALID_D3D11_RESOURCE_KHR: ``image`` is a memory object but not a YuvImage.
        ClError with the driver's code when the real entry point fails.
    """
    if not isinstance(context, cl.Context):
        raise _fail(CL_INVALID_CONTEXT, f"context is not a valid context (got {type(context).__name__})")
    if image is None:
        raise _fail(CL_INVALID_VALUE, "mem is NULL")
    if isinstance(plane, bool) or not isinstance(plane, (int, np.integer)) or int(plane) not in (
            CL_YUV_IMAGE_Y_PLANE_AMD, CL_YUV_IMAGE_UV_PLANE_AMD):
        raise _fail(CL_INVALID_VALUE, f"plane {plane!r} is neither CL_YUV_IMAGE_Y_PLANE_AMD (0) nor "
                                      "CL_YUV_IMAGE_UV_PLANE_AMD (1)")
    if not isinstance(image, YuvImage):
        if isinstance(image, cl.MemoryObjectHolder) and REGISTRY.state(image) != RELEASED:
            # a cl_mem, but no YUV interop image: the seed's CL_INVALID_D3D11_RESOURCE_KHR (nothing
            # touches the object, so an unknown one is answered as a live one)
            raise _fail(CL_INVALID_D3D11_RESOURCE_KHR, f"mem ({type(image).__name__}) is a memory object but not "
                                                       "a valid interop image from a YUV texture")
        why = REGISTRY.why_not_live(image) if isinstance(image, cl.MemoryObjectHolder) else \
            f"not a memory object at all: {type(image).__name__}"
        raise _fail(CL_INVALID_MEM_OBJECT, f"mem is not a valid cl_mem object ({why})")
    if not image.valid:
        raise _fail(CL_INVALID_MEM_OBJECT, f"mem ({image.label}) is not a valid cl_mem object: it was released")
    if context != image.context:  # glshare's rule, not the text's (module docstring)
        raise _fail(CL_INVALID_CONTEXT, f"context is not the context {image.label} was created in (glshare's rule: "
                                        "the text errs only for an invalid context)")
    plane = int(plane)
    platform = context.devices[0].platform
    if image.native is not None and platform_lists_extension(platform):
        return _extension_plane(PlanarExtensionFunctions(platform), context, image.native, plane)
    # No D3D11 interop image (or no extension): the contract emulated, a new reference to the stored
    # plane (not a created image), released by the caller like the image the real entry point returns.
    return cl.Image.from_int_ptr(image.stored_plane(plane).int_ptr, retain=True)


def _extension_plane(ext: ExtensionFunctions, context: cl.Context, native, plane: int) -> cl.Image:
    """The real clGetPlaneFromImageAMD (call only where the platform lists the extension)."""
    err = cl_int(0)
    ptr = getattr(ext, WHERE)(context.int_ptr, native.int_ptr, plane, ctypes.byref(err))
    if err.value:
        raise _fail(err.value, f"the driver refused plane {plane}")
    if not ptr:  # the text: "a valid non-zero image object ... and <errcode_ret> is set to CL_SUCCESS"
        raise PlanarDriverError(f"{WHERE} returned NULL with CL_SUCCESS for plane {plane}: an outcome the text does "
                                "not allow, and it names no code for it")
    return cl.Image.from_int_ptr(ptr, retain=False)
