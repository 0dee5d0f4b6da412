"""Real video (app/yuv/video.py, ``glshare convert FILE``): clips made here with PyAV, no binary asset.

Lossless clips (FFV1 in Matroska) give back exactly the planes that were encoded, so the planes are
compared exactly; the CL conversion of a decoded frame is compared with FFmpeg's own (swscale) of
the same frame, with nearest-neighbour chroma, within 1 LSB. Also: the colour tags read from the
stream and the defaults where it has none, seeking and looping on a lossy clip with key frames
far apart, odd sizes cropped, 4:4:4 resampled, and every bad input as one line.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av")
from av.video.reformatter import ColorRange, Interpolation  # noqa: E402
from support import assert_within_1lsb  # noqa: E402

from app.cli import main as cli_main  # noqa: E402
from app.diagnostics import live  # noqa: E402
from app.errors import UsageError  # noqa: E402
from app.yuv.converter import convert_frame  # noqa: E402
from app.yuv.formats import NV12, P010  # noqa: E402
from app.yuv.video import VideoSource  # noqa: E402

W, H = 64, 36
SPACE = {"bt709": 1, "bt601": 5, "bt2020": 9}  # AVColorSpace
AV_RANGE = {"limited": 1, "full": 2}  # AVColorRange
# swscale with nearest chroma: POINT picks the chroma row of each 2x2 block, FULL_CHR_H_INT
# keeps the horizontal chroma unfiltered (one pair per two pixels), ACCURATE_RND rounds instead
# of truncating. Without FULL_CHR_H_INT it is off by up to 4, with it by at most 1 (measured).
NEAREST = Interpolation.POINT | Interpolation.FULL_CHR_H_INT | Interpolation.ACCURATE_RND


def has_encoder(codec: str, pix_fmt: str) -> bool:
    try:
        return pix_fmt in {f.name for f in av.codec.Codec(codec, "w").video_formats or ()}
    except Exception:  # noqa: BLE001 - the build has no such encoder
        return False


def legal_codes(rng, bits: int, range_: str, w: int = W, h: int = H):
    """Random (Y, U, V) codes of the range's legal span.

    swscale's integer path wraps around on limited-range codes outside 16..235 / 16..240 (Y 250
    with U 250 comes out blue 0, not 255), which no encoder makes; full range takes every code.
    """
    s = 1 << (bits - 8)
    if range_ == "limited":
        lo, y_hi, c_hi = 16 * s, 235 * s, 240 * s
    else:
        lo, y_hi, c_hi = 0, (1 << bits) - 1, (1 << bits) - 1
    return (rng.integers(lo, y_hi + 1, (h, w)), rng.integers(lo, c_hi + 1, (h // 2, w // 2)),
            rng.integers(lo, c_hi + 1, (h // 2, w // 2)))


def encode(path: Path, planes: list[tuple[np.ndarray, ...]], pix_fmt: str, *, codec: str = "ffv1",
           matrix: str | None = None, range_: str | None = None, rate: int = 25, options: dict | None = None) -> Path:
    """Write one frame per item of ``planes`` (sample codes, one array per plane of ``pix_fmt``)."""
    h, w = planes[0][0].shape
    dtype = np.uint16 if av.VideoFormat(pix_fmt).components[0].bits > 8 else np.uint8
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=rate, options=options or {})
        stream.width, stream.height, stream.pix_fmt = w, h, pix_fmt
        cc = stream.codec_context
        if matrix:
            cc.colorspace = SPACE[matrix]
        if range_:
            cc.color_range = AV_RANGE[range_]
        for i, arrays in enumerate(planes):
            frame = av.VideoFrame(w, h, pix_fmt)
            for plane, codes in zip(frame.planes, arrays):
                view = np.frombuffer(plane, dtype).reshape(plane.height, -1)
                view[:, :codes.shape[1]] = codes
            if matrix:
                frame.colorspace = SPACE[matrix]
            if range_:
                frame.color_range = AV_RANGE[range_]
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def ffmpeg_rgb(path: Path, index: int, matrix: str, range_: str) -> np.ndarray:
    """FFmpeg's own conversion of frame ``index`` (decoded from the start): uint8 H x W x 3."""
    with av.open(str(path)) as container:
        for i, frame in enumerate(container.decode(video=0)):
            if i == index:
                rgb = frame.reformat(format="rgb24", src_colorspace=SPACE[matrix], interpolation=NEAREST,
                                     src_color_range=AV_RANGE[range_], dst_color_range=ColorRange.JPEG)
                return rgb.to_ndarray()
    raise AssertionError(f"{path} has no frame {index}")


# -- planes and colour tags ---------------------------------------------------------------------------
@pytest.mark.parametrize("matrix,range_", [("bt709", "limited"), ("bt601", "full")])
def test_8bit_frames_are_the_encoded_planes(tmp_path, matrix, range_):
    rng = np.random.default_rng(1)
    frames = [legal_codes(rng, 8, range_) for _ in range(4)]
    path = encode(tmp_path / "clip.mkv", frames, "yuv420p", matrix=matrix, range_=range_)
    with VideoSource(path) as video:
        assert (video.fmt, video.width, video.height) == (NV12, W, H)
        assert (video.matrix, video.matrix_source, video.range_, video.range_source) == \
            (matrix, "stream", range_, "stream")
        assert video.rate == Fraction(25) and video.rate_source == "stream" and video.fps == 25.0
        assert video.pixel_format == "yuv420p" and video.resampled_from is None and video.cropped_from is None
        for i, (y, u, v) in enumerate(frames):
            f = video.frame(i)
            assert f.index == i and f.time_s == pytest.approx(i / 25)
            assert f.y.dtype == np.uint8 and f.y.shape == (H, W) and f.uv.shape == (H // 2, W // 2, 2)
            assert np.array_equal(f.y, y) and np.array_equal(f.uv, np.stack([u, v], -1)), i
            assert not f.y.flags.writeable and not f.uv.flags.writeable  # the cached frame is shared


@pytest.mark.skipif(not has_encoder("ffv1", "yuv420p10le"), reason="this PyAV build has no 10-bit FFV1 encoder")
def test_10bit_frames_are_p010_words(tmp_path):
    rng = np.random.default_rng(2)
    frames = [legal_codes(rng, 10, "limited") for _ in range(3)]
    path = encode(tmp_path / "clip10.mkv", frames, "yuv420p10le", matrix="bt709", range_="limited")
    with VideoSource(path) as video:
        assert video.fmt is P010 and video.pixel_format == "yuv420p10le"
        for i, (y, u, v) in enumerate(frames):
            f = video.frame(i)
            assert f.y.dtype == np.uint16
            assert np.array_equal(f.y, y << 6) and np.array_equal(f.uv, np.stack([u, v], -1) << 6), i
            assert np.array_equal(P010.samples(f.y), y)


@pytest.mark.skipif(not (has_encoder("ffv1", "yuv420p12le") and has_encoder("ffv1", "yuv422p10le")),
                    reason="this PyAV build has no 12-bit 4:2:0 or 10-bit 4:2:2 FFV1 encoder")
def test_deeper_and_422_sources_become_p010(tmp_path):
    """12 bits: the sample's top bits in the word (P010 reads the top 10); 4:2:2 10-bit: resampled
    to 4:2:0 (chroma flat over each vertical pair comes back exactly)."""
    rng = np.random.default_rng(3)
    y, u, v = legal_codes(rng, 12, "limited")
    with VideoSource(encode(tmp_path / "c12.mkv", [(y, u, v)], "yuv420p12le")) as video:
        f = video.frame(0)
        assert video.fmt is P010 and video.resampled_from is None
        assert np.array_equal(f.y, y << 4) and np.array_equal(f.uv, np.stack([u, v], -1) << 4)
    y, u, v = legal_codes(rng, 10, "limited")
    path = encode(tmp_path / "c422.mkv", [(y, u.repeat(2, 0), v.repeat(2, 0))], "yuv422p10le")
    with VideoSource(path) as video:
        f = video.frame(0)
        assert video.fmt is P010 and video.resampled_from == "yuv422p10le"
        assert np.array_equal(f.y, y << 6) and np.array_equal(f.uv, np.stack([u, v], -1) << 6)


def test_defaults_where_the_stream_says_nothing(tmp_path):
    y = np.full((H, W), 100)
    c = np.full((H // 2, W // 2), 128)
    sd = encode(tmp_path / "sd.mkv", [(y, c, c)], "yuv420p")
    with VideoSource(sd) as video:
        assert (video.matrix, video.matrix_source, video.range_, video.range_source) == \
            ("bt601", "default", "limited", "default")
    with VideoSource(sd, matrix="bt709", range_="full") as video:
        assert (video.matrix, video.matrix_source, video.range_, video.range_source) == \
            ("bt709", "given", "full", "given")
    hd = encode(tmp_path / "hd.mkv", [(np.zeros((720, 1280)), np.full((360, 640), 128), np.full((360, 640), 128))],
                "yuv420p")
    with VideoSource(hd) as video:
        assert (video.matrix, video.matrix_source) == ("bt709", "default")
    bt2020 = encode(tmp_path / "bt2020.mkv", [(y, c, c)], "yuv420p", matrix="bt2020", range_="full")
    with VideoSource(bt2020) as video:
        assert (video.matrix, video.matrix_source, video.range_, video.range_source) == \
            ("bt601", "default", "full", "stream")
        assert "bt2020nc" in video.matrix_note
        assert "bt601 (default)" in video.describe() and "full range (stream)" in video.describe()


@pytest.mark.skipif(not has_encoder("mjpeg", "yuvj420p"), reason="this PyAV build has no MJPEG encoder")
def test_yuvj_pixel_format_means_full_range(tmp_path):
    y = np.tile(np.arange(W) * 4, (H, 1))
    c = np.full((H // 2, W // 2), 128)
    path = encode(tmp_path / "j.avi", [(y, c, c)], "yuvj420p", codec="mjpeg")
    with VideoSource(path) as video:
        assert video.pixel_format == "yuvj420p" and (video.range_, video.range_source) == ("full", "stream")


def test_odd_size_is_cropped_to_even(tmp_path):
    rng = np.random.default_rng(4)
    y = rng.integers(16, 236, (37, 65))
    u, v = rng.integers(16, 241, (19, 33)), rng.integers(16, 241, (19, 33))
    path = encode(tmp_path / "odd.mkv", [(y, u, v)], "yuv420p")
    with VideoSource(path) as video:
        assert (video.width, video.height, video.cropped_from) == (64, 36, (65, 37))
        f = video.frame(0)
        assert np.array_equal(f.y, y[:36, :64]) and np.array_equal(f.uv, np.stack([u, v], -1)[:18, :32])
        assert "cropped from 65x37" in video.describe()


@pytest.mark.skipif(not has_encoder("ffv1", "yuv444p"), reason="this PyAV build has no 4:4:4 FFV1 encoder")
def test_444_is_resampled_to_420(tmp_path):
    """Chroma flat over each 2x2 block comes back exactly (swscale's area filter averages the block)."""
    rng = np.random.default_rng(5)
    y = rng.integers(16, 236, (H, W))
    u, v = (rng.integers(16, 241, (H // 2, W // 2)) for _ in range(2))
    path = encode(tmp_path / "444.mkv", [(y, u.repeat(2, 0).repeat(2, 1), v.repeat(2, 0).repeat(2, 1))], "yuv444p")
    with VideoSource(path) as video:
        assert video.resampled_from == "yuv444p" and video.fmt is NV12
        f = video.frame(0)
        assert np.array_equal(f.y, y) and np.array_equal(f.uv, np.stack([u, v], -1))


# -- against FFmpeg's conversion ----------------------------------------------------------------------
CONVERSIONS = [("yuv420p", "bt709", "limited", 0.99), ("yuv420p", "bt601", "full", 0.99),
               ("yuv420p", "bt601", "limited", 0.99), ("yuv420p", "bt709", "full", 0.99),
               # swscale's 10-bit full range is off by a fraction of a code from code / 1023: a
               # quarter of the values round the other way (measured 0.744 exact)
               ("yuv420p10le", "bt709", "limited", 0.99), ("yuv420p10le", "bt601", "full", 0.7)]


@pytest.mark.parametrize("pix_fmt,matrix,range_,exact_share", CONVERSIONS)
def test_cl_conversion_matches_ffmpeg(tmp_path, cl_ctx, pix_fmt, matrix, range_, exact_share):
    if not has_encoder("ffv1", pix_fmt):
        pytest.skip(f"this PyAV build has no FFV1 encoder for {pix_fmt}")
    bits = 10 if "10" in pix_fmt else 8
    rng = np.random.default_rng(6)
    # a smooth frame (gradients) and a random one
    yy, xx = np.mgrid[0:H, 0:W]
    lo, top = (16 << (bits - 8), 235 << (bits - 8)) if range_ == "limited" else (0, (1 << bits) - 1)
    smooth = (lo + (xx + yy) * (top - lo) // (W + H - 2),
              lo + np.mgrid[0:H // 2, 0:W // 2][1] * (top - lo) // (W // 2 - 1),
              lo + np.mgrid[0:H // 2, 0:W // 2][0] * (top - lo) // (H // 2 - 1))
    path = encode(tmp_path / "c.mkv", [smooth, legal_codes(rng, bits, range_)], pix_fmt, matrix=matrix,
                  range_=range_)
    context, queue = cl_ctx
    with VideoSource(path) as video:
        assert (video.matrix, video.range_) == (matrix, range_)
        for index in (0, 1):
            f = video.frame(index)
            got = convert_frame(context, queue, video.fmt, f.y, f.uv, video.matrix, video.range_)
            assert (got[..., 3] == 255).all()
            assert_within_1lsb(got[..., :3], ffmpeg_rgb(path, index, matrix, range_),
                            f"{pix_fmt} {matrix} {range_} frame {index}", exact_share)


def test_convert_cli_takes_a_video_frame(tmp_path, capsys):
    rng = np.random.default_rng(7)
    path = encode(tmp_path / "v.mkv", [legal_codes(rng, 8, "limited") for _ in range(3)], "yuv420p",
                  matrix="bt709", range_="limited")
    out = tmp_path / "f2.npy"
    assert cli_main(["convert", "--frame", "2", str(path), str(out)]) == 0
    said = capsys.readouterr().out
    assert "frame 2 of v.mkv" in said and "bt709 (stream) limited (stream)" in said
    got = np.load(out)
    assert got.shape == (H, W, 3)
    assert_within_1lsb(got, ffmpeg_rgb(path, 2, "bt709", "limited"), "convert --frame 2", 0.99)
    # --matrix / --range override the stream's
    out601 = tmp_path / "f0.npy"
    assert cli_main(["convert", "--matrix", "bt601", "--range", "full", str(path), str(out601)]) == 0
    assert_within_1lsb(np.load(out601), ffmpeg_rgb(path, 0, "bt601", "full"), "convert overridden", 0.99)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f0.npy", "f2.npy", "v.mkv"]


# -- seeking and looping ------------------------------------------------------------------------------
def _gop_clip(tmp_path: Path, n: int) -> Path:
    """A lossy clip with key frames 8 apart (and B-frames where the encoder makes them)."""
    rng = np.random.default_rng(8)
    frames = [legal_codes(rng, 8, "limited") for _ in range(n)]
    if has_encoder("libx264", "yuv420p"):
        return encode(tmp_path / "gop.mp4", frames, "yuv420p", codec="libx264",
                      options={"g": "8", "keyint_min": "8", "bf": "2"})
    if has_encoder("mpeg4", "yuv420p"):
        return encode(tmp_path / "gop.mp4", frames, "yuv420p", codec="mpeg4", options={"g": "8", "bf": "2"})
    pytest.skip("this PyAV build has neither libx264 nor mpeg4")


def test_seek_gives_the_frame_decoding_from_the_start_gives(tmp_path):
    n = 30
    path = _gop_clip(tmp_path, n)
    with av.open(str(path)) as container:
        expected = [f.to_ndarray(format="yuv420p")[:H].copy() for f in container.decode(video=0)]
    assert len(expected) == n
    with VideoSource(path) as video:
        assert video.frame_count == n and video.frame_count_source == "stream"
        in_order = [f.y.copy() for f in video.frames(loop=False)]
        assert len(in_order) == n and all(np.array_equal(a, b) for a, b in zip(in_order, expected))
        for index in [17, 3, 29, 0, 8, 7, 25, 9, 16, 15, 1, 28]:  # backwards, across key frames, far ahead
            assert np.array_equal(video.frame(index).y, expected[index]), index
        assert video.frame(n + 5).index == 5 and np.array_equal(video.frame(n + 5).y, expected[5])
        with pytest.raises(UsageError, match=r"frame 30 is past the end \(30 frames, 0\.\.29\)"):
            video.frame(n, wrap=False)


def test_looping_where_the_container_gives_no_count(tmp_path):
    rng = np.random.default_rng(9)
    frames = [legal_codes(rng, 8, "full") for _ in range(5)]
    path = encode(tmp_path / "loop.mkv", frames, "yuv420p")
    with VideoSource(path) as video:
        assert video.frame_count is None and video.frame_count_source == "unknown"
        f = video.frame(7)  # past the end, found by decoding to it: wraps to 2
        assert (video.frame_count, video.frame_count_source) == (5, "counted")
        assert f.index == 2 and np.array_equal(f.y, frames[2][0])
        it = video.frames(3)
        got = [next(it) for _ in range(9)]
        assert [g.index for g in got] == [3, 4, 0, 1, 2, 3, 4, 0, 1]
        assert all(np.array_equal(g.y, frames[g.index][0]) for g in got)
        assert [g.index for g in video.frames(2, loop=False)] == [2, 3, 4]
    with VideoSource(path) as video:  # far past an end not yet known: a seek, then decoding to the end
        f = video.frame(1003)
        assert f.index == 3 and video.frame_count == 5 and np.array_equal(f.y, frames[3][0])


# -- bad input ----------------------------------------------------------------------------------------
def _one_line(exc: UsageError) -> str:
    line = exc.one_line()
    assert "\n" not in line
    return line


def test_bad_input_is_one_line(tmp_path):
    text = tmp_path / "notes.txt"  # FFmpeg reads text as ANSI art: a pal8 "video"
    text.write_text("not a video\n" * 50)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(encode(tmp_path / "whole.mkv", [legal_codes(np.random.default_rng(0), 8, "full")],
                           "yuv420p").read_bytes()[:300])
    wav = tmp_path / "tone.wav"
    with av.open(str(wav), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=8000, layout="mono")
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in list(stream.encode(frame)) + list(stream.encode()):
            out.mux(packet)
    cases = {tmp_path / "none.mkv": "no such file", tmp_path: "is a directory",
             empty: "FFmpeg cannot read it as a media file", cut: "FFmpeg cannot read it as a media file",
             text: "pixel format pal8 is not YUV", wav: "no video stream (1 audio)"}
    if has_encoder("ffv1", "bgr0"):
        cases[encode(tmp_path / "rgb.mkv", [(np.zeros((H, W * 4)),)], "bgr0")] = "pixel format bgr0 is not YUV"
    if has_encoder("ffv1", "gray"):
        cases[encode(tmp_path / "gray.mkv", [(np.zeros((H, W)),)], "gray")] = "pixel format gray is not YUV"
    before = live.count("video_source")
    for path, needle in cases.items():
        with pytest.raises(UsageError) as info:
            VideoSource(path)
        line = _one_line(info.value)
        assert needle in line and str(path) in line, (needle, line)
        assert info.value.exit_code == 2
    assert live.count("video_source") == before  # a failed open leaves nothing open
    with pytest.raises(UsageError, match="unknown matrix"):
        VideoSource(wav, matrix="bt2020")


def test_release_is_idempotent_and_counted(tmp_path):
    path = encode(tmp_path / "r.mkv", [legal_codes(np.random.default_rng(10), 8, "limited")], "yuv420p")
    before = live.count("video_source")
    video = VideoSource(path, owner="test")
    assert live.count("video_source", "test") == 1
    video.release()
    video.release()
    assert live.count("video_source") == before and video.released and "released" in repr(video)
    with pytest.raises(UsageError, match="was released"):
        video.frame(0)
    with pytest.raises(UsageError, match="the first frame is 0"):
        with VideoSource(path) as v:
            v.frame(-1)


def test_convert_cli_video_errors_exit_2(tmp_path, capsys):
    path = encode(tmp_path / "v.mkv", [legal_codes(np.random.default_rng(11), 8, "limited")] * 2, "yuv420p")
    raw = tmp_path / "f.nv12"
    raw.write_bytes(bytes(W * H * 3 // 2))
    cases = {
        "past the end": (["--frame", "2", str(path)], "frame 2 is past the end (2 frames, 0..1)"),
        "raw without --format": ([str(raw)], "a raw NV12/P010 frame needs --format and --size"),
        "--frame with raw": (["--format", "nv12", "--size", f"{W}x{H}", "--frame", "1", str(raw)], "--frame picks"),
        "half the raw options": (["--format", "nv12", str(raw)], "needs both --format and --size"),
        "negative frame": (["--frame", "-1", str(path)], "expected a frame index"),
    }
    for what, (argv, needle) in cases.items():
        capsys.readouterr()
        assert cli_main(["convert", *argv, str(tmp_path / "o.npy")]) == 2, what
        err = capsys.readouterr().err.strip()
        assert err.startswith("glshare: error: ") and "\n" not in err and needle in err, (what, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.nv12", "v.mkv"]
