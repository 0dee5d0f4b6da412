"""app/gl/api.py: glshare's own GL entry points (ctypes, each call checked), against PyOpenGL's.

PyOpenGL is the reference here: the same GL state read both ways, the enums compared by name, the
pixels a call wrote read back with PyOpenGL and compared with numpy (exactly: RGBA8 clears and
uploads have no rounding)."""
from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import numpy as np
import pytest
from OpenGL import GL as PyGL
from support import ROOT

from app.errors import GlCallError, GlError, as_glshare_error
from app.gl import api as GL


def test_every_enum_is_the_one_pyopengl_names():
    names = [n for n in vars(GL) if n.startswith("GL_") and n != "GL_TIMEOUT_IGNORED"]
    assert len(names) > 100
    wrong = {n: (getattr(GL, n), int(getattr(PyGL, n))) for n in names if getattr(GL, n) != int(getattr(PyGL, n))}
    assert not wrong
    # the spec's GLuint64 0xFFFFFFFFFFFFFFFF (PyOpenGL's constant reads -(2**63 - 1): not that value)
    assert GL.GL_TIMEOUT_IGNORED == (1 << 64) - 1


def test_every_entry_point_the_app_calls_is_declared():
    """Each ``GL.gl*`` name used under app/ resolves here (a name missing from the prototypes
    would raise AttributeError only when its code path first ran)."""
    import re

    used = set()
    for path in (ROOT / "app").rglob("*.py"):
        used |= set(re.findall(r"\bGL\.(gl[A-Za-z0-9_]+)", path.read_text()))
    assert len(used) > 60
    assert sorted(n for n in used if n not in GL.SIGNATURES) == []


def test_queries_answer_as_pyopengl_does(gl):
    assert GL.glGetIntegerv(GL.GL_MAX_TEXTURE_SIZE) == int(PyGL.glGetIntegerv(PyGL.GL_MAX_TEXTURE_SIZE))
    assert GL.glGetIntegerv(GL.GL_VIEWPORT) == tuple(int(v) for v in PyGL.glGetIntegerv(PyGL.GL_VIEWPORT))
    assert GL.glGetIntegerv(GL.GL_MAX_VIEWPORT_DIMS) == tuple(int(v) for v in
                                                            PyGL.glGetIntegerv(PyGL.GL_MAX_VIEWPORT_DIMS))
    assert GL.glGetString(GL.GL_RENDERER) == PyGL.glGetString(PyGL.GL_RENDERER)
    n = GL.glGetIntegerv(GL.GL_NUM_EXTENSIONS)
    assert n == int(PyGL.glGetIntegerv(PyGL.GL_NUM_EXTENSIONS)) and n > 0
    assert GL.glGetStringi(GL.GL_EXTENSIONS, n - 1) == PyGL.glGetStringi(PyGL.GL_EXTENSIONS, n - 1)


def test_names_made_and_deleted(gl):
    one = GL.glGenBuffers(1)
    two = GL.glGenTextures(2)
    assert isinstance(one, int) and one > 0 and isinstance(two, list) and len(set(two)) == 2
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, one)
    assert PyGL.glIsBuffer(one)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)
    GL.glDeleteBuffers(1, [one])
    GL.glDeleteTextures(2, two)
    assert not PyGL.glIsBuffer(one) and not any(PyGL.glIsTexture(t) for t in two)


def test_a_call_that_leaves_an_error_raises_it_named(gl):
    with pytest.raises(GL.GLError) as err:
        GL.glEnable(0x7FFF)  # not a capability: GL_INVALID_ENUM
    assert isinstance(err.value, GlError) and err.value.code == GL.GL_INVALID_ENUM
    assert err.value.call == "glEnable" and "GL_INVALID_ENUM" in str(err.value)
    assert PyGL.glGetError() == PyGL.GL_NO_ERROR  # read by the check, not left behind
    wrapped = as_glshare_error(err.value, "render")  # as the scheduler records it: the phase, the call
    assert isinstance(wrapped, GlError) and not isinstance(wrapped, GlCallError)
    assert wrapped.where == "render" and "glEnable failed" in str(wrapped) and wrapped.__cause__ is err.value


def test_buffer_data_from_arrays_and_read_back(gl):
    data = np.arange(64, dtype=np.float32)
    name = GL.glGenBuffers(1)
    try:
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, name)
        GL.glBufferData(GL.GL_ARRAY_BUFFER, data.nbytes, data, GL.GL_STATIC_DRAW)
        strided = np.arange(64, dtype=np.float32)[::-1][::2]  # not contiguous: copied for the call
        GL.glBufferSubData(GL.GL_ARRAY_BUFFER, 16, strided.nbytes, strided)
        out = np.zeros(64, np.float32)
        GL.glGetBufferSubData(GL.GL_ARRAY_BUFFER, 0, out.nbytes, out.ctypes.data_as(ctypes.c_void_p))
        expected = data.copy()
        expected[4:4 + strided.size] = strided
        np.testing.assert_array_equal(out, expected)
        mine = np.frombuffer(bytes(PyGL.glGetBufferSubData(PyGL.GL_ARRAY_BUFFER, 0, out.nbytes)), np.float32)
        np.testing.assert_array_equal(mine, expected)
    finally:
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)
        GL.glDeleteBuffers(1, [name])


def test_texture_upload_and_read_pixels(gl):
    """An RGBA8 texture uploaded from numpy, drawn into a framebuffer by a blit, read back as bytes:
    every texel exact."""
    w, h = 16, 8
    texels = (np.arange(w * h * 4, dtype=np.uint32) * 7 % 251).astype(np.uint8).reshape(h, w, 4)
    tex = GL.glGenTextures(1)
    fbo, dst = GL.glGenFramebuffers(2)
    rb = GL.glGenRenderbuffers(1)
    try:
        GL.glBindTexture(GL.GL_TEXTURE_2D, tex)
        GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, GL.GL_RGBA8, w, h, 0, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, None)
        GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
        GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, texels)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, fbo)
        GL.glFramebufferTexture2D(GL.GL_READ_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_TEXTURE_2D, tex, 0)
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, rb)
        GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, GL.GL_RGBA8, w, h)
        GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, dst)
        GL.glFramebufferRenderbuffer(GL.GL_DRAW_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER, rb)
        assert GL.glCheckFramebufferStatus(GL.GL_DRAW_FRAMEBUFFER) == GL.GL_FRAMEBUFFER_COMPLETE
        GL.glBlitFramebuffer(0, 0, w, h, 0, 0, w, h, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, dst)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        got = np.frombuffer(GL.glReadPixels(0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE), np.uint8).reshape(h, w, 4)
        np.testing.assert_array_equal(got, texels)
        ref = np.frombuffer(bytes(PyGL.glReadPixels(0, 0, w, h, PyGL.GL_RGBA, PyGL.GL_UNSIGNED_BYTE)), np.uint8)
        np.testing.assert_array_equal(ref.reshape(h, w, 4), texels)
    finally:
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        GL.glDeleteFramebuffers(2, [fbo, dst])
        GL.glDeleteRenderbuffers(1, [rb])
        GL.glDeleteTextures(1, [tex])


def test_shader_source_status_and_log(gl):
    good = "#version 330 core\nuniform float k;\nout vec4 c;\nvoid main() { c = vec4(k); }\n"
    shader = GL.glCreateShader(GL.GL_FRAGMENT_SHADER)
    bad = GL.glCreateShader(GL.GL_FRAGMENT_SHADER)
    program = GL.glCreateProgram()
    try:
        GL.glShaderSource(shader, good)
        GL.glCompileShader(shader)
        assert GL.glGetShaderiv(shader, GL.GL_COMPILE_STATUS) == 1
        GL.glShaderSource(bad, "#version 330 core\nvoid main() { this is not glsl; }\n")
        GL.glCompileShader(bad)
        assert GL.glGetShaderiv(bad, GL.GL_COMPILE_STATUS) == 0
        log = GL.glGetShaderInfoLog(bad)
        assert isinstance(log, bytes) and log == PyGL.glGetShaderInfoLog(bad)  # the driver's own words, whole
        assert log.strip()
        GL.glAttachShader(program, shader)
        GL.glLinkProgram(program)
        assert GL.glGetProgramiv(program, GL.GL_LINK_STATUS) == 1
        assert GL.glGetUniformLocation(program, "k") == PyGL.glGetUniformLocation(program, "k") >= 0
        assert GL.glGetUniformLocation(program, "missing") == -1
    finally:
        GL.glDeleteProgram(program)
        GL.glDeleteShader(shader)
        GL.glDeleteShader(bad)


def test_a_headless_run_does_not_import_pyopengls_gl():
    """What the start-up saves: PyOpenGL's OpenGL.GL (a wrapper module per GL version and
    extension) is not imported by a headless run (the default backend: host_mapped on the CPU,
    external_memory on the GPU machine); the run still draws."""
    code = ("import json, sys, runpy\n"
            "sys.argv = ['glshare', 'run', '--headless', '--quiet', '--frames', '3', '--scene', 'image',\n"
            "            '--report', sys.argv[1]]\n"
            "try:\n"
            "    runpy.run_module('app', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'OpenGL.GL' or m.startswith('OpenGL.GL.'))))\n")
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
        env["PYOPENGL_PLATFORM"] = "egl"
        res = subprocess.run([sys.executable, "-c", code, report], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, env=env)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout.strip().splitlines()[-1]) == []
        with open(report) as f:
            rep = json.load(f)
    assert rep["frames"] == 3 and not rep["errors"]


def test_vector_queries_and_unbounded_ones(gl):
    assert GL.glGetIntegerv(GL.GL_SCISSOR_BOX) == tuple(int(v) for v in PyGL.glGetIntegerv(PyGL.GL_SCISSOR_BOX))
    assert GL.glGetIntegerv(GL.GL_COLOR_WRITEMASK) == (1, 1, 1, 1)
    with pytest.raises(ValueError, match="driver-sized list"):
        GL.glGetIntegerv(GL.GL_COMPRESSED_TEXTURE_FORMATS)


def test_a_float64_matrix_is_uploaded_as_float32(gl):
    """PyOpenGL converted an array to the call's type; so does glshare's wrapper (a float64 matrix
    passed raw would reach GL as the bytes of other numbers)."""
    src = ("#version 330 core\nuniform mat4 m;\nin vec4 p;\nvoid main() { gl_Position = m * p; }\n",
           "#version 330 core\nout vec4 c;\nvoid main() { c = vec4(1.0); }\n")
    program = GL.glCreateProgram()
    shaders = []
    for kind, text in zip((GL.GL_VERTEX_SHADER, GL.GL_FRAGMENT_SHADER), src):
        sh = GL.glCreateShader(kind)
        GL.glShaderSource(sh, text)
        GL.glCompileShader(sh)
        GL.glAttachShader(program, sh)
        shaders.append(sh)
    try:
        GL.glLinkProgram(program)
        assert GL.glGetProgramiv(program, GL.GL_LINK_STATUS) == 1
        GL.glUseProgram(program)
        loc = GL.glGetUniformLocation(program, "m")
        m = np.arange(16, dtype=np.float64).reshape(4, 4)
        GL.glUniformMatrix4fv(loc, 1, GL.GL_FALSE, m)
        got = np.zeros(16, np.float32)
        PyGL.glGetUniformfv(program, loc, got)
        np.testing.assert_array_equal(got, m.astype(np.float32).ravel())
    finally:
        GL.glUseProgram(0)
        GL.glDeleteProgram(program)
        for sh in shaders:
            GL.glDeleteShader(sh)


def test_read_pixels_honours_the_pack_alignment_and_outputs_must_be_writable(gl):
    """3 x 3 single-channel bytes at the default alignment of 4: rows of 3 bytes padded to 4, 11
    bytes in all (a buffer of w*h bytes would be overrun), each row the cleared red (0.2 -> 51)."""
    assert gl.bind_target()  # the session surface's framebuffer
    GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 4)
    try:
        GL.glClearColor(0.2, 0.4, 0.6, 1.0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)
        got = GL.glReadPixels(0, 0, 3, 3, GL.GL_RED, GL.GL_UNSIGNED_BYTE)
        assert len(got) == 11
        assert [got[r * 4:r * 4 + 3] for r in range(3)] == [bytes([51] * 3)] * 3
    finally:
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
    strided = np.zeros((4, 8), np.uint8)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous and writeable"):
        GL.glReadPixels(0, 0, 1, 1, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, strided)


def test_info_log_asked_before_any_status():
    """glGet*InfoLog resolves the query it needs itself (in a fresh interpreter: nothing resolved yet)."""
    code = ("from app.window.egl_headless import EglSurface\n"
            "s = EglSurface((16, 16))\n"
            "from app.gl import api as GL\n"
            "sh = GL.glCreateShader(GL.GL_FRAGMENT_SHADER)\n"
            "print(repr(GL.glGetShaderInfoLog(sh)))\n"
            "s.close()\n")
    import os

    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env["PYOPENGL_PLATFORM"] = "egl"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "b''"
