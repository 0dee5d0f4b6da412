"""A pyopencl program whose CL calls come from objects pyopencl builds in C (its Context, CommandQueue,
Buffer and Program constructors) and from its kernels' __call__ (pyopencl's generated invoker), on
marked lines: the attach tests find each call's Python site by the marker ``# site: NAME``.

    python cl_pysite.py PLATFORM       prints the result's checksum"""
from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl

SOURCE = "__kernel void twice(__global float *a) { size_t i = get_global_id(0); a[i] = 2.0f * a[i] + 1.0f; }"


def build(want: str):
    platform = next(p for p in cl.get_platforms() if want in p.name)
    ctx = cl.Context(platform.get_devices()[:1])  # site: context
    queue = cl.CommandQueue(ctx)  # site: queue
    kernel = cl.Program(ctx, SOURCE).build().twice  # site: kernel
    return ctx, queue, kernel


def run(ctx, queue, kernel) -> float:
    host = np.arange(256, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)  # site: buffer
    kernel(queue, host.shape, None, buf)  # site: call
    cl.enqueue_copy(queue, host, buf)  # site: copy
    queue.finish()  # site: finish
    return float(host.sum())


if __name__ == "__main__":
    print(run(*build(sys.argv[1])))
