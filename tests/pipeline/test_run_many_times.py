"""run_many(times=): each request's enqueue and result times, written by the
executor, on the plain path and through submit (docs/executor.md, "Timing
run_many's requests")."""

import time

import numpy as np
import pytest
from helpers.pipelines import WIDTH, dense

import ascend_engine as ae

LATENCY_MS = 2.0


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    """A model of LATENCY_MS per execution whatever its rows, largest batch 2."""
    path = tmp_path_factory.mktemp("many_times") / "slow.om"
    dense(5).save(str(path), batch_sizes=(1, 2), latency_us=int(LATENCY_MS * 1000))
    return path


def compile_slow(path, depth, step=False):
    pipe = ae.Pipeline(device=0)
    h = pipe.model(str(path), pipe.input("x", "float32", (-1, WIDTH)), name="slow")
    if step:
        h = pipe.host(lambda t: (t + 1.0,), h, outputs=[("y", "float32", (-1, WIDTH))], name="plus1")
    pipe.output("y", h)
    return pipe.compile(depth=depth)


def feeds_of(n, rows=1):
    rng = np.random.default_rng(n)
    return [{"x": rng.standard_normal((rows, WIDTH)).astype(np.float32)} for _ in range(n)]


@pytest.mark.parametrize("step", [False, True], ids=["plain", "host-step"])
@pytest.mark.parametrize("depth", [1, 3])
def test_times_follow_the_window_and_cover_the_device_time(slow, step, depth):
    feeds = feeds_of(9)
    stamps = []
    with compile_slow(slow, depth, step) as engine:
        plain = [r["y"] for r in engine.run_many(feeds)]
        before = time.monotonic_ns()
        out = [r["y"] for r in engine.run_many(feeds, times=stamps)]
        after = time.monotonic_ns()
        assert engine.stats()["failures"] == 0
    for a, b in zip(out, plain, strict=True):   # timing changes nothing in the results
        np.testing.assert_array_equal(a, b)
    times = np.asarray(stamps)
    assert times.shape == (9, 2) and times.dtype == np.int64
    enqueued, done = times[:, 0], times[:, 1]
    assert before <= enqueued[0] and done[-1] <= after, (before, times, after)
    assert (np.diff(enqueued) >= 0).all() and (np.diff(done) >= 0).all(), times
    assert ((done - enqueued) / 1e6 >= LATENCY_MS).all(), times
    # request k + depth goes in only once request k is over: its slot, and run_many's window
    assert (enqueued[depth:] >= done[:-depth]).all(), times


@pytest.mark.parametrize("step", [False, True], ids=["plain", "host-step"])
def test_a_request_split_over_executions_is_timed_from_its_first_to_its_last(slow, step):
    # 3 rows over max_batch 2: two executions (through submit: two device requests), one after the other
    stamps = []
    with compile_slow(slow, depth=2, step=step) as engine:
        results = list(engine.run_many(feeds_of(1, rows=1) + feeds_of(1, rows=3), times=stamps))
    assert [len(r["y"]) for r in results] == [1, 3]
    latency_ms = [(d - e) / 1e6 for e, d in stamps]
    assert len(latency_ms) == 2 and latency_ms[0] >= LATENCY_MS and latency_ms[1] >= 2 * LATENCY_MS, stamps


@pytest.mark.parametrize("step", [False, True], ids=["plain", "host-step"])
def test_an_abandoned_generator_has_times_for_what_it_yielded(slow, step):
    stamps = []
    with compile_slow(slow, depth=2, step=step) as engine:
        results = engine.run_many(feeds_of(6), times=stamps)
        next(results)
        next(results)
        results.close()
        assert len(stamps) == 2 and stamps[0][1] <= stamps[1][1]
        # the engine goes on untimed afterwards
        assert len(list(engine.run_many(feeds_of(3)))) == 3


def test_times_must_be_a_list(slow):
    with compile_slow(slow, depth=2) as engine:
        with pytest.raises(TypeError, match=r"run_many\(times=\) takes a list to append to, got ndarray"):
            engine.run_many(feeds_of(2), times=np.zeros((2, 2), np.int64))
