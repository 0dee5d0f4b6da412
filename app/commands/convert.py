"""``glshare convert``: one NV12 / P010 frame through the yuv scene's CL path to .npy or .png.

The frame is a raw file (``--format`` and ``--size``: Y plane then UV plane) or one frame of a
video file FFmpeg reads (neither option; ``--frame N``, default 0): decoded by app/yuv/video.py to
NV12, or P010 for sources of more than 8 bits, with the stream's matrix and range unless
``--matrix`` / ``--range`` say otherwise.

Headless and GL-free: a plain CL context on the chosen device, the same ``plane_image`` planes
and the same kernels/yuv.cl launch as the scene (app/yuv/converter.py). Every check on the input
(format, matrix, range, even size, exact file size, the video's frame, output suffix) runs before
any CL work; bad input raises UsageError (exit 2, one line) and nothing is written. The output
goes to a temporary file beside OUT that is renamed onto OUT only once it is complete.
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
from app.yuv.formats import YuvFormat, check_choice, unpack, yuv_format

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


def _raw_frame(args, src: Path) -> tuple[YuvFormat, np.ndarray, np.ndarray, str, str, str]:
    """(format, Y, UV, matrix, range, what) of a raw frame file; UsageError on bad input."""
    if args.fmt is None or args.size is None:
        raise UsageError("a raw frame needs both --format and --size (a video file needs neither)")
    if getattr(args, "frame", None) is not None:
        raise UsageError("--frame picks a frame of a video file; a raw file holds one frame (leave out "
                         "--format and --size for a video)")
    fmt = yuv_format(args.fmt)
    matrix, range_ = args.matrix or "bt709", args.range_ or "limited"
    check_choice(matrix, range_)
    size = parse_wxh(args.size, even=True)
    if not isinstance(size, tuple):
        raise UsageError("--size takes WxH such as 1920x1080")
    width, height = size
    try:
        data = src.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {src}: {exc.strerror or exc}") from None
    try:
        y, uv = unpack(fmt, data, width, height)
    except UsageError as exc:
        raise UsageError(f"{src}: {exc.message}") from None
    return fmt, y, uv, matrix, range_, f"{fmt.name.upper()}, {matrix} {range_}"


def _video_frame(args, src: Path) -> tuple[YuvFormat, np.ndarray, np.ndarray, str, str, str]:
    """(format, Y, UV, matrix, range, what) of frame ``--frame`` of a video file; UsageError on bad input."""
    from app.yuv.video import NotMediaError, VideoSource

    index = args.frame or 0
    try:
        video = VideoSource(src, matrix=args.matrix, range_=args.range_, owner="convert")
    except NotMediaError as exc:
        raise UsageError(f"{exc.message}; a raw NV12/P010 frame needs --format and --size") from None
    with video:
        frame = video.frame(index, wrap=False)
        what = (f"frame {index} of {src.name}: {video.fmt.name.upper()} from {video.pixel_format}, "
                f"{video.matrix} ({video.matrix_source}) {video.range_} ({video.range_source})")
        if video.cropped_from:
            what += ", cropped from {}x{}".format(*video.cropped_from)
        return video.fmt, frame.y, frame.uv, video.matrix, video.range_, what


def main(args) -> int:
    """Run the command; returns the exit status (0). Raises UsageError on bad input."""
    out = Path(args.output)
    if out.suffix.lower() not in SUFFIXES:
        raise UsageError(f"{out}: unknown output type {out.suffix or '(no suffix)'!r}; use .npy or .png")
    if out.is_dir():
        raise UsageError(f"{out} is a directory, not a file")
    src = Path(args.input)
    if args.fmt is not None or args.size is not None:
        fmt, y, uv, matrix, range_, what = _raw_frame(args, src)
    else:
        fmt, y, uv, matrix, range_, what = _video_frame(args, src)
    height, width = y.shape

    choice = select_device(cl_device_selector(getattr(args, "cl_device", None)))
    context = cl.Context([choice.device])
    queue = cl.CommandQueue(context, choice.device)
    try:
        rgba = convert_frame(context, queue, fmt, y, uv, matrix, range_)
    except cl.Error as exc:
        raise ClError.from_pyopencl(exc, "convert") from exc
    finally:
        queue.finish()
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(out, np.ascontiguousarray(rgba[:, :, :3]))
    print(f"glshare: wrote {out} ({width}x{height} RGB from {what}, on {choice.label})")
    return 0
