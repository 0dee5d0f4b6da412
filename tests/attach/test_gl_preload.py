"""glshare attach's GL preload library (app/native/attach/gl_preload.c) on small programs of the
suite's own, run in subprocesses with ``LD_PRELOAD`` and ``GLSHARE_ATTACH_FD`` (app/attach/wire.py).

Each program is run twice, with and without the library: its pixels must be identical (the library
never changes what the program draws), and the records must name what it did: the frames' swaps,
the draws with the buffers and texture bound to them, the fence's creation, waits and deletion,
glFinish, the deletions with their names. The programs reach GL on every road the library catches:
exported symbols (LD_PRELOAD interposition), glXGetProcAddressARB / eglGetProcAddress, and
dlopen + dlsym (PyOpenGL, GLFW). Runs on Mesa's llvmpipe: EGL surfaceless needs no display, the
GLX cases need one (the suite runs under xvfb-run).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import ROOT, pythonpath_with_root

from app import native
from app.attach import wire

PROGRAMS = Path(__file__).resolve().parent / "programs"
SIZE = 64  # both programs draw 64x64 RGBA
C_FRAMES = 5  # gl_getproc.c's FRAMES
GL_TEXTURE_2D, GL_ARRAY_BUFFER, GL_ELEMENT_ARRAY_BUFFER = 0x0DE1, 0x8892, 0x8893
GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED = 0x911A, 0x911C
DRAWS = {"glDrawArrays", "glDrawElements", "glDrawArraysInstanced", "glDrawElementsInstanced", "glDrawRangeElements",
         "glDrawElementsBaseVertex", "glDrawRangeElementsBaseVertex", "glDrawElementsInstancedBaseVertex",
         "glDrawArraysInstancedBaseInstance", "glDrawElementsInstancedBaseInstance",
         "glDrawElementsInstancedBaseVertexBaseInstance"}

needs_display = pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="needs an X display (run under xvfb-run)")


@pytest.fixture(scope="module")
def preload() -> str:
    """The built library's absolute path (built as ``python -m app.native build`` builds it)."""
    if native.compiler() is None:
        pytest.skip("no C compiler: glshare attach's libraries cannot be built here")
    lib = native.attach_library("gl_preload")
    try:
        native.build_attach()
    except native.NativeUnavailable as exc:  # another attach library may fail: ours must be built
        source = os.path.join(native.ATTACH_DIR, "gl_preload.c")
        if not os.path.exists(lib) or os.path.getmtime(lib) < os.path.getmtime(source):
            pytest.fail(f"libgl_preload.so not built: {exc}")
    assert os.path.isabs(lib) and os.path.exists(lib)
    return lib


@pytest.fixture(scope="module")
def gl_getproc(tmp_path_factory) -> Path:
    """gl_getproc.c built linked against libEGL.so.1 and libOpenGL.so.0 (no GL headers needed)."""
    cc = native.compiler()
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("gl_getproc") / "gl_getproc"
    done = subprocess.run([*cc, "-O2", "-std=gnu11", "-Wall", "-pthread", "-DGL_LINKED", "-o", str(out),
                           str(PROGRAMS / "gl_getproc.c"), "-ldl", "-l:libEGL.so.1", "-l:libOpenGL.so.0"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    lines: list[bytes] = field(default_factory=list)

    @property
    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.lines]

    def calls(self, fn: str | set[str]) -> list[dict]:
        names = {fn} if isinstance(fn, str) else fn
        return [r for r in self.records if r["k"] == "call" and r["fn"] in names]

    def ret(self, call: dict) -> dict:
        found = [r for r in self.records if r["k"] == "ret" and r["id"] == call["id"]]
        assert len(found) == 1, (call, found)
        return found[0]


def run_program(cmd: list[str], preload: str | None, record: bool = True, env: dict | None = None,
                first_line_only: bool = False, timeout: float = 120) -> Run:
    """Run ``cmd``; with ``preload`` under LD_PRELOAD, and with ``record`` GLSHARE_ATTACH_FD naming
    a pipe whose lines are collected (``first_line_only``: the reader closes its end after the first
    line, as a glshare that died would)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop(wire.FD_ENV, None)
    full_env.pop("LD_PRELOAD", None)
    read_fd, write_fd = os.pipe()
    if preload:
        full_env["LD_PRELOAD"] = preload
    if record:
        full_env[wire.FD_ENV] = wire.channel_text(write_fd)
    chunks: list[bytes] = []

    def drain() -> None:
        with os.fdopen(read_fd, "rb", buffering=0) as f:
            if first_line_only:
                chunks.append(f.readline())
                return
            while chunk := f.read(65536):
                chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run(cmd, env=full_env, pass_fds=(write_fd,), capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
    finally:
        os.close(write_fd)
    reader.join(timeout=30)
    data = b"".join(chunks)
    assert not data or data.endswith(b"\n"), data[-200:]
    return Run(done.returncode, done.stdout, done.stderr, data.splitlines(keepends=True))


def assert_wire_valid(run: Run) -> None:
    """Every line one JSON object of at most MAX_LINE bytes; one hello per process, first; call ids
    unique, increasing in each thread; every ret answers an earlier call."""
    assert run.lines, "the library recorded nothing"
    seen_hello: set[int] = set()
    last_id: dict[tuple[int, int], int] = {}
    call_ids: set[tuple[int, int]] = set()
    for raw in run.lines:
        assert len(raw) <= wire.MAX_LINE and raw.endswith(b"\n"), raw[:200]
        rec = json.loads(raw)
        assert rec["k"] in wire.KINDS and rec["src"] == "gl" and isinstance(rec["t"], int), rec
        pid = rec["pid"]
        if rec["k"] == "hello":
            assert pid not in seen_hello, "two hellos from one process"
            assert rec["lib"] == "glshare-gl-preload" and rec["version"] == 1
            seen_hello.add(pid)
            continue
        assert pid in seen_hello, f"a record before its process's hello: {rec}"
        if rec["k"] == "call":  # ids increase in each thread's order (threads take them before writing)
            assert rec["id"] > last_id.get((pid, rec["tid"]), 0), rec
            last_id[(pid, rec["tid"])] = rec["id"]
            call_ids.add((pid, rec["id"]))
            assert rec["site"].startswith("0x") and rec["ctx"].startswith("0x") and rec["tid"] > 0, rec
            assert isinstance(rec["fn"], str)
        elif rec["k"] == "ret":
            assert (pid, rec["id"]) in call_ids, rec


def pixels(path: Path) -> bytes:
    data = path.read_bytes()
    assert len(data) == SIZE * SIZE * 4
    assert len({data[i:i + 4] for i in range(0, len(data), 4)}) > 2, "the picture is flat: nothing drawn"
    return data


def assert_program_records(run: Run, names: dict, frames: int, swap: str, make_current: str) -> None:
    """What both test programs do, as the records must tell it (``names``: the objects they printed)."""
    assert_wire_valid(run)
    made = run.calls(make_current)
    assert made and run.ret(made[0])["result"] == 1
    ctx = made[0]["context"]
    assert ctx != "0x0"
    draws = run.calls(DRAWS)
    assert [d["fn"] for d in draws][:4] == ["glDrawElements", "glDrawArrays", "glDrawElementsInstanced",
                                             "glDrawArraysInstanced"]
    assert len(draws) == frames
    for d in draws:
        assert d["ctx"] == ctx and d["mode"] == 4 and d["count"] in (3, 6), d
        assert {names["vbo"], names["ebo"]} <= set(d["buffers"]), d
        assert names["tex"] in d["textures"], d
    first_draw = draws[0]["id"]
    swaps = [s for s in run.calls(swap) if s["id"] > first_draw]
    assert len(swaps) == frames, "one swap per frame"
    assert all(s["ctx"] == ctx and s["drawable"] != "0x0" for s in swaps)
    uploads = {(r["fn"], r["target"], r["buffer"]) for r in run.calls({"glBufferData", "glBufferSubData"})}
    assert {("glBufferData", GL_ARRAY_BUFFER, names["vbo"]), ("glBufferSubData", GL_ARRAY_BUFFER, names["vbo"]),
            ("glBufferData", GL_ELEMENT_ARRAY_BUFFER, names["ebo"])} <= uploads
    (mapped,) = run.calls("glMapBufferRange")
    assert mapped["buffer"] == names["ebo"] and mapped["size"] == 12 and run.ret(mapped)["handle"] != "0x0"
    (mapped_whole,) = run.calls("glMapBuffer")
    assert mapped_whole["buffer"] == names["vbo"] and "size" not in mapped_whole
    assert run.ret(mapped_whole)["handle"] != "0x0"
    unmapped = run.calls("glUnmapBuffer")
    assert [u["buffer"] for u in unmapped] == [names["ebo"], names["vbo"]]
    assert all(run.ret(u)["result"] == 1 for u in unmapped)
    (image,) = run.calls("glTexImage2D")
    assert (image["target"], image["texture"], image["size"]) == (GL_TEXTURE_2D, names["tex"], 16)
    (sub,) = run.calls("glTexSubImage2D")
    assert (sub["texture"], sub["size"]) == (names["tex"], 4)
    (fence,) = run.calls("glFenceSync")
    sync = run.ret(fence)["handle"]
    assert sync != "0x0"
    (server_wait,) = run.calls("glWaitSync")
    (client_wait,) = run.calls("glClientWaitSync")
    (deleted,) = run.calls("glDeleteSync")
    assert server_wait["sync"] == client_wait["sync"] == deleted["sync"] == sync
    assert server_wait["timeout"] == 2**64 - 1 and client_wait["timeout"] == 10**9
    assert run.ret(client_wait)["result"] in (GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED)
    assert fence["id"] < server_wait["id"] < client_wait["id"] < deleted["id"] < swaps[-1]["id"]
    finishes = run.calls("glFinish")
    assert len(finishes) == 2 and all("id" in run.ret(f) for f in finishes)
    assert len(run.calls("glFlush")) == 1
    assert run.calls("glDeleteBuffers")[-1]["names"] == [names["vbo"], names["ebo"]]
    assert run.calls("glDeleteTextures")[-1]["names"] == [names["tex"]]
    assert run.calls("glDeleteRenderbuffers")[-1]["names"] == [names["rb"]]


def run_pair(cmd_for, preload: str, env: dict | None = None) -> tuple[Run, dict]:
    """The program without, then with the library; asserts both succeed with identical pixels."""
    plain = run_program(cmd_for("plain"), None, record=False, env=env)
    assert plain.returncode == 0, plain.stderr
    attached = run_program(cmd_for("attached"), preload, env=env)
    assert attached.returncode == 0, attached.stderr
    assert attached.stdout == plain.stdout  # the object names it printed
    return attached, json.loads(plain.stdout.splitlines()[0])


# -- a PyOpenGL + GLFW program: dlopen + dlsym, GLX -------------------------------------------------
@needs_display
@pytest.mark.window
def test_pyopengl_glfw_program_is_recorded_and_draws_the_same(preload, tmp_path):
    out = {k: tmp_path / f"{k}.rgba" for k in ("plain", "attached")}
    env = {"PYOPENGL_PLATFORM": "glx"}  # GLFW's window is a GLX one; the suite's own default is EGL
    run, names = run_pair(lambda k: [sys.executable, str(PROGRAMS / "gl_glfw_pyopengl.py"), str(out[k])],
                          preload, env)
    assert pixels(out["attached"]) == pixels(out["plain"])
    assert_program_records(run, names, names["frames"], "glXSwapBuffers", "glXMakeCurrent")


# -- a C program on each road ---------------------------------------------------------------------------
@pytest.mark.parametrize("road", ["direct", "gpa", "dlsym", pytest.param("glx", marks=needs_display)])
def test_c_program_is_recorded_on_each_road_and_draws_the_same(preload, gl_getproc, tmp_path, road):
    out = {k: tmp_path / f"{k}.rgba" for k in ("plain", "attached")}
    run, names = run_pair(lambda k: [str(gl_getproc), road, str(out[k])], preload)
    assert pixels(out["attached"]) == pixels(out["plain"])
    if road == "glx":
        assert_program_records(run, names, C_FRAMES, "glXSwapBuffers", "glXMakeCurrent")
    else:
        assert_program_records(run, names, C_FRAMES, "eglSwapBuffers", "eglMakeCurrent")
    assert run.calls(DRAWS)[-1]["fn"] == "glDrawElementsBaseVertex"


def thread_run(run: Run, tid: int) -> Run:
    """The records of one thread: its process's hello, its calls and their rets."""
    ids = {r["id"] for r in run.records if r["k"] == "call" and r["tid"] == tid}
    keep = [line for line, r in zip(run.lines, run.records)
            if r["k"] == "hello" or (r["k"] == "call" and r["tid"] == tid) or (r["k"] == "ret" and r["id"] in ids)]
    return Run(run.returncode, run.stdout, run.stderr, keep)


def test_threads_with_a_context_each_are_recorded_apart(preload, gl_getproc, tmp_path):
    """Two threads draw at once, each on its own context: each thread's records tell its scene
    whole, naming its own context (bindings are per context: both use the names 1 and 2)."""
    out = {k: tmp_path / f"{k}.rgba" for k in ("plain", "attached")}
    run, names = run_pair(lambda k: [str(gl_getproc), "threads", str(out[k])], preload)
    assert pixels(out["attached"]) == pixels(out["plain"])
    assert_wire_valid(run)
    tids = {r["tid"] for r in run.records if r["k"] == "call"}
    assert len(tids) == 2
    contexts = set()
    for tid in tids:
        alone = thread_run(run, tid)
        assert_program_records(alone, names, C_FRAMES, "eglSwapBuffers", "eglMakeCurrent")
        contexts.add(alone.calls("eglMakeCurrent")[0]["context"])
    assert len(contexts) == 2


@pytest.fixture(scope="module")
def dlsym_next(tmp_path_factory) -> Path:
    """gl_dlsym_next.c: the program, linked against its two probe libraries (libprobe1 first)."""
    cc = native.compiler()
    if cc is None:
        pytest.skip("no C compiler")
    where = tmp_path_factory.mktemp("gl_dlsym_next")
    src = str(PROGRAMS / "gl_dlsym_next.c")
    for n in (1, 2, 3):
        link_gl = ["-l:libOpenGL.so.0"] if n == 3 else []
        done = subprocess.run([*cc, "-shared", "-fPIC", f"-DPROBE_LIB={n}", "-o", str(where / f"libprobe{n}.so"), src,
                               *link_gl], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    prog = where / "gl_dlsym_next"
    done = subprocess.run([*cc, "-o", str(prog), src, f"-L{where}", "-Wl,--no-as-needed", "-lprobe1", "-lprobe2",
                           "-ldl", f"-Wl,-rpath,{where}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return prog


def test_dlsym_keeps_its_meaning_for_the_program(preload, dlsym_next):
    """The interposed dlsym: RTLD_NEXT still resolves from the caller's object (a library's own
    RTLD_NEXT lookup finds the next library's function, not its own), dlerror() reads as the
    program's own lookups left it, RTLD_DEFAULT finds no GL function where no GL library is global
    (the library's own export is not handed out), and a GL function found in libOpenGL is the
    recorded one."""
    plain = run_program([str(dlsym_next)], None, record=False)
    attached = run_program([str(dlsym_next)], preload)
    assert plain.returncode == 0 and attached.returncode == 0, attached.stderr
    expected = {"next": 2, "clear_after_found": True, "set_after_missing": True, "default_found": False}
    assert json.loads(plain.stdout.splitlines()[0]) == expected
    assert json.loads(attached.stdout.splitlines()[0]) == expected
    assert_wire_valid(attached)
    assert attached.calls("glFinish")[0]["ctx"] == "0x0"  # no context current


def test_a_call_bound_to_the_export_reaches_a_local_gl_library(preload, dlsym_next):
    """A library outside the global scope that links libOpenGL (dlopen()ed RTLD_LOCAL, as Python
    imports an extension) binds its glFinish to this library's export, first in the global scope:
    the call is recorded and goes on to that library's libOpenGL (no "no real glFinish" note)."""
    run = run_program([str(dlsym_next)], preload)
    assert run.returncode == 0, run.stderr
    assert_wire_valid(run)
    sites = {f["site"] for f in run.calls("glFinish")}
    assert len(run.calls("glFinish")) == 3 and len(sites) == 3  # main (parent, child) and libprobe3
    assert [r for r in run.records if r["k"] == "note"] == []


def test_a_long_name_list_is_cut_to_the_line(preload, dlsym_next):
    """glDeleteBuffers of 2000 names: the record stays one line of at most MAX_LINE bytes, the names
    that fit listed in order, ``names_left`` counting the others."""
    run = run_program([str(dlsym_next)], preload)
    assert run.returncode == 0, run.stderr
    assert_wire_valid(run)  # every line within MAX_LINE
    (deleted,) = run.calls("glDeleteBuffers")
    listed = deleted["names"]
    assert len(listed) > 100 and listed == list(range(1, len(listed) + 1))
    assert len(listed) + deleted["names_left"] == 2000


def test_a_forked_child_writes_a_stream_of_its_own(preload, dlsym_next):
    """After fork the child's records carry its pid, after a hello of its own."""
    run = run_program([str(dlsym_next)], preload)
    assert run.returncode == 0, run.stderr
    assert_wire_valid(run)  # each process's hello before its records
    finishes = run.calls("glFinish")
    pids = [f["pid"] for f in finishes]
    assert len(set(pids)) == 2 and [r["pid"] for r in run.records if r["k"] == "hello"] != []
    assert {r["pid"] for r in run.records if r["k"] == "hello"} == set(pids)
    assert all(f["tid"] == f["pid"] for f in finishes)  # each process's only thread


def test_without_the_descriptor_nothing_is_written(preload, gl_getproc, tmp_path):
    """LD_PRELOAD alone: the program draws the same and the pipe stays empty; the same pipe named in
    GLSHARE_ATTACH_FD gets the records (so the empty pipe is the library's choice, not a fault)."""
    quiet = run_program([str(gl_getproc), "dlsym", str(tmp_path / "quiet.rgba")], preload, record=False)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.lines == []
    plain = run_program([str(gl_getproc), "dlsym", str(tmp_path / "plain.rgba")], None, record=False)
    assert pixels(tmp_path / "quiet.rgba") == pixels(tmp_path / "plain.rgba")
    loud = run_program([str(gl_getproc), "dlsym", str(tmp_path / "loud.rgba")], preload)
    assert loud.returncode == 0 and len(loud.calls("eglSwapBuffers")) == C_FRAMES, loud.stderr
    assert plain.returncode == 0


def test_a_reader_gone_does_not_kill_the_program(preload, gl_getproc, tmp_path):
    """glshare gone (the pipe's reader closed after the first line): the writes after it fail with
    EPIPE, SIGPIPE is not delivered, the program finishes as it would, drawing the same."""
    orphan = run_program([str(gl_getproc), "direct", str(tmp_path / "orphan.rgba"), "bench", "20000"], preload,
                         first_line_only=True)
    assert orphan.returncode == 0, (orphan.returncode, orphan.stderr)
    assert [r["k"] for r in orphan.records] == ["hello"]
    assert "ns_per_call" in orphan.stdout  # it went on through 20000 calls the reader never saw
    plain = run_program([str(gl_getproc), "direct", str(tmp_path / "plain.rgba")], None, record=False)
    assert plain.returncode == 0, plain.stderr
    assert pixels(tmp_path / "orphan.rgba") == pixels(tmp_path / "plain.rgba")


def test_a_socket_descriptor_gets_one_record_per_message(preload, gl_getproc, tmp_path):
    """GLSHARE_ATTACH_FD may name a socket: a SOCK_SEQPACKET pair delivers each record as one
    message (send with MSG_NOSIGNAL: a reader gone raises no SIGPIPE either)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    messages: list[bytes] = []

    def drain() -> None:
        while message := ours.recv(2 * wire.MAX_LINE):
            messages.append(message)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", wire.FD_ENV)}
    env.update(LD_PRELOAD=preload, **{wire.FD_ENV: wire.channel_text(theirs.fileno())})
    try:
        done = subprocess.run([str(gl_getproc), "gpa", str(tmp_path / "a.rgba")], env=env, pass_fds=(theirs.fileno(),),
                              capture_output=True, text=True, timeout=120)
    finally:
        theirs.close()
    reader.join(timeout=30)
    ours.close()
    assert done.returncode == 0, done.stderr
    assert messages and all(m.endswith(b"\n") and m.count(b"\n") == 1 for m in messages)
    run = Run(done.returncode, done.stdout, done.stderr, messages)
    assert_program_records(run, json.loads(done.stdout.splitlines()[0]), C_FRAMES, "eglSwapBuffers", "eglMakeCurrent")


def test_records_name_their_process_and_thread(preload, gl_getproc, tmp_path):
    run = run_program([str(gl_getproc), "gpa", str(tmp_path / "a.rgba")], preload)
    assert run.returncode == 0, run.stderr
    assert_wire_valid(run)
    pids = {r["pid"] for r in run.records}
    assert len(pids) == 1
    (pid,) = pids
    assert {r["tid"] for r in run.records if r["k"] == "call"} == {pid}  # one thread: its tid is the pid
    times = [r["t"] for r in run.records]
    assert times == sorted(times)  # one thread: written in order, on CLOCK_MONOTONIC


# -- glshare's own headless run ------------------------------------------------------------------------
def test_glshare_headless_run_under_the_library(preload, tmp_path):
    """glshare's headless mode (EGL, an FBO, no window) has no swap: its frame boundary is
    EglSurface.present's glFlush; host_copy with the finish sync waits in glFinish each frame (named:
    the GPU machine's default is another backend)."""
    frames = 30
    env = {"PYTHONPATH": pythonpath_with_root()}
    env_run = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    run = run_program([sys.executable, "-m", "app", "run", "--headless", "--frames", str(frames), "--quiet",
                       "--backend", "host_copy", "--sync", "finish", "--report", str(tmp_path / "r.json")],
                      preload, env={**env_run, **env}, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert_wire_valid(run)
    assert run.calls("eglMakeCurrent") and not run.calls({"eglSwapBuffers", "glXSwapBuffers"})
    assert len(run.calls("glFlush")) >= frames
    finishes = run.calls("glFinish")
    assert len(finishes) >= frames and all(run.ret(f) for f in finishes)
    draws = run.calls(DRAWS)
    assert len(draws) >= frames and all(d["buffers"] for d in draws)  # the particles' vertex buffers
