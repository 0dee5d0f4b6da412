"""GL buffers, textures, buffer textures, vertex arrays and pixel buffers: labelled, counted,
``release()`` idempotent.

No GL call runs in ``__del__``: the app releases in reverse build order while the context is current.
"""
from __future__ import annotations

import ctypes

import numpy as np

from app.diagnostics import live
from app.errors import GlError
from app.gl import api as GL
from app.gl.formats import RGBA8, TexelFormat

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


class GlMappedBuffer(GlBuffer):
    """A GL buffer with immutable storage (glBufferStorage: GL 4.4 or GL_ARB_buffer_storage) mapped
    once, for reading and writing, persistently and coherently, until ``release()``.

    ``address`` is where the mapping starts and ``view`` the mapping as bytes. With
    MAP_PERSISTENT_BIT GL may use the buffer while it is mapped; with MAP_COHERENT_BIT writes
    through the mapping are seen by GL commands issued after them, and GL's writes are seen through
    the mapping once a fence (or glFinish) after them has completed (ARB_buffer_storage, OpenGL 4.4
    core section 6.2). glBufferSubData still works (DYNAMIC_STORAGE_BIT).

    Raises:
        GlError: GL refused the storage or the mapping (nothing is left behind).
    """

    MAP_FLAGS = GL.GL_MAP_READ_BIT | GL.GL_MAP_WRITE_BIT | GL.GL_MAP_PERSISTENT_BIT | GL.GL_MAP_COHERENT_BIT
    STORAGE_FLAGS = MAP_FLAGS | GL.GL_DYNAMIC_STORAGE_BIT

    def __init__(self, label: str, nbytes: int, *, target: int = GL.GL_ARRAY_BUFFER, owner: str = "") -> None:
        self.label, self.nbytes, self.target, self.owner = label, int(nbytes), target, owner
        self.name = int(GL.glGenBuffers(1))
        GL.glBindBuffer(target, self.name)
        where, detail = "glBufferStorage + glMapBufferRange", f"persistent coherent mapping of {label!r} ({self.nbytes} B)"
        try:
            try:
                GL.glBufferStorage(target, self.nbytes, None, self.STORAGE_FLAGS)
                address = GL.glMapBufferRange(target, 0, self.nbytes, self.MAP_FLAGS)  # an int, or None
            except GL.GLError as exc:
                raise GlError(exc.code, where=where, detail=f"{detail} failed") from exc
            err = GL.glGetError()
            if err or not address:
                raise GlError(err, where=where, detail=f"{detail} failed")
        except BaseException:
            GL.glBindBuffer(target, 0)
            GL.glDeleteBuffers(1, [self.name])
            self.name = 0
            raise
        GL.glBindBuffer(target, 0)
        self.address = int(address)
        self._view: np.ndarray | None = np.ctypeslib.as_array((ctypes.c_ubyte * self.nbytes).from_address(self.address))
        _label("buffer", self.name, label)
        live.created("gl_buffer", owner)

    @property
    def view(self) -> np.ndarray:
        """The mapping as ``nbytes`` bytes (valid until ``release()``)."""
        if self._view is None:
            raise ValueError(f"{self.label}: released, its mapping is gone")
        return self._view

    def release(self) -> None:
        """Unmap, then delete. Idempotent. Whatever used the mapping (a CL buffer over it) must be
        released first."""
        name, self.name = self.name, 0
        if name:
            self._view = None
            GL.glBindBuffer(self.target, name)
            GL.glUnmapBuffer(self.target)
            GL.glBindBuffer(self.target, 0)
            GL.glDeleteBuffers(1, [name])
            live.released("gl_buffer", self.owner)

    def __repr__(self) -> str:
        return f"<GlMappedBuffer {self.label!r} name={self.name} {self.nbytes} B at 0x{getattr(self, 'address', 0):x}>"




class _TextureFormat:
    """What GlTexture and GlBufferTexture share: the texel format and the image's byte sizes."""

    texel_format: TexelFormat
    width: int
    height: int

    @property
    def internal_format(self) -> int:
        return self.texel_format.internal_format

    @property
    def format(self) -> int:
        return self.texel_format.format

    @property
    def dtype(self) -> int:
        return self.texel_format.type

    @property
    def bytes_per_pixel(self) -> int:
        return self.texel_format.texel_bytes

    @property
    def nbytes(self) -> int:
        """The image's bytes, tightly packed (no row padding)."""
        return self.width * self.height * self.bytes_per_pixel


class GlTexture(_TextureFormat):
    """A 2D texture with immutable-size storage, nearest filtering (1:1 pixel comparisons)."""

    kind = "texture"

    def __init__(self, label: str, width: int, height: int, *, fmt: TexelFormat = RGBA8, owner: str = "") -> None:
        self.label, self.width, self.height, self.owner = label, int(width), int(height), owner
        self.texel_format = fmt
        self.target = GL.GL_TEXTURE_2D
        self.name = int(GL.glGenTextures(1))
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.name)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MIN_FILTER, GL.GL_NEAREST)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAG_FILTER, GL.GL_NEAREST)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_WRAP_S, GL.GL_CLAMP_TO_EDGE)
        GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_WRAP_T, GL.GL_CLAMP_TO_EDGE)
        GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, fmt.internal_format, self.width, self.height, 0, fmt.format, fmt.type,
                        None)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        _label("texture", self.name, label)
        live.created("gl_texture", owner)

    def upload(self, data: np.ndarray) -> None:
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.name)
        GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
        GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, self.width, self.height, self.format, self.dtype, data)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)

    def read(self) -> np.ndarray:
        """Texel rows as stored (row 0 first), shape H x W x channels."""
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.name)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        out = np.empty((self.height, self.width, self.texel_format.channels), self.texel_format.numpy_dtype)
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


# Internal formats a buffer texture accepts and their texel sizes in bytes: OpenGL 4.6 core
# specification, section 8.9 "Buffer Textures", the table of internal formats for buffer textures
# (refpage glTexBuffer). Not there: RGB8, SRGB8_ALPHA8 and every other format of three components
# except the RGB32 ones, left out here because they need GL 4.0 and glshare makes no RGB textures.
BUFFER_TEXTURE_FORMATS: dict[int, tuple[str, int]] = {
    GL.GL_R8: ("GL_R8", 1), GL.GL_R16: ("GL_R16", 2), GL.GL_R16F: ("GL_R16F", 2), GL.GL_R32F: ("GL_R32F", 4),
    GL.GL_R8I: ("GL_R8I", 1), GL.GL_R16I: ("GL_R16I", 2), GL.GL_R32I: ("GL_R32I", 4),
    GL.GL_R8UI: ("GL_R8UI", 1), GL.GL_R16UI: ("GL_R16UI", 2), GL.GL_R32UI: ("GL_R32UI", 4),
    GL.GL_RG8: ("GL_RG8", 2), GL.GL_RG16: ("GL_RG16", 4), GL.GL_RG16F: ("GL_RG16F", 4), GL.GL_RG32F: ("GL_RG32F", 8),
    GL.GL_RG8I: ("GL_RG8I", 2), GL.GL_RG16I: ("GL_RG16I", 4), GL.GL_RG32I: ("GL_RG32I", 8),
    GL.GL_RG8UI: ("GL_RG8UI", 2), GL.GL_RG16UI: ("GL_RG16UI", 4), GL.GL_RG32UI: ("GL_RG32UI", 8),
    GL.GL_RGBA8: ("GL_RGBA8", 4), GL.GL_RGBA16: ("GL_RGBA16", 8), GL.GL_RGBA16F: ("GL_RGBA16F", 8),
    GL.GL_RGBA32F: ("GL_RGBA32F", 16), GL.GL_RGBA8I: ("GL_RGBA8I", 4), GL.GL_RGBA16I: ("GL_RGBA16I", 8),
    GL.GL_RGBA32I: ("GL_RGBA32I", 16), GL.GL_RGBA8UI: ("GL_RGBA8UI", 4), GL.GL_RGBA16UI: ("GL_RGBA16UI", 8),
    GL.GL_RGBA32UI: ("GL_RGBA32UI", 16),
}


def max_texture_buffer_texels() -> int:
    """GL_MAX_TEXTURE_BUFFER_SIZE of the current context: the most texels a buffer texture addresses."""
    return int(GL.glGetIntegerv(GL.GL_MAX_TEXTURE_BUFFER_SIZE))


def buffer_texture_refusal(internal_format: int, texel_size: int, width: int, height: int, pitch: int,
                           max_texels: int) -> str | None:
    """Why a ``width`` x ``height`` image whose rows lie ``pitch`` bytes apart cannot be read as a buffer
    texture of ``internal_format`` with ``texel_size``-byte texels; None when it can.

    The rules (OpenGL 4.6 core, section 8.9): the internal format must be one of the buffer-texture
    formats; the texel array holds floor(buffer size / texel size) texels, clamped to
    GL_MAX_TEXTURE_BUFFER_SIZE, so every texel the image uses must lie below ``max_texels``; and
    texel (x, y) is texel y * (pitch / texel size) + x only when the pitch is a whole number of texels.
    """
    entry = BUFFER_TEXTURE_FORMATS.get(int(internal_format))
    if entry is None:
        return f"internal format 0x{int(internal_format):04X} is not a buffer-texture format (GL 4.6, 8.9)"
    name, size = entry
    if size != texel_size:
        return f"{name} texels are {size} B but the image's are {texel_size} B"
    if pitch < width * size:
        return f"row pitch {pitch} B is shorter than a row of {width} texels ({width * size} B)"
    if pitch % size:
        return f"row pitch {pitch} B is not a multiple of the {size}-byte texel"
    texels = pitch // size * height
    if texels > max_texels:
        return f"{texels} texels exceed GL_MAX_TEXTURE_BUFFER_SIZE ({max_texels})"
    return None


class GlBufferTexture(_TextureFormat):
    """A buffer texture (GL_TEXTURE_BUFFER, core since GL 3.1) over ``buffer``, which holds a
    ``width`` x ``height`` image with rows ``pitch`` bytes apart, row 0 first.

    Shaders read texel (x, y) as ``texelFetch(samplerBuffer, y * row_length + x)`` with
    ``row_length = pitch / texel size``: no filtering, no mipmaps, no copy. The buffer stays its
    owner's; ``release()`` deletes only the texture (before the buffer, as ``destroy`` orders it).

    Raises:
        ValueError: the image cannot be a buffer texture here (``buffer_texture_refusal`` says why).
    """

    kind = "texture"

    def __init__(self, label: str, buffer: GlBuffer, width: int, height: int, pitch: int, *,
                 fmt: TexelFormat = RGBA8, owner: str = "") -> None:
        self.label, self.width, self.height, self.owner = label, int(width), int(height), owner
        self.texel_format = fmt
        internal_format = fmt.internal_format
        self.pitch, self.buffer = int(pitch), buffer
        self.target = GL.GL_TEXTURE_BUFFER
        refusal = buffer_texture_refusal(internal_format, self.bytes_per_pixel, self.width, self.height, self.pitch,
                                         max_texture_buffer_texels())
        if refusal is None and buffer.nbytes < self.pitch * self.height:
            refusal = f"buffer {buffer.label!r} holds {buffer.nbytes} B, the image needs {self.pitch * self.height} B"
        if refusal:
            raise ValueError(f"{label}: {refusal}")
        self.name = int(GL.glGenTextures(1))
        GL.glBindTexture(GL.GL_TEXTURE_BUFFER, self.name)  # the first bind makes it a buffer texture
        GL.glTexBuffer(GL.GL_TEXTURE_BUFFER, internal_format, buffer.name)
        GL.glBindTexture(GL.GL_TEXTURE_BUFFER, 0)
        _label("texture", self.name, label)
        live.created("gl_buffer_texture", owner)

    @property
    def row_length(self) -> int:
        """Texels from one row to the next (what the shader multiplies y by)."""
        return self.pitch // self.bytes_per_pixel

    def read(self) -> np.ndarray:
        """Texel rows as stored (row 0 first), shape H x W x channels, read from the buffer."""
        np_dtype = self.texel_format.numpy_dtype
        raw = np.empty((self.height, self.pitch), np.uint8)
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, self.buffer.name)
        GL.glGetBufferSubData(GL.GL_COPY_READ_BUFFER, 0, raw.nbytes, raw.ctypes.data_as(ctypes.c_void_p))
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
        rows = np.ascontiguousarray(raw[:, :self.width * self.bytes_per_pixel]).view(np_dtype)
        return rows.reshape(self.height, self.width, -1)

    def release(self) -> None:
        name, self.name = self.name, 0
        if name:
            GL.glDeleteTextures(1, [name])
            live.released("gl_buffer_texture", self.owner)

    def __repr__(self) -> str:
        return (f"<GlBufferTexture {self.label!r} name={self.name} {self.width}x{self.height} "
                f"pitch={self.pitch} B over buffer {self.buffer.name}>")


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
