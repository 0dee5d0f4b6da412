"""glshare attach's Python site hook (app/attach/pyhook/sitecustomize.py), in a real Python with
pyopencl on the CPU: the site records name the program's own lines, the program computes the
same, the sitecustomize it would have run without the hook still runs, and without
GLSHARE_ATTACH_FD nothing is replaced."""
from __future__ import annotations

import os
import subprocess
import sys

from app.attach import wire
from app.attach.launch import HOOK_DIR

PROGRAM = """\
import sys
import numpy as np
import pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
k = cl.Program(ctx, "__kernel void k(__global float*a){a[get_global_id(0)]=a[get_global_id(0)]*2.0f+1.0f;}").build().k
a = np.arange(64, dtype=np.float32)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
def step():
    k(q, (64,), None, b)
for _ in range(3):
    step()
cl.enqueue_copy(q, a, b)
q.finish()
print(repr(a.tolist()))
print("hook on sys.path:", any("pyhook" in p for p in sys.path))
print("replaced:", hasattr(cl.enqueue_copy, "__glshare_original__"))
"""


def run_program(tmp_path, hooked: bool, extra_path: str = "") -> tuple[str, list[dict]]:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in (wire.FD_ENV, "PYTHONPATH")}
    r, w = os.pipe()
    pass_fds = ()
    if hooked:
        env[wire.FD_ENV] = wire.channel_text(w)
        pass_fds = (w,)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HOOK_DIR, extra_path) if p)
    try:
        done = subprocess.run([sys.executable, str(prog)], env=env, pass_fds=pass_fds, capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        records = [wire.parse_line(line) for line in f.read().splitlines()]
    assert done.returncode == 0, done.stderr
    return done.stdout, records


def test_site_records_name_the_programs_lines_and_results_are_unchanged(tmp_path):
    out_hooked, records = run_program(tmp_path, hooked=True)
    out_bare, none = run_program(tmp_path, hooked=False)
    assert none == []
    values_hooked, values_bare = out_hooked.splitlines()[0], out_bare.splitlines()[0]
    assert values_hooked == values_bare == repr([float(i * 8 + 7) for i in range(64)])  # ((x*2+1)*2+1)*2+1
    assert "hook on sys.path: False" in out_hooked
    assert "replaced: True" in out_hooked and "replaced: False" in out_bare
    sites = [(r["k"], r["src"], os.path.basename(r["file"]), r["line"], r["func"]) for r in records]
    assert sites == [("site", "py", "prog.py", 10, "step")] * 3 + [("site", "py", "prog.py", 13, "<module>"),
                                                                  ("site", "py", "prog.py", 14, "<module>")]
    assert all(r["tid"] > 0 and r["pid"] > 0 for r in records)


def test_the_sitecustomize_the_program_would_have_run_still_runs(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("print('the program\\'s own sitecustomize ran')\n")
    out, _ = run_program(tmp_path, hooked=True, extra_path=str(own))
    assert out.startswith("the program's own sitecustomize ran\n")


FORK_PROGRAM = """\
import os, threading
import pyopencl as cl
pid = os.fork()  # before any OpenCL: each process makes its own context
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
def step():
    cl.wait_for_events([cl.enqueue_marker(q)])
step()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
t = threading.Thread(target=step)
t.start()
t.join()
print("thread", t.native_id)
print("child", pid)
"""


def test_a_threads_and_a_forked_childs_sites_carry_their_own_ids(tmp_path):
    """The hook reads the process's and each thread's id once: a thread's record has its own, a
    forked child's its own pid and thread id."""
    prog = tmp_path / "fork.py"
    prog.write_text(FORK_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in (wire.FD_ENV, "PYTHONPATH")}
    r, w = os.pipe()
    env[wire.FD_ENV] = wire.channel_text(w)
    env["PYTHONPATH"] = HOOK_DIR
    try:
        done = subprocess.run([sys.executable, str(prog)], env=env, pass_fds=(w,), capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        records = [wire.parse_line(line) for line in f.read().splitlines()]
    assert done.returncode == 0, done.stderr
    out = dict(line.split() for line in done.stdout.splitlines())
    thread, child = int(out["thread"]), int(out["child"])
    steps = [(r["pid"], r["tid"]) for r in records if r["func"] == "step"]
    parent = next(p for p, _t in steps if p != child)
    # each step makes two wrapped calls (enqueue_marker, wait_for_events)
    assert sorted(steps, key=lambda s: (s[0] != parent, s[1] != parent)) == \
        [(parent, parent)] * 2 + [(parent, thread)] * 2 + [(child, child)] * 2
