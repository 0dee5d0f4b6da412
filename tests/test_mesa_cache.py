"""Mesa's shader cache on a cache home that cannot be written (issue 38): glshare points Mesa at its
private cache folder before GL is loaded (app/caches.py), so standard error holds glshare's one line
about the folder and none of Mesa's ("Failed to create ... for shader cache ...---disabling.")."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import ROOT

from app import caches

MESA_LINE = "for shader cache"  # both of Mesa's lines: "Failed to create %s for shader cache", "Cannot use %s for shader cache"


def _unwritable(tmp_path):
    """A folder this process cannot make: under a file (root writes through permissions), else
    under a folder without write permission."""
    if os.geteuid() == 0:
        (tmp_path / "file").write_text("")
        return tmp_path / "file" / "cache"
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    return ro / "cache"


@pytest.mark.parametrize("var", ["XDG_CACHE_HOME", "MESA_SHADER_CACHE_DIR"])
def test_no_line_of_mesa_on_an_unwritable_cache_folder(tmp_path, var):
    folder = _unwritable(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYOPENGL_PLATFORM", "MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE")}
    env[var] = str(folder)
    report = tmp_path / "r.json"
    res = subprocess.run([sys.executable, "-m", "app", "run", "--headless", "--scene", "image", "--size", "96x64",
                          "--frames", "3", "--quiet", "--report", str(report)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert json.loads(report.read_text())["frames"] == 3
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert not [line for line in lines if MESA_LINE in line], res.stderr
    said = [line for line in lines if "cannot be written" in line]
    assert len(said) == 1 and str(folder) in said[0] and "for this run" in said[0], res.stderr


def test_mesa_folder_follows_mesas_order(monkeypatch, tmp_path):
    """MESA_SHADER_CACHE_DIR, MESA_GLSL_CACHE_DIR, XDG_CACHE_HOME/mesa_shader_cache, then the
    passwd entry's home (never $HOME); MESA_SHADER_CACHE_DISABLE: no folder."""
    import pwd

    for var in ("MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR", "XDG_CACHE_HOME", "MESA_SHADER_CACHE_DISABLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "not-mesas"))
    home = pwd.getpwuid(os.getuid()).pw_dir
    assert caches.mesa_folder() == (os.path.join(home, ".cache", "mesa_shader_cache"), os.path.join(home, ".cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", "/x")
    assert caches.mesa_folder() == ("/x/mesa_shader_cache", "/x")
    monkeypatch.setenv("MESA_GLSL_CACHE_DIR", "/g")
    assert caches.mesa_folder() == ("/g", "/g")
    monkeypatch.setenv("MESA_SHADER_CACHE_DIR", "/s")
    assert caches.mesa_folder() == ("/s", "/s")
    monkeypatch.setenv("MESA_SHADER_CACHE_DISABLE", "true")
    assert caches.mesa_folder() is None


def test_problem_makes_nothing(tmp_path):
    assert caches.problem(str(tmp_path / "a" / "b")) is None and not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("")
    assert caches.problem(str(tmp_path / "f" / "b")) == f"{tmp_path / 'f'} is not a folder"
