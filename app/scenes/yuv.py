"""The yuv scene: a moving NV12 / P010 test pattern, uploaded by GL, converted to RGBA by CL.

Each frame GL holds two textures (integer formats: GL never samples them, CL reads exact codes):
    Y   width x height      GL_R8UI  / GL_R16UI   (GL_RED_INTEGER)  shared read_only
    UV  width/2 x height/2  GL_RG8UI / GL_RG16UI  (GL_RG_INTEGER)   shared read_only
and an RGBA8 texture CL writes (shared write_only), drawn on a full-window quad. Integer GL formats
because cl_amd_planar_yuv's table gives the planes CL_UNSIGNED_INT8 / CL_UNSIGNED_INT16, which is
what cl_khr_gl_sharing maps GL_R8UI / GL_RG8UI / GL_R16UI / GL_RG16UI to. On a device without
two-channel images (PoCL 3.1) the UV texture is GL_R8UI / GL_R16UI of width x height/2 with the
same interleaved bytes (app/cl/planar.py says why). Where the backend gives textures to CL
as pitched buffers (external_memory without cl_khr_image2d_from_buffer, NVIDIA), there are no
plane images to take: the scene runs the buffer variant of the same kernel on the Y, UV and RGBA
buffers (``buffer_planes``).

The planes reach the textures through pixel-unpack buffers (glBufferSubData into the PBO, then
glTexSubImage2D from it). GL may write them only while it owns them, that is outside the
acquire/release bracket, so ``render`` uploads the *next* frame after drawing this one (the first
frame is uploaded by ``build``); host_copy's acquire then copies GL -> CL because GL changed them.
After a runtime switch the first frame shows frame 0's pattern. Matrix BT.709, limited range
(the HD default); ``matrix`` and ``range_`` may be changed between frames.
"""
from __future__ import annotations

import logging

import numpy as np
from OpenGL import GL

from app.cl.planar import YuvImage, plane_layout
from app.gl.formats import unsigned_integer
from app.gl.objects import GlBuffer
from app.gl.quad import ImageQuad
from app.gl.upload import stream_into, texture_from_unpack_buffer
from app.scenes.base import Scene
from app.yuv.converter import YuvConverter, planes_of
from app.yuv.formats import yuv_format
from app.yuv.pattern import pattern_frame

log = logging.getLogger(__name__)

DEFAULT_YUV_SIZE = (640, 360)


class YuvScene(Scene):
    name = "yuv"
    title = "NV12 / P010 planes converted to RGBA on CL"
    order = 30
    size_kind = "image"
    default_size = DEFAULT_YUV_SIZE
    even_size = True
    panel_sizes = ("320x180", "640x360", "1280x720", "1920x1080")

    def build(self, backend, size) -> None:
        self.backend = backend
        self._built: list = []  # what teardown undoes, in reverse
        try:
            self._build(backend)
        except BaseException:
            self.teardown()
            raise

    def _build(self, backend) -> None:
        self.fmt = yuv_format(self.cfg.yuv_format)
        self.matrix, self.range_ = "bt709", "limited"
        self.image_size = tuple(self.current_size)
        w, h = self.image_size
        self.layout = plane_layout(backend.context, self.fmt, w, h)
        wb = self.fmt.word_bytes
        self.y = backend.create_texture("yuv.y", *self.layout.y_shape, fmt=unsigned_integer(wb, 1),
                                        access="read_only")
        self._built.append(("shared", self.y))
        self.uv = backend.create_texture("yuv.uv", *self.layout.uv_shape,
                                         fmt=unsigned_integer(wb, 1 if self.layout.uv_pairs else 2), access="read_only")
        self._built.append(("shared", self.uv))
        self.out = backend.create_texture("yuv.rgba", w, h, access="write_only", drawn_by_quad=True)
        self._built.append(("shared", self.out))
        self.shared = [self.y, self.uv, self.out]
        self.buffer_planes = not all(o.is_image for o in self.shared)
        self.yuv, self.planes = None, ()
        if not self.buffer_planes:
            self.yuv = YuvImage.wrap(backend.context, self.fmt, w, h, self.y.mem, self.uv.mem, label="yuv.frame",
                                     owner=backend.name)
            self._built.append(("release", self.yuv))
            self.planes = planes_of(backend.context, self.yuv)
            self._built.extend(("release", p) for p in self.planes)
        self.converter = YuvConverter(backend.context, self.layout, owner=backend.name)
        self._built.append(("release", self.converter))
        self.pbos = {}
        for obj in (self.y, self.uv):
            pbo = GlBuffer(f"{obj.label}.unpack", obj.pitch * obj.gl.height, target=GL.GL_PIXEL_UNPACK_BUFFER,
                           usage=GL.GL_STREAM_DRAW, owner=backend.name)
            self.pbos[obj.label] = pbo
            self._built.append(("release", pbo))
        self.quad = ImageQuad("yuv quad", owner=backend.name)
        self._built.append(("release", self.quad))
        self.uploaded_frame: int | None = None  # the pattern frame GL's Y/UV textures hold
        self.shown_frame: int | None = None  # the pattern frame the RGBA texture shows
        self._last_computed = -1
        self.upload(0)

    # -- GL upload ---------------------------------------------------------------------------
    def upload(self, frame: int) -> None:
        """Write frame ``frame`` of the pattern into the Y and UV textures through their PBOs (and,
        where a texture's texels live in a buffer CL reads, into that buffer).

        GL must own the textures (outside acquire/release); marks them changed for the backend.
        """
        w, h = self.image_size
        y, uv = pattern_frame(self.fmt, w, h, frame)
        self.backend.tracker.gl_use([self.y, self.uv], "upload")
        for obj, words in ((self.y, y), (self.uv, uv)):
            tex, pbo = obj.gl, self.pbos[obj.label]
            rows = np.ascontiguousarray(words).view(np.uint8).reshape(tex.height, -1)
            pitch = obj.pitch
            if pitch != rows.shape[1]:
                padded = np.zeros((tex.height, pitch), np.uint8)
                padded[:, :rows.shape[1]] = rows
                rows = padded
            stream_into(pbo, rows)
            texture_from_unpack_buffer(tex, pbo.name, pitch)
            if obj.storage is not None:  # external_memory: CL reads this imported buffer
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, pbo.name)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, obj.storage.name)
                GL.glCopyBufferSubData(GL.GL_COPY_READ_BUFFER, GL.GL_COPY_WRITE_BUFFER, 0, 0, rows.nbytes)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
            obj.gl_wrote()
        self.uploaded_frame = frame

    # -- the frame -----------------------------------------------------------------------------
    def compute(self, queue, frame, wait_for):
        if self.uploaded_frame != frame:
            log.debug("frame %d converts pattern frame %s (first frame after a build)", frame, self.uploaded_frame)
        self._last_computed = frame
        self.shown_frame = self.uploaded_frame
        if self.buffer_planes:
            return self.converter.enqueue_buffers(queue, self.y.mem, self.y.pitch, self.uv.mem,
                                                  self.uv.pitch, self.out.mem, self.out.pitch,
                                                  self.fmt, self.matrix, self.range_, wait_for)
        return self.converter.enqueue(queue, self.planes[0], self.planes[1], self.out.mem, self.fmt,
                                      self.matrix, self.range_, wait_for)

    def render(self, size) -> None:
        self.quad.draw(self.out.gl)
        upcoming = self._last_computed + 1
        if self.uploaded_frame != upcoming:  # GL owns the planes now: stage the next frame
            self.upload(upcoming)

    def teardown(self) -> None:
        """Plane images, the YUV image and the converter, then each shared object CL side first."""
        backend, self.backend = self.backend, None
        if backend is None:
            return
        for kind, thing in reversed(self._built):
            if kind == "shared":
                backend.destroy(thing)
            else:
                thing.release()
        self._built = []
        self.shared = []

    def describe(self) -> str:
        w, h = self.image_size
        matrix = {"bt601": "BT.601", "bt709": "BT.709"}[self.matrix]
        planes = ", planes as buffers" if self.buffer_planes else ""
        return f"yuv ({self.fmt.name.upper()} test pattern), {w}x{h}, {matrix} {self.range_}{planes}"

    @property
    def current_size(self):
        return getattr(self, "image_size", None) or (tuple(self.size) if self.size else self.default_size)
