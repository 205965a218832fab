"""A Triton-layout repository served: config.pbtxt + VERSION/model.om, batching honoured, a
contradicting config refused with the others still served (docs/serve.md, "A Triton model repository")."""

import concurrent.futures
import warnings

import numpy as np
import pytest
from helpers.servers import ServerProcess
from helpers.triton_repo import triton_repository

from ascend_engine import Model
from ascend_engine.errors import InferenceServerError
from ascend_engine.server.repository import Repository
from ascend_engine.server.service import Service

httpclient = pytest.importorskip("tritonclient.http")


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return triton_repository(str(tmp_path_factory.mktemp("triton")))


@pytest.fixture(scope="module")
def loaded(layout):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        repository = Repository.load(layout["repo"])
    repository.warnings = [str(w.message) for w in caught]
    yield repository
    repository.close()


def reference(path, x):
    """The model file run in this process, as the server's answers must equal."""
    model = Model.load(path)
    try:
        return model(x=x)
    finally:
        model.close()


def test_the_latest_version_is_served_unless_the_policy_says_otherwise(loaded):
    assert {name: list(v) for name, v in loaded.models.items()} == {"encoder": ["2"], "head": ["1", "2"]}


def test_a_contradicting_config_leaves_its_model_unavailable_with_the_reason(loaded):
    [reason] = loaded.failed["broken"].values()
    assert "broken/config.pbtxt: input[0] 'x' dims: the model has [64]" in reason
    assert "the config says [32]" in reason
    index = {(m["name"], m["version"]): m for m in Service(loaded).index()}
    assert index[("broken", "1")]["state"] == "UNAVAILABLE" and index[("broken", "1")]["reason"] == reason
    assert index[("encoder", "2")]["state"] == "READY"
    with pytest.raises(InferenceServerError, match="'broken' has no available versions .it failed to load: "):
        loaded.get("broken")
    assert loaded.problems() == [f"model 'broken' version 1 UNAVAILABLE: {reason}"]


def test_ignored_tuning_fields_are_named_in_a_warning(loaded):
    assert any("optimization is not read by this server (ignored)" in w for w in loaded.warnings), \
        loaded.warnings


def test_the_config_endpoint_says_what_the_config_said(loaded):
    config = loaded.get("encoder").config()
    assert config["platform"] == "ascend_engine_om"
    assert config["max_batch_size"] == 8
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [64]}]
    assert config["instance_group"] == [{"name": "encoder", "kind": "KIND_GPU", "count": 1, "gpus": [0]}]
    assert config["dynamic_batching"]["max_queue_delay_microseconds"] == 20000
    assert config["dynamic_batching"]["preferred_batch_size"] == [8]
    assert loaded.get("head").config()["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [8, 16]}]


def test_reshape_is_applied_both_ways(loaded, layout):
    model = loaded.get("head", "1")
    x = np.random.default_rng(1).standard_normal((3, 8, 16)).astype(np.float32)
    feeds = model.feeds({"x": x})
    assert feeds["x"].shape == (3, 128)
    out = model.results(model.engine.run(feeds))
    assert out["y"].shape == (3, 2, 5)
    want = reference(layout["models"]["head"], x.reshape(3, 128))["y"]
    np.testing.assert_array_equal(out["y"].reshape(3, 10), want)


@pytest.fixture(scope="module")
def server(layout):
    running = ServerProcess(layout["repo"], grpc=False)
    yield running
    running.stop()


def test_served_over_http_equal_to_the_model_in_process(server, layout):
    x = np.random.default_rng(2).standard_normal((3, 64)).astype(np.float32)
    client = httpclient.InferenceServerClient(server.http)
    try:
        tensor = httpclient.InferInput("x", [3, 64], "FP32")
        tensor.set_data_from_numpy(x, binary_data=True)
        got = client.infer("encoder", [tensor]).as_numpy("y")
        index = {m["name"]: m for m in client.get_model_repository_index()}
    finally:
        client.close()
    np.testing.assert_array_equal(got, reference(layout["models"]["encoder"], x)["y"])
    assert index["broken"]["state"] == "UNAVAILABLE" and "the config says [32]" in index["broken"]["reason"]
    assert "model 'broken' version 1 UNAVAILABLE" in server.errors()


def test_concurrent_requests_are_batched_as_the_config_asks(server, layout):
    """16 one-row callers at once: the 20 ms queue delay merges them into fewer executions."""
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 64)).astype(np.float32) for _ in range(16)]
    client = httpclient.InferenceServerClient(server.http, concurrency=16)

    def stats():
        entry = client.get_inference_statistics("encoder", "2")["model_stats"][0]
        return entry["inference_count"], entry["execution_count"]

    try:
        before = stats()
        pending = []
        for x in xs:
            tensor = httpclient.InferInput("x", [1, 64], "FP32")
            tensor.set_data_from_numpy(x, binary_data=True)
            pending.append(client.async_infer("encoder", [tensor]))
        got = [p.get_result().as_numpy("y") for p in pending]
        after = stats()
    finally:
        client.close()
    want = reference(layout["models"]["encoder"], np.concatenate(xs))["y"]
    np.testing.assert_array_equal(np.concatenate(got), want)
    inferences, executions = after[0] - before[0], after[1] - before[1]
    assert inferences == 16
    assert 1 <= executions < inferences, (inferences, executions)


def test_a_request_shaped_as_the_model_not_the_config_is_refused(server):
    client = httpclient.InferenceServerClient(server.http)
    try:
        tensor = httpclient.InferInput("x", [2, 128], "FP32")
        tensor.set_data_from_numpy(np.zeros((2, 128), np.float32))
        with pytest.raises(Exception, match=r"unexpected shape \[2, 128\], model 'head' expects "
                                            r"\[-1, 8, 16\]"):
            client.infer("head", [tensor])
    finally:
        client.close()


def test_many_concurrent_callers_get_their_own_rows(loaded, layout):
    model = loaded.get("encoder")
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((2, 64)).astype(np.float32) for _ in range(12)]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda x: model.engine.run(model.feeds({"x": x}))["y"], xs))
    want = reference(layout["models"]["encoder"], np.concatenate(xs))["y"]
    np.testing.assert_array_equal(np.concatenate(got), want)
