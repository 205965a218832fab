"""Fixtures for the runtime-layer tests (all on the simulator backend)."""

import pytest

import ascend_engine as ae


@pytest.fixture
def dev():
    """Device 0, closed after the test (with everything created from it)."""
    d = ae.Device(0)
    yield d
    d.close()


@pytest.fixture
def sim_faults():
    """Set simulator fault rules through aeSimSetFaults; cleared after the test."""
    import ctypes

    from helpers import simlib

    lib = simlib.load()
    fn = lib.aeSimSetFaults
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = ctypes.c_int

    def set_faults(spec):
        rc = fn(spec.encode() if spec else None)
        assert rc == 0, simlib.recent_error(lib)

    yield set_faults
    fn(None)
