"""``glshare attach`` with its C libraries (app/native/attach/, built by make setup) on real programs
on the CPU: a pyopencl program, glshare's own ``run`` (whose own report the attached record must
agree with), and a program killed inside a CL call. Each test is skipped, saying so, where a
library it needs is not built."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import native

ROOT = Path(__file__).resolve().parents[2]
CL_LAYER, GL_PRELOAD = native.attach_library("cl_layer"), native.attach_library("gl_preload")
needs_cl = pytest.mark.skipif(not os.path.exists(CL_LAYER), reason=f"{CL_LAYER} is not built (make setup)")
needs_gl = pytest.mark.skipif(not os.path.exists(GL_PRELOAD), reason=f"{GL_PRELOAD} is not built (make setup)")

KERNELS = """\
import numpy as np
import pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
k = cl.Program(ctx, "__kernel void k(__global float*a){a[get_global_id(0)]+=1.0f;}").build().k
a = np.zeros(256, dtype=np.float32)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
def step():
    k(q, (256,), None, b)
for _ in range(5):
    step()
cl.enqueue_copy(q, a, b)
q.finish()
print(float(a.sum()))
"""

KILLED = """\
import os, signal, threading
import pyopencl as cl
ctx = cl.create_some_context(interactive=False)
never = cl.UserEvent(ctx)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
cl.wait_for_events([never])
"""


def attach(tmp_path: Path, argv: list[str], *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "attach.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "app", "attach", "--report", str(report), *options, "--", *argv],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    return done, json.loads(report.read_text())


@needs_cl
def test_a_pyopencl_program_is_recorded_with_its_sites_and_computes_the_same(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(KERNELS)
    bare = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=120)
    done, report = attach(tmp_path, [sys.executable, str(prog)], "--no-gl")
    assert done.returncode == 0 and done.stdout == bare.stdout == "1280.0\n"
    (proc,) = report["processes"]
    assert proc["calls"]["clEnqueueNDRangeKernel"] == 5
    assert report["findings"] == []
    (queue,) = proc["queues"].values()
    assert queue["commands"] == 6 and queue["stamped"] == 6  # the layer turned profiling on
    (clock,) = proc["clocks"].values()
    assert clock["known"] and clock["samples"] == 6
    trace = tmp_path / "t.json"
    done, _ = attach(tmp_path, [sys.executable, str(prog)], "--no-gl", "--trace", str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("name") == "clEnqueueNDRangeKernel"]
    assert [e["args"]["site"] for e in kernels] == [f"{prog}:9 (step)"] * 5


@needs_cl
@needs_gl
def test_attached_to_glshare_run_the_record_agrees_with_glshares_own(tmp_path):
    inner = tmp_path / "inner.json"
    argv = [sys.executable, "-m", "app", "run", "--scene", "image", "--headless", "--frames", "20", "--backend",
            "host_copy", "--no-overlay", "--quiet", "--report", str(inner), "--screenshot", os.devnull]
    done, report = attach(tmp_path, argv)
    assert done.returncode == 0, done.stderr
    own = json.loads(inner.read_text())
    (proc,) = report["processes"]
    assert proc["calls"]["clEnqueueNDRangeKernel"] == own["counts"]["compute"] == 20
    assert proc["calls"]["glTexSubImage2D"] >= 20  # each frame's upload of the CL result
    assert report["findings"] == []


@needs_cl
def test_a_program_killed_inside_a_cl_call_is_said_with_the_call(tmp_path):
    prog = tmp_path / "killed.py"
    prog.write_text(KILLED)
    done, report = attach(tmp_path, [sys.executable, str(prog)], "--no-gl")
    assert done.returncode == 128 + 9
    ended = report["ended"]
    assert ended["signal_name"] == "SIGKILL" and ended["died_in"]["fn"] == "clWaitForEvents"
    assert ended["died_in"]["site"] == f"{prog}:6 (<module>)"


STRICT = """\
import ctypes, glob, os
import pyopencl as cl, pyopencl._cl as _cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
if hasattr(cl, "enqueue_acquire_gl_objects"):  # a pyopencl built with GL
    try:
        cl.enqueue_acquire_gl_objects(q, [b])
        code = 0
    except cl.Error as exc:
        code = exc.code
else:  # PyPI's wheel: the entry point of the loader pyopencl calls, through ctypes
    found = sorted(glob.glob(os.path.join(os.path.dirname(_cl.__file__), ".libs", "libOpenCL*.so*")))
    acquire = ctypes.CDLL(found[0] if found else "libOpenCL.so.1").clEnqueueAcquireGLObjects
    acquire.restype = ctypes.c_int32
    acquire.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                        ctypes.c_void_p]
    code = acquire(q.int_ptr, 1, (ctypes.c_void_p * 1)(b.int_ptr), 0, None, None)
print("acquire returned" if code == 0 else f"acquire failed: {code}")
"""
STRICT_LINE = 8  # the pyopencl call's line; through ctypes the site is the call's return address or its line


@needs_cl
@pytest.mark.parametrize("strict", [False, True])
def test_an_acquire_on_a_context_not_from_gl_is_found_and_under_strict_answered_by_glshare(tmp_path, strict):
    """The CPU's driver refuses it itself (CL_INVALID_CONTEXT); under --strict the layer returns
    glshare's answer, the same code, and the driver never sees the call."""
    prog = tmp_path / "strict.py"
    prog.write_text(STRICT)
    done, report = attach(tmp_path, [sys.executable, str(prog)], "--no-gl", *(("--strict",) if strict else ()))
    assert done.returncode == 0 and done.stdout == "acquire failed: -34\n"
    (f,) = report["findings"]
    assert (f["case"], f["code"]) == ("context_not_from_gl", -34)
    import pyopencl as cl

    if hasattr(cl, "enqueue_acquire_gl_objects"):
        assert f["site"] == f"{prog}:{STRICT_LINE} (<module>)"
    else:
        assert f["site"].startswith(("0x", f"{prog}:"))
    assert f["driver_status"] == (None if strict else -34)
    assert report["recording"]["verdicts"] == ({"asked": 1, "refused": 1} if strict else {"asked": 0, "refused": 0})


REUSED = """\
import ctypes, os, subprocess, sys
import numpy as np
import pyopencl as cl
path, mode = sys.argv[1], sys.argv[2]
fd = int(os.environ["GLSHARE_ATTACH_FD"].split(":")[0])
def work():
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    cl.enqueue_fill_buffer(q, b, np.uint8(1), 0, 64)
    q.finish()
    gl = ctypes.CDLL("libGL.so.1")
    gl.glFinish()
    gl.glFlush()
if mode == "self":  # the channel's number closed, then reused for the file in this process
    os.close(fd)
    f = os.open(path, os.O_WRONLY | os.O_APPEND)
    if f != fd:
        os.dup2(f, fd)
        os.close(f)
    work()
elif mode == "parent":  # a descendant started with close_fds whose shell put the file on that number
    subprocess.run(["bash", "-c", f'exec "{sys.executable}" "$0" "$1" child {fd}>>"$1"', __file__, path], check=True)
else:
    work()
print("done")
"""


@needs_cl
@needs_gl
@pytest.mark.parametrize("mode", ["self", "parent"])
def test_a_file_on_the_channels_reused_number_never_gets_a_record(tmp_path, mode):
    """GLSHARE_ATTACH_FD names the channel by device and inode: a descriptor of that number that is
    an ordinary file (closed and reopened by the program, or a close_fds descendant's own) is left
    alone by the CL layer, the GL library and the site hook, while the program runs as without."""
    prog, precious = tmp_path / "reuse.py", tmp_path / "precious.txt"
    prog.write_text(REUSED)
    precious.write_bytes(b"the program's own bytes\n")
    done, report = attach(tmp_path, [sys.executable, str(prog), str(precious), mode])
    assert done.returncode == 0 and done.stdout == "done\n" * (2 if mode == "parent" else 1), done.stderr
    assert precious.read_bytes() == b"the program's own bytes\n"
    if mode == "self":  # the GL library, started before the close, goes on through its own duplicate
        (proc,) = report["processes"]
        assert proc["calls"].get("glFinish") == 1


GLUT_THEN_SHARE = """\
import sys
from OpenGL.GL import GL_ARRAY_BUFFER, GL_STATIC_DRAW, glBindBuffer, glBufferData, glGenBuffers
from OpenGL.GLUT import glutCreateWindow, glutInit, glutInitWindowSize
import pyopencl as cl
glutInit(sys.argv)
glutInitWindowSize(64, 64)
glutCreateWindow(b"share")
name = glGenBuffers(1)
glBindBuffer(GL_ARRAY_BUFFER, name)
glBufferData(GL_ARRAY_BUFFER, 64, None, GL_STATIC_DRAW)
platform = next(p for p in cl.get_platforms() if sys.argv[1] in p.name)
ctx = cl.Context(platform.get_devices()[:1])
cl.GLBuffer(ctx, cl.mem_flags.READ_WRITE, int(name))
print("shared")
"""


def _pocl_gl_or_skip():
    import pyopencl as cl

    from tests.conftest import CPU_IMPLEMENTATIONS

    if not cl.have_gl():
        pytest.skip("this pyopencl is built without GL sharing")
    pocl = CPU_IMPLEMENTATIONS["pocl"]
    if pocl not in [p.name for p in cl.get_platforms()]:
        pytest.skip("PoCL is not present")
    return pocl


@needs_cl
@needs_gl
@pytest.mark.parametrize("program", ["cl_pyopencl_gl.py", "glut"])
def test_a_program_pocl_ends_in_clcreatefromglbuffer_is_said_with_the_device_that_lacks_gl_sharing(tmp_path, program):
    """As pyopencl's gl_interop_demo.py on PoCL: exit(2) inside clCreateFromGLBuffer; with a GLUT
    window (whose exit handlers make GL calls on the dying thread) as without one."""
    pocl = _pocl_gl_or_skip()
    if program == "glut":
        prog = tmp_path / "glut_share.py"
        prog.write_text(GLUT_THEN_SHARE)
    else:
        prog = ROOT / "tests" / "attach" / "programs" / program
    done, report = attach(tmp_path, [sys.executable, str(prog), pocl])
    assert done.returncode not in (0, 3), done.stderr
    ended = report["ended"]
    assert ended["died_in"]["fn"] == "clCreateFromGLBuffer", ended
    [why] = ended["died_in"]["why"]
    assert why.startswith("device '") and why.endswith("' (Portable Computing Language) does not list cl_khr_gl_sharing")
    assert ended["said"].startswith(f"exited with status {done.returncode} in clCreateFromGLBuffer")
    assert ended["said"].endswith(why)
