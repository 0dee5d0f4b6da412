"""Probe: how fast each CPU core of this host runs glshare's Python (app/bench's Python reference,
``PYTHON_REF_WHAT``), the process pinned to one core at a time, in two passes. Not part of the
package; run from a project root:

    python3 bench/probes/host_cores_probe.py

On the lent H200 machines the reference read 0.49 us in one process and 0.85-1.09 us in others
minutes apart (2026-12-03): this says whether that is the core a process lands on.
"""
import os
import sys

sys.path.insert(0, os.getcwd())
from app.bench import python_reference_us  # noqa: E402

cores = sorted(os.sched_getaffinity(0))
with open("/proc/self/stat") as f:
    started_on = int(f.read().rsplit(")", 1)[1].split()[36])  # field 39: the CPU it last ran on
print(f"# started on core {started_on}; unpinned: {python_reference_us(1000)} us", flush=True)
by_core: dict[int, list[float]] = {c: [] for c in cores}
for _ in range(2):
    for c in cores:
        os.sched_setaffinity(0, {c})
        by_core[c].append(python_reference_us(1000))
os.sched_setaffinity(0, set(cores))
for c in cores:
    print(f"core {c:3d}: {' '.join(f'{v:.3f}' for v in by_core[c])} us", flush=True)
best = {c: min(v) for c, v in by_core.items()}
fast, slow = min(best, key=best.get), max(best, key=best.get)
print(f"# fastest {best[fast]:.3f} us (core {fast}), slowest {best[slow]:.3f} us (core {slow}) over {len(cores)} cores")
print(f"FASTEST={fast} SLOWEST={slow}")  # (for a shell: eval "$(... | tail -1)")
