"""``glshare run --window-size WxH``: the whole window (or the headless surface) for every scene,
the image-sized ones too (they used to open at their image's size whatever was asked: the GPU
script's screenshots came out 968x512 instead of 1280x800); a bad value is one line and exit 2."""
from __future__ import annotations

import pytest

from app.scenes import scene_class


def _png_size(path) -> tuple[int, int]:
    import struct

    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("scene", ["particles", "image", "postprocess", "yuv"])
def test_every_scene_opens_the_window_asked_for(scene):
    cls = scene_class(scene)
    assert cls.window_size(cls.default_size, (1280, 800), panel_room=456) == (1280, 800)
    assert cls.window_size(cls.default_size, None, panel_room=0) != (1280, 800)  # the scene's own otherwise


def test_headless_run_takes_the_window_size(glshare, tmp_path):
    shot = tmp_path / "s.png"
    res = glshare("run", "--headless", "--scene", "image", "--size", "64x48", "--frames", "2", "--window-size",
                  "160x120", "--screenshot", str(shot), "--report", str(tmp_path / "r.json"), "--quiet")
    assert res.returncode == 0, res.stderr
    assert _png_size(shot) == (160, 120)


@pytest.mark.parametrize("value, says", [("big", "--window-size takes WxH such as 512x512, not 'big'"),
                                         ("0x600", "--window-size 0x600: width and height must be between 1 and"),
                                         ("800x", "--window-size takes WxH such as 512x512, not '800x'")])
def test_bad_window_size_is_one_line_and_exit_2(glshare, value, says):
    res = glshare("run", "--headless", "--frames", "1", "--window-size", value)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("glshare: error: " + says), lines[0]
