"""plane_image against cl_amd_planar_yuv's contract: plane formats, sizes, data and every error code,
on every CPU OpenCL implementation present (``cl_impl``: PoCL, which has no CL_RG and stores UV as
CL_R pairs, and Intel's CPU runtime, which lists CL_RG: the extension's own UV layout)."""
from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from app.errors import ClError
from app.yuv import planar
from app.yuv.formats import FORMATS, NV12, P010
from app.yuv.pattern import pattern_frame
from app.yuv.planar import (
    CL_YUV_IMAGE_UV_PLANE_AMD,
    CL_YUV_IMAGE_Y_PLANE_AMD,
    PlaneLayout,
    YuvImage,
    plane_image,
    plane_layout,
)

W, H = 16, 10
TYPES = {"nv12": cl.channel_type.UNSIGNED_INT8, "p010": cl.channel_type.UNSIGNED_INT16}


@pytest.fixture(scope="module")
def ctx(cl_impl):
    context = cl.Context([cl_impl.device])
    return context, cl.CommandQueue(context)


def _codes(fn, *args) -> str:
    with pytest.raises(ClError) as info:
        fn(*args)
    return info.value.name


@pytest.mark.parametrize("name", ["nv12", "p010"])
def test_plane_formats_and_sizes(ctx, name):
    context, _ = ctx
    image = YuvImage.create(context, FORMATS[name], W, H)
    try:
        y = plane_image(context, image, CL_YUV_IMAGE_Y_PLANE_AMD)
        uv = plane_image(context, image, CL_YUV_IMAGE_UV_PLANE_AMD)
        # the extension's table: Y CL_R, UV CL_RG; CL_UNSIGNED_INT8 (NV12) / CL_UNSIGNED_INT16 (P010)
        assert (y.format.channel_order, y.format.channel_data_type) == (cl.channel_order.R, TYPES[name])
        assert (y.width, y.height) == (W, H)
        assert uv.format.channel_data_type == TYPES[name]
        if "Intel" in context.devices[0].platform.name:  # measured: lists (CL_RG, UNSIGNED_INT8/16)
            assert planar.supports_rg(context, FORMATS[name])
        if planar.supports_rg(context, FORMATS[name]):
            assert uv.format.channel_order == cl.channel_order.RG
            assert (uv.width, uv.height) == (W // 2, H // 2)
            assert not image.layout.uv_pairs
        else:  # PoCL 3.1: no two-channel image formats; the same bytes as CL_R pairs
            assert uv.format.channel_order == cl.channel_order.R
            assert (uv.width, uv.height) == (W, H // 2)
            assert image.layout.uv_pairs
        y.release()
        uv.release()
    finally:
        image.release()


def test_layout_follows_the_table_where_rg_is_listed():
    table = PlaneLayout(P010, 64, 36, uv_pairs=False)
    assert (table.uv_format.channel_order, table.uv_format.channel_data_type) == (
        cl.channel_order.RG, cl.channel_type.UNSIGNED_INT16)
    assert table.uv_shape == (32, 18) and table.y_shape == (64, 36)
    assert table.kernel_options == ["-DGLSHARE_WORD=ushort"]
    pairs = PlaneLayout(NV12, 64, 36, uv_pairs=True)
    assert pairs.uv_format.channel_order == cl.channel_order.R and pairs.uv_shape == (64, 18)
    assert pairs.kernel_options == ["-DGLSHARE_WORD=uchar", "-DGLSHARE_UV_PAIRS=1"]


def test_layout_asks_the_context(ctx, monkeypatch):
    context, _ = ctx
    monkeypatch.setattr(planar, "supports_rg", lambda *a, **k: True)
    assert not plane_layout(context, NV12, W, H).uv_pairs
    monkeypatch.setattr(planar, "supports_rg", lambda *a, **k: False)
    assert plane_layout(context, NV12, W, H).uv_pairs


@pytest.mark.parametrize("name", ["nv12", "p010"])
def test_planes_hold_the_frame(ctx, name):
    """What goes into the YUV image comes back from each plane image, U in R and V in G."""
    context, queue = ctx
    fmt = FORMATS[name]
    y_words, uv_words = pattern_frame(fmt, W, H, 5)
    image = YuvImage.create(context, fmt, W, H)
    try:
        image.write(queue, y_words, uv_words)
        y = plane_image(context, image, 0)
        uv = plane_image(context, image, 1)
        got_y = np.empty((H, W), fmt.dtype)
        cl.enqueue_copy(queue, got_y, y, origin=(0, 0), region=(y.width, y.height), is_blocking=True)
        got_uv = np.empty((H // 2, W // 2, 2), fmt.dtype)
        cl.enqueue_copy(queue, got_uv, uv, origin=(0, 0), region=(uv.width, uv.height), is_blocking=True)
        np.testing.assert_array_equal(got_y, y_words)
        np.testing.assert_array_equal(got_uv, uv_words)
        assert got_uv[..., 0].std() > 0 and got_uv[..., 1].std() > 0  # U and V differ: order is tested
        y.release()
        uv.release()
    finally:
        image.release()


def test_returned_plane_is_a_new_reference(ctx):
    """As with the real entry point, the caller releases the plane; the YUV image lives on."""
    context, _ = ctx
    image = YuvImage.create(context, NV12, W, H)
    stored = image.stored_plane(0)
    before = stored.get_info(cl.mem_info.REFERENCE_COUNT)
    y = plane_image(context, image, 0)
    assert y.int_ptr == stored.int_ptr
    assert stored.get_info(cl.mem_info.REFERENCE_COUNT) == before + 1
    y.release()
    assert stored.get_info(cl.mem_info.REFERENCE_COUNT) == before
    assert plane_image(context, image, 1) is not None
    image.release()
    image.release()  # idempotent


def test_error_codes(ctx, cl_impl):
    context, _ = ctx
    image = YuvImage.create(context, P010, W, H)
    try:
        # CL_INVALID_VALUE: plane other than CL_YUV_IMAGE_Y_PLANE_AMD / CL_YUV_IMAGE_UV_PLANE_AMD, or NULL mem
        for plane in (2, -1, 0xFFFFFFFF, 1.0, None, True):
            assert _codes(plane_image, context, image, plane) == "CL_INVALID_VALUE", plane
        assert _codes(plane_image, context, None, 0) == "CL_INVALID_VALUE"
        # CL_INVALID_D3D11_RESOURCE_KHR: a valid cl_mem that is not a YUV interop image
        plain = cl.create_image(context, cl.mem_flags.READ_ONLY,
                                cl.ImageFormat(cl.channel_order.R, cl.channel_type.UNSIGNED_INT8), shape=(W, H))
        assert _codes(plane_image, context, plain, 0) == "CL_INVALID_D3D11_RESOURCE_KHR"
        with pytest.raises(ClError) as info:
            plane_image(context, plain, 1)
        assert info.value.code == -1007
        # CL_INVALID_MEM_OBJECT: not a valid memory object (released through pyopencl, or not one at all)
        plain.release()
        assert _codes(plane_image, context, plain, 0) == "CL_INVALID_MEM_OBJECT"
        assert _codes(plane_image, context, "image", 0) == "CL_INVALID_MEM_OBJECT"
        # CL_INVALID_CONTEXT: not a context, or not the image's context
        assert _codes(plane_image, None, image, 0) == "CL_INVALID_CONTEXT"
        assert _codes(plane_image, "ctx", image, 0) == "CL_INVALID_CONTEXT"
        other = cl.Context([cl_impl.device])
        assert _codes(plane_image, other, image, 0) == "CL_INVALID_CONTEXT"
        # the spec's order: the context is checked first, then the plane / NULL, then the object
        assert _codes(plane_image, None, None, 7) == "CL_INVALID_CONTEXT"
        assert _codes(plane_image, context, "image", 7) == "CL_INVALID_VALUE"
    finally:
        image.release()
    assert _codes(plane_image, context, image, 0) == "CL_INVALID_MEM_OBJECT"  # released
    with pytest.raises(ClError) as info:
        plane_image(context, image, 1)
    assert info.value.code == -38 and "clGetPlaneFromImageAMD" in info.value.one_line()


def test_wrap_checks_formats_and_sizes(ctx):
    context, _ = ctx
    flags = cl.mem_flags.READ_ONLY

    def img(order, ctype, shape):
        return cl.create_image(context, flags, cl.ImageFormat(order, ctype), shape=shape)

    u8, u16, r = cl.channel_type.UNSIGNED_INT8, cl.channel_type.UNSIGNED_INT16, cl.channel_order.R
    y, uv = img(r, u8, (W, H)), img(r, u8, (W, H // 2))
    wrapped = YuvImage.wrap(context, NV12, W, H, y, uv)
    assert wrapped.layout.uv_pairs and not wrapped.owns
    wrapped.release()  # not the owner: the planes stay usable
    assert y.get_info(cl.mem_info.REFERENCE_COUNT) >= 1
    with pytest.raises(ClError) as info:
        YuvImage.wrap(context, P010, W, H, y, uv)  # 8-bit planes for a 16-bit format
    assert info.value.name == "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"
    small = img(r, u8, (W - 2, H))
    with pytest.raises(ClError) as info:
        YuvImage.wrap(context, NV12, W, H, small, uv)
    assert info.value.name == "CL_INVALID_IMAGE_SIZE"
    for m in (y, uv, small):
        m.release()
    y16 = img(r, u16, (W, H))
    uv16 = img(r, u16, (W, H // 2))
    YuvImage.wrap(context, P010, W, H, y16, uv16).release()
    y16.release()
    uv16.release()


def test_real_entry_point_only_where_the_platform_lists_it(ctx, monkeypatch):
    """The extension path is taken only for a D3D11 interop image on a platform listing
    cl_amd_planar_yuv, and its error code is passed on; PoCL lists no such extension."""
    context, _ = ctx
    platform = context.devices[0].platform
    assert planar.platform_lists_extension(platform) == ("cl_amd_planar_yuv" in platform.extensions
                                                         or any("cl_amd_planar_yuv" in d.extensions
                                                                for d in platform.get_devices()))
    image = YuvImage.create(context, NV12, W, H)
    calls = []

    def fake_plane(ext, context_, native, plane):
        calls.append((native, plane))
        raise planar._fail(-1007, "the driver refused")  # CL_INVALID_D3D11_RESOURCE_KHR

    monkeypatch.setattr(planar, "_extension_plane", fake_plane)
    try:
        plane_image(context, image, 0).release()  # no native image: never the extension
        assert calls == []
        image.native = image.stored_plane(0)
        monkeypatch.setattr(planar, "platform_lists_extension", lambda p: False)
        plane_image(context, image, 1).release()
        assert calls == []
        monkeypatch.setattr(planar, "platform_lists_extension", lambda p: True)
        with pytest.raises(ClError) as info:
            plane_image(context, image, 1)
        assert calls == [(image.native, 1)] and info.value.code == -1007
        # the contract's own checks come first on that path too
        assert _codes(plane_image, context, image, 3) == "CL_INVALID_VALUE" and len(calls) == 1
    finally:
        image.native = None
        image.release()


def test_a_driver_returning_null_with_success_gets_no_invented_code():
    """#37 item 12: the text's success is 'a valid non-zero image object'; NULL with CL_SUCCESS is an
    outcome it does not allow and names no code for: glshare says so and invents no
    CL_INVALID_MEM_OBJECT."""
    from types import SimpleNamespace

    ext = SimpleNamespace(clGetPlaneFromImageAMD=lambda ctx, mem, plane, err: 0)  # err left CL_SUCCESS
    obj = SimpleNamespace(int_ptr=0x10)
    with pytest.raises(planar.PlanarDriverError) as err:
        planar._extension_plane(ext, obj, obj, 1)
    assert not isinstance(err.value, ClError) and "NULL with CL_SUCCESS" in str(err.value)


def test_the_emulation_says_what_it_is():
    """The module says plainly that the contract is emulated (no Direct3D 11), which rule is
    glshare's, and that the plane returned is the stored one: each a declared lab row."""
    doc = planar.__doc__
    assert "emulated" in doc and "glshare's, not the text's" in doc and "returns_new_image" in doc
    assert "spec's order" not in doc
