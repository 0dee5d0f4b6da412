"""Where a frame's failed release leaves the CL queue under each sync mode (the H200's hang of
tests/contract/test_steady_frame.py's release/semaphore case at 6d28abf: clFinish never returned).

    python3 bench/probes/release_failure_probe.py [sync] [steady 0/1] [drain_each 0/1] [backend]

Runs the fountain (4,096 particles) headless for 10 frames; the release of frame 4 raises before it
reaches the driver, as the test makes it. ``drain_each``: after every frame, clFinish in a thread
with a 5 s limit, to find the first frame after which the queue no longer drains. At the end the
status of every event still on the records, then one clFinish with the same limit."""
from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from app.config import RunConfig  # noqa: E402
from app.errors import ClError  # noqa: E402
from app.run import Run  # noqa: E402
from app.window.egl_headless import EglSurface  # noqa: E402

STATUS = {0: "complete", 1: "running", 2: "submitted", 3: "queued"}


def drains(queue, limit: float = 5.0) -> bool:
    done = threading.Event()
    threading.Thread(target=lambda: (queue.finish(), done.set()), daemon=True).start()
    return done.wait(limit)


def main() -> None:
    sync = sys.argv[1] if len(sys.argv) > 1 else "semaphore"
    steady = sys.argv[2] != "0" if len(sys.argv) > 2 else True
    drain_each = len(sys.argv) > 3 and sys.argv[3] == "1"
    backend = sys.argv[4] if len(sys.argv) > 4 else "external_memory"
    cfg = RunConfig(headless=True, overlay=False, frames=10_000, seed=7, scene="particles", size=4096,
                    backend=backend, sync=sync, stamps_ms=1000.0)
    surface = EglSurface((96, 72))
    rt = Run(cfg, surface=surface).__enter__()
    sched, be = rt.session.scheduler, rt.session.backend
    sched.steady = steady
    print(f"# {sync} steady={steady} drain_each={drain_each} {backend}", flush=True)
    for i in range(10):
        if i == 4:
            real = be._enqueue_release

            def once(*args, real=real, **kwargs):
                be._enqueue_release = real
                raise ClError(-5, where="probe release")
            be._enqueue_release = once
        rec = rt.tick()
        owners = [o for _, _, o in rec.owners]
        print(f"frame {i}: errors {[e.where for e in rec.errors]} hazards {[h.case for h in rec.hazards]} "
              f"owners {owners} waits {[w[0] for w in rec.waits]}", flush=True)
        if drain_each and not drains(be.queue):
            print(f"frame {i}: the CL queue does not drain in 5 s", flush=True)
            os._exit(3)
    for rec in sched.profiles.pending:
        for name, ev in rec.events.items():
            print(f"  frame {rec.index} {name}: {STATUS.get(ev.command_execution_status, ev.command_execution_status)}",
                  flush=True)
    ok = drains(be.queue)
    print("the CL queue drains" if ok else "the CL queue does not drain in 5 s", flush=True)
    print("tracker:", {k: v for k, v in be.tracker.counts.items()}, flush=True)
    os._exit(0 if ok else 3)


if __name__ == "__main__":
    main()
