"""Where glshare writes what it measured: every output path is checked before any work starts,
and every file is written one way, which loses nothing.

``-`` means standard output. A path that names a fifo or a device (or a symlink to one) is written
through; a regular file (or a symlink's regular target) is replaced atomically: the bytes go to a
new temporary file made with ``mkstemp`` in the target's own folder (never a fixed name, never
following a symlink), flushed, then renamed over the target; on any failure the temporary file is
removed and the target is left as it was.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Mapping

from app.errors import UsageError

STDOUT = "-"


def is_stdout(path) -> bool:
    return str(path) == STDOUT


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _first_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output(kind: str, path) -> None:
    """Raise UsageError (one line) when ``path`` cannot take the ``kind`` output; create nothing."""
    if path is None or is_stdout(path):
        return
    text = str(path)
    path = Path(path)
    if text.endswith(os.sep) or (path.exists() and path.is_dir()):
        raise UsageError(f"--{kind} {text}: is a folder, not a file")
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists():
        mode = target.stat().st_mode
        if stat.S_ISDIR(mode):
            raise UsageError(f"--{kind} {text}: points to a folder, not a file")
        if not stat.S_ISREG(mode):
            if not os.access(target, os.W_OK):
                raise UsageError(f"--{kind} {text}: cannot be written (no permission)")
            return  # a fifo or a device: written through
    folder = target.parent
    anchor = _first_existing(folder)
    if not anchor.is_dir():
        raise UsageError(f"--{kind} {text}: {anchor} is a file, not a folder")
    if len(target.name.encode()) > _name_max(anchor):
        raise UsageError(f"--{kind} {text}: the file name is longer than this file system allows")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise UsageError(f"--{kind} {text}: cannot write in {anchor} (no permission)")
    if anchor == folder:
        try:  # the honest test: can a file be made there now (a read-only file system says no)
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".glshare-check-")
        except OSError as exc:
            raise UsageError(f"--{kind} {text}: cannot write in {folder}: {exc.strerror}") from None
        os.close(fd)
        os.unlink(probe)


def check_outputs(outputs: Mapping[str, object]) -> None:
    """Check every output (``{kind: path or None}``) and that no two share a path."""
    seen: dict[str, str] = {}
    for kind, path in outputs.items():
        if path is None:
            continue
        check_output(kind, path)
        key = STDOUT if is_stdout(path) else os.path.realpath(os.path.abspath(str(path)))
        if key in seen:
            where = "standard output" if key == STDOUT else str(path)
            raise UsageError(f"--{kind} and --{seen[key]} both write {where}: give each its own path")
        seen[key] = kind


def _mode_for_new() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_bytes(path, data: bytes) -> str:
    """Write ``data`` to ``path`` as the module says; returns where it went (for "wrote ..." lines)."""
    if is_stdout(path):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return "standard output"
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        with open(target, "wb") as f:  # a fifo or a device: written through, never replaced
            f.write(data)
        return str(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _mode_for_new()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:32]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return str(path)


def write_text(path, text: str) -> str:
    return write_bytes(path, text.encode())
