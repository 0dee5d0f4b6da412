"""``glshare attach [--report FILE] [--trace FILE] [--quiet] [--strict] [--no-cl] [--no-gl]
[--panel [--frames N] [--screenshot PNG]] -- PROGRAM [ARGS...]``: run PROGRAM recorded, check and
time its hand-overs (``--panel``: shown live in glshare's own window), and end with its exit status.

Everything that can be refused is refused before the program starts, with one line and nothing
written: no program, a program not found, an output that cannot be written or that is one of the
program's files (its executable, or an argument naming an existing file) or glshare's recorders,
a library not built.
glshare's own lines go to stderr (the program's standard output stays its own); ``--quiet`` keeps
only errors."""
from __future__ import annotations

import os
import sys

from app import native
from app.attach.launch import HOOK_DIR, find_program, libraries, run
from app.attach.report import build_report, summary_lines, write_report
from app.attach.timeline import build
from app.attach.trace import build_trace, write_trace
from app.errors import GlshareError, UsageError
from app.outputs import check_outputs


def program_argv(args) -> list[str]:
    argv = list(args.program or ())
    return argv[1:] if argv[:1] == ["--"] else argv


def _inputs(argv: list[str], path: str) -> list[tuple[str, str]]:
    """(label, path) of the files the run reads: the program's executable, each argument naming a
    file, and glshare's own recorders (built or not: a path that does not exist is no input)."""
    found = [("the program", path)]
    found += [("the program's argument", a) for a in argv[1:] if os.path.isfile(a)]
    found += [("glshare's recorder", native.attach_library(stem)) for stem in ("cl_layer", "gl_preload")]
    found.append(("glshare's recorder", os.path.join(HOOK_DIR, "sitecustomize.py")))
    return found


def main(args) -> int:
    argv = program_argv(args)
    if not args.panel and (args.frames is not None or args.screenshot is not None):
        raise UsageError("glshare attach: --frames and --screenshot are glshare's window's: give them with --panel")
    path = find_program(argv)
    check_outputs({"report": args.report, "trace": args.trace, "screenshot": args.screenshot}, _inputs(argv, path))
    libs = libraries(not args.no_cl, not args.no_gl)
    if args.panel:  # glshare's window follows the program (app/attach/panel.py)
        from app.attach.panel import PanelOptions, run_with_panel  # the window's modules only with --panel

        outcome = run_with_panel(argv, libs, args.strict, PanelOptions(frames_after=args.frames,
                                                                       screenshot=args.screenshot))
    else:
        outcome = run(argv, libs, strict=args.strict)
    timelines = {pid: build(model) for pid, model in outcome.recorder.models.items()}
    report = build_report(outcome, timelines)
    failed = False
    written = []
    for kind, target, write in (("report", args.report, lambda p: write_report(p, report)),
                                ("trace", args.trace, lambda p: write_trace(p, build_trace(
                                    outcome.recorder.models, timelines, os.path.basename(argv[0]),
                                    {"program": argv, "ended": report["ended"]})))):
        if target is None:
            continue
        try:
            written.append((kind, write(target)))
        except GlshareError as exc:
            print(f"glshare: error: {kind} not written: {exc.one_line()}", file=sys.stderr)
            failed = True
    if not args.quiet:
        for line in summary_lines(report):
            print(line, file=sys.stderr)
        for kind, where in written:
            print(f"glshare: wrote {kind} {where}", file=sys.stderr)
    status = outcome.exit_status
    return status if status or not failed else 1
