"""Device, Context, Stream, Event, DeviceBuffer and HostBuffer through the public API."""

import numpy as np
import pytest

import ascend_engine as ae


def test_device_context_manager_and_close(dev):
    with ae.Device(0) as d:
        assert d.id == 0 and not d.closed
        assert "Device id=0" in repr(d)
        info = d.memory_info()
        assert isinstance(info, ae.MemoryInfo) and 0 < info.free <= info.total
        assert "sim" in d.soc.lower()
    assert d.closed and "closed" in repr(d)
    d.close()  # idempotent
    with pytest.raises(ae.ObjectClosedError, match="Device is closed"):
        d.memory_info()
    # the other Device object for the same id still works
    assert dev.memory_info().total > 0


def test_memory_info_tracks_allocations(dev):
    free0 = dev.memory_info().free
    buf = ae.DeviceBuffer(dev, 1 << 20)
    assert dev.memory_info().free <= free0 - (1 << 20)
    buf.close()
    assert dev.memory_info().free == free0


def test_h2d_d2h_round_trip_sync(dev):
    a = np.linspace(-3, 7, 10_001, dtype=np.float32)
    with ae.DeviceBuffer(dev, a.nbytes) as buf:
        assert buf.nbytes == a.nbytes == len(buf) and buf.ptr != 0
        buf.copy_from(a)
        out = buf.copy_to(dtype=np.float32)
        np.testing.assert_array_equal(out, a)
        into = np.zeros_like(a)
        assert buf.copy_to(into) is into
        np.testing.assert_array_equal(into, a)
    assert buf.closed and buf.ptr == 0


def test_async_copies_with_stream_and_timing_events(dev):
    a = np.arange(1 << 18, dtype=np.int64) * 3 - 5
    s = ae.Stream(dev)
    start, end = ae.Event(dev, timing=True), ae.Event(dev, timing=True)
    d1, d2 = ae.DeviceBuffer(dev, a.nbytes), ae.DeviceBuffer(dev, a.nbytes)
    start.record(s)
    d1.copy_from(a, stream=s)
    d2.copy_from(d1, stream=s)  # device to device
    out = d2.copy_to(stream=s, dtype=np.int64)
    s.record(end)
    s.synchronize()
    assert s.query() and end.query()
    np.testing.assert_array_equal(out, a)
    ms = ae.Event.elapsed_ms(start, end)
    assert 0.0 <= ms < 10_000
    for o in (d1, d2, start, end, s):
        o.close()


def test_cross_stream_dependency_with_event(dev):
    a = np.random.default_rng(1).integers(0, 255, 1 << 20, dtype=np.uint8)
    up, down = ae.Stream(dev), ae.Stream(dev)
    done = ae.Event(dev)
    buf = ae.DeviceBuffer(dev, a.nbytes)
    buf.copy_from(a, stream=up)
    done.record(up)
    down.wait_event(done)
    out = buf.copy_to(stream=down)
    down.synchronize()
    np.testing.assert_array_equal(out, a)


def test_fill_and_offsets(dev):
    buf = ae.DeviceBuffer(dev, 64)
    buf.fill(0x5A)
    assert (buf.copy_to() == 0x5A).all()
    buf.copy_from(np.full(16, 7, np.uint8), offset=32)
    out = buf.copy_to()
    assert (out[:32] == 0x5A).all() and (out[32:48] == 7).all() and (out[48:] == 0x5A).all()
    np.testing.assert_array_equal(buf.copy_to(offset=40, nbytes=8), np.full(8, 7, np.uint8))
    s = ae.Stream(dev)
    buf.fill(1, stream=s)
    s.synchronize()
    assert (buf.copy_to() == 1).all()
    with pytest.raises(ValueError):
        buf.fill(256)
    with pytest.raises(ValueError):
        buf.copy_from(b"x", offset=64)


def test_non_contiguous_source_is_rejected_clearly(dev):
    buf = ae.DeviceBuffer(dev, 64)
    with pytest.raises(ValueError, match="contiguous"):
        buf.copy_from(np.zeros((8, 8), np.uint8)[:, ::2])


def test_host_buffer_protocol_and_copies(dev):
    hb = ae.HostBuffer(4096, dev)
    assert len(hb) == 4096 and hb.ptr != 0
    view = hb.as_array("float32", (32, 32))
    view[:] = np.arange(1024, dtype=np.float32).reshape(32, 32)
    assert np.asarray(hb).shape == (4096,) and memoryview(hb).nbytes == 4096
    buf = ae.DeviceBuffer(dev, 4096)
    s = ae.Stream(dev)
    buf.copy_from(hb, stream=s)
    back = ae.HostBuffer(4096, dev)
    buf.copy_to(back, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(back.as_array("float32", (32, 32)), view)
    with pytest.raises(BufferError):
        hb.close()  # a numpy view is still alive
    del view
    hb.close()
    hb.close()
    assert hb.closed
    with pytest.raises(ae.ObjectClosedError):
        hb.as_array()
    with pytest.raises(ae.ObjectClosedError):
        memoryview(hb)


def test_host_buffer_without_device_opens_its_own():
    hb = ae.HostBuffer(128)
    assert hb.device.id == 0
    hb.as_array()[:] = 9
    assert (np.asarray(hb) == 9).all()
    hb.close()
    assert hb.device.closed


def test_closing_device_closes_children_newest_first():
    d = ae.Device(1)
    s = ae.Stream(d)
    e = ae.Event(d)
    b = ae.DeviceBuffer(d, 256)
    ctx = ae.Context(d)
    s2 = ae.Stream(ctx)
    d.close()
    assert all(o.closed for o in (s, e, b, ctx, s2))
    with pytest.raises(ae.ObjectClosedError, match="Stream is closed"):
        s.synchronize()
    with pytest.raises(ae.ObjectClosedError, match="DeviceBuffer is closed"):
        b.copy_to()
    with pytest.raises(ae.ObjectClosedError):
        e.record()


def test_objects_keep_device_alive():
    import gc

    b = ae.DeviceBuffer(ae.Device(2), 128)  # the Device object is referenced only by the buffer
    gc.collect()
    assert not b.device.closed
    b.copy_from(np.ones(128, np.uint8))
    assert (b.copy_to() == 1).all()
    b.device.close()


def test_explicit_context(dev):
    with ae.Context(dev) as ctx:
        assert ctx.device is dev and ctx.handle != 0 and ctx.handle != dev.context_handle
        s = ae.Stream(ctx)
        assert s.context_handle == ctx.handle
        buf = ae.DeviceBuffer(ctx, 16)
        dev.make_current()  # the stream makes its own context current again
        buf.copy_from(np.arange(16, dtype=np.uint8), stream=s)
        out = buf.copy_to(stream=s)
        s.synchronize()
        np.testing.assert_array_equal(out, np.arange(16, dtype=np.uint8))
    assert s.closed and buf.closed


def test_event_query_and_synchronize(dev):
    s = ae.Stream(dev)
    e = ae.Event(dev)
    e.record(s)
    e.synchronize()
    assert e.query()
    e.synchronize(timeout=1.0)
    assert "timing=False" in repr(e)


def test_repr_and_handles(dev):
    s = ae.Stream(dev)
    assert s.handle != 0 and f"0x{s.handle:x}" in repr(s)
    s.close()
    assert s.handle == 0 and "closed" in repr(s)
