"""X errors a window run survives: libX11's default handlers end the process (exit 1) on the first
error and on a lost connection, and every recorded frame with it.

- A protocol error (XSetErrorHandler): BadWindow or BadDrawable means the window was destroyed by
  another client (``xdotool windowclose``, a window manager's kill); ``gone`` then says why and the
  window reports itself closed, so the run ends at the next frame boundary with its outputs. Any
  other error is logged once per kind and the run goes on (Xlib's error handler returns; Xlib,
  XSetErrorHandler(3), lets it).
- A lost connection (XSetIOErrorHandler: the X server gone, ``xkill``): no X or GLX call can be
  made again and the handler must not return (Xlib exits when it does). The ``last_words`` the run
  registered write the outputs that need no GL (report, trace) and say them; then the process ends
  with status 1.

GLFW swaps in a handler of its own around the calls it expects to fail and restores the one it
found (ours) after.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

log = logging.getLogger(__name__)

BAD_WINDOW, BAD_DRAWABLE = 3, 9  # X11/X.h


class XErrorEvent(ctypes.Structure):  # X11/Xlib.h
    _fields_ = [("type", ctypes.c_int), ("display", ctypes.c_void_p), ("resourceid", ctypes.c_ulong),
                ("serial", ctypes.c_ulong), ("error_code", ctypes.c_ubyte), ("request_code", ctypes.c_ubyte),
                ("minor_code", ctypes.c_ubyte)]


_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(XErrorEvent))
_IO_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class Watch:
    """The process's X handlers (libX11 keeps one of each per process)."""

    def __init__(self) -> None:
        self.gone: str | None = None  # why the window is gone, once an error said so
        self.last_words: list = []  # called with the reason when the connection is lost
        self._seen: set[tuple[int, int]] = set()
        self._lib = None
        self._handlers = None  # the ctypes callbacks, kept alive while libX11 holds them
        self._dying = False

    def install(self) -> bool:
        """Our handlers in place (once); False where libX11 cannot be loaded."""
        if self._handlers is not None:
            return True
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        except OSError:
            return False
        lib.XSetErrorHandler.restype = ctypes.c_void_p
        lib.XSetIOErrorHandler.restype = ctypes.c_void_p
        lib.XGetErrorText.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self._lib = lib
        self._handlers = (_ERROR_HANDLER(self._on_error), _IO_ERROR_HANDLER(self._on_io_error))
        lib.XSetErrorHandler(self._handlers[0])
        lib.XSetIOErrorHandler(self._handlers[1])
        return True

    def _on_error(self, display, event) -> int:
        e = event.contents
        text = ctypes.create_string_buffer(160)
        self._lib.XGetErrorText(display, e.error_code, text, len(text))
        what = (f"X error {text.value.decode(errors='replace') or e.error_code} on request {e.request_code}."
                f"{e.minor_code} (resource 0x{e.resourceid:x})")
        if e.error_code in (BAD_WINDOW, BAD_DRAWABLE) and self.gone is None:
            self.gone = f"the window was destroyed by another X client ({what})"
            log.warning("%s: the run ends", self.gone)
        elif self.gone is not None:  # the teardown's calls on the window that is gone
            log.debug("%s", what)
        elif (e.error_code, e.request_code) not in self._seen:
            self._seen.add((e.error_code, e.request_code))
            log.warning("%s", what)
        return 0

    def _on_io_error(self, _display) -> int:
        if self._dying:  # an X call made by the last words themselves
            os._exit(1)
        self._dying = True
        why = f"the X connection was lost (the X server {os.environ.get('DISPLAY', '')} went away or killed it)"
        try:
            os.write(2, f"glshare: error: {why}; writing the outputs that need no GL\n".encode())
        except OSError:
            pass
        for fn in self.last_words:
            try:
                fn(why)
            except BaseException as exc:  # noqa: BLE001 - the process ends below whatever happened
                try:
                    os.write(2, f"glshare: error: {type(exc).__name__}: {exc}\n".encode())
                except OSError:
                    pass
        for stream in (sys.stdout, sys.stderr):  # the lines said, before the end that flushes nothing
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(1)


WATCH = Watch()
