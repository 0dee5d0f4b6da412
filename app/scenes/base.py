"""What every scene provides to the scheduler: shared objects, one compute step, one GL draw,
and what the rest of glshare needs to know about it (its size, its window, the bytes it shares).

Besides the frame, a scene offers what a user may change while it runs: an orbit camera
(``camera``: mouse drag and wheel reach it through the controls), a local work size for its
kernels (``set_local_size``, checked against the device's and the kernels' limits), and its own
options. A scene declares both itself: each command it answers with ``@scene_command`` on the
method that runs it (the session's command table and its keys are built from these
declarations: app/session/controls.py), its options as ``SceneOption`` rows (``scene_options``:
each names the command that changes it, so the panel draws them without knowing the scene), and
what of them the session's configuration keeps across a switch (``kept_options``).
"""
from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar, ContextManager

import pyopencl as cl

from app.cl.worksize import LocalSize, check_local_size, launch_sizes, local_shape
from app.config import RunConfig, parse_count, parse_local_size, parse_wxh
from app.sharing.base import SharedObject, SharingBackend

MIN_PANEL_HEIGHT = 512  # a window with the panel beside the image is at least this tall
VIEW_SIZE = (800, 600)  # what a 3-D scene (particles, postprocess) shows: the classic samples' window


@dataclass(frozen=True)
class SceneCommand:
    """A command a scene answers (declared by ``@scene_command`` on the method that runs it).

    ``run(scene, **args)`` returns the status line, or raises UsageError to refuse a value (the
    status says "{what} refused: ..."); in another scene the command answers "{what}: the {scene}
    scene only". ``keys``: the keys bound to it; ``button``: the label of the button an option row
    (``SceneOption`` of kind "text") naming it shows; ``keeps``: the RunConfig fields it changes,
    which the session's configuration takes from ``Scene.kept_options`` once it ran."""

    name: str
    title: str
    run: Callable[..., str]
    keys: tuple[str, ...] = ()
    what: str = ""
    button: str = ""
    keeps: tuple[str, ...] = ()


def scene_command(name: str, title: str, *, keys: tuple[str, ...] = (), what: str = "", button: str = "",
                  keeps: tuple[str, ...] = ()) -> Callable:
    """Declare the decorated method of a Scene (sub)class as the command ``name``."""
    def declare(method: Callable[..., str]) -> Callable[..., str]:
        method.scene_command = SceneCommand(name, title, method, tuple(keys), what or name, button, tuple(keeps))
        return method
    return declare


@dataclass(frozen=True)
class SceneOption:
    """One option of the running scene, as the panel shows it.

    ``kind``: "toggle" (value bool), "choice" (value one of ``choices``), "int" (``low`` ..
    ``high``), "size" (a local size "WxH" or "driver"), "text" (read only). The panel changes it
    with ``request(command, value=...)``; ``keys`` are the keys that step it (for the help line).
    """

    name: str
    title: str
    kind: str
    value: Any
    command: str = ""  # "" for read-only rows
    choices: tuple = ()
    low: int | None = None
    high: int | None = None
    keys: str = ""
    button: str = ""  # a "text" row's button (filled in by ``Scene.options`` from the command's declaration)


class Scene(abc.ABC):
    """Subclass in a module of ``app/scenes/`` named like ``name``: it registers itself."""

    name: ClassVar[str]
    title: ClassVar[str] = ""
    order: ClassVar[int] = 50
    size_kind: ClassVar[str] = "image"  # "count": --size is a number of items; "image": WxH
    default_size: ClassVar[Any] = (512, 512)
    even_size: ClassVar[bool] = False  # WxH must be even (planar YUV)
    compute_takes_null_event: ClassVar[bool] = False  # ``compute(..., event=False)`` makes no event
    follows_window: ClassVar[bool] = False  # without --size the image is the framebuffer's size
    has_camera: ClassVar[bool] = False  # it builds an orbit camera (``camera``)
    panel_sizes: ClassVar[tuple[str, ...]] = ("256x256", "512x512", "1024x1024", "2048x2048")
    registry: ClassVar[dict[str, type["Scene"]]] = {}
    # Frames in flight on copies of the shared objects ("slots"): a scene whose frames do not read
    # each other's results (every frame's image computed from nothing) and whose shared objects GL
    # only reads may keep up to this many copies; frame n then uses copy n % slots, so that CL
    # writes one while GL still draws another. 1: one set of objects, every frame in turn.
    max_slots: ClassVar[int] = 1

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "name" in cls.__dict__:
            Scene.registry[cls.name] = cls

    # -- sizes (class level: no GL) -----------------------------------------------------------
    @classmethod
    def parse_size(cls, text: str | None):
        """``--size``: a count or WxH as the scene takes it; None for the scene's default. Raises
        UsageError with one line on bad input."""
        if text is None:
            return None
        if cls.size_kind == "count":
            return parse_count(text, what=f"--size for {cls.name}")
        return parse_wxh(text, what=f"--size for {cls.name}", even=cls.even_size)

    @classmethod
    def accepts(cls, size) -> bool:
        """Whether ``size`` is of this scene's kind (a switch keeps --size only where it means something)."""
        return isinstance(size, int) == (cls.size_kind == "count") and size is not None

    @classmethod
    def size_of(cls, cfg: RunConfig):
        """The size a run of ``cfg`` uses: ``cfg.size`` where it is this scene's kind, else the default."""
        return cfg.size if cls.accepts(cfg.size) else None

    @classmethod
    def window_size(cls, size, window: tuple[int, int] | None = None, panel_room: int = 0) -> tuple[int, int]:
        """The window a run opens: image scenes show their image 1:1 up to 2048 pixels, other scenes
        a view of VIEW_SIZE (the classic samples' windows), or, for every scene, the ``window`` asked
        for (the whole window, as given: the scene is fitted into what the panel leaves); beside the
        panel when ``panel_room`` (the pixels the panel takes at the window's left) is given, in a
        window at least MIN_PANEL_HEIGHT tall then, so that the scene keeps its whole area (a race
        against a sample draws the same pixels with the panel on)."""
        if window is not None:
            return tuple(window)
        if cls.size_kind == "image":
            w, h = tuple(size) if isinstance(size, tuple) and max(size) <= 2048 else tuple(cls.default_size)
        else:
            w, h = VIEW_SIZE
        if panel_room:
            return (w + panel_room, max(h, MIN_PANEL_HEIGHT))
        return (w, h)

    @classmethod
    def size_label(cls, size) -> str:
        if size is None:
            size = cls.default_size
        return f"{size:,}" if isinstance(size, int) else f"{size[0]}x{size[1]}"

    @classmethod
    def shared_bytes(cls, size) -> int:
        """Bytes shared with GL per frame at ``size`` (the bench sizes its cells with it)."""
        raise NotImplementedError

    # -- one set-up ---------------------------------------------------------------------------
    local_dims: ClassVar[int] = 2  # the dimensions of its kernels' launches (particles: 1)

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.size = self.size_of(cfg)  # None: the default (or the window's size for follows_window)
        # the image is the framebuffer's size now (follows_window and no --size): it changes with the window
        self.follow_window = self.follows_window and self.size is None
        self.backend: SharingBackend | None = None
        self.shared: list[SharedObject] = []  # acquired and released every frame (the slot's, with slots)
        self.slots = 1  # copies of the shared objects (set before ``build``; at most ``max_slots``)
        self.slot = 0  # the copy the frame in progress uses (``use_slot``)
        self.camera = None  # an app.scenes.camera.OrbitCamera where the scene has one
        self.local_size: LocalSize | None = None  # None: the driver chooses (set_local_size checks it)
        # times GL commands as one pass of the frame in progress: ``pass_timer(name)`` gives a
        # context manager (app/gl/timer.py GlTimer.span for the current record); None: untimed
        self.pass_timer: Callable[[str], ContextManager] | None = None

    @abc.abstractmethod
    def build(self, backend: SharingBackend, size: tuple[int, int]) -> None:
        """Create GL objects, share them through ``backend`` and build kernels."""

    @abc.abstractmethod
    def compute(self, queue: cl.CommandQueue, frame: int, wait_for, event: bool = True) -> cl.Event | None:
        """Enqueue this frame's kernel(s) on the acquired objects; returns the last event.
        ``event=False`` (passed only to a scene whose ``compute_takes_null_event``): nothing will read
        it (an untimed frame on an in-order queue whose sync mode waits for CL on the CPU:
        FrameScheduler); the kernel is enqueued with the C API's NULL event and None returned."""

    def native_key(self):
        """What ``native_compute``'s calls depend on (the kernel, its sizes); None: no native compute."""
        return None

    def native_compute(self, queue: cl.CommandQueue, event: bool):
        """(calls, the kernel event's out slot or None, ``stage``): what ``compute`` enqueues on the
        in-order ``queue`` without a wait list, as prepared calls for a native call list
        (``app.native.calls.Call``; ``event`` False: the C API's NULL event), valid while ``native_key``
        is the same; ``stage(frame)`` (or None) writes the frame's changing values into the calls'
        prepared arguments before the list runs. None where this scene computes in Python (the default)."""
        return None

    @abc.abstractmethod
    def render(self, size: tuple[int, int]) -> None:
        """Draw with GL from the released objects into the bound framebuffer."""

    @abc.abstractmethod
    def teardown(self) -> None:
        """Release CL objects before their GL objects; idempotent."""

    def use_slot(self, slot: int) -> None:
        """Make copy ``slot`` (0 .. ``slots`` - 1) the one the next frame computes and draws: its
        objects become ``shared``. Scenes with ``max_slots`` > 1 override it."""
        if slot != 0:
            raise ValueError(f"the {self.name} scene keeps one set of shared objects (slot {slot} asked)")

    def undo_built(self, built: list) -> None:
        """Undo what a build recorded, newest first: ("shared", object) through the backend
        (``destroy``: CL's object before GL's), ("release", thing) by its ``release()``. Sets
        ``backend`` to None first, so that a second call does nothing."""
        backend, self.backend = self.backend, None
        if backend is None:
            return
        for kind, thing in reversed(built):
            if kind == "shared":
                backend.destroy(thing)
            else:
                thing.release()
        built.clear()
        self.shared = []

    def resize(self, size: tuple[int, int]) -> None:
        """The framebuffer changed size (0 in a dimension when minimized)."""
        return None

    @property
    def current_size(self):
        """The size in use now (the count, or the image's WxH)."""
        return self.size if self.size is not None else self.default_size

    @property
    def bytes_per_frame(self) -> int:
        """Total size of the GL objects shared each frame."""
        return sum(o.nbytes for o in self.shared)

    # ``shared``, ``cl_uses`` and ``gl_uses``: the same list object while the objects are the same
    # (a scene with copies keeps one list per copy): FrameScheduler's steady frame knows the frame
    # by their identity, and runs the general frame for a list it has not seen
    @property
    def cl_uses(self) -> list[SharedObject]:
        return self.shared

    @property
    def gl_uses(self) -> list[SharedObject]:
        return self.shared

    def describe(self) -> str:
        return self.name

    # -- what a user may change while it runs ---------------------------------------------------
    def gl_pass(self, name: str) -> ContextManager:
        """``with self.gl_pass("gl 3-D pass"):`` times the GL commands inside as one pass of the
        frame in progress, where a timer was given (``pass_timer``); else does nothing."""
        timer = self.pass_timer
        return timer(name) if timer is not None else contextlib.nullcontext()

    def local_size_kernels(self) -> list[cl.Kernel]:
        """The kernels ``local_size`` applies to (built by ``build``); [] where it applies to none."""
        return []

    def set_local_size(self, local: LocalSize | None) -> None:
        """Use ``local`` (W, H) work-groups from the next frame on, or None for the driver's choice.
        1-D kernels take W x H work-items a group.

        Raises:
            UsageError: a side below 1, or more than the device or one of the kernels allows.
        """
        device = self.backend.device if self.backend is not None else None
        if local is not None and device is None:
            raise RuntimeError("set_local_size before build")
        self.local_size = check_local_size(local, device, self.local_size_kernels(), self.local_dims,
                                           f"the {self.name} scene")

    def launch(self, global_size: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """(global, local) sizes for one launch at ``global_size`` with the scene's local size."""
        return launch_sizes(global_size, local_shape(self.local_size, self.local_dims))

    def orbit(self, dx: float, dy: float) -> bool:
        """A mouse drag of (dx, dy) pixels; False where the scene has no camera."""
        if self.camera is None:
            return False
        self.camera.drag(dx, dy)
        return True

    def zoom(self, steps: float) -> bool:
        """Wheel steps (positive: closer); False where the scene has no camera."""
        if self.camera is None:
            return False
        self.camera.zoom(steps)
        return True

    def options(self) -> tuple[SceneOption, ...]:
        """The rows the panel shows for this scene: its own (``scene_options``), the camera, the local
        size; a "text" row's button is its command's (``SceneCommand.button``)."""
        rows = list(self.scene_options())
        if self.camera is not None:
            yaw, pitch, dist = self.camera.state
            rows.append(SceneOption("camera", "camera (drag: orbit, wheel: zoom)", "text",
                                    f"yaw {yaw:.0f} deg, pitch {pitch:.0f} deg, distance {dist:.2f}",
                                    command="reset_camera", keys="c: reset"))
        if self.local_size_kernels():
            value = "driver" if self.local_size is None else f"{self.local_size[0]}x{self.local_size[1]}"
            rows.append(SceneOption("local_size", "local work size", "size", value, command="set_local_size",
                                    choices=LOCAL_SIZE_CHOICES))
        buttons = {c.name: c.button for c in self.commands() if c.button}
        return tuple(replace(r, button=buttons[r.command]) if r.kind == "text" and r.command in buttons else r
                     for r in rows)

    def scene_options(self) -> tuple[SceneOption, ...]:
        """The scene's own option rows (round points, the Julia constant, the filter ...)."""
        return ()

    def kept_options(self) -> dict[str, Any]:
        """The RunConfig fields of the scene's options, as they are now: a command that changes one
        (``SceneCommand.keeps``) puts it in the session's configuration, so a switch away and back
        keeps it; a scene with options of its own adds its fields."""
        return {"local_size": self.local_size}

    # -- the commands every scene answers (a scene's own: ``@scene_command`` in its module) -------
    @classmethod
    def own_commands(cls) -> tuple[SceneCommand, ...]:
        """The commands this class declares itself, in the order of its methods (not those it inherits)."""
        return tuple(c for c in (getattr(v, "scene_command", None) for v in vars(cls).values())
                     if isinstance(c, SceneCommand))

    @classmethod
    def commands(cls) -> tuple[SceneCommand, ...]:
        """Every command a scene of this class answers: its own and its bases'."""
        return tuple(c for k in reversed(cls.__mro__) if issubclass(k, Scene) for c in k.own_commands())

    def _no_camera(self) -> str:
        have = " and ".join(n for n, c in sorted(Scene.registry.items(), key=lambda kv: (kv[1].order, kv[0]))
                            if c.has_camera)
        return f"camera: the {self.name} scene has no camera ({have} do)"

    @scene_command("orbit", "orbit the camera (mouse drag over the scene)", what="camera")
    def orbit_command(self, dx: float = 0.0, dy: float = 0.0) -> str:
        return CAMERA_HELP if self.orbit(float(dx), float(dy)) else self._no_camera()

    @scene_command("zoom", "zoom the camera (mouse wheel over the scene)", what="camera")
    def zoom_command(self, steps: float = 0.0) -> str:
        return CAMERA_HELP if self.zoom(float(steps)) else self._no_camera()

    @scene_command("reset_camera", "camera back to its start view", keys=("c",), what="camera", button="reset")
    def reset_camera_command(self) -> str:
        if self.camera is None:
            return self._no_camera()
        self.camera.reset()
        return "camera reset"

    @scene_command("set_local_size", "local work size of the scene's kernels (WxH, or driver)", what="local size",
                   keeps=("local_size",))
    def local_size_command(self, value=None) -> str:
        """``value``: "WxH", "N", "driver", (W, H) or None; checked against the device and the scene's
        kernels (a refusal is a status line, the old size stays)."""
        local = parse_local_size(value) if isinstance(value, str) or value is None else (int(value[0]), int(value[1]))
        self.set_local_size(local)
        return f"local work size: {'the driver chooses' if local is None else f'{local[0]}x{local[1]}'}"


CAMERA_HELP = "camera: orbit (drag), zoom (wheel), c: back to the start view"


# what the panel's local-size combo offers ("driver": the driver chooses; any WxH may be typed)
LOCAL_SIZE_CHOICES = ("driver", "8x8", "16x16", "32x8", "64x1", "256x1")
