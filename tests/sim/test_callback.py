"""Host callbacks: subscribe, launch, process report, BLOCK semantics."""

import ctypes
import os
import threading
import time

from simrt_util import CALLBACK, STREAM_WITH_REPORTER, Reporter, run_child

H2D = 1


def test_callbacks_run_in_order_in_the_subscribed_thread(sim, lib, stream):
    rep = Reporter(lib)
    seen = []

    @CALLBACK
    def cb(user_data):
        seen.append((user_data, threading.get_ident()))

    try:
        sim.ok(lib.aclrtSubscribeReport(rep.tid, stream))
        for i in range(1, 21):
            sim.ok(lib.aclrtLaunchCallback(cb, i, i % 2, stream))  # alternate NO_BLOCK / BLOCK
        sim.ok(lib.aclrtSynchronizeStream(stream))
        deadline = time.monotonic() + 5
        while len(seen) < 20 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert [u for u, _ in seen] == list(range(1, 21))
        assert {t for _, t in seen} == {rep.tid}
        assert lib.aclrtSubscribeReport(rep.tid, stream) == 107011  # ACL_ERROR_RT_STREAM_SUBSCRIBE
        assert "already has a subscribed thread" in sim.err()
        assert lib.aclrtUnSubscribeReport(rep.tid + 1, stream) == 107012  # another thread's subscription
        assert sim.err().endswith(f"is subscribed by thread {rep.tid}, not by thread {rep.tid + 1}")
        sim.ok(lib.aclrtUnSubscribeReport(rep.tid, stream))
        assert lib.aclrtUnSubscribeReport(rep.tid, stream) == 107011
        assert sim.err().endswith("is not subscribed by any thread")
    finally:
        rep.close()
    assert 0 in rep.codes and set(rep.codes) <= {0, 507012, 107012}


def test_block_holds_later_tasks_until_the_callback_ran(sim, lib, stream):
    stage = sim.malloc_host(32)
    out_block = sim.malloc(32)
    out_noblock = sim.malloc(32)
    release = threading.Event()
    events = []

    @CALLBACK
    def slow(_):
        release.wait(5)
        events.append("callback")
        ctypes.memset(stage, 5, 32)  # the callback produces data for the next task

    rep = Reporter(lib)
    try:
        sim.ok(lib.aclrtSubscribeReport(rep.tid, stream))
        sim.ok(lib.aclrtMemsetAsync(stage, 32, 1, 32, stream))
        sim.ok(lib.aclrtLaunchCallback(slow, None, 1, stream))  # BLOCK
        sim.ok(lib.aclrtMemcpyAsync(out_block, 32, stage, 32, H2D, stream))
        time.sleep(0.1)
        status = ctypes.c_int(-1)
        sim.ok(lib.aclrtStreamQuery(stream, ctypes.byref(status)))
        assert status.value == 1 and sim.read(out_block, 32) != b"\x05" * 32  # held back
        release.set()
        sim.ok(lib.aclrtSynchronizeStream(stream))
        assert sim.read(out_block, 32) == b"\x05" * 32
        # NO_BLOCK: later tasks do not wait for the callback
        release.clear()
        events.clear()
        sim.ok(lib.aclrtLaunchCallback(slow, None, 0, stream))
        sim.ok(lib.aclrtMemcpyAsync(out_noblock, 32, stage, 32, H2D, stream))
        assert lib.aclrtSynchronizeStreamWithTimeout(stream, 3000) == 0, sim.err()
        assert events == []  # the stream finished while the callback still waits
        release.set()
        deadline = time.monotonic() + 5
        while not events and time.monotonic() < deadline:
            time.sleep(0.005)
        assert events == ["callback"]
        sim.ok(lib.aclrtUnSubscribeReport(rep.tid, stream))
    finally:
        release.set()
        rep.close()
    sim.ok(lib.aclrtFreeHost(stage))
    sim.ok(lib.aclrtFree(out_block))
    sim.ok(lib.aclrtFree(out_noblock))


def test_callback_errors(sim, lib, stream):
    @CALLBACK
    def cb(_):
        pass

    assert lib.aclrtLaunchCallback(cb, None, 0, stream) == 107015
    assert sim.err().startswith("aclrtLaunchCallback: no thread is subscribed to stream ")
    assert "call aclrtSubscribeReport(threadId, stream) first" in sim.err()
    assert lib.aclrtLaunchCallback(None, None, 0, stream) == 107000  # checked by the runtime (CANN 9.1)
    assert sim.err() == "aclrtLaunchCallback: fn is NULL: expected the host function to call"
    assert lib.aclrtLaunchCallback(cb, None, 2, stream) == 100000
    assert lib.aclrtProcessReport(0) == 100000
    assert sim.err() == "aclrtProcessReport: timeout 0 is invalid: expected -1 (wait forever) or > 0 ms"
    assert lib.aclrtProcessReport(10) == 107012  # ACL_ERROR_RT_THREAD_SUBSCRIBE
    assert sim.err().startswith(
        f"aclrtProcessReport: the calling thread ({threading.get_ident()}) is not subscribed"
    )
    # subscribed but nothing due: timeout code after about the timeout
    sim.ok(lib.aclrtSubscribeReport(threading.get_ident(), stream))
    t0 = time.monotonic()
    assert lib.aclrtProcessReport(50) == 507012  # ACL_ERROR_RT_REPORT_TIMEOUT
    assert time.monotonic() - t0 >= 0.045
    assert sim.err() == "aclrtProcessReport: no callback became due within 50 ms"
    # the subscriber may be the launching thread itself (NO_BLOCK)
    got = []

    @CALLBACK
    def mine(u):
        got.append(u)

    sim.ok(lib.aclrtLaunchCallback(mine, 7, 0, stream))
    sim.ok(lib.aclrtProcessReport(2000))
    assert got == [7]
    sim.ok(lib.aclrtUnSubscribeReport(threading.get_ident(), stream))


# The asynchronous Ascend sample pattern: a blocking callback, run by the
# report thread, frees the host buffer of the result it has just consumed
# (and here a device buffer too).  aclrtFree/aclrtFreeHost never wait for
# streams, so this cannot deadlock on the stream that is waiting for the very
# callback that frees; run in a child so a regression hangs only the child.
FREE_IN_CALLBACK = """
import threading
from simrt_util import CALLBACK
""" + STREAM_WITH_REPORTER + """
N, rounds = 1024, 8
freed, seen = [], []

@CALLBACK
def consume(user):
    host, dev = bufs[user - 1]
    seen.append(ctypes.string_at(host, 4))
    freed.append((lib.aclrtFreeHost(host), lib.aclrtFree(dev), threading.get_ident() == rep.tid))

bufs = []
for i in range(rounds):
    h, d = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.aclrtMallocHost(ctypes.byref(h), N) == 0 and lib.aclrtMalloc(ctypes.byref(d), N, 0) == 0, err()
    bufs.append((h.value, d.value))
for i, (h, d) in enumerate(bufs):
    assert lib.aclrtMemsetAsync(d, N, i + 1, N, s) == 0, err()
    assert lib.aclrtMemcpyAsync(h, N, d, N, 2, s) == 0, err()
    assert lib.aclrtLaunchCallback(consume, i + 1, 1, s) == 0, err()   # BLOCK
assert lib.aclrtSynchronizeStream(s) == 0, err()
assert freed == [(0, 0, True)] * rounds, freed
assert seen == [bytes([i + 1]) * 4 for i in range(rounds)], seen
assert lib.aclrtFreeHost(bufs[0][0]) == 100000 and "already freed" in err()
assert lib.aclrtUnSubscribeReport(rep.tid, s) == 0, err()
rep.close()
print("OK")
"""


def test_a_blocking_callback_may_free_host_and_device_memory():
    here = os.path.dirname(os.path.abspath(__file__))
    proc = run_child(f"sys.path.insert(0, {here!r})\n" + FREE_IN_CALLBACK)
    assert proc.stdout.strip().endswith("OK")
