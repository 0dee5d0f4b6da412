"""Probe: what glshare attach's OpenCL layer (app/native/attach/cl_layer.c) costs a program, with and
without the layer in the same run, on every CPU implementation present:

- the layer alone: tests/attach/programs/cl_stub.c, N enqueues through the layer's table over a stub
  driver (no event, so no stamps): its pass-through cost without GLSHARE_ATTACH_FD, and the cost of
  a recorded call with its records going to /dev/null and to a pipe this probe reads;
- per call: tests/attach/programs/cl_vecadd.c's ``bench`` mode, N enqueues of a 64-item kernel and
  one clFinish (each enqueue recorded twice, its stamps read by the layer's thread);
- per frame: an image-scene-sized frame without acquires (a Julia kernel over W x H RGBA8 pixels, the
  image read back, clFinish: host_copy's hand-over), pyopencl, F frames after a warm-up.

The records go to a pipe this probe reads and counts, as glshare would. Not part of the package; run
from a project root:

    python3 bench/probes/attach_cl_overhead.py [enqueues frames WxH]   # 20000 200 1024x768

Measurement only: prints one line per figure; the lead records them in bench/results/.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.getcwd())
from app import native  # noqa: E402
from app.attach import wire  # noqa: E402

ROUNDS = 5  # with and without alternate; the best of each (the least disturbed by other load) and the median
JULIA = """
__kernel void julia(__global uchar4 *out, int w, int h, float cr, float ci) {
    int x = get_global_id(0), y = get_global_id(1);
    float a = x * 3.0f / w - 1.5f, b = y * 3.0f / h - 1.5f;
    int n = 0;
    for (; n < 64 && a * a + b * b < 4.0f; n++) { float t = a * a - b * b + cr; b = 2.0f * a * b + ci; a = t; }
    out[y * w + x] = (uchar4)(n * 4, n * 2, n, 255);
}
"""


def frame_child(platform: str, frames: int, width: int, height: int) -> None:
    """The per-frame loop (run in a child so the loader sees the layer or not): prints the wall-clock
    and the process's CPU time (all its threads), us per frame."""
    import numpy as np
    import pyopencl as cl

    plat = next(p for p in cl.get_platforms() if p.name == platform)
    ctx = cl.Context(plat.get_devices()[:1])
    queue = cl.CommandQueue(ctx)
    kernel = cl.Program(ctx, JULIA).build().julia
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, width * height * 4)
    host = np.empty((height, width, 4), np.uint8)
    kernel.set_args(out, np.int32(width), np.int32(height), np.float32(-0.8), np.float32(0.156))
    for _ in range(20):
        cl.enqueue_nd_range_kernel(queue, kernel, (width, height), None)
    queue.finish()
    t0, c0 = time.perf_counter(), time.process_time()
    for f in range(frames):
        kernel.set_arg(3, np.float32(-0.8 + 1e-4 * f))
        cl.enqueue_nd_range_kernel(queue, kernel, (width, height), None)
        cl.enqueue_copy(queue, host, out)
        queue.finish()
    print(f"{(time.perf_counter() - t0) * 1e6 / frames:.1f} {(time.process_time() - c0) * 1e6 / frames:.1f}")


def timed(cmd: list[str], layer: str | None, fd_only: bool = False) -> tuple[list[float], int]:
    """(the figures the child printed, the records read) with or without the layer; ``fd_only``: a
    pipe in GLSHARE_ATTACH_FD without OPENCL_LAYERS (the stub loads the layer itself)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENCL_LAYERS", wire.FD_ENV)}
    fds: tuple[int, ...] = ()
    count = [0]
    reader = None
    if layer or fd_only:
        r, w = os.pipe()
        env[wire.FD_ENV] = wire.channel_text(w)
        if layer:
            env["OPENCL_LAYERS"] = layer
        fds = (w,)

        def drain() -> None:  # large reads, as glshare's reader: a small one wakes per record
            try:
                while data := os.read(r, 1 << 20):
                    count[0] += data.count(b"\n")
            finally:
                os.close(r)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
    try:
        done = subprocess.run(cmd, env=env, pass_fds=fds, capture_output=True, text=True, timeout=600)
    finally:
        for fd in fds:
            os.close(fd)
    if reader:
        reader.join(60)
    if done.returncode:
        sys.exit(f"attach_cl_overhead: {' '.join(cmd[:3])} failed: {done.stderr.strip()[-300:]}")
    return [float(v) for v in done.stdout.split()[-2:]], count[0]


def stub_cost(stub: str, layer: str, n: int) -> None:
    """The layer's own ns per call over the stub driver: best of ROUNDS per way of recording."""
    plain_env = {k: v for k, v in os.environ.items() if k != wire.FD_ENV}
    # (the layer records only into glshare's socket or pipe, wire.channel_text: not into /dev/null)
    best = []
    for _ in range(ROUNDS):
        done = subprocess.run([stub, layer, str(n)], env=plain_env, capture_output=True, text=True, check=True)
        best.append(float(done.stdout))
    print(f"the layer alone, not recording: {min(best):.1f} ns per enqueue (best of {ROUNDS})")
    piped = [timed([stub, layer, str(n)], layer=None, fd_only=True)[0][-1] for _ in range(ROUNDS)]
    print(f"the layer alone, records to a pipe read as glshare would: {min(piped):.1f} ns per enqueue "
          f"(best of {ROUNDS})")


def compare(what: str, cmd: list[str], layer: str, unit: str) -> None:
    """Rounds of without / with alternating; per figure (wall-clock, the process's CPU time) the best
    (the run least disturbed by other load) and the median."""
    plain, attached, records = [], [], 0
    for _ in range(ROUNDS):
        plain.append(timed(cmd, None)[0])
        values, records = timed(cmd, layer)
        attached.append(values)
    for i, clock in enumerate(("wall-clock", "CPU time")):
        for name, pick in (("best", min), ("median", statistics.median)):
            p, a = pick(v[i] for v in plain), pick(v[i] for v in attached)
            print(f"{what}, {clock}, {name} of {ROUNDS}: {p:.1f} {unit} without the layer, {a:.1f} with "
                  f"({a / p:.3f}x, {a - p:+.1f} {unit})")
    print(f"{what}: {records} records per attached run")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--frames-child":
        frame_child(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
        return 0
    enqueues = int(argv[0]) if argv else 20000
    frames = int(argv[1]) if len(argv) > 1 else 200
    width, height = (int(v) for v in (argv[2] if len(argv) > 2 else "1024x768").split("x"))
    import pyopencl as cl

    platforms = sorted({p.name for p in cl.get_platforms() if any(d.type & cl.device_type.CPU for d in p.get_devices())})
    cc = native.compiler()
    if cc is None:
        sys.exit("attach_cl_overhead: no C compiler")
    with tempfile.TemporaryDirectory() as tmp:
        layer, prog, stub = (os.path.join(tmp, name) for name in ("libcl_layer.so", "cl_vecadd", "cl_stub"))
        for cmd in ([*cc, *native.ATTACH_CFLAGS, "-o", layer, os.path.join(native.ATTACH_DIR, "cl_layer.c"), "-ldl"],
                    [*cc, "-O2", "-std=gnu11", "-pthread", "-o", prog, "tests/attach/programs/cl_vecadd.c",
                     "-l:libOpenCL.so.1"],
                    [*cc, "-O2", "-std=gnu11", "-o", stub, "tests/attach/programs/cl_stub.c", "-ldl"]):
            subprocess.run(cmd, check=True)
        stub_cost(stub, layer, 10 * enqueues)
        for platform in platforms:
            print(f"== {platform}")
            compare(f"{enqueues} enqueues", [prog, platform, "bench", str(enqueues)], layer, "ns per enqueue")
            compare(f"{frames} frames of {width}x{height} (kernel, read back, finish)",
                    [sys.executable, __file__, "--frames-child", platform, str(frames), str(width), str(height)],
                    layer, "us per frame")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
