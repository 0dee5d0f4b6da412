"""Kernel and shader source files: reading one (every way it can be missing or wrong is one line
naming the file and the cause), the signature hot reload compares, the line a compiler's log
points at, and a private copy of a source that failed to build.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from app.errors import SourceFileError

MAX_SOURCE_BYTES = 16 * 1024 * 1024  # a kernel or shader larger than this is not a source file

# a compiler's log pointing at a line: clang / PoCL / NVIDIA "<file>:12:7: error", Mesa's GLSL
# "0:12(7): error", NVIDIA's GLSL "0(12) : error"
# "error: <file>:12:7: ..." (PoCL)
_LOG_LINE = (re.compile(r":(\d+):\d+:\s*(?:fatal\s+)?error"), re.compile(r"error:\s*\S+?:(\d+):\d+:"),
             re.compile(r"^\s*\d+[:(](\d+)[):(]"))
# the name a CL compiler gives the source it was handed: PoCL's cache file, NVIDIA's "<kernel>"
_COMPILER_NAME = re.compile(r"(?:\S*/tempfile_\w+\.cl|<kernel>|<source>)(?=:\d+:\d+)")


def shown(path: Path) -> str:
    """The path as messages show it: relative to the working folder when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a fifo, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    return "not a regular file"


def read_source(path: Path, what: str = "source") -> str:
    """The text of a kernel or shader file. Raises SourceFileError (one line: the file and the
    cause) when it is missing, unreadable, not a regular file, too large or not UTF-8 text."""
    name = shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a fifo must not block the open
    except FileNotFoundError:
        target = os.path.realpath(path)
        dangling = os.path.islink(path)
        raise SourceFileError(name, f"missing (a symlink to {target}, which does not exist)" if dangling
                              else f"missing: no such {what} file") from None
    except IsADirectoryError:
        raise SourceFileError(name, "is a folder, not a file") from None
    except PermissionError:
        raise SourceFileError(name, "cannot be read (no permission)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SourceFileError(name, "a symlink loop") from None
        raise SourceFileError(name, f"cannot be opened: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceFileError(name, f"is {_kind(st.st_mode)}")
        if st.st_size > MAX_SOURCE_BYTES:
            raise SourceFileError(name, f"is {st.st_size:,} bytes, more than a {what} file can be "
                                        f"({MAX_SOURCE_BYTES:,})")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        raise SourceFileError(name, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceFileError(name, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, offset "
                                    f"{exc.start})") from None


def signature(path: Path) -> tuple | None:
    """What hot reload compares: (mtime ns, size, inode, device), or None when it cannot be seen."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


def failing_line(log: str, source: str) -> str:
    """``line 12: 'int x = ;'`` for the first line a compiler's log points at, or ""."""
    lines = source.splitlines()
    for entry in log.splitlines():
        for pattern in _LOG_LINE:
            m = pattern.match(entry) if pattern is _LOG_LINE[-1] else pattern.search(entry)
            if m:
                n = int(m.group(1))
                if 1 <= n <= len(lines):
                    return f"line {n}: {lines[n - 1].strip()!r}"
    return ""


def save_failed_copy(path: Path, source: str) -> str:
    """Save ``source`` in a new private folder (mkdtemp: mode 0700, a name no one else has) under
    the file's own name; returns the copy's path, or "" when it could not be saved."""
    try:
        folder = tempfile.mkdtemp(prefix="glshare-failed-build-")
        copy = os.path.join(folder, Path(path).name)
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        return copy
    except OSError:
        return ""


def compiler_log(text: str, path: Path) -> str:
    """A CL build error's text as a log to show: pyopencl's repeated "clBuildProgram failed"
    prefixes dropped, the compiler's name for the source replaced by the file's."""
    out = []
    for line in text.splitlines():
        if line.startswith(("clBuildProgram failed", "Build on <pyopencl", "(options:")):
            continue
        out.append(_COMPILER_NAME.sub(shown(path), line))
    return "\n".join(out).strip()


def capturing_stderr(fn):
    """``fn()`` with what C libraries write to stderr meanwhile captured (a CL compiler's "1 error
    generated.", libX11's "Authorization required"): returns (result, that text on one line)."""
    try:
        saved = os.dup(2)
    except OSError:
        return fn(), ""
    with tempfile.TemporaryFile() as tmp:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        said = tmp.read().decode(errors="replace")
    return result, " ".join(said.split())
