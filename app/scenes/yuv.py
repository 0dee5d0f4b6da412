"""The yuv scene: a moving NV12 / P010 test pattern, uploaded by GL, converted to RGBA by CL.

Each frame GL holds two textures (integer formats: GL never samples them, CL reads exact codes):
    Y   width x height      GL_R8UI  / GL_R16UI   (GL_RED_INTEGER)  shared read_only
    UV  width/2 x height/2  GL_RG8UI / GL_RG16UI  (GL_RG_INTEGER)   shared read_only
and an RGBA8 texture CL writes (shared write_only), drawn on a full-window quad. Integer GL formats
because cl_amd_planar_yuv's table gives the planes CL_UNSIGNED_INT8 / CL_UNSIGNED_INT16, which is
what cl_khr_gl_sharing maps GL_R8UI / GL_RG8UI / GL_R16UI / GL_RG16UI to. On a device without
two-channel images (PoCL 3.1) the UV texture is GL_R8UI / GL_R16UI of width x height/2 with the
same interleaved bytes (app/yuv/planar.py says why). Where the backend gives textures to CL
as pitched buffers (external_memory without cl_khr_image2d_from_buffer, NVIDIA), there are no
plane images to take: the scene runs the buffer variant of the same kernel on the Y, UV and RGBA
buffers (``buffer_planes``).

The planes reach the textures through pixel-unpack buffers (glBufferSubData into the PBO, then
glTexSubImage2D from it). GL may write them only while it owns them, that is outside the
acquire/release bracket, so ``render`` uploads the *next* frame after drawing this one (the first
frame is uploaded by ``build``); host_copy's acquire then copies GL -> CL because GL changed them.
After a runtime switch the first frame shows frame 0's pattern. Matrix BT.709, limited range
(the HD default); ``matrix`` and ``range_`` may be changed between frames.

With ``--video FILE`` (``RunConfig.video``) the planes come from a decoded video instead
(app/yuv/video.py, PyAV: any file FFmpeg reads): NV12 for 8-bit sources, P010 for deeper ones
(``--yuv-format`` does not apply), the frame size is the video's, and the matrix and range are
the stream's where it says them (else the players' defaults, as VideoSource describes). One
In a window (``realtime``, set by the session) the video plays at the file's rate: each upload
shows the frame of the time played so far (the loop's time, each step of it at most
``MAX_VIDEO_STEP_S``, so a pause or a stall does not skip the video ahead), the same frame staying
while the loop runs faster than the file. Headless runs render offline: one decoded frame per frame
of the loop, loop frame n shows video frame n modulo the frame count (it loops). Paused, the same
frame stays (nothing is decoded); ``describe()`` carries the frame counter.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np

from app.gl import api as GL
from app.gl.formats import unsigned_integer
from app.gl.objects import GlBuffer
from app.gl.quad import ImageQuad
from app.gl.upload import stream_into, texture_from_unpack_buffer
from app.scenes.base import Scene, SceneOption
from app.yuv.converter import YuvConverter, planes_of
from app.yuv.formats import yuv_format
from app.yuv.pattern import pattern_frame
from app.yuv.planar import YuvImage, plane_layout

log = logging.getLogger(__name__)

DEFAULT_YUV_SIZE = (640, 360)
MAX_VIDEO_STEP_S = 0.1  # the most a video plays on between two uploads (a pause, a stall, a step)
MATRIX_NAMES = {"bt601": "BT.601", "bt709": "BT.709"}
_video_sizes: dict[tuple[str, int], tuple[int, int]] = {}  # (path, mtime) -> (W, H), for size_of


def video_size(path: Path) -> tuple[int, int]:
    """The (even) frame size of the video at ``path``, opened once per file version. Raises
    UsageError with one line where it is no video FFmpeg can read."""
    from app.yuv.video import VideoSource  # start-up: only where a video plays (decimal)

    try:
        key = (str(Path(path).resolve()), os.stat(path).st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _video_sizes:
        return _video_sizes[key]
    with VideoSource(path, owner="probe") as video:
        size = (video.width, video.height)
    if key is not None:
        _video_sizes[key] = size
    return size


class YuvScene(Scene):
    name = "yuv"
    title = "NV12 / P010 planes converted to RGBA on CL"
    order = 30
    size_kind = "image"
    default_size = DEFAULT_YUV_SIZE
    even_size = True
    panel_sizes = ("320x180", "640x360", "1280x720", "1920x1080")
    realtime = False  # a window's run (the session sets it): the video plays at the file's rate
    play_clock = staticmethod(time.perf_counter)  # seconds; the video's time runs on it where realtime

    @classmethod
    def size_of(cls, cfg):
        """With a video, its frame size (the window opens at it); else as every scene."""
        if cfg.video is not None:
            return video_size(cfg.video)
        return super().size_of(cfg)

    def build(self, backend, size) -> None:
        self.backend = backend
        self._built: list = []  # what teardown undoes, in reverse
        try:
            self._build(backend)
        except BaseException:
            self.teardown()
            raise

    def _build(self, backend) -> None:
        self.video = None
        if self.cfg.video is not None:
            from app.yuv.video import VideoSource  # start-up: only where a video plays (decimal)

            self.video = VideoSource(self.cfg.video, label=f"yuv video {Path(self.cfg.video).name}",
                                     owner=backend.name)
            self._built.append(("release", self.video))
            self.fmt = self.video.fmt
            self.matrix, self.range_ = self.video.matrix, self.video.range_
            self.image_size = (self.video.width, self.video.height)
        else:
            self.fmt = yuv_format(self.cfg.yuv_format)
            self.matrix, self.range_ = "bt709", "limited"
            self.image_size = tuple(self.current_size)
        self.video_index: int | None = None  # the video frame the Y/UV textures hold
        self._played_s, self._played_at = 0.0, None  # the video's time played (realtime), and when last
        self.shown_video_index: int | None = None  # the video frame the RGBA texture shows
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
        self.yuv, self.plane_images = None, ()
        if not self.buffer_planes:
            self.yuv = YuvImage.wrap(backend.context, self.fmt, w, h, self.y.mem, self.uv.mem, label="yuv.frame",
                                     owner=backend.name)
            self._built.append(("release", self.yuv))
            self.plane_images = planes_of(backend.context, self.yuv)
            self._built.extend(("release", p) for p in self.plane_images)
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
        self.set_local_size(self.cfg.local_size)
        self.upload(0)

    def local_size_kernels(self):
        name = "yuv420_to_rgba_buffer" if self.buffer_planes else "yuv420_to_rgba"
        return [self.converter.program.kernel(name)]

    def planes(self, frame: int) -> tuple[np.ndarray, np.ndarray]:
        """(Y, UV) words of loop frame ``frame``: the pattern's, or the video's frame ``frame`` (looping)."""
        if self.video is None:
            w, h = self.image_size
            return pattern_frame(self.fmt, w, h, frame)
        decoded = self.video.frame(self._video_frame(frame))
        self.video_index = decoded.index
        return decoded.y, decoded.uv

    def _video_frame(self, frame: int) -> int:
        """The video frame for loop frame ``frame``: ``frame`` itself offline; in real time the
        frame of the time played (``rate`` frames a second, each step at most MAX_VIDEO_STEP_S)."""
        if not self.realtime:
            return frame
        now = self.play_clock()
        if self._played_at is not None:
            self._played_s += min(max(now - self._played_at, 0.0), MAX_VIDEO_STEP_S)
        self._played_at = now
        return int(self._played_s * self.video.rate)

    # -- GL upload ---------------------------------------------------------------------------
    def upload(self, frame: int) -> None:
        """Write frame ``frame`` of the pattern into the Y and UV textures through their PBOs (and,
        where a texture's texels live in a buffer CL reads, into that buffer).

        GL must own the textures (outside acquire/release); marks them changed for the backend.
        """
        self.backend.tracker.gl_use([self.y, self.uv], "upload")
        held = self.video_index
        y, uv = self.planes(frame)
        if self.realtime and self.video is not None and held == self.video_index:
            self.uploaded_frame = frame  # the textures hold this video frame already: nothing to write
            return
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
            obj.gl_wrote()
            if obj.storage is not None:  # external_memory: CL reads this imported buffer
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, pbo.name)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, obj.storage.name)
                GL.glCopyBufferSubData(GL.GL_COPY_READ_BUFFER, GL.GL_COPY_WRITE_BUFFER, 0, 0, rows.nbytes)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
                obj.synced_generation = obj.gl_generation  # written where CL reads: no texture copy owed
        self.uploaded_frame = frame

    # -- the frame -----------------------------------------------------------------------------
    def compute(self, queue, frame, wait_for):
        if self.uploaded_frame != frame:
            log.debug("frame %d converts pattern frame %s (first frame after a build)", frame, self.uploaded_frame)
        self._last_computed = frame
        self.shown_frame = self.uploaded_frame
        self.shown_video_index = self.video_index
        local = self.local_size
        if self.buffer_planes:
            return self.converter.enqueue_buffers(queue, self.y.mem, self.y.pitch, self.uv.mem,
                                                  self.uv.pitch, self.out.mem, self.out.pitch,
                                                  self.fmt, self.matrix, self.range_, wait_for, local_size=local)
        return self.converter.enqueue(queue, self.plane_images[0], self.plane_images[1], self.out.mem, self.fmt,
                                      self.matrix, self.range_, wait_for, local_size=local)

    def render(self, size) -> None:
        self.quad.draw(self.out.gl)
        upcoming = self._last_computed + 1
        if self.uploaded_frame != upcoming:  # GL owns the planes now: stage the next frame
            self.upload(upcoming)

    def teardown(self) -> None:
        """Plane images, the YUV image and the converter, then each shared object CL side first."""
        self.undo_built(self._built)

    def describe(self) -> str:
        w, h = self.image_size
        matrix = MATRIX_NAMES[self.matrix]
        planes = ", planes as buffers" if self.buffer_planes else ""
        if self.video is None:
            return f"yuv ({self.fmt.name.upper()} test pattern), {w}x{h}, {matrix} {self.range_}{planes}"
        v = self.video
        return (f"yuv (video {v.path.name}: {self.frame_counter()}, {self.fmt.name.upper()} from {v.pixel_format}), "
                f"{w}x{h}, {matrix} ({v.matrix_source}) {self.range_} ({v.range_source}){planes}")

    def frame_counter(self) -> str:
        """"frame i/N" of the video frame shown (1-based; N "?" until the end was reached once)."""
        if self.video is None:
            return ""
        shown = self.shown_video_index if self.shown_video_index is not None else self.video_index
        count = self.video.frame_count
        return f"frame {(shown or 0) + 1}/{count if count else '?'}"

    def scene_options(self):
        rows = [SceneOption("colour", "matrix, range", "text", f"{MATRIX_NAMES[self.matrix]} {self.range_}")]
        if self.video is not None:
            v = self.video
            rows = [SceneOption("video", "video", "text", v.describe()),
                    SceneOption("video_frame", "frame", "text", self.frame_counter()),
                    SceneOption("colour", "matrix, range", "text",
                                f"{MATRIX_NAMES[self.matrix]} ({v.matrix_source}), {self.range_} ({v.range_source})")]
        return tuple(rows)

    @property
    def current_size(self):
        return getattr(self, "image_size", None) or (tuple(self.size) if self.size else self.default_size)
