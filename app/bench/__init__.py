"""``glshare bench``: frame times and copy costs of every backend x sync mode over a size sweep,
as ratios against baselines measured in the same run.

Prints a table (a progress bar on stderr while it runs), and writes JSON (``--json``) and a PNG
plot (``--plot``); a directory given to either gets a file named for the date and the machine
(``bench/results/2026-12-01-cpu-2core-pocl.json``). Speed is measured here, never in tests.
"""
from __future__ import annotations

import datetime
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from app import __version__
from app.config import ROOT

log = logging.getLogger(__name__)
SCHEMA = "glshare.bench/1"
BENCH_SCENES = ("particles", "image")  # the reference workloads of ../shared/WORKLOADS.md


def _check_outputs(json_path, plot_path) -> None:
    from app.outputs import check_outputs

    check_outputs({"json": json_path, "plot": plot_path})


def main(args) -> int:
    from app.bench.report import print_table, write_json
    from app.bench.sweep import choose_sweep

    # outputs are checked before anything runs: a path naming a folder is checked again once the
    # machine (the file's name) is known, still before the sweep
    given_json, given_plot = getattr(args, "json_path", None), getattr(args, "plot", None)
    _check_outputs(*(None if p is None or _is_folder(p) else p for p in (given_json, given_plot)))
    sweep = choose_sweep(bool(getattr(args, "quick", False)))
    cl_device = _selector(getattr(args, "cl_device", None))
    from app.sharing.backends.external_memory import ExternalMemory
    from app.sharing.backends.gl_sharing import KhrGlSharing
    from app.window import open_surface

    surface = open_surface(True, (64, 64))  # one EGL context for every cell (Run(cfg, surface=...))
    try:
        probe = probe_machine(cl_device, surface)
        if any(b in probe["backends_available"] for b in (ExternalMemory.name, KhrGlSharing.name)):
            sweep = sweep.with_zero_copy_size()
        name = _run_name(datetime.datetime.now(datetime.timezone.utc).date().isoformat(), probe, sweep.name)
        json_path = _output_path(given_json, {"run_name": name}, ".json")
        plot_path = _output_path(given_plot, {"run_name": name}, ".png")
        _check_outputs(json_path, plot_path)
        result = run_sweep(sweep, cl_device, probe, surface)
    finally:
        surface.close()
    to_stdout = "-" in (str(json_path), str(plot_path))
    print_table(result, sys.stderr if to_stdout else sys.stdout)  # never into a JSON or PNG on stdout
    plot_failed = None  # a plot that cannot be written costs the JSON nothing: the result is written first
    if plot_path is not None:
        from app.bench.plot import write_plot

        try:
            write_plot(plot_path, result)
        except Exception as exc:  # noqa: BLE001 - said below, after the JSON is written
            plot_failed = exc
        same_dir = (json_path is not None and "-" not in (str(json_path), str(plot_path))
                    and Path(json_path).parent.resolve() == Path(plot_path).parent.resolve())
        result["plot"] = None if plot_failed else (Path(plot_path).name if same_dir else str(plot_path))
    said = sys.stderr if to_stdout else sys.stdout
    if json_path is not None:
        write_json(json_path, result)
        print(f"glshare: wrote bench JSON {json_path}", file=said)
    if plot_failed is not None:
        why = plot_failed.one_line() if hasattr(plot_failed, "one_line") else f"{type(plot_failed).__name__}: {plot_failed}"
        print(f"glshare: error: bench plot not written: {why}", file=sys.stderr)
        return 1
    if plot_path is not None:
        print(f"glshare: wrote bench plot {plot_path}", file=said)
    return 0


def _selector(value):
    from app.config import cl_device_selector

    return cl_device_selector(value)


def _is_folder(path) -> bool:
    return str(path) != "-" and (Path(path).is_dir() or str(path).endswith(os.sep))


def _output_path(path, result: dict, suffix: str) -> Path | None:
    if path is None:
        return None
    if _is_folder(path):
        return Path(path) / f"{result['run_name']}{suffix}"
    return path if str(path) == "-" else Path(path)


# -- the machine ------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_facts(python_ref_start_us: float | None = None) -> dict:
    """glshare's version, the commit measured (and whether uncommitted changes were), the machine.
    ``GLSHARE_COMMIT`` names the commit where the tree is a copy whose .git is not its own (a copy of
    the working tree made on another host): then the commit is taken from it and said to be so."""
    given = os.environ.get("GLSHARE_COMMIT", "").strip()
    if given:
        return {"glshare": __version__, "commit": given, "commit_from": "GLSHARE_COMMIT",
                "worktree_dirty": None, "machine": _machine(python_ref_start_us)}
    return {"glshare": __version__, "commit": _git("rev-parse", "HEAD"),
            "worktree_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "machine": _machine(python_ref_start_us)}


def _machine(python_ref_start_us: float | None) -> dict:
    """The host; its Python speed (``PYTHON_REF_WHAT``) now, and at the run's start where it was
    measured then: it can change within one run, so one reading would misdescribe the cells
    (bench/results/README.md, 'Eleventh session')."""
    now = python_reference_us()
    facts = {"cpu": _cpu_model(), "cores": os.cpu_count(), "os": platform.platform(),
             "python": platform.python_version(), "python_ref_what": PYTHON_REF_WHAT,
             "python_ref_us": now if python_ref_start_us is None else python_ref_start_us}
    if python_ref_start_us is not None:
        facts["python_ref_end_us"] = now
    return facts


PYTHON_REF_WHAT = ("median time of a fixed piece of Python shaped like a frame's bookkeeping (four objects looked "
                   "up, changed and sampled into a tuple), us: how fast this host runs glshare's Python. On the lent "
                   "GPU machines it reads 0.5 or 1.0-1.3 us from one moment to the next (the share of a core the "
                   "host gives the thread: bench/probes/host_cores_probe.py), and glshare's CPU-bound figures "
                   "(scheduler_overhead_us, a CPU-bound semaphore frame) follow it")


class _Ref:
    __slots__ = ("owner", "n")

    def __init__(self) -> None:
        self.owner, self.n = "gl", 0


def python_reference_us(reps: int = 3000) -> float:
    """``PYTHON_REF_WHAT``: the median of ``reps`` timed calls (each call runs the piece 10 times)."""
    import statistics
    import time

    table = {i: _Ref() for i in range(4)}
    ns = time.perf_counter_ns

    def piece() -> tuple:
        out = []
        for i in range(4):
            o = table.get(i)
            o.n ^= 1
            o.owner = "cl" if o.owner == "gl" else "gl"
            out.append((i, o.owner))
        return tuple(out)

    for _ in range(reps):  # warm-up: the first calls of a fresh process run slower
        piece()
    times = []
    for _ in range(reps):
        t0 = ns()
        for _ in range(10):
            piece()
        times.append(ns() - t0)
    return round(statistics.median(times) / 10 / 1e3, 3)


def probe_machine(cl_device: str | None, surface) -> dict:
    """Backends, GL and CL of this machine, probed on the bench's headless surface (as ``info`` does)."""
    from app.cl.device import select_device
    from app.gl.context import gl_info
    from app.sharing.base import ProbeEnv
    from app.sharing.registry import Registry

    choice = select_device(cl_device)
    info = gl_info()
    registry = Registry(ProbeEnv(choice, surface, info))
    gl = {k: info.as_dict()[k] for k in ("vendor", "renderer", "version")}
    device = choice.device
    import pyopencl as cl

    kind = "gpu" if device.type & cl.device_type.GPU else "cpu"
    return {"backends": registry.as_list(), "backends_available": registry.available, "gl": gl,
            "cl": {"platform": choice.platform.name.strip(), "device": device.name.strip(),
                   "version": device.version.strip(), "type": kind}}


def zero_copy_backend(probe: dict) -> str | None:
    """The first available zero-copy backend (in probe order) where host_copy is available beside it."""
    from app.sharing.backends.host_copy import HostCopy
    from app.sharing.registry import backend_classes

    classes = backend_classes()
    if HostCopy.name not in probe["backends_available"]:
        return None
    return next((b for b in probe["backends_available"] if classes[b].capabilities.zero_copy), None)


def _zero_copy_races(sweep, cl_device, probe: dict, surface, failures: list, progress) -> list[dict]:
    """The zero-copy backend against host_copy minus its copies: every image size of the sweep and
    the default particle count (app/bench/races.py)."""
    from app.bench.races import zero_copy_race

    backend = zero_copy_backend(probe)
    if backend is None:
        return []
    out = []
    for scene, size in [("image", s) for s in (sweep.race_images or sweep.images)] + [("particles", sweep.default_particles)]:
        try:
            out.append(zero_copy_race(scene, size, backend, sweep, cl_device, surface))
        except Exception as exc:  # noqa: BLE001 - a race that cannot run does not end the bench
            log.warning("zero-copy race %s %s failed: %s", scene, size, exc)
            failures.append({"scene": scene, "size": size if scene == "particles" else list(size),
                             "backend": f"{backend} vs host_copy", "error": f"{type(exc).__name__}: {exc}"})
        progress.tick(f"race {scene} {backend} vs host_copy")
    return out


def _kernel_race(sweep, cl_device, failures: list) -> list[dict]:
    """The Julia kernel alone against the reference formulation (app/bench/kernel_race.py)."""
    import pyopencl as cl

    from app.bench.kernel_race import kernel_race
    from app.cl.device import select_device

    choice = select_device(cl_device)
    try:
        return kernel_race(cl.Context([choice.device]), choice.device, sweep.kernel_sizes, sweep.kernel_rounds)
    except Exception as exc:  # noqa: BLE001
        log.warning("kernel race failed: %s", exc)
        failures.append({"scene": "image", "size": "kernel race", "backend": "-", "error": f"{type(exc).__name__}: {exc}"})
        return []


def _run_name(date: str, probe: dict, sweep_name: str) -> str:
    """``2026-12-01-cpu-2core-pocl`` (a full sweep), ``...-pocl-quick`` (a quick one)."""
    cores = os.cpu_count() or 0
    platform_word = probe["cl"]["platform"].split()[0].lower()
    short = {"portable": "pocl", "nvidia": "nvidia", "amd": "amd", "intel(r)": "intel", "rusticl": "rusticl"}
    tail = "" if sweep_name == "full" else f"-{sweep_name}"
    return f"{date}-{probe['cl']['type']}-{cores}core-{short.get(platform_word, platform_word)}{tail}"


# -- the sweep --------------------------------------------------------------------------------------
def run_sweep(sweep, cl_device: str | None, probe: dict, surface) -> dict:
    from app.bench.cells import measure_backend
    from app.bench.races import race_rows
    from app.bench.ratios import compute_ratios
    from app.bench.report import Progress
    from app.sharing.sync import sync_modes

    t0 = time.perf_counter()
    now = datetime.datetime.now(datetime.timezone.utc)
    python_ref_start = python_reference_us()  # (and again at the end: machine_facts)
    backends = probe["backends_available"]
    groups = [(scene, size, b) for scene in BENCH_SCENES
              for size in (sweep.particles if scene == "particles" else sweep.images) for b in backends]
    # cells per group: finish + every other mode the backend offers (learnt from each group's session;
    # the estimate here only sizes the progress bar)
    per_backend: dict[str, int] = {}
    progress = Progress(len(groups) * 2, sys.stderr)
    result: dict = {"cells": [], "baselines": [], "panels": [], "failures": [], "sync": {}}
    for scene, size, backend in groups:
        try:
            got = measure_backend(scene, size, backend, sweep, cl_device, progress.tick, surface)
        except Exception as exc:  # noqa: BLE001 - one cell that cannot be built does not end the bench
            log.warning("bench %s %s %s failed: %s", scene, size, backend, exc)
            log.debug("bench failure", exc_info=True)
            result["failures"].append({"scene": scene, "size": size if scene == "particles" else list(size),
                                       "backend": backend, "error": f"{type(exc).__name__}: {exc}"})
            progress.tick(f"{scene} {backend}: failed")
            continue
        result["cells"] += got["cells"]
        result["baselines"] += got["baselines"]
        if got["panel"]:
            result["panels"].append(got["panel"])
        result["sync"].setdefault(backend, got["sync"])
        per_backend[backend] = len(got["cells"])
        progress.total = sum(per_backend.get(b, 2) for _, _, b in groups)
    result["zero_copy_races"] = _zero_copy_races(sweep, cl_device, probe, surface, result["failures"], progress)
    result["kernel_race"] = _kernel_race(sweep, cl_device, result["failures"])
    from app.bench.gl_sharing_race import gl_sharing_rows  # skipped with the reason where gl_sharing is refused

    result["gl_sharing_races"] = gl_sharing_rows(surface, cl_device, frames=sweep.frames)
    progress.close()
    result["races"] = race_rows(result)
    ratios, missing = compute_ratios(result, sweep, backends)
    date = now.date().isoformat()
    return {
        "schema": SCHEMA,
        "run_name": _run_name(date, probe, sweep.name),
        "date": now.isoformat(timespec="seconds"),
        **machine_facts(python_ref_start),
        "gl": probe["gl"],
        "cl": probe["cl"],
        "sweep": {"name": sweep.name, "particles": list(sweep.particles), "images": [list(s) for s in sweep.images],
                  "warmup_frames": sweep.warmup, "timed_frames": sweep.frames, "rounds": sweep.rounds,
                  "race_warmup_frames": sweep.race_warmup,
                  "overhead_pairs": sweep.overhead_pairs, "cell_budget_s": sweep.cell_budget_s,
                  "default_particles": sweep.default_particles, "efficiency_min_bytes": sweep.efficiency_min_bytes,
                  "collector": "paused during each cell's frames (app/bench/cells.py, app/collector.py)"},
        "backends": probe["backends"],
        "sync_modes": {b: result["sync"].get(b, {m: "not measured" for m in sync_modes()}) for b in backends},
        "cells": result["cells"],
        "baselines": result["baselines"],
        "panels": result["panels"],
        "failures": result["failures"],
        "zero_copy_races": result["zero_copy_races"],
        "kernel_race": result["kernel_race"],
        "gl_sharing_races": result["gl_sharing_races"],
        "races": result["races"],
        "ratios": ratios,
        "not_measurable": missing,
        "duration_s": round(time.perf_counter() - t0, 1),
    }
