"""Requests off the happy path: abandoned generators, failures that must reach
the right caller, cancellation that is a property of the request, close()
under faults, and fork()."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, compile_chain, dense

import ascend_engine as ae


@pytest.fixture(scope="module")
def slow(build):
    """One model with 3 ms of device time: requests stay in flight a while."""
    return build(dense(301), "slow1", latency_us=3000)


@pytest.fixture(scope="module")
def chain(build):
    return [build(dense(310 + i), f"req{i}", latency_us=300) for i in range(3)]


def rows(seed, n=2):
    return np.random.default_rng(seed).standard_normal((n, WIDTH)).astype(np.float32)


def free_bytes():
    with ae.Device(0) as dev:
        return dev.memory_info().free


def run_child(script, timeout=120):
    """Run a Python script in a child process (crashes and hangs stay there)."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # the child imports the package of this checkout, whatever is installed
    path = os.pathsep.join(p for p in (os.path.dirname(tests), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim", PYTHONPATH=path)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=tests)


# ---- defect: an abandoned run_many left the executor writing into freed arrays ------------

ABANDON_SCRIPT = """
import gc, sys
import numpy as np
import ascend_engine as ae
from helpers.pipelines import WIDTH
pipe = ae.Pipeline(0)
x = pipe.input("x", "float32", (-1, WIDTH))
pipe.output("y", pipe.model(sys.argv[1] if len(sys.argv) > 1 else {path!r}, x, name="m"))
engine = pipe.compile(depth=8)
rng = np.random.default_rng(0)
for round_ in range(30):
    feeds = [{{"x": rng.standard_normal((8, WIDTH)).astype(np.float32)}} for _ in range(16)]
    for out in engine.run_many(iter(feeds)):
        break                      # abandon with 7 requests in flight
    gc.collect()
    junk = [np.full((8, WIDTH), 7.0, np.float32) for _ in range(64)]   # reuse the freed memory
    x = rng.standard_normal((8, WIDTH)).astype(np.float32)
    y = engine.run({{"x": x}})["y"]   # completes the abandoned requests first
    assert np.isfinite(y).all()
    assert not any((j != 7.0).any() for j in junk), "an abandoned request wrote into foreign memory"
engine.close()
print("ok", engine.stats() if not engine.closed else "closed")
"""


def test_abandoned_run_many_never_writes_into_freed_memory(slow):
    result = run_child(ABANDON_SCRIPT.format(path=slow.path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")


def test_run_many_abandoned_by_break_then_the_engine_gives_right_numbers(slow):
    with compile_chain([slow], depth=8) as engine:
        feeds = [{"x": rows(i, 3)} for i in range(20)]
        gen = engine.run_many(iter(feeds))
        first = next(gen)
        np.testing.assert_allclose(first["y"], slow.ref(x=feeds[0]["x"]), rtol=1e-5, atol=1e-6)
        del gen
        x = rows(99, 5)
        np.testing.assert_allclose(engine.run({"x": x})["y"], slow.ref(x=x), rtol=1e-5, atol=1e-6)
        st = engine.stats()
        assert st["in_flight"] == 0 and st["failures"] == 0
        assert st["requests"] == 9     # 8 of the generator (1 delivered, 7 completed unread) + run()


def test_exception_in_the_loop_body_and_a_bad_feed_later_lose_nothing(slow):
    with compile_chain([slow], depth=4) as engine:
        feeds = [{"x": rows(i)} for i in range(10)]
        with pytest.raises(KeyError):
            for k, _out in enumerate(engine.run_many(iter(feeds))):
                if k == 2:
                    raise KeyError("the caller's own bug")
        bad = [{"x": rows(1)}, {"x": rows(2)}, {"x": rows(3).astype(np.float64)}]
        got = []
        with pytest.raises(ValueError, match="expected dtype float32, got float64"):
            for out in engine.run_many(iter(bad)):
                got.append(out["y"])
        # the two good requests were submitted before the bad feed was seen
        # (the generator fails while they are still in flight)
        assert got == []
        x = rows(5)
        np.testing.assert_allclose(engine.run({"x": x})["y"], slow.ref(x=x), rtol=1e-5, atol=1e-6)
        assert engine.stats()["failures"] == 0


# ---- defect: cancellation was kept in a history of 16 failures -----------------------------

def test_a_request_cancelled_long_ago_still_raises_instead_of_returning_garbage(slow, sim_faults):
    with compile_chain([slow], depth=4) as engine:
        # request 1 holds the stream for 500 ms, so requests 1-3 are still in
        # flight when every enqueue after the generator's four fails: the
        # first failure (request 4's) cancels them, and 19 more follow
        sim_faults("stall:execute@2=500,aclmdlExecuteAsync@5+=507000")
        gen = engine.run_many(iter([{"x": rows(i)} for i in range(8)]))
        next(gen)                        # requests 1-3 are in flight, suspended
        for k in range(20):
            with pytest.raises(ae.AclError) as info:
                engine.run({"x": rows(100 + k)})
            # a request that never ran takes no number: each retry is request 4
            assert info.value.function == "aclmdlExecuteAsync" and info.value.request == 4
        sim_faults(None)
        with pytest.raises(ae.EngineError, match=r"request 1 was cancelled because request 4 failed"):
            next(gen)                    # ... request 1 still knows it was cancelled
        assert engine.stats()["failures"] == 20 + 3


# ---- defect: errors went to the wrong caller ------------------------------------------------

def test_the_failing_request_gets_the_device_error_and_others_are_told_why(slow, sim_faults):
    with compile_chain([slow], depth=4) as engine:
        feeds = [{"x": rows(i)} for i in range(8)]
        # the generator's request 1 fails, after holding its stream 1 s (so that the next
        # caller's request is in flight behind it, even when a loaded host is slow to submit it)
        sim_faults("stall:execute@2=1000,task:execute@2=507011")
        gen = engine.run_many(iter(feeds))
        np.testing.assert_allclose(next(gen)["y"], slow.ref(x=feeds[0]["x"]), rtol=1e-5, atol=1e-6)
        # another caller's request goes in behind the failing one: it is
        # cancelled with the reason, it does not receive the device error
        with pytest.raises(ae.EngineError) as other:
            engine.run({"x": rows(50)})
        assert not isinstance(other.value, ae.AclError)
        assert "request 4 was cancelled because request 1 failed" in str(other.value)
        with pytest.raises(ae.DeviceError) as own:
            next(gen)
        assert own.value.code == 507011 and own.value.node == "m0" and own.value.request == 1
        x = rows(60)
        np.testing.assert_allclose(engine.run({"x": x})["y"], slow.ref(x=x), rtol=1e-5, atol=1e-6)


def test_a_failed_input_copy_is_blamed_on_the_copy_not_on_a_model(chain, sim_faults):
    with compile_chain(chain, depth=2) as engine:
        sim_faults("task:memcpy@1=507899")          # the first H2D copy fails on the device
        with pytest.raises(ae.AclError) as info:
            engine.run({"x": rows(1)})
        err = info.value
        assert err.code == 507899 and err.node is None and err.function == "aclrtMemcpyAsync"
        assert "copy of the request's inputs to the device failed" in str(err)
        sim_faults(None)
        x = rows(2, 7)
        np.testing.assert_allclose(engine.run({"x": x})["y"], chain_reference(chain, x), rtol=1e-4, atol=1e-5)


def test_an_older_callers_failure_does_not_fail_a_new_submission(slow, sim_faults):
    """run() needs a slot held by a failed request of a generator: the failure
    goes to the generator, and run()'s own request is submitted afterwards."""
    with compile_chain([slow], depth=2) as engine:
        sim_faults("task:execute@1=507011")
        gen = engine.run_many(iter([{"x": rows(i)} for i in range(2)]))
        # run the generator until both its requests are submitted (it yields
        # the first result only after the second feed is submitted)
        with pytest.raises(ae.DeviceError) as own:
            next(gen)
        assert own.value.request == 0
        x = rows(9)
        np.testing.assert_allclose(engine.run({"x": x})["y"], slow.ref(x=x), rtol=1e-5, atol=1e-6)


# ---- defect: close() under faults -------------------------------------------------------------

@pytest.mark.parametrize("rule, function", [("aclrtFree@1=507899", "aclrtFree"),
                                            ("aclrtDestroyEvent@1+=107000", "aclrtDestroyEvent")])
def test_close_reports_releases_that_failed_and_stays_closed(chain, sim_faults, rule, function):
    engine = compile_chain(chain, depth=2)
    engine.run({"x": rows(1)})
    sim_faults(rule)
    with pytest.raises(ae.EngineError, match=f"release\\(s\\) failed: .*{function}") as info:
        engine.close()
    if "+=" in rule:   # every event release failed: the count is given
        assert "more releases failed" in str(info.value)
    sim_faults(None)
    assert engine.closed
    engine.close()   # idempotent: nothing left to release, nothing raised
    with pytest.raises(ae.EngineError, match="the engine is closed"):
        engine.run({"x": rows(2)})


def test_close_keeps_releasing_after_a_model_fails_to_unload(chain, sim_faults):
    free0 = free_bytes()
    with ae.Device(0) as dev:
        before = dev.memory_info().free
        m = ae.Model.load(chain[0].path, device=dev)
        one_model = before - dev.memory_info().free
        m.close()
    assert one_model > 0
    engine = compile_chain(chain, depth=2)
    engine.run({"x": rows(1)})
    sim_faults("aclmdlUnload@1=507899")
    with pytest.raises(ae.EngineError, match="aclmdlUnload"):
        engine.close()
    sim_faults(None)
    assert engine.closed
    # only the model whose unload failed is still on the device; the arena,
    # the other two models and the device reference were all released
    assert free0 - free_bytes() == one_model


# ---- defect: fork() -----------------------------------------------------------------------------

FORK_SCRIPT = """
import os, sys, time
import numpy as np
import ascend_engine as ae
pipe = ae.Pipeline(0)
x = pipe.input("x", "float32", (-1, 16))
pipe.output("y", pipe.model({path!r}, x, name="m"))
engine = pipe.compile(depth=2)
dev = ae.Device(0)
stream = ae.Stream(dev)
engine.run({{"x": np.ones((2, 16), np.float32)}})
pid = os.fork()
if pid == 0:
    codes = []
    for attempt in (lambda: engine.run({{"x": np.ones((2, 16), np.float32)}}),
                    lambda: stream.synchronize(),
                    lambda: ae.Device(0),
                    lambda: ae.devices()):
        try:
            attempt()
            codes.append("no error")
        except ae.ForkedProcessError as exc:
            codes.append("forked" if "forked from pid" in str(exc) else str(exc))
    print("child", codes, flush=True)
    sys.exit(0)          # normal exit: atexit hooks run and must not hang
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("child hung", flush=True)
    sys.exit(1)
print("child exit", os.waitstatus_to_exitcode(status), flush=True)
y = engine.run({{"x": np.ones((2, 16), np.float32)}})["y"]   # the parent is unaffected
print("parent ok", bool(np.isfinite(y).all()), flush=True)
"""


def test_a_forked_child_gets_clear_errors_and_exits_cleanly(slow):
    result = run_child(FORK_SCRIPT.format(path=slow.path))
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "child ['forked', 'forked', 'forked', 'forked']" in lines
    assert "child exit 0" in lines and "parent ok True" in lines


# ---- defect: fixed-shape outputs of dynamic-batch models were read as rows --------------------

def test_a_fixed_shape_output_is_refused_where_a_pipeline_would_carry_it_as_rows(tmp_path):
    from ascend_engine import sim

    g = sim.Graph("table")
    x = g.input("x", "float32", (-1, WIDTH))
    g.output("y", g.relu(x))
    g.output("classes", g.const(np.ones((2, 3), np.float32)))
    path = tmp_path / "table.om"
    g.save(str(path), batch_sizes=(1, 2, 4))
    pipe = ae.Pipeline(0)
    y, classes = pipe.model(str(path), pipe.input("x", "float32", (-1, WIDTH)), name="det")
    pipe.output("y", y)
    pipe.output("classes", classes)
    with pytest.raises(ae.PipelineError, match=r"pipeline output 'classes': output 'classes' of model node "
                                               r"'det' has the fixed shape \(2, 3\) \(no batch dimension\)"):
        pipe.plan()
    # left unused, it is harmless and the rows are right
    pipe = ae.Pipeline(0)
    y, _classes = pipe.model(str(path), pipe.input("x", "float32", (-1, WIDTH)), name="det")
    pipe.output("y", y)
    with pipe.compile(depth=2) as engine:
        xs = rows(3, 9)
        np.testing.assert_array_equal(engine.run_batch({"x": xs}, batch_size=3)["y"], np.maximum(xs, 0))


# ---- a node whose outputs reach no output must still be over when its slot is reused ---------

def test_a_request_is_over_only_when_every_node_is(build, tmp_path):
    import json

    slow_sink = build(dense(330), "sink_slow", latency_us=8000)
    fast = build(dense(331), "sink_fast", latency_us=500)
    pipe = ae.Pipeline(0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.model(slow_sink.path, x, name="audit")          # its output reaches no pipeline output
    pipe.output("y", pipe.model(fast.path, x, name="main"))
    with pipe.compile(depth=2, profile=True) as engine:
        engine.trace(str(tmp_path / "t.json"), requests=6)
        xs = rows(7, 5)
        np.testing.assert_allclose(engine.run({"x": xs})["y"], fast.ref(x=xs), rtol=1e-5, atol=1e-6)
    spans = [e for e in json.load(open(tmp_path / "t.json"))["traceEvents"] if e["ph"] == "X"]
    for request in {e["args"]["request"] for e in spans}:
        audit = next(e for e in spans if e["args"]["request"] == request and e["name"] == "audit")
        d2h = next(e for e in spans if e["args"]["request"] == request and e["name"] == "D2H")
        # the request's done event (after its D2H) follows the audit node too,
        # so the slot is not reused while it still reads the slot's input
        assert d2h["ts"] + d2h["dur"] >= audit["ts"] + audit["dur"], (request, audit, d2h)


def test_a_submission_held_up_by_an_older_failure_goes_in_after_it(slow, sim_faults):
    """run_many B needs a slot still held by generator A's request, which
    failed: completing it fails, but that failure is A's; B's submission goes
    in once the engine has drained (B's request already in flight is cancelled,
    saying why)."""
    with compile_chain([slow], depth=2) as engine:      # no submit(): no engine threads
        sim_faults("task:execute@2=507011")              # A's second request (request 1) fails
        gen_a = engine.run_many(iter([{"x": rows(i)} for i in range(3)]))
        next(gen_a)                                      # request 0 delivered; request 1 in flight
        gen_b = engine.run_many(iter([{"x": rows(10)}, {"x": rows(11)}]))
        with pytest.raises(ae.EngineError, match="request 2 was cancelled because request 1 failed") as info:
            next(gen_b)                                  # b0 (request 2) was in flight when request 1 failed
        assert not isinstance(info.value, ae.AclError)
        with pytest.raises(ae.DeviceError) as own:
            next(gen_a)
        assert own.value.request == 1
        x = rows(12)
        np.testing.assert_allclose(engine.run({"x": x})["y"], slow.ref(x=x), rtol=1e-5, atol=1e-6)


def _with_a_host_step(models):
    pipe = ae.Pipeline(device=0)
    h = pipe.model(models[0].path, pipe.input("x", "float32", (-1, WIDTH)), name="m0")
    h = pipe.host(lambda a: a * 2, h, outputs=[("twice", "float32", (-1, WIDTH))], name="twice")
    pipe.output("y", pipe.model(models[1].path, h, name="m1"))
    return pipe.compile(depth=2)


def test_a_plain_plan_runs_many_and_batches_on_the_executor_a_host_step_plan_through_the_server(chain):
    """One request path: with host steps, run_many and run_batch submit their
    requests (the server puts them on the device); a plain plan keeps its
    fast paths, which the server never sees."""
    x = np.random.default_rng(3).standard_normal((6, WIDTH)).astype(np.float32)
    halves = [{"x": x[:3]}, {"x": x[3:]}]
    with compile_chain(chain, depth=2) as plain:
        np.testing.assert_allclose(np.concatenate([o["y"] for o in plain.run_many(halves)]),
                                   chain_reference(chain, x), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(plain.run_batch({"x": x}, batch_size=2)["y"], chain_reference(chain, x),
                                   rtol=1e-5, atol=1e-5)
        assert plain.stats()["serving"]["batch_rows"] == {}
    m0, m1 = chain[0], chain[1]
    expected = m1.ref(x=m0.ref(x=x) * 2)
    with _with_a_host_step(chain) as steps:
        np.testing.assert_allclose(np.concatenate([o["y"] for o in steps.run_many(halves)]), expected,
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(steps.run_batch({"x": x}, batch_size=2)["y"], expected,
                                   rtol=1e-5, atol=1e-5)
        assert steps.stats()["serving"]["batch_rows"] == {3: 2, 2: 3}
