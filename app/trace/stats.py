"""Median / p95 / max of a series, the way every report and panel states them."""
from __future__ import annotations

import numpy as np


def summary(values) -> dict[str, float]:
    arr = np.asarray([v for v in values if v is not None], np.float64)
    if arr.size == 0:
        return {"median": 0.0, "p95": 0.0, "max": 0.0}
    return {"median": round(float(np.median(arr)), 3), "p95": round(float(np.percentile(arr, 95)), 3),
            "max": round(float(arr.max()), 3)}
