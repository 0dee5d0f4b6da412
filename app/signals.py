"""The signals that end a run (SIGINT, SIGTERM, SIGHUP, SIGQUIT), held from the first line of
``glshare run`` to its last output.

A signal sets a flag and nothing else: no KeyboardInterrupt is raised in the middle of an import,
a compile or a write (a native module's initialisation interrupted so aborts the process). The
run reads the flag at each frame boundary (before the first frame too) and ends there; every
output is then attempted and each one said. A second signal while the outputs are written says
so and waits for them; a third ends the process at once, saying which outputs it lost, with the
first signal's status (128 + its number).

Native libraries may put their own handlers in front: LLVM (loaded by PoCL with the OpenCL
drivers) installs one for each of these signals which, for SIGINT, SIGTERM and SIGHUP, restores
the handlers that were there before and raises the signal again, and swallows SIGQUIT.
``reassert`` puts glshare's back after the drivers are loaded and then at times during the run.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

# signal -> how the run's Stop names it, and the words said about it
ENDING: dict[int, tuple[str, str]] = {
    signal.SIGINT: ("interrupt", "interrupted (Ctrl-C)"),
    signal.SIGTERM: ("terminate", "terminated (SIGTERM)"),
    signal.SIGHUP: ("hangup", "the terminal hung up (SIGHUP)"),
    signal.SIGQUIT: ("sigquit", "quit by SIGQUIT"),
}
HOWS = tuple(how for how, _ in ENDING.values())


def exit_code(how: str) -> int:
    """The status of a run ended by the signal ``how`` names: 128 + the signal's number."""
    for signum, (name, _) in ENDING.items():
        if name == how:
            return 128 + int(signum)
    raise KeyError(how)


def message(how: str) -> str:
    return next(words for name, words in ENDING.values() if name == how)


def _say(line: str) -> None:
    """One line on stderr from a handler: one os.write, no buffered stream in between."""
    try:
        os.write(2, (line + "\n").encode())
    except OSError:
        pass


class Deferred:
    """The handlers and what they received. ``pending`` names the outputs not yet written, for the
    line a second or third signal says."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.pending: list[str] = []
        self.writing = False  # the outputs are being written (the run has ended)
        self._previous: dict[int, object] = {}  # the signals glshare handles -> their handlers before
        self._installed = False

    @property
    def installed(self) -> bool:
        return self._installed

    @property
    def how(self) -> str | None:
        """How the first signal received names the stop (``interrupt`` ...), or None."""
        return ENDING[self.received[0]][0] if self.received else None

    def install(self) -> bool:
        """glshare's handlers for the four signals (the main thread only: elsewhere Python cannot set
        them; False then). A signal ignored when the process started stays ignored (``nohup``, a
        background job of a shell without job control), as POSIX shells do. A second call changes
        nothing."""
        if threading.current_thread() is not threading.main_thread():
            return False
        if not self._installed:
            for signum in ENDING:
                if signal.getsignal(signum) != signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handler)
            self._installed = True
        return True

    def reassert(self) -> None:
        """glshare's handlers again, in front of any a native library installed since."""
        if threading.current_thread() is threading.main_thread():
            for signum in self._previous:
                signal.signal(signum, self._handler)

    def restore(self) -> None:
        """The handlers that were there before ``install``; what was received is forgotten."""
        previous, self._previous, self._installed = self._previous, {}, False
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
        self.received.clear()
        self.pending.clear()
        self.writing = False

    @contextlib.contextmanager
    def held(self):
        """The handlers for the block: installed here where no one installed them before (and then
        restored after it), left as they are where ``glshare run`` holds them already."""
        own = not self.installed and self.install()
        self.reassert()
        try:
            yield self
        finally:
            if own:
                self.restore()

    def settle(self) -> None:
        """The run's outputs are written and said: the ending signals are ignored to the exit (Python's
        finalization would otherwise put the default dispositions back, and a late signal would kill
        a process whose work is done)."""
        if threading.current_thread() is threading.main_thread():
            for signum in self._previous:
                signal.signal(signum, signal.SIG_IGN)

    def _handler(self, signum, _frame) -> None:
        self.received.append(signum)
        count = len(self.received)
        if count == 1:
            return
        name = signal.Signals(signum).name
        pending = ", ".join(self.pending)
        if count == 2:
            if self.writing and not pending:
                _say(f"glshare: {name} again: the outputs are written; ending")
            elif self.writing:
                _say(f"glshare: {name} again: writing the outputs first ({pending}); "
                     "a third signal ends now without them")
            else:
                _say(f"glshare: {name} again: the run ends at this frame and writes its outputs first; "
                     "a third signal ends now without them")
            return
        lost = pending or ("none: every output was written" if self.writing else "none: no output was due yet")
        _say(f"glshare: {name} a third time: ending now; outputs not written: {lost}")
        os._exit(exit_code(ENDING[self.received[0]][0]))


SIGNALS = Deferred()  # the process's: signal handlers are per process
