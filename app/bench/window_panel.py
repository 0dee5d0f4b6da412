"""The panel's cost in a window, which the headless bench cannot see.

``glshare bench`` runs on an EGL surface, whose frame is an RGBA8 renderbuffer: the cached panel
layer reaches it by ``glCopyImageSubData``. In a window the frame is the back buffer of an X11
window (sRGB BGRA8 under Xvfb with Mesa), which has no GL name, so the layer is blitted, and
llvmpipe blits into it with a shader (a cost per pixel, whatever the layer's format). This
measures the same UI-alone block as the bench's panel cell (``app/bench/cells.py``: the UI + glFinish
against glFinish alone, frame by frame, the panel on its own redraw clock) in a GLFW window, twice:

- ``under``: the scene drawn over the whole window and the panel over it, so its pixels are copied
  into every frame;
- ``beside``: the scene drawn beside the panel (the session's viewport from
  ``UiHost.scene_viewport``, as a window run does), so where the swap keeps the back buffer the
  panel's pixels stay from one frame to the next and are copied only after a redraw.

Each block reports the mean process CPU per frame and the model of ``glshare bench``'s
panel_cost_ms: the copy every frame + a redraw's extra cost x the redraws per frame that panel_hz
gives at the frame rate of the run's own loop (``Run.tick``, measured first)::

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


def _ui_frame(rt, draw: bool, scene_rect):
    """A frame whose scene GL work is finished before the UI (as the bench's ``glshare_ui_frame``):
    the sample times only the UI (``draw``) or nothing, each followed by glFinish, so llvmpipe's
    rasterising threads are counted too. ``extra["redrew"]``: the layer was redrawn in it."""
    from app.bench.loops import timed
    from app.gl import api as GL

    rt.session.step()
    GL.glFinish()
    ui = rt.ui
    before = ui.redraws

    def view():
        if rt.session.scheduler is not None:
            rt.session.scheduler.harvest(gl=False)
        return rt.session.view(demos=rt.controls.demo_views(), trace_written=rt.trace_written)

    def part():
        if draw and rt.session.surface.bind_target():
            ui.draw(view, rt.controls.request, scene_rect=scene_rect())
        GL.glFinish()

    sample = timed(part)
    sample.extra["redrew"] = ui.redraws != before
    rt.session.surface.present()
    return sample


def _block(rt, frames: int, scene_rect, loop_frame_ms: float) -> dict:
    from app.bench.cells import _ms, sample_stats

    rt.ui.mark_dirty()
    for _ in range(4):  # the redraws a change asks for at once, and the first full copies
        _ui_frame(rt, True, scene_rect)
    panel, nothing = [], []
    composites0 = rt.ui.layer.composites
    t0 = time.perf_counter()
    for j in range(frames):
        for draw in ((True, False) if j % 2 else (False, True)):
            (panel if draw else nothing).append(_ui_frame(rt, draw, scene_rect))
    block_s = time.perf_counter() - t0
    redrew = [s for s in panel if s.extra.get("redrew")]
    copied = [s for s in panel if not s.extra.get("redrew")]
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    nothing_ms = mean([s.process / 1e6 for s in nothing])
    copy_ms = mean([s.process / 1e6 for s in copied]) - nothing_ms if copied else None
    redraw_ms = mean([s.process / 1e6 for s in redrew]) - nothing_ms if redrew else None
    hz = rt.ui.layer.redraw_hz
    model = None
    if copy_ms is not None and redraw_ms is not None:
        per_frame = min(1.0, hz * loop_frame_ms / 1e3)
        model = round(copy_ms + (redraw_ms - copy_ms) * per_frame, 4)
    return {"frames": frames, "block_s": round(block_s, 3), "redraws": len(redrew),
            "layer_copies": rt.ui.layer.composites - composites0, "composite_path": rt.ui.layer.composite_path,
            "panel": sample_stats(panel), "nothing": sample_stats(nothing),
            "composite_ms": _ms(s.process for s in copied) if copied else None,
            "redraw_ms": _ms(s.process for s in redrew) if redrew else None,
            "copy_extra_ms": None if copy_ms is None else round(copy_ms, 4),
            "redraw_extra_ms": None if redraw_ms is None else round(redraw_ms, 4),
            "mean_extra_ms": round(mean([s.process / 1e6 for s in panel]) - nothing_ms, 4),
            "panel_cost_ms_model": model}


def measure(frames: int = 60, size: int = PARTICLES) -> dict:
    """The two blocks (under, beside) in one window, and the run's own frame time."""
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=size, headless=False, panel=True, frames=10**9)
    with Run(cfg) as rt:
        for _ in range(10):
            rt.tick()
        starts = []
        for _ in range(40):  # the run's own loop, panel shown: its frame rate sets the redraws per frame
            starts.append(time.perf_counter())
            rt.tick()
        gaps = sorted(b - a for a, b in zip(starts, starts[1:]))
        loop_frame_ms = gaps[len(gaps) // 2] * 1e3
        session = rt.session
        beside_viewport, session.scene_viewport = session.scene_viewport, None  # the whole window
        under = _block(rt, frames, lambda: None, loop_frame_ms)
        session.scene_viewport = beside_viewport  # as Run sets it for a window
        beside = _block(rt, frames, lambda: getattr(session, "scene_rect", None), loop_frame_ms)
        return {"surface": rt.session.surface.label, "gl": rt.session.gl_info.renderer, "particles": size,
                "window": list(rt.session.surface.framebuffer_size), "panel_hz": rt.ui.layer.redraw_hz,
                "loop_frame_ms": round(loop_frame_ms, 3), "under": under, "beside": beside,
                "back_buffer_kept": rt.ui.layer.back_buffer_kept,
                "what": "process CPU per frame of the UI + glFinish after the scene's GL work finished, against "
                        "glFinish alone, in a window (ms); *_extra_ms: minus the frames without the UI; "
                        "panel_cost_ms_model: copy + (redraw - copy) x panel_hz x loop_frame_ms, as glshare "
                        "bench models it"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app.bench.window_panel", description=__doc__.splitlines()[0])
    p.add_argument("--json", type=Path, help="write the result here (else printed)")
    p.add_argument("--frames", type=int, default=60, help="panel frames per block (as many frames without)")
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
