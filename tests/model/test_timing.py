"""The device-time model of executions, and one model on two streams at once."""

import ctypes
import time

import numpy as np
from helpers import acl, mdl, simlib

from ascend_engine import sim


def tiny(name="tiny"):
    g = sim.Graph(name)
    x = g.input("x", "float32", (-1, 4))
    g.output("y", g.relu(x))
    return g


def new_stream(lib):
    s = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(s)), "aclrtCreateStream")
    return s.value


def prepared(lib, blob, gear):
    m = mdl.load_bytes(lib, blob)
    b = mdl.Buffers(m)
    b.set_batch(gear)
    return m, b


def test_latency_is_honoured(lib, stream):
    m, b = prepared(lib, tiny().to_bytes(batch_sizes=(1, 4), latency_us=30000, latency_per_item_us=5000), 4)
    try:
        t0 = time.perf_counter()
        b.execute(stream)
        enqueue = time.perf_counter() - t0
        mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
        total = time.perf_counter() - t0
        assert total >= 0.050  # 30 ms + 4 x 5 ms
        assert enqueue < 0.025  # the host does not wait for the device
        t0 = time.perf_counter()  # the synchronous call also takes the device time
        b.execute()
        assert time.perf_counter() - t0 >= 0.050
    finally:
        b.close()
        m.close()


def test_two_models_on_two_streams_overlap(lib, stream):
    s2 = new_stream(lib)
    m1, b1 = prepared(lib, tiny("a").to_bytes(batch_sizes=(2,), latency_us=80000), 2)
    m2, b2 = prepared(lib, tiny("b").to_bytes(batch_sizes=(2,), latency_us=80000), 2)
    try:
        t0 = time.perf_counter()
        b1.execute(stream)
        b2.execute(s2)
        mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
        mdl.check(lib, lib.aclrtSynchronizeStream(s2), "sync")
        total = time.perf_counter() - t0
        assert 0.080 <= total < 0.150, total  # about max(80, 80) ms, not the 160 ms sum
        # on one stream they serialize
        t0 = time.perf_counter()
        b1.execute(stream)
        b2.execute(stream)
        mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
        assert time.perf_counter() - t0 >= 0.160
    finally:
        for x in (b1, b2, m1, m2):
            x.close()
        lib.aclrtDestroyStream(s2)


def test_one_model_on_two_streams_is_detected(lib, stream):
    s2 = new_stream(lib)
    m, b = prepared(lib, tiny().to_bytes(batch_sizes=(2,), latency_us=60000), 2)
    b2 = mdl.Buffers(m)
    b2.set_batch(2)
    try:
        b.execute(stream)
        time.sleep(0.01)
        b2.execute(s2)  # accepted at call time: the clash is on the device
        assert lib.aclrtSynchronizeStream(stream) == 0
        rc = lib.aclrtSynchronizeStream(s2)
        assert rc == acl.ACL_ERROR_RT_MODEL_EXECUTE
        assert "already executing" in simlib.recent_error(lib)
        # one after the other on two streams is fine
        b2.execute(s2)
        mdl.check(lib, lib.aclrtSynchronizeStream(s2), "sync")
    finally:
        b.close()
        b2.close()
        m.close()
        lib.aclrtDestroyStream(s2)


def test_execution_follows_stream_order(lib, stream):
    """An async H2D copy queued before the execution is what the model reads."""
    m = mdl.load_bytes(lib, tiny().to_bytes(batch_sizes=(2,), latency_us=20000))
    b = mdl.Buffers(m)
    b.set_batch(2)
    x = np.array([[1, -2, 3, -4], [-5, 6, -7, 8]], np.float32)
    try:
        mdl.check(
            lib,
            lib.aclrtMemcpyAsync(
                b.in_ptrs[0],
                m.inputs[0]["size"],
                x.ctypes.data,
                x.nbytes,
                acl.ACL_MEMCPY_HOST_TO_DEVICE,
                stream,
            ),
            "h2d",
        )
        b.execute(stream)
        out = np.empty((2, 4), np.float32)
        mdl.check(
            lib,
            lib.aclrtMemcpyAsync(
                out.ctypes.data, out.nbytes, b.out_ptrs[0], out.nbytes, acl.ACL_MEMCPY_DEVICE_TO_HOST, stream
            ),
            "d2h",
        )
        mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
        np.testing.assert_array_equal(out, np.maximum(x, 0))
    finally:
        b.close()
        m.close()


def test_unload_while_queued(lib, stream):
    """Unloading with an execution still queued: the execution completes, nothing dangles."""
    m, b = prepared(lib, tiny().to_bytes(batch_sizes=(2,), latency_us=30000), 2)
    b.execute(stream)
    m.close()
    mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
    b.close()
