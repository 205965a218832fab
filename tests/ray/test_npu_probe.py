"""Ray's NPU probe at ray.init(): no "Failed to detect NPU type" traceback for the missing ``acl`` module."""

import logging

import pytest

npu = pytest.importorskip("ray._private.accelerators.npu")


class Kept(logging.Handler):
    """The records the logger hands its handlers (Ray's loggers do not propagate to pytest's)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def probe_records():
    logger = logging.getLogger("ray._private.accelerators.npu")
    kept = Kept()
    logger.addHandler(kept)
    try:
        soc = npu.NPUAcceleratorManager.get_current_node_accelerator_type()
    finally:
        logger.removeHandler(kept)
    return soc, kept.records


def test_a_missing_acl_module_logs_no_traceback(monkeypatch):
    """Ray printed the ModuleNotFoundError of its own `import acl` twice, with tracebacks, at ray.init()."""
    import sys

    import ascend_engine.ray  # noqa: F401  (installs the filter)

    monkeypatch.setitem(sys.modules, "acl", None)      # pyACL not installed
    soc, records = probe_records()
    assert soc is None
    assert records == []


def test_another_failure_of_the_probe_is_still_shown(monkeypatch):
    import sys
    import types

    import ascend_engine.ray  # noqa: F401

    broken = types.ModuleType("acl")

    def get_soc_name():
        raise RuntimeError("driver gone")

    broken.get_soc_name = get_soc_name
    monkeypatch.setitem(sys.modules, "acl", broken)
    soc, records = probe_records()
    assert soc is None
    [record] = records
    assert record.getMessage() == "Failed to detect NPU type." and "driver gone" in str(record.exc_info[1])
