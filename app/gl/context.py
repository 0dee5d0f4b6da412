"""Facts about the current GL context and the glGetError guard every GL step runs under."""
from __future__ import annotations

import re
from dataclasses import dataclass

from app.errors import GlError
from app.gl import api as GL

SHARING_GL_EXTENSIONS = (
    "GL_ARB_cl_event", "GL_ARB_sync", "GL_ARB_timer_query", "GL_KHR_debug", "GL_ARB_buffer_storage",
    "GL_EXT_memory_object", "GL_EXT_memory_object_fd", "GL_EXT_memory_object_win32",
    "GL_EXT_semaphore", "GL_EXT_semaphore_fd", "GL_EXT_semaphore_win32", "GL_ARB_direct_state_access",
)


# renderers that rasterize on the CPU: there a GL pass costs CPU time the frame pays, and GL timer
# stamps mark when a command was recorded rather than run (app/gl/timer.py)
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "lavapipe")


def is_software_renderer(renderer: str) -> bool:
    name = (renderer or "").lower()
    return any(s in name for s in SOFTWARE_RENDERERS)


@dataclass(frozen=True)
class GlInfo:
    vendor: str
    renderer: str
    version: str
    glsl: str
    extensions: frozenset[str]

    @property
    def version_tuple(self) -> tuple[int, int]:
        """(major, minor) from the version string ("4.5 (Core Profile) Mesa ...", "4.6.0 NVIDIA ...")."""
        m = re.match(r"(\d+)\.(\d+)", self.version)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def has(self, name: str) -> bool:
        return name in self.extensions

    @property
    def software(self) -> bool:
        """Whether the renderer rasterizes on the CPU (Mesa llvmpipe and the like)."""
        return is_software_renderer(self.renderer)

    def as_dict(self) -> dict:
        return {"vendor": self.vendor, "renderer": self.renderer, "version": self.version, "glsl": self.glsl,
                "sharing_extensions": {e: e in self.extensions for e in SHARING_GL_EXTENSIONS}}


def gl_info() -> GlInfo:
    """Vendor, renderer, version and extensions of the current context."""

    def s(name: int) -> str:
        value = GL.glGetString(name)
        return value.decode(errors="replace") if value else ""

    n = int(GL.glGetIntegerv(GL.GL_NUM_EXTENSIONS))
    exts = frozenset(GL.glGetStringi(GL.GL_EXTENSIONS, i).decode() for i in range(n))
    info = GlInfo(s(GL.GL_VENDOR), s(GL.GL_RENDERER), s(GL.GL_VERSION), s(GL.GL_SHADING_LANGUAGE_VERSION), exts)
    return info


def check_gl(where: str, code: int | None = None) -> None:
    """Raise GlError for the first pending glGetError (or ``code``, read already), draining the rest."""
    if code is None:
        code = GL.glGetError()
    if code == GL.GL_NO_ERROR:
        return
    more = []
    for _ in range(16):
        extra = GL.glGetError()
        if extra == GL.GL_NO_ERROR:
            break
        more.append(GlError.NAMES.get(extra, hex(extra)))
    raise GlError(code, where=where, detail=f"then {', '.join(more)}" if more else "")
