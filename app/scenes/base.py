"""What every scene provides to the scheduler: shared objects, one compute step, one GL draw."""
from __future__ import annotations

import abc
from typing import ClassVar

import pyopencl as cl

from app.config import RunConfig
from app.sharing.base import SharedObject, SharingBackend


class Scene(abc.ABC):
    name: ClassVar[str]

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
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
