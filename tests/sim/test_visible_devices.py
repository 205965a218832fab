"""ASCEND_RT_VISIBLE_DEVICES: visible physical devices renumbered from 0, read at aclInit.

Each case runs in a child process (the setting is read by aclInit).  The rules
and their sources are in docs/simulator.md ("Visible devices").
"""

import textwrap

import pytest
from simrt_util import run_child

ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_NO_DEVICE = 207004

# Shared by the children: the visible count and the physical id of each logical device.
PRELUDE = """
import os
def visible():
    n = ctypes.c_uint32()
    rc = lib.aclrtGetDeviceCount(ctypes.byref(n))
    assert rc == 0, (rc, err())
    phys = []
    for i in range(n.value):
        p = ctypes.c_int32(-1)
        assert lib.aeSimDevicePhysicalId(i, ctypes.byref(p)) == 0, err()
        phys.append(p.value)
    return phys
"""


def _child(code, visible=None, count=8, **extra):
    env = {"ASCEND_SIM_DEVICE_COUNT": str(count), "ASCEND_RT_VISIBLE_DEVICES": visible or "", **extra}
    run_child(PRELUDE + textwrap.dedent(code), env=env)


@pytest.mark.parametrize(
    "value, physical",
    [
        ("3", [3]),  # a scheduler's one NPU is the process's device 0
        ("1,2,3", [1, 2, 3]),
        ("0,7", [0, 7]),
        ("1, 2,3", [1]),  # documented: reading stops at the space
        ("1,3,8", [1, 3]),  # documented: stops at the invalid id 8 (eight devices: 0..7)
        ("1,2x,5", [1, 2]),  # another character ends the list after the id it cuts short
        ("2,5,", [2, 5]),  # an empty entry ends the list
        ("", list(range(8))),  # empty: as if unset
    ],
)
def test_visible_devices_are_renumbered_from_zero(value, physical):
    _child(
        f"""
        assert lib.aclInit(None) == 0, err()
        assert visible() == {physical!r}, visible()
        # every visible device is usable under its logical id ...
        for i in range({len(physical)}):
            assert lib.aclrtSetDevice(i) == 0, err()
            d = ctypes.c_int32(-1)
            assert lib.aclrtGetDevice(ctypes.byref(d)) == 0 and d.value == i
            assert lib.aclrtResetDevice(i) == 0, err()
        # ... and the next id is out of range
        n = {len(physical)}
        assert lib.aclrtSetDevice(n) == {ACL_ERROR_RT_INVALID_DEVICEID}
        assert err().startswith(f"aclrtSetDevice: deviceId {{n}} is out of range: "), err()
        assert f" {{n}} device(s)" in err(), err()
        assert lib.aclFinalize() == 0
        """,
        visible=value,
    )


def test_out_of_range_message_names_the_variable():
    _child(
        """
        assert lib.aclInit(None) == 0, err()
        ctx = ctypes.c_void_p()
        assert lib.aclrtCreateContext(ctypes.byref(ctx), 1) == 107001
        assert err() == (
            "aclrtCreateContext: deviceId 1 is out of range: 1 device(s) are visible, ids 0..0 "
            "(ASCEND_RT_VISIBLE_DEVICES='6' renumbers the visible physical devices from 0)"
        ), err()
        p = ctypes.c_int32()
        assert lib.aeSimDevicePhysicalId(1, ctypes.byref(p)) == 107001
        assert lib.aeSimDevicePhysicalId(0, None) == 100000 and "physicalId is NULL" in err()
        assert lib.aclFinalize() == 0
        """,
        visible="6",
    )


@pytest.mark.parametrize(
    "value, why",
    [
        ("0,2,4,6,1,3,5,7", "VISIBLE_DEVICES='0,2,4,6,1,3,5,7' is not in ascending order (1 after 6)"),
        ("3,3", "ASCEND_RT_VISIBLE_DEVICES='3,3' is not in ascending order (3 after 3)"),
        ("8", "ASCEND_RT_VISIBLE_DEVICES='8' names no device: 8 is not a physical device id, expected 0..7"),
        ("99999999999999999999", "'99999999999999999999' names no device: 999999999999 is not a physical"),
        (" 1", "ASCEND_RT_VISIBLE_DEVICES=' 1' names no device: it must start with a physical device id"),
        (",1", "ASCEND_RT_VISIBLE_DEVICES=',1' names no device"),
        ("npu0", "ASCEND_RT_VISIBLE_DEVICES='npu0' names no device"),
    ],
)
def test_invalid_list_leaves_no_device(value, why):
    _child(
        f"""
        # aclInit succeeds, as CANN's does; the device calls report the setting
        assert lib.aclInit(None) == 0, err()
        n = ctypes.c_uint32(12345)
        assert lib.aclrtGetDeviceCount(ctypes.byref(n)) == {ACL_ERROR_RT_NO_DEVICE}
        assert n.value == 12345
        assert err().startswith("aclrtGetDeviceCount: no device is visible: "), err()
        assert {why!r} in err(), err()
        assert lib.aclrtSetDevice(0) == {ACL_ERROR_RT_INVALID_DEVICEID}
        assert err().startswith("aclrtSetDevice: deviceId 0: no device is visible: "), err()
        assert {why!r} in err(), err()
        assert lib.aclFinalize() == 0
        """,
        visible=value,
    )


def test_read_at_each_aclinit_and_per_logical_device_accounting():
    _child(
        """
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "2,5"
        assert lib.aclInit(None) == 0, err()
        # changing the variable after aclInit changes nothing until the next aclInit
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "1"
        assert visible() == [2, 5]
        # memory is counted per visible device, under its logical id
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert lib.aclrtSetDevice(1) == 0
        p = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(p), 32 << 20, 0) == 0, err()
        assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0
        assert 32 << 20 <= total.value - free.value < 33 << 20  # the allocation, rounded and padded
        assert lib.aclrtSetDevice(0) == 0
        assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0
        assert free.value == total.value == 64 << 20
        assert lib.aclFinalize() == 0
        assert lib.aclInit(None) == 0, err()
        assert visible() == [1]
        assert lib.aclFinalize() == 0
        """,
        visible=None,
        count=8,
        ASCEND_SIM_DEVICE_MEMORY="64MiB",
    )


def test_python_reports_no_visible_device_with_the_reason():
    proc = run_child(
        """
        import ascend_engine as ae
        try:
            ae.device_count()
        except ae.AclError as exc:
            print(exc.code, exc)
        """,
        env={"ASCEND_SIM_DEVICE_COUNT": "8", "ASCEND_RT_VISIBLE_DEVICES": "5,2",
             "ASCEND_ENGINE_BACKEND": "sim"},
    )
    assert proc.stdout.startswith("207004 "), proc.stdout
    assert "ASCEND_RT_VISIBLE_DEVICES='5,2' is not in ascending order (2 after 5)" in proc.stdout, proc.stdout
    assert "it takes physical ids in ascending order" in proc.stdout, proc.stdout


def test_engine_on_the_one_visible_device(tmp_path):
    """A process given physical NPU 3 compiles and runs a pipeline on its device 0."""
    model = tmp_path / "double.om"
    proc = run_child(
        f"""
        import numpy as np
        import ascend_engine as ae
        from ascend_engine import sim
        assert ae.device_count() == 1
        g = sim.Graph("double")
        g.output("y", g.mul(g.input("x", "float32", (None, 4)), 2.0))
        g.save({str(model)!r}, batch_sizes=(1, 2))

        def build(device):
            pipe = ae.Pipeline(device=device)
            pipe.output("y", pipe.model({str(model)!r}, pipe.input("x", "float32", (None, 4)), name="double"))
            return pipe

        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        with build(0).compile(depth=2) as engine:
            np.testing.assert_array_equal(engine.run({{"x": x}})["y"], x * 2)
        try:
            build(1).compile(depth=1)
        except Exception as exc:
            print("device 1:", type(exc).__name__, exc)
        """,
        env={"ASCEND_SIM_DEVICE_COUNT": "8", "ASCEND_RT_VISIBLE_DEVICES": "3",
             "ASCEND_ENGINE_BACKEND": "sim"},
    )
    assert "device 1:" in proc.stdout, proc.stdout
    assert "deviceId 1 is out of range: 1 device(s) are visible" in proc.stdout, proc.stdout
    assert "ASCEND_RT_VISIBLE_DEVICES='3'" in proc.stdout, proc.stdout
