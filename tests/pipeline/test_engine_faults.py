"""Executor failures: device faults, call failures, bad feeds, out of memory,
budgets and timeouts each give the documented error, then the engine (or
the next compile) works again and no device memory is lost."""

import numpy as np
import pytest
from helpers import simlib
from helpers.pipelines import WIDTH, chain_reference, compile_chain, dense

import ascend_engine as ae


@pytest.fixture(scope="module")
def models(build):
    return [build(dense(80 + i), f"fault{i}", latency_us=200) for i in range(3)]


def free_bytes():
    with ae.Device(0) as dev:
        return dev.memory_info().free


def check_works(engine, models, rows=24):
    x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
    out = engine.run_batch({"x": x}, batch_size=4)
    np.testing.assert_allclose(out["y"], chain_reference(models, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("depth", [1, 4])
def test_device_failure_mid_stream_names_the_node_then_recovers(models, sim_faults, depth):
    with compile_chain(models, depth=depth) as engine:
        check_works(engine, models)
        free_before = free_bytes()
        # the 8th model execution from now fails on the device; at depth 1 the
        # executions run strictly in order, so that is request 2's node m1
        sim_faults("task:execute@8=507011")
        x = np.ones((40, WIDTH), np.float32)
        with pytest.raises(ae.DeviceError) as info:
            engine.run_batch({"x": x}, batch_size=4)
        err = info.value
        assert err.code == 507011 and err.name == "ACL_ERROR_RT_MODEL_EXECUTE"
        expected_node = "m1" if depth == 1 else err.node
        assert err.node == expected_node and err.node in ("m0", "m1", "m2")
        assert f"node '{err.node}'" in str(err) and "injected" in str(err)
        stats = engine.stats()
        assert stats["failures"] >= 1 and stats["in_flight"] == 0
        sim_faults(None)
        check_works(engine, models)
        assert free_bytes() == free_before


def test_call_failure_while_enqueueing_names_call_and_node(models, sim_faults):
    with compile_chain(models) as engine:
        sim_faults("aclmdlExecuteAsync@5=507000")
        with pytest.raises(ae.AclError) as info:
            engine.run_batch({"x": np.ones((40, WIDTH), np.float32)}, batch_size=4)
        assert info.value.function == "aclmdlExecuteAsync"
        assert info.value.code == 507000 and info.value.node == "m1"
        sim_faults(None)
        check_works(engine, models)


def test_requests_cancelled_by_a_failure_say_so(models, sim_faults):
    with compile_chain(models, depth=4) as engine:
        feeds = [{"x": np.full((2, WIDTH), i, np.float32)} for i in range(12)]
        sim_faults("task:execute@10=507011")
        results = engine.run_many(feeds)
        with pytest.raises(ae.DeviceError):
            list(results)
        sim_faults(None)
        check_works(engine, models)


def test_bad_feeds_are_rejected_before_anything_is_submitted(models):
    with compile_chain(models) as engine:
        before = engine.stats()["requests"]
        good = np.zeros((4, WIDTH), np.float32)
        cases = [
            ({}, r"missing \['x'\]"),
            ({"x": good, "z": good}, r"unexpected \['z'\]"),
            ({"x": good.astype(np.float64)}, "input 'x': expected dtype float32, got float64"),
            ({"x": np.zeros((4, WIDTH + 1), np.float32)},
             r"input 'x': expected shape \(batch, 16\), got \(4, 17\)"),
            ({"x": np.zeros((0, WIDTH), np.float32)}, "no rows"),
        ]
        for feeds, message in cases:
            with pytest.raises(ValueError, match=message):
                engine.run(feeds)
        with pytest.raises(TypeError, match="feeds must be a dict"):
            engine.run([good])
        assert engine.stats()["requests"] == before
        # non-contiguous input is copied, and gives the right numbers
        wide = np.random.default_rng(0).standard_normal((6, 2 * WIDTH)).astype(np.float32)
        view = wide[:, ::2]
        assert not view.flags.c_contiguous
        out = engine.run({"x": view})
        np.testing.assert_allclose(out["y"], chain_reference(models, np.ascontiguousarray(view)),
                                   rtol=1e-4, atol=1e-5)


def test_out_of_memory_at_compile_then_a_smaller_plan_works(models):
    code = f"""
        import numpy as np, ascend_engine as ae
        pipe = ae.Pipeline(device=0)
        h = pipe.input("x", "float32", (-1, {WIDTH}))
        for i, path in enumerate({[m.path for m in models]!r}):
            h = pipe.model(path, h, name=f"m{{i}}")
        pipe.output("y", h)
        with ae.Device(0) as dev:
            before = dev.memory_info().free
            try:
                pipe.compile(depth=200)
            except ae.OutOfMemoryError as exc:
                print("OOM", exc.function, exc.code, "arena" in str(exc))
            assert dev.memory_info().free == before, (dev.memory_info().free, before)
            with pipe.compile(depth=2) as engine:
                out = engine.run({{"x": np.ones((3, {WIDTH}), np.float32)}})
                print("OK", out["y"].shape)
    """
    proc = simlib.run_python(code, env={"ASCEND_SIM_DEVICE_MEMORY": "200KiB", "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stderr
    assert "OOM aclrtMalloc 207001 True" in proc.stdout
    assert "OK (3, 16)" in proc.stdout


def test_event_budget_is_checked_at_compile(models):
    code = f"""
        import ascend_engine as ae
        pipe = ae.Pipeline(device=0)
        h = pipe.input("x", "float32", (-1, {WIDTH}))
        for i, path in enumerate({[m.path for m in models]!r}):
            h = pipe.model(path, h, name=f"m{{i}}")
        pipe.output("y", h)
        try:
            pipe.compile(depth=8)
        except ae.ResourceError as exc:
            print("BUDGET", exc.code, "lower depth" in str(exc))
        with pipe.compile(depth=2):
            print("OK")
    """
    proc = simlib.run_python(code, env={"ASCEND_SIM_MAX_EVENTS": "20", "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stderr
    assert "BUDGET 207007 True" in proc.stdout and "OK" in proc.stdout


def test_a_stalled_device_times_out_on_time_and_the_engine_recovers(models, sim_faults):
    with compile_chain(models, depth=2, timeout=0.3) as engine:
        sim_faults("stall:execute@1=3000")
        with pytest.raises(ae.AclTimeoutError) as info:
            engine.run({"x": np.ones((2, WIDTH), np.float32)})
        assert "did not complete within 300 ms" in str(info.value)
        # The error came on time, while the device is still stalled: the
        # abandoned work still owns the slots, and the engine says so rather
        # than waiting for the stall (or reusing memory the device writes).
        with pytest.raises(ae.AclTimeoutError, match="still running requests abandoned after a timeout"):
            engine.run({"x": np.ones((2, WIDTH), np.float32)})
        sim_faults(None)
        for _attempt in range(100):   # usable again once the stall is over
            try:
                check_works(engine, models)
                break
            except ae.AclTimeoutError as exc:
                assert "abandoned after a timeout" in str(exc)
        else:
            pytest.fail("the engine did not recover after the stall ended")
        assert engine.stats()["failures"] == 1


def test_closed_engine_refuses_work(models):
    engine = compile_chain(models)
    engine.close()
    engine.close()  # idempotent
    assert engine.closed
    with pytest.raises(ae.EngineError, match="closed"):
        engine.run({"x": np.ones((1, WIDTH), np.float32)})
