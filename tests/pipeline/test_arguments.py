"""Arguments out of range or of the wrong type: a clear error naming the
argument, what is allowed and what was given; never an OverflowError, a
silent truncation or an engine that fails every request later."""

import math

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense

import ascend_engine as ae
from ascend_engine import errors


@pytest.fixture(scope="module")
def model(build):
    return build(dense(401), "args")


def pipeline(model):
    pipe = ae.Pipeline(0)
    pipe.output("y", pipe.model(model.path, pipe.input("x", "float32", (-1, WIDTH)), name="m"))
    return pipe


@pytest.mark.parametrize("kwargs, message", [
    ({"depth": 1e11}, "depth must be an integer, got 100000000000.0 (float)"),
    ({"depth": 10**11}, "depth must be between 1 and 4096, got 100000000000"),
    ({"depth": "4"}, "depth must be an integer, got '4' (str)"),
    ({"timeout": math.inf}, "timeout must be a finite number of seconds, or None to wait forever, got inf"),
    ({"timeout": math.nan}, "timeout must be a finite number of seconds, or None to wait forever, got nan"),
    ({"timeout": "5"}, "timeout must be a number of seconds or None (wait forever), got '5' (str)"),
    ({"timeout": -1}, "timeout must be at least 0.001 s"),
    ({"timeout": 0.0004}, "timeout must be at least 0.001 s"),
    ({"timeout": 1e10}, "timeout must be at most 2147483 s"),
    ({"device": 2**70}, "device must be a device id between 0 and 1023"),
])
def test_compile_options_are_checked(model, kwargs, message):
    with pytest.raises(ae.PipelineError) as info:
        pipeline(model).plan(**kwargs)
    assert message in str(info.value)


def test_a_millisecond_timeout_is_kept_not_rounded_to_zero(model):
    assert pipeline(model).plan(timeout=0.001).timeout_ms == 1
    assert pipeline(model).plan(timeout=0.0015).timeout_ms == 2
    assert pipeline(model).plan(timeout=None).timeout_ms == -1


@pytest.mark.parametrize("shape, message", [
    ((-1, 2**62), "dimensions from 1 to 2147483647"),
    ((-1, 2.5), "dimension 1 must be an integer, got 2.5 (float)"),
    ((-1, 2**20, 2**21), "holds 2199023255552 items"),
    ((4, 0), "-1 (or None) in any dimension"),   # -1 after the first: a shaped input (dynamic shapes)
    (5, "shape must be a sequence of dimensions"),
])
def test_input_shapes_are_checked(shape, message):
    with pytest.raises(ae.PipelineError) as info:
        ae.Pipeline(0).input("x", "float32", shape)
    assert message in str(info.value) and "input 'x'" in str(info.value)


def test_none_is_the_batch_dimension():
    assert ae.Pipeline(0).input("x", "float32", (None, 8)).shape == (-1, 8)


@pytest.mark.parametrize("batch_size, error, message", [
    (2**70, ValueError, "batch_size must be between 1 and 4611686018427387904, got 1180591620717411303424"),
    (2.7, ValueError, "batch_size must be an integer, got 2.7 (float)"),
    ("4", ValueError, "batch_size must be an integer, got '4' (str)"),
    (0, ValueError, "batch_size must be between 1"),
    (True, ValueError, "batch_size must be an integer, got True (bool)"),
])
def test_run_batch_sizes_are_checked(model, batch_size, error, message):
    with compile_chain([model], depth=2) as engine:
        with pytest.raises(error) as info:
            engine.run_batch({"x": np.ones((4, WIDTH), np.float32)}, batch_size=batch_size)
        assert message in str(info.value)
        assert engine.run_batch({"x": np.ones((4, WIDTH), np.float32)}, batch_size=np.int64(3))["y"].shape \
            == (4, WIDTH)


def test_trace_on_a_closed_engine_says_closed(model):
    engine = compile_chain([model], depth=2)
    engine.close()
    with pytest.raises(ae.EngineError, match="the engine is closed"):
        engine.trace("never.json")


def test_replicas_refuse_empty_inputs_and_zero_batches(model):
    with pipeline(model).compile_replicas([0, 1], depth=2) as reps:
        with pytest.raises(ValueError, match="the inputs have no rows"):
            reps.run_batch({"x": np.ones((0, WIDTH), np.float32)})
        with pytest.raises(ValueError, match="batch_size must be between 1"):
            reps.run_batch({"x": np.ones((4, WIDTH), np.float32)}, batch_size=0)
        assert reps.run_batch({"x": np.ones((5, WIDTH), np.float32)}, batch_size=2)["y"].shape == (5, WIDTH)


def test_host_allocation_failures_are_not_hinted_as_device_memory():
    for function in ("aclCreateDataBuffer", "aclmdlCreateDataset"):
        hint = errors.hint_for(200000, function)
        assert "host memory" in hint and "device memory exhausted" not in hint
    assert "device memory" in errors.hint_for(207001, "aclrtMalloc")
