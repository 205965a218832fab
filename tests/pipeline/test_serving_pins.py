"""Serving behaviours pinned by ordering and numpy (docs/executor.md, "Serving"):
run_many from several threads beside submit(), the batcher's delay counted
from the oldest queued call, a queued call's deadline while every slot is
busy, and an engine dropped with calls still queued."""

import gc
import threading
import time
import warnings

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, compile_chain, dense


@pytest.fixture(scope="module")
def chain(build):
    """Three models with a little device time each, so requests overlap."""
    return [build(dense(900 + i), f"pins{i}", latency_us=150 * (i + 1)) for i in range(3)]


def feeds_for(seed, rows):
    return {"x": np.random.default_rng(seed).standard_normal((rows, WIDTH)).astype(np.float32)}


def close_to(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- run_many from two threads, beside submit() ---------------------------------------------------


def test_run_many_from_two_threads_beside_submitters_each_gets_its_rows(chain):
    """Two threads iterate run_many on one engine while two others submit():
    every request's wait is taken under the engine's lock, so each result is
    its own request's, checked against numpy."""
    per_thread = 60
    results = {}          # (thread, k) -> (feeds, outputs)
    errors = []
    with compile_chain(chain, depth=4) as engine:
        start = threading.Barrier(4)

        def many(t):
            try:
                rng = np.random.default_rng(t)
                feeds = [feeds_for(1000 * t + k, int(rng.integers(1, 9))) for k in range(per_thread)]
                start.wait()
                for k, out in enumerate(engine.run_many(feeds)):
                    results[(t, k)] = (feeds[k], out)
            except BaseException as exc:   # reported below: a thread's failure must fail the test
                errors.append(exc)

        def submitter(t):
            try:
                rng = np.random.default_rng(t)
                feeds = [feeds_for(1000 * t + k, int(rng.integers(1, 9))) for k in range(per_thread)]
                start.wait()
                futures = [engine.submit(f) for f in feeds]
                for k, (f, fut) in enumerate(zip(feeds, futures, strict=True)):
                    results[(t, k)] = (f, fut.result(timeout=60))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=many, args=(t,)) for t in (1, 2)]
        threads += [threading.Thread(target=submitter, args=(t,)) for t in (3, 4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not any(th.is_alive() for th in threads), "a caller hung"
        stats = engine.stats()
    assert errors == []
    assert len(results) == 4 * per_thread
    for (t, k), (feeds, out) in results.items():
        np.testing.assert_allclose(out["y"], chain_reference(chain, feeds["x"]), rtol=1e-4, atol=1e-5,
                                   err_msg=f"thread {t}, request {k}")
    assert stats["failures"] == 0 and stats["requests"] == 4 * per_thread


# ---- the batcher's delay starts with the oldest queued call --------------------------------------


def test_the_batch_delay_is_counted_from_the_oldest_queued_call(build):
    """One-row calls every 40 ms, max_delay_ms=100, batches of up to 16 rows:
    the first batch leaves 100 ms after the first call, long before the batch
    fills (16 calls) or the calls stop coming (10 calls).  The first result is
    in before the 6th call is submitted (200 ms after the first, twice the
    delay), and no call waited in the queue anywhere near the 460 ms a delay
    counted from the newest call would give."""
    model = build(dense(930), "pins_batch", batch_sizes=(1, 2, 4, 8, 16))
    done_at = {}
    with compile_chain([model], depth=2, max_delay_ms=100) as engine:
        assert engine.plan.max_batch == 16
        futures, submitted_at = [], []
        for k in range(10):
            if k:
                time.sleep(0.04)
            submitted_at.append(time.monotonic())
            f = engine.submit(feeds_for(k, 1))
            f.add_done_callback(lambda _f, k=k: done_at.setdefault(k, time.monotonic()))
            futures.append(f)
        for k, f in enumerate(futures):
            close_to(f.result(timeout=30)["y"], model.ref(x=feeds_for(k, 1)["x"]))
        serving = engine.stats()["serving"]
    assert done_at[0] < submitted_at[5], (done_at[0] - submitted_at[0], submitted_at[5] - submitted_at[0])
    # the engine's own figure: submitted to put on the device, per call
    assert serving["queue_ms"]["count"] == 10
    assert serving["queue_ms"]["max"] < 250, serving["queue_ms"]
    assert sum(serving["batch_rows"].values()) >= 2      # more than one batch: the first left early


# ---- a queued call's deadline while every slot is busy -------------------------------------------


def test_a_queued_deadline_expires_while_every_slot_is_busy(build):
    """One slot, held by a request of 600 ms of device time: a call queued with
    timeout=0.05 fails with its TimeoutError while the slot is still busy --
    before the slow request's result -- not when the slot frees."""
    slow = build(dense(931), "pins_slow", latency_us=600_000)
    with compile_chain([slow], depth=1) as engine:
        holding = engine.submit(feeds_for(0, 1))
        seen = {}
        late = engine.submit(feeds_for(1, 1), timeout=0.05)
        late.add_done_callback(lambda _f: seen.setdefault("slow done", holding.done()))
        expired = r"not started within its timeout of 0\.050 s \(it never ran\)"
        with pytest.raises(TimeoutError, match=expired):
            late.result(timeout=30)
        assert seen == {"slow done": False}
        assert not holding.done()
        close_to(holding.result(timeout=30)["y"], slow.ref(x=feeds_for(0, 1)["x"]))
        assert engine.stats()["requests"] == 1            # the late call never reached the device


# ---- an engine dropped with calls still queued ---------------------------------------------------


@pytest.mark.parametrize("where", ["admission queue", "batcher"])
def test_an_engine_dropped_completes_its_queued_calls(build, where):
    """Dropped without close() while calls wait for a slot (one slot, a slow
    model) or in the batcher (a long max_delay_ms): the calls already admitted
    still run and every future resolves with its own result; none hangs and
    none is failed for the drop (docs/executor.md, "Errors": Ownership)."""
    slow = build(dense(932), "pins_drop", latency_us=100_000)
    kw = {"depth": 1} if where == "admission queue" else {"depth": 2, "max_delay_ms": 300}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        engine = compile_chain([slow], **kw)
        futures = [engine.submit(feeds_for(k, 1)) for k in range(6)]
        assert engine.stats()["serving"]["queued"] >= 4       # most of them wait in the queue
        del engine
        gc.collect()
        for k, f in enumerate(futures):
            close_to(f.result(timeout=20)["y"], slow.ref(x=feeds_for(k, 1)["x"]))
