"""ascend_engine.ray.deploy: replicas as Ray actors on simulated NPUs."""

import time

import numpy as np
import pytest
from helpers.numerics import assert_matches_reference
from helpers.raycluster import PHYSICAL_NPUS

from ascend_engine import Pipeline, sim
from ascend_engine.ray import ReplicaError, deploy
from ascend_engine.spec import SpecError


@pytest.fixture(scope="module")
def replicas(cluster, model):
    """Two replicas of one NPU each (the other two NPUs stay free for other tests)."""
    _, spec = model
    handle = deploy(spec, replicas=2, npus_per_replica=1)
    yield handle
    handle.close()


def rows(n, seed=0):
    return {"x": np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)}


def test_each_replica_sees_its_npu_as_device_0(replicas):
    infos = replicas.replicas
    assert len(infos) == 2 and all(i["alive"] for i in infos)
    ids = [i["npu_ids"] for i in infos]
    assert all(len(x) == 1 for x in ids) and len({x[0] for x in ids}) == 2, ids
    for info in infos:
        npu = info["npu_ids"][0]
        # Ray set the variable to the NPU it gave; the simulator made it device 0
        assert info["ASCEND_RT_VISIBLE_DEVICES"] == npu
        assert info["physical_devices"] == [int(npu)]
        assert 0 <= int(npu) < PHYSICAL_NPUS
        assert info["backend"] == "sim" and info["max_batch"] == 8
    assert infos[0]["pid"] != infos[1]["pid"]


def test_run_batch_shares_rows_exactly(replicas, model):
    g, _ = model
    before = replicas.stats()
    feeds = rows(1003, seed=1)  # 1003 rows: 126 requests of up to 8, shared over two replicas
    out = replicas.run_batch(feeds, batch_size=8)
    want = sim.reference(g, feeds)
    assert_matches_reference(out["y"], want["y"])
    after = replicas.stats()
    served = {k: after[k]["requests"] - before[k]["requests"] for k in after}
    assert sorted(served.values()) == [63, 63], served  # 63 requests each (the last one 3 rows)


def test_submit_returns_futures_with_exact_results(replicas, model):
    g, _ = model
    requests = [rows(1 + k % 8, seed=100 + k) for k in range(40)]
    futures = [replicas.submit(f) for f in requests]
    for f, feeds in zip(futures, requests, strict=True):
        assert_matches_reference(f.result(timeout=60)["y"], sim.reference(g, feeds)["y"])
    # an engine's own error comes back as itself
    with pytest.raises(ValueError, match=r"input 'x': expected dtype float32, got float64"):
        replicas.run({"x": np.zeros((2, 16))}, timeout=60)


def test_the_handle_offers_run_async_run_many_and_trace(replicas, model):
    import asyncio

    g, _ = model
    requests = [rows(1 + k % 5, seed=300 + k) for k in range(12)]
    outs = list(replicas.run_many(requests))      # in order, the replicas' depth in flight
    assert len(outs) == len(requests)
    for out, feeds in zip(outs, requests, strict=True):
        assert_matches_reference(out["y"], sim.reference(g, feeds)["y"])

    async def main():
        return await asyncio.gather(*(replicas.run_async(f, timeout=60) for f in requests[:4]))

    for out, feeds in zip(asyncio.run(main()), requests[:4], strict=True):
        assert_matches_reference(out["y"], sim.reference(g, feeds)["y"])
    with pytest.raises(TypeError, match="several engines"):
        replicas.run_many(requests, times=[])
    # trace() reaches a replica's engine: this one was compiled without profile=True, and says so
    with pytest.raises(Exception, match="compile the pipeline with profile=True"):
        replicas.trace("/dev/null", requests=2)


def test_several_npus_per_replica(cluster, model):
    g, spec = model
    with deploy(spec, replicas=1, npus_per_replica=2, depth=2) as two:
        (info,) = two.replicas
        assert len(info["npu_ids"]) == 2
        assert info["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(info["npu_ids"])
        assert info["physical_devices"] == [int(i) for i in info["npu_ids"]]
        feeds = rows(100, seed=3)
        assert_matches_reference(two.run_batch(feeds, batch_size=4)["y"], sim.reference(g, feeds)["y"])
        stats = two.stats()[0]  # one engine per NPU inside the replica: both served
        assert sorted(stats) == [0, 1] and all(s["requests"] > 0 for s in stats.values()), stats


def test_pipeline_factory(cluster, model):
    g, spec = model
    path = str(spec.parent / "affine.om")

    def build():
        pipe = Pipeline(device=0)
        pipe.output("y", pipe.model(path, pipe.input("x", "float32", (None, 16)), name="affine"))
        return pipe

    with deploy(build, replicas=1, depth=2) as one:
        feeds = rows(20, seed=4)
        assert_matches_reference(one.run(feeds, timeout=60)["y"], sim.reference(g, feeds)["y"])


def test_bad_arguments(cluster, model, tmp_path):
    _, spec = model
    pipe = Pipeline(device=0)
    with pytest.raises(TypeError, match="a Pipeline object belongs to this process"):
        deploy(pipe)
    with pytest.raises(TypeError, match="got int"):
        deploy(42)
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs: {x: {dtype: float32, shape: [-1, 16]}}\nmodels: []\noutputs: {y: nothing}\n")
    with pytest.raises(SpecError, match=r"bad.yaml: models: expected a non-empty list of models, got list"):
        deploy(bad)
    with pytest.raises(ValueError, match="replicas"):
        deploy(spec, replicas=0)


def test_a_replica_that_cannot_start_is_reported(cluster):
    def build():
        raise FileNotFoundError("no model at /models/missing.om")

    with pytest.raises(ReplicaError, match=r"^replica 0 could not start: FileNotFoundError: no model at "
                                           r"/models/missing.om$"):
        deploy(build, replicas=1)


def test_not_enough_npus_is_reported(replicas, model):
    _, spec = model
    need = r"did not start within 2 s: the cluster has 4 NPU\(s\) in all and 2 free; each replica needs 3"
    with pytest.raises(ReplicaError, match=need):
        deploy(spec, replicas=1, npus_per_replica=3, ready_timeout=2)


def test_a_dead_replica_fails_its_requests_and_the_others_keep_serving(replicas, model, cluster):
    g, _ = model
    # Keep replica 1 busy: ten requests of 50 rows (7 executions of 2 ms each) queue on it.
    victim = 1
    queued = [replicas._call(victim, "run_batch", rows(50, seed=200 + k), 8) for k in range(10)]
    time.sleep(0.05)
    cluster.kill(replicas.actors[victim], no_restart=False)  # the process dies; Ray restarts it
    failed = 0
    for f in queued:
        try:
            f.result(timeout=60)
        except ReplicaError as exc:
            failed += 1
            assert exc.replica == victim
            msg = str(exc)
            assert msg.startswith(f"replica {victim} of 2 (NPU ids "), msg
            assert "died with this request pending: " in msg, msg
            assert msg.endswith("Ray restarts it (max_restarts=-1); the other replicas take new requests "
                                "meanwhile. The request was not completed: submit it again."), msg
    assert failed >= 1
    # the handle keeps serving: every new request goes to the live replica meanwhile
    for k in range(5):
        feeds = rows(9, seed=300 + k)
        assert_matches_reference(replicas.run(feeds, timeout=60)["y"], sim.reference(g, feeds)["y"])
    # Ray restarts the replica (a new process, the same NPU) and the handle uses it again
    deadline = time.monotonic() + 120
    while not replicas.replicas[victim]["alive"]:
        assert time.monotonic() < deadline, "the replica was not restarted"
        time.sleep(0.2)
    # (the restart may come while the five requests above are still being sent: some may reach it)
    before = replicas.stats()[victim]["requests"]
    feeds = rows(400, seed=5)
    assert_matches_reference(replicas.run_batch(feeds, batch_size=8)["y"], sim.reference(g, feeds)["y"])
    stats = replicas.stats()
    assert stats[victim]["requests"] - before == 25  # the new engine serves its share of the batch


def test_without_restarts_the_handle_serves_with_the_replicas_left(cluster, model):
    g, spec = model
    with deploy(spec, replicas=2, max_restarts=0, depth=2) as two:
        cluster.kill(two.actors[0], no_restart=True)
        died = (r"^replica 0 of 2 .* died with this request pending: The actor died unexpectedly before "
                r"finishing this task\. Ray does not restart it \(max_restarts=0\)")
        with pytest.raises(ReplicaError, match=died):
            two._call(0, "run", rows(1)).result(timeout=60)
        # replica 0 never comes back: every request from now on must go to replica 1
        for k in range(20):
            feeds = rows(1 + k % 8, seed=400 + k)
            assert_matches_reference(two.run(feeds, timeout=60)["y"], sim.reference(g, feeds)["y"])
        feeds = rows(64, seed=6)
        assert_matches_reference(two.run_batch(feeds)["y"], sim.reference(g, feeds)["y"])
        assert [r["alive"] for r in two.replicas] == [False, True]


def test_a_spec_with_host_code_is_refused_on_the_driver_unless_allowed(cluster, model, tmp_path):
    """deploy() and serve_app() parse the spec on the driver: a host step's module is neither
    imported there nor shipped to the actors unless the caller allows code."""
    from ascend_engine.ray import _source_for_actors, serve_app

    _, spec = model
    marker = tmp_path / "imported"
    (tmp_path / "rayhost_steps.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n\ndef same(y):\n    return (y,)\n")
    coded = tmp_path / "coded.yaml"
    coded.write_text(
        "inputs: {x: {dtype: float32, shape: [-1, 16]}}\n"
        f"models:\n  - {{name: affine, path: {spec.parent / 'affine.om'}, inputs: [x]}}\n"
        "host:\n  - {name: same, function: 'rayhost_steps:same', inputs: [affine],\n"
        "     outputs: {y: {dtype: float32, shape: [-1, 16]}}}\n"
        "outputs: {y: same}\n")
    for refused in (lambda: deploy(coded), lambda: serve_app(coded)):
        with pytest.raises(SpecError, match=r"coded.yaml: host\[0\].function: the spec's host step\(s\) "
                                            r"'same' \(rayhost_steps:same\) name Python code"):
            refused()
    (kind, doc), _kwargs = _source_for_actors(coded, {}, allow_code=True)
    assert kind == "spec" and doc["host"][0]["function"] == "rayhost_steps:same"
    assert not marker.exists()      # the driver only parsed it; the actors import it


def test_run_batch_of_a_rows_any_output_is_a_list_per_request_across_replicas(cluster, model):
    """The handle's run_batch chains the per-request lists of a rows="any" output (it once
    concatenated them: a raw numpy error for ragged rows, one 3-d array for equal ones)."""
    _, spec = model
    path = str(spec.parent / "affine.om")

    def build():
        pipe = Pipeline(device=0)
        y = pipe.model(path, pipe.input("x", "float32", (None, 16)), name="affine")
        pipe.output("r", pipe.host(lambda a: (np.repeat(a[:1], int(abs(a[0, 0]) * 3) % 4, axis=0),), y,
                                   outputs=[("r", "float32", (-1, 8))], rows="any", max_rows=4, name="rep"))
        return pipe

    feeds = {"x": np.random.default_rng(3).standard_normal((6, 16)).astype(np.float32)}
    with build().compile(depth=2) as engine:
        want = engine.run_batch(feeds, batch_size=1)["r"]
    assert len({a.shape[0] for a in want}) > 1      # ragged: the case that once raised
    with deploy(build, replicas=2, depth=2) as two:
        got = two.run_batch(feeds, batch_size=1, timeout=60)["r"]
    assert isinstance(got, list) and [a.shape for a in got] == [a.shape for a in want]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
