"""GL buffers, textures, vertex arrays and pixel buffers: labelled, counted, ``release()`` idempotent.

No GL call runs in ``__del__``: the app releases in reverse build order while the context is current.
"""
from __future__ import annotations

import ctypes

import numpy as np
from OpenGL import GL

from app.diagnostics import live

GL_OBJECT_LABEL_TYPES = {"buffer": 0x82E0, "texture": GL.GL_TEXTURE, "vertex_array": 0x8074,
                         "program": 0x82E2, "framebuffer": GL.GL_FRAMEBUFFER}


def _label(kind: str, name: int, label: str) -> None:
    """glObjectLabel where GL 4.3 / KHR_debug provides it (shows in RenderDoc, apitrace)."""
    try:
        if bool(GL.glObjectLabel):
            raw = label.encode()[:255]
            GL.glObjectLabel(GL_OBJECT_LABEL_TYPES[kind], name, len(raw), raw)
    except Exception:  # noqa: BLE001 - labels are a debugging aid, never a failure
        GL.glGetError()


class GlBuffer:
    """A GL buffer object of ``nbytes`` bytes."""

    kind = "buffer"

    def __init__(self, label: str, nbytes: int, *, target: int = GL.GL_ARRAY_BUFFER,
                 usage: int = GL.GL_DYNAMIC_DRAW, data: np.ndarray | None = None, owner: str = "") -> None:
        self.label, self.nbytes, self.target, self.owner = label, int(nbytes), target, owner
        self.name = int(GL.glGenBuffers(1))
        GL.glBindBuffer(target, self.name)
        if data is not None:
            assert data.nbytes == self.nbytes, (data.nbytes, self.nbytes)
            GL.glBufferData(target, self.nbytes, data, usage)
        else:
            GL.glBufferData(target, self.nbytes, None, usage)
        GL.glBindBuffer(target, 0)
        _label("buffer", self.name, label)
        live.created("gl_buffer", owner)

    @classmethod
    def wrap(cls, label: str, name: int, nbytes: int, *, target: int = GL.GL_ARRAY_BUFFER, owner: str = "") -> "GlBuffer":
        """Adopt an existing buffer name (for example one backed by imported memory)."""
        self = cls.__new__(cls)
        self.label, self.nbytes, self.target, self.owner, self.name = label, int(nbytes), target, owner, int(name)
        _label("buffer", self.name, label)
        live.created("gl_buffer", owner)
        return self

    def upload(self, data: np.ndarray, offset: int = 0) -> None:
        GL.glBindBuffer(self.target, self.name)
        GL.glBufferSubData(self.target, offset, data.nbytes, data)
        GL.glBindBuffer(self.target, 0)

    def read(self, dtype=np.float32) -> np.ndarray:
        out = np.empty(self.nbytes // np.dtype(dtype).itemsize, dtype)
        GL.glBindBuffer(self.target, self.name)
        GL.glGetBufferSubData(self.target, 0, self.nbytes, out.ctypes.data_as(ctypes.c_void_p))
        GL.glBindBuffer(self.target, 0)
        return out

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            GL.glDeleteBuffers(1, [name])
            live.released("gl_buffer", self.owner)

    def __repr__(self) -> str:
        return f"<GlBuffer {self.label!r} name={self.name} {self.nbytes} B>"


class GlTexture:
    """A 2D texture with immutable-size storage, nearest filtering (1:1 pixel comparisons)."""

    kind = "texture"

    def __init__(self, label: str, width: int, height: int, *, internal_format: int = GL.GL_RGBA8,
                 fmt: int = GL.GL_RGBA, dtype: int = GL.GL_UNSIGNED_BYTE, owner: str = "") -> None:
        self.label, self.width, self.height, self.owner = label, int(width), int(height), owner
        self.internal_format, self.format, self.dtype = internal_format, fmt, dtype
        self.target = GL.GL_TEXTURE_2D
        self.name = int(GL.glGenTextures(1))
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.name)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MIN_FILTER, GL.GL_NEAREST)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAG_FILTER, GL.GL_NEAREST)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_WRAP_S, GL.GL_CLAMP_TO_EDGE)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_WRAP_T, GL.GL_CLAMP_TO_EDGE)
        GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, internal_format, self.width, self.height, 0, fmt, dtype, None)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        _label("texture", self.name, label)
        live.created("gl_texture", owner)

    @property
    def bytes_per_pixel(self) -> int:
        channels = {GL.GL_RGBA: 4, GL.GL_RG: 2, GL.GL_RED: 1, GL.GL_RG_INTEGER: 2, GL.GL_RED_INTEGER: 1,
                    GL.GL_RGBA_INTEGER: 4}[self.format]
        size = {GL.GL_UNSIGNED_BYTE: 1, GL.GL_UNSIGNED_SHORT: 2, GL.GL_FLOAT: 4}[self.dtype]
        return channels * size

    @property
    def nbytes(self) -> int:
        return self.width * self.height * self.bytes_per_pixel

    def upload(self, data: np.ndarray) -> None:
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.name)
        GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
        GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, self.width, self.height, self.format, self.dtype, data)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)

    def read(self) -> np.ndarray:
        """Texel rows as stored (row 0 first), shape H x W x channels."""
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.name)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        np_dtype = {GL.GL_UNSIGNED_BYTE: np.uint8, GL.GL_UNSIGNED_SHORT: np.uint16, GL.GL_FLOAT: np.float32}[self.dtype]
        channels = self.bytes_per_pixel // np.dtype(np_dtype).itemsize
        out = np.empty((self.height, self.width, channels), np_dtype)
        GL.glGetTexImage(GL.GL_TEXTURE_2D, 0, self.format, self.dtype, out.ctypes.data_as(ctypes.c_void_p))
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        return out

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            GL.glDeleteTextures(1, [name])
            live.released("gl_texture", self.owner)

    def __repr__(self) -> str:
        return f"<GlTexture {self.label!r} name={self.name} {self.width}x{self.height}>"


class GlVertexArray:
    kind = "vertex_array"

    def __init__(self, label: str, owner: str = "") -> None:
        self.label, self.owner = label, owner
        self.name = int(GL.glGenVertexArrays(1))
        GL.glBindVertexArray(self.name)
        GL.glBindVertexArray(0)
        _label("vertex_array", self.name, label)
        live.created("gl_vertex_array", owner)

    def attribute(self, location: int, buffer: GlBuffer, components: int) -> None:
        GL.glBindVertexArray(self.name)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, buffer.name)
        GL.glEnableVertexAttribArray(location)
        GL.glVertexAttribPointer(location, components, GL.GL_FLOAT, GL.GL_FALSE, 0, None)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)
        GL.glBindVertexArray(0)

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            GL.glDeleteVertexArrays(1, [name])
            live.released("gl_vertex_array", self.owner)

    def __repr__(self) -> str:
        return f"<GlVertexArray {self.label!r} name={self.name}>"
