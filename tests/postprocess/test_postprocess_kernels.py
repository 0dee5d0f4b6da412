"""kernels/postprocess.cl (Sobel edges, box blur; image and pitched-buffer variants) against numpy.

Tolerance: none, every pixel must be equal. The kernels handle whole codes with integer arithmetic
(the Sobel square root is an integer square root, the blur an integer division), and the only
float steps, CL_UNORM_INT8 to float and back, are exact for whole codes; app/postprocess/reference.py
does the same integer arithmetic. The references are themselves checked against values worked out
by hand. Sizes include 1x1, one pixel wide and one pixel high, odd sizes, and radii wider than the
image, where clamp to edge decides everything. Plain CL context, no GL.
"""
from __future__ import annotations

import math

import numpy as np
import pyopencl as cl
import pytest

from app.cl.formats import RGBA8_IMAGE as RGBA8
from app.diagnostics import live
from app.errors import UsageError
from app.postprocess import reference as ref
from app.postprocess.filters import PostprocessFilters, check_filter

SIZES = [(1, 1), (1, 7), (7, 1), (2, 3), (7, 5), (33, 17), (64, 48)]  # (width, height)


@pytest.fixture(scope="module")
def cl_env(device_choice):
    context = cl.Context([device_choice.device])
    queue = cl.CommandQueue(context)
    filters = PostprocessFilters(context, owner="test-postprocess")
    yield context, queue, filters
    filters.release()


def run_image(cl_env, image: np.ndarray, kind: str, radius: int = 1) -> np.ndarray:
    context, queue, filters = cl_env
    h, w = image.shape[:2]
    mf = cl.mem_flags
    src = cl.create_image(context, mf.READ_ONLY | mf.COPY_HOST_PTR, RGBA8, shape=(w, h),
                          hostbuf=np.ascontiguousarray(image))
    dst = cl.create_image(context, mf.WRITE_ONLY, RGBA8, shape=(w, h))
    try:
        ev = filters.enqueue(queue, src, dst, kind, radius)
        out = np.empty((h, w, 4), np.uint8)
        cl.enqueue_copy(queue, out, dst, origin=(0, 0), region=(w, h), wait_for=[ev], is_blocking=True)
        return out
    finally:
        src.release()
        dst.release()


def run_buffer(cl_env, image: np.ndarray, kind: str, radius: int = 1, pad: tuple[int, int] = (3, 5)) -> np.ndarray:
    """The buffer variant with rows padded (source and destination pitches differ); the padding of
    the destination must come back untouched."""
    context, queue, filters = cl_env
    h, w = image.shape[:2]
    src_px, dst_px = w + pad[0], w + pad[1]
    rng = np.random.default_rng(99)
    src_host = rng.integers(0, 256, (h, src_px, 4), dtype=np.uint8)  # padding holds noise
    src_host[:, :w] = image
    dst_host = np.full((h, dst_px, 4), 0xAB, np.uint8)
    mf = cl.mem_flags
    src = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src_host)
    dst = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=dst_host)
    try:
        ev = filters.enqueue_buffers(queue, src, src_px * 4, dst, dst_px * 4, w, h, kind, radius)
        out = np.empty_like(dst_host)
        cl.enqueue_copy(queue, out, dst, wait_for=[ev], is_blocking=True)
    finally:
        src.release()
        dst.release()
    assert (out[:, w:] == 0xAB).all(), "the kernel wrote into the destination's row padding"
    return out[:, :w]


RUNNERS = {"image": run_image, "buffer": run_buffer}


def random_image(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 4), dtype=np.uint8)


def structured_images(w: int, h: int) -> dict[str, np.ndarray]:
    yy, xx = np.mgrid[0:h, 0:w]
    out = {}
    checker = ((xx + yy) % 2 * 255).astype(np.uint8)
    out["checkerboard"] = np.stack([checker, checker, checker, np.full_like(checker, 255)], -1)
    step = np.where(xx >= w // 2, 255, 0).astype(np.uint8)
    out["step"] = np.stack([step, 255 - step, step // 2, np.full_like(step, 200)], -1)
    ramp = (xx * 255 // max(1, w - 1)).astype(np.uint8)
    out["ramp"] = np.stack([ramp, (yy * 255 // max(1, h - 1)).astype(np.uint8), ramp[::-1] if h > 1 else ramp,
                            ramp], -1)
    return out


# -- the references against values worked out by hand -------------------------------------------------
def test_isqrt_is_exact_over_the_sobel_range():
    m = np.arange(0, 2 * 1020 * 1020 + 1, dtype=np.int64)  # Gx^2 + Gy^2 reaches 2 * 1020^2
    r = ref.isqrt_floor(m)
    assert ((r * r <= m) & ((r + 1) * (r + 1) > m)).all()
    assert [int(ref.isqrt_floor(v)) for v in (0, 1, 3, 4, 799, 800, 1600, 1442 ** 2 - 1)] == \
        [0, 1, 1, 2, 28, 28, 40, 1441]
    assert all(int(ref.isqrt_floor(v)) == math.isqrt(v) for v in (2 ** 31 - 1, 12345678))


def test_references_on_hand_worked_values():
    img = np.zeros((5, 5, 4), np.uint8)
    img[..., 3] = 255
    img[2, 2, :3] = 20  # a grey pixel: luma (256 * 20 + 128) >> 8 = 20
    assert ref.luma(img)[2, 2] == 20 and ref.luma(np.full((1, 1, 4), 255, np.uint8))[0, 0] == 255
    e = ref.sobel(img)
    assert e[2, 3, 0] == 40 and e[2, 1, 0] == 40 and e[1, 2, 0] == 40  # |Gx| or |Gy| = 2 * 20
    assert e[3, 3, 0] == 28  # Gx = Gy = -20: floor(sqrt(800))
    assert e[2, 2, 0] == 0 and e[0, 0, 0] == 0  # the centre is symmetric; far pixels see nothing
    assert (e[..., 3] == 255).all() and (e[..., 0] == e[..., 1]).all() and (e[..., 1] == e[..., 2]).all()
    img[2, 2] = 90
    b = ref.box_blur(img, 1)
    assert (b[1:4, 1:4, :3] == 10).all() and b[0, 0, 0] == 0  # (90 + 4) // 9
    assert (b[1:4, 1:4, 3] == (255 * 8 + 90 + 4) // 9).all()  # alpha is blurred too
    # clamp to edge: a 1x3 column blurred with r = 2 sees the edge pixels repeated
    col = np.array([[[0] * 4], [[30] * 4], [[90] * 4]], np.uint8)  # H=3, W=1
    # row sums over x (all clamped to the one column) = 5 * c; then y window for row 0: 0,0,0,30,90
    assert ref.box_blur(col, 2)[0, 0, 0] == (5 * (0 + 0 + 0 + 30 + 90) + 12) // 25
    assert (ref.box_blur(col, 0) == col).all()
    flat = np.full((4, 6, 4), 77, np.uint8)
    assert (ref.sobel(flat)[..., 0] == 0).all() and (ref.box_blur(flat, 3) == flat).all()
    step = np.zeros((3, 4, 4), np.uint8)
    step[:, 2:] = 255
    assert (ref.sobel(step)[:, :, 0] == [[0, 255, 255, 0]] * 3).all()  # Gx = 4 * 255 at the step


# -- the kernels against the references ---------------------------------------------------------------
@pytest.mark.parametrize("variant", RUNNERS)
@pytest.mark.parametrize("w,h", SIZES)
def test_sobel_matches_reference(cl_env, variant, w, h):
    run = RUNNERS[variant]
    images = {"random": random_image(w, h, w * 100 + h), **structured_images(w, h)}
    for what, img in images.items():
        got = run(cl_env, img, "sobel")
        assert np.array_equal(got, ref.sobel(img)), f"{variant} sobel {what} {w}x{h}"


@pytest.mark.parametrize("variant", RUNNERS)
@pytest.mark.parametrize("w,h", SIZES)
def test_box_blur_matches_reference(cl_env, variant, w, h):
    run = RUNNERS[variant]
    images = {"random": random_image(w, h, w * 100 + h + 1), **structured_images(w, h)}
    for radius in (0, 1, 2, 5):
        for what, img in images.items():
            got = run(cl_env, img, "blur", radius)
            assert np.array_equal(got, ref.box_blur(img, radius)), f"{variant} blur r={radius} {what} {w}x{h}"


def test_largest_radius_and_image_equals_buffer(cl_env):
    img = random_image(40, 24, 5)
    r = ref.MAX_BLUR_RADIUS
    want = ref.box_blur(img, r)
    assert np.array_equal(run_image(cl_env, img, "blur", r), want)
    assert np.array_equal(run_buffer(cl_env, img, "blur", r, pad=(0, 0)), want)  # unpadded rows too
    assert np.array_equal(run_image(cl_env, img, "blur", 0), img)  # radius 0 copies


# -- bad arguments ------------------------------------------------------------------------------------
def test_bad_arguments_are_usage_errors(cl_env):
    context, queue, filters = cl_env
    for radius in (-1, ref.MAX_BLUR_RADIUS + 1, 1.5, True):
        with pytest.raises(UsageError, match="blur radius"):
            ref.check_radius(radius)
    with pytest.raises(UsageError, match="unknown filter 'edges'"):
        check_filter("edges")
    with pytest.raises(UsageError, match="RGBA image"):
        ref.sobel(np.zeros((4, 4, 3), np.uint8))
    mf = cl.mem_flags
    a = cl.create_image(context, mf.READ_WRITE, RGBA8, shape=(8, 4))
    b = cl.create_image(context, mf.READ_WRITE, RGBA8, shape=(4, 8))
    buf = cl.Buffer(context, mf.READ_WRITE, 8 * 4 * 4)
    try:
        with pytest.raises(UsageError, match="source 8x4 and destination 4x8 differ"):
            filters.enqueue(queue, a, b, "sobel")
        with pytest.raises(UsageError, match="blur radius"):
            filters.enqueue(queue, a, a, "blur", radius=99)
        with pytest.raises(UsageError, match="pitch 30 bytes"):
            filters.enqueue_buffers(queue, buf, 30, buf, 32, 8, 4, "sobel")
        with pytest.raises(UsageError, match="pitch 16 bytes"):
            filters.enqueue_buffers(queue, buf, 32, buf, 16, 8, 4, "blur")
        with pytest.raises(UsageError, match="is empty"):
            filters.enqueue_buffers(queue, buf, 32, buf, 32, 0, 4, "blur")
    finally:
        for m in (a, b, buf):
            m.release()


def test_program_is_counted_and_released_once(device_choice):
    context = cl.Context([device_choice.device])
    before = live.count("cl_program", "pp-count")
    filters = PostprocessFilters(context, owner="pp-count")
    assert live.count("cl_program", "pp-count") == before + 1
    filters.release()
    filters.release()
    assert live.count("cl_program", "pp-count") == before
