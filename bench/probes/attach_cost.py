"""Probe: what ``glshare attach`` costs a program's frame. One program, the image scene's workload
(../shared/WORKLOADS.md: the Julia set, 512x512, here glshare's own ``run --scene image``, headless,
which times its own frames), run alternately bare and attached (the CL layer, the GL preload
library and the Python site hook, records read by glshare) in the same process of this probe, so
that both see the same machine; the ratio of the median frame (present to present, the program's
own report) attached / bare, per pair and over all pairs; and the ratio of the CPU time the whole run
took (user + system of every process: the program, and attached, glshare's reader too, start-up
included), which a loaded machine disturbs less than the frame's wall time. Not part of the package; run from a
project root, with the attach libraries built (make setup):

    python3 bench/probes/attach_cost.py [pairs frames backend]    # 3 300 host_copy
    ATTACH_OPTIONS="--no-gl" python3 bench/probes/attach_cost.py   # one recorder left out: whose cost is it

Measurement only: prints one line per run and the ratios.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.getcwd()


def program(report: str, frames: int, backend: str) -> list[str]:
    return [sys.executable, "-m", "app", "run", "--scene", "image", "--headless", "--frames", str(frames),
            "--backend", backend, "--no-overlay", "--quiet", "--report", report, "--screenshot", os.devnull]


def one(attached: bool, frames: int, backend: str, folder: str, k: int) -> dict:
    report = os.path.join(folder, f"{'attached' if attached else 'bare'}-{k}.json")
    argv = program(report, frames, backend)
    if attached:
        argv = [sys.executable, "-m", "app", "attach", "--quiet", *os.environ.get("ATTACH_OPTIONS", "").split(),
                "--report", report + ".attach.json", "--", *argv]
    env = {**os.environ, "PYTHONPATH": ROOT}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode:
        raise SystemExit(f"{'attached' if attached else 'bare'} run failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    with open(report) as f:
        r = json.load(f)
    out = {"frame_us": r["phases_us"]["frame"]["median"], "work_us": r["phases_us"]["work"]["median"],
           "frames": r["frames"], "cpu_s": cpu_s}
    if attached:
        with open(report + ".attach.json") as f:
            a = json.load(f)
        out["records"] = a["cost"]["records"]
        out["findings"] = len(a["findings"])
    return out


def main() -> None:
    argv = sys.argv[1:]
    pairs = int(argv[0]) if argv else 3
    frames = int(argv[1]) if len(argv) > 1 else 300
    backend = argv[2] if len(argv) > 2 else "host_copy"
    ratios, bare_all, att_all, cpu_ratios = [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for k in range(pairs):
            order = (False, True) if k % 2 == 0 else (True, False)  # alternate who goes first
            got = {a: one(a, frames, backend, folder, k) for a in order}
            bare, att = got[False], got[True]
            ratios.append(att["frame_us"] / bare["frame_us"])
            cpu_ratios.append(att["cpu_s"] / bare["cpu_s"])
            bare_all.append(bare["frame_us"])
            att_all.append(att["frame_us"])
            print(f"pair {k}: bare frame {bare['frame_us']:.1f} us (work {bare['work_us']:.1f}), attached "
                  f"{att['frame_us']:.1f} us (work {att['work_us']:.1f}; {att['records']} records, "
                  f"{att['findings']} findings): ratio {ratios[-1]:.3f}; CPU {bare['cpu_s']:.2f} s -> {att['cpu_s']:.2f} s, "
                  f"ratio {cpu_ratios[-1]:.3f}", flush=True)
    print(f"image {frames} frames, backend {backend}, {pairs} pairs: median frame bare "
          f"{statistics.median(bare_all):.1f} us, attached {statistics.median(att_all):.1f} us; ratio of the medians "
          f"{statistics.median(att_all) / statistics.median(bare_all):.3f}, median of the pair ratios "
          f"{statistics.median(ratios):.3f}; median CPU ratio of the runs {statistics.median(cpu_ratios):.3f}")


if __name__ == "__main__":
    main()
