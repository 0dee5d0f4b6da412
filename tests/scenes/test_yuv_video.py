"""The yuv scene playing a real video (``--video FILE``): clips encoded here with PyAV (lossless FFV1,
no binary asset), decoded by app/yuv/video.py, uploaded plane by plane and converted on CL.

What is shown is compared with FFmpeg's own conversion of the same frame (swscale, nearest
chroma) within 1 LSB, as tests/yuv/test_video.py measures it for ``convert``; also looping, pause (the
same frame stays), the frame counter, the stream's colour tags, P010 for a 10-bit source, a
headless run's screenshot, and bad input as one line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av")
from av.video.reformatter import ColorRange, Interpolation  # noqa: E402
from support import assert_within_1lsb  # noqa: E402

from app.config import RunConfig  # noqa: E402
from app.diagnostics import live  # noqa: E402
from app.schedule.scheduler import FrameScheduler  # noqa: E402
from app.trace.png import read_png  # noqa: E402
from app.yuv.formats import NV12, P010  # noqa: E402

W, H, N = 64, 36, 5
SPACE = {"bt709": 1, "bt601": 5}  # AVColorSpace
AV_RANGE = {"limited": 1, "full": 2}  # AVColorRange
NEAREST = Interpolation.POINT | Interpolation.FULL_CHR_H_INT | Interpolation.ACCURATE_RND


def _clip(path: Path, pix_fmt: str, matrix: str, range_: str, frames: int = N, seed: int = 3) -> Path:
    """A lossless clip of smooth moving gradients plus noise, tagged with ``matrix`` and ``range_``."""
    bits = av.VideoFormat(pix_fmt).components[0].bits
    dtype = np.uint16 if bits > 8 else np.uint8
    s = 1 << (bits - 8)
    lo, y_hi, c_hi = (16 * s, 235 * s, 240 * s) if range_ == "limited" else (0, (1 << bits) - 1, (1 << bits) - 1)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:H, 0:W]
    cy, cx = np.mgrid[0:H // 2, 0:W // 2]
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = W, H, pix_fmt
        stream.codec_context.colorspace = SPACE[matrix]
        stream.codec_context.color_range = AV_RANGE[range_]
        for i in range(frames):
            y = lo + ((xx * 3 + yy * 2 + 9 * i) % 97) * (y_hi - lo) // 96
            y = np.clip(y + rng.integers(-3 * s, 3 * s + 1, y.shape), lo, y_hi)
            u = lo + ((cx * 5 + 11 * i) % 31) * (c_hi - lo) // 30
            v = lo + ((cy * 7 + 5 * i) % 17) * (c_hi - lo) // 16
            frame = av.VideoFrame(W, H, pix_fmt)
            for plane, codes in zip(frame.planes, (y, u, v)):
                view = np.frombuffer(plane, dtype).reshape(plane.height, -1)
                view[:, :codes.shape[1]] = codes
            frame.colorspace, frame.color_range = SPACE[matrix], AV_RANGE[range_]
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def _ffmpeg_rgb(path: Path, matrix: str, range_: str) -> list[np.ndarray]:
    """FFmpeg's conversion of every frame: uint8 H x W x 3 each."""
    with av.open(str(path)) as container:
        return [f.reformat(format="rgb24", src_colorspace=SPACE[matrix], interpolation=NEAREST,
                           src_color_range=AV_RANGE[range_], dst_color_range=ColorRange.JPEG).to_ndarray()
                for f in container.decode(video=0)]


# swscale's 10-bit full range is off by a fraction of a code: tests/yuv/test_video.py measured 0.744 exact
CASES = [("yuv420p", "bt709", "limited", NV12, 0.99), ("yuv420p10le", "bt601", "full", P010, 0.7)]


@pytest.mark.parametrize("pix_fmt,matrix,range_,fmt,exact_share", CASES)
def test_scene_plays_the_video_and_loops(host_copy, gl, tmp_path, pix_fmt, matrix, range_, fmt, exact_share):
    from app.scenes.yuv import YuvScene

    path = _clip(tmp_path / "clip.mkv", pix_fmt, matrix, range_)
    refs = _ffmpeg_rgb(path, matrix, range_)
    assert len(refs) == N
    before = live.snapshot()
    scene = YuvScene(RunConfig(scene="yuv", video=path, strict=True))
    scene.build(host_copy, gl.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True)
    target = lambda: gl.framebuffer_size if gl.bind_target() else None  # noqa: E731
    try:
        assert scene.image_size == (W, H) and scene.fmt is fmt
        assert (scene.matrix, scene.range_) == (matrix, range_)  # from the stream's tags
        assert scene.video.matrix_source == "stream" and scene.video.range_source == "stream"
        for frame in range(N + 3):  # past the end: it loops
            rec = sched.run_frame(frame, target)
            assert rec.errors == [], rec.errors
            assert scene.shown_video_index == frame % N
            got = scene.out.gl.read()
            assert (got[..., 3] == 255).all()
            assert_within_1lsb(got[..., :3], refs[frame % N], f"{pix_fmt} loop frame {frame}", exact_share)
            # Matroska records no frame count: "?" until decoding first reached the end (staging frame N)
            count = N if frame >= N - 1 else "?"
            assert f"frame {frame % N + 1}/{count}" in scene.describe()
        assert f"video clip.mkv: frame 3/{N}, {fmt.name.upper()} from {pix_fmt}" in scene.describe()
        assert "(stream)" in scene.describe()
        rows = {o.name: o.value for o in scene.options()}
        assert rows["video_frame"] == f"frame 3/{N}" and "(stream)" in rows["colour"]
        sched.finish()
    finally:
        sched.close()
        scene.teardown()
        scene.teardown()
    assert live.snapshot() == before  # the video source is counted and released too


def test_pause_keeps_the_frame_and_step_moves_one(gl, tmp_path):
    from app.run import Run

    path = _clip(tmp_path / "p.mkv", "yuv420p", "bt709", "limited")
    refs = _ffmpeg_rgb(path, "bt709", "limited")
    cfg = RunConfig(scene="yuv", video=path, headless=True, overlay=False, frames=10_000)
    with Run(cfg, surface=gl) as rt:
        for _ in range(2):
            rt.tick()
        scene = rt.session.scene
        assert scene.shown_video_index == 1
        assert rt.controls.key("p") == "paused"
        still = rt.session.surface.read_pixels()
        for _ in range(4):
            assert rt.tick() is None  # paused: no frame runs, nothing is decoded
            assert scene.shown_video_index == 1 and scene.video_index == 2  # frame 2 staged, 1 shown
            assert np.array_equal(rt.session.surface.read_pixels(), still)
        rt.controls.key("right")  # one frame
        rec = rt.tick()
        assert rec is not None and rec.errors == [] and scene.shown_video_index == 2
        assert_within_1lsb(scene.out.gl.read()[..., :3], refs[2], "stepped frame", 0.99)
        assert "frame 3/?" in rt.session.view().setup.scene_title  # the counter reaches the panel (no count yet)


def test_headless_run_screenshot_is_ffmpegs_frame(glshare, tmp_path):
    path = _clip(tmp_path / "v.mkv", "yuv420p", "bt709", "limited")
    shot = tmp_path / "v.png"
    res = glshare("run", "--scene", "yuv", "--video", str(path), "--headless", "--frames", "3", "--no-overlay",
                  "--screenshot", str(shot), "--report", str(tmp_path / "v.json"))
    assert res.returncode == 0, res.stderr
    got = read_png(shot)
    assert got.shape == (H, W, 3)  # the surface opened at the video's size: 1:1
    assert_within_1lsb(got, _ffmpeg_rgb(path, "bt709", "limited")[2], "screenshot of frame 2", 0.99)


def test_bad_video_options_are_one_line(glshare, tmp_path):
    shot = tmp_path / "s.png"
    res = glshare("run", "--scene", "yuv", "--video", str(tmp_path / "missing.mkv"), "--headless", "--frames", "2",
                  "--screenshot", str(shot))
    assert res.returncode == 2 and "no such file" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    text = tmp_path / "notes.txt"
    text.write_text("not a video\n")
    res = glshare("run", "--scene", "yuv", "--video", str(text), "--headless", "--frames", "2",
                  "--screenshot", str(shot))
    assert res.returncode == 2 and "cannot read it as a media file" in res.stderr, res.stderr
    path = _clip(tmp_path / "ok.mkv", "yuv420p", "bt709", "limited", frames=1)
    res = glshare("run", "--scene", "yuv", "--video", str(path), "--size", "64x36", "--headless", "--frames", "2",
                  "--screenshot", str(shot))
    assert res.returncode == 2 and "--size with --video" in res.stderr
    assert not shot.exists()
