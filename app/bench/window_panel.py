"""The panel's cost in a window, which the headless bench cannot see.

``glshare bench`` runs on an EGL surface, whose frame is an RGBA8 renderbuffer: the cached panel
layer reaches it by ``glCopyImageSubData``. In a window the frame is the back buffer of an X11
window (sRGB BGRA8 under Xvfb with Mesa), which has no GL name, so the layer is blitted, and
llvmpipe blits between those formats with a shader. This measures the same UI-alone block as the
bench's panel cell (``app/bench/cells.py``: ``draw_ui`` + glFinish against glFinish alone, frame by
frame, the panel on its own redraw clock) in a GLFW window::

    xvfb-run -a python -m app.bench.window_panel --json bench/results/NAME.json

It needs a display; without one it says so in one line and exits 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

PARTICLES = 65_536  # the bench's default size, where its panel cell is measured


def measure(frames: int = 60, size: int = PARTICLES) -> dict:
    """{"panel": stats, "nothing": stats, "redraws", "frames", "composite_path", ...} in a window."""
    from app.bench.cells import _ms, sample_stats
    from app.bench.loops import glshare_ui_frame, show_panel
    from app.config import RunConfig
    from app.session.loop import Run

    cfg = RunConfig(scene="particles", size=size, headless=False, panel=True, frames=10**9)
    with Run(cfg) as rt:
        for _ in range(10):
            rt.tick()
        show_panel(rt, True)
        for _ in range(3):  # the redraws a shown panel asks for at once
            glshare_ui_frame(rt, True)
        panel, nothing = [], []
        t0 = time.perf_counter()
        for j in range(frames):
            for draw in ((True, False) if j % 2 else (False, True)):
                (panel if draw else nothing).append(glshare_ui_frame(rt, draw))
        block_s = time.perf_counter() - t0
        redrew = [s for s in panel if s.extra.get("redrew")]
        copied = [s for s in panel if not s.extra.get("redrew")]
        return {"surface": rt.session.surface.label, "gl": rt.session.gl_info.renderer, "particles": size,
                "frames": frames, "block_s": round(block_s, 3), "panel_hz": rt.ui.layer.redraw_hz,
                "composite_path": rt.ui.layer.composite_path, "redraws": len(redrew),
                "panel": sample_stats(panel), "nothing": sample_stats(nothing),
                "composite_ms": _ms(s.process for s in copied) if copied else None,
                "redraw_ms": _ms(s.process for s in redrew) if redrew else None,
                "what": "process CPU of draw_ui + glFinish after the scene's GL work finished, against glFinish "
                        "alone, in a window (ms); composite_ms: the frames that only copied the cached layer"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app.bench.window_panel", description=__doc__.splitlines()[0])
    p.add_argument("--json", type=Path, help="write the result here (else printed)")
    p.add_argument("--frames", type=int, default=60, help="panel frames (as many frames without)")
    args = p.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print("glshare: the window panel measurement needs a display (run it under xvfb-run -a)", file=sys.stderr)
        return 2
    if args.frames < 4:
        print(f"glshare: --frames must be at least 4, got {args.frames}", file=sys.stderr)
        return 2
    from app.bench import machine_facts
    from app.window import select_platform

    select_platform(False)  # GLX, before OpenGL is imported
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **machine_facts(), **measure(args.frames)}
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
        print(f"glshare: wrote {args.json}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
