"""The particle fountain (../shared/WORKLOADS.md): position and color shared, drawn as points.

The camera orbits with a mouse drag and zooms with the wheel (``OrbitCamera``, z up as in the
fountain's world). It starts at one of ``VIEWS`` (``--view``, the panel): by default the classic
sample's own (pyopencl's gl_particle_animation: gluPerspective(60, aspect, 0.1, 1000) and
glTranslatef(0, 0, -2.5), looking down the fountain's axis), so that a race against it draws the
same pixels (on llvmpipe the rasterization of the points is most of the frame, and it depends on
where they land: a view that gathers them on fewer of its 64x64 tiles costs more); or "side", the
fountain from the side 28 degrees above the horizon. Points are squares of 2 pixels, as in the
sample, or with ``--round-points`` (the panel, key r) smooth discs of 4 pixels: a second fragment
shader (shaders/particles_round.frag) discards outside the disc and fades its rim. None of this
touches what is shared: only how GL draws it.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from app.cl.ext import NDRangeCall
from app.cl.programs import KernelProgram
from app.diagnostics import live
from app.errors import UsageError
from app.gl import api as GL
from app.gl.objects import GlVertexArray
from app.gl.shaders import Program
from app.scenes.base import Scene, SceneOption, scene_command
from app.scenes.camera import OrbitCamera, gl_matrix, perspective, translation

DT = 0.005


def uniform(seed: int, n: int) -> np.ndarray:
    """``n`` floats in [0, 1) fixed by ``seed``: SplitMix64 (Steele, Lea, Flood 2014) of seed + i * golden
    gamma, its top 53 bits. numpy's own generators would cost the start-up the import of
    numpy.random; this is a few vector operations."""
    z = np.uint64(seed & 0xFFFF_FFFF_FFFF_FFFF) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def initial_state(n: int, seed: int) -> dict[str, np.ndarray]:
    """Start state of WORKLOADS.md: float32 (N, 4) arrays position, color, velocity (+ start copies)."""
    draws = uniform(seed, n + 2)
    k1, k2, life = draws[0], draws[1], draws[2:]
    i = np.arange(n, dtype=np.float64)
    angle = 2.001 * math.pi * i / n
    pos = np.zeros((n, 4), np.float64)
    pos[:, 0] = np.sin(angle) * (0.2 + k1)
    pos[:, 1] = np.cos(angle) * (0.2 + k2)
    pos[:, 3] = 1.0
    vel = np.zeros((n, 4), np.float64)
    vel[:, 0] = 2 * pos[:, 0]
    vel[:, 1] = 2 * pos[:, 1]
    vel[:, 2] = 3.0
    vel[:, 3] = life
    color = np.ones((n, 4), np.float64)
    f = lambda a: np.ascontiguousarray(a, np.float32)  # noqa: E731
    return {"position": f(pos), "color": f(color), "velocity": f(vel),
            "start_position": f(pos), "start_velocity": f(vel)}


def reference_steps(state: dict[str, np.ndarray], steps: int, dt: float = DT) -> dict[str, np.ndarray]:
    """The same update in numpy, for tests: positions and velocities in float64.

    The remaining life is a counter whose reset decision (life <= 0) lands exactly on zero after
    200 steps of 0.005 from 1.0, so its outcome depends on rounding: the reference keeps life in
    float32, as the kernel does, and every continuous quantity in float64.
    """
    p = state["position"].astype(np.float64)
    v = state["velocity"].astype(np.float64)
    c = state["color"].astype(np.float64)
    sp = state["start_position"].astype(np.float64)
    sv = state["start_velocity"].astype(np.float64)
    life32 = state["velocity"][:, 3].astype(np.float32)
    dt32 = np.float32(dt)
    for _ in range(steps):
        life32 = life32 - dt32
        reset = life32 <= 0
        p[reset] = sp[reset]
        v[reset] = sv[reset]
        life32[reset] = np.float32(1.0)
        v[:, 2] -= 9.8 * dt
        p[:, :3] += v[:, :3] * dt
        v[:, 3] = life32
        c[:, 3] = life32
    return {"position": p, "velocity": v, "color": c}


# point sizes, set as GL state (glPointSize) and not written by the vertex shader: the same pixels
# for a cheaper draw call on a software rasterizer (bench/results/README.md, 'Sixth session')
SQUARE_POINT_PX = 2.0
ROUND_POINT_PX = 4.0


@dataclass(frozen=True)
class FountainView:
    """A start view of the fountain: the projection (vertical field of view, far plane, a shift of
    the picture up or down) and where the orbit camera starts (pitch above the horizon, distance)."""

    name: str
    fovy_deg: float
    far: float
    shift_y: float
    pitch_deg: float
    distance: float
    what: str


VIEWS = {
    # pyopencl examples/gl_particle_animation.py: gluPerspective(60.0, w / h, 0.1, 1000.0), then
    # glTranslatef(0, 0, -2.5) and rotations of 0: the eye 2.5 units up the fountain's z axis, looking down it
    "sample": FountainView("sample", 60.0, 1000.0, 0.0, 90.0, 2.5,
                           "the classic sample's: 2.5 units above the fountain, looking down its axis, 60 degrees"),
    "side": FountainView("side", 55.0, 100.0, -0.35, 28.0, 5.0,
                         "from the side, 28 degrees above the horizon, 5 units away, 55 degrees"),
}
DEFAULT_VIEW = "sample"


def fountain_camera(view: str = DEFAULT_VIEW) -> OrbitCamera:
    """The orbit camera at the start of ``view`` (pitch free to 90 degrees: the sample looks straight down)."""
    v = VIEWS[view]
    return OrbitCamera(yaw=0.0, pitch=math.radians(v.pitch_deg), distance=v.distance, up="z",
                       pitch_range=(-math.pi / 2, math.pi / 2))


def view_projection(width: int, height: int, camera: OrbitCamera | None = None,
                    view: str = DEFAULT_VIEW, guard: int = 1) -> np.ndarray:
    """``view``'s projection of the fountain seen by ``camera`` (its start view if None); column-major
    float32. ``guard``: x and y scaled down by it, for a viewport ``guard`` times the scene's around
    it (``guard_viewport``): the same picture on the scene's pixels."""
    aspect = max(width, 1) / max(height, 1)
    v = VIEWS[view]
    camera = camera or fountain_camera(view)
    shrink = np.diag((1.0 / guard, 1.0 / guard, 1.0, 1.0))
    return gl_matrix(shrink @ perspective(v.fovy_deg, aspect, 0.1, v.far) @ translation(0, v.shift_y, 0)
                     @ camera.view())


# The points are drawn through a viewport GUARD times the scene's, centred on it, with the projection
# shrunk by as much (``view_projection(guard=...)``) and the scissor on the scene: the same pixels, but
# a point whose centre is off the scene by up to a scene's width or height is inside the clip volume.
# On llvmpipe a point outside the clip volume sends its whole batch of vertices through the draw
# module's clipping stages, while one inside it and off the scissor is dropped by its bounding box
# when it is binned. In the classic sample's view many of the fountain's points are off the picture
# (their centres outside the clip volume, none past the guard band), so the band makes the draw call
# cheaper there (bench/results/README.md, 'Sixteenth session'). GL culls a point whose centre is
# outside the clip volume (OpenGL 4.6 core, 13.7.1); within the band, a point whose centre is just
# off the scene shows the part of its square that is on it, as a GPU's own guard band does.
GUARD = 3


def guard_viewport(viewport: tuple[int, int, int, int], guard: int) -> tuple[int, int, int, int]:
    """The viewport ``guard`` (odd) times ``viewport`` around it: the same centre, whole pixels."""
    x, y, w, h = viewport
    m = (guard - 1) // 2
    return x - m * w, y - m * h, guard * w, guard * h


class ParticlesScene(Scene):
    name = "particles"
    title = "the particle fountain (CL moves points GL draws)"
    order = 10
    size_kind = "count"
    default_size = 65_536
    panel_sizes = ("4096", "16384", "65536", "262144", "1048576")
    has_camera = True

    @classmethod
    def shared_bytes(cls, size) -> int:
        return 32 * size  # position + color, float4 each (WORKLOADS.md)

    def build(self, backend, size) -> None:
        """On failure what was built is torn down (``teardown`` takes a partial build) and the error raised."""
        self.backend = backend
        self.shared, self.cl_only = [], {}
        self.program = self.gl_program = self.round_program = self.vao = None
        try:
            self._build(backend)
        except BaseException:
            self.teardown()
            raise

    def _build(self, backend) -> None:
        n = self.n = self.current_size
        state = initial_state(n, self.cfg.seed)
        self.position = backend.create_buffer("particles.position", n * 16, data=state["position"])
        self.shared.append(self.position)
        self.color = backend.create_buffer("particles.color", n * 16, data=state["color"])
        self.shared.append(self.color)
        ctx, flags = backend.context, cl.mem_flags
        for key in ("velocity", "start_position", "start_velocity"):
            access = flags.READ_WRITE if key == "velocity" else flags.READ_ONLY
            self.cl_only[key] = cl.Buffer(ctx, access | flags.COPY_HOST_PTR, hostbuf=state[key])
            live.created("cl_buffer", backend.name)
        self.program = KernelProgram(ctx, "particles.cl", owner=backend.name)
        # every argument stays the same from frame to frame: set once, not per frame
        self.kernel.set_args(self.position.mem, self.color.mem, self.cl_only["velocity"],
                             self.cl_only["start_position"], self.cl_only["start_velocity"], np.float32(DT),
                             np.uint32(n))
        self.gl_program = Program("particles", "particles.vert", "particles.frag", owner=backend.name)
        self.round_program = None  # built the first time round points are drawn
        self.round_points = bool(self.cfg.round_points)
        self.set_view(self.cfg.view)  # an unknown view: UsageError, one line
        self.set_local_size(self.cfg.local_size)  # UsageError past the device's or the kernel's limit
        # the widest viewport GL takes here bounds the guard band (GUARD where it fits, else none)
        self.max_viewport = tuple(GL.glGetIntegerv(GL.GL_MAX_VIEWPORT_DIMS))
        self.vao = GlVertexArray("particles.vao", owner=backend.name)
        self.vao.attribute(0, self.position.gl, 4)
        self.vao.attribute(1, self.color.gl, 4)

    @property
    def kernel(self):
        """The program's kernel now (a hot reload replaces it, with the arguments set once)."""
        return self.program.kernel("particle_fountain")

    local_dims = 1

    def local_size_kernels(self):
        return [self.kernel]

    def set_round_points(self, on: bool) -> None:
        self.round_points = bool(on)

    def set_view(self, name: str) -> None:
        """Start over from view ``name`` (one of VIEWS): its projection, the camera at its start."""
        if name not in VIEWS:
            raise UsageError(f"view {name!r}: choose one of {', '.join(VIEWS)}")
        self.view, self.camera = name, fountain_camera(name)

    # -- its options and commands (app/session/controls.py binds the keys, the panel draws the rows)
    def scene_options(self):
        return (SceneOption("round_points", "round points", "toggle", self.round_points, command="set_round_points",
                            keys="r"),
                SceneOption("view", "view", "choice", self.view, command="set_view", choices=tuple(VIEWS), keys="o"))

    def kept_options(self):
        return {**super().kept_options(), "round_points": self.round_points, "view": self.view}

    @scene_command("toggle_round_points", "particles: round / square points", keys=("r",), what="round points",
                   keeps=("round_points",))
    def toggle_round_points_command(self) -> str:
        return self.round_points_command(not self.round_points)

    @scene_command("set_round_points", "particles: round points on or off", what="round points",
                   keeps=("round_points",))
    def round_points_command(self, value: bool) -> str:
        self.set_round_points(bool(value))
        return f"particles: {'round' if value else 'square'} points"

    @scene_command("next_view", "particles: the sample's view / from the side", keys=("o",), what="view",
                   keeps=("view",))
    def next_view_command(self) -> str:
        return self.view_command("side" if self.view == "sample" else "sample")

    @scene_command("set_view", "particles: the start view (sample or side)", what="view", keeps=("view",))
    def view_command(self, value: str) -> str:
        self.set_view(str(value))
        return f"particles: {VIEWS[self.view].what}"

    compute_takes_null_event = True  # (its kernel's NDRangeCall)

    def compute(self, queue, frame, wait_for, event=True):
        global_size, local = self.launch((self.n,))
        return self.kernel.enqueue(queue, global_size, local, wait_for, event)

    def native_key(self):
        return self.program.generation, self.n, self.local_size

    def native_compute(self, queue, event):
        global_size, local = self.launch((self.n,))
        out = ctypes.c_void_p() if event else None
        return [NDRangeCall.prepared(queue, self.kernel, global_size, local, out)], out, None

    def _points_program(self) -> Program:
        if not self.round_points:
            return self.gl_program
        if self.round_program is None:
            self.round_program = Program("particles round", "particles.vert", "particles_round.frag",
                                         owner=self.backend.name)
        return self.round_program

    def render(self, size) -> None:
        GL.glClearColor(0.02, 0.02, 0.05, 1.0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT | GL.GL_DEPTH_BUFFER_BIT)
        GL.glEnable(GL.GL_BLEND)
        GL.glBlendFunc(GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)
        GL.glPointSize(ROUND_POINT_PX if self.round_points else SQUARE_POINT_PX)  # GL_PROGRAM_POINT_SIZE stays off
        program = self._points_program()
        program.use()
        viewport = tuple(GL.glGetIntegerv(GL.GL_VIEWPORT))
        guard = GUARD if all(GUARD * d <= m for d, m in zip(viewport[2:], self.max_viewport)) else 1
        GL.glUniformMatrix4fv(program.uniform("mvp"), 1, GL.GL_FALSE,
                              view_projection(*size, self.camera, self.view, guard))
        scissored = bool(GL.glGetIntegerv(GL.GL_SCISSOR_TEST))
        if guard > 1:
            if not scissored:  # beside the panel the session's scissor holds the scene already
                GL.glScissor(*viewport)
                GL.glEnable(GL.GL_SCISSOR_TEST)
            GL.glViewport(*guard_viewport(viewport, guard))
        GL.glBindVertexArray(self.vao.name)
        GL.glDrawArrays(GL.GL_POINTS, 0, self.n)
        GL.glBindVertexArray(0)
        GL.glUseProgram(0)
        GL.glDisable(GL.GL_BLEND)
        if guard > 1:
            GL.glViewport(*viewport)
            if not scissored:
                GL.glDisable(GL.GL_SCISSOR_TEST)

    def teardown(self) -> None:
        """Shared buffers CL side first, the CL-only buffers, then the programs and the vertex array;
        idempotent, and what a failed build got to only."""
        backend, self.backend = self.backend, None
        if backend is None:
            return
        shared, self.shared = self.shared, []
        for obj in shared:
            backend.destroy(obj)
        cl_only, self.cl_only = self.cl_only, {}
        for buf in cl_only.values():
            buf.release()
            live.released("cl_buffer", backend.name)
        things = (self.program, self.gl_program, self.round_program, self.vao)
        self.program = self.gl_program = self.round_program = self.vao = None
        for thing in things:
            if thing is not None:
                thing.release()

    def describe(self) -> str:
        return f"particles, {self.n:,} points{', round' if self.round_points else ''}"
