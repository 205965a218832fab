"""A Triton user's config.pbtxt: parsed by protobuf's text format, Triton fields not served named,
every served field checked against the .om (server/triton_config.py, docs/serve.md)."""

import os

import numpy as np
import pytest

from ascend_engine import Model
from ascend_engine.errors import ModelConfigError
from ascend_engine.server import triton_config as tc
from ascend_engine.sim.demo_models import write_demo

ENCODER = """
name: "enc"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 64 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [128] } ]
"""


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """The demo's encoder (x float32 [-1, 64] -> y float32 [-1, 128], batch gears 1, 2, 4, 8), loaded."""
    files = write_demo(str(tmp_path_factory.mktemp("demo")))
    model = Model.load(files["models"]["encoder"])
    yield model
    model.close()


def refused(text, model=None, name="enc"):
    """The ModelConfigError a config gives at parse time (or at the check, with ``model``)."""
    with pytest.raises(ModelConfigError) as info:
        served = tc.parse(text, "models/enc/config.pbtxt")
        if model is not None:
            tc.check(served, name, model)
    message = str(info.value)
    assert message.startswith("models/enc/config.pbtxt: "), message
    return message


def test_the_encoder_config_is_served_as_written(encoder):
    checked = tc.check(tc.parse(ENCODER), "enc", encoder)
    assert [(t.name, t.dtype, t.shape, t.model_shape) for t in checked.inputs] == [
        ("x", np.dtype(np.float32), (-1, 64), (-1, 64))]
    assert [(t.name, t.shape) for t in checked.outputs] == [("y", (-1, 128))]
    assert (checked.max_batch_size, checked.instances, checked.devices) == (8, 1, ())
    assert checked.compile_kwargs == {}


def test_a_config_without_tensors_takes_the_models_own(encoder):
    checked = tc.check(tc.parse("max_batch_size: 4"), "enc", encoder)
    assert [(t.name, t.shape) for t in checked.inputs] == [("x", (-1, 64))]
    assert [(t.name, t.shape) for t in checked.outputs] == [("y", (-1, 128))]


@pytest.mark.parametrize("config, words", [
    ("nme: \"x\"", 'line 1, column 1: Message type "inference.ModelConfig" has no field named "nme"'),
    ("input [ { name: \"x\" dim: [1] } ]", 'has no field named "dim"'),
    ("max_batch_size: \"eight\"", "line 1, column 17"),
    ("max_batch_size: 8 max_batch_size: 4", 'max_batch_size'),
])
def test_a_typo_is_refused_where_it_is(config, words):
    assert words in refused(config)


@pytest.mark.parametrize("field, why", [
    ("sequence_batching { max_sequence_idle_microseconds: 5000000 }", "sequence batching"),
    ("ensemble_scheduling { step [ { model_name: \"a\" model_version: -1 } ] }", "pipeline specs"),
    ("model_transaction_policy { decoupled: true }", "decoupled"),
    ("instance_group [ { count: 1 secondary_devices [ { kind: KIND_NVDLA device_id: 0 } ] } ]",
     "secondary devices"),
])
def test_triton_fields_that_change_what_a_request_means_are_refused_by_name(field, why):
    message = refused(ENCODER + field)
    assert why in message and ("not served" in message or "are served as" in message), message


def test_tuning_hints_are_ignored_and_named(encoder):
    text = ENCODER + """
optimization { execution_accelerators { gpu_execution_accelerator : [ {
    name : "tensorrt" parameters { key: "precision_mode" value: "FP16" } } ] } }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 64 ]
    zero_data: true } } } ]   # a comment with a } brace
instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0 ]
                   rate_limiter { resources [ { name: "R" count: 1 } ] } } ]
"""
    served = tc.parse(text)
    assert served.ignored == ["ModelConfig.optimization", "ModelConfig.model_warmup",
                              "ModelInstanceGroup.rate_limiter"]
    checked = tc.check(served, "enc", encoder)
    assert (checked.instances, checked.devices) == (2, (0,))


def test_a_field_after_an_ignored_one_still_counts(encoder):
    checked = tc.check(tc.parse('response_cache { enable: true }\n' + ENCODER.replace("max_batch_size: 8",
                                                                                     "max_batch_size: 2")),
                       "enc", encoder)
    assert checked.max_batch_size == 2


@pytest.mark.parametrize("change, words", [
    (("max_batch_size: 8", "max_batch_size: 16"),
     "max_batch_size: the config says 16, but the model's largest batch is 8 (encoder.om: inputs x [-1, 64], "
     "batch gears [1, 2, 4, 8])"),
    (("TYPE_FP32 dims: [ 64 ]", "TYPE_FP16 dims: [ 64 ]"),
     "input[0] 'x' data_type: the model has TYPE_FP32, the config says TYPE_FP16"),
    (("dims: [ 64 ]", "dims: [ 32 ]"),
     "input[0] 'x' dims: the model has [64] (without the batch dimension: max_batch_size > 0), the config "
     "says [32]"),
    (("dims: [ 64 ]", "dims: [ 1, 64 ]"), "input[0] 'x' dims: the model has [64]"),
    (('name: "x"', 'name: "z"'), "input[0] 'z': the model has no input of that name (its inputs: x)"),
    (('name: "y"', 'name: "probs"'),
     "output[0] 'probs': the model has no output of that name (its outputs: y)"),
    (("dims: [128]", "dims: [10]"), "output[0] 'y' dims: the model has [128]"),
    (('name: "enc"', 'name: "encoder"'), "name: the config says 'encoder', but the model's folder is 'enc'"),
    (("dims: [ 64 ]", "dims: [ 8, 4 ] reshape: { shape: [ 64 ] }"),
     "input[0] 'x' reshape: dims [8, 4] hold 32 elements, reshape.shape [64] holds 64"),
])
def test_a_config_that_contradicts_the_model_names_file_field_model_and_config(encoder, change, words):
    message = refused(ENCODER.replace(*change), encoder)
    assert words in message, message


def test_max_batch_size_zero_means_the_whole_shape(encoder):
    whole = 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 64 ] } ]'
    message = refused("max_batch_size: 0\n" + whole, encoder)
    assert "input[0] 'x' dims: the model has [-1, 64], the config says [64]" in message
    checked = tc.check(tc.parse(whole.replace("[ 64 ]", "[ 2, 64 ]")), "enc", encoder)
    assert (checked.inputs[0].shape, checked.inputs[0].model_shape) == ((2, 64), (2, 64))


def test_reshape_serves_the_clients_dims_and_feeds_the_models_shape(encoder):
    text = ENCODER.replace("dims: [ 64 ]", "dims: [ 8, 8 ] reshape: { shape: [ 64 ] }")
    [x] = tc.check(tc.parse(text), "enc", encoder).inputs
    assert (x.shape, x.model_shape) == ((-1, 8, 8), (-1, 64))


def test_dynamic_batching_maps_to_the_batcher_and_queue_policy(encoder):
    text = ENCODER + """
dynamic_batching {
  preferred_batch_size: [ 8, 4, 4 ]
  max_queue_delay_microseconds: 2500
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 50000 max_queue_size: 16 }
}
parameters { key: "depth" value: { string_value: "6" } }
"""
    kwargs = tc.check(tc.parse(text), "enc", encoder).compile_kwargs
    assert kwargs == {"max_delay_ms": 2.5, "preferred_batch_sizes": [4, 8], "priority_levels": 3,
                      "default_priority": 2, "timeout_action": "delay", "queue_timeout": 0.05,
                      "max_queue": 16, "depth": 6}
    # Triton batches what is queued even with no delay: the batcher with a 1 us wait
    assert tc.check(tc.parse(ENCODER + "dynamic_batching { }"), "enc", encoder).compile_kwargs == {
        "max_delay_ms": 0.001}


@pytest.mark.parametrize("extra, words", [
    ("dynamic_batching { preferred_batch_size: [ 16 ] }", "preferred_batch_size 16 must be from 1 to "
                                                          "max_batch_size 8"),
    ("dynamic_batching { priority_levels: 2 default_priority_level: 3 }",
     "default_priority_level 3 must be from 1 to priority_levels 2"),
    ("dynamic_batching { priority_queue_policy { key: 1 value: { max_queue_size: 2 } } }",
     "priority_queue_policy (a policy per priority level) is not served"),
    ("instance_group [ { kind: KIND_CPU } ]",
     "instance_group[0] kind: KIND_CPU, but an .om model runs on an NPU"),
    ("instance_group [ { count: 2 }, { count: 1 } ]",
     "instance_group[1] count: 1, but an earlier group has 2"),
    ("instance_group [ { gpus: [ 1, 1 ] } ]", "instance_group[0] gpus: NPU id 1 is named twice"),
    ('parameters { key: "depht" value: { string_value: "4" } }', "parameters: unknown key 'depht'"),
    ('parameters { key: "depth" value: { string_value: "four" } }', "parameters['depth']: 'four' is not an "
                                                                     "integer"),
])
def test_batching_instances_and_parameters_are_checked(encoder, extra, words):
    assert words in refused(ENCODER + extra, encoder)


def test_dynamic_batching_needs_a_batch_dimension(encoder):
    text = 'input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 64 ] } ]\ndynamic_batching { }'
    assert "dynamic_batching needs max_batch_size > 0" in refused(text, encoder)


@pytest.mark.parametrize("policy, versions", [
    ("", ["3"]),
    ("version_policy: { latest: { num_versions: 2 } }", ["2", "3"]),
    ("version_policy: { all: { } }", ["1", "2", "3"]),
    ("version_policy: { specific: { versions: [ 1, 3 ] } }", ["1", "3"]),
])
def test_version_policy_chooses_the_served_versions(policy, versions):
    assert tc.versions_served(tc.parse(policy), ["1", "2", "3"]) == versions


def test_a_specific_version_without_a_folder_is_refused():
    with pytest.raises(ModelConfigError, match=r"version_policy.specific.versions names \[4\], which have no "
                                               r"version folder"):
        tc.versions_served(tc.parse("version_policy: { specific: { versions: [ 1, 4 ] } }"), ["1", "2"])


def test_default_model_filename_stays_in_the_version_folder(tmp_path):
    served = tc.parse('default_model_filename: "../other.om"')
    with pytest.raises(ModelConfigError, match="default_model_filename must name a file in the version"):
        tc.model_file(str(tmp_path), "1", served)
    assert tc.model_file("m", "2", tc.parse('default_model_filename: "det.om"')) == os.path.join("m", "2",
                                                                                                  "det.om")


def test_unreadable_configs_are_refused_without_reading_them_whole(tmp_path):
    big = tmp_path / "config.pbtxt"
    big.write_bytes(b"#" * (tc.MAX_CONFIG_BYTES + 1))
    with pytest.raises(ModelConfigError, match="a model configuration holds at most"):
        tc.read(str(big))
    binary = tmp_path / "binary.pbtxt"
    binary.write_bytes(b"name: \"\xff\"")
    with pytest.raises(ModelConfigError, match="not UTF-8 text"):
        tc.read(str(binary))
    with pytest.raises(ModelConfigError, match="not a regular file"):
        tc.read(str(tmp_path))
