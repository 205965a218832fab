"""The executor end to end on the simulator: numbers against sim.reference.

Chains and a diamond DAG with randomized device latencies, several depths,
random batch per request, many requests; the threads, splitting and fixed
batch rules; a deliberately broken event dependency is caught.
"""

import threading

import numpy as np
import pytest
from helpers.pipelines import GEARS, WIDTH, chain_reference, compile_chain, dense, joiner
from helpers.scale import scaled

import ascend_engine as ae
from ascend_engine import sim


@pytest.fixture(scope="module")
def chain_models(build):
    rng = np.random.default_rng(7)
    return [build(dense(i), f"chain{i}", latency_us=int(rng.integers(50, 600))) for i in range(3)]


@pytest.mark.parametrize("depth", [1, 2, 8])
def test_chain_matches_reference_with_random_batches(chain_models, depth):
    rng = np.random.default_rng(depth)
    n = scaled(400)
    batches = rng.integers(1, max(GEARS) + 1, size=n)
    feeds = [rng.standard_normal((int(b), WIDTH)).astype(np.float32) for b in batches]
    with compile_chain(chain_models, depth=depth) as engine:
        results = list(engine.run_many({"x": x} for x in feeds))
        stats = engine.stats()
    assert len(results) == n
    for x, out in zip(feeds, results, strict=True):
        np.testing.assert_allclose(out["y"], chain_reference(chain_models, x), rtol=1e-4, atol=1e-5)
    assert stats["requests"] == n and stats["failures"] == 0
    assert stats["in_flight_high_water"] == depth


@pytest.mark.parametrize("depth", [1, 3, 8])
def test_run_batch_splits_and_concatenates_in_order(chain_models, depth):
    rng = np.random.default_rng(10 + depth)
    x = rng.standard_normal((scaled(203), WIDTH)).astype(np.float32)
    with compile_chain(chain_models, depth=depth) as engine:
        out = engine.run_batch({"x": x}, batch_size=5)
        # a request above the largest gear is split transparently
        big = engine.run_batch({"x": x}, batch_size=20)
        one = engine.run({"x": x[:19]})
    expected = chain_reference(chain_models, x)
    np.testing.assert_allclose(out["y"], expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(big["y"], expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(one["y"], expected[:19], rtol=1e-4, atol=1e-5)


def diamond(build, latencies, depth, **kw):
    a, b, c = (build(dense(20 + i, act="tanh"), f"d{i}", latency_us=lat)
               for i, lat in enumerate(latencies[:3]))
    d = build(joiner(30), "join", latency_us=latencies[3])
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    ha = pipe.model(a.path, x, name="A")
    hb = pipe.model(b.path, ha, name="B")
    hc = pipe.model(c.path, ha, name="C")
    pipe.output("y", pipe.model(d.path, hb, hc, name="D"))
    pipe.output("a", ha)

    def reference(x):
        ra = a.ref(x=x)
        return {"y": d.ref(l=b.ref(x=ra), r=c.ref(x=ra)), "a": ra}

    return pipe.compile(depth=depth, **kw), reference


@pytest.mark.parametrize("depth", [1, 2, 8])
def test_diamond_dag_matches_reference(build, depth):
    rng = np.random.default_rng(100 + depth)
    latencies = [int(v) for v in rng.integers(0, 700, size=4)]
    engine, reference = diamond(build, latencies, depth)
    with engine:
        feeds = [rng.standard_normal((int(rng.integers(1, 9)), WIDTH)).astype(np.float32)
                 for _ in range(scaled(300))]
        for x, out in zip(feeds, engine.run_many({"x": x} for x in feeds), strict=True):
            ref = reference(x)
            np.testing.assert_allclose(out["y"], ref["y"], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(out["a"], ref["a"], rtol=1e-4, atol=1e-5)


def test_device_stalls_do_not_reorder_results(build, sim_faults):
    # random per-execution stalls on top of the models' latencies
    rng = np.random.default_rng(3)
    engine, reference = diamond(build, [100, 0, 300, 50], depth=6)
    rules = ",".join(f"stall:execute@{int(k)}=1" for k in sorted(set(rng.integers(1, 400, size=25))))
    sim_faults(rules)
    with engine:
        x = rng.standard_normal((scaled(90), WIDTH)).astype(np.float32)
        out = engine.run_batch({"x": x}, batch_size=3)
    np.testing.assert_allclose(out["y"], reference(x)["y"], rtol=1e-4, atol=1e-5)


def test_broken_event_dependency_is_caught(build):
    # Without the cross-stream waits, a consumer reads its input before the
    # slow producer wrote it: the numbers must come out wrong.
    slow = build(dense(40), "slow", latency_us=3000)
    fast = build(dense(41), "fast", latency_us=0)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.output("y", pipe.model(fast.path, pipe.model(slow.path, x, name="slow"), name="fast"))
    rng = np.random.default_rng(5)
    data = rng.standard_normal((40, WIDTH)).astype(np.float32)
    expected = fast.ref(x=slow.ref(x=data))
    with pipe.compile(depth=2) as engine:
        good = engine.run_batch({"x": data}, batch_size=4)
    np.testing.assert_allclose(good["y"], expected, rtol=1e-4, atol=1e-5)
    with pipe.compile(depth=2, _unsafe_skip_waits=True) as broken:
        bad = broken.run_batch({"x": data}, batch_size=4)
    wrong_rows = np.sum(~np.all(np.isclose(bad["y"], expected, rtol=1e-4, atol=1e-5), axis=1))
    assert wrong_rows > 0


def test_single_stream_gives_the_same_numbers(chain_models):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((37, WIDTH)).astype(np.float32)
    with compile_chain(chain_models, depth=4, streams="single") as engine:
        assert engine.plan.n_streams == 1
        out = engine.run_batch({"x": x}, batch_size=4)
    np.testing.assert_allclose(out["y"], chain_reference(chain_models, x), rtol=1e-4, atol=1e-5)


def test_threads_share_one_engine(chain_models):
    rng = np.random.default_rng(12)
    inputs = [rng.standard_normal((int(rng.integers(1, 9)), WIDTH)).astype(np.float32) for _ in range(4)]
    errors, results = [], {}
    with compile_chain(chain_models, depth=4) as engine:

        def worker(k):
            try:
                for i in range(scaled(30)):
                    x = inputs[(k + i) % len(inputs)]
                    if i % 3 == 0:
                        got = engine.run_batch({"x": np.concatenate([x, x])}, batch_size=3)["y"][: len(x)]
                    else:
                        got = engine.run({"x": x})["y"]
                    results.setdefault(k, []).append((x, got))
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    for pairs in results.values():
        for x, got in pairs:
            np.testing.assert_allclose(got, chain_reference(chain_models, x), rtol=1e-4, atol=1e-5)


def test_static_model_fixes_the_request_batch(build):
    g = sim.Graph("static")
    x = g.input("x", "float32", (4, WIDTH))
    w = np.random.default_rng(50).standard_normal((WIDTH, WIDTH)).astype(np.float32)
    g.output("y", g.relu(g.matmul(x, g.const(w))))
    static = build(g, "static4", batch_sizes=None)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.output("y", pipe.model(static.path, x, name="s"))
    with pipe.compile(depth=2) as engine:
        assert engine.max_batch == 4 and engine.plan.fixed_batch == 4
        data = np.random.default_rng(1).standard_normal((20, WIDTH)).astype(np.float32)
        out = engine.run_batch({"x": data}, batch_size=4)
        expected = np.concatenate([static.ref(x=data[i:i + 4]) for i in range(0, 20, 4)])
        np.testing.assert_allclose(out["y"], expected, rtol=1e-4, atol=1e-5)
        with pytest.raises(ValueError, match="requests must carry exactly 4 rows"):
            engine.run({"x": data[:3]})
        with pytest.raises(ValueError, match="requests must carry exactly 4 rows"):
            engine.run_batch({"x": data[:10]}, batch_size=4)


def test_profile_reports_device_time_per_node(build):
    models = [build(dense(60 + i), f"prof{i}", latency_us=lat) for i, lat in enumerate((2000, 500))]
    with compile_chain(models, depth=2, profile=True) as engine:
        engine.run_batch({"x": np.ones((40, WIDTH), np.float32)}, batch_size=4)
        per_node = engine.stats()["device_ms_per_node"]
    # 10 requests each: at least the declared latency, not wildly more
    assert 10 * 2.0 <= per_node["m0"] < 10 * 2.0 * 3
    assert 10 * 0.5 <= per_node["m1"] < 10 * 2.0
    assert per_node["m0"] > per_node["m1"]


def test_memory_report_and_flat_device_memory(chain_models):
    dev = ae.Device(0)
    try:
        before = dev.memory_info().free
        with compile_chain(chain_models, depth=3) as engine:
            report = engine.memory()
            during = dev.memory_info().free
            assert report["arena_bytes"] == report["slot_bytes"] * 3
            assert report["recommended_pool_bytes"] >= report["peak_working_set"]
            assert report["host_pinned_bytes"] > 0
            engine.run_batch({"x": np.ones((64, WIDTH), np.float32)}, batch_size=4)
            assert dev.memory_info().free == during
        assert dev.memory_info().free == before
    finally:
        dev.close()


def test_spin_wait_gives_the_same_numbers(chain_models, sim_faults):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((45, WIDTH)).astype(np.float32)
    with compile_chain(chain_models, depth=4, wait="spin", timeout=0.3) as engine:
        assert engine.plan.wait == "spin"
        out = engine.run_batch({"x": x}, batch_size=4)
        np.testing.assert_allclose(out["y"], chain_reference(chain_models, x), rtol=1e-4, atol=1e-5)
        # the timeout still holds while spinning
        sim_faults("stall:execute@1=1200")
        with pytest.raises(ae.AclTimeoutError, match="did not complete within 300 ms"):
            engine.run({"x": x[:2]})
    with pytest.raises(ae.PipelineError, match="wait must be 'block' or 'spin'"):
        compile_chain(chain_models, wait="busy")
