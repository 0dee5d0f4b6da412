"""CPU probe: llvmpipe's cost of the fountain's points in a core-profile context (glshare's, GL 3.3
core: points are sprites, rasterized as quads) against a compatibility context (the classic
sample's: legacy points, rasterized as rectangles). Not part of the package; under Xvfb, from the
project root:

    xvfb-run -a python bench/probes/cpu_point_raster_probe.py core [scale]
    xvfb-run -a python bench/probes/cpu_point_raster_probe.py compat [scale]

Each mode draws the same 100,000 points (seeded positions on a ring of the fountain's start state,
``scale`` of the window, 2 pixels, alpha-blended) into an 800x600 window's back buffer: the draw call
(binning) and the glFinish after it (rasterization) are timed apart, median of 200 frames. The core
mode writes gl_PointSize in its vertex shader. One JSON line. Run the modes alternately: this
machine's speed drifts between processes.
"""
import ctypes
import json
import statistics
import sys
import time

import glfw
import numpy as np
from OpenGL import GL

mode = sys.argv[1] if len(sys.argv) > 1 else "core"
scale = float(sys.argv[2]) if len(sys.argv) > 2 else 0.9
N, W, H = 100_000, 800, 600
if not glfw.init():
    raise SystemExit("no GLFW")
if mode == "core":
    glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
    glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
    glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
    glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
else:
    glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 2)
    glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 1)
win = glfw.create_window(W, H, f"points {mode}", None, None)
glfw.make_context_current(win)
glfw.swap_interval(0)

rng = np.random.default_rng(1)
i = np.arange(N)
k1, k2 = rng.random(2)
pos = np.zeros((N, 4), np.float32)
pos[:, 0] = np.sin(2.001 * np.pi * i / N) * (0.2 + k1) * scale
pos[:, 1] = np.cos(2.001 * np.pi * i / N) * (0.2 + k2) * scale
pos[:, 3] = 1
col = np.ones((N, 4), np.float32)
col[:, 3] = rng.random(N)

vbo = GL.glGenBuffers(2)
GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo[0])
GL.glBufferData(GL.GL_ARRAY_BUFFER, pos.nbytes, pos, GL.GL_STATIC_DRAW)
GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo[1])
GL.glBufferData(GL.GL_ARRAY_BUFFER, col.nbytes, col, GL.GL_STATIC_DRAW)

if mode == "core":
    vs = """#version 330 core
layout(location = 0) in vec4 position; layout(location = 1) in vec4 color; out vec4 v_color;
void main() { gl_Position = vec4(position.xyz, 1.0); gl_PointSize = 2.0; v_color = color; }"""
    fs = """#version 330 core
in vec4 v_color; out vec4 frag_color; void main() { frag_color = v_color; }"""
    prog = GL.glCreateProgram()
    for kind, src in ((GL.GL_VERTEX_SHADER, vs), (GL.GL_FRAGMENT_SHADER, fs)):
        sh = GL.glCreateShader(kind)
        GL.glShaderSource(sh, src)
        GL.glCompileShader(sh)
        GL.glAttachShader(prog, sh)
    GL.glLinkProgram(prog)
    vao = GL.glGenVertexArrays(1)
    GL.glBindVertexArray(vao)
    for loc in (0, 1):
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo[loc])
        GL.glEnableVertexAttribArray(loc)
        GL.glVertexAttribPointer(loc, 4, GL.GL_FLOAT, GL.GL_FALSE, 0, ctypes.c_void_p(0))
    GL.glUseProgram(prog)
    GL.glEnable(GL.GL_PROGRAM_POINT_SIZE)
else:  # the classic sample's fixed-function draw
    GL.glPointSize(2)
    GL.glEnableClientState(GL.GL_VERTEX_ARRAY)
    GL.glEnableClientState(GL.GL_COLOR_ARRAY)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo[0])
    GL.glVertexPointer(4, GL.GL_FLOAT, 0, None)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo[1])
    GL.glColorPointer(4, GL.GL_FLOAT, 0, None)
GL.glEnable(GL.GL_BLEND)
GL.glBlendFunc(GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)

draw, raster = [], []
for f in range(220):
    GL.glClear(GL.GL_COLOR_BUFFER_BIT)
    GL.glFinish()
    t0 = time.perf_counter_ns()
    GL.glDrawArrays(GL.GL_POINTS, 0, N)
    t1 = time.perf_counter_ns()
    GL.glFinish()
    t2 = time.perf_counter_ns()
    glfw.swap_buffers(win)
    if f >= 20:
        draw.append((t1 - t0) / 1e6)
        raster.append((t2 - t1) / 1e6)
print(json.dumps({"mode": mode, "scale": scale, "gl": GL.glGetString(GL.GL_VERSION).decode(), "points": N,
                  "draw_ms": round(statistics.median(draw), 3), "raster_ms": round(statistics.median(raster), 3)}))
glfw.terminate()
