"""OpenCL through ctypes, with nothing but the standard library (so any Python 3.9+ runs it): the calls
made through ctypes.PyDLL hold the GIL, those made through ctypes.CDLL release it; one is made on a
second thread. The attach tests find each call's Python site by the marker ``# site: NAME``.

    python cl_pysite_ctypes.py PLATFORM"""
from __future__ import annotations

import ctypes
import sys
import threading

HELD = ctypes.PyDLL("libOpenCL.so.1")  # a PyDLL function is called holding the GIL
FREE = ctypes.CDLL("libOpenCL.so.1")  # a CDLL function releases it around the call
for lib in (HELD, FREE):
    lib.clCreateContext.restype = lib.clCreateCommandQueue.restype = ctypes.c_void_p
    lib.clCreateContext.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32))
    lib.clCreateCommandQueue.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int32))
    lib.clFinish.argtypes = lib.clReleaseCommandQueue.argtypes = lib.clReleaseContext.argtypes = (ctypes.c_void_p,)
CL_PLATFORM_NAME, CL_DEVICE_TYPE_ALL = 0x0902, 0xFFFFFFFF


def device(want: str) -> ctypes.c_void_p:
    count = ctypes.c_uint32()
    FREE.clGetPlatformIDs(0, None, ctypes.byref(count))
    platforms = (ctypes.c_void_p * count.value)()
    FREE.clGetPlatformIDs(count, platforms, None)
    for platform in platforms:
        name = ctypes.create_string_buffer(256)
        FREE.clGetPlatformInfo(ctypes.c_void_p(platform), CL_PLATFORM_NAME, 256, name, None)
        if want.encode() in name.value:
            dev = ctypes.c_void_p()
            FREE.clGetDeviceIDs(ctypes.c_void_p(platform), ctypes.c_uint64(CL_DEVICE_TYPE_ALL), 1, ctypes.byref(dev), None)
            return dev
    raise SystemExit(f"cl_pysite_ctypes: no platform named like {want}")


def worker(queue: int) -> None:
    HELD.clFinish(queue)  # site: thread


def main(want: str) -> int:
    dev, err = device(want), ctypes.c_int32()
    ctx = HELD.clCreateContext(None, 1, ctypes.byref(dev), None, None, ctypes.byref(err))  # site: context
    queue = HELD.clCreateCommandQueue(ctx, dev, 0, ctypes.byref(err))  # site: queue
    FREE.clFinish(queue)  # site: released
    thread = threading.Thread(target=worker, args=(queue,))
    thread.start()
    thread.join()
    FREE.clReleaseCommandQueue(queue)
    FREE.clReleaseContext(ctx)
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
