"""The GIL is released while waiting, and any thread may use any object."""

import ctypes
import threading
import time

import numpy as np
from helpers import simlib

import ascend_engine as ae


def _count_during(fn):
    """Run fn() in this thread while another thread counts; return (count during fn, result)."""
    count = 0
    stop = threading.Event()
    started = threading.Event()

    def spin():
        nonlocal count
        started.set()
        while not stop.is_set():
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    started.wait()
    before = count
    result = fn()
    during = count - before
    stop.set()
    t.join()
    return during, result


def test_stream_synchronize_releases_gil(dev, sim_faults):
    s = ae.Stream(dev)
    buf = ae.DeviceBuffer(dev, 4096)
    sim_faults("stall:memcpy@1=300")  # the stream stays busy for 300 ms
    buf.copy_from(ae.HostBuffer(4096, dev), stream=s)  # pinned: an asynchronous copy
    t0 = time.monotonic()
    during, _ = _count_during(s.synchronize)
    waited = time.monotonic() - t0
    assert waited >= 0.2, "the stall did not happen: the test would prove nothing"
    # A thread that held the GIL for 300 ms would leave the counter near zero
    # (one switch interval at most); released, it counts freely.
    assert during > 10_000, f"only {during} increments while synchronize waited {waited:.3f}s"


def test_event_synchronize_and_sync_copy_release_gil(dev, sim_faults):
    s = ae.Stream(dev)
    buf = ae.DeviceBuffer(dev, 4096)
    e = ae.Event(dev)
    sim_faults("stall:memcpy@1=300")
    buf.copy_from(ae.HostBuffer(4096, dev), stream=s)
    e.record(s)
    during, _ = _count_during(e.synchronize)
    assert during > 10_000


def test_new_thread_uses_objects_without_setting_context(dev):
    s = ae.Stream(dev)
    buf = ae.DeviceBuffer(dev, 1 << 16)
    a = np.arange(1 << 14, dtype=np.float32)
    result = {}

    def worker():
        lib = simlib.load()
        cur = ctypes.c_void_p()
        rc = lib.aclrtGetCurrentContext(ctypes.byref(cur))
        result["had_context"] = rc == 0 and bool(cur.value)
        try:
            buf.copy_from(a, stream=s)
            out = buf.copy_to(stream=s, dtype=np.float32)
            s.synchronize()
            result["ok"] = bool((out == a).all())
            rc = lib.aclrtGetCurrentContext(ctypes.byref(cur))
            result["context"] = cur.value
        except Exception as exc:  # reported to the main thread
            result["error"] = exc

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "error" not in result, result.get("error")
    assert result["had_context"] is False  # a fresh thread starts without a context
    assert result["ok"] is True
    assert result["context"] == s.context_handle


def test_many_threads_share_one_device(dev):
    a = np.arange(4096, dtype=np.int32)
    errors = []

    def worker(i):
        try:
            s = ae.Stream(dev)
            b = ae.DeviceBuffer(dev, a.nbytes)
            for _ in range(20):
                b.copy_from(a + i, stream=s)
                out = b.copy_to(stream=s, dtype=np.int32)
                s.synchronize()
                assert (out == a + i).all()
            b.close()
            s.close()
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
