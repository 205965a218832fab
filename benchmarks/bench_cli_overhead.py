"""The bench command's own cost: what ``ascend-engine bench`` adds to the engine call it times.

Run:  python -m pytest benchmarks/bench_cli_overhead.py -o python_files='bench_*.py' --benchmark-only -q -s

* host cost: a 3-model chain of tiny zero-latency simulator models, where the
  host is all there is; the calling thread's CPU time per request of
  ``Engine.run_batch`` (plain, and with ``times=``, what the bench's lean pass
  calls), ``Engine.run_many``, the bench's timed pass (profiling off, the
  default) and the same with ``--profile`` (timing events, a ``stats()`` read
  per result), and the hand-written C loop of bench_executor.py (the same
  AscendCL calls from C, waiting the engine's way), interleaved round by round.
* throughput: the 2 / 3 / 1 ms chain at depth 8, where the device sets the
  pace: the bench's requests/s with and without profiling, and run_batch's,
  in the same run.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_executor as executor  # noqa: E402
from _report import report  # noqa: E402
from bench_executor import BATCH, WIDTH, chain_2_3_1, chain_engine, run_c_loop  # noqa: E402

from ascend_engine.bench import measure  # noqa: E402

DEPTH = 8
# the zero-latency chain and the hand-written C loop of bench_executor.py, shared as fixtures
tiny_chain = executor.tiny_chain
c_loop = executor.c_loop


def _pool(n):
    x = np.random.default_rng(0).standard_normal((n * BATCH, WIDTH)).astype(np.float32)
    return x, [{"x": x[i * BATCH:(i + 1) * BATCH].copy()} for i in range(4)]


def _thread_cpu(run, n):
    t0 = time.thread_time()
    run()
    return (time.thread_time() - t0) / n


def test_bench_host_cost(benchmark, tiny_chain, c_loop):
    n, rounds = 2000, 7
    x, pool = _pool(n)
    with chain_engine(tiny_chain, DEPTH) as plain, chain_engine(tiny_chain, DEPTH, profile=True) as profiled:
        def bench(engine):
            fig = measure.run_bench(engine, pool, BATCH, 0.0, requests=n, warmup=0)
            return fig["host"]["thread_cpu_ms_per_request"] / 1e3

        runs = {"run_batch": [], "run_batch times=": [], "run_many": [], "bench": [], "bench --profile": [],
                "c_loop": []}
        times = np.empty((n, 2), np.int64)
        bench(plain)
        bench(profiled)
        for _ in range(rounds):       # interleaved, so a noisy moment hits every figure
            runs["c_loop"].append(run_c_loop(c_loop, tiny_chain, DEPTH, n, BATCH, ring_wait=True))
            runs["run_batch"].append(_thread_cpu(lambda: plain.run_batch({"x": x}, batch_size=BATCH), n))
            runs["run_batch times="].append(_thread_cpu(
                lambda: plain.run_batch({"x": x}, batch_size=BATCH, times=times), n))
            runs["run_many"].append(_thread_cpu(
                lambda: [None for _ in plain.run_many(pool[i % 4] for i in range(n))], n))
            runs["bench"].append(bench(plain))
            runs["bench --profile"].append(bench(profiled))
        benchmark.pedantic(bench, args=(plain,), rounds=3, iterations=1)
    us = {k: statistics.median(v) * 1e6 for k, v in runs.items()}
    report(benchmark, "host CPU per request of the calling thread (3-model chain, zero device latency)", {
        **{f"{k}_us": v for k, v in us.items()},
        "bench_over_run_batch": us["bench"] / us["run_batch"],
        "timed_over_run_batch": us["run_batch times="] / us["run_batch"],
        "bench_over_run_many": us["bench"] / us["run_many"],
        "bench_over_c_loop": us["bench"] / us["c_loop"],
        "profiled_over_bench": us["bench --profile"] / us["bench"],
    })


def test_bench_throughput_on_a_device_bound_chain(benchmark, tmp_path):
    _, paths = chain_2_3_1(tmp_path, 40)
    n, rounds = 300, 3
    x, pool = _pool(n)
    with chain_engine(paths, DEPTH) as plain, chain_engine(paths, DEPTH, profile=True) as profiled:
        def rate(run):
            t0 = time.perf_counter()
            run()
            return n / (time.perf_counter() - t0)

        def bench(engine):
            fig = measure.run_bench(engine, pool, BATCH, 0.0, requests=n, warmup=8)
            return fig["throughput"]["requests_per_s"]

        runs = {"run_batch": [], "bench": [], "bench --profile": []}
        plain.run_batch({"x": x[:8 * BATCH]}, batch_size=BATCH)
        for _ in range(rounds):
            runs["run_batch"].append(rate(lambda: plain.run_batch({"x": x}, batch_size=BATCH)))
            runs["bench"].append(bench(plain))
            runs["bench --profile"].append(bench(profiled))
        benchmark.pedantic(bench, args=(plain,), rounds=1, iterations=1)
    rps = {k: statistics.median(v) for k, v in runs.items()}
    report(benchmark, "requests/s on the 2 / 3 / 1 ms chain at depth 8 (bound 333)", {
        **{f"{k}_per_s": v for k, v in rps.items()},
        "bench_over_run_batch": rps["bench"] / rps["run_batch"],
        "profiled_over_run_batch": rps["bench --profile"] / rps["run_batch"],
    })
