"""Every NPU of the host: a model served on several devices (serve --devices, or a config's
instance_group gpus), requests balanced to the least busy engine, one device's fault failing only
the requests on it (docs/serve.md, "Several devices")."""

import asyncio
import os
import shutil

import numpy as np
import pytest
from helpers.servers import demo_repository
from helpers.simlib import set_faults
from helpers.triton_repo import triton_repository

import ascend_engine as ae
from ascend_engine.errors import InferenceServerError
from ascend_engine.server import metrics
from ascend_engine.server.repository import Repository
from ascend_engine.server.service import Service


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("devices")
    return {"specs": demo_repository(str(root / "specs")), "triton": triton_repository(str(root / "triton"))}


@pytest.fixture(scope="module")
def reference(folders):
    spec_file = os.path.join(folders["specs"], "demo", "1", "pipeline.yaml")
    with ae.Pipeline.from_spec(spec_file).compile() as engine:
        yield lambda x: engine.run({"x": x})["probs"]


def rows(k, n=2):
    return np.random.default_rng(k).standard_normal((n, 64)).astype(np.float32)


async def burst(service, model, xs):
    async def one(x):
        try:
            return await service.infer(model, {"x": x})
        except InferenceServerError as exc:
            return exc
    return await asyncio.gather(*(one(x) for x in xs))


def test_every_device_serves_a_share_and_the_answers_are_the_pipelines(folders, reference):
    repository = Repository.load(folders["specs"], devices=(0, 1, 2, 3))
    try:
        service = Service(repository)
        model = service.model("demo")
        assert model.devices == [0, 1, 2, 3]
        assert model.config()["instance_group"] == [{"name": "demo", "kind": "KIND_GPU", "count": 1,
                                                      "gpus": [0, 1, 2, 3]}]
        xs = [rows(k) for k in range(16)]
        results = asyncio.run(burst(service, model, xs))
        for x, got in zip(xs, results, strict=True):
            np.testing.assert_array_equal(got["probs"], reference(x))
        shares = [engine.stats()["serving"]["latency_ms"]["added"] for engine in model.engines]
        assert shares == [4, 4, 4, 4]
        assert model.serving_stats()["latency_ms"]["added"] == 16
        assert sum(model.serving_stats()["batch_rows"].values()) == 16
    finally:
        repository.close()


@pytest.mark.parametrize("devices", [(0,), (0, 1)])
def test_statistics_and_metrics_read_the_running_totals_and_sort_nothing(folders, monkeypatch, devices):
    # Engine.stats(percentiles=False): the endpoints need counts and totals, not a percentile over
    # every engine's recent values on each request
    repository = Repository.load(folders["specs"], devices=devices)
    try:
        service = Service(repository)
        model = service.model("demo")
        asyncio.run(burst(service, model, [rows(k) for k in range(6)]))
        calls = []
        real = np.percentile
        monkeypatch.setattr(np, "percentile", lambda *a, **k: calls.append(a) or real(*a, **k))
        statistics = service.model_statistics("demo", model.version)["model_stats"][0]
        text = metrics.render(service).decode()
        assert calls == []
        assert statistics["inference_stats"]["compute_infer"]["count"] == 6
        assert statistics["execution_count"] == 6
        assert f'nv_inference_exec_count{{model="demo",version="{model.version}"}} 6' in text
        assert sum(e.stats()["serving"]["latency_ms"]["added"] for e in model.engines) == 6
        assert calls != []              # the counter sees the percentiles stats() computes
    finally:
        repository.close()


def test_one_devices_fault_fails_only_the_requests_on_it(folders, reference):
    repository = Repository.load(folders["specs"], devices=(0, 1, 2, 3))
    try:
        service = Service(repository)
        model = service.model("demo")
        set_faults("task:execute@2=507011")          # the second model execution anywhere fails
        try:
            xs = [rows(k) for k in range(16)]
            results = asyncio.run(burst(service, model, xs))
        finally:
            set_faults("")
        failed = [r for r in results if isinstance(r, InferenceServerError)]
        assert 1 <= len(failed) <= 4, failed                 # 4 requests went to each engine
        assert all(f.status == 500 and "507011" in str(f) for f in failed)
        for x, got in zip(xs, results, strict=True):
            if not isinstance(got, InferenceServerError):
                np.testing.assert_array_equal(got["probs"], reference(x))
        again = asyncio.run(burst(service, model, [rows(k) for k in range(8)]))
        assert not any(isinstance(r, InferenceServerError) for r in again)    # every device serves on
    finally:
        repository.close()


def test_a_configs_instance_group_gpus_place_the_engines(folders, tmp_path):
    root = str(tmp_path / "models")
    shutil.copytree(folders["triton"]["repo"], root)
    config = os.path.join(root, "encoder", "config.pbtxt")
    with open(config, encoding="utf-8") as f:
        text = f.read()
    with open(config, "w", encoding="utf-8") as f:
        f.write(text.replace("gpus: [ 0 ]", "gpus: [ 1, 2 ]"))
    repository = Repository.load(root, devices=(0, 3))
    try:
        assert repository.get("encoder").devices == [1, 2]        # the config's gpus come first
        assert repository.get("head").devices == [0, 3]           # no gpus: the server's devices
    finally:
        repository.close()


def test_the_least_busy_engine_is_picked_and_ties_taken_in_turn(folders):
    repository = Repository.load(folders["specs"], devices=(0, 1, 2))
    try:
        model = repository.get("demo")
        model.engine_in_flight[:] = [3, 0, 1]
        assert [model.pick() for _ in range(3)] == [1, 1, 1]
        model.engine_in_flight[:] = [2, 2, 2]
        assert sorted(model.pick() for _ in range(3)) == [0, 1, 2]
        model.engine_in_flight[:] = [0, 0, 0]
        model.engines[1].close()
        assert 1 not in {model.pick() for _ in range(6)}      # a closed engine takes nothing
    finally:
        repository.close()


def test_metrics_say_what_each_device_answered_and_what_is_pending(folders):
    from ascend_engine.server import metrics

    repository = Repository.load(folders["specs"], devices=(0, 1))

    async def scenario(service):
        model = service.model("demo")
        pending = [asyncio.ensure_future(service.infer(model, {"x": rows(k)})) for k in range(6)]
        await asyncio.sleep(0)
        during = metrics.render(service).decode()
        await asyncio.gather(*pending)
        return during, metrics.render(service).decode()

    try:
        during, after = asyncio.run(scenario(Service(repository)))
    finally:
        repository.close()
    assert 'nv_inference_pending_request_count{model="demo",version="2"} 6' in during
    assert 'ascend_engine_device_in_flight{model="demo",version="2",device="0"} 3' in during
    assert 'nv_inference_pending_request_count{model="demo",version="2"} 0' in after
    for device in (0, 1):
        assert f'ascend_engine_device_requests_total{{model="demo",version="2",device="{device}"}} 3' in after
        assert f'ascend_engine_device_in_flight{{model="demo",version="2",device="{device}"}} 0' in after
