"""Suite-wide test setup: the simulator backend and the shared helpers on sys.path."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Tests run on the AscendCL simulator unless told otherwise.
os.environ.setdefault("ASCEND_ENGINE_BACKEND", "sim")


def stress_scale():
    """Multiplier for randomized stress loops (AE_STRESS_SCALE, default 1)."""
    return max(1, int(os.environ.get("AE_STRESS_SCALE", "1")))
