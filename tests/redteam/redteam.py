"""The reliability red team (issue 38), kept so that its cases can be run again on any checkout.

    python tests/redteam/redteam.py [--root CHECKOUT] [-k SUBSTRING] [--list]

Each case starts glshare (``python -m app`` with CHECKOUT first on the path, its own working
folder) the way a user's shell would: its own session, every ending signal at its default
disposition, and says ``hold`` or ``FAIL`` with the reason; the last line counts them. Run it
under a display (``xvfb-run -a``) for the window cases; without one they are skipped, said so.
Nothing is written outside a temporary folder per case (kernels are copied there before a case
that could overwrite one). Standard library only, so that it runs against an old checkout too.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
IMAGE = ("run", "--headless", "--scene", "image", "--size", "160x120")
F_SETPIPE_SZ = 1031
CASES: list = []


class Fail(Exception):
    pass


def case(name: str, window: bool = False):
    def add(fn):
        CASES.append((name, fn, window))
        return fn
    return add


class Ctx:
    def __init__(self, root: Path, tmp: Path) -> None:
        self.root, self.tmp = root, tmp

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
        env["PYTHONPATH"] = str(self.root)
        env["TMPDIR"] = str(self.tmp)
        env.update({k: v for k, v in extra.items() if v is not None})
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
        return env

    def start(self, *args, env=None, stdout=subprocess.PIPE, preexec=None, stdin=subprocess.DEVNULL,
              module="app") -> subprocess.Popen:
        def setup():
            for s in ENDING:
                signal.signal(s, signal.SIG_DFL)
            if preexec is not None:
                preexec()
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=self.root, env=env or self.env(),
                                stdout=stdout, stderr=subprocess.PIPE, stdin=stdin, text=True,
                                start_new_session=True, preexec_fn=setup)

    def run(self, *args, timeout=120, **kw) -> tuple[int, str, str]:
        proc = self.start(*args, **kw)
        out, err = finish(proc, timeout)
        return proc.returncode, out or "", err or ""


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise Fail(f"still running after {timeout:g} s (killed); stderr: {tail(err)}") from None


def tail(text: str | None, n: int = 2) -> str:
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "(nothing)"


def expect(cond, why: str) -> None:
    if not cond:
        raise Fail(why)


def one_line_refusal(rc: int, err: str, needle: str = "") -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    expect(rc == 2, f"exit {rc}, not 2: {tail(err)}")
    expect(len(lines) == 1, f"{len(lines)} lines on stderr: {tail(err, 3)}")
    expect(needle.lower() in lines[0].lower(), f"{lines[0]!r} does not say {needle!r}")


def outputs(ctx: Ctx) -> tuple[list[str], dict]:
    paths = {"report": ctx.tmp / "r.json", "trace": ctx.tmp / "t.json", "screenshot": ctx.tmp / "s.png"}
    return [a for k, p in paths.items() for a in (f"--{k}", str(p))], paths


def all_written(paths: dict, out: str, err: str, how: str | None = None) -> None:
    for kind, p in paths.items():
        expect(p.exists() and p.stat().st_size > 0, f"{kind} lost; stderr: {tail(err)}")
        expect(f"wrote {kind}" in out + err, f"{kind} not said")
    if how:
        got = json.loads(paths["report"].read_text())["stopped"]["how"]
        expect(got == how, f"stopped.how {got!r}, not {how!r}")


# -- bad option values (what holds: exit 2, one line, no work) ---------------------------------------
BAD = [
    ("frames 0", ["--frames", "0"], "at least 1"),
    ("frames -3", ["--frames", "-3"], ""),
    ("frames abc", ["--frames", "abc"], "whole number"),
    ("frames unicode digits", ["--frames", "\u0661\u0662"], "whole number"),
    ("size 0x0", ["--size", "0x0"], ""),
    ("size 99999x2", ["--size", "99999x2"], ""),
    ("size unicode digits", ["--size", "\u0661\u0662\u0668x\u0661\u0662\u0668"], ""),
    ("seed -1", ["--seed", "-1"], ""),
    ("seed 2**64", ["--seed", str(2**64)], ""),
    ("panel-hz nan", ["--panel-hz", "nan"], ""),
    ("panel-hz -1", ["--panel-hz", "-1"], ""),
    ("stamps-ms 5000", ["--stamps-ms", "5000"], ""),
    ("frames-in-flight 0", ["--frames-in-flight", "0"], ""),
    ("frames-in-flight 100000", ["--frames-in-flight", "100000"], ""),
    ("sync bogus", ["--sync", "bogus"], "sync"),
    ("backend bogus", ["--backend", "bogus"], ""),
    ("scene bogus", ["--scene", "bogus"], ""),
    ("local-size 0x0", ["--local-size", "0x0"], ""),
    ("local-size abc", ["--local-size", "abc"], ""),
    ("inject unknown", ["--inject", "meltdown@3"], "unknown fault"),
    ("inject past the end", ["--inject", "stall@500", "--frames", "4"], "only 4 frames"),
    ("cl-device nothing", ["--cl-device", "NoSuchPlatform"], ""),
    ("blur-radius 99", ["--scene", "postprocess", "--blur-radius", "99"], ""),
]
for _name, _args, _needle in BAD:
    def _bad(ctx, args=_args, needle=_needle):
        rc, _, err = ctx.run("run", "--headless", *args, "--report", str(ctx.tmp / "r.json"), timeout=60)
        one_line_refusal(rc, err, needle)
        expect(not (ctx.tmp / "r.json").exists(), "a report was written")
    case(f"bad value: {_name}")(_bad)


# -- outputs ------------------------------------------------------------------------------------------------
@case("output: report into a folder that does not exist is made")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", str(ctx.tmp / "a/b/r.json"))
    expect(rc == 0 and (ctx.tmp / "a/b/r.json").exists(), tail(err))


@case("output: report names a folder")
def _(ctx):
    one_line_refusal(*ctx.run(*IMAGE, "--frames", "2", "--report", str(ctx.tmp))[::2], "folder")


@case("output: report DIR/xx/. refused, no file xx (item 14)")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", f"{ctx.tmp}/xx/.")
    expect(not (ctx.tmp / "xx").exists(), "wrote a file xx")
    one_line_refusal(rc, err, "folder")


@case("output: two outputs on one file refused")
def _(ctx):
    p = str(ctx.tmp / "same")
    one_line_refusal(*ctx.run(*IMAGE, "--frames", "2", "--report", p, "--trace", p)[::2], "both write")


@case("output: a symlink's target replaced, the link kept")
def _(ctx):
    target = ctx.tmp / "target.json"
    target.write_text("old")
    (ctx.tmp / "link.json").symlink_to(target)
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", str(ctx.tmp / "link.json"))
    expect(rc == 0 and (ctx.tmp / "link.json").is_symlink(), tail(err))
    expect(json.loads(target.read_text())["frames"] == 2, "target not written")


@case("output: /dev/null takes every output")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", "/dev/null", "--trace", "/dev/null")
    expect(rc == 0, tail(err))


@case("output: a fifo with a reader is written through")
def _(ctx):
    fifo = ctx.tmp / "f"
    os.mkfifo(fifo)
    got = {}
    t = threading.Thread(target=lambda: got.update(data=fifo.read_bytes()), daemon=True)
    t.start()
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", str(fifo))
    t.join(10)
    expect(rc == 0 and json.loads(got.get("data") or b"null")["frames"] == 2, tail(err))


@case("output: a fifo with no reader never hangs (item 5)")
def _(ctx):
    fifo = ctx.tmp / "f"
    os.mkfifo(fifo)
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", str(fifo), "--trace", str(ctx.tmp / "t.json"),
                         timeout=60)
    expect(rc != 0 and "report not written" in err, f"exit {rc}: {tail(err)}")
    expect((ctx.tmp / "t.json").exists(), "the other output was lost")


@case("output: --report over the video refused (item 3)")
def _(ctx):
    video = make_video(ctx.tmp / "v.mkv")
    before = video.read_bytes()
    rc, _, err = ctx.run("run", "--headless", "--scene", "yuv", "--frames", "2", "--video", str(video),
                         "--report", str(video))
    expect(video.read_bytes() == before, "the video was replaced")
    one_line_refusal(rc, err, "input")


@case("output: --report over a kernel refused (item 3)")
def _(ctx):
    kernels = ctx.tmp / "kernels"
    shutil.copytree(ctx.root / "kernels", kernels)
    before = (kernels / "julia.cl").read_bytes()
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", str(kernels / "julia.cl"),
                         env=ctx.env(GLSHARE_KERNELS_DIR=str(kernels)))
    expect((kernels / "julia.cl").read_bytes() == before, "the kernel was replaced")
    one_line_refusal(rc, err, "input")


@case("output: --trace - into a reader that stops after 10 bytes (item 2)")
def _(ctx):
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    proc = ctx.start(*IMAGE, "--frames", "40", "--quiet", "--trace", "-", env=ctx.env(PYTHONUNBUFFERED="1"), stdout=w)
    os.close(w)
    os.read(r, 10)
    os.close(r)
    _, err = finish(proc)
    expect("wrote trace" not in err, "said 'wrote trace' of a trace cut short")
    expect(proc.returncode != 0, "exit 0")


@case("output: --trace - to a full disk (RLIMIT_FSIZE) (item 2)")
def _(ctx):
    with (ctx.tmp / "sink").open("wb") as f:
        rc, _, err = ctx.run(*IMAGE, "--frames", "700", "--trace", "-", env=ctx.env(PYTHONUNBUFFERED="1"), stdout=f,
                             preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, 2 << 20)))
    expect(rc != 0 and "wrote trace" not in err, f"exit {rc}: {tail(err)}")


@case("output: --trace FILE to a full disk leaves nothing")
def _(ctx):
    t = ctx.tmp / "t.json"
    rc, _, err = ctx.run(*IMAGE, "--frames", "700", "--trace", str(t),
                         preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, 2 << 20)))
    expect(rc != 0 and not t.exists() and "trace not written" in err, f"exit {rc}: {tail(err)}")


@case("output: closed stdout, --report - refused (item 10)")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", "-", stdout=None, preexec=lambda: os.close(1))
    one_line_refusal(rc, err, "closed")


@case("output: closed stdout, a file output runs (item 10)")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "2", "--report", str(ctx.tmp / "r.json"), stdout=None,
                         preexec=lambda: os.close(1))
    expect(rc == 0 and "Traceback" not in err, f"exit {rc}: {tail(err)}")


@case("output: closed stdout, info and errors end without a traceback (item 10)")
def _(ctx):
    for cmd in (("info",), ("errors",)):
        rc, _, err = ctx.run(*cmd, stdout=None, preexec=lambda: os.close(1))
        expect("Traceback" not in err, f"{cmd[0]}: {tail(err)}")


@case("output: convert - | head (item 2)")
def _(ctx):
    video = make_video(ctx.tmp / "v.mkv", 256, 192, noise=True)
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    proc = ctx.start("convert", str(video), "-", env=ctx.env(PYTHONUNBUFFERED="1"), stdout=w)
    os.close(w)
    os.read(r, 10)
    os.close(r)
    _, err = finish(proc)
    expect(proc.returncode != 0 and "wrote" not in err, f"exit {proc.returncode}: {tail(err)}")


# -- signals ----------------------------------------------------------------------------------------------
def signal_case(name, sent, gap=0.01, how=None):
    @case(f"signal: {name}")
    def _(ctx):
        args, paths = outputs(ctx)
        proc = ctx.start(*IMAGE, "--frames", "100000000", *args)
        line = proc.stdout.readline()
        expect("fps" in line, f"no frame-rate line: {line!r}")
        for s in sent:
            proc.send_signal(s)
            time.sleep(gap)
        out, err = finish(proc)
        expect(proc.returncode == 128 + sent[0], f"exit {proc.returncode}, not {128 + sent[0]}: {tail(err)}")
        all_written(paths, out, err, how)


signal_case("SIGINT mid-run", [signal.SIGINT], how="interrupt")
signal_case("SIGTERM mid-run", [signal.SIGTERM], how="terminate")
signal_case("Ctrl-C twice 10 ms apart (item 1)", [signal.SIGINT, signal.SIGINT], how="interrupt")
signal_case("SIGTERM twice 10 ms apart (item 1)", [signal.SIGTERM, signal.SIGTERM], how="terminate")
signal_case("SIGINT then SIGTERM (item 1)", [signal.SIGINT, signal.SIGTERM], how="interrupt")
signal_case("SIGHUP, the terminal closed (item 11)", [signal.SIGHUP])
signal_case("SIGQUIT (item 11)", [signal.SIGQUIT])
signal_case("SIGQUIT then SIGTERM (item 11)", [signal.SIGQUIT, signal.SIGTERM], gap=0.3)


def startup_case(delay, sig=signal.SIGINT):
    @case(f"signal: {signal.Signals(sig).name} {delay:g} s after start (item 6)")
    def _(ctx):
        args, paths = outputs(ctx)
        proc = ctx.start("run", "--headless", "--frames", "100000000", *args)
        time.sleep(delay)
        proc.send_signal(sig)
        out, err = finish(proc, 60)
        expect(proc.returncode == 128 + sig, f"exit {proc.returncode}: {tail(err)}")
        for bad in ("nanobind", "Traceback", "build failed"):
            expect(bad not in err, f"{bad!r} on stderr: {tail(err)}")
        expect(paths["report"].exists() or "nothing" in err, f"no output and no word: {tail(err)}")
        left = list(ctx.tmp.glob("glshare-failed-build-*"))
        expect(not left, f"{len(left)} failed-build folders left")


for _d in (0.3, 0.5, 0.7, 0.9, 1.2, 1.6):
    startup_case(_d)
for _s in (signal.SIGTERM, signal.SIGHUP):
    startup_case(0.8, _s)


@case("signal: three Ctrl-C say what they lost")
def _(ctx):
    args, paths = outputs(ctx)
    proc = ctx.start(*IMAGE, "--frames", "100000000", *args)
    expect("fps" in proc.stdout.readline(), "no frame-rate line")
    for _ in range(3):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
    out, err = finish(proc)
    expect(proc.returncode == 130, f"exit {proc.returncode}")
    lost = [ln for ln in err.splitlines() if "third" in ln]
    for kind, p in paths.items():
        expect(p.exists() or (lost and kind in lost[0]), f"{kind} lost and not said")


# -- environment ---------------------------------------------------------------------------------------------
def _unwritable(ctx) -> str:
    if os.geteuid() == 0:
        (ctx.tmp / "file").write_text("")
        return str(ctx.tmp / "file" / "home")
    home = ctx.tmp / "home"
    home.mkdir()
    home.chmod(0o555)
    return str(home)


@case("environment: read-only HOME (item 4)")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "3", "--report", str(ctx.tmp / "r.json"),
                         env=ctx.env(HOME=_unwritable(ctx), XDG_CACHE_HOME=None))
    expect(rc == 0 and "Traceback" not in err and (ctx.tmp / "r.json").exists(), f"exit {rc}: {tail(err)}")


@case("environment: read-only XDG_CACHE_HOME (item 4)")
def _(ctx):
    rc, _, err = ctx.run(*IMAGE, "--frames", "3", "--report", str(ctx.tmp / "r.json"),
                         env=ctx.env(XDG_CACHE_HOME=_unwritable(ctx)))
    expect(rc == 0 and "Traceback" not in err and (ctx.tmp / "r.json").exists(), f"exit {rc}: {tail(err)}")


@case("environment: python -m app.cli runs the command line")
def _(ctx):
    rc, out, err = ctx.run("--version", module="app.cli")
    expect(rc == 0 and out.startswith("glshare"), f"exit {rc}, stdout {out!r}")


@case("environment: --video fifo with no writer (item 14)")
def _(ctx):
    fifo = ctx.tmp / "v"
    os.mkfifo(fifo)
    one_line_refusal(*ctx.run("run", "--headless", "--scene", "yuv", "--frames", "2", "--video", str(fifo),
                              timeout=60)[::2], "fifo")


@case("environment: a video beyond GL's texture limit refused early (item 9)")
def _(ctx):
    video = make_video(ctx.tmp / "big.mkv", 16400, 16)
    rc, _, err = ctx.run("run", "--headless", "--scene", "yuv", "--frames", "2", "--video", str(video),
                         "--report", str(ctx.tmp / "r.json"))
    one_line_refusal(rc, err, "16400")


# -- faults, scenes --------------------------------------------------------------------------------------------
@case("faults: five kinds at one frame all recorded (item 12)")
def _(ctx):
    r = ctx.tmp / "r.json"
    args = [a for k in ("enqueue", "out_of_resources", "gl_error", "stall", "lost_context") for a in ("--inject", f"{k}@3")]
    rc, _, err = ctx.run("run", "--headless", "--frames", "8", "--size", "4096", "--report", str(r), *args)
    names = [e["name"] for e in json.loads(r.read_text())["errors"]]
    expect(len(names) == 5 and "GL_CONTEXT_LOST" in names, f"recorded {names}")
    expect(rc == 1, f"exit {rc}")


@case("faults: each kind on its own frame recorded")
def _(ctx):
    r = ctx.tmp / "r.json"
    rc, _, err = ctx.run("run", "--headless", "--frames", "12", "--size", "4096", "--report", str(r), "--inject",
                         "enqueue@2", "--inject", "out_of_resources@4", "--inject", "gl_error@6", "--inject", "stall@8")
    expect(rc == 0 and json.loads(r.read_text())["errors_total"] == 4, f"exit {rc}: {tail(err)}")


@case("scenes: --sync none on postprocess records no panel error (item 15)")
def _(ctx):
    r = ctx.tmp / "r.json"
    rc, _, err = ctx.run("run", "--headless", "--scene", "postprocess", "--sync", "none", "--frames", "40",
                         "--report", str(r))
    expect(rc == 0 and json.loads(r.read_text())["errors_total"] == 0, f"exit {rc}: {tail(err)}")


for _scene in ("particles", "image", "yuv", "postprocess"):
    def _scene_case(ctx, scene=_scene):
        r = ctx.tmp / "r.json"
        rc, _, err = ctx.run("run", "--headless", "--scene", scene, "--frames", "20", "--report", str(r))
        expect(rc == 0 and json.loads(r.read_text())["frames"] == 20, f"exit {rc}: {tail(err)}")
    case(f"scenes: {_scene} headless 20 frames")(_scene_case)


@case("bench: a failed plot keeps the JSON (item 8)")
def _(ctx):
    code = ("import sys, types\n"
            "import app.bench as b\n"
            "b.open_surface = lambda *a, **k: types.SimpleNamespace(close=lambda: None)\n"
            "b.probe_machine = lambda *a: {'backends_available': []}\n"
            "b._run_name = lambda *a: 'x'\n"
            "b.run_sweep = lambda *a: {'cells': []}\n"
            "import app.bench.report as r; r.print_table = lambda *a, **k: None\n"
            "import app.bench.plot as p\n"
            "def boom(*a): raise OSError(28, 'No space left on device')\n"
            "p.write_plot = boom\n"
            "sys.exit(b.main(types.SimpleNamespace(json_path=sys.argv[1], plot=sys.argv[2], quick=True, cl_device=None)))\n")
    j, p = ctx.tmp / "b.json", ctx.tmp / "b.png"
    proc = subprocess.run([sys.executable, "-c", code, str(j), str(p)], cwd=ctx.root, env=ctx.env(), capture_output=True,
                          text=True, timeout=120)
    expect(j.exists(), f"the JSON was lost: {tail(proc.stderr)}")
    expect(proc.returncode != 0, "exit 0 with the plot not written")


# -- a window ----------------------------------------------------------------------------------------------------
def window_case(action: str, what: str):
    @case(f"window: {what} by another X client, xdotool {action} (item 13)", window=True)
    def _(ctx):
        if not shutil.which("xdotool"):
            raise Skip("xdotool is not installed")
        args, paths = outputs(ctx)
        proc = ctx.start("run", "--scene", "image", "--size", "160x120", "--frames", "100000000", *args)
        expect("fps" in proc.stdout.readline(), "no frame-rate line")
        wid = subprocess.run(["xdotool", "search", "--pid", str(proc.pid)], capture_output=True, text=True).stdout.split()
        expect(wid, "no window found")
        subprocess.run(["xdotool", action, wid[-1]], capture_output=True)
        out, err = finish(proc, 60)
        expect(paths["report"].exists() and paths["trace"].exists(), f"exit {proc.returncode}, outputs lost: {tail(err)}")


window_case("windowclose", "the window destroyed")
window_case("windowkill", "the connection killed")


class Skip(Exception):
    pass


def make_video(path: Path, w: int = 64, h: int = 48, noise: bool = False) -> Path:
    """A 3-frame FFV1 clip (PyAV), flat or noise (which no PNG compresses); Skip where PyAV is missing."""
    try:
        import av
        import numpy as np
    except ImportError:
        raise Skip("PyAV is not installed") from None
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("-k", default="", help="only cases whose name holds this")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    chosen = [c for c in CASES if args.k.lower() in c[0].lower()]
    if args.list:
        print("\n".join(name for name, _, _ in chosen))
        return 0
    counts = {"hold": 0, "FAIL": 0, "skip": 0}
    for name, fn, window in chosen:
        if window and not os.environ.get("DISPLAY"):
            print(f"skip  {name}: no display")
            counts["skip"] += 1
            continue
        with tempfile.TemporaryDirectory(prefix="glshare-redteam-") as tmp:
            try:
                fn(Ctx(args.root.resolve(), Path(tmp)))
                verdict, why = "hold", ""
            except Skip as exc:
                verdict, why = "skip", str(exc)
            except Fail as exc:
                verdict, why = "FAIL", str(exc)
            except Exception as exc:  # noqa: BLE001 - a case that broke is a failure, said
                verdict, why = "FAIL", f"{type(exc).__name__}: {exc}"
        counts[verdict] += 1
        print(f"{verdict:5} {name}{': ' + why if why else ''}", flush=True)
    print(f"{len(chosen)} cases: {counts['hold']} hold, {counts['FAIL']} fail, {counts['skip']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
