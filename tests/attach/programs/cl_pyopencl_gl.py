"""A pyopencl program that shares a GL buffer on a context without GL, as pyopencl's GL examples do
first thing: cl.GLBuffer calls clCreateFromGLBuffer, where PoCL ends the process.

    python cl_pyopencl_gl.py PLATFORM     exit status 3 where this pyopencl is built without GL"""
from __future__ import annotations

import sys

import pyopencl as cl


def main(want: str) -> int:
    if not cl.have_gl():
        print("cl_pyopencl_gl: this pyopencl has no GL sharing", file=sys.stderr)
        return 3
    platform = next(p for p in cl.get_platforms() if want in p.name)
    ctx = cl.Context(platform.get_devices()[:1])
    try:
        cl.GLBuffer(ctx, cl.mem_flags.READ_WRITE, 1)
    except cl.Error as exc:
        print(f"clCreateFromGLBuffer: {exc.code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
