"""Events: cross-stream dependencies, never-recorded waits, timing, reset, budgets."""

import ctypes
import random
import time

import pytest
from simrt_util import D2H, run_child, stress_iterations

SYNC, PROGRESS, TIME_LINE = 0x1, 0x2, 0x8


def _cross_stream_round(sim, lib, s1, s2, ev, dev, host, n, rng, faults, iterations):
    # Random device latencies: stall the producer's memset and sometimes the
    # consumer's copy so that either side may run first without the wait.
    spec = []
    for i in range(1, iterations + 1):
        spec.append(f"stall:memset@{i}={rng.randint(0, 4)}")
        if rng.random() < 0.3:
            spec.append(f"stall:wait@{i}={rng.randint(0, 2)}")
    faults(",".join(spec))
    outs = [(ctypes.c_uint8 * n)() for _ in range(iterations)]
    for i in range(iterations):
        value = (i % 250) + 1
        sim.ok(lib.aclrtMemsetAsync(dev, n, value, n, s1))
        sim.ok(lib.aclrtRecordEvent(ev, s1))
        sim.ok(lib.aclrtStreamWaitEvent(s2, ev))
        sim.ok(lib.aclrtMemcpyAsync(outs[i], n, dev, n, D2H, s2))
        # the producer must not overwrite dev before the consumer copied it
        sim.ok(lib.aclrtSynchronizeStream(s2))
    sim.ok(lib.aclrtSynchronizeStream(s1))
    for i, out in enumerate(outs):
        assert bytes(out) == bytes([(i % 250) + 1]) * n, f"iteration {i}"


def test_cross_stream_dependency_under_random_latency(sim, lib, faults):
    rng = random.Random(1234)
    s1, s2 = sim.stream(), sim.stream()
    ev = sim.event()
    n = 256
    dev = sim.malloc(n)
    _cross_stream_round(sim, lib, s1, s2, ev, dev, None, n, rng, faults, 60 * stress_iterations())
    for s in (s1, s2):
        sim.ok(lib.aclrtDestroyStream(s))
    sim.ok(lib.aclrtDestroyEvent(ev))
    sim.ok(lib.aclrtFree(dev))


@pytest.mark.stress
def test_cross_stream_pipeline_stress(sim, lib, faults):
    """Two producers feed one consumer through events, many requests in flight."""
    rng = random.Random(99)
    prod_a, prod_b, cons = sim.stream(), sim.stream(), sim.stream()
    n, slots = 128, 4
    iterations = 80 * stress_iterations()
    bufs_a = [sim.malloc(n) for _ in range(slots)]
    bufs_b = [sim.malloc(n) for _ in range(slots)]
    ev_a = [sim.event() for _ in range(slots)]
    ev_b = [sim.event() for _ in range(slots)]
    done = [sim.event() for _ in range(slots)]
    spec = [f"stall:memset@{i}={rng.randint(0, 3)}" for i in range(1, 2 * iterations + 1)]
    faults(",".join(spec))
    outs = [((ctypes.c_uint8 * n)(), (ctypes.c_uint8 * n)()) for _ in range(iterations)]
    for k in range(slots):  # CANN refuses a wait on a never-recorded event: every slot starts free
        sim.ok(lib.aclrtRecordEvent(done[k], cons))
    for i in range(iterations):
        k = i % slots
        sim.ok(lib.aclrtStreamWaitEvent(prod_a, done[k]))  # slot free again?
        sim.ok(lib.aclrtStreamWaitEvent(prod_b, done[k]))
        sim.ok(lib.aclrtMemsetAsync(bufs_a[k], n, i % 256, n, prod_a))
        sim.ok(lib.aclrtRecordEvent(ev_a[k], prod_a))
        sim.ok(lib.aclrtMemsetAsync(bufs_b[k], n, (i * 7) % 256, n, prod_b))
        sim.ok(lib.aclrtRecordEvent(ev_b[k], prod_b))
        sim.ok(lib.aclrtStreamWaitEvent(cons, ev_a[k]))
        sim.ok(lib.aclrtStreamWaitEvent(cons, ev_b[k]))
        sim.ok(lib.aclrtMemcpyAsync(outs[i][0], n, bufs_a[k], n, D2H, cons))
        sim.ok(lib.aclrtMemcpyAsync(outs[i][1], n, bufs_b[k], n, D2H, cons))
        sim.ok(lib.aclrtRecordEvent(done[k], cons))
    for s in (prod_a, prod_b, cons):
        sim.ok(lib.aclrtSynchronizeStream(s))
    for i, (a, b) in enumerate(outs):
        assert bytes(a) == bytes([i % 256]) * n, f"request {i}"
        assert bytes(b) == bytes([(i * 7) % 256]) * n, f"request {i}"
    for s in (prod_a, prod_b, cons):
        sim.ok(lib.aclrtDestroyStream(s))
    for e in ev_a + ev_b + done:
        sim.ok(lib.aclrtDestroyEvent(e))
    for p in bufs_a + bufs_b:
        sim.ok(lib.aclrtFree(p))


def test_never_recorded_event_is_refused_by_a_wait_and_not_ready(sim, lib, stream):
    """CANN 9.1: a stream may not wait on an event never recorded (107000), a query reads
    NOT_READY, a host synchronize returns at once."""
    ev = sim.event()
    assert lib.aclrtStreamWaitEvent(stream, ev) == 107000
    assert sim.err().endswith("has not been recorded: call aclrtRecordEvent before a stream waits on it")
    status = ctypes.c_int(-1)
    sim.ok(lib.aclrtQueryEventStatus(ev, ctypes.byref(status)))
    assert status.value == 0  # NOT_READY: the event's initial state
    sim.ok(lib.aclrtSynchronizeEvent(ev))
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_wait_targets_the_record_enqueued_before_it(sim, lib, faults):
    s1, s2 = sim.stream(), sim.stream()
    ev = sim.event()
    dev = sim.malloc(32)
    out = (ctypes.c_uint8 * 32)()
    faults("stall:memset@2=150")
    sim.ok(lib.aclrtMemsetAsync(dev, 32, 1, 32, s1))  # fast
    sim.ok(lib.aclrtRecordEvent(ev, s1))
    sim.ok(lib.aclrtStreamWaitEvent(s2, ev))  # waits for the first record only
    sim.ok(lib.aclrtMemcpyAsync(out, 32, dev, 32, D2H, s2))
    sim.ok(lib.aclrtSynchronizeStream(s2))
    sim.ok(lib.aclrtMemsetAsync(dev, 32, 2, 32, s1))  # stalled 150 ms
    sim.ok(lib.aclrtRecordEvent(ev, s1))
    t0 = time.monotonic()
    assert bytes(out) == b"\x01" * 32
    status = ctypes.c_int(-1)
    sim.ok(lib.aclrtQueryEventStatus(ev, ctypes.byref(status)))
    assert status.value == 0  # NOT_READY: the latest record is still queued
    assert lib.aclrtSynchronizeEventWithTimeout(ev, 10) == 507047
    assert "was not completed within 10 ms" in sim.err()
    sim.ok(lib.aclrtSynchronizeEventWithTimeout(ev, 5000))
    assert time.monotonic() - t0 >= 0.1
    sim.ok(lib.aclrtQueryEventStatus(ev, ctypes.byref(status)))
    assert status.value == 1
    for s in (s1, s2):
        sim.ok(lib.aclrtDestroyStream(s))
    sim.ok(lib.aclrtDestroyEvent(ev))
    sim.ok(lib.aclrtFree(dev))


def test_elapsed_time_matches_injected_device_delay(sim, lib, stream, faults):
    start, end = sim.event(), sim.event(SYNC | TIME_LINE)
    dev = sim.malloc(64)
    faults("stall:memset@1=120")
    sim.ok(lib.aclrtRecordEvent(start, stream))
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 0, 64, stream))
    sim.ok(lib.aclrtRecordEvent(end, stream))
    sim.ok(lib.aclrtSynchronizeEvent(end))
    ms = ctypes.c_float()
    sim.ok(lib.aclrtEventElapsedTime(ctypes.byref(ms), start, end))
    assert 118.0 <= ms.value <= 200.0
    forward = ms.value
    sim.ok(lib.aclrtEventElapsedTime(ctypes.byref(ms), end, start))  # CANN 9.1: negative, no error
    assert ms.value == pytest.approx(-forward, abs=1e-3)
    for e in (start, end):
        sim.ok(lib.aclrtDestroyEvent(e))
    sim.ok(lib.aclrtFree(dev))


def test_elapsed_time_needs_timing_and_completion(sim, lib, stream, faults):
    plain = sim.event(SYNC)
    timed = sim.event(TIME_LINE)
    never = sim.event()
    ms = ctypes.c_float()
    sim.ok(lib.aclrtRecordEvent(plain, stream))
    sim.ok(lib.aclrtRecordEvent(timed, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), plain, timed) == 107006
    assert "startEvent (event" in sim.err() and "was created without ACL_EVENT_TIME_LINE" in sim.err()
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), timed, never) == 507000  # CANN 9.1: no recorder
    assert sim.err().endswith("has not been recorded")
    faults("stall:record@1=100")
    sim.ok(lib.aclrtRecordEvent(never, stream))
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), timed, never) == 107006
    assert "is recorded but not complete yet" in sim.err()
    sim.ok(lib.aclrtSynchronizeStream(stream))
    sim.ok(lib.aclrtEventElapsedTime(ctypes.byref(ms), timed, never))
    assert ms.value >= 99.0
    assert lib.aclrtEventElapsedTime(None, timed, never) == 100000
    # a stream cannot wait on an event without ACL_EVENT_SYNC
    assert lib.aclrtStreamWaitEvent(stream, timed) == 207000  # CANN 9.1: feature not supported
    assert "was created without ACL_EVENT_SYNC" in sim.err()
    for e in (plain, timed, never):
        sim.ok(lib.aclrtDestroyEvent(e))


def test_reset_returns_event_to_never_recorded(sim, lib, stream):
    ev = sim.event()
    other = sim.stream()
    sim.ok(lib.aclrtRecordEvent(ev, stream))
    sim.ok(lib.aclrtResetEvent(ev, stream))
    sim.ok(lib.aclrtSynchronizeStream(stream))
    ms = ctypes.c_float()
    assert lib.aclrtEventElapsedTime(ctypes.byref(ms), ev, ev) == 507000  # no timestamp after reset
    # a wait after the reset does not block
    sim.ok(lib.aclrtStreamWaitEvent(other, ev))
    assert lib.aclrtSynchronizeStreamWithTimeout(other, 2000) == 0
    sim.ok(lib.aclrtDestroyStream(other))
    sim.ok(lib.aclrtDestroyEvent(ev))


def test_event_flags_and_handles(sim, lib):
    e = ctypes.c_void_p()
    assert lib.aclrtCreateEventWithFlag(ctypes.byref(e), 0x4) == 107000
    assert sim.err() == (
        "aclrtCreateEventWithFlag: flag 0x4 has bits 0x4 the simulator does not know: "
        "expected a combination of ACL_EVENT_SYNC (0x1), ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), "
        "ACL_EVENT_TIME_LINE (0x8) and ACL_EVENT_DEVICE_USE_ONLY (0x10)"
    )
    sim.ok(lib.aclrtCreateEventWithFlag(ctypes.byref(e), SYNC | PROGRESS | TIME_LINE))
    sim.ok(lib.aclrtDestroyEvent(e))
    assert lib.aclrtDestroyEvent(e) == 107017
    assert (
        sim.err()
        == f"aclrtDestroyEvent: event 0x{e.value:x} is not a live event (never created or already destroyed)"
    )
    assert lib.aclrtRecordEvent(None, None) == 100000
    assert sim.err() == "aclrtRecordEvent: event is NULL"
    assert lib.aclrtCreateEvent(None) == 100000


def test_sticky_error_propagates_across_wait(sim, lib, faults):
    s1, s2, s3 = sim.stream(), sim.stream(), sim.stream()
    ev, ev2 = sim.event(), sim.event()
    dev = sim.malloc(64)
    faults("task:memset@1=507015")
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 1, 64, s1))  # fails on the device
    sim.ok(lib.aclrtRecordEvent(ev, s1))
    sim.ok(lib.aclrtStreamWaitEvent(s2, ev))
    sim.ok(lib.aclrtRecordEvent(ev2, s2))
    sim.ok(lib.aclrtStreamWaitEvent(s3, ev2))  # two hops
    assert lib.aclrtSynchronizeEvent(ev2) == 507015
    assert "completed after a device-side failure on its stream" in sim.err()
    assert lib.aclrtSynchronizeStream(s3) == 507015
    msg = sim.err()
    assert "inherited through event" in msg and "injected fault 507015 ACL_ERROR_RT_AICORE_EXCEPTION" in msg
    assert lib.aclrtSynchronizeStream(s2) == 507015
    assert lib.aclrtSynchronizeStream(s1) == 507015
    assert "memset task failed on the device: injected fault 507015" in sim.err()
    for s in (s1, s2, s3):  # reported once, then clean
        sim.ok(lib.aclrtSynchronizeStream(s))
        sim.ok(lib.aclrtDestroyStream(s))
    for e in (ev, ev2):
        sim.ok(lib.aclrtDestroyEvent(e))
    sim.ok(lib.aclrtFree(dev))


def test_event_budget():
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        evs = []
        for i in range(5):
            e = ctypes.c_void_p()
            assert lib.aclrtCreateEvent(ctypes.byref(e)) == 0
            evs.append(e)
        e = ctypes.c_void_p()
        assert lib.aclrtCreateEventWithFlag(ctypes.byref(e), 1) == 207007
        assert err() == ("aclrtCreateEventWithFlag: device 0 has no event left: all 5 events are in use "
                         "(ASCEND_SIM_MAX_EVENTS); destroy events you no longer need or reuse them"), err()
        assert lib.aclrtDestroyEvent(evs.pop()) == 0
        assert lib.aclrtCreateEvent(ctypes.byref(e)) == 0
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_MAX_EVENTS": "5"},
    )


# ---- the device clock (docs/simulator.md, "Device time") -----------------------------------------------


def _elapsed_ms(sim, lib, start, end):
    ms = ctypes.c_float()
    sim.ok(lib.aclrtEventElapsedTime(ctypes.byref(ms), start, end))
    return ms.value


def test_back_to_back_tasks_read_their_modelled_time_exactly(sim, lib, faults):
    # a 50 ms stall holds the stream while the host issues ten 1 ms tasks behind it: on the
    # device they follow one another with no gap, however late the stream's thread wakes for each
    faults("stall:memset@1=50," + ",".join(f"stall:memset@{i}=1" for i in range(2, 12)))
    s, dev = sim.stream(), sim.malloc(64)
    start, end = sim.event(), sim.event()
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 0, 64, s))
    sim.ok(lib.aclrtRecordEvent(start, s))
    for _ in range(10):
        sim.ok(lib.aclrtMemsetAsync(dev, 64, 1, 64, s))
    sim.ok(lib.aclrtRecordEvent(end, s))
    sim.ok(lib.aclrtSynchronizeStream(s))
    assert _elapsed_ms(sim, lib, start, end) == pytest.approx(10.0, abs=1e-3)


def test_a_wait_resumes_at_the_device_time_of_the_record(sim, lib, faults):
    faults("stall:memset@1=50")
    producer, consumer, dev = sim.stream(), sim.stream(), sim.malloc(64)
    recorded, resumed = sim.event(), sim.event()
    t0 = time.monotonic()
    sim.ok(lib.aclrtMemsetAsync(dev, 64, 0, 64, producer))
    sim.ok(lib.aclrtRecordEvent(recorded, producer))
    sim.ok(lib.aclrtStreamWaitEvent(consumer, recorded))
    sim.ok(lib.aclrtRecordEvent(resumed, consumer))
    sim.ok(lib.aclrtSynchronizeStream(consumer))
    # the consumer's record sits behind the wait: it takes the producer's record time, not the
    # moment the consumer's thread was woken; the host still waited for the producer's stall
    assert _elapsed_ms(sim, lib, recorded, resumed) == 0.0
    assert time.monotonic() - t0 >= 0.0499
