"""GL as glshare calls it: the entry points and enums it uses, through ctypes, each call checked.

``from app.gl import api as GL`` reads like PyOpenGL's ``OpenGL.GL`` for what glshare needs: the
enums are plain ints defined here (OpenGL 4.6 core and the extensions named), and the first use of
an entry point resolves it once (``app.gl.raw.gl_function``: the platform's GetProcAddress, no
wrapper classes) and keeps it on this module. Every call through here asks glGetError after it, as
PyOpenGL does, and raises glshare's ``GlError`` naming the call; the frame's hot calls skip that and
go through ``app.gl.raw`` directly, checked once per frame instead. ``GL.GLError`` is glshare's
``GlCallError`` (a ``GlError``).

Why not PyOpenGL's ``OpenGL.GL``: importing it builds a wrapper for every entry point of every GL
version and extension (about 190 modules, a noticeable share of the headless start-up to the
first frame: bench/results/README.md, 'Fifth session'), of which glshare calls about eighty.
PyOpenGL stays the platform layer (EGL, GLX, GetProcAddress) and what the tests use to check
pixels.

The convenience forms kept from PyOpenGL, where glshare uses them: ``glGen*(n)`` returns the name
(n == 1) or a list of names; ``glDelete*(n, names)`` takes a list; ``glGetIntegerv(pname)`` returns
an int, or a tuple for the vector queries in ``_VECTOR_QUERIES``; ``glGetString*`` returns bytes;
``glShaderSource(shader, text)``; ``glGet{Shader,Program}iv(name, pname)`` an int and
``glGet{Shader,Program}InfoLog(name)`` bytes; ``glReadPixels(x, y, w, h, format, type)`` the
pixels as bytes; a data pointer may be a numpy array, bytes, None, an int or a ctypes object.
Everything else is called in its C form (``GL.GLuint`` is ctypes' c_uint, as PyOpenGL's is).
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from app.errors import GlCallError
from app.gl.raw import (
    SIGNATURES,
    GLbitfield,
    GLboolean,
    GLenum,
    GLfloat,
    GLint,
    GLint64,
    GLintptr,
    GLsizei,
    GLsizeiptr,
    GLuint,
    GLuint64,
    P,
    gl_function,
)

vp, char_p = ctypes.c_void_p, ctypes.c_char_p
GLError = GlCallError  # what a checked call raises (PyOpenGL's name for its own)

# -- enums (values from the OpenGL 4.6 core profile specification and its headers) ---------------
GL_FALSE, GL_TRUE = 0, 1
GL_NO_ERROR = 0
GL_INVALID_ENUM, GL_INVALID_VALUE, GL_INVALID_OPERATION = 0x0500, 0x0501, 0x0502
GL_INVALID_FRAMEBUFFER_OPERATION = 0x0506
GL_POINTS, GL_TRIANGLES, GL_TRIANGLE_STRIP = 0x0000, 0x0004, 0x0005
GL_DEPTH_BUFFER_BIT, GL_COLOR_BUFFER_BIT = 0x0100, 0x4000
GL_BACK = 0x0405
GL_BLEND, GL_DEPTH_TEST, GL_SCISSOR_TEST = 0x0BE2, 0x0B71, 0x0C11
GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA = 0x0302, 0x0303
GL_VIEWPORT, GL_MAX_TEXTURE_SIZE, GL_MAX_VIEWPORT_DIMS = 0x0BA2, 0x0D33, 0x0D3A
GL_SCISSOR_BOX, GL_COLOR_WRITEMASK, GL_DEPTH_RANGE = 0x0C10, 0x0C23, 0x0B70
GL_COMPRESSED_TEXTURE_FORMATS, GL_PROGRAM_BINARY_FORMATS, GL_SHADER_BINARY_FORMATS = 0x86A3, 0x87FF, 0x8DF8
GL_MAX_RENDERBUFFER_SIZE, GL_MAX_TEXTURE_BUFFER_SIZE = 0x84E8, 0x8C2B
GL_MAJOR_VERSION, GL_MINOR_VERSION, GL_NUM_EXTENSIONS = 0x821B, 0x821C, 0x821D
GL_VENDOR, GL_RENDERER, GL_VERSION, GL_EXTENSIONS = 0x1F00, 0x1F01, 0x1F02, 0x1F03
GL_SHADING_LANGUAGE_VERSION = 0x8B8C
GL_UNPACK_ROW_LENGTH, GL_UNPACK_ALIGNMENT, GL_PACK_ROW_LENGTH, GL_PACK_ALIGNMENT = 0x0CF2, 0x0CF5, 0x0D02, 0x0D05
GL_UNSIGNED_BYTE, GL_UNSIGNED_SHORT, GL_FLOAT = 0x1401, 0x1403, 0x1406
GL_TEXTURE = 0x1702
GL_RED, GL_RGBA, GL_RG = 0x1903, 0x1908, 0x8227
GL_RED_INTEGER, GL_RG_INTEGER, GL_RGBA_INTEGER = 0x8D94, 0x8228, 0x8D99
GL_R8, GL_R16, GL_RG8, GL_RG16 = 0x8229, 0x822A, 0x822B, 0x822C
GL_R16F, GL_R32F, GL_RG16F, GL_RG32F = 0x822D, 0x822E, 0x822F, 0x8230
GL_R8I, GL_R8UI, GL_R16I, GL_R16UI, GL_R32I, GL_R32UI = 0x8231, 0x8232, 0x8233, 0x8234, 0x8235, 0x8236
GL_RG8I, GL_RG8UI, GL_RG16I, GL_RG16UI, GL_RG32I, GL_RG32UI = 0x8237, 0x8238, 0x8239, 0x823A, 0x823B, 0x823C
GL_RGBA8, GL_RGBA16, GL_RGBA16F, GL_RGBA32F = 0x8058, 0x805B, 0x881A, 0x8814
GL_RGBA32UI, GL_RGBA16UI, GL_RGBA8UI = 0x8D70, 0x8D76, 0x8D7C
GL_RGBA32I, GL_RGBA16I, GL_RGBA8I = 0x8D82, 0x8D88, 0x8D8E
GL_DEPTH_COMPONENT24 = 0x81A6
GL_TEXTURE_2D, GL_TEXTURE_BUFFER = 0x0DE1, 0x8C2A
GL_TEXTURE_MAG_FILTER, GL_TEXTURE_MIN_FILTER, GL_TEXTURE_WRAP_S, GL_TEXTURE_WRAP_T = 0x2800, 0x2801, 0x2802, 0x2803
GL_NEAREST, GL_CLAMP_TO_EDGE = 0x2600, 0x812F
GL_TEXTURE0 = 0x84C0
GL_ARRAY_BUFFER, GL_PIXEL_PACK_BUFFER, GL_PIXEL_UNPACK_BUFFER = 0x8892, 0x88EB, 0x88EC
GL_PIXEL_PACK_BUFFER_BINDING = 0x88ED
GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER = 0x8F36, 0x8F37
GL_STREAM_DRAW, GL_STREAM_READ, GL_STREAM_COPY, GL_STATIC_DRAW, GL_DYNAMIC_DRAW = 0x88E0, 0x88E1, 0x88E2, 0x88E4, 0x88E8
GL_MAP_READ_BIT, GL_MAP_WRITE_BIT, GL_MAP_INVALIDATE_BUFFER_BIT = 0x0001, 0x0002, 0x0008
GL_MAP_PERSISTENT_BIT, GL_MAP_COHERENT_BIT, GL_DYNAMIC_STORAGE_BIT = 0x0040, 0x0080, 0x0100
GL_FRAMEBUFFER, GL_READ_FRAMEBUFFER, GL_DRAW_FRAMEBUFFER, GL_RENDERBUFFER = 0x8D40, 0x8CA8, 0x8CA9, 0x8D41
GL_DRAW_FRAMEBUFFER_BINDING = 0x8CA6
GL_FRAMEBUFFER_COMPLETE = 0x8CD5
GL_COLOR_ATTACHMENT0, GL_DEPTH_ATTACHMENT = 0x8CE0, 0x8D00
GL_FRAGMENT_SHADER, GL_VERTEX_SHADER = 0x8B30, 0x8B31
GL_COMPILE_STATUS, GL_LINK_STATUS, GL_INFO_LOG_LENGTH = 0x8B81, 0x8B82, 0x8B84
GL_SYNC_FLUSH_COMMANDS_BIT, GL_SYNC_GPU_COMMANDS_COMPLETE = 0x00000001, 0x9117
GL_ALREADY_SIGNALED, GL_TIMEOUT_EXPIRED, GL_CONDITION_SATISFIED, GL_WAIT_FAILED = 0x911A, 0x911B, 0x911C, 0x911D
GL_TIMEOUT_IGNORED = 0xFFFFFFFFFFFFFFFF

# -- the entry points called through here, by their C prototypes (OpenGL 4.6 core) ----------------
_PROTOTYPES = {
    "glBindBuffer": (None, [GLenum, GLuint]),
    "glBindRenderbuffer": (None, [GLenum, GLuint]),
    "glPixelStorei": (None, [GLenum, GLint]),
    "glTexParameteri": (None, [GLenum, GLenum, GLint]),
    "glReadBuffer": (None, [GLenum]),
    "glBlendFunc": (None, [GLenum, GLenum]),
    "glUniform1f": (None, [GLint, GLfloat]),
    "glPointSize": (None, [GLfloat]),
    "glUniform3f": (None, [GLint, GLfloat, GLfloat, GLfloat]),
    "glUniformMatrix4fv": (None, [GLint, GLsizei, GLboolean, vp]),
    "glUnmapBuffer": (GLboolean, [GLenum]),
    "glMapBufferRange": (vp, [GLenum, GLintptr, GLsizeiptr, GLbitfield]),
    "glBufferData": (None, [GLenum, GLsizeiptr, vp, GLenum]),
    "glBufferSubData": (None, [GLenum, GLintptr, GLsizeiptr, vp]),
    "glBufferStorage": (None, [GLenum, GLsizeiptr, vp, GLbitfield]),
    "glGetBufferSubData": (None, [GLenum, GLintptr, GLsizeiptr, vp]),
    "glCopyBufferSubData": (None, [GLenum, GLenum, GLintptr, GLintptr, GLsizeiptr]),
    "glCreateBuffers": (None, [GLsizei, P(GLuint)]),
    "glNamedBufferData": (None, [GLuint, GLsizeiptr, vp, GLenum]),
    "glCopyNamedBufferSubData": (None, [GLuint, GLuint, GLintptr, GLintptr, GLsizeiptr]),
    "glClearNamedBufferData": (None, [GLuint, GLenum, GLenum, GLenum, vp]),
    "glTexImage2D": (None, [GLenum, GLint, GLint, GLsizei, GLsizei, GLint, GLenum, GLenum, vp]),
    "glTexSubImage2D": (None, [GLenum, GLint, GLint, GLint, GLsizei, GLsizei, GLenum, GLenum, vp]),
    "glGetTexImage": (None, [GLenum, GLint, GLenum, GLenum, vp]),
    "glTexBuffer": (None, [GLenum, GLenum, GLuint]),
    "glCopyImageSubData": (None, [GLuint, GLenum, GLint, GLint, GLint, GLint, GLuint, GLenum, GLint, GLint, GLint,
                                  GLint, GLsizei, GLsizei, GLsizei]),
    "glReadPixels": (None, [GLint, GLint, GLsizei, GLsizei, GLenum, GLenum, vp]),
    "glRenderbufferStorage": (None, [GLenum, GLenum, GLsizei, GLsizei]),
    "glFramebufferRenderbuffer": (None, [GLenum, GLenum, GLenum, GLuint]),
    "glFramebufferTexture2D": (None, [GLenum, GLenum, GLenum, GLuint, GLint]),
    "glCheckFramebufferStatus": (GLenum, [GLenum]),
    "glBlitFramebuffer": (None, [GLint, GLint, GLint, GLint, GLint, GLint, GLint, GLint, GLbitfield, GLenum]),
    "glVertexAttribPointer": (None, [GLuint, GLint, GLenum, GLboolean, GLsizei, vp]),
    "glEnableVertexAttribArray": (None, [GLuint]),
    "glCreateShader": (GLuint, [GLenum]),
    "glShaderSource": (None, [GLuint, GLsizei, P(char_p), P(GLint)]),
    "glCompileShader": (None, [GLuint]),
    "glDeleteShader": (None, [GLuint]),
    "glGetShaderiv": (None, [GLuint, GLenum, P(GLint)]),
    "glGetShaderInfoLog": (None, [GLuint, GLsizei, P(GLsizei), ctypes.c_char_p]),
    "glCreateProgram": (GLuint, []),
    "glAttachShader": (None, [GLuint, GLuint]),
    "glLinkProgram": (None, [GLuint]),
    "glDeleteProgram": (None, [GLuint]),
    "glGetProgramiv": (None, [GLuint, GLenum, P(GLint)]),
    "glGetProgramInfoLog": (None, [GLuint, GLsizei, P(GLsizei), ctypes.c_char_p]),
    "glGetUniformLocation": (GLint, [GLuint, ctypes.c_char_p]),
    "glGetIntegerv": (None, [GLenum, P(GLint)]),
    "glGetInteger64v": (None, [GLenum, P(GLint64)]),
    "glGetString": (ctypes.c_char_p, [GLenum]),
    "glGetStringi": (ctypes.c_char_p, [GLenum, GLuint]),
    "glObjectLabel": (None, [GLenum, GLuint, GLsizei, ctypes.c_char_p]),
    "glWaitSync": (None, [vp, GLbitfield, GLuint64]),
    "glGenBuffers": (None, [GLsizei, P(GLuint)]),
    "glGenTextures": (None, [GLsizei, P(GLuint)]),
    "glGenFramebuffers": (None, [GLsizei, P(GLuint)]),
    "glGenRenderbuffers": (None, [GLsizei, P(GLuint)]),
    "glGenVertexArrays": (None, [GLsizei, P(GLuint)]),
    "glGenQueries": (None, [GLsizei, P(GLuint)]),
    "glDeleteBuffers": (None, [GLsizei, P(GLuint)]),
    "glDeleteTextures": (None, [GLsizei, P(GLuint)]),
    "glDeleteFramebuffers": (None, [GLsizei, P(GLuint)]),
    "glDeleteRenderbuffers": (None, [GLsizei, P(GLuint)]),
    "glDeleteVertexArrays": (None, [GLsizei, P(GLuint)]),
    "glDeleteQueries": (None, [GLsizei, P(GLuint)]),
    # GL_EXT_memory_object, GL_EXT_memory_object_fd, GL_EXT_semaphore, GL_EXT_semaphore_fd (the
    # external_memory backend; called in their C form)
    "glCreateMemoryObjectsEXT": (None, [GLsizei, P(GLuint)]),
    "glDeleteMemoryObjectsEXT": (None, [GLsizei, P(GLuint)]),
    "glImportMemoryFdEXT": (None, [GLuint, GLuint64, GLenum, GLint]),
    "glNamedBufferStorageMemEXT": (None, [GLuint, GLsizeiptr, GLuint, GLuint64]),
    "glGenSemaphoresEXT": (None, [GLsizei, P(GLuint)]),
    "glDeleteSemaphoresEXT": (None, [GLsizei, P(GLuint)]),
    "glImportSemaphoreFdEXT": (None, [GLuint, GLenum, GLint]),
    # GL_ARB_cl_event (gl_sharing's sync: a GL sync object from a CL event)
    "glCreateSyncFromCLeventARB": (vp, [vp, vp, GLbitfield]),
}
# the core glGen* and glDelete* calls answered in PyOpenGL's form: gen(n) -> name(s), delete(n, list)
_GEN = ("glGenBuffers", "glGenTextures", "glGenFramebuffers", "glGenRenderbuffers", "glGenVertexArrays",
        "glGenQueries")
_DELETE = ("glDeleteBuffers", "glDeleteTextures", "glDeleteFramebuffers", "glDeleteRenderbuffers",
           "glDeleteVertexArrays", "glDeleteQueries")
SIGNATURES.update(_PROTOTYPES)  # gl_function resolves these names too

# glGetIntegerv's queries that answer more than one value (the rest answer one)
_VECTOR_QUERIES = {GL_VIEWPORT: 4, GL_MAX_VIEWPORT_DIMS: 2, GL_SCISSOR_BOX: 4, GL_COLOR_WRITEMASK: 4,
                   GL_DEPTH_RANGE: 2}
_SCRATCH = 16  # the buffer every query writes into: room for any fixed-size answer
# as many values as the driver has formats: refused in the one-argument form, never overrun
_UNBOUNDED_QUERIES = {GL_COMPRESSED_TEXTURE_FORMATS: "GL_COMPRESSED_TEXTURE_FORMATS",
                      GL_PROGRAM_BINARY_FORMATS: "GL_PROGRAM_BINARY_FORMATS",
                      GL_SHADER_BINARY_FORMATS: "GL_SHADER_BINARY_FORMATS"}
# bytes per pixel of glReadPixels' (format, type) pairs glshare reads back
_PIXEL_BYTES = {(GL_RGBA, GL_UNSIGNED_BYTE): 4, (GL_RGBA, GL_FLOAT): 16, (GL_RED, GL_UNSIGNED_BYTE): 1,
                (GL_RED, GL_FLOAT): 4}


def _checked(name: str, fn):
    """``fn`` followed by glGetError; a non-zero code raises GLError (glshare's GlCallError) naming
    ``name``, as PyOpenGL raises its GLError after any call that left an error."""
    get_error = gl_function("glGetError")

    def call(*args):
        result = fn(*args)
        code = get_error()
        if code:
            raise GLError(code, call=name)
        return result

    call.__name__ = call.__qualname__ = name
    return call


# numpy dtype of a GL pixel or data type (what an input array is converted to, as PyOpenGL did)
_DTYPES = {0x1400: np.int8, GL_UNSIGNED_BYTE: np.uint8, 0x1402: np.int16, GL_UNSIGNED_SHORT: np.uint16,
           0x1404: np.int32, 0x1405: np.uint32, GL_FLOAT: np.float32, 0x140B: np.float16}


def _data(value, dtype=None):
    """A data pointer argument: a numpy array as an array whose address is passed (C-contiguous,
    of ``dtype`` where the call says the type: the caller's array, or a converted copy that the
    caller keeps alive for the call), anything else as ctypes takes it (None, an int address or
    offset, bytes, a ctypes object)."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value, dtype)
    return value


def _output(value, name: str):
    """An array GL writes into: passed as it is (a copy would take GL's answer away from the caller)."""
    if isinstance(value, np.ndarray):
        if not (value.flags.c_contiguous and value.flags.writeable):
            raise ValueError(f"{name}: the output array must be C-contiguous and writeable")
        return value
    return value


def _address(data):
    """What a pointer argument passes for ``data`` (as ``_data`` or ``_output`` returned it): an
    array's address, anything else as it is."""
    return data.ctypes.data if isinstance(data, np.ndarray) else data


def _make_data_call(name: str, index: int, dtype_of=None, output: bool = False):
    """``index``: the data argument; ``dtype_of(args)``: the numpy type an input array is converted
    to (None: its bytes as they are); ``output``: GL writes there."""
    raw = _checked(name, gl_function(name))

    def call(*args):
        if output:
            data = _output(args[index], name)
        else:  # held here until the call returns
            data = _data(args[index], dtype_of(args) if dtype_of is not None else None)
        return raw(*args[:index], _address(data), *args[index + 1:])

    call.__name__ = call.__qualname__ = name
    return call


def _make_gen(name: str):
    raw = _checked(name, gl_function(name))

    def gen(n: int):
        names = (GLuint * int(n))()
        raw(int(n), names)
        return int(names[0]) if n == 1 else [int(v) for v in names]

    gen.__name__ = gen.__qualname__ = name
    return gen


def _make_delete(name: str):
    raw = _checked(name, gl_function(name))

    def delete(n: int, names):
        values = [int(names)] if isinstance(names, (int, np.integer)) else [int(v) for v in names]
        raw(int(n), (GLuint * max(1, len(values)))(*values))

    delete.__name__ = delete.__qualname__ = name
    return delete


def _make_getiv(name: str):
    raw = _checked(name, gl_function(name))

    def get(obj: int, pname: int) -> int:
        out = GLint()
        raw(obj, pname, ctypes.byref(out))
        return out.value

    get.__name__ = get.__qualname__ = name
    return get


def _make_info_log(name: str, getiv: str):
    raw = _checked(name, gl_function(name))

    def log(obj: int) -> bytes:
        size = getattr(sys.modules[__name__], getiv)(obj, GL_INFO_LOG_LENGTH)  # resolved on first use
        if size <= 0:
            return b""
        buf = ctypes.create_string_buffer(size)
        written = GLsizei()
        raw(obj, size, ctypes.byref(written), buf)
        return buf.raw[:written.value]

    log.__name__ = log.__qualname__ = name
    return log


def _make_get_integerv():
    raw = _checked("glGetIntegerv", gl_function("glGetIntegerv"))

    def glGetIntegerv(pname: int, out=None):
        if out is not None:  # the C form: an output pointer given
            return raw(pname, out)
        if pname in _UNBOUNDED_QUERIES:
            raise ValueError(f"glGetIntegerv({_UNBOUNDED_QUERIES[pname]}) answers a driver-sized list: pass an "
                             "output array of the size GL_NUM_... says")
        n = _VECTOR_QUERIES.get(pname, 1)
        values = (GLint * _SCRATCH)()  # room for any fixed-size query, the known ones read back by count
        raw(pname, values)
        return values[0] if n == 1 else tuple(values[:n])

    return glGetIntegerv


def _make_shader_source():
    raw = _checked("glShaderSource", gl_function("glShaderSource"))

    def glShaderSource(shader: int, source) -> None:
        parts = [source] if isinstance(source, (str, bytes)) else list(source)
        texts = [p.encode() if isinstance(p, str) else bytes(p) for p in parts]
        raw(shader, len(texts), (char_p * len(texts))(*texts), (GLint * len(texts))(*map(len, texts)))

    return glShaderSource


def _make_text_argument(name: str, index: int):
    """A call whose ``index``-th argument is a C string: a str is encoded."""
    raw = _checked(name, gl_function(name))

    def call(*args):
        if isinstance(args[index], str):
            args = args[:index] + (args[index].encode(),) + args[index + 1:]
        return raw(*args)

    call.__name__ = call.__qualname__ = name
    return call


def _make_read_pixels():
    raw = _checked("glReadPixels", gl_function("glReadPixels"))

    def glReadPixels(x: int, y: int, width: int, height: int, fmt: int, kind: int, pixels=None):
        """The C form with ``pixels`` given (an array GL writes into, or a pack buffer offset);
        without it, the pixels as bytes, rows as GL packs them (GL_PACK_ALIGNMENT and
        GL_PACK_ROW_LENGTH: glshare sets the alignment to 1 and RGBA rows are whole words anyway)."""
        if pixels is not None:
            data = _output(pixels, "glReadPixels")
            return raw(x, y, width, height, fmt, kind, _address(data))
        size = _PIXEL_BYTES.get((fmt, kind))
        if size is None:
            raise ValueError(f"glReadPixels into bytes: format 0x{fmt:04X} type 0x{kind:04X} not known here")
        get = sys.modules[__name__].glGetIntegerv
        if get(GL_PIXEL_PACK_BUFFER_BINDING):
            raise ValueError("glReadPixels into bytes with a pixel pack buffer bound: GL would write into the buffer")
        row_pixels = get(GL_PACK_ROW_LENGTH) or int(width)
        align = get(GL_PACK_ALIGNMENT)
        stride = -(-row_pixels * size // align) * align
        buf = ctypes.create_string_buffer(stride * (int(height) - 1) + int(width) * size if height > 0 else 0)
        raw(x, y, width, height, fmt, kind, buf)
        return buf.raw

    return glReadPixels


_BUILDERS = {
    "glGetIntegerv": _make_get_integerv,
    "glShaderSource": _make_shader_source,
    "glGetUniformLocation": lambda: _make_text_argument("glGetUniformLocation", 1),
    "glObjectLabel": lambda: _make_text_argument("glObjectLabel", 3),
    "glReadPixels": _make_read_pixels,
    "glGetShaderiv": lambda: _make_getiv("glGetShaderiv"),
    "glGetProgramiv": lambda: _make_getiv("glGetProgramiv"),
    "glGetShaderInfoLog": lambda: _make_info_log("glGetShaderInfoLog", "glGetShaderiv"),
    "glGetProgramInfoLog": lambda: _make_info_log("glGetProgramInfoLog", "glGetProgramiv"),
    "glGetError": lambda: gl_function("glGetError"),
}
# the argument that is a data pointer, by position
# (index, the numpy type an input array becomes: a GL type argument's index, a dtype, or None for
# raw bytes, whether GL writes there)
_DATA_ARGUMENT = {"glBufferData": (2, None, False), "glBufferSubData": (3, None, False),
                  "glBufferStorage": (2, None, False), "glNamedBufferData": (2, None, False),
                  "glClearNamedBufferData": (4, 3, False), "glTexImage2D": (8, 7, False),
                  "glTexSubImage2D": (8, 7, False), "glUniformMatrix4fv": (3, np.float32, False),
                  "glVertexAttribPointer": (5, None, False), "glGetBufferSubData": (3, None, True),
                  "glGetTexImage": (4, None, True)}


def _dtype_of(spec):
    """``args -> numpy type`` for a ``_DATA_ARGUMENT`` spec: None (raw bytes), a dtype, or the index
    of the call's GL type argument."""
    if spec is None:
        return None
    if isinstance(spec, int):
        return lambda args: _DTYPES.get(int(args[spec]))  # unknown (packed) types: bytes as they are
    return lambda args: spec


def _resolve(name: str):
    if name in _BUILDERS:
        return _BUILDERS[name]()
    if name in _GEN:
        return _make_gen(name)
    if name in _DELETE:
        return _make_delete(name)
    if name in _DATA_ARGUMENT:
        index, dtype, output = _DATA_ARGUMENT[name]
        return _make_data_call(name, index, _dtype_of(dtype), output)
    return _checked(name, gl_function(name))


def __getattr__(name: str):
    """An entry point on first use: resolved, checked, and kept on the module (the next lookup is
    a plain attribute). Raises GlError where the GL does not export it."""
    if not name.startswith("gl") or name not in SIGNATURES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    fn = _resolve(name)
    setattr(sys.modules[__name__], name, fn)
    return fn


def forget() -> None:
    """Drop the resolved entry points (a test that changes ``app.gl.raw.gl_function``'s answers)."""
    module = sys.modules[__name__]
    for name in list(vars(module)):
        if name.startswith("gl") and name in SIGNATURES:
            delattr(module, name)
