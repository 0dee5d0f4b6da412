"""Texel formats: the GL triple (internal format, pixel format, pixel type) glshare shares textures in.

One table for the whole program: the sharing backends map these to CL image formats
(``app/cl/formats.py``), scenes name them instead of spelling GL enums, and the texel sizes of
buffer textures come from here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.gl import api as GL


@dataclass(frozen=True)
class TexelFormat:
    """A texture's storage format and how its texels are written and read by the client."""

    name: str  # "RGBA8", "R16UI", ...
    internal_format: int  # GL_RGBA8 ...
    format: int  # pixel format for glTexSubImage2D / glGetTexImage (GL_RGBA, GL_RED_INTEGER ...)
    type: int  # pixel type (GL_UNSIGNED_BYTE ...)
    channels: int
    component_bytes: int

    @property
    def texel_bytes(self) -> int:
        return self.channels * self.component_bytes

    @property
    def integer(self) -> bool:
        """Integer textures (R8UI ...) are never filtered or sampled as floats by GL."""
        return self.format in (GL.GL_RED_INTEGER, GL.GL_RG_INTEGER, GL.GL_RGBA_INTEGER)

    @property
    def numpy_dtype(self) -> np.dtype:
        if self.type == GL.GL_FLOAT:
            return np.dtype(np.float32)
        return np.dtype({1: np.uint8, 2: np.uint16}[self.component_bytes])


RGBA8 = TexelFormat("RGBA8", GL.GL_RGBA8, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, 4, 1)
RGBA32F = TexelFormat("RGBA32F", GL.GL_RGBA32F, GL.GL_RGBA, GL.GL_FLOAT, 4, 4)
R8 = TexelFormat("R8", GL.GL_R8, GL.GL_RED, GL.GL_UNSIGNED_BYTE, 1, 1)
RG8 = TexelFormat("RG8", GL.GL_RG8, GL.GL_RG, GL.GL_UNSIGNED_BYTE, 2, 1)
R16 = TexelFormat("R16", GL.GL_R16, GL.GL_RED, GL.GL_UNSIGNED_SHORT, 1, 2)
RG16 = TexelFormat("RG16", GL.GL_RG16, GL.GL_RG, GL.GL_UNSIGNED_SHORT, 2, 2)
R8UI = TexelFormat("R8UI", GL.GL_R8UI, GL.GL_RED_INTEGER, GL.GL_UNSIGNED_BYTE, 1, 1)
RG8UI = TexelFormat("RG8UI", GL.GL_RG8UI, GL.GL_RG_INTEGER, GL.GL_UNSIGNED_BYTE, 2, 1)
R16UI = TexelFormat("R16UI", GL.GL_R16UI, GL.GL_RED_INTEGER, GL.GL_UNSIGNED_SHORT, 1, 2)
RG16UI = TexelFormat("RG16UI", GL.GL_RG16UI, GL.GL_RG_INTEGER, GL.GL_UNSIGNED_SHORT, 2, 2)

FORMATS: dict[int, TexelFormat] = {f.internal_format: f for f in
                                   (RGBA8, RGBA32F, R8, RG8, R16, RG16, R8UI, RG8UI, R16UI, RG16UI)}


def unsigned_integer(component_bytes: int, channels: int) -> TexelFormat:
    """The unsigned-integer format of ``channels`` components of ``component_bytes`` bytes (yuv planes)."""
    return {(1, 1): R8UI, (1, 2): RG8UI, (2, 1): R16UI, (2, 2): RG16UI}[(component_bytes, channels)]
