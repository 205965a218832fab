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


def _repeating(models):
    """A chain whose host step repeats each request's first row (row value + 1) times, 0 to 8 rows:
    a rows="any" output whose per-request row counts differ, and also come out equal."""
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))

    def repeat(a):
        n = int(abs(a[0, 0])) % 3 * 2     # 0, 2 or 4 rows
        return (np.repeat(a[:1], n, axis=0),)

    h = pipe.host(repeat, pipe.model(models[0].path, x, name="m0"),
                  outputs=[("r", "float32", (-1, WIDTH))], rows="any", max_rows=8, name="repeat")
    pipe.output("y", h)
    return pipe


@pytest.mark.parametrize("seed", [5, 6])
def test_replicas_return_per_request_lists_of_rows_any_outputs_like_one_engine(models, seed):
    """Replicas.run_batch once concatenated the per-request lists: ragged row counts raised a raw numpy
    error, equal ones gave one 3-d array instead of a list of per-request arrays."""
    pipe = _repeating(models)
    x = np.random.default_rng(seed).standard_normal((8, WIDTH)).astype(np.float32) * 3
    with pipe.compile(depth=4) as engine:
        want = engine.run_batch({"x": x}, batch_size=1)["y"]
    with pipe.compile_replicas([1, 2], depth=4) as reps:
        got = reps.run_batch({"x": x}, batch_size=1)["y"]
    assert isinstance(got, list) and len(got) == 8
    assert [a.shape for a in got] == [a.shape for a in want]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_share_and_join_rules_replicas_and_ray_use():
    from ascend_engine.replicas import join_shares, share_rows

    assert share_rows(101, 4, 3) == [(0, 36), (36, 72), (72, 101)]
    assert share_rows(5, 4, 3) == [(0, 4), (4, 5)]          # no empty share
    a, b = np.zeros((2, 3)), np.ones((1, 3))
    joined = join_shares([{"y": a, "l": [a]}, {"y": b, "l": [b, a]}])
    assert joined["y"].shape == (3, 3) and [v.shape for v in joined["l"]] == [(2, 3), (1, 3), (2, 3)]
    assert joined["l"][1] is b


# ---- the Engine's calling surface on replicas ---------------------------------------------------

ENGINE_CALLS = ("run", "submit", "run_async", "run_batch", "run_many", "trace", "stats", "memory", "close")


def test_replicas_and_the_ray_handle_offer_the_engines_calls():
    from ascend_engine.replicas import Replicas

    for cls in (ae.Engine, Replicas):
        assert [c for c in ENGINE_CALLS if not callable(getattr(cls, c, None))] == [], cls
    ray_module = pytest.importorskip("ascend_engine.ray", exc_type=ImportError)
    assert [c for c in ENGINE_CALLS if not callable(getattr(ray_module.RayReplicas, c, None))] == []


def test_replicas_submit_run_async_and_run_many_spread_over_the_engines_in_order(models):
    import asyncio

    pipe = chain(models)
    rng = np.random.default_rng(50)
    xs = [rng.standard_normal((1 + k % 3, WIDTH)).astype(np.float32) for k in range(12)]
    with pipe.compile_replicas([1, 2], depth=2) as reps:
        futures = [reps.submit({"x": x}) for x in xs[:4]]
        for x, f in zip(xs[:4], futures, strict=True):
            np.testing.assert_allclose(f.result(timeout=30)["y"], chain_reference(models, x),
                                       rtol=1e-4, atol=1e-5)

        async def main():
            return await asyncio.gather(*(reps.run_async({"x": x}) for x in xs[4:8]))

        for x, out in zip(xs[4:8], asyncio.run(main()), strict=True):
            np.testing.assert_allclose(out["y"], chain_reference(models, x), rtol=1e-4, atol=1e-5)
        outs = list(reps.run_many({"x": x} for x in xs))
        assert len(outs) == len(xs)
        for x, out in zip(xs, outs, strict=True):   # in order, each its own rows
            np.testing.assert_allclose(out["y"], chain_reference(models, x), rtol=1e-4, atol=1e-5)
        # every engine took its turn: 4 + 4 + 12 requests, half each
        assert [s["requests"] for s in reps.stats().values()] == [10, 10]
        with pytest.raises(TypeError, match="several engines"):
            reps.run_many([{"x": xs[0]}], times=[])


def test_replicas_trace_runs_on_one_engine_and_names_it(models, tmp_path):
    pipe = chain(models)
    with pipe.compile_replicas([1, 2], depth=2, profile=True) as reps:
        first = reps.trace(str(tmp_path / "a.json"), requests=3)
        second = reps.trace(str(tmp_path / "b.json"), requests=3)
    assert {first["device"], second["device"]} == {1, 2}
    assert (tmp_path / "a.json").stat().st_size > 0 and (tmp_path / "b.json").stat().st_size > 0
