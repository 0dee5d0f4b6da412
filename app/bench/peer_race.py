"""glshare's frame rate in a window against a classic sample's, in interleaved rounds.

The samples are built outside the repository (../shared/PEERS.md); this module only runs and times
them. Each round runs glshare and every peer once, each in a fresh process, in an order rotated
every round; each program draws ``--frames`` frames and writes one CLOCK_MONOTONIC timestamp (ns)
per presented frame, one per line, to the file named by the environment variable
``PEER_STAMPS`` (stopping after ``PEER_FRAMES`` frames). glshare does it through ``frames`` below
(its loop exactly as ``glshare run`` ticks it, a timestamp after each present); a C sample through
an LD_PRELOAD shim around glfwSwapBuffers; a Python sample by two added lines. The frame rate of a
run is taken over frames [F/5, F), so start-up is left out; start-up (process start to the first
presented frame) is reported beside it. Each round's ratio is glshare's frame rate over the
peer's; the race reports the median of the rounds' ratios and their range::

    xvfb-run -a -s "-screen 0 2304x2304x24" python -m app.bench.peer_race race --name juliagl-512 \\
        --glshare "--scene image --size 512x512" --peer juliagl="/tmp/peers/run-juliagl 512" \\
        --frames 400 --rounds 7 --json bench/results/NAME.json

Needs a display; without one it says so in one line and exits 2.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def frames(argv: list[str]) -> int:
    """``frames``: glshare's window loop for ``--frames`` ticks, timestamps to $PEER_STAMPS."""
    p = argparse.ArgumentParser(prog="python -m app.bench.peer_race frames")
    p.add_argument("--scene", default="image")
    p.add_argument("--size")
    p.add_argument("--backend", default="auto")
    p.add_argument("--sync", default="finish")
    p.add_argument("--no-panel", action="store_true")
    p.add_argument("--no-overlay", action="store_true")
    p.add_argument("--view", default="sample", choices=("sample", "side"), help="particles: the start view")
    p.add_argument("--frames", type=int, default=int(os.environ.get("PEER_FRAMES", "300")))
    args = p.parse_args(argv)
    from app.window import select_platform

    select_platform(False)
    from app.config import RunConfig
    from app.run import Run
    from app.scenes import scene_class

    cfg = RunConfig(scene=args.scene, size=scene_class(args.scene).parse_size(args.size), backend=args.backend,
                    sync=args.sync, headless=False, panel=not args.no_panel, overlay=not args.no_overlay,
                    view=args.view, frames=10**9)
    stamps = []
    with Run(cfg) as rt:
        for _ in range(args.frames):
            rt.tick()
            stamps.append(time.monotonic_ns())
        errors = sum(len(r.errors) for r in rt.session.history.records)
        backend = rt.session.backend_name
    Path(os.environ["PEER_STAMPS"]).write_text("\n".join(map(str, stamps)) + "\n")
    print(json.dumps({"backend": backend, "frame_errors": errors}))
    return 0


def _run_one(cmd: list[str], n: int, env_extra: dict | None = None, timeout: float = 600) -> dict:
    """Run ``cmd`` until it wrote ``n`` timestamps; its frame rate over [n/5, n) and its start-up."""
    with tempfile.TemporaryDirectory(prefix="glshare-race-") as tmp:
        stamps_path = Path(tmp) / "stamps.txt"
        env = {**os.environ, "PEER_FRAMES": str(n), "PEER_STAMPS": str(stamps_path), **(env_extra or {})}
        start = time.monotonic_ns()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if not stamps_path.exists():
            raise RuntimeError(f"{shlex.join(cmd)} wrote no timestamps (exit {proc.returncode}): "
                               f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        t = np.array([int(x) for x in stamps_path.read_text().split()], dtype=np.int64)
    if len(t) < n:
        raise RuntimeError(f"{shlex.join(cmd)} presented {len(t)} of {n} frames")
    first = n // 5
    span = t[-1] - t[first]
    periods = np.diff(t[first:]) / 1e6
    out = {"fps": round(float((len(t) - 1 - first) / (span / 1e9)), 3), "frames": int(len(t)),
           "frame_ms_median": round(float(np.median(periods)), 3),
           "frame_ms_p95": round(float(np.percentile(periods, 95)), 3),
           "startup_s": round(float((t[0] - start) / 1e9), 3)}
    info = proc.stdout.strip().splitlines()
    if info and info[-1].startswith("{"):
        out.update(json.loads(info[-1]))
    return out


def race(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m app.bench.peer_race race")
    p.add_argument("--name", required=True)
    p.add_argument("--glshare", default="", help="arguments of `frames` (quoted)")
    p.add_argument("--peer", action="append", default=[], help="NAME=COMMAND (quoted), repeatable")
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if not os.environ.get("DISPLAY"):
        print("glshare: the race runs in windows: it needs a display (run it under xvfb-run -a)", file=sys.stderr)
        return 2
    if args.rounds < 1 or args.frames < 10 or not args.peer:
        print("glshare: need --peer, --rounds >= 1 and --frames >= 10", file=sys.stderr)
        return 2
    programs = {"glshare": [sys.executable, "-m", "app.bench.peer_race", "frames", *shlex.split(args.glshare)]}
    for spec in args.peer:
        name, _, cmd = spec.partition("=")
        programs[name] = shlex.split(cmd)
    names = list(programs)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    loads = []
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        loads.append(round(os.getloadavg()[0], 2))
        for name in order:
            runs[name].append(_run_one(programs[name], args.frames))
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{n} {runs[n][-1]['fps']:.2f} fps" for n in names),
              file=sys.stderr, flush=True)
    result = {"name": args.name, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "frames": args.frames,
              "rounds": args.rounds, "order": "rotated each round", "glshare_args": args.glshare,
              "peers": {n: shlex.join(programs[n]) for n in names[1:]}, "load_1min_at_round_start": loads,
              "runs": runs, "ratios": {}}
    for peer in names[1:]:
        ratios = np.array([g["fps"] / q["fps"] for g, q in zip(runs["glshare"], runs[peer])])
        result["ratios"][peer] = {
            "glshare_over_peer_fps_median": round(float(np.median(ratios)), 3),
            "range": [round(float(ratios.min()), 3), round(float(ratios.max()), 3)],
            "per_round": [round(float(x), 3) for x in ratios],
            "glshare_fps_median": round(float(np.median([g["fps"] for g in runs["glshare"]])), 3),
            "peer_fps_median": round(float(np.median([q["fps"] for q in runs[peer]])), 3),
            "glshare_startup_s_median": round(float(np.median([g["startup_s"] for g in runs["glshare"]])), 3),
            "peer_startup_s_median": round(float(np.median([q["startup_s"] for q in runs[peer]])), 3)}
    text = json.dumps(result, indent=1)
    if args.json:
        from app.bench import machine_facts

        result.update(machine_facts())
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"glshare: wrote {args.json}")
    else:
        print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("frames", "race"):
        print("usage: python -m app.bench.peer_race {frames,race} ...", file=sys.stderr)
        return 2
    return frames(argv[1:]) if argv[0] == "frames" else race(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
