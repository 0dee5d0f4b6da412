"""The panel in a real window under Xvfb, driven by real keys and clicks (xdotool, through X, GLFW
and ImGui's backend: tests/window_driver.py), checked on screenshots and on what it showed.

Pixel checks: the scene outside the ImGui windows is identical with and without a tooltip; the
panel is all there after a teaching round trip; the frame number the timeline draws is the
header's, glyph for glyph. No wall-clock time is asserted.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from support import HELPERS, ROOT

from app.trace.png import read_png

pytestmark = [pytest.mark.window,
              pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)"),
              pytest.mark.skipif(not shutil.which("xdotool"), reason="needs xdotool (make test installs it)")]

GLYPH_W, GLYPH_H = 7, 13  # ImGui's default font (ProggyClean 13 px): every glyph 7 pixels wide


def drive(tmp_path, steps: list, **run) -> tuple[dict, str]:
    """Run the window driver with ``steps``; returns (its results, its stderr)."""
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"run": {"scene": "particles", "size": 16384, **run}, "steps": steps}))
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, str(HELPERS / "window_driver.py"), str(scenario), str(tmp_path)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads((tmp_path / "results.json").read_text()), res.stderr


def window(d: dict, prefix: str) -> tuple[int, int, int, int]:
    return next(tuple(w[1:]) for w in d["imgui_windows"] if w[0].startswith(prefix))


def covered(d: dict, rect) -> float:
    """The fraction of ``rect`` (ImGui pixels) the layer's copy covers."""
    h = d["fb"][1]
    x0, y0, x1, y1 = rect
    mask = np.zeros((h, d["fb"][0]), bool)
    for rx0, ry0, rx1, ry1 in d["layer_rects"]:
        mask[h - ry1:h - ry0, rx0:rx1] = True  # GL rows -> image rows
    return float(mask[y0:y1, x0:x1].mean())


def test_tooltip_leaves_the_scene_alone(tmp_path):
    """A tooltip over the scene: every pixel outside the ImGui windows is the scene's, unchanged; the
    tooltip wraps inside the window."""
    d, _ = drive(tmp_path, [["ticks", 15], ["key", "p"], ["move", 780, 590], ["ticks", 4], ["shot", "plain"],
                            ["dump", "plain"], ["move", "@clock"], ["ticks", 6], ["shot", "tip"], ["dump", "tip"]])
    plain, tip = read_png(tmp_path / "plain.png"), read_png(tmp_path / "tip.png")
    tooltip = window(d["tip"], "##Tooltip")
    w, h = d["tip"]["fb"]
    assert 0 <= tooltip[0] and tooltip[2] <= w and tooltip[3] <= h, tooltip  # inside the window
    assert tooltip[2] - tooltip[0] <= 460 and tooltip[2] > window(d["tip"], "glshare")[2]  # wrapped, over the scene
    outside = np.ones(plain.shape[:2], bool)
    for _, x0, y0, x1, y1 in d["plain"]["imgui_windows"] + d["tip"]["imgui_windows"]:
        outside[max(y0, 0):y1, max(x0, 0):x1] = False
    differ = np.abs(plain.astype(int) - tip.astype(int)).max(-1)[outside]
    assert outside.sum() > 0.35 * outside.size and plain[outside].std() > 5  # the scene is there
    assert int((differ > 0).sum()) == 0, int((differ > 0).sum())
    assert tip[tooltip[1]:tooltip[3], tooltip[0]:tooltip[2]].std() > 10  # and the tooltip is drawn


def test_teaching_round_trip_restores_the_panel(tmp_path):
    """Teach tab open and scrolled, then t, n, n, n, f, t: the whole panel is back (it once left
    only the teaching button, after NaN vertex positions), and teaching mode showed its step."""
    d, err = drive(tmp_path, [
        ["ticks", 15], ["click", "@tab_teach"], ["ticks", 4], ["wheel", "@tab_body", "down", 5], ["ticks", 4],
        ["shot", "before"], ["dump", "before"], ["key", "t"], ["ticks", 3], ["key", "n"], ["key", "n"],
        ["dump", "teaching"], ["shot", "teaching"], ["key", "n"], ["key", "f"], ["key", "t"], ["ticks", 10],
        ["shot", "after"], ["dump", "after"]])
    assert "invalid value" not in err and "Traceback" not in err, err[-2000:]
    t = d["teaching"]
    assert t["teaching"] and t["in_progress"] and t["current_phase"] == "compute"
    assert t["header_frame"] == t["timeline_frame"]  # the stepped frame, on both
    after = d["after"]
    assert not after["teaching"] and not after["paused"]
    panel = window(after, "glshare")
    assert covered(after, panel) > 0.97, (after["layer_rects"], panel)
    before_px, after_px = read_png(tmp_path / "before.png"), read_png(tmp_path / "after.png")
    x0, y0, x1, y1 = panel
    same = (np.abs(before_px[y0:y1, x0:x1].astype(int) - after_px[y0:y1, x0:x1].astype(int)).max(-1) <= 24).mean()
    assert same > 0.75, f"only {same:.0%} of the panel looks as before"  # live numbers and plots change


def _digits(px: np.ndarray, spot) -> np.ndarray:
    x, y, text = spot
    crop = px[y:y + GLYPH_H, x:x + GLYPH_W * len(text)]
    return crop.max(axis=-1) > 140  # the text's pixels (bright on the panel's dark background)


def test_timeline_frame_is_the_header_frame(tmp_path):
    """Running, then paused and stepped: the frame number drawn over the timeline is the header's,
    in the model and on the screen (the glyphs are the same pixels)."""
    d, _ = drive(tmp_path, [["ticks", 30], ["shot", "running"], ["dump", "running"], ["key", "p"],
                            ["key", "Right"], ["key", "Right"], ["ticks", 3], ["shot", "stepped"],
                            ["dump", "stepped"]])
    for name in ("running", "stepped"):
        dd = d[name]
        assert dd["header_frame"] == dd["timeline_frame"] == dd["owners_frame"] is not None, dd
        px = read_png(tmp_path / f"{name}.png")
        head, line = dd["spots"]["header_frame"], dd["spots"]["timeline_frame"]
        assert head[2] == line[2] == str(dd["header_frame"])
        a, b = _digits(px, head), _digits(px, line)
        assert a.sum() > 6 * len(head[2]) and np.array_equal(a, b), name
    stepped = d["stepped"]
    assert stepped["paused"] and stepped["header_frame"] == stepped["frame"] - 1  # the frame stepped last


def test_plot_click_chooses_a_frame_and_the_timeline_zooms(tmp_path):
    """A click on the timing plot shows that frame everywhere; the wheel zooms the timeline, a drag
    pans it, a double-click fits it again."""
    d, _ = drive(tmp_path, [["ticks", 40], ["key", "p"], ["ticks", 3], ["dump", "paused"], ["click", "@plot"],
                            ["ticks", 3], ["dump", "chosen"], ["wheel", "@timeline", "up", 3], ["ticks", 3],
                            ["dump", "zoomed"], ["drag", "@timeline", 60], ["ticks", 3], ["dump", "panned"],
                            ["doubleclick", "@timeline"], ["ticks", 3], ["dump", "fitted"]])
    chosen = d["chosen"]
    assert chosen["chosen"] and chosen["header_frame"] == chosen["timeline_frame"] == chosen["owners_frame"]
    assert chosen["header_frame"] < d["paused"]["header_frame"]  # the middle of the plot: an older frame
    zoomed, panned = d["zoomed"]["zoom"], d["panned"]["zoom"]
    assert zoomed is not None and zoomed[1] - zoomed[0] < 0.7 * d["chosen"]["auto_span"]
    assert panned[0] < zoomed[0] and abs((panned[1] - panned[0]) - (zoomed[1] - zoomed[0])) < 1e-6  # dragged right
    assert d["fitted"]["zoom"] is None


def test_resizes_never_lose_the_panel(tmp_path):
    """1x1 <-> 2000x2000 flips, then a window wider than a GL texture can be, then 800x600 again: no
    error, the panel back, the layer's GL objects not leaked, the memory back near where it was."""
    steps = [["ticks", 10]]
    for _ in range(8):
        steps += [["resize", 1, 1], ["resize", 2000, 2000]]
    steps += [["resize", 17000, 300], ["ticks", 10], ["dump", "huge"], ["resize", 800, 600], ["ticks", 15],
              ["dump", "back"]]
    d, err = drive(tmp_path, steps)
    huge, back = d["huge"], d["back"]
    # the window itself is clamped to what GL and X allow (16384 a side here), with one warning
    assert huge["fb"] == [16384, 300] and huge["layer_size"][0] <= 16384 and huge["layer_rects"]
    assert back["loop_errors_total"] == 0 and back["layer_failures"] == 0, back["loop_errors"]
    assert len(err.strip().splitlines()) < 5, err[-2000:]
    assert covered(back, window(back, "glshare")) > 0.97
    assert back["live"] == d["baseline"]["live"]  # one layer texture and FBO, as before the resizes
    assert back["rss_mb"] < d["baseline"]["rss_mb"] + 80, (back["rss_mb"], d["baseline"]["rss_mb"])


@pytest.mark.parametrize("size", [(640, 400), (1600, 1000)])
def test_layout_fits_the_window(tmp_path, size):
    """Small: the panel scrolls and every tab can be reached; large: a wider panel and taller lanes.
    The header is never wider than the panel."""
    w, h = size
    d, _ = drive(tmp_path, [["ticks", 15], ["dump", "top"], ["wheel", 200, 60, "down", 30], ["ticks", 4],
                            ["dump", "scrolled"]], window_size=[w, h])
    top, scrolled = d["top"], d["scrolled"]
    x0, y0, x1, y1 = window(top, "glshare")
    assert top["fb"] == [w, h] and x1 <= w and y1 <= h
    for name in ("clock", "write_trace"):
        assert x0 <= top["rects"][name][0] and top["rects"][name][2] <= x1, name
    tabs = [r for k, r in scrolled["rects"].items() if k.startswith("tab_") and k != "tab_body"]
    assert tabs and all(y0 <= r[1] and r[3] <= y1 for r in tabs), (tabs, (x0, y0, x1, y1))  # reachable
    lanes = top["rects"]["timeline"]
    if w >= 1600:
        assert x1 - x0 > 500 and lanes[3] - lanes[1] > 150  # the space is used
    else:
        assert scrolled["scroll_y"] > 0  # the panel scrolled to its tabs


def test_teaching_text_visible_without_scrolling(tmp_path):
    """At 800x600 the teaching block (buttons, steps, glshare's note, the quoted spec) is on screen."""
    d, _ = drive(tmp_path, [["ticks", 10], ["key", "t"], ["ticks", 2], ["key", "n"], ["ticks", 3],
                            ["shot", "teach"], ["dump", "teach"]])
    t = d["teach"]
    x0, y0, x1, y1 = window(t, "glshare")
    block, lanes = t["rects"]["teaching"], t["rects"]["timeline"]
    assert t["scroll_y"] == 0 and y0 < block[1] and block[3] <= y1, (block, y1)
    assert lanes[1] < y1 - 60, (lanes, y1)  # and the timeline's first lanes under it
    assert t["current_phase"] == "acquire" and t["header_frame"] == t["timeline_frame"]


def test_scene_options_are_rows_of_the_panel(tmp_path):
    """postprocess in a window: its filter, blur radius, camera and local size are drawn under the
    controls, inside the panel, at 800x600 (beside the panel) and in a 640x400 window; real clicks
    on them change the scene (the filter's combo, the slider's middle, the camera's reset, a local
    size from its combo), and each row then shows the scene's value."""
    names = ("option_filter", "option_blur_radius", "option_camera", "option_camera_button", "option_local_size")
    # paused: the header keeps its lines (running, its "newest fully timed" note comes and goes with
    # the GL timer's sampling and moves what is under it); the commands act all the same
    d, err = drive(tmp_path, [
        ["ticks", 10], ["key", "p"], ["ticks", 3], ["dump", "top"],
        # a combo's list is placed at the redraw after the one that opened it: the mouse moves first
        ["click", "@option_filter"], ["move", "@option_blur_radius"], ["ticks", 3], ["dump", "open"],
        ["click", "@option_filter=blur"], ["ticks", 3], ["dump", "blur"],
        ["click", "@option_blur_radius"], ["ticks", 3], ["dump", "radius"],
        ["click", "@option_camera_button"], ["ticks", 3], ["dump", "reset"],
        ["click", "@option_local_size"], ["move", "@option_camera"], ["ticks", 3],
        ["click", "@option_local_size=8x8"], ["ticks", 3], ["dump", "local"], ["resize", 640, 400], ["ticks", 10], ["shot", "small"], ["dump", "small"]],
        scene="postprocess", size=[800, 600], trace=str(tmp_path / "trace.json"))  # a click that misses writes here
    assert "Traceback" not in err, err[-2000:]
    top = d["top"]
    assert top["options"] == {"filter": "sobel", "blur_radius": 2, "camera": top["options"]["camera"],
                              "local_size": "driver"}
    for name in ("top", "small"):
        dd = d[name]
        x0, y0, x1, y1 = window(dd, "glshare")
        below = dd["rects"]["write_trace"][3]
        for key in names:
            r = dd["rects"][key]
            assert x0 <= r[0] and r[2] <= x1 and below <= r[1], (name, key, r, (x0, x1), below)  # in the panel
    assert "option_filter=blur" in d["open"]["rects"]  # the combo's list was open
    assert d["blur"]["options"]["filter"] == "blur" and d["blur"]["status"].startswith("postprocess: box blur")
    radius = d["radius"]["options"]["blur_radius"]
    assert 6 <= radius <= 9 and d["radius"]["status"].startswith(f"postprocess: blur radius {radius}")  # 0..15
    assert d["reset"]["status"] == "camera reset"
    assert d["local"]["options"]["local_size"] == "8x8" and d["local"]["status"] == "local work size: 8x8"
    small = d["small"]
    assert small["fb"] == [640, 400] and small["loop_errors_total"] == 0 and small["panel_failures"] == 0


def test_keys_walk_the_frames_and_zoom_to_the_hand_over(tmp_path):
    """Paused: left shows the frame before, twice; right the one after; z zooms the timeline on the
    frame's hand-overs (a view shorter than the whole frame), the zoom button ("fit") fits it again."""
    d, _ = drive(tmp_path, [["ticks", 40], ["key", "p"], ["ticks", 3], ["dump", "paused"], ["key", "Left"],
                            ["ticks", 3], ["key", "Left"], ["ticks", 3], ["dump", "back2"], ["key", "z"], ["ticks", 3],
                            ["dump", "zoomed"], ["click", "@zoom"], ["ticks", 3], ["dump", "fitted"]])
    first = d["paused"]["header_frame"]
    back = d["back2"]
    assert back["chosen"] and back["header_frame"] == back["timeline_frame"] == back["owners_frame"] == first - 2
    zoomed = d["zoomed"]["zoom"]
    assert zoomed is not None and zoomed[1] - zoomed[0] < d["zoomed"]["auto_span"], d["zoomed"]
    assert d["fitted"]["zoom"] is None
