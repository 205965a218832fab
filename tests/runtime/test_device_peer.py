"""Device peer access (can_access_peer, enable_peer_access, disable_peer_access), copies between devices."""


import numpy as np
import pytest
from helpers import simlib

import ascend_engine as ae


@pytest.fixture
def pair():
    a, b = ae.Device(0), ae.Device(1)
    yield a, b
    a.disable_peer_access(b)
    b.disable_peer_access(a)
    b.close()
    a.close()


def test_peer_queries_and_codes(pair, no_p2p):
    a, b = pair
    assert a.can_access_peer(b) is True and b.can_access_peer(0) is True
    with pytest.raises(ae.InvalidParamError) as info:
        a.can_access_peer(a)
    assert info.value.code == 100000 and "a device is not its own peer" in str(info.value)
    with pytest.raises(ae.InvalidParamError) as info:
        a.enable_peer_access(0)
    assert info.value.code == 100000 and "peerDeviceId 0 is the current device" in str(info.value)
    with pytest.raises(ae.InvalidParamError) as info:
        a.enable_peer_access(99)
    assert info.value.code == 107001
    with pytest.raises(TypeError, match="expected a Device or a device id, got str"):
        a.enable_peer_access("1")
    a.enable_peer_access(b)
    a.enable_peer_access(b)  # twice is harmless
    no_p2p("0-1")
    assert a.can_access_peer(b) is False
    with pytest.raises(ae.AclError) as info:
        b.enable_peer_access(a)
    assert info.value.code == 207000 and "have no peer-to-peer link" in str(info.value)


def test_buffer_copy_between_devices_follows_the_enabled_direction(pair):
    a, b = pair
    data = (np.arange(4096, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)
    src = ae.DeviceBuffer(a, data.nbytes).copy_from(data)
    dst = ae.DeviceBuffer(b, data.nbytes).fill(0)
    with pytest.raises(ae.InvalidParamError, match="peer access from device 0 to device 1 is not enabled"):
        dst.copy_from(src)
    b.enable_peer_access(a)  # the other direction does not open 0 -> 1
    with pytest.raises(ae.InvalidParamError, match="peer access from device 0 to device 1 is not enabled"):
        dst.copy_from(src)
    a.enable_peer_access(b)
    dst.copy_from(src)
    assert np.array_equal(dst.copy_to(dtype=np.uint32), data)
    # queued on device 1's stream (the destination's context is current for copy_from)
    dst.fill(0)
    s1 = ae.Stream(b)
    dst.copy_from(src, stream=s1)
    s1.synchronize()
    assert np.array_equal(dst.copy_to(dtype=np.uint32), data)
    for o in (s1, dst, src):
        o.close()


def test_device1_stream_waits_for_device0_event(pair, sim_faults):
    """A cross-device dependency through an event: dropping the wait would let device 1 read zeros."""
    a, b = pair
    a.enable_peer_access(b)
    data = np.arange(1, 1025, dtype=np.float32)
    src = ae.DeviceBuffer(a, data.nbytes).copy_from(data)
    dst = ae.DeviceBuffer(b, data.nbytes).fill(0)
    s0, s1 = ae.Stream(a), ae.Stream(b)
    ev = ae.Event(a)
    sim_faults("stall:memcpy@1=300")  # the copy on device 0's stream starts 300 ms late
    _copy_on_stream(dst, src, s0, a)
    ev.record(s0)
    s1.wait_event(ev)
    out = dst.copy_to(stream=s1, dtype=np.float32)
    s1.synchronize()
    assert np.array_equal(out, data)
    s0.synchronize()
    for o in (ev, s1, s0, dst, src):
        o.close()


def _copy_on_stream(dst, src, stream, device):
    """aclrtMemcpyAsync(dst on device 1, src on device 0) on device 0's stream, device 0 current."""
    lib = simlib.load()
    device.make_current()
    rc = lib.aclrtMemcpyAsync(dst.ptr, len(dst), src.ptr, len(src), 3, stream.handle)
    assert rc == 0, simlib.recent_error(lib)
