"""GPU-only: gl_sharing on NVIDIA's real driver, through GLX in a GLFW window (marker ``gpu``).

They need an X display whose GLX client is NVIDIA's (``__GLX_VENDOR_LIBRARY_NAME=nvidia``, e.g. Xvfb
on the GPU machine: docs/gpu-window.md) and a CL platform named NVIDIA; skipped elsewhere with the
reason. Each scene runs in a child (tests/gpu_glx_child.py: this process's PyOpenGL is EGL's) on
host_copy and on gl_sharing; both must meet the contract suite's numpy references
(tests/contract/references.py, their tolerances) and show the same picture: particles exactly,
the texture scenes within 1 LSB (write_imagef's float -> unorm8 rounding may differ by one step
between a CL image made from a GL texture and host_copy's own image; the spec allows it).

Run there with:  bash .ci/gpu-glx-run.sh   (or: python3 -m pytest -m gpu -v tests/sharing/test_gpu_glx.py)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from support import HELPERS, ROOT, pythonpath_with_root

from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy

pytestmark = pytest.mark.gpu

CHILD = str(HELPERS / "gpu_glx_child.py")


def _glx_skip_reason() -> str | None:
    if not os.environ.get("DISPLAY"):
        return "needs an X display (DISPLAY) with NVIDIA's GLX: docs/gpu-window.md"
    if os.environ.get("__GLX_VENDOR_LIBRARY_NAME") != "nvidia":
        return "needs NVIDIA's GLX client library (__GLX_VENDOR_LIBRARY_NAME=nvidia)"
    return None


@pytest.fixture(autouse=True)
def _needs_glx():
    reason = _glx_skip_reason()
    if reason:
        pytest.skip(reason)


def child_env() -> dict:
    """A child's environment: this checkout's app/ first on PYTHONPATH, the parent's entries kept (the
    GPU machine's wheels), and PyOpenGL left to choose GLX (this process's is EGL's)."""
    env = dict(os.environ, PYTHONPATH=pythonpath_with_root())
    env.pop("PYOPENGL_PLATFORM", None)
    return env


def _run(scene: str, sync: str, in_flight: int, tmp_path,
         backends=(HostCopy.name, KhrGlSharing.name)) -> tuple[dict, dict]:
    out = tmp_path / f"{scene}-{sync}.npz"
    env = child_env()
    p = subprocess.run([sys.executable, CHILD, scene, sync, str(in_flight), str(out), *backends], env=env,
                       capture_output=True, text=True, timeout=300)
    line = next((ln[7:] for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert p.returncode == 0 and line, (p.returncode, p.stdout[-2000:], p.stderr[-4000:])
    with np.load(out) as data:
        return json.loads(line), {k: data[k] for k in data.files}


@pytest.mark.parametrize("scene", ["particles", "image", "postprocess", "yuv"])
def test_scene_on_gl_sharing_matches_host_copy_and_reference(scene, tmp_path):
    result, px = _run(scene, "finish", 1, tmp_path)
    for backend in (HostCopy.name, KhrGlSharing.name):
        assert result[backend]["errors"] == [], (backend, result[backend])
        assert result[backend]["reference"] == "ok", (backend, result[backend])
    ref, got = px[HostCopy.name], px[KhrGlSharing.name]
    assert ref[..., :3].std() > 1  # something was drawn
    diff = np.abs(got.astype(int) - ref.astype(int))
    assert diff.max() <= (0 if scene == "particles" else 1), (scene, int(diff.max()))


@pytest.mark.parametrize("scene", ["particles", "image"])
@pytest.mark.parametrize("in_flight", [1, 3])
def test_gl_event_frames_in_flight(scene, in_flight, tmp_path):
    """The GL fence as the acquire's CL event (clCreateEventFromGLsyncKHR on the GL-sharing context),
    frames in flight: the reference and host_copy's picture all the same, and no glFinish."""
    result, px = _run(scene, "gl_event", in_flight, tmp_path)
    entry = result[KhrGlSharing.name]
    assert entry["errors"] == [] and entry["reference"] == "ok", entry
    assert "glFinish" not in entry["waits"], entry["waits"]
    diff = np.abs(px[KhrGlSharing.name].astype(int) - px[HostCopy.name].astype(int))
    assert diff.max() <= (0 if scene == "particles" else 1), int(diff.max())


def test_probe_says_works_though_unlisted(tmp_path):
    """NVIDIA lists no cl_khr_gl_sharing; the trial in a child saw it work: the probe says both."""
    result, _ = _run("particles", "finish", 1, tmp_path, backends=(KhrGlSharing.name,))
    reason = result[KhrGlSharing.name]["probe"]
    assert "GLX context" in reason and "does not list cl_khr_gl_sharing" in reason and "works, though" in reason


def test_glshare_errors_gl_sharing_family_runs_against_the_driver():
    """The error lab's gl_sharing family against NVIDIA's driver in a window (GLX): every case answered
    (no crash, no hang), the driver called for its column; where it answers otherwise than the spec
    the case says so (``driver_differs``: recorded, not a failure of glshare). The driver's calls run in a
    child under a watchdog (app/lab/isolate.py): a call that hangs or crashes is that case's answer."""
    env = child_env()
    p = subprocess.run([sys.executable, "-m", "app", "errors", "--backend", "gl_sharing", "--window", "--json"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert p.returncode in (0, 1), p.stderr[-4000:]  # 1: a case the validator or a hazard got wrong (in the JSON)
    data = json.loads(p.stdout)
    assert data["summary"]["driver_called"] > 0, data["summary"]


@pytest.mark.parametrize("scene", ["particles", "image"])
def test_gl_event_run_ends_cleanly(scene, tmp_path):
    """A gl_event run in a window ends with exit status 0 and no teardown failure: its close never
    waits on a linked event (NVIDIA 580 answered CL_INVALID_EVENT there, then the process crashed)."""
    env = child_env()
    p = subprocess.run([sys.executable, "-m", "app", "run", "--quiet", "--scene", scene, "--backend", "gl_sharing",
                        "--sync", "gl_event", "--frames", "60", "--no-panel", "--report", str(tmp_path / "r.json")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-4000:])
    assert "Traceback" not in p.stderr and "gl_event sync at teardown" not in p.stderr, p.stderr[-4000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["frames"] == 60 and report["errors"] == [], report["errors"]
