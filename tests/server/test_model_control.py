"""Explicit model control (serve --model-control-mode=explicit): models loaded and unloaded by name
through the repository API, admitted requests answered before an unload completes, and memory back
where it was after load/unload cycles (docs/serve.md, "Model control")."""

import asyncio
import os

import numpy as np
import pytest
from helpers.servers import ServerProcess, demo_repository
from helpers.triton_repo import triton_repository

import ascend_engine as ae
from ascend_engine.errors import InferenceServerError
from ascend_engine.server.repository import Repository
from ascend_engine.server.service import Service

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("control")
    return {"specs": demo_repository(str(root / "specs")), "triton": triton_repository(str(root / "triton"))}


def states(service):
    return {(m["name"], m["version"]): (m["state"], m.get("reason", "")) for m in service.index()}


def x_rows(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 64)).astype(np.float32)


def test_explicit_mode_loads_only_what_it_is_told(folders):
    repository = Repository.load(folders["specs"], mode="explicit", startup=("batched",))
    try:
        service = Service(repository)
        assert list(repository.models) == ["batched"]
        assert states(service)[("demo", "")] == ("UNAVAILABLE",
                                                 "not loaded (explicit model control: load it by name)")
        with pytest.raises(InferenceServerError, match="'demo' is not loaded"):
            service.model("demo")
    finally:
        repository.close()


def test_a_startup_model_the_folder_lacks_stops_the_start(folders):
    with pytest.raises(InferenceServerError, match="has no model 'nothing' .its models: batched, demo."):
        Repository.load(folders["specs"], mode="explicit", startup=("nothing",))


async def _load_infer_unload(service, name, x):
    await service.load_model(name)
    model = service.model(name)
    out = await service.infer(model, {"x": x})
    await service.unload_model(name)
    return model, out


def test_load_infer_unload_and_the_engine_is_closed(folders):
    repository = Repository.load(folders["specs"], mode="explicit", startup=())
    try:
        service = Service(repository)
        model, out = asyncio.run(_load_infer_unload(service, "demo", x_rows(3)))
        assert out["probs"].shape == (3, 10)
        assert model.engine.closed
        assert states(service)[("demo", "")] == ("UNAVAILABLE", "unloaded")
        assert not service.model_ready("demo")
    finally:
        repository.close()


def test_an_unload_waits_for_the_requests_already_admitted(folders):
    """24 requests admitted (8 on the device, 16 queued behind them), then an unload: every one is
    answered, and only then the engine closes."""
    repository = Repository.load(folders["specs"], mode="explicit", startup=("demo",))

    async def scenario(service):
        model = service.model("demo")
        xs = [x_rows(2, seed=k) for k in range(24)]
        pending = [asyncio.ensure_future(service.infer(model, {"x": x})) for x in xs]
        await asyncio.sleep(0)                       # admitted: each has entered infer()
        assert model.in_flight == 24
        unload = asyncio.ensure_future(service.unload_model("demo"))
        await asyncio.sleep(0)
        with pytest.raises(InferenceServerError, match="'demo' is not loaded .unloaded."):
            service.model("demo")                   # refused at once, while the eight still run
        results = await asyncio.gather(*pending)
        closed_when_answered = model.engine.closed
        await unload
        return xs, results, closed_when_answered, model

    try:
        service = Service(repository)
        xs, results, closed_early, model = asyncio.run(scenario(service))
        assert not closed_early and model.engine.closed
        spec_file = os.path.join(folders["specs"], "demo", "1", "pipeline.yaml")
        with ae.Pipeline.from_spec(spec_file).compile() as ref:
            for x, got in zip(xs, results, strict=True):
                np.testing.assert_array_equal(got["probs"], ref.run({"x": x})["probs"])
    finally:
        repository.close()


def test_a_load_with_one_bad_version_keeps_every_version_served(folders, tmp_path):
    import shutil

    root = str(tmp_path / "models")
    shutil.copytree(folders["triton"]["repo"], root)
    config = os.path.join(root, "encoder", "config.pbtxt")
    with open(config, "a", encoding="utf-8") as f:
        f.write("version_policy: { all: { } }\n")
    repository = Repository.load(root, mode="explicit", startup=("encoder",))
    try:
        service = Service(repository)
        served = dict(repository.models["encoder"])
        assert list(served) == ["1", "2"]
        shutil.copy(folders["triton"]["models"]["head"], os.path.join(root, "encoder", "1", "model.om"))
        with pytest.raises(InferenceServerError, match=r"failed to load 'encoder': version 1: .*input\[0\]"):
            asyncio.run(service.load_model("encoder"))
        assert repository.models["encoder"] == served
        assert not any(m.engine.closed for m in served.values())
    finally:
        repository.close()


def test_a_failed_load_keeps_what_was_served_and_says_why(folders, tmp_path):
    import shutil

    root = str(tmp_path / "models")
    shutil.copytree(folders["triton"]["repo"], root)
    repository = Repository.load(root, mode="explicit", startup=("encoder",))
    try:
        service = Service(repository)
        served = service.model("encoder")
        config = os.path.join(root, "encoder", "config.pbtxt")
        with open(config, encoding="utf-8") as f:
            good = f.read()
        with open(config, "w", encoding="utf-8") as f:
            f.write(good.replace("dims: [ 64 ]", "dims: [ 65 ]"))
        with pytest.raises(InferenceServerError, match=r"failed to load 'encoder': version 2: .*input\[0\] "
                                                       r"'x' dims: the model has \[64\].*says \[65\]"):
            asyncio.run(service.load_model("encoder"))
        assert service.model("encoder") is served and not served.engine.closed
        with pytest.raises(InferenceServerError, match="failed to load 'nothing': no model of that name"):
            asyncio.run(service.load_model("nothing"))
    finally:
        repository.close()


def test_mode_none_refuses_model_control(folders):
    repository = Repository.load(folders["specs"])
    try:
        with pytest.raises(InferenceServerError, match="explicit model load is not allowed: the server runs "
                                                       "with --model-control-mode=none"):
            asyncio.run(Service(repository).load_model("demo"))
    finally:
        repository.close()


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_hundred_unload_load_cycles_leak_nothing(folders):
    """After 100 cycles (10 first, to warm caches): device memory exactly back, Python objects
    (tracemalloc, exact) within 256 KiB, and the process's resident memory within 8 MiB (the
    allocator's arenas move by about a MiB either way from one hundred cycles to the next; an
    engine left behind per cycle would hold its arena, staging and threads, far more)."""
    import gc
    import tracemalloc

    repository = Repository.load(folders["triton"]["repo"], mode="explicit", startup=("encoder",))
    x = x_rows(4)

    async def cycles(service, n):
        for _ in range(n):
            await service.unload_model("encoder")
            await service.load_model("encoder")
            await service.infer(service.model("encoder"), {"x": x})

    tracemalloc.start()
    try:
        service = Service(repository)
        asyncio.run(cycles(service, 10))
        gc.collect()
        device_before, rss_before = ae.devices()[0].memory_free, _rss_bytes()
        python_before = tracemalloc.get_traced_memory()[0]
        asyncio.run(cycles(service, 100))
        gc.collect()
        device_after, rss_after = ae.devices()[0].memory_free, _rss_bytes()
        python_after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        repository.close()
    assert device_after == device_before
    assert python_after - python_before < 256 << 10, (python_before, python_after)
    assert rss_after - rss_before < 8 << 20, (rss_before, rss_after)


@pytest.fixture(scope="module")
def server(folders):
    running = ServerProcess(folders["triton"]["repo"], "--model-control-mode=explicit",
                            "--load-model", "head")
    yield running
    running.stop()


def test_http_and_grpc_clients_load_and_unload(server, folders):
    http = httpclient.InferenceServerClient(server.http)
    grpc = grpcclient.InferenceServerClient(server.grpc)
    try:
        assert http.is_model_ready("head") and not http.is_model_ready("encoder")
        http.load_model("encoder")
        assert grpc.is_model_ready("encoder")
        tensor = httpclient.InferInput("x", [2, 64], "FP32")
        x = x_rows(2)
        tensor.set_data_from_numpy(x)
        got = http.infer("encoder", [tensor]).as_numpy("y")
        model = ae.Model.load(folders["triton"]["models"]["encoder"])
        try:
            np.testing.assert_array_equal(got, model(x=x)["y"])
        finally:
            model.close()
        grpc.unload_model("encoder")
        assert not http.is_model_ready("encoder")
        index = {m["name"]: m for m in http.get_model_repository_index()}
        assert index["encoder"]["state"] == "UNAVAILABLE" and index["encoder"]["reason"] == "unloaded"
        grpc.load_model("encoder")
        assert http.is_model_ready("encoder", "2")
        with pytest.raises(InferenceServerException,
                           match="failed to load 'broken': .*the config says \\[32\\]"):
            http.load_model("broken")
        with pytest.raises(InferenceServerException, match="failed to load 'nothing': no model of that name"):
            grpc.load_model("nothing")
        with pytest.raises(InferenceServerException, match="parameter 'config' is not supported"):
            http.load_model("encoder", config='{"max_batch_size": 2}')
    finally:
        http.close()
        grpc.close()
