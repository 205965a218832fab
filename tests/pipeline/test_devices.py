"""Pipelines across devices: nodes placed with device=, tensors copied between
devices peer to peer or through pinned host memory, exact results against
numpy, and a cross-device dependency that must not be dropped."""

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, dense
from helpers.scale import scaled

import ascend_engine as ae


def chain_over(models, devices, **compile_kw):
    """x -> models[0] on devices[0] -> models[1] on devices[1] -> ... -> y."""
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, (m, d) in enumerate(zip(models, devices, strict=True)):
        h = pipe.model(m.path, h, name=f"m{i}", device=d)
    pipe.output("y", h)
    return pipe.compile(**compile_kw)


@pytest.fixture(scope="module")
def models(build):
    return [build(dense(300 + k), f"dev{k}") for k in range(4)]


def check_random_requests(engine, models, count, seed):
    rng = np.random.default_rng(seed)
    feeds = [rng.standard_normal((int(rng.integers(1, engine.max_batch + 1)), WIDTH)).astype(np.float32)
             for _ in range(count)]
    futures = [engine.submit({"x": x}) for x in feeds]
    for x, f in zip(feeds, futures, strict=True):
        expected = chain_reference(models, x)
        np.testing.assert_allclose(f.result(timeout=60)["y"], expected, rtol=1e-5, atol=1e-5)
    big = rng.standard_normal((37, WIDTH)).astype(np.float32)
    np.testing.assert_allclose(engine.run_batch({"x": big}, batch_size=3)["y"], chain_reference(models, big),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("link", ["peer", "host"])
@pytest.mark.parametrize("devices", [(0, 1, 1, 0), (0, 1, 2, 3), (2, 3, 1, 2)])
def test_a_chain_over_devices_matches_numpy(models, no_p2p, devices, link):
    if link == "host":
        no_p2p("all")
    with chain_over(models, devices, depth=4) as engine:
        copies = [n for n in engine.plan.nodes if n.kind == "copy"]
        # a copy wherever consecutive nodes (and the ends, on device 0) change device
        path = (0,) + devices + (0,)
        assert len(copies) == sum(a != b for a, b in zip(path, path[1:], strict=False))
        assert all((n.bridge_stream >= 0) == (link == "host") for n in copies)
        assert engine.plan.devices[0] == 0 and set(engine.plan.devices) == {0, *devices}
        check_random_requests(engine, models, scaled(300), seed=sum(devices) + len(link))


def test_one_link_missing_bridges_only_that_pair(models, no_p2p):
    no_p2p("0-1")
    with chain_over(models[:2], (1, 2), depth=2) as engine:
        bridged = {(engine.plan.devices[engine.plan.tensors[n.inputs[0]].device],
                    engine.plan.devices[n.device]): n.bridge_stream >= 0
                   for n in engine.plan.nodes if n.kind == "copy"}
        assert bridged == {(0, 1): True, (1, 2): False, (2, 0): False}
        check_random_requests(engine, models[:2], scaled(40), seed=7)


def test_a_dropped_cross_device_wait_is_caught(build):
    """Without its waits, the copy to device 1 reads device 0's output before
    the slow model there has written it: the results must be wrong."""
    slow = build(dense(310), "slow0", latency_us=4000)
    fast = build(dense(311), "fast1")
    rng = np.random.default_rng(3)
    feeds = [rng.standard_normal((2, WIDTH)).astype(np.float32) for _ in range(12)]
    wrong = 0
    with chain_over([slow, fast], (0, 1), depth=4, _unsafe_skip_waits=True) as engine:
        futures = [engine.submit({"x": x}) for x in feeds]
        for x, f in zip(feeds, futures, strict=True):
            wrong += not np.allclose(f.result(timeout=60)["y"], chain_reference([slow, fast], x), atol=1e-5)
    assert wrong > 0
    with chain_over([slow, fast], (0, 1), depth=4) as engine:
        for x in feeds[:4]:
            np.testing.assert_allclose(engine.run({"x": x})["y"], chain_reference([slow, fast], x), rtol=1e-5,
                                       atol=1e-5)


def test_a_host_step_on_another_device(models):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    h = pipe.model(models[0].path, x, name="a", device=1)
    doubled = pipe.host(lambda t: np.concatenate([t, t]), h, outputs=[("d", "float32", (-1, WIDTH))],
                        rows="any", max_rows=16, name="twice")
    pipe.output("y", pipe.model(models[1].path, doubled, name="b", device=2))
    rng = np.random.default_rng(4)
    with pipe.compile(depth=3) as engine:
        step = next(n for n in engine.plan.nodes if n.kind == "host")
        assert engine.plan.devices[step.device] == 1
        for _ in range(20):
            xs = rng.standard_normal((int(rng.integers(1, 5)), WIDTH)).astype(np.float32)
            a = models[0].ref(x=xs)
            np.testing.assert_allclose(engine.run({"x": xs})["y"], models[1].ref(x=np.concatenate([a, a])),
                                       rtol=1e-5, atol=1e-5)


def test_memory_is_reported_per_device(models):
    with chain_over(models[:2], (0, 1), depth=3) as engine:
        report = engine.memory()
        assert report["devices"] == [0, 1]
        per_device = report["slot_bytes_per_device"]
        assert per_device[0] == report["slot_bytes"] and per_device[1] > 0
        assert report["arena_bytes"] == 3 * sum(per_device)


def test_a_node_on_a_missing_device_is_refused(models):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    with pytest.raises(ae.PipelineError, match="model node 'far': .*deviceId 9 is out of range"):
        pipe.model(models[0].path, x, name="far", device=9)


def test_the_trace_has_a_process_per_device(models, tmp_path):
    import json

    with chain_over(models[:2], (0, 1), depth=2, profile=True) as engine:
        engine.trace(tmp_path / "t.json", requests=4, batch_size=2)
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {0: "ascend-engine device 0", 1: "ascend-engine device 1"}
    spans = {(e["pid"], e["name"]) for e in events if e["ph"] == "X"}
    assert {(0, "m0"), (1, "m1"), (1, "copy m0.y to device 1"), (0, "copy m1.y to device 0")} <= spans
