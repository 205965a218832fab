"""The simulator's runtime against CANN 9.1, one test per case of the fidelity table
(docs/simulator.md, "Fidelity to CANN 9.1", sub-section "Runtime (rows 1-57)").

Each test is named ``test_rowNN_cann91_<case>``: the row, the version and the case; its body
asserts the code CANN 9.1 returns (or the behaviour it has).  Rows that need a fresh process
(init and finalize, the environment) run in a child through ``run_child``.
"""

import ctypes
import threading
import time

import pytest
from simrt_util import CALLBACK, D2D, D2H, DEFAULT, H2D, Reporter, run_child

H2H = 0
SYNC, TIME_LINE, DEVICE_USE_ONLY = 0x1, 0x8, 0x10
NOT_READY, COMPLETE = 0, 1


def in_thread(fn):
    """fn() on a fresh thread (no current context); returns what it returned."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(30)
    assert not t.is_alive()
    return out[0]


@pytest.fixture
def foreign_stream(sim, lib):
    """A stream of a second context on device 0; the main thread's context stays current."""
    main, ctx = ctypes.c_void_p(), ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    sim.ok(lib.aclrtCreateContext(ctypes.byref(ctx), 0))
    s = sim.stream()
    sim.ok(lib.aclrtSetCurrentContext(main))
    yield s
    sim.ok(lib.aclrtDestroyContext(ctx))  # its streams go with it
    sim.ok(lib.aclrtSetCurrentContext(main))


# ---- init / finalize (rows 1-9) -------------------------------------------------------------


def test_row01_cann91_init_twice_is_100002_and_counts_a_reference():
    run_child(
        """
        n = ctypes.c_uint64(99)
        assert lib.aclInit(None) == 0, err()
        assert lib.aclInit(None) == 100002 and lib.aclInit(None) == 100002
        assert lib.aclFinalizeReference(ctypes.byref(n)) == 0 and n.value == 2, n.value
        assert lib.aclFinalizeReference(ctypes.byref(n)) == 0 and n.value == 1
        assert lib.aclrtSetDevice(0) == 0, err()
        assert lib.aclFinalizeReference(None) == 0      # the last reference finalizes
        assert lib.aclFinalizeReference(ctypes.byref(n)) == 100037 and n.value == 0
        assert "no aclInit reference is left" in err(), err()
        assert lib.aclFinalize() == 100037
        assert lib.aclInit(None) == 0 and lib.aclInit(None) == 100002
        assert lib.aclFinalize() == 0                   # aclFinalize ignores the count
        assert lib.aclFinalizeReference(ctypes.byref(n)) == 100037
        """
    )


def test_row02_cann91_init_with_an_empty_config_file_succeeds(tmp_path):
    empty, blank = tmp_path / "empty.json", tmp_path / "blank.json"
    empty.write_bytes(b"")
    blank.write_text(" \n")
    run_child(
        f"""
        assert lib.aclInit({str(empty)!r}.encode()) == 0, err()
        assert lib.aclFinalize() == 0
        assert lib.aclInit({str(blank)!r}.encode()) == 0, err()
        assert lib.aclFinalize() == 0
        """
    )


def test_row03_cann91_init_with_a_missing_path_is_100003(tmp_path):
    missing = tmp_path / "none.json"
    run_child(
        f"""
        assert lib.aclInit({str(missing)!r}.encode()) == 100003
        assert err().startswith("aclInit: configPath '{missing}' cannot be opened"), err()
        """
    )


def test_row04_cann91_init_with_invalid_json_is_100006(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"dump": ')
    run_child(
        f"""
        assert lib.aclInit({str(bad)!r}.encode()) == 100006
        assert "does not hold a JSON object" in err(), err()
        """
    )


def test_row05_cann91_init_after_finalize_with_other_contents_is_100000(tmp_path):
    first, other, same = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    first.write_text('{"dump": {}}')
    other.write_text('{"dump": {"mode": "off"}}')
    same.write_text('{"dump": {}}')
    run_child(
        f"""
        assert lib.aclInit({str(first)!r}.encode()) == 0, err()
        assert lib.aclFinalize() == 0
        assert lib.aclInit({str(other)!r}.encode()) == 100000
        assert "its contents differ from the config of the first aclInit" in err(), err()
        assert {str(first)!r} in err(), err()
        assert lib.aclInit(None) == 100000              # no contents differ from some
        assert lib.aclInit({str(same)!r}.encode()) == 0, err()   # same contents, other path
        assert lib.aclFinalize() == 0
        """
    )


def test_row06_cann91_finalize_before_any_init_succeeds():
    run_child(
        """
        assert lib.aclFinalize() == 0, err()
        assert lib.aclFinalize() == 100037
        """
    )


def test_row07_cann91_finalize_twice_is_100037():
    run_child(
        """
        assert lib.aclInit(None) == 0
        assert lib.aclFinalize() == 0
        assert lib.aclFinalize() == 100037
        assert err() == "aclFinalize: AscendCL was already finalized"
        """
    )


def test_row08_cann91_runtime_calls_before_init_start_the_runtime():
    run_child(
        """
        p, s = ctypes.c_void_p(), ctypes.c_void_p()
        assert lib.aclrtSetDevice(0) == 0, err()
        assert lib.aclrtMalloc(ctypes.byref(p), 64, 0) == 0, err()
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0, err()
        assert lib.aclrtMemsetAsync(p, 64, 3, 64, s) == 0, err()
        assert lib.aclrtSynchronizeStream(s) == 0, err()
        assert lib.aclrtDestroyStream(s) == 0 and lib.aclrtFree(p) == 0
        assert lib.aclInit(None) == 0, err()             # aclInit after lazy start
        assert lib.aclFinalize() == 0
        """
    )


def test_row09_cann91_model_calls_before_init_are_145001():
    run_child(
        """
        from ascend_engine import sim
        import numpy as np
        g = sim.Graph("m")
        g.output("y", g.relu(g.input("x", "float32", (2,))))
        blob = g.to_bytes()
        mid = ctypes.c_uint32()
        assert lib.aclrtSetDevice(0) == 0, err()
        assert lib.aclmdlLoadFromMem(blob, len(blob), ctypes.byref(mid)) == 145001
        assert "the model executor is not initialized: call aclInit first" in err(), err()
        assert lib.aclmdlExecute(0, None, None) == 145001
        assert lib.aclInit(None) == 0
        assert lib.aclmdlLoadFromMem(blob, len(blob), ctypes.byref(mid)) == 0, err()
        assert lib.aclmdlUnload(mid) == 0
        assert lib.aclFinalize() == 0
        assert lib.aclmdlLoadFromMem(blob, len(blob), ctypes.byref(mid)) == 145001
        """
    )


# ---- devices and contexts (rows 10-17) -----------------------------------------------------


def test_row10_cann91_set_device_bad_id_is_107001(lib):
    assert lib.aclrtSetDevice(9999) == 107001


def test_row11_cann91_reset_of_a_device_never_set_is_507007():
    run_child(
        """
        assert lib.aclInit(None) == 0
        assert lib.aclrtResetDevice(3) == 507007
        assert lib.aclrtSetDevice(3) == 0 and lib.aclrtResetDevice(3) == 0
        assert lib.aclrtResetDevice(3) == 507007             # reset more times than set
        assert "device 3 is not set" in err(), err()
        """
    )


def test_row12_cann91_call_needing_a_context_without_one_is_107002(lib):
    s = ctypes.c_void_p()
    assert in_thread(lambda: lib.aclrtCreateStream(ctypes.byref(s))) == 107002


def test_row13_cann91_set_current_context_destroyed_is_107000(sim, lib):
    main, ctx = ctypes.c_void_p(), ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    sim.ok(lib.aclrtCreateContext(ctypes.byref(ctx), 0))
    sim.ok(lib.aclrtDestroyContext(ctx))
    assert lib.aclrtSetCurrentContext(ctx) == 107000
    sim.ok(lib.aclrtSetCurrentContext(main))


def test_row14_cann91_destroy_default_context_is_107002(sim, lib):
    main = ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    assert lib.aclrtDestroyContext(main) == 107002
    assert "is the default context of device 0" in sim.err()


def test_row15_cann91_destroy_context_twice_is_107002(sim, lib):
    main, ctx = ctypes.c_void_p(), ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    sim.ok(lib.aclrtCreateContext(ctypes.byref(ctx), 0))
    sim.ok(lib.aclrtDestroyContext(ctx))
    assert lib.aclrtDestroyContext(ctx) == 107002
    sim.ok(lib.aclrtSetCurrentContext(main))


def test_row16_cann91_null_out_pointers_are_100000(lib):
    assert lib.aclrtCreateContext(None, 0) == 100000
    assert lib.aclrtCreateStream(None) == 100000
    assert lib.aclrtCreateEvent(None) == 100000
    assert lib.aclrtMalloc(None, 16, 0) == 100000
    assert lib.aclrtMallocHost(None, 16) == 100000


@pytest.mark.parametrize("value, count", [("1, 2,3", 1), ("1,2x,5", 2), ("3,1", 0), ("1,,2", 1), ("x,1", 0)])
def test_row17_cann91_visible_devices_parsing(value, count):
    expect = f"n.value == {count}" if count else "rc == 207004"
    run_child(
        f"""
        n = ctypes.c_uint32(0)
        assert lib.aclInit(None) == 0
        rc = lib.aclrtGetDeviceCount(ctypes.byref(n))
        assert {expect}, (rc, n.value, err())
        """,
        env={"ASCEND_RT_VISIBLE_DEVICES": value},
    )


# ---- streams (rows 18-24) --------------------------------------------------------------------


def test_row18_cann91_create_and_destroy_stream_null_are_100000(lib):
    assert lib.aclrtCreateStream(None) == 100000
    assert lib.aclrtDestroyStream(None) == 100000


def test_row19_cann91_destroy_stream_waits_for_queued_tasks(sim, lib, faults):
    s = sim.stream()
    dev = sim.malloc(64)
    faults("stall:memset@1=100")
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 9, 64, s))
    t0 = time.monotonic()
    sim.ok(lib.aclrtDestroyStream(s))
    assert time.monotonic() - t0 >= 0.09
    assert sim.read(dev, 64) == b"\x09" * 64
    sim.ok(lib.aclrtFree(dev))


def test_row20_cann91_stream_of_another_context_on_the_device_is_107003(sim, lib, foreign_stream):
    s = foreign_stream
    ev = sim.event()
    dev = sim.malloc(64)
    pinned = sim.malloc_host(64)
    sim.ok(lib.aclrtRecordEvent(ev, None))
    assert lib.aclrtRecordEvent(ev, s) == 107003
    assert "not to this thread's current context" in sim.err()
    assert lib.aclrtStreamWaitEvent(s, ev) == 107003
    assert lib.aclrtMemcpyAsync(dev, 64, pinned, 64, H2D, s) == 107003
    assert lib.aclrtLaunchCallback(CALLBACK(lambda _: None), None, 0, s) == 107003
    assert lib.aclrtDestroyStream(s) == 107003
    sim.ok(lib.aclrtSynchronizeStream(s))  # synchronize looks at the device only
    sim.ok(lib.aclrtSynchronizeStream(None))
    sim.ok(lib.aclrtDestroyEvent(ev))
    sim.ok(lib.aclrtFree(dev))
    sim.ok(lib.aclrtFreeHost(pinned))


def test_row21_cann91_destroyed_stream_and_event_are_107017(sim, lib):
    s, ev = sim.stream(), sim.event()
    sim.ok(lib.aclrtDestroyStream(s))
    sim.ok(lib.aclrtDestroyEvent(ev))
    assert lib.aclrtSynchronizeStream(s) == 107017
    assert lib.aclrtDestroyEvent(ev) == 107017


def test_row22_cann91_stream_sync_timeout_below_minus_one_is_107000(lib, stream):
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, -2) == 107000


def test_row23_cann91_stream_sync_timeout_zero_is_107000(lib, stream):
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, 0) == 107000


def test_row24_cann91_stream_sync_timeout_is_507046(sim, lib, stream, faults):
    dev = sim.malloc(32)
    faults("stall:memset@1=150")
    sim.ok(lib.aclrtMemsetAsync(dev, 32, 1, 32, stream))
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, 10) == 507046
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtFree(dev))


# ---- memory (rows 25-40) ---------------------------------------------------------------------


def test_row25_cann91_malloc_size_zero_or_null_is_100000(lib):
    p = ctypes.c_void_p()
    assert lib.aclrtMalloc(ctypes.byref(p), 0, 0) == 100000
    assert lib.aclrtMalloc(None, 64, 0) == 100000


def test_row26_cann91_malloc_unknown_policy_is_accepted(sim, lib):
    for policy in (9, 0x7F, 0x40000000):
        sim.ok(lib.aclrtFree(sim.malloc(64, policy)))


def test_row27_cann91_malloc_reserves_round32_plus_32(sim, lib):
    free0, _ = sim.mem_info()
    p = sim.malloc(100)
    free1, _ = sim.mem_info()
    assert free0 - free1 == 160
    sim.ok(lib.aclrtFree(p))


def test_row28_cann91_malloc_pointer_is_at_least_64_byte_aligned(sim, lib):
    ptrs = [sim.malloc(n) for n in (1, 33, 100, 4097)]
    assert all(p % 64 == 0 for p in ptrs)
    for p in ptrs:
        sim.ok(lib.aclrtFree(p))


def test_row29_cann91_malloc_host_size_zero_or_null_is_100000(lib):
    p = ctypes.c_void_p()
    assert lib.aclrtMallocHost(ctypes.byref(p), 0) == 100000
    assert lib.aclrtMallocHost(None, 64) == 100000


def test_row30_cann91_free_unknown_or_freed_pointer_is_107000(sim, lib):
    p = sim.malloc(64)
    sim.ok(lib.aclrtFree(p))
    assert lib.aclrtFree(p) == 107000
    assert lib.aclrtFree(ctypes.c_void_p(0x1000)) == 107000


def test_row31_cann91_free_without_a_context_works(sim, lib):
    p = sim.malloc(64)
    assert in_thread(lambda: lib.aclrtFree(ctypes.c_void_p(p))) == 0


def test_row32_cann91_copy_count_zero_succeeds_before_any_check(lib):
    def calls():
        return (
            lib.aclrtMemcpy(None, 0, None, 0, 99),
            lib.aclrtMemcpyAsync(None, 0, None, 0, 99, ctypes.c_void_p(0x10)),
        )

    assert in_thread(calls) == (0, 0)  # no context, NULL pointers, a bad kind and stream


def test_row33_cann91_copy_count_over_dest_max_is_107000(sim, lib, stream):
    dev, pinned = sim.malloc(64), sim.malloc_host(64)
    assert lib.aclrtMemcpy(pinned, 16, dev, 64, D2H) == 107000
    assert lib.aclrtMemcpyAsync(pinned, 16, dev, 64, D2H, stream) == 107000
    assert sim.err() == "aclrtMemcpyAsync: count 64 is larger than destMax 16 (the capacity of dst)"
    sim.ok(lib.aclrtFree(dev))
    sim.ok(lib.aclrtFreeHost(pinned))


@pytest.mark.parametrize("kind", [6, 7])
def test_row34_cann91_copy_kinds_6_and_7_are_100000(sim, lib, stream, kind):
    a, b = sim.malloc(64), sim.malloc(64)
    assert lib.aclrtMemcpy(a, 64, b, 64, kind) == 100000
    assert lib.aclrtMemcpyAsync(a, 64, b, 64, kind, stream) == 100000
    assert "is not a copy kind of aclrtMemcpy/aclrtMemcpyAsync: expected 0..5" in sim.err()
    sim.ok(lib.aclrtFree(a))
    sim.ok(lib.aclrtFree(b))


def test_row35_cann91_sync_copy_ignores_kind(sim, lib):
    dev = sim.malloc(64)
    src = (ctypes.c_uint8 * 64)(*range(64))
    out = (ctypes.c_uint8 * 64)()
    sim.ok(lib.aclrtMemcpy(dev, 64, src, 64, H2H))  # host to device, named host to host (ACLLite)
    sim.ok(lib.aclrtMemcpy(out, 64, dev, 64, H2D))  # device to host, named host to device
    assert bytes(out) == bytes(range(64))
    sim.ok(lib.aclrtFree(dev))


def test_row36_cann91_async_kind_is_corrected_for_pinned_and_device_memory(sim, lib, stream):
    dev, pinned = sim.malloc(64), sim.malloc_host(64)
    ctypes.memmove(pinned, bytes(range(64)), 64)
    sim.ok(lib.aclrtMemcpyAsync(dev, 64, pinned, 64, D2H, stream))  # really H2D
    sim.ok(lib.aclrtSynchronizeStream(stream))
    assert sim.read(dev, 64) == bytes(range(64))
    pageable = (ctypes.c_uint8 * 64)()
    assert lib.aclrtMemcpyAsync(pageable, 64, dev, 64, H2D, stream) == 107000  # pageable named device
    assert "is pageable host memory" in sim.err() and "names it as device memory" in sim.err()
    sim.ok(lib.aclrtFree(dev))
    sim.ok(lib.aclrtFreeHost(pinned))


def test_row37_cann91_async_host_to_host_is_207000(sim, lib, stream):
    a, b, dev = sim.malloc_host(64), sim.malloc_host(64), sim.malloc(64)
    assert lib.aclrtMemcpyAsync(a, 64, b, 64, H2H, stream) == 207000
    assert lib.aclrtMemcpyAsync(dev, 64, b, 64, H2H, stream) == 207000  # the kind asked is refused
    assert "kind ACL_MEMCPY_HOST_TO_HOST is not supported by the asynchronous copy" in sim.err()
    assert lib.aclrtMemcpyAsync(a, 64, b, 64, DEFAULT, stream) == 207000  # host to host as found
    assert "are both host memory" in sim.err()
    sim.ok(lib.aclrtFreeHost(a))
    sim.ok(lib.aclrtFreeHost(b))
    sim.ok(lib.aclrtFree(dev))


def test_row38_cann91_async_copy_of_pageable_memory_returns_after_the_copy(sim, lib, stream, faults):
    dev = sim.malloc(64)
    out = (ctypes.c_uint8 * 64)()
    faults("stall:memset@1=100")
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 7, 64, stream))
    t0 = time.monotonic()
    sim.ok(lib.aclrtMemcpyAsync(out, 64, dev, 64, D2H, stream))
    assert time.monotonic() - t0 >= 0.09  # the stream's earlier work first
    assert bytes(out) == b"\x07" * 64  # done when the call returns
    src = (ctypes.c_uint8 * 64)(*([5] * 64))
    sim.ok(lib.aclrtMemcpyAsync(dev, 64, src, 64, H2D, stream))
    ctypes.memset(src, 0, 64)  # reusing the buffer at once is safe
    assert sim.read(dev, 64) == b"\x05" * 64
    sim.ok(lib.aclrtFree(dev))


def test_row39_cann91_async_d2d_needs_no_64_byte_alignment(sim, lib, stream):
    a, b = sim.malloc(256), sim.malloc(256)
    sim.ok(lib.aclrtMemcpyAsync(a + 8, 128, b + 40, 100, D2D, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtFree(a))
    sim.ok(lib.aclrtFree(b))


def test_row40_cann91_memset_count_zero_succeeds_and_over_max_is_107000(sim, lib, stream):
    assert lib.aclrtMemset(None, 0, 1, 0) == 0
    assert lib.aclrtMemsetAsync(None, 0, 1, 0, stream) == 0
    dev = sim.malloc(64)
    assert lib.aclrtMemsetAsync(dev, 8, 1, 64, stream) == 107000
    assert lib.aclrtMemset(dev, 8, 1, 64) == 107000
    sim.ok(lib.aclrtFree(dev))


# ---- events (rows 41-50) ---------------------------------------------------------------------


def test_row41_cann91_event_flags_zero_and_unknown_are_107000(sim, lib):
    e = ctypes.c_void_p()
    assert lib.aclrtCreateEventWithFlag(ctypes.byref(e), 0) == 107000
    assert lib.aclrtCreateEventWithFlag(ctypes.byref(e), 0x80000000) == 107000
    sim.ok(lib.aclrtDestroyEvent(sim.event(DEVICE_USE_ONLY)))  # 0x10 alone is accepted


def test_row42_cann91_wait_on_an_event_without_sync_is_207000(sim, lib, stream):
    ev = sim.event(TIME_LINE)
    sim.ok(lib.aclrtRecordEvent(ev, stream))
    assert lib.aclrtStreamWaitEvent(stream, ev) == 207000
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_row43_cann91_wait_on_a_never_recorded_event_is_107000(sim, lib, stream):
    ev = sim.event()
    assert lib.aclrtStreamWaitEvent(stream, ev) == 107000
    assert "has not been recorded" in sim.err()
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_row44_cann91_query_of_a_never_recorded_event_is_not_ready(sim, lib):
    ev = sim.event()
    status = ctypes.c_int(-1)
    sim.ok(lib.aclrtQueryEventStatus(ev, ctypes.byref(status)))
    assert status.value == NOT_READY
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_row45_cann91_synchronize_of_a_never_recorded_event_succeeds(sim, lib):
    ev = sim.event()
    sim.ok(lib.aclrtSynchronizeEvent(ev))
    sim.ok(lib.aclrtDestroyEvent(ev))


@pytest.mark.parametrize("timeout", [-2, 0])
def test_row46_cann91_event_sync_timeout_below_minus_one_or_zero_is_107000(sim, lib, timeout):
    ev = sim.event()
    assert lib.aclrtSynchronizeEventWithTimeout(ev, timeout) == 107000
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_row47_cann91_elapsed_time_with_a_never_recorded_event_is_507000(sim, lib, stream):
    a, b = sim.event(), sim.event()
    sim.ok(lib.aclrtRecordEvent(a, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    ms = ctypes.c_float()
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), a, b) == 507000
    for e in (a, b):
        sim.ok(lib.aclrtDestroyEvent(e))


def test_row48_cann91_elapsed_time_recorded_but_not_complete_is_107006(sim, lib, stream, faults):
    a, b = sim.event(), sim.event()
    sim.ok(lib.aclrtRecordEvent(a, stream))
    faults("stall:record@1=100")
    sim.ok(lib.aclrtRecordEvent(b, stream))
    ms = ctypes.c_float()
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), a, b) == 107006
    sim.ok(lib.aclrtSynchronizeStream(stream))
    for e in (a, b):
        sim.ok(lib.aclrtDestroyEvent(e))


def test_row49_cann91_elapsed_time_end_before_start_is_negative(sim, lib, stream, faults):
    a, b = sim.event(), sim.event()
    dev = sim.malloc(32)
    sim.ok(lib.aclrtRecordEvent(a, stream))
    faults("stall:memset@1=50")
    sim.ok(lib.aclrtMemsetAsync(dev, 32, 0, 32, stream))
    sim.ok(lib.aclrtRecordEvent(b, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    ms = ctypes.c_float()
    sim.ok(lib.aclrtEventElapsedTime(ctypes.byref(ms), b, a))
    assert ms.value <= -49.0
    for e in (a, b):
        sim.ok(lib.aclrtDestroyEvent(e))
    sim.ok(lib.aclrtFree(dev))


def test_row50_cann91_wait_on_an_event_of_another_device_orders_the_stream(sim, lib, stream, faults):
    """Deliberate exception: the simulator always waits (CANN waits where the chip can)."""
    main, ctx = ctypes.c_void_p(), ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    sim.ok(lib.aclrtCreateContext(ctypes.byref(ctx), 1))
    s1, ev, dev1 = sim.stream(), sim.event(), sim.malloc(32)
    faults("stall:memset@1=100")
    sim.ok(lib.aclrtMemsetAsync(dev1, 32, 1, 32, s1))
    sim.ok(lib.aclrtRecordEvent(ev, s1))
    sim.ok(lib.aclrtSetCurrentContext(main))
    sim.ok(lib.aclrtStreamWaitEvent(stream, ev))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    status = ctypes.c_int(-1)
    sim.ok(lib.aclrtQueryEventStatus(ev, ctypes.byref(status)))
    assert status.value == COMPLETE  # the waiting stream finished after the record
    sim.ok(lib.aclrtSetCurrentContext(ctx))
    sim.ok(lib.aclrtFree(dev1))
    sim.ok(lib.aclrtDestroyEvent(ev))
    sim.ok(lib.aclrtDestroyContext(ctx))
    sim.ok(lib.aclrtSetCurrentContext(main))


# ---- host callbacks (rows 51-57) ---------------------------------------------------------------


NOOP = CALLBACK(lambda _: None)


def test_row51_cann91_launch_callback_without_subscriber_is_107015(lib, stream):
    assert lib.aclrtLaunchCallback(NOOP, None, 0, stream) == 107015


def test_row52_cann91_launch_callback_null_fn_is_107000_bad_block_type_100000(lib, stream):
    assert lib.aclrtLaunchCallback(None, None, 0, stream) == 107000
    assert lib.aclrtLaunchCallback(NOOP, None, 2, stream) == 100000


def test_row53_cann91_subscribe_twice_is_107011(sim, lib, stream):
    tid = threading.get_ident()
    sim.ok(lib.aclrtSubscribeReport(tid, stream))
    assert lib.aclrtSubscribeReport(tid, stream) == 107011
    sim.ok(lib.aclrtUnSubscribeReport(tid, stream))


def test_row54_cann91_unsubscribe_not_subscribed_is_107011_or_107012(sim, lib, stream):
    tid = threading.get_ident()
    assert lib.aclrtUnSubscribeReport(tid, stream) == 107011  # nobody subscribed
    sim.ok(lib.aclrtSubscribeReport(tid, stream))
    assert lib.aclrtUnSubscribeReport(tid + 1, stream) == 107012  # another thread's
    sim.ok(lib.aclrtUnSubscribeReport(tid, stream))


@pytest.mark.parametrize("timeout", [0, -2])
def test_row55_cann91_process_report_timeout_zero_or_below_minus_one_is_100000(lib, timeout):
    assert lib.aclrtProcessReport(timeout) == 100000


def test_row56_cann91_process_report_without_subscription_is_107012(lib):
    assert in_thread(lambda: lib.aclrtProcessReport(10)) == 107012


def test_row57_cann91_process_report_timeout_is_507012(sim, lib, stream):
    tid = threading.get_ident()
    sim.ok(lib.aclrtSubscribeReport(tid, stream))
    try:
        assert lib.aclrtProcessReport(20) == 507012
        assert sim.err() == "aclrtProcessReport: no callback became due within 20 ms"
    finally:
        sim.ok(lib.aclrtUnSubscribeReport(tid, stream))


def test_callbacks_still_run_after_the_code_changes(sim, lib, stream):
    """Rows 51-57 changed codes only: a subscribed thread runs the callback."""
    seen = []
    cb = CALLBACK(lambda u: seen.append(u))
    rep = Reporter(lib)
    try:
        sim.ok(lib.aclrtSubscribeReport(rep.tid, stream))
        sim.ok(lib.aclrtLaunchCallback(cb, 7, 1, stream))
        sim.ok(lib.aclrtSynchronizeStream(stream))
        sim.ok(lib.aclrtUnSubscribeReport(rep.tid, stream))
    finally:
        rep.close()
    assert seen == [7]


def test_exported_for_cann_programs_get_data_buffer_size_32_bit(sim, lib):
    """aclGetDataBufferSize (CANN's deprecated 32-bit size) answers the size, and 0 with a message
    for a buffer whose size does not fit in 32 bits, never a truncated number."""
    lib = ctypes.CDLL(lib._name)  # own function objects: the types set here stay in this test
    lib.aclCreateDataBuffer.restype = ctypes.c_void_p
    lib.aclCreateDataBuffer.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.aclGetDataBufferSize.restype = ctypes.c_uint32
    lib.aclGetDataBufferSize.argtypes = [ctypes.c_void_p]
    lib.aclDestroyDataBuffer.argtypes = [ctypes.c_void_p]
    small = lib.aclCreateDataBuffer(0x1000, 4000)
    huge = lib.aclCreateDataBuffer(0x1000, (5 << 30) + 64)
    try:
        assert lib.aclGetDataBufferSize(small) == 4000
        assert lib.aclGetDataBufferSize(huge) == 0
        assert sim.err().endswith("more than the 32-bit result can say; use aclGetDataBufferSizeV2")
        assert lib.aclGetDataBufferSize(None) == 0
        assert "is NULL or not a live data buffer" in sim.err()
    finally:
        assert lib.aclDestroyDataBuffer(small) == 0
        assert lib.aclDestroyDataBuffer(huge) == 0
