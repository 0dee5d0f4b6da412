"""NV12 and P010 frames as numpy planes: layouts, raw-file packing, matrices, ranges, the reference.

A frame is two planes (../shared/spec/cl_amd_planar_yuv.txt): Y, ``width x height`` samples, and
interleaved UV, ``width/2 x height/2`` (U, V) pairs, one pair per 2x2 block of pixels. NV12 holds
8-bit samples; P010 holds 16-bit words whose high 10 bits are the sample (the low 6 are ignored).
A raw file is the Y plane then the UV plane, row 0 first; P010 words are little-endian.

The conversion (BT.601 / BT.709 as defined by Kr and Kb):
    limited range: Y' = (Y - 16s) / 219s, Cb, Cr = (C - 128s) / 224s   (s = 1 for 8 bits, 4 for 10)
    full range:    Y' = Y / m,            Cb, Cr = (C - 2^(n-1)) / m     (m = 255 or 1023)
    R = Y' + 2(1 - Kr) Cr,  B = Y' + 2(1 - Kb) Cb,  G = (Y' - Kr R - Kb B) / Kg,  Kg = 1 - Kr - Kb
then each of R, G, B is clipped to [0, 1] and rounded to the nearest 8-bit value (floor(255 x + 0.5)).
``reference_rgb`` computes it in float64; kernels/yuv.cl computes the same in float32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.errors import UsageError


@dataclass(frozen=True)
class YuvFormat:
    """One planar 4:2:0 format: sample bits, storage word, and where the bits sit in the word."""

    name: str
    bits: int  # significant bits of a sample
    dtype: type  # numpy storage type of one word
    shift: int  # the sample is ``word >> shift``

    @property
    def max_code(self) -> int:
        return (1 << self.bits) - 1

    @property
    def word_bytes(self) -> int:
        return np.dtype(self.dtype).itemsize

    def words(self, samples: np.ndarray) -> np.ndarray:
        """Sample codes (0 .. max_code) -> storage words."""
        samples = np.asarray(samples)
        if not np.issubdtype(samples.dtype, np.integer):
            samples = samples.astype(np.int64)
        return (samples << self.shift).astype(self.dtype) if self.shift else samples.astype(self.dtype)

    def samples(self, words: np.ndarray) -> np.ndarray:
        """Storage words -> sample codes (int64)."""
        return np.asarray(words).astype(np.int64) >> self.shift


NV12 = YuvFormat("nv12", 8, np.uint8, 0)
P010 = YuvFormat("p010", 10, np.uint16, 6)
FORMATS = {"nv12": NV12, "p010": P010}

# (Kr, Kb) of ITU-R BT.601 and BT.709
MATRICES = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}
RANGES = ("limited", "full")


def yuv_format(name: str) -> YuvFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise UsageError(f"unknown YUV format {name!r}; choose nv12 or p010") from None


def check_choice(matrix: str, range_: str) -> None:
    if matrix not in MATRICES:
        raise UsageError(f"unknown matrix {matrix!r}; choose bt601 or bt709")
    if range_ not in RANGES:
        raise UsageError(f"unknown range {range_!r}; choose limited or full")


def range_params(fmt: YuvFormat, range_: str) -> tuple[float, float, float, float]:
    """(y_offset, y_scale, c_offset, c_scale): Y' = (Y - y_offset) / y_scale, C = (C - c_offset) / c_scale."""
    half = float(1 << (fmt.bits - 1))
    if range_ == "limited":
        s = float(1 << (fmt.bits - 8))  # 1 for 8 bits, 4 for 10
        return 16.0 * s, 219.0 * s, 128.0 * s, 224.0 * s
    if range_ == "full":
        return 0.0, float(fmt.max_code), half, float(fmt.max_code)
    raise UsageError(f"unknown range {range_!r}; choose limited or full")


def check_size(width: int, height: int) -> None:
    if width < 2 or height < 2 or width % 2 or height % 2:
        raise UsageError(f"{width}x{height}: NV12/P010 frames need an even width and height (at least 2x2)")


def frame_nbytes(fmt: YuvFormat, width: int, height: int) -> int:
    """Bytes of one raw frame: the Y plane then the interleaved UV plane."""
    return (width * height + 2 * (width // 2) * (height // 2)) * fmt.word_bytes


def pack(fmt: YuvFormat, y: np.ndarray, uv: np.ndarray) -> bytes:
    """Planes (words) -> raw frame bytes (P010 little-endian)."""
    le = np.dtype(fmt.dtype).newbyteorder("<")
    return np.ascontiguousarray(y, le).tobytes() + np.ascontiguousarray(uv, le).tobytes()


def unpack(fmt: YuvFormat, data: bytes, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw frame bytes -> (Y: H x W, UV: H/2 x W/2 x 2) words in native order.

    Raises UsageError when ``data`` is not exactly one frame of that size.
    """
    check_size(width, height)
    want = frame_nbytes(fmt, width, height)
    if len(data) != want:
        raise UsageError(f"{len(data)} bytes, but one {width}x{height} {fmt.name.upper()} frame is {want} bytes")
    words = np.frombuffer(data, np.dtype(fmt.dtype).newbyteorder("<")).astype(fmt.dtype)
    n = width * height
    return words[:n].reshape(height, width), words[n:].reshape(height // 2, width // 2, 2)


def reference_rgb(fmt: YuvFormat, y: np.ndarray, uv: np.ndarray, matrix: str, range_: str) -> np.ndarray:
    """float64 reference of the conversion: uint8 H x W x 3, row 0 first."""
    check_choice(matrix, range_)
    kr, kb = MATRICES[matrix]
    kg = 1.0 - kr - kb
    y_off, y_scale, c_off, c_scale = range_params(fmt, range_)
    yy = (fmt.samples(y).astype(np.float64) - y_off) / y_scale
    c = (fmt.samples(uv).astype(np.float64) - c_off) / c_scale
    c = c.repeat(2, axis=0).repeat(2, axis=1)  # each chroma sample covers its 2x2 block
    cb, cr = c[..., 0], c[..., 1]
    r = yy + 2.0 * (1.0 - kr) * cr
    b = yy + 2.0 * (1.0 - kb) * cb
    g = (yy - kr * r - kb * b) / kg
    rgb = np.clip(np.stack([r, g, b], -1), 0.0, 1.0)
    return np.floor(rgb * 255.0 + 0.5).astype(np.uint8)


def rgb_to_yuv(fmt: YuvFormat, rgb: np.ndarray, matrix: str, range_: str) -> tuple[np.ndarray, np.ndarray]:
    """The forward conversion (float RGB in [0, 1], H x W x 3 -> words), chroma averaged per 2x2 block.

    For tests: colours that are flat over each 2x2 block come back through ``reference_rgb``.
    """
    kr, kb = MATRICES[matrix]
    kg = 1.0 - kr - kb
    r, g, b = (np.asarray(rgb, np.float64)[..., i] for i in range(3))
    yy = kr * r + kg * g + kb * b
    cb = (b - yy) / (2.0 * (1.0 - kb))
    cr = (r - yy) / (2.0 * (1.0 - kr))
    y_off, y_scale, c_off, c_scale = range_params(fmt, range_)
    h, w = yy.shape

    def block(a):
        return a.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))

    y_codes = np.clip(np.round(yy * y_scale + y_off), 0, fmt.max_code)
    c = np.stack([block(cb), block(cr)], -1)
    c_codes = np.clip(np.round(c * c_scale + c_off), 0, fmt.max_code)
    return fmt.words(y_codes), fmt.words(c_codes)
