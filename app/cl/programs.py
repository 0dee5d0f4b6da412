"""Build OpenCL programs from ``kernels/``; a failed build reports its log, options and a saved copy."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pyopencl as cl

from app.config import KERNELS_DIR
from app.diagnostics import live
from app.errors import KernelBuildError


class KernelProgram:
    """A built program and its kernels (``program.kernel("name")`` is cached)."""

    def __init__(self, context: cl.Context, filename: str, options: list[str] | None = None, owner: str = "") -> None:
        self.path = KERNELS_DIR / filename
        self.options = list(options or []) + [f"-I{KERNELS_DIR}"]
        self.owner = owner
        self.label = f"program {filename}"
        source = self.path.read_text()
        try:
            self.program = cl.Program(context, source).build(options=self.options)
        except cl.RuntimeError as exc:
            saved = Path(tempfile.gettempdir()) / f"glshare-failed-{self.path.name}"
            saved.write_text(source)
            raise KernelBuildError(source_path=str(self.path), options=self.options, log=str(exc),
                                   saved_copy=str(saved)) from exc
        self._kernels: dict[str, cl.Kernel] = {}
        live.created("cl_program", owner)

    def kernel(self, name: str) -> cl.Kernel:
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = cl.Kernel(self.program, name)
        return k

    def release(self) -> None:
        program, self.program = self.program, None
        if program is not None:
            self._kernels.clear()
            live.released("cl_program", self.owner)

    def __repr__(self) -> str:
        return f"<KernelProgram {self.path.name}>"
