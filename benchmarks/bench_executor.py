"""Executor benchmarks: every figure a ratio measured side by side in one run.

Run:  python -m pytest benchmarks/bench_executor.py -o python_files='bench_*.py' --benchmark-only -q -s

* host overhead: a 3-model chain of tiny zero-latency simulator models; the
  calling thread's CPU time per request (time.thread_time / the thread CPU
  clock) for (a) Engine.run_batch, (b) the same AscendCL call sequence from
  a Python loop through ctypes, (c) the same sequence from a C loop compiled
  for the benchmark (native/chain_loop.c).  Targets: a <= 1.25 c, b >= 5 a.
* pipeline efficiency: models with device latencies 2, 3, 1 ms; throughput of
  run_batch against the bound 1 / 3 ms, and against streams="single".
  Target: >= 0.95 of the bound.
* instances: the same 2 / 3 / 1 ms chain with the 3 ms model loaded twice
  (instances=2, one copy of its weights): throughput against the new bound
  1 / max(2, 3 / 2, 1) ms = 1 / 2 ms, beside the one-instance run.
  Target: >= 0.95 of the bound.
* GIL: a pure-Python thread's speed while run_batch runs, against its solo
  speed.  Target: >= 0.90.
* memory: device memory and process RSS over 100 000 requests after warm-up.
  Target: growth < 1 MiB.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import ctypes
import os
import statistics
import sys
import threading
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, HERE)

from _loops import CtypesChain, build_c_loop, run_c_loop  # noqa: E402
from _report import report  # noqa: E402
from helpers import simlib  # noqa: E402

import ascend_engine as ae  # noqa: E402
from ascend_engine import sim  # noqa: E402

WIDTH = 16
BATCH = 4
GEARS = (1, 2, 4, 8)


def dense_model(path, seed, latency_us=0):
    rng = np.random.default_rng(seed)
    g = sim.Graph(f"bench{seed}")
    x = g.input("x", "float32", (-1, WIDTH))
    w = (rng.standard_normal((WIDTH, WIDTH)) / 4).astype(np.float32)
    g.output("y", g.relu(g.matmul(x, g.const(w))))
    g.save(str(path), batch_sizes=GEARS, latency_us=latency_us)
    return str(path)


def chain_engine(paths, depth, instances=None, devices=None, **kw):
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, p in enumerate(paths):
        h = pipe.model(p, h, name=f"m{i}", instances=instances[i] if instances else 1,
                       device=devices[i] if devices else None)
    pipe.output("y", h)
    return pipe.compile(depth=depth, **kw)


# ---- host overhead ------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    return [dense_model(folder / f"t{i}.om", i) for i in range(3)]


@pytest.fixture(scope="module")
def c_loop(tmp_path_factory):
    """The hand-written C loop, compiled against our acl.h and the simulator."""
    return build_c_loop(tmp_path_factory.mktemp("native"))


def test_host_overhead(benchmark, tiny_chain, c_loop):
    depth, n, rounds = 8, 4000, 9
    engine = chain_engine(tiny_chain, depth)
    dev = ae.Device(0)
    dev.make_current()
    py = CtypesChain(tiny_chain, depth, BATCH, WIDTH * 4, WIDTH * 4, ring_wait=True)
    x = np.random.default_rng(0).standard_normal((n * BATCH, WIDTH)).astype(np.float32)

    def engine_round():
        t0 = time.thread_time()
        engine.run_batch({"x": x}, batch_size=BATCH)
        return (time.thread_time() - t0) / n

    engine_round()
    run_c_loop(c_loop, tiny_chain, depth, 500, BATCH, ring_wait=True)
    py.run(200)
    a, b, c = [], [], []
    for _ in range(rounds):   # interleaved, so a noisy moment hits all three
        c.append(run_c_loop(c_loop, tiny_chain, depth, n, BATCH, ring_wait=True))
        a.append(engine_round())
        b.append(py.run(n // 4))
    benchmark.pedantic(engine_round, rounds=3, iterations=1)
    a_us, b_us, c_us = (statistics.median(v) * 1e6 for v in (a, b, c))
    report(benchmark, "host CPU per request (3-model chain, zero device latency)", {
        "engine_us": a_us, "ctypes_loop_us": b_us, "c_loop_us": c_us,
        "engine_over_c": a_us / c_us, "ctypes_over_engine": b_us / a_us,
    })
    engine.close()
    py.close()


# ---- pipeline efficiency ---------------------------------------------------------


def test_pipeline_efficiency(benchmark, tmp_path):
    paths = [dense_model(tmp_path / f"lat{i}.om", 10 + i, latency_us=lat)
             for i, lat in enumerate((2000, 3000, 1000))]
    n = 300
    x = np.ones((n * BATCH, WIDTH), np.float32)
    results = {}
    for label, kw in (("pipelined", dict(depth=8)), ("single_stream", dict(depth=8, streams="single")),
                      ("depth1", dict(depth=1))):
        with chain_engine(paths, **kw) as engine:
            engine.run_batch({"x": x[: 8 * BATCH]}, batch_size=BATCH)   # warm-up
            t0 = time.perf_counter()
            engine.run_batch({"x": x}, batch_size=BATCH)
            results[label] = n / (time.perf_counter() - t0)
    with chain_engine(paths, depth=8) as engine:
        benchmark.pedantic(engine.run_batch, args=({"x": x[: 40 * BATCH]},), kwargs={"batch_size": BATCH},
                           rounds=3, iterations=1)
    bound = 1 / 3e-3
    report(benchmark, "throughput, models of 2 / 3 / 1 ms", {
        "pipelined_req_s": results["pipelined"], "bound_req_s": bound,
        "pipelined_over_bound": results["pipelined"] / bound,
        "single_stream_req_s": results["single_stream"], "depth1_req_s": results["depth1"],
        "pipelined_over_single": results["pipelined"] / results["single_stream"],
    })


def chain_2_3_1(tmp_path, seed):
    """The 2 / 3 / 1 ms chain of models: (latencies in ms, paths)."""
    latencies_ms = (2, 3, 1)
    return latencies_ms, [dense_model(tmp_path / f"c{seed}-{i}.om", seed + i, latency_us=1000 * lat)
                          for i, lat in enumerate(latencies_ms)]


def chain_rate(paths, requests, before=None, **chain_kw):
    """Requests/s of run_batch through the chain, after a warm-up; ``before``
    runs first (e.g. to change the simulator's links)."""
    if before:
        before()
    x = np.ones((requests * BATCH, WIDTH), np.float32)
    with chain_engine(paths, depth=8, **chain_kw) as engine:
        engine.run_batch({"x": x[: 8 * BATCH]}, batch_size=BATCH)   # warm-up
        t0 = time.perf_counter()
        engine.run_batch({"x": x}, batch_size=BATCH)
        return requests / (time.perf_counter() - t0)


def time_chain(benchmark, paths, **chain_kw):
    """pytest-benchmark's own rounds of the chain as compiled with ``chain_kw``."""
    x = np.ones((40 * BATCH, WIDTH), np.float32)
    with chain_engine(paths, depth=8, **chain_kw) as engine:
        benchmark.pedantic(engine.run_batch, args=({"x": x},), kwargs={"batch_size": BATCH}, rounds=3,
                           iterations=1)


def test_instances_lift_the_bound(benchmark, tmp_path):
    latencies_ms, paths = chain_2_3_1(tmp_path, 20)
    one = chain_rate(paths, 400, instances=(1, 1, 1))
    two = chain_rate(paths, 400, instances=(1, 2, 1))
    time_chain(benchmark, paths, instances=(1, 2, 1))
    # 1 / max over nodes of (device time / instances)
    bound = 1 / (max(lat / k for lat, k in zip(latencies_ms, (1, 2, 1), strict=True)) * 1e-3)
    report(benchmark, "throughput, models of 2 / 3 / 1 ms, the 3 ms one with instances=2", {
        "instances_2_req_s": two, "bound_req_s": bound, "instances_2_over_bound": two / bound,
        "one_instance_req_s": one, "instances_2_over_one_instance": two / one,
    })


@pytest.fixture
def no_p2p():
    """Remove simulated peer links (aeSimSetNoP2P); every pair linked again afterwards."""
    lib = simlib.load()
    lib.aeSimSetNoP2P.argtypes = [ctypes.c_char_p]
    yield lambda spec: lib.aeSimSetNoP2P(spec.encode())
    lib.aeSimSetNoP2P(None)


def test_a_node_on_another_device(benchmark, tmp_path, no_p2p):
    """The 2 / 3 / 1 ms chain with the 3 ms model on device 1: a copy to device
    1 and one back per request (peer to peer, and through the host) must not
    cost the pipeline its bound of 1 / 3 ms."""
    latencies_ms, paths = chain_2_3_1(tmp_path, 40)
    one_device = chain_rate(paths, 300)
    peer = chain_rate(paths, 300, devices=(0, 1, 0))
    time_chain(benchmark, paths, devices=(0, 1, 0))
    bridge = chain_rate(paths, 300, before=lambda: no_p2p("all"), devices=(0, 1, 0))
    bound = 1 / (max(latencies_ms) * 1e-3)
    report(benchmark, "throughput, models of 2 / 3 / 1 ms, the 3 ms one on device 1", {
        "device1_peer_req_s": peer, "bound_req_s": bound, "device1_peer_over_bound": peer / bound,
        "device1_host_bridge_over_bound": bridge / bound, "device1_peer_over_one_device": peer / one_device,
    })


# ---- GIL -------------------------------------------------------------------------------


def test_gil_released_during_run_batch(benchmark, tmp_path):
    paths = [dense_model(tmp_path / f"g{i}.om", 20 + i, latency_us=lat)
             for i, lat in enumerate((1000, 1500, 500))]
    x = np.ones((200 * BATCH, WIDTH), np.float32)

    def spin(stop, counter):
        k = 0
        while not stop.is_set():
            k += 1
        counter.append(k)

    def python_rate(seconds=None, during=None):
        stop, counter = threading.Event(), []
        t = threading.Thread(target=spin, args=(stop, counter))
        t0 = time.perf_counter()
        t.start()
        if during is not None:
            during()
        else:
            time.sleep(seconds)
        stop.set()
        t.join()
        return counter[0] / (time.perf_counter() - t0)

    with chain_engine(paths, depth=8) as engine:
        engine.run_batch({"x": x[:32]}, batch_size=BATCH)
        ratios = []
        for _ in range(3):
            solo = python_rate(seconds=0.3)
            busy = python_rate(during=lambda: engine.run_batch({"x": x}, batch_size=BATCH))
            ratios.append(busy / solo)
        benchmark.pedantic(engine.run_batch, args=({"x": x[:80]},), kwargs={"batch_size": BATCH},
                           rounds=2, iterations=1)
    report(benchmark, "pure-Python thread speed while run_batch runs", {
        "python_speed_ratio": statistics.median(ratios),
    })


# ---- memory ----------------------------------------------------------------------------


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_flat_over_many_requests(benchmark, tiny_chain):
    n = 100_000
    x = np.ones((n, WIDTH), np.float32)
    with ae.Device(0) as dev, chain_engine(tiny_chain, depth=8) as engine:
        # warm-up at full size, twice: the allocator settles on where the
        # output arrays (6.4 MB each) live before anything is measured
        for _ in range(2):
            engine.run_batch({"x": x}, batch_size=1)
        dev_before, rss_before = dev.memory_info().free, rss_bytes()

        def one_pass():
            engine.run_batch({"x": x}, batch_size=1)   # result dropped at once

        benchmark.pedantic(one_pass, rounds=1, iterations=1)
        dev_after, rss_after = dev.memory_info().free, rss_bytes()
    report(benchmark, f"memory over {n} requests after warm-up", {
        "device_growth_bytes": dev_before - dev_after,
        "rss_growth_bytes": rss_after - rss_before,
    })


# ---- data parallelism -----------------------------------------------------------------


def test_replicas_scale_throughput(benchmark, tmp_path):
    paths = [dense_model(tmp_path / f"r{i}.om", 30 + i, latency_us=lat)
             for i, lat in enumerate((1000, 2000))]
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, p in enumerate(paths):
        h = pipe.model(p, h, name=f"m{i}")
    pipe.output("y", h)
    x = np.ones((400 * BATCH, WIDTH), np.float32)
    rates = {}
    for n in (1, 2, 4):
        with pipe.compile_replicas(list(range(n)), depth=8) as reps:
            reps.run_batch({"x": x[: 16 * BATCH]}, batch_size=BATCH)
            t0 = time.perf_counter()
            reps.run_batch({"x": x}, batch_size=BATCH)
            rates[n] = 400 / (time.perf_counter() - t0)
    with pipe.compile_replicas([0, 1], depth=8) as reps:
        benchmark.pedantic(reps.run_batch, args=({"x": x[: 40 * BATCH]},), kwargs={"batch_size": BATCH},
                           rounds=2, iterations=1)
    report(benchmark, "data parallel: replicas on simulated devices (models of 1 / 2 ms)", {
        "one_device_req_s": rates[1], "two_devices_over_one": rates[2] / rates[1],
        "four_devices_over_one": rates[4] / rates[1],
    })
