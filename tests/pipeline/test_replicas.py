"""Data parallelism: one engine per device, shares run concurrently, results in order."""

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, dense

import ascend_engine as ae


@pytest.fixture(scope="module")
def models(build):
    return [build(dense(110 + i), f"rep{i}", latency_us=300) for i in range(2)]


def chain(models):
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, m in enumerate(models):
        h = pipe.model(m.path, h, name=f"m{i}")
    pipe.output("y", h)
    return pipe


def test_replicas_split_rows_across_devices(models):
    pipe = chain(models)
    free = {d: ae.devices()[d].memory_free for d in (1, 2, 3)}
    with pipe.compile_replicas([1, 2, 3], depth=4) as reps:
        assert reps.devices == [1, 2, 3]
        assert [e.plan.device for e in reps.engines] == [1, 2, 3]
        # each replica holds its arena and models on its own device
        now = {d: ae.devices()[d].memory_free for d in (1, 2, 3)}
        assert all(now[d] < free[d] for d in (1, 2, 3))
        x = np.random.default_rng(4).standard_normal((101, WIDTH)).astype(np.float32)
        out = reps.run_batch({"x": x}, batch_size=4)
        np.testing.assert_allclose(out["y"], chain_reference(models, x), rtol=1e-4, atol=1e-5)
        stats = reps.stats()
        assert sum(s["requests"] for s in stats.values()) == 26   # ceil(101 / 4)
        assert all(s["requests"] > 0 for s in stats.values())
        for k in range(3):
            one = reps.run({"x": x[k:k + 3]})
            np.testing.assert_allclose(one["y"], chain_reference(models, x[k:k + 3]), rtol=1e-4, atol=1e-5)
        assert set(reps.memory()) == {1, 2, 3}
    assert all(ae.devices()[d].memory_free == free[d] for d in (1, 2, 3))


def test_replicas_need_model_paths(models):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    with ae.Model.load(models[0].path, device=0) as m:
        pipe.output("y", pipe.model(m, x, name="loaded"))
        with pytest.raises(ae.PipelineError, match=r"model nodes \['loaded'\] were given loaded Models"):
            pipe.compile_replicas([0, 1])
    with pytest.raises(ae.PipelineError, match="distinct device ids"):
        chain(models).compile_replicas([0, 0])
