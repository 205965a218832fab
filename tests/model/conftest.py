"""Fixtures for the simulator model tests.

The simulator is per process: the session fixture runs aclInit once
(tolerating an earlier aclInit by another suite in the same process) and sets
device 0 on the main thread; ``stream`` gives a fresh stream per test.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mdl  # noqa: E402
from helpers import simlib  # noqa: E402


@pytest.fixture(scope="session")
def lib():
    lib = simlib.load()
    rc = lib.aclInit(None)
    assert rc in (mdl.ACL_SUCCESS, mdl.ACL_ERROR_REPEAT_INITIALIZE), simlib.recent_error(lib)
    assert lib.aclrtSetDevice(0) == mdl.ACL_SUCCESS, simlib.recent_error(lib)
    return lib


@pytest.fixture
def stream(lib):
    import ctypes

    s = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(s)), "aclrtCreateStream")
    yield s.value
    lib.aclrtSynchronizeStream(s.value)  # clears a sticky error a test left behind
    lib.aclrtDestroyStream(s.value)
