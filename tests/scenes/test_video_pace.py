"""The yuv scene's video in a window plays at the file's rate, not the loop's (a 30 fps file ran
at 335 fps): each upload shows the frame of the time played. Offline (headless) one video frame
per loop frame stays (tests/scenes/test_yuv_video.py)."""
from __future__ import annotations

from test_yuv_video import N, _clip

from app.config import RunConfig
from app.scenes.yuv import MAX_VIDEO_STEP_S
from app.schedule.scheduler import FrameScheduler


def test_video_plays_at_the_files_rate_in_real_time(host_copy, gl, tmp_path):
    from app.scenes.yuv import YuvScene

    path = _clip(tmp_path / "clip.mkv", "yuv420p", "bt709", "limited")  # 25 fps
    scene = YuvScene(RunConfig(scene="yuv", video=path, strict=True))
    scene.realtime = True  # what the session sets in a window
    now = [100.0]
    scene.play_clock = lambda: now[0]
    scene.build(host_copy, gl.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True)
    target = lambda: gl.framebuffer_size if gl.bind_target() else None  # noqa: E731
    shown, copied = [], []
    try:
        for frame in range(20):
            before = host_copy.bytes_copied
            now[0] += 1 / 100  # the loop at 100 frames a second: four loop frames per video frame
            sched.run_frame(frame, target)
            shown.append(scene.shown_video_index)
            copied.append(host_copy.bytes_copied - before)
        now[0] += 60.0  # a minute paused: the video goes on by one step at most
        sched.run_frame(20, target)
        sched.run_frame(21, target)
        sched.finish()
    finally:
        sched.close()
        scene.teardown()
    # loop frame n stages the frame of (n + 1) / 100 s at 25 fps and shows it at frame n + 1
    assert shown == [0] + [int((n + 1) * 0.01 * 25 + 1e-9) for n in range(19)], shown
    assert scene.shown_video_index == int((20 * 0.01 + MAX_VIDEO_STEP_S) * 25 + 1e-9) % N
    # a frame staged again is not written again: host_copy copies the planes in only when they
    # changed (every frame copies the converted picture out)
    out_only = min(copied)
    assert len(set(copied)) == 2 and copied.count(out_only) >= 10, copied
