"""GLSL programs built from ``shaders/`` and rebuilt in place (hot reload).

A file that cannot be used is one line naming it and the cause (app/source_files.py); a compile
error quotes the failing source line, carries the driver's log and a copy of the source saved
in a private temporary folder. ``reload()`` compiles and links the files as they are now and,
on success, swaps the new program in under the same object (callers ``use()`` it and look up
uniforms through it each frame); on failure the last good program stays in use.
"""
from __future__ import annotations

import logging
import weakref
from pathlib import Path

from app.config import SHADERS_DIR
from app.diagnostics import live
from app.errors import ShaderBuildError
from app.gl import api as GL
from app.gl.objects import _label
from app.source_files import failing_line, read_source, save_failed_copy, shown, signature

log = logging.getLogger(__name__)

_LIVE: "weakref.WeakSet[Program]" = weakref.WeakSet()


def _text(log) -> str:
    return log.decode(errors="replace") if isinstance(log, bytes) else str(log or "")


def _compile(kind: int, source: str, path: Path) -> int:
    shader = GL.glCreateShader(kind)
    GL.glShaderSource(shader, source)
    GL.glCompileShader(shader)
    if not int(GL.glGetShaderiv(shader, GL.GL_COMPILE_STATUS)):
        log_text = _text(GL.glGetShaderInfoLog(shader)) or "(the driver gave no log)"
        GL.glDeleteShader(shader)
        raise ShaderBuildError(shown(path), log_text, line=failing_line(log_text, source),
                               saved_copy=save_failed_copy(path, source), where="glCompileShader")
    return shader


class Program:
    """A linked vertex + fragment program with cached uniform locations."""

    kind = "program"

    def __init__(self, label: str, vertex: str, fragment: str, owner: str = "") -> None:
        self.label, self.owner = label, owner
        self.paths = (SHADERS_DIR / vertex, SHADERS_DIR / fragment)
        self.generation = 0  # goes up at each successful reload
        self.name = 0
        self._uniforms: dict[str, int] = {}
        self.name, self.signatures = self._build()
        live.created("gl_program", owner)
        _LIVE.add(self)

    @property
    def sources(self) -> tuple[Path, ...]:
        """The files this program is built from (what hot reload watches)."""
        return self.paths

    def _build(self) -> tuple[int, dict]:
        vpath, fpath = self.paths
        signatures = {p: signature(p) for p in self.paths}  # before the reads: a later change is seen next time
        vsource, fsource = read_source(vpath, "shader"), read_source(fpath, "shader")
        vs = _compile(GL.GL_VERTEX_SHADER, vsource, vpath)
        try:
            fs = _compile(GL.GL_FRAGMENT_SHADER, fsource, fpath)
        except ShaderBuildError:
            GL.glDeleteShader(vs)
            raise
        program = GL.glCreateProgram()
        GL.glAttachShader(program, vs)
        GL.glAttachShader(program, fs)
        GL.glLinkProgram(program)
        GL.glDeleteShader(vs)
        GL.glDeleteShader(fs)
        if not int(GL.glGetProgramiv(program, GL.GL_LINK_STATUS)):
            log_text = _text(GL.glGetProgramInfoLog(program)) or "(the driver gave no log)"
            GL.glDeleteProgram(program)
            raise ShaderBuildError(f"{shown(vpath)} + {shown(fpath)}", log_text, where="glLinkProgram")
        _label("program", int(program), self.label)
        return int(program), signatures

    def reload(self) -> None:
        """Compile and link the files as they are now and use the result from the next draw on.
        Raises (SourceFileError, ShaderBuildError) and keeps the last good program on failure."""
        if not self.name:
            return
        name, signatures = self._build()
        old, self.name = self.name, name
        GL.glDeleteProgram(old)
        self._uniforms.clear()
        self.signatures = signatures
        self.generation += 1
        log.info("rebuilt %s (generation %d)", self.label, self.generation)

    def uniform(self, name: str) -> int:
        loc = self._uniforms.get(name)
        if loc is None:
            loc = self._uniforms[name] = GL.glGetUniformLocation(self.name, name)
        return loc

    def use(self) -> None:
        GL.glUseProgram(self.name)

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            GL.glDeleteProgram(name)
            _LIVE.discard(self)
            live.released("gl_program", self.owner)

    def __repr__(self) -> str:
        return f"<Program {self.label!r} name={self.name}>"


def live_programs() -> list[Program]:
    """Every program linked and not released (hot reload's list)."""
    return [p for p in list(_LIVE) if p.name]
