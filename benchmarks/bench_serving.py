"""Serving benchmarks: many callers of one engine, the dynamic batcher, host
cost per request, Ctrl-C.  Every figure is a ratio measured side by side in
one run (the machines are shared and noisy).

Run:  python -m pytest benchmarks/bench_serving.py -o python_files='bench_*.py' --benchmark-only -q -s

* concurrent callers: the 2 / 3 / 1 ms chain at depth 8; throughput of 8
  threads calling run() and of 500 concurrent run_async tasks, against
  run_batch's.  Target: >= 0.95 each.
* batcher: one model of 2 ms + 0.05 ms per row, gears 1..32, 64 concurrent
  callers of one row each (closed loop); throughput with max_delay_ms=2
  against without batching, and the p99 latency against max_delay_ms + 2 x
  the device time of a full batch.  Targets: >= 5 x; p99 within the bound.
  The p99 is the engine's own (admitted to result, from stats()); the
  clients' p99 and the collector's longest pause are given beside it.
* host cost: zero-latency 3-model chain; the process CPU time (every thread)
  per request through submit(), against run_batch's.  Target: <= 3.
* Ctrl-C: time from SIGINT to KeyboardInterrupt during a long run_batch (in
  a child process), and the next result is checked.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import asyncio
import gc
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _report import report  # noqa: E402
from bench_executor import BATCH, WIDTH, chain_engine, dense_model  # noqa: E402

import ascend_engine as ae  # noqa: E402
from ascend_engine import sim  # noqa: E402


def throughput_run_batch(engine, n):
    x = np.ones((n * BATCH, WIDTH), np.float32)
    t0 = time.perf_counter()
    engine.run_batch({"x": x}, batch_size=BATCH)
    return n / (time.perf_counter() - t0)


def throughput_threads(engine, n, threads=8):
    x = np.ones((BATCH, WIDTH), np.float32)

    def worker():
        for _ in range(n // threads):
            engine.run({"x": x})

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return (n // threads * threads) / (time.perf_counter() - t0)


def throughput_async(engine, n):
    x = np.ones((BATCH, WIDTH), np.float32)

    async def main():
        await asyncio.gather(*(engine.run_async({"x": x}) for _ in range(n)))

    t0 = time.perf_counter()
    asyncio.run(main())
    return n / (time.perf_counter() - t0)


def test_concurrent_callers(benchmark, tmp_path):
    paths = [dense_model(tmp_path / f"c{i}.om", 30 + i, latency_us=lat)
             for i, lat in enumerate((2000, 3000, 1000))]
    rounds = 3
    batch, threads, tasks = [], [], []
    with chain_engine(paths, depth=8) as engine:
        throughput_run_batch(engine, 20)     # warm-up
        throughput_async(engine, 50)
        for _ in range(rounds):            # interleaved, so a noisy moment hits all three
            batch.append(throughput_run_batch(engine, 400))
            threads.append(throughput_threads(engine, 400))
            tasks.append(throughput_async(engine, 500))
        benchmark.pedantic(throughput_threads, args=(engine, 80), rounds=3, iterations=1)
    b, t, a = (statistics.median(v) for v in (batch, threads, tasks))
    report(benchmark, "concurrent callers, models of 2 / 3 / 1 ms, depth 8", {
        "run_batch_req_s": b, "threads8_run_req_s": t, "async500_req_s": a,
        "threads_over_run_batch": t / b, "async_over_run_batch": a / b, "bound_req_s": 1 / 3e-3,
    })


def batcher_model(path):
    g = sim.Graph("batcher")
    x = g.input("x", "float32", (-1, WIDTH))
    w = np.eye(WIDTH, dtype=np.float32)
    g.output("y", g.matmul(x, g.const(w)))
    g.save(str(path), batch_sizes=(1, 2, 4, 8, 16, 32), latency_us=2000, latency_per_item_us=50)
    return str(path)


def closed_loop(engine, callers, per_caller, gc_pauses=None):
    """``callers`` asyncio tasks, each sending one row after its last answer; returns (req/s, latencies).
    With a list for ``gc_pauses``, the collector's pauses during the run (ms) are appended to it."""
    x = np.ones((1, WIDTH), np.float32)
    latencies = []
    started = []

    def on_gc(phase, info):
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            gc_pauses.append((time.perf_counter() - started.pop()) * 1e3)

    async def caller():
        for _ in range(per_caller):
            t0 = time.perf_counter()
            await engine.run_async({"x": x})
            latencies.append(time.perf_counter() - t0)

    async def main():
        await asyncio.gather(*(caller() for _ in range(callers)))

    if gc_pauses is not None:
        gc.callbacks.append(on_gc)
    try:
        t0 = time.perf_counter()
        asyncio.run(main())
        elapsed = time.perf_counter() - t0
    finally:
        if gc_pauses is not None:
            gc.callbacks.remove(on_gc)
    return callers * per_caller / elapsed, latencies


def test_dynamic_batcher(benchmark, tmp_path):
    path = batcher_model(tmp_path / "batcher.om")
    pipe = ae.Pipeline(0)
    pipe.output("y", pipe.model(path, pipe.input("x", "float32", (-1, WIDTH)), name="m"))
    callers = 64
    with pipe.compile(depth=8) as plain, pipe.compile(depth=8, max_delay_ms=2) as warm:
        closed_loop(plain, callers, 2)
        closed_loop(warm, callers, 2)
        plain_rps, _ = closed_loop(plain, callers, 10)
    # Measured on fresh engines, so that their stats() hold the timed calls
    # only; three rounds, the median of each figure.  The engine's own latency
    # (admitted to result, stats()["serving"]["latency_ms"]) is what the
    # target bounds; the clients' latency adds the asyncio loop resuming 64
    # tasks one after another on 2 cores.  The collector's longest pause in
    # the round is given, since a full collection stalls every thread.
    rounds = []
    for _ in range(3):
        with pipe.compile(depth=8, max_delay_ms=2) as batched:
            pauses = []
            batched_rps, lat = closed_loop(batched, callers, 60, pauses)
            s = batched.stats()["serving"]
        sizes = s["batch_rows"]
        rounds.append({
            "with_req_s": batched_rps, "engine_p99_ms": s["latency_ms"]["p99"],
            "engine_p50_ms": s["latency_ms"]["p50"], "client_p99_ms": float(np.percentile(lat, 99)) * 1e3,
            "dispatch_wait_p99_ms": s["dispatch_wait_ms"]["p99"],
            "longest_gc_pause_ms": max(pauses, default=0.0),
            "mean_batch_rows": sum(r * c for r, c in sizes.items()) / sum(sizes.values()),
        })
    figures = {"without_req_s": plain_rps}
    figures.update({k: statistics.median(r[k] for r in rounds) for k in rounds[0]})
    figures["with_over_without"] = figures["with_req_s"] / plain_rps
    with pipe.compile(depth=8, max_delay_ms=2) as batched:
        benchmark.pedantic(closed_loop, args=(batched, callers, 5), rounds=3, iterations=1)
    bound = 2 + 2 * (2 + 0.05 * 32)
    figures.update({"p99_bound_ms": bound, "engine_p99_over_bound": figures["engine_p99_ms"] / bound,
                    "client_p99_over_bound": figures["client_p99_ms"] / bound,
                    "engine_p99_each_round_ms": " ".join(f"{r['engine_p99_ms']:.2f}" for r in rounds)})
    report(benchmark, "dynamic batcher: 64 callers of one row, 2 ms + 0.05 ms/row, gears 1..32", figures)


def test_host_cost_per_request(benchmark, tmp_path):
    paths = [dense_model(tmp_path / f"h{i}.om", 40 + i) for i in range(3)]
    n, rounds = 3000, 5
    x = np.ones((n * BATCH, WIDTH), np.float32)
    one = np.ones((BATCH, WIDTH), np.float32)
    with chain_engine(paths, depth=8) as engine:
        def batch_round():
            c0 = time.process_time()
            engine.run_batch({"x": x}, batch_size=BATCH)
            return (time.process_time() - c0) / n

        def submit_round():
            c0 = time.process_time()
            futures = [engine.submit({"x": one}) for _ in range(n)]
            for f in futures:
                f.result()
            return (time.process_time() - c0) / n

        batch_round()
        submit_round()
        a, b = [], []
        for _ in range(rounds):
            a.append(batch_round())
            b.append(submit_round())
        benchmark.pedantic(submit_round, rounds=2, iterations=1)
    a_us, b_us = statistics.median(a) * 1e6, statistics.median(b) * 1e6
    report(benchmark, "host CPU per request, every thread of the process (zero-latency 3-model chain)", {
        "run_batch_us": a_us, "submit_us": b_us, "submit_over_run_batch": b_us / a_us,
    })


SIGINT_CHILD = """
import os, signal, threading, time
import numpy as np
import ascend_engine as ae
pipe = ae.Pipeline(0)
pipe.output("y", pipe.model({path!r}, pipe.input("x", "float32", (-1, 16)), name="m"))
engine = pipe.compile(depth=8)
x = np.ones((4 * 4000, 16), np.float32)
probe = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
before = engine.run({{"x": probe}})["y"]
delays = []
for k in range(5):
    sent = []
    fire = lambda: (sent.append(time.perf_counter()), os.kill(os.getpid(), signal.SIGINT))  # noqa: E731
    threading.Timer(0.3, fire).start()
    try:
        engine.run_batch({{"x": x}}, batch_size=4)
    except KeyboardInterrupt:
        delays.append((time.perf_counter() - sent[0]) * 1e3)
after = engine.run({{"x": probe}})["y"]
print(" ".join(f"{{d:.2f}}" for d in delays), bool(np.array_equal(before, after)))
"""


def test_ctrl_c_latency(benchmark, tmp_path):
    path = dense_model(tmp_path / "sigint.om", 50, latency_us=2000)
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim")

    def run():
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(SIGINT_CHILD.format(path=path))],
                             capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        *delays, ok = out.stdout.split()
        return [float(d) for d in delays], ok == "True"

    delays, ok = benchmark.pedantic(run, rounds=1, iterations=1)
    report(benchmark, "Ctrl-C during run_batch (2 ms requests, depth 8)", {
        "sigint_to_keyboardinterrupt_ms_median": statistics.median(delays),
        "sigint_to_keyboardinterrupt_ms_max": max(delays), "next_result_ok": ok,
    })
