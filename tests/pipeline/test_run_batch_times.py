"""run_batch(times=): each request's enqueue and result times, written by the
executor (docs/executor.md, "Timing run_batch's requests")."""

import time

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense

import ascend_engine as ae

LATENCY_MS = 2.0


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    """A model of LATENCY_MS per execution whatever its rows, largest batch 2."""
    folder = tmp_path_factory.mktemp("times")
    path = folder / "slow.om"
    dense(5).save(str(path), batch_sizes=(1, 2), latency_us=int(LATENCY_MS * 1000))
    return path


def compile_slow(path, depth=4):
    pipe = ae.Pipeline(device=0)
    pipe.output("y", pipe.model(str(path), pipe.input("x", "float32", (-1, WIDTH)), name="slow"))
    return pipe.compile(depth=depth)


def feeds(rows):
    return {"x": np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)}


@pytest.mark.parametrize("rows, batch, executions, depth", [(20, 2, 1, 4), (11, 2, 1, 4), (12, 3, 2, 4),
                                                           (12, 3, 2, 1)])
def test_times_are_monotone_and_each_latency_covers_the_device_time(slow, rows, batch, executions, depth):
    # batch 3 above max_batch 2: every request but the last runs as 2 executions, one after the other
    # (at depth 1 the second goes in only once the first is over: its enqueue time is not the request's)
    requests = -(-rows // batch)
    times = np.full((requests, 2), -1, np.int64)
    with compile_slow(slow, depth=depth) as engine:
        plain = engine.run_batch(feeds(rows), batch_size=batch)["y"]
        before = time.monotonic_ns()
        out = engine.run_batch(feeds(rows), batch_size=batch, times=times)["y"]
        after = time.monotonic_ns()
        assert engine.stats()["failures"] == 0
    np.testing.assert_array_equal(out, plain)   # timing changes nothing in the results
    enqueued, done = times[:, 0], times[:, 1]
    assert (before <= enqueued).all() and (done <= after).all(), (before, times, after)
    assert (np.diff(enqueued) >= 0).all() and (np.diff(done) >= 0).all(), times
    latency_ms = (done - enqueued) / 1e6
    full = latency_ms[:-1] if rows % batch else latency_ms
    assert (full >= executions * LATENCY_MS).all(), latency_ms
    assert latency_ms[-1] >= LATENCY_MS, latency_ms
    # results come in order, one device time apart at least (one stream runs them)
    assert done[-1] - enqueued[0] >= 1e6 * LATENCY_MS * (executions * (rows // batch) + (rows % batch > 0))


def test_a_request_waits_for_a_free_slot_before_its_enqueue_time(slow):
    # depth 2: request k + 2 goes in only once request k is over, so it is enqueued after that result
    times = np.zeros((8, 2), np.int64)
    with compile_slow(slow, depth=2) as engine:
        engine.run_batch(feeds(8), batch_size=1, times=times)
    assert (times[2:, 0] >= times[:-2, 1]).all(), times


def test_no_times_array_means_no_write(slow):
    times = np.full((4, 2), 7, np.int64)
    with compile_slow(slow) as engine:
        engine.run_batch(feeds(8), batch_size=2)
        engine.run_batch(feeds(8), batch_size=2, times=None)
    assert (times == 7).all()


def read_only(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("make, error, message", [
    (lambda: [[0, 0]] * 4, TypeError, "run_batch(times=): expected a numpy array, got list"),
    (lambda: np.zeros((4, 2), np.int32), TypeError, "expected dtype int64 (nanoseconds), got int32"),
    (lambda: np.zeros((4, 2), np.uint64), TypeError, "expected dtype int64 (nanoseconds), got uint64"),
    (lambda: np.zeros((3, 2), np.int64), ValueError,
     "expected shape (4, 2), one row per request of batch_size rows, got (3, 2)"),
    (lambda: np.zeros(8, np.int64), ValueError,
     "expected shape (4, 2), one row per request of batch_size rows, got (8,)"),
    (lambda: np.zeros((2, 4), np.int64).T, ValueError,
     "expected a C-contiguous array, got one with strides (8, 32)"),
    (lambda: read_only(np.zeros((4, 2), np.int64)), ValueError,
     "expected a writable array, got a read-only one"),
])
def test_a_times_array_it_cannot_write_is_refused_before_anything_runs(slow, make, error, message):
    times = make()
    with compile_slow(slow) as engine:
        with pytest.raises(error) as caught:
            engine.run_batch(feeds(8), batch_size=2, times=times)
        assert engine.stats()["requests"] == 0
    assert message in str(caught.value)


def test_a_plan_that_runs_through_submit_refuses_times(build):
    a = build(dense(1), "d1")
    pipe = ae.Pipeline(device=0)
    h = pipe.host(lambda t: (t + 1.0,), pipe.model(a.path, pipe.input("x", "float32", (-1, WIDTH)), name="a"),
                  outputs=[("y", "float32", (-1, WIDTH))], name="plus1")
    pipe.output("y", h)
    with pipe.compile(depth=2) as engine:
        with pytest.raises(ValueError, match=r"run_batch\(times=\) times the executor's own loop: "
                                             r"a plan with host steps or dynamic shapes"):
            engine.run_batch(feeds(4), batch_size=2, times=np.zeros((2, 2), np.int64))


def test_timing_leaves_the_chain_results_exact(build):
    models = [build(dense(i), f"d{i}") for i in range(3)]
    x = feeds(13)["x"]
    times = np.zeros((4, 2), np.int64)
    with compile_chain(models, depth=4) as engine:
        out = engine.run_batch({"x": x}, batch_size=4, times=times)["y"]
    ref = x
    for m in models:
        ref = m.ref(x=ref)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert (times[:, 1] >= times[:, 0]).all() and (times > 0).all()
