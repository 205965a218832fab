"""Past ``max_queue_size``: a flood is turned away with the protocol's error (HTTP 503, gRPC
UNAVAILABLE), nothing admitted is lost, and the request parameters priority and timeout act."""

import asyncio
import json

import numpy as np
import pytest
from helpers.servers import ServerProcess, write_variant

aioclient = pytest.importorskip("tritonclient.http.aio")
grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

FLOOD = 60


@pytest.fixture(scope="module")
def tight(repo, tmp_path_factory):
    """``tight``: the demo at depth 2 with room for 4 waiting requests and 3 priority levels."""
    folder = str(tmp_path_factory.mktemp("tight"))
    write_variant(repo, folder, "tight", {"max_queue": 4, "priority_levels": 3})
    text = open(f"{folder}/tight.yaml", encoding="utf-8").read().replace("depth: 8", "depth: 2")
    open(f"{folder}/tight.yaml", "w", encoding="utf-8").write(text)
    running = ServerProcess(folder)
    yield running
    running.stop()


def test_a_flood_past_max_queue_size_is_rejected_and_nothing_admitted_is_lost(tight, reference):
    xs = [np.full((1, 64), k / 50, np.float32) for k in range(FLOOD)]

    async def main():
        client = aioclient.InferenceServerClient(tight.http, conn_limit=FLOOD)
        try:
            async def one(x):
                tensor = aioclient.InferInput("x", [1, 64], "FP32")
                tensor.set_data_from_numpy(x)
                try:
                    return (await client.infer("tight", [tensor])).as_numpy("probs")
                except InferenceServerException as exc:
                    return exc
            return await asyncio.wait_for(asyncio.gather(*(one(x) for x in xs)), 60)
        finally:
            await client.close()

    results = asyncio.run(main())
    served = [(x, r) for x, r in zip(xs, results, strict=True) if isinstance(r, np.ndarray)]
    refused = [r for r in results if not isinstance(r, np.ndarray)]
    assert served and refused, "the flood should be partly served and partly turned away"
    for x, got in served:
        np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)
    for exc in refused:
        assert exc.status() == "503"
        assert "model 'tight': exceeds maximum queue size (4 requests waiting)" in exc.message()
    stats = grpcclient.InferenceServerClient(tight.grpc).get_inference_statistics("tight", as_json=True)
    inference = stats["model_stats"][0]["inference_stats"]
    assert int(inference["success"]["count"]) >= len(served)
    assert int(inference["fail"]["count"]) >= len(refused)


def post(server, body):
    import http.client

    host, port = server.http.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/v2/models/tight/infer", body=json.dumps(body).encode())
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


def request_with(**parameters):
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64], "data": [0.25] * 64}],
            "parameters": parameters}


@pytest.mark.parametrize("parameters,message", [
    ({"priority": 4}, "parameter 'priority' must be an integer from 0 (the default) to 3 (model 'tight' "
                      "has 3 priority levels), got 4"),
    ({"priority": "high"}, "parameter 'priority' must be an integer"),
    ({"timeout": 10}, "parameter 'timeout' must be microseconds, at least 1000, got 10"),
])
def test_bad_priority_or_timeout_parameters_are_400(tight, parameters, message):
    status, document = post(tight, request_with(**parameters))
    assert status == 400 and message in document["error"], document


def test_priority_and_timeout_parameters_are_taken(tight, reference):
    status, document = post(tight, request_with(priority=1, timeout=5_000_000))
    assert status == 200
    got = np.array(document["outputs"][0]["data"], np.float32).reshape(1, 10)
    np.testing.assert_allclose(got, reference(np.full((1, 64), 0.25, np.float32)), rtol=1e-6)
    config = grpcclient.InferenceServerClient(tight.grpc).get_model_config("tight", as_json=True)["config"]
    assert config["dynamic_batching"]["priority_levels"] == "3"
    assert config["dynamic_batching"]["default_priority_level"] == "3"
    assert config["dynamic_batching"]["default_queue_policy"]["max_queue_size"] == 4
