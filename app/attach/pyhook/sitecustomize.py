"""glshare attach's Python site hook: the file and line of a Python program's pyopencl and PyOpenGL
calls, written as "site" records (app/attach/wire.py) just before each call reaches an entry
point the CL layer or the GL library records.

``glshare attach`` puts this folder first on PYTHONPATH, so Python imports this module at start-up
(``site``'s sitecustomize). It takes its folder off ``sys.path`` again (the program imports what
it would without attach), runs the sitecustomize that would have run without it (the next one on
``sys.path``, if any), and, only where ``GLSHARE_ATTACH_FD`` is set, watches two imports: once
``pyopencl``, ``OpenGL.GL``, ``OpenGL.GLUT`` or ``glfw`` is imported, the functions listed below are
replaced in their module (or class) by a wrapper that writes one record and calls the original
with the same arguments, returning what it returns (raising what it raises). The record names the
first frame outside pyopencl, PyOpenGL, glfw and this file: the program's own line. A program that
imports none of them pays nothing. Functions the program bound before the import finished (none:
``from OpenGL.GL import *`` runs after the module's body) have no site of the hook's. Calls made
holding the GIL (pyopencl's objects made in C, its ``GLBuffer``... constructors among them) get the
program's line from the libraries themselves (``py``, app/native/attach/pysite.h), which a model
prefers to this hook's site; the calls ctypes makes (PyOpenGL, glfw) let the GIL go and keep this
hook's.

It imports nothing of glshare (it runs inside another program) and writes with one ``os.write``
per record of less than PIPE_BUF bytes (atomic on the pipe).
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
FD_ENV = "GLSHARE_ATTACH_FD"  # app/attach/wire.py's name (this file imports nothing of glshare)
MAX_LINE = 4096

# module -> ((owner, names)): the functions whose calls reach a recorded entry point; owner "" is
# the module itself, else a class of it
WATCHED = {
    "pyopencl": (("", ("enqueue_acquire_gl_objects", "enqueue_release_gl_objects", "enqueue_nd_range_kernel",
                       "enqueue_copy", "enqueue_fill_buffer", "enqueue_fill_image", "enqueue_map_buffer",
                       "enqueue_map_image", "enqueue_barrier", "enqueue_marker", "wait_for_events")),
                 ("Kernel", ("__call__",)), ("CommandQueue", ("finish", "flush"))),
    "OpenGL.GL": (("", ("glDrawArrays", "glDrawElements", "glDrawArraysInstanced", "glDrawElementsInstanced",
                        "glDrawRangeElements", "glBufferData", "glBufferSubData", "glTexImage2D", "glTexSubImage2D",
                        "glTexImage3D", "glTexSubImage3D", "glMapBuffer", "glMapBufferRange", "glUnmapBuffer",
                        "glFinish", "glFlush", "glFenceSync", "glClientWaitSync", "glWaitSync", "glDeleteSync",
                        "glDeleteBuffers", "glDeleteTextures", "glDeleteRenderbuffers")),),
    "OpenGL.GLUT": (("", ("glutSwapBuffers",)),),
    "glfw": (("", ("swap_buffers",)),),
}
_library_dirs: tuple[str, ...] = (_HERE + os.sep,)  # frames inside these are not the program's
# code object -> None for a library's, else its record's '"file":..,' and ',"func":..}' pieces; emptied
# where a library folder joins (an answer may change) and past CODES (generated code, ever new)
_codes: dict = {}
CODES = 4096


def _library_dir(module) -> None:
    """The folder of the module's top package (OpenGL.GL: OpenGL's) joins the library folders."""
    global _library_dirs
    top = sys.modules.get(module.__name__.split(".")[0])
    path = getattr(top, "__file__", None)
    if path:
        folder = os.path.dirname(os.path.abspath(path)) + os.sep
        if folder not in _library_dirs:
            _library_dirs += (folder,)
            _codes.clear()


def _channel(text: str) -> int | None:
    """A private duplicate of glshare's channel where ``text`` ("FD:DEV:INO", wire.channel_text)
    names it: FD a socket or FIFO with that device and inode (a close_fds descendant may have the
    number on a file of its own: it gets no record); None otherwise. The duplicate is
    non-inheritable, at 200 or above like the C libraries' (app/native/attach/channel.h)."""
    import fcntl
    import stat

    try:
        fd, dev, ino = (int(part) for part in text.split(":"))
        st = os.fstat(fd)
    except (ValueError, OSError):
        return None
    if not (stat.S_ISSOCK(st.st_mode) or stat.S_ISFIFO(st.st_mode)) or (st.st_dev, st.st_ino) != (dev, ino):
        return None
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 200)
    except OSError:
        return None


def _pieces(code):
    """The code object's cached answer (``_codes``)."""
    if code.co_filename.startswith(_library_dirs):
        found = None
    else:
        found = (f'"file":{json.dumps(code.co_filename)[: MAX_LINE // 2]},"line":',
                 f',"func":{json.dumps(code.co_name)}}}\n')
    if len(_codes) >= CODES:
        _codes.clear()
    _codes[code] = found
    return found


def _writer(fd: int):
    # the process's and each thread's id, read once (a system call each): a forked child reads its own
    ids = {"head": f'{{"k":"site","src":"py","pid":{os.getpid()},"t":'}
    ids["tid"] = threading.local()

    def forked() -> None:
        ids["head"] = f'{{"k":"site","src":"py","pid":{os.getpid()},"t":'
        ids["tid"] = threading.local()

    os.register_at_fork(after_in_child=forked)
    missing = object()

    def site() -> None:
        f = sys._getframe(2)
        while f is not None:
            pieces = _codes.get(f.f_code, missing)
            if pieces is missing:
                pieces = _pieces(f.f_code)
            if pieces is not None:
                break
            f = f.f_back
        if f is None:
            return
        here = ids["tid"]
        tid = getattr(here, "tid", None)
        if tid is None:
            tid = here.tid = f',"tid":{threading.get_native_id()},'
        line = f'{ids["head"]}{time.monotonic_ns()}{tid}{pieces[0]}{f.f_lineno}{pieces[1]}'
        try:
            os.write(fd, line.encode())
        except OSError:
            pass  # glshare is gone: the program goes on unrecorded

    return site


def _wrap(fn, site):
    @functools.wraps(fn)
    def recorded(*args, **kwargs):
        site()
        return fn(*args, **kwargs)

    recorded.__glshare_original__ = fn
    return recorded


def _patch(module, site) -> None:
    _library_dir(module)
    for owner_name, names in WATCHED.get(module.__name__, ()):
        owner = getattr(module, owner_name, None) if owner_name else module
        if owner is None:
            continue
        for name in names:
            fn = getattr(owner, name, None)
            if fn is None or hasattr(fn, "__glshare_original__"):
                continue
            try:
                setattr(owner, name, _wrap(fn, site))
            except (AttributeError, TypeError):
                pass  # a class that takes no new attributes: its calls keep the return address


class _Finder:
    """Finds nothing itself: for a watched module, the spec the other finders give, its loader's
    ``exec_module`` followed by ``_patch``."""

    def __init__(self, site) -> None:
        self.site = site
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name not in WATCHED or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        run = spec.loader.exec_module
        site = self.site

        def exec_module(module):
            run(module)
            _patch(module, site)

        spec.loader.exec_module = exec_module  # this module's loader object only
        return spec


def _chain() -> None:
    """Run the sitecustomize Python would have run without this one (the next on sys.path)."""
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    sys.path[:] = rest
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _install() -> None:
    _chain()
    fd = _channel(os.environ.get(FD_ENV, ""))
    if fd is None:
        return
    site = _writer(fd)
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is not None:  # imported before this ran (a chained sitecustomize)
            _patch(module, site)
    sys.meta_path.insert(0, _Finder(site))


_install()
