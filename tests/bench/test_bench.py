"""glshare bench: behaviour, never timings. A tiny sweep end to end (GLSHARE_BENCH_TINY=1), and the
ratio and plot logic on made-up results (the GPU machine's ratios included, so they are tested here)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support import ROOT

from app.bench.sweep import MIB, TINY, ZERO_COPY_BYTES, Sweep, shared_bytes
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import HostMapped
from app.trace.png import read_png

CELL_FIELDS = ("scene", "size", "backend", "sync", "frames", "frame_ms", "cpu_ms", "phases_us", "waits_us",
               "bytes_shared_per_frame", "bytes_moved_per_frame", "bandwidth_gbps", "errors")
TOP_FIELDS = ("schema", "run_name", "date", "glshare", "commit", "machine", "gl", "cl", "sweep", "backends",
              "sync_modes", "cells", "baselines", "panels", "failures", "zero_copy_races", "kernel_race", "races",
              "ratios", "not_measurable", "duration_s")
NEW_RATIOS = {"julia_kernel_vs_reference", "zero_copy_vs_host_copy_without_copies", "device_time_limit",
              "external_memory_semaphore_frame_ms", "semaphore_scheduler_overhead"}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from support import run_glshare

    out = tmp_path_factory.mktemp("bench")
    res = run_glshare("bench", "--quick", "--json", str(out / "b.json"), "--plot", str(out / "b.png"),
                      env={"GLSHARE_BENCH_TINY": "1"})
    return res, out


def test_tiny_bench_exits_0_and_writes_both(tiny_run):
    res, out = tiny_run
    assert res.returncode == 0, res.stderr
    assert "ratios" in res.stdout and "scheduler_overhead" in res.stdout
    assert "glshare bench: [" in res.stderr  # the progress bar (one line per cell off a terminal)
    assert (out / "b.json").is_file() and (out / "b.png").is_file()


def test_json_has_every_field(tiny_run):
    r = json.loads((tiny_run[1] / "b.json").read_text())
    for key in TOP_FIELDS:
        assert key in r, key
    assert r["schema"] == "glshare.bench/1" and r["sweep"]["name"] == "tiny"
    assert r["sweep"]["collector"].startswith("paused during each cell's frames")
    assert r["machine"]["cores"] >= 1 and r["machine"]["cpu"]
    # the host's speed for glshare's Python, measured: a positive time, well under a millisecond
    assert 0 < r["machine"]["python_ref_us"] < 1000 and "bookkeeping" in r["machine"]["python_ref_what"]
    assert r["gl"]["renderer"] and r["cl"]["device"] and len(r["commit"]) in (0, 40)
    assert r["failures"] == []
    for cell in r["cells"]:
        for key in CELL_FIELDS:
            assert key in cell, (key, cell)
        assert cell["errors"] == 0, cell.get("first_error")
        assert cell["frames"] > 0
        assert 0 < cell["frame_ms"]["median"] <= cell["frame_ms"]["p95"]
        for phase in ("acquire", "compute", "release", "render"):
            assert cell["phases_us"][phase]["median"] > 0, phase


def test_every_available_sync_mode_has_cells(tiny_run):
    r = json.loads((tiny_run[1] / "b.json").read_text())
    for backend, modes in r["sync_modes"].items():
        wanted = {m for m, why in modes.items() if why == "available"}
        assert "finish" in wanted
        for scene, sizes in (("particles", TINY.particles), ("image", [f"{w}x{h}" for w, h in TINY.images])):
            for size in sizes:
                got = {c["sync"] for c in r["cells"] if c["backend"] == backend and c["scene"] == scene
                       and c["size"] == size}
                assert got == wanted, (backend, scene, size, got)
    # every cell also has its sustained (idle-to-idle) frame time, at least as long as a frame's
    # own CPU-side time can be without the GPU's backlog counted
    for c in r["cells"]:
        assert c["throughput_ms"] > 0, c["sync"]


def test_bytes_and_bandwidth(tiny_run):
    r = json.loads((tiny_run[1] / "b.json").read_text())
    hc = [c for c in r["cells"] if c["backend"] == "host_copy"]
    hm = [c for c in r["cells"] if c["backend"] == "host_mapped"]
    assert hc and hm
    assert all(c["bytes_moved_per_frame"] == 0 for c in hm)  # zero-copy: the records moved nothing
    for c in hc:
        n = c["size"]
        expect = 32 * n if c["scene"] == "particles" else 4 * math.prod(int(x) for x in n.split("x"))
        assert c["bytes_shared_per_frame"] == expect  # WORKLOADS.md: float4 position + float4 color
        assert c["bytes_moved_per_frame"] == expect  # host_copy copies all of it each frame
        assert c["bandwidth_gbps"] == pytest.approx(expect / (c["frame_ms"]["median"] * 1e6), rel=0.01, abs=2e-3)
        if c["sync"] == "finish":
            assert c["copy"]["gbps"] == pytest.approx(expect / (c["copy"]["ms"]["median"] * 1e6), rel=0.01, abs=2e-3)


def test_baselines_interleaved_per_size(tiny_run):
    r = json.loads((tiny_run[1] / "b.json").read_text())
    for c in (c for c in r["cells"] if c["backend"] == "host_copy" and c["sync"] == "finish"):
        kinds = {b["kind"]: b for b in r["baselines"]
                 if (b["scene"], b["size"], b["backend"]) == (c["scene"], c["size"], c["backend"])}
        assert set(kinds) == {"bare_loop", "memcpy_floor"}
        assert kinds["bare_loop"]["frames"] == c["frames"]  # one bare frame next to each glshare frame
        assert kinds["memcpy_floor"]["bytes"] == c["bytes_shared_per_frame"]  # one copy, as host_copy makes
        assert kinds["memcpy_floor"]["ms"]["median"] > 0
        assert c["vs_bare"] == pytest.approx(c["frame_ms"]["median"] / kinds["bare_loop"]["frame_ms"]["median"],
                                             rel=0.01)


def test_ratios_carry_targets_and_verdicts(tiny_run):
    r = json.loads((tiny_run[1] / "b.json").read_text())
    ratios = r["ratios"]
    for name in ("scheduler_overhead", "scheduler_overhead_us", "host_copy_efficiency", "panel_cost_ms"):
        entry = ratios[name]
        assert isinstance(entry["value"], float) and math.isfinite(entry["value"]), name
        assert entry["target"].split()[0] in ("<=", ">=") and isinstance(entry["met"], bool)
        assert entry["measured_at"]
    for name in ("scheduler_overhead", "host_copy_efficiency"):
        assert ratios[name]["value"] > 0
    assert ratios["scheduler_overhead"]["measured_at"].startswith(f"particles {TINY.default_particles:,}")
    parts = ratios["scheduler_overhead_us"]["breakdown"]["in_frame"]["parts_us"]
    assert "validator" in parts and all(v >= 0 for v in parts.values())
    # the checked floor was measured in the same pairs, and its verdict follows from its value
    floor = ratios["scheduler_overhead_us"]["checked_floor_us"]
    assert isinstance(floor, float) and math.isfinite(floor)
    same = ratios["scheduler_overhead_us"]["bare_vs_bare_us"]  # the pairs' own noise, measured alongside
    assert isinstance(same, float) and math.isfinite(same)
    assert ("impossible_here" in ratios["scheduler_overhead_us"]) == (floor - abs(same) > 30.0)
    if "external_memory" not in [b["name"] for b in r["backends"] if b["available"]]:
        for name in ("zero_copy_speedup", "semaphore_vs_finish", "external_memory_frame_ms"):
            assert name not in ratios and r["not_measurable"][name]


def _has_color(px: np.ndarray, color, least: int, tol: int = 12) -> bool:
    """At least ``least`` pixels within ``tol`` of ``color`` (lines are antialiased; their cores are not)."""
    near = (np.abs(px.astype(int) - np.array(color)) <= tol).all(axis=-1)
    return int(near.sum()) >= least


def test_plot_is_readable_and_not_flat(tiny_run):
    from app.bench.plot import PALETTE

    px = read_png(tiny_run[1] / "b.png")
    assert px.shape == (720, 1280, 3)
    assert px.std() > 10
    assert _has_color(px, PALETTE[0], 50)  # the first series' line and marks
    assert _has_color(px, (255, 255, 255), 720 * 1280 // 2)  # a white background: the plot is not a blot


# -- the logic on made-up results -------------------------------------------------------------------
def _cell(scene, size, backend, sync, ms, copy_ms=None, cpu=1.0):
    nbytes = shared_bytes(scene, size)
    c = {"scene": scene, "size": size if scene == "particles" else f"{size[0]}x{size[1]}", "backend": backend,
         "sync": sync, "frames": 10, "frame_ms": {"median": ms, "p95": ms * 1.2},
         "cpu_ms": {"main_thread": {"median": cpu, "p95": cpu}, "process": {"median": cpu * 2, "p95": cpu * 2}},
         "bytes_shared_per_frame": nbytes, "bytes_moved_per_frame": 0 if backend == "external_memory" else nbytes,
         "bandwidth_gbps": nbytes / (ms * 1e6)}
    if copy_ms is not None:
        c["copy"] = {"ms": {"median": copy_ms, "p95": copy_ms}}
    return c


def _bare(scene, size, backend, ms, cpu):
    return {"kind": "bare_loop", "scene": scene, "size": size, "backend": backend, "frames": 10,
            "bytes_shared_per_frame": shared_bytes(scene, size), "frame_ms": {"median": ms, "p95": ms},
            "cpu_ms": {"main_thread": {"median": cpu, "p95": cpu}, "process": {"median": cpu, "p95": cpu}}}


def _floor(scene, size, ms):
    return {"kind": "memcpy_floor", "scene": scene, "size": size, "backend": "host_copy", "frames": 5,
            "bytes": 2 * shared_bytes(scene, size), "ms": {"median": ms, "p95": ms}}


SWEEP = Sweep("t", particles=(16_384, 65_536, 2 << 20), images=(), warmup=1, frames=2, rounds=1, cell_budget_s=1)


def _made_up(gpu: bool) -> tuple[dict, list[str]]:
    cells = [_cell("particles", 16_384, "host_copy", "finish", 2.0, cpu=1.02),
             _cell("particles", 65_536, "host_copy", "finish", 10.2, copy_ms=0.5),
             _cell("particles", 2 << 20, "host_copy", "finish", 40.0, copy_ms=20.0)]
    baselines = [_bare("particles", 16_384, "host_copy", 1.9, 1.0), _bare("particles", 65_536, "host_copy", 10.0, 5),
                 _floor("particles", 65_536, 0.2), _floor("particles", 2 << 20, 18.0)]
    backends = ["host_copy"]
    if gpu:
        backends = ["external_memory", "host_copy"]
        cells += [_cell("particles", 65_536, "external_memory", "finish", 0.11),
                  _cell("particles", 2 << 20, "external_memory", "finish", 0.16),
                  _cell("particles", 2 << 20, "external_memory", "semaphore", 0.1)]
        baselines += [_bare("particles", 65_536, "external_memory", 0.1, 0.05)]
    panels = [{"backend": backends[0], "size": 65_536, "drawn": "overlay", "with_panel": cells[1] | {
        "cpu_ms": {"main_thread": {"median": 1.5}, "process": {"median": 2.5}}, "frame_ms": {"median": 10.6}},
        "without_panel": cells[1], "draw_ui_ms": {"median": 0.4}, "snapshot_ms": {"median": 0.1}}]
    return {"cells": cells, "baselines": baselines, "panels": panels}, backends


def test_ratios_on_cpu_results():
    from app.bench.ratios import compute_ratios

    result, backends = _made_up(gpu=False)
    ratios, missing = compute_ratios(result, SWEEP, backends)
    assert ratios["scheduler_overhead"]["value"] == pytest.approx(10.2 / 10.0)
    assert ratios["scheduler_overhead"]["met"] is True and ratios["scheduler_overhead"]["target"] == "<= 1.05"
    assert ratios["scheduler_overhead_us"]["value"] == pytest.approx(20.0)  # (1.02 - 1.0) ms of main thread
    assert ratios["scheduler_overhead_us"]["met"] is True
    assert "checked_floor_us" not in ratios["scheduler_overhead_us"]  # not measured: not made up
    result["cells"][0]["paired"] = {"main_thread_diff_us_median": 50.0, "checked_floor_us_median": 40.0,
                                    "checked_floor_us_iqr": [30.0, 50.0]}
    entry = compute_ratios(result, SWEEP, backends)[0]["scheduler_overhead_us"]
    assert entry["value"] == 50.0 and entry["met"] is False and entry["checked_floor_us"] == 40.0
    assert "40 us > 30 us" in entry["impossible_here"]
    result["cells"][0]["paired"]["bare_vs_bare_us_median"] = -15.0  # pairs that stray 15 us: 40 - 15 <= 30
    assert "impossible_here" not in compute_ratios(result, SWEEP, backends)[0]["scheduler_overhead_us"]
    del result["cells"][0]["paired"]["bare_vs_bare_us_median"]
    result["cells"][0]["paired"]["checked_floor_us_median"] = 12.0  # a floor under the target: possible
    assert "impossible_here" not in compute_ratios(result, SWEEP, backends)[0]["scheduler_overhead_us"]
    del result["cells"][0]["paired"]
    # 65,536 particles share 2 MiB (< 4 MiB): only the 64 MiB cell counts
    assert ratios["host_copy_efficiency"]["value"] == pytest.approx(18.0 / 20.0)
    assert list(ratios["host_copy_efficiency"]["by_size"]) == ["particles 2,097,152"]
    assert ratios["panel_cost_ms"]["value"] == pytest.approx(0.5) and ratios["panel_cost_ms"]["met"] is True
    assert ratios["panel_cost_ms"]["main_thread_ms"] == pytest.approx(0.5)
    gpu_only = {"external_memory_frame_ms", "zero_copy_speedup", "semaphore_vs_finish"}
    assert set(missing) == gpu_only | NEW_RATIOS  # no races in these made-up results
    assert all("external_memory" in why for name, why in missing.items() if name in gpu_only)


def test_panel_cost_is_the_copy_plus_the_redraws_a_run_makes():
    from app.bench.ratios import compute_ratios

    result, backends = _made_up(gpu=False)

    def ms(mean):
        return {"median": mean, "p95": mean, "mean": mean}

    def kind(mean):
        return {"frame_ms": ms(mean), "cpu_ms": {"main_thread": ms(mean / 2), "process": ms(mean)}}

    panel = result["panels"][0]
    panel["with_panel"] = {**panel["with_panel"], "frame_ms": ms(20.0)}  # a run's frame with the panel: 20 ms
    # the UI-alone block: 40 panel frames, 4 of them redraws of 10.3 ms, the others a 0.4 ms copy
    panel["ui_alone"] = {"panel": kind(0.1 + (36 * 0.4 + 4 * 10.3) / 40), "overlay": kind(0.3), "nothing": kind(0.1),
                         "frames": 40, "panel_frames": 40, "panel_redraws": 4, "panel_redraw_ms": ms(10.4),
                         "panel_composite_ms": ms(0.5), "panel_hz": 2.0, "composite_path": "glCopyImageSubData"}
    entry = compute_ratios(result, SWEEP, backends)[0]["panel_cost_ms"]
    # 2 Hz at 20 ms a frame: a redraw every 25 frames; copy 0.4 ms + (10.4 - 0.5) ms / 25
    assert entry["model"]["redraws_per_frame"] == pytest.approx(0.04)
    assert entry["value"] == pytest.approx(0.4 + 9.9 * 0.04) and entry["met"] is True
    assert entry["block_mean_ms"] == pytest.approx((36 * 0.4 + 4 * 10.3) / 40)  # the plain mean, also reported
    panel["ui_alone"]["panel_redraw_ms"] = None  # no redraw in the block: the plain mean is all there is
    entry = compute_ratios(result, SWEEP, backends)[0]["panel_cost_ms"]
    assert entry["model"] is None and entry["value"] == pytest.approx(entry["block_mean_ms"])


def test_ratios_on_gpu_results():
    from app.bench.ratios import compute_ratios

    result, backends = _made_up(gpu=True)
    ratios, missing = compute_ratios(result, SWEEP, backends)
    assert ZERO_COPY_BYTES == 32 * (2 << 20) == 64 * MIB
    assert ratios["zero_copy_speedup"]["value"] == pytest.approx(40.0 / 0.16)
    assert ratios["zero_copy_speedup"]["met"] is True
    assert ratios["external_memory_frame_ms"]["value"] == pytest.approx(0.16)
    assert ratios["external_memory_frame_ms"]["met"] is True
    assert ratios["semaphore_vs_finish"]["value"] == pytest.approx(0.16 / 0.1)
    assert ratios["scheduler_overhead"]["value"] == pytest.approx(0.11 / 0.1)  # the default backend: first available
    assert ratios["scheduler_overhead"]["met"] is False
    assert set(missing) == NEW_RATIOS  # no races in these made-up results


def test_semaphore_ratios_read_the_depth_that_sustained_the_shortest_frame():
    """external_memory_semaphore_frame_ms and semaphore_scheduler_overhead read the image cell at 64 MiB
    whose frames-in-flight depth sustained the shortest frame, against the bare loop of that depth;
    device_time_limit reads the same cell."""
    import io

    from app.bench.ratios import compute_ratios
    from app.bench.report import ratio_notes

    result, backends = _made_up(gpu=True)
    for depth, glshare_ms, bare_ms in ((2, 0.30, 0.29), (4, 0.24, 0.21), (8, 0.26, 0.19)):
        cell = _cell("image", (4096, 4096), "external_memory", "semaphore", glshare_ms)
        cell.update(size="4096x4096", bytes_shared_per_frame=ZERO_COPY_BYTES, throughput_ms=glshare_ms,
                    bare_throughput_ms=bare_ms, frames_in_flight=depth, copies=depth,
                    device_limit={"ratio_median": 9.9, "ratio_iqr": [9, 10], "frames": 10, "limit_ms": {"median": 0.12},
                                  "cl_kernel_ms": {"median": 0.07}, "gl_pass_ms": {"median": 0.05}})
        result["cells"].append(cell)
    ratios, _ = compute_ratios(result, SWEEP, backends)
    frame = ratios["external_memory_semaphore_frame_ms"]
    assert frame["value"] == pytest.approx(0.24) and frame["met"] is False
    assert frame["measured_at"] == "image 4096x4096, semaphore, 4 frames in flight on 4 copies"
    assert frame["by_frames_in_flight"]["8"] == {"glshare_ms": 0.26, "bare_ms": 0.19, "copies": 8}
    overhead = ratios["semaphore_scheduler_overhead"]
    assert overhead["value"] == pytest.approx(0.24 / 0.21, abs=1e-4) and overhead["met"] is False  # rounded to 4 places
    limit = ratios["device_time_limit"]
    assert limit["value"] == pytest.approx(0.24 / 0.12)
    # the bare loop of that depth against the same limit: 0.21 / 0.12 = 1.75 > 1.5, so the machine's
    # GPU frame alone misses the target and the ratio says so; at 0.17 ms (1.417) it would not
    assert limit["bare_sustained_frame_ms"] == 0.21 and limit["bare_ratio"] == pytest.approx(0.21 / 0.12, abs=1e-3)
    assert "1.75x the limit > 1.5x" in limit["impossible_here"]
    out = io.StringIO()
    ratio_notes(ratios, out)
    assert "device_time_limit: the bare loop of the same frames in flight sustains 0.2100 ms = 1.750x" in out.getvalue()
    result["cells"][-2]["bare_throughput_ms"] = 0.17
    limit = compute_ratios(result, SWEEP, backends)[0]["device_time_limit"]
    assert limit["bare_ratio"] == pytest.approx(0.17 / 0.12, abs=1e-3) and "impossible_here" not in limit
    result["cells"][-2]["throughput_ms"] = 0.19  # depth 4 now sustains 0.19 ms: met
    ratios, _ = compute_ratios(result, SWEEP, backends)
    assert ratios["external_memory_semaphore_frame_ms"]["met"] is True


RESULTS = ROOT / "bench" / "results"
COMMITTED = sorted(p for p in RESULTS.glob("*.json") if "cells" in json.loads(p.read_text()))


def _recorded_sweep(record: dict) -> Sweep:
    s = record["sweep"]
    return Sweep(s["name"], tuple(s["particles"]), tuple(tuple(i) for i in s["images"]), s["warmup_frames"],
                 s["timed_frames"], s["rounds"], s["cell_budget_s"], s["default_particles"],
                 s["efficiency_min_bytes"])


def test_committed_results_exist():
    names = {p.name for p in COMMITTED}
    assert "2026-12-01-cpu-2core-pocl-session2-quick.json" in names  # the CPU ratios
    assert "2026-12-01-gpu-h200-nvidia-quick.json" in names  # the GPU ones


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_ratios_of_committed_results_are_recomputed(path):
    """The ratio table gives the values a committed run recorded, from that run's cells, baselines and
    panels: results stay comparable across sessions."""
    from app.bench.ratios import compute_ratios

    record = json.loads(path.read_text())
    backends = [b["name"] for b in record["backends"] if b["available"]]
    ratios, missing = compute_ratios(record, _recorded_sweep(record), backends)
    # every recorded ratio again; a ratio added later may be measurable from an older run's cells too
    assert set(record["ratios"]) <= set(ratios) and set(ratios) - set(record["ratios"]) <= NEW_RATIOS
    # ratios added after a run was recorded are not measurable from it, and say so
    assert {k: v for k, v in missing.items() if k in record["not_measurable"]} == record["not_measurable"]
    assert set(missing) - set(record["not_measurable"]) <= NEW_RATIOS - set(record["ratios"])
    for name, old in record["ratios"].items():
        new = ratios[name]
        assert new["value"] == pytest.approx(old["value"], abs=1e-4), name
        assert (new["target"], new["met"], new["measured_at"]) == (old["target"], old["met"], old["measured_at"])
        assert set(old) <= set(new), name  # every recorded field is still there
        for key in set(old) - {"what", "checked_floor_what"}:  # the texts may be reworded, not the numbers
            assert new[key] == old[key], (name, key)


def test_every_ratio_is_measured_or_says_why():
    from app.bench.ratios import RATIOS, compute_ratios

    names = [r.name for r in RATIOS]
    assert len(set(names)) == len(names) == 12
    for ratio in RATIOS:
        assert ratio.op in ("<=", ">=") and ratio.what
    for gpu in (False, True):
        result, backends = _made_up(gpu)
        for cut in (None, "cells", "baselines", "panels"):
            made = dict(result, **({cut: []} if cut else {}))
            ratios, missing = compute_ratios(made, SWEEP, backends)
            assert set(ratios) | set(missing) == set(names) and not set(ratios) & set(missing)
            assert all(isinstance(why, str) and why for why in missing.values())
    # no backend at all: nothing is measured, and each ratio says why
    ratios, missing = compute_ratios({"cells": [], "baselines": [], "panels": []}, SWEEP, [])
    assert ratios == {} and set(missing) == set(names)
    assert missing["host_copy_efficiency"] == "host_copy is not available here"


def _plot_input() -> dict:
    result, _ = _made_up(gpu=True)
    result.update({"machine": {"cpu": "test cpu", "cores": 2}, "sweep": {"name": "t"}, "date": "2026-12-01T00:00",
                   "cl": {"device": "dev"}, "gl": {"renderer": "llvmpipe (LLVM)"},
                   "backends": [{"name": "external_memory", "available": True}]})
    return result


def test_plot_of_made_up_results_draws_every_series():
    from app.bench.plot import PALETTE, render_plot

    img = render_plot(_plot_input())
    assert img.shape == (720, 1280, 3) and img.dtype == np.uint8
    for color in PALETTE[:3]:  # one per (backend, sync): host_copy finish, external_memory finish and semaphore
        assert _has_color(img, color, 30), color


def test_plot_axes_have_units_and_every_series():
    from app.bench.plot import GREY, bytes_label, plot_figure, plot_series

    result = _plot_input()
    series = plot_series(result)
    # 3 (backend, sync) pairs of particles, the bare loop of the default backend, the memcpy floor
    assert [s.label for s in series] == [
        "particles: host_copy, sync finish", "particles: external_memory, sync finish",
        "particles: external_memory, sync semaphore", "bare loop: particles, external_memory",
        "memcpy floor: particles, 2 copies (copy time)"]
    assert [s.color for s in series[3:]] == [GREY, GREY] and series[4].dashed and not series[0].dashed
    fig = plot_figure(result)
    time_ax, bw_ax = fig.axes
    assert "ms" in time_ax.get_ylabel() and "GB/s" in bw_ax.get_ylabel()
    for ax in (time_ax, bw_ax):
        assert ax.get_xlabel() == "bytes shared per frame"
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [line.get_label() for line in time_ax.get_lines()] == [s.label for s in series]
    # the bare loop has no bandwidth: every other series is on the bandwidth axis too
    assert [line.get_label() for line in bw_ax.get_lines()] == [s.label for s in series if "bare" not in s.label]
    host = time_ax.get_lines()[0]
    assert list(host.get_xdata()) == [shared_bytes("particles", n) for n in (16_384, 65_536, 2 << 20)]
    assert list(host.get_ydata()) == [2.0, 10.2, 40.0]
    assert [leg.get_text() for leg in fig.legends[0].get_texts()] == [s.label for s in series]
    assert bytes_label(512 << 10) == "512 KiB" and bytes_label(64 * MIB) == "64 MiB" and bytes_label(1.5 * MIB) == "1.5 MiB"


def test_output_path_for_a_directory(tmp_path):
    from app.bench import _output_path

    result = {"run_name": "2026-12-01-cpu-2core-pocl"}
    assert _output_path(tmp_path, result, ".json") == tmp_path / "2026-12-01-cpu-2core-pocl.json"
    assert _output_path(tmp_path / "x.png", result, ".png") == tmp_path / "x.png"
    assert _output_path(None, result, ".png") is None


# -- races, hooks, the kernel race -----------------------------------------------------------------
def test_tiny_run_has_race_rows(tiny_run):
    """The tiny run races host_mapped against host_copy minus its copies, and the Julia kernel against
    the reference formulation; every race row has a finite ratio against a baseline of the same run."""
    r = json.loads((tiny_run[1] / "b.json").read_text())
    races = {row["race"] for row in r["races"]}
    assert {"bare loop", "memcpy floor", "zero-copy vs host_copy minus its copies", "julia kernel"} <= races
    for row in r["races"]:
        assert math.isfinite(row["ratio"]) and row["ratio"] > 0, row
        assert row["baseline_ms"] is not None and row["what"]
    z = {(x["scene"], x["size"]) for x in r["zero_copy_races"]}
    assert z == {("image", "64x64"), ("particles", f"{TINY.default_particles:,}")}
    for x in r["zero_copy_races"]:
        assert x["backend"] == "host_mapped" and x["rounds"] >= 3 and x["frames_per_round"] >= 3
        # the warm-up frames ran before the first timed one (host_copy's one copy frame after them)
        assert x["warmup_frames"] == TINY.race_warmup
        assert x["first_timed_frame"] == {"host_mapped": TINY.race_warmup, "host_copy": TINY.race_warmup + 1}
        assert x["bytes_moved_per_frame"]["host_mapped"] == 0
        assert x["bytes_moved_per_frame"]["host_copy without its copies"] == 0
        assert x["bytes_moved_per_frame"]["host_copy"] == shared_bytes(
            x["scene"], TINY.default_particles if x["scene"] == "particles" else (64, 64))
    assert [k["size"] for k in r["kernel_race"]] == ["64x48"] and r["kernel_race"][0]["same_texels"] is True
    gpu_only = {"external_memory_semaphore_frame_ms", "semaphore_scheduler_overhead"}
    for name in gpu_only:
        assert name not in r["ratios"] and "external_memory" in r["not_measurable"][name]
    for name in NEW_RATIOS - {"device_time_limit"} - gpu_only:
        assert math.isfinite(r["ratios"][name]["value"]), name


def _live_run(scene="particles", size=2048, backend=HostMapped.name):
    from app.config import RunConfig
    from app.run import Run

    return Run(RunConfig(scene=scene, size=size, backend=backend, headless=True, overlay=False, frames=10_000))


@pytest.mark.parametrize("backend", [HostMapped.name, HostCopy.name])
def test_instrument_hooks_see_every_piece_and_undo(gl, backend):
    """``SharingBackend.instrument`` and ``FrameScheduler.instrument``: each piece goes through the
    wrapper while instrumented, as often as a frame calls it; the undo puts the class's methods back
    (nothing stays rebound on the instances), and frames run as before."""
    calls: dict[str, int] = {}

    def wrap(piece, fn):
        def counted(*a, **k):
            calls[piece] = calls.get(piece, 0) + 1
            return fn(*a, **k)
        return counted

    with _live_run(backend=backend) as rt:
        backend_obj, sched = rt.session.backend, rt.session.scheduler
        rt.tick()
        before = [dict(vars(o)) for o in (backend_obj, backend_obj.validator, backend_obj.tracker, sched, sched.gl_timer)]
        sched.gl_timer.every = 1  # every frame timed: the span is entered on each
        interval, sched.stamps_interval_ns = sched.stamps_interval_ns, 0
        undo = [backend_obj.instrument(wrap), sched.instrument(wrap)]
        frames = 2 * sched.gl_timer.harvest_every
        for _ in range(frames):
            assert rt.tick().errors == []
        for u in reversed(undo):
            u()
            u()  # idempotent
        assert calls["validator"] == 2 * frames  # the acquire's and the release's checks
        assert calls["ownership tracker"] >= 4 * frames  # acquired, cl_use, released, gl_use
        assert calls["acquire call"] == calls["release call"] == frames
        # finish hands the GL timer's read to its wait for CL when one is due (GlTimer.due): one in
        # harvest_every frames with passes in flight
        assert calls["GL timer harvest"] >= 2 and calls["GL timer span"] == 2 * frames  # enter + exit
        sched.gl_timer.every, sched.stamps_interval_ns = before[4]["every"], interval
        after = [dict(vars(o)) for o in (backend_obj, backend_obj.validator, backend_obj.tracker, sched, sched.gl_timer)]
        assert [sorted(a) for a in after] == [sorted(b) for b in before]  # no attribute left on the instances
        calls.clear()
        assert rt.tick().errors == [] and calls == {}  # not instrumented: the wrapper is gone


def test_overhead_breakdown_uses_the_hooks(gl):
    from app.bench.overhead import IN_FRAME_PIECES, overhead_in_frame

    with _live_run() as rt:
        rt.tick()
        got = overhead_in_frame(rt, 5)
        assert set(got["parts_us"]) <= set(IN_FRAME_PIECES) and {"validator", "ownership tracker"} <= set(got["parts_us"])
        assert all(v >= 0 for v in got["parts_us"].values()) and got["frames"] == 5
        assert "check_python" not in vars(rt.session.backend.validator)  # undone


def test_copy_frame_times_the_copy_calls_apart_from_the_hand_over(gl):
    """host_copy's copy frame says how long its copy calls took (``copy_ns``): the particles' two
    buffers go CL -> GL in the release, inside the hand-over's time and less than it; host_mapped
    copies nothing and its copy calls take no time."""
    from app.bench.loops import glshare_copy_frame

    with _live_run(backend=HostCopy.name) as rt:
        rt.tick()
        calls_before = rt.session.backend.copy_ns
        samples = [glshare_copy_frame(rt).extra for _ in range(3)]
        assert rt.session.backend.copy_ns - calls_before == sum(x["copy_calls"] for x in samples)
        for x in samples:
            assert 0 < x["copy_calls"] < x["copy"], x
            assert x["errors"] == 0
        probe = rt.session.registry.probes[HostMapped.name]
    if not probe.available:  # a GPU without host-unified memory (the H100 run of 2026-12-06)
        pytest.skip(f"host_mapped is not available here: {probe.reason}")
    with _live_run(backend=HostMapped.name) as rt:
        rt.tick()
        x = glshare_copy_frame(rt).extra
        assert x["copy_calls"] == 0 and x["copy"] > 0 and rt.session.backend.copy_ns == 0


@pytest.mark.parametrize("size", [(64, 48), (33, 17)])
def test_kernel_race_reference_writes_glshare_texels(probe_env, size):
    """The reference formulation (one work-item per pixel, sizes from the launch) and glshare's
    kernels, image and buffer, write the same texels; the race reports each variant's time and
    each ratio with its range."""
    import pyopencl as cl

    from app.bench.kernel_race import RACES, VARIANTS, kernel_race

    device = probe_env.choice.device
    (got,) = kernel_race(cl.Context([device]), device, [size], rounds=2, per_round=1)
    assert got["same_texels"] is True and got["size"] == f"{size[0]}x{size[1]}"
    assert set(got["device_ms"]) == set(VARIANTS) and all(v > 0 for v in got["device_ms"].values())
    assert [(r["glshare"], r["reference"]) for r in got["races"]] == list(RACES)
    for r in got["races"]:
        lo, hi = r["ratio_range"]
        assert 0 < lo <= r["ratio_median"] <= hi and r["rounds"] == 2


def test_a_dry_copy_frame_is_host_copys_frame_without_its_copies(gl):
    """``glshare_dry_copy_frame``: the kernel runs and the hand-over is made (validated, tracked, its
    sync waited), but nothing is copied: GL's buffers keep their last copy, no bytes are counted, no
    time goes into copy calls; the frame after it copies again, GL then holding the kernel's result
    of both frames (the positions against the float64 update, tests/scenes/test_particles.py)."""
    from app.bench.loops import glshare_dry_copy_frame, glshare_finished_frame
    from app.scenes.particles import initial_state, reference_steps

    with _live_run(backend=HostCopy.name) as rt:
        backend, scene = rt.session.backend, rt.session.scene
        records = []
        glshare_finished_frame(rt, records)
        before = scene.position.gl.read().copy()
        copy_ns, copied, frames = backend.copy_ns, backend.bytes_copied, rt.session.frame
        glshare_dry_copy_frame(rt, records)
        assert rt.session.frame == frames + 1 and records[-1].errors == []
        assert records[-1].bytes_moved == 0 and backend.copy_ns == copy_ns and backend.bytes_copied == copied
        assert np.array_equal(scene.position.gl.read(), before) and backend.dry_copies is False
        assert [p for p in records[-1].phases] == [p for p in records[0].phases]  # the same phases, made
        glshare_finished_frame(rt, records)
        assert records[-1].bytes_moved == 32 * scene.n  # position and colour, CL -> GL (WORKLOADS.md)
        got = scene.position.gl.read().reshape(-1, 4)
        want = reference_steps(initial_state(scene.n, rt.session.cfg.seed), 3)["position"]
        assert np.abs(got - want).max() < 5e-4  # three frames of the kernel, dry one included


def test_device_limit_pairs_each_frame_with_its_own_device_times():
    from app.bench.cells import device_limit
    from app.bench.loops import Sample
    from app.schedule.frame import FrameRecord

    samples, records = [], []
    for i, (kernel_us, gl_us, wall_us) in enumerate([(100, 50, 300), (200, 100, 900), (100, 0, 500), (100, 50, 450)]):
        rec = FrameRecord(i, "image", "b", "finish")
        rec.cl_profile["compute"] = (0, 0, 1000, 1000 + kernel_us * 1000)
        if gl_us:
            rec.gl_passes.append(("gl render", 5000, 5000 + gl_us * 1000))
        rec.gl_passes.append(("gl panel", 0, 10**9))  # another pass: not the scene's
        samples.append(Sample(wall_us * 1000, 0, 0))
        records.append(rec)
    got = device_limit(samples, records)
    assert got["frames"] == 3  # frame 2 has no scene pass
    assert got["ratio_median"] == pytest.approx(3.0)  # 300/150, 900/300, 450/150
    assert got["limit_ms"]["median"] == pytest.approx(0.15) and got["cl_kernel_ms"]["median"] == pytest.approx(0.1)
    assert device_limit(samples[2:3], records[2:3]) is None


def _race_input() -> tuple[dict, list[str]]:
    result, _ = _made_up(gpu=False)
    backends = ["host_mapped", "host_copy"]
    image = _cell("image", (512, 512), "host_mapped", "finish", 4.0)
    image.update({"cl_view": "buffer", "gl_software": True,
                  "device_limit": {"frames": 4, "limit_ms": {"median": 1.0}, "cl_kernel_ms": {"median": 0.8},
                                   "gl_pass_ms": {"median": 0.2}, "ratio_median": 4.0, "ratio_iqr": [3.5, 4.5],
                                   "what": "w", "ratio_by_finish": 2.0, "limit_by_finish_ms": 2.0, "gl_software": True}})
    result["cells"][1]["paired"] = {"wall_ratio_median": 1.02, "wall_ratio_iqr": [0.98, 1.06]}
    result["cells"].append(image)
    result["zero_copy_races"] = [
        {"scene": "image", "size": "512x512", "backend": "host_mapped", "rounds": 5, "zero_copy_frame_ms": 3.0,
         "host_copy_without_copies_ms": 3.3, "ratio_median": 0.91, "ratio_range": [0.85, 0.97], "what": "z"},
        {"scene": "particles", "size": "65,536", "backend": "host_mapped", "rounds": 5, "zero_copy_frame_ms": 9.0,
         "host_copy_without_copies_ms": 8.9, "ratio_median": 1.01, "ratio_range": [0.9, 1.1], "what": "z"}]
    race = lambda g, r, v: {"glshare": g, "reference": r, "ratio_median": v, "ratio_range": [v - 0.1, v + 0.1],  # noqa: E731
                            "rounds": 5}
    buf, img = "glshare julia_buffer (pitched buffer)", "glshare julia (rgba8 image)"
    result["kernel_race"] = [{"size": s, "same_texels": True, "what": "k", "device_ms": {
        buf: 1.0, img: 2.0, "reference rgba8 image": 2.2, "reference rgba float image": 1.5},
        "races": [race(buf, "reference rgba8 image", 2.2 * f), race(buf, "reference rgba float image", 1.5 * f),
                  race(img, "reference rgba8 image", 1.1 * f), race(img, "reference rgba float image", 0.75 * f)]}
        for s, f in (("512x512", 1.0), ("1024x1024", 0.9))]
    return result, backends


def test_race_rows_and_their_ratios_on_made_up_results():
    from app.bench.races import race_rows
    from app.bench.ratios import compute_ratios

    result, backends = _race_input()
    rows = race_rows(result)
    by = {}
    for row in rows:
        by.setdefault(row["race"], []).append(row)
    assert [r["ratio"] for r in by["bare loop"]] == [1.02]  # the cell with its pairs and a bare loop
    # copy / floor of each host_copy cell with a floor: 65,536 (0.5 / 0.2 ms) and 64 MiB (20 / 18 ms)
    assert [r["ratio"] for r in by["memcpy floor"]] == pytest.approx([2.5, 20.0 / 18.0], abs=1e-4)
    assert [r["ratio"] for r in by["device-time limit"]] == [4.0, 2.0]  # by the queries, by glFinish
    assert [r["ratio"] for r in by["zero-copy vs host_copy minus its copies"]] == [0.91, 1.01]
    assert len(by["julia kernel"]) == 8 and all(r["same_texels"] for r in by["julia kernel"])
    ratios, missing = compute_ratios(result, SWEEP, backends)
    k = ratios["julia_kernel_vs_reference"]  # the buffer kernel (the default backend's view): its worst race
    assert k["value"] == pytest.approx(1.5 * 0.9) and k["met"] is True and "1024x1024" in k["measured_at"]
    assert k["other_variant"]["1024x1024 vs reference rgba float image"] == pytest.approx(0.75 * 0.9)
    z = ratios["zero_copy_vs_host_copy_without_copies"]
    assert z["value"] == 1.01 and z["met"] is False and z["measured_at"].startswith("particles 65,536")
    d = ratios["device_time_limit"]  # software GL: the draw timed to glFinish
    assert d["value"] == 2.0 and d["ratio_by_queries"] == 4.0 and d["met"] is False
    result["cells"][-1]["cl_view"] = "image"
    k = compute_ratios(result, SWEEP, backends)[0]["julia_kernel_vs_reference"]
    assert k["value"] == pytest.approx(0.75 * 0.9) and k["met"] is False
    # with semaphores (no CPU wait) the sustained frame is read against the median limit
    sem = {**result["cells"][-1], "sync": "semaphore", "throughput_ms": 1.2, "gl_software": False}
    sem["device_limit"] = {**sem["device_limit"], "gl_software": False}
    result["cells"].append(sem)
    d = compute_ratios(result, SWEEP, backends)[0]["device_time_limit"]
    assert d["value"] == pytest.approx(1.2) and d["met"] is True and d["measured_at"].endswith("semaphore")
    assert [r["ratio"] for r in race_rows(result) if r["race"] == "device-time limit"][-1] == pytest.approx(1.2)


def test_peer_race_times_a_program_from_its_timestamps(tmp_path):
    """``_run_one`` reads the timestamps a program wrote to $PEER_STAMPS: the frame rate over frames
    [F/5, F) (start-up left out), and a program that stops short is an error."""
    import sys

    from app.bench.peer_race import _run_one

    # a stand-in program: frame i presented at 1 s + i * 10 ms, except the first fifth, 100 ms apart
    program = ("import os; n = int(os.environ['PEER_FRAMES']); t0 = 10**9; "
               "ts = [t0 + i * 100_000_000 if i < n // 5 else t0 + (n // 5) * 100_000_000 + (i - n // 5) * 10_000_000 "
               "for i in range(n)]; open(os.environ['PEER_STAMPS'], 'w').write('\\n'.join(map(str, ts)))")
    got = _run_one([sys.executable, "-c", program], 50)
    assert got["frames"] == 50 and got["fps"] == pytest.approx(100.0) and got["frame_ms_median"] == pytest.approx(10.0)
    short = "import os; open(os.environ['PEER_STAMPS'], 'w').write('1\\n2\\n')"
    with pytest.raises(RuntimeError, match="presented 2 of 50 frames"):
        _run_one([sys.executable, "-c", short], 50)
    with pytest.raises(RuntimeError, match="wrote no timestamps"):
        _run_one([sys.executable, "-c", "pass"], 50)


def test_peer_race_needs_a_display(monkeypatch, capsys):
    from app.bench.peer_race import main

    monkeypatch.delenv("DISPLAY", raising=False)
    assert main(["race", "--name", "x", "--peer", "p=true"]) == 2
    assert "needs a display" in capsys.readouterr().err
    assert main(["nonsense"]) == 2


def test_a_cell_with_frames_timed_one_in_a_few_takes_its_device_limit_from_timed_frames(gl):
    """Frames shorter than --stamps-ms are timed one in a few: a cell whose frames then have too few
    device times builds its device-time limit from a block of frames all timed, says so, and leaves
    the scheduler's interval as it was."""
    from app.bench.cells import LIMIT_FRAMES, _cell
    from app.bench.loops import glshare_frame
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="image", size=(64, 64), backend=HostMapped.name, headless=True, overlay=False,
                    frames=10_000, stamps_ms=1000.0)  # one frame timed per second of frame time: the first
    with Run(cfg, surface=gl) as rt:
        records: list = []
        samples = [glshare_frame(rt, records) for _ in range(12)]
        sched = rt.session.scheduler
        cell = _cell(rt, {"scene": "image", "size": "64x64", "backend": "host_mapped"}, 64 * 64 * 4, samples, records)
        assert [r.sampled for r in records] == [True] + [False] * 11
        assert sched.stamps_interval_ns == 1_000_000_000
    lim = cell["device_limit"]
    assert lim["timed_block"] is True and lim["frames"] >= LIMIT_FRAMES
    # the limit is the median of the block's kernel + GL pass, each positive
    assert lim["cl_kernel_ms"]["median"] > 0 and lim["gl_pass_ms"]["median"] > 0
    assert lim["limit_ms"]["median"] == pytest.approx(lim["cl_kernel_ms"]["median"] + lim["gl_pass_ms"]["median"],
                                                      rel=0.5)


def test_a_cells_frames_run_with_the_collector_paused(gl, monkeypatch):
    """Every cell's frames run with Python's cyclic collector off (the cell's records kept besides
    the history would set off collections inside glshare's frames that a run never pays: cells.py),
    and it is on again after each, or stays off where it was off."""
    import gc

    from app.bench import cells
    from app.collector import collector_off
    from app.window.egl_headless import EglSurface

    seen: list = []
    monkeypatch.setattr(cells, "_finish_cell", lambda *a, **k: seen.append(("finish", gc.isenabled())) or {})
    monkeypatch.setattr(cells, "_plain_cell", lambda *a, **k: seen.append(("plain", gc.isenabled())) or {})
    surface = EglSurface((64, 48))
    try:
        assert gc.isenabled()
        cells.measure_backend("particles", 1024, HostCopy.name, SWEEP, None, lambda label: None, surface)
        assert seen and seen[0] == ("finish", False) and all(not on for _, on in seen), seen
        assert gc.isenabled()
        gc.disable()
        try:
            with collector_off():
                assert not gc.isenabled()
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        surface.close()
