"""``glshare run``: check the options and every output path, pick window or headless, run.

Everything that can be checked is checked before the surface opens: options, faults to inject,
the CL device selector (and that it names a device), every output path.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path

from app.collector import collector_off
from app.config import DEFAULT_HEADLESS_FRAMES, RunConfig, cl_device_selector, parse_local_size, parse_wxh
from app.errors import GlshareError, OutputError, UsageError
from app.outputs import STDOUT, check_outputs, write_text
from app.signals import SIGNALS, exit_code, message


def _start_up_collector():
    """The cyclic garbage collector is off while ``glshare run`` imports its modules (hundreds of
    thousands of objects: numpy, pyopencl, PyOpenGL, ImGui; the collections they set off delay the
    first frame, and the teardown's full collection goes through all of them again:
    bench/results/README.md, 'Start-up with the panel: the collector'), then what was made until then
    (modules, classes, functions: it lives as long as the process) goes to the collector's permanent
    generation (``gc.freeze``) and the collector is on again. No CL or GL object of the session exists
    yet: every one is made after this and collected as before (a switch's and the teardown's
    ``gc.collect()`` find their cycles). Reference counting frees objects as always; only the cyclic
    garbage the imports left stays. A collector that was off stays off, nothing frozen."""
    return collector_off(freeze=True)


def main(args) -> int:
    with _start_up_collector():
        cfg = _config(args)
    if SIGNALS.how is not None:  # a signal while the options were checked: no frame, nothing recorded yet
        print(f"glshare: {message(SIGNALS.how)} before the run started: nothing recorded, no output written",
              file=sys.stderr)
        return exit_code(SIGNALS.how)
    from app.run import run  # start-up: imported by _config, under the start-up collector

    on_stdout = any(str(p) == "-" for p in (cfg.screenshot, cfg.report, cfg.trace))

    def said(written, failed):  # also when the loop raised, before its error
        _say_outputs(written, failed, to_stderr=on_stdout)

    _, stop, failed = run(cfg, said=said)
    if stop.exit_code:
        error = "error: " if stop.how in ("strict", "fault", "error") else ""
        print(f"glshare: {error}{stop.message or stop.how} (stopped at frame {stop.frame})", file=sys.stderr)
    return stop.exit_code or (1 if failed else 0)


def _config(args) -> RunConfig:
    """The run's configuration, every option and output checked; the modules of the run's first
    frame imported (headless, the panel's too) and the OpenCL drivers loaded."""
    from app.window import select_platform  # start-up: imported under the start-up collector

    headless = _headless_or_window(args)
    local_size = parse_local_size(getattr(args, "local_size", None))
    window_size = getattr(args, "window_size", None)
    window_size = parse_wxh(window_size, what="--window-size") if window_size is not None else None
    video = getattr(args, "video", None)
    if video is not None and args.scene == "yuv" and args.size is not None:
        raise UsageError("--size with --video: the yuv scene plays the video at its own size; leave --size out")
    if video is not None and args.scene != "yuv":  # said, not refused: a switch to yuv (s) plays it
        print(f"glshare: --video plays in the yuv scene only; the {args.scene} scene runs first, and a switch "
              "to yuv plays it", file=sys.stderr)
    from app.postprocess.reference import check_radius  # start-up: imported under the start-up collector

    blur_radius = check_radius(getattr(args, "blur_radius", 2))
    frames, screenshot, report, outputs = _frames_and_outputs(args, headless)
    from app.schedule.faults import check_faults  # start-up: imported under the start-up collector

    try:
        inject = check_faults(getattr(args, "inject", None) or (), frames)
    except ValueError as exc:
        raise UsageError(f"--inject: {exc}") from None
    check_outputs(outputs, _inputs(video))
    selector = cl_device_selector(args.cl_device)
    from app.cl.device import parse_selector  # start-up: imported under the start-up collector

    parse_selector(selector)  # the syntax, before anything else is looked at
    select_platform(headless)
    scene = _checked_choices(args, video)
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
    _check_memory_and_device(cfg, scene, video)
    SIGNALS.reassert()  # in front of the handlers the drivers' LLVM installed (app/signals.py)
    return cfg


def _headless_or_window(args) -> bool:
    """Headless as asked, or because there is no display to open a window on (said on stderr)."""
    from app.window import has_display  # start-up: imported under the start-up collector

    if not args.headless and not has_display():
        print("glshare: no display (DISPLAY is not set): running headless", file=sys.stderr)
        return True
    return args.headless


def _frames_and_outputs(args, headless: bool) -> tuple:
    """(frames, screenshot, report, {what: path} of every output to check): a headless run without
    ``--frames`` runs the default count and writes a screenshot and a report under out/ unless given."""
    frames, screenshot, report = args.frames, args.screenshot, args.report
    outputs = {"screenshot": screenshot, "report": report, "trace": args.trace}
    if headless and frames is None:
        frames = DEFAULT_HEADLESS_FRAMES
        out = Path("out")
        if not screenshot:
            screenshot = outputs["the default screenshot"] = out / f"glshare-{args.scene}.png"
        if not report:
            report = outputs["the default report"] = out / f"glshare-{args.scene}.json"
    return frames, screenshot, report, outputs


def _checked_choices(args, video):
    """The scene's class, once the video (where given), ``--backend`` and ``--sync`` are known good."""
    from app.scenes import scene_class  # start-up: imported under the start-up collector
    from app.sharing.registry import backend_classes  # start-up: imported under the start-up collector
    from app.sharing.sync import sync_modes  # start-up: imported under the start-up collector

    scene = scene_class(args.scene)
    if video is not None:
        from app.scenes.yuv import video_size  # start-up: imported under the start-up collector
        from app.yuv.video import check_frame_size  # start-up: as above

        check_frame_size(video, *video_size(video))  # not a video FFmpeg reads, or too large: exit 2, no window
    if args.backend != "auto" and args.backend not in backend_classes():
        raise UsageError(f"--backend {args.backend!r}: choose one of auto, {', '.join(backend_classes())}")
    if args.sync not in sync_modes():
        raise UsageError(f"--sync {args.sync!r}: choose one of {', '.join(sync_modes())}")
    return scene


def _check_memory_and_device(cfg: RunConfig, scene, video) -> None:
    """The scene's memory against the host's and the device's, and a device that exists, before the
    window opens; the run's modules imported meanwhile."""
    from app.cl.device import select_device  # start-up: imported under the start-up collector
    from app.memory import check_device_memory, check_memory

    played = video is not None and cfg.scene == "yuv"
    if video is not None:
        from app.scenes.yuv import video_size  # start-up: imported under the start-up collector
    check_memory(scene, video_size(video) if played else scene.size_of(cfg))
    import app.run  # noqa: F401 - start-up: imported here, under the start-up collector

    if cfg.overlay and cfg.headless:
        # in a window the panel's modules are imported after the window exists (UiHost), as they
        # were: imported before it, the panel was not drawn at all (Xvfb, test_window_panel_screenshot)
        _import_panel_beside_drivers()
    choice = select_device(cfg.cl_device)  # a device that exists, before the window opens
    check_device_memory(choice.device, choice.label, scene, video_size(video) if played else scene.size_of(cfg))
    if video is not None:
        from app.commands.convert import check_image_limits

        check_image_limits(choice.device, *video_size(video), f"{choice.label}, --video {video}")


def _inputs(video) -> list:
    """(label, path) of every file a run may read: the video, and each kernel and shader (a scene
    switch or a hot reload reads any of them during the run)."""
    from app.config import KERNELS_DIR, SHADERS_DIR

    found = [("--video", video)]
    for folder, what in ((KERNELS_DIR, "the kernel"), (SHADERS_DIR, "the shader")):
        try:
            found += [(what, p) for p in sorted(folder.iterdir()) if p.is_file()]
        except OSError:
            pass
    return found


def _import_panel_beside_drivers() -> None:
    """Headless: import the panel's modules (UiHost imports them at the UI's set-up otherwise) while a
    thread loads the OpenCL drivers (``load_drivers``: ctypes calls, which let the GIL go) and
    initializes the EGL display the surface will open (Mesa loads its driver). Both are tens of
    milliseconds of CPU work (ImGui's native module: its bindings registered in one C call that holds
    the GIL; the panel's modules; the ICD loader loading PoCL, Intel's runtime where it is installed,
    and LLVM; Mesa's driver), which overlap (bench/results/README.md, 'Start-up with the panel: the
    collector'). ImGui's library is mapped before the thread starts (``map_native``): its import then
    waits on no ``dlopen`` of the drivers' libraries. Whatever the thread met, ``select_device`` (after
    this) meets again and reports: the ICD loader keeps the platforms it found."""
    from app.cl.device import load_drivers  # start-up: imported under the start-up collector
    from app.ui.bundle import map_native  # start-up: imported under the start-up collector
    from app.window.egl_headless import EglSurface, initialize_display  # PyOpenGL's EGL: after select_platform

    display = EglSurface._candidates()[0]

    def drivers() -> None:
        load_drivers()
        initialize_display(display)

    map_native()
    thread = threading.Thread(target=drivers, name="glshare drivers", daemon=True)
    thread.start()
    try:
        import app.ui.host  # noqa: F401 - optional (imgui_bundle) and start-up: beside the drivers' thread
        import app.ui.model  # noqa: F401 - the same
        import app.ui.panel  # noqa: F401 - the same
    finally:
        thread.join()


def _say_outputs(written: dict, failed: list, to_stderr: bool = False) -> None:
    """One line per output written (stdout, or stderr where an output is stdout: ``to_stderr``,
    written or not, or where stdout cannot take the line), then one line on stderr per output that
    could not be written."""

    to_stderr = to_stderr or "standard output" in written.values()
    for kind, where in written.items():
        line = f"glshare: wrote {kind} {where}\n"
        if not to_stderr:
            try:  # as every output to standard output: whole or failed (app/outputs.py)
                write_text(STDOUT, line)
                continue
            except OutputError:  # (its reader went away): this line and the next on stderr
                to_stderr = True
        sys.stderr.write(line)
    for kind, exc in failed:
        why = exc.one_line() if isinstance(exc, GlshareError) else f"{type(exc).__name__}: {exc}"
        print(f"glshare: error: {kind} not written: {why}", file=sys.stderr)
