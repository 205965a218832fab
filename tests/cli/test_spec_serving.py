"""The spec file's serving options: ``compile: {max_queue, max_delay_ms, gear_policy}``."""

import copy

import numpy as np
import pytest

from ascend_engine import EngineBusy, sim, spec


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """One model ``relu(x @ W)`` of 5 ms with gears 1, 2, 4, 8, and its numpy reference."""
    folder = tmp_path_factory.mktemp("spec_serving")
    rng = np.random.default_rng(7)
    g = sim.Graph("m")
    x = g.input("x", "float32", (-1, 8))
    g.output("y", g.relu(g.matmul(x, g.const(rng.standard_normal((8, 8)).astype(np.float32)))))
    g.save(str(folder / "m.om"), batch_sizes=(1, 2, 4, 8), latency_us=5000)
    return folder, g


def doc(**compile_options):
    return {"inputs": {"x": {"dtype": "float32", "shape": [-1, 8]}},
            "models": [{"name": "m", "path": "m.om", "inputs": ["x"]}],
            "outputs": {"y": "m"},
            "compile": {"depth": 1, **compile_options}}


def rows(seed):
    return {"x": np.random.default_rng(seed).standard_normal((1, 8)).astype(np.float32)}


def test_the_serving_options_reach_the_engine(model_dir):
    folder, _ = model_dir
    pipe, kw = spec.load(doc(max_queue=3, max_delay_ms=2.5, gear_policy="nearest"), base_dir=str(folder))
    assert kw == {"depth": 1, "max_queue": 3, "max_delay_ms": 2.5, "gear_policy": "nearest"}
    plan = pipe.plan(**kw)
    assert (plan.max_queue, plan.max_delay_ms, plan.gear_policy) == (3, 2.5, "nearest")
    # integers are milliseconds too; the defaults stay the compile() defaults
    _, kw = spec.load(doc(max_delay_ms=2), base_dir=str(folder))
    assert kw["max_delay_ms"] == 2.0 and isinstance(kw["max_delay_ms"], float)
    plan = pipe.plan(**spec.load(doc(), base_dir=str(folder))[1])
    assert (plan.max_queue, plan.max_delay_ms, plan.gear_policy) == (4, 0.0, "upper")


@pytest.mark.parametrize("policy, batches", [("upper", {3: 1}), ("lower", {2: 1, 1: 1})])
def test_the_spec_batcher_merges_by_its_gear_policy(model_dir, policy, batches):
    folder, graph = model_dir
    pipe, kw = spec.load(doc(max_delay_ms=200, gear_policy=policy), base_dir=str(folder))
    with pipe.compile(**kw) as engine:
        futures = [engine.submit(rows(k)) for k in range(3)]       # 3 rows: between gears 2 and 4
        for k, f in enumerate(futures):
            expected = sim.reference(graph, rows(k))["y"]
            np.testing.assert_allclose(f.result(timeout=30)["y"], expected, rtol=1e-5, atol=1e-6)
        assert engine.stats()["serving"]["batch_rows"] == batches


def test_the_spec_max_queue_bounds_the_admission_queue(model_dir):
    folder, _ = model_dir
    pipe, kw = spec.load(doc(max_queue=2, max_delay_ms=1000), base_dir=str(folder))
    with pipe.compile(**kw) as engine:
        # the batcher holds the first rows for up to a second: two calls fill the queue
        held = [engine.submit(rows(k)) for k in range(2)]
        with pytest.raises(EngineBusy, match=r"admission queue is full \(2 requests"):
            engine.submit(rows(2), block=False)
        for f in held:
            f.cancel()


SERVING_ERRORS = [
    ("max_queue", 0, "expected a queue length of at least 1, got 0"),
    ("max_queue", True, "expected a queue length (an integer), got bool True"),
    ("max_queue", 2.0, "expected a queue length (an integer), got float 2.0"),
    ("max_queue", 1 << 21, "expected a queue length of at most 1048576, got 2097152"),
    ("max_delay_ms", -1, "expected milliseconds (a finite number from 0 to 60000), got int -1"),
    ("max_delay_ms", 60001, "expected milliseconds (a finite number from 0 to 60000), got int 60001"),
    ("max_delay_ms", float("nan"), "expected milliseconds (a finite number from 0 to 60000), got float nan"),
    ("max_delay_ms", "2", "expected milliseconds (a finite number from 0 to 60000), got str '2'"),
    ("max_delay_ms", None, "expected milliseconds (a finite number from 0 to 60000), got null"),
    ("gear_policy", "up", "expected one of upper, nearest, lower, got str 'up'"),
    ("gear_policy", 1, "expected one of upper, nearest, lower, got int 1"),
]


@pytest.mark.parametrize("key, value, message", SERVING_ERRORS,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SERVING_ERRORS)])
def test_bad_serving_options_name_the_key(model_dir, key, value, message):
    folder, _ = model_dir
    with pytest.raises(spec.SpecError) as info:
        spec.load(copy.deepcopy(doc(**{key: value})), base_dir=str(folder))
    assert info.value.key == f"compile.{key}"
    assert info.value.detail == message


def test_a_misspelt_serving_option_suggests_the_key(model_dir):
    folder, _ = model_dir
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc(max_delay=2), base_dir=str(folder))
    assert info.value.key == "compile.max_delay"
    assert info.value.detail == ("unknown key (did you mean 'max_delay_ms'?); allowed keys: depth, streams, "
                                 "profile, timeout, max_queue, max_delay_ms, gear_policy, host_workers, "
                                 "priority_levels, default_priority, queue_timeout, timeout_action, "
                                 "preferred_batch_sizes")
