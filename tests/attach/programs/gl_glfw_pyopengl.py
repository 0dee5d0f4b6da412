"""A small PyOpenGL + GLFW program for tests/attach/test_gl_preload.py (GLX, under Xvfb).

Draws a textured quad from a vertex array (a vertex buffer, an index buffer, both mapped once)
into a hidden 64x64 window for FRAMES frames with a swap after each, alternating the four draw
calls; then a fence (glFenceSync, glWaitSync, glClientWaitSync, glDeleteSync), glFlush, glFinish;
reads the last frame's pixels back before its swap, writes them to argv[1] (raw RGBA) and deletes
its objects.
Prints the object names as one JSON line. GLFW and PyOpenGL load libGL with dlopen and look each
function up with dlsym: the road glshare's preload library must catch.
"""
from __future__ import annotations

import ctypes
import json
import sys

import glfw
import numpy as np
from OpenGL import GL

FRAMES = 6
SIZE = 64

VS = """#version 330 core
layout(location=0) in vec2 pos; layout(location=1) in vec2 uv; out vec2 v_uv;
void main() { v_uv = uv; gl_Position = vec4(pos * (1.0 - 0.1 * gl_InstanceID), 0, 1); }
"""
FS = """#version 330 core
in vec2 v_uv; uniform sampler2D tex; out vec4 color;
void main() { color = texture(tex, v_uv); }
"""


def program() -> int:
    prog = GL.glCreateProgram()
    for kind, src in ((GL.GL_VERTEX_SHADER, VS), (GL.GL_FRAGMENT_SHADER, FS)):
        sh = GL.glCreateShader(kind)
        GL.glShaderSource(sh, src)
        GL.glCompileShader(sh)
        if not GL.glGetShaderiv(sh, GL.GL_COMPILE_STATUS):
            raise SystemExit(GL.glGetShaderInfoLog(sh).decode())
        GL.glAttachShader(prog, sh)
    GL.glLinkProgram(prog)
    GL.glUseProgram(prog)
    GL.glUniform1i(GL.glGetUniformLocation(prog, "tex"), 2)
    return prog


def main(out_path: str) -> None:
    if not glfw.init():
        raise SystemExit("glfw.init failed")
    glfw.window_hint(glfw.VISIBLE, glfw.FALSE)
    glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
    glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
    glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
    window = glfw.create_window(SIZE, SIZE, "gl_glfw_pyopengl", None, None)
    if not window:
        raise SystemExit("glfw.create_window failed")
    glfw.make_context_current(window)
    program()

    vao = GL.glGenVertexArrays(1)
    GL.glBindVertexArray(vao)
    vbo, ebo = (int(b) for b in GL.glGenBuffers(2))
    verts = np.array([-0.8, -0.8, 0, 0, 0.8, -0.8, 1, 0, 0.8, 0.8, 1, 1, -0.8, 0.8, 0, 1], np.float32)
    idx = np.array([0, 1, 2, 0, 2, 3], np.uint16)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo)
    GL.glBufferData(GL.GL_ARRAY_BUFFER, verts.nbytes, None, GL.GL_STATIC_DRAW)
    GL.glBufferSubData(GL.GL_ARRAY_BUFFER, 0, verts.nbytes, verts)
    GL.glVertexAttribPointer(0, 2, GL.GL_FLOAT, GL.GL_FALSE, 16, ctypes.c_void_p(0))
    GL.glVertexAttribPointer(1, 2, GL.GL_FLOAT, GL.GL_FALSE, 16, ctypes.c_void_p(8))
    GL.glEnableVertexAttribArray(0)
    GL.glEnableVertexAttribArray(1)
    GL.glBindBuffer(GL.GL_ELEMENT_ARRAY_BUFFER, ebo)
    GL.glBufferData(GL.GL_ELEMENT_ARRAY_BUFFER, idx.nbytes, None, GL.GL_STATIC_DRAW)
    ptr = GL.glMapBufferRange(GL.GL_ELEMENT_ARRAY_BUFFER, 0, idx.nbytes, GL.GL_MAP_WRITE_BIT)
    ctypes.memmove(ptr, idx.ctypes.data, idx.nbytes)
    GL.glUnmapBuffer(GL.GL_ELEMENT_ARRAY_BUFFER)
    if not GL.glMapBuffer(GL.GL_ARRAY_BUFFER, GL.GL_READ_ONLY):
        raise SystemExit("glMapBuffer failed")
    GL.glUnmapBuffer(GL.GL_ARRAY_BUFFER)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)  # the draws name the vertex array's buffers

    tex = int(GL.glGenTextures(1))
    GL.glActiveTexture(GL.GL_TEXTURE2)
    GL.glBindTexture(GL.GL_TEXTURE_2D, tex)
    texels = np.array([[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255], [255, 255, 0, 255]], np.uint8)
    GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, GL.GL_RGBA8, 2, 2, 0, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, texels)
    GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 1, 1, 1, 1, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE,
                       np.array([255, 255, 255, 255], np.uint8))
    GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MIN_FILTER, GL.GL_NEAREST)
    GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAG_FILTER, GL.GL_NEAREST)
    rb = int(GL.glGenRenderbuffers(1))

    GL.glViewport(0, 0, SIZE, SIZE)
    pixels = None
    for frame in range(FRAMES):
        GL.glClearColor(0.1 * frame, 0.2, 0.3, 1.0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)
        kind = frame % 4
        if kind == 0:
            GL.glDrawElements(GL.GL_TRIANGLES, 6, GL.GL_UNSIGNED_SHORT, None)
        elif kind == 1:
            GL.glDrawArrays(GL.GL_TRIANGLES, 0, 3)
        elif kind == 2:
            GL.glDrawElementsInstanced(GL.GL_TRIANGLES, 6, GL.GL_UNSIGNED_SHORT, None, 2)
        else:
            GL.glDrawArraysInstanced(GL.GL_TRIANGLES, 0, 3, 2)
        if frame == FRAMES - 1:
            sync = GL.glFenceSync(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)
            GL.glWaitSync(sync, 0, 0xFFFFFFFFFFFFFFFF)  # GL_TIMEOUT_IGNORED (PyOpenGL 3.1 defines it as -1)
            if GL.glClientWaitSync(sync, GL.GL_SYNC_FLUSH_COMMANDS_BIT, 1_000_000_000) == GL.GL_WAIT_FAILED:
                raise SystemExit("glClientWaitSync failed")
            GL.glDeleteSync(sync)
            GL.glFlush()
            GL.glFinish()
            pixels = GL.glReadPixels(0, 0, SIZE, SIZE, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE)
        glfw.swap_buffers(window)
    with open(out_path, "wb") as f:
        f.write(bytes(pixels))
    print(json.dumps({"vao": int(vao), "vbo": vbo, "ebo": ebo, "tex": tex, "rb": rb,
                      "frames": FRAMES}), flush=True)
    GL.glDeleteBuffers(2, [vbo, ebo])
    GL.glDeleteTextures([tex])
    GL.glDeleteRenderbuffers(1, [rb])
    GL.glDeleteVertexArrays(1, [vao])
    GL.glFinish()
    glfw.destroy_window(window)
    glfw.terminate()


if __name__ == "__main__":
    main(sys.argv[1])
