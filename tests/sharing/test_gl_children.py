"""The children of the GL-sharing tests (tests/sharing/test_gpu_glx.py) import this checkout's app/ and
still find what the parent's PYTHONPATH held: on the GPU machine pyopencl's wheel is found there
only, and a child given PYTHONPATH=ROOT alone failed with ModuleNotFoundError."""
from __future__ import annotations

import subprocess
import sys

from support import ROOT
from test_gpu_glx import child_env


def test_gpu_children_keep_the_parents_pythonpath(tmp_path, monkeypatch):
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"  # (a child's cwd is on its sys.path)
    site.mkdir()
    elsewhere.mkdir()
    (site / "wheel_only_here.py").write_text("WHERE = 'the parent path'\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("PYOPENGL_PLATFORM", "egl")
    env = child_env()
    assert env["PYTHONPATH"].split(":")[0] == str(ROOT) and "PYOPENGL_PLATFORM" not in env
    p = subprocess.run([sys.executable, "-c", "import wheel_only_here, app, sys; print(app.__file__)"],
                       cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().startswith(str(ROOT / "app")), p.stdout
