"""``glshare run``: check the options and every output path, pick window or headless, run.

Everything that can be checked is checked before the surface opens: options, faults to inject,
the CL device selector (and that it names a device), every output path.
"""
from __future__ import annotations

import sys
from pathlib import Path

from app.config import DEFAULT_HEADLESS_FRAMES, RunConfig, cl_device_selector, parse_local_size
from app.errors import UsageError
from app.outputs import check_outputs


def main(args) -> int:
    from app.window import has_display, select_platform

    headless = args.headless
    if not headless and not has_display():
        print("glshare: no display (DISPLAY is not set): running headless", file=sys.stderr)
        headless = True
    frames = args.frames
    screenshot, report = args.screenshot, args.report
    local_size = parse_local_size(getattr(args, "local_size", None))
    video = getattr(args, "video", None)
    if video is not None and args.scene == "yuv" and args.size is not None:
        raise UsageError("--size with --video: the yuv scene plays the video at its own size; leave --size out")
    from app.postprocess.reference import check_radius

    blur_radius = check_radius(getattr(args, "blur_radius", 2))
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
    if video is not None:
        from app.scenes.yuv import video_size

        video_size(video)  # a file FFmpeg cannot read as video: one line, exit 2, before any window
    if args.backend != "auto" and args.backend not in backend_classes():
        raise UsageError(f"--backend {args.backend!r}: choose one of auto, {', '.join(backend_classes())}")
    if args.sync not in sync_modes():
        raise UsageError(f"--sync {args.sync!r}: choose one of {', '.join(sync_modes())}")
    cfg = RunConfig(scene=args.scene, backend=args.backend, sync=args.sync, headless=headless, frames=frames,
                    size=scene.parse_size(args.size), report=report, screenshot=screenshot, trace=args.trace,
                    cl_device=selector, seed=args.seed, strict=args.strict,
                    panel=not args.no_panel, overlay=not args.no_overlay, panel_hz=args.panel_hz, vsync=args.vsync,
                    yuv_format=args.yuv_format, video=video, local_size=local_size,
                    round_points=bool(getattr(args, "round_points", False)), filter=getattr(args, "filter", "sobel"),
                    blur_radius=blur_radius, inject=inject, frames_in_flight=args.frames_in_flight,
                    fps_lines=not args.quiet and not any(str(p) == "-" for p in (screenshot, report, args.trace)))
    select_device(cfg.cl_device)  # a device that exists, before the window opens
    from app.session.loop import run

    _, stop, failed = run(cfg, said=_say_outputs)  # said also when the loop raised, before its error
    if stop.exit_code:
        error = "error: " if stop.how in ("strict", "fault", "error") else ""
        print(f"glshare: {error}{stop.message or stop.how} (stopped at frame {stop.frame})", file=sys.stderr)
    return stop.exit_code or (1 if failed else 0)


def _say_outputs(written: dict, failed: list) -> None:
    """One line per output written (stdout, or stderr where an output is stdout), then one line on
    stderr per output that could not be written."""
    from app.errors import GlshareError

    to_stdout = "standard output" in written.values()
    for kind, where in written.items():
        print(f"glshare: wrote {kind} {where}", file=sys.stderr if to_stdout else sys.stdout)
    for kind, exc in failed:
        why = exc.one_line() if isinstance(exc, GlshareError) else f"{type(exc).__name__}: {exc}"
        print(f"glshare: error: {kind} not written: {why}", file=sys.stderr)
