"""Shared fixtures: one headless EGL context for the session, the OpenCL device, GL error guards.

PyOpenGL binds its platform at first import (../shared/PLATFORMS.md), so this file sets EGL before
anything imports OpenGL; tests of the window run ``glshare`` in a subprocess under Xvfb.
"""
from __future__ import annotations

import os

os.environ["PYOPENGL_PLATFORM"] = "egl"

import pytest  # noqa: E402
from support import ROOT, run_glshare  # noqa: E402,F401


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


@pytest.fixture
def glshare():
    return run_glshare

