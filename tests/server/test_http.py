"""tritonclient's HTTP clients (sync and asyncio, JSON and binary tensors) against ``ascend-engine serve``."""

import asyncio

import numpy as np
import pytest

httpclient = pytest.importorskip("tritonclient.http")
aioclient = pytest.importorskip("tritonclient.http.aio")
from tritonclient.utils import InferenceServerException  # noqa: E402


@pytest.fixture
def client(server):
    c = httpclient.InferenceServerClient(server.http)
    yield c
    c.close()


def infer(client, x, binary_in=True, binary_out=True, model="demo", version=""):
    tensor = httpclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary_in)
    result = client.infer(model, [tensor], model_version=version,
                          outputs=[httpclient.InferRequestedOutput("probs", binary_data=binary_out)])
    return result


def test_health(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("demo")
    assert client.is_model_ready("demo", "1")
    assert client.is_model_ready("batched")
    assert not client.is_model_ready("demo", "3")
    assert not client.is_model_ready("nothing")


def test_server_metadata(client):
    meta = client.get_server_metadata()
    assert meta["name"] == "ascend-engine"
    assert "binary_tensor_data" in meta["extensions"]


def test_model_metadata_lists_versions_and_tensors(client):
    meta = client.get_model_metadata("demo")
    assert meta["versions"] == ["1", "2"]
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}]
    assert meta["outputs"] == [{"name": "probs", "datatype": "FP32", "shape": [-1, 10]}]


def test_model_config_as_triton_words_it(client):
    config = client.get_model_config("demo")
    assert config["max_batch_size"] == 8
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [64]}]
    assert config["output"] == [{"name": "probs", "data_type": "TYPE_FP32", "dims": [10]}]
    # the batcher off; the queue policy the engine was compiled with (demo: depth 8, so 32 may wait)
    assert config["dynamic_batching"] == {
        "preferred_batch_size": [1, 2, 4, 8], "max_queue_delay_microseconds": 0,
        "default_queue_policy": {"timeout_action": "REJECT", "allow_timeout_override": True,
                                 "max_queue_size": 32}}
    batched = client.get_model_config("batched")
    assert batched["dynamic_batching"]["max_queue_delay_microseconds"] == 2000
    assert batched["dynamic_batching"]["preferred_batch_size"] == [1, 2, 4, 8]


def test_repository_index(client):
    index = client.get_model_repository_index()
    assert {(m["name"], m["version"], m["state"]) for m in index} == {
        ("demo", "1", "READY"), ("demo", "2", "READY"), ("batched", "1", "READY")}


@pytest.mark.parametrize("binary_in,binary_out", [(True, True), (False, False), (True, False), (False, True)])
def test_infer_json_and_binary(client, reference, binary_in, binary_out):
    x = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)
    result = infer(client, x, binary_in, binary_out)
    got = result.as_numpy("probs")
    assert got.shape == (5, 10) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)
    response = result.get_response()
    assert response["model_name"] == "demo" and response["model_version"] == "2"


def test_infer_names_a_version(client, reference):
    x = np.ones((1, 64), np.float32)
    result = infer(client, x, version="1")
    assert result.get_response()["model_version"] == "1"
    np.testing.assert_allclose(result.as_numpy("probs"), reference(x), rtol=1e-6)


def test_statistics_count_the_requests(client):
    before = client.get_inference_statistics("batched", "1")["model_stats"][0]
    x = np.ones((3, 64), np.float32)
    for _ in range(4):
        infer(client, x, model="batched")
    after = client.get_inference_statistics("batched", "1")["model_stats"][0]
    assert after["inference_count"] - before["inference_count"] == 12
    assert (after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"]) == 4
    assert after["inference_stats"]["compute_infer"]["ns"] > before["inference_stats"]["compute_infer"]["ns"]


def test_async_clients_each_get_their_own_rows(server, reference):
    xs = [np.full((1 + k % 4, 64), k / 10, np.float32) for k in range(32)]

    async def main():
        client = aioclient.InferenceServerClient(server.http)
        try:
            async def one(x, binary):
                tensor = aioclient.InferInput("x", list(x.shape), "FP32")
                tensor.set_data_from_numpy(x, binary_data=binary)
                result = await client.infer("batched", [tensor], outputs=[
                    aioclient.InferRequestedOutput("probs", binary_data=binary)])
                return result.as_numpy("probs")

            assert await client.is_server_ready()
            return await asyncio.gather(*(one(x, k % 2 == 0) for k, x in enumerate(xs)))
        finally:
            await client.close()

    for x, got in zip(xs, asyncio.run(main()), strict=True):
        np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("datatype,shape,message", [
    ("FP64", [2, 64], "input 'x': datatype FP64, but model 'demo' expects FP32"),
    ("FP32", [2, 63], "input 'x': unexpected shape [2, 63], model 'demo' expects [-1, 64]"),
    ("FP32", [9, 64], "input 'x': batch size 9, model 'demo' takes 1 to 8"),
])
def test_tritonclient_sees_bad_inputs_as_400(client, datatype, shape, message):
    x = np.zeros(shape, np.float64 if datatype == "FP64" else np.float32)
    tensor = httpclient.InferInput("x", shape, datatype)
    tensor.set_data_from_numpy(x)
    with pytest.raises(InferenceServerException) as info:
        client.infer("demo", [tensor])
    assert info.value.status() == "400"
    assert message in info.value.message()


def test_tritonclient_sees_unknown_model_as_404(client):
    tensor = httpclient.InferInput("x", [1, 64], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, 64), np.float32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("nothing", [tensor])
    assert info.value.status() == "404"
    assert "Request for unknown model: 'nothing' is not found" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        client.get_model_metadata("demo", "7")
    assert info.value.status() == "404" and "versions: 1, 2" in info.value.message()
