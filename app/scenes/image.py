"""The animated Julia set (../shared/WORKLOADS.md): CL writes an image2d_t into a GL texture.

The texture is GL_RGBA8, seen by CL as CL_RGBA / CL_UNORM_INT8 (write_imagef rounds to 8 bits).
GL only draws it with the image quad, so a backend may keep it as a buffer texture over the memory
CL writes (external_memory: nothing copied); ``SharedObject.display_path`` says what it got.
Without ``--size`` the image follows the framebuffer (re-created on resize, CL side first);
with ``--size WxH`` it keeps that size and the quad scales it.

The constant c follows its animation (``julia_constant``) until a user steers it (keys i/j/k/l or
the panel, ``steer``): from then on it stays where it was put, and ``set_constant(None)`` (key u)
hands it back to the animation.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pyopencl as cl

from app.cl.ext import NDRangeCall, prepared_scalar_arg
from app.cl.programs import KernelProgram
from app.gl.quad import ImageQuad
from app.scenes.base import Scene, SceneOption, scene_command


def julia_constant(frame: int) -> tuple[float, float]:
    return (math.sin(2 * math.pi * (frame % 599) / 599), math.sin(2 * math.pi * (frame % 773) / 773))


def julia_lanes(device: cl.Device) -> int:
    """Pixels of a row each work-item of kernels/julia.cl computes on ``device`` (its JULIA_LANES):
    on a CPU the native float vector width (4, 8 or 16: the iteration then runs as SIMD, which a
    CPU compiler cannot do across work-items for a data-dependent loop); elsewhere 1, one work-item
    per pixel, which GPUs run as SIMD themselves."""
    if not device.type & cl.device_type.CPU:
        return 1
    width = int(device.native_vector_width_float)
    return 16 if width >= 16 else 8 if width >= 8 else 4


def julia_program(context: cl.Context, device: cl.Device, owner: str = "") -> tuple[KernelProgram, int]:
    """kernels/julia.cl built for ``device`` and its lane count."""
    lanes = julia_lanes(device)
    return KernelProgram(context, "julia.cl", options=[f"-DJULIA_LANES={lanes}"], owner=owner), lanes


def julia_global_size(width: int, height: int, lanes: int) -> tuple[int, int]:
    """The launch of kernels/julia.cl for a width x height image: one work-item per ``lanes`` pixels."""
    return (-(-width // lanes), height)


def julia_reference(width: int, height: int, frame: int, c: tuple[float, float] | None = None) -> np.ndarray:
    """float64 numpy reference of the kernel: uint8 RGBA, row 0 first; ``c`` instead of frame's constant."""
    cr, ci = julia_constant(frame) if c is None else c
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


JULIA_STEP = 0.01  # how far one key press moves the Julia constant


class ImageScene(Scene):
    name = "image"
    title = "the animated Julia set (CL writes a texture)"
    order = 20
    size_kind = "image"
    default_size = (512, 512)
    follows_window = True
    max_slots = 8  # each frame's image is computed from nothing and GL only draws it
    panel_sizes = ("window", "256x256", "512x512", "1024x1024", "2048x2048")

    @classmethod
    def shared_bytes(cls, size) -> int:
        return 4 * size[0] * size[1]

    def build(self, backend, size) -> None:
        """On failure what was built is torn down (``teardown`` takes a partial build) and the error raised."""
        self.backend = backend
        self.texture = self.quad = self.program = None
        self.textures, self._shared_by_slot = [], []
        try:
            self._build(backend, size)
        except BaseException:
            self.teardown()
            raise

    def _build(self, backend, size) -> None:
        self.image_size = tuple(size) if self.follow_window else tuple(self.size)
        if self.follow_window and (self.image_size[0] == 0 or self.image_size[1] == 0):
            self.image_size = self.default_size
        self.quad = ImageQuad("image quad", owner=backend.name)
        self.program, self.lanes = julia_program(backend.context, backend.device, owner=backend.name)
        self._make_texture()
        # -- steering and local size (user controls) --
        self.steered_c: tuple[float, float] | None = None  # None: c follows its animation
        self._last_c = julia_constant(0)
        self.set_local_size(self.cfg.local_size)  # UsageError past the device's or the kernel's limit

    def _make_texture(self) -> None:
        """The shared texture, one per slot (frames in flight on copies: ``Scene.max_slots``), and the
        kernel's arguments that stay; slot 0 is the one in use."""
        w, h = self.image_size
        for i in range(self.slots):
            label = "image.julia" if self.slots == 1 else f"image.julia[{i}]"
            self.textures.append(self.backend.create_texture(label, w, h, access="write_only", drawn_by_quad=True))
        self.texture = tex = self.textures[0]
        # one list per copy, made once: the scheduler's steady frame knows a frame's objects by the
        # identity of ``shared`` (``cl_uses``, ``gl_uses``), so a copy's list is the same object every
        # time that copy comes round
        self._shared_by_slot = [[t] for t in self.textures]
        self.shared = self._shared_by_slot[0]
        self._global_size = julia_global_size(w, h, self.lanes)
        # one kernel object per slot, each with its texture and the arguments that stay set once
        # (clSetKernelArg of an image is not free on every driver, and pointing one kernel at the
        # next copy would pay it every frame: bench/results/README.md, 'Fourth session'); each frame
        # sets only the constant (cr, ci)
        self._kernel_name = "julia" if tex.is_image else "julia_buffer"
        self._c_index = 1 if tex.is_image else 4
        for i, t in enumerate(self.textures):
            k = self.program.kernel(self._kernel_name, copy=i)
            k.set_arg(0, t.mem)
            if not tex.is_image:
                k.set_arg(1, np.int32(w))
                k.set_arg(2, np.int32(h))
                k.set_arg(3, np.int32(t.row_pitch // 4))
        self.slot = 0

    def use_slot(self, slot: int) -> None:
        """Frame n computes and draws texture ``slot`` (n % slots) with the slot's own kernel."""
        if slot == self.slot:
            return
        self.texture = self.textures[slot]
        self.shared = self._shared_by_slot[slot]
        self.slot = slot

    def _destroy_textures(self) -> None:
        textures, self.textures = self.textures, []
        self.texture, self.shared, self._shared_by_slot = None, [], []
        for tex in textures:
            self.backend.destroy(tex)  # CL image released before the GL texture is deleted

    @property
    def kernel(self):
        """The kernel of the slot in use, as the program has it now (a hot reload replaces it, with the
        arguments set once)."""
        return self.program.kernel(self._kernel_name, copy=self.slot)

    @property
    def current_size(self):
        return self.image_size

    def resize(self, size) -> None:
        if not self.follow_window or size[0] == 0 or size[1] == 0 or tuple(size) == self.image_size:
            return  # minimized: keep the last image until there are pixels again
        self._destroy_textures()
        self.image_size = tuple(size)
        self._make_texture()

    compute_takes_null_event = True  # (its kernel's NDRangeCall)

    def compute(self, queue, frame, wait_for, event=True):
        cr, ci = self.constant(frame)
        kernel, i = self.kernel, self._c_index
        kernel.set_arg(i, np.float32(cr))
        kernel.set_arg(i + 1, np.float32(ci))
        global_size, local = self.launch(self._global_size)
        return kernel.enqueue(queue, global_size, local, wait_for, event)

    def native_key(self):
        return self.program.generation, self.slot, self._global_size, self.local_size

    def native_compute(self, queue, event):
        """The constant's two clSetKernelArg from C values ``stage`` writes, then the launch. (The
        kernel's recorded ``args``, which a hot reload sets again, keep the last constant set in
        Python: the next frame sets its own before its launch.)"""
        kernel, i = self.kernel, self._c_index
        cr, ci = ctypes.c_float(), ctypes.c_float()
        global_size, local = self.launch(self._global_size)
        out = ctypes.c_void_p() if event else None
        calls = [prepared_scalar_arg(kernel, i, cr), prepared_scalar_arg(kernel, i + 1, ci),
                 NDRangeCall.prepared(queue, kernel, global_size, local, out)]

        def stage(frame: int) -> None:
            cr.value, ci.value = self.constant(frame)  # (rounded to float32 as np.float32 rounds)

        return calls, out, stage

    def render(self, size) -> None:
        self.quad.draw(self.texture.gl)

    def teardown(self) -> None:
        """The CL image (or buffer) before the GL texture, then the program and the quad; idempotent,
        and what a failed build got to only."""
        if self.backend is None:
            return
        self._destroy_textures()
        self.backend = None
        program, quad, self.program, self.quad = self.program, self.quad, None, None
        if program is not None:
            program.release()
        if quad is not None:
            quad.release()

    def describe(self) -> str:
        slots = f", {self.slots} copies (frames in flight)" if self.slots > 1 else ""
        return f"image (Julia set), {self.image_size[0]}x{self.image_size[1]} RGBA8, {self.texture.display_path}{slots}"

    # -- the user's controls: steering the constant, the local work size --------------------------
    def constant(self, frame: int) -> tuple[float, float]:
        """c for ``frame``: where the user steered it, else its animation; remembered for ``steer``."""
        c = self.steered_c if self.steered_c is not None else julia_constant(frame)
        self._last_c = c
        return c

    def steer(self, d_real: float, d_imag: float) -> tuple[float, float]:
        """Move c by (d_real, d_imag) from where it is now (the animation stops there); returns the new c.
        Both parts stay within [-2, 2], where the set is not empty."""
        cr, ci = self.steered_c if self.steered_c is not None else self._last_c
        self.steered_c = (max(-2.0, min(2.0, cr + d_real)), max(-2.0, min(2.0, ci + d_imag)))
        return self.steered_c

    def set_constant(self, c: tuple[float, float] | None) -> None:
        """Put c at (real, imaginary), or None to hand it back to the animation."""
        self.steered_c = None if c is None else (float(c[0]), float(c[1]))

    def local_size_kernels(self):
        return [self.kernel]

    # -- its option and commands (app/session/controls.py binds the keys, the panel draws the row) --
    def scene_options(self):
        cr, ci = self.steered_c if self.steered_c is not None else self._last_c
        how = "steered" if self.steered_c is not None else "animated"
        return (SceneOption("julia_c", "Julia constant c", "text", f"{cr:+.3f} {ci:+.3f}i ({how})",
                            command="julia_animate", keys="j / l: real -/+, k / i: imaginary -/+, u: animate"),)

    def _steer_command(self, d_real: float, d_imag: float) -> str:
        cr, ci = self.steer(d_real, d_imag)
        return f"Julia constant c = {cr:+.3f} {ci:+.3f}i (u: animate again)"

    @scene_command("julia_real_down", "image: Julia constant, real part down", keys=("j",), what="Julia constant")
    def julia_real_down_command(self) -> str:
        return self._steer_command(-JULIA_STEP, 0.0)

    @scene_command("julia_real_up", "image: Julia constant, real part up", keys=("l",), what="Julia constant")
    def julia_real_up_command(self) -> str:
        return self._steer_command(JULIA_STEP, 0.0)

    @scene_command("julia_imag_down", "image: Julia constant, imaginary part down", keys=("k",),
                   what="Julia constant")
    def julia_imag_down_command(self) -> str:
        return self._steer_command(0.0, -JULIA_STEP)

    @scene_command("julia_imag_up", "image: Julia constant, imaginary part up", keys=("i",), what="Julia constant")
    def julia_imag_up_command(self) -> str:
        return self._steer_command(0.0, JULIA_STEP)

    @scene_command("julia_animate", "image: the Julia constant follows its animation again", keys=("u",),
                   what="Julia constant", button="animate")
    def julia_animate_command(self) -> str:
        return self.julia_c_command(None)

    @scene_command("set_julia_c", "image: put the Julia constant at (real, imaginary)", what="Julia constant")
    def julia_c_command(self, value=None) -> str:
        self.set_constant(value)
        if value is None:
            return "Julia constant: animated"
        return f"Julia constant c = {float(value[0]):+.3f} {float(value[1]):+.3f}i"
