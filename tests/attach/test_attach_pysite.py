"""The Python site the libraries read themselves (app/native/attach/pysite.h): a call made from
Python holding the GIL names the program's file and line in its record's "py", also where the call
comes from an object pyopencl builds in C (which glshare's site hook never sees), and glshare's
findings and its account of how the program died name that line."""
from __future__ import annotations

import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cl_layer import IMPLS, PROGRAMS, attach, built, impl  # noqa: F401 - built: the layer compiled from source
from test_gl_preload import preload, run_program  # noqa: F401 - preload: the GL library, built

from app import native
from app.attach.model import ProcessModel
from tests.conftest import CPU_IMPLEMENTATIONS

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = IMPLS[0][1] if IMPLS else ""  # PoCL where present
SITES = PROGRAMS / "cl_pysite.py"
CTYPES_SITES = PROGRAMS / "cl_pysite_ctypes.py"
VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13")  # pysite.h reads the C API these have as functions


@functools.lru_cache(maxsize=None)
def interpreter(version: str) -> str | None:
    """A Python of that version on this machine (on PATH, or pyenv's), or None."""
    candidates = [sys.executable, shutil.which(f"python{version}") or ""]
    candidates += sorted(glob.glob(os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")),
                                                "versions", f"{version}.*", "bin", f"python{version}")))
    for exe in filter(None, candidates):
        done = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                              text=True)
        if done.returncode == 0 and done.stdout.strip() == version:
            return exe
    return None


def marked_lines(program: Path) -> dict[str, int]:
    """``# site: NAME`` marker -> its line number in the program's source."""
    found = {}
    for number, text in enumerate(program.read_text().splitlines(), 1):
        m = re.search(r"# site: (\w+)$", text)
        if m:
            found[m.group(1)] = number
    return found


@impl
def test_calls_from_objects_pyopencl_builds_in_c_name_the_programs_lines(built, platform):  # noqa: F811
    """cl.Context, cl.CommandQueue, cl.Program(...).build() and cl.Buffer are made in C, and a kernel's
    __call__ runs pyopencl's generated invoker: the layer alone (no site hook) names the marked lines."""
    run = attach([sys.executable, str(SITES), platform], built["layer"])
    assert run.rc == 0, run.stderr
    assert float(run.stdout) == sum(2.0 * i + 1.0 for i in range(256))
    line = marked_lines(SITES)
    expected = {"clCreateContext": ("context", "build"), "clCreateKernel": ("kernel", "build"),
                "clCreateBuffer": ("buffer", "run"), "clSetKernelArg": ("call", "run"),
                "clEnqueueNDRangeKernel": ("call", "run")}
    queues = [c for c in run.calls() if c["fn"].startswith("clCreateCommandQueue")]
    assert len(queues) == 1 and queues[0]["py"] == {"file": str(SITES), "line": line["queue"], "func": "build"}
    for fn, (mark, func) in expected.items():
        calls = run.calls(fn)
        assert calls, f"no {fn} recorded"
        for call in calls:
            assert call.get("py") == {"file": str(SITES), "line": line[mark], "func": func}, call
            assert call["site"].startswith("0x")  # the return address stays
    # a "py" never names pyopencl's own files or its generated invoker: only the program's
    assert {c["py"]["file"] for c in run.calls() if "py" in c} == {str(SITES)}


@pytest.mark.parametrize("version", VERSIONS)
def test_held_gil_calls_name_their_line_on_each_python_and_released_ones_do_not(built, version):  # noqa: F811
    """Through ctypes: PyDLL calls hold the GIL (a "py", also on a second thread), CDLL calls release it
    (none: the library never takes the GIL), on each Python 3.9 to 3.13 found here."""
    exe = interpreter(version)
    if not PLATFORM:
        pytest.skip("no CPU OpenCL implementation")
    if exe is None:
        pytest.skip(f"no Python {version} here")
    run = attach([exe, str(CTYPES_SITES), PLATFORM], built["layer"])
    assert run.rc == 0 and run.stdout == "done\n", run.stderr
    line = marked_lines(CTYPES_SITES)
    here = {"file": str(CTYPES_SITES)}
    assert [(c["fn"], c.get("py")) for c in run.calls()] == [
        ("clCreateContext", {**here, "line": line["context"], "func": "main"}),
        ("clCreateCommandQueue", {**here, "line": line["queue"], "func": "main"}),
        ("clFinish", None),  # made with the GIL released: the return address only
        ("clFinish", {**here, "line": line["thread"], "func": "worker"})]
    main_tid = run.calls()[0]["tid"]
    assert run.calls()[3]["tid"] != main_tid


GL_PROGRAM = """\
import ctypes
held, free = ctypes.PyDLL("libGL.so.1"), ctypes.CDLL("libGL.so.1")
def frame():
    held.glFinish()
    free.glFlush()
frame()
print("done")
"""


def test_the_gl_library_names_the_line_of_a_call_made_holding_the_gil(preload, tmp_path):  # noqa: F811
    """glFinish and glFlush with no context current (glvnd passes them to no context): the one called
    holding the GIL names line 4, the one with it released keeps the return address only."""
    prog = tmp_path / "gl_calls.py"
    prog.write_text(GL_PROGRAM)
    run = run_program([sys.executable, str(prog)], preload)
    assert run.returncode == 0 and run.stdout == "done\n", run.stderr
    assert [(c["fn"], c.get("py")) for c in run.calls({"glFinish", "glFlush"})] == [
        ("glFinish", {"file": str(prog), "line": 4, "func": "frame"}), ("glFlush", None)]


@impl
def test_a_c_programs_records_have_no_py(built, platform, tmp_path):  # noqa: F811
    run = attach([str(built["prog"]), platform, "run", str(tmp_path / "out.bin")], built["layer"])
    assert run.rc == 0, run.stderr
    calls = run.calls()
    assert len(calls) > 5
    assert [c for c in calls if "py" in c] == []
    assert all(re.fullmatch(r"0x[0-9a-f]+", c["site"]) for c in calls)


def test_the_calls_own_py_comes_before_the_hooks_site_and_the_return_address():
    model = ProcessModel(7)
    model.feed({"k": "hello", "src": "cl", "pid": 7, "t": 1, "lib": "glshare-cl-layer", "version": 1})
    model.feed({"k": "site", "src": "py", "pid": 7, "t": 2, "tid": 3, "file": "hook.py", "line": 1, "func": "f"})
    model.feed({"k": "call", "src": "cl", "pid": 7, "t": 3, "id": 1, "tid": 3, "fn": "clFinish", "site": "0x401000",
                "py": {"file": "/p/prog.py", "line": 12, "func": "main"}, "queue": "0x0"})
    model.feed({"k": "call", "src": "cl", "pid": 7, "t": 4, "id": 2, "tid": 3, "fn": "clFinish", "site": "0x401000",
                "queue": "0x0"})
    model.feed({"k": "site", "src": "py", "pid": 7, "t": 5, "tid": 3, "file": "hook.py", "line": 2, "func": "g"})
    model.feed({"k": "call", "src": "cl", "pid": 7, "t": 6, "id": 3, "tid": 3, "fn": "clFinish", "site": "0x401000",
                "queue": "0x0"})
    assert [c.site for c in model.calls] == ["/p/prog.py:12 (main)", "0x401000", "hook.py:2 (g)"]


def test_the_call_pocl_ends_the_program_in_is_named_by_its_line(tmp_path):
    """cl_pyopencl_gl.py on PoCL, as pyopencl's gl_interop_demo.py: exit(2) inside clCreateFromGLBuffer,
    which cl.GLBuffer (built in C) calls: the report names the program's line of it."""
    import pyopencl as cl

    layer = native.attach_library("cl_layer")
    if not os.path.exists(layer):
        pytest.skip(f"{layer} is not built (make setup)")
    if not cl.have_gl():
        pytest.skip("this pyopencl is built without GL sharing")
    pocl = CPU_IMPLEMENTATIONS["pocl"]
    if pocl not in [p.name for p in cl.get_platforms()]:
        pytest.skip("PoCL is not present")
    prog = PROGRAMS / "cl_pyopencl_gl.py"
    (line,) = [n for n, text in enumerate(prog.read_text().splitlines(), 1) if "cl.GLBuffer(" in text]
    report = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "app", "attach", "--no-gl", "--report", str(report), "--", sys.executable,
                           str(prog), pocl], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode not in (0, 3), done.stderr
    ended = json.loads(report.read_text())["ended"]
    assert ended["died_in"]["fn"] == "clCreateFromGLBuffer"
    assert ended["died_in"]["site"] == f"{prog}:{line} (main)"
    assert f"in clCreateFromGLBuffer (call {ended['died_in']['id']}, {prog}:{line} (main))" in ended["said"]
