"""Where glshare writes what it measured: every output path is checked before any work starts,
and every file is written one way, which loses nothing.

``-`` means standard output (so does a path naming the file standard output already is, such as
``/dev/stdout``). A path that names a fifo or a device, or a symlink to one, is written through,
never replaced. A regular file (or a symlink's regular target: the symlink stays) is replaced
atomically: the bytes go to a new temporary file made with ``mkstemp`` in the target's own folder
(a unique name, created with O_EXCL so never through a symlink; a user's ``name.tmp`` is never
touched), flushed and synced, then renamed over the target; on any failure the temporary file is
removed and the target is left as it was. Missing folders on the way are created.

``check_outputs`` refuses, with one line (UsageError, exit 2), an output that cannot be written:
a folder (or a path ending in ``/``), a path under a regular file, a name longer than the file
system allows, a folder without write permission or on a read-only file system, a socket, a
symlink loop, two outputs that would write the same file (or both standard output; a
character device such as /dev/null takes any number), ``-`` while standard output is closed, and
an output that is one of the run's inputs (a video, a kernel, a shader: ``inputs``).

Every write loops until all the bytes are taken (a pipe or a terminal may take part of them per
call; a non-blocking one none until it has room) or fails with the count written. A fifo is opened without blocking: a reader has
``FIFO_WAIT_S`` to open it, then the output fails with one line saying so.
"""
from __future__ import annotations

import errno
import fcntl
import os
import select
import stat
import sys
import tempfile
import time
from typing import Iterable, Mapping

from app.errors import OutputError, UsageError

STDOUT = "-"
_MAGIC = ("/proc/", "/dev/fd/", "/dev/stdout", "/dev/stderr")  # links the kernel resolves to open files
_TMP_NAME_BYTES = 32  # of the target's name kept in the temporary file's name
FIFO_WAIT_S = 10.0  # how long a fifo's reader has to open it before the output fails
_FIFO_POLL_S = 0.02


def stdout_open() -> bool:
    """Whether standard output is an open file (``>&-`` closes it)."""
    try:
        os.fstat(1)
    except OSError:
        return False
    return sys.stdout is not None and not getattr(sys.stdout, "_glshare_closed", False)


def guard_standard_streams() -> None:
    """Standard output or error closed at start (``>&-``): /dev/null takes their place, so that
    prints cannot fail and no file opened later gets descriptor 1 or 2; ``stdout_open`` then says
    False and ``-`` is refused as an output."""
    import io

    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            if getattr(sys, name) is not None:
                continue
        except OSError:
            null = os.open(os.devnull, os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        stream = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), line_buffering=True)
        stream._glshare_closed = True
        setattr(sys, name, stream)


def is_stdout(path) -> bool:
    return path is not None and str(path) == STDOUT


def _flag(kind: str) -> str:
    """How an output is named in messages: ``report`` -> ``--report``; labels with a space or in
    capitals (``OUT``, ``the default report``) as given."""
    return kind if (kind.startswith("-") or " " in kind or kind.isupper()) else f"--{kind}"


def _limit(folder: str, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default


def _goes_through_magic(path: str) -> bool:
    """Whether ``path`` or a symlink on its chain names /proc, /dev/fd or /dev/std*: the kernel's
    links to open files, which are written through, never renamed over."""
    p = os.path.abspath(path)
    for _ in range(40):
        if p.startswith(_MAGIC):
            return True
        try:
            link = os.readlink(p)
        except OSError:
            return False
        p = os.path.normpath(os.path.join(os.path.dirname(p), link))
    return False


def _same_file_as_fd(st: os.stat_result, fd: int) -> bool:
    try:
        other = os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


class _Target:
    """What writing to ``path`` means: "stdout", "through" (a fifo, a device, a kernel link to an
    open file) or "replace" (a regular file, existing or new, at ``final``)."""

    def __init__(self, path) -> None:
        self.text = str(path)
        self.how = "replace"
        self.st: os.stat_result | None = None
        self.final = ""
        if is_stdout(path):
            self.how = "stdout"
            return
        try:
            self.st = os.stat(self.text)  # follows symlinks
        except FileNotFoundError:
            self.st = None
        if self.st is not None:
            magic = _goes_through_magic(self.text)
            if stat.S_ISREG(self.st.st_mode) and magic and _same_file_as_fd(self.st, 1):
                self.how = "stdout"  # /dev/stdout while standard output is a file: write to it, never rename
            elif not stat.S_ISREG(self.st.st_mode) or magic:
                self.how = "through"
        if self.how == "replace":
            self.final = os.path.realpath(self.text)  # a symlink's target (existing or not); the link stays

    @property
    def key(self):
        """Identity for "two outputs share a path": the file itself where it exists, else its path."""
        if self.how == "stdout" or (self.st is not None and _same_file_as_fd(self.st, 1)):
            return STDOUT
        if self.st is not None and stat.S_ISCHR(self.st.st_mode):
            return object()  # /dev/null and other character devices take any number of outputs
        if self.st is not None:
            return (self.st.st_dev, self.st.st_ino)
        return self.final


def _first_existing(path: str) -> str:
    p = path
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    return p


def _probe_folder(folder: str) -> str | None:
    """Why no file can be made in ``folder`` now (a read-only file system, no space for an inode), or None."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".glshare-check-")
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(probe)
    return None


def _check_lengths(flag: str, text: str) -> None:
    """Each name on the path within NAME_MAX bytes, the whole within PATH_MAX (of the first folder
    on the path that exists), so that no later call fails with ENAMETOOLONG."""
    full = os.path.abspath(text)
    anchor = _first_existing(os.path.dirname(full))
    name_max = _limit(anchor, "PC_NAME_MAX", 255)
    for part in full.split(os.sep):
        size = len(os.fsencode(part))
        if size > name_max:
            raise UsageError(f"{flag} {text}: the name {part[:24]}... is {size} bytes; this file system "
                             f"allows {name_max}")
    path_max = _limit(anchor, "PC_PATH_MAX", 4096)
    if len(os.fsencode(full)) >= path_max:
        raise UsageError(f"{flag} {text}: the path is {len(os.fsencode(full))} bytes; this file system "
                         f"allows {path_max - 1}")


def _check(kind: str, path) -> _Target:
    flag = _flag(kind)
    text = str(path)
    if text == "":
        raise UsageError(f"{flag}: an empty path; give a file name (or - for standard output)")
    if "\0" in text:
        raise UsageError(f"{flag} {text!r}: a path cannot hold a NUL byte")
    if text.endswith(os.sep) or text.endswith(os.sep + "."):
        raise UsageError(f"{flag} {text}: names a folder; give a file name inside it")
    _check_lengths(flag, text)
    try:
        target = _Target(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{flag} {text}: a symlink loop") from None
        if exc.errno == errno.ENOTDIR:
            anchor = _first_existing(os.path.dirname(os.path.abspath(text)))
            raise UsageError(f"{flag} {text}: {anchor} is a file, not a folder") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise UsageError(f"{flag} {text}: the path is longer than this file system allows") from None
        raise UsageError(f"{flag} {text}: {exc.strerror or exc}") from None
    if target.how == "stdout":
        if not stdout_open():
            raise UsageError(f"{flag} {text}: standard output is closed; give a file name")
        return target
    st = target.st
    if st is not None:
        link = os.path.islink(text)
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{flag} {text}: {'points to' if link else 'is'} a folder, not a file")
        if stat.S_ISSOCK(st.st_mode):
            raise UsageError(f"{flag} {text}: is a socket; glshare writes files, fifos and devices")
        if not os.access(text, os.W_OK):
            raise UsageError(f"{flag} {text}: cannot be written (no permission)")
        if target.how == "through":
            return target  # a fifo or a device: opened and written when the output is ready
    elif os.path.islink(text):
        try:
            os.path.realpath(text, strict=True)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UsageError(f"{flag} {text}: a symlink loop") from None
    final = target.final
    folder = os.path.dirname(final)
    anchor = _first_existing(folder)
    if not os.path.isdir(anchor):
        what = "a file, not a folder" if os.path.isfile(anchor) else "not a folder"
        raise UsageError(f"{flag} {text}: {anchor} is {what}")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {text}: cannot write in {anchor} (no permission)")
    if anchor == folder:  # the honest test: can a file be made there now (a read-only file system says no)
        why = _probe_folder(folder)
        if why:
            raise UsageError(f"{flag} {text}: cannot write in {folder}: {why}")
    elif os.statvfs(anchor).f_flag & os.ST_RDONLY:
        raise UsageError(f"{flag} {text}: cannot make {folder}: {anchor} is on a read-only file system")
    return target


def check_output(kind: str, path) -> None:
    """Raise UsageError (one line) when ``path`` cannot take the ``kind`` output; create nothing.

    ``kind`` names it in the message: ``report`` reads ``--report``; a label with a space or in
    capitals (``OUT``, ``the default report``) is used as it is.
    """
    if path is None:
        return
    _check(kind, path)


def _input_keys(inputs: Iterable[tuple[str, object]]) -> dict[object, str]:
    """{identity: the input's label and path} of the inputs that exist (the file, and its real path)."""
    keys: dict[object, str] = {}
    for label, path in inputs:
        if path is None:
            continue
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        keys[(st.st_dev, st.st_ino)] = f"{label} {path}"
        keys[os.path.realpath(path)] = f"{label} {path}"
    return keys


def check_outputs(outputs: Mapping[str, object], inputs: Iterable[tuple[str, object]] = ()) -> None:
    """Check every output (``{kind: path or None}``), that no two write the same file (or both
    standard output) and that none is one of ``inputs`` ((label, path): a file the run reads);
    raises UsageError with one line."""
    seen: dict[object, tuple[str, str]] = {}
    read = _input_keys(inputs)
    for kind, path in outputs.items():
        if path is None:
            continue
        target = _check(kind, path)
        key = target.key
        if read and target.how != "stdout":
            hit = read.get(key) or read.get(target.final or os.path.realpath(str(path)))
            if hit:
                raise UsageError(f"{_flag(kind)} {path}: is the run's input ({hit}); writing it would replace "
                                 "what the run reads: give another path")
        if key in seen:
            other, other_text = seen[key]
            where = "standard output" if key == STDOUT else (
                str(path) if other_text == str(path) else f"{path} (as {other_text})")
            raise UsageError(f"{_flag(other)} and {_flag(kind)} both write {where}: give each its own path")
        seen[key] = (kind, str(path))


def _mode_for_new() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``: a write may take part of it (a pipe, a terminal, a file reaching
    its size limit) or none yet (EAGAIN: a non-blocking descriptor with no room, waited on until it
    has some). An error says how much was written (``written`` on the OSError)."""
    view = memoryview(data)
    done = 0
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:  # a descriptor another process left non-blocking, full for now: wait for room
            select.select([], [fd], [])
            continue
        except OSError as exc:
            exc.written = done
            raise
        if n <= 0:  # (never for a blocking descriptor; kept so that the loop cannot spin)
            err = OSError(errno.EIO, "the write took no bytes")
            err.written = done
            raise err
        done += n
        view = view[n:]


def _open_fifo(path: str) -> int:
    """Open a fifo for writing without blocking forever: a reader has FIFO_WAIT_S to open it (no
    reader: ENXIO, OSError); then the descriptor blocks again, for the writes."""
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OSError(errno.ENXIO, f"a fifo no reader opened in {FIFO_WAIT_S:g} s") from None
            time.sleep(_FIFO_POLL_S)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def _how_much(exc: OSError, total: int) -> str:
    written = getattr(exc, "written", None)
    return f" after {written:,} of {total:,} bytes" if written else ""


def _temp_prefix(name: str) -> str:
    kept = os.fsencode(name)[:_TMP_NAME_BYTES]
    return "." + os.fsdecode(kept) + "."


def _replace(final: str, data: bytes) -> None:
    folder = os.path.dirname(final) or "."
    os.makedirs(folder, exist_ok=True)
    try:
        old = os.stat(final)
    except FileNotFoundError:
        old = None
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=_temp_prefix(os.path.basename(final)), suffix=".tmp")
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, stat.S_IMODE(old.st_mode) if old is not None else _mode_for_new())
        if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            try:  # root replacing a user's file gives it back to its owner
                os.chown(tmp, old.st_uid, old.st_gid)
            except OSError:
                pass
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself on disk
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def write_bytes(path, data: bytes) -> str:
    """Write ``data`` to ``path`` as the module says; returns where it went (for "wrote ..." lines).

    Raises OutputError (one line) when it cannot; nothing is left behind and a file that was at
    ``path`` is unchanged (a fifo or a device may have taken part of the bytes).
    """
    data = bytes(data)
    try:
        target = _Target(path)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if target.how == "stdout":
        try:  # the stream's buffered text first, then the bytes straight to the descriptor, looping
            sys.stdout.flush()
            _write_all(sys.stdout.fileno(), data)
        except (OSError, ValueError) as exc:
            why = "the reader closed it" if isinstance(exc, BrokenPipeError) else (
                getattr(exc, "strerror", None) or str(exc))
            raise OutputError(f"cannot write standard output: {why}"
                              f"{_how_much(exc, len(data)) if isinstance(exc, OSError) else ''}") from exc
        return "standard output"
    try:
        if target.how == "through":
            if stat.S_ISFIFO(target.st.st_mode):
                fd = _open_fifo(str(path))
            else:
                fd = os.open(str(path), os.O_WRONLY | (os.O_TRUNC if stat.S_ISREG(target.st.st_mode) else 0))
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            return str(path)
        _replace(target.final, data)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}{where}{_how_much(exc, len(data))}") from exc
    return str(path)


def write_text(path, text: str) -> str:
    return write_bytes(path, text.encode())
