"""The interactive window: GLFW with an OpenGL 3.3+ core context.

pyGLFW loads the GLFW library at its import: imgui-bundle's where a UI is drawn (app/run.py
completes imgui_bundle's import before the window opens, which points pyGLFW at it, so that the
window and ImGui's GLFW backend share one GLFW), pyGLFW's own otherwise: the window itself never
needs imgui_bundle.

Input: keys become ``KeyEvent``s (``poll_events``); mouse drags with the left button held and
wheel steps become ``MouseEvent``s, summed over one poll (``mouse_events``), for the scene's camera.
The cursor, button, scroll and character callbacks are installed once, here, before ImGui's GLFW
backend, which chains to them; each also calls the listeners of ``on_input`` (the panel redraws
after input). Whether the panel wants the mouse is the caller's question (ImGui's
want_capture_mouse): the window reports every drag and wheel step.
"""
from __future__ import annotations

import ctypes
import logging
import os

import glfw
import numpy as np

from app.errors import DisplayUnavailable, GlshareError
from app.gl import api as GL
from app.gl.raw import gl_function
from app.source_files import capturing_stderr
from app.window import KeyEvent, MouseEvent, x_errors
from app.window import gl_max_framebuffer as gl_limit

log = logging.getLogger(__name__)


# X11 window sizes are 16-bit; and llvmpipe's put-image of a frame past 4 GiB asserts inside xcb
# (32767 x 32767 aborted the process), which GL's own limits below keep far from
X_MAX_SIDE = 16384


def gl_max_framebuffer() -> tuple[int, int]:
    """The largest framebuffer GL and X draw here (``app.window.gl_max_framebuffer`` within X's limit)."""
    return gl_limit(X_MAX_SIDE)


def _no_display_message(error, said: str) -> str:
    """One line: what GLFW said, what libX11 printed, and the way out."""
    code, desc = error if isinstance(error, tuple) else (None, error)
    desc = desc.decode(errors="replace") if isinstance(desc, bytes) else (desc or "no reason given")
    display = os.environ.get("DISPLAY", "")
    extra = f" ({said})" if said else ""
    if display:
        return (f"cannot open the X display {display!r}: {desc}{extra}; is an X server running there? "
                f"Use --headless to run without a window")
    return f"GLFW could not start: {desc}{extra}; use --headless to run without a window"


class GlfwWindow:
    kind = "window"
    gl_platform = "glx"

    def __init__(self, size: tuple[int, int], *, title: str = "glshare", vsync: bool = False) -> None:
        self.label = f"GLFW window '{title}'"
        self.max_size = (X_MAX_SIDE, X_MAX_SIDE)  # until the context says what GL allows
        glfw.ERROR_REPORTING = "log"  # debug lines on the 'glfw' logger; failures are said in one line below
        ok, said = capturing_stderr(glfw.init)
        if not ok:
            raise DisplayUnavailable(_no_display_message(glfw.get_error(), said), where="glfwInit")
        x_errors.WATCH.install()  # an X error or a lost connection ends the run with its outputs, not exit(1)
        glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
        glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
        glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
        glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
        glfw.window_hint(glfw.CONTEXT_CREATION_API, glfw.NATIVE_CONTEXT_API)  # GLX on X11
        w, h = self._clamped(size, "the window")
        self._window = glfw.create_window(w, h, title, None, None)
        if not self._window:
            code, desc = glfw.get_error()
            glfw.terminate()
            detail = f": {desc.decode(errors='replace') if isinstance(desc, bytes) else desc}" if desc else ""
            raise GlshareError(f"glfw.create_window failed (no GL 3.3 core context?){detail}", where="glfwCreateWindow")
        glfw.make_context_current(self._window)
        self.max_size = gl_max_framebuffer()
        glfw.set_window_size_limits(self._window, 1, 1, *self.max_size)  # a window manager keeps user resizes within
        if (w, h) != self._clamped((w, h), "the window"):
            glfw.set_window_size(self._window, *self._clamped((w, h), "the window"))
        glfw.swap_interval(1 if vsync else 0)
        self._events: list[KeyEvent] = []
        self._input_listeners: list = []
        self._dragging = False  # the left button is held (pressed over the window)
        self._cursor: tuple[float, float] | None = None
        self._drag = [0.0, 0.0]  # summed since the last mouse_events()
        self._scroll = 0.0
        glfw.set_key_callback(self._window, self._on_key)
        glfw.set_cursor_pos_callback(self._window, self._on_cursor)
        glfw.set_mouse_button_callback(self._window, self._on_button)
        glfw.set_scroll_callback(self._window, self._on_scroll)
        glfw.set_char_callback(self._window, self._on_char)
        # asked once here, then kept by the callback: glfwGetFramebufferSize is a round trip to the
        # X server, and a frame would ask several times (bench/results/README.md, 'The panel in a
        # window')
        self._framebuffer_size = tuple(glfw.get_framebuffer_size(self._window))
        glfw.set_framebuffer_size_callback(self._window, self._on_framebuffer_size)

    def on_input(self, fn) -> None:
        """Call ``fn()`` on mouse movement, buttons, scrolling, characters and keys (the panel redraws)."""
        self._input_listeners.append(fn)

    def _input(self) -> None:
        for fn in self._input_listeners:
            fn()

    def _on_cursor(self, window, x: float, y: float) -> None:
        if self._dragging and self._cursor is not None:
            self._drag[0] += x - self._cursor[0]
            self._drag[1] += y - self._cursor[1]
        self._cursor = (x, y)
        self._input()

    def _on_button(self, window, button: int, action: int, mods: int) -> None:
        if button == glfw.MOUSE_BUTTON_LEFT:
            self._dragging = action == glfw.PRESS
            if self._dragging:
                self._cursor = tuple(glfw.get_cursor_pos(window))
        self._input()

    def _on_scroll(self, window, dx: float, dy: float) -> None:
        self._scroll += dy
        self._input()

    def _on_char(self, window, codepoint: int) -> None:
        self._input()

    def mouse_events(self) -> list[MouseEvent]:
        """The drag and the wheel steps since the last call (after ``poll_events``), at most one of each."""
        out = []
        if self._drag[0] or self._drag[1]:
            out.append(MouseEvent("drag", self._drag[0], self._drag[1]))
        if self._scroll:
            out.append(MouseEvent("scroll", 0.0, self._scroll))
        self._drag = [0.0, 0.0]
        self._scroll = 0.0
        return out

    @property
    def window_address(self) -> int:
        """The GLFWwindow* as an integer, for imgui's GLFW backend."""
        return ctypes.cast(self._window, ctypes.c_void_p).value

    def _on_key(self, window, key, scancode, action, mods) -> None:
        self._input()
        if action != glfw.PRESS:
            return
        name = glfw.get_key_name(key, scancode)
        if not name:
            name = {glfw.KEY_SPACE: "space", glfw.KEY_RIGHT: "right", glfw.KEY_LEFT: "left",
                    glfw.KEY_ESCAPE: "escape", glfw.KEY_F12: "f12", glfw.KEY_TAB: "tab",
                    glfw.KEY_ENTER: "enter"}.get(key, f"key{key}")
        self._events.append(KeyEvent(name.lower(), bool(mods & glfw.MOD_SHIFT)))

    def _on_framebuffer_size(self, window, width: int, height: int) -> None:
        """Keeps the size; a resize past what GL and X allow that no window manager stopped is
        shrunk back, with one warning."""
        self._framebuffer_size = (width, height)
        if width > self.max_size[0] or height > self.max_size[1]:
            glfw.set_window_size(window, *self._clamped((width, height), "the window was resized to"))

    @property
    def framebuffer_size(self) -> tuple[int, int]:
        return self._framebuffer_size

    def should_close(self) -> bool:
        return bool(glfw.window_should_close(self._window)) or x_errors.WATCH.gone is not None

    def on_connection_lost(self, fn) -> None:
        """``fn(why)`` is called when the X connection is lost, before the process ends (x_errors)."""
        x_errors.WATCH.last_words.append(fn)

    def request_close(self) -> None:
        glfw.set_window_should_close(self._window, True)

    def poll_events(self) -> list[KeyEvent]:
        glfw.poll_events()
        events, self._events = self._events, []
        return events

    @property
    def draw_framebuffer(self) -> int:
        return 0

    @property
    def color_buffer(self) -> None:
        return None  # the back buffer has no GL name

    def bind_target(self) -> bool:
        w, h = self.framebuffer_size
        gl_function("glBindFramebuffer")(GL.GL_FRAMEBUFFER, 0)  # every frame: straight through ctypes
        if w == 0 or h == 0:
            return False
        gl_function("glViewport")(0, 0, w, h)
        return True

    def present(self) -> None:
        glfw.swap_buffers(self._window)

    def read_pixels(self) -> np.ndarray:
        """The back buffer as drawn this frame (call before ``present``), top row first."""
        w, h = self.framebuffer_size
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, 0)
        GL.glReadBuffer(GL.GL_BACK)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        data = GL.glReadPixels(0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE)
        return np.frombuffer(data, np.uint8).reshape(h, w, 4)[::-1].copy()

    def _clamped(self, size, what: str) -> tuple[int, int]:
        """``size`` within ``max_size``, with one warning when it was not."""
        w, h = (max(0, int(v)) for v in size)
        cw, ch = min(w, self.max_size[0]), min(h, self.max_size[1])
        if (cw, ch) != (w, h):
            log.warning("%s %dx%d is larger than GL and X allow here (%dx%d): made %dx%d", what, w, h,
                        *self.max_size, cw, ch)
        return cw, ch

    def resize(self, width: int, height: int) -> None:
        """0 in either dimension minimizes the window; larger than GL and X allow is clamped, with a warning."""
        width, height = self._clamped((width, height), "a window of")
        if width == 0 or height == 0:
            glfw.iconify_window(self._window)
        else:
            glfw.restore_window(self._window)
            glfw.set_window_size(self._window, width, height)
        glfw.poll_events()
        self._framebuffer_size = tuple(glfw.get_framebuffer_size(self._window))  # X may not have said yet

    def set_vsync(self, on: bool) -> None:
        glfw.swap_interval(1 if on else 0)

    def gl_sharing_properties(self) -> list[tuple[str, int]]:
        from OpenGL import GLX  # start-up: PyOpenGL only where a CL context shares this one

        ctx = GLX.glXGetCurrentContext()
        dpy = GLX.glXGetCurrentDisplay()
        as_int = lambda p: p if isinstance(p, int) else (ctypes.cast(p, ctypes.c_void_p).value or 0)  # noqa: E731
        return [("GL_CONTEXT_KHR", as_int(ctx)), ("GLX_DISPLAY_KHR", as_int(dpy))]

    def close(self) -> None:
        """Idempotent: destroys the window and ends GLFW."""
        if self._window is None:
            return
        window, self._window = self._window, None
        glfw.destroy_window(window)
        glfw.terminate()
