"""What every scene provides to the scheduler: shared objects, one compute step, one GL draw,
and what the rest of glshare needs to know about it (its size, its window, the bytes it shares)."""
from __future__ import annotations

import abc
from typing import Any, ClassVar

import pyopencl as cl

from app.config import RunConfig, parse_count, parse_wxh
from app.sharing.base import SharedObject, SharingBackend

MIN_PANEL_HEIGHT = 512  # a window with the panel beside the image is at least this tall


class Scene(abc.ABC):
    """Subclass in a module of ``app/scenes/`` named like ``name``: it registers itself."""

    name: ClassVar[str]
    title: ClassVar[str] = ""
    order: ClassVar[int] = 50
    size_kind: ClassVar[str] = "image"  # "count": --size is a number of items; "image": WxH
    default_size: ClassVar[Any] = (512, 512)
    even_size: ClassVar[bool] = False  # WxH must be even (planar YUV)
    follows_window: ClassVar[bool] = False  # without --size the image is the framebuffer's size
    panel_sizes: ClassVar[tuple[str, ...]] = ("256x256", "512x512", "1024x1024", "2048x2048")
    registry: ClassVar[dict[str, type["Scene"]]] = {}

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
    def window_size(cls, size, default: tuple[int, int], panel_room: int = 0) -> tuple[int, int]:
        """The window a run opens: image scenes show their image 1:1 up to 2048 pixels, beside the
        panel when ``panel_room`` (the pixels the panel takes at the window's left) is given, in a
        window at least MIN_PANEL_HEIGHT tall then; other scenes open ``default``."""
        if cls.size_kind == "image":
            w, h = tuple(size) if isinstance(size, tuple) and max(size) <= 2048 else tuple(cls.default_size)
            if panel_room:
                return (w + panel_room, max(h, MIN_PANEL_HEIGHT))
            return (w, h)
        return default

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
    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.size = self.size_of(cfg)  # None: the default (or the window's size for follows_window)
        self.backend: SharingBackend | None = None
        self.shared: list[SharedObject] = []  # acquired and released every frame

    @abc.abstractmethod
    def build(self, backend: SharingBackend, size: tuple[int, int]) -> None:
        """Create GL objects, share them through ``backend`` and build kernels."""

    @abc.abstractmethod
    def compute(self, queue: cl.CommandQueue, frame: int, wait_for) -> cl.Event:
        """Enqueue this frame's kernel(s) on the acquired objects; returns the last event."""

    @abc.abstractmethod
    def render(self, size: tuple[int, int]) -> None:
        """Draw with GL from the released objects into the bound framebuffer."""

    @abc.abstractmethod
    def teardown(self) -> None:
        """Release CL objects before their GL objects; idempotent."""

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

    @property
    def cl_uses(self) -> list[SharedObject]:
        return self.shared

    @property
    def gl_uses(self) -> list[SharedObject]:
        return self.shared

    def describe(self) -> str:
        return self.name
