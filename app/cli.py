"""The ``glshare`` command line: the parser and the dispatch to ``app/commands/`` (run, info,
bench, errors, convert).

Bad input gets one clear line on stderr and exit status 2; nothing is written in that case.
No GL module is imported before the command knows whether it runs in a window or headless:
scene and backend names come from their modules' names, sync modes are checked once imported.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from app import __version__
from app.errors import GlshareError, UsageError

log = logging.getLogger("glshare")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def _index(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a frame index (0 or more), got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a frame index (0 or more), got {value}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of redraws per second, got {text!r}")
    if not value >= 0 or value == float("inf"):  # NaN fails the comparison
        raise argparse.ArgumentTypeError(f"expected 0 (every frame) or more, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="glshare", description="Watch OpenCL and OpenGL share memory, frame by frame.")
    p.add_argument("--version", action="version", version=f"glshare {__version__}")
    p.add_argument("--debug", action="store_true", help="log at debug level and show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    from app.scenes import scene_module_names
    from app.sharing.backends import backend_module_names

    r = sub.add_parser("run", help="run a scene in a window (or headless)")
    r.add_argument("--scene", choices=scene_module_names(), default="particles")
    r.add_argument("--backend", choices=["auto", *backend_module_names()], default="auto")
    r.add_argument("--sync", default="finish", metavar="MODE",
                   help="finish, gl_event, semaphore or none; 'glshare info' says which work here")
    r.add_argument("--headless", action="store_true", help="EGL, no window: render into an FBO")
    r.add_argument("--frames", type=_positive, help="stop after N frames (headless default: 120)")
    r.add_argument("--size", help="particles: a count (65536, 64k); image/yuv: WxH")
    r.add_argument("--report", type=Path, help="write the JSON report here")
    r.add_argument("--screenshot", type=Path, help="save the last frame as seen (PNG)")
    r.add_argument("--trace", type=Path, help="write a Chrome trace-event JSON (Perfetto)")
    r.add_argument("--cl-device", help="PLATFORM_SUBSTRING[:INDEX] (or GLSHARE_CL_DEVICE)")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--strict", nargs="?", const="spec", default="off", choices=("off", "spec", "all"),
                   help="stop on the first spec violation (or pause in a window); --strict=all: on glshare's "
                        "advice (hazards the spec allows) too")
    r.add_argument("--no-panel", action="store_true", help="draw only the minimal overlay")
    r.add_argument("--no-overlay", action="store_true", help="draw the scene alone, no ImGui at all")
    r.add_argument("--panel-hz", type=_rate, default=None,
                   help="panel redraws per second, at once after input (default 5, 2 on software GL; 0: every frame)")
    r.add_argument("--vsync", action="store_true")
    r.add_argument("--quiet", action="store_true", help="no frame-rate line on stdout every 2 s")
    r.add_argument("--frames-in-flight", type=_positive, default=2, metavar="N",
                   help="how many frames the CPU may run ahead of the GPU with semaphore or gl_event sync (1: none)")
    r.add_argument("--yuv-format", choices=("nv12", "p010"), default="nv12",
                   help="the yuv scene's test pattern (a --video decides its own: NV12, or P010 above 8 bits)")
    r.add_argument("--video", type=Path, metavar="FILE",
                   help="the yuv scene plays this video (any file FFmpeg reads), looping, at its own size")
    r.add_argument("--local-size", metavar="WxH",
                   help="work-group size of the scenes' kernels (N means Nx1; 1-D kernels take W*H); "
                        "default: the driver's choice")
    r.add_argument("--round-points", action="store_true", help="particles: smooth round points instead of squares")
    r.add_argument("--filter", choices=("sobel", "blur"), default="sobel", help="postprocess: Sobel edges or box blur")
    r.add_argument("--blur-radius", type=int, default=2, metavar="N", help="postprocess: box blur radius, 0 to 15")

    i = sub.add_parser("info", help="platforms, devices, GL, and which sharing backends work here")
    i.add_argument("--json", action="store_true")
    i.add_argument("--cl-device", help="PLATFORM_SUBSTRING[:INDEX] (or GLSHARE_CL_DEVICE)")

    b = sub.add_parser("bench", help="measure frame times and copy costs as ratios against baselines")
    b.add_argument("--quick", action="store_true", help="a small sweep (under a minute on 2 cores)")
    b.add_argument("--json", type=Path, dest="json_path")
    b.add_argument("--plot", type=Path)
    b.add_argument("--cl-device")

    e = sub.add_parser("errors", help="the error lab: every acquire/release (and semaphore) case against the spec")
    e.add_argument("--json", action="store_true")
    e.add_argument("--cl-device")
    e.add_argument("--backend", choices=["auto", *backend_module_names()], default="auto",
                   help="the backend whose call families the lab runs (default: gl_sharing, else "
                        "external_memory, else host_copy)")

    c = sub.add_parser("convert", help="convert one frame (a raw NV12/P010 file, or a frame of a video file) "
                                       "to RGB through the CL path")
    c.add_argument("--format", choices=("nv12", "p010"), dest="fmt",
                   help="raw input: its format (give --size too); leave both out for a video file")
    c.add_argument("--size", help="raw input: WxH")
    c.add_argument("--frame", type=_index, help="video input: the frame to convert, 0 first (default 0)")
    c.add_argument("--matrix", choices=("bt601", "bt709"), default=None,
                   help="default: bt709 for raw input, the stream's (or the usual default) for video")
    c.add_argument("--range", choices=("limited", "full"), default=None, dest="range_",
                   help="default: limited for raw input, the stream's (or limited) for video")
    c.add_argument("--cl-device")
    c.add_argument("input", type=Path)
    c.add_argument("output", type=Path)
    return p


def _info(args) -> int:
    from app.window import select_platform

    select_platform(True)
    from app.commands.info import gather, render_text
    from app.config import cl_device_selector

    data = gather(cl_device_selector(args.cl_device))
    if args.json:
        import json

        print(json.dumps(data, indent=2))
    else:
        print(render_text(data))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv or os.environ.get("GLSHARE_DEBUG") == "1"
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            from app.commands.run import main as run_main

            return run_main(args)
        if args.command == "info":
            return _info(args)
        if args.command == "bench":
            from app.window import select_platform

            select_platform(True)
            from app.bench import main as bench_main

            return bench_main(args)
        if args.command == "errors":
            from app.window import select_platform

            select_platform(True)
            from app.lab.lab import main as lab_main

            return lab_main(args)
        if args.command == "convert":
            from app.window import select_platform

            select_platform(True)
            from app.commands.convert import main as convert_main

            return convert_main(args)
        raise UsageError(f"unknown command {args.command!r}")
    except GlshareError as exc:
        if debug:
            raise
        print(f"glshare: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
