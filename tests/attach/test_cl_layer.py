"""glshare attach's OpenCL layer (app/native/attach/cl_layer.c) on the CPU implementations present.

Small programs of the suite's own (tests/attach/programs/cl_*) run in subprocesses with the layer in
OPENCL_LAYERS and a pipe's write end in GLSHARE_ATTACH_FD; the lines that come back are checked
against app/attach/wire.py: the calls with their arguments, the kernels' mem objects, the device
stamps, and the program's results, which must be those of the same program without the layer.
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

import numpy as np
import pytest

from app import native
from app.attach import wire
from tests.conftest import CPU_IMPLEMENTATIONS, cpu_implementations

PROGRAMS = Path(__file__).resolve().parent / "programs"
CL_CONTEXT_PLATFORM = 0x1084
CL_INVALID_GL_OBJECT = -60
IMPLS = cpu_implementations()
impl = pytest.mark.parametrize("platform", [n for _, n in IMPLS], ids=[k for k, _ in IMPLS])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The layer and the C test program, compiled as ``python -m app.native build`` compiles the layer."""
    cc = native.compiler()
    assert cc is not None, "no C compiler: the layer cannot be built"
    out = tmp_path_factory.mktemp("attach-cl")
    layer, prog = out / "libcl_layer.so", out / "cl_vecadd"
    for cmd in ([*cc, *native.ATTACH_CFLAGS, "-o", str(layer), str(Path(native.ATTACH_DIR) / "cl_layer.c"), "-ldl"],
                [*cc, "-O2", "-std=gnu11", "-Wall", "-pthread", "-o", str(prog), str(PROGRAMS / "cl_vecadd.c"),
                 "-l:libOpenCL.so.1"]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return {"layer": layer, "prog": prog, "dir": out}


@dataclass
class Attached:
    """What one run under the layer gave: the program's exit status and output, and the records."""
    rc: int
    stdout: str
    stderr: str
    records: list[dict] = field(default_factory=list)

    def calls(self, fn: str | None = None) -> list[dict]:
        return [r for r in self.records if r["k"] == "call" and (fn is None or r["fn"] == fn)]

    def ret(self, call: dict) -> dict | None:
        found = [r for r in self.records if r["k"] == "ret" and r["id"] == call["id"] and r["pid"] == call["pid"]]
        assert len(found) <= 1, found
        return found[0] if found else None

    def stamps(self, call: dict) -> dict | None:
        found = [r for r in self.records if r["k"] == "stamps" and r["id"] == call["id"]]
        assert len(found) <= 1, found
        return found[0] if found else None


def attach(cmd: list[str], layer: Path | None, *, verdict: int | str | None = None, fd_env: bool = True) -> Attached:
    """Runs ``cmd`` with the layer; every line read is parsed as JSON (a line that is not fails the test).
    ``verdict``: strict mode, glshare's answer to every question ("eof": the answer pipe closed at once;
    "other": CL_INVALID_GL_OBJECT for another call's id)."""
    read_end, write_end = os.pipe()
    env = {**os.environ}
    env.pop("PYOPENGL_PLATFORM", None)
    if layer is not None:
        env["OPENCL_LAYERS"] = str(layer)
    if fd_env:
        env[wire.FD_ENV] = wire.channel_text(write_end)
    fds = [write_end]
    answer_end = None
    if verdict is not None:
        question_end, answer_end = os.pipe()
        env[wire.STRICT_ENV] = "1"
        env[wire.VERDICT_FD_ENV] = wire.channel_text(question_end)
        fds.append(question_end)
        if verdict == "eof":
            os.close(answer_end)
            answer_end = None
    records: list[dict] = []
    bad: list[str] = []

    def read() -> None:
        with os.fdopen(read_end, "rb") as f:
            for raw in f:
                if len(raw) > wire.MAX_LINE or not raw.endswith(b"\n"):
                    bad.append(raw.decode(errors="replace"))
                    continue
                try:
                    rec = json.loads(raw)
                except ValueError:
                    bad.append(raw.decode(errors="replace"))
                    continue
                records.append(rec)
                if answer_end is not None and rec["k"] == "call" and rec.get("verdict"):
                    answer = {"id": rec["id"] + 1000, "status": CL_INVALID_GL_OBJECT} if verdict == "other" \
                        else {"id": rec["id"], "status": verdict}
                    os.write(answer_end, (json.dumps(answer) + "\n").encode())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.Popen(cmd, env=env, pass_fds=fds, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        for fd in fds:
            os.close(fd)
    out, err = proc.communicate(timeout=120)
    reader.join(timeout=30)
    if answer_end is not None:
        os.close(answer_end)
    assert not reader.is_alive(), "the record pipe stayed open after the program ended"
    assert not bad, f"lines that are not one JSON record each: {bad[:3]}"
    return Attached(proc.returncode, out, err, records)


def check_stream(run: Attached) -> None:
    """Each process's first record is its one hello; ids are unique per process; every record is the layer's."""
    by_pid: dict[int, list[dict]] = {}
    for rec in run.records:
        assert rec["src"] == "cl" and rec["k"] in wire.KINDS, rec
        by_pid.setdefault(rec["pid"], []).append(rec)
    assert by_pid, "the layer recorded nothing"
    for recs in by_pid.values():
        assert recs[0]["k"] == "hello" and recs[0]["lib"] == "glshare-cl-layer", recs[0]
        assert sum(r["k"] == "hello" for r in recs) == 1
        ids = [r["id"] for r in recs if r["k"] == "call"]
        assert len(ids) == len(set(ids)), "call ids repeat"
        ts = [r["t"] for r in recs]
        assert all(isinstance(t, int) and t > 0 for t in ts)


def check_stamps(run: Attached, call: dict) -> None:
    s = run.stamps(call)
    assert s is not None, f"no stamps for {call['fn']} {call['id']}"
    assert "error" not in s, s
    assert s["queued"] <= s["submit"] <= s["start"] <= s["end"], s


def run_plain(cmd: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENCL_LAYERS", wire.FD_ENV)}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


@impl
def test_a_c_program_s_calls_arguments_and_stamps(built, platform, tmp_path):
    plain = run_plain([str(built["prog"]), platform, "run", str(tmp_path / "plain.bin")])
    assert plain.returncode == 0, plain.stderr
    run = attach([str(built["prog"]), platform, "run", str(tmp_path / "layer.bin")], built["layer"])
    assert run.rc == 0, run.stderr
    assert (tmp_path / "layer.bin").read_bytes() == (tmp_path / "plain.bin").read_bytes()
    check_stream(run)

    [ctx_call] = run.calls("clCreateContext")
    assert ctx_call["props"][0][0] == CL_CONTEXT_PLATFORM and len(ctx_call["devices"]) == 1
    ctx = run.ret(ctx_call)["handle"]
    assert run.ret(ctx_call)["status"] == 0 and ctx != "0x0"
    [q_call] = run.calls("clCreateCommandQueueWithProperties")
    assert q_call["context"] == ctx and q_call["device"] == ctx_call["devices"][0]
    assert q_call["props"] is None and q_call["profiling"] is True
    queue = run.ret(q_call)["handle"]
    clocks = [r for r in run.records if r["k"] == "clock"]
    assert clocks and clocks[0]["device"] == q_call["device"]
    assert "error" in clocks[0] or clocks[0]["device_ns"] > 0

    a, b = (run.ret(c)["handle"] for c in run.calls("clCreateBuffer"))
    assert [c["size"] for c in run.calls("clCreateBuffer")] == [4096 * 4] * 2
    [k_call] = run.calls("clCreateKernel")
    assert k_call["name"] == "scale"
    kernel = run.ret(k_call)["handle"]
    sets = run.calls("clSetKernelArg")
    assert [(s["kernel"], s["index"], s["mem"]) for s in sets] == [(kernel, 0, a), (kernel, 1, b)]

    enqueues = run.calls("clEnqueueNDRangeKernel")
    assert len(enqueues) == 8
    for e in enqueues:
        assert (e["queue"], e["kernel"], e["name"], e["mems"]) == (queue, kernel, "scale", [a, b])
        assert (e["dims"], e["gws"], e["lws"], e["num_wait"], e["wait"]) == (1, [4096], [64], 0, None)
        assert run.ret(e)["status"] == 0 and run.ret(e)["event"] != "0x0"
        check_stamps(run, e)
    assert [e["event_out"] for e in enqueues] == [False] * 7 + [True]
    [wait] = run.calls("clWaitForEvents")
    assert wait["events"] == [run.ret(enqueues[-1])["event"]]
    [read] = run.calls("clEnqueueReadBuffer")
    assert (read["queue"], read["mems"], read["blocking"], read["size"]) == (queue, [b], True, 4096 * 4)
    check_stamps(run, read)
    check_stamps(run, run.calls("clEnqueueFillBuffer")[0])
    assert [c["queue"] for c in run.calls("clFinish")] == [queue]
    assert [c["queue"] for c in run.calls("clFlush")] == [queue]
    assert sorted(c["mem"] for c in run.calls("clReleaseMemObject")) == sorted([a, b])
    for call in run.calls():  # every call returned, in order after its call
        ret = run.ret(call)
        assert ret is not None and ret["t"] >= call["t"] and ret["status"] == 0, call
        assert int(call["site"], 16) != 0


# (fn, mems as indexes into [buffer a, buffer b, image, image2], blocking or None where the call has none)
TRANSFERS = [
    ("clEnqueueWriteBuffer", [0], False), ("clEnqueueCopyBuffer", [0, 1], None),
    ("clEnqueueMapBuffer", [1], True), ("clEnqueueUnmapMemObject", [1], None),
    ("clEnqueueCopyBufferToImage", [1, 2], None), ("clEnqueueCopyImage", [2, 3], None),
    ("clEnqueueMapImage", [3], True), ("clEnqueueUnmapMemObject", [3], None),
    ("clEnqueueCopyImageToBuffer", [3, 0], None), ("clEnqueueReadImage", [3], True),
    ("clEnqueueWriteImage", [2], True), ("clEnqueueFillImage", [2], None), ("clEnqueueFillBuffer", [1], None),
    ("clEnqueueWriteBufferRect", [1], True), ("clEnqueueReadBufferRect", [0], True),
    ("clEnqueueReadBuffer", [1], True), ("clEnqueueReadImage", [2], True),
]


@impl
def test_every_transfer_with_its_mems_and_stamps(built, platform, tmp_path):
    cmd = [str(built["prog"]), platform, "transfers"]
    plain = run_plain([*cmd, str(tmp_path / "plain.bin")])
    assert plain.returncode == 0, plain.stderr
    run = attach([*cmd, str(tmp_path / "layer.bin")], built["layer"])
    assert run.rc == 0, run.stderr
    assert (tmp_path / "layer.bin").read_bytes() == (tmp_path / "plain.bin").read_bytes()
    check_stream(run)
    made = [run.ret(c)["handle"] for c in run.calls("clCreateBuffer") + run.calls("clCreateImage")]
    assert [(c["width"], c["height"]) for c in run.calls("clCreateImage")] == [(32, 16)] * 2
    queue = run.ret(run.calls("clCreateCommandQueueWithProperties")[0])["handle"]
    transfers = [c for c in run.calls() if c["fn"].startswith("clEnqueue")]
    assert [c["fn"] for c in transfers] == [fn for fn, _, _ in TRANSFERS]
    for call, (fn, mems, blocking) in zip(transfers, TRANSFERS):
        assert call["queue"] == queue and call["mems"] == [made[i] for i in mems], (fn, call)
        assert call.get("blocking") == blocking, (fn, call)
        assert run.ret(call)["status"] == 0
        check_stamps(run, call)
    sizes = {c["fn"]: c.get("size") for c in transfers}
    assert sizes["clEnqueueWriteBuffer"] == sizes["clEnqueueReadBuffer"] == 32 * 16 * 4
    assert sizes["clEnqueueFillBuffer"] == 64 and sizes["clEnqueueCopyImage"] is None


@impl
def test_a_context_from_type(built, platform):
    run = attach([str(built["prog"]), platform, "fromtype"], built["layer"])
    assert run.rc == 0, run.stderr
    [call] = run.calls("clCreateContextFromType")
    platform_handle = run.calls("clCreateContext")[0]["props"][0][1]
    assert call["props"] == [[CL_CONTEXT_PLATFORM, platform_handle]] and call["device_type"] == 0xFFFFFFFF
    assert run.ret(call)["status"] == 0 and run.ret(call)["handle"] != "0x0"


@impl
def test_a_context_s_ret_describes_its_devices_and_the_sharing_extensions_they_list(built, platform):
    """Each device of a new context: its name, its platform's name and version, and which of the
    sharing extensions (wire.SHARING_EXTENSIONS) its CL_DEVICE_EXTENSIONS lists, as pyopencl reads them."""
    import pyopencl as cl

    run = attach([str(built["prog"]), platform, "fromtype"], built["layer"])
    assert run.rc == 0, run.stderr
    [call] = run.calls("clCreateContextFromType")
    [info] = run.ret(call)["devices_info"]
    [device] = [d for p in cl.get_platforms() if p.name == platform for d in p.get_devices()][:1]
    assert (info["name"], info["platform"], info["platform_version"]) == \
        (device.name, device.platform.name, device.platform.version)
    assert info["lists"] == [e for e in wire.SHARING_EXTENSIONS if e in device.extensions.split()]


RETAIN_AND_ALIAS = """\
import ctypes, glob, os, sys
import numpy as np
import pyopencl as cl, pyopencl._cl as _cl
platform = next(p for p in cl.get_platforms() if p.name == sys.argv[1])
ctx = cl.Context(platform.get_devices()[:1])
q = cl.CommandQueue(ctx)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
again = cl.Buffer.from_int_ptr(b.int_ptr, retain=True)  # clRetainMemObject
first = cl.enqueue_fill_buffer(q, b, np.uint32(1), 0, 64)
second = cl.enqueue_fill_buffer(q, b, np.uint32(1), 0, 64)
# the loader pyopencl calls (PyPI's wheel brings its own: another loader's calls pass the layer by)
found = sorted(glob.glob(os.path.join(os.path.dirname(_cl.__file__), ".libs", "libOpenCL*.so*")))
lib = ctypes.CDLL(found[0] if found else "libOpenCL.so.1")
lib.clEnqueueFillBuffer.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t] * 3 + [ctypes.c_uint] + \
    [ctypes.c_void_p] * 2
wait = (ctypes.c_void_p * 2)(first.int_ptr, second.int_ptr)
pattern = ctypes.c_uint32(2)
q.finish()
print("retained", flush=True)
# event = &wait[1]: undefined behaviour (PoCL aborts in it); the record is written before the driver sees it
lib.clEnqueueFillBuffer(q.int_ptr, b.int_ptr, ctypes.byref(pattern), 4, 0, 64, 2, wait,
                        ctypes.byref(wait, ctypes.sizeof(ctypes.c_void_p)))
"""


@impl
def test_retains_and_an_event_written_into_the_wait_list_are_recorded(built, platform, tmp_path):
    """clRetainMemObject is recorded with its mem; an enqueue whose event pointer is an element of its
    own wait list says which (``event_in_wait``); one that writes elsewhere has no such key. (What the
    driver then does with the alias is its own: PoCL aborts.)"""
    prog = tmp_path / "retain_alias.py"
    prog.write_text(RETAIN_AND_ALIAS)
    run = attach([sys.executable, str(prog), platform], built["layer"])
    assert run.stdout.startswith("retained\n"), run.stderr
    [create] = run.calls("clCreateBuffer")
    [retain] = run.calls("clRetainMemObject")
    assert retain["mem"] == run.ret(create)["handle"] and run.ret(retain)["status"] == 0
    *plain, aliased = run.calls("clEnqueueFillBuffer")
    assert len(plain) == 2 and all("event_in_wait" not in p and p["event_out"] for p in plain)
    assert aliased["event_in_wait"] == 1 and aliased["num_wait"] == 2


@impl
def test_a_pyopencl_program(built, platform, tmp_path):
    cmd = [sys.executable, str(PROGRAMS / "cl_pyopencl.py"), platform]
    plain = run_plain([*cmd, str(tmp_path / "plain.npy")])
    assert plain.returncode == 0, plain.stderr
    run = attach([*cmd, str(tmp_path / "layer.npy")], built["layer"])
    assert run.rc == 0, run.stderr
    assert np.array_equal(np.load(tmp_path / "layer.npy"), np.load(tmp_path / "plain.npy"))
    check_stream(run)
    buffers = [run.ret(c)["handle"] for c in run.calls("clCreateBuffer")]
    enqueues = run.calls("clEnqueueNDRangeKernel")
    assert len(enqueues) == 6
    for e in enqueues:
        assert e["name"] == "blend" and e["mems"] == buffers and e["gws"] == [4096]
        check_stamps(run, e)
    assert run.calls("clFinish")


@impl
def test_two_threads_on_two_queues(built, platform, tmp_path):
    plain = run_plain([str(built["prog"]), platform, "threads", str(tmp_path / "plain.bin")])
    assert plain.returncode == 0, plain.stderr
    run = attach([str(built["prog"]), platform, "threads", str(tmp_path / "layer.bin")], built["layer"])
    assert run.rc == 0, run.stderr
    assert (tmp_path / "layer.bin").read_bytes() == (tmp_path / "plain.bin").read_bytes()
    check_stream(run)  # every line parsed as JSON in attach(), ids unique here
    queues = [run.ret(c)["handle"] for c in run.calls("clCreateCommandQueueWithProperties")]
    assert len(set(queues)) == 2
    enqueues = run.calls("clEnqueueNDRangeKernel")
    for q in queues:
        on_q = [e for e in enqueues if e["queue"] == q]
        assert len(on_q) == 50 and len({e["tid"] for e in on_q}) == 1
        assert len(set(on_q[0]["mems"])) == 2
    assert len({e["tid"] for e in enqueues}) == 2
    for e in enqueues:
        check_stamps(run, e)


def test_pocl_s_abort_in_clcreatefromglbuffer_is_the_last_call_seen(built):
    if CPU_IMPLEMENTATIONS["pocl"] not in [n for _, n in IMPLS]:
        pytest.skip("PoCL is not present")
    run = attach([str(built["prog"]), CPU_IMPLEMENTATIONS["pocl"], "gl"], built["layer"])
    assert run.rc != 0 and "clCreateFromGLBuffer" in run.stderr, (run.rc, run.stderr)
    check_stream(run)
    last = run.calls()[-1]
    assert last["fn"] == "clCreateFromGLBuffer" and last["gl_object"] == 1
    assert last["context"] == run.ret(run.calls("clCreateContext")[0])["handle"]
    assert run.ret(last) is None
    # the fill left in flight: PoCL ended the process from inside a call, so the layer's exit handler
    # does not ask the driver (its locks may be held) and says why there are no stamps
    [fill] = run.calls("clEnqueueFillBuffer")
    stamps = run.stamps(fill)
    assert stamps is not None
    assert "queued" in stamps or stamps["error"] == "the program ended first", stamps


def test_a_pyopencl_gl_program_on_pocl_ends_in_clcreatefromglbuffer(built):
    if CPU_IMPLEMENTATIONS["pocl"] not in [n for _, n in IMPLS]:
        pytest.skip("PoCL is not present")
    run = attach([sys.executable, str(PROGRAMS / "cl_pyopencl_gl.py"), CPU_IMPLEMENTATIONS["pocl"]], built["layer"])
    if run.rc == 3:
        pytest.skip(run.stderr.strip())
    assert run.rc not in (0, 3) and "clCreateFromGLBuffer" in run.stderr, (run.rc, run.stderr)
    check_stream(run)
    last = run.calls()[-1]
    assert last["fn"] == "clCreateFromGLBuffer" and last["gl_object"] == 1 and run.ret(last) is None
    assert last["context"] == run.ret(run.calls("clCreateContext")[0])["handle"]


@impl
def test_strict_mode_returns_the_verdict_without_calling_the_driver(built, platform):
    # Without a verdict PoCL answers CL_INVALID_CONTEXT (-34) and Intel's runtime crashes here.
    run = attach([str(built["prog"]), platform, "acquire"], built["layer"], verdict=CL_INVALID_GL_OBJECT)
    assert run.rc == 0, run.stderr
    assert run.stdout.strip() == f"clEnqueueAcquireGLObjects: {CL_INVALID_GL_OBJECT}"
    check_stream(run)
    [call] = run.calls("clEnqueueAcquireGLObjects")
    assert call["verdict"] is True and call["num"] == 1
    assert call["mems"] == [run.ret(run.calls("clCreateBuffer")[0])["handle"]]
    ret = run.ret(call)
    assert ret["status"] == ret["verdict"] == CL_INVALID_GL_OBJECT
    assert run.stamps(call) is None
    assert all("verdict" not in c for c in run.calls() if c is not call)


def test_strict_mode_with_a_zero_verdict_calls_the_driver(built):
    if CPU_IMPLEMENTATIONS["pocl"] not in [n for _, n in IMPLS]:
        pytest.skip("PoCL is not present")
    run = attach([str(built["prog"]), CPU_IMPLEMENTATIONS["pocl"], "acquire"], built["layer"], verdict=0)
    assert run.rc == 0, run.stderr
    driver_said = int(run.stdout.split(":")[1])
    assert driver_said not in (0, CL_INVALID_GL_OBJECT)
    [call] = run.calls("clEnqueueAcquireGLObjects")
    assert call["verdict"] is True
    assert run.ret(call)["status"] == driver_said and "verdict" not in run.ret(call)


@pytest.mark.parametrize("answer", ["eof", "other"])
def test_strict_mode_goes_on_to_the_driver_without_a_verdict_for_the_call(built, answer):
    """glshare gone (the answer pipe at its end), or an answer for another call: the call goes on."""
    if CPU_IMPLEMENTATIONS["pocl"] not in [n for _, n in IMPLS]:
        pytest.skip("PoCL is not present")
    plain = run_plain([str(built["prog"]), CPU_IMPLEMENTATIONS["pocl"], "acquire"])
    run = attach([str(built["prog"]), CPU_IMPLEMENTATIONS["pocl"], "acquire"], built["layer"], verdict=answer)
    assert run.rc == plain.returncode == 0 and run.stdout == plain.stdout, run.stderr
    [call] = run.calls("clEnqueueAcquireGLObjects")
    assert call["verdict"] is True and "verdict" not in run.ret(call)
    notes = [r["text"] for r in run.records if r["k"] == "note"]
    assert notes == (["a verdict for another call: the call goes on"] if answer == "other" else [])


@impl
def test_a_queue_the_driver_refuses_is_refused_as_without_the_layer(built, platform):
    plain = run_plain([str(built["prog"]), platform, "badqueue"])
    run = attach([str(built["prog"]), platform, "badqueue"], built["layer"])
    assert run.rc == plain.returncode == 0 and run.stdout == plain.stdout, (run.stdout, plain.stdout)
    [call] = run.calls("clCreateCommandQueueWithProperties")
    assert call["props"] == [[0x1093, 1 << 40]] and call["profiling"] is True
    ret = run.ret(call)
    assert ret["status"] != 0 and ret["handle"] == "0x0" and ret["profiling"] is False
    assert f"clCreateCommandQueueWithProperties: {ret['status']} none" == run.stdout.strip()


@impl
def test_the_program_survives_glshare_going_away(built, platform, tmp_path):
    """The pipe's reader is gone before the program starts: the layer's first write fails (EPIPE)
    and its SIGPIPE must not kill the program, which ends as without the layer."""
    plain = run_plain([str(built["prog"]), platform, "run", str(tmp_path / "plain.bin")])
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "OPENCL_LAYERS": str(built["layer"]), wire.FD_ENV: wire.channel_text(write_end)}
    try:
        done = subprocess.run([str(built["prog"]), platform, "run", str(tmp_path / "layer.bin")], env=env,
                              pass_fds=(write_end,), capture_output=True, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == plain.returncode == 0, (done.returncode, done.stderr)
    assert (tmp_path / "layer.bin").read_bytes() == (tmp_path / "plain.bin").read_bytes()


def test_a_socket_instead_of_a_pipe(built, tmp_path):
    """GLSHARE_ATTACH_FD may be a SOCK_SEQPACKET socket (the layer sends each record as one message,
    with MSG_NOSIGNAL): the same records come, one per message."""
    platform = IMPLS[0][1]
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = {**os.environ, "OPENCL_LAYERS": str(built["layer"]), wire.FD_ENV: wire.channel_text(theirs.fileno())}
    messages: list[bytes] = []

    def read() -> None:
        while data := ours.recv(2 * wire.MAX_LINE):
            messages.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        done = subprocess.run([str(built["prog"]), platform, "run", str(tmp_path / "out.bin")], env=env,
                              pass_fds=(theirs.fileno(),), capture_output=True, text=True, timeout=120)
    finally:
        theirs.close()
    reader.join(timeout=30)
    ours.close()
    assert done.returncode == 0, done.stderr
    assert messages and all(m.endswith(b"\n") and m.count(b"\n") == 1 for m in messages)
    run = Attached(done.returncode, done.stdout, done.stderr, [json.loads(m) for m in messages])
    check_stream(run)
    assert len(run.calls("clEnqueueNDRangeKernel")) == 8
    for e in run.calls("clEnqueueNDRangeKernel"):
        check_stamps(run, e)


@impl
def test_a_list_too_long_for_one_line_is_cut_with_a_note(built, platform):
    run = attach([str(built["prog"]), platform, "many"], built["layer"])
    assert run.rc == 0, run.stderr
    check_stream(run)
    fills = run.calls("clEnqueueFillBuffer")
    assert len(fills) == 300 and all(run.ret(f)["status"] == 0 for f in fills)
    [wait] = run.calls("clWaitForEvents")
    assert 0 < len(wait["events"]) < 300
    assert wait["events"] == [run.ret(f)["event"] for f in fills][: len(wait["events"])]
    notes = [r for r in run.records if r["k"] == "note"]
    assert any(f"call {wait['id']} cut" in n["text"] for n in notes), notes
    for f in fills:
        check_stamps(run, f)


@impl
def test_an_extension_entry_point_is_recorded_once(built, platform):
    plain = run_plain([str(built["prog"]), platform, "ext"])
    run = attach([str(built["prog"]), platform, "ext"], built["layer"])
    assert run.rc == plain.returncode and run.stdout == plain.stdout
    check_stream(run)
    if "none" in run.stdout:
        pytest.skip(f"{platform} hands out no clGetGLContextInfoKHR")
    [call] = run.calls("clGetGLContextInfoKHR")
    assert call["props"][0][0] == CL_CONTEXT_PLATFORM
    ret = run.ret(call)
    if plain.returncode == 0:  # (Intel's runtime crashes on a context without GL: the call is still seen)
        assert ret is not None and f"clGetGLContextInfoKHR: {ret['status']}" == run.stdout.strip()
    else:
        assert ret is None and run.calls()[-1] is call


@impl
def test_a_forked_child_says_hello_as_its_own_process(built, platform):
    run = attach([str(built["prog"]), platform, "fork"], built["layer"])
    assert run.rc == 0, run.stderr
    check_stream(run)
    pids = {r["pid"] for r in run.records}
    assert len(pids) == 2
    assert {c["pid"] for c in run.calls("clCreateBuffer")} == pids


def test_without_the_fd_the_layer_passes_everything_on_and_writes_nothing(built, tmp_path):
    platform = IMPLS[0][1]
    cmd = [str(built["prog"]), platform, "run"]
    plain = run_plain([*cmd, str(tmp_path / "plain.bin")])
    recorded = attach([*cmd, str(tmp_path / "recorded.bin")], built["layer"])
    silent = attach([*cmd, str(tmp_path / "silent.bin")], built["layer"], fd_env=False)
    assert plain.returncode == recorded.rc == silent.rc == 0, silent.stderr
    assert recorded.calls("clEnqueueNDRangeKernel"), "the layer recorded nothing with the fd"
    assert silent.records == []
    for name in ("recorded.bin", "silent.bin"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "plain.bin").read_bytes()


@pytest.mark.gpu
def test_the_c_program_on_the_nvidia_gpu(built, tmp_path):
    plain = run_plain([str(built["prog"]), "NVIDIA", "run", str(tmp_path / "plain.bin")])
    assert plain.returncode == 0, plain.stderr
    run = attach([str(built["prog"]), "NVIDIA", "run", str(tmp_path / "layer.bin")], built["layer"])
    assert run.rc == 0, run.stderr
    assert (tmp_path / "layer.bin").read_bytes() == (tmp_path / "plain.bin").read_bytes()
    check_stream(run)
    enqueues = run.calls("clEnqueueNDRangeKernel")
    assert len(enqueues) == 8
    for e in enqueues:
        assert e["name"] == "scale" and len(e["mems"]) == 2
        check_stamps(run, e)


@pytest.mark.gpu
def test_semaphores_on_the_nvidia_gpu(built):
    run = attach([str(built["prog"]), "NVIDIA", "sem"], built["layer"])
    assert run.rc == 0, run.stderr
    if "none" in run.stdout:
        pytest.skip("this NVIDIA platform has no cl_khr_semaphore")
    check_stream(run)
    [create] = run.calls("clCreateSemaphoreWithPropertiesKHR")
    assert create["props"] == [[0x203D, 1]]
    sem = run.ret(create)["handle"]
    assert run.ret(create)["status"] == 0 and sem != "0x0"
    for fn in ("clEnqueueSignalSemaphoresKHR", "clEnqueueWaitSemaphoresKHR"):
        [call] = run.calls(fn)
        assert call["semaphores"] == [sem] and call["payloads"] is None and call["num"] == 1
        assert run.ret(call)["status"] == 0
        check_stamps(run, call)
