"""Suite-wide test setup: the simulator backend and the shared helpers on sys.path."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Tests run on the AscendCL simulator unless told otherwise.
os.environ.setdefault("ASCEND_ENGINE_BACKEND", "sim")

import pytest  # noqa: E402
from helpers.scale import stress_scale  # noqa: E402,F401  (kept importable from conftest)


@pytest.fixture
def sim_faults():
    """Set simulator fault rules for one test: ``sim_faults("task:execute@3=507011")``.

    The rules are cleared after the test, whatever happened.
    """
    from helpers import simlib

    yield simlib.set_faults
    simlib.set_faults(None)
