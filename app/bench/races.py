"""Race rows: glshare's frame against a baseline measured in the same run, each row one ratio.

- ``bare loop``: glshare's frame / the hand-written loop's frame next to it (app/bench/loops.py),
  per finish cell, the median of the frame pairs' ratios and their interquartile range.
- ``memcpy floor``: host_copy's copies (acquire + release, the kernel finished first) / numpy
  copying the same bytes CL -> host -> GL, per host_copy finish cell.
- ``device-time limit``: glshare's frame / (the kernel's CL device time + the scene's GL pass time
  of the same frame), per cell where both were measured (``cells.device_limit``).
- ``zero-copy vs host_copy minus its copies``: the zero-copy backend's frame / host_copy's frame
  without its copies, both sessions open at once and timed frame by frame in turn, round by round
  (``zero_copy_race``): <= 1 means the zero-copy frame is no slower than host_copy's would be if
  its copies cost nothing. host_copy's frame without its copies is measured: the same session's
  frame with every call made but the copies (``HostCopy.dry_copies``); the hand-over's validation,
  tracking and sync, which the zero-copy backend pays as well, stay in both frames. Beside it, the
  older estimate: host_copy's frame - the time inside its copy calls timed alone (its ``copy_ns``,
  the kernel finished first), which counts a blocking copy's own wake-up and wait that the frame
  overlaps with the kernel, so it reads the zero-copy frame against too small a baseline
  (bench/results/README.md, 'Sixteenth session').
- ``julia kernel``: the reference formulation's device time / glshare's (app/bench/kernel_race.py).

Each row: the race, where it was measured, glshare's and the baseline's time, the ratio, its spread,
and what the ratio means. ``glshare bench`` prints them and writes them under ``races``.
"""
from __future__ import annotations

import math

import numpy as np

from app.bench.loops import glshare_copy_frame, glshare_dry_copy_frame, glshare_finished_frame, glshare_frame
from app.bench.sweep import Sweep, size_label
from app.config import RunConfig
from app.sharing.backends.host_copy import HostCopy


def _where(c: dict) -> str:
    return f"{c['scene']} {size_label(c['scene'], c['size']) if c['scene'] == 'particles' else c['size']}"


def _row(race: str, where: str, backend: str, glshare_ms, baseline: str, baseline_ms, ratio: float, spread,
         what: str, **extra) -> dict:
    """``ratio`` None: not defined (a baseline of 0); JSON has no infinity."""
    return {"race": race, "at": where, "backend": backend, "glshare_ms": glshare_ms, "baseline": baseline,
            "baseline_ms": baseline_ms, "ratio": None if ratio is None else round(float(ratio), 4), "spread": spread,
            "what": what, **extra}


def race_rows(result: dict) -> list[dict]:
    """Every race row of one run's cells, baselines, zero-copy races and kernel race."""
    rows = []
    for c in result["cells"]:
        if not c.get("frames") or c.get("sync") != "finish":
            continue
        where = _where(c)
        paired = c.get("paired")
        bare = next((b for b in result["baselines"] if b["kind"] == "bare_loop" and b["scene"] == c["scene"]
                     and b["size"] == c["size"] and b["backend"] == c["backend"]), None)
        if paired and bare:
            rows.append(_row("bare loop", where, c["backend"], c["frame_ms"]["median"], "bare loop frame",
                             bare["frame_ms"]["median"], paired["wall_ratio_median"], paired["wall_ratio_iqr"],
                             "glshare's frame / the hand-written loop's frame next to it (median of the pairs; "
                             "spread: their interquartile range)"))
        floor = next((b for b in result["baselines"] if b["kind"] == "memcpy_floor" and b["scene"] == c["scene"]
                      and b["size"] == c["size"] and b["backend"] == c["backend"]), None)
        if "copy" in c and floor:
            copy, fl = c["copy"]["ms"]["median"], floor["ms"]["median"]
            rows.append(_row("memcpy floor", where, c["backend"], copy, "one numpy copy CL -> GL", fl,
                             copy / fl if fl > 0 else None, [c["copy"]["ms"]["p95"], floor["ms"]["p95"]],
                             "host_copy's copy time / the memcpy floor of the same bytes (medians; spread: the "
                             "two p95s)"))
    for c in result["cells"]:
        limit = c.get("device_limit")
        if c.get("frames") and limit and c["sync"] != "finish" and c.get("throughput_ms"):
            # without CPU waits a frame's own time is not the frame: the sustained time is
            rows.append(_row("device-time limit", _where(c), f"{c['backend']} / {c['sync']}", c["throughput_ms"],
                             "CL kernel + GL pass (timer queries)", limit["limit_ms"]["median"],
                             c["throughput_ms"] / max(limit["limit_ms"]["median"], 1e-9), None,
                             "sustained frame (idle to idle) / the median of (CL kernel device time + GL pass time) "
                             "of the frames that have both", frames=limit["frames"]))
        elif c.get("frames") and limit:
            rows.append(_row("device-time limit", _where(c), f"{c['backend']} / {c['sync']}", c["frame_ms"]["median"],
                             "CL kernel + GL pass (timer queries)", limit["limit_ms"]["median"], limit["ratio_median"],
                             limit["ratio_iqr"], limit["what"], frames=limit["frames"]))
            if limit.get("ratio_by_finish") is not None:
                rows.append(_row("device-time limit", _where(c), f"{c['backend']} / {c['sync']}",
                                 c["frame_ms"]["median"], "CL kernel + GL pass (draw alone, glFinish)",
                                 limit["limit_by_finish_ms"], limit["ratio_by_finish"], None,
                                 "frame / (the kernel's median device time + the scene's draw alone timed to "
                                 "glFinish): the GL pass as its wall time, which a software rasterizer's timer "
                                 "queries do not see"))
    for z in result.get("zero_copy_races", []):
        rows.append(_row("zero-copy vs host_copy minus its copies", f"{z['scene']} {z['size']}", z["backend"],
                         z["zero_copy_frame_ms"], "host_copy frame without its copies", z["host_copy_without_copies_ms"],
                         z["ratio_median"], z["ratio_range"], z["what"], rounds=z["rounds"]))
    for k in result.get("kernel_race", []):
        for race in k["races"]:
            rows.append(_row("julia kernel", f"image {k['size']}", race["glshare"], k["device_ms"][race["glshare"]],
                             race["reference"], k["device_ms"][race["reference"]], race["ratio_median"],
                             race["ratio_range"], k["what"], rounds=race["rounds"], same_texels=k["same_texels"]))
    return rows


def zero_copy_race(scene: str, size, zero_copy: str, sweep: Sweep, cl_device: str | None, surface) -> dict:
    """``zero_copy`` and host_copy on the same scene and size, both sessions open at once on
    ``surface`` (no UI), timed frame by frame in turn: each round ``per_round`` quadruples of a
    zero-copy frame, a host_copy frame, a host_copy frame without its copies (each with its GL work
    finished inside its sample and none of the frame before left to wait on:
    ``glshare_finished_frame``, ``glshare_dry_copy_frame``) and a host_copy copy frame
    (``glshare_copy_frame``: the time inside its copy calls, the kernel finished first), the order
    rotating from one to the next, after ``sweep.race_warmup`` untimed frames of each session. Each
    round's ratio: median zero-copy frame / median host_copy frame without its copies; beside it
    (``ratio_minus_copy_calls``) the zero-copy frame / (median host_copy frame - median copy time)."""
    from app.run import Run
    from app.session.session import window_size_for

    def cfg(backend: str) -> RunConfig:
        return RunConfig(scene=scene, backend=backend, sync="finish", headless=True, size=size, cl_device=cl_device,
                         overlay=False)

    surface.resize(*window_size_for(cfg(zero_copy)))
    per_round = max(3, math.ceil(sweep.frames / sweep.rounds))
    rounds = max(3, sweep.rounds + 2)
    z_ms, h_ms, d_ms, c_ms, ratios, minus_calls = [], [], [], [], [], []
    every: dict[str, list[int]] = {"z": [], "h": [], "d": []}  # bytes moved, every frame of every round
    with Run(cfg(zero_copy), surface=surface) as zr, Run(cfg(HostCopy.name), surface=surface) as hr:
        for _ in range(sweep.race_warmup):
            glshare_frame(zr, [])
            glshare_frame(hr, [])
        glshare_copy_frame(hr)
        started = {"z": zr.session.frame, "h": hr.session.frame}
        for r in range(rounds):
            blocks: dict[str, list[int]] = {"z": [], "h": [], "d": [], "c": []}
            records = {"z": [], "h": [], "d": []}
            # one frame of each kind in turn, the order rotating: on a CPU device the frame (llvmpipe's
            # rasterizing threads, the CL driver's) drifts within a second by more than a small copy
            # costs, and blocks of frames would measure that drift as well (bench/results/README.md,
            # 'Fifth session')
            kinds = ("z", "h", "d", "c")
            for i in range(per_round):
                for kind in kinds[(r + i) % 4:] + kinds[:(r + i) % 4]:
                    if kind == "z":
                        blocks[kind].append(glshare_finished_frame(zr, records["z"]).wall)
                    elif kind == "h":
                        blocks[kind].append(glshare_finished_frame(hr, records["h"]).wall)
                    elif kind == "d":
                        blocks[kind].append(glshare_dry_copy_frame(hr, records["d"]).wall)
                    else:  # the copy calls alone: the hand-over's bookkeeping is the zero-copy frame's too
                        blocks[kind].append(glshare_copy_frame(hr).extra["copy_calls"])
            z, h, d, c = (float(np.median(blocks[k])) / 1e6 for k in kinds)
            z_ms.append(z)
            h_ms.append(h)
            d_ms.append(d)
            c_ms.append(c)
            ratios.append(z / d)
            # a round whose copies took the whole host_copy frame has no such ratio (NaN, left out below)
            minus_calls.append(z / (h - c) if h > c else math.nan)
            for k in every:
                every[k].extend(rec.bytes_moved for rec in records[k])
        zr.session.scheduler.finish()
        hr.session.scheduler.finish()
    moved = {k: int(np.median(v)) for k, v in every.items() if v}
    ratios_a = np.array(ratios)
    minus_a = np.array([r for r in minus_calls if not math.isnan(r)])
    return {"scene": scene, "size": size_label(scene, size), "backend": zero_copy, "rounds": rounds,
            "frames_per_round": per_round, "warmup_frames": sweep.race_warmup,
            "first_timed_frame": {zero_copy: started["z"], HostCopy.name: started["h"]},
            "zero_copy_frame_ms": round(float(np.median(z_ms)), 4),
            "host_copy_frame_ms": round(float(np.median(h_ms)), 4), "host_copy_copy_ms": round(float(np.median(c_ms)), 4),
            "host_copy_without_copies_ms": round(float(np.median(d_ms)), 4),
            "host_copy_minus_copy_calls_ms": round(float(np.median(np.array(h_ms) - np.array(c_ms))), 4),
            "ratio_median": round(float(np.median(ratios_a)), 4),
            "ratio_range": [round(float(ratios_a.min()), 4), round(float(ratios_a.max()), 4)],
            "ratio_minus_copy_calls": {
                "median": round(float(np.median(minus_a)), 4) if minus_a.size else None,
                "range": [round(float(minus_a.min()), 4), round(float(minus_a.max()), 4)] if minus_a.size else None,
                "rounds_without_a_ratio": len(minus_calls) - int(minus_a.size)},
            "bytes_moved_per_frame": {zero_copy: moved.get("z", 0), HostCopy.name: moved.get("h", 0),
                                      "host_copy without its copies": moved.get("d", 0)},
            "what": f"{zero_copy}'s frame / host_copy's frame without its copies (every call made but the "
                    "copies: HostCopy.dry_copies), medians of each round's blocks, the median of the rounds' "
                    "ratios (<= 1: zero-copy is no slower than host_copy would be if its copies were free)"}
