"""The cache folders the libraries glshare loads write into, made usable before they are first used.

- pyopencl and pytools keep built binaries under ``$XDG_CACHE_HOME``, else the user's cache folder
  (``~/.cache``: platformdirs); ``app.cl.programs.usable_cache`` checks theirs before the first build.
- Mesa keeps compiled shaders in the first of ``$MESA_SHADER_CACHE_DIR``, ``$MESA_GLSL_CACHE_DIR``,
  ``$XDG_CACHE_HOME/mesa_shader_cache`` and ``<the passwd entry's home>/.cache/mesa_shader_cache``
  (not ``$HOME``: Mesa's util/disk_cache_os.c asks getpwuid_r), and where it cannot make that folder
  it prints a line of its own ("Failed to create ... for shader cache (...)---disabling.") and runs
  without a cache. It reads those variables when GL is loaded, so ``mesa_shader_cache`` runs before
  (``app.window.select_platform``, which every command calls before PyOpenGL is imported).

Where a folder cannot be made or written (a read-only HOME or XDG_CACHE_HOME, a home that is a
file), this process keeps that cache in one private temporary folder instead, removed at exit, so
nothing is lost, and says so once per folder, in one line of its own (``redirect``).
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import tempfile

log = logging.getLogger(__name__)

MESA_DIR = "mesa_shader_cache"  # the folder Mesa makes under a cache home
_said: set[str] = set()  # the folders whose redirection was said


def problem(folder: str) -> str | None:
    """Why ``folder`` cannot hold a cache, or None where it can. Nothing is made: the folder, or the
    first folder on the way to it that exists, must be a folder this process can write."""
    p = folder
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    if not os.path.isdir(p):
        return f"{p} is not a folder"
    if os.statvfs(p).f_flag & os.ST_RDONLY:
        return f"{p} is on a read-only file system"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"{p} is not writable"
    return None


@functools.lru_cache(maxsize=1)
def private_folder() -> str:
    """The process's own cache folder, made once and removed at exit."""
    folder = tempfile.mkdtemp(prefix="glshare-cache-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def redirect(folder: str, why: str) -> str:
    """The private folder, for a cache whose ``folder`` cannot be written (``why``); said once per
    folder (Mesa's shaders and pyopencl's binaries under one cache home: one line)."""
    private = private_folder()
    if folder not in _said:
        _said.add(folder)
        log.warning("the cache folder %s cannot be written (%s): caches are kept in %s for this run", folder, why,
                    private)
    return private


def _true(value: str | None) -> bool:
    """Mesa's env_var_as_boolean: 1, true, y, yes (any case) are true."""
    return (value or "").strip().lower() in ("1", "true", "y", "yes")


def mesa_folder() -> tuple[str, str] | None:
    """(the folder Mesa's shader cache goes in, the cache home it names) by Mesa's own order (module
    text); None where Mesa keeps none (MESA_SHADER_CACHE_DISABLE, or no home known)."""
    if _true(os.environ.get("MESA_SHADER_CACHE_DISABLE")):
        return None
    for var in ("MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR"):
        if os.environ.get(var):
            return os.environ[var], os.environ[var]
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, MESA_DIR), xdg
    try:
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None
    if not home:
        return None
    return os.path.join(home, ".cache", MESA_DIR), os.path.join(home, ".cache")


def mesa_shader_cache() -> None:
    """Before GL is loaded: where Mesa could not make its shader cache folder, point it at the
    private one (``MESA_SHADER_CACHE_DIR``), said once, instead of Mesa's own line and no cache."""
    found = mesa_folder()
    if found is None:
        return
    folder, home = found
    why = problem(folder)
    if why is not None:
        os.environ["MESA_SHADER_CACHE_DIR"] = os.path.join(redirect(home, why), MESA_DIR)
