"""The bench plot: frame time and bandwidth against bytes shared per frame, one line per backend x sync.

Drawn with matplotlib on its Agg canvas (``FigureCanvasAgg``, set explicitly: no display, and
pyplot's global state is never touched), then written by app/trace/png.write_png, which writes
atomically. Both axes are logarithmic: bytes in powers of two, times and bandwidths in powers of
ten. Solid lines: particles; dashed: image. Grey: the baselines (the bare loop of the default
backend, the memcpy floor).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from app.trace.png import write_png

W, H, DPI = 1280, 720, 100
PALETTE = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189), (255, 127, 14), (23, 190, 207),
           (140, 86, 75), (227, 119, 194)]
GREY = (140, 140, 140)
PANELS = (("frame time (ms, median)", "frame_ms"), ("bandwidth (GB/s: bytes shared / frame time)", "gbps"))


@dataclass(frozen=True)
class Series:
    """One line of the plot: (bytes shared per frame, frame time in ms, bandwidth in GB/s or None)."""

    label: str
    color: tuple[int, int, int]
    dashed: bool
    points: list[tuple[int, float, float | None]]


def bytes_label(n: float) -> str:
    """``256 KiB``, ``1 MiB``, ``1.5 GiB``: a tick of the bytes axis."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 1e-6 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def _number_label(v: float) -> str:
    return f"{v:g}" if v >= 0.01 else f"{v:.0e}"


def plot_series(result: dict) -> list[Series]:
    """The lines of the plot, the glshare cells first (particles, then image), the baselines last."""
    keys: list[tuple[str, str]] = []
    for c in result["cells"]:
        if c.get("frames") and (c["backend"], c["sync"]) not in keys:
            keys.append((c["backend"], c["sync"]))
    colors = {key: PALETTE[i % len(PALETTE)] for i, key in enumerate(keys)}
    out = []
    for scene in ("particles", "image"):
        for key in keys:
            pts = sorted((c["bytes_shared_per_frame"], c["frame_ms"]["median"], c["bandwidth_gbps"])
                         for c in result["cells"]
                         if c.get("frames") and c["scene"] == scene and (c["backend"], c["sync"]) == key)
            if pts:
                out.append(Series(f"{scene}: {key[0]}, sync {key[1]}", colors[key], scene == "image", pts))
    default = next((b["name"] for b in result["backends"] if b["available"]), None)
    bare = sorted((b["bytes_shared_per_frame"], b["frame_ms"]["median"], None) for b in result["baselines"]
                  if b["kind"] == "bare_loop" and b["backend"] == default and b["scene"] == "particles")
    if bare:
        out.append(Series(f"bare loop: particles, {default}", GREY, False, bare))
    floor = sorted((b["bytes"] // 2, b["ms"]["median"], (b["bytes"] // 2) / (b["ms"]["median"] * 1e6))
                   for b in result["baselines"] if b["kind"] == "memcpy_floor" and b["scene"] == "particles")
    if floor:
        out.append(Series("memcpy floor: particles, 2 copies (copy time)", GREY, True, floor))
    return out


def _title(result: dict) -> str:
    m = result["machine"]
    renderer = result["gl"]["renderer"].split("(")[0].strip()
    return (f"glshare bench ({result['sweep']['name']}) {result['date'][:10]}\n"
            f"{m['cpu']}, {m['cores']} cores  |  CL {result['cl']['device']}  |  GL {renderer}")


def plot_figure(result: dict) -> Figure:
    """The plot as a matplotlib Figure on an Agg canvas, W x H pixels."""
    fig = Figure(figsize=(W / DPI, H / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(_title(result), fontsize=11)
    series = plot_series(result)
    axes = fig.subplots(1, 2)
    for ax, (ylabel, column) in zip(axes, PANELS):
        index = 1 if column == "frame_ms" else 2
        for s in series:
            pts = [(p[0], p[index]) for p in s.points if p[index] is not None and p[index] > 0]
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.plot(xs, ys, color=np.array(s.color) / 255, linestyle="--" if s.dashed else "-", linewidth=2,
                    marker="s", markersize=5, label=s.label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=2, numticks=12))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: bytes_label(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # 1-2-5: a label under every half decade
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _number_label(v)))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("bytes shared per frame")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", color="#dddddd", linewidth=0.8)
        ax.tick_params(axis="x", labelrotation=30)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=3 if len(handles) > 8 else 2,
                   frameon=False, fontsize=9)
    return fig


def render_plot(result: dict) -> np.ndarray:
    """The picture as an H x W x 3 uint8 array."""
    fig = plot_figure(result)
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def write_plot(path: str | Path, result: dict) -> str:
    return write_png(path, render_plot(result))
