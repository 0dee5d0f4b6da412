"""The real window under Xvfb (``make test`` starts one): opens, renders 60 frames, screenshot, closes."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from app.trace.png import read_png

pytestmark = [pytest.mark.window,
              pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")]


def test_window_60_frames(glshare, tmp_path):
    report, shot = tmp_path / "r.json", tmp_path / "w.png"
    res = glshare("run", "--frames", "60", "--size", "8192", "--report", str(report), "--screenshot", str(shot))
    assert res.returncode == 0, res.stderr
    assert "no display" not in res.stderr
    r = json.loads(report.read_text())
    assert r["headless"] is False and r["frames"] == 60 and r["errors"] == []
    assert r["counts"] == {"acquire": 60, "compute": 60, "release": 60}
    px = read_png(shot)
    assert px.shape[:2] == (600, 800)  # the window's framebuffer, scene and overlay as the user saw it
    assert px.std() > 5
    overlay = px[8:40, 8:200].astype(int)
    assert overlay.max() - overlay.min() > 100  # the overlay's text is on the screenshot


def test_no_display_falls_back_to_headless(glshare, tmp_path):
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
    res = glshare("run", "--frames", "5", "--size", "256", "--report", str(tmp_path / "r.json"), env=env)
    assert res.returncode == 0, res.stderr
    assert "no display" in res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["headless"] is True


def test_headless_image_shot_is_julia(glshare, tmp_path):
    from app.scenes.image import julia_reference

    shot = tmp_path / "i.png"
    res = glshare("run", "--headless", "--scene", "image", "--frames", "3", "--no-overlay", "--screenshot", str(shot))
    assert res.returncode == 0, res.stderr
    px = read_png(shot)
    ref = julia_reference(512, 512, 2)[..., :3]
    d = np.abs(px.astype(int) - ref.astype(int)).max(-1)
    assert (d > 1).mean() < 0.02
