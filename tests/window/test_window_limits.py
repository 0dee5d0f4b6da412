"""Windows and headless surfaces larger than GL and X allow are clamped with one warning, never
an abort (32767 x 32767 used to end the process in an xcb assertion, with no report)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from support import ROOT

SCRIPT = r"""
import logging, os, sys
sys.path.insert(0, sys.argv[1])
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
from app.window import select_platform
select_platform(False)
from OpenGL import GL
from app.window.glfw_window import GlfwWindow, gl_max_framebuffer
w = GlfwWindow((800, 600))
vw, vh = GL.glGetIntegerv(GL.GL_MAX_VIEWPORT_DIMS)
side = min(GL.glGetIntegerv(GL.GL_MAX_RENDERBUFFER_SIZE), GL.glGetIntegerv(GL.GL_MAX_TEXTURE_SIZE), 16384)
assert w.max_size == gl_max_framebuffer() == (min(int(vw), side), min(int(vh), side)), w.max_size
w.max_size = (640, 480)  # small limits, so that the test needs no gigabytes
w.resize(32767, 32767)
for _ in range(3):
    w.poll_events()
    w.bind_target(); GL.glClear(GL.GL_COLOR_BUFFER_BIT); w.present()
print("size", *w.framebuffer_size, flush=True)
w.resize(300, 200)
w.poll_events()
print("size", *w.framebuffer_size, flush=True)
w.close()
"""


@pytest.mark.window
@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")
def test_huge_window_is_clamped_with_one_warning():
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["size 640 480", "size 300 200"]
    warnings = [ln for ln in res.stderr.splitlines() if "larger than GL and X allow" in ln]
    assert warnings == ["app.window.glfw_window: a window of 32767x32767 is larger than GL and X allow here "
                        "(640x480): made 640x480"], res.stderr


def test_headless_surface_clamped(gl, caplog):
    from app.window.egl_headless import EglSurface

    s = EglSurface((64, 64))
    try:
        real = s.max_size
        assert real[0] >= 4096 and real[1] >= 4096  # GL 4.x allows at least 16384; llvmpipe says 16384
        s._max_size = (100, 80)
        with caplog.at_level(logging.WARNING, logger="app.window.egl_headless"):
            s.resize(32767, 5)
        assert s.framebuffer_size == (100, 5) and s.bind_target()
        assert [r.getMessage() for r in caplog.records] == [
            "a headless surface of 32767x5 is larger than GL allows here (100x80): made 100x5"]
    finally:
        s.close()
        gl.make_current()
