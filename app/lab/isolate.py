"""The error lab's driver calls in a child process, under a watchdog.

A driver may hang in a call the lab makes on purpose (NVIDIA's driver 580 can fail to return from
the gl_sharing family's calls in a window, and a process stuck there does not die on SIGABRT) or
crash the process. Where the lab would call a driver, ``glshare errors`` runs the lab in a child
(``python -m app.lab.isolate``) that says on standard output which case it is in before each
driver call and when the call came back (``LAB CASE key`` / ``LAB DONE key``; the phases between
cases as ``LAB PHASE name``), then prints the results (``LAB RESULT json``). The parent kills the
child with SIGKILL (which a process stuck in a driver cannot ignore) when a case has not come back
within ``CASE_BOUND_S`` (a phase: ``PHASE_BOUND_S`` since its last line); the case's driver answer is
then "hung", or "crashed (SIGNAME)" where the child died in it, and a new child runs the lab again
with those answers given (it does not call the driver for them) and goes on with the next cases.
Where no driver is called (PoCL, Intel's CPU runtime on gl_sharing) the lab runs in-process.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

CASE_BOUND_S = 20.0  # a driver case (its call, the valid calls around it, the queue's drain)
PHASE_BOUND_S = 60.0  # set-up, a family's objects, the hazards: from one line to the next
MAX_HUNG = 3  # after this many hung cases no further driver call is made (each costs a bound and a child)
PREFIX = "LAB "


HAZARDS = "the hazards"  # the phase run_lab names before its hazards (they drive the backend's own calls)


class LabChildFailed(RuntimeError):
    """The child hung or died outside a driver case (its set-up, the hazards): no case to blame."""

    def __init__(self, message: str, phase: str = "") -> None:
        super().__init__(message)
        self.phase = phase


class Watch:
    """The child's side: says where it is, and gives the answers an earlier child could not."""

    def __init__(self, answered: dict | None = None, out=None) -> None:
        answered = answered or {}
        self.answers: dict[str, list] = answered.get("answers", {})  # key -> [outcome, note]
        self.stop: str | None = answered.get("stop")  # why no further driver call is made
        self.skip_hazards: str | None = answered.get("skip_hazards")  # why the hazards are not run
        self.out = out or sys.stdout

    def _say(self, text: str) -> None:
        self.out.write(PREFIX + text + "\n")
        self.out.flush()

    def preset(self, key: str) -> tuple[str | None, str] | None:
        """The answer an earlier child left for ``key``; (None, why) where no call may be made now."""
        got = self.answers.get(key)
        if got:
            return got[0], got[1]
        return (None, f"not called: {self.stop}") if self.stop else None

    def begin(self, key: str) -> None:
        self._say(f"CASE {key}")

    def end(self, key: str) -> None:
        self._say(f"DONE {key}")

    def phase(self, name: str) -> None:
        self._say(f"PHASE {name}")


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def run_isolated(command: list[str], *, case_bound: float = CASE_BOUND_S, phase_bound: float = PHASE_BOUND_S,
                 env: dict | None = None) -> dict:
    """Run the lab's child ``command`` (``--answered FILE`` is added) until one finishes; returns its
    results. Each child killed or dead in a case answers that case for the next one."""
    answers: dict[str, list] = {}
    given: dict = {"answers": answers, "stop": None, "skip_hazards": None}
    with tempfile.TemporaryDirectory(prefix="glshare-lab-") as tmp:
        path = os.path.join(tmp, "answered.json")
        while True:
            with open(path, "w") as f:
                json.dump(given, f)
            try:
                outcome = _one_child([*command, "--answered", path], case_bound, phase_bound, env)
            except LabChildFailed as exc:
                if exc.phase != HAZARDS or given["skip_hazards"]:
                    raise
                given["skip_hazards"] = f"not run: {exc}"  # the driver's column stays; the hazards go
                continue
            if isinstance(outcome, dict):
                return outcome
            case, answer = outcome
            if case in answers:  # a preset answer is never called again: this cannot repeat
                raise LabChildFailed(f"the error lab's child failed twice in {case}")
            answers[case] = answer
            hung = [k for k, (what, _) in answers.items() if what == "hung"]
            if len(hung) >= MAX_HUNG:
                given["stop"] = f"the driver hung in {len(hung)} case(s) before ({', '.join(hung)})"


def _one_child(command, case_bound, phase_bound, env):
    """One child: its results (a dict), or (the case it hung or died in, [outcome, note])."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf, case, phase = b"", None, "its set-up"
    deadline = time.monotonic() + phase_bound
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                if time.monotonic() < deadline:
                    continue
                proc.kill()  # SIGKILL: a process stuck in a driver ignores SIGTERM and SIGABRT
                proc.wait()
                bound = case_bound if case else phase_bound
                if case is None:
                    raise LabChildFailed(f"the error lab's child hung in {phase} (killed after {bound:.0f} s)", phase)
                return case, ["hung", f"hung: no answer within {bound:.0f} s, the child was killed (SIGKILL)"]
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:  # the child ended
                rc = proc.wait()
                what = f"crashed ({_signal_name(rc)})" if rc < 0 else f"crashed (exit status {rc})"
                if case is None:
                    raise LabChildFailed(f"the error lab's child {what.replace('crashed', 'died')} in {phase}", phase)
                return case, [what, f"{what}: the child died in this call"]
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace")
                at = line.find(PREFIX)  # (a driver's own unterminated output may come first on the line)
                if at < 0:
                    continue
                kind, _, rest = line[at + len(PREFIX):].partition(" ")
                if kind == "RESULT":  # printed before the child's teardown, which may hang in a driver too
                    results = json.loads(rest)
                    try:
                        proc.wait(timeout=phase_bound)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                        results["teardown_note"] = (f"the lab's child hung in its teardown after its results "
                                                    f"(killed after {phase_bound:.0f} s)")
                    return results
                if kind == "CASE":
                    case, deadline = rest, time.monotonic() + case_bound
                elif kind in ("DONE", "PHASE"):
                    if kind == "PHASE":
                        phase = rest
                    case, deadline = None, time.monotonic() + phase_bound
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def child_command(backend: str, window: bool, cl_device: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "app.lab.isolate", "--backend", backend]
    return cmd + (["--window"] if window else []) + (["--cl-device", cl_device] if cl_device else [])


def child_main(argv: list[str] | None = None, entry=None) -> int:
    """The child: the lab on ``--backend`` with a ``Watch`` (``entry``: the driver's entry points,
    for the tests' stand-ins; None: the lab decides, as in-process)."""
    p = argparse.ArgumentParser(prog="python -m app.lab.isolate")
    p.add_argument("--backend", required=True)
    p.add_argument("--window", action="store_true")
    p.add_argument("--cl-device")
    p.add_argument("--answered")
    args = p.parse_args(argv)
    from app.window import select_platform

    select_platform(not args.window)
    import contextlib

    from app.cl.device import select_device
    from app.lab.lab import open_lab_backend, run_lab
    from app.window import open_surface

    answered = {}
    if args.answered:
        with open(args.answered) as f:
            answered = json.load(f)
    watch = Watch(answered)
    watch.phase("its set-up")
    with contextlib.ExitStack() as stack:
        surface = open_surface(not args.window, (64, 64), title="glshare errors")
        stack.callback(surface.close)
        backend = open_lab_backend(select_device(args.cl_device), surface, args.backend)
        stack.callback(backend.close)
        results = run_lab(backend, entry=entry, watch=watch)
        watch._say("RESULT " + json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
