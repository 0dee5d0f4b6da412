"""Measure one scene x size x backend: every sync mode's cell, with its baselines interleaved.

A cell is built exactly as ``glshare run --headless`` builds it (app/run.Run: EGL surface,
device, Registry, backend, scene, FrameScheduler, ImGui layer). The finish cell's timed frames
alternate, frame by frame, with the bare loop's; for host_copy each round adds glshare copy frames
alternating with memcpy-floor frames; at the default particle count a block of frames with the
panel drawn follows. Other sync modes switch the same session (Session.switch) and time glshare's
frames alone.

Python's cyclic collector is paused while a cell's frames run (``app.collector.collector_off``).
A run keeps its frame records in its history (600, full after the first 600 frames), so each new
record's containers replace the oldest one's and the collector's count of new objects stays level:
in 3,000 frames of a run's steady state it collects nothing. A cell keeps every record besides, for
its statistics, and that sets off a collection inside one frame in a few dozen, all of them
glshare's (bench/probes/frame_gc_probe.py; bench/results/README.md, 'Thirteenth session'). The
pause keeps that cost of the bench's own bookkeeping out of the frames it times.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from app.bench import python_reference_us
from app.bench.loops import (
    BareLoop,
    Sample,
    glshare_copy_frame,
    glshare_frame,
    glshare_panel_frame,
    glshare_ui_frame,
    show_panel,
)
from app.bench.overhead import overhead_breakdown
from app.bench.sweep import Sweep, shared_bytes, size_label
from app.collector import collector_off
from app.config import RunConfig
from app.sharing.backends.host_copy import HostCopy
from app.sharing.sync import sync_modes
from app.trace.stats import summary

log = logging.getLogger(__name__)
MIN_FRAMES = 5  # timed frames of each kind a cell gets even past its time budget
LIMIT_FRAMES = 20  # frames with both device times under a cell's device-time limit (``_cell``)
PANEL_DRAWN = "panel (app/ui/panel.py)"  # what Run.draw_ui draws with the panel shown


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


def measure_backend(scene: str, size, backend: str, sweep: Sweep, cl_device: str | None, tick, surface) -> dict:
    """All cells of ``backend`` at ``size`` on the bench's headless ``surface`` (resized to what
    ``glshare run --headless`` would open). ``tick(label)`` is called once per cell done.

    Returns {"cells": [...], "baselines": [...], "panel": {...} or None, "sync": {mode: reason},
    "gl": {...}, "cl": {...}}.
    """
    from app.run import Run
    from app.session.session import window_size_for

    cfg = RunConfig(scene=scene, backend=backend, sync="finish", headless=True, size=size, cl_device=cl_device,
                    panel=True)
    surface.resize(*window_size_for(cfg))
    out: dict = {"cells": [], "baselines": [], "panel": None}
    base = {"scene": scene, "size": size if scene == "particles" else size_label(scene, size), "backend": backend}
    nbytes = shared_bytes(scene, size)
    with Run(cfg, surface=surface) as rt:
        out["gl"] = {k: rt.session.gl_info.as_dict()[k] for k in ("vendor", "renderer", "version")}
        out["cl"] = {"platform": rt.session.choice.platform.name.strip(), "device": rt.session.choice.device.name.strip(),
                     "version": rt.session.choice.device.version.strip()}
        reasons = {m: rt.session.backend.sync_unavailable_reason(m) for m in sync_modes()}
        out["sync"] = {m: r or "available" for m, r in reasons.items()}
        with_panel = scene == "particles" and size == sweep.default_particles
        with collector_off():
            out["cells"].append(_finish_cell(rt, base, nbytes, sweep, with_panel, out))
        tick(f"{scene} {size_label(scene, size)} {backend}/finish")
        for mode in sync_modes():
            if mode == "finish" or reasons[mode] is not None:
                continue
            if not rt.session.switch(sync=mode).ok:
                err = rt.session.history.loop_errors[-1].message if rt.session.history.loop_errors else "switch refused"
                out["cells"].append({**base, "sync": mode, "frames": 0, "errors": 1, "first_error": err})
            else:
                with collector_off():
                    out["cells"].append(_plain_cell(rt, base, nbytes, sweep))
            tick(f"{scene} {size_label(scene, size)} {backend}/{mode}")
            if not sync_modes()[mode].bounded_run_ahead or rt.session.scene.max_slots <= 1:
                continue
            # the same mode with more (or fewer) frames in flight, each frame on its own copy of the
            # shared objects (Scene.max_slots): how deep a pipeline the machine needs
            for depth in sweep.flight_depths:
                if depth == rt.session.cfg.frames_in_flight:
                    continue
                rt.session.cfg = rt.session.cfg.with_(frames_in_flight=depth)
                if rt.session.switch(sync=mode).ok:
                    with collector_off():
                        out["cells"].append(_plain_cell(rt, base, nbytes, sweep))
                    tick(f"{scene} {size_label(scene, size)} {backend}/{mode} x{depth}")
    return out


def _moved(records: list) -> int:
    """Bytes the backend copied per frame (FrameRecord.bytes_moved), the median over the frames."""
    return int(np.median([r.bytes_moved for r in records])) if records else 0


def device_limit(samples: list[Sample], records: list) -> dict | None:
    """The device-time limit of the frames that have both: the kernel's CL device time plus the
    scene's GL pass ("gl render", GL timer queries; sampled frames only) of the same frame, against
    that frame's wall time (``samples[i]`` is the frame of ``records[i]``). None where no frame has both."""
    limits, ratios, kernels, passes = [], [], [], []
    for sample, rec in zip(samples, records):
        prof = rec.cl_profile.get("compute")
        gl = [end - start for name, start, end in rec.gl_passes if name == "gl render"]
        if prof is None or not gl:
            continue
        kernel, gl_ns = prof[3] - prof[2], sum(gl)
        limits.append(kernel + gl_ns)
        ratios.append(sample.wall / max(1, kernel + gl_ns))
        kernels.append(kernel)
        passes.append(gl_ns)
    if not ratios:
        return None
    q1, q3 = np.percentile(ratios, [25, 75])
    return {"frames": len(ratios), "limit_ms": _ms(limits), "cl_kernel_ms": _ms(kernels), "gl_pass_ms": _ms(passes),
            "ratio_median": round(float(np.median(ratios)), 3), "ratio_iqr": [round(float(q1), 3), round(float(q3), 3)],
            "what": "frame wall time / (CL kernel device time + GL pass time of the same frame), frames "
                    "where both were measured (the GL timer samples one frame in a few on software GL); "
                    "timed_block: the cell's own frames had too few, timed one in a few (--stamps-ms), so "
                    "these come from a block of frames all timed"}


def _cell(rt, base: dict, nbytes: int, samples: list[Sample], records: list) -> dict:
    rt.session.scheduler.finish()  # the last frames' CL profiles and GL passes
    stats = sample_stats(samples)
    median = stats["frame_ms"]["median"]
    cell = {**base, "sync": rt.session.cfg.sync, "frames": len(samples), **stats, **record_stats(records),
            "bytes_shared_per_frame": nbytes, "bytes_moved_per_frame": _moved(records),
            "bandwidth_gbps": _gbps(nbytes, median)}
    limit = device_limit(samples, records)
    if (limit is None or limit["frames"] < LIMIT_FRAMES) and rt.session.scheduler.stamps_interval_ns:
        # frames shorter than --stamps-ms are timed one in a few (FrameScheduler.stamps_interval_ns):
        # the device times under the limit then come from a block of frames that are all timed
        limit = device_limit(*_all_timed_frames(rt, LIMIT_FRAMES * max(1, rt.session.scheduler.gl_timer.every)))
        if limit is not None:
            limit["timed_block"] = True
    if limit is not None:
        cell["device_limit"] = limit
    cell["gl_software"] = rt.session.gl_info.software
    texture = getattr(rt.session.scene, "texture", None)  # the image scene: how its kernel sees the texture
    if texture is not None:
        cell["cl_view"] = "image" if texture.is_image else "buffer"
    return cell


def _all_timed_frames(rt, n: int) -> tuple[list[Sample], list]:
    """``n`` of glshare's frames with every one timed (its CL stamps read, its GL pass timed),
    their samples and records, every profile read: the device times a cell's limit is made of
    where its own frames were timed one in a few."""
    scheduler = rt.session.scheduler
    records: list = []
    interval, scheduler.stamps_interval_ns = scheduler.stamps_interval_ns, 0
    try:
        samples = [glshare_frame(rt, records) for _ in range(n)]
    finally:
        scheduler.stamps_interval_ns = interval
    scheduler.finish()
    return samples, records


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
    scheduler = rt.session.scheduler
    if not scheduler.sync.bounded_run_ahead:
        drain = max(MIN_FRAMES, per_round)
        cell = _cell(rt, base, nbytes, samples, records)
        cell["throughput_ms"] = _drained_ms(rt, drain)
        cell["throughput_frames"] = drain
        return cell
    # frames in flight: how deep, on how many copies, and the bare loop of the same depth. A pipeline N
    # frames deep fills and drains once per measurement: time enough frames that its ends are a small
    # part of it (30 frames per frame in flight, at least DRAIN_FRAMES)
    drain = max(MIN_FRAMES, per_round, 30 * scheduler.frames_in_flight, sweep.drain_frames)
    cell = _cell(rt, base, nbytes, samples, records)
    cell["frames_in_flight"] = scheduler.frames_in_flight
    cell["copies"] = rt.session.scene.slots
    bare = BareLoop(rt)
    try:
        cell.update(_drained_pairs(rt, bare, drain, sweep))
    finally:
        bare.close()
    return cell


def _drained_pairs(rt, bare: BareLoop, frames: int, sweep: Sweep) -> dict:
    """glshare's sustained frame and the bare loop's of the same depth, measured alike: both loops
    run for ``sweep.drain_warm_s`` first (the first measurement after a new set-up can be the slow
    one for either loop: bench/results/README.md, 'H200, 2026-12-02, fourth session'), then
    ``sweep.drain_rounds`` rounds of one drained measurement each, interleaved, so that a slow spell
    of the host touches both; the median round of each."""
    t_end = time.perf_counter() + sweep.drain_warm_s
    while time.perf_counter() < t_end:
        _drained_ms(rt, MIN_FRAMES)
        bare.drained_semaphore_ms(MIN_FRAMES)
    ours, theirs = [], []
    for _ in range(max(1, sweep.drain_rounds)):
        ours.append(_drained_ms(rt, frames))
        theirs.append(bare.drained_semaphore_ms(frames))
    return {"throughput_ms": float(np.median(ours)), "throughput_frames": frames, "throughput_rounds_ms": ours,
            "bare_throughput_ms": float(np.median(theirs)), "bare_throughput_rounds_ms": theirs}


def _take(n: int, clock: _Clock, have: int, fn, least: int = MIN_FRAMES) -> list:
    """Up to ``n`` results of ``fn()``; fewer once the cell's time is spent and ``least`` are in."""
    out = []
    for _ in range(n):
        if clock.over and have + len(out) >= least:
            break
        out.append(fn())
    return out


def _gl_pass_alone(rt, frames: int) -> dict | None:
    """The scene's draw alone, GL finished before and after: the GL pass as wall time (on a software
    rasterizer its threads' work, which GL's timestamp queries do not see: they are stamped as the
    commands are queued). None when there is nothing to draw into."""
    from app.bench.loops import render_target
    from app.gl import api as GL

    spent = []
    for _ in range(frames):
        GL.glFinish()
        t0 = time.perf_counter_ns()
        size = render_target(rt)
        if size is None:
            return None
        rt.session.scene.render(size)
        GL.glFinish()
        spent.append(time.perf_counter_ns() - t0)
    rt.session.surface.present()
    return _ms(spent)


def _limit_by_finish(cell: dict, gl_alone: dict) -> None:
    """The device-time limit with the GL pass timed by glFinish (``_gl_pass_alone``) instead of the
    timer queries: the kernel's median device time + the draw's median wall time, against the
    median frame."""
    limit = cell["device_limit"]
    total = limit["cl_kernel_ms"]["median"] + gl_alone["median"]
    limit["gl_pass_alone_ms"] = gl_alone
    limit["limit_by_finish_ms"] = round(total, 4)
    limit["ratio_by_finish"] = round(cell["frame_ms"]["median"] / total, 3) if total > 0 else None
    limit["gl_software"] = cell.get("gl_software", False)


def _drained_ms(rt, frames: int) -> float:
    """Frames back to back from idle to idle (GL and CL finished before and after), per frame.

    Per-frame times show what the CPU waited; with sync ``semaphore`` or ``none`` the CPU runs
    ahead of the GPU and the driver makes some later frame pay, maybe outside the timed frames.
    This time includes all of it: it is the frame rate the machine sustains.
    """
    from app.gl import api as GL

    GL.glFinish()
    rt.session.backend.queue.finish()
    t0 = time.perf_counter_ns()
    for _ in range(frames):
        glshare_frame(rt, [])
    GL.glFinish()
    rt.session.backend.queue.finish()
    return round((time.perf_counter_ns() - t0) / frames / 1e6, 4)


@dataclass
class _FinishFrames:
    """The samples of a finish cell, by kind of frame, and glshare's frame records."""

    glshare: list[Sample] = field(default_factory=list)  # glshare's frames, each paired with ...
    bare: list[Sample] = field(default_factory=list)  # ... the bare loop frame next to it
    checked: list[Sample] = field(default_factory=list)  # the checked bare frame, in the same pairs
    bare_again: list[Sample] = field(default_factory=list)  # a second bare frame: the pairs' own noise (A/A)
    copy: list[Sample] = field(default_factory=list)  # host_copy: glshare's copy frames, each followed by ...
    floor: list[Sample] = field(default_factory=list)  # ... a memcpy-floor frame
    panel: list[Sample] = field(default_factory=list)  # glshare's frames with the panel drawn
    overlay: list[Sample] = field(default_factory=list)  # ... with the minimal overlay instead
    ui_panel: list[Sample] = field(default_factory=list)  # the UI alone: the panel, ...
    ui_overlay: list[Sample] = field(default_factory=list)  # ... the overlay, ...
    ui_nothing: list[Sample] = field(default_factory=list)  # ... and nothing, frame by frame against both
    ui_block_ns: int = 0  # time spent in the panel's UI-alone blocks
    records: list = field(default_factory=list)


def _warm_up(rt, bare: BareLoop, sweep: Sweep, clock: _Clock, copies: bool) -> None:
    """Each kind of frame the cell times, ``sweep.warmup`` times; a frame or two at large sizes."""
    for _ in range(sweep.warmup):
        glshare_frame(rt, [])
        bare.frame()
        if copies:
            glshare_copy_frame(rt)
            bare.floor_frame()
        if clock.elapsed > sweep.cell_budget_s / 4:
            break


def _paired_frames(rt, bare: BareLoop, fr: _FinishFrames, n: int, clock: _Clock, checked: bool) -> None:
    """``n`` glshare frames, each next to a bare loop frame; which of the two goes first alternates,
    so neither always follows the other. ``checked``: each pair also gets a checked bare frame and a
    second bare frame (scheduler_overhead_us's floor and noise)."""
    for j in range(n):
        if clock.over and len(fr.glshare) >= MIN_FRAMES:
            break
        if j % 2:
            fr.bare.append(bare.frame())
            fr.glshare.append(glshare_frame(rt, fr.records))
        else:
            fr.glshare.append(glshare_frame(rt, fr.records))
            fr.bare.append(bare.frame())
        if checked:
            fr.checked.append(bare.checked_frame())
            fr.bare_again.append(bare.frame())


def _copy_frames(rt, bare: BareLoop, fr: _FinishFrames, n: int, clock: _Clock) -> None:
    """host_copy: ``n`` of glshare's copy frames, each followed by a memcpy-floor frame."""
    for _ in range(n):
        if clock.over and len(fr.copy) >= 3:
            break
        fr.copy.append(glshare_copy_frame(rt))
        fr.floor.append(bare.floor_frame())


def _panel_frames(rt, fr: _FinishFrames, n: int, clock: _Clock) -> None:
    """glshare's frames with the panel drawn, then with the minimal overlay (the "h" key) instead.
    Each block starts with an untimed frame: its wait pays for the frame before, drawn otherwise."""
    glshare_panel_frame(rt, [])
    fr.panel += _take(n, clock, len(fr.panel), lambda: glshare_panel_frame(rt, []))
    show_panel(rt, False)
    glshare_panel_frame(rt, [])
    fr.overlay += _take(n, clock, len(fr.overlay), lambda: glshare_panel_frame(rt, []))


def _ui_alone_frames(rt, fr: _FinishFrames, n: int) -> None:
    """The UI alone: the overlay, then the panel, each against nothing frame by frame. The panel's
    block is left to its own redraw clock, as in a run (no toggling inside it)."""
    for j in range(n):
        for draw in ((True, False) if j % 2 else (False, True)):
            (fr.ui_overlay if draw else fr.ui_nothing).append(glshare_ui_frame(rt, draw))
    show_panel(rt, True)
    for _ in range(3):  # the two redraws a shown panel asks for at once, before the block
        glshare_ui_frame(rt, True)
    block_t0 = time.perf_counter_ns()
    for j in range(2 * n):
        for draw in ((True, False) if j % 2 else (False, True)):
            (fr.ui_panel if draw else fr.ui_nothing).append(glshare_ui_frame(rt, draw))
    fr.ui_block_ns += time.perf_counter_ns() - block_t0


def _finish_cell(rt, base: dict, nbytes: int, sweep: Sweep, with_panel: bool, out: dict) -> dict:
    """The finish cell, its bare loop (and memcpy floor) appended to ``out["baselines"]`` and, with
    ``with_panel``, its panel block set as ``out["panel"]``. Each round: paired frames, copy frames
    (host_copy), panel frames and the UI alone (``with_panel``), until the rounds or the time are spent."""
    clock = _Clock(sweep.cell_budget_s)
    bare = BareLoop(rt)
    copies = rt.session.backend_name == HostCopy.name
    smallest = base["scene"] == "particles" and base["size"] == min(sweep.particles)  # scheduler_overhead_us
    headline = smallest or (base["scene"] == "particles" and base["size"] == sweep.default_particles)
    per_round = math.ceil(sweep.frames * (2 if headline else 1) / sweep.rounds)  # the ratios are read there
    pairs = math.ceil(sweep.overhead_pairs / sweep.rounds) if smallest else per_round  # (Sweep.overhead_pairs)
    fr = _FinishFrames()
    try:
        _warm_up(rt, bare, sweep, clock, copies)
        for _ in range(sweep.rounds):
            _paired_frames(rt, bare, fr, pairs, clock, checked=smallest)
            if copies:
                _copy_frames(rt, bare, fr, max(2, per_round // 2), clock)
            if with_panel:
                _panel_frames(rt, fr, per_round, clock)
                _ui_alone_frames(rt, fr, per_round)
            if clock.over:
                break
        drained = _drained_ms(rt, max(MIN_FRAMES, per_round))
        gl_alone = _gl_pass_alone(rt, max(MIN_FRAMES, per_round // 2))
    finally:
        bare.close()
    cell = _cell(rt, base, nbytes, fr.glshare, fr.records)
    cell["throughput_ms"] = drained
    if gl_alone is not None and "device_limit" in cell:
        _limit_by_finish(cell, gl_alone)
    if smallest:
        cell["overhead_breakdown"] = overhead_breakdown(rt, reps=max(50, 10 * sweep.frames))
        cell["python_ref_us"] = python_reference_us(1000)  # the host's Python speed at this cell (machine_facts)
    bare_stats = sample_stats(fr.bare)
    cell["vs_bare"] = round(cell["frame_ms"]["median"] / bare_stats["frame_ms"]["median"], 4)
    cell["paired"] = _paired_stats(fr)
    out["baselines"].append({"kind": "bare_loop", **base, "sync": "finish", "frames": len(fr.bare),
                             "bytes_shared_per_frame": nbytes, **bare_stats})
    if copies:
        copy_ms = _ms(s.extra["copy"] for s in fr.copy)
        floor_ms = _ms(s.extra["floor"] for s in fr.floor)
        cell["copy"] = {"frames": len(fr.copy), "ms": copy_ms, "gbps": _gbps(nbytes, copy_ms["median"]),
                        "what": "acquire + release phases, kernel finished first (one copy CL -> GL)"}
        out["baselines"].append({"kind": "memcpy_floor", **base, "frames": len(fr.floor), "bytes": nbytes,
                                 "ms": floor_ms, "gbps": _gbps(nbytes, floor_ms["median"]),
                                 "what": "one numpy copy of the same bytes from CL's mapping into GL's mapping, "
                                         "after the same kernel (host_copy's path makes one copy too)"})
    if with_panel and fr.panel:
        out["panel"] = _panel_stats(rt, base, fr)
    return cell


def _thread_diff_us(xs: list[Sample], ys: list[Sample]) -> np.ndarray:
    return np.array([(x.thread - y.thread) / 1e3 for x, y in zip(xs, ys)])


def _median_iqr(values: np.ndarray, digits: int) -> tuple[float, list[float]]:
    return round(float(np.median(values)), digits), [round(float(q), digits) for q in np.percentile(values, [25, 75])]


def _paired_stats(fr: _FinishFrames) -> dict:
    """Each glshare frame against the bare frame next to it (drift of the machine cancels); where
    measured, the checked bare frame and the second bare frame against the bare frame of their pair."""
    ratio = np.array([x.wall / y.wall for x, y in zip(fr.glshare, fr.bare)])
    paired: dict = {"pairs": len(ratio)}
    paired["wall_ratio_median"], paired["wall_ratio_iqr"] = _median_iqr(ratio, 4)
    paired["main_thread_diff_us_median"], paired["main_thread_diff_us_iqr"] = _median_iqr(
        _thread_diff_us(fr.glshare, fr.bare), 1)
    if fr.checked:  # the floor of the overhead, and the pairs' own noise
        paired["checked_floor_us_median"], paired["checked_floor_us_iqr"] = _median_iqr(
            _thread_diff_us(fr.checked, fr.bare), 1)
        paired["bare_vs_bare_us_median"], paired["bare_vs_bare_us_iqr"] = _median_iqr(
            _thread_diff_us(fr.bare_again, fr.bare), 1)
    return paired


def _panel_stats(rt, base: dict, fr: _FinishFrames) -> dict:
    """The panel block: frames with the panel, with the overlay and without either, the UI alone,
    and the time of the panel model's update from the session's view (what the panel reads each redraw)."""
    redraws = [s for s in fr.ui_panel if s.extra.get("redrew")]
    snaps = []
    for _ in range(10):
        t0 = time.perf_counter_ns()
        rt.ui.model.update(rt.session.view(demos=rt.controls.demo_views()))
        snaps.append(time.perf_counter_ns() - t0)
    overlay = rt.ui
    return {**base, "sync": "finish", "frames": len(fr.panel), "drawn": PANEL_DRAWN,
            "with_panel": sample_stats(fr.panel), "without_panel": sample_stats(fr.glshare),
            "draw_ui_ms": _ms(s.extra["draw_ui"] for s in fr.panel), "snapshot_ms": _ms(snaps),
            "with_overlay": sample_stats(fr.overlay), "overlay_draw_ui_ms": _ms(s.extra["draw_ui"] for s in fr.overlay),
            "ui_alone": {"panel": sample_stats(fr.ui_panel), "overlay": sample_stats(fr.ui_overlay),
                         "nothing": sample_stats(fr.ui_nothing), "frames": len(fr.ui_nothing),
                         "panel_frames": len(fr.ui_panel), "panel_redraws": len(redraws),
                         "panel_redraw_ms": _ms(s.process for s in redraws) if redraws else None,
                         "panel_composite_ms": _ms(s.process for s in fr.ui_panel if not s.extra.get("redrew")),
                         "panel_hz": overlay.layer.redraw_hz if overlay is not None else None,
                         "panel_block_s": round(fr.ui_block_ns / 1e9, 3),
                         "composite_path": overlay.layer.composite_path if overlay is not None else None,
                         "what": "after the scene's GL work finished: draw_ui + glFinish, against "
                                 "glFinish alone, interleaved frame by frame (process CPU); the panel "
                                 "redraws on its own clock inside its block"}}
