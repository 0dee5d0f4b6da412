"""``glshare run``: check the options and every output path, pick window or headless, run.

Everything that can be checked is checked before the surface opens: options, faults to inject,
the CL device selector (and that it names a device), every output path.
"""
from __future__ import annotations

import sys
from pathlib import Path

from app.config import DEFAULT_HEADLESS_FRAMES, RunConfig, cl_device_selector
from app.errors import UsageError
from app.outputs import check_outputs, is_stdout


def main(args) -> int:
    from app.window import has_display, select_platform

    headless = args.headless
    if not headless and not has_display():
        print("glshare: no display (DISPLAY is not set): running headless", file=sys.stderr)
        headless = True
    frames = args.frames
    screenshot, report = args.screenshot, args.report
    outputs = {"screenshot": screenshot, "report": report, "trace": args.trace}
    if headless and frames is None:
        frames = DEFAULT_HEADLESS_FRAMES
        out = Path("out")
        if not screenshot:
            screenshot = outputs["the default screenshot"] = out / f"glshare-{args.scene}.png"
        if not report:
            report = outputs["the default report"] = out / f"glshare-{args.scene}.json"
    from app.schedule.faults import check_faults

    try:
        inject = check_faults(getattr(args, "inject", None) or (), frames)
    except ValueError as exc:
        raise UsageError(f"--inject: {exc}") from None
    check_outputs(outputs)
    selector = cl_device_selector(args.cl_device)
    from app.cl.device import parse_selector, select_device

    parse_selector(selector)  # the syntax, before anything else is looked at
    select_platform(headless)
    from app.scenes import scene_class
    from app.sharing.registry import backend_classes
    from app.sharing.sync import sync_modes

    scene = scene_class(args.scene)
    if args.backend != "auto" and args.backend not in backend_classes():
        raise UsageError(f"--backend {args.backend!r}: choose one of auto, {', '.join(backend_classes())}")
    if args.sync not in sync_modes():
        raise UsageError(f"--sync {args.sync!r}: choose one of {', '.join(sync_modes())}")
    cfg = RunConfig(scene=args.scene, backend=args.backend, sync=args.sync, headless=headless, frames=frames,
                    size=scene.parse_size(args.size), report=report, screenshot=screenshot, trace=args.trace,
                    cl_device=selector, seed=args.seed, strict=args.strict,
                    panel=not args.no_panel, overlay=not args.no_overlay, panel_hz=args.panel_hz, vsync=args.vsync,
                    yuv_format=args.yuv_format, inject=inject)
    select_device(cfg.cl_device)  # a device that exists, before the window opens
    from app.schedule.faults import stop_reason
    from app.session.loop import Run

    with Run(cfg) as r:
        r.loop()
        written = r.finish()
        stopped = stop_reason(r.session.scheduler)
    # once any output went to standard output, the "wrote" lines go to stderr so that they cannot mix in
    to_stdout = any(is_stdout(p) for p in (screenshot, report, args.trace))
    for kind, where in written.items():
        print(f"glshare: wrote {kind} {where}", file=sys.stderr if to_stdout else sys.stdout)
    if stopped:
        print(f"glshare: error: the run stopped early: {stopped}", file=sys.stderr)
        return 1
    return 0
