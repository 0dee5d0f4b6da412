"""Mouse input in the real window under Xvfb: a drag with the left button and wheel steps reach
``GlfwWindow.mouse_events`` (summed per poll), also after ImGui's GLFW backend installed its
callbacks over ours (it chains to them). The events are real X input (xdotool, XTEST)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = [pytest.mark.window,
              pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)"),
              pytest.mark.skipif(not shutil.which("xdotool"), reason="needs xdotool to move the mouse")]

SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    os.environ["PYOPENGL_PLATFORM"] = "glx"
    from app.window.glfw_window import GlfwWindow
    from app.ui.imgui_layer import ImGuiLayer
    win = GlfwWindow((320, 240), title="glshare mouse test")
    redraws = []
    win.on_input(lambda: redraws.append(1))
    layer = ImGuiLayer(win)  # installs ImGui's callbacks, chained to the window's
    drag, scroll, keys = [0.0, 0.0], 0.0, []
    t0 = time.time()
    print("ready", flush=True)
    while time.time() - t0 < 30 and "q" not in keys:
        keys += [e.key for e in win.poll_events()]
        for ev in win.mouse_events():
            if ev.kind == "drag":
                drag[0] += ev.dx; drag[1] += ev.dy
            elif ev.kind == "scroll":
                scroll += ev.dy
        time.sleep(0.01)
    layer.close()
    win.close()
    print(json.dumps({"drag": drag, "scroll": scroll, "inputs": len(redraws)}), flush=True)
""")


def test_drag_and_wheel_reach_mouse_events(tmp_path):
    from support import ROOT

    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        wid = ""
        for _ in range(80):
            found = subprocess.run(["xdotool", "search", "--name", "glshare mouse test"], capture_output=True,
                                   text=True)
            wid = found.stdout.split()[0] if found.stdout.split() else ""
            if wid:
                break
            time.sleep(0.25)
        assert wid, "the window did not appear"
        time.sleep(0.5)

        def xdo(*args: str) -> None:
            subprocess.run(["xdotool", *args], check=True)
            time.sleep(0.15)

        xdo("windowfocus", "--sync", wid)
        xdo("mousemove", "--window", wid, "100", "100")
        xdo("mousedown", "1")
        xdo("mousemove", "--window", wid, "160", "130")  # +60, +30 with the button held
        xdo("mousemove", "--window", wid, "180", "110")  # +20, -20
        xdo("mouseup", "1")
        xdo("mousemove", "--window", wid, "40", "40")  # no button: no drag
        xdo("click", "4")  # wheel up: one step away from the user
        xdo("click", "4")
        xdo("click", "5")  # wheel down
        xdo("key", "q")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    assert got["drag"] == [80.0, 10.0], got
    assert got["scroll"] == 1.0, got
    assert got["inputs"] > 5  # every movement, button and step still reaches the panel's listener
