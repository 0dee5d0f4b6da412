"""Probe: the Python a frame executes, counted, not timed: glshare's frame against the bare loop's,
in bytecode instructions and Python function calls per frame (``sys.settrace`` with opcode events).
A count does not drift with the host's speed, which on the H200's host changes 2x from minute to
minute (bench/results/README.md, the eleventh session), so it compares commits across loans and
machines. Not part of the package; run from a project root:

    python3 bench/probes/frame_opcodes_probe.py [scene size backend frames]   # particles 1024 host_mapped 300
    SYNC=semaphore python3 bench/probes/frame_opcodes_probe.py particles 16384 external_memory
    TOP=30 ...          # the functions with the most instructions a frame, each loop's
    FILES=12 ...        # the source files with the most instructions a frame, each loop's
    LINES=app/schedule ...  # the instructions a frame by source line, of the files whose path holds it
    NATIVE=0 ...        # the steady frame's hand-over in Python (FrameScheduler.native), for an A/B

Rows: untimed frames (no stamps read: the steady state between two timed frames), timed frames
(every frame timed: ``stamps_interval_ns`` 0), and the bare loop (app/bench/loops.py BareLoop). The
driver's own work is not Python and is not counted; what a counted instruction costs in time is
the host's Python reference (app/bench PYTHON_REF_WHAT), printed first. Measurement only.
"""
import collections
import os
import sys

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from app.bench import python_reference_us  # noqa: E402
from app.bench.loops import BareLoop, glshare_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402
from bench.probes._args import scene_args  # noqa: E402

scene, size_arg, size, backend, frames = scene_args("1024", "host_mapped", 300)
sync = os.environ.get("SYNC", "finish")
top = int(os.environ.get("TOP", "0"))
files = int(os.environ.get("FILES", "0"))
lines = os.environ.get("LINES", "")


def count(fn, n: int) -> tuple[float, float, collections.Counter]:
    """(instructions, Python calls) a call of ``fn``, and the instructions by function, over ``n`` calls
    (by function and line, in the files ``LINES`` names)."""
    per_fn: collections.Counter = collections.Counter()
    calls = [0]

    def tracer(frame, event, arg):
        if event == "opcode":
            code = frame.f_code
            per_fn[(code.co_filename, code.co_firstlineno, code.co_name)] += 1
            if lines and lines in code.co_filename:
                per_fn[(code.co_filename, -(frame.f_lineno or 0), code.co_name)] += 1  # (None: a line-less instruction)
        elif event == "call":
            calls[0] += 1
            frame.f_trace_opcodes = True
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(n):
            fn()
    finally:
        sys.settrace(None)
    by_line = sum(v for k, v in per_fn.items() if k[1] < 0)
    return (sum(per_fn.values()) - by_line) / n, calls[0] / n, per_fn


cfg = RunConfig(scene=scene, backend=backend, sync=sync, headless=True, size=size, panel=False, overlay=False)
with Run(cfg) as rt:
    bare, records, sched = BareLoop(rt), [], rt.session.scheduler
    sched.native = sched.native and os.environ.get("NATIVE", "1") != "0"
    interval = sched.stamps_interval_ns
    for _ in range(100):  # caches filled, programs built, as in a run
        glshare_frame(rt, records)
        bare.frame()
    print(f"# the host's Python reference (app/bench PYTHON_REF_WHAT): {python_reference_us()} us", flush=True)
    print(f"# {scene} {size_arg} {backend} {sync}, {frames} frames a row, the hand-over "
          f"{'native' if sched.native else 'in Python: ' + (sched.native_reason or 'NATIVE=0')}", flush=True)
    rows = []
    for name, setting in (("untimed", 10 ** 15), ("timed", 0)):
        sched.stamps_interval_ns = setting
        glshare_frame(rt, records)  # (an untimed row: its first frame is timed, as every rung's is)
        count(lambda: glshare_frame(rt, records), 3)  # (Python 3.12 counts a code's instructions from its next run)
        rows.append((f"glshare {name}", *count(lambda: glshare_frame(rt, records), frames)))
        del records[:]
    sched.stamps_interval_ns = interval
    sched.harvest()
    count(bare.frame, 3)
    rows.append(("bare", *count(bare.frame, frames)))
    base_ops, base_calls = rows[-1][1], rows[-1][2]
    for name, ops, calls, _ in rows:
        extra = "" if name == "bare" else f"  (over the bare loop: {ops - base_ops:7.1f} instructions, {calls - base_calls:5.1f} calls)"
        print(f"{name:<16} {ops:8.1f} instructions {calls:6.1f} Python calls a frame{extra}", flush=True)
    for name, _, _, per_fn in rows if top else ():
        print(f"# {name}: the {top} functions with the most instructions a frame")
        for (path, line, fn), n in [item for item in per_fn.most_common() if item[0][1] >= 0][:top]:
            print(f"  {n / frames:7.1f} {os.path.relpath(path)}:{line} {fn}")
    for name, _, _, per_fn in rows if files else ():
        by_file: collections.Counter = collections.Counter()
        for (path, line, _), n in per_fn.items():
            if line >= 0:
                by_file[os.path.relpath(path)] += n
        print(f"# {name}: the {files} source files with the most instructions a frame")
        for path, n in by_file.most_common(files):
            print(f"  {n / frames:7.1f} {path}")
    for name, _, _, per_fn in rows if lines else ():
        print(f"# {name}: the instructions a frame by line, in the files whose path holds {lines!r}")
        for (path, line, fn), n in sorted((item for item in per_fn.items() if item[0][1] < 0),
                                          key=lambda item: (item[0][0], -item[0][1])):
            print(f"  {n / frames:7.1f} {os.path.relpath(path)}:{-line} {fn}")
    bare.close()
