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
    """A clean GL state: the surface's framebuffer bound (a test before may have bound 0, which a
    surfaceless context has no framebuffer for), no pending glGetError before, none after the test."""
    from OpenGL import GL

    from app.gl.context import check_gl

    surface.bind_target()
    while GL.glGetError() != GL.GL_NO_ERROR:
        pass
    yield surface
    check_gl("test left a GL error")


# -- OpenCL implementations -------------------------------------------------------------------------
# [spec] Device-dependent tests run on every CPU implementation present (pyopencl's convention: tests
# parametrized per device; ``GLSHARE_TEST_CL=pocl,intel`` narrows the set as PYOPENCL_TEST does).
# ``make test`` registers Intel's CPU runtime beside PoCL (.ci/install-venv.sh) and sets
# GLSHARE_REQUIRE_CL_IMPLS=2, so a second implementation that went missing fails the suite.
# Every other test keeps PoCL, the measured default (``device_choice``).
CPU_IMPLEMENTATIONS = {"pocl": "Portable Computing Language", "intel": "Intel(R) OpenCL"}


def _cpu_platform_names() -> set[str]:
    try:
        import pyopencl as cl

        return {p.name.strip() for p in cl.get_platforms() if any(d.type & cl.device_type.CPU for d in p.get_devices())}
    except Exception:  # noqa: BLE001 - no platform: nothing to parametrize over
        return set()


def cpu_implementations() -> list[tuple[str, str]]:
    """(id, platform name) of each CPU implementation found, PoCL first, narrowed by GLSHARE_TEST_CL."""
    names = _cpu_platform_names()
    wanted = [w.strip().lower() for w in os.environ.get("GLSHARE_TEST_CL", "").split(",") if w.strip()]
    found = [(key, name) for key, name in CPU_IMPLEMENTATIONS.items() if name in names]
    found += [(n.split()[0].lower(), n) for n in sorted(names) if n not in CPU_IMPLEMENTATIONS.values()]
    return [(k, n) for k, n in found if not wanted or any(w in k or w in n.lower() for w in wanted)]


def _pocl_is_ambiguous() -> bool:
    """PoCL and another CPU implementation are present, and no GPU that select_device would prefer."""
    names = _cpu_platform_names()
    if CPU_IMPLEMENTATIONS["pocl"] not in names or len(names) < 2:
        return False
    try:
        import pyopencl as cl

        return not any(d.type & cl.device_type.GPU for p in cl.get_platforms() for d in p.get_devices())
    except Exception:  # noqa: BLE001
        return False


def pytest_generate_tests(metafunc):
    if "cl_impl" in metafunc.fixturenames:
        impls = cpu_implementations()
        metafunc.parametrize("cl_impl", [n for _, n in impls], ids=[k for k, _ in impls], indirect=True,
                             scope="session")


@pytest.fixture(scope="session")
def cl_impl(request):
    """The DeviceChoice of one CPU implementation (the test runs once per implementation)."""
    from app.cl.device import select_device

    return select_device(request.param)


@pytest.fixture(scope="session")
def device_choice():
    """GLSHARE_CL_DEVICE's device, else select_device's default (the first GPU, else the first device),
    except that PoCL stays the CPU default beside another CPU implementation (the loader's order is
    not stable)."""
    from app.cl.device import select_device

    selector = os.environ.get("GLSHARE_CL_DEVICE")
    if not selector and _pocl_is_ambiguous():
        selector = CPU_IMPLEMENTATIONS["pocl"]
    return select_device(selector)


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


@pytest.fixture(scope="module")
def cl_ctx(device_choice):
    """A plain CL context and queue on the chosen device (the CL helpers' tests)."""
    import pyopencl as cl

    context = cl.Context([device_choice.device])
    return context, cl.CommandQueue(context)


@pytest.fixture
def glshare():
    return run_glshare



@pytest.fixture(autouse=True)
def _private_tmpdir(tmp_path_factory, monkeypatch):
    """Whatever glshare puts in the temporary folder (a failed build's saved copy) lands in a folder
    of pytest's own (beside the tests' tmp_path, so their listings stay exact), in this process and
    in the glshare processes it starts, never in /tmp itself."""
    import tempfile

    folder = tmp_path_factory.mktemp("TMPDIR")
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
