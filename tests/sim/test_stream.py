"""Streams: ordering, synchronize with timeout, query, budgets, sticky errors."""

import ctypes
import time

from simrt_util import D2H, H2D, run_child


def test_tasks_on_one_stream_run_in_order(sim, lib, stream):
    n = 64
    dev = sim.malloc(n)
    host = (ctypes.c_uint8 * n)()
    snapshots = [(ctypes.c_uint8 * n)() for _ in range(50)]
    for i, snap in enumerate(snapshots):
        sim.ok(lib.aclrtMemsetAsync(dev, n, i + 1, n, stream))
        sim.ok(lib.aclrtMemcpyAsync(snap, n, dev, n, D2H, stream))
    src = (ctypes.c_uint8 * n)(*range(n))
    sim.ok(lib.aclrtMemcpyAsync(dev, n, src, n, H2D, stream))
    sim.ok(lib.aclrtMemcpyAsync(host, n, dev, n, D2H, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    for i, snap in enumerate(snapshots):
        assert bytes(snap) == bytes([i + 1]) * n
    assert bytes(host) == bytes(range(n))
    sim.ok(lib.aclrtFree(dev))


def test_stall_orders_later_tasks_and_query(sim, lib, stream, faults):
    dev = sim.malloc(32)
    host_ptr = sim.malloc_host(32)  # pinned: a pageable destination would make the copy synchronous
    host = (ctypes.c_uint8 * 32).from_address(host_ptr)
    faults("stall:memset@1=150")
    t0 = time.monotonic()
    sim.ok(lib.aclrtMemsetAsync(dev, 32, 9, 32, stream))
    sim.ok(lib.aclrtMemcpyAsync(host, 32, dev, 32, D2H, stream))
    enqueue_time = time.monotonic() - t0
    assert enqueue_time < 0.05  # the host is not blocked by device work
    status = ctypes.c_int(-1)
    sim.ok(lib.aclrtStreamQuery(stream, ctypes.byref(status)))
    assert status.value == 1  # ACL_STREAM_STATUS_NOT_READY
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, 0) == 107000  # CANN 9.1: no poll
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, 20) == 507046
    msg = sim.err()
    assert msg.startswith("aclrtSynchronizeStreamWithTimeout: stream ")
    assert "did not finish within 20 ms: 2 task(s) still pending, the running one is 'memset'" in msg
    sim.ok(lib.aclrtSynchronizeStreamWithTimeout(stream, -1))
    assert time.monotonic() - t0 >= 0.14
    assert bytes(host) == b"\x09" * 32
    sim.ok(lib.aclrtStreamQuery(stream, ctypes.byref(status)))
    assert status.value == 0  # ACL_STREAM_STATUS_COMPLETE
    assert lib.aclrtSynchronizeStreamWithTimeout(stream, -2) == 107000
    sim.ok(lib.aclrtFree(dev))
    sim.ok(lib.aclrtFreeHost(host_ptr))


def test_default_stream(sim, lib):
    dev = sim.malloc(16)
    sim.ok(lib.aclrtMemsetAsync(dev, 16, 5, 16, None))
    sim.ok(lib.aclrtSynchronizeStream(None))
    assert sim.read(dev, 16) == b"\x05" * 16
    assert lib.aclrtDestroyStream(None) == 100000
    assert sim.err() == (
        "aclrtDestroyStream: stream is NULL: the default stream cannot be destroyed (it goes with its context)"  # noqa: E501
    )
    sim.ok(lib.aclrtFree(dev))


def test_destroyed_stream_is_rejected(sim, lib):
    s = sim.stream()
    sim.ok(lib.aclrtDestroyStream(s))
    assert lib.aclrtSynchronizeStream(s) == 107017
    assert sim.err() == (
        f"aclrtSynchronizeStream: stream 0x{s.value:x} is not a live stream "
        "(never created, already destroyed, or its context is gone)"
    )
    assert lib.aclrtCreateStream(None) == 100000


def test_destroy_waits_for_queued_work(sim, lib, faults):
    dev = sim.malloc(64)
    s = sim.stream()
    faults("stall:memset@1=100")
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 3, 64, s))
    t0 = time.monotonic()
    sim.ok(lib.aclrtDestroyStream(s))
    assert time.monotonic() - t0 >= 0.08
    assert sim.read(dev, 64) == b"\x03" * 64
    sim.ok(lib.aclrtFree(dev))


def test_sticky_error_reported_once_then_cleared(sim, lib, stream, faults):
    dev = sim.malloc(64)
    faults("task:memset@2=507011")
    for v in (1, 2, 3):
        sim.ok(lib.aclrtMemsetAsync(dev, 64, v, 64, stream))
    assert lib.aclrtSynchronizeStream(stream) == 507011
    msg = sim.err()
    assert msg.startswith("aclrtSynchronizeStream: device-side failure reported by stream ")
    assert "task 'memset' on stream" in msg
    assert "memset task failed on the device: injected fault 507011 ACL_ERROR_RT_MODEL_EXECUTE" in msg
    # the stream kept running later tasks (continue on failure) and is clean now
    assert sim.read(dev, 64) == b"\x03" * 64
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtFree(dev))


def test_stream_budget():
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        streams = []
        for i in range(3):  # the default stream counts too
            s = ctypes.c_void_p()
            assert lib.aclrtCreateStream(ctypes.byref(s)) == 0, err()
            streams.append(s)
        s = ctypes.c_void_p()
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 207008
        assert err() == ("aclrtCreateStream: device 0 has no stream left: all 4 streams are in use, "
                         "default streams included (ASCEND_SIM_MAX_STREAMS); destroy streams you "
                         "no longer need"), err()
        assert lib.aclrtDestroyStream(streams.pop()) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        # budgets are per device
        assert lib.aclrtSetDevice(1) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_MAX_STREAMS": "4"},
    )


def test_stream_workers_are_named_for_the_simulated_device(sim, lib, stream):
    # a profiler or a benchmark tells the simulated device's CPU from the host's by this name
    import os
    import threading

    n = 16
    dev = sim.malloc(n)
    host = (ctypes.c_uint8 * n)()
    sim.ok(lib.aclrtMemcpyAsync(host, n, dev, n, D2H, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))   # its worker has run a task: it is named by now
    names = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            names[int(tid)] = f.read().strip()
    assert "ae-sim-stream" in names.values()
    assert names[threading.get_native_id()] != "ae-sim-stream"   # the caller keeps its own name
    sim.ok(lib.aclrtFree(dev))
