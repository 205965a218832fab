"""Fixtures for the simulator model tests: the suite's simulator session
(``sim_lib``) as ``lib``, and a fresh stream per test."""

import ctypes

import pytest
from helpers import mdl


@pytest.fixture(scope="session")
def lib(sim_lib):
    return sim_lib


@pytest.fixture
def stream(lib):
    s = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(s)), "aclrtCreateStream")
    yield s.value
    lib.aclrtSynchronizeStream(s.value)  # clears a sticky error a test left behind
    lib.aclrtDestroyStream(s.value)
