"""app/gl/allocator.py: on software GL the C heap keeps what llvmpipe frees every frame.

Each check runs in a fresh interpreter (the threshold is a process-wide setting): 40 MiB malloc'ed
in 64 KiB blocks (below glibc's mmap threshold: from the heap, as llvmpipe's scene blocks are),
written, then freed; how much of it the process still holds afterwards is read from /proc."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT

CODE = """
import ctypes, os, sys
from app.gl.allocator import keep_freed_memory
what = keep_freed_memory(sys.argv[1] == "software") if sys.argv[1] != "none" else ""
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
page = os.sysconf("SC_PAGE_SIZE")
fd = os.open("/proc/self/statm", os.O_RDONLY)  # opened first: nothing malloc'ed above the blocks
rss = lambda: int(os.pread(fd, 128, 0).split()[1]) * page
blocks = [0] * 640
for i in range(640):
    blocks[i] = libc.malloc(65536)
    ctypes.memset(blocks[i], 1, 65536)
peak = rss()
for i in range(639, -1, -1):
    libc.free(blocks[i])
after = rss()
print(json.dumps({"what": what, "returned_mib": (peak - after) / 2**20, "again": keep_freed_memory(True)}))
""".replace("import ctypes", "import ctypes, json")


def _run(mode: str) -> dict:
    res = subprocess.run([sys.executable, "-c", CODE, mode], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc: Linux")
def test_freed_frame_memory_stays_with_the_process_on_software_gl():
    plain, gpu, software = _run("none"), _run("gpu"), _run("software")
    assert plain["returned_mib"] > 30  # glibc's default: the heap's top handed back at once
    assert gpu["returned_mib"] > 30 and gpu["what"].startswith("unchanged")  # a GPU renderer: left alone
    assert software["returned_mib"] < 4, software  # kept for the next frame's allocations
    assert software["what"].startswith("malloc trim threshold 256 MiB") and software["again"] == software["what"]


def test_the_report_names_what_was_done(gl):
    """A headless run's report says what the allocator was told, in its GL facts."""
    from app.config import RunConfig
    from app.gl.context import gl_info
    from app.run import Run
    from app.trace.report import build_report

    with Run(RunConfig(scene="image", size=(64, 64), headless=True, overlay=False, frames=2)) as rt:
        rt.tick()
        report = build_report(rt.session.history, rt.facts())
    want = "malloc trim threshold" if gl_info().software else "unchanged"
    assert report["gl"]["allocator"].startswith(want)
