"""The post-process scene: GL renders a moving 3-D scene into a texture, CL filters it (Sobel edges
or a box blur), GL shows the result. Both textures are shared, so every frame hands data over in
both directions: GL -> CL (what GL rendered) and CL -> GL (what CL filtered).

    postprocess.rendered  RGBA8, a real 2D texture attached to an FBO with a depth buffer; GL
                          renders into it, CL reads it (shared read_only)
    postprocess.filtered  RGBA8, CL writes it (shared write_only), GL draws it with the image quad

Order inside one frame. The scheduler's frame is acquire -> compute -> release -> render, and GL
may write a shared object only while it owns it: after the release, before the next acquire. So
GL renders one frame ahead, as the yuv scene uploads one frame ahead:

    frame n   acquire   GL -> CL: postprocess.rendered, holding 3-D image n
              compute   CL filters image n: rendered -> filtered
              release   CL -> GL: postprocess.filtered
              render    GL shows the filtered image n, then renders 3-D image n + 1 into
                        postprocess.rendered (the FBO) and marks it changed (``gl_wrote``)

``build`` renders image 0, so the first acquire has it, and frame n shows the filtered image n
(``shown_frame == frame``). The order "render, acquire, filter, release, show" inside one frame
would need a GL phase before the acquire, which the scheduler does not have; rendering ahead gives
the same two hand-overs per frame and the same picture. While paused the filtered image stays and
the image ahead is rendered again only when the camera moved.

The 3-D pass is drawn with its projection flipped vertically, so that texture row 0 holds the
top of the picture as in every glshare image (CL's row 0, the quad's top row): CL, numpy and the
screen all see the same rows.

What each backend does with the two textures:
  - host_copy: the acquire copies postprocess.rendered GL -> CL (its ``gl_generation`` changed:
    glGetTexImage into a pixel-pack buffer, then into the CL image), the release copies
    postprocess.filtered CL -> GL: one copy each way per frame.
  - gl_sharing: both CL images are made from the GL textures (clCreateFromGLTexture): nothing is
    copied.
  - external_memory: CL reads and writes imported buffers. GL shows the filtered one as a buffer
    texture over its buffer (nothing copied), but GL cannot render into buffer memory: the texture
    it renders into is a real 2D texture (``create_texture(drawn_by_quad=False)``: never a buffer
    texture, which an FBO cannot take), and the backend's ``gl_before_acquire`` copies it into the
    imported buffer before each acquire. That copy runs on the GPU (glGetTexImage into the buffer
    bound as a pixel-pack buffer) and is counted in the backend's ``gpu_bytes_copied``; it is not
    zero-copy.

The hazard demonstration ``unordered_render`` (app/session/controls.py) moves the 3-D pass into
the compute phase, after the acquire and right before the kernel, with nothing ordering it before
the kernel: CL reads while GL is still rendering. The tracker flags the draw into an object CL
holds (gl_use_while_acquired) and the pass is timed as its own GL bar ("gl 3-D pass during the
kernel") inside the compute phase on the timeline.

Filters and their exact arithmetic: kernels/postprocess.cl; numpy references:
app/postprocess/reference.py (the pixel tests compare what is shown with them, exactly).
"""
from __future__ import annotations

import math

import numpy as np

from app.diagnostics import live
from app.errors import GlError, SharingUnavailable
from app.gl import api as GL
from app.gl.objects import GlBuffer, GlVertexArray, _label
from app.gl.quad import ImageQuad
from app.gl.shaders import Program
from app.postprocess.filters import FILTERS, PostprocessFilters, check_filter
from app.postprocess.reference import MAX_BLUR_RADIUS, check_radius
from app.scenes.base import Scene, SceneOption, scene_command
from app.scenes.camera import OrbitCamera, gl_matrix, perspective, rotation_x, rotation_y, translation

TURN_PER_FRAME = 0.025  # radians the big cube turns each frame
LIGHT_DIR = np.array([-0.35, 0.8, 0.5]) / np.linalg.norm([-0.35, 0.8, 0.5])  # from above, on the camera side
BACKGROUND = (0.10, 0.12, 0.18, 1.0)
UNORDERED_PASS = "gl 3-D pass during the kernel"
# the capabilities the 3-D pass switches: each put back as the caller had it
PASS_CAPS = (GL.GL_SCISSOR_TEST, GL.GL_DEPTH_TEST, GL.GL_BLEND)


# -- geometry -------------------------------------------------------------------------------------
_FACES = (  # (normal, the two in-plane axes, colour) of each face of the unit cube
    ((1, 0, 0), (0, 1, 0), (0, 0, 1), (0.90, 0.30, 0.25)),
    ((-1, 0, 0), (0, 0, 1), (0, 1, 0), (0.25, 0.75, 0.35)),
    ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0.95, 0.85, 0.30)),
    ((0, -1, 0), (1, 0, 0), (0, 0, 1), (0.55, 0.35, 0.80)),
    ((0, 0, 1), (1, 0, 0), (0, 1, 0), (0.25, 0.55, 0.95)),
    ((0, 0, -1), (0, 1, 0), (1, 0, 0), (0.95, 0.55, 0.20)),
)


def cube_mesh() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """36 vertices of the cube [-1, 1]^3: positions, normals, colours (one colour per face), float32."""
    pos, nor, col = [], [], []
    for n, a, b, c in _FACES:
        n, a, b = (np.array(v, np.float64) for v in (n, a, b))
        corners = [n + sa * a + sb * b for sa, sb in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        for i in (0, 1, 2, 0, 2, 3):
            pos.append(corners[i])
            nor.append(n)
            col.append(c)
    return tuple(np.ascontiguousarray(a, np.float32) for a in (pos, nor, col))


def floor_mesh(half: float = 4.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two triangles of the plane y = 0, |x|, |z| <= half, facing up; grey (the shader checkers it)."""
    corners = [(-half, 0, -half), (half, 0, -half), (half, 0, half), (-half, 0, half)]
    pos = [corners[i] for i in (0, 2, 1, 0, 3, 2)]
    return (np.array(pos, np.float32), np.tile(np.float32([0, 1, 0]), (6, 1)),
            np.tile(np.float32([0.80, 0.80, 0.82]), (6, 1)))


def scale(s: float) -> np.ndarray:
    return np.diag([s, s, s, 1.0])


def scene_models(frame: int) -> list[tuple[str, np.ndarray, tuple[float, float, float]]]:
    """(mesh, model matrix, tint) of every object at ``frame``: the floor, a big turning cube,
    three small cubes circling it at different heights."""
    t = frame * TURN_PER_FRAME
    objects = [("floor", translation(0, -1.3, 0), (1.0, 1.0, 1.0)),
               ("cube", rotation_y(t) @ rotation_x(0.6 * t), (1.0, 1.0, 1.0))]
    tints = ((1.0, 0.45, 0.45), (0.45, 1.0, 0.55), (0.5, 0.6, 1.0))
    for k, tint in enumerate(tints):
        a = 1.7 * t + k * 2 * math.pi / 3
        position = translation(2.1 * math.cos(a), 0.5 * math.sin(2 * t + k), 2.1 * math.sin(a))
        objects.append(("cube", position @ rotation_y(-3 * t + k) @ rotation_x(2 * t) @ scale(0.32), tint))
    return objects


class RenderTarget:
    """A framebuffer object drawing into ``texture`` (a 2D GlTexture) with a 24-bit depth buffer.

    Labelled and counted (``gl_framebuffer``, ``gl_renderbuffer``); ``release()`` idempotent,
    before the texture is deleted (the texture stays its owner's).

    Raises:
        GlError: the framebuffer is not complete (glCheckFramebufferStatus names why).
    """

    def __init__(self, label: str, texture, owner: str = "") -> None:
        self.label, self.owner = label, owner
        self.width, self.height = texture.width, texture.height
        self.fbo = int(GL.glGenFramebuffers(1))
        live.created("gl_framebuffer", owner)
        self.depth = int(GL.glGenRenderbuffers(1))
        live.created("gl_renderbuffer", owner)
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, self.depth)
        GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, GL.GL_DEPTH_COMPONENT24, self.width, self.height)
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, 0)
        previous = int(GL.glGetIntegerv(GL.GL_DRAW_FRAMEBUFFER_BINDING))
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, self.fbo)
        try:
            GL.glFramebufferTexture2D(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_TEXTURE_2D, texture.name, 0)
            GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_DEPTH_ATTACHMENT, GL.GL_RENDERBUFFER, self.depth)
            status = int(GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER))
        finally:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, previous)
        _label("framebuffer", self.fbo, label)
        if status != GL.GL_FRAMEBUFFER_COMPLETE:
            self.release()
            raise GlError(status, where="glCheckFramebufferStatus",
                          detail=f"{label}: framebuffer over {texture.label!r} is incomplete (0x{status:04X})")

    def release(self) -> None:
        fbo, self.fbo = self.fbo, 0
        if fbo:
            GL.glDeleteFramebuffers(1, [fbo])
            live.released("gl_framebuffer", self.owner)
        depth, self.depth = self.depth, 0
        if depth:
            GL.glDeleteRenderbuffers(1, [depth])
            live.released("gl_renderbuffer", self.owner)

    def __repr__(self) -> str:
        return f"<RenderTarget {self.label!r} fbo={self.fbo} {self.width}x{self.height}>"


class SceneMeshes:
    """The vertex buffers (position, normal, colour) of the cube and the floor, one VAO."""

    def __init__(self, owner: str = "") -> None:
        cube, floor = cube_mesh(), floor_mesh()
        self.ranges = {"cube": (0, len(cube[0])), "floor": (len(cube[0]), len(floor[0]))}
        self.buffers = []
        self.vao = GlVertexArray("postprocess.meshes", owner=owner)
        try:
            for location, (name, parts) in enumerate(zip(("position", "normal", "color"), zip(cube, floor))):
                data = np.ascontiguousarray(np.concatenate(parts), np.float32)
                buf = GlBuffer(f"postprocess.{name}", data.nbytes, usage=GL.GL_STATIC_DRAW, data=data, owner=owner)
                self.buffers.append(buf)
                self.vao.attribute(location, buf, 3)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        self.vao.release()
        buffers, self.buffers = self.buffers, []
        for buf in buffers:
            buf.release()


class PostprocessScene(Scene):
    name = "postprocess"
    title = "GL renders a 3-D scene, CL filters it (Sobel / blur), GL shows it"
    order = 40
    size_kind = "image"
    default_size = (512, 512)
    panel_sizes = ("256x256", "512x512", "800x600", "1024x1024")
    has_camera = True

    @classmethod
    def shared_bytes(cls, size) -> int:
        return 2 * 4 * size[0] * size[1]  # the rendered and the filtered RGBA8 image

    def build(self, backend, size) -> None:
        self.backend = backend
        self._built: list = []  # (kind, thing) to undo in reverse: "shared" objects, "release" others
        try:
            self._build(backend)
        except BaseException:
            self.teardown()
            raise

    def _build(self, backend) -> None:
        self.filter = check_filter(self.cfg.filter)
        self.radius = check_radius(self.cfg.blur_radius)
        self.image_size = w, h = tuple(self.current_size)
        # GL renders into this one: a real 2D texture (drawn_by_quad=False), never a buffer texture
        self.rendered = backend.create_texture("postprocess.rendered", w, h, access="read_only", drawn_by_quad=False)
        self._built.append(("shared", self.rendered))
        self.out = backend.create_texture("postprocess.filtered", w, h, access="write_only", drawn_by_quad=True)
        self._built.append(("shared", self.out))
        self.shared = [self.rendered, self.out]
        if self.rendered.is_image != self.out.is_image:
            raise SharingUnavailable(backend.name, "the post-process filters take two images or two pitched "
                                     "buffers, not one of each")
        self.images = self.rendered.is_image
        self.filters = PostprocessFilters(backend.context, owner=backend.name)
        self._built.append(("release", self.filters))
        self.target = RenderTarget("postprocess.fbo", self.rendered.gl, owner=backend.name)
        self._built.append(("release", self.target))
        self.meshes = SceneMeshes(owner=backend.name)
        self._built.append(("release", self.meshes))
        self.program = Program("postprocess 3-D", "lit.vert", "lit.frag", owner=backend.name)
        self._built.append(("release", self.program))
        self.quad = ImageQuad("postprocess quad", owner=backend.name)
        self._built.append(("release", self.quad))
        self.camera = OrbitCamera(yaw=math.radians(30), pitch=math.radians(25), distance=6.5, up="y")
        self.set_local_size(self.cfg.local_size)
        self.unordered_render = False  # the hazard demonstration: 3-D pass inside CL's bracket
        self.rendered_frame: int | None = None  # the 3-D image postprocess.rendered holds
        self.shown_frame: int | None = None  # the 3-D image the filtered texture shows
        self._rendered_key: tuple | None = None  # (frame, camera version) of that image
        self._last_computed = -1
        self.render_3d(0, *self._current_target())  # image 0, before the first acquire

    # -- options -------------------------------------------------------------------------------
    def local_size_kernels(self):
        names = ("sobel", "box_blur") if self.images else ("sobel_buffer", "box_blur_buffer")
        return [self.filters.program.kernel(n) for n in names]

    def set_filter(self, name: str) -> None:
        """"sobel" or "blur" from the next frame on; UsageError for anything else."""
        self.filter = check_filter(name)

    def set_blur_radius(self, radius: int) -> None:
        """The blur's radius from the next frame on (0 .. MAX_BLUR_RADIUS); UsageError outside it."""
        self.radius = check_radius(radius)

    def scene_options(self):
        return (SceneOption("filter", "filter", "choice", self.filter, command="set_filter", choices=FILTERS,
                            keys="e: next"),
                SceneOption("blur_radius", "blur radius", "int", self.radius, command="set_blur_radius", low=0,
                            high=MAX_BLUR_RADIUS, keys="- / =: smaller / larger"))

    def kept_options(self):
        return {**super().kept_options(), "filter": self.filter, "blur_radius": self.radius}

    @scene_command("next_filter", "postprocess: Sobel edges / box blur", keys=("e",), what="filter", keeps=("filter",))
    def next_filter_command(self) -> str:
        return self.filter_command("blur" if self.filter == "sobel" else "sobel")

    @scene_command("set_filter", "postprocess: the filter (sobel or blur)", what="filter", keeps=("filter",))
    def filter_command(self, value: str) -> str:
        self.set_filter(value)
        return f"postprocess: {'Sobel edges' if self.filter == 'sobel' else f'box blur, radius {self.radius}'}"

    @scene_command("blur_more", "postprocess: blur radius + 1", keys=("=", "+"), what="blur radius",
                   keeps=("blur_radius",))
    def blur_more_command(self) -> str:
        return self.blur_radius_command(min(self.radius + 1, self.filters.max_radius))

    @scene_command("blur_less", "postprocess: blur radius - 1", keys=("-",), what="blur radius", keeps=("blur_radius",))
    def blur_less_command(self) -> str:
        return self.blur_radius_command(max(self.radius - 1, 0))

    @scene_command("set_blur_radius", "postprocess: the blur radius", what="blur radius", keeps=("blur_radius",))
    def blur_radius_command(self, value: int) -> str:
        self.set_blur_radius(value)
        shown = "" if self.filter == "blur" else " (shown with the blur filter: e)"
        return f"postprocess: blur radius {self.radius}{shown}"

    # -- GL: the 3-D pass ------------------------------------------------------------------------
    @staticmethod
    def _current_target() -> tuple[int, tuple[int, int, int, int]]:
        """The bound draw framebuffer and viewport, to come back to after the 3-D pass."""
        fbo = int(GL.glGetIntegerv(GL.GL_DRAW_FRAMEBUFFER_BINDING))
        viewport = tuple(int(v) for v in GL.glGetIntegerv(GL.GL_VIEWPORT))
        return fbo, viewport

    def view_projection(self) -> np.ndarray:
        """Projection x view of the 3-D pass, flipped vertically (row 0 of the texture is the top)."""
        w, h = self.image_size
        flip = np.diag([1.0, -1.0, 1.0, 1.0])
        return flip @ perspective(45, w / h, 0.1, 60) @ self.camera.view()

    def render_3d(self, frame: int, target: int, viewport: tuple[int, int, int, int]) -> None:
        """Render 3-D image ``frame`` into postprocess.rendered (GL must own it), then bind
        ``target`` and ``viewport`` again. Marks the texture changed for the backend.

        The pass sets every GL state it depends on and restores what it changed: the caller's
        scissor (beside the panel the session scissors the window to the scene's rectangle, and
        the scissor test applies to every framebuffer, glClear included: OpenGL 4.6 core, 14.9.2
        and 17.4.3), depth test and blending are put back as found."""
        w, h = self.image_size
        was_on = {cap: bool(GL.glGetIntegerv(cap)) for cap in PASS_CAPS}
        GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, self.target.fbo)
        GL.glViewport(0, 0, w, h)
        try:
            GL.glDisable(GL.GL_SCISSOR_TEST)
            GL.glClearColor(*BACKGROUND)
            GL.glClear(GL.GL_COLOR_BUFFER_BIT | GL.GL_DEPTH_BUFFER_BIT)
            GL.glEnable(GL.GL_DEPTH_TEST)
            GL.glDisable(GL.GL_BLEND)
            prog = self.program
            prog.use()
            GL.glUniform3f(prog.uniform("light_dir"), *LIGHT_DIR)
            vp = self.view_projection()
            GL.glBindVertexArray(self.meshes.vao.name)
            for mesh, model, tint in scene_models(frame):
                GL.glUniformMatrix4fv(prog.uniform("mvp"), 1, GL.GL_FALSE, gl_matrix(vp @ model))
                GL.glUniformMatrix4fv(prog.uniform("model"), 1, GL.GL_FALSE, gl_matrix(model))
                GL.glUniform3f(prog.uniform("tint"), *tint)
                GL.glUniform1i(prog.uniform("checker"), 1 if mesh == "floor" else 0)
                first, count = self.meshes.ranges[mesh]
                GL.glDrawArrays(GL.GL_TRIANGLES, first, count)
        finally:
            GL.glBindVertexArray(0)
            GL.glUseProgram(0)
            for cap, on in was_on.items():
                (GL.glEnable if on else GL.glDisable)(cap)
            GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, target)
            GL.glViewport(*viewport)
        self.rendered.gl_wrote()
        self.rendered_frame = frame
        self._rendered_key = (frame, self.camera.version)

    # -- the frame -------------------------------------------------------------------------------
    def compute(self, queue, frame, wait_for):
        self._last_computed = frame
        self.shown_frame = self.rendered_frame  # what CL's side holds now (copying backends: exactly)
        if self.unordered_render:
            self._render_during_kernel(frame)
        w, h = self.image_size
        _, local = self.launch((w, h))
        if self.images:
            return self.filters.enqueue(queue, self.rendered.mem, self.out.mem, self.filter, self.radius,
                                        wait_for=wait_for, local_size=local)
        return self.filters.enqueue_buffers(queue, self.rendered.mem, self.rendered.pitch, self.out.mem,
                                            self.out.pitch, w, h, self.filter, self.radius, wait_for=wait_for,
                                            local_size=local)

    def _render_during_kernel(self, frame: int) -> None:
        """The hazard demonstration: GL renders into postprocess.rendered while CL holds it, right
        before the kernel is enqueued, and GL's part of the hand-over (external_memory's copy into
        the imported buffer) follows it there, unordered with the kernel."""
        self.backend.tracker.gl_use([self.rendered], "3-D pass during the kernel (hazard demo)")
        with self.gl_pass(UNORDERED_PASS):
            self.render_3d(frame, *self._current_target())
            self.backend.gl_before_acquire([self.rendered])
        GL.glFlush()  # GL starts now: nothing makes the kernel wait for it

    def render(self, size) -> None:
        target = self._current_target()  # before any draw of this phase (a query after one is slow)
        self.quad.draw(self.out.gl)
        if self.unordered_render:
            return  # the demonstration renders in the compute phase
        upcoming = (self._last_computed + 1, self.camera.version)
        if self._rendered_key != upcoming:  # GL owns the texture now: render the next image
            with self.gl_pass("gl 3-D pass"):
                self.render_3d(upcoming[0], *target)

    def teardown(self) -> None:
        """GL objects that use the rendered texture (the FBO) first, then each shared object CL side
        first (``destroy``), in reverse build order; idempotent."""
        self.undo_built(self._built)

    def describe(self) -> str:
        w, h = self.image_size
        what = "Sobel edges" if self.filter == "sobel" else f"box blur r={self.radius}"
        where = "" if self.images else ", pitched buffers"
        return f"postprocess ({what}), {w}x{h} RGBA8, shown as {self.out.display_path}{where}"

    @property
    def current_size(self):
        return getattr(self, "image_size", None) or (tuple(self.size) if self.size else self.default_size)

