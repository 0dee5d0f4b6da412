"""glshare: watch OpenCL and OpenGL share memory and hand it back and forth, frame by frame.

Importing the package imports no GL or CL module: the OpenGL platform (GLX for a window, EGL for
headless runs) must be chosen before PyOpenGL is first imported (see ``app.window.select_platform``).
"""
from __future__ import annotations

__version__ = "0.1.0"
