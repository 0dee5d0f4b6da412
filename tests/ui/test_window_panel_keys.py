"""The panel's keys and links in a real window under Xvfb (real keys and pointer through X, GLFW and
ImGui's backend: tests/window_driver.py): while paused, left and right walk the kept frames and
right on the newest steps the run exactly one frame and shows it; hovering a CL command's bar
lights its link to the CPU call that enqueued it. No wall-clock time is asserted."""
from __future__ import annotations

import os
import shutil

import pytest
from test_window_panel import drive

pytestmark = [pytest.mark.window,
              pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)"),
              pytest.mark.skipif(not shutil.which("xdotool"), reason="needs xdotool (make test installs it)")]


def test_right_steps_the_run_one_frame_from_the_newest_and_hover_lights_the_links(tmp_path):
    d, _ = drive(tmp_path, [["ticks", 40], ["key", "p"], ["ticks", 4], ["dump", "paused"],
                            ["key", "Left"], ["ticks", 3], ["dump", "left"],
                            ["key", "Right"], ["ticks", 3], ["dump", "walked"],
                            ["key", "Right"], ["ticks", 4], ["dump", "step1"],
                            ["key", "Right"], ["ticks", 4], ["dump", "step2"],
                            ["key", "z"], ["ticks", 3], ["move", "@bar kernel"], ["ticks", 4], ["dump", "hover"]],
                 window_size=[1280, 800])
    paused, left, walked, step1, step2 = (d[k] for k in ("paused", "left", "walked", "step1", "step2"))
    ran = paused["frame"]  # the frame the run would run next: none runs while paused
    assert paused["paused"] and not paused["chosen"]
    assert paused["header_frame"] == ran - 1  # the newest frame, its stamps read while paused
    # left: the frame before; right: the one after, the run holds
    assert left["chosen"] and left["header_frame"] == ran - 2 and left["frame"] == ran
    assert walked["chosen"] and walked["header_frame"] == ran - 1 and walked["frame"] == ran
    # right on the newest: the run steps exactly one frame, the panel chooses it; again
    assert step1["frame"] == ran + 1 and step1["chosen"] and step1["header_frame"] == ran, step1["status"]
    assert step2["frame"] == ran + 2 and step2["chosen"] and step2["header_frame"] == ran + 1
    assert step2["paused"] and step2["timeline_frame"] == step2["owners_frame"] == ran + 1
    # the pointer on the kernel's bar lights its link to the CPU's "enqueue kernel"
    frame, _bar, links = d["hover"]["hot"]
    assert frame == ran + 1 and "enqueue kernel -> kernel" in links, d["hover"]["hot"]
    assert d["final"]["panel_failures"] == 0 and not d["errors"]
