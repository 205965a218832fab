"""Host cost per request: Engine.run_batch against hand-written loops, side by side.

Run:  python -m pytest benchmarks/bench_host_cost.py -o python_files='bench_*.py' --benchmark-only -q -s

Chains of 1, 3, 4, 16 and 32 static (1, F) float32 simulator models with no
device time, depth 8, one stream per model plus a copy-in and a copy-out
stream.  Each round measures, one after the other in this process:

* the engine: ``time.thread_time()`` around ``run_batch`` of 4,000 requests
  of one row;
* the C loop (benchmarks/native/chain_loop.c): the calls of issue 27 per
  request -- wait for the slot's previous request, copy in, per model wait /
  execute / record, copy out, record done -- timed with the thread CPU clock;
* the same C loop waiting the engine's way (one blocking wait per half ring,
  ``ring_wait``), to show what the waiting strategy alone changes;
* the same calls from Python through ctypes (a quarter of the requests).

Figures are the best of ROUNDS interleaved rounds (a noisy moment hits every
contender of its round).  Targets: engine / C loop <= 1.1 for every chain,
ctypes / engine >= 5; per-model cost (the slope from 1 to 32 models) within
10 % of the loop's.  Ratios are recorded in extra_info and printed; none is
asserted.
"""

import os
import resource
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _loops import CtypesChain, build_c_loop, run_c_loop  # noqa: E402
from _report import report  # noqa: E402

import ascend_engine as ae  # noqa: E402
from ascend_engine import sim  # noqa: E402

WIDTH = 16
DEPTH = 8
REQUESTS = 4000
ROUNDS = int(os.environ.get("HOST_COST_ROUNDS", "5"))
CHAINS = (1, 3, 4, 16, 32)


def static_model(path, seed):
    """A (1, WIDTH) float32 model: relu(x @ w), no batch gears, no device time."""
    rng = np.random.default_rng(seed)
    g = sim.Graph(f"static{seed}")
    x = g.input("x", "float32", (1, WIDTH))
    w = (rng.standard_normal((WIDTH, WIDTH)) / 4).astype(np.float32)
    g.output("y", g.relu(g.matmul(x, g.const(w))))
    g.save(str(path))
    return str(path)


def chain_engine(paths):
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (1, WIDTH))
    for i, p in enumerate(paths):
        h = pipe.model(p, h, name=f"m{i}")
    pipe.output("y", h)
    return pipe.compile(depth=DEPTH)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("static")
    return [static_model(folder / f"s{i}.om", i) for i in range(max(CHAINS))]


@pytest.fixture(scope="module")
def c_loop(tmp_path_factory):
    return build_c_loop(tmp_path_factory.mktemp("native"))


def engine_round(engine, x):
    t0 = time.thread_time()
    engine.run_batch({"x": x}, batch_size=1)
    return (time.thread_time() - t0) / len(x)


def with_system_time(run, n):
    """(thread CPU seconds per request, the kernel's share of it) of run();
    the kernel's part is mostly the simulator's futex wake-ups of its stream
    workers, one per enqueue that finds a worker asleep."""
    before = resource.getrusage(resource.RUSAGE_THREAD)
    per_request = run()
    after = resource.getrusage(resource.RUSAGE_THREAD)
    system = (after.ru_stime - before.ru_stime) / n
    return per_request, system / per_request if per_request else 0.0


def measure_chain(c_loop, paths):
    """Best-of-ROUNDS (seconds per request, kernel share) of each contender for one chain."""
    x = np.random.default_rng(0).standard_normal((REQUESTS, WIDTH)).astype(np.float32)
    rounds = dict(engine=[], c_loop=[], c_loop_ring=[], ctypes=[])
    with chain_engine(paths) as engine, CtypesChain(paths, DEPTH, 1, WIDTH * 4, WIDTH * 4) as py:
        engine_round(engine, x[:500])   # warm-up: every contender's first requests
        run_c_loop(c_loop, paths, DEPTH, 500, 1)
        py.run(100)
        for _ in range(ROUNDS):
            rounds["c_loop"].append(with_system_time(lambda: run_c_loop(c_loop, paths, DEPTH, REQUESTS, 1),
                                                     REQUESTS))
            rounds["engine"].append(with_system_time(lambda: engine_round(engine, x), REQUESTS))
            rounds["c_loop_ring"].append(with_system_time(
                lambda: run_c_loop(c_loop, paths, DEPTH, REQUESTS, 1, ring_wait=True), REQUESTS))
            rounds["ctypes"].append(with_system_time(lambda: py.run(REQUESTS // 4), REQUESTS // 4))
    return {k: min(v) for k, v in rounds.items()}


def test_host_cost_per_request(benchmark, models, c_loop):
    device = ae.Device(0)   # the loops run on this thread's current context: keep it alive
    device.make_current()
    per_chain = {n: measure_chain(c_loop, models[:n]) for n in CHAINS}
    figures = {}
    for n, best in per_chain.items():
        t = {k: v[0] for k, v in best.items()}
        figures[f"engine_system_share_{n}"] = best["engine"][1]
        figures[f"c_loop_system_share_{n}"] = best["c_loop"][1]
        figures[f"engine_us_{n}"] = t["engine"] * 1e6
        figures[f"c_loop_us_{n}"] = t["c_loop"] * 1e6
        figures[f"c_loop_ring_us_{n}"] = t["c_loop_ring"] * 1e6
        figures[f"ctypes_us_{n}"] = t["ctypes"] * 1e6
        figures[f"engine_over_c_loop_{n}"] = t["engine"] / t["c_loop"]
        figures[f"engine_over_c_loop_ring_{n}"] = t["engine"] / t["c_loop_ring"]
        figures[f"ctypes_over_engine_{n}"] = t["ctypes"] / t["engine"]
    lo, hi = min(CHAINS), max(CHAINS)
    for who in ("engine", "c_loop", "c_loop_ring"):
        slope = (per_chain[hi][who][0] - per_chain[lo][who][0]) / (hi - lo)
        figures[f"{who}_us_per_model"] = slope * 1e6
    figures["engine_over_c_loop_per_model"] = figures["engine_us_per_model"] / figures["c_loop_us_per_model"]
    with chain_engine(models[:3]) as engine:
        x = np.zeros((REQUESTS, WIDTH), np.float32)
        benchmark.pedantic(engine_round, args=(engine, x), rounds=3, iterations=1)
    report(benchmark, f"host CPU per request, static (1, {WIDTH}) models, depth {DEPTH}, best of {ROUNDS}",
           figures)
