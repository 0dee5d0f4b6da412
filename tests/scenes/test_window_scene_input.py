"""The postprocess scene in a real window with the panel beside it (tests/window_driver.py, Xvfb):
the scene moves, and what it shows is the headless run's picture of the same frame.

The session scissors the window to the scene's rectangle beside the panel; the 3-D pass draws into
its own framebuffer, which the scissor test clips too (OpenGL 4.6 core, 14.9.2): the pass must set
and restore the state it depends on (app/scenes/postprocess.py, ``render_3d``).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from support import HELPERS, ROOT, run_glshare

from app.sharing.backends.host_copy import HostCopy
from app.trace.png import read_png

pytestmark = [pytest.mark.window,
              pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)"),
              pytest.mark.skipif(not shutil.which("xdotool"), reason="needs xdotool (make test installs it)")]

W, H = 256, 256


def test_postprocess_moves_beside_the_panel_and_matches_headless(tmp_path):
    scenario = tmp_path / "scenario.json"
    steps = [["ticks", 10], ["texture", "a"], ["shot", "screen_a"], ["ticks", 100], ["texture", "b"], ["shot", "screen_b"]]
    scenario.write_text(json.dumps({"run": {"scene": "postprocess", "size": [W, H], "backend": HostCopy.name},
                                    "steps": steps}))
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, str(HELPERS / "window_driver.py"), str(scenario), str(tmp_path)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["errors"] == [] and d["final"]["loop_errors"] == [], (d["errors"], d["final"]["loop_errors"])
    a, b = read_png(tmp_path / "a.png"), read_png(tmp_path / "b.png")
    assert d["b"]["shown_frame"] - d["a"]["shown_frame"] >= 100, (d["a"], d["b"])
    # two frames 100 apart differ, on the screen and in the texture the scene shows
    moved = float((np.abs(a.astype(int) - b.astype(int)).max(-1) > 0).mean())
    assert moved > 0.05, moved
    screen_a, screen_b = read_png(tmp_path / "screen_a.png"), read_png(tmp_path / "screen_b.png")
    # the scene is drawn to the right of the panel: most of what changed on the screen is there
    changed = np.abs(screen_a.astype(int) - screen_b.astype(int)).max(-1) > 0
    scene_side = changed[:, screen_a.shape[1] // 2:]
    assert scene_side.mean() > 0.01, float(scene_side.mean())
    # the same frame headless: the filtered picture, pixel for pixel (same GL, same CL, same arithmetic)
    frames = d["b"]["shown_frame"] + 1
    shot = tmp_path / "headless.png"
    r = run_glshare("run", "--headless", "--scene", "postprocess", "--size", f"{W}x{H}", "--backend", "host_copy",
                    "--frames", str(frames), "--screenshot", str(shot), "--quiet", "--no-overlay")
    assert r.returncode == 0, r.stderr[-2000:]
    want = read_png(shot)[:, :, :3]
    assert want.shape == b.shape, (want.shape, b.shape)
    differ = np.abs(want.astype(int) - b.astype(int)).max(-1)
    assert differ.max() <= 1 and (differ == 0).mean() >= 0.999, (int(differ.max()), float((differ == 0).mean()))


def test_escape_closes_an_open_combo_before_it_quits(tmp_path):
    """Esc with a combo open closes the combo and the run goes on (it quit, the run and its state
    gone); a second Esc, nothing open, quits as before."""
    scenario = tmp_path / "scenario.json"
    steps = [["ticks", 15], ["click", "@option_view"], ["ticks", 6], ["dump", "open"], ["key", "Escape"],
             ["ticks", 6], ["dump", "closed"], ["key", "Escape"], ["ticks", 2], ["dump", "quit"]]
    scenario.write_text(json.dumps({"run": {"scene": "particles", "size": 16384, "panel_hz": 0}, "steps": steps}))
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, str(HELPERS / "window_driver.py"), str(scenario), str(tmp_path)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    d = json.loads((tmp_path / "results.json").read_text())

    def popups(name):
        return [w[0] for w in d[name]["imgui_windows"] if w[0].startswith("##Combo")]

    assert popups("open") and not d["open"]["quit_requested"], d["open"]["imgui_windows"]
    assert not popups("closed") and not d["closed"]["quit_requested"], d["closed"]["imgui_windows"]
    assert d["quit"]["quit_requested"]
