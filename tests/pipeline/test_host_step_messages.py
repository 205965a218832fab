"""What a host step's failures say: the rule the step broke, what it returned
and what was expected, and, for a step past the timeout, which step held the
request (and nothing left over from earlier AscendCL calls)."""

import threading
import time

import numpy as np
import pytest
from helpers.pipelines import WIDTH, dense

import ascend_engine as ae


def step_pipeline(build, step, outputs=(("y", "float32", (-1, WIDTH)),), name="cut", **host_kw):
    """x -> model a -> host step -> model b (on the step's first output) -> y."""
    a = build(dense(1), "msg1")
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, WIDTH))
    handles = pipe.host(step, pipe.model(a.path, x, name="a"), outputs=list(outputs), name=name, **host_kw)
    first = handles[0] if isinstance(handles, (tuple, list)) else handles
    pipe.output("y", pipe.model(a.path, first, name="b"))
    return pipe


def test_a_rows_same_step_returning_too_many_rows_is_told_the_exact_count(build):
    with step_pipeline(build, lambda t: np.zeros((7, WIDTH), np.float32)).compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError) as info:
            engine.run({"x": np.ones((5, WIDTH), np.float32)})
    text = str(info.value)
    assert "host step 'cut' output 'y': returned 7 rows; rows=\"same\" needs 5" in text, text
    assert "at most" not in text


def test_a_step_returning_a_list_is_told_it_returned_one_list(build):
    def as_list(t):
        return [1.0, 2.0, 3.0, 4.0, 5.0]

    with step_pipeline(build, as_list).compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError) as info:
            engine.run({"x": np.ones((1, WIDTH), np.float32)})
    text = str(info.value)
    assert ("host step 'cut' returned a list of 5 element(s); it declares 1 output(s): y, so it must return "
            "one numpy array") in text, text
    assert "5 value(s)" not in text


def test_a_list_for_two_outputs_is_told_to_be_a_tuple_of_two(build):
    outputs = (("y", "float32", (-1, WIDTH)), ("z", "float32", (-1, WIDTH)))
    with step_pipeline(build, lambda t: [t.copy()], outputs=outputs).compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError) as info:
            engine.run({"x": np.ones((1, WIDTH), np.float32)})
    assert ("host step 'cut' returned a list of 1 element(s); it declares 2 output(s): y, z, so it must "
            "return a tuple of 2 numpy arrays") in str(info.value), str(info.value)


def test_a_list_of_one_array_per_output_still_runs(build):
    with step_pipeline(build, lambda t: [t.copy()]).compile(depth=2) as engine:
        assert engine.run({"x": np.ones((2, WIDTH), np.float32)})["y"].shape == (2, WIDTH)


@pytest.mark.parametrize("how", ["run", "submit"])
def test_a_step_past_the_timeout_is_named_without_stale_runtime_text(build, how):
    release = threading.Event()

    def slow(t):
        release.wait(10)
        return t.copy()

    with step_pipeline(build, slow, name="slowstep").compile(depth=2, timeout=0.3) as engine:
        t0 = time.monotonic()
        try:
            with pytest.raises(ae.AclTimeoutError) as info:
                if how == "run":
                    engine.run({"x": np.ones((1, WIDTH), np.float32)})
                else:
                    engine.submit({"x": np.ones((1, WIDTH), np.float32)}).result(timeout=30)
            assert time.monotonic() - t0 < 5.0
        finally:
            release.set()
    text = str(info.value)
    assert "a request did not complete within 300 ms" in text, text
    assert "host step 'slowstep' was still running" in text, text
    assert info.value.node == "slowstep"
    # no recent-error text of some earlier AscendCL call on the waiting thread
    assert "aclrtGetCurrentContext" not in text and "current context" not in text, text
