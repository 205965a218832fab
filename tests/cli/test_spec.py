"""Pipeline spec files: YAML and JSON give one plan; every schema error names its key path."""

import copy
import json
import os

import numpy as np
import pytest
import yaml
from helpers import shaped

import ascend_engine as ae
from ascend_engine import sim, spec
from ascend_engine.sim.demo_models import write_demo


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spec_demo")
    write_demo(folder)
    # a model with two outputs, for references that must name one of them
    g = sim.Graph("split")
    x = g.input("x", "float32", (-1, 10))
    g.output("a", g.relu(x))
    g.output("b", g.tanh(x))
    g.save(str(folder / "split.om"), batch_sizes=(1, 2, 4, 8))
    return folder


def base_doc():
    """The demo pipeline as a document (model paths relative to the demo folder)."""
    return {
        "device": 0,
        "inputs": {"x": {"dtype": "float32", "shape": [-1, 64]}},
        "models": [
            {"name": "encoder", "path": "encoder.om", "inputs": ["x"]},
            {"name": "mixer", "path": "mixer.om", "inputs": ["encoder"]},
            {"name": "head", "path": "head.om", "inputs": ["mixer.y"]},
        ],
        "outputs": {"probs": "head"},
        "compile": {"depth": 8, "streams": "per-model"},
    }


def plan_summary(pipe, kw):
    p = pipe.plan(**kw)
    return {
        "device": p.device, "depth": p.depth, "n_streams": p.n_streams, "slot_bytes": p.slot_bytes,
        "max_batch": p.max_batch, "inputs": p.inputs, "outputs": p.outputs,
        "nodes": [(n.name, n.stream, n.inputs, n.outputs, n.gears) for n in p.nodes],
        "tensors": [(t.name, str(t.dtype), t.shape, t.offset, t.capacity, t.producer) for t in p.tensors],
    }


def test_yaml_and_json_give_the_same_plan(demo_dir, tmp_path):
    yaml_pipe, yaml_kw = spec.load(demo_dir / "pipeline.yaml")
    doc = base_doc()
    doc["models"].reverse()           # listed in any order: dependencies decide
    json_path = demo_dir / "reversed.json"
    json_path.write_text(json.dumps(doc))
    json_pipe, json_kw = spec.load(json_path)
    assert yaml_kw == json_kw == {"depth": 8, "streams": "per-model"}
    a, b = plan_summary(yaml_pipe, yaml_kw), plan_summary(json_pipe, json_kw)
    assert a == b
    assert [n[0] for n in a["nodes"]] == ["encoder", "mixer", "head"]
    assert [n[1] for n in a["nodes"]] == [0, 1, 2]
    assert a["outputs"] == [("probs", 3)]


def test_dict_spec_resolves_paths_against_base_dir_and_runs(demo_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)        # the working directory must not matter for a spec file
    pipe = ae.Pipeline.from_spec(str(demo_dir / "pipeline.yaml"))
    assert isinstance(pipe, ae.Pipeline)
    loaded = spec.load(base_doc(), base_dir=str(demo_dir))
    assert loaded.compile_kwargs == {"depth": 8, "streams": "per-model"}
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    with loaded.pipeline.compile(**loaded.compile_kwargs) as engine:
        out = engine.run({"x": x})["probs"]
    from ascend_engine.sim.demo_models import _demo_models

    expected = x
    for _, _, g in _demo_models(str(tmp_path)):
        expected = sim.reference(g, {"x": expected})["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)
    with pipe.compile() as engine:
        np.testing.assert_allclose(engine.run({"x": x})["probs"], expected, rtol=1e-4, atol=1e-6)


def test_stream_labels_and_device_override(demo_dir):
    doc = base_doc()
    doc["models"][0]["stream"] = "shared"
    doc["models"][1]["stream"] = "shared"
    pipe, kw = spec.load(doc, base_dir=str(demo_dir))
    plan = pipe.plan(**kw)
    assert [n.stream for n in plan.nodes] == [0, 0, 1]
    moved = spec.from_spec(doc, base_dir=str(demo_dir), device=1)
    assert moved.plan().device == 1


def test_multi_output_references(demo_dir):
    doc = {
        "inputs": {"x": {"dtype": "float32", "shape": ["batch", 10]}},
        "models": [{"name": "split", "path": "split.om", "inputs": "x"}],
        "outputs": {"a": "split.a", "b": "split.b", "same": "x"},
    }
    pipe, kw = spec.load(doc, base_dir=str(demo_dir))
    assert kw == {}
    assert [name for name, _ in pipe.plan().outputs] == ["a", "b", "same"]

    doc["outputs"] = {"a": "split"}
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(demo_dir))
    assert info.value.key == "outputs.a"
    assert "model 'split' has 2 outputs: name one of split.a, split.b" in str(info.value)

    doc["outputs"] = {"a": "split.c"}
    with pytest.raises(spec.SpecError,
                       match=r"^outputs\.a: model 'split' has no output 'c'; its outputs: a, b$"):
        spec.load(doc, base_dir=str(demo_dir))


def _set(doc, path, value):
    """Set (or with value=DELETE, remove) doc[path...]."""
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


DELETE = object()
SHAPE_DIM = ("expected a positive dimension, -1 or null (the batch as the first dimension, a size that "
             "changes per request after it; 'batch' as the first one), ")

SCHEMA_ERRORS = [
    (("modles",), [], "modles", "unknown key (did you mean 'models'?); allowed keys: device, inputs, models, "
                                "host, images, outputs, compile"),
    (("outputs",), DELETE, "", "missing required key 'outputs'"),
    (("device",), "0", "device", "expected a device id (an integer), got str '0'"),
    (("device",), -1, "device", "expected a device id of at least 0, got -1"),
    (("inputs",), [], "inputs", "expected a mapping of input name -> {dtype, shape}, got list []"),
    (("inputs", "x", "dtype"), "float33", "inputs.x.dtype", "expected a dtype name such as 'float32' or "
                                                            "'int8', got 'float33'"),
    (("inputs", "x", "dtype"), 32, "inputs.x.dtype", "expected a dtype name such as 'float32', got int 32"),
    (("inputs", "x", "shape"), [64, -2], "inputs.x.shape[1]", SHAPE_DIM + "got int -2"),
    (("inputs", "x", "shape"), [64, 0], "inputs.x.shape[1]", SHAPE_DIM + "got int 0"),
    (("inputs", "x", "shape"), [64, "batch"], "inputs.x.shape[1]", SHAPE_DIM + "got str 'batch'"),
    (("inputs", "x", "shape"), [-1, 2.5], "inputs.x.shape[1]", SHAPE_DIM + "got float 2.5"),
    (("inputs", "x", "shape"), "64", "inputs.x.shape", "expected a list of dimensions such as [-1, 64], "
                                                       "got str '64'"),
    (("inputs", "x", "shap"), [1], "inputs.x.shap", "unknown key (did you mean 'shape'?); allowed keys: "
                                                    "dtype, shape, bench_shape"),
    (("models",), {}, "models", "expected a non-empty list of models, got dict {}"),
    (("models", 1), "mixer.om", "models[1]", "expected a mapping with keys name, path, inputs, device, "
                                             "stream, got str 'mixer.om'"),
    (("models", 1, "inputs", 0), "nope", "models[1].inputs[0]", "unknown tensor 'nope': expected an input "
                                                                "(x), a model (encoder, mixer, head) or "
                                                                "model.output"),
    (("models", 1, "inputs", 0), 3, "models[1].inputs[0]", "expected a tensor reference (input, model or "
                                                           "model.output) (a non-empty string), got int 3"),
    (("models", 1, "inputs"), [], "models[1].inputs", "expected a non-empty list of tensor references, "
                                                      "got list []"),
    (("models", 2, "strem"), "s", "models[2].strem", "unknown key (did you mean 'stream'?); allowed keys: "
                                                     "name, path, inputs, device, stream"),
    (("models", 2, "stream"), ["s"], "models[2].stream",
     "expected a stream label (a string), got list ['s']"),
    (("models", 0, "name"), DELETE, "models[0]", "missing required key 'name'"),
    (("models", 1, "name"), "x", "models[1].name", "the name 'x' is already used by inputs.x"),
    (("models", 2, "name"), "encoder", "models[2].name", "the name 'encoder' is already used by "
                                                         "models[0].name"),
    (("models", 1, "device"), "1", "models[1].device", "expected a device id (an integer), got str '1'"),
    (("outputs", "probs"), "head.z", "outputs.probs", "model 'head' has no output 'z'; its outputs: y"),
    (("outputs", "probs"), "tail", "outputs.probs", "unknown tensor 'tail': expected an input (x), a model "
                                                    "(encoder, mixer, head) or model.output"),
    (("outputs",), {}, "outputs", "expected a mapping of output name -> tensor reference, got dict {}"),
    (("compile", "depth"), 0, "compile.depth", "expected a depth of at least 1, got 0"),
    (("compile", "depth"), True, "compile.depth", "expected a depth (an integer), got bool True"),
    (("compile", "streams"), "multi", "compile.streams",
     "expected one of per-model, single, got str 'multi'"),
    (("compile", "profile"), "yes", "compile.profile", "expected true or false, got str 'yes'"),
    (("compile", "timeout"), -1, "compile.timeout",
     "expected seconds (a finite number from 0.001 to 2147483) or null, got int -1"),
    (("compile", "warmup"), 3, "compile.warmup",
     "unknown key; allowed keys: depth, streams, profile, timeout, max_queue, max_delay_ms, gear_policy, "
     "host_workers, priority_levels, default_priority, queue_timeout, timeout_action, preferred_batch_sizes"),
]


@pytest.mark.parametrize("path, value, key, message", SCHEMA_ERRORS,
                         ids=[f"{e[2] or 'top'}-{i}" for i, e in enumerate(SCHEMA_ERRORS)])
def test_schema_errors_name_the_key_path(demo_dir, path, value, key, message):
    doc = copy.deepcopy(base_doc())
    _set(doc, path, value)
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(demo_dir))
    assert info.value.key == key
    assert info.value.detail == message
    assert str(info.value) == (f"{key}: {message}" if key else message)
    assert isinstance(info.value, ae.PipelineError)


def test_missing_model_file_names_the_resolved_path(demo_dir):
    doc = base_doc()
    doc["models"][2]["path"] = "sub/missing.om"
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(demo_dir))
    assert info.value.key == "models[2].path"
    assert info.value.detail == f"model file not found: {os.path.join(str(demo_dir), 'sub', 'missing.om')}"


def test_a_cycle_is_named(demo_dir):
    doc = base_doc()
    doc["models"][0]["inputs"] = ["head"]
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(demo_dir))
    assert info.value.key == "models"
    assert info.value.detail.startswith("the models form a cycle: encoder -> head -> mixer -> encoder")


def test_model_wiring_errors_name_the_model(demo_dir):
    doc = base_doc()
    doc["models"][2]["path"] = "split.om"     # takes (batch, 10), fed (batch, 128): found at compile
    doc["outputs"] = {"probs": "head.a"}
    pipe, kw = spec.load(doc, base_dir=str(demo_dir))
    with pytest.raises(ae.PipelineError, match=r"model node 'head' input 'x' \(fed by 'mixer.y'\): expected "
                                               r"shape \(batch, 10\), got \(batch, 128\)"):
        pipe.plan(**kw)
    bad = demo_dir / "garbage.om"
    bad.write_bytes(b"not a model")
    doc["models"][2]["path"] = "garbage.om"
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(demo_dir))
    assert info.value.key == "models[2]"
    assert "model node 'head':" in info.value.detail


def test_file_errors_name_the_file_and_position(tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("inputs:\n  x: {dtype: float32\nmodels: []\n")
    with pytest.raises(spec.SpecError) as info:
        spec.load(bad_yaml)
    assert info.value.source == str(bad_yaml)
    assert str(info.value).startswith(f"{bad_yaml}: not valid YAML: ")
    assert str(info.value).endswith("expected ',' or '}', but got ':' at line 3 column 7")

    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"inputs": {,}}')
    with pytest.raises(spec.SpecError, match=r"bad\.json: not valid JSON: Expecting property name "
                                             r"enclosed in double quotes at line 1 column 13$"):
        spec.load(bad_json)

    not_mapping = tmp_path / "list.yaml"
    not_mapping.write_text("- 1\n- 2\n")
    with pytest.raises(spec.SpecError) as info:
        spec.load(not_mapping)
    assert str(info.value) == (f"{not_mapping}: expected a mapping with keys device, inputs, models, "
                               "host, images, outputs, compile, got list [1, 2]")

    with pytest.raises(spec.SpecError, match="cannot read the spec file: No such file or directory"):
        spec.load(tmp_path / "absent.yaml")


def test_yaml_text_round_trips_through_to_dict(demo_dir):
    parsed = spec.parse(yaml.safe_load((demo_dir / "pipeline.yaml").read_text()), base_dir=str(demo_dir))
    doc = spec.to_dict(parsed)
    assert doc["models"][0] == {"name": "encoder", "path": str(demo_dir / "encoder.om"), "inputs": ["x"]}
    again = spec.parse(json.loads(json.dumps(doc)))
    assert spec.to_dict(again) == doc


@pytest.fixture(scope="module")
def shaped_dir(tmp_path_factory):
    """An image-size detector feeding a dims-gear recognizer, with its spec (helpers.shaped)."""
    folder = tmp_path_factory.mktemp("spec_shaped")
    shaped.build(folder)
    return folder


def shaped_doc(shape, bench_shape=None):
    doc = yaml.safe_load(shaped.SPEC.format(bench=""))
    doc["inputs"]["image"]["shape"] = shape
    if bench_shape is not None:
        doc["inputs"]["image"]["bench_shape"] = bench_shape
    return doc


@pytest.mark.parametrize("shape", [[1, 3, -1, -1], [1, 3, None, None], [1, 3, -1, None]])
def test_inputs_with_sizes_that_change_per_request(shaped_dir, shape):
    parsed = spec.parse(shaped_doc(shape, [1, 3, 10, 12]), base_dir=str(shaped_dir))
    assert parsed.inputs[0].shape == (1, 3, -1, -1)
    assert parsed.inputs[0].bench_shape == (1, 3, 10, 12)
    pipe = spec.build(parsed)
    plan = pipe.plan()
    assert plan.shaped and plan.tensors[plan.inputs[0][1]].shape == (1, 3, -1, -1)
    assert {n.name: n.shape_kind for n in plan.nodes} == {"det": "hw", "rec": "dims"}


def test_a_bench_shape_with_several_sizes_round_trips(shaped_dir):
    parsed = spec.parse(shaped_doc([-1, 3, -1, -1], [1, 3, 10, 12]), base_dir=str(shaped_dir))
    doc = spec.to_dict(parsed)
    assert doc["inputs"] == {"image": {"dtype": "float32", "shape": [-1, 3, -1, -1],
                                       "bench_shape": [1, 3, 10, 12]}}
    again = spec.parse(json.loads(json.dumps(doc)))
    assert again.inputs[0].shape == (-1, 3, -1, -1) and again.inputs[0].bench_shape == (1, 3, 10, 12)
    assert spec.to_dict(again) == doc


@pytest.mark.parametrize("bench_shape", [[1, 3, 10], [2, 3, 10, 12], [1, 4, 10, 12], [1, 3, 0, 12],
                                         [1, 3, -1, 12]])
def test_a_bench_shape_must_fill_every_size(shaped_dir, bench_shape):
    with pytest.raises(spec.SpecError) as info:
        spec.parse(shaped_doc([1, 3, -1, -1], bench_shape), base_dir=str(shaped_dir))
    assert info.value.key == "inputs.image.bench_shape"
    if min(bench_shape) < 1:
        assert info.value.detail == ("expected a list of positive dimensions such as [4, 64], got "
                                     f"list {bench_shape}")
    else:
        assert info.value.detail == ("expected the input's shape [1, 3, -1, -1] with a size in place of each "
                                     f"-1, got {bench_shape}")
