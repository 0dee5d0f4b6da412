"""GPU-only (marker ``gpu``): ``glshare attach`` on real GL sharing, NVIDIA's driver through GLX in
a window, attached to glshare's own ``run`` on gl_sharing: the attached record agrees with
glshare's own report (acquires, releases, kernels, frames), finds nothing in a correct run, and
has device stamps and ownership lanes for the shared texture.

They need an X display whose GLX client is NVIDIA's (docs/gpu-window.md), a CL platform named
NVIDIA and the attach libraries built (make setup); skipped elsewhere with the reason. Run there
with: python3 -m pytest -m gpu -v tests/attach/test_attach_gpu.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import native

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _needs_glx_and_libraries():
    if not os.environ.get("DISPLAY"):
        pytest.skip("needs an X display (DISPLAY) with NVIDIA's GLX: docs/gpu-window.md")
    if os.environ.get("__GLX_VENDOR_LIBRARY_NAME") != "nvidia":
        pytest.skip("needs NVIDIA's GLX client library (__GLX_VENDOR_LIBRARY_NAME=nvidia)")
    for stem in ("cl_layer", "gl_preload"):
        if not os.path.exists(native.attach_library(stem)):
            pytest.skip(f"{native.attach_library(stem)} is not built (make setup)")


def test_attached_to_glshare_on_gl_sharing_the_record_agrees(tmp_path):
    inner, outer = tmp_path / "inner.json", tmp_path / "attach.json"
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("GLSHARE_CL_DEVICE", "NVIDIA")
    argv = [sys.executable, "-m", "app", "run", "--scene", "image", "--backend", "gl_sharing", "--sync", "finish",
            "--frames", "60", "--quiet", "--report", str(inner), "--no-panel"]
    done = subprocess.run([sys.executable, "-m", "app", "attach", "--report", str(outer), "--", *argv], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    own, rec = json.loads(inner.read_text()), json.loads(outer.read_text())
    (proc,) = rec["processes"]
    calls = proc["calls"]
    assert calls.get("clEnqueueAcquireGLObjects") == own["counts"]["acquire"]
    assert calls.get("clEnqueueReleaseGLObjects") == own["counts"]["release"]
    assert calls.get("clEnqueueNDRangeKernel") == own["counts"]["compute"]
    assert rec["frames"] >= own["frames"]  # glXSwapBuffers: one per frame (and the window's first)
    assert [f for f in rec["findings"] if f["source"] != "races"] == []
    assert proc["owners"], "an ownership lane for the shared texture"
    assert all(q["stamped"] == q["commands"] for q in proc["queues"].values())
