"""Fixtures for the simulator runtime tests.

The simulator's state is per process: the session fixture initializes it once
(tolerating an earlier aclInit by another suite in the same process) and sets
device 0 on the main thread.  Tests that finalize, or need other environment
variables, run in a child process through ``simlib.run_python``.
"""

import pytest
from helpers import simlib
from simrt_util import ACL_ERROR_REPEAT_INITIALIZE, ACL_SUCCESS, Sim


@pytest.fixture(scope="session")
def sim():
    lib = simlib.load()
    rc = lib.aclInit(None)
    assert rc in (ACL_SUCCESS, ACL_ERROR_REPEAT_INITIALIZE), simlib.recent_error(lib)
    assert lib.aclrtSetDevice(0) == ACL_SUCCESS, simlib.recent_error(lib)
    return Sim(lib)


@pytest.fixture
def lib(sim):
    return sim.lib


@pytest.fixture
def faults(sim):
    """Sets fault rules for one test and always clears them afterwards."""
    yield sim.faults
    sim.lib.aeSimSetFaults(None)


@pytest.fixture
def stream(sim):
    s = sim.stream()
    yield s
    sim.lib.aclrtSynchronizeStream(s)  # clears a sticky error the test left behind
    sim.ok(sim.lib.aclrtDestroyStream(s))
