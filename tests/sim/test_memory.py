"""Device / pinned memory, copies and memsets: checks, codes and messages."""

import ctypes
import struct
import threading

from simrt_util import CALLBACK, D2D, D2H, DEFAULT, H2D, Reporter, run_child


def test_malloc_rounding_alignment_and_junk(sim, lib):
    free0, total = sim.mem_info()
    p = sim.malloc(100)
    assert p % 128 == 0
    free1, _ = sim.mem_info()
    assert free0 - free1 == 160  # round up to 32, plus 32 bytes of padding
    raw = sim.read(p, 100)
    assert raw != bytes(100)  # fresh device memory is junk, not zeros
    assert struct.unpack("<I", raw[:4])[0] == 0xFFADBEEF
    sim.ok(lib.aclrtFree(p))
    assert sim.mem_info() == (free0, total)


def test_malloc_invalid_arguments(sim, lib):
    p = ctypes.c_void_p()
    assert lib.aclrtMalloc(ctypes.byref(p), 0, 0) == 100000
    assert sim.err() == "aclrtMalloc: size is 0; expected at least 1 byte"
    assert lib.aclrtMalloc(None, 16, 0) == 100000
    assert sim.err() == "aclrtMalloc: devPtr is NULL; pass the address of a void *"
    q = sim.malloc(16, 9)  # CANN 9.1 takes an unknown policy as the default
    sim.ok(lib.aclrtFree(q))
    q = sim.malloc(16, 0x1000 | 2)  # HIGH_BAND_WIDTH | NORMAL_ONLY
    sim.ok(lib.aclrtFree(q))


def test_free_errors(sim, lib):
    p = sim.malloc(256)
    assert lib.aclrtFree(p + 64) == 107000  # CANN 9.1: the driver refuses it
    assert sim.err() == (
        f"aclrtFree: devPtr 0x{p + 64:x} points 64 bytes into the allocation at 0x{p:x}; "
        "pass the pointer the allocation returned"
    )
    sim.ok(lib.aclrtFree(p))
    assert lib.aclrtFree(p) == 107000
    assert sim.err() == f"aclrtFree: devPtr 0x{p:x} was already freed"
    host = (ctypes.c_uint8 * 16)()
    assert lib.aclrtFree(host) == 107000
    assert (
        sim.err()
        == f"aclrtFree: devPtr 0x{ctypes.addressof(host):x} was not allocated by aclrtMalloc (unknown pointer)"  # noqa: E501
    )
    assert lib.aclrtFree(None) == 100000
    h = sim.malloc_host(64)
    assert lib.aclrtFree(h) == 107000
    assert (
        sim.err() == f"aclrtFree: devPtr 0x{h:x} was allocated by aclrtMallocHost; free it with aclrtFreeHost"
    )
    sim.ok(lib.aclrtFreeHost(h))
    assert lib.aclrtFreeHost(h) == 100000
    assert sim.err() == f"aclrtFreeHost: hostPtr 0x{h:x} was already freed"


def test_copy_checks(sim, lib):
    p = sim.malloc(100)  # 160 usable bytes
    host = (ctypes.c_uint8 * 512)()
    assert lib.aclrtMemcpy(host, 10, p, 20, D2H) == 107000  # the runtime's check (CANN 9.1)
    assert sim.err() == "aclrtMemcpy: count 20 is larger than destMax 10 (the capacity of dst)"
    assert lib.aclrtMemcpy(host, 512, p + 100, 100, D2H) == 100000
    assert sim.err() == (
        f"aclrtMemcpy: src 0x{p + 100:x} + 100 bytes is out of bounds by 40 bytes: it starts at offset 100 "
        f"of a 160-byte device allocation at 0x{p:x}"
    )
    # the synchronous copy ignores kind: the direction comes from the addresses
    src = (ctypes.c_uint8 * 16)(*range(16))
    sim.ok(lib.aclrtMemcpy(p, 100, src, 16, D2H))  # really host to device
    assert sim.read(p, 16) == bytes(range(16))
    sim.ok(lib.aclrtMemcpy(host, 512, src, 16, H2D))  # really host to host
    assert bytes(host[:16]) == bytes(range(16))
    assert lib.aclrtMemcpy(host, 512, p, 16, 9) == 100000
    assert sim.err() == (
        "aclrtMemcpy: kind 9 (?) is not a copy kind of aclrtMemcpy/aclrtMemcpyAsync: expected 0..5 "
        "(ACL_MEMCPY_HOST_TO_HOST .. ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)"
    )
    assert lib.aclrtMemcpy(None, 16, p, 16, D2H) == 100000
    assert sim.err() == "aclrtMemcpy: dst is NULL"
    assert lib.aclrtMemcpy(host, 16, None, 16, H2D) == 100000
    assert sim.err() == "aclrtMemcpy: src is NULL"
    # ACL_MEMCPY_DEFAULT infers the direction from the addresses
    sim.ok(lib.aclrtMemcpy(p, 160, src, 16, DEFAULT))
    sim.ok(lib.aclrtMemcpy(host, 512, p, 16, DEFAULT))
    assert bytes(host[:16]) == bytes(range(16))
    sim.ok(lib.aclrtFree(p))
    assert lib.aclrtMemcpy(host, 512, p, 16, D2H) == 107000
    assert sim.err() == f"aclrtMemcpy: src 0x{p:x} points into device memory that was already freed"


def test_copy_to_other_device_memory_is_rejected(sim, lib):
    ctx = ctypes.c_void_p()
    main = ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    sim.ok(lib.aclrtCreateContext(ctypes.byref(ctx), 1))
    # peer access is per process and an engine spanning devices leaves it on:
    # start from it off (the call fails harmlessly when it already is)
    lib.aclrtDeviceDisablePeerAccess(0)
    other = sim.malloc(64)
    sim.ok(lib.aclrtSetCurrentContext(main))
    host = (ctypes.c_uint8 * 64)()
    # the synchronous copy goes by address, whatever device is current (CANN 9.1's driver)
    sim.ok(lib.aclrtMemcpy(host, 64, other, 64, D2H))
    stream = sim.stream()
    assert lib.aclrtMemcpyAsync(host, 64, other, 64, D2H, stream) == 100000  # a stream stays on its device
    assert f"src 0x{other:x} belongs to device 1, but the current context is on device 0" in sim.err()
    sim.ok(lib.aclrtDestroyStream(stream))
    mine = sim.malloc(64)
    # a copy between devices needs peer access from the source's device (tests/sim/test_peer.py)
    assert lib.aclrtMemcpy(mine, 64, other, 64, D2D) == 100000
    assert "peer access from device 1 to device 0 is not enabled" in sim.err()
    sim.ok(lib.aclrtSetCurrentContext(ctx))
    sim.ok(lib.aclrtDeviceEnablePeerAccess(0, 0))
    sim.ok(lib.aclrtSetCurrentContext(main))
    sim.ok(lib.aclrtMemcpy(mine, 64, other, 64, D2D))
    sim.ok(lib.aclrtSetCurrentContext(ctx))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(0))
    sim.ok(lib.aclrtSetCurrentContext(main))
    sim.ok(lib.aclrtFree(other))
    sim.ok(lib.aclrtFree(mine))
    sim.ok(lib.aclrtDestroyContext(ctx))
    sim.ok(lib.aclrtSetCurrentContext(main))


def test_async_d2d_has_no_alignment_rule(sim, lib, stream):
    """CANN 9.1's runtime checks no 64-byte alignment for device-to-device copies."""
    a, b = sim.malloc(256), sim.malloc(256)
    sim.write(b, bytes(range(128)))
    sim.ok(lib.aclrtMemcpyAsync(a + 32, 128, b + 8, 120, D2D, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    assert sim.read(a + 32, 120) == bytes(range(8, 128))
    sim.ok(lib.aclrtFree(a))
    sim.ok(lib.aclrtFree(b))


def test_memset_and_pinned_memory(sim, lib, stream):
    p = sim.malloc(64)
    sim.ok(lib.aclrtMemset(p, 64, 0x1AB, 64))  # value & 0xff
    assert sim.read(p, 64) == b"\xab" * 64
    assert lib.aclrtMemset(p, 8, 0, 64) == 107000
    assert sim.err() == "aclrtMemset: count 64 is larger than maxCount 8"
    assert lib.aclrtMemset(p, 200, 0, 200) == 100000
    assert "is out of bounds by 104 bytes" in sim.err()
    h = sim.malloc_host(64)
    sim.ok(lib.aclrtMemsetAsync(h, 64, 7, 64, stream))
    sim.ok(lib.aclrtMemcpyAsync(p, 64, h, 64, H2D, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    assert sim.read(p, 64) == b"\x07" * 64
    assert lib.aclrtMemcpy(p, 96, h, 90, H2D) == 100000
    assert sim.err() == (
        f"aclrtMemcpy: src 0x{h:x} + 90 bytes is out of bounds by 26 bytes: it starts at offset 0 of a "
        "64-byte aclrtMallocHost allocation"
    )
    sim.ok(lib.aclrtFreeHost(h))
    sim.ok(lib.aclrtFree(p))


def test_mem_info_arguments(sim, lib):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    for attr in (0, 1, 5, 17):
        sim.ok(lib.aclrtGetMemInfo(attr, ctypes.byref(free), ctypes.byref(total)))
        assert total.value == 8 << 30
    assert lib.aclrtGetMemInfo(18, ctypes.byref(free), ctypes.byref(total)) == 100000
    assert sim.err() == "aclrtGetMemInfo: attr 18 is not an aclrtMemAttr (expected 0..17)"
    assert lib.aclrtGetMemInfo(1, None, ctypes.byref(total)) == 100000


def test_out_of_memory_at_configured_capacity():
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        def info():
            assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0
            return free.value, total.value
        assert info() == (1 << 20, 1 << 20)
        a = ctypes.c_void_p(); b = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(a), 600000, 0) == 0
        before = info()
        assert before == ((1 << 20) - 600032, 1 << 20)
        assert lib.aclrtMalloc(ctypes.byref(b), 500000, 0) == 207001
        assert err() == ("aclrtMalloc: out of device memory on device 0: requested 500032 bytes "
                         "(after rounding and padding), 448544 bytes free of 1048576 total "
                         "(ASCEND_SIM_DEVICE_MEMORY)"), err()
        assert info() == before  # a failed allocation takes nothing
        assert lib.aclrtMalloc(ctypes.byref(b), 448512, 0) == 0  # exactly what is left
        assert info() == (0, 1 << 20)
        assert lib.aclrtFree(a) == 0 and lib.aclrtFree(b) == 0
        assert info() == (1 << 20, 1 << 20)
        # each device has its own capacity
        assert lib.aclrtSetDevice(1) == 0
        assert lib.aclrtMalloc(ctypes.byref(a), 1 << 20, 0) == 207001
        assert lib.aclrtMalloc(ctypes.byref(a), (1 << 20) - 32, 0) == 0
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_DEVICE_MEMORY": "1MiB"},
    )


def test_copy_bandwidth_model():
    # 20 MB at 0.2 GB/s takes 100 ms of device time; D2H is unthrottled.  The device's own clock
    # (timing events) gives the copies' times exactly; the host waits at least that long.
    run_child(
        """
        import time
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        n = 20_000_000
        p = ctypes.c_void_p(); s = ctypes.c_void_p()
        ev = [ctypes.c_void_p() for _ in range(4)]
        assert lib.aclrtMalloc(ctypes.byref(p), n, 0) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        for e in ev:
            assert lib.aclrtCreateEvent(ctypes.byref(e)) == 0
        host = (ctypes.c_uint8 * n)()
        t0 = time.monotonic()
        assert lib.aclrtMemcpy(p, n, host, n, 1) == 0
        sync_h2d = time.monotonic() - t0
        t0 = time.monotonic()
        assert lib.aclrtRecordEvent(ev[0], s) == 0
        assert lib.aclrtMemcpyAsync(p, n, host, n, 1, s) == 0
        issued_ms = (time.monotonic() - t0) * 1e3     # the copy starts once the host has issued it
        assert lib.aclrtRecordEvent(ev[1], s) == 0
        assert lib.aclrtMemcpyAsync(host, n, p, n, 2, s) == 0
        assert lib.aclrtRecordEvent(ev[2], s) == 0
        assert lib.aclrtSynchronizeStream(s) == 0
        async_wall = time.monotonic() - t0
        ms = ctypes.c_float()
        assert lib.aclrtEventElapsedTime(ctypes.byref(ms), ev[0], ev[1]) == 0
        h2d_ms = ms.value
        assert lib.aclrtEventElapsedTime(ctypes.byref(ms), ev[1], ev[2]) == 0
        d2h_ms = ms.value
        print(sync_h2d, async_wall, h2d_ms, d2h_ms)
        assert sync_h2d >= 0.0999 and async_wall >= 0.0999
        assert 100.0 - 1e-3 <= h2d_ms <= 100.0 + issued_ms, (h2d_ms, issued_ms)
        # unthrottled: as long as the memmove took, a small part of the throttled copy
        assert 0 < d2h_ms < 50, d2h_ms
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_H2D_GBPS": "0.2"},
    )


# aclrtFree / aclrtFreeHost with work still queued.  CANN documents that they
# free at once, with no implicit device or stream synchronization, and that
# the caller must not touch the memory afterwards.  The simulator therefore
# never waits; queued tasks pin what they touch, so the freed address is not
# handed out again under them, and each such task fails on the device instead
# of writing into memory that now belongs to someone else.  The child process
# holds its stream with a blocking host callback (deterministic, no sleeps); a
# free that waited would hang there until the child's timeout.
FREE_WHILE_QUEUED = """
import threading
lib.aclInit(None)
assert lib.aclrtSetDevice(0) == 0, err()
s = ctypes.c_void_p(); assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
gate, ready, stop = threading.Event(), threading.Event(), threading.Event()
tid = []
def report():
    tid.append(threading.get_ident()); ready.set()
    while not stop.is_set():
        lib.aclrtProcessReport(20)
rep = threading.Thread(target=report, daemon=True); rep.start(); ready.wait(10)
assert lib.aclrtSubscribeReport(tid[0], s) == 0, err()
HOLD = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: gate.wait(60))

def malloc(n, host=False):
    p = ctypes.c_void_p()
    rc = lib.aclrtMallocHost(ctypes.byref(p), n) if host else lib.aclrtMalloc(ctypes.byref(p), n, 0)
    assert rc == 0, err()
    return p.value

N = 4096
src = malloc(N, host=True); ctypes.memset(src, 0x5A, N)
dev = malloc(N)
out = malloc(N, host=True)
dev2 = malloc(N)
assert lib.aclrtMemset(dev2, N, 0x33, N) == 0, err()
try:
    assert lib.aclrtLaunchCallback(HOLD, None, 1, s) == 0, err()    # BLOCK: the stream waits here
    assert lib.aclrtMemcpyAsync(dev, N, src, N, 1, s) == 0, err()    # H2D into dev
    assert lib.aclrtMemcpyAsync(out, N, dev2, N, 2, s) == 0, err()   # D2H into pinned out
    assert lib.aclrtMemsetAsync(dev, N, 7, N, s) == 0, err()
    assert lib.aclrtFree(dev) == 0, err()       # returns at once: nothing waits for the held stream
    assert lib.aclrtFreeHost(out) == 0, err()
    assert lib.aclrtFree(dev) == 107000 and err() == f"aclrtFree: devPtr 0x{dev:x} was already freed", err()
    # the freed addresses are not handed out again while queued work still uses them
    fresh = [malloc(N) for _ in range(64)] + [malloc(N, host=True) for _ in range(64)]
    assert dev not in fresh and out not in fresh, "a freed address was reused under queued work"
finally:
    gate.set()
rc = lib.aclrtSynchronizeStream(s)
msg = err()
assert rc == 507052, (rc, msg)
assert "an asynchronous copy on stream" in msg, msg
assert f"dst (allocation 0x{dev:x}) was freed while the task was queued" in msg, msg
# nothing was written into the fresh allocations
junk = b"\\xef\\xbe\\xad\\xff" * (N // 4)
buf = (ctypes.c_uint8 * N)()
for p in fresh[:64]:
    assert lib.aclrtMemcpy(buf, N, p, N, 2) == 0, err()
    assert bytes(buf) == junk
for p in fresh[64:]:
    assert ctypes.string_at(p, N) == junk
stop.set(); rep.join(10)
assert lib.aclrtUnSubscribeReport(tid[0], s) == 0, err()
print("OK")
"""


def test_free_with_work_queued_returns_at_once_and_the_memory_is_not_reused():
    proc = run_child(FREE_WHILE_QUEUED, timeout=60)
    assert proc.stdout.strip().endswith("OK")


def test_every_task_using_freed_memory_fails_and_the_rest_runs(sim, lib, stream):
    """Each queued task that touches freed memory fails; later tasks still run."""
    n = 256
    dev = sim.malloc(n)
    keep = sim.malloc(n)
    out_ptr = sim.malloc_host(n)  # pinned: a pageable destination would wait for the held stream
    out = (ctypes.c_uint8 * n).from_address(out_ptr)
    gate = threading.Event()
    hold = CALLBACK(lambda _: gate.wait(30))
    rep = Reporter(lib)
    try:
        sim.ok(lib.aclrtSubscribeReport(rep.tid, stream))
        sim.ok(lib.aclrtMemsetAsync(keep, n, 3, n, stream))
        sim.ok(lib.aclrtLaunchCallback(hold, None, 1, stream))  # BLOCK: the stream waits for the gate
        sim.ok(lib.aclrtMemsetAsync(dev, n, 1, n, stream))
        sim.ok(lib.aclrtMemcpyAsync(out, n, dev, n, D2H, stream))
        sim.ok(lib.aclrtFree(dev))
        sim.ok(lib.aclrtMemcpyAsync(out, n, keep, n, D2H, stream))
        gate.set()
        assert lib.aclrtSynchronizeStream(stream) == 507052
        assert "an asynchronous memset on stream" in sim.err()
        assert f"devPtr (allocation 0x{dev:x}) was freed" in sim.err()
        sim.ok(lib.aclrtUnSubscribeReport(rep.tid, stream))
    finally:
        gate.set()
        rep.close()
    assert bytes(out) == b"\x03" * n  # the last copy ran, the one from freed memory did not
    sim.ok(lib.aclrtFree(keep))
    sim.ok(lib.aclrtFreeHost(out_ptr))
