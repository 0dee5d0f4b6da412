"""GLSL programs built from ``shaders/``; a compile error quotes the failing source line."""
from __future__ import annotations

import re
from pathlib import Path

from OpenGL import GL

from app.config import SHADERS_DIR
from app.diagnostics import live
from app.errors import ShaderError
from app.gl.objects import _label

# Mesa: "0:12(7): error: ..."; NVIDIA: "0(12) : error C1008: ..."
_LINE = re.compile(r"^\s*\d+[:(](\d+)[):(]")


def _quote_failing_line(log: str, source: str) -> str:
    lines = source.splitlines()
    for entry in log.splitlines():
        m = _LINE.match(entry)
        if m:
            n = int(m.group(1))
            if 1 <= n <= len(lines):
                return f"line {n}: {lines[n - 1].strip()!r}"
    return ""


def _text(log) -> str:
    return log.decode(errors="replace") if isinstance(log, bytes) else str(log or "")


def _compile(kind: int, source: str, path: Path) -> int:
    shader = GL.glCreateShader(kind)
    GL.glShaderSource(shader, source)
    GL.glCompileShader(shader)
    if not int(GL.glGetShaderiv(shader, GL.GL_COMPILE_STATUS)):
        log = _text(GL.glGetShaderInfoLog(shader))
        GL.glDeleteShader(shader)
        quoted = _quote_failing_line(log, source)
        raise ShaderError(f"{path.name} failed to compile{' at ' + quoted if quoted else ''}:\n{log.strip()}",
                          where="glCompileShader")
    return shader


class Program:
    """A linked vertex + fragment program with cached uniform locations."""

    kind = "program"

    def __init__(self, label: str, vertex: str, fragment: str, owner: str = "") -> None:
        self.label, self.owner = label, owner
        vpath, fpath = SHADERS_DIR / vertex, SHADERS_DIR / fragment
        vs = _compile(GL.GL_VERTEX_SHADER, vpath.read_text(), vpath)
        try:
            fs = _compile(GL.GL_FRAGMENT_SHADER, fpath.read_text(), fpath)
        except ShaderError:
            GL.glDeleteShader(vs)
            raise
        program = GL.glCreateProgram()
        GL.glAttachShader(program, vs)
        GL.glAttachShader(program, fs)
        GL.glLinkProgram(program)
        GL.glDeleteShader(vs)
        GL.glDeleteShader(fs)
        if not int(GL.glGetProgramiv(program, GL.GL_LINK_STATUS)):
            log = _text(GL.glGetProgramInfoLog(program)) or "(the driver gave no log)"
            GL.glDeleteProgram(program)
            raise ShaderError(f"{vertex} + {fragment} failed to link:\n{log.strip()}", where="glLinkProgram")
        self.name = int(program)
        self._uniforms: dict[str, int] = {}
        _label("program", self.name, label)
        live.created("gl_program", owner)

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
            live.released("gl_program", self.owner)

    def __repr__(self) -> str:
        return f"<Program {self.label!r} name={self.name}>"
