"""The recipe for a new scene: copy this module to ``app/scenes/NAME.py``, set ``name`` to NAME,
and replace the colour fill with the scene's own work. That one module is the whole scene: it
registers itself by subclassing ``Scene`` with a ``name`` (the CLI's ``--scene`` choices, the
panel's scene combo and ``s`` find it by its module's name), and its commands and options reach
the keys and the panel from its declarations. Modules whose name starts with "_" (this one) are
not scenes. Its test: what it must show after a run, as a function in
``tests/contract/references.py`` (``CHECKS``: the contract suite runs every scene on every
backend against its reference, and refuses a scene without one), and its own tests in ``tests/scenes/``.

What a scene implements (``app/scenes/base.py`` says each one's contract):

- class attributes: ``name``, ``title``, ``order`` (its place in the scene list), ``size_kind``
  ("image": ``--size`` is WxH; "count": a number of items) and ``default_size``;
- ``build(backend, size)``: the shared objects, made through ``backend`` (``create_texture``,
  ``create_buffer``: whichever backend runs, CL and GL see one object) and kept in ``shared``;
  anything else it needs (programs, quads);
- ``compute(queue, frame, wait_for, event=True)``: enqueue the frame's CL work on the acquired
  objects after ``wait_for``, return the last event;
- ``render(size)``: draw with GL from the released objects into the bound framebuffer;
- ``teardown()``: CL's objects before GL's (``backend.destroy`` does both, in that order); idempotent;
- ``shared_bytes(size)`` (class method): the bytes shared per frame (the bench sizes its cells by it);
- optional: its options (``scene_options``: ``SceneOption`` rows, each naming the command that
  changes it), the commands (``@scene_command``: name, title, keys, what a refusal calls it, the
  RunConfig fields it ``keeps``), ``kept_options`` for those fields, ``describe()``.

The scheduler acquires ``shared`` before ``compute`` and releases it after; the scene never
acquires or releases itself.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from app.gl.quad import ImageQuad
from app.scenes.base import Scene, SceneOption, scene_command

CYCLE_FRAMES = 120  # one turn of the colour cycle


def pulse_rgba(frame: int) -> tuple[int, int, int, int]:
    """The colour of ``frame``: a cycle through the hues, opaque (RGBA8)."""
    t = 2 * np.pi * (frame % CYCLE_FRAMES) / CYCLE_FRAMES
    r, g, b = (int(round(127.5 + 127.5 * np.cos(t - k * 2 * np.pi / 3))) for k in range(3))
    return r, g, b, 255


class TemplateScene(Scene):
    name = "template"  # the module's name: app/scenes/template.py
    title = "one colour, cycling (CL fills a texture GL draws)"
    order = 90
    size_kind = "image"
    default_size = (256, 256)

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self.texture = None
        self.quad = None
        self.cycling = True  # an option: the colour cycles, or stays
        self.held_frame = 0

    @classmethod
    def shared_bytes(cls, size) -> int:
        w, h = size if size is not None else cls.default_size
        return 4 * w * h

    def build(self, backend, size) -> None:
        self.backend = backend
        w, h = self.size if self.size is not None else self.default_size
        self.texture = backend.create_texture(f"{self.name}.colour", w, h, access="write_only", drawn_by_quad=True)
        self.shared = [self.texture]  # the same list object every frame (FrameScheduler knows a frame by it)
        self.quad = ImageQuad(f"{self.name} quad", owner=backend.name)

    def compute(self, queue, frame, wait_for, event=True):
        if self.cycling:
            self.held_frame = frame
        rgba = pulse_rgba(self.held_frame)
        tex = self.texture
        if tex.is_image:  # clEnqueueFillImage: an unnormalized CL_RGBA CL_UNORM_INT8 image takes float colours
            w, h = tex.gl.width, tex.gl.height
            return cl.enqueue_fill_image(queue, tex.mem, np.array(rgba, np.float32) / 255, (0, 0), (w, h),
                                         wait_for=wait_for)
        # a buffer behind the texture (its backend's choice): one RGBA8 texel, repeated
        pattern = np.array([rgba], np.uint8).view(np.uint32)
        return cl.enqueue_fill_buffer(queue, tex.mem, pattern, 0, tex.nbytes, wait_for=wait_for)

    def render(self, size) -> None:
        self.quad.draw(self.texture.gl)

    def teardown(self) -> None:
        if self.backend is None:
            return
        texture, quad, self.texture, self.quad = self.texture, self.quad, None, None
        if texture is not None:
            self.backend.destroy(texture)  # the CL image before the GL texture
        if quad is not None:
            quad.release()
        self.backend, self.shared = None, []

    def describe(self) -> str:
        return f"{self.name}: one colour, {'cycling' if self.cycling else 'held'}"

    # -- what a user may change: declared here, bound to keys and drawn in the panel from here -----
    def scene_options(self):
        return (SceneOption("cycling", "colour cycle", "toggle", self.cycling, command="set_cycling", keys="g"),)

    @scene_command("toggle_cycling", "template: the colour cycles / stays", keys=("g",), what="colour cycle")
    def toggle_cycling_command(self) -> str:
        return self.cycling_command(not self.cycling)

    @scene_command("set_cycling", "template: the colour cycles (true) or stays (false)", what="colour cycle")
    def cycling_command(self, value: bool) -> str:
        self.cycling = bool(value)
        return f"{self.name}: the colour {'cycles' if self.cycling else 'stays'}"
