"""The yuv scene's moving test pattern, made directly in Y and UV codes, and the clip in ``assets/``.

Integer arithmetic only, so every machine makes the same bytes (the committed clip is checked
against a fresh one). The pattern spans every code from 0 to the format's maximum, so limited
range shows clipping at both ends:
- Y: a horizontal triangle ramp scrolling right, mixed with a vertical one scrolling down,
  plus a white box moving left to right and a black box moving right to left;
- U follows a triangle ramp across the width (half resolution), V one down the height, both
  drifting with the frame number.

``python -m app.yuv.pattern`` writes ``assets/yuv-pattern-64x36-{nv12,p010}.yuv`` (4 frames each).
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

from app.config import ASSETS_DIR
from app.yuv.formats import FORMATS, YuvFormat, check_size, pack

log = logging.getLogger(__name__)

CLIP_SIZE = (64, 36)
CLIP_FRAMES = 4
STEPS = 1024  # positions across a ramp period


def _triangle(pos: np.ndarray, max_code: int) -> np.ndarray:
    """pos in ramp steps (any integer) -> 0 .. max_code .. 0 over one period of STEPS."""
    p = np.mod(pos, STEPS)
    up = np.where(p < STEPS // 2, p, STEPS - p)  # 0 .. STEPS/2
    return (up * max_code) // (STEPS // 2)


def pattern_codes(width: int, height: int, frame: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample codes of frame ``frame``: (Y: H x W, UV: H/2 x W/2 x 2), int32 in 0 .. 2^bits - 1."""
    check_size(width, height)
    top = (1 << bits) - 1
    xs = np.arange(width, dtype=np.int64) * STEPS // width
    ys = np.arange(height, dtype=np.int64) * STEPS // height
    across = (_triangle(xs + 8 * frame, top) * 3).astype(np.int32)  # 1-D ramps, then one broadcast add
    down = _triangle(ys * 2 + 5 * frame, top).astype(np.int32)
    y = (across[None, :] + down[:, None]) >> 2
    bw, bh = max(1, width // 8), max(1, height // 6)
    span = max(1, width - bw)
    x0 = (3 * frame) % span
    y[height // 4:height // 4 + bh, x0:x0 + bw] = top
    x1 = span - x0
    y[height // 2:height // 2 + bh, x1:x1 + bw] = 0
    cx = np.arange(width // 2, dtype=np.int64) * STEPS // (width // 2)
    cy = np.arange(height // 2, dtype=np.int64) * STEPS // (height // 2)
    uv = np.empty((height // 2, width // 2, 2), np.int32)
    uv[..., 0] = _triangle(cx + 3 * frame, top)[None, :]
    uv[..., 1] = _triangle(cy + STEPS // 4 - 2 * frame, top)[:, None]
    return y, uv


def pattern_frame(fmt: YuvFormat, width: int, height: int, frame: int) -> tuple[np.ndarray, np.ndarray]:
    """Frame ``frame`` as storage words: (Y: H x W, UV: H/2 x W/2 x 2) of ``fmt.dtype``."""
    y, uv = pattern_codes(width, height, frame, fmt.bits)
    return fmt.words(y), fmt.words(uv)


def clip_path(fmt_name: str, directory: Path = ASSETS_DIR) -> Path:
    w, h = CLIP_SIZE
    return Path(directory) / f"yuv-pattern-{w}x{h}-{fmt_name}.yuv"


def clip_bytes(fmt: YuvFormat, frames: int = CLIP_FRAMES, size: tuple[int, int] = CLIP_SIZE) -> bytes:
    """``frames`` raw frames of the pattern, one after the other."""
    return b"".join(pack(fmt, *pattern_frame(fmt, size[0], size[1], f)) for f in range(frames))


def write_clips(directory: Path = ASSETS_DIR) -> list[Path]:
    """Write the NV12 and the P010 clip (atomically) and return their paths."""
    out = []
    for name, fmt in FORMATS.items():
        path = clip_path(name, directory)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(clip_bytes(fmt))
        tmp.replace(path)
        out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app.yuv.pattern",
                                description="write the yuv scene's test-pattern clips (raw NV12 and P010)")
    p.add_argument("--out", type=Path, default=ASSETS_DIR, help="directory (default: assets/)")
    args = p.parse_args(argv)
    for path in write_clips(args.out):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
