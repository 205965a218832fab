"""Ray replicas on 1, 2 and 4 simulated NPUs: throughput ratios measured side by side in one run.

Run:  python -m pytest benchmarks/bench_ray.py -o python_files='bench_*.py' --benchmark-only -q -s

A local Ray cluster (loopback, ``num_cpus=2``, ``resources={"NPU": 4}``) runs
``ascend_engine.ray.deploy`` of a device-bound pipeline: two models of
DEVICE_MS[0] and DEVICE_MS[1] ms of simulated device time per execution
(whatever the batch), chained.  One replica's bound is one request per
max(DEVICE_MS) ms; the device times are long enough that the host work per
request (the engine's enqueue and copies, Ray's calls, a fraction of a
millisecond) stays far below what the machine's 2 cores give.

* run_batch: REQUESTS requests of BATCH rows shared over the replicas, one
  Ray call per replica; throughput with 2 and 4 replicas over 1 replica.
  Target: >= 1.9 and >= 3.6.
* submit: the same requests sent one Ray call each (a Future per request),
  with every request in flight at once; the same ratios.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import os
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from helpers import raycluster  # noqa: E402  (before Ray is imported: loopback, no usage reports)

pytest.importorskip("ray", reason="Ray is not installed: pip install 'ascend-engine[ray]'")

from ascend_engine import sim  # noqa: E402
from ascend_engine.ray import deploy  # noqa: E402

DEVICE_MS = (5, 10)
WIDTH = 16
BATCH = 8
REQUESTS = 240
ROUNDS = 3


@pytest.fixture(scope="module")
def cluster():
    ray = raycluster.start(npus=4, num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray-bench")
    rng = np.random.default_rng(0)
    for i, ms in enumerate(DEVICE_MS):
        g = sim.Graph(f"m{i}")
        x = g.input("x", "float32", (None, WIDTH))
        w = (rng.standard_normal((WIDTH, WIDTH)) / 4).astype(np.float32)
        g.output("y", g.relu(g.matmul(x, g.const(w))))
        g.save(str(folder / f"m{i}.om"), batch_sizes=(1, 2, 4, 8), latency_us=ms * 1000)
    path = folder / "pipeline.yaml"
    path.write_text(
        f"inputs: {{x: {{dtype: float32, shape: [-1, {WIDTH}]}}}}\n"
        "models:\n"
        "  - {name: m0, path: m0.om, inputs: [x]}\n"
        "  - {name: m1, path: m1.om, inputs: [m0]}\n"
        "outputs: {y: m1}\n"
    )
    return path


def replica_cpu_seconds(replicas):
    """CPU seconds used so far by the replicas' processes (all their threads)."""
    import psutil  # comes with Ray

    return sum(sum(psutil.Process(info["pid"]).cpu_times()[:2]) for info in replicas.replicas)


def measure(replicas, feeds):
    """Best-of-ROUNDS requests/s for run_batch and for one submit per request,
    and the replicas' CPU milliseconds per request during run_batch."""
    replicas.run_batch(feeds, batch_size=BATCH)  # warm-up: every replica, every gear used
    batch_times, submit_times = [], []
    cpu = replica_cpu_seconds(replicas)
    for _ in range(ROUNDS):
        t = time.perf_counter()
        replicas.run_batch(feeds, batch_size=BATCH)
        batch_times.append(time.perf_counter() - t)
    cpu_ms = (replica_cpu_seconds(replicas) - cpu) * 1000 / (ROUNDS * REQUESTS)
    singles = [{"x": feeds["x"][k * BATCH:(k + 1) * BATCH]} for k in range(REQUESTS)]
    for _ in range(ROUNDS):
        t = time.perf_counter()
        futures = [replicas.submit(f) for f in singles]
        for f in futures:
            f.result()
        submit_times.append(time.perf_counter() - t)
    return REQUESTS / min(batch_times), REQUESTS / min(submit_times), cpu_ms


def test_ray_replica_scaling(benchmark, cluster, spec):
    feeds = {"x": np.random.default_rng(1).standard_normal((REQUESTS * BATCH, WIDTH)).astype(np.float32)}
    bound = 1000.0 / max(DEVICE_MS)
    figures, throughput = {}, {}
    for n in (1, 2, 4):
        with deploy(spec, replicas=n, npus_per_replica=1, depth=4) as replicas:
            batch_rps, submit_rps, cpu_ms = measure(replicas, feeds)
            if n == 4:  # the benchmark's own table times the 4-replica run_batch
                benchmark.pedantic(replicas.run_batch, args=(feeds,), kwargs={"batch_size": BATCH},
                                   rounds=ROUNDS, iterations=1)
        throughput[n] = (batch_rps, submit_rps)
        figures[f"run_batch req/s, {n} replica(s)"] = batch_rps
        figures[f"submit req/s, {n} replica(s)"] = submit_rps
        figures[f"replica CPU ms per request (run_batch), {n} replica(s)"] = cpu_ms
    figures["one replica's bound req/s (1 / max device ms)"] = bound
    figures["run_batch: 1 replica / bound"] = throughput[1][0] / bound
    for n in (2, 4):
        figures[f"run_batch: {n} / 1 replica"] = throughput[n][0] / throughput[1][0]
        figures[f"submit: {n} / 1 replica"] = throughput[n][1] / throughput[1][1]
    benchmark.extra_info.update(figures)
    print(f"\nRay replicas, device-bound chain of {DEVICE_MS} ms, {REQUESTS} requests of {BATCH} rows")
    for k, v in figures.items():
        print(f"  {k}: {v:.4g}")
