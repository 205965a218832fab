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
