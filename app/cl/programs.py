"""Build OpenCL programs from ``kernels/`` and rebuild them in place (hot reload).

A file that cannot be used is one line naming it and the cause (app/source_files.py); a failed
build reports the failing line, the compiler's log, its options and a copy of the source saved
in a private temporary folder; a kernel name the program does not have is CL_INVALID_KERNEL_NAME
with the names it has. ``reload()`` rebuilds from the file as it is now: on success every kernel
handed out is re-created on the new program with the arguments that had been set on it (scenes
set most arguments once, at build); on failure the last good program stays in use.
"""
from __future__ import annotations

import functools
import logging
import os
import shutil
import tempfile
import weakref
from pathlib import Path

import pyopencl as cl

from app.caches import redirect
from app.cl.ext import NDRangeCall, set_kernel_arg
from app.config import KERNELS_DIR
from app.diagnostics import live
from app.errors import ClError, KernelBuildFailed, KernelNameError
from app.source_files import (
    capturing_stderr,
    compiler_log,
    failing_line,
    read_source,
    save_failed_copy,
    shown,
    signature,
)

log = logging.getLogger(__name__)
CL_INVALID_KERNEL_NAME = -46

_LIVE: "weakref.WeakSet[KernelProgram]" = weakref.WeakSet()


class RecordingKernel(cl.Kernel):
    """A kernel that remembers the arguments set on it with ``set_arg`` / ``set_args``, so that a
    rebuilt program's kernel can be given the same ones."""

    def __init__(self, program: cl.Program, name: str) -> None:
        super().__init__(program, name)
        self.args: dict[int, object] = {}
        self._ptr = self.int_ptr
        self._enqueue = NDRangeCall()
        self._buffers: dict = {}  # argument index -> (C value, its reference) of a scalar argument

    def set_arg(self, index: int, value) -> None:
        """A numpy scalar or a memory object goes straight to clSetKernelArg (app/cl/ext.py: a
        frame sets its changing scalars this way, into a C buffer kept per argument); anything
        else through pyopencl."""
        if not set_kernel_arg(self._ptr, index, value, self._buffers):
            super().set_arg(index, value)
        self.args[index] = value

    def enqueue(self, queue: cl.CommandQueue, global_size, local_size=None, wait_for=None,
                event: bool = True) -> cl.Event | None:
        """clEnqueueNDRangeKernel through a prepared call (``NDRangeCall``); the command's event
        (``event=False``: none made, None)."""
        return self._enqueue(queue, self, global_size, local_size, wait_for, event)

    def set_args(self, *values) -> None:
        super().set_args(*values)
        self.args = dict(enumerate(values))


def _cache_folder() -> str:
    """The folder pyopencl keeps built binaries in (pyopencl/cache.py: $XDG_CACHE_HOME/pyopencl,
    else the platform's user cache folder)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "pyopencl")
    import platformdirs

    return platformdirs.user_cache_dir("pyopencl", "pyopencl")


@functools.lru_cache(maxsize=1)
def usable_cache() -> str:
    """Make sure pyopencl (its build cache) and pytools (pyopencl's invoker cache, made at the
    first kernel) have a cache folder they can write: where theirs cannot be made or written (a
    read-only HOME or XDG_CACHE_HOME), XDG_CACHE_HOME is pointed at a private temporary folder
    for this process, removed at exit, and that is said once. Returns the folder used. Without
    this both fail with tracebacks of their own (pyopencl: a KeyError in its error path)."""
    folder = _cache_folder()
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".glshare-check-")
        os.close(fd)
        os.unlink(probe)
        return folder
    except OSError as exc:
        private = redirect(os.path.dirname(folder), exc.strerror or str(exc))  # (app/caches.py: said once)
        os.environ["XDG_CACHE_HOME"] = private
        return os.path.join(private, "pyopencl")


def kernel_names(program: cl.Program) -> list[str]:
    try:
        return sorted(n for n in program.get_info(cl.program_info.KERNEL_NAMES).split(";") if n)
    except cl.Error:
        return []


class KernelProgram:
    """A built program and its kernels (``program.kernel("name")`` is cached)."""

    def __init__(self, context: cl.Context, filename: str, options: list[str] | None = None, owner: str = "") -> None:
        self.context = context
        self.path = KERNELS_DIR / filename
        self.options = list(options or []) + [f"-I{KERNELS_DIR}"]
        self.owner = owner
        self.label = f"program {filename}"
        self.generation = 0  # goes up at each successful reload
        self.program = None
        self._kernels: dict[tuple[str, int], RecordingKernel] = {}  # (name, copy) -> kernel
        self._failed_copy = ""  # the copy of the source of the last failed build, if any
        usable_cache()  # before the first build and the first kernel (pyopencl's and pytools' caches)
        self.program, self.signatures = self._build()
        live.created("cl_program", owner)
        _LIVE.add(self)

    @property
    def sources(self) -> tuple[Path, ...]:
        """The files this program is built from (what hot reload watches)."""
        return (self.path,)

    def _build(self) -> tuple[cl.Program, dict]:
        signatures = {self.path: signature(self.path)}  # before the read: a change after it is seen next time
        source = read_source(self.path, "kernel")
        said = []

        def build():
            try:
                return cl.Program(self.context, source).build(options=self.options)
            except cl.Error as exc:
                said.append(exc)
                return None

        program, printed = capturing_stderr(build)  # PoCL's compiler prints "1 error generated." itself
        self._drop_failed_copy()  # the last failed build's copy: this build supersedes it
        if program is not None:
            return program, signatures
        text = compiler_log(str(said[0]), self.path) + (f"\n{printed}" if printed else "")
        self._failed_copy = save_failed_copy(self.path, source)
        raise KernelBuildFailed(source_path=shown(self.path), options=self.options, log=text,
                                saved_copy=self._failed_copy, line=failing_line(text, source))

    def _drop_failed_copy(self) -> None:
        """Remove the private folder of the last failed build's copy (save_failed_copy made it), so
        that an edit storm of failed rebuilds leaves one copy per program, the latest."""
        copy, self._failed_copy = self._failed_copy, ""
        folder = os.path.dirname(copy)
        if copy and os.path.basename(folder).startswith("glshare-failed-build-"):
            shutil.rmtree(folder, ignore_errors=True)

    def _make_kernel(self, program: cl.Program, name: str) -> RecordingKernel:
        try:
            return RecordingKernel(program, name)
        except cl.Error as exc:
            if getattr(exc, "code", None) == CL_INVALID_KERNEL_NAME:
                raise KernelNameError(shown(self.path), name, kernel_names(program)) from None
            raise ClError.from_pyopencl(exc, f"clCreateKernel {name} ({shown(self.path)})") from exc

    def kernel(self, name: str, copy: int = 0) -> RecordingKernel:
        """Kernel ``name`` of the program now; ``copy`` > 0 another kernel object of the same name, with
        arguments of its own (a scene keeps one per copy of its shared objects, each with its memory
        object set once, instead of setting it again on one kernel every frame)."""
        key = (name, copy)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = self._make_kernel(self.program, name)
        return k

    def reload(self) -> None:
        """Rebuild from the file as it is now and re-create the kernels handed out, with their
        arguments. Raises (SourceFileError, KernelBuildFailed, KernelNameError, ClError) and keeps
        the last good program when the new source cannot be used."""
        if self.program is None:
            return
        program, signatures = self._build()
        kernels = {}
        for key, old in self._kernels.items():
            name = key[0]
            k = self._make_kernel(program, name)
            for index, value in old.args.items():
                try:
                    k.set_arg(index, value)
                except cl.Error as exc:
                    raise ClError.from_pyopencl(exc, f"reload {shown(self.path)}: argument {index} of {name}") from exc
            kernels[key] = k
        self.program, self._kernels, self.signatures = program, kernels, signatures
        self.generation += 1
        log.info("rebuilt %s (generation %d)", shown(self.path), self.generation)

    def release(self) -> None:
        program, self.program = self.program, None
        if program is not None:
            self._kernels.clear()
            _LIVE.discard(self)
            live.released("cl_program", self.owner)

    def __repr__(self) -> str:
        return f"<KernelProgram {self.path.name}>"


def live_programs() -> list[KernelProgram]:
    """Every program built and not released (hot reload's list)."""
    return [p for p in list(_LIVE) if p.program is not None]
