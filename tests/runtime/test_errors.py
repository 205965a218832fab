"""AscendCL failures raise the right AclError subclass with every field filled."""

import ctypes
import pickle

import numpy as np
import pytest
from helpers import simlib

import ascend_engine as ae
from ascend_engine import errors


def test_out_of_bounds_copy_raises_invalid_param(dev):
    buf = ae.DeviceBuffer(dev, 256)
    with pytest.raises(ae.InvalidParamError) as info:
        buf.copy_from(np.zeros(512, np.uint8))
    exc = info.value
    assert isinstance(exc, ae.AclError) and isinstance(exc, ValueError)
    assert exc.function == "aclrtMemcpy"
    assert exc.code in (100000, 107000)
    assert exc.name == errors.error_name(exc.code) and exc.name.startswith("ACL_ERROR_")
    assert "aclrtMemcpy" in exc.message and "512" in exc.message
    assert "destMax" in exc.hint
    text = str(exc)
    assert "\n" not in text
    for part in (exc.function, exc.name, str(exc.code), exc.message, exc.hint):
        assert part in text


def test_out_of_bounds_async_copy_and_small_output(dev):
    buf = ae.DeviceBuffer(dev, 256)
    s = ae.Stream(dev)
    with pytest.raises(ae.InvalidParamError) as info:
        buf.copy_to(np.zeros(16, np.uint8), stream=s)
    assert info.value.function == "aclrtMemcpyAsync"


def test_a_copy_at_an_offset_has_only_the_rest_of_the_buffer(dev):
    buf = ae.DeviceBuffer(dev, 64)
    with pytest.raises(ae.InvalidParamError, match="count 48 is larger than destMax 32"):
        buf.copy_from(np.zeros(48, np.uint8), offset=32)
    buf.copy_from(np.ones(32, np.uint8), offset=32)   # exactly the rest fits
    assert (buf.copy_to(offset=32) == 1).all()


def test_double_free_through_internal_path(dev):
    buf = ae.DeviceBuffer(dev, 1024)
    lib = simlib.load()
    assert lib.aclrtFree(ctypes.c_void_p(buf.ptr)) == 0  # freed behind the object's back
    with pytest.raises(ae.AclError) as info:
        buf.close()
    exc = info.value
    assert exc.function == "aclrtFree"
    assert exc.code != 0 and exc.name in errors.ERROR_CODES.values()
    assert exc.message
    assert buf.closed  # the object does not try again


def test_oom_in_child_process():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        dev = ae.Device(0)
        before = dev.memory_info()
        keep = ae.DeviceBuffer(dev, 40 << 20)
        try:
            ae.DeviceBuffer(dev, 40 << 20)
        except ae.OutOfMemoryError as exc:
            assert isinstance(exc, ae.ResourceError) and isinstance(exc, MemoryError)
            print(exc.code, exc.name, exc.function)
            print("HINT", exc.hint)
            print("MSG", exc.message)
        after = dev.memory_info()
        print(before.total == after.total, before.free - after.free >= 40 << 20)
        keep.close()
        print(dev.memory_info().free == before.free)
        """,
        env={"ASCEND_SIM_DEVICE_MEMORY": "64MiB"},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "207001 ACL_ERROR_RT_MEMORY_ALLOCATION aclrtMalloc"
    assert "peak working set" in lines[1]
    assert lines[2].startswith("MSG aclrtMalloc")
    assert lines[3:] == ["True True", "True"]


def test_invalid_device_id():
    with pytest.raises(ae.InvalidParamError) as info:
        ae.Device(99)
    assert info.value.function == "aclrtSetDevice"
    assert info.value.code in (107001, 200002, 100000)
    assert info.value.hint


def test_elapsed_time_needs_timing_events(dev):
    s = ae.Stream(dev)
    a, b = ae.Event(dev), ae.Event(dev)
    a.record(s)
    b.record(s)
    s.synchronize()
    with pytest.raises(ae.AclError) as info:
        ae.Event.elapsed_ms(a, b)
    assert info.value.function == "aclrtEventElapsedTime"
    assert info.value.code == 107006 and "timing" in info.value.hint


def test_stream_synchronize_timeout(dev, sim_faults):
    s = ae.Stream(dev)
    buf = ae.DeviceBuffer(dev, 64)
    sim_faults("stall:memcpy@1=400")
    buf.copy_from(ae.HostBuffer(64, dev), stream=s)  # pinned: pageable memory would copy synchronously
    with pytest.raises(ae.AclTimeoutError) as info:
        s.synchronize(timeout=0.02)
    assert isinstance(info.value, TimeoutError)
    assert info.value.code == 507046 and info.value.function == "aclrtSynchronizeStreamWithTimeout"
    s.synchronize()


def test_device_side_failure_surfaces_at_synchronize(dev, sim_faults):
    s = ae.Stream(dev)
    buf = ae.DeviceBuffer(dev, 64)
    sim_faults("task:memcpy@1=507053")
    buf.copy_from(ae.HostBuffer(64, dev), stream=s)
    with pytest.raises(ae.DeviceError) as info:
        s.synchronize()
    assert info.value.code == 507053 and info.value.function == "aclrtSynchronizeStream"


# ---- the pure-Python table and classes -----------------------------------------------


def test_code_table_and_names():
    assert errors.error_name(107002) == "ACL_ERROR_RT_CONTEXT_NULL"
    assert errors.error_name(0) == "ACL_SUCCESS"
    assert errors.error_name(201001) == "ACL_ERROR_UNKNOWN_201001"  # the seed article's code does not exist
    assert len(errors.ERROR_CODES) >= 250
    assert errors.error_description(507046)


@pytest.mark.parametrize(
    "code, cls",
    [
        (100000, errors.InvalidParamError),
        (107000, errors.InvalidParamError),
        (107002, errors.InvalidParamError),
        (100001, errors.NotInitializedError),
        (145003, errors.ModelError),
        (145013, errors.ModelError),
        (200000, errors.OutOfMemoryError),
        (207001, errors.OutOfMemoryError),
        (207018, errors.OutOfMemoryError),
        (245000, errors.OutOfMemoryError),
        (207007, errors.ResourceError),
        (507011, errors.DeviceError),
        (500004, errors.DeviceError),
        (507000, errors.InternalError),
        (545000, errors.InternalError),
        (507046, errors.AclTimeoutError),
        (507047, errors.AclTimeoutError),
        (107019, errors.AclTimeoutError),
        (107020, errors.AclTimeoutError),
        (100036, errors.AclTimeoutError),
        (999999, errors.AclError),
    ],
)
def test_error_class_by_family(code, cls):
    assert errors.error_class(code) is cls
    with pytest.raises(cls):
        errors.raise_for(code, "aclFoo", "aclFoo: msg")


def test_raise_for_success_is_noop_and_pickling():
    errors.raise_for(0, "aclrtMalloc")
    exc = errors.error_class(207001)("aclrtMalloc", 207001, "aclrtMalloc: out of\nmemory")
    assert exc.message == "aclrtMalloc: out of memory"
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is errors.OutOfMemoryError and str(clone) == str(exc)


def test_hints_from_troubleshooting_table():
    # a code without its own hint falls back to the function's ("device busy")
    assert errors.hint_for(500001, "aclrtSetDevice").startswith("the device may be held by another process")
    assert "current" in errors.hint_for(107002)
    symptoms = " ".join(row[0] for row in errors.TROUBLESHOOTING)
    assert "all zeros" in symptoms and "memory keeps growing" in symptoms
    fixes = " ".join(row[2] for row in errors.TROUBLESHOOTING)
    assert "ASCEND_RT_MEM_POOL_SIZE" not in fixes and "ASCEND_GLOBAL_LOG_LEVEL=0" in fixes
    assert "simulator" in errors.hint_for(145006)


def test_a_rejected_argument_gets_the_hint_of_the_call_that_rejected_it():
    for code in (100000, 107000):
        assert "destMax is the destination's capacity" in errors.hint_for(code, "aclrtMemcpyAsync")
        assert "destMax" not in errors.hint_for(code, "aclmdlExecute")
        assert errors.hint_for(code, "aclmdlExecute") == "an argument was rejected (see the message)"
        init = errors.hint_for(code, "aclInit")
        assert "ASCEND_SIM_*" in init and "docs/simulator.md" in init and "destMax" not in init


def test_a_bad_simulator_variable_names_itself_and_points_to_the_simulator_docs():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        try:
            ae.Device(0)
        except ae.InvalidParamError as exc:
            print(exc.function, exc.code)
            print(exc.message)
            print(exc.hint)
        """,
        env={"ASCEND_SIM_DEVICE_MEMORY": "banana"},
    )
    assert proc.returncode == 0, proc.stderr
    function, message, hint = proc.stdout.splitlines()
    assert function == "aclInit 100000"
    assert "ASCEND_SIM_DEVICE_MEMORY='banana' is invalid: expected a positive size such as 8GiB" in message
    assert hint.startswith("aclInit rejected its configuration") and "destMax" not in hint
