"""``ascend-engine serve`` against the engine in-process: throughput at the same concurrency, and
what the server adds per request.  Every figure is a ratio or a difference measured side by side
in one run; the server runs in a process of its own, the clients in this one.

Run:  python -m pytest benchmarks/bench_serve.py -o python_files='bench_*.py' --benchmark-only -q -s

* throughput: the demo chain (2, 3, 1 ms at depth 8; one row per request), 16 concurrent
  callers: tritonclient's asyncio gRPC client and asyncio HTTP client (binary tensors) against
  the server, over in-process ``run_async`` with 16 tasks.  Target (issue): >= 0.9.
* overhead: one caller, one request at a time: the round trip through the server (gRPC; HTTP
  with JSON and with binary tensors) minus ``run()`` in-process on the same pipeline, in µs,
  and the server process's CPU per request (every thread, from /proc) minus the in-process
  engine's CPU per request.

Nothing is asserted.
"""

import asyncio
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from _report import report  # noqa: E402
from bench_http_stacks import cpu_seconds  # noqa: E402
from helpers.servers import ServerProcess, demo_repository  # noqa: E402

from ascend_engine import spec  # noqa: E402

CONCURRENCY = 16
REQUESTS = 1500
SEQUENTIAL = 300


def in_process_throughput(engine, x):
    async def main():
        async def caller(n):
            for _ in range(n):
                await engine.run_async({"x": x})

        t0 = time.perf_counter()
        await asyncio.gather(*(caller(REQUESTS // CONCURRENCY) for _ in range(CONCURRENCY)))
        return (REQUESTS // CONCURRENCY) * CONCURRENCY / (time.perf_counter() - t0)

    return asyncio.run(main())


def grpc_throughput(address, x):
    import tritonclient.grpc.aio as client_module

    async def main():
        client = client_module.InferenceServerClient(address)
        tensor = client_module.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)

        async def caller(n):
            for _ in range(n):
                await client.infer("demo", [tensor])

        try:
            await caller(20)
            t0 = time.perf_counter()
            await asyncio.gather(*(caller(REQUESTS // CONCURRENCY) for _ in range(CONCURRENCY)))
            return (REQUESTS // CONCURRENCY) * CONCURRENCY / (time.perf_counter() - t0)
        finally:
            await client.close()

    return asyncio.run(main())


def http_throughput(address, x):
    import tritonclient.http.aio as client_module

    async def main():
        client = client_module.InferenceServerClient(address, conn_limit=CONCURRENCY)
        tensor = client_module.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x, binary_data=True)
        out = [client_module.InferRequestedOutput("probs", binary_data=True)]

        async def caller(n):
            for _ in range(n):
                await client.infer("demo", [tensor], outputs=out)

        try:
            await caller(20)
            t0 = time.perf_counter()
            await asyncio.gather(*(caller(REQUESTS // CONCURRENCY) for _ in range(CONCURRENCY)))
            return (REQUESTS // CONCURRENCY) * CONCURRENCY / (time.perf_counter() - t0)
        finally:
            await client.close()

    return asyncio.run(main())


def sequential(call, pid=None):
    """(µs per request, CPU µs per request of ``pid`` or of this process) over SEQUENTIAL calls."""
    for _ in range(20):
        call()
    cpu0 = cpu_seconds(pid) if pid else time.process_time()
    t0 = time.perf_counter()
    for _ in range(SEQUENTIAL):
        call()
    wall = (time.perf_counter() - t0) / SEQUENTIAL * 1e6
    cpu = ((cpu_seconds(pid) if pid else time.process_time()) - cpu0) / SEQUENTIAL * 1e6
    return wall, cpu


def test_serve_against_in_process(benchmark):
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        repo = demo_repository(tmp)
        pipeline, kwargs = spec.load(os.path.join(repo, "demo", "1", "pipeline.yaml"))
        x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
        server = ServerProcess(repo)
        engine = pipeline.compile(**kwargs)
        try:
            def run():
                local = in_process_throughput(engine, x)
                figures["in-process run_async requests/s (16 tasks)"] = local
                figures["serve gRPC aio requests/s (16)"] = grpc_throughput(server.grpc, x)
                figures["serve HTTP aio binary requests/s (16)"] = http_throughput(server.http, x)
                figures["gRPC aio / in-process run_async"] = figures["serve gRPC aio requests/s (16)"] / local
                figures["HTTP aio / in-process run_async"] = (figures["serve HTTP aio binary requests/s (16)"]
                                                              / local)

                local_wall, local_cpu = sequential(lambda: engine.run({"x": x}))
                g = grpcclient.InferenceServerClient(server.grpc)
                h = httpclient.InferenceServerClient(server.http)
                gin = grpcclient.InferInput("x", [1, 64], "FP32")
                gin.set_data_from_numpy(x)
                calls = {"gRPC": lambda: g.infer("demo", [gin])}
                for binary in (False, True):
                    hin = httpclient.InferInput("x", [1, 64], "FP32")
                    hin.set_data_from_numpy(x, binary_data=binary)
                    hout = [httpclient.InferRequestedOutput("probs", binary_data=binary)]
                    calls["HTTP binary" if binary else "HTTP JSON"] = (
                        lambda hin=hin, hout=hout: h.infer("demo", [hin], outputs=hout))
                figures["in-process run() us/request"] = local_wall
                for name, call in calls.items():
                    wall, cpu = sequential(call, server.proc.pid)
                    figures[f"{name}: round trip - run() us"] = wall - local_wall
                    figures[f"{name}: server CPU - engine CPU us/request"] = cpu - local_cpu
                g.close()
                h.close()

            benchmark.pedantic(run, rounds=1, iterations=1)
        finally:
            engine.close()
            server.stop()
    report(benchmark, "serve vs in-process (demo chain 2, 3, 1 ms; depth 8; one row)", figures)


def grpc_latencies(address, model, x, requests):
    """16 asyncio gRPC callers: (requests/s, [latency ms of each request])."""
    import tritonclient.grpc.aio as client_module

    async def main():
        client = client_module.InferenceServerClient(address)
        tensor = client_module.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        latencies = []

        async def caller(n, keep):
            for _ in range(n):
                t0 = time.perf_counter()
                await client.infer(model, [tensor])
                if keep:
                    latencies.append((time.perf_counter() - t0) * 1000.0)

        try:
            await asyncio.gather(*(caller(10, False) for _ in range(CONCURRENCY)))
            t0 = time.perf_counter()
            await asyncio.gather(*(caller(requests // CONCURRENCY, True) for _ in range(CONCURRENCY)))
            return len(latencies) / (time.perf_counter() - t0), latencies
        finally:
            await client.close()

    return asyncio.run(main())


def test_dynamic_batching_through_serve(benchmark):
    """Triton's dynamic-batching tutorial shape: a model with batch gears, 16 concurrent callers
    of one row, the batcher off (``demo``) and on (``batched``: max_delay_ms 2), through serve."""
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        repo = demo_repository(tmp)
        x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
        server = ServerProcess(repo)
        try:
            def run():
                for model, label in (("demo", "batcher off"), ("batched", "batcher on")):
                    rate, latencies = grpc_latencies(server.grpc, model, x, 1600 if model == "demo" else 6400)
                    figures[f"{label}: infer/s"] = rate
                    figures[f"{label}: p99 ms"] = float(np.percentile(latencies, 99))
                figures["on / off infer/s"] = figures["batcher on: infer/s"] / figures["batcher off: infer/s"]
                figures["on / off p99"] = figures["batcher on: p99 ms"] / figures["batcher off: p99 ms"]

            benchmark.pedantic(run, rounds=1, iterations=1)
        finally:
            server.stop()
    report(benchmark, "dynamic batching through serve (16 gRPC callers of one row)", figures)


# ---- Poisson arrivals through serve against the M/D/1 prediction ----------------------------------

LOADS = (0.5, 0.8)           # shares of the pipeline's capacity (1 / its slowest stage)
POISSON_REQUESTS = 2000


def stage_times(pipeline_path):
    """The demo chain's stage times (p50 ms of each: H2D, every model, D2H), timed with device events
    by the in-process bench's own load code, one caller."""
    from ascend_engine.bench import load as loadgen

    pipeline, kwargs = spec.load(pipeline_path)
    with pipeline.compile(**{**kwargs, "profile": True}) as engine:
        x = np.random.default_rng(2).standard_normal((1, 64)).astype(np.float32)
        point = loadgen.run_point(engine, [{"x": x}], 1, "closed", 1, requests=200, warmup=20)
    return point["stage_ms"]


def bench_json(args, out):
    """Run ``ascend-engine bench ARGS --json OUT`` in a process of its own; its one load point."""
    import json
    import subprocess

    subprocess.run([sys.executable, "-m", "ascend_engine", "bench", "--no-progress", *args, "--json", out],
                   check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, ASCEND_ENGINE_BACKEND="sim"))
    with open(out, encoding="utf-8") as f:
        return json.load(f)["load"]["points"][0]


def test_poisson_through_serve_against_md1(benchmark):
    """Poisson arrivals at 50 % and 80 % of capacity, sent by ``bench --url`` from another process
    through ``serve`` (gRPC), beside the same arrivals in-process (``bench --rate``), against the
    M/D/1 prediction for the slowest stage plus the rest of the chain's device time."""
    import _md1

    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        repo = demo_repository(tmp)
        path = os.path.join(repo, "demo", "1", "pipeline.yaml")
        server = ServerProcess(repo)
        try:
            def run():
                stages = stage_times(path)
                slowest = max(stages.values())
                rest = sum(stages.values()) - slowest
                figures["stages p50 ms"] = " ".join(f"{k}={v:.3f}" for k, v in stages.items())
                capacity = 1e3 / slowest
                figures["capacity req/s (1 / slowest stage)"] = capacity
                for share in LOADS:
                    rate = share * capacity
                    predicted = _md1.sojourn_quantiles(rate, slowest, rest)
                    common = ["--request-rate-range", f"{rate:.2f}",
                              "--request-distribution", "poisson", "--requests", str(POISSON_REQUESTS),
                              "--warmup", "50"]
                    remote = bench_json(["-u", server.grpc, "-i", "grpc", "-m", "demo", *common],
                                        os.path.join(tmp, "remote.json"))
                    local = bench_json([path, *common], os.path.join(tmp, "local.json"))
                    tag = f"{int(share * 100)}% ({rate:.0f}/s)"
                    for q in (50, 90, 99):
                        figures[f"{tag} M/D/1 p{q} ms"] = predicted[q]
                        figures[f"{tag} serve p{q} ms"] = remote["latency_ms"][f"p{q}"]
                        figures[f"{tag} in-process p{q} ms"] = local["latency_ms"][f"p{q}"]
                    figures[f"{tag} serve p99 / M/D/1 p99"] = remote["latency_ms"]["p99"] / predicted[99]
                    figures[f"{tag} in-process p99 / M/D/1 p99"] = local["latency_ms"]["p99"] / predicted[99]
                    figures[f"{tag} serve kept up"] = str(remote["kept_up"])

            benchmark.pedantic(run, rounds=1, iterations=1)
        finally:
            server.stop()
    report(benchmark, "Poisson arrivals through serve against M/D/1 (demo chain 2, 3, 1 ms; gRPC)", figures)


# ---- one caller of Engine.run() against a synchronous C loop ------------------------------------

SYNC_REQUESTS = 400
SYNC_ROUNDS = 3


def test_run_loop_against_sync_c_loop(benchmark):
    """One caller calling ``Engine.run()`` in a loop on one model (the demo's encoder, 2 ms), against
    the plain synchronous H2D / aclmdlExecute / D2H loop in C on the same model: host CPU per request
    of every thread of the process, rounds alternated."""
    from _loops import build_sync_loop, run_sync_loop

    import ascend_engine as ae

    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        repo = demo_repository(tmp)
        model = os.path.join(tmp, "files", "encoder.om")
        lib = build_sync_loop(tmp)
        pipe = ae.Pipeline(device=0)
        pipe.output("y", pipe.model(model, pipe.input("x", "float32", (-1, 64)), name="encoder"))
        x = np.random.default_rng(3).standard_normal((1, 64)).astype(np.float32)
        assert repo
        with pipe.compile() as engine:
            def engine_loop():
                for _ in range(20):
                    engine.run({"x": x})
                c0, t0 = time.process_time(), time.thread_time()
                for _ in range(SYNC_REQUESTS):
                    engine.run({"x": x})
                calling.append((time.thread_time() - t0) / SYNC_REQUESTS)
                return (time.process_time() - c0) / SYNC_REQUESTS

            calling = []

            def run():
                ours, theirs = [], []
                for _ in range(SYNC_ROUNDS):
                    ours.append(engine_loop())
                    theirs.append(run_sync_loop(lib, model, SYNC_REQUESTS))
                ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
                figures["Engine.run() CPU us/request (rounds)"] = " ".join(f"{v * 1e6:.0f}" for v in ours)
                figures["calling thread us/request"] = " ".join(f"{v * 1e6:.0f}" for v in calling)
                figures["sync C loop CPU us/request (rounds)"] = " ".join(f"{v * 1e6:.0f}" for v in theirs)
                figures["run() / C loop (rounds)"] = " ".join(f"{r:.2f}" for r in ratios)
                figures["run() / C loop (median)"] = float(np.median(ratios))

            benchmark.pedantic(run, rounds=1, iterations=1)
    report(benchmark, "one caller: Engine.run() loop vs synchronous C loop, process CPU per request", figures)
