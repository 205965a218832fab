"""Fixtures for the simulator runtime tests.

``sim`` wraps the suite's simulator session (``sim_lib``: AscendCL initialised
once per process, device 0 set on the main thread).  Tests that finalize, or
need other environment variables, run in a child process through
``simlib.run_python``.
"""

import pytest
from simrt_util import Sim


@pytest.fixture(scope="session")
def sim(sim_lib):
    return Sim(sim_lib)


@pytest.fixture
def lib(sim):
    return sim.lib


@pytest.fixture
def faults(sim_faults):
    """The suite's fault-injection fixture (tests/conftest.py), under this folder's name."""
    return sim_faults


@pytest.fixture
def stream(sim):
    s = sim.stream()
    yield s
    sim.lib.aclrtSynchronizeStream(s)  # clears a sticky error the test left behind
    sim.ok(sim.lib.aclrtDestroyStream(s))


@pytest.fixture(scope="session")
def dvpp(sim):
    """The simulator's libacl_dvpp.so over the session (tests/helpers/dvpp.py)."""
    from helpers.dvpp import Dvpp

    return Dvpp(sim)


@pytest.fixture
def channel(dvpp):
    """A DVPP channel (every module) on device 0, destroyed after the test."""
    c = dvpp.channel()
    yield c
    dvpp.close_channel(c)
