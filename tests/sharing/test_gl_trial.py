"""The GL-sharing trial in a child process (app/sharing/gl_trial.py): an implementation that ends the
child (PoCL's exit in clCreateFromGLBuffer, a crash, a hang) is a refusal with its cause, never
glshare's end; the verdict is cached on disk per set-up, and nothing breaks where the cache cannot
be written."""
from __future__ import annotations

import json
import os
import sys

import pytest

from app.sharing import gl_trial
from app.sharing.backends.gl_sharing import KhrGlSharing


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(gl_trial, "_memo", {})
    return tmp_path / "cache" / "glshare" / "gl-sharing-trials.json"


def _env_for(probe_env, selector: str):
    from app.cl.device import select_device
    from app.sharing.base import ProbeEnv

    return ProbeEnv(select_device(selector), probe_env.surface, probe_env.gl_info)


def test_pocl_ends_the_child_not_glshare(probe_env, cache):
    """The real thing: PoCL ends its process in clCreateFromGLBuffer; here only the child's."""
    env = _env_for(probe_env, "portable")
    verdict = gl_trial.verdict(env)
    assert not verdict.works and not verdict.listed and not verdict.cached
    assert verdict.reason.startswith("PoCL ")
    assert "in clCreateFromGLBuffer" in verdict.reason and "unimplemented" in verdict.reason, verdict.reason
    # kept: a second verdict in another process comes from the disk cache, without a child
    stored = json.loads(cache.read_text())
    assert list(stored["verdicts"].values()) == [verdict.as_dict()]
    gl_trial._memo.clear()
    again = gl_trial.verdict(env)
    assert again.cached and again.reason == verdict.reason


def test_intel_cpu_runtime_is_a_refusal_with_its_cause(probe_env, cache):
    from app.cl.device import all_devices

    if not any("Intel(R) OpenCL" in c.platform.name for c in all_devices()):
        pytest.skip("Intel's CPU runtime is not registered here (.ci/install-venv.sh registers it)")
    verdict = gl_trial.verdict(_env_for(probe_env, "Intel(R) OpenCL"))
    assert not verdict.works and verdict.reason.startswith("Intel's OpenCL"), verdict.reason


@pytest.mark.parametrize("script, words", [
    ("import os, signal; print('step clCreateFromGLBuffer', flush=True); os.kill(os.getpid(), signal.SIGABRT)",
     ["aborted the probe process in clCreateFromGLBuffer (SIGABRT)"]),
    ("import ctypes; print('step clEnqueueAcquireGLObjects', flush=True); ctypes.string_at(0)",
     ["crashed the probe process in clEnqueueAcquireGLObjects (SIGSEGV)"]),
    ("import sys; print('step clCreateContext', flush=True); sys.stderr.write('no GL\\n'); sys.exit(3)",
     ["in clCreateContext (exit status 3): no GL"]),
    ("print('step clCreateContext'); print('refused: clCreateContext returned CL_INVALID_OPERATION (-59)')",
     ["clCreateContext returned CL_INVALID_OPERATION (-59)"]),
    ("import time; print('step clFinish', flush=True); time.sleep(60)",
     ["hung in the probe process in clFinish", "killed"]),
])
def test_the_child_s_end_becomes_the_reason(probe_env, script, words):
    verdict = gl_trial.run_child(probe_env, False, timeout=5, command=[sys.executable, "-c", script])
    assert not verdict.works
    for w in words:
        assert w in verdict.reason, verdict.reason


def test_a_child_that_shares_works_and_says_unlisted(probe_env):
    verdict = gl_trial.run_child(probe_env, False, command=[sys.executable, "-c", "print('step x'); print('ok')"])
    assert verdict.works and verdict.reason == ""
    said = gl_trial.describe(verdict, probe_env)
    assert said.startswith("works, though Portable Computing Language") and "does not list cl_khr_gl_sharing" in said
    assert gl_trial.describe(gl_trial.Verdict(True, "", True), probe_env) == ""


def test_unwritable_cache_is_no_cache(probe_env, tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):
        pytest.skip("running as a user who may write anywhere (root)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
    monkeypatch.setattr(gl_trial, "_memo", {})
    verdict = gl_trial.verdict(probe_env)
    assert not verdict.works and not os.listdir(ro)


def test_unwritable_cache_folder_is_silent(probe_env, tmp_path, monkeypatch):
    """A cache path that cannot be made (a file where the folder should be): the verdict all the same."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    monkeypatch.setattr(gl_trial, "_memo", {})
    monkeypatch.setattr(gl_trial, "run_child", lambda env, listed: gl_trial.Verdict(False, "stand-in", listed))
    assert gl_trial.verdict(probe_env).reason == "stand-in"


def test_key_names_the_whole_set_up(probe_env):
    key = gl_trial.key_of(probe_env)
    assert set(key) == {"platform", "device", "driver", "gl_vendor", "gl_renderer", "gl_version", "gl_platform"}
    assert key["gl_platform"] == "egl"


def test_registry_survives_the_trial(probe_env, cache):
    """glshare itself goes on after PoCL's child ended: every other backend is probed."""
    from app.sharing.registry import Registry

    reg = Registry(probe_env)
    assert not reg.probes[KhrGlSharing.name].available
    assert "trial of it in a child process failed" in reg.probes[KhrGlSharing.name].reason
    assert reg.available  # host_copy at least
