"""Moving texels between client memory, buffers and textures: the mapped-buffer and pixel-unpack
paths every copying hand-over and upload uses, written once.

Each helper binds what it needs, leaves the unpack state (alignment, row length) as it found
it for the next caller (alignment 1, row length 0: tight rows) and unbinds.
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import Iterator

import numpy as np

from app.errors import GlError
from app.gl import api as GL

GL_PIXEL_PACK_BUFFER, GL_STREAM_COPY = GL.GL_PIXEL_PACK_BUFFER, GL.GL_STREAM_COPY
READ = GL.GL_MAP_READ_BIT
WRITE_DISCARD = GL.GL_MAP_WRITE_BIT | GL.GL_MAP_INVALIDATE_BUFFER_BIT


def mapped_bytes(target: int, nbytes: int, access: int) -> np.ndarray:
    """Map the buffer bound to ``target`` and view the mapping as ``nbytes`` bytes."""
    address = GL.glMapBufferRange(target, 0, nbytes, access)  # an int, or None where GL mapped nothing
    if not address:
        raise GlError(GL.glGetError(), where="glMapBufferRange", detail=f"mapping {nbytes} bytes failed")
    return np.ctypeslib.as_array((ctypes.c_ubyte * nbytes).from_address(address))


@contextlib.contextmanager
def mapped(target: int, name: int, nbytes: int, access: int) -> Iterator[np.ndarray]:
    """``with mapped(GL_COPY_WRITE_BUFFER, buf, n, WRITE_DISCARD) as view:`` bind, map, yield the
    bytes; unmap and unbind afterwards, also on error."""
    GL.glBindBuffer(target, name)
    try:
        view = mapped_bytes(target, nbytes, access)
        try:
            yield view
        finally:
            GL.glUnmapBuffer(target)
    finally:
        GL.glBindBuffer(target, 0)


def _texture_from(tex, source, row_pitch: int | None) -> None:
    bpp = tex.bytes_per_pixel
    row_length = 0 if not row_pitch or row_pitch == tex.width * bpp else row_pitch // bpp
    GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
    if row_length:
        GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, row_length)
    GL.glBindTexture(GL.GL_TEXTURE_2D, tex.name)
    try:
        GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, tex.width, tex.height, tex.format, tex.dtype, source)
    finally:
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        if row_length:
            GL.glPixelStorei(GL.GL_UNPACK_ROW_LENGTH, 0)


def texture_from_unpack_buffer(tex, buffer: int, row_pitch: int | None = None) -> None:
    """GL copies the texels of buffer ``buffer`` (rows ``row_pitch`` bytes apart) into 2D texture ``tex``."""
    GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, buffer)
    try:
        _texture_from(tex, ctypes.c_void_p(0), row_pitch)
    finally:
        GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)


def texture_from_address(tex, address: int, row_pitch: int | None = None) -> None:
    """GL reads the texels at client address ``address`` into ``tex`` (no unpack buffer bound)."""
    GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)
    _texture_from(tex, ctypes.c_void_p(address), row_pitch)


def texture_to_pack_buffer(tex, buffer: int, row_pitch: int | None = None) -> None:
    """GL writes the texels of 2D texture ``tex`` into buffer ``buffer``, tightly packed or with
    rows ``row_pitch`` bytes apart (a whole number of texels)."""
    bpp = tex.bytes_per_pixel
    row_length = 0 if not row_pitch or row_pitch == tex.width * bpp else row_pitch // bpp
    GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, buffer)
    GL.glBindTexture(GL.GL_TEXTURE_2D, tex.name)
    GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
    if row_length:
        GL.glPixelStorei(GL.GL_PACK_ROW_LENGTH, row_length)
    try:
        GL.glGetTexImage(GL.GL_TEXTURE_2D, 0, tex.format, tex.dtype, ctypes.c_void_p(0))
    finally:
        if row_length:
            GL.glPixelStorei(GL.GL_PACK_ROW_LENGTH, 0)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, 0)


def stream_into(buffer, rows: np.ndarray) -> None:
    """Orphan ``buffer`` (a GlBuffer) and write ``rows`` at its start (the next frame's upload)."""
    GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, buffer.name)
    try:
        GL.glBufferData(GL.GL_PIXEL_UNPACK_BUFFER, buffer.nbytes, None, GL.GL_STREAM_DRAW)
        GL.glBufferSubData(GL.GL_PIXEL_UNPACK_BUFFER, 0, rows.nbytes, rows)
    finally:
        GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)


def copy_buffer(source: int, target: int, nbytes: int) -> None:
    """GL copies ``nbytes`` from the start of buffer ``source`` to the start of buffer ``target``."""
    GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, source)
    GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, target)
    try:
        GL.glCopyBufferSubData(GL.GL_COPY_READ_BUFFER, GL.GL_COPY_WRITE_BUFFER, 0, 0, nbytes)
    finally:
        GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
