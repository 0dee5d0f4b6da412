"""numpy references of kernels/postprocess.cl's filters (Sobel edges, box blur), bit for bit.

No GL or CL here: the post-process scene's pixel tests filter the frame GL rendered with these and
compare with what the kernels wrote. Images are uint8 H x W x 4 (RGBA), row 0 first. The kernels
work in whole codes with integer arithmetic only, and so do these, so they agree exactly:

sobel:    L = (77 R + 150 G + 29 B + 128) >> 8;  Gx, Gy the 3x3 Sobel operators on L (Gx: right
          column minus left, Gy: bottom row minus top, weights 1 2 1);
          E = min(255, floor(sqrt(Gx^2 + Gy^2)));  out = (E, E, E, 255)
box_blur: each channel, alpha too: (sum over the (2r+1)^2 window + n // 2) // n, n = (2r+1)^2
Neighbours outside the image are the nearest edge pixel (clamp to edge).
"""
from __future__ import annotations

import numpy as np

from app.errors import UsageError

# the largest blur radius the scene offers: (2r+1)^2 reads per pixel, 961 at r = 15
MAX_BLUR_RADIUS = 15


def _check_rgba(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 4 or 0 in image.shape:
        raise UsageError(f"expected a uint8 H x W x 4 RGBA image, got {image.dtype} {image.shape}")
    return image


def check_radius(radius: int) -> int:
    """The blur radius as an int; UsageError outside 0 .. MAX_BLUR_RADIUS."""
    if isinstance(radius, bool) or int(radius) != radius or not 0 <= radius <= MAX_BLUR_RADIUS:
        raise UsageError(f"blur radius {radius!r}: choose a whole number from 0 to {MAX_BLUR_RADIUS}")
    return int(radius)


def luma(image: np.ndarray) -> np.ndarray:
    """The Sobel filter's luma, int64 H x W: (77 R + 150 G + 29 B + 128) >> 8."""
    c = _check_rgba(image).astype(np.int64)
    return (77 * c[..., 0] + 150 * c[..., 1] + 29 * c[..., 2] + 128) >> 8


def _shifted(a: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """``a`` read at (y + dy, x + dx) for every (y, x), coordinates clamped to the edges."""
    h, w = a.shape[:2]
    ys = np.clip(np.arange(h) + dy, 0, h - 1)
    xs = np.clip(np.arange(w) + dx, 0, w - 1)
    return a[ys][:, xs]


def isqrt_floor(m: np.ndarray) -> np.ndarray:
    """floor(sqrt(m)) of non-negative integers, exactly (float64 estimate, then corrected)."""
    m = np.asarray(m, np.int64)
    r = np.floor(np.sqrt(m.astype(np.float64))).astype(np.int64)
    r -= (r * r > m)
    r += ((r + 1) * (r + 1) <= m)
    return r


def sobel_gradients(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Gx, Gy) of the luma, int64 H x W, clamp to edge."""
    lum = luma(image)

    def at(dy: int, dx: int) -> np.ndarray:
        return _shifted(lum, dy, dx)

    gx = (at(-1, 1) + 2 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2 * at(0, -1) + at(1, -1))
    gy = (at(1, -1) + 2 * at(1, 0) + at(1, 1)) - (at(-1, -1) + 2 * at(-1, 0) + at(-1, 1))
    return gx, gy


def sobel(image: np.ndarray) -> np.ndarray:
    """kernels/postprocess.cl ``sobel``: uint8 H x W x 4, (E, E, E, 255)."""
    gx, gy = sobel_gradients(image)
    e = np.minimum(255, isqrt_floor(gx * gx + gy * gy)).astype(np.uint8)
    out = np.empty(e.shape + (4,), np.uint8)
    out[..., :3] = e[..., None]
    out[..., 3] = 255
    return out


def box_blur(image: np.ndarray, radius: int) -> np.ndarray:
    """kernels/postprocess.cl ``box_blur``: uint8 H x W x 4, every channel, rounded to nearest."""
    image = _check_rgba(image)
    r = check_radius(radius)
    # a separable sum gives the same integer sum as the kernel's (2r+1)^2 loop
    c = image.astype(np.int64)
    rows = sum(_shifted(c, 0, dx) for dx in range(-r, r + 1))
    total = sum(_shifted(rows, dy, 0) for dy in range(-r, r + 1))
    n = (2 * r + 1) ** 2
    return ((total + n // 2) // n).astype(np.uint8)
