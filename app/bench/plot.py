"""The bench plot: frame time and bandwidth against bytes shared per frame, one line per backend.

Drawn with numpy into an RGB image and written by app/trace/png.write_png: no plotting package
(matplotlib is not a dependency, and a pixel-exact picture needs no font files or display).
Both axes are logarithmic. Solid lines: particles; dashed: image. Grey: the baselines (bare
loop, memcpy floor) of the default backend.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from app.bench.font import HEIGHT as GLYPH_H
from app.bench.font import draw_text, text_width
from app.trace.png import write_png

W, H = 1280, 720
PANEL_TOP, PANEL_BOTTOM = 70, 520
PANELS = ((90, 610), (730, 1250))
BG, FG, GRID, GREY = (255, 255, 255), (30, 30, 30), (225, 225, 225), (140, 140, 140)
PALETTE = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189), (255, 127, 14), (23, 190, 207),
           (140, 86, 75), (227, 119, 194)]
SCALE = 2


def _bytes_label(n: float) -> str:
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f}{unit}" if v >= 1 and abs(v - round(v)) < 1e-6 else f"{v:.1f}{unit}"
    return f"{n:.0f}"


def _num_label(v: float) -> str:
    return f"{v:g}" if v >= 0.01 else f"{v:.0e}"


class _Axes:
    """Log-log mapping of one panel."""

    def __init__(self, x0: int, x1: int, xlim, ylim) -> None:
        self.x0, self.x1, self.y0, self.y1 = x0, x1, PANEL_TOP, PANEL_BOTTOM
        self.lx = (math.log2(xlim[0]), math.log2(xlim[1]))
        self.ly = (math.log10(ylim[0]), math.log10(ylim[1]))

    def px(self, x: float, y: float) -> tuple[float, float]:
        fx = (math.log2(x) - self.lx[0]) / (self.lx[1] - self.lx[0])
        fy = (math.log10(y) - self.ly[0]) / (self.ly[1] - self.ly[0])
        return self.x0 + fx * (self.x1 - self.x0), self.y1 - fy * (self.y1 - self.y0)


def _line(img, p, q, color, width: int = 2, dash: int = 0) -> None:
    (x0, y0), (x1, y1) = p, q
    n = int(max(abs(x1 - x0), abs(y1 - y0)) * 2) + 1
    t = np.linspace(0, 1, n)
    xs, ys = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
    if dash:
        along = np.hypot(xs - x0, ys - y0)
        keep = (along // dash) % 2 == 0
        xs, ys = xs[keep], ys[keep]
    for dx in range(width):
        for dy in range(width):
            xi = np.clip(np.round(xs).astype(int) + dx - width // 2, 0, img.shape[1] - 1)
            yi = np.clip(np.round(ys).astype(int) + dy - width // 2, 0, img.shape[0] - 1)
            img[yi, xi] = color


def _marker(img, p, color, r: int = 3) -> None:
    x, y = int(round(p[0])), int(round(p[1]))
    img[max(y - r, 0):y + r + 1, max(x - r, 0):x + r + 1] = color


def _limits(values: list[float], pad: float = 1.5) -> tuple[float, float]:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not vals:
        return 0.1, 10.0
    lo, hi = min(vals) / pad, max(vals) * pad
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    return lo, hi if hi > lo else lo * 10


def _series(result: dict):
    """[(label, color, dashed, [(bytes, frame_ms, gbps)])] for the plot, baselines last."""
    out, colors = [], {}
    keys = []
    for c in result["cells"]:
        if c.get("frames"):
            key = (c["backend"], c["sync"])
            if key not in keys:
                keys.append(key)
    for key in keys:
        colors[key] = PALETTE[len(colors) % len(PALETTE)]
    for scene in ("particles", "image"):
        for key in keys:
            pts = sorted((c["bytes_shared_per_frame"], c["frame_ms"]["median"], c["bandwidth_gbps"])
                         for c in result["cells"]
                         if c.get("frames") and c["scene"] == scene and (c["backend"], c["sync"]) == key)
            if pts:
                out.append((f"{scene} {key[0]} {key[1]}", colors[key], scene == "image", pts))
    default = result["backends"] and next((b["name"] for b in result["backends"] if b["available"]), None)
    bare = sorted((b["bytes_shared_per_frame"], b["frame_ms"]["median"], None) for b in result["baselines"]
                  if b["kind"] == "bare_loop" and b["backend"] == default and b["scene"] == "particles")
    if bare:
        out.append((f"bare loop particles {default}", GREY, False, bare))
    floor = sorted((b["bytes"] // 2, b["ms"]["median"], (b["bytes"] // 2) / (b["ms"]["median"] * 1e6))
                   for b in result["baselines"] if b["kind"] == "memcpy_floor" and b["scene"] == "particles")
    if floor:
        out.append(("memcpy floor particles (2 copies)", GREY, True, floor))
    return out


def render_plot(result: dict) -> np.ndarray:
    """The picture as an H x W x 3 uint8 array."""
    img = np.empty((H, W, 3), np.uint8)
    img[:] = BG
    series = _series(result)
    m = result["machine"]
    title = f"glshare bench {result['sweep']['name']} {result['date'][:10]}  {m['cpu']}, {m['cores']} cores  " \
            f"CL {result['cl']['device'][:28]}  GL {result['gl']['renderer'].split('(')[0].strip()}"
    draw_text(img, 20, 16, title[:100], FG, SCALE)
    xs = [p[0] for s in series for p in s[3]]
    xlim = (min(xs) / 1.5, max(xs) * 1.5) if xs else (1 << 16, 1 << 24)
    panels = (("frame time, ms (median)", 1), ("bandwidth, GB/s (bytes shared / frame time)", 2))
    for (x0, x1), (name, idx) in zip(PANELS, panels):
        ys = [p[idx] for s in series for p in s[3] if p[idx] is not None]
        ax = _Axes(x0, x1, xlim, _limits(ys))
        _grid(img, ax)
        for _label, color, dashed, pts in series:
            pts = [(p[0], p[idx]) for p in pts if p[idx] is not None and p[idx] > 0]
            if not pts:
                continue
            pix = [ax.px(x, y) for x, y in pts]
            for a, b in zip(pix, pix[1:]):
                _line(img, a, b, color, 2, 8 if dashed else 0)
            for p in pix:
                _marker(img, p, color)
        draw_text(img, x0, PANEL_TOP - 26, name, FG, SCALE)
        label = "bytes shared per frame"
        draw_text(img, (x0 + x1 - text_width(label, SCALE)) // 2, PANEL_BOTTOM + 34, label, FG, SCALE)
    _legend(img, series)
    return img


def _grid(img, ax: _Axes) -> None:
    x0, x1, y0, y1 = ax.x0, ax.x1, ax.y0, ax.y1
    for e in range(math.ceil(ax.lx[0]), math.floor(ax.lx[1]) + 1):
        x = ax.px(2.0 ** e, 10 ** ax.ly[0])[0]
        img[y0:y1, int(x)] = GRID
        if e % 2 == 0 or ax.lx[1] - ax.lx[0] < 8:
            label = _bytes_label(2.0 ** e)
            draw_text(img, int(x) - text_width(label, SCALE) // 2, y1 + 8, label, FG, SCALE)
    for e in range(math.ceil(ax.ly[0]), math.floor(ax.ly[1]) + 1):
        y = ax.px(2.0 ** ax.lx[0], 10.0 ** e)[1]
        img[int(y), x0:x1] = GRID
        label = _num_label(10.0 ** e)
        draw_text(img, x0 - 8 - text_width(label, SCALE), int(y) - GLYPH_H * SCALE // 2, label, FG, SCALE)
    img[y0:y1 + 1, x0] = FG
    img[y1, x0:x1 + 1] = FG
    img[y0:y1 + 1, x1] = FG
    img[y0, x0:x1 + 1] = FG


def _legend(img, series) -> None:
    x, y = PANELS[0][0], PANEL_BOTTOM + 70
    col_w = (PANELS[1][1] - PANELS[0][0]) // 2
    for i, (label, color, dashed, _) in enumerate(series[:12]):
        cx, cy = x + (i % 2) * col_w, y + (i // 2) * 22
        _line(img, (cx, cy + 7), (cx + 36, cy + 7), color, 3, 8 if dashed else 0)
        draw_text(img, cx + 46, cy, label[:40], FG, SCALE)


def write_plot(path: str | Path, result: dict) -> Path:
    return write_png(path, render_plot(result))
