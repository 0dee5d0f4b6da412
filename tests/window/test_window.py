"""The real window under Xvfb (``make test`` starts one): opens, renders 60 frames, screenshot, closes."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from app.trace.png import read_png

needs_display = pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")


@pytest.mark.window
@needs_display
def test_window_60_frames(glshare, tmp_path):
    report, shot = tmp_path / "r.json", tmp_path / "w.png"
    res = glshare("run", "--frames", "60", "--size", "8192", "--report", str(report), "--screenshot", str(shot))
    assert res.returncode == 0, res.stderr
    assert "no display" not in res.stderr
    r = json.loads(report.read_text())
    assert r["headless"] is False and r["frames"] == 60 and r["errors"] == []
    assert r["counts"] == {"acquire": 60, "compute": 60, "release": 60}
    px = read_png(shot)
    from app.window.layout import PANEL_ROOM

    # the window's framebuffer, scene and panel as the user saw it: the scene's 800x600 beside the panel
    assert px.shape[:2] == (600, 800 + PANEL_ROOM)
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


@pytest.mark.window
@needs_display
@pytest.mark.skipif(not shutil.which("xdotool"), reason="needs xdotool (make test installs it) to type into the window")
def test_keys_switch_scene_and_sync_in_the_window(tmp_path):
    """Real key presses (XTEST) reach glshare, not ImGui: s switches the scene, y the sync mode."""
    import subprocess
    import sys
    import time

    report = tmp_path / "k.json"
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    proc = subprocess.Popen([sys.executable, "-m", "app", "run", "--frames", "100000", "--size", "2048",
                             "--report", str(report)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wid = ""
        for _ in range(120):
            found = subprocess.run(["xdotool", "search", "--pid", str(proc.pid), "--name", "glshare"], capture_output=True, text=True)
            wid = found.stdout.split()[0] if found.stdout.split() else ""
            if wid:
                break
            time.sleep(0.25)
        assert wid, "the window did not appear"
        time.sleep(1.0)
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], check=True)
        for key in ("s", "y", "Escape"):
            subprocess.run(["xdotool", "key", key], check=True)
            time.sleep(1.5)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    r = json.loads(report.read_text())
    assert [(s["what"], s["to"]["scene"], s["to"]["sync"]) for s in r["switches"]] == [
        ("scene", "image", "finish"), ("sync", "image", "none")]
    assert r["scene"] == "image" and r["sync"] == "none" and r["errors"] == []


def _window_panel(*args: str, env: dict | None = None):
    import subprocess
    import sys

    from support import ROOT

    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYOPENGL_PLATFORM", None)
    return subprocess.run([sys.executable, "-m", "app.bench.window_panel", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=240)


@pytest.mark.window
@needs_display
def test_window_panel_measurement_blits_into_the_back_buffer(tmp_path):
    """In a window the layer is blitted (the back buffer has no GL name) once every panel frame; with
    the scene beside the panel, where the swap keeps the back buffer, it is copied only after its
    redraws. (How long each takes is the bench's to measure, not a test's to assert.)"""
    out = tmp_path / "w.json"
    res = _window_panel("--frames", "6", "--json", str(out))
    assert res.returncode == 0, res.stderr
    r = json.loads(out.read_text())
    under, beside = r["under"], r["beside"]
    assert under["composite_path"].startswith("glBlitFramebuffer (the frame's colour buffer has no name")
    assert under["frames"] == 6 and r["commit"] and r["machine"]["cores"] >= 1
    assert under["panel"]["cpu_ms"]["process"]["mean"] > 0 and under["nothing"]["cpu_ms"]["process"]["mean"] > 0
    assert under["layer_copies"] == 6  # every frame with the panel
    if r["back_buffer_kept"]:  # Mesa's software winsys keeps it (a copy swap)
        assert beside["layer_copies"] <= beside["redraws"] + 1 < 6, beside


def test_window_panel_measurement_needs_a_display(tmp_path):
    res = _window_panel("--json", str(tmp_path / "w.json"), env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert res.returncode == 2 and "needs a display" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "w.json").exists()


# imgui_bundle refused at every import, as where it is not installed (the GPU machine's bundle):
# a finder ahead of every other one says no module of that name exists
WITHOUT_IMGUI_BUNDLE = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "imgui_bundle" or name.startswith("imgui_bundle."):
            raise ModuleNotFoundError(f"No module named {name!r} (refused by the test)", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from app.cli import main

code = main(sys.argv[1:])
assert not any(m == "imgui_bundle" or m.startswith("imgui_bundle.") for m in sys.modules), "imported"
sys.exit(code)
"""


@pytest.mark.window
@needs_display
def test_window_opens_without_imgui_bundle_when_panel_and_overlay_are_off(tmp_path):
    """The window needs no imgui_bundle: only the panel and the overlay do."""
    import subprocess
    import sys

    from support import ROOT

    report, shot = tmp_path / "r.json", tmp_path / "w.png"
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", WITHOUT_IMGUI_BUNDLE, "run", "--no-panel", "--no-overlay",
                          "--frames", "10", "--size", "1024", "--quiet", "--report", str(report),
                          "--screenshot", str(shot)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    r = json.loads(report.read_text())
    assert r["headless"] is False and r["frames"] == 10 and r["errors"] == []
    assert read_png(shot).std() > 5  # the fountain was drawn


def test_a_run_with_its_overlay_meets_the_refused_imgui_bundle(tmp_path):
    """The finder above does refuse imgui_bundle (so the test before can fail): the overlay needs it."""
    import subprocess
    import sys

    from support import ROOT

    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", WITHOUT_IMGUI_BUNDLE, "run", "--headless", "--frames", "2",
                          "--size", "1024", "--quiet", "--report", str(tmp_path / "r.json")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode != 0 and "imgui_bundle" in res.stderr


def test_headless_run_without_imgui_bundle_when_the_overlay_is_off(tmp_path):
    """The GPU machine's run: headless, --no-overlay, imgui_bundle refused."""
    import subprocess
    import sys

    from support import ROOT

    report = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", WITHOUT_IMGUI_BUNDLE, "run", "--headless", "--no-overlay",
                          "--frames", "3", "--size", "1024", "--quiet", "--report", str(report)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    r = json.loads(report.read_text())
    assert r["headless"] is True and r["frames"] == 3 and r["errors"] == []
