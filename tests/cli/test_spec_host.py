"""Spec files with host steps (``host:`` entries naming ``module:function``):
a detector -> host NMS -> classifier spec runs and equals numpy, and every
schema error names its key path."""

import copy
import json
import os
import re
import sys
import uuid

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples"))

import _models  # noqa: E402
import detector_classifier as dc  # noqa: E402


def readme_host_spec() -> str:
    """The YAML spec of README's "Host steps between models" section."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Host steps between models", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "README's host-step section should hold one YAML spec"
    return blocks[0]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The example's detector and classifier (zero device time) and README's spec, in one folder."""
    path = tmp_path_factory.mktemp("hostspec")
    dc.build_models(str(path), detector_us=0, classifier_us=0, classifier_per_item_us=0)
    (path / "pipeline.yaml").write_text(readme_host_spec())
    return path


@pytest.fixture(scope="module")
def models(folder):
    # the same seeded weights as the files in ``folder`` (written again to a sub-folder)
    sub = folder / "twin"
    sub.mkdir()
    return dc.build_models(str(sub))


def base_doc():
    import yaml

    return yaml.safe_load(readme_host_spec())


def test_readme_spec_runs_and_equals_numpy(folder, models):
    pipe, kwargs = spec.load(folder / "pipeline.yaml", allow_code=True)
    assert kwargs == {"depth": 8, "host_workers": 2}
    images = _models.random_images(np.random.default_rng(5), 120, dc.IMAGE_HW)
    with pipe.compile(**kwargs) as engine:
        out = engine.run_batch({"image": images}, batch_size=1)
        assert len(out["label"]) == len(out["boxes"]) == 120
        counts = []
        for r in range(120):
            want = dc.reference(models, images[r:r + 1])
            np.testing.assert_array_equal(out["label"][r], want["label"])
            np.testing.assert_allclose(out["boxes"][r], want["boxes"], rtol=0, atol=1e-3)
            counts.append(len(want["label"]))
        assert min(counts) == 0 and max(counts) > 8      # empty and busy images both occur
        one = engine.run({"image": images[7:8]})
        np.testing.assert_array_equal(one["label"], dc.reference(models, images[7:8])["label"])


def test_spec_and_python_build_the_same_plan(folder):
    from_spec = spec.load(folder / "pipeline.yaml", allow_code=True).pipeline.plan(depth=8, host_workers=2)
    by_hand = dc.build_pipeline({k: type("M", (), {"path": str(folder / f"{k}.om")})
                                 for k in ("detector", "classifier")})
    assert [(n.name, n.kind) for n in from_spec.nodes] == [("detector", "model"), ("nms", "host"),
                                                           ("classifier", "model")]
    plan = by_hand.plan(depth=8, host_workers=2)
    assert [(n.name, n.kind) for n in plan.nodes] == [(n.name, n.kind) for n in from_spec.nodes]


def test_host_steps_may_be_listed_first_and_json_works(folder, models, tmp_path):
    doc = base_doc()
    doc["models"].reverse()          # classifier before the detector it depends on
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    parsed = spec.parse(json.loads(path.read_text()), base_dir=str(folder))
    assert [n.name for n in parsed.nodes] == ["detector", "nms", "classifier"]
    assert [m.name for m in parsed.models] == ["detector", "classifier"]
    step = parsed.host[0]
    assert step.function == "detector_classifier:select" and step.rows == "any" and step.max_rows == 32
    assert parsed.host[0].outputs[0] == ("crops", np.dtype("float32"), (-1, 8, 8))
    again = spec.parse(spec.to_dict(parsed))
    assert [(h.name, h.function, h.inputs, h.outputs, h.rows, h.max_rows) for h in again.host] == \
        [(h.name, h.function, h.inputs, h.outputs, h.rows, h.max_rows) for h in parsed.host]


def test_a_module_beside_the_spec_is_found(folder, models, tmp_path):
    module = f"steps_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "import numpy as np\n\n"
        "def best(scores):\n"
        "    return scores.max(axis=1), scores.argmax(axis=1).astype(np.int32)\n")
    doc = {
        "inputs": {"image": {"dtype": "float32", "shape": [-1, 32, 32]}},
        "models": [{"name": "detector", "path": str(folder / "detector.om"), "inputs": ["image"]}],
        "host": [{"name": "best", "function": f"{module}:best", "inputs": ["detector.scores"],
                  "outputs": {"score": {"dtype": "float32", "shape": [-1]},
                              "index": {"dtype": "int32", "shape": ["batch"]}}}],
        "outputs": {"score": "best.score", "index": "best.index"},
    }
    (tmp_path / "best.yaml").write_text(json.dumps(doc))     # JSON is YAML
    pipe = ae.Pipeline.from_spec(tmp_path / "best.yaml", allow_code=True)
    assert str(tmp_path) not in sys.path                      # searched during the import only
    images = _models.random_images(np.random.default_rng(1), 10, dc.IMAGE_HW)
    with pipe.compile(depth=2) as engine:
        out = engine.run_batch({"image": images}, batch_size=3)
    scores = models["detector"].forward(images)["scores"]
    np.testing.assert_allclose(out["score"], scores.max(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(out["index"], scores.argmax(axis=1))


def set_key(doc, path, value):
    target = doc
    for part in path[:-1]:
        target = target[part]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


DELETE = object()
NODES = "(detector, classifier, nms)"

# found when the function is imported: by build()/load() with allow_code=True, never by parse()
IMPORT_ERRORS = [
    ("nosuch_module_zz:f",
     "cannot import module 'nosuch_module_zz': no such module on sys.path or in {folder}"),
    ("detector_classifier:selekt",
     "'detector_classifier' has no attribute 'selekt' (did you mean 'select'?)"),
    ("detector_classifier:_models.nmss",
     "'detector_classifier._models' has no attribute 'nmss' (did you mean 'nms'?)"),
    ("detector_classifier:THRESHOLD",
     "'detector_classifier:THRESHOLD' is a float, not a function (expected a callable or a NativeStep)"),
]

ERRORS = [
    (("host", 0, "function"), "detector_classifier", "host[0].function",
     "expected 'module:function' (a Python function to import), got str 'detector_classifier'"),
    (("host", 0, "function"), 3, "host[0].function",
     "expected 'module:function' (a Python function to import), got int 3"),
    (("host", 0, "functon"), "x:y", "host[0].functon",
     "unknown key (did you mean 'function'?); allowed keys: name, function, inputs, outputs, rows, max_rows, "
     "step, params"),
    (("host", 0, "function"), DELETE, "host[0]", "missing required key 'function'"),
    (("host", 0, "rows"), "some", "host[0].rows", "expected one of same, any, got str 'some'"),
    (("host", 0, "max_rows"), DELETE, "host[0]",
     "rows: any needs max_rows (the most rows the step may return; "
     "it sizes the buffers of everything after it)"),
    (("host", 0, "max_rows"), 0, "host[0].max_rows", "expected a row count of at least 1, got 0"),
    (("host", 0, "max_rows"), "32", "host[0].max_rows", "expected a row count (an integer), got str '32'"),
    (("host", 0, "rows"), "same", "host[0].max_rows",
     "max_rows applies to rows: any only (rows: same returns as many rows as the step is given)"),
    (("host", 0, "outputs"), [], "host[0].outputs",
     "expected a mapping of output name -> {dtype, shape}, in the order the function returns them, "
     "got list []"),
    (("host", 0, "outputs", "crops", "shape"), [8, 8, 8], "host[0].outputs.crops.shape[0]",
     "expected the rows (-1, null or batch) as the first dimension, got int 8"),
    (("host", 0, "outputs", "crops", "dtype"), "complex64", "host[0].outputs.crops.dtype",
     "expected a numeric or bool dtype, got 'complex64'"),
    (("host", 0, "outputs", "crops", "dtype"), DELETE, "host[0].outputs.crops",
     "missing required key 'dtype'"),
    (("host", 0, "inputs", 0), "imagee", "host[0].inputs[0]",
     f"unknown tensor 'imagee': expected an input (image), a model or host step {NODES} or node.output"),
    (("host", 0, "inputs"), [], "host[0].inputs",
     "expected a non-empty list of tensor references, got list []"),
    (("host", 0, "name"), "detector", "host[0].name",
     "the name 'detector' is already used by models[0].name"),
    (("host",), {"name": "nms"}, "host", "expected a list of host steps, got dict {'name': 'nms'}"),
    (("outputs", "label"), "nmss.labels", "outputs.label",
     f"unknown tensor 'nmss.labels': expected an input (image), a model or host step {NODES} or node.output"),
    (("compile", "host_workers"), 0, "compile.host_workers",
     "expected a thread count per host step (or a mapping step -> count) of at least 1, got 0"),
    (("compile", "host_workers"), {"nmz": 2}, "compile.host_workers.nmz",
     "not a host step; the host steps: nms"),
    (("compile", "host_workers"), {"nms": 65}, "compile.host_workers.nms",
     "expected a thread count of at most 64, got 65"),
]


@pytest.mark.parametrize("path,value,key,detail", ERRORS,
                         ids=[e[2] + "-" + str(i) for i, e in enumerate(ERRORS)])
def test_schema_errors_name_the_key_path(folder, path, value, key, detail):
    doc = base_doc()
    set_key(doc, path, value)
    with pytest.raises(spec.SpecError) as info:
        spec.parse(doc, base_dir=str(folder))
    assert info.value.key == key
    assert info.value.detail == detail.replace("{folder}", str(folder))


@pytest.mark.parametrize("function,detail", IMPORT_ERRORS, ids=[e[0] for e in IMPORT_ERRORS])
def test_import_errors_name_the_key_path_when_code_is_allowed(folder, function, detail):
    doc = base_doc()
    doc["host"][0]["function"] = function
    parsed = spec.parse(copy.deepcopy(doc), base_dir=str(folder))     # the form is fine: nothing imported
    assert parsed.host[0].function == function
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(folder), allow_code=True)
    want = detail.replace("{folder}", str(folder))
    assert (info.value.key, info.value.detail) == ("host[0].function", want)


def test_build_errors_name_the_key_path(folder):
    doc = base_doc()
    doc["host"][0]["inputs"][1] = "detector.scorez"
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(folder), allow_code=True)
    assert (info.value.key, info.value.detail) == (
        "host[0].inputs[1]", "model 'detector' has no output 'scorez'; its outputs: scores, boxes")
    doc = base_doc()
    doc["outputs"]["label"] = "nms.labels"
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(folder), allow_code=True)
    assert (info.value.key, info.value.detail) == (
        "outputs.label", "host step 'nms' has no output 'labels'; its outputs: crops, boxes, scores, image")
    doc = base_doc()
    doc["models"][1]["inputs"] = ["nms"]
    with pytest.raises(spec.SpecError) as info:
        spec.load(doc, base_dir=str(folder), allow_code=True)
    assert (info.value.key, info.value.detail) == (
        "models[1].inputs[0]", "host step 'nms' has 4 outputs: name one of nms.crops, nms.boxes, nms.scores, "
                               "nms.image")


def test_host_outputs_whose_sizes_change_per_request_pass_through(folder, monkeypatch):
    """-1 (or null) after the rows in a host step's output shape: the spec hands the shape to
    Pipeline.host as written (the pipeline decides what it takes), and writes it back the same."""
    doc = base_doc()
    doc["host"][0]["outputs"]["crops"]["shape"] = [-1, 8, None]
    parsed = spec.parse(doc, base_dir=str(folder))
    step = parsed.host[0]
    assert step.outputs[0] == ("crops", np.dtype("float32"), (-1, 8, -1))
    assert spec.to_dict(parsed)["host"][0]["outputs"]["crops"] == {"dtype": "float32", "shape": [-1, 8, -1]}
    given = []

    class Stop(Exception):
        pass

    def host(self, fn, *inputs, outputs, **kw):
        given.append(outputs)
        raise Stop

    monkeypatch.setattr(ae.Pipeline, "host", host)
    with pytest.raises(Stop):
        spec.build(parsed, allow_code=True)
    assert given == [step.outputs]
    doc["host"][0]["outputs"]["crops"]["shape"] = [-1, 8, -2]
    with pytest.raises(spec.SpecError) as info:
        spec.parse(doc, base_dir=str(folder))
    assert (info.value.key, info.value.detail) == (
        "host[0].outputs.crops.shape[2]",
        "expected a positive dimension, -1 or null (the batch as the first dimension, a size that changes "
        "per request after it; 'batch' as the first one), got int -2")


def test_a_cycle_through_a_host_step(folder):
    doc = base_doc()
    doc["host"][0]["inputs"] = ["classifier.label"]
    with pytest.raises(spec.SpecError) as info:
        spec.parse(doc, base_dir=str(folder))
    assert info.value.key == "host"
    assert info.value.detail == (
        "the models and host steps form a cycle: classifier -> nms -> classifier (a node may only read "
        "pipeline inputs and the outputs of nodes before it in the graph)")


def test_a_module_that_fails_to_import_says_why(folder, tmp_path):
    module = f"broken_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("import no_such_dependency_zz\n")
    (tmp_path / f"{module}2.py").write_text("RATE = 1 / 0\n")
    doc = base_doc()
    for name, detail in (
            (module, f"importing module {module!r} failed: No module named 'no_such_dependency_zz'"),
            (module + "2", f"importing module '{module}2' failed: ZeroDivisionError: division by zero")):
        doc["host"][0]["function"] = f"{name}:f"
        doc["models"] = [dict(m, path=str(folder / m["path"])) for m in base_doc()["models"]]
        with pytest.raises(spec.SpecError) as info:
            spec.load(copy.deepcopy(doc), base_dir=str(tmp_path), allow_code=True)
        assert (info.value.key, info.value.detail) == ("host[0].function", detail)


def test_host_workers_without_host_steps(folder):
    doc = {"inputs": {"image": {"dtype": "float32", "shape": [-1, 32, 32]}},
           "models": [{"name": "detector", "path": "detector.om", "inputs": ["image"]}],
           "outputs": {"s": "detector.scores"}, "compile": {"host_workers": 2}}
    with pytest.raises(spec.SpecError) as info:
        spec.parse(doc, base_dir=str(folder))
    assert (info.value.key, info.value.detail) == ("compile.host_workers", "the spec has no host steps")


def _marking_module(tmp_path, folder):
    """A module beside a spec that leaves a file behind when it is imported, and that spec."""
    module = f"marks_{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "imported"
    (tmp_path / f"{module}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n\n"
        "def best(scores):\n"
        "    return (scores.max(axis=1),)\n")
    doc = {
        "inputs": {"image": {"dtype": "float32", "shape": [-1, 32, 32]}},
        "models": [{"name": "detector", "path": str(folder / "detector.om"), "inputs": ["image"]}],
        "host": [{"name": "best", "function": f"{module}:best", "inputs": ["detector.scores"],
                  "outputs": {"score": {"dtype": "float32", "shape": [-1]}}}],
        "outputs": {"score": "best.score"},
    }
    path = tmp_path / "marks.yaml"
    path.write_text(json.dumps(doc))
    return module, marker, path


def test_parse_and_load_import_no_code_unless_allowed(folder, tmp_path):
    module, marker, path = _marking_module(tmp_path, folder)
    parsed = spec.parse(json.loads(path.read_text()), base_dir=str(tmp_path), source=str(path))
    assert parsed.host[0].function == f"{module}:best"
    for refused in (lambda: spec.load(path), lambda: spec.from_spec(path),
                    lambda: ae.Pipeline.from_spec(path), lambda: spec.build(parsed)):
        with pytest.raises(spec.SpecError) as info:
            refused()
        assert info.value.key == "host[0].function"
        assert info.value.detail.startswith(
            f"the spec's host step(s) 'best' ({module}:best) name Python code that loading it would import "
            "and run: a spec with host functions is code. Load it with allow_code=True")
    assert not marker.exists() and module not in sys.modules
    pipe = spec.from_spec(path, allow_code=True)
    assert marker.read_text() == "ran"
    assert [n.name for n in pipe.plan().nodes] == ["detector", "best"]


def test_bench_and_trace_refuse_a_spec_with_host_code_before_importing_it(folder, tmp_path):
    from cli_run import error_line, ok, run_cli

    module, marker, path = _marking_module(tmp_path, folder)
    for args in (("bench", str(path), "--requests", "2"),
                 ("trace", str(path), "--out", str(tmp_path / "t.json"))):
        proc = run_cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert f"the spec's host step(s) best ({module}:best) name Python code" in error_line(proc)
        assert "pass --allow-code if you trust this spec" in error_line(proc)
        assert not marker.exists()
    ok(run_cli("bench", str(path), "--requests", "4", "--warmup", "0", "--allow-code"))
    assert marker.read_text() == "ran"
