"""Decoded video (PyAV, any file FFmpeg reads) as NV12 / P010 planes in glshare's layouts.

``VideoSource`` opens the file, decodes frames on demand and hands each one out as the two planes
``app/yuv/formats.py`` defines: Y (H x W) and interleaved UV (H/2 x W/2 x 2), uint8 NV12 for 8-bit
sources, uint16 P010 (sample in the high bits) for sources of more than 8 bits. Sources already in
4:2:0 (yuv420p, yuvj420p, nv12, nv21, yuv420p9..16, p010, p016, ...) are repacked without touching
a sample; other YUV layouts (4:2:2, 4:4:4, 4:4:0, 4:1:1) are resampled to 4:2:0 by swscale's area
filter (``resampled_from`` says so); RGB, grey and palette sources are refused.

Colour: the matrix (BT.601 / BT.709) and the range (limited / full) come from the stream where it
says them (``matrix_source`` / ``range_source`` = "stream"); a yuvj* pixel format says full range.
Where the stream says nothing, the defaults are the ones players use: BT.709 for HD (width >= 1280
or height > 576), BT.601 below, and limited range ("default"). A matrix glshare does not convert
(BT.2020, SMPTE 240M, ...) falls back to that default with a warning and ``matrix_note``.
Either can be forced by the caller ("given").

Frame indices count from the first frame shown (index 0). ``frame(i)`` wraps around past the end
(the scene loops) unless ``wrap=False``; a jump backwards or far ahead seeks to the key frame at or
before ``i / rate`` seconds and decodes forward, so on a constant-frame-rate stream a seek gives the
same frame as decoding from the start. The frame count comes from the container where it records
one ("stream"), else it is learnt the first time decoding reaches the end ("counted").

Odd sizes are cropped to even (the last column and/or row go; ``cropped_from`` says so): NV12 and
P010 hold one chroma pair per 2x2 block. Every problem with the input (missing file, not a media
file, no video stream, a pixel format glshare cannot take, an undecodable frame) raises UsageError
with one line naming the file.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import numpy as np

from app.diagnostics import live
from app.errors import UsageError
from app.yuv.formats import MATRICES, NV12, P010, RANGES, YuvFormat, check_choice

log = logging.getLogger(__name__)

# AVColorSpace (libavutil/pixfmt.h) -> glshare's matrix; the others are named for the warning.
_MATRIX_OF_SPACE = {1: "bt709", 5: "bt601", 6: "bt601"}
_SPACE_NAMES = {0: "rgb", 1: "bt709", 2: "unspecified", 4: "fcc", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m",
                8: "ycgco", 9: "bt2020nc", 10: "bt2020c", 11: "smpte2085", 12: "chroma-derived-nc",
                13: "chroma-derived-c", 14: "ictcp"}
# AVColorRange -> glshare's range (0 is unspecified)
_RANGE_OF_AV = {1: "limited", 2: "full"}
DEFAULT_RATE = Fraction(25)
# how far ahead decoding forward is preferred to a seek
_FORWARD_LIMIT = 32


class NotMediaError(UsageError):
    """FFmpeg cannot open the file as a media file (a raw frame, a text file, a truncated header)."""


@dataclass(frozen=True)
class VideoFrame:
    """One decoded frame as glshare planes: ``y`` H x W, ``uv`` H/2 x W/2 x 2, of ``fmt.dtype``.

    The arrays are read-only copies (the source hands the same frame out again while it is current);
    ``uv`` viewed as bytes is also the W x H/2 single-channel layout of UV pairs.
    """

    index: int
    y: np.ndarray
    uv: np.ndarray
    time_s: float | None  # presentation time from the start of the stream, where the frame has one


@dataclass(frozen=True)
class _Layout:
    """How a decoded pixel format maps onto NV12/P010 planes."""

    kind: str  # "planar" (Y, U, V planes), "semi" (Y, interleaved UV), "semi_vu" (Y, interleaved VU)
    bits: int  # significant bits of a sample
    msb: bool  # samples already sit in the high bits of their 16-bit word (p010, p016)
    big_endian: bool


def _frames(count: int) -> str:
    return f"{count} frame" if count == 1 else f"{count} frames"


def _native_layout(name: str) -> _Layout | None:
    """The 4:2:0 pixel formats taken without resampling, or None."""
    if name in ("yuv420p", "yuvj420p", "yuva420p"):
        return _Layout("planar", 8, False, False)
    if name == "nv12":
        return _Layout("semi", 8, False, False)
    if name == "nv21":
        return _Layout("semi_vu", 8, False, False)
    for bits in (9, 10, 12, 14, 16):
        for prefix in ("yuv420p", "yuva420p"):
            for end in ("le", "be"):
                if name == f"{prefix}{bits}{end}":
                    return _Layout("planar", bits, False, end == "be")
    for bits in (10, 12, 16):
        for end in ("le", "be"):
            if name == f"p0{bits}{end}":
                return _Layout("semi", bits, True, end == "be")
    return None


def check_frame_size(path, width: int, height: int) -> None:
    """UsageError where the video's frames are larger than glshare's textures may be (every side at
    most MAX_IMAGE_SIDE, the size GL 4.x guarantees), before any window or context opens."""
    from app.config import MAX_IMAGE_SIDE

    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise UsageError(f"--video {path}: {width}x{height} frames; glshare's textures take at most "
                         f"{MAX_IMAGE_SIDE} texels a side (the size GL 4.x guarantees)")


def _open_container(path: Path):
    import stat

    import av  # start-up: PyAV loads FFmpeg, only where a video is opened

    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a video file")
    mode = path.stat().st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
        # opening a fifo blocks until a writer comes; the frames are read again from the start
        # when the video loops, which a stream cannot do
        what = "a fifo" if stat.S_ISFIFO(mode) else "not a regular file"
        raise UsageError(f"{path} is {what}: glshare reads a video file it can seek (it loops); save the stream "
                         "to a file first")
    try:
        return av.open(str(path), "r")
    except av.error.FFmpegError as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise NotMediaError(f"{path}: FFmpeg cannot read it as a media file ({reason})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot open: {exc.strerror or exc}") from None


class VideoSource:
    """The first video stream of a file, decoded to NV12 (8-bit sources) or P010 (deeper ones).

    Args:
        path: any file FFmpeg reads.
        matrix, range_: force the colour matrix ("bt601"/"bt709") or range ("limited"/"full");
            None takes them from the stream, or the defaults where it says nothing.
        label, owner: for ``repr`` and the live-object counters.

    Attributes (fixed once open): ``fmt`` (NV12 or P010), ``width``, ``height`` (even, after any
    crop), ``rate`` (frames per second, a Fraction) and ``rate_source``, ``matrix``/``range_`` and
    their ``*_source`` ("stream", "default", "given"), ``matrix_note``, ``pixel_format`` (the
    decoder's), ``resampled_from`` (the pixel format resampled to 4:2:0, or None), ``cropped_from``
    ((w, h) before the crop to even, or None), ``codec``.

    Raises:
        UsageError: the file is missing, is no media file, has no video stream, its pixel format
            is not YUV, its frames are smaller than 2x2, or its first frame cannot be decoded.
    """

    def __init__(self, path: str | Path, *, matrix: str | None = None, range_: str | None = None,
                 label: str = "", owner: str = "") -> None:
        self.path = Path(path)
        self.label = label or f"video {self.path.name}"
        self.owner = owner
        if matrix is not None and matrix not in MATRICES:
            check_choice(matrix, "limited")
        if range_ is not None and range_ not in RANGES:
            check_choice("bt709", range_)
        self._container = _open_container(self.path)
        live.created("video_source", owner)
        try:
            self._setup(matrix, range_)
        except BaseException:
            self.release()
            raise

    # -- opening ------------------------------------------------------------------------------------
    def _setup(self, matrix: str | None, range_: str | None) -> None:
        streams = self._container.streams
        if not streams.video:
            kinds = ", ".join(f"{len(getattr(streams, k))} {k}" for k in ("audio", "subtitles", "data")
                              if len(getattr(streams, k)))
            raise UsageError(f"{self.path}: no video stream ({kinds or 'no streams at all'})")
        self._stream = stream = streams.video[0]
        self.codec = stream.codec_context.name
        self._time_base = stream.time_base or Fraction(1, 1_000_000)
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        self.rate, self.rate_source = (Fraction(rate), "stream") if rate else (DEFAULT_RATE, "default")
        header_frames = int(stream.frames or 0)
        self._frame_count: int | None = header_frames or None
        self.frame_count_source = "stream" if header_frames else "unknown"

        self._decoder = self._container.decode(stream)
        self._next = 0  # index of the frame the decoder gives next
        self._pts0: int | None = None
        self._resample_to: str | None = None
        first = self._decode_next()
        if first is None:
            raise UsageError(f"{self.path}: the video stream has no decodable frame")
        self._pts0 = first.pts
        self.pixel_format = first.format.name
        self._layout, self.resampled_from = self._layout_of(first)
        src_w, src_h = first.width, first.height
        if src_w < 2 or src_h < 2:
            raise UsageError(f"{self.path}: {src_w}x{src_h} frames; NV12/P010 need at least 2x2")
        self.width, self.height = src_w - src_w % 2, src_h - src_h % 2
        self.cropped_from = (src_w, src_h) if (src_w, src_h) != (self.width, self.height) else None
        if self.cropped_from:
            log.info("%s: %dx%d cropped to %dx%d (NV12/P010 need even sizes)", self.path, src_w, src_h,
                     self.width, self.height)
        self.fmt: YuvFormat = NV12 if self._layout.bits <= 8 else P010
        self._colour(first, matrix, range_)
        self._cache: VideoFrame | None = self._to_frame(first, 0)

    def _layout_of(self, frame) -> tuple[_Layout, str | None]:
        name = frame.format.name
        layout = _native_layout(name)
        if layout is not None:
            return layout, None
        vf = frame.format
        comps = vf.components
        if vf.is_rgb or vf.has_palette or vf.is_bayer or vf.is_bit_stream or len(comps) < 3 \
                or not comps[0].is_luma:
            raise UsageError(f"{self.path}: pixel format {name} is not YUV; glshare plays YUV video "
                             f"(4:2:0 as it is, 4:2:2 and 4:4:4 resampled to 4:2:0)")
        deep = comps[0].bits > 8
        self._resample_to = "yuv420p16le" if deep else "yuv420p"
        return _Layout("planar", 16 if deep else 8, False, False), name

    def _colour(self, frame, matrix: str | None, range_: str | None) -> None:
        cc = self._stream.codec_context
        space = frame.colorspace if frame.colorspace not in (None, 2) else cc.colorspace
        av_range = frame.color_range or cc.color_range
        self.matrix_note = ""
        if matrix is not None:
            self.matrix, self.matrix_source = matrix, "given"
        elif space in _MATRIX_OF_SPACE:
            self.matrix, self.matrix_source = _MATRIX_OF_SPACE[space], "stream"
        else:
            self.matrix = "bt709" if self.width >= 1280 or self.height > 576 else "bt601"
            self.matrix_source = "default"
            if space not in (None, 2):
                said = _SPACE_NAMES.get(int(space), f"colorspace {int(space)}")
                self.matrix_note = f"the stream says {said}, which glshare does not convert; using {self.matrix}"
                log.warning("%s: %s", self.path, self.matrix_note)
        if range_ is not None:
            self.range_, self.range_source = range_, "given"
        elif self.pixel_format.startswith("yuvj"):
            self.range_, self.range_source = "full", "stream"
        elif av_range in _RANGE_OF_AV:
            self.range_, self.range_source = _RANGE_OF_AV[int(av_range)], "stream"
        else:
            self.range_, self.range_source = "limited", "default"

    # -- properties ---------------------------------------------------------------------------------
    @property
    def frame_count(self) -> int | None:
        """Frames in the stream: from the container, or once decoding has reached the end; else None."""
        return self._frame_count

    @property
    def fps(self) -> float:
        return float(self.rate)

    @property
    def released(self) -> bool:
        return self._container is None

    def describe(self) -> str:
        """One line: size, format, rate, colour and where each came from."""
        count = f"{self._frame_count} frames" if self._frame_count else "frame count unknown"
        parts = [f"{self.width}x{self.height} {self.fmt.name.upper()} from {self.pixel_format} ({self.codec})",
                 f"{self.fps:g} fps ({self.rate_source})", count,
                 f"{self.matrix} ({self.matrix_source})", f"{self.range_} range ({self.range_source})"]
        if self.resampled_from:
            parts.append(f"resampled from {self.resampled_from} to 4:2:0")
        if self.cropped_from:
            parts.append("cropped from {}x{}".format(*self.cropped_from))
        return ", ".join(parts)

    # -- decoding -----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._container is None:
            raise UsageError(f"{self.label} was released", where="VideoSource")

    def _decode_next(self):
        """The next decoded av.VideoFrame, or None at the end of the stream (the count is then known)."""
        import av  # start-up: PyAV loads FFmpeg, only where a video is opened

        try:
            frame = next(self._decoder)
        except StopIteration:
            if self._frame_count != self._next and self._next > 0:
                if self._frame_count is not None:
                    log.info("%s: the container said %d frames, decoding found %d", self.path,
                             self._frame_count, self._next)
                self._frame_count, self.frame_count_source = self._next, "counted"
            return None
        except av.error.FFmpegError as exc:
            raise UsageError(f"{self.path}: cannot decode frame {self._next}: {exc}") from None
        index = self._index_of(frame)
        self._next = (index if index is not None else self._next) + 1
        return frame

    def _index_of(self, frame) -> int | None:
        """The frame's index from its presentation time, or None where it has none."""
        if frame.pts is None:
            return None
        if self._pts0 is None:  # the first frame, which sets the origin
            return 0
        return round((frame.pts - self._pts0) * self._time_base * self.rate)

    def _seek(self, index: int) -> None:
        """Put the decoder on the key frame at or before ``index``."""
        import av  # start-up: PyAV loads FFmpeg, only where a video is opened

        base = self._pts0 or 0
        target = base + round(Fraction(index) / (self.rate * self._time_base)) if index else base
        try:
            self._container.seek(int(target), stream=self._stream, backward=True, any_frame=False)
        except av.error.FFmpegError as exc:
            raise UsageError(f"{self.path}: cannot seek to frame {index}: {exc}") from None
        self._decoder = self._container.decode(self._stream)
        self._next = -1  # unknown until the first frame after the seek

    def _read(self, index: int):
        """The decoded frame at ``index`` (already inside the stream, or past its unknown end: None)."""
        if not (0 <= index - self._next <= _FORWARD_LIMIT):
            self._seek(index)
            frame = self._decode_next()
            at = self._index_of(frame) if frame is not None else None
            if frame is None or at is None or at > index:  # the seek overshot, or no timestamps: from the start
                self._seek(0)
                self._next = 0
                frame = None
        else:
            frame = None
        while True:
            if frame is None:
                frame = self._decode_next()
                if frame is None:
                    return None
            at = self._index_of(frame)
            at = self._next - 1 if at is None else at
            if at >= index:
                return frame
            frame = None

    def frame(self, index: int, *, wrap: bool = True) -> VideoFrame:
        """Frame ``index`` as planes; past the end it wraps around (``index % frame_count``).

        Raises:
            UsageError: a negative index, an index past the end with ``wrap=False``, a frame that
                cannot be decoded, or a released source.
        """
        self._check_open()
        if index < 0:
            raise UsageError(f"{self.path}: frame {index}: the first frame is 0")
        count = self._frame_count
        if count is not None and index >= count:
            if not wrap:
                raise UsageError(f"{self.path}: frame {index} is past the end ({_frames(count)}, 0..{count - 1})")
            index %= count
        out = self._get(index)
        if out is None:  # the end, now counted
            count = self._frame_count or 0
            if not wrap:
                raise UsageError(f"{self.path}: frame {index} is past the end ({_frames(count)}, 0..{count - 1})")
            out = self._get(index % count)
            assert out is not None
        return out

    def _get(self, index: int) -> VideoFrame | None:
        """Frame ``index`` (inside the stream as far as known), or None where the stream ends before it."""
        if self._cache is not None and self._cache.index == index:
            return self._cache
        raw = self._read(index)
        if raw is None:
            return None
        self._cache = self._to_frame(raw, index)
        return self._cache

    def frames(self, start: int = 0, *, loop: bool = True) -> Iterator[VideoFrame]:
        """Frames from ``start`` on, in order; with ``loop`` it starts over at the end and never stops."""
        self._check_open()
        index = start
        while True:
            count = self._frame_count
            if count is not None and index >= count:
                if not loop:
                    return
                index %= count
            out = self._get(index)
            if out is None:
                if not loop:
                    return
                index = 0
                continue
            yield out
            index += 1

    # -- repacking ----------------------------------------------------------------------------------
    def _plane(self, plane, dtype: np.dtype, rows: int, cols: int) -> np.ndarray:
        """A plane's samples (rows x cols words) without its row padding."""
        words = np.frombuffer(plane, dtype=dtype)
        return words.reshape(plane.height, plane.line_size // dtype.itemsize)[:rows, :cols]

    def _to_frame(self, raw, index: int) -> VideoFrame:
        import av  # start-up: PyAV loads FFmpeg, only where a video is opened

        if self.resampled_from is not None:
            full = av.video.reformatter.ColorRange.JPEG if self.range_ == "full" else \
                av.video.reformatter.ColorRange.MPEG
            try:
                raw = raw.reformat(format=self._resample_to, interpolation=av.video.reformatter.Interpolation.AREA
                                   | av.video.reformatter.Interpolation.ACCURATE_RND,
                                   src_color_range=full, dst_color_range=full)
            except av.error.FFmpegError as exc:
                raise UsageError(f"{self.path}: cannot resample frame {index} to 4:2:0: {exc}") from None
        if (raw.width, raw.height) != (self.cropped_from or (self.width, self.height)):
            raise UsageError(f"{self.path}: frame {index} is {raw.width}x{raw.height}, the stream started at "
                             "{}x{}; glshare plays one size per file".format(*(self.cropped_from
                                                                                or (self.width, self.height))))
        lay = self._layout
        w, h, cw, ch = self.width, self.height, self.width // 2, self.height // 2
        if lay.bits <= 8:
            dtype = np.dtype(np.uint8)
        else:
            dtype = np.dtype(">u2" if lay.big_endian else "<u2")
        planes = raw.planes
        y = self._plane(planes[0], dtype, h, w)
        uv = np.empty((ch, cw, 2), dtype)
        if lay.kind == "planar":
            uv[..., 0] = self._plane(planes[1], dtype, ch, cw)
            uv[..., 1] = self._plane(planes[2], dtype, ch, cw)
        else:
            pairs = self._plane(planes[1], dtype, ch, 2 * cw).reshape(ch, cw, 2)
            uv[...] = pairs[..., ::-1] if lay.kind == "semi_vu" else pairs
        if self.fmt is NV12:  # copies: nothing returned points into FFmpeg's frame buffers
            y_out, uv_out = np.array(y, np.uint8), uv
        else:  # sample in the high bits of a native uint16 (P010 reads the top 10)
            shift = 0 if lay.msb else 16 - lay.bits
            y_out = y.astype(np.uint16) << np.uint16(shift)
            uv_out = uv.astype(np.uint16) << np.uint16(shift)
        y_out.flags.writeable = False  # the last frame is cached and handed out again
        uv_out.flags.writeable = False
        time_s = float((raw.pts - (self._pts0 or 0)) * self._time_base) if raw.pts is not None else None
        return VideoFrame(index, y_out, uv_out, time_s)

    # -- lifetime -----------------------------------------------------------------------------------
    def release(self) -> None:
        """Close the file; safe to call twice."""
        container, self._container = self._container, None
        if container is not None:
            self._decoder = None
            self._cache = None
            try:
                container.close()
            finally:
                live.released("video_source", self.owner)

    def __enter__(self) -> "VideoSource":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._container is None else f"{self.width}x{self.height} {self.fmt.name}"
        return f"<VideoSource {self.label!r} {state}>"

