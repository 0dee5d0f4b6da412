"""Measure one scene x size x backend: every sync mode's cell, with its baselines interleaved.

A cell is built exactly as ``glshare run --headless`` builds it (app/runtime.Runtime: EGL surface,
device, Registry, backend, scene, FrameScheduler, ImGui layer). The finish cell's timed frames
alternate, frame by frame, with the bare loop's; for host_copy each round adds glshare copy frames
alternating with memcpy-floor frames; at the default particle count a block of frames with the
panel drawn follows. Other sync modes switch the same Runtime (Runtime.switch) and time glshare's
frames alone.
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np

from app.bench.loops import (
    BareLoop,
    Sample,
    glshare_copy_frame,
    glshare_frame,
    glshare_panel_frame,
    glshare_ui_frame,
    show_panel,
)
from app.bench.sweep import Sweep, shared_bytes, size_label
from app.config import SYNC_MODES, RunConfig
from app.trace.stats import summary

log = logging.getLogger(__name__)
MIN_FRAMES = 5  # timed frames of each kind a cell gets even past its time budget


def _ms(values_ns) -> dict:
    values = [v / 1e6 for v in values_ns]
    s = summary(values)
    return {"median": s["median"], "p95": s["p95"], "mean": round(sum(values) / len(values), 4) if values else 0.0}


def _us(values) -> dict:
    s = summary(values)
    return {"median": s["median"], "p95": s["p95"]}


def _gbps(nbytes: int, ms: float) -> float:
    return round(nbytes / (ms * 1e6), 3) if ms > 0 else 0.0


def sample_stats(samples: list[Sample]) -> dict:
    return {"frame_ms": _ms(s.wall for s in samples),
            "cpu_ms": {"main_thread": _ms(s.thread for s in samples), "process": _ms(s.process for s in samples)}}


def record_stats(records: list) -> dict:
    """Per-phase host times, CPU waits and CL device times of glshare's frame records (us)."""
    phases = {p: _us(r.phase_us(p) for r in records) for p in ("acquire", "compute", "release", "render")}
    waits = _us(sum(w[2] - w[1] for w in r.waits) / 1e3 for r in records)
    device = {}
    for name in ("acquire", "compute", "release"):
        spans = [(r.cl_profile[name][3] - r.cl_profile[name][2]) / 1e3 for r in records if name in r.cl_profile]
        if spans:
            device[name] = _us(spans)
    errors = [e for r in records for e in r.errors]
    return {"phases_us": phases, "waits_us": waits, "cl_device_us": device, "errors": len(errors),
            "first_error": errors[0].message if errors else ""}


class _Clock:
    def __init__(self, budget_s: float) -> None:
        self.t0, self.budget = time.perf_counter(), budget_s

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    @property
    def over(self) -> bool:
        return self.elapsed > self.budget


def panel_name() -> str:
    """What ``Runtime.draw_ui`` draws: the full panel once ui/panel.py exists, else the overlay."""
    try:
        from app.ui.panel import draw_panel  # noqa: F401
    except ImportError:
        return "overlay (app/ui/overlay.py; no app/ui/panel.py here)"
    return "panel (app/ui/panel.py)"


def measure_backend(scene: str, size, backend: str, sweep: Sweep, cl_device: str | None, tick, surface) -> dict:
    """All cells of ``backend`` at ``size`` on the bench's headless ``surface`` (resized to what
    ``glshare run --headless`` would open). ``tick(label)`` is called once per cell done.

    Returns {"cells": [...], "baselines": [...], "panel": {...} or None, "sync": {mode: reason},
    "gl": {...}, "cl": {...}}.
    """
    from app.runtime import Runtime, default_window_size

    cfg = RunConfig(scene=scene, backend=backend, sync="finish", headless=True, size=size, cl_device=cl_device,
                    panel=True)
    surface.resize(*default_window_size(cfg))
    out: dict = {"cells": [], "baselines": [], "panel": None}
    base = {"scene": scene, "size": size if scene == "particles" else size_label(scene, size), "backend": backend}
    nbytes = shared_bytes(scene, size)
    with Runtime(cfg, surface=surface) as rt:
        out["gl"] = {k: rt.gl_info.as_dict()[k] for k in ("vendor", "renderer", "version")}
        out["cl"] = {"platform": rt.choice.platform.name.strip(), "device": rt.choice.device.name.strip(),
                     "version": rt.choice.device.version.strip()}
        reasons = {m: rt.backend.sync_unavailable_reason(m) for m in SYNC_MODES}
        out["sync"] = {m: r or "available" for m, r in reasons.items()}
        with_panel = scene == "particles" and size == sweep.default_particles
        out["cells"].append(_finish_cell(rt, base, nbytes, sweep, with_panel, out))
        tick(f"{scene} {size_label(scene, size)} {backend}/finish")
        for mode in SYNC_MODES:
            if mode == "finish" or reasons[mode] is not None:
                continue
            if not rt.switch(sync=mode):
                err = rt.loop_errors[-1].message if rt.loop_errors else "switch refused"
                out["cells"].append({**base, "sync": mode, "frames": 0, "errors": 1, "first_error": err})
            else:
                out["cells"].append(_plain_cell(rt, base, nbytes, sweep))
            tick(f"{scene} {size_label(scene, size)} {backend}/{mode}")
    return out


def _moved(rt, nbytes: int) -> int:
    return 0 if rt.backend.zero_copy else nbytes


def _cell(rt, base: dict, nbytes: int, samples: list[Sample], records: list) -> dict:
    rt.scheduler.finish()  # the last frames' CL profiles
    stats = sample_stats(samples)
    median = stats["frame_ms"]["median"]
    return {**base, "sync": rt.cfg.sync, "frames": len(samples), **stats, **record_stats(records),
            "bytes_shared_per_frame": nbytes, "bytes_moved_per_frame": _moved(rt, nbytes),
            "bandwidth_gbps": _gbps(nbytes, median)}


def _plain_cell(rt, base: dict, nbytes: int, sweep: Sweep) -> dict:
    clock = _Clock(sweep.cell_budget_s)
    records: list = []
    for _ in range(sweep.warmup):
        glshare_frame(rt, [])
        if clock.elapsed > sweep.cell_budget_s / 4:
            break
    samples: list = []
    per_round = math.ceil(sweep.frames / sweep.rounds)
    for _ in range(sweep.rounds):
        samples += _take(per_round, clock, len(samples), lambda: glshare_frame(rt, records))
        if clock.over:
            break
    drained = _drained_ms(rt, max(MIN_FRAMES, per_round))
    cell = _cell(rt, base, nbytes, samples, records)
    cell["throughput_ms"] = drained
    return cell


def _take(n: int, clock: _Clock, have: int, fn, least: int = MIN_FRAMES) -> list:
    """Up to ``n`` results of ``fn()``; fewer once the cell's time is spent and ``least`` are in."""
    out = []
    for _ in range(n):
        if clock.over and have + len(out) >= least:
            break
        out.append(fn())
    return out


def _drained_ms(rt, frames: int) -> float:
    """Frames back to back from idle to idle (GL and CL finished before and after), per frame.

    Per-frame times show what the CPU waited; with sync ``semaphore`` or ``none`` the CPU runs
    ahead of the GPU and the driver makes some later frame pay, maybe outside the timed frames.
    This time includes all of it: it is the frame rate the machine sustains.
    """
    from OpenGL import GL

    GL.glFinish()
    rt.backend.queue.finish()
    t0 = time.perf_counter_ns()
    for _ in range(frames):
        glshare_frame(rt, [])
    GL.glFinish()
    rt.backend.queue.finish()
    return round((time.perf_counter_ns() - t0) / frames / 1e6, 4)


def _finish_cell(rt, base: dict, nbytes: int, sweep: Sweep, with_panel: bool, out: dict) -> dict:
    clock = _Clock(sweep.cell_budget_s)
    bare = BareLoop(rt)
    copies = rt.backend_name == "host_copy"
    g, b, c, f, p, o, k, aa = [], [], [], [], [], [], [], []
    u: dict[str | None, list] = {"panel": [], "overlay": [], None: []}  # isolated UI costs
    u_block_ns = 0  # time spent in the panel's UI-alone blocks (two frames per round)
    records: list = []
    try:
        for _ in range(sweep.warmup):
            glshare_frame(rt, [])
            bare.frame()
            if copies:
                glshare_copy_frame(rt)
                bare.floor_frame()
            if clock.elapsed > sweep.cell_budget_s / 4:  # large sizes: a frame or two warms them
                break
        headline = base["scene"] == "particles" and base["size"] in (sweep.default_particles, min(sweep.particles))
        floor = base["scene"] == "particles" and base["size"] == min(sweep.particles)  # scheduler_overhead_us
        per_round = math.ceil(sweep.frames * (2 if headline else 1) / sweep.rounds)  # the ratios are read there
        per_copy = max(2, per_round // 2)
        for _ in range(sweep.rounds):
            for j in range(per_round):  # alternate which goes first, so neither always follows the other
                if clock.over and len(g) >= MIN_FRAMES:
                    break
                if j % 2:
                    b.append(bare.frame())
                    g.append(glshare_frame(rt, records))
                else:
                    g.append(glshare_frame(rt, records))
                    b.append(bare.frame())
                if floor:
                    k.append(bare.checked_frame())
                    aa.append(bare.frame())  # a second bare frame: the pairs' own noise (A/A)
            if copies:
                for _ in range(per_copy):
                    if clock.over and len(c) >= 3:
                        break
                    c.append(glshare_copy_frame(rt))
                    f.append(bare.floor_frame())
            if with_panel:
                glshare_panel_frame(rt, [])  # its wait pays for the frame before, which drew no panel
                p += _take(per_round, clock, len(p), lambda: glshare_panel_frame(rt, []))
                show_panel(rt, False)  # the minimal overlay instead (the "h" key), for comparison
                glshare_panel_frame(rt, [])
                o += _take(per_round, clock, len(o), lambda: glshare_panel_frame(rt, []))
                # the UI alone: the overlay, then the panel, each against nothing frame by frame; the
                # panel's block is left to its own redraw clock, as in a run (no toggling inside it)
                for j in range(per_round):
                    for draw in ((True, False) if j % 2 else (False, True)):
                        (u["overlay"] if draw else u[None]).append(glshare_ui_frame(rt, draw))
                show_panel(rt, True)
                for _ in range(3):  # the two redraws a shown panel asks for at once, before the block
                    glshare_ui_frame(rt, True)
                block_t0 = time.perf_counter_ns()
                for j in range(2 * per_round):
                    for draw in ((True, False) if j % 2 else (False, True)):
                        (u["panel"] if draw else u[None]).append(glshare_ui_frame(rt, draw))
                u_block_ns += time.perf_counter_ns() - block_t0
            if clock.over:
                break
        drained = _drained_ms(rt, max(MIN_FRAMES, per_round))
    finally:
        bare.close()
    cell = _cell(rt, base, nbytes, g, records)
    cell["throughput_ms"] = drained
    if base["scene"] == "particles" and base["size"] == min(sweep.particles):
        from app.bench.overhead import overhead_breakdown

        cell["overhead_breakdown"] = overhead_breakdown(rt, reps=max(50, 10 * sweep.frames))
    bare_stats = sample_stats(b)
    cell["vs_bare"] = round(cell["frame_ms"]["median"] / bare_stats["frame_ms"]["median"], 4)
    ratio = np.array([x.wall / y.wall for x, y in zip(g, b)])
    diff = np.array([(x.thread - y.thread) / 1e3 for x, y in zip(g, b)])
    cell["paired"] = {  # each glshare frame against the bare frame next to it: drift of the machine cancels
        "pairs": len(ratio), "wall_ratio_median": round(float(np.median(ratio)), 4),
        "wall_ratio_iqr": [round(float(q), 4) for q in np.percentile(ratio, [25, 75])],
        "main_thread_diff_us_median": round(float(np.median(diff)), 1),
        "main_thread_diff_us_iqr": [round(float(q), 1) for q in np.percentile(diff, [25, 75])]}
    if k:  # the checked bare frame against the bare frame of the same pair: the floor of the overhead
        floor_diff = np.array([(x.thread - y.thread) / 1e3 for x, y in zip(k, b)])
        cell["paired"]["checked_floor_us_median"] = round(float(np.median(floor_diff)), 1)
        cell["paired"]["checked_floor_us_iqr"] = [round(float(q), 1) for q in np.percentile(floor_diff, [25, 75])]
        same = np.array([(x.thread - y.thread) / 1e3 for x, y in zip(aa, b)])
        cell["paired"]["bare_vs_bare_us_median"] = round(float(np.median(same)), 1)
        cell["paired"]["bare_vs_bare_us_iqr"] = [round(float(q), 1) for q in np.percentile(same, [25, 75])]
    out["baselines"].append({"kind": "bare_loop", **base, "sync": "finish", "frames": len(b),
                             "bytes_shared_per_frame": nbytes, **bare_stats})
    if copies:
        copy_ms = _ms(s.extra["copy"] for s in c)
        floor_ms = _ms(s.extra["floor"] for s in f)
        cell["copy"] = {"frames": len(c), "ms": copy_ms, "gbps": _gbps(nbytes, copy_ms["median"]),
                        "what": "acquire + release phases, kernel finished first (one copy CL -> GL)"}
        out["baselines"].append({"kind": "memcpy_floor", **base, "frames": len(f), "bytes": 2 * nbytes,
                                 "ms": floor_ms, "gbps": _gbps(2 * nbytes, floor_ms["median"]),
                                 "what": "numpy copies CL -> host -> GL of the same bytes, after the same kernel"})
    if with_panel and p:
        panel = sample_stats(p)
        snaps = []
        for _ in range(10):
            t0 = time.perf_counter_ns()
            rt.snapshot()
            snaps.append(time.perf_counter_ns() - t0)
        out["panel"] = {**base, "sync": "finish", "frames": len(p), "drawn": panel_name(),
                        "with_panel": panel, "without_panel": sample_stats(g),
                        "draw_ui_ms": _ms(s.extra["draw_ui"] for s in p), "snapshot_ms": _ms(snaps),
                        "with_overlay": sample_stats(o), "overlay_draw_ui_ms": _ms(s.extra["draw_ui"] for s in o),
                        "ui_alone": {"panel": sample_stats(u["panel"]), "overlay": sample_stats(u["overlay"]),
                                     "nothing": sample_stats(u[None]), "frames": len(u[None]),
                                     "panel_frames": len(u["panel"]),
                                     "panel_redraws": sum(bool(s.extra.get("redrew")) for s in u["panel"]),
                                     "panel_redraw_ms": _ms(s.process for s in u["panel"] if s.extra.get("redrew"))
                                     if any(s.extra.get("redrew") for s in u["panel"]) else None,
                                     "panel_composite_ms": _ms(s.process for s in u["panel"] if not s.extra.get("redrew")),
                                     "panel_hz": rt.overlay.redraw_hz if rt.overlay is not None else None,
                                     "panel_block_s": round(u_block_ns / 1e9, 3),
                                     "composite_path": rt.overlay.composite_path if rt.overlay is not None else None,
                                     "what": "after the scene's GL work finished: draw_ui + glFinish, against "
                                             "glFinish alone, interleaved frame by frame (process CPU); the panel "
                                             "redraws on its own clock inside its block"}}
    return cell
