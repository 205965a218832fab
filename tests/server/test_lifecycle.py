"""Graceful shutdown on SIGTERM / SIGINT mid-load, and the Prometheus metrics port."""

import asyncio
import json
import os
import signal
import socket
import time
import urllib.request

import numpy as np
import pytest
from helpers.servers import ServerProcess

aioclient = pytest.importorskip("tritonclient.http.aio")
httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402

CLIENTS = 7          # one row each: fewer than max_batch (8), so the batcher holds them all


@pytest.fixture
def slow_repo(repo, tmp_path):
    """The demo with a batcher that holds requests 300 ms: at a signal, they are admitted but queued."""
    folder = tmp_path / "models"
    folder.mkdir()
    with open(os.path.join(repo, "demo", "1", "pipeline.yaml"), encoding="utf-8") as f:
        text = f.read()
    (folder / "slow.yaml").write_text(text.replace("streams: per-model",
                                                   "streams: per-model\n  max_delay_ms: 300"))
    return str(folder)


def wait_queued(server, count, timeout=20.0):
    """Wait until ``count`` requests wait in the engine's queue (its metrics say so)."""
    deadline = time.monotonic() + timeout
    while scrape(server)[1].get('ascend_engine_queued{model="slow",version="1"}', 0) < count:
        assert time.monotonic() < deadline, f"{count} requests never got queued"
        time.sleep(0.005)


async def late_request(reader, writer):
    """An inference on an already open connection: (status, error message)."""
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64],
                                   "data": [0.0] * 64}]}).encode()
    writer.write(b"POST /v2/models/slow/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body)
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) != b"\r\n":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return status, json.loads(await reader.readexactly(length))["error"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_load_answers_every_admitted_request(slow_repo, reference, sig):
    server = ServerProcess(slow_repo, grpc=False)
    xs = [np.full((1, 64), k / 10, np.float32) for k in range(CLIENTS)]

    async def main():
        client = aioclient.InferenceServerClient(server.http, conn_limit=CLIENTS + 4)

        async def one(x):
            tensor = aioclient.InferInput("x", [1, 64], "FP32")
            tensor.set_data_from_numpy(x)
            try:
                return (await client.infer("slow", [tensor])).as_numpy("probs")
            except InferenceServerException as exc:
                return exc

        host, port = server.http.split(":")
        idle = await asyncio.open_connection(host, int(port))   # opened before the signal, used after
        try:
            first = [asyncio.ensure_future(one(x)) for x in xs]
            await asyncio.to_thread(wait_queued, server, CLIENTS)   # all admitted, held by the batcher
            server.signal(sig)
            await asyncio.sleep(0.05)
            late = await late_request(*idle)
            return await asyncio.wait_for(asyncio.gather(*first), 30), late
        finally:
            idle[1].close()
            await client.close()

    try:
        results, late = asyncio.run(main())
        rc, out, err = server.wait()
    finally:
        server.stop()
    for x, got in zip(xs, results, strict=True):
        assert isinstance(got, np.ndarray), f"an admitted request failed: {got}"
        np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)
    assert late == (503, "the server is shutting down: it admits no new requests")
    assert rc == 0, err
    assert f"shutdown: every admitted request answered ({CLIENTS} answered in all)" in out


def scrape(server):
    with urllib.request.urlopen(f"http://{server.metrics}/metrics", timeout=30) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = reply.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return text, values


def test_metrics_count_requests_failures_rows_and_batches(server):
    client = httpclient.InferenceServerClient(server.http)
    labels = '{model="demo",version="1"}'
    _, before = scrape(server)
    tensor = httpclient.InferInput("x", [3, 64], "FP32")
    tensor.set_data_from_numpy(np.ones((3, 64), np.float32))
    for _ in range(5):
        client.infer("demo", [tensor], model_version="1")
    bad = httpclient.InferInput("x", [3, 63], "FP32")
    bad.set_data_from_numpy(np.ones((3, 63), np.float32))
    with pytest.raises(InferenceServerException):
        client.infer("demo", [bad], model_version="1")
    client.close()
    text, after = scrape(server)

    def delta(name, label=labels):
        return after[name + label] - before.get(name + label, 0.0)

    assert delta("nv_inference_request_success") == 5
    assert delta("nv_inference_request_failure") == 1
    assert delta("nv_inference_count") == 15
    assert delta("nv_inference_exec_count") == 5
    assert delta("ascend_engine_batch_rows_total", '{model="demo",version="1",rows="3"}') == 5
    # five executions of the 2 + 3 + 1 ms chain: at least 30 ms of device time
    assert delta("nv_inference_compute_infer_duration_us") >= 30_000
    assert delta("nv_inference_request_duration_us") >= delta("nv_inference_compute_infer_duration_us")
    assert "# TYPE nv_inference_request_success counter" in text
    assert 'nv_inference_request_success{model="batched",version="1"}' in text


def test_metrics_port_serves_only_metrics(server):
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"http://{server.metrics}/v2/health/live", timeout=30)
    assert info.value.code == 404


def test_sigterm_mid_load_answers_every_admitted_grpc_request(slow_repo, reference):
    grpc_aio = pytest.importorskip("tritonclient.grpc.aio")
    server = ServerProcess(slow_repo)
    xs = [np.full((1, 64), k / 10, np.float32) for k in range(CLIENTS)]

    async def main():
        client = grpc_aio.InferenceServerClient(server.grpc)

        async def one(x):
            tensor = grpc_aio.InferInput("x", [1, 64], "FP32")
            tensor.set_data_from_numpy(x)
            try:
                return (await client.infer("slow", [tensor])).as_numpy("probs")
            except InferenceServerException as exc:
                return exc

        try:
            first = [asyncio.ensure_future(one(x)) for x in xs]
            await asyncio.to_thread(wait_queued, server, CLIENTS)
            server.signal(signal.SIGTERM)
            await asyncio.sleep(0.05)
            late = await one(xs[0])             # the gRPC port is still open while draining
            return await asyncio.wait_for(asyncio.gather(*first), 30), late
        finally:
            await client.close()

    try:
        results, late = asyncio.run(main())
        rc, out, err = server.wait()
    finally:
        server.stop()
    for x, got in zip(xs, results, strict=True):
        assert isinstance(got, np.ndarray), f"an admitted request failed: {got}"
        np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)
    assert isinstance(late, InferenceServerException)
    assert late.status() == "StatusCode.UNAVAILABLE" and "the server is shutting down" in late.message()
    assert rc == 0, err
    assert f"shutdown: every admitted request answered ({CLIENTS} answered in all)" in out


def test_a_client_that_hangs_up_has_its_queued_request_cancelled(slow_repo):
    """The batcher holds the request 300 ms; the client goes away first: it never runs."""
    server = ServerProcess(slow_repo, grpc=False)
    try:
        host, port = server.http.split(":")
        body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64],
                                       "data": [0.0] * 64}]}).encode()
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(b"POST /v2/models/slow/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                      % len(body) + body)
            wait_queued(server, 1)
        time.sleep(0.6)                          # past the batcher's delay: it would have run by now
        _, values = scrape(server)
        labels = '{model="slow",version="1"}'
        assert values["nv_inference_exec_count" + labels] == 0
        assert values["nv_inference_request_success" + labels] == 0
        client = httpclient.InferenceServerClient(server.http)   # the engine serves on
        tensor = httpclient.InferInput("x", [1, 64], "FP32")
        tensor.set_data_from_numpy(np.zeros((1, 64), np.float32))
        assert client.infer("slow", [tensor]).as_numpy("probs").shape == (1, 10)
        client.close()
    finally:
        server.stop()
