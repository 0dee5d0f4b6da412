"""Shared fixtures: one headless EGL context for the session, the OpenCL device, GL error guards.

PyOpenGL binds its platform at first import (../shared/PLATFORMS.md), so this file sets EGL before
anything imports OpenGL; tests of the window run ``glshare`` in a subprocess under Xvfb.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ["PYOPENGL_PLATFORM"] = "egl"

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _gpu_skip_reason() -> str | None:
    try:
        import pyopencl as cl

        platforms = [p for p in cl.get_platforms() if "NVIDIA" in p.name]
    except Exception as exc:  # noqa: BLE001
        return f"no OpenCL platforms ({exc})"
    if not platforms:
        return "needs the NVIDIA GPU machine (no NVIDIA OpenCL platform here; this is PoCL on the CPU)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if gpu_items:
        reason = _gpu_skip_reason()
    if reason:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def surface():
    """The session's headless EGL surface (256x256 FBO), current for every test."""
    from app.window.egl_headless import EglSurface

    s = EglSurface((256, 256))
    yield s
    s.close()


@pytest.fixture
def gl(surface):
    """A clean GL state: no pending glGetError before, none after the test."""
    from OpenGL import GL

    from app.gl.context import check_gl

    while GL.glGetError() != GL.GL_NO_ERROR:
        pass
    yield surface
    check_gl("test left a GL error")


@pytest.fixture(scope="session")
def device_choice():
    from app.cl.device import select_device

    return select_device(os.environ.get("GLSHARE_CL_DEVICE"))


@pytest.fixture
def probe_env(gl, device_choice):
    from app.gl.context import gl_info
    from app.sharing.base import ProbeEnv

    return ProbeEnv(device_choice, gl, gl_info())


@pytest.fixture
def host_copy(probe_env):
    from app.sharing.backends.host_copy import HostCopy

    backend = HostCopy(probe_env, strict=True)
    yield backend
    backend.close()


def run_glshare(*args: str, env: dict | None = None, timeout: float = 240, cwd: Path | None = None):
    """Run the CLI in a fresh process (its own GL platform); returns CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYOPENGL_PLATFORM", None)
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def glshare():
    return run_glshare


def panel_snapshot(run, tab: str | None = None):
    """The panel's model (``app.ui.model.PanelModel``) of ``run`` (a ``Run``) as the UI host builds it
    at a redraw; ``tab``: as if that tab were shown."""
    view = run.session.view(demos=run.controls.demo_views(), trace_written=run.trace_written)
    ui = run.ui
    return ui.model.update(view, tab=tab or ui.state.tab, lab=ui.lab_results, ui_caps=ui.caps(),
                           chosen=ui.state.chosen)
