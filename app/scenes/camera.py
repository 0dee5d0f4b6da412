"""The orbit camera of the 3-D scenes (particles, postprocess): yaw and pitch around a target,
a distance, and the matrices GL draws with.

Mouse drags orbit (``drag``), the wheel zooms (``zoom``), ``reset`` returns to the scene's start
view. ``version`` counts changes, so a scene that renders ahead can tell when its last render is
out of date. Matrices are numpy float64, row-major; ``gl_matrix`` hands one to
glUniformMatrix4fv (column-major float32). No GL here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# radians per pixel of drag, and the distance factor per wheel step (a notch: 1.0)
DRAG_RADIANS_PER_PIXEL = 0.01
ZOOM_PER_STEP = 0.9


def perspective(fovy_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    """The OpenGL perspective projection (gluPerspective's matrix)."""
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2)
    m = np.zeros((4, 4))
    m[0, 0], m[1, 1] = f / aspect, f
    m[2, 2], m[2, 3] = (far + near) / (near - far), 2 * far * near / (near - far)
    m[3, 2] = -1
    return m


def rotation_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]], np.float64)


def rotation_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], np.float64)


def rotation_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], np.float64)


def translation(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def gl_matrix(m: np.ndarray) -> np.ndarray:
    """A row-major float64 matrix as glUniformMatrix4fv takes it without transposing (column-major float32)."""
    return np.ascontiguousarray(m.T, np.float32)


@dataclass
class OrbitCamera:
    """Yaw and pitch (radians) around the scene's up axis, at ``distance`` from the target.

    ``up`` is the world axis that points up on screen ("y" or "z": the fountain's world has z up).
    Pitch is clamped to ``pitch_range`` and distance to ``distance_range`` so the view never flips
    or passes through the target.
    """

    yaw: float = 0.0
    pitch: float = 0.0
    distance: float = 5.0
    up: str = "y"
    pitch_range: tuple[float, float] = (-math.radians(85), math.radians(85))
    distance_range: tuple[float, float] = (1.5, 30.0)
    version: int = 0

    def __post_init__(self) -> None:
        self._home = (self.yaw, self.pitch, self.distance)

    def drag(self, dx: float, dy: float) -> None:
        """Orbit by a mouse drag of (dx, dy) pixels: right turns the scene right, down tilts it towards you."""
        if not (dx or dy):
            return
        self.yaw += dx * DRAG_RADIANS_PER_PIXEL
        lo, hi = self.pitch_range
        self.pitch = min(hi, max(lo, self.pitch + dy * DRAG_RADIANS_PER_PIXEL))
        self.version += 1

    def zoom(self, steps: float) -> None:
        """Wheel steps: positive (away from you) moves closer."""
        if not steps:
            return
        lo, hi = self.distance_range
        self.distance = min(hi, max(lo, self.distance * ZOOM_PER_STEP ** steps))
        self.version += 1

    def reset(self) -> None:
        self.yaw, self.pitch, self.distance = self._home
        self.version += 1

    @property
    def state(self) -> tuple[float, float, float]:
        """(yaw degrees, pitch degrees, distance): what the panel shows."""
        return (math.degrees(self.yaw), math.degrees(self.pitch), self.distance)

    def view(self) -> np.ndarray:
        """World -> eye: the target at the origin, seen from ``distance`` away after yaw and pitch."""
        if self.up == "z":
            # the z-up world tilted so that z points up on screen, pitch 0 looking along the horizon
            orbit = rotation_x(self.pitch - math.pi / 2) @ rotation_z(self.yaw)
        else:
            orbit = rotation_x(self.pitch) @ rotation_y(self.yaw)
        return translation(0, 0, -self.distance) @ orbit
