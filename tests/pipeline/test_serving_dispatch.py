"""When queued serving work goes on the device, and who puts it there.

Each test reads the engine's own record (``stats()["serving"]``: which
thread dispatched each device request, when calls were admitted, put on the
device and resolved) rather than wall-clock thresholds."""

import threading
import time

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense


@pytest.fixture(scope="module")
def model(build):
    return build(dense(660), "dispatch_m", latency_us=1000)


@pytest.fixture(scope="module")
def slow(build):
    return build(dense(661), "dispatch_slow", latency_us=20000)


def feeds_for(seed, rows):
    return {"x": np.random.default_rng(seed).standard_normal((rows, WIDTH)).astype(np.float32)}


def check(model, futures, rows_of):
    for k, f in enumerate(futures):
        np.testing.assert_allclose(f.result(timeout=30)["y"], model.ref(x=feeds_for(k, rows_of(k))["x"]),
                                   rtol=1e-5, atol=1e-6)


def test_a_full_batch_goes_on_from_the_submitting_thread(model):
    # the delay is far away: only filling the batch can put it on the device,
    # and the call that fills it does so itself (no hand-over to a thread)
    with compile_chain([model], depth=2, max_delay_ms=60_000, max_queue=32) as engine:
        futures = [engine.submit(feeds_for(k, 1)) for k in range(8)]
        check(model, futures, lambda k: 1)
        s = engine.stats()["serving"]
    assert s["batch_rows"] == {8: 1}
    assert s["dispatched_by"] == {"caller": 1}
    assert s["latency_ms"]["count"] == 8 and s["dispatch_wait_ms"]["count"] == 1


def test_a_partial_batch_goes_on_at_its_deadline_with_no_further_submission(model):
    delay_ms = 30
    with compile_chain([model], depth=2, max_delay_ms=delay_ms, max_queue=32) as engine:
        futures = [engine.submit(feeds_for(k, 1)) for k in range(3)]
        check(model, futures, lambda k: 1)      # nothing else is submitted: the timer alone sends them
        s = engine.stats()["serving"]
    assert s["batch_rows"] == {3: 1}
    assert s["dispatched_by"] == {"dispatcher": 1}
    # held open until the deadline of the oldest call, not sent early
    assert s["queue_ms"]["max"] >= delay_ms and s["queue_ms"]["count"] == 3
    # a call's latency covers its time in the queue and on the device
    assert s["latency_ms"]["count"] == 3 and s["latency_ms"]["p50"] >= s["queue_ms"]["p50"]


def test_calls_queued_behind_run_batch_go_on_as_it_returns(slow):
    with compile_chain([slow], depth=2) as engine:
        big = feeds_for(99, 6)
        done = {}
        t = threading.Thread(target=lambda: done.setdefault("out", engine.run_batch(big, batch_size=1)))
        t.start()
        while engine.in_flight() == 0:          # run_batch holds the engine now
            time.sleep(0.001)
        future = engine.submit(feeds_for(0, 2))
        t.join()
        np.testing.assert_allclose(future.result(timeout=30)["y"], slow.ref(x=feeds_for(0, 2)["x"]),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(done["out"]["y"], slow.ref(x=big["x"]), rtol=1e-5, atol=1e-6)
        s = engine.stats()["serving"]
    # put on by run_batch's own call as it let go of the engine, not by the
    # dispatcher's next look (which could be half a second later)
    assert s["dispatched_by"] == {"exclusive": 1}


def test_the_dispatch_wait_counts_from_when_a_slot_was_free(slow):
    # depth 1: the second call is due at once but must wait for the first to
    # finish; its dispatch wait starts when the slot was freed, so it is far
    # below its time in the queue (a whole 20 ms execution)
    with compile_chain([slow], depth=1) as engine:
        futures = [engine.submit(feeds_for(k, 1)) for k in range(2)]
        check(slow, futures, lambda k: 1)
        s = engine.stats()["serving"]
    assert s["dispatched_by"] == {"caller": 1, "completer": 1}
    assert s["dispatch_wait_ms"]["count"] == 2
    assert s["dispatch_wait_ms"]["max"] < s["queue_ms"]["max"]
    # the second call is admitted a moment after the first went on, so it
    # queues for the rest of that 20 ms execution: most of it, not all of it
    assert s["queue_ms"]["max"] >= 15


def test_a_lone_run_waits_on_its_own_thread_and_a_busy_one_queues(model, slow):
    # Nothing queued or on the device: run() enqueues and waits for its request itself (no
    # hand-over to the completer and back); its figures are recorded as a queued call's are.
    with compile_chain([model], depth=2) as engine:
        for k in range(5):
            out = engine.run(feeds_for(k, 3))
            np.testing.assert_allclose(out["y"], model.ref(x=feeds_for(k, 3)["x"]), rtol=1e-5, atol=1e-6)
        s = engine.stats()["serving"]
    assert s["dispatched_by"] == {"alone": 5} and s["batch_rows"] == {3: 5}
    assert s["latency_ms"]["count"] == s["queue_ms"]["count"] == 5 and s["queue_ms"]["max"] == 0.0
    # Another caller's request on the device: run() goes through the queue, behind it.
    with compile_chain([slow], depth=2) as engine:
        busy = engine.submit(feeds_for(0, 1))
        out = engine.run(feeds_for(1, 2))
        np.testing.assert_allclose(out["y"], slow.ref(x=feeds_for(1, 2)["x"]), rtol=1e-5, atol=1e-6)
        assert busy.done()
        by = engine.stats()["serving"]["dispatched_by"]
    # both through the queue: put on by their callers, or by the completer when it held the engine
    assert "alone" not in by and sum(by.values()) == 2, by


def test_a_lone_run_above_max_batch_is_split_as_submit_splits_it(model):
    with compile_chain([model], depth=2) as engine:
        rows = 2 * engine.plan.max_batch + 1
        out = engine.run(feeds_for(7, rows))
        np.testing.assert_allclose(out["y"], model.ref(x=feeds_for(7, rows)["x"]), rtol=1e-5, atol=1e-6)
        s = engine.stats()["serving"]
    assert s["batch_rows"] == {engine.plan.max_batch: 2, 1: 1} and s["dispatched_by"] == {"alone": 3}
