"""The bench disturbs what it measures as little as the engine call it makes.

On a chain of zero-latency models the host is all there is, so any host work
the bench adds shows up in full.  The calling thread's CPU time per request
of the bench's timed pass, and its throughput, are compared side by side in
one process with ``Engine.run_batch`` -- the call the lean pass makes -- and
``Engine.run_many`` (what it made before), with profiling off -- the default
-- and on.  Ratios only: no absolute time is asserted.
"""

import statistics
import time

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.bench import measure

WIDTH, BATCH, DEPTH, REQUESTS, ROUNDS = 16, 4, 8, 1000, 7


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("overhead")
    paths = []
    for i in range(3):
        g = sim.Graph(f"zero{i}")
        w = np.random.default_rng(i).standard_normal((WIDTH, WIDTH)).astype(np.float32)
        g.output("y", g.relu(g.matmul(g.input("x", "float32", (-1, WIDTH)), g.const(w))))
        paths.append(g.save(str(folder / f"zero{i}.om"), batch_sizes=(1, 2, 4, 8)))
    return paths


def compile_chain(paths, profile):
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, p in enumerate(paths):
        h = pipe.model(p, h, name=f"m{i}")
    pipe.output("y", h)
    return pipe.compile(depth=DEPTH, profile=profile)


def thread_cpu_per_request(run):
    t0 = time.thread_time()
    run()
    return (time.thread_time() - t0) / REQUESTS


def requests_per_s(run):
    t0 = time.perf_counter()
    run()
    return REQUESTS / (time.perf_counter() - t0)


def test_bench_host_cost_is_run_batchs_and_profiling_is_what_costs(chain):
    x = np.random.default_rng(0).standard_normal((REQUESTS * BATCH, WIDTH)).astype(np.float32)
    pool = [{"x": x[i * BATCH:(i + 1) * BATCH].copy()} for i in range(4)]
    with compile_chain(chain, profile=False) as plain, compile_chain(chain, profile=True) as profiled:

        def bench(engine):
            fig = measure.run_bench(engine, pool, BATCH, 0.0, requests=REQUESTS, warmup=0)
            assert fig["requests"] == REQUESTS
            return fig["host"]["thread_cpu_ms_per_request"] / 1e3, fig

        runs = {"run_batch": [], "run_many": [], "bench": [], "bench --profile": []}
        rates = {"run_batch": [], "bench": []}
        for _ in range(ROUNDS):        # interleaved, so a noisy moment hits every figure
            runs["run_batch"].append(thread_cpu_per_request(
                lambda: plain.run_batch({"x": x}, batch_size=BATCH)))
            rates["run_batch"].append(requests_per_s(lambda: plain.run_batch({"x": x}, batch_size=BATCH)))
            runs["run_many"].append(thread_cpu_per_request(
                lambda: [None for _ in plain.run_many(pool[i % 4] for i in range(REQUESTS))]))
            cost, lean = bench(plain)
            runs["bench"].append(cost)
            rates["bench"].append(lean["throughput"]["requests_per_s"])
            cost, timed = bench(profiled)
            runs["bench --profile"].append(cost)
        us = {k: statistics.median(v) * 1e6 for k, v in runs.items()}
        rps = {k: statistics.median(v) for k, v in rates.items()}

        def paired(a, b, figures=runs):   # the median of the round-by-round ratios: a noisy round hits both
            return statistics.median(x / y for x, y in zip(figures[a], figures[b], strict=True))

        ratio = {"bench/run_batch": paired("bench", "run_batch"),
                 "bench/run_many": paired("bench", "run_many"),
                 # throughput, best round against best round: a round in which the other core's load took
                 # the stream workers' CPU slows whichever contender ran then, and the paired median of
                 # 7 rounds still fell to 0.62 under a load of 4 on 2 cores
                 "bench rate/run_batch rate": max(rates["bench"]) / max(rates["run_batch"]),
                 "bench --profile/bench": paired("bench --profile", "bench")}
        print({k: round(v, 1) for k, v in us.items()}, {k: round(v) for k, v in rps.items()}, ratio)
    # the lean pass is run_batch(times=) plus two clock reads per request: measured 0.6-1.3x
    # run_batch's host CPU on a loaded 2-core machine, 0.30-0.48x run_many's.  Going back through
    # run_many (1.6-3.3x run_batch here) puts bench/run_many near 1, which the first bound catches.
    assert ratio["bench/run_many"] <= 0.7, (ratio, us)
    assert ratio["bench/run_batch"] <= 1.5, (ratio, us)
    assert ratio["bench rate/run_batch rate"] >= 0.7, (ratio, rps)
    assert ratio["bench --profile/bench"] > 1, (ratio, us)
    # without profiling nothing is timed per step, and the figures say so
    assert lean["breakdown"]["measured"] is False and lean["device_time"]["ms_per_request"] == {}
    assert lean["latency_ms"]["count"] == REQUESTS and lean["latency_ms"]["min"] > 0
    assert timed["breakdown"]["measured"] is True
    assert timed["breakdown"]["per_request"]["compute"]["m0"]["count"] == REQUESTS


def test_the_lean_pass_times_requests_as_the_counted_one_does(tmp_path):
    # one model of 2 ms at depth 4: every request waits for the 3 ahead of it, 8 ms from submit to result
    g = sim.Graph("slow")
    g.output("y", g.relu(g.input("x", "float32", (-1, WIDTH))))
    path = g.save(str(tmp_path / "slow.om"), batch_sizes=(1,), latency_us=2000)
    pool = [{"x": np.full((1, WIDTH), float(i), np.float32)} for i in range(4)]
    p50 = {}
    for profile in (False, True):
        pipe = ae.Pipeline(device=0)
        pipe.output("y", pipe.model(path, pipe.input("x", "float32", (-1, WIDTH)), name="slow"))
        with pipe.compile(depth=4, profile=profile) as engine:
            fig = measure.run_bench(engine, pool, 1, 0.0, requests=40, warmup=4)
        lat = fig["latency_ms"]
        assert lat["count"] == 40 and lat["min"] >= 2.0
        p50[profile] = lat["p50"]
    assert 8.0 * 0.95 <= p50[False] <= 8.0 * 1.25, p50
    assert p50[False] == pytest.approx(p50[True], rel=0.15), p50
