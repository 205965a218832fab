"""Graceful shutdown on SIGTERM / SIGINT mid-load, and the Prometheus metrics port."""

import asyncio
import json
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


async def signal_mid_load(server, sig, first, late):
    """Send ``sig`` once the ``first`` requests (coroutines) are all admitted and held by the
    batcher, then make the ``late()`` request: (the first ones' results, the late one's)."""
    pending = [asyncio.ensure_future(request) for request in first]
    await asyncio.to_thread(wait_queued, server, CLIENTS)
    server.signal(sig)
    await asyncio.sleep(0.05)
    late_result = await late()
    return await asyncio.wait_for(asyncio.gather(*pending), 30), late_result


def run_to_shutdown(server, main):
    """``asyncio.run(main())``, then the server's end: (main's result, what ServerProcess.wait returned)."""
    try:
        got = asyncio.run(main())
        return got, server.wait()
    finally:
        server.stop()


def assert_every_admitted_answered(xs, results, reference, ended):
    """Each of the requests admitted before the signal got its right answer, and the server
    (``ended``: what ServerProcess.wait returned) shut down cleanly, saying so."""
    rc, out, err = ended
    for x, got in zip(xs, results, strict=True):
        assert isinstance(got, np.ndarray), f"an admitted request failed: {got}"
        np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)
    assert rc == 0, err
    assert f"shutdown: every admitted request answered ({CLIENTS} answered in all)" in out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_load_answers_every_admitted_request(slow_repo, reference, infer_or_error, sig):
    server = ServerProcess(slow_repo, grpc=False)
    xs = [np.full((1, 64), k / 10, np.float32) for k in range(CLIENTS)]

    async def main():
        client = aioclient.InferenceServerClient(server.http, conn_limit=CLIENTS + 4)
        host, port = server.http.split(":")
        idle = await asyncio.open_connection(host, int(port))   # opened before the signal, used after
        try:
            first = [infer_or_error(aioclient, client, "slow", x) for x in xs]
            return await signal_mid_load(server, sig, first, lambda: late_request(*idle))
        finally:
            idle[1].close()
            await client.close()

    (results, late), ended = run_to_shutdown(server, main)
    assert_every_admitted_answered(xs, results, reference, ended)
    assert late == (503, "the server is shutting down: it admits no new requests")


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


def test_sigterm_mid_load_answers_every_admitted_grpc_request(slow_repo, reference, infer_or_error):
    grpc_aio = pytest.importorskip("tritonclient.grpc.aio")
    server = ServerProcess(slow_repo)
    xs = [np.full((1, 64), k / 10, np.float32) for k in range(CLIENTS)]

    async def main():
        client = grpc_aio.InferenceServerClient(server.grpc)

        def one(x):
            return infer_or_error(grpc_aio, client, "slow", x)

        try:
            # the gRPC port is still open while draining: the late request reaches the server
            return await signal_mid_load(server, signal.SIGTERM, [one(x) for x in xs], lambda: one(xs[0]))
        finally:
            await client.close()

    (results, late), ended = run_to_shutdown(server, main)
    assert_every_admitted_answered(xs, results, reference, ended)
    assert isinstance(late, InferenceServerException)
    assert late.status() == "StatusCode.UNAVAILABLE" and "the server is shutting down" in late.message()


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


WIDE = 1 << 21      # floats in one row of the wide model's answer: 8 MiB, more than the socket buffers hold


@pytest.fixture(scope="module")
def wide_repo(tmp_path_factory):
    """``wide``: a model whose answer to one value is WIDE floats (x times 0, 1, 2, ...)."""
    from ascend_engine import sim

    folder = tmp_path_factory.mktemp("wide")
    g = sim.Graph("wide")
    x = g.input("x", "float32", (-1, 1))
    g.output("y", g.matmul(x, g.const(np.arange(WIDE, dtype=np.float32).reshape(1, WIDE))))
    g.save(str(folder / "wide.om"), batch_sizes=[1])
    repo = folder / "models"
    repo.mkdir()
    (repo / "wide.yaml").write_text(
        f"inputs:\n  x: {{dtype: float32, shape: [-1, 1]}}\nmodels:\n"
        f"  - {{name: wide, path: {folder / 'wide.om'}, inputs: [x]}}\noutputs:\n  y: wide\n"
        "compile:\n  depth: 2\n", encoding="utf-8")
    return str(repo)


def read_answer(reader):
    """One HTTP answer from a file-like socket reader: (status, headers, body)."""
    status = int(reader.readline().split()[1])
    headers = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, reader.read(int(headers["content-length"]))


def test_sigterm_sends_the_answers_still_in_the_write_buffer(wide_repo):
    """Two pipelined requests whose answers (8 MiB each) the client has not read when the
    server is told to stop: both arrive whole, then the server exits 0."""
    server = ServerProcess(wide_repo, grpc=False)
    try:
        host, port = server.http.split(":")
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # a slow reader's small window
            s.settimeout(60)
            s.connect((host, int(port)))
            for value in (1.0, 3.0):
                head = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1],
                                               "parameters": {"binary_data_size": 4}}],
                                   "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
                body = head + np.float32(value).tobytes()
                s.sendall(b"POST /v2/models/wide/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                          b"Inference-Header-Content-Length: %d\r\n\r\n" % (len(body), len(head)) + body)
            deadline = time.monotonic() + 60
            while scrape(server)[1].get('nv_inference_request_success{model="wide",version="1"}', 0) < 2:
                assert time.monotonic() < deadline, "the two requests were never answered"
                time.sleep(0.01)
            server.signal(signal.SIGTERM)
            time.sleep(0.5)           # the server closes its connections meanwhile
            reader = s.makefile("rb")
            for value in (1.0, 3.0):
                status, headers, body = read_answer(reader)
                assert status == 200
                n = int(headers["inference-header-content-length"])
                document = json.loads(body[:n])
                assert document["outputs"][0]["parameters"]["binary_data_size"] == WIDE * 4
                assert len(body) == n + WIDE * 4
                y = np.frombuffer(body[n:], np.float32)
                np.testing.assert_array_equal(y, np.arange(WIDE, dtype=np.float32) * np.float32(value))
        rc, out, err = server.wait()
        assert rc == 0, err
        assert "shutdown: every admitted request answered (2 answered in all)" in out
    finally:
        server.stop()
