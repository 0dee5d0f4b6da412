"""``glshare convert``: one NV12 / P010 frame through the yuv scene's CL path to .npy or .png.

The frame is a raw file (``--format`` and ``--size``: Y plane then UV plane) or one frame of a
video file FFmpeg reads (neither option; ``--frame N``, default 0): decoded by app/yuv/video.py to
NV12, or P010 for sources of more than 8 bits, with the stream's matrix and range unless
``--matrix`` / ``--range`` say otherwise.

Headless and GL-free: a plain CL context on the chosen device, the same ``plane_image`` planes
and the same kernels/yuv.cl launch as the scene (app/yuv/converter.py). Every check on the input
(format, matrix, range, even size, exact file size, the video's frame, output suffix) runs before
any CL work, and so do the output path (app/outputs.py), the input's size (read from ``stat``
before a byte is read) and the frame's size against the device's image limits; bad input raises
UsageError (exit 2, one line) and nothing is written. OUT ``-`` writes the PNG to standard
output; otherwise the output goes to a temporary file beside OUT that is renamed onto OUT only
once it is complete (app/outputs.py).
"""
from __future__ import annotations

import io
import logging
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

from app.cl.device import select_device
from app.config import cl_device_selector, parse_wxh
from app.errors import ClError, UsageError
from app.outputs import check_outputs, write_bytes
from app.trace.png import png_bytes
from app.yuv.converter import convert_frame
from app.yuv.formats import YuvFormat, check_choice, check_size, frame_nbytes, unpack, yuv_format

log = logging.getLogger(__name__)

SUFFIXES = (".npy", ".png")


def _encode(out, rgb: np.ndarray) -> bytes:
    if str(out) != "-" and Path(out).suffix.lower() == ".npy":
        buf = io.BytesIO()
        np.save(buf, rgb)
        return buf.getvalue()
    return png_bytes(rgb)


def check_image_limits(device: cl.Device, width: int, height: int, label: str) -> None:
    """UsageError when a ``width`` x ``height`` frame does not fit the device's 2D images
    (CL_DEVICE_IMAGE2D_MAX_WIDTH / _HEIGHT) or its largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE,
    for the RGBA8 output)."""
    max_w, max_h = int(device.image2d_max_width), int(device.image2d_max_height)
    if width > max_w or height > max_h:
        raise UsageError(f"{width}x{height}: larger than the device's 2D images can be ({max_w}x{max_h} on {label})")
    alloc = int(device.max_mem_alloc_size)
    if 4 * width * height > alloc:
        raise UsageError(f"{width}x{height}: its RGBA output ({4 * width * height:,} bytes) is more than the device "
                         f"allocates at once ({alloc:,} bytes on {label})")


def _check_input(src: Path, want: int, what: str) -> None:
    """The input's size checked with ``stat``: a file of the wrong size is refused unread."""
    try:
        st = src.stat()
    except OSError as exc:
        raise UsageError(f"cannot read {src}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot read {src}: is a folder, not a file")
    if stat.S_ISREG(st.st_mode) and st.st_size != want:
        raise UsageError(f"{src}: {st.st_size} bytes, but {what} is {want} bytes")


def _read_exactly(src: Path, want: int, what: str) -> bytes:
    """The input's bytes (a fifo is read up to one byte past ``want``, never more)."""
    try:
        with open(src, "rb") as f:
            data = f.read(want + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {src}: {exc.strerror or exc}") from None
    if len(data) != want:
        got = f"{len(data)} bytes" if len(data) <= want else f"more than {want} bytes"
        raise UsageError(f"{src}: {got}, but {what} is {want} bytes")
    return data


def _raw_frame(args, src: Path, device) -> tuple[YuvFormat, np.ndarray, np.ndarray, str, str, str]:
    """(format, Y, UV, matrix, range, what) of a raw frame file; UsageError on bad input.
    ``device()`` gives the DeviceChoice, asked for once the input's size is known to be right."""
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
    check_size(width, height)
    want, what = frame_nbytes(fmt, width, height), f"one {width}x{height} {fmt.name.upper()} frame"
    _check_input(src, want, what)
    choice = device()
    check_image_limits(choice.device, width, height, choice.label)
    data = _read_exactly(src, want, what)
    try:
        y, uv = unpack(fmt, data, width, height)
    except UsageError as exc:
        raise UsageError(f"{src}: {exc.message}") from None
    return fmt, y, uv, matrix, range_, f"{fmt.name.upper()}, {matrix} {range_}"


def _video_frame(args, src: Path, device) -> tuple[YuvFormat, np.ndarray, np.ndarray, str, str, str]:
    """(format, Y, UV, matrix, range, what) of frame ``--frame`` of a video file; UsageError on bad input.
    ``device()`` gives the DeviceChoice, asked for once the stream's size is known."""
    from app.yuv.video import NotMediaError, VideoSource  # start-up: only where a video plays (decimal)

    index = args.frame or 0
    try:
        video = VideoSource(src, matrix=args.matrix, range_=args.range_, owner="convert")
    except NotMediaError as exc:
        raise UsageError(f"{exc.message}; a raw NV12/P010 frame needs --format and --size") from None
    with video:
        choice = device()
        check_image_limits(choice.device, video.width, video.height, choice.label)
        frame = video.frame(index, wrap=False)
        what = (f"frame {index} of {src.name}: {video.fmt.name.upper()} from {video.pixel_format}, "
                f"{video.matrix} ({video.matrix_source}) {video.range_} ({video.range_source})")
        if video.cropped_from:
            what += ", cropped from {}x{}".format(*video.cropped_from)
        return video.fmt, frame.y, frame.uv, video.matrix, video.range_, what


def main(args) -> int:
    """Run the command; returns the exit status (0). Raises UsageError on bad input."""
    out = args.output
    to_stdout = str(out) == "-"
    if not to_stdout and Path(out).suffix.lower() not in SUFFIXES:
        raise UsageError(f"{out}: unknown output type {Path(out).suffix or '(no suffix)'!r}; use .npy or .png "
                         "(or - for a PNG on standard output)")
    check_outputs({"OUT": out})
    src = Path(args.input)
    if not to_stdout and src.exists() and Path(out).exists() and os.path.samefile(src, out):
        raise UsageError(f"OUT {out} is the input file: give another path")
    chosen = []

    def device():
        if not chosen:
            chosen.append(select_device(cl_device_selector(getattr(args, "cl_device", None))))
        return chosen[0]

    if args.fmt is not None or args.size is not None:
        fmt, y, uv, matrix, range_, what = _raw_frame(args, src, device)
    else:
        fmt, y, uv, matrix, range_, what = _video_frame(args, src, device)
    height, width = y.shape
    choice = device()

    context = cl.Context([choice.device])
    queue = cl.CommandQueue(context, choice.device)
    try:
        rgba = convert_frame(context, queue, fmt, y, uv, matrix, range_)
    except cl.Error as exc:
        raise ClError.from_pyopencl(exc, "convert") from exc
    finally:
        queue.finish()
    where = write_bytes(out, _encode(out, np.ascontiguousarray(rgba[:, :, :3])))
    print(f"glshare: wrote {where} ({width}x{height} RGB from {what}, on {choice.label})",
          file=sys.stderr if to_stdout else sys.stdout)
    return 0
