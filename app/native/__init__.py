"""glshare's native piece: ``stamps.c``, a frame's time stamps read in batches, one call each: the CL
profiling stamps of many events (``app.cl.ext.EventInfo``) and the GL timestamp queries of many timed
passes (``app.gl.timer.GlTimer``); and the frame's hand-over, its foreign calls prepared once and made
in one call (``app.native.calls``, the scheduler's native frame).

Built by ``python -m app.native build`` (``make setup`` runs it) into ``_stamps.so`` beside the
source, with the C compiler ``cc`` (or ``$CC``); it links against nothing (the OpenCL entry point is
handed in), so it loads on any machine of the same architecture. Where it is missing, stale (built from another stamps.c, or of
another version) or turned off (``GLSHARE_NATIVE=0``), the stamps are read through ctypes call by call, as
before, and ``reason()`` says why: ``glshare info`` shows it.
"""
from __future__ import annotations

import ctypes
import os
import zlib
from functools import lru_cache

from app.native import calls  # (it imports this package: only its functions use it)

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(_HERE, "stamps.c")  # (os.path, not pathlib: this is imported on glshare's start-up path)
_NAME = "_stamps.so"
LIBRARY = os.path.join(_HERE, _NAME)
VERSION = 3  # GLSHARE_STAMPS_VERSION in stamps.c: bumped with any change of what the library does
CFLAGS = ("-O2", "-shared", "-fPIC", "-std=c99", "-Wall")


class NativeUnavailable(Exception):
    """Why the native library is not used (one line)."""


def compiler() -> list[str] | None:
    """The C compiler's command: $CC (split as a shell would: "ccache gcc"), else cc, gcc or clang;
    None where none is found on PATH."""
    import shlex  # start-up: build-time only, not on glshare's start-up path
    import shutil  # start-up: build-time only

    if os.environ.get("CC", "").strip():
        cmd = shlex.split(os.environ["CC"])
        return cmd if shutil.which(cmd[0]) else None
    found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    return [found] if found else None


def source_crc() -> int:
    """CRC-32 of stamps.c, compiled into the library (``glshare_stamps_source``): a library built
    from other source is stale, whatever the files' times (a copy to another machine changes them)."""
    try:
        with open(SOURCE, "rb") as f:
            return zlib.crc32(f.read())
    except OSError as exc:  # an install without the source beside the library: not checked, not used
        raise NativeUnavailable(f"stamps.c cannot be read: {exc.strerror}") from None


def _built_from(lib: ctypes.CDLL) -> int:
    fn = lib.glshare_stamps_source
    fn.restype = ctypes.c_uint32
    return fn()


def up_to_date() -> bool:
    if not os.path.exists(LIBRARY):
        return False
    try:
        return _built_from(ctypes.CDLL(LIBRARY)) == source_crc()
    except (OSError, AttributeError):
        return False


def build(force: bool = False) -> str:
    """Compile ``stamps.c`` (into a temporary file, moved into place: a failed build leaves the
    previous library, or none). Returns what was done; raises NativeUnavailable when it cannot. A
    process that loaded the library keeps the one it loaded (the dynamic loader hands back the same
    object for the same path): a new process loads the rebuilt one."""
    if not force and up_to_date():
        os.utime(LIBRARY)  # newer than its sources for make, which asked
        return f"{_NAME} is up to date"
    import subprocess  # start-up: build-time only
    import tempfile  # start-up: build-time only

    cc = compiler()
    if cc is None:
        raise NativeUnavailable("no C compiler (cc, gcc or clang on PATH, or $CC)")
    name = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cc))
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=_HERE)
    os.close(fd)
    try:
        try:
            done = subprocess.run([*cc, *CFLAGS, f"-DGLSHARE_STAMPS_SOURCE={source_crc()}u", "-o", tmp, SOURCE],
                                  capture_output=True, text=True)
        except OSError as exc:
            raise NativeUnavailable(f"{name} could not run: {exc.strerror or exc}") from None
        if done.returncode:
            first = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
            raise NativeUnavailable(f"{name} failed on stamps.c: {first}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, LIBRARY)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    load.cache_clear()
    return f"built {_NAME} with {name}"


ATTACH_DIR = os.path.join(_HERE, "attach")  # glshare attach's libraries: one lib<stem>.so per <stem>.c
ATTACH_CFLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-pthread")


def attach_library(stem: str) -> str:
    """The path of the attach library built from ``app/native/attach/<stem>.c``."""
    return os.path.join(ATTACH_DIR, f"lib{stem}.so")


def build_attach(force: bool = False) -> list[str]:
    """Compile each ``app/native/attach/*.c`` into ``lib<stem>.so`` beside it (a library newer than
    its source and the folder's headers is kept unless ``force``). Unlike ``_stamps.so`` these are loaded into another
    program (``glshare attach``), never into glshare: they may use the system's CL headers and libdl.
    Returns one line per library; raises NativeUnavailable where one cannot be built."""
    import glob
    import subprocess  # start-up: build-time only

    done_lines = []
    headers = [os.path.getmtime(h) for h in glob.glob(os.path.join(ATTACH_DIR, "*.h"))]  # included by each .c
    for src in sorted(glob.glob(os.path.join(ATTACH_DIR, "*.c"))):
        stem = os.path.splitext(os.path.basename(src))[0]
        out = attach_library(stem)
        if not force and os.path.exists(out) and os.path.getmtime(out) >= max([os.path.getmtime(src), *headers]):
            done_lines.append(f"lib{stem}.so is up to date")
            continue
        cc = compiler()
        if cc is None:
            raise NativeUnavailable("no C compiler (cc, gcc or clang on PATH, or $CC)")
        tmp = out + ".tmp"
        try:
            done = subprocess.run([*cc, *ATTACH_CFLAGS, "-o", tmp, src, "-ldl"], capture_output=True, text=True)
        except OSError as exc:
            raise NativeUnavailable(f"{cc[0]} could not run: {exc.strerror or exc}") from None
        if done.returncode:
            first = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise NativeUnavailable(f"{os.path.basename(cc[0])} failed on attach/{stem}.c: {first}")
        os.replace(tmp, out)
        done_lines.append(f"built lib{stem}.so")
    return done_lines


@lru_cache(maxsize=1)
def load() -> ctypes.CDLL:
    """The loaded library, its calls typed; raises NativeUnavailable with the reason otherwise."""
    if os.environ.get("GLSHARE_NATIVE", "1") == "0":
        raise NativeUnavailable("turned off (GLSHARE_NATIVE=0)")
    if not os.path.exists(LIBRARY):
        raise NativeUnavailable(f"{_NAME} is not built (make setup, or python -m app.native build)")
    try:
        lib = ctypes.CDLL(LIBRARY)
        built_from = _built_from(lib)
    except (OSError, AttributeError) as exc:
        raise NativeUnavailable(f"{_NAME} does not load: {exc}") from None
    if built_from != source_crc():
        raise NativeUnavailable(f"{_NAME} was built from another stamps.c (make setup rebuilds it)")
    if lib.glshare_stamps_version() != VERSION:
        raise NativeUnavailable(f"{_NAME} is version {lib.glshare_stamps_version()}, glshare needs {VERSION} "
                                "(make setup rebuilds it)")
    vp = ctypes.c_void_p
    fn = lib.glshare_read_stamps
    fn.restype = ctypes.c_int32
    fn.argtypes = [vp, vp, ctypes.c_int32, ctypes.c_int32, vp, vp]
    fn = lib.glshare_read_query_pairs
    fn.restype = ctypes.c_int32
    fn.argtypes = [vp, vp, vp, ctypes.c_int32, vp]
    fn = lib.glshare_run_calls
    fn.restype = ctypes.c_int32
    fn.argtypes = [vp, ctypes.c_int32, ctypes.c_int32, vp, vp]
    return lib


def reason() -> str:
    """"" where the native stamps are used, else why not."""
    try:
        load()
    except NativeUnavailable as exc:
        return str(exc)
    return ""


def describe() -> str:
    why = reason()
    if why:
        return f"CL profiling and GL timer stamps read through ctypes call by call, the frame's hand-over " \
               f"in Python: {why}"
    why_not_calls = calls.reason()
    return (f"CL profiling and GL timer stamps read in C, a batch per call ({_NAME}); the steady frame's "
            f"hand-over " + (f"in Python: {why_not_calls}" if why_not_calls else "made in one native call where its pieces prepare it"))
