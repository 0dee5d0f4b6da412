"""The ``glshare`` command line: the parser and the dispatch to ``app/commands/`` (run, info,
bench, errors, convert).

Bad input gets one clear line on stderr and exit status 2; nothing is written in that case.
No GL module is imported before the command knows whether it runs in a window or headless:
scene and backend names come from their modules' names, sync modes are checked once imported.
"""
from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import signal
import sys
from pathlib import Path

from app import __version__
from app.config import cl_device_selector
from app.errors import GlshareError, UsageError
from app.scenes import scene_module_names
from app.sharing.backends import backend_module_names

log = logging.getLogger("glshare")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _ascii_int(text: str) -> int:
    """int() of ASCII digits only (int() takes other scripts' digits, such as '١٢')."""
    if not text.isascii():
        raise ValueError(text)
    return int(text)


def _ascii_float(text: str) -> float:
    if not text.isascii():
        raise ValueError(text)
    return float(text)


def _positive(text: str) -> int:
    try:
        value = _ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


MAX_FRAMES_IN_FLIGHT = 16  # beyond it the run-ahead only adds latency (and copies, app/session/session.py)


def _in_flight(text: str) -> int:
    value = _positive(text)
    if value > MAX_FRAMES_IN_FLIGHT:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_FRAMES_IN_FLIGHT}, got {value}")
    return value


def _index(text: str) -> int:
    try:
        value = _ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a frame index (0 or more), got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a frame index (0 or more), got {value}")
    return value


MIN_PANEL_HZ = 0.001  # one redraw in about 17 minutes; below it the redraw interval means nothing
MAX_SEED = 2**64 - 1  # numpy's generators take a non-negative seed; glshare keeps it to 64 bits


def _rate(text: str) -> float:
    try:
        value = _ascii_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of redraws per second, got {text!r}")
    if not value >= 0 or value == float("inf"):  # NaN fails the comparison
        raise argparse.ArgumentTypeError(f"expected 0 (every frame) or more, got {text}")
    if 0 < value < MIN_PANEL_HZ:
        raise argparse.ArgumentTypeError(f"expected 0 (every frame) or at least {MIN_PANEL_HZ}, got {text}")
    return value


def _interval_ms(text: str) -> float:
    try:
        value = _ascii_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of milliseconds, got {text!r}")
    if not 0 <= value <= 1000:  # NaN fails the comparison
        raise argparse.ArgumentTypeError(f"expected 0 (every frame) to 1000 ms, got {text}")
    return value


def _seed(text: str) -> int:
    try:
        value = _ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2**64-1, got {text!r}")
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2**64-1, got {value}")
    return value


def _output(text: str) -> Path | str:
    """An output path as typed: ``-`` (standard output), or a Path; a trailing ``/`` (a folder) is
    refused here, before ``Path`` would drop it and make a file named like the folder."""
    if text.endswith(os.sep) or os.path.basename(text) in (".", ".."):  # Path("d/x/.") would be d/x
        raise argparse.ArgumentTypeError(f"{text} names a folder; give a file name inside it (or - for standard output)")
    return text if text == "-" else Path(text)


def _fault(text: str):
    from app.schedule.faults import parse_fault  # start-up: the frame's modules only once --inject is given

    try:
        return parse_fault(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="glshare", description="Watch OpenCL and OpenGL share memory, frame by frame.")
    p.add_argument("--version", action="version", version=f"glshare {__version__}")
    p.add_argument("--debug", action="store_true", help="log at debug level and show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run(sub)
    _add_info(sub)
    _add_bench(sub)
    _add_errors(sub)
    _add_convert(sub)
    _add_attach(sub)
    return p


def _add_run(sub) -> None:
    """``glshare run``: a scene in a window (or headless)."""
    r = sub.add_parser("run", help="run a scene in a window (or headless)")
    r.add_argument("--scene", choices=scene_module_names(), default="particles")
    r.add_argument("--backend", choices=["auto", *backend_module_names()], default="auto")
    r.add_argument("--sync", default="finish", metavar="MODE",
                   help="finish, gl_event, semaphore or none; 'glshare info' says which work here")
    r.add_argument("--headless", action="store_true", help="EGL, no window: render into an FBO")
    r.add_argument("--frames", type=_positive, help="stop after N frames (headless default: 120)")
    r.add_argument("--size", help="particles: a count (65536, 64k); image/yuv: WxH")
    r.add_argument("--window-size", metavar="WxH", help="the whole window (or the headless surface), panel included; "
                                                         "default: the scene's")
    r.add_argument("--report", type=_output, help="write the JSON report here (- for standard output)")
    r.add_argument("--screenshot", type=_output, help="save the last frame as seen (PNG)")
    r.add_argument("--trace", type=_output, help="write a Chrome trace-event JSON (Perfetto)")
    r.add_argument("--cl-device", help="PLATFORM_SUBSTRING[:INDEX] (or GLSHARE_CL_DEVICE)")
    r.add_argument("--seed", type=_seed, default=1, help="the particles' start state (0 to 2**64-1)")
    r.add_argument("--strict", nargs="?", const="spec", default="off", choices=("off", "spec", "all"),
                   help="stop on the first spec violation (or pause in a window); --strict=all: on glshare's "
                        "advice (hazards the spec allows) too")
    r.add_argument("--no-panel", action="store_true", help="draw only the minimal overlay")
    r.add_argument("--no-overlay", action="store_true", help="draw the scene alone, no ImGui at all")
    r.add_argument("--panel-hz", type=_rate, default=None,
                   help="panel redraws per second, at once after input (default 5, 2 on software GL; 0: every frame)")
    r.add_argument("--vsync", action="store_true")
    r.add_argument("--quiet", action="store_true", help="no frame-rate line on stdout every 2 s")
    r.add_argument("--frames-in-flight", type=_in_flight, default=2, metavar="N",
                   help="how many frames the CPU may run ahead of the GPU with semaphore or gl_event sync (1: none); "
                        "with semaphores the image scene keeps a copy of its texture per frame in flight (at most 8)")
    r.add_argument("--stamps-ms", type=_interval_ms, default=1.0, metavar="MS",
                   help="frames shorter than MS milliseconds are timed one per MS of their own time (and one at least "
                        "every 10 MS): a timed frame's CL commands' device stamps read, its GL passes timed (default 1; 0: "
                        "every frame, as --trace does)")
    r.add_argument("--yuv-format", choices=("nv12", "p010"), default="nv12",
                   help="the yuv scene's test pattern (a --video decides its own: NV12, or P010 above 8 bits)")
    r.add_argument("--video", type=Path, metavar="FILE",
                   help="the yuv scene plays this video (any file FFmpeg reads), looping, at its own size")
    r.add_argument("--local-size", metavar="WxH",
                   help="work-group size of the scenes' kernels (N means Nx1; 1-D kernels take W*H); "
                        "default: the driver's choice")
    r.add_argument("--round-points", action="store_true", help="particles: smooth round points instead of squares")
    r.add_argument("--view", choices=("sample", "side"), default="sample",
                   help="particles: the start view, the classic sample's (looking down the fountain) or from the side")
    r.add_argument("--filter", choices=("sobel", "blur"), default="sobel", help="postprocess: Sobel edges or box blur")
    r.add_argument("--blur-radius", type=int, default=2, metavar="N", help="postprocess: box blur radius, 0 to 15")
    r.add_argument("--inject", type=_fault, action="append", default=[], metavar="KIND@FRAME",
                   help="make a fault on purpose in frame FRAME (0 first; repeatable): enqueue, "
                        "out_of_resources, gl_error, stall, lost_context (app/schedule/faults.py says what each does)")


def _add_info(sub) -> None:
    """``glshare info``: what works here."""
    i = sub.add_parser("info", help="platforms, devices, GL, and which sharing backends work here")
    i.add_argument("--json", action="store_true")
    i.add_argument("--cl-device", help="PLATFORM_SUBSTRING[:INDEX] (or GLSHARE_CL_DEVICE)")
    i.add_argument("--window", action="store_true", help="probe through a GLFW window's GLX context (needs an X display) instead of headless EGL")


def _add_bench(sub) -> None:
    """``glshare bench``: the ratios against baselines."""
    b = sub.add_parser("bench", help="measure frame times and copy costs as ratios against baselines")
    b.add_argument("--quick", action="store_true", help="a small sweep (under a minute on 2 cores)")
    b.add_argument("--json", dest="json_path", help="a file, - or a folder (a file named for the date and machine)")
    b.add_argument("--plot", help="a PNG file, - or a folder")
    b.add_argument("--cl-device")


def _add_errors(sub) -> None:
    """``glshare errors``: the error lab."""
    e = sub.add_parser("errors", help="the error lab: every acquire/release (and semaphore) case against the spec")
    e.add_argument("--json", action="store_true")
    e.add_argument("--cl-device")
    e.add_argument("--window", action="store_true", help="probe through a GLFW window's GLX context (needs an X display) instead of headless EGL")
    e.add_argument("--backend", choices=["auto", *backend_module_names()], default="auto",
                   help="the backend whose call families the lab runs (default: gl_sharing, else "
                        "external_memory, else host_copy)")


def _add_convert(sub) -> None:
    """``glshare convert``: one frame through the CL path."""
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
    c.add_argument("output", type=_output, help="OUT: .npy, .png, or - for a PNG on standard output")


def _add_attach(sub) -> None:
    """``glshare attach``: another program's hand-overs recorded and checked (app/attach/)."""
    a = sub.add_parser("attach", help="run a program with glshare's CL layer and GL library: its hand-overs "
                                      "recorded, checked against the spec and timed")
    a.add_argument("--report", type=_output, help="write the JSON report here (- for standard output)")
    a.add_argument("--trace", type=_output, help="write a Chrome trace-event JSON (Perfetto)")
    a.add_argument("--quiet", action="store_true", help="no summary on stderr at the end (errors only)")
    a.add_argument("--strict", action="store_true",
                   help="a hand-over the validator refuses returns the spec's error to the program, never reaching the driver")
    a.add_argument("--no-cl", action="store_true", help="leave the CL layer out (OPENCL_LAYERS)")
    a.add_argument("--no-gl", action="store_true", help="leave the GL preload library out (LD_PRELOAD)")
    a.add_argument("--panel", action="store_true",
                   help="glshare's panel in its own window follows the program live (timeline, owners, findings, "
                        "events) and stays after it ended until closed")
    a.add_argument("--frames", type=_positive, help="with --panel: close glshare's window N frames after the program ended")
    a.add_argument("--screenshot", type=_output, help="with --panel: write glshare's window's last frame here (PNG)")
    a.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS...]")


def _headless(headless: bool = True) -> None:
    """PyOpenGL on EGL for a command that draws nothing (info, bench, errors, convert); GLX where
    ``headless`` is False (info and errors with --window: NVIDIA shares with GLX contexts only)."""
    from app.window import select_platform  # start-up: numpy only once the arguments are good

    select_platform(headless)


def _info(args) -> int:
    _headless(not args.window)
    from app.commands.info import gather, render_text  # start-up: each command imports its own modules

    try:
        data = gather(cl_device_selector(args.cl_device), window=args.window)
    except UsageError as exc:
        if not str(exc).startswith("no OpenCL device found") or not args.json:
            raise
        from app.commands.info import gather_without_cl  # start-up: as above

        print(json.dumps(gather_without_cl(exc.one_line(), window=args.window), indent=2))
        return exc.exit_code  # (said on stdout as JSON; still no OpenCL: not a success)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(render_text(data))
    return 0


def _signals_for(command: str | None) -> None:
    """``run`` keeps the ending signals as flags from here to its last output (app/signals.py);
    every other command gets the usual dispositions back, and a signal received meanwhile acts now."""
    from app.signals import SIGNALS

    if command in ("run", "attach"):  # attach: a signal is passed on to the program, which ends first
        return
    received = SIGNALS.received[:1]
    SIGNALS.restore()
    for signum in received:
        signal.raise_signal(signum)


def _main(argv: list[str] | None = None) -> int:
    from app.signals import SIGNALS

    SIGNALS.install()  # the first line: a signal from here on ends a run at a frame boundary
    argv = sys.argv[1:] if argv is None else argv
    ours = argv[:argv.index("--")] if "--" in argv else argv  # attach: what follows -- is the program's
    debug = "--debug" in ours or os.environ.get("GLSHARE_DEBUG") == "1"
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")
    try:
        try:
            args = build_parser().parse_args(argv)
        except BaseException:  # a bad option, --help, --version: no run, the usual dispositions back
            _signals_for(None)
            raise
        _signals_for(args.command)
        if args.command == "run":
            from app.commands.run import main as run_main  # start-up: each command imports its own modules

            return run_main(args)
        if args.command == "info":
            return _info(args)
        if args.command == "bench":
            _headless()
            from app.bench import main as bench_main  # start-up: each command imports its own modules

            return bench_main(args)
        if args.command == "errors":
            _headless(not args.window)
            from app.lab.lab import main as lab_main  # start-up: each command imports its own modules

            return lab_main(args)
        if args.command == "attach":
            from app.attach.command import main as attach_main  # start-up: each command imports its own modules

            return attach_main(args)
        if args.command == "convert":
            _headless()
            from app.commands.convert import main as convert_main  # start-up: each command imports its own modules

            return convert_main(args)
        raise UsageError(f"unknown command {args.command!r}")
    except GlshareError as exc:
        if debug:
            raise
        print(f"glshare: error: {exc.one_line()}", file=sys.stderr)
        details = getattr(exc, "details", "")
        if details:  # a compiler's log: the lines under the one that names the file
            print("\n".join(f"  {line}" for line in details.splitlines()), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _stdout_gone()
    except OSError as exc:
        if exc.filename is None and exc.errno in _STDOUT_FULL and not debug:
            return _stdout_full(exc)
        raise


# a write to standard output that failed: the disk or the quota is full, the file too large, I/O
_STDOUT_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO)


def _silence_stdout() -> None:
    """Point standard output at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _stdout_gone() -> int:
    """The reader of standard output went away (``glshare errors | head -1``): end quietly with
    the status a process killed by SIGPIPE has, like other command-line tools."""
    _silence_stdout()
    return 128 + signal.SIGPIPE


def _stdout_full(exc: OSError) -> int:
    _silence_stdout()
    print(f"glshare: error: cannot write to standard output: {exc.strerror or exc}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """The command line (the console script and ``python -m app``): runs the command, then flushes
    standard output here, so that a closed pipe or a full disk met by the last buffered lines ends
    like any other (quietly, or with one line)."""
    from app.outputs import guard_standard_streams

    guard_standard_streams()  # started with >&-: /dev/null in their place, and - refused as an output
    status = _main(argv)
    from app.signals import SIGNALS

    if argv is None:  # the process ends next: a signal from here cannot cost anything
        SIGNALS.settle()
    else:  # a caller's process goes on: its dispositions back
        SIGNALS.restore()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _stdout_gone()
    except OSError as exc:
        if exc.errno in _STDOUT_FULL:
            return _stdout_full(exc)
        raise
    return status


if __name__ == "__main__":  # python -m app.cli, as python -m app
    raise SystemExit(main())
