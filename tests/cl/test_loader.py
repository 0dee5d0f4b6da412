"""One OpenCL ICD loader in glshare's process: glshare's ctypes calls (app/cl/ext.py) go through the
loader pyopencl calls. pyopencl's PyPI wheel brings its own loader (pyopencl/.libs/libOpenCL-*);
ctypes' "libOpenCL.so.1" would map the system's beside it: two tables of platforms, and a loader
layer (glshare attach's) saw only pyopencl's calls, none of the native frame's."""
from __future__ import annotations

import os
import subprocess
import sys

from support import ROOT

CHILD = """
import os
import pyopencl as cl
from app.cl import ext
platform = cl.get_platforms()[0]
device = platform.get_devices()[0]
assert ext.device_info_u32_list(device, 0x1003) is not None  # CL_DEVICE_MAX_COMPUTE_UNITS, through ctypes
with open("/proc/self/maps") as f:
    paths = {line.split(None, 5)[-1].strip() for line in f if "libOpenCL" in line}
print(sorted(os.path.realpath(p) for p in paths))
"""


def test_glshare_and_pyopencl_share_one_loader():
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    loaders = eval(done.stdout)  # noqa: S307 (our own child's printed list)
    assert len(loaders) == 1, loaders
