"""``glshare convert``: one raw NV12 / P010 frame through the yuv scene's CL path to .npy or .png.

Headless and GL-free: a plain CL context on the chosen device, the same ``plane_image`` planes
and the same kernels/yuv.cl launch as the scene (app/yuv/converter.py). Every check on the input
(format, matrix, range, even size, exact file size, output suffix) runs before any CL work; bad
input raises UsageError (exit 2, one line) and nothing is written. The output goes to a temporary
file beside OUT that is renamed onto OUT only once it is complete.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pyopencl as cl

from app.cl.device import select_device
from app.config import cl_device_selector, parse_wxh
from app.errors import ClError, UsageError
from app.trace.png import write_png
from app.yuv.converter import convert_frame
from app.yuv.formats import check_choice, unpack, yuv_format

log = logging.getLogger(__name__)

SUFFIXES = (".npy", ".png")


def _write_atomically(path: Path, rgb: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")
    try:
        if path.suffix.lower() == ".npy":
            with open(tmp, "wb") as f:
                np.save(f, rgb)
        else:
            write_png(tmp, rgb)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def main(args) -> int:
    """Run the command; returns the exit status (0). Raises UsageError on bad input."""
    fmt = yuv_format(args.fmt)
    check_choice(args.matrix, args.range_)
    size = parse_wxh(args.size, even=True)
    if not isinstance(size, tuple):
        raise UsageError("--size takes WxH such as 1920x1080")
    width, height = size
    out = Path(args.output)
    if out.suffix.lower() not in SUFFIXES:
        raise UsageError(f"{out}: unknown output type {out.suffix or '(no suffix)'!r}; use .npy or .png")
    if out.is_dir():
        raise UsageError(f"{out} is a directory, not a file")
    src = Path(args.input)
    try:
        data = src.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {src}: {exc.strerror or exc}") from None
    try:
        y, uv = unpack(fmt, data, width, height)
    except UsageError as exc:
        raise UsageError(f"{src}: {exc.message}") from None

    choice = select_device(cl_device_selector(getattr(args, "cl_device", None)))
    context = cl.Context([choice.device])
    queue = cl.CommandQueue(context, choice.device)
    try:
        rgba = convert_frame(context, queue, fmt, y, uv, args.matrix, args.range_)
    except cl.Error as exc:
        raise ClError.from_pyopencl(exc, "convert") from exc
    finally:
        queue.finish()
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(out, np.ascontiguousarray(rgba[:, :, :3]))
    print(f"glshare: wrote {out} ({width}x{height} RGB from {fmt.name.upper()}, {args.matrix} {args.range_}, "
          f"on {choice.label})")
    return 0
