"""``glshare run``: check the options and every output path, pick window or headless, run.

Everything that can be checked is checked before the surface opens: options, faults to inject,
the CL device selector (and that it names a device), every output path.
"""
from __future__ import annotations

import sys
from pathlib import Path

from app.collector import collector_off
from app.config import DEFAULT_HEADLESS_FRAMES, RunConfig, cl_device_selector, parse_local_size, parse_wxh
from app.errors import UsageError
from app.outputs import check_outputs


def _start_up_collector():
    """The cyclic garbage collector is off while ``glshare run`` imports its modules (hundreds of
    thousands of objects: numpy, pyopencl, PyOpenGL, ImGui; on the 2-core CPU machine the
    collections they set off took ~40 ms before the first frame, and the teardown's full
    collection went through all of them again), then what was made until then (modules, classes,
    functions: it lives as long as the process) goes to the collector's permanent generation
    (``gc.freeze``) and the collector is on again. No CL or GL object of the session exists yet:
    every one is made after this and collected as before (a switch's and the teardown's
    ``gc.collect()`` find their cycles). Reference counting frees objects as always; only the
    cyclic garbage the imports left stays. A collector that was off stays off, nothing frozen."""
    return collector_off(freeze=True)


def main(args) -> int:
    with _start_up_collector():
        cfg = _config(args)
    from app.session.loop import run

    _, stop, failed = run(cfg, said=_say_outputs)  # said also when the loop raised, before its error
    if stop.exit_code:
        error = "error: " if stop.how in ("strict", "fault", "error") else ""
        print(f"glshare: {error}{stop.message or stop.how} (stopped at frame {stop.frame})", file=sys.stderr)
    return stop.exit_code or (1 if failed else 0)


def _config(args) -> RunConfig:
    """The run's configuration, every option and output checked; the modules of the run's first
    frame imported (headless, the panel's too) and the OpenCL drivers loaded."""
    from app.window import has_display, select_platform

    headless = args.headless
    if not headless and not has_display():
        print("glshare: no display (DISPLAY is not set): running headless", file=sys.stderr)
        headless = True
    frames = args.frames
    screenshot, report = args.screenshot, args.report
    local_size = parse_local_size(getattr(args, "local_size", None))
    window_size = getattr(args, "window_size", None)
    window_size = parse_wxh(window_size, what="--window-size") if window_size is not None else None
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
                    size=scene.parse_size(args.size), window_size=window_size, report=report, screenshot=screenshot, trace=args.trace,
                    cl_device=selector, seed=args.seed, strict=args.strict,
                    panel=not args.no_panel, overlay=not args.no_overlay, panel_hz=args.panel_hz, vsync=args.vsync,
                    yuv_format=args.yuv_format, video=video, local_size=local_size,
                    round_points=bool(getattr(args, "round_points", False)), view=getattr(args, "view", "sample"),
                    filter=getattr(args, "filter", "sobel"),
                    blur_radius=blur_radius, inject=inject, frames_in_flight=args.frames_in_flight,
                    stamps_ms=args.stamps_ms,
                    fps_lines=not args.quiet and not any(str(p) == "-" for p in (screenshot, report, args.trace)))
    import app.session.loop  # noqa: F401 - imported here, under the start-up collector's rule

    if cfg.overlay and headless:
        # in a window the panel's modules are imported after the window exists (UiHost), as they
        # were: imported before it, the panel was not drawn at all (Xvfb, test_window_panel_screenshot)
        _import_panel_beside_drivers()
    select_device(cfg.cl_device)  # a device that exists, before the window opens
    return cfg


def _import_panel_beside_drivers() -> None:
    """Headless: import the panel's modules (UiHost imports them at the UI's set-up otherwise)
    while a thread loads the OpenCL drivers (``load_drivers``: ctypes calls, which let the GIL go)
    and initializes the EGL display the surface will open (Mesa loads its driver). On the 2-core
    CPU machine the two are ~90 ms (ImGui's native module: its bindings registered in one C call
    that holds the GIL; the panel's modules) and ~50 + ~6 ms (the ICD loader loading PoCL, Intel's
    runtime where it is installed, and LLVM; Mesa's driver) of CPU work, which overlap. ImGui's library is mapped before the thread starts (``map_native``): its import then waits on
    no ``dlopen`` of the drivers' libraries. Whatever the thread met, ``select_device`` (after
    this) meets again and reports: the ICD loader keeps the platforms it found."""
    import threading

    from app.cl.device import load_drivers
    from app.ui.bundle import map_native
    from app.window.egl_headless import EglSurface, initialize_display

    display = EglSurface._candidates()[0]

    def drivers() -> None:
        load_drivers()
        initialize_display(display)

    map_native()
    thread = threading.Thread(target=drivers, name="glshare drivers", daemon=True)
    thread.start()
    try:
        import app.ui.host  # noqa: F401 - ImGui's native module, app.ui.bundle, the layer
        import app.ui.model  # noqa: F401
        import app.ui.panel  # noqa: F401
    finally:
        thread.join()


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
