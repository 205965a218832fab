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


@pytest.mark.parametrize("device, message", [
    (1.5, "device must be a device id (an integer), got 1.5 (float)"),
    ("0", "device must be a device id (an integer), got '0' (str)"),
    (2**70, "device must be a device id between 0 and 1023, got 1180591620717411303424"),
    ("abc", "device must be a device id (an integer), got 'abc' (str)"),
    (None, "device must be a device id (an integer), got None (NoneType)"),
    (True, "device must be a device id (an integer), got True (bool)"),
])
def test_a_pipeline_device_is_a_device_id(device, message):
    """Pipeline(1.5) once compiled on device 1 and Pipeline('0') was accepted."""
    with pytest.raises(ae.PipelineError) as info:
        ae.Pipeline(device)
    assert str(info.value) == message


def test_a_model_node_device_is_a_device_id(model):
    pipe = ae.Pipeline(0)
    with pytest.raises(ae.PipelineError) as info:
        pipe.model(model.path, pipe.input("x", "float32", (-1, WIDTH)), name="m", device="1")
    assert str(info.value) == "model node 'm': device must be a device id (an integer), got '1' (str)"


@pytest.mark.parametrize("dtype", ["object", "U4", "complex64", "datetime64[s]", np.dtype([("a", "f4")])])
def test_tensors_hold_numeric_or_bool_dtypes_only(dtype):
    """An object input once reached the executor, which copied its PyObject pointers as raw bytes."""
    pipe = ae.Pipeline(0)
    with pytest.raises(ae.PipelineError, match=r"^input 'x': expected a numeric or bool dtype, got "):
        pipe.input("x", dtype, (-1, 4))
    x = pipe.input("x", "float32", (-1, 4))
    with pytest.raises(ae.PipelineError, match=r"^host step 's': output 'o': expected a numeric or bool "):
        pipe.host(lambda a: (a,), x, outputs=[("o", dtype, (-1, 4))], name="s")
    with pytest.raises(ae.PipelineError, match=r"^input 'y': expected a dtype such as 'float32' or 'int8', "
                                               r"got 'float33'"):
        pipe.input("y", "float33", (-1, 4))


def test_the_compile_options_come_from_the_one_table(model, monkeypatch):
    """Pipeline.plan checks each option with the table's rule: a limit changed there is the limit here."""
    import dataclasses

    from ascend_engine.options import OPTIONS

    monkeypatch.setitem(OPTIONS, "depth", dataclasses.replace(OPTIONS["depth"], maximum=2))
    with pytest.raises(ae.PipelineError, match="^depth must be between 1 and 2, got 3$"):
        pipeline(model).plan(depth=3)
    only_upper = dataclasses.replace(OPTIONS["gear_policy"], choices=("upper",))
    monkeypatch.setitem(OPTIONS, "gear_policy", only_upper)
    with pytest.raises(ae.PipelineError, match="^gear_policy must be one of upper, got 'lower'$"):
        pipeline(model).plan(depth=2, gear_policy="lower")


def test_a_bad_simulator_variable_is_the_runtimes_error_not_a_model_nodes(model):
    """A bad ASCEND_SIM_* value was reported as "model node 'm': aclInit failed ..."."""
    from helpers import simlib

    proc = simlib.run_python(
        f"""
        import ascend_engine as ae
        pipe = ae.Pipeline(0)
        try:
            pipe.model({str(model.path)!r}, pipe.input("x", "float32", (-1, 4)), name="m")
        except ae.AclError as exc:
            print(type(exc).__name__, isinstance(exc, ae.PipelineError), exc.function)
        """,
        env={"ASCEND_SIM_DEVICE_MEMORY": "banana"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["InvalidParamError", "False", "aclInit"]


def test_a_huge_wrong_argument_is_shown_bounded(model):
    # trace(requests=[one feeds dict per request]) is a natural mistake: the message names the
    # argument and shows what was given in at most 40 characters, not every array in the list
    feeds = [{"x": np.zeros((64, WIDTH), np.float32)}] * 50
    with compile_chain([model], depth=2, profile=True) as engine:
        with pytest.raises(ValueError) as refused:
            engine.trace("unused.json", requests=feeds)
    message = str(refused.value)
    assert message.startswith("requests must be an integer, got [{'x': array(") and message.endswith("(list)")
    assert len(message) < 120, message
