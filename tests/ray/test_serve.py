"""ascend_engine.ray.serve_app: the pipeline served over HTTP on loopback by Ray Serve."""

import json
import socket
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from helpers.numerics import assert_matches_reference

from ascend_engine import sim
from ascend_engine.ray import serve_app


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def url(cluster, model):
    from ray import serve

    _, spec = model
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(serve_app(spec, replicas=1, max_batch_size=8), route_prefix="/affine", name="affine")
    yield f"http://127.0.0.1:{port}/affine"
    serve.shutdown()


# straight to loopback, whatever proxy the environment names
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(url, body):
    headers = {"Content-Type": "application/json"}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with DIRECT.open(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_concurrent_requests_are_exact(url, model):
    g, _ = model
    rng = np.random.default_rng(11)
    requests = [rng.standard_normal((1 + k % 5, 16)).astype(np.float32) for k in range(24)]
    with ThreadPoolExecutor(8) as pool:  # concurrent: Serve gathers them into batches
        answers = list(pool.map(lambda x: post(url, {"inputs": {"x": x.tolist()}}), requests))
    for x, (status, body) in zip(requests, answers, strict=True):
        assert status == 200, body
        y = np.asarray(body["outputs"]["y"], dtype=np.float32)
        assert_matches_reference(y, sim.reference(g, {"x": x})["y"])


def test_bad_requests_get_400_with_the_reason(url):
    status, body = post(url, {"inputs": {"z": [[0.0] * 16]}})
    assert status == 400 and body == {"error": "pipeline inputs are ['x'], got ['z']"}
    status, body = post(url, {"inputs": {"x": [[0.0] * 15]}})
    assert status == 400 and body == {"error": "input 'x': expected shape (rows >= 1, 16), got (1, 15)"}
    status, body = post(url, [1, 2])
    assert status == 400 and body == {"error": 'expected a JSON object {"inputs": {name: nested list}}'}
