"""Fault injection grammar and the call log."""

import ctypes
import re

import pytest
from simrt_util import D2H, run_child


def test_nth_call_fails_without_doing_anything(sim, lib, faults):
    faults("aclrtMalloc@2=207001")
    free0, _ = sim.mem_info()
    a = sim.malloc(64)
    p = ctypes.c_void_p(0)
    assert lib.aclrtMalloc(ctypes.byref(p), 64, 0) == 207001
    assert p.value is None  # nothing was done
    assert sim.err() == (
        "aclrtMalloc: injected fault 207001 ACL_ERROR_RT_MEMORY_ALLOCATION "
        "(ASCEND_SIM_FAULTS rule 'aclrtMalloc@2=207001'); nothing was done"
    )
    b = sim.malloc(64)  # the third call works again
    sim.ok(lib.aclrtFree(a))
    sim.ok(lib.aclrtFree(b))
    assert sim.mem_info()[0] == free0


def test_every_call_from_n_on_and_symbolic_codes(sim, lib, faults, stream):
    faults("aclrtRecordEvent@3+=ACL_ERROR_RT_INTERNAL_ERROR")
    ev = sim.event()
    codes = [lib.aclrtRecordEvent(ev, stream) for _ in range(5)]
    assert codes == [0, 0, 507000, 507000, 507000]
    faults("")  # clears the rules and counters
    sim.ok(lib.aclrtRecordEvent(ev, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_task_fault_and_stall(sim, lib, faults, stream):
    dev = sim.malloc(32)
    out = sim.malloc_host(32)  # pinned: with pageable memory the copy would be synchronous (CANN 8.5+)
    faults("task:memcpy@1=507052, stall:memcpy@2=80")
    sim.ok(lib.aclrtMemsetAsync(dev, 32, 6, 32, stream))
    sim.ok(lib.aclrtMemcpyAsync(out, 32, dev, 32, D2H, stream))  # fails on the device: nothing copied
    assert lib.aclrtSynchronizeStream(stream) == 507052
    assert "memcpy task failed on the device: injected fault 507052 ACL_ERROR_RT_COPY_DATA" in sim.err()
    assert ctypes.string_at(out, 32) == b"\xef\xbe\xad\xff" * 8  # new memory's junk
    sim.ok(lib.aclrtMemcpyAsync(out, 32, dev, 32, D2H, stream))  # stalled 80 ms, then copies
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, 20) == 507046
    sim.ok(lib.aclrtSynchronizeStream(stream))
    assert ctypes.string_at(out, 32) == b"\x06" * 32
    sim.ok(lib.aclrtFree(dev))
    sim.ok(lib.aclrtFreeHost(out))


@pytest.mark.parametrize(
    "spec, reason",
    [
        ("aclrtMaloc@1=1", "'aclrtMaloc' is not an AscendCL function the simulator exports"),
        ("aclrtMalloc@0=1", "the count after '@' must be an integer >= 1, got '0'"),
        ("aclrtMalloc@1=0", "the code must be a non-zero error number or ACL_ERROR_* name, got '0'"),
        ("aclrtMalloc=1", "is not of the form FUNC@N=CODE"),
        ("task:launch@1=1", "unknown task kind 'launch'"),
        ("stall:memcpy@1=-5", "the stall must be milliseconds in 0..3600000, got '-5'"),
        ("aclrtFree@1=NOT_A_CODE", "got 'NOT_A_CODE'"),
    ],
)
def test_bad_fault_specs_are_rejected(sim, lib, faults, spec, reason):
    faults("aclrtFree@1=100000")
    assert lib.aeSimSetFaults(spec.encode()) == 100000
    assert sim.err().startswith(f"aeSimSetFaults: rule '{spec}'")
    assert reason in sim.err()
    # the previous rules stay in force
    assert lib.aclrtFree(None) == 100000 and "injected fault" in sim.err()


def test_faults_from_environment_and_call_log(tmp_path):
    log = tmp_path / "calls.log"
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        p = ctypes.c_void_p(); s = ctypes.c_void_p()
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        assert lib.aclrtMalloc(ctypes.byref(p), 100, 0) == 207001
        assert lib.aclrtMalloc(ctypes.byref(p), 100, 0) == 0
        assert lib.aclrtMemsetAsync(p, 100, 1, 100, s) == 0
        assert lib.aclrtSynchronizeStream(s) == 507011
        assert lib.aclrtFree(p) == 0
        assert lib.aclrtFree(p) == 107000
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_LOG": str(log), "ASCEND_SIM_FAULTS": "aclrtMalloc@1=207001,task:memset@1=507011"},
    )
    lines = log.read_text().splitlines()
    prefix = r"\[ascend-sim +\d+\.\d{6} tid=\d+\] "
    assert re.fullmatch(prefix + r"aclInit\(configPath=NULL\) = 0", lines[0])
    text = "\n".join(lines)
    assert re.search(prefix + r"aclrtSetDevice\(deviceId=0\) = 0", text)
    assert re.search(
        prefix
        + r"aclrtMalloc\(injected fault\) = 207001 ACL_ERROR_RT_MEMORY_ALLOCATION: aclrtMalloc: injected fault",  # noqa: E501
        text,
    )
    m = re.search(
        prefix
        + r"aclrtMalloc\(devPtr=0x[0-9a-f]+, size=100, policy=0x0 -> (0x[0-9a-f]+) \(160 bytes reserved\)\) = 0",  # noqa: E501
        text,
    )
    assert m
    ptr = m.group(1)
    assert f"aclrtMemsetAsync(devPtr={ptr}, maxCount=100, value=1, count=100, stream=0x" in text
    assert re.search(r"note: device-side failure on stream \d+: 507011 ACL_ERROR_RT_MODEL_EXECUTE", text)
    assert re.search(
        r"aclrtSynchronizeStream\(stream=0x[0-9a-f]+\) = 507011 ACL_ERROR_RT_MODEL_EXECUTE: "
        r"aclrtSynchronizeStream: device-side failure reported by stream",
        text,
    )
    assert f"aclrtFree(devPtr={ptr}) = 0" in text
    assert (
        f"aclrtFree(devPtr={ptr}) = 107000 ACL_ERROR_RT_PARAM_INVALID: "
        f"aclrtFree: devPtr {ptr} was already freed" in text
    )
    assert lines[-1].endswith("aclFinalize() = 0")
    tids = {re.search(r"tid=(\d+)", line).group(1) for line in lines if "note:" not in line}
    assert len(tids) == 1  # every API call came from the child's main thread


def test_log_to_stderr():
    proc = run_child(
        """
        assert lib.aclInit(None) == 0
        assert lib.aclrtSetDevice(42) == 107001
        """,
        env={"ASCEND_SIM_LOG": "stderr"},
    )
    assert (
        "aclrtSetDevice(deviceId=42) = 107001 ACL_ERROR_RT_INVALID_DEVICEID: aclrtSetDevice: deviceId 42 is out of range"  # noqa: E501
        in proc.stderr
    )
