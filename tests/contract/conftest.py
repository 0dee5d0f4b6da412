"""The backends the contract suite runs on: every backend available here, and gl_sharing through
an emulated driver where the machine has none (tests/gl_emulation.py: the C entry points of
app/cl/gl_sharing.py replaced by callbacks that keep a plain CL object per GL object and copy at
acquire and release; the trial in a child process, which PoCL's abort refuses, answers yes).

The emulation makes gl_sharing's own code run whole on the CPU machine: the context properties,
the ctypes calls, the validator, the ownership tracker, the scenes on it. What it cannot show is
a real driver's zero-copy hand-over: the ``gpu`` tests run it on NVIDIA's (tests/sharing/test_gpu_glx.py).
"""
from __future__ import annotations

import pytest
from gl_emulation import EmulatedGlSharingDriver

from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.base import ProbeEnv
from app.sharing.registry import backend_classes

__all__ = ["EmulatedGlSharingDriver"]


def _available_here(name: str, env: ProbeEnv) -> str | None:
    probe = backend_classes()[name].probe(env)
    return None if probe.available else probe.reason


@pytest.fixture(params=list(backend_classes()))
def contract_backend(request, probe_env, monkeypatch):
    """A backend name the run can choose here: real where its probe accepts this machine,
    gl_sharing through the emulated driver otherwise, anything else skipped with its reason."""
    name = request.param
    reason = _available_here(name, probe_env)
    if reason is None:
        yield name
        return
    if name == KhrGlSharing.name:
        driver = EmulatedGlSharingDriver()
        driver.install(monkeypatch, gl_event=True)  # (NVIDIA lists cl_khr_gl_event: its gl_event runs here too)
        reason = _available_here(name, probe_env)
        assert reason is None, reason
        yield name
        assert not driver.errors, driver.errors  # the emulation itself must not have broken
        return
    pytest.skip(f"{name} is not available here: {reason}")
    yield name
