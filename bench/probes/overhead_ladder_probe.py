"""Probe: where glshare's overhead over the bare loop goes, one piece taken off at a time. Not part of
the package; run from a project root:

    python3 bench/probes/overhead_ladder_probe.py [scene size backend frames]   # particles 1024 host_mapped 1500

Rungs, each cumulative on the one before, measured as overhead_pairs_probe.py measures (glshare's
frame against the bare loop's, pair by pair, main-thread CPU; ATTR=wall for wall time), in rounds
that cycle through the rungs twice in one process (the host drifts less within a cycle):

    full         glshare's frame as it runs
    -validator   the backend's spec checks bypassed (``bypass_validation``, the hazard lab's switch)
    -tracker     the ownership tracker's four transitions made no-ops
    -timing      no frame timed (no CL stamps read, no GL timer queries, no untimed frame's events)
    -step        the scheduler's run_frame called directly, not through Session.step

What is left at the last rung is the scheduler's own structure: the record, the phases, the owner
samples, the sync mode's wrappers, the history. Measurement only: nothing here is glshare's code path.
"""
import os
import statistics
import sys

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())
from app.bench import python_reference_us  # noqa: E402
from app.bench.loops import BareLoop, glshare_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402
from bench.probes._args import scene_args  # noqa: E402

scene, size_arg, size, backend_name, frames = scene_args("1024", "host_mapped", 1500)
attr = os.environ.get("ATTR", "thread")
RUNGS = ("full", "-validator", "-tracker", "-timing", "-step")


def _noop(*_a, **_k) -> None:
    return None


cfg = RunConfig(scene=scene, backend=backend_name, sync="finish", headless=True, size=size, panel=False,
                overlay=False)
with Run(cfg) as rt:
    session, bare, records = rt.session, BareLoop(rt), []
    sched, backend = session.scheduler, session.backend
    tracker = backend.tracker
    interval = sched.stamps_interval_ns
    step = session.step

    def direct_step():
        rec = sched.run_frame(session.frame, session.render_target)
        session.frame += 1
        return rec

    def set_rung(k: int) -> None:
        backend.bypass_validation = k >= 1
        for name in ("acquired", "released", "cl_use", "gl_use"):
            if k >= 2:
                setattr(tracker, name, _noop)
            else:
                vars(tracker).pop(name, None)
        sched.stamps_interval_ns = 10 ** 15 if k >= 3 else interval
        session.step = direct_step if k >= 4 else step

    def measure() -> tuple[float, float, float]:
        g, b = [], []
        for j in range(frames):
            if j % 2:
                b.append(getattr(bare.frame(), attr) / 1e3)
                g.append(getattr(glshare_frame(rt, records), attr) / 1e3)
            else:
                g.append(getattr(glshare_frame(rt, records), attr) / 1e3)
                b.append(getattr(bare.frame(), attr) / 1e3)
            del records[:-100]
        d = sorted(x - y for x, y in zip(g, b))
        return d[len(d) // 4], statistics.median(d), d[3 * len(d) // 4]

    print(f"# the host's Python reference (app/bench PYTHON_REF_WHAT): {python_reference_us()} us", flush=True)
    print(f"# {scene} {size_arg} {backend_name} finish, {frames} pairs a round, {attr}", flush=True)
    for _ in range(200):
        glshare_frame(rt, records)
        bare.frame()
    sched.harvest()
    # whether the validator's remembered verdicts hold across frames here (a full check is its rules run again)
    validator = backend.validator
    full_checks, real_check, generation = [0], validator.check, validator.registry.generation

    def counted(*a, **k):
        full_checks[0] += 1
        return real_check(*a, **k)

    validator.check = counted
    for _ in range(100):
        glshare_frame(rt, records)
        bare.frame()
    del validator.check
    print(f"# 100 frames: {full_checks[0]} full validator checks, registry generation moved "
          f"{validator.registry.generation - generation}", flush=True)
    results: dict[str, list[float]] = {r: [] for r in RUNGS}
    for cycle in range(2):
        for k, rung in enumerate(RUNGS):
            set_rung(k)
            sched.time_next_frame()  # each rung starts with a timed frame, as a run does
            q1, med, q3 = measure()
            results[rung].append(med)
            print(f"cycle {cycle} {rung:<11} overhead {med:6.1f} us (iqr {q1:.1f}..{q3:.1f})", flush=True)
    set_rung(0)
    prev = None
    for rung in RUNGS:
        m = statistics.mean(results[rung])
        print(f"{rung:<11} mean {m:6.1f} us" + (f"  (this rung took off {prev - m:5.1f})" if prev is not None else ""))
        prev = m
    bare.close()
