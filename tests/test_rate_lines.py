"""The frame-rate lines of ``glshare run`` (issue 38): written like every other output to standard
output (app/outputs.py: looped until whole, a descriptor that would block waited on), so a slow
reader loses none of them and a reader that goes away costs one line on standard error, not the run.

The child runs with a rate line every few milliseconds (``FPS_EVERY_S`` set before ``main``) and
PYTHONUNBUFFERED=1 (no buffer of Python's to hide a cut write)."""
from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import termios
import time

from support import ROOT

F_SETPIPE_SZ = 1031  # fcntl.h (Linux)
PIPE_BYTES = 4096
CHILD = ("import sys, app.run; app.run.FPS_EVERY_S = 0.002; from app.cli import main; "
         "sys.exit(main(sys.argv[1:]))")
LINE = re.compile(r"glshare: [0-9.]+ fps \([0-9.]+ ms/frame, median of (\d+) frames\), .*, frame (\d+)")


def _start(tmp_path, frames: int, stdout) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen([sys.executable, "-c", CHILD, "run", "--headless", "--scene", "image", "--size", "96x64",
                             "--frames", str(frames), "--report", str(tmp_path / "r.json")],
                            cwd=ROOT, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)


def _queued(fd: int) -> int:
    n = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, n)
    return int.from_bytes(n, sys.byteorder)


def test_a_full_pipe_that_would_block_loses_no_rate_line(tmp_path):
    """Standard output a non-blocking pipe (O_NONBLOCK on its shared file description, as a parent
    such as a node or an event loop leaves it) whose reader lets it fill: each line waits for room and
    comes whole; every frame between two lines is counted by the second ("median of K frames": no
    line lost), and the run ends as usual."""
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_BYTES)
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    proc = _start(tmp_path, 1500, w)
    os.close(w)
    full = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:  # the reader waits until the pipe is full
        if _queued(r) > PIPE_BYTES - 200:  # (less room than a line: the next write would block)
            full = True
            time.sleep(0.5)
            break
        time.sleep(0.01)
    chunks = []
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    err = proc.stderr.read()
    proc.wait(120)
    assert full, "the run ended before its rate lines filled the pipe: nothing was tested"
    assert proc.returncode == 0 and "Traceback" not in err, err
    text = b"".join(chunks).decode()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[-1] == f"glshare: wrote report {tmp_path / 'r.json'}"
    lines = lines[:-1]
    matches = [LINE.fullmatch(line) for line in lines]
    assert all(matches), [line for line, m in zip(lines, matches) if not m][:3]
    frames = [(int(m.group(2)), int(m.group(1))) for m in matches]
    for (before, _), (frame, counted) in zip(frames, frames[1:]):
        assert frame - before == counted, (before, frame, counted)  # no line lost between them
    assert json.loads((tmp_path / "r.json").read_text())["frames"] == 1500


def test_a_reader_that_goes_away_stops_the_rate_lines_with_one_line(tmp_path):
    """The reader of standard output closes it after the first line: the rate lines stop, that is
    said once on standard error, and the run goes on to its last frame and writes its report (its
    "wrote" line then on standard error)."""
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_BYTES)  # (the lines of 400 frames overflow it: a write meets the closed end)
    proc = _start(tmp_path, 400, w)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        first = f.readline()
    err = proc.stderr.read()
    proc.wait(120)
    assert LINE.fullmatch(first.decode().rstrip("\n")), first
    assert proc.returncode == 0 and "Traceback" not in err, err
    said = [line for line in err.splitlines() if "frame-rate lines" in line]
    assert len(said) == 1 and "the reader closed it" in said[0], err
    assert f"glshare: wrote report {tmp_path / 'r.json'}" in err.splitlines(), err
    assert json.loads((tmp_path / "r.json").read_text())["frames"] == 400
