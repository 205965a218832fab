"""pipe.model(path, ..., instances=k): the model loaded k times on one weight
allocation, request r on instance r % k, each instance on its own stream."""

import numpy as np
import pytest
from helpers.pipelines import GEARS, WIDTH, dense

import ascend_engine as ae
from ascend_engine.errors import PipelineError


def malloc_bytes(n):
    """What aclrtMalloc(n) takes from the device (rounded up to 32, plus 32 bytes)."""
    return (n + 31) // 32 * 32 + 32


@pytest.fixture(scope="module")
def chain(build):
    # the middle model is the slow one: two executions of it must overlap
    # for the instances to matter, and the simulator fails one model id
    # executing on two streams at once (507011)
    return [build(dense(60), "first", latency_us=200), build(dense(61, act="tanh"), "slow", latency_us=900),
            build(dense(62), "last", latency_us=100)]


def chain_pipe(chain, instances, **kw):
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    h = pipe.model(chain[0].path, h, name="first")
    h = pipe.model(chain[1].path, h, name="slow", instances=instances, **kw)
    pipe.output("y", pipe.model(chain[2].path, h, name="last"))
    return pipe


def reference(chain, x):
    for m in chain:
        x = m.ref(x=x)
    return x


def close_to(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def one_instance(chain):
    """The same pipeline with one instance: what every instanced run must equal bit for bit."""
    with chain_pipe(chain, 1).compile(depth=4) as engine:
        yield engine


@pytest.mark.parametrize("instances,depth", [(2, 4), (3, 6), (2, 3), (3, 8)])
def test_results_exact_over_many_requests(chain, one_instance, instances, depth):
    # depth need not be a multiple of instances: request r runs on instance r % k whatever its slot
    rng = np.random.default_rng(instances * 10 + depth)
    x = rng.standard_normal((600, WIDTH)).astype(np.float32)
    want = reference(chain, x)
    with chain_pipe(chain, instances).compile(depth=depth) as engine:
        assert [len(n.models) for n in engine.plan.nodes] == [0, instances, 0]
        for batch in (1, 3, GEARS[-1]):
            out = engine.run_batch({"x": x}, batch_size=batch)["y"]
            close_to(out, want)
            np.testing.assert_array_equal(out, one_instance.run_batch({"x": x}, batch_size=batch)["y"])
        # run_many with a different batch per request
        sizes = rng.integers(1, GEARS[-1] + 1, size=75)
        feeds = [x[8 * i: 8 * i + int(s)] for i, s in enumerate(sizes)]
        alone = list(one_instance.run_many({"x": f} for f in feeds))
        for got, f, ref in zip(engine.run_many({"x": f} for f in feeds), feeds, alone, strict=True):
            close_to(got["y"], reference(chain, f))
            np.testing.assert_array_equal(got["y"], ref["y"])
        assert engine.stats()["failures"] == 0


def test_submit_spreads_over_instances(chain):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((int(rng.integers(1, 9)), WIDTH)).astype(np.float32) for _ in range(120)]
    with chain_pipe(chain, 2).compile(depth=4) as engine:
        futures = [engine.submit({"x": x}) for x in xs]
        for f, x in zip(futures, xs, strict=True):
            close_to(f.result(timeout=60)["y"], reference(chain, x))


def test_missing_wait_on_an_instanced_node_is_caught(build):
    # without the cross-stream waits the consumer of an instanced producer
    # reads its input before the instance wrote it: the numbers come out wrong
    slow = build(dense(63), "slow-inst", latency_us=3000)
    fast = build(dense(64), "fast-inst", latency_us=0)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.output("y", pipe.model(fast.path, pipe.model(slow.path, x, name="slow", instances=2), name="fast"))
    data = np.random.default_rng(6).standard_normal((40, WIDTH)).astype(np.float32)
    expected = fast.ref(x=slow.ref(x=data))
    with pipe.compile(depth=4) as engine:
        close_to(engine.run_batch({"x": data}, batch_size=4)["y"], expected)
    with pipe.compile(depth=4, _unsafe_skip_waits=True) as broken:
        bad = broken.run_batch({"x": data}, batch_size=4)["y"]
    assert np.sum(~np.all(np.isclose(bad, expected, rtol=1e-4, atol=1e-5), axis=1)) > 0


def test_plan_gives_each_instance_a_stream_of_its_own(chain):
    plan = chain_pipe(chain, 3).plan(depth=6)
    first, slow, last = plan.nodes
    assert first.streams == (0,) and last.streams == (4,)
    assert slow.instances == 3 and slow.streams == (1, 2, 3) and slow.stream == 1
    assert plan.n_streams == 5
    single = chain_pipe(chain, 3).plan(depth=6, streams="single")
    assert single.n_streams == 1 and single.nodes[1].streams == (0, 0, 0)


def test_device_memory_counts_the_weights_once(chain):
    work, weight = ae.Model.query_size(chain[1].path)
    used = {}
    for k in (1, 3):
        free0 = ae.devices()[0].memory_free
        with chain_pipe(chain, k).compile(depth=4) as engine:
            used[k] = free0 - ae.devices()[0].memory_free
            report = engine.memory()["models"]
            assert report["slow"] == {"instances": k, "weight_bytes": weight, "work_bytes_per_instance": work,
                                      "device_bytes": weight + k * work}
            assert report["first"]["instances"] == 1
        assert ae.devices()[0].memory_free == free0
    # instances=1 loads with runtime-managed memory (work + weights); instances=3 has
    # the weights once in an aclrtMalloc allocation and three work regions
    assert used[3] - used[1] == 2 * work + malloc_bytes(weight) - weight


def test_instances_arguments(chain):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    with pytest.raises(PipelineError, match=r"model node 'm': instances must be between 1 and 1024, got 0"):
        pipe.model(chain[0].path, x, name="m", instances=0)
    with pytest.raises(PipelineError, match=r"model node 'm': instances must be an integer, got '2'"):
        pipe.model(chain[0].path, x, name="m", instances="2")
    with pytest.raises(PipelineError, match="cannot also take the stream label 'a'"):
        pipe.model(chain[0].path, x, name="m", instances=2, stream="a")
    with ae.Model.load(chain[0].path, device=0) as loaded:
        with pytest.raises(PipelineError, match="instances=2 needs a model file path"):
            pipe.model(loaded, x, name="m", instances=2)


def test_the_trace_has_a_lane_per_instance(chain, tmp_path):
    import json

    with chain_pipe(chain, 2).compile(depth=4, profile=True) as engine:
        engine.trace(tmp_path / "t.json", requests=6, batch_size=1)
        streams = engine.plan.nodes[1].streams
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert lanes[streams[0] + 1].endswith("(instance 0)") and lanes[streams[1] + 1].endswith("(instance 1)")
    spans = sorted((e["args"]["request"], e["tid"]) for e in events if e["ph"] == "X" and e["name"] == "slow")
    # request r ran on instance r % 2
    assert [tid for _, tid in spans] == [streams[r % 2] + 1 for r, _ in spans] and len(spans) == 6
