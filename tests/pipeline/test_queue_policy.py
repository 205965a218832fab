"""Triton's queue policy: priority levels, the default and per-request queue timeout with
timeout_action reject or delay, rejections counted per priority, preferred batch sizes."""

import time

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, compile_chain, dense

from ascend_engine import spec
from ascend_engine.errors import EngineBusy, EngineError, PipelineError, SpecError


@pytest.fixture(scope="module")
def slow(build):
    return build(dense(640), "policy_slow", latency_us=150_000)


@pytest.fixture(scope="module")
def quick(build):
    return build(dense(641), "policy_quick", latency_us=200)


def x_of(k, rows=1):
    return {"x": np.full((rows, WIDTH), k / 8, np.float32)}


def finish_order(futures):
    """Tags in the order their futures end (callbacks run on the thread that resolves them)."""
    order = []
    for tag, f in futures:
        f.add_done_callback(lambda _f, tag=tag: order.append(tag))
    return order


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the engine never got there"
        time.sleep(0.002)


def test_a_higher_priority_request_overtakes_the_queue(slow):
    with compile_chain([slow], depth=1, priority_levels=3, default_priority=2) as engine:
        running = engine.submit(x_of(0))                 # on the device: the queue forms behind it
        queued = [("low", engine.submit(x_of(1), priority=3)), ("default", engine.submit(x_of(2))),
                  ("low2", engine.submit(x_of(3), priority=3)), ("high", engine.submit(x_of(4), priority=1))]
        order = finish_order(queued)
        running.result(30)
        results = {tag: f.result(30)["y"] for tag, f in queued}
        stats = engine.stats()["serving"]
    assert order == ["high", "default", "low", "low2"]
    for k, tag in enumerate(["low", "default", "low2", "high"], start=1):
        np.testing.assert_allclose(results[tag], chain_reference([slow], x_of(k)["x"]), rtol=1e-5)
    by = stats["priorities"]
    assert [by[p]["queue_ms"]["count"] for p in (1, 2, 3)] == [1, 2, 2]   # the running one had the default
    assert [by[p]["compute_ms"]["count"] for p in (1, 2, 3)] == [1, 2, 2]
    assert by[1]["queue_ms"]["max"] < by[3]["queue_ms"]["max"]


@pytest.mark.parametrize("priority", [0, None])
def test_priority_zero_or_none_is_the_default(quick, priority):
    with compile_chain([quick], depth=2, priority_levels=4, default_priority=3) as engine:
        engine.submit(x_of(1), priority=priority).result(30)
        by = engine.stats()["serving"]["priorities"]
    assert by[3]["queue_ms"]["count"] == 1 and by[1]["queue_ms"]["count"] == 0


@pytest.mark.parametrize("priority", [5, -1, 1.0, True, "1"])
def test_a_priority_out_of_range_is_refused(quick, priority):
    with compile_chain([quick], priority_levels=4) as engine:
        with pytest.raises(EngineError, match=r"priority must be an integer from 1 \(the highest\) to 4 .*"
                                              r"or None/0 for the default \(4\); got"):
            engine.submit(x_of(1), priority=priority)
        assert engine.run(x_of(1))["y"].shape == (1, WIDTH)       # nothing was admitted


@pytest.mark.parametrize("kwargs,message", [
    ({"priority_levels": 2, "default_priority": 3},
     "default_priority must be between 1 and priority_levels (2)"),
    ({"priority_levels": 0}, "priority_levels must be between 1 and 64, got 0"),
    ({"timeout_action": "drop"}, "timeout_action must be 'reject' or 'delay', got 'drop'"),
    ({"queue_timeout": 0}, "queue_timeout must be at least 0.001 s"),
    ({"preferred_batch_sizes": [2]},
     "preferred_batch_sizes [2] shape the dynamic batcher's batches, which is off"),
    ({"preferred_batch_sizes": [2, 16], "max_delay_ms": 1},
     "preferred_batch_sizes [16] exceed the pipeline's largest batch (8 rows)"),
    ({"preferred_batch_sizes": [2, 2], "max_delay_ms": 1}, "preferred_batch_sizes must not repeat a size"),
    ({"preferred_batch_sizes": 4, "max_delay_ms": 1}, "preferred_batch_sizes must be a list of batch sizes"),
])
def test_bad_policy_options_are_refused_at_compile(quick, kwargs, message):
    with pytest.raises(PipelineError) as info:
        compile_chain([quick], **kwargs)
    assert message in str(info.value)


def test_a_full_queue_rejects_and_counts_per_priority(slow):
    with compile_chain([slow], depth=1, max_queue=2, priority_levels=2) as engine:
        running = engine.submit(x_of(0))
        waiting = [engine.submit(x_of(1), block=False), engine.submit(x_of(2), block=False, priority=1)]
        with pytest.raises(EngineBusy, match="admission queue is full"):
            engine.submit(x_of(3), block=False, priority=1)
        with pytest.raises(EngineBusy):
            engine.submit(x_of(4), block=False)
        for f in [running, *waiting]:
            f.result(30)
        stats = engine.stats()["serving"]
    assert stats["rejected"] == 2
    assert stats["priorities"][1]["rejected"] == 1 and stats["priorities"][2]["rejected"] == 1


def test_the_default_queue_timeout_rejects_what_waited_too_long(slow):
    with compile_chain([slow], depth=1, queue_timeout=0.02) as engine:
        running = engine.submit(x_of(0))
        late = engine.submit(x_of(1))
        with pytest.raises(TimeoutError, match="not started within its timeout of 0.020 s"):
            late.result(30)
        np.testing.assert_allclose(running.result(30)["y"], chain_reference([slow], x_of(0)["x"]), rtol=1e-5)
        kept = engine.submit(x_of(2), timeout=30)       # a request's own timeout overrides the default
        np.testing.assert_allclose(kept.result(30)["y"], chain_reference([slow], x_of(2)["x"]), rtol=1e-5)
        stats = engine.stats()["serving"]
    assert stats["priorities"][1]["rejected"] == 1 and stats["rejected"] == 1 and stats["delayed"] == 0


def test_delay_runs_a_timed_out_request_after_the_others(slow):
    with compile_chain([slow], depth=1, queue_timeout=0.02, timeout_action="delay") as engine:
        running = engine.submit(x_of(0))
        delayed = engine.submit(x_of(1))
        wait_for(lambda: engine.stats()["serving"]["delayed"] == 1)
        fresh = engine.submit(x_of(2), timeout=30)     # came later, did not time out: goes first
        order = finish_order([("delayed", delayed), ("fresh", fresh)])
        running.result(30)
        outs = {"delayed": delayed.result(30)["y"], "fresh": fresh.result(30)["y"]}
        stats = engine.stats()["serving"]
    assert order == ["fresh", "delayed"]
    np.testing.assert_allclose(outs["delayed"], chain_reference([slow], x_of(1)["x"]), rtol=1e-5)
    np.testing.assert_allclose(outs["fresh"], chain_reference([slow], x_of(2)["x"]), rtol=1e-5)
    assert stats["delayed"] == 1 and stats["rejected"] == 0 and stats["priorities"][1]["delayed"] == 1


def test_delayed_requests_stay_behind_every_priority(slow):
    with compile_chain([slow], depth=1, priority_levels=2, queue_timeout=0.02,
                       timeout_action="delay") as engine:
        running = engine.submit(x_of(0))
        delayed = engine.submit(x_of(1), priority=1)
        wait_for(lambda: engine.stats()["serving"]["delayed"] == 1)
        low = engine.submit(x_of(2), priority=2, timeout=30)
        order = finish_order([("delayed", delayed), ("low", low)])
        for f in (running, delayed, low):
            f.result(30)
    assert order == ["low", "delayed"]


def test_a_preferred_batch_size_goes_without_waiting_the_delay(quick):
    # the delay is a minute: only the preferred size can send the first two rows before the
    # results' 30 s wait runs out; the third row waits alone until its delay or the close
    with compile_chain([quick], depth=2, max_delay_ms=60000, preferred_batch_sizes=[2]) as engine:
        pair = [engine.submit(x_of(k)) for k in (1, 2)]
        outs = [f.result(30)["y"] for f in pair]
        alone = engine.submit(x_of(3))
        time.sleep(0.05)
        assert not alone.done()
        stats = engine.stats()["serving"]
    assert stats["batch_rows"] == {2: 1}
    for k, out in zip((1, 2), outs, strict=True):
        np.testing.assert_allclose(out, chain_reference([quick], x_of(k)["x"]), rtol=1e-5)


def test_preferred_sizes_take_the_longest_prefix_that_matches(slow):
    with compile_chain([slow], depth=1, max_delay_ms=60000, preferred_batch_sizes=[1, 3]) as engine:
        blocker = engine.submit(x_of(0, rows=8))        # a full batch: on the device at once
        futures = [engine.submit(x_of(k)) for k in (1, 2, 3)]    # queued behind it: prefixes of 1, 2, 3 rows
        for f in [blocker, *futures]:
            f.result(30)
        stats = engine.stats()["serving"]
    assert stats["batch_rows"] == {8: 1, 3: 1}


def test_spec_files_carry_the_policy(build, tmp_path):
    model = build(dense(642), "policy_spec")
    document = {"inputs": {"x": {"dtype": "float32", "shape": [-1, WIDTH]}},
                "models": [{"name": "m", "path": model.path, "inputs": ["x"]}], "outputs": {"y": "m"},
                "compile": {"priority_levels": 3, "default_priority": 1, "queue_timeout": 2.5,
                            "timeout_action": "delay", "max_delay_ms": 1, "preferred_batch_sizes": [4, 2]}}
    pipeline, kwargs = spec.load(document)
    assert kwargs["preferred_batch_sizes"] == [2, 4]
    with pipeline.compile(**kwargs) as engine:
        plan = engine.plan
        assert (plan.priority_levels, plan.default_priority, plan.queue_timeout_ms, plan.timeout_action,
                plan.preferred_batch_sizes) == (3, 1, 2500, "delay", (2, 4))
        assert engine.run(x_of(1))["y"].shape == (1, WIDTH)


@pytest.mark.parametrize("key,value,message", [
    ("preferred_batch_sizes", [4, 4], "compile.preferred_batch_sizes: expected a list of distinct batch"),
    ("preferred_batch_sizes", "4", "compile.preferred_batch_sizes: expected a list of distinct batch"),
    ("timeout_action", "drop", "compile.timeout_action: expected one of reject, delay, got str 'drop'"),
    ("priority_levels", 65, "compile.priority_levels"),
])
def test_spec_policy_errors_name_the_key(quick, key, value, message):
    document = {"inputs": {"x": {"dtype": "float32", "shape": [-1, WIDTH]}},
                "models": [{"name": "m", "path": quick.path, "inputs": ["x"]}], "outputs": {"y": "m"},
                "compile": {key: value}}
    with pytest.raises(SpecError) as info:
        spec.parse(document)
    assert message in str(info.value)


def test_the_policy_defaults_change_nothing(quick):
    with compile_chain([quick], depth=2) as engine:
        assert engine.plan.priority_levels == 1 and engine.plan.timeout_action == "reject"
        engine.run(x_of(1))
        by = engine.stats()["serving"]["priorities"]
    assert list(by) == [1] and by[1]["queue_ms"]["count"] == 1 and by[1]["rejected"] == 0



def test_a_delayed_request_cancelled_leaves_the_queue_whole(slow):
    """A call split into pieces, delayed, then cancelled: every piece leaves the queue once
    (its line is the delayed one), and the queue's count comes back to zero."""
    with compile_chain([slow], depth=1, queue_timeout=0.02, timeout_action="delay") as engine:
        running = engine.submit(x_of(0, rows=8))
        big = engine.submit(x_of(1, rows=16))           # two pieces of 8 rows
        wait_for(lambda: engine.stats()["serving"]["delayed"] == 1)
        assert big.cancel()
        running.result(30)
        after = engine.submit(x_of(2, rows=3), timeout=30)
        np.testing.assert_allclose(after.result(30)["y"], chain_reference([slow], x_of(2, rows=3)["x"]),
                                   rtol=1e-5)
        stats = engine.stats()["serving"]
    assert stats["queued"] == 0
    assert stats["batch_rows"] == {8: 1, 3: 1}
