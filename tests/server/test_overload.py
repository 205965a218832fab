"""Past ``max_queue_size``: a flood is turned away with the protocol's error (HTTP 503, gRPC
UNAVAILABLE), nothing admitted is lost, and the request parameters priority and timeout act."""

import asyncio
import json

import numpy as np
import pytest

aioclient = pytest.importorskip("tritonclient.http.aio")
grpcclient = pytest.importorskip("tritonclient.grpc")

FLOOD = 60


def test_a_flood_past_max_queue_size_is_rejected_and_nothing_admitted_is_lost(tight, reference,
                                                                              infer_or_error):
    xs = [np.full((1, 64), k / 50, np.float32) for k in range(FLOOD)]

    async def main():
        client = aioclient.InferenceServerClient(tight.http, conn_limit=FLOOD)
        try:
            return await asyncio.wait_for(
                asyncio.gather(*(infer_or_error(aioclient, client, "tight", x) for x in xs)), 60)
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
    ({"timeout": 10}, "parameter 'timeout' must be microseconds, from 1000 to 2147483000000 (the engine's "
                      "longest timeout), got 10"),
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
