"""The timing plot's history: the last frames' phase durations in a numpy ring, and their median /
p95 (recomputed every STATS_EVERY frames)."""
from __future__ import annotations

import numpy as np

from app.schedule.frame import PHASES

SERIES = PHASES + ("panel", "frame")  # what the timing plot shows, in ms
HISTORY = 240  # frames kept for median / p95
PLOT_FRAMES = 120  # of those, plotted: on a CPU rasterizer every point of the six lines costs setup work
STATS_EVERY = 8  # median / p95 recomputed every 8 frames (they move slowly; the plot is live)


class PhaseHistory:
    """The last ``n`` frames' phase durations (ms) in a numpy ring, and their median / p95."""

    def __init__(self, n: int = HISTORY) -> None:
        self.n = n
        # every column is written twice (at i and i + n), so the last n frames in order are always
        # one contiguous slice: no concatenation per frame
        self.data = np.full((len(SERIES), 2 * n), np.nan, np.float64)
        self.frames = np.zeros(2 * n, np.float64)  # float64: ImPlot wants xs and ys of one dtype
        self.count = 0
        self._stats: dict | None = None
        self._stats_at = 0  # the count the cached statistics were computed at

    def push(self, rec) -> None:
        """One frame: its phases and its whole frame, present to present (``FrameRecord.period_ns``;
        NaN where it has none)."""
        i = self.count % self.n
        col = [np.nan] * len(SERIES)
        for k, name in enumerate(SERIES[:-1]):
            span = rec.phases.get(name)
            if span:
                col[k] = (span[1] - span[0]) / 1e6
        if rec.period_ns:
            col[-1] = rec.period_ns / 1e6
        self.data[:, i] = self.data[:, i + self.n] = col
        self.frames[i] = self.frames[i + self.n] = rec.index
        self.count += 1
        if self.count < 16 or self.count - self._stats_at >= STATS_EVERY:
            self._stats = None

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """(frame indices, data[series, frame]) oldest first; copies, safe to hand out."""
        if self.count < self.n:
            return self.frames[: self.count].copy(), self.data[:, : self.count].copy()
        i = self.count % self.n
        return self.frames[i:i + self.n].copy(), self.data[:, i:i + self.n].copy()

    def stats(self) -> dict[str, tuple[float, float]]:
        """{series: (median, p95)} in ms over the ring, NaN (missing phases) left out, 0 when empty.

        Linear interpolation between order statistics, as numpy's default percentile; done by one
        sort of the ring (np.nanpercentile, with its per-call overhead, costs several times more)."""
        if self._stats is None:
            m = min(self.count, self.n)
            out = {name: (0.0, 0.0) for name in SERIES}
            if m:
                ordered = np.sort(self.data[:, :m], axis=1)  # NaN sorts last
                valid = m - np.isnan(ordered).sum(axis=1)
                for k, name in enumerate(SERIES):
                    v = int(valid[k])
                    if v:
                        out[name] = (_quantile(ordered[k], v, 0.5), _quantile(ordered[k], v, 0.95))
            self._stats, self._stats_at = out, self.count
        return self._stats


def _quantile(sorted_row: np.ndarray, n: int, q: float) -> float:
    """The q-quantile of the first ``n`` (sorted) values, interpolated like numpy.percentile."""
    pos = q * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return float(sorted_row[lo] + (sorted_row[hi] - sorted_row[lo]) * (pos - lo))
