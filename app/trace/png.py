"""A small PNG writer (zlib from the standard library): screenshots need no imaging package."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from app.outputs import write_bytes


def write_png(path, pixels: np.ndarray) -> str:
    """Write uint8 H x W x {1,3,4} pixels, top row first (app/outputs.py: ``-`` is standard output)."""
    return write_bytes(path, png_bytes(pixels))


def png_bytes(pixels: np.ndarray) -> bytes:
    """The PNG file of uint8 H x W x {1,3,4} pixels, top row first."""
    arr = np.ascontiguousarray(pixels, np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + arr[y].tobytes() for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0))
    return png + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def read_png(path: str | Path) -> np.ndarray:
    """Read back an 8-bit, non-interlaced PNG as written by ``write_png`` (tests)."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if tag == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            c = {0: 1, 2: 3, 6: 4}[ctype]
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * c
    out = np.empty((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 0xFF
        else:
            cur = line.copy()
            for x in range(stride):
                left = cur[x - c] if x >= c else 0
                up, ul = prev[x], (prev[x - c] if x >= c else 0)
                if f == 1:
                    cur[x] = (cur[x] + left) & 0xFF
                elif f == 3:
                    cur[x] = (cur[x] + ((left + up) >> 1)) & 0xFF
                else:
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else ul)
                    cur[x] = (cur[x] + pred) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(h, w, c)
