"""Suite-wide test setup: the simulator backend and the fixtures every folder shares.

pytest puts this folder on ``sys.path`` when it loads this file, so every
test imports the shared helpers as ``from helpers import ...``.
"""

import ctypes
import os
import warnings

# Tests run on the AscendCL simulator unless told otherwise.
os.environ.setdefault("ASCEND_ENGINE_BACKEND", "sim")

import pytest  # noqa: E402
from helpers import simlib  # noqa: E402
from helpers.scale import stress_scale  # noqa: E402,F401  (kept importable from conftest)


@pytest.fixture
def sim_faults():
    """Set simulator fault rules for one test: ``sim_faults("task:execute@3=507011")``.

    The one fault-injection fixture of the suite (``faults`` in tests/sim is
    this fixture under that folder's name).  ``None`` or ``""`` clears the
    rules; they are cleared after the test, whatever happened.
    """
    yield simlib.set_faults
    simlib.set_faults(None)


@pytest.fixture(scope="session")
def sim_lib():
    """The simulator library through ctypes (helpers.simlib), AscendCL initialised
    and device 0 set on the main thread: the session of the tests that call
    AscendCL directly.

    The simulator's state is per process: aclInit runs once (an earlier
    aclInit, by the package or another folder's tests, is accepted).  Tests
    that finalize, or need other environment variables, run in a child
    process (``simlib.run_python``).
    """
    return simlib.session()


@pytest.fixture(scope="session")
def cann_include():
    """Include directory of the genuine CANN headers (parent of ``acl/``), for the
    tests that compile C against them.

    The headers come from the torch-npu wheel, fetched by
    ascend_engine.cann_headers (``ascend-engine sim headers``) into a cache
    outside the repository.  When they cannot be fetched the tests that need
    them skip -- loudly: a warning and a skip reason saying the CANN
    conformance did NOT run.
    """
    from ascend_engine import cann_headers as tool

    try:
        return tool.ensure_headers()
    except tool.CannHeadersUnavailable as exc:
        msg = (
            "CANN CONFORMANCE NOT CHECKED: the real AscendCL headers could not be fetched "
            f"(torch-npu=={tool.TORCH_NPU_VERSION} wheel): {exc}"
        )
        warnings.warn(msg, stacklevel=1)
        print("\n!!! " + msg)
        pytest.skip(msg)


@pytest.fixture
def no_p2p():
    """The one peer-link fixture of the suite: set_spec("0-1") removes the
    link between devices 0 and 1 (aeSimSetNoP2P on the simulator the package
    runs on); every pair is linked again afterwards."""
    fn = simlib.load().aeSimSetNoP2P
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = ctypes.c_int

    def set_spec(spec):
        assert fn(spec.encode()) == 0, simlib.recent_error()

    yield set_spec
    assert fn(None) == 0
