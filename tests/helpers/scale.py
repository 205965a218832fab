"""Sizes of randomized loops: CI runs them as written, AE_STRESS_SCALE multiplies them."""

import os


def stress_scale():
    """Multiplier for randomized stress loops (AE_STRESS_SCALE, default 1)."""
    return max(1, int(os.environ.get("AE_STRESS_SCALE", "1")))


def scaled(n):
    """``n`` times the stress scale."""
    return n * stress_scale()
