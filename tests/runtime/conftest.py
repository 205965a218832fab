"""Fixtures for the runtime-layer tests (all on the simulator backend)."""

import pytest

import ascend_engine as ae


@pytest.fixture
def dev():
    """Device 0, closed after the test (with everything created from it)."""
    d = ae.Device(0)
    yield d
    d.close()
