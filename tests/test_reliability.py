"""Reliability (issue 38): signals as a terminal sends them, short writes, a full disk, an output over
an input, a read-only cache home, fifos, a closed standard output. Each case runs glshare in its own
process, as a user's shell would start it."""
from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import ROOT

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
RUN = ("run", "--headless", "--scene", "image", "--size", "160x120")
F_SETPIPE_SZ = 1031  # fcntl.h (Linux)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    env.update(extra)
    return env


def _terminal_like(extra=None):
    """The child's dispositions as a shell in a terminal leaves them (every ending signal at its
    default), in a session of its own (no signal of the test's terminal reaches it)."""
    def setup():
        for signum in ENDING:
            signal.signal(signum, signal.SIG_DFL)
        if extra is not None:
            extra()
    return setup


def _start(*args, env=None, preexec=None, stdout=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=env or _env(), stdout=stdout,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_terminal_like(preexec))


def _finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _outputs(tmp_path: Path) -> tuple[list[str], dict]:
    paths = {"report": tmp_path / "r.json", "trace": tmp_path / "t.json", "screenshot": tmp_path / "s.png"}
    return [a for kind, p in paths.items() for a in (f"--{kind}", str(p))], paths


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (/proc/PID/status SigCgt)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except OSError:
        pass
    return False


# -- signals ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sent", [
    (signal.SIGINT, signal.SIGINT),  # Ctrl-C twice, 10 ms apart
    (signal.SIGTERM, signal.SIGTERM),
    (signal.SIGHUP,),  # the terminal closed
    (signal.SIGQUIT,),
    (signal.SIGQUIT, signal.SIGTERM),
], ids=lambda s: "-".join(signal.Signals(n).name for n in s))
def test_ending_signals_stop_at_a_frame_and_every_output_is_written(tmp_path, sent):
    args, paths = _outputs(tmp_path)
    proc = _start(*RUN, "--frames", "100000000", *args)
    try:
        first = proc.stdout.readline()  # the first frame-rate line: frames are being presented
        assert "fps" in first, first
        for signum in sent:
            proc.send_signal(signum)
            time.sleep(0.01)
    finally:
        out, err = _finish(proc)
    how = {signal.SIGINT: "interrupt", signal.SIGTERM: "terminate", signal.SIGHUP: "hangup",
           signal.SIGQUIT: "sigquit"}[sent[0]]
    assert proc.returncode == 128 + sent[0], (proc.returncode, err)
    assert "Traceback" not in err, err
    report = json.loads(paths["report"].read_text())
    assert report["stopped"]["how"] == how and report["stopped"]["frame"] > 0
    assert json.loads(paths["trace"].read_text())["otherData"]["frames"] > 0  # (its last frames: issue 38, item 7)
    assert paths["screenshot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for kind in paths:  # each one said
        assert f"wrote {kind} " in out, out
    assert f"(stopped at frame {report['stopped']['frame']})" in err, err


def test_a_third_signal_ends_at_once_and_names_what_it_lost(tmp_path):
    args, paths = _outputs(tmp_path)
    proc = _start(*RUN, "--frames", "100000000", *args)
    try:
        assert "fps" in proc.stdout.readline()
        for _ in range(3):  # apart: signals that arrive together are taken as one
            proc.send_signal(signal.SIGINT)
            time.sleep(0.02)
    finally:
        out, err = _finish(proc)
    assert proc.returncode == 130, err
    lost = [ln for ln in err.splitlines() if "a third time" in ln]
    assert len(lost) == 1, err
    for kind, path in paths.items():  # written, or named as lost
        assert path.exists() or kind in lost[0], (kind, err)


def test_a_signal_ignored_at_start_stays_ignored(tmp_path):
    """nohup glshare run ...: the terminal's SIGHUP does not end the run; SIGTERM still does."""
    args, paths = _outputs(tmp_path)
    proc = _start(*RUN, "--frames", "100000000", *args, preexec=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        assert "fps" in proc.stdout.readline()
        proc.send_signal(signal.SIGHUP)
        assert "fps" in proc.stdout.readline()  # the next frame-rate line, 2 s on: still running
        proc.send_signal(signal.SIGTERM)
    finally:
        out, err = _finish(proc)
    assert proc.returncode == 143, err
    assert json.loads(paths["report"].read_text())["stopped"]["how"] == "terminate"


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.6, 1.0])
def test_a_signal_during_start_up_ends_with_its_outputs_or_a_line(tmp_path, delay):
    """From the first line of main: no abort in a native import, no false build failure, no silent
    exit; either the outputs of what was done, or one line saying there was nothing yet."""
    args, paths = _outputs(tmp_path)
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    before = set(tmp.glob("glshare-failed-build-*"))
    proc = _start("run", "--headless", "--frames", "100000000", *args)
    try:
        deadline = time.monotonic() + 20
        while not _catches(proc.pid, signal.SIGTERM) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # until glshare's handlers are in (SIGTERM: Python itself never catches it)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
    finally:
        out, err = _finish(proc)
    assert proc.returncode == 130, (proc.returncode, err)
    for bad in ("Traceback", "nanobind", "build failed", "KeyboardInterrupt"):
        assert bad not in err, err
    if paths["report"].exists():
        assert json.loads(paths["report"].read_text())["stopped"]["how"] == "interrupt"
        assert "wrote report" in out
    else:
        assert "interrupted (Ctrl-C) before the run started: nothing recorded, no output written" in err, err
    assert set(tmp.glob("glshare-failed-build-*")) == before


# -- short writes, a full disk ------------------------------------------------------------------------
def test_a_reader_that_stops_early_is_no_output_written(tmp_path):
    """A 4 KiB pipe whose reader takes 10 bytes then closes it: the trace cannot be all written, and
    that is said (PYTHONUNBUFFERED: standard output has no buffer to hide a short write)."""
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    proc = _start(*RUN, "--frames", "40", "--quiet", "--trace", "-", env=_env(PYTHONUNBUFFERED="1"), stdout=w)
    os.close(w)
    try:
        got = os.read(r, 10)
    finally:
        os.close(r)
        out, err = _finish(proc)
    assert got.startswith(b"{")
    assert "wrote trace" not in err, err
    assert "trace not written: cannot write standard output" in err, err
    assert proc.returncode == 1, (proc.returncode, err)


# a file may grow to 2 MiB: enough for the CL compiler's own temporary files (PoCL's preprocessed
# source), not for the trace of 700 frames (about 2.4 MB)
FSIZE = 2 << 20


def test_convert_into_a_reader_that_stops_early_fails_loudly(tmp_path):
    """convert IN - | head: the PNG cut short is said, exit 1, never "wrote standard output"."""
    video = _video(tmp_path / "noise.mkv", 256, 192, noise=True)
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    proc = _start("convert", str(video), "-", env=_env(PYTHONUNBUFFERED="1"), stdout=w)
    os.close(w)
    try:
        assert os.read(r, 8) == b"\x89PNG\r\n\x1a\n"
    finally:
        os.close(r)
        _, err = _finish(proc)
    assert proc.returncode == 1 and "wrote" not in err, err
    assert "cannot write standard output: the reader closed it after" in err, err


def _file_limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE, FSIZE))


def test_a_full_disk_under_standard_output_is_said(tmp_path):
    sink = tmp_path / "out.json"
    with sink.open("wb") as f:
        proc = _start(*RUN, "--frames", "700", "--trace", "-", "--report", str(tmp_path / "r.json"),
                      env=_env(PYTHONUNBUFFERED="1"), stdout=f, preexec=_file_limit)
        _, err = _finish(proc)
    assert proc.returncode == 1, err
    assert "trace not written: cannot write standard output: File too large after" in err, err
    assert "wrote trace" not in err
    assert json.loads((tmp_path / "r.json").read_text())["frames"] == 700  # the other output is written


def test_a_full_disk_under_a_file_leaves_nothing_and_says_so(tmp_path):
    trace = tmp_path / "t.json"
    proc = _start(*RUN, "--frames", "700", "--trace", str(trace), "--report", str(tmp_path / "r.json"),
                  preexec=_file_limit)
    _, err = _finish(proc)
    assert proc.returncode == 1, err
    assert f"trace not written: cannot write {trace}: File too large" in err, err
    assert not trace.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


# -- outputs over inputs --------------------------------------------------------------------------------
def test_an_output_over_a_kernel_is_refused_before_the_run(tmp_path):
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", kernels)
    before = (kernels / "julia.cl").read_bytes()
    proc = _start(*RUN, "--frames", "2", "--report", str(kernels / "julia.cl"), env=_env(GLSHARE_KERNELS_DIR=str(kernels)))
    _, err = _finish(proc)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, err
    assert "is the run's input (the kernel" in err, err
    assert (kernels / "julia.cl").read_bytes() == before


def _video(path: Path, w: int = 64, h: int = 48, noise: bool = False) -> Path:
    """A 3-frame FFV1 clip, flat or noise (which no PNG compresses)."""
    av = pytest.importorskip("av")
    import numpy as np

    with av.open(str(path), "w", format="matroska") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for i in range(3):
            planes = (np.random.default_rng(i).integers(16, 236, (h * 3 // 2, w), dtype=np.uint8) if noise
                      else np.full((h * 3 // 2, w), 16 + i, np.uint8))
            frame = av.VideoFrame.from_ndarray(planes, format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def test_an_output_over_the_video_is_refused_before_the_run(tmp_path):
    video = _video(tmp_path / "v.mkv")
    before = video.read_bytes()
    link = tmp_path / "link.mkv"
    link.symlink_to(video)
    for out in (video, link):
        proc = _start("run", "--headless", "--scene", "yuv", "--frames", "2", "--video", str(video), "--report", str(out))
        _, err = _finish(proc)
        assert proc.returncode == 2 and "is the run's input (--video" in err, err
    assert video.read_bytes() == before


# -- a read-only cache home --------------------------------------------------------------------------
@pytest.mark.parametrize("var", ["HOME", "XDG_CACHE_HOME"])
def test_a_cache_home_that_cannot_be_written_costs_nothing(tmp_path, var):
    if os.geteuid() == 0:  # root writes through permissions: a folder that cannot be made at all
        (tmp_path / "file").write_text("")
        home = tmp_path / "file" / "home"
    else:
        home = tmp_path / "home"
        home.mkdir()
        home.chmod(0o555)
    env = _env(**{var: str(home)})
    if var == "HOME":
        env.pop("XDG_CACHE_HOME", None)
    report = tmp_path / "r.json"
    proc = _start(*RUN, "--frames", "3", "--report", str(report), env=env)
    out, err = _finish(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert json.loads(report.read_text())["frames"] == 3
    assert "cannot be written" in err and "for this run" in err, err


# -- fifos ------------------------------------------------------------------------------------------------
def test_a_fifo_output_without_a_reader_gives_up_with_a_line(tmp_path):
    from app.outputs import FIFO_WAIT_S

    fifo = tmp_path / "r.fifo"
    os.mkfifo(fifo)
    trace = tmp_path / "t.json"
    proc = _start(*RUN, "--frames", "3", "--quiet", "--report", str(fifo), "--trace", str(trace))
    _, err = _finish(proc, timeout=60 + FIFO_WAIT_S)
    assert proc.returncode == 1, err
    assert f"report not written: cannot write {fifo}: a fifo no reader opened in {FIFO_WAIT_S:g} s" in err, err
    assert json.loads(trace.read_text())["otherData"]["frames"] == 3


def test_a_fifo_output_whose_reader_comes_late_gets_it(tmp_path):
    fifo = tmp_path / "r.fifo"
    os.mkfifo(fifo)
    got = {}

    def reader():
        time.sleep(1.0)
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    thread = threading.Thread(target=reader, daemon=True)
    proc = _start(*RUN, "--frames", "3", "--quiet", "--report", str(fifo))
    thread.start()
    out, err = _finish(proc)
    thread.join(30)
    assert proc.returncode == 0, err
    assert json.loads(got["data"])["frames"] == 3


def test_a_video_fifo_is_refused_before_any_work(tmp_path):
    fifo = tmp_path / "v.fifo"
    os.mkfifo(fifo)
    proc = _start("run", "--headless", "--scene", "yuv", "--frames", "2", "--video", str(fifo))
    _, err = _finish(proc, timeout=60)
    assert proc.returncode == 2 and "is a fifo" in err and len(err.strip().splitlines()) == 1, err


# -- closed standard output, bad paths and numbers ---------------------------------------------------------
def test_a_closed_stdout_refuses_dash_and_lets_a_file_run(tmp_path):
    def close_stdout():
        os.close(1)

    proc = _start(*RUN, "--frames", "2", "--report", "-", preexec=close_stdout, stdout=None)
    _, err = _finish(proc)
    assert proc.returncode == 2 and "--report -: standard output is closed" in err, err
    report = tmp_path / "r.json"
    proc = _start(*RUN, "--frames", "2", "--report", str(report), preexec=close_stdout, stdout=None)
    _, err = _finish(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert json.loads(report.read_text())["frames"] == 2


@pytest.mark.parametrize("args, needle", [
    (["--report", "{tmp}/xx/."], "names a folder"),
    (["--frames", "\u0661\u0662"], "expected a whole number"),
    (["--size", "\u0661\u0662\u0668x\u0661\u0662\u0668"], "takes WxH"),
    (["--frames-in-flight", "100000"], "expected 1 to 16"),
])
def test_bad_values_are_one_line(tmp_path, glshare, args, needle):
    res = glshare(*RUN[:4], *[a.format(tmp=tmp_path) for a in args])
    assert res.returncode == 2 and needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert list(tmp_path.iterdir()) == []


def test_python_m_app_cli_runs_the_command_line():
    res = subprocess.run([sys.executable, "-m", "app.cli", "--version"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=_env())
    assert res.returncode == 0 and res.stdout.startswith("glshare "), (res.stdout, res.stderr)


def test_no_events_to_read_before_the_first_batch():
    """--sync none on postprocess: the panel's harvest asked for the stamps of no event before any
    batch had been read (issue 38, item 15: "panel imgui: TypeError")."""
    from app.cl.ext import EventInfo

    info = EventInfo()
    assert info.profiles([], True) == [] and info.profiles([], False) == []


def test_postprocess_with_no_sync_records_no_error(glshare, tmp_path):
    report = tmp_path / "r.json"
    res = glshare(*RUN[:2], "--scene", "postprocess", "--sync", "none", "--frames", "40", "--report", str(report))
    assert res.returncode == 0, res.stderr
    r = json.loads(report.read_text())
    assert r["errors_total"] == 0 and r["errors"] == [], r["errors"]


# -- memory ---------------------------------------------------------------------------------------------
def test_a_size_the_machine_cannot_hold_is_refused_with_the_estimate():
    from app.errors import UsageError
    from app.memory import BASE_BYTES, check_memory, estimate
    from app.scenes import scene_class

    particles = scene_class("particles")
    need, shared, factor = estimate(particles, 64 << 20)
    assert shared == 32 * (64 << 20) and need == int(BASE_BYTES + factor * shared)
    with pytest.raises(UsageError, match=r"--size 67,108,864: the particles scene would need about 14\.5 GB .* "
                                         r"this machine has 8\.0 GB available"):
        check_memory(particles, 64 << 20, available=8 * 10**9)
    check_memory(particles, 65536, available=8 * 10**9)  # the default size fits
    check_memory(scene_class("yuv"), (1920, 1080), available=8 * 10**9)


def test_a_size_beyond_the_device_memory_is_refused():
    import types

    from app.errors import UsageError
    from app.memory import check_device_memory
    from app.scenes import scene_class

    gpu = types.SimpleNamespace(global_mem_size=1 << 30)
    with pytest.raises(UsageError, match=r"--size 4096x4096: the postprocess scene shares 0\.13 GB of objects; "
                                         r"the GPU has 0\.10 GB"):
        check_device_memory(types.SimpleNamespace(global_mem_size=100 << 20), "the GPU", scene_class("postprocess"),
                            (4096, 4096))
    check_device_memory(gpu, "the GPU", scene_class("postprocess"), (4096, 4096))


def test_the_cli_refuses_a_size_beyond_the_memory_available(glshare, tmp_path):
    """The largest count there is, against what this machine says it has: refused before any work
    where it cannot be held (one line with the estimate), else not refused by this check."""
    from app.memory import available_bytes, estimate
    from app.scenes import scene_class

    need = estimate(scene_class("particles"), 64 << 20)[0]
    available = available_bytes()
    if available is None or need <= available:
        pytest.skip(f"this machine has {available} bytes available, enough for 64m particles ({need}): "
                    "the refusal is checked by the test above")
    res = glshare(*RUN[:2], "--size", "64m", "--frames", "2", "--report", str(tmp_path / "r.json"))
    assert res.returncode == 2 and "would need about" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# -- bench, video limits, failed builds ----------------------------------------------------------------------
def test_a_failed_bench_plot_keeps_the_json(tmp_path, monkeypatch, capsys):
    """bench --json J --plot P: the plot cannot be written, the JSON result still is (item 8)."""
    import types

    import app.bench as bench
    import app.bench.plot as plot
    import app.bench.report as report
    import app.window

    monkeypatch.setattr(app.window, "open_surface", lambda *a, **k: types.SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(bench, "probe_machine", lambda *a: {"backends_available": []})
    monkeypatch.setattr(bench, "_run_name", lambda *a: "x")
    monkeypatch.setattr(bench, "run_sweep", lambda *a: {"cells": [], "ratios": {}})
    monkeypatch.setattr(report, "print_table", lambda *a, **k: None)

    def full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plot, "write_plot", full)
    j, p = tmp_path / "b.json", tmp_path / "b.png"
    status = bench.main(types.SimpleNamespace(json_path=str(j), plot=str(p), quick=True, cl_device=None))
    assert status == 1
    assert json.loads(j.read_text())["plot"] is None
    assert "bench plot not written: OSError: [Errno 28] No space left on device" in capsys.readouterr().err


def test_a_video_beyond_the_texture_limit_is_refused_before_any_window(tmp_path):
    from app.config import MAX_IMAGE_SIDE

    video = _video(tmp_path / "wide.mkv", MAX_IMAGE_SIDE + 16, 16)
    report = tmp_path / "r.json"
    proc = _start("run", "--headless", "--scene", "yuv", "--frames", "2", "--video", str(video), "--report", str(report))
    _, err = _finish(proc)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{MAX_IMAGE_SIDE + 16}x16 frames; glshare's textures take at most {MAX_IMAGE_SIDE}" in err, err
    assert not report.exists()


def test_failed_rebuilds_keep_one_saved_copy(tmp_path, cl_ctx):
    """A storm of failed hot reloads leaves the latest failed build's copy, not one folder each
    (item 14); a good build removes it."""
    from app.cl.programs import KernelProgram
    from app.errors import KernelBuildFailed

    src = tmp_path / "k.cl"
    src.write_text("__kernel void k(__global int* a) { a[0] = 1; }\n")
    program = KernelProgram(cl_ctx[0], str(src))
    tmp = Path(os.environ["TMPDIR"])
    for i in range(4):
        src.write_text(f"__kernel void k(__global int* a) {{ a[0] = {i} }}\n")  # a missing ';'
        with pytest.raises(KernelBuildFailed):
            program.reload()
        assert len(list(tmp.glob("glshare-failed-build-*"))) == 1
    src.write_text("__kernel void k(__global int* a) { a[0] = 2; }\n")
    program.reload()
    assert list(tmp.glob("glshare-failed-build-*")) == []
    program.release()



# -- faults -------------------------------------------------------------------------------------------------
def test_every_fault_at_one_frame_is_made_and_recorded(glshare, tmp_path):
    """Five kinds at one frame: each recorded (the first failure of a phase no longer hides the
    others), and lost_context ends the run there (item 12)."""
    report = tmp_path / "r.json"
    kinds = ("enqueue", "out_of_resources", "gl_error", "stall", "lost_context")
    res = glshare(*RUN[:2], "--frames", "8", "--size", "4096", "--report", str(report),
                  *[a for k in kinds for a in ("--inject", f"{k}@3")], timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    r = json.loads(report.read_text())
    assert [(e["frame"], e["where"], e["name"]) for e in r["errors"]] == [
        (3, "compute", "CL_INVALID_VALUE"), (3, "compute", "CL_OUT_OF_RESOURCES"),
        (3, "stall watchdog", "queue stalled"), (3, "render", "GL_INVALID_ENUM"), (3, "render", "GL_CONTEXT_LOST")]
    assert r["stopped"]["how"] == "fault" and r["stopped"]["frame"] == 3


# -- a window taken away by another X client ------------------------------------------------------------------
needs_xdotool = pytest.mark.skipif(not os.environ.get("DISPLAY") or not shutil.which("xdotool"),
                                   reason="needs a display (Xvfb) and xdotool (make's system packages install it)")


@pytest.mark.window
@needs_xdotool
@pytest.mark.parametrize("action", ["windowclose", "windowkill"])
def test_a_window_taken_by_another_client_ends_with_the_outputs(tmp_path, action):
    """windowclose: XDestroyWindow from another client (BadWindow / BadDrawable at the next request);
    windowkill: XKillClient, glshare's X connection closed. Xlib's default handlers would exit(1)
    there with every recorded frame lost (item 13)."""
    args, paths = _outputs(tmp_path)
    proc = _start("run", "--scene", "image", "--size", "160x120", "--no-overlay", "--frames", "100000000", *args)
    try:
        assert "fps" in proc.stdout.readline()
        found = subprocess.run(["xdotool", "search", "--pid", str(proc.pid)], capture_output=True, text=True)
        windows = found.stdout.split()
        assert windows, found.stderr
        subprocess.run(["xdotool", action, windows[-1]], check=True, timeout=30)
    finally:
        out, err = _finish(proc)
    report = json.loads(paths["report"].read_text())
    assert "wrote report" in out and "wrote trace" in out and json.loads(paths["trace"].read_text())
    if action == "windowclose":
        assert proc.returncode == 0, err
        assert report["stopped"]["how"] == "window closed" and "destroyed by another X client" in err, err
        assert "wrote screenshot" in out
    else:
        assert proc.returncode == 1, err
        assert report["stopped"]["how"] == "error" and "the X connection was lost" in report["stopped"]["message"]
        assert "screenshot not written: the display is gone" in err, err


def test_a_command_line_that_runs_nothing_leaves_the_dispositions_as_they_were():
    """In a process that goes on (a test, a caller of app.cli.main), a bad option or another
    command hands the ending signals back."""
    from app.cli import main
    from app.signals import ENDING, SIGNALS

    before = {s: signal.getsignal(s) for s in ENDING}
    assert main(["run", "--frames", "0"]) == 2
    with pytest.raises(SystemExit):
        main(["--version"])
    assert {s: signal.getsignal(s) for s in ENDING} == before and not SIGNALS.installed
