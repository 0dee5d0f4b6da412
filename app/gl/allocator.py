"""Software GL's per-frame memory: kept by the C allocator instead of handed back every frame.

Mesa's llvmpipe bins each frame's draws into a scene whose blocks it mallocs and frees every frame.
glibc's malloc gives the top of its heap back to the system once more than ``M_TRIM_THRESHOLD``
(128 KiB by default) is free there, so every frame the scene's memory would be returned and the
next frame's binning would fault it in again, page by page, on the thread that draws: with many
particles that fault-in is a large part of the draw call (bench/results/README.md, 'Fifth
session'). Whether a frame pays it depends on what else the process allocates in between (other
allocations that keep the heap's top busy hide it by chance), so the threshold is raised whether
or not the panel is on.

``keep_freed_memory`` raises the trim threshold (``mallopt(M_TRIM_THRESHOLD, ...)``, glibc only) when
the GL renderer rasterizes on the CPU; the process then keeps up to that much free memory for
reuse. Elsewhere nothing is changed: the per-frame scene is the CPU rasterizer's.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
KEEP_BYTES = 256 << 20  # free heap kept for reuse: above a frame's scene memory at the sizes glshare offers

_DONE: list[str] = []


def keep_freed_memory(software: bool) -> str:
    """Raise glibc's trim threshold once per process where ``software`` (the renderer is a
    software rasterizer); returns what was done, or why nothing was (the report names it)."""
    if _DONE:
        return _DONE[0]
    if not software:
        return "unchanged (a GPU renderer: the per-frame page faults were measured on llvmpipe only)"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError) as exc:
        what = f"unchanged (no glibc mallopt here: {exc})"
    else:
        mallopt.restype, mallopt.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_int]
        if mallopt(M_TRIM_THRESHOLD, KEEP_BYTES) == 1:
            what = (f"malloc trim threshold {KEEP_BYTES >> 20} MiB: the software rasterizer's per-frame memory is "
                    "reused, not returned to the system and faulted in again every frame")
        else:
            what = "unchanged (mallopt(M_TRIM_THRESHOLD) refused)"
    log.info("allocator: %s", what)
    _DONE.append(what)
    return what
