"""GL entry points the frame calls every time, resolved once and called straight through ctypes
with prepared argument arrays: no PyOpenGL wrapper, argument conversion or per-call glGetError.

What is called this way is checked once per frame instead (``check_gl`` after the render phase's
draw): an error is still recorded on its frame, not lost. Everything else goes through
``app.gl.api``, which resolves its entry points here and checks each call.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

from app.errors import GlError

GLuint, GLint, GLenum, GLsizei, GLfloat = ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_int, ctypes.c_float
GLbitfield, GLboolean, GLint64, GLuint64 = ctypes.c_uint, ctypes.c_ubyte, ctypes.c_int64, ctypes.c_uint64
GLintptr = GLsizeiptr = ctypes.c_ssize_t
P = ctypes.POINTER

SIGNATURES = {
    "glClearColor": (None, [GLfloat, GLfloat, GLfloat, GLfloat]),
    "glClear": (None, [ctypes.c_uint]),
    "glUseProgram": (None, [GLuint]),
    "glActiveTexture": (None, [GLenum]),
    "glBindTexture": (None, [GLenum, GLuint]),
    "glBindVertexArray": (None, [GLuint]),
    "glDrawArrays": (None, [GLenum, GLint, GLsizei]),
    "glUniform1i": (None, [GLint, GLint]),
    "glUniform2i": (None, [GLint, GLint, GLint]),
    "glFlush": (None, []),
    "glFinish": (None, []),
    "glBindFramebuffer": (None, [GLenum, GLuint]),
    "glViewport": (None, [GLint, GLint, GLsizei, GLsizei]),
    "glDisable": (None, [GLenum]),
    "glEnable": (None, [GLenum]),
    "glScissor": (None, [GLint, GLint, GLsizei, GLsizei]),
    "glFenceSync": (ctypes.c_void_p, [GLenum, ctypes.c_uint]),
    "glClientWaitSync": (GLenum, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64]),
    "glDeleteSync": (None, [ctypes.c_void_p]),
    "glQueryCounter": (None, [GLuint, GLenum]),
    "glGetQueryObjectiv": (None, [GLuint, GLenum, P(GLint)]),
    "glGetQueryObjectui64v": (None, [GLuint, GLenum, P(ctypes.c_uint64)]),
    "glGetError": (GLenum, []),
    "glSignalSemaphoreEXT": (None, [GLuint, GLuint, P(GLuint), GLuint, P(GLuint), P(GLenum)]),
    "glWaitSemaphoreEXT": (None, [GLuint, GLuint, P(GLuint), GLuint, P(GLuint), P(GLenum)]),
}


@lru_cache(maxsize=None)
def gl_function(name: str):
    """The entry point ``name`` (a key of SIGNATURES, which ``app.gl.api`` extends with its own) of
    the current GL, as a ctypes function.

    Raises:
        GlError: the GL implementation does not export it.
    """
    from OpenGL import platform  # PyOpenGL binds its platform at its first import: after select_platform

    address = platform.PLATFORM.getExtensionProcedure(name.encode())
    if not address:
        raise GlError(0, where=name, detail="this GL does not export it")
    restype, argtypes = SIGNATURES[name]
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)


def uint_array(values) -> ctypes.Array:
    values = list(values)
    return (GLuint * max(1, len(values)))(*values)
