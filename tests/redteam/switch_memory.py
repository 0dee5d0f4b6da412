"""Memory across 400 scene/backend/sync switches (issue 38, item 16), 5 frames each: every 25
switches the RSS, the peak RSS, and glibc malloc's bytes in use and free but kept (mallinfo2), to
tell memory the run holds from memory malloc keeps for reuse (app/gl/allocator.py raises its trim
threshold on purpose). One JSON line per sample.

    PYTHONPATH=. xvfb-run -a python tests/redteam/switch_memory.py [--tracemalloc]
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import sys
import tracemalloc

PLAN = [("scene", "image"), ("sync", "none"), ("scene", "yuv"), ("scene", "postprocess"), ("sync", "finish"),
        ("backend", None), ("scene", "particles"), ("sync", "none"), ("sync", "finish")]
SWITCHES, FRAMES_EACH, EVERY = 400, 5, 25


class Mallinfo2(ctypes.Structure):  # malloc.h (glibc 2.33 and later)
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]


def _rss_mb() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> None:
    from app.window import select_platform

    select_platform(True)
    from app.config import RunConfig
    from app.run import Run

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = Mallinfo2
    track = "--tracemalloc" in sys.argv
    if track:
        tracemalloc.start()
    with Run(RunConfig(headless=True, frames=None, fps_lines=False)) as rt:
        session = rt.session
        backends = list(session.registry.available)
        k = 0
        for i in range(SWITCHES + 1):
            for _ in range(FRAMES_EACH):
                rt.tick()
            if i % EVERY == 0:
                gc.collect()
                m = libc.mallinfo2()
                row = {"switch": i, "rss_mb": round(_rss_mb(), 1),
                       "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6, 1),
                       "malloc_in_use_mb": round((m.uordblks + m.hblkhd) / 1e6, 1),
                       "malloc_free_kept_mb": round(m.fordblks / 1e6, 1)}
                if track:
                    row["python_heap_mb"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 1)
                print(json.dumps(row), flush=True)
            what, value = PLAN[i % len(PLAN)]
            if what == "backend":
                k += 1
                value = backends[k % len(backends)]
            outcome = session.switch(**{what: value})
            assert outcome.ok, outcome.message


if __name__ == "__main__":
    main()
