"""A small pyopencl program for the layer's tests: a kernel enqueued a few times, the result saved.

    python cl_pyopencl.py PLATFORM OUT.npy    (PLATFORM: a part of the platform's name)

It knows nothing of glshare: the layer sees it through the ICD loader pyopencl calls."""
from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl

SOURCE = """
__kernel void blend(__global const float *a, __global float *b, float k) {
    size_t i = get_global_id(0);
    b[i] = b[i] * 0.5f + a[i] * k + (float)i;
}
"""


def main(want: str, out: str) -> int:
    platforms = [p for p in cl.get_platforms() if want in p.name]
    if not platforms:
        print(f"cl_pyopencl: no platform named like {want}", file=sys.stderr)
        return 1
    ctx = cl.Context(platforms[0].get_devices()[:1])
    queue = cl.CommandQueue(ctx)
    a = (np.arange(4096, dtype=np.float32) % 97) * 0.25
    mf = cl.mem_flags
    da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    db = cl.Buffer(ctx, mf.READ_WRITE, a.nbytes)
    cl.enqueue_fill_buffer(queue, db, np.float32(0), 0, a.nbytes)
    kernel = cl.Program(ctx, SOURCE).build().blend
    kernel.set_args(da, db, np.float32(1.5))
    for _ in range(6):
        cl.enqueue_nd_range_kernel(queue, kernel, (a.size,), (64,))
    result = np.empty_like(a)
    cl.enqueue_copy(queue, result, db)
    queue.finish()
    np.save(out, result)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: cl_pyopencl.py PLATFORM OUT.npy", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
