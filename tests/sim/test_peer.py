"""Peer access between simulated devices: the aclrtDevice*PeerAccess calls, cross-device copies, waits.

The rules are CANN's as docs/simulator.md records them ("Peer access between
devices").  The session's simulator has device 0 current on the main thread;
each test that switches to device 1 switches back and leaves no access enabled.
"""

import contextlib
import ctypes

import pytest
from simrt_util import D2D, D2H, H2D, run_child

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000
INVALID_DEVICEID = 107001
CONTEXT_NULL = 107002
FEATURE_UNSUPPORTED = 200006
RT_FEATURE_NOT_SUPPORT = 207000
INTER_D2D = 7


@pytest.fixture
def no_p2p(lib):
    """aeSimSetNoP2P(spec) for the test; every pair linked again afterwards."""
    lib.aeSimSetNoP2P.argtypes = [ctypes.c_char_p]
    lib.aeSimSetNoP2P.restype = ctypes.c_int

    def set_spec(spec):
        return lib.aeSimSetNoP2P(None if spec is None else spec.encode())

    yield set_spec
    assert lib.aeSimSetNoP2P(None) == 0


@pytest.fixture
def dev1(sim):
    """Device 1 set for the test (aclrtSetDevice); `with dev1:` makes it current, then restores device 0."""
    lib = sim.lib
    main = ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    sim.ok(lib.aclrtSetDevice(1))
    ctx1 = ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(ctx1)))
    sim.ok(lib.aclrtSetCurrentContext(main))

    @contextlib.contextmanager
    def current():
        sim.ok(lib.aclrtSetCurrentContext(ctx1))
        try:
            yield
        finally:
            sim.ok(lib.aclrtSetCurrentContext(main))

    yield current
    sim.ok(lib.aclrtResetDevice(1))
    sim.ok(lib.aclrtSetCurrentContext(main))


def can(lib, a, b):
    out = ctypes.c_int32(-1)
    rc = lib.aclrtDeviceCanAccessPeer(ctypes.byref(out), a, b)
    return rc, out.value


def test_can_access_peer_reports_links_and_rejects_bad_ids(sim, lib, no_p2p):
    assert can(lib, 0, 1) == (0, 1)
    assert can(lib, 1, 0) == (0, 1)
    assert can(lib, 2, 2)[0] == INVALID_PARAM
    assert sim.err() == (
        "aclrtDeviceCanAccessPeer: deviceId and peerDeviceId are both 2: a device is not its own peer; "
        "pass two different devices"
    )
    assert can(lib, 0, 8)[0] == INVALID_DEVICEID
    assert sim.err().startswith("aclrtDeviceCanAccessPeer: deviceId 8 is out of range")
    assert can(lib, -1, 0)[0] == INVALID_DEVICEID
    assert lib.aclrtDeviceCanAccessPeer(None, 0, 1) == RT_PARAM_INVALID
    assert "canAccessPeer is NULL" in sim.err()
    # a pair without a link answers 0, both ways; the other pairs stay linked
    assert no_p2p("0-1,2-5") == 0
    assert can(lib, 0, 1) == (0, 0) and can(lib, 1, 0) == (0, 0)
    assert can(lib, 5, 2) == (0, 0) and can(lib, 0, 2) == (0, 1)
    assert no_p2p("all") == 0
    assert can(lib, 3, 4) == (0, 0)


def test_no_p2p_spec_errors_name_the_problem(sim, lib, no_p2p):
    assert no_p2p("0-1") == 0
    for spec, reason in {
        "0-0": "pair 0-0 names one device twice",
        "0-9": "device 9 is not a physical device: ids are 0..7",
        "0,1": "expected '-' after device 0",
        "0-1;2-3": "expected ',' or the end after pair 0-1",
        "x": "expected a physical device id at offset 0",
    }.items():
        assert no_p2p(spec) == INVALID_PARAM
        assert sim.err().startswith(f"aeSimSetNoP2P: spec '{spec}' is invalid: {reason}"), sim.err()
    assert can(lib, 0, 1) == (0, 0)  # the last good setting stays


def test_enable_and_disable_codes(sim, lib, no_p2p):
    assert lib.aclrtDeviceEnablePeerAccess(1, 1) == FEATURE_UNSUPPORTED
    assert sim.err() == "aclrtDeviceEnablePeerAccess: flags is 1: the parameter is reserved and must be 0"
    assert lib.aclrtDeviceEnablePeerAccess(0, 0) == INVALID_PARAM
    assert sim.err().startswith("aclrtDeviceEnablePeerAccess: peerDeviceId 0 is the current device")
    assert lib.aclrtDeviceDisablePeerAccess(0) == INVALID_PARAM
    assert lib.aclrtDeviceEnablePeerAccess(8, 0) == INVALID_DEVICEID
    assert lib.aclrtDeviceDisablePeerAccess(-3) == INVALID_DEVICEID
    # enabling twice and disabling what is off both succeed
    sim.ok(lib.aclrtDeviceEnablePeerAccess(1, 0))
    sim.ok(lib.aclrtDeviceEnablePeerAccess(1, 0))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(1))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(1))
    assert no_p2p("0-1") == 0
    assert lib.aclrtDeviceEnablePeerAccess(1, 0) == RT_FEATURE_NOT_SUPPORT
    assert sim.err() == (
        "aclrtDeviceEnablePeerAccess: devices 0 and 1 have no peer-to-peer link (aclrtDeviceCanAccessPeer "
        "reports 0; ASCEND_SIM_NO_P2P); copy between them through host memory"
    )
    sim.ok(lib.aclrtDeviceEnablePeerAccess(2, 0))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(2))


def test_enable_needs_a_current_context():
    run_child(
        """
        import threading
        assert lib.aclInit(None) == 0
        assert lib.aclrtDeviceEnablePeerAccess(1, 0) == 107002
        assert err().startswith("aclrtDeviceEnablePeerAccess: "), err()
        assert lib.aclrtDeviceEnablePeerAccess(1, 3) == 200006   # flags are checked first
        out = ctypes.c_int32()
        # aclrtDeviceCanAccessPeer needs no context
        assert lib.aclrtDeviceCanAccessPeer(ctypes.byref(out), 0, 1) == 0 and out.value == 1
        assert lib.aclFinalize() == 0
        # no init gate (CANN 9.1): the runtime starts again for the call
        assert lib.aclrtDeviceCanAccessPeer(ctypes.byref(out), 0, 1) == 0 and out.value == 1
        """
    )


def test_cross_device_copy_needs_the_direction_enabled(sim, lib, dev1):
    size = 4096
    src = sim.malloc(size)
    payload = bytes((i * 7 + 3) % 256 for i in range(size))
    sim.write(src, payload)
    with dev1():
        dst = sim.malloc(size)
        sim.ok(lib.aclrtMemset(dst, size, 0, size))
        # device 1 current, copy from device 0: the direction 0 -> 1 is not enabled
        assert lib.aclrtMemcpy(dst, size, src, size, D2D) == INVALID_PARAM
        assert sim.err() == (
            f"aclrtMemcpy: src 0x{src:x} is on device 0 and dst 0x{dst:x} on device 1, but peer access "
            "from device 0 to device 1 is not enabled: call aclrtDeviceEnablePeerAccess(1, 0) with device 0 "
            "current first (or copy through host memory when aclrtDeviceCanAccessPeer says 0)"
        )
        # enabling the other direction (1 -> 0) does not help: access is one-way
        sim.ok(lib.aclrtDeviceEnablePeerAccess(0, 0))
        assert lib.aclrtMemcpy(dst, size, src, size, D2D) == INVALID_PARAM
        assert sim.read(dst, size) == bytes(size)  # a refused copy wrote nothing
    sim.ok(lib.aclrtDeviceEnablePeerAccess(1, 0))  # device 0 current: opens 0 -> 1
    with dev1():
        sim.ok(lib.aclrtMemcpy(dst, size, src, size, D2D))
        assert sim.read(dst, size) == payload
        sim.ok(lib.aclrtMemset(dst, size, 0, size))
        # the INTER kind is not a copy kind of aclrtMemcpy (CANN 9.1); D2D at an offset is
        assert lib.aclrtMemcpy(dst + 64, size - 64, src, 100, INTER_D2D) == INVALID_PARAM
        sim.ok(lib.aclrtMemcpy(dst + 64, size - 64, src, 100, D2D))
        assert sim.read(dst, size) == bytes(64) + payload[:100] + bytes(size - 164)
        sim.ok(lib.aclrtDeviceDisablePeerAccess(0))
    # from device 0 the copy works too; after disabling, it is refused again
    sim.ok(lib.aclrtMemcpy(dst, size, src, size, D2D))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(1))
    assert lib.aclrtMemcpy(dst, size, src, size, D2D) == INVALID_PARAM
    assert "peer access from device 0 to device 1 is not enabled" in sim.err()
    sim.ok(lib.aclrtFree(dst))
    sim.ok(lib.aclrtFree(src))


def test_async_cross_device_copy_on_the_source_stream(sim, lib, stream, dev1):
    size = 1 << 16
    src = sim.malloc(size)
    payload = bytes(range(256)) * (size // 256)
    sim.write(src, payload)
    with dev1():
        dst = sim.malloc(size)
    assert lib.aclrtMemcpyAsync(dst, size, src, size, D2D, stream) == INVALID_PARAM  # refused at enqueue
    sim.ok(lib.aclrtDeviceEnablePeerAccess(1, 0))
    sim.ok(lib.aclrtMemcpyAsync(dst, size, src, size, D2D, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(1))
    host = (ctypes.c_uint8 * size)()
    with dev1():
        sim.ok(lib.aclrtMemcpy(host, size, dst, size, D2H))
        sim.ok(lib.aclrtFree(dst))
    assert bytes(host) == payload
    sim.ok(lib.aclrtFree(src))


def test_host_bridge_when_the_pair_has_no_link(sim, lib, no_p2p, dev1):
    """Where peer access is unavailable, D2H on one device and H2D on the other carry the bytes."""
    assert no_p2p("0-1") == 0
    size = 1000
    src = sim.malloc(size)
    payload = bytes((3 * i) % 251 for i in range(size))
    sim.write(src, payload)
    pinned = sim.malloc_host(size)
    sim.ok(lib.aclrtMemcpy(pinned, size, src, size, D2H))
    with dev1():
        dst = sim.malloc(size)
        assert lib.aclrtDeviceEnablePeerAccess(0, 0) == RT_FEATURE_NOT_SUPPORT
        assert lib.aclrtMemcpy(dst, size, src, size, D2D) == INVALID_PARAM
        sim.ok(lib.aclrtMemcpy(dst, size, pinned, size, H2D))
        assert sim.read(dst, size) == payload
        sim.ok(lib.aclrtFree(dst))
    sim.ok(lib.aclrtFreeHost(pinned))
    sim.ok(lib.aclrtFree(src))


def test_stream_on_another_device_waits_for_the_event(sim, lib, faults, dev1):
    """Device 1's stream waits on an event recorded on device 0's stream (CANN's remote event wait).

    Device 0's stream is stalled before it copies a payload to device 1 and
    records the event; device 1's stream waits on the event, then copies the
    buffer to the host.  Without the wait, device 1 would read the buffer before
    the payload lands and the host would see zeros.
    """
    size = 256
    payload = bytes(range(1, 256)) + b"\xff"
    s0 = sim.stream()
    src = sim.malloc(size)
    sim.write(src, payload)
    ev = sim.event()
    host = (ctypes.c_uint8 * size)()
    sim.ok(lib.aclrtDeviceEnablePeerAccess(1, 0))
    with dev1():
        dst = sim.malloc(size)
        sim.ok(lib.aclrtMemset(dst, size, 0, size))
        s1 = sim.stream()
    faults("stall:memcpy@1=300")  # device 0's copy starts 300 ms late
    sim.ok(lib.aclrtMemcpyAsync(dst, size, src, size, D2D, s0))
    sim.ok(lib.aclrtRecordEvent(ev, s0))
    with dev1():
        sim.ok(lib.aclrtStreamWaitEvent(s1, ev))  # device 1 current, device 0's event
        sim.ok(lib.aclrtMemcpyAsync(host, size, dst, size, D2H, s1))
        sim.ok(lib.aclrtSynchronizeStream(s1))
        assert bytes(host) == payload
        sim.ok(lib.aclrtDestroyStream(s1))
        sim.ok(lib.aclrtFree(dst))
    sim.ok(lib.aclrtSynchronizeStream(s0))
    sim.ok(lib.aclrtDeviceDisablePeerAccess(1))
    sim.ok(lib.aclrtDestroyEvent(ev))
    sim.ok(lib.aclrtDestroyStream(s0))
    sim.ok(lib.aclrtFree(src))


def test_cross_device_copy_takes_bytes_over_d2d_bandwidth():
    """ASCEND_SIM_D2D_GBPS: a 20 MB copy at 0.2 GB/s occupies its stream at least 100 ms.

    Measured with timing events on the copy's stream (the simulator's own
    clock); the bound is a floor the simulator guarantees, not a race.  A copy
    within one device is not slowed by the setting.
    """
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(1) == 0
        n = 20_000_000
        dst = ctypes.c_void_p(); local = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(dst), n, 0) == 0
        assert lib.aclrtSetDevice(0) == 0
        src = ctypes.c_void_p(); s = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(src), n, 0) == 0
        assert lib.aclrtMalloc(ctypes.byref(local), n, 0) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        assert lib.aclrtDeviceEnablePeerAccess(1, 0) == 0
        ev = [ctypes.c_void_p() for _ in range(4)]
        for e in ev:
            assert lib.aclrtCreateEventWithFlag(ctypes.byref(e), 0x9) == 0   # SYNC | TIME_LINE
        assert lib.aclrtRecordEvent(ev[0], s) == 0
        assert lib.aclrtMemcpyAsync(dst, n, src, n, 3, s) == 0
        assert lib.aclrtRecordEvent(ev[1], s) == 0
        assert lib.aclrtMemcpyAsync(local, n, src, n, 3, s) == 0
        assert lib.aclrtRecordEvent(ev[2], s) == 0
        assert lib.aclrtSynchronizeStream(s) == 0
        cross, within = ctypes.c_float(), ctypes.c_float()
        assert lib.aclrtEventElapsedTime(ctypes.byref(cross), ev[0], ev[1]) == 0
        assert lib.aclrtEventElapsedTime(ctypes.byref(within), ev[1], ev[2]) == 0
        print(cross.value, within.value)
        assert cross.value >= 99.9, cross.value       # 2e7 B / 0.2 GB/s = 100 ms
        assert within.value < cross.value / 2, (within.value, cross.value)
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_D2D_GBPS": "0.2"},
    )


def test_no_p2p_environment_at_init():
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        out = ctypes.c_int32()
        # physical pair 2-3 is unlinked: with ASCEND_RT_VISIBLE_DEVICES=1,2,3 it is logical 1-2
        assert lib.aclrtDeviceCanAccessPeer(ctypes.byref(out), 1, 2) == 0 and out.value == 0
        assert lib.aclrtDeviceCanAccessPeer(ctypes.byref(out), 0, 1) == 0 and out.value == 1
        assert lib.aclrtDeviceEnablePeerAccess(1, 0) == 0
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_NO_P2P": "2-3", "ASCEND_RT_VISIBLE_DEVICES": "1,2,3"},
    )
    run_child(
        """
        assert lib.aclInit(None) == 100000
        assert err() == (
            "aclInit: environment variable ASCEND_SIM_NO_P2P='0-8' is invalid: device 8 is not a "
            "physical device: ids are 0..7 (ASCEND_SIM_DEVICE_COUNT=8); expected 'all' or pairs of "
            "physical device ids such as '0-1,2-3'"
        ), err()
        """,
        env={"ASCEND_SIM_NO_P2P": "0-8"},
    )
