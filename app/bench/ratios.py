"""The bench's verdict: each ratio against its baseline, with its target and whether it was met.

One small class per ratio (``RATIOS``): its name, target (an operator and a limit), what it means,
and ``measure``, which reads its value and detail from one run's cells, baselines and panel blocks
or says why this host cannot measure it. A ratio that cannot be measured is listed under
``not_measurable`` with the reason, never given a made-up value.

scheduler_overhead is read at the default particle count and scheduler_overhead_us at the smallest,
host_copy_efficiency from 4 MiB up, panel_cost_ms at the default particle count. The GPU ratios
(external_memory_frame_ms, semaphore_vs_finish, zero_copy_speedup) are read at 64 MiB where a
zero-copy backend exists.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

from app.bench.sweep import ZERO_COPY_BYTES, Sweep, size_label

_OPS = {"<=": operator.le, ">=": operator.ge}
ZERO_COPY_BACKENDS = ("external_memory", "gl_sharing")
NO_EXTERNAL_MEMORY = "external_memory is not available here (no GPU with Vulkan-exported memory)"


# -- reading a run ----------------------------------------------------------------------------------
def _median(d: dict, *path) -> float:
    for key in path:
        d = d[key]
    return float(d["median"])


def _mean(d: dict, *path) -> float:
    """The mean: what a cost paid on some frames only (the panel's redraws) amounts to per frame."""
    for key in path:
        d = d[key]
    return float(d.get("mean", d["median"]))


def _sustained(cell: dict) -> float:
    """Frames from idle to idle, per frame (cells.py ``_drained_ms``); the mean frame where not measured."""
    return float(cell.get("throughput_ms") or _mean(cell, "frame_ms"))


def _find(items: list[dict], **kw) -> dict | None:
    """The first item with every ``kw`` field equal and at least one frame."""
    for it in items:
        if all(it.get(k) == v for k, v in kw.items()) and it.get("frames", 0) > 0:
            return it
    return None


@dataclass(frozen=True)
class Run:
    """What the ratios read: one run's cells, baselines and panel blocks, its sweep and backends."""

    cells: list[dict]
    baselines: list[dict]
    panels: list[dict]
    sweep: Sweep
    backends: list[str]
    zero_copy_races: list[dict] = field(default_factory=list)
    kernel_race: list[dict] = field(default_factory=list)

    @property
    def default(self) -> str:
        """The backend ``glshare run`` picks: the first available."""
        return self.backends[0] if self.backends else "host_copy"

    @cached_property
    def finish_pairs(self) -> dict[int, tuple[dict, dict]]:
        """{particle count: (the default backend's finish cell, its bare loop)} where both were measured."""
        pairs = {}
        for n in sorted({c["size"] for c in self.cells if c["scene"] == "particles"}):
            cell = _find(self.cells, scene="particles", size=n, backend=self.default, sync="finish")
            bare = _find(self.baselines, kind="bare_loop", scene="particles", size=n, backend=self.default)
            if cell and bare:
                pairs[n] = (cell, bare)
        return pairs

    @cached_property
    def at_zero_copy(self) -> list[dict]:
        """The cells sharing 64 MiB a frame, the image first: one quad to draw, so its frame is the
        sharing itself (2M blended points take a GPU milliseconds to draw, whatever shares them)."""
        at = [c for c in self.cells if c.get("bytes_shared_per_frame") == ZERO_COPY_BYTES and c.get("frames", 0) > 0]
        return sorted(at, key=lambda c: c["scene"] != "image")

    def zero_copy_cell(self, backend: str, sync: str, scene: str | None = None) -> dict | None:
        return next((c for c in self.at_zero_copy if c["backend"] == backend and c["sync"] == sync
                     and (scene is None or c["scene"] == scene)), None)


@dataclass
class Measured:
    """A ratio's value where it was read, and its detail (extra JSON fields). ``what`` replaces the
    ratio's meaning where this measurement means something more particular."""

    value: float
    measured_at: str
    detail: dict = field(default_factory=dict)
    what: str | None = None


# -- the ratios -------------------------------------------------------------------------------------
class Ratio:
    """One ratio: its target (``op`` ``limit``), its meaning, and how it is read from a run."""

    name: ClassVar[str]
    op: ClassVar[str]
    limit: ClassVar[float]
    what: ClassVar[str]

    @property
    def target(self) -> str:
        return f"{self.op} {self.limit:g}"

    def meets(self, value: float) -> bool:
        return bool(_OPS[self.op](value, self.limit))

    def measure(self, run: Run) -> Measured | str:
        """The value and its detail, or why it cannot be measured in this run."""
        raise NotImplementedError

    def entry(self, m: Measured) -> dict:
        """The ratio's JSON fields: value, target, met, measured_at, what, then the detail."""
        return {"value": round(float(m.value), 4), "target": self.target, "met": self.meets(m.value),
                "measured_at": m.measured_at, "what": m.what or self.what, **m.detail}


class SchedulerOverhead(Ratio):
    name, op, limit = "scheduler_overhead", "<=", 1.05
    what = ("median over frame pairs of glshare's frame time (Session.step + present) / the bare loop frame next "
            "to it (frames interleaved one by one)")

    def measure(self, run: Run) -> Measured | str:
        n0 = run.sweep.default_particles
        if n0 not in run.finish_pairs:
            return f"no particles {n0} cell with a bare loop for {run.default}"
        cell, bare = run.finish_pairs[n0]
        paired = cell.get("paired", {})
        of_medians = _median(cell, "frame_ms") / _median(bare, "frame_ms")
        pair_ratio = paired.get("wall_ratio_median")
        return Measured(
            pair_ratio if pair_ratio is not None else of_medians,
            f"particles {size_label('particles', n0)}, {run.default}, finish",
            {"iqr": paired.get("wall_ratio_iqr"), "ratio_of_medians": round(of_medians, 4),
             "glshare_ms": _median(cell, "frame_ms"), "bare_ms": _median(bare, "frame_ms"),
             "by_size": {str(n): round(_median(c, "frame_ms") / _median(b, "frame_ms"), 4)
                         for n, (c, b) in run.finish_pairs.items()}},
            None if pair_ratio is not None else "glshare's median frame / the bare loop's median frame (no "
                                               "frame pairs in this run)")


class SchedulerOverheadUs(Ratio):
    name, op, limit = "scheduler_overhead_us", "<=", 30.0
    what = ("main-thread CPU time glshare adds to a frame over the bare loop frame next to it, median of the "
            "pairs (us; the scheduler's cost is CPU work on the calling thread: the measure with the least noise)")
    checked_floor_what = (
        "the bare loop frame plus only what glshare cannot drop, inline (both calls checked by glshare's "
        "SpecValidator, four transitions of its OwnershipTracker, one FrameRecord), against the bare "
        "frame of the same pair: what glshare's own checks and record add here before any scheduling")

    def measure(self, run: Run) -> Measured | str:
        if not run.finish_pairs:
            return f"no particles cell with a bare loop for {run.default}"
        n1 = min(run.finish_pairs)
        cell, bare = run.finish_pairs[n1]
        paired = cell.get("paired", {})
        cpu = paired.get("main_thread_diff_us_median")
        if cpu is None:
            cpu = (_median(cell, "cpu_ms", "main_thread") - _median(bare, "cpu_ms", "main_thread")) * 1e3
        wall = (_median(cell, "frame_ms") - _median(bare, "frame_ms")) * 1e3
        detail = {"iqr": paired.get("main_thread_diff_us_iqr"), "wall_difference_us": round(wall, 1),
                  "breakdown": cell.get("overhead_breakdown"), "python_ref_us": cell.get("python_ref_us")}
        detail.update(self._checked_floor(paired))
        return Measured(cpu, f"particles {size_label('particles', n1)}, {run.default}, finish", detail)

    def _checked_floor(self, paired: dict) -> dict:
        """The checked floor measured in the same pairs, and whether it alone already misses the target
        (beyond how far bare against bare strays from 0: the pairs' own noise). Empty where not measured."""
        floor = paired.get("checked_floor_us_median")
        if floor is None:
            return {}
        same = paired.get("bare_vs_bare_us_median")
        out = {"checked_floor_us": floor, "checked_floor_iqr": paired.get("checked_floor_us_iqr"),
               "bare_vs_bare_us": same, "bare_vs_bare_iqr": paired.get("bare_vs_bare_us_iqr"),
               "checked_floor_what": self.checked_floor_what}
        if not self.meets(floor - abs(same or 0.0)):
            out["impossible_here"] = (
                f"the checked floor alone is {floor:g} us > {self.limit:g} us"
                + (f" (bare against bare: {same:g} us)" if same is not None else "")
                + ": the target cannot be met on this machine without dropping per-call validation")
        return out


class HostCopyEfficiency(Ratio):
    name, op, limit = "host_copy_efficiency", ">=", 0.8
    what = ("memcpy floor (one numpy copy of the same bytes, CL's mapping -> GL's mapping) / glshare's acquire + "
            "release time")

    def measure(self, run: Run) -> Measured | str:
        least = run.sweep.efficiency_min_bytes
        per = {}
        for cell in run.cells:
            if cell.get("backend") != "host_copy" or cell.get("sync") != "finish" or "copy" not in cell:
                continue
            if cell["bytes_shared_per_frame"] < least:
                continue
            floor = _find(run.baselines, kind="memcpy_floor", scene=cell["scene"], size=cell["size"],
                          backend="host_copy")
            if floor:
                scene, size = cell["scene"], cell["size"]
                key = f"{scene} {size_label(scene, size) if scene == 'particles' else size}"
                per[key] = round(_median(floor, "ms") / _median(cell["copy"], "ms"), 4)
        if not per:
            if "host_copy" not in run.backends:
                return "host_copy is not available here"
            return f"no host_copy cell of >= {least} bytes"
        worst = min(per, key=per.get)
        return Measured(per[worst], f"{worst} (the lowest of {len(per)} sizes >= {least / (1 << 20):g} MiB)",
                        {"by_size": per})


class PanelCostMs(Ratio):
    """Means, not medians: the panel is redrawn on some frames and composited on the others. Read on
    the UI alone (the scene's GL work finished first), which isolates it from the scene's CPU work
    and its noise; from the same frames with and without the panel where no UI-alone block exists."""

    name, op, limit = "panel_cost_ms", "<=", 1.0
    what = ("mean process CPU time per frame (all threads: ImGui on the main thread, llvmpipe rasterizing it) "
            "of drawing the panel, after the scene's GL work finished, minus the same frame without it")
    model_what = ("process CPU per frame of the panel at the frame rate of a run with it (all threads, after the "
                  "scene's GL work finished, minus the same frame without it): the copy of the cached layer every "
                  "frame + a redraw's extra cost x the redraws per frame that panel_hz gives at that frame rate; "
                  "each term measured in this run (block_mean_ms: the plain mean of the UI-alone block, whose "
                  "frames run slower than a run's, so more of them carry a redraw)")

    def measure(self, run: Run) -> Measured | str:
        panel = next((p for p in run.panels if p["backend"] == run.default), None)
        if panel is None:
            return "no panel block (the default particle count is not in this sweep)"
        alone = panel.get("ui_alone")
        with_, without = (alone["panel"], alone["nothing"]) if alone else (panel["with_panel"], panel["without_panel"])
        cpu = _mean(with_, "cpu_ms", "process") - _mean(without, "cpu_ms", "process")
        main = _mean(with_, "cpu_ms", "main_thread") - _mean(without, "cpu_ms", "main_thread")
        wall = _mean(with_, "frame_ms") - _mean(without, "frame_ms")
        model = _panel_model(alone, panel) if alone else None
        detail = {
            "block_mean_ms": round(cpu, 4), "wall_difference_ms": round(wall, 4),
            "main_thread_ms": round(main, 4), "other_threads_ms": round(cpu - main, 4),
            "model": model["model"] if model else None,
            "draw_ui_ms": _median(panel, "draw_ui_ms"), "snapshot_ms": _median(panel, "snapshot_ms"),
            "overlay_alone_ms": round(_mean(alone["overlay"], "cpu_ms", "process")
                                      - _mean(alone["nothing"], "cpu_ms", "process"), 4) if alone else None,
            "overlay_cost_ms": round(_median(panel["with_overlay"], "cpu_ms", "process")
                                     - _median(panel["without_panel"], "cpu_ms", "process"), 4)
            if "with_overlay" in panel else None}
        return Measured(model["value"] if model else cpu,
                        f"particles {size_label('particles', panel['size'])}, {run.default}, finish; "
                        f"drawn: {panel['drawn']}", detail, self.model_what if model else None)


def _panel_model(alone: dict, panel: dict) -> dict | None:
    """The panel's cost per frame of a run: composite + (redraw - composite) x redraws per frame,
    where redraws per frame = panel_hz x the frame time of the run's frames with the panel drawn."""
    redraw, composite, hz = alone.get("panel_redraw_ms"), alone.get("panel_composite_ms"), alone.get("panel_hz")
    if not (redraw and composite and hz) or "with_panel" not in panel:
        return None
    nothing = _mean(alone["nothing"], "cpu_ms", "process")
    frame_ms = _mean(panel["with_panel"], "frame_ms")
    per_frame = min(1.0, hz * frame_ms / 1e3)
    copy_ms = _mean(composite) - nothing
    extra = _mean(redraw) - _mean(composite)
    return {"value": copy_ms + extra * per_frame, "model": {
        "composite_ms": round(copy_ms, 4), "redraw_extra_ms": round(extra, 4), "panel_hz": hz,
        "run_frame_ms": round(frame_ms, 3), "redraws_per_frame": round(per_frame, 4),
        "redraws_in_block": alone.get("panel_redraws"), "panel_frames_in_block": alone.get("panel_frames"),
        "composite_path": alone.get("composite_path")}}


def _external_finish_cell(run: Run) -> dict | str:
    """external_memory's finish cell at 64 MiB, or why there is none."""
    if "external_memory" not in run.backends:
        return NO_EXTERNAL_MEMORY
    ext = run.zero_copy_cell("external_memory", "finish")
    return ext if ext is not None else "no external_memory x finish cell at 64 MiB"


class ExternalMemoryFrameMs(Ratio):
    name, op, limit = "external_memory_frame_ms", "<=", 0.2
    what = ("external_memory's frame with finish sync, sustained (frames back to back from idle to idle: "
            "glFinish wait for GL's previous draw, acquire, kernel, release, clFinish, the scene's draw)")

    def measure(self, run: Run) -> Measured | str:
        ext = _external_finish_cell(run)
        if isinstance(ext, str):
            return ext
        phases = ext.get("phases_us", {})
        others = {(c["scene"], c["backend"], c["sync"]): c for c in run.at_zero_copy}
        return Measured(_sustained(ext), f"{ext['scene']} {ext['size']}, finish", {
            "mean_ms": _mean(ext, "frame_ms"), "median_ms": _median(ext, "frame_ms"),
            "waits_us": ext.get("waits_us"), "cl_device_us": ext.get("cl_device_us"),
            "sharing_cpu_us": {k: phases.get(k, {}).get("median") for k in ("acquire", "compute", "release")},
            "other_scenes_sustained_ms": {f"{k[0]} {k[1]} {k[2]}": _sustained(c) for k, c in others.items()}})


class SemaphoreVsFinish(Ratio):
    name, op, limit = "semaphore_vs_finish", ">=", 1.0
    what = ("finish / semaphore sustained frame time, frames back to back from idle to idle (>= 1: no "
            "slower). Without CPU waits the CPU runs ahead of the GPU, so a single frame's time says "
            "little: the drained time counts the GPU's backlog too")

    def measure(self, run: Run) -> Measured | str:
        ext = _external_finish_cell(run)
        if isinstance(ext, str):
            return ext
        sem = run.zero_copy_cell("external_memory", "semaphore", scene=ext["scene"])
        if sem is None:
            return "no external_memory x semaphore cell at 64 MiB"
        return Measured(_sustained(ext) / _sustained(sem), f"{ext['scene']} {ext['size']}",
                        {"medians": [_median(ext, "frame_ms"), _median(sem, "frame_ms")]})


def _semaphore_cells(run: Run, with_bare: bool = False) -> list[dict] | str:
    """external_memory's semaphore cells of the image scene at 64 MiB, one per frames-in-flight depth
    (``with_bare``: those measured beside their bare loop), or why there are none."""
    if "external_memory" not in run.backends:
        return NO_EXTERNAL_MEMORY
    cells = [c for c in run.at_zero_copy if c["backend"] == "external_memory" and c["sync"] == "semaphore"
             and c["scene"] == "image" and c.get("throughput_ms") and (c.get("bare_throughput_ms") or not with_bare)]
    if not cells:
        return "no external_memory x semaphore image cell at 64 MiB" + (" with its bare loop" if with_bare else "")
    return cells


class SemaphoreFrameMs(Ratio):
    """Read on the depth that sustained the shortest frame; every depth's figures, and the bare loop's
    at each depth (what the machine sustains with none of glshare around the same calls), in the detail."""

    name, op, limit = "external_memory_semaphore_frame_ms", "<=", 0.2
    what = ("external_memory's image frame with semaphore sync at 64 MiB, sustained (frames back to back from "
            "idle to idle), at the frames-in-flight depth that sustained the shortest frame")

    def measure(self, run: Run) -> Measured | str:
        cells = _semaphore_cells(run)
        if isinstance(cells, str):
            return cells
        best = min(cells, key=_sustained)
        by = {str(c.get("frames_in_flight")): {"glshare_ms": _sustained(c), "bare_ms": c.get("bare_throughput_ms"),
                                               "copies": c.get("copies")} for c in cells}
        return Measured(_sustained(best), f"image {best['size']}, semaphore, {best.get('frames_in_flight')} frames in "
                        f"flight on {best.get('copies')} copies", {"by_frames_in_flight": by})


class SemaphoreOverhead(Ratio):
    name, op, limit = "semaphore_scheduler_overhead", "<=", 1.05
    what = ("glshare's sustained semaphore frame / the bare loop's (the same calls, copies and depth, with no "
            "scheduler, validation, ownership tracking or records), image at 64 MiB, at the depth of "
            "external_memory_semaphore_frame_ms")

    def measure(self, run: Run) -> Measured | str:
        cells = _semaphore_cells(run, with_bare=True)
        if isinstance(cells, str):
            return cells
        best = min(cells, key=_sustained)
        return Measured(_sustained(best) / best["bare_throughput_ms"],
                        f"image {best['size']}, semaphore, {best.get('frames_in_flight')} frames in flight",
                        {"glshare_ms": _sustained(best), "bare_ms": best["bare_throughput_ms"]})


class ZeroCopySpeedup(Ratio):
    """Read on the first zero-copy backend (in the registry's order) that has a 64 MiB finish cell
    with a host_copy cell of the same scene beside it."""

    name, op, limit = "zero_copy_speedup", ">=", 100.0
    what = "host_copy / the zero-copy backend's sustained frame time (same scene, size and sync, idle to idle)"

    def measure(self, run: Run) -> Measured | str:
        why = []
        for backend in (b for b in run.backends if b in ZERO_COPY_BACKENDS):
            ext = run.zero_copy_cell(backend, "finish")
            if ext is None:
                why.append(f"no {backend} cell at 64 MiB")
                continue
            host = run.zero_copy_cell("host_copy", "finish", scene=ext["scene"])
            if host is None:
                why.append(f"no host_copy cell at 64 MiB beside {backend}'s {ext['scene']} cell")
                continue
            return Measured(
                _sustained(host) / _sustained(ext), f"{ext['scene']} {ext['size']}, finish",
                {"zero_copy_backend": backend, "medians": [_median(host, "frame_ms"), _median(ext, "frame_ms")]},
                f"host_copy / {backend} sustained frame time (same scene, size and sync, idle to idle)")
        return why[0] if why else NO_EXTERNAL_MEMORY


class JuliaKernelVsReference(Ratio):
    """Read on the kernel the default backend's image cell runs (``cell["cl_view"]``: an image or a
    pitched buffer) against the reference formulation writing the sample's texture format (RGBA
    float) and glshare's (RGBA8); the lowest of those ratios over the race's sizes."""

    name, op, limit = "julia_kernel_vs_reference", ">=", 1.0
    what = ("the reference formulation's device time / glshare's Julia kernel's (the one the default backend "
            "runs), the lowest over the race's sizes and both reference texture formats; >= 1: glshare's kernel "
            "is at least as fast")

    def measure(self, run: Run) -> Measured | str:
        if not run.kernel_race:
            return "no kernel race in this run"
        image_cell = next((c for c in run.cells if c["scene"] == "image" and c["backend"] == run.default
                           and c.get("cl_view")), None)
        view = image_cell["cl_view"] if image_cell else "image"
        variant = "glshare julia_buffer (pitched buffer)" if view == "buffer" else "glshare julia (rgba8 image)"
        by = {}
        for k in run.kernel_race:
            for race in k["races"]:
                if race["glshare"] == variant:
                    by[f"{k['size']} vs {race['reference']}"] = race["ratio_median"]
        if not by:
            return f"no race of {variant}"
        worst = min(by, key=by.get)
        return Measured(by[worst], f"{worst} ({variant}, as {run.default} runs it)",
                        {"by_size": by, "same_texels": all(k["same_texels"] for k in run.kernel_race),
                         "other_variant": {f"{k['size']} vs {r['reference']}": r["ratio_median"]
                                           for k in run.kernel_race for r in k["races"] if r["glshare"] != variant}})


class ZeroCopyVsCopyFreeHostCopy(Ratio):
    name, op, limit = "zero_copy_vs_host_copy_without_copies", "<=", 1.0
    what = ("the zero-copy backend's frame / host_copy's frame without its copies (from the sixteenth session "
            "on measured: the same session's frame with every call made but the copies; before it, host_copy's "
            "frame - its copy calls timed alone), both open at once and timed frame by frame in turn; the "
            "highest over the races' scenes and sizes (<= 1: the zero-copy frame is no slower than host_copy's "
            "would be with free copies)")

    def measure(self, run: Run) -> Measured | str:
        if not run.zero_copy_races:
            return "no zero-copy backend beside host_copy here"
        by = {f"{z['scene']} {z['size']}": z["ratio_median"] for z in run.zero_copy_races}
        defined = {k: v for k, v in by.items() if v is not None}
        if not defined:
            return "no race round had host_copy's frame longer than its copies"
        worst = max(defined, key=defined.get)
        return Measured(by[worst], f"{worst}, {run.zero_copy_races[0]['backend']} vs host_copy, finish",
                        {"by_size": by, "ranges": {f"{z['scene']} {z['size']}": z["ratio_range"]
                                                   for z in run.zero_copy_races}})


class DeviceTimeLimit(Ratio):
    """Read on the default backend's image cells at the largest image size: semaphore sync where
    that was measured (the sync the target is meant for), else finish."""

    name, op, limit = "device_time_limit", "<=", 1.5
    what = ("glshare's frame / (the kernel's CL device time + the scene's GL pass time of the same frame), the "
            "median over the frames where both were measured")
    sustained_what = ("glshare's sustained frame (frames back to back, idle to idle) / the median over frames of "
                      "(the kernel's CL device time + the scene's GL pass time of the same frame): with semaphore "
                      "sync the CPU does not wait, so a single frame's own time is not the frame")
    software_what = ("glshare's frame / (the kernel's CL device time + the scene's draw alone timed to glFinish), "
                     "medians: on a software rasterizer GL's timer queries are stamped as commands are queued and "
                     "miss the rasterizer threads' work, so the draw is timed by its wall time instead")

    def measure(self, run: Run) -> Measured | str:
        cells = [c for c in run.cells if c["scene"] == "image" and c["backend"] == run.default and c.get("device_limit")]
        if not cells:
            return "no image cell of the default backend with both CL and GL device times (GL timer queries)"
        largest = max(int(c["size"].split("x")[0]) * int(c["size"].split("x")[1]) for c in cells)
        at = [c for c in cells if int(c["size"].split("x")[0]) * int(c["size"].split("x")[1]) == largest]
        semaphore = [c for c in at if c["sync"] == "semaphore"]  # the depth that sustained the shortest frame
        cell = (min(semaphore, key=_sustained) if semaphore else None) or next((c for c in at if c["sync"] == "finish"), None)
        if cell is None:
            return "no finish or semaphore image cell with both CL and GL device times at the largest image size"
        lim = cell["device_limit"]
        detail = {"iqr": lim["ratio_iqr"], "frames": lim["frames"], "limit_ms": lim["limit_ms"]["median"],
                  "cl_kernel_ms": lim["cl_kernel_ms"]["median"], "gl_pass_ms": lim["gl_pass_ms"]["median"],
                  "frame_ms": cell["frame_ms"]["median"], "ratio_by_queries": lim["ratio_median"],
                  "ratio_by_finish": lim.get("ratio_by_finish"), "limit_by_finish_ms": lim.get("limit_by_finish_ms")}
        where = f"image {cell['size']}, {cell['backend']}, {cell['sync']}"
        if cell["sync"] != "finish":  # no CPU wait: a frame's own time is not the frame; the sustained one is
            sustained = _sustained(cell)
            detail.update(iqr=None, sustained_frame_ms=round(sustained, 4))
            detail.update(self._bare_limit(cell, lim["limit_ms"]["median"]))
            return Measured(round(sustained / max(lim["limit_ms"]["median"], 1e-9), 3), where, detail,
                            self.sustained_what)
        if lim.get("gl_software") and lim.get("ratio_by_finish") is not None:
            return Measured(lim["ratio_by_finish"], where, detail, self.software_what)
        return Measured(lim["ratio_median"], where, detail)

    def _bare_limit(self, cell: dict, limit_ms: float) -> dict:
        """The bare loop of the same depth against the same limit (``BareLoop.drained_semaphore_ms``:
        the same GPU work through the same calls with none of glshare), and whether it alone
        already misses the target: then the GPU's frame, not glshare's, is what stands above the
        device times (the hand-over between CL and GL on the GPU). Empty where not measured."""
        bare = cell.get("bare_throughput_ms")
        if not bare:
            return {}
        ratio = round(bare / max(limit_ms, 1e-9), 3)
        out = {"bare_sustained_frame_ms": round(bare, 4), "bare_ratio": ratio}
        if not self.meets(ratio):
            out["impossible_here"] = (
                f"the bare loop alone sustains {bare:.4f} ms a frame = {ratio:g}x the limit > {self.limit:g}x: "
                "the GPU's frame with none of glshare's work stands above the kernel's and the pass's device "
                "times (the hand-over between CL and GL on the GPU), so the target cannot be met on this machine")
        return out


RATIOS: tuple[Ratio, ...] = (SchedulerOverhead(), SchedulerOverheadUs(), HostCopyEfficiency(), PanelCostMs(),
                             ExternalMemoryFrameMs(), SemaphoreFrameMs(), SemaphoreOverhead(), SemaphoreVsFinish(),
                             ZeroCopySpeedup(), JuliaKernelVsReference(),
                             ZeroCopyVsCopyFreeHostCopy(), DeviceTimeLimit())


def compute_ratios(result: dict, sweep: Sweep, backends: list[str]) -> tuple[dict, dict]:
    """Returns (ratios, not_measurable) from the cells, baselines and panel blocks of one run: every
    ratio of ``RATIOS`` is in exactly one of them, by name."""
    run = Run(result["cells"], result["baselines"], result["panels"], sweep, list(backends),
              result.get("zero_copy_races", []), result.get("kernel_race", []))
    ratios: dict = {}
    missing: dict = {}
    for ratio in RATIOS:
        got = ratio.measure(run)
        if isinstance(got, str):
            missing[ratio.name] = got
        else:
            ratios[ratio.name] = ratio.entry(got)
    return ratios, missing
