"""Run a program with glshare's recording libraries and read what they write, as it comes.

The program gets its own standard streams, arguments and working folder; its environment gains
``OPENCL_LAYERS`` (the CL layer, first), ``LD_PRELOAD`` (the GL library, first), ``PYTHONPATH``
(glshare's site hook, first: ``app/attach/pyhook``) and ``GLSHARE_ATTACH_FD``, the write end of a
channel it inherits, named with its device and inode (``wire.channel_text``) (``wire``; a SOCK_SEQPACKET socket, a pipe where the system has none: ``channel``). One thread empties the pipe as it fills; another feeds the records, one
per line, into one ``ProcessModel`` per writing process, at a lower priority unless ``--strict``,
where it answers each verdict request on a second pipe as soon as the request is checked (the
program waits for it). The pipe is read until every
writer closed it (the program and whatever it started); once the program ended, descendants that
keep it open get ``READ_AFTER_EXIT_S`` and the report says the stream was cut.
"""
from __future__ import annotations

import gc
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from app import native
from app.attach import wire
from app.attach.model import ProcessModel
from app.errors import UsageError

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyhook")
READ_AFTER_EXIT_S = 2.0
PIPE_BYTES = 1 << 20  # the channel's buffer asked for: fewer waits of the program on a full channel
F_SETPIPE_SZ = 1031  # fcntl.h (Linux)
KEEP_VERDICTS = 100_000  # strict answers whose wait is kept for the report
READ_PAUSE_S = 0.004  # without --strict: the reader's sleep between two emptyings of the channel
CHECK_NICE = 10  # the checking thread's nice value without --strict where SCHED_IDLE is refused (CFS weight 110)
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)  # SIGINT reaches the program from the terminal itself


class LibraryMissing(UsageError):
    """A recording library is not built: one line, exit 2."""


def libraries(cl: bool, gl: bool) -> dict[str, str | None]:
    """{"cl": path, "gl": path}, None where turned off; LibraryMissing where one asked for is not built."""
    out: dict[str, str | None] = {}
    for key, stem, flag, on in (("cl", "cl_layer", "--no-cl", cl), ("gl", "gl_preload", "--no-gl", gl)):
        path = native.attach_library(stem) if on else None
        if path is not None and not os.path.exists(path):
            raise LibraryMissing(f"{path} is not built (make setup, or python -m app.native build); "
                                 f"{flag} records without it")
        out[key] = path
    return out


def find_program(argv: list[str]) -> str:
    """The program's path as exec will find it; UsageError (one line) where there is none."""
    if not argv:
        raise UsageError("glshare attach: no program: give it after --, e.g. glshare attach -- python3 app.py")
    name = argv[0]
    found = shutil.which(name) if os.sep not in name else (name if os.access(name, os.X_OK) and os.path.isfile(name) else None)
    if found is None:
        why = "not found on PATH" if os.sep not in name else ("not executable" if os.path.isfile(name) else "no such file")
        raise UsageError(f"glshare attach: {name}: {why}")
    return found


def environment(base: dict[str, str], libs: dict[str, str | None], fd: int, verdict_fd: int | None) -> dict[str, str]:
    env = dict(base)

    def first(key: str, value: str) -> None:
        env[key] = value + (":" + env[key] if env.get(key) else "")

    if libs.get("cl"):
        first("OPENCL_LAYERS", libs["cl"])
    if libs.get("gl"):
        first("LD_PRELOAD", libs["gl"])
    first("PYTHONPATH", HOOK_DIR)
    env[wire.FD_ENV] = wire.channel_text(fd)
    if verdict_fd is not None:
        env[wire.STRICT_ENV] = "1"
        env[wire.VERDICT_FD_ENV] = wire.channel_text(verdict_fd)
    else:
        env.pop(wire.STRICT_ENV, None)
        env.pop(wire.VERDICT_FD_ENV, None)
    return env


@dataclass
class Recorder:
    """Every process's model, fed line by line; what could not be read is counted."""

    models: dict[int, ProcessModel] = field(default_factory=dict)
    records: int = 0
    bytes: int = 0
    malformed: int = 0
    malformed_examples: list[str] = field(default_factory=list)
    verdicts: list[tuple[int, int, int]] = field(default_factory=list)  # (status, call t, answered t): the first ones
    verdicts_asked: int = 0
    verdicts_refused: int = 0
    reader_cpu_ns: int = 0
    cut: str = ""  # why the stream was not read to its end ("" : it was)

    def feed_line(self, line: bytes) -> bytes | None:
        """One line; the strict answer to write back, where the record asks for one."""
        self.bytes += len(line) + 1
        try:
            rec = wire.parse_line(line)
        except wire.BadRecord as exc:
            self.malformed += 1
            if len(self.malformed_examples) < 5:
                self.malformed_examples.append(f"{exc} ({len(line)} bytes)")
            return None
        self.records += 1
        model = self.models.get(rec["pid"])
        if model is None:
            model = self.models[rec["pid"]] = ProcessModel(rec["pid"])
        answer = model.feed(rec)
        if answer is None:
            return None
        self.verdicts_asked += 1
        self.verdicts_refused += answer["status"] != 0
        if len(self.verdicts) < KEEP_VERDICTS:
            self.verdicts.append((answer["status"], rec["t"], time.monotonic_ns()))
        return (json.dumps(answer) + "\n").encode()


def _read(fd: int, chunks: queue.SimpleQueue, recorder: Recorder, stop: threading.Event, pause_s: float) -> None:
    """Empty the channel as fast as it fills (the program never waits on a full channel for
    glshare's checks): whatever has come, as one chunk to ``chunks``, then None at the end. Between
    two emptyings it sleeps ``pause_s`` (the channel's buffer holds what comes meanwhile): one wake-up
    of this thread per pause, not one per record, on the cores the program runs on, and (without
    --strict) none that preempts the program (``_behind``: "batch")."""
    start_cpu = time.thread_time_ns()
    if pause_s:  # (not under --strict, where the program waits for each request to come through)
        _behind("batch")
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    os.set_blocking(fd, False)
    try:
        ended = False
        while not ended:
            if not poller.poll(100):
                if stop.is_set():
                    recorder.cut = "a process the program started kept the record channel open after the program ended"
                    break
                continue
            got = []
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not data:
                    ended = True
                    break
                got.append(data)
            if got:
                chunks.put(b"".join(got))
            if pause_s and not ended:
                time.sleep(pause_s)
    finally:
        chunks.put(None)
        recorder.reader_cpu_ns += time.thread_time_ns() - start_cpu
        os.close(fd)


def _behind(policy: str) -> None:
    """This thread (Linux: a thread id is a pid to sched_setscheduler) behind the program's: "idle"
    runs only on a core nothing else wants (SCHED_IDLE; where refused, nice ``CHECK_NICE``), "batch"
    gets its fair share but its wake-ups never preempt a running thread (SCHED_BATCH)."""
    me = threading.get_native_id()
    try:
        os.sched_setscheduler(me, os.SCHED_IDLE if policy == "idle" else os.SCHED_BATCH, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    if policy == "idle":
        try:
            os.setpriority(os.PRIO_PROCESS, me, CHECK_NICE)
        except OSError:
            pass


def _check(chunks: queue.SimpleQueue, recorder: Recorder, answer_fd: int | None) -> None:
    """Feed the records to the models. Without --strict behind the program (``_behind``: "idle"): on a
    machine whose cores the program keeps busy, glshare's checks wait rather than slow its frames
    (the chunks wait in memory meanwhile); under --strict at the program's, which waits for each answer."""
    start_cpu = time.thread_time_ns()
    if answer_fd is None:
        _behind("idle")
    pending = b""
    try:
        while True:
            chunk = chunks.get()
            if chunk is None:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                answer = recorder.feed_line(line)
                if answer is not None and answer_fd is not None:
                    try:
                        os.write(answer_fd, answer)
                    except OSError:  # the program closed its end: it takes the driver's answer
                        answer_fd = None
        if pending.strip():
            recorder.feed_line(pending)
    finally:
        recorder.reader_cpu_ns += time.thread_time_ns() - start_cpu


def channel() -> tuple[int, int]:
    """(read end, write end) of the records' channel: a SOCK_SEQPACKET socket pair, where each
    record is one message the libraries send with MSG_NOSIGNAL (one system call a record; on a pipe
    they guard each write against SIGPIPE with two more), else a pipe. Either way one record is
    one atomic write (``wire``), and the buffer is asked as large as the system lets a user have."""
    import socket

    try:
        reader, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        read_fd, write_fd = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(read_fd, F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # the system's limit for a user: the default size
        return read_fd, write_fd
    for sock, option in ((reader, socket.SO_RCVBUF), (writer, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, PIPE_BYTES)
        except OSError:
            pass
    reader.shutdown(socket.SHUT_WR)  # glshare only reads it: the program's writes are the only ones
    return reader.detach(), writer.detach()


@dataclass
class Outcome:
    argv: list[str]
    pid: int
    returncode: int  # as Popen says: negative for a signal
    recorder: Recorder
    libs: dict[str, str | None]
    strict: bool
    wall_ns: int

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None

    @property
    def exit_status(self) -> int:
        """The program's status, as a shell gives it: 128 + N for a signal N."""
        return 128 + self.signal if self.signal is not None else self.returncode


def run(argv: list[str], libs: dict[str, str | None], strict: bool = False,
        recorder: Recorder | None = None) -> Outcome:
    """Run ``argv`` (its program found by ``find_program``) recorded; returns when it ended and its
    records are read. ``recorder``: the one to feed (``--panel`` reads it while the program runs)."""
    from app.signals import SIGNALS

    read_fd, write_fd = channel()
    verdict_r = verdict_w = None
    if strict:
        verdict_r, verdict_w = os.pipe()
    env = environment(os.environ, libs, write_fd, verdict_r)
    recorder, stop = recorder if recorder is not None else Recorder(), threading.Event()
    started = time.monotonic_ns()
    try:
        child = subprocess.Popen(argv, env=env, pass_fds=tuple(fd for fd in (write_fd, verdict_r) if fd is not None))
    except OSError as exc:
        for fd in (read_fd, write_fd, verdict_r, verdict_w):
            if fd is not None:
                os.close(fd)
        raise UsageError(f"glshare attach: {argv[0]}: {exc.strerror or exc}") from None
    os.close(write_fd)
    if verdict_r is not None:
        os.close(verdict_r)
    # glshare's own objects so far (its modules, the program's argv...) live to the end: the collector
    # leaves them out of every pass, which would otherwise walk them again each time the records'
    # objects (every record a dict, kept by the model) trigger one on the checking thread
    gc.freeze()
    chunks: queue.SimpleQueue = queue.SimpleQueue()
    reader = threading.Thread(target=_read, args=(read_fd, chunks, recorder, stop, 0.0 if strict else READ_PAUSE_S),
                              name="glshare attach reader", daemon=True)
    checker = threading.Thread(target=_check, args=(chunks, recorder, verdict_w), name="glshare attach checks",
                               daemon=True)
    reader.start()
    checker.start()
    forwarded = 0
    while True:
        try:
            child.wait(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            pass
        for signum in SIGNALS.received[forwarded:]:
            if signum in FORWARDED:
                child.send_signal(signum)
        forwarded = len(SIGNALS.received)
    reader.join(READ_AFTER_EXIT_S)
    stop.set()
    reader.join()
    checker.join()
    if verdict_w is not None:
        os.close(verdict_w)
    return Outcome(list(argv), child.pid, child.returncode, recorder, libs, strict, time.monotonic_ns() - started)
