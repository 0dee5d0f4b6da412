"""The animated Julia set (../shared/WORKLOADS.md): CL writes an image2d_t into a GL texture.

The texture is GL_RGBA8, seen by CL as CL_RGBA / CL_UNORM_INT8 (write_imagef rounds to 8 bits).
Where the backend offers it (external_memory, ``buffer_texture_display``) the scene asks for a
buffer texture: GL then draws the imported buffer CL wrote directly (``BufferTextureQuad``), with
no copy into a 2D texture; the shared object's ``private["display_path"]`` says which it got.
Without ``--size`` the image follows the framebuffer (re-created on resize, CL side first);
with ``--size WxH`` it keeps that size and the quad scales it.
"""
from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from app.cl.programs import KernelProgram
from app.config import DEFAULT_IMAGE
from app.gl.objects import GlBufferTexture
from app.gl.quad import BufferTextureQuad, TexturedQuad
from app.scenes.base import Scene


def julia_constant(frame: int) -> tuple[float, float]:
    return (math.sin(2 * math.pi * (frame % 599) / 599), math.sin(2 * math.pi * (frame % 773) / 773))


def julia_reference(width: int, height: int, frame: int) -> np.ndarray:
    """float64 numpy reference of the kernel: uint8 RGBA, row 0 first."""
    cr, ci = julia_constant(frame)
    x = np.arange(width, dtype=np.float64)[None, :].repeat(height, 0)
    y = np.arange(height, dtype=np.float64)[:, None].repeat(width, 1)
    a = x * 3.0 / width - 1.5
    b = y * 3.0 / height - 1.5
    count = np.zeros((height, width), np.int32)
    alive = np.ones((height, width), bool)
    for _ in range(16):
        alive &= (a * a + b * b) < 4.0
        count += alive
        a, b = np.where(alive, a * a - b * b + cr, a), np.where(alive, 2 * a * b + ci, b)
    r = np.clip(count / 16.0, 0, 1)
    rgba = np.stack([r, np.sqrt(r), np.ones_like(r), np.ones_like(r)], -1)
    return np.round(rgba * 255).astype(np.uint8)


class ImageScene(Scene):
    name = "image"

    def build(self, backend, size) -> None:
        self.backend = backend
        self.follow_window = self.cfg.size is None
        self.image_size = tuple(size) if self.follow_window else tuple(self.cfg.size)
        if self.follow_window and (self.image_size[0] == 0 or self.image_size[1] == 0):
            self.image_size = DEFAULT_IMAGE
        self.texture = None
        self.quad: TexturedQuad | BufferTextureQuad | None = None
        self._make_texture()
        self.program = KernelProgram(backend.context, "julia.cl", owner=backend.name)
        self.kernel = self.program.kernel("julia")
        self.kernel_buffer = self.program.kernel("julia_buffer")

    def _make_texture(self) -> None:
        w, h = self.image_size
        extra = {"buffer_texture": True} if getattr(self.backend, "buffer_texture_display", False) else {}
        self.texture = self.backend.create_texture("image.julia", w, h, access="write_only", **extra)
        self.shared = [self.texture]
        # the quad that draws what the backend made (a resize may change it: a buffer texture's
        # texel limit); built once per kind
        kind = BufferTextureQuad if isinstance(self.texture.gl, GlBufferTexture) else TexturedQuad
        if not isinstance(self.quad, kind):
            if self.quad is not None:
                self.quad.release()
            self.quad = kind("image quad", owner=self.backend.name)

    def resize(self, size) -> None:
        if not self.follow_window or size[0] == 0 or size[1] == 0 or tuple(size) == self.image_size:
            return  # minimized: keep the last image until there are pixels again
        self.backend.destroy(self.texture)  # CL image released before the GL texture is deleted
        self.image_size = tuple(size)
        self._make_texture()

    def compute(self, queue, frame, wait_for):
        cr, ci = julia_constant(frame)
        w, h = self.image_size
        tex = self.texture
        if tex.is_image:
            kernel = self.kernel
            kernel.set_args(tex.mem, np.float32(cr), np.float32(ci))
        else:
            kernel = self.kernel_buffer
            kernel.set_args(tex.mem, np.int32(w), np.int32(h), np.int32(tex.row_pitch // 4), np.float32(cr),
                            np.float32(ci))
        return cl.enqueue_nd_range_kernel(queue, kernel, (w, h), None, wait_for=wait_for)

    def render(self, size) -> None:
        gl = self.texture.gl
        if isinstance(gl, GlBufferTexture):  # display_path "buffer texture": gl_after_release copied nothing
            self.quad.draw(gl)
        else:
            self.quad.draw(gl.name)

    def teardown(self) -> None:
        backend, self.backend = self.backend, None
        if backend is None:
            return
        backend.destroy(self.texture)
        self.shared = []
        self.program.release()
        if self.quad is not None:
            self.quad.release()

    def describe(self) -> str:
        shown = ", shown from a buffer texture" if isinstance(self.quad, BufferTextureQuad) else ""
        return f"image (Julia set), {self.image_size[0]}x{self.image_size[1]} RGBA8{shown}"
