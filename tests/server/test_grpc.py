"""tritonclient's gRPC clients (sync and asyncio) against ``ascend-engine serve``: every rpc, every error."""

import asyncio

import grpc
import numpy as np
import pytest

grpcclient = pytest.importorskip("tritonclient.grpc")
aioclient = pytest.importorskip("tritonclient.grpc.aio")
from tritonclient.grpc import service_pb2, service_pb2_grpc  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402


@pytest.fixture
def client(server):
    c = grpcclient.InferenceServerClient(server.grpc)
    yield c
    c.close()


@pytest.fixture
def stub(server):
    """tritonclient's own generated stub, for requests its client class never sends (typed contents)."""
    channel = grpc.insecure_channel(server.grpc)
    yield service_pb2_grpc.GRPCInferenceServiceStub(channel)
    channel.close()


def test_health_and_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("demo") and client.is_model_ready("demo", "2")
    assert not client.is_model_ready("demo", "3") and not client.is_model_ready("nothing")
    meta = client.get_server_metadata(as_json=True)
    assert meta["name"] == "ascend-engine" and "model_configuration" in meta["extensions"]
    model = client.get_model_metadata("demo", as_json=True)
    assert model["versions"] == ["1", "2"]
    assert model["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "64"]}]


def test_model_config(client):
    config = client.get_model_config("batched", as_json=True)["config"]
    assert config["max_batch_size"] == 8
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": ["64"]}]
    assert config["dynamic_batching"]["max_queue_delay_microseconds"] == "2000"
    assert config["dynamic_batching"]["preferred_batch_size"] == [1, 2, 4, 8]


def test_repository_index_and_statistics(client):
    index = client.get_model_repository_index(as_json=True)["models"]
    assert {(m["name"], m["version"]) for m in index} == {("demo", "1"), ("demo", "2"), ("batched", "1")}
    x = np.ones((2, 64), np.float32)
    before = client.get_inference_statistics("demo", "1", as_json=True)["model_stats"][0]
    tensor = grpcclient.InferInput("x", [2, 64], "FP32")
    tensor.set_data_from_numpy(x)
    client.infer("demo", [tensor], model_version="1")
    after = client.get_inference_statistics("demo", "1", as_json=True)["model_stats"][0]
    assert int(after.get("inference_count", 0)) - int(before.get("inference_count", 0)) == 2


def test_infer_raw(client, reference):
    x = np.random.default_rng(5).standard_normal((6, 64)).astype(np.float32)
    tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    result = client.infer("demo", [tensor], outputs=[grpcclient.InferRequestedOutput("probs")],
                          request_id="r7")
    np.testing.assert_allclose(result.as_numpy("probs"), reference(x), rtol=1e-6, atol=1e-7)
    response = result.get_response()
    assert (response.model_name, response.model_version, response.id) == ("demo", "2", "r7")


def test_infer_typed_contents(stub, reference):
    x = np.linspace(-1, 1, 3 * 64, dtype=np.float32).reshape(3, 64)
    request = service_pb2.ModelInferRequest(model_name="demo")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[3, 64])
    tensor.contents.fp32_contents.extend(x.ravel().tolist())
    reply = stub.ModelInfer(request)
    got = np.frombuffer(reply.raw_output_contents[0], np.float32).reshape(list(reply.outputs[0].shape))
    np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)


def test_async_clients_each_get_their_own_rows(server, reference):
    xs = [np.full((1 + k % 3, 64), k / 7, np.float32) for k in range(24)]

    async def main():
        client = aioclient.InferenceServerClient(server.grpc)
        try:
            async def one(x):
                tensor = aioclient.InferInput("x", list(x.shape), "FP32")
                tensor.set_data_from_numpy(x)
                return (await client.infer("batched", [tensor])).as_numpy("probs")

            assert await client.is_server_ready()
            return await asyncio.gather(*(one(x) for x in xs))
        finally:
            await client.close()

    for x, got in zip(xs, asyncio.run(main()), strict=True):
        np.testing.assert_allclose(got, reference(x), rtol=1e-6, atol=1e-7)


def raw_request(model="demo", datatype="FP32", shape=(2, 64), nbytes=None, version=""):
    request = service_pb2.ModelInferRequest(model_name=model, model_version=version)
    request.inputs.add(name="x", datatype=datatype, shape=list(shape))
    n = int(np.prod(shape)) * 4 if nbytes is None else nbytes
    request.raw_input_contents.append(bytes(n))
    return request


@pytest.mark.parametrize("request_,code,message", [
    (raw_request("nothing"), grpc.StatusCode.NOT_FOUND, "Request for unknown model: 'nothing' is not found"),
    (raw_request(version="5"), grpc.StatusCode.NOT_FOUND, "'demo' version 5 is not found (versions: 1, 2)"),
    (raw_request(datatype="INT32"), grpc.StatusCode.INVALID_ARGUMENT,
     "input 'x': datatype INT32, but model 'demo' expects FP32"),
    (raw_request(datatype="HALF"), grpc.StatusCode.INVALID_ARGUMENT, "input 'x': unknown datatype 'HALF'"),
    (raw_request(shape=(2, 32)), grpc.StatusCode.INVALID_ARGUMENT,
     "input 'x': unexpected shape [2, 32], model 'demo' expects [-1, 64]"),
    (raw_request(shape=(16, 64)), grpc.StatusCode.INVALID_ARGUMENT, "input 'x': batch size 16"),
    (raw_request(nbytes=100), grpc.StatusCode.INVALID_ARGUMENT,
     "input 'x': shape [2, 64] of FP32 takes 512 bytes, got 100"),
])
def test_errors_carry_the_status_and_message(stub, request_, code, message):
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request_)
    assert info.value.code() == code
    assert message in info.value.details(), info.value.details()


def test_raw_contents_for_some_inputs_only_is_invalid(stub):
    request = raw_request()
    request.raw_input_contents.append(b"")
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "raw_input_contents holds 2 tensors for 1 inputs" in info.value.details()


def test_typed_contents_of_the_wrong_length(stub):
    request = service_pb2.ModelInferRequest(model_name="demo")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[1, 64])
    tensor.contents.fp32_contents.extend([0.0] * 63)
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "shape [1, 64] holds 64 elements, but data has 63" in info.value.details()


def test_tritonclient_reports_the_status(client):
    with pytest.raises(InferenceServerException) as info:
        client.get_model_config("nothing")
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert "Request for unknown model: 'nothing'" in info.value.message()


def test_priority_and_timeout_parameters(stub, reference):
    request = raw_request("batched")
    request.parameters["priority"].uint64_param = 1
    request.parameters["timeout"].int64_param = 2_000_000
    reply = stub.ModelInfer(request)
    got = np.frombuffer(reply.raw_output_contents[0], np.float32).reshape(2, 10)
    np.testing.assert_allclose(got, reference(np.zeros((2, 64), np.float32)), rtol=1e-6, atol=1e-7)
    bad = raw_request("batched")
    bad.parameters["priority"].uint64_param = 2          # batched has one priority level
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(bad)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "parameter 'priority' must be an integer from 0 (the default) to 1" in info.value.details()


def test_the_stream_answers_every_request_by_its_id(client, reference):
    """tritonclient's stream: requests of several sizes, one for an unknown model; every
    answer names its request and carries its own rows, the error included."""
    import queue

    got = queue.Queue()
    client.start_stream(callback=lambda result, error: got.put((result, error)))
    xs = {f"r{k}": np.full((1 + k % 4, 64), k / 9, np.float32) for k in range(12)}
    try:
        for rid, x in xs.items():
            tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x)
            client.async_stream_infer("batched", [tensor], request_id=rid)
        tensor = grpcclient.InferInput("x", [1, 64], "FP32")
        tensor.set_data_from_numpy(np.zeros((1, 64), np.float32))
        client.async_stream_infer("nothing", [tensor], request_id="lost")
        answers = [got.get(timeout=30) for _ in range(len(xs) + 1)]
    finally:
        client.stop_stream()
    errors = [e for _, e in answers if e is not None]
    assert len(errors) == 1 and "Request for unknown model: 'nothing'" in errors[0].message()
    seen = {}
    for result, error in answers:
        if error is None:
            seen[result.get_response().id] = result.as_numpy("probs")
    assert sorted(seen) == sorted(xs)
    for rid, x in xs.items():
        np.testing.assert_allclose(seen[rid], reference(x), rtol=1e-6, atol=1e-7)


def test_a_stream_error_names_its_request(stub):
    good = raw_request("demo")
    good.id = "kept"
    lost = raw_request("nothing")
    lost.id = "lost"
    replies = list(stub.ModelStreamInfer(iter([lost, good])))
    by_id = {r.infer_response.id: r for r in replies}
    assert sorted(by_id) == ["kept", "lost"]
    assert "Request for unknown model: 'nothing'" in by_id["lost"].error_message
    assert by_id["lost"].infer_response.model_name == "nothing"
    assert by_id["kept"].error_message == ""
    assert list(by_id["kept"].infer_response.outputs[0].shape) == [2, 10]


def invalid_utf8_id(message):
    """``message`` serialized with its ``id`` (field 3, a proto3 string) replaced by bytes that are
    not UTF-8: a message that does not deserialize."""
    message.id = "x"
    wire = message.SerializeToString()
    at = wire.index(b"\x1a\x01x")
    return wire[:at] + b"\x1a\x02\xff\xfe" + wire[at + 3:]


@pytest.mark.parametrize("bad", ["garbage", "non-UTF-8 id"])
def test_a_stream_message_that_does_not_deserialize_ends_the_stream(server, bad):
    """A message that does not deserialize (bytes that are no message, or text that is not
    UTF-8): the answers already owed arrive, then the stream ends with INVALID_ARGUMENT naming
    the message, never a hang."""
    good = raw_request("demo")
    good.id = "kept"
    wire = b"\xff\xff\xff\xff" if bad == "garbage" else invalid_utf8_id(raw_request("demo"))
    channel = grpc.insecure_channel(server.grpc)
    try:
        call = channel.stream_stream("/inference.GRPCInferenceService/ModelStreamInfer",
                                     request_serializer=lambda b: b,
                                     response_deserializer=service_pb2.ModelStreamInferResponse.FromString)
        replies = call(iter([good.SerializeToString(), wire]), timeout=30)
        got = []
        with pytest.raises(grpc.RpcError) as ended:
            for reply in replies:
                got.append(reply)
    finally:
        channel.close()
    assert ended.value.code() == grpc.StatusCode.INVALID_ARGUMENT, ended.value
    assert "message 2 of the stream" in ended.value.details()
    assert [r.infer_response.id for r in got] == ["kept"] and got[0].error_message == ""


def test_statistics_of_an_unknown_model_is_not_found(stub):
    for name, version in (("nothing", ""), ("nothing", "1"), ("demo", "7")):
        with pytest.raises(grpc.RpcError) as info:
            stub.ModelStatistics(service_pb2.ModelStatisticsRequest(name=name, version=version))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND, (name, version)
        assert "is not found" in info.value.details()


def test_a_timeout_above_the_engines_limit_is_invalid_argument(stub):
    request = raw_request("demo")
    request.parameters["timeout"].int64_param = 10**15
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert ("parameter 'timeout' must be microseconds, from 1000 to 2147483000000 (the engine's longest "
            "timeout), got 1000000000000000") in info.value.details()
