"""The bench's lean pass (ascend_engine/bench/measure.py): the feeds laid end to
end and run by run_batch(times=), or streamed through run_many when the plan
runs through submit."""

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.bench import measure

WIDTH = 8
LATENCY_MS = 2.0


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    g = sim.Graph("slow")
    g.output("y", g.relu(g.input("x", "float32", (-1, WIDTH))))
    return g.save(str(tmp_path_factory.mktemp("lean") / "slow.om"), batch_sizes=(1, 2),
                  latency_us=int(LATENCY_MS * 1000))


def compile_slow(path, depth=4, step=None, profile=False):
    pipe = ae.Pipeline(device=0)
    h = pipe.model(path, pipe.input("x", "float32", (-1, WIDTH)), name="slow")
    if step is not None:
        h = pipe.host(step, h, outputs=[("y", "float32", (-1, WIDTH))], name="plus1")
    pipe.output("y", h)
    return pipe.compile(depth=depth, profile=profile)


def pool_of(n, rows=1):
    return [{"x": np.full((rows, WIDTH), float(i), np.float32)} for i in range(n)]


def test_the_feeds_are_laid_out_in_turn_as_far_as_the_requests_need(slow):
    pool = pool_of(3, rows=2)
    with compile_slow(slow) as engine:
        arrays, rows = measure._laid_out(engine, pool, requests=7)
    assert rows == 2
    # 7 requests of a pool of 3: three whole copies, feed k at rows 2k, 2k + 1
    assert arrays["x"].shape == (9 * 2, WIDTH)
    np.testing.assert_array_equal(arrays["x"][::2, 0], [0, 1, 2] * 3)


def test_feeds_it_cannot_lay_out_go_through_run_many(slow):
    with compile_slow(slow) as engine:
        uneven = [{"x": np.zeros((1, WIDTH), np.float32)}, {"x": np.zeros((2, WIDTH), np.float32)}]
        assert measure._laid_out(engine, uneven, requests=4) is None
        fig = measure.run_bench(engine, uneven, 1, 0.0, requests=6, warmup=0)
    assert fig["requests"] == 6 and fig["latency_ms"]["min"] >= LATENCY_MS


def test_a_plan_with_a_host_step_is_streamed(slow):
    with compile_slow(slow, step=lambda t: (t + 1.0,)) as engine:
        assert measure._laid_out(engine, pool_of(4), requests=8) is None
        fig = measure.run_bench(engine, pool_of(4), 1, 0.0, requests=12, warmup=2)
        assert engine.stats()["requests"] == 14
    lat = fig["latency_ms"]
    assert fig["requests"] == 12 and lat["count"] == 12 and lat["min"] >= LATENCY_MS


def test_a_requests_pass_that_is_not_whole_pools_times_each_request(slow):
    with compile_slow(slow, depth=4) as engine:
        fig = measure.run_bench(engine, pool_of(4), 1, 0.0, requests=10, warmup=0)
        assert engine.stats()["requests"] == 10
    assert fig["requests"] == 10 and len(fig["samples"]) == 10
    for s in fig["samples"]:
        assert s["latency_ms"] == pytest.approx(s["done_ms"] - s["submit_ms"])
        assert s["latency_ms"] >= LATENCY_MS
    submits = [s["submit_ms"] for s in fig["samples"]]
    assert submits == sorted(submits) and submits[0] == 0.0


def test_a_duration_pass_runs_for_its_duration_in_chunks(slow):
    # 0.25 s of 2 ms requests, several run_batch calls sized by the rate: it stops once past the duration
    with compile_slow(slow, depth=4) as engine:
        fig = measure.run_bench(engine, pool_of(3), 1, 0.0, duration=0.25, warmup=0)
        ran = engine.stats()["requests"]
    assert fig["wall_seconds"] >= 0.25
    assert fig["requests"] == ran and fig["requests"] % 3 == 0   # whole copies of the pool per call
    # one stream runs one 2 ms request at a time: no more than the duration (and a last chunk) holds
    assert fig["requests"] <= fig["wall_seconds"] * 1e3 / LATENCY_MS + 1
    assert fig["latency_ms"]["min"] >= LATENCY_MS


def test_the_streamed_pass_times_a_host_step_plan_as_the_counted_pass_does(slow):
    # depth 1: one request at a time, so a latency is one request's own time, and a feed pulled
    # while the request before it runs is not submitted until that one is over
    figs = {}
    for profile in (False, True):
        with compile_slow(slow, depth=1, step=lambda t: (t + 1.0,), profile=profile) as engine:
            figs[profile] = measure.run_bench(engine, pool_of(4), 1, 0.0, requests=24, warmup=2)
    streamed, counted = figs[False], figs[True]
    samples = streamed["samples"]
    for before, after in zip(samples[:-1], samples[1:], strict=True):
        assert after["submit_ms"] >= before["done_ms"], (before, after)
    assert streamed["latency_ms"]["min"] >= LATENCY_MS
    # the engine's own times (streamed) against submit-to-handed-back (counted): the same request
    # time, less a hand-over; counting from the pull would add a whole request (about 2x)
    ratio = streamed["latency_ms"]["p50"] / counted["latency_ms"]["p50"]
    assert 0.5 <= ratio <= 1.35, (streamed["latency_ms"], counted["latency_ms"])
