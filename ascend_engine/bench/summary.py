"""Percentile summaries of samples (milliseconds), the one place they are computed."""

from __future__ import annotations

import numpy as np

PERCENTILE_KEYS = ("p50", "p90", "p95", "p99", "max", "min", "mean")


def summarize(samples) -> dict | None:
    """``{"p50", "p90", "p95", "p99", "max", "min", "mean", "count"}`` of ``samples``, or None when empty.

    Percentiles interpolate linearly between the two nearest samples (numpy's default).
    """
    a = np.asarray(list(samples), dtype=np.float64)
    if a.size == 0:
        return None
    return {
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
        "min": float(a.min()),
        "mean": float(a.mean()),
        "count": int(a.size),
    }


def spread_percent(values) -> float:
    """(max - min) / median of repeated measurements of one figure, in percent (0 for one run)."""
    a = np.asarray(list(values), dtype=np.float64)
    if a.size < 2:
        return 0.0
    median = float(np.median(a))
    return float((a.max() - a.min()) / abs(median) * 100.0) if median else 0.0
