"""Spec files with image steps (docs/pipeline-spec.md, "Image steps"): a bytes input and
jpeg_decode / resize / crop_resize entries build the pipeline examples/detector_classifier.py
builds in Python, every schema error names its key path, and bench and trace feed such a spec
JPEGs, label its image steps and give each its own lane."""

import copy
import json
import os
import sys

import numpy as np
import pytest
from cli_run import error_line, ok, run_cli

from ascend_engine import spec
from ascend_engine.errors import SpecError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples"))

import _images  # noqa: E402
import detector_classifier as dc  # noqa: E402

SPEC = """\
inputs:
  jpeg: {dtype: bytes, max_bytes: 1048576, bench_size: [160, 120]}
images:
  - {name: decode, op: jpeg_decode, inputs: [jpeg], max_size: [4096, 4096]}
  - {name: resize, op: resize, inputs: decode, size: [64, 48]}
  - {name: crops, op: crop_resize, inputs: [resize, nms], size: [32, 32], max_boxes: 32}
models:
  - {name: detector, path: detector_nv12.om, inputs: [resize]}
  - {name: classifier, path: classifier_nv12.om, inputs: [crops]}
host:
  - name: nms
    function: detector_classifier:pixel_boxes
    inputs: [detector.scores, detector.boxes]
    outputs: {boxes: {dtype: int32, shape: [-1, 4]}}
    rows: any
    max_rows: 32
outputs: {boxes: nms, label: classifier.label, probs: classifier.probs}
compile: {depth: 4}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("imagespec")
    models = dc.build_image_models(str(path), detector_us=0, classifier_us=0)
    (path / "pipeline.yaml").write_text(SPEC)
    return path, models


def doc():
    import yaml

    return yaml.safe_load(SPEC)


def test_the_spec_parses_in_dependency_order_and_round_trips(folder):
    path, _ = folder
    parsed = spec.parse(doc(), base_dir=str(path))
    assert [(type(n).__name__, n.name) for n in parsed.nodes] == [
        ("ImageSpec", "decode"), ("ImageSpec", "resize"), ("ModelSpec", "detector"), ("HostSpec", "nms"),
        ("ImageSpec", "crops"), ("ModelSpec", "classifier")]
    jpeg = parsed.inputs[0]
    assert (jpeg.max_bytes, jpeg.bench_size, jpeg.shape) == (1048576, (160, 120), (1, 1048576))
    crops = parsed.images[2]
    assert (crops.op, crops.inputs, crops.size, crops.max_boxes) == ("crop_resize", ["resize", "nms"],
                                                                    (32, 32), 32)
    again = spec.to_dict(parsed)
    assert again["inputs"] == {"jpeg": {"dtype": "bytes", "max_bytes": 1048576, "bench_size": [160, 120]}}
    assert again["images"][0] == {"name": "decode", "op": "jpeg_decode", "inputs": ["jpeg"],
                                  "max_size": [4096, 4096]}
    assert spec.to_dict(spec.parse(again, base_dir=str(path))) == again


def test_the_spec_runs_like_the_python_pipeline(folder):
    path, models = folder
    pipe, kwargs = spec.load(path / "pipeline.yaml", allow_code=True)
    assert kwargs == {"depth": 4}
    rng = np.random.default_rng(3)
    jpegs = [_images.random_jpeg(rng, 160, 120) for _ in range(6)]
    with pipe.compile(**kwargs) as engine:
        got = [engine.run({"jpeg": j}) for j in jpegs]
    with dc.build_device_pipeline(models, debug=False).compile(depth=4) as engine:
        want = [engine.run({"jpeg": j}) for j in jpegs]
    assert sum(len(g["boxes"]) for g in got) > 0
    for g, w in zip(got, want, strict=True):
        for name in ("boxes", "label", "probs"):
            np.testing.assert_array_equal(g[name], w[name])


def _set(d, path, value):
    *head, last = path
    for k in head:
        d = d[k]
    if value is KeyError:
        del d[last]
    else:
        d[last] = value


ERRORS = [
    (("images", 0, "op"), "decod", r"images\[0\]\.op: expected one of jpeg_decode, resize, crop_resize, "
                                   r"got str 'decod'"),
    (("images", 1, "size"), KeyError, r"images\[1\]: missing required key 'size'"),
    (("images", 0, "size"), [64, 48], r"images\[0\]\.size: jpeg_decode takes max_size, not size"),
    (("images", 1, "max_size"), [64, 48], r"images\[1\]\.max_size: resize takes size, not max_size"),
    (("images", 2, "inputs"), ["resize"], r"images\[2\]\.inputs: crop_resize takes 2 input\(s\)"),
    (("images", 1, "max_boxes"), 4, r"images\[1\]\.max_boxes: max_boxes applies to crop_resize only"),
    (("images", 2, "max_boxes"), 257, r"images\[2\]\.max_boxes: expected a box count of at most 256, "
                                      r"got 257"),
    (("images", 1, "size"), [64], r"images\[1\]\.size: expected \[width, height\] in pixels"),
    (("images", 1, "size", 1), 0, r"images\[1\]\.size\[1\]: expected a side in pixels of at least 1, got 0"),
    (("images", 1, "interpolation"), "cubic", r"images\[1\]\.interpolation: expected one of default, "
                                              r"bilinear, nearest, got str 'cubic'"),
    (("images", 0, "interpolation"), "nearest", r"images\[0\]\.interpolation: a decode does not resample"),
    (("images", 1, "inputs"), ["decod"], r"images\[1\]\.inputs\[0\]: unknown tensor 'decod': expected an "
                                         r"input \(jpeg\), a model, host step or image step"),
    (("images", 1, "name"), "detector", r"models\[0\]\.name: the name 'detector' is already used by "
                                        r"images\[1\]\.name|images\[1\]\.name: the name 'detector'"),
    (("images", 0, "colour"), 1, r"images\[0\]\.colour: unknown key; allowed keys: name, op, inputs, size"),
    (("images",), {"decode": 1}, r"images: expected a list of image steps, got dict"),
    (("inputs", "jpeg", "max_bytes"), 0, r"inputs\.jpeg\.max_bytes: expected a byte count of at least 1"),
    (("inputs", "jpeg", "max_bytes"), KeyError, r"inputs\.jpeg: missing required key 'max_bytes'"),
    (("inputs", "jpeg", "shape"), [1, 10], r"inputs\.jpeg\.shape: unknown key; allowed keys: dtype, "
                                           r"max_bytes, bench_size"),
    (("inputs", "jpeg", "bench_size"), [160, "x"], r"inputs\.jpeg\.bench_size: expected \[width, height\]"),
]


@pytest.mark.parametrize(("where", "value", "message"), ERRORS,
                         ids=[".".join(map(str, e[0])) for e in ERRORS])
def test_schema_errors_name_the_key_path(folder, where, value, message):
    path, _ = folder
    d = copy.deepcopy(doc())
    _set(d, where, value)
    with pytest.raises(SpecError, match=message):
        spec.parse(d, base_dir=str(path))


@pytest.mark.parametrize(("where", "value", "message"), [
    (("images", 1, "size"), [50, 48], r"images\[1\]: resize 'resize': 50x48: .*multiple of 16"),
    (("images", 0, "max_size"), [16, 16], r"images\[0\]: decode 'decode': 16x16 is outside the DVPP's 32x32"),
])
def test_dvpp_limits_are_named_by_key_path_when_built(folder, where, value, message):
    path, _ = folder
    d = copy.deepcopy(doc())
    _set(d, where, value)
    with pytest.raises(SpecError, match=message):
        spec.load(d, base_dir=str(path), allow_code=True)


# ---- bench and trace ------------------------------------------------------------------------------------


def test_bench_feeds_jpegs_and_labels_image_steps(folder, tmp_path):
    path, _ = folder
    out = tmp_path / "b.json"
    proc = ok(run_cli("bench", str(path / "pipeline.yaml"), "--allow-code", "--profile", "--requests", "30",
                      "--warmup", "2", "--no-progress", "--json", str(out),
                      env={"PYTHONPATH": os.path.join(REPO, "examples")}))
    fig = json.loads(out.read_text())
    assert fig["step_labels"] == {"decode": "image step decode", "resize": "image step resize",
                                  "detector": "model detector", "nms": "host step nms",
                                  "crops": "image step crops", "classifier": "model classifier"}
    assert fig["breakdown"]["labels"] == fig["step_labels"]
    assert fig["breakdown"]["slowest_stage"] in fig["step_labels"].values()
    for label in ("image step decode", "image step resize", "image step crops"):
        assert f"  {label} " in proc.stdout
    assert fig["config"]["batch"] == 1 and fig["requests"] == 30


def test_bench_reads_jpeg_files_with_input(folder, tmp_path):
    path, _ = folder
    jpegs = tmp_path / "jpegs"
    jpegs.mkdir()
    rng = np.random.default_rng(1)
    for k in range(3):
        (jpegs / f"{k}.jpg").write_bytes(_images.random_jpeg(rng, 96, 64))
    outs = tmp_path / "outs"
    outs.mkdir()
    env = {"PYTHONPATH": os.path.join(REPO, "examples")}
    ok(run_cli("bench", str(path / "pipeline.yaml"), "--allow-code", "--input", str(jpegs), "--output",
               str(outs), "--requests", "6", "--warmup", "1", "--no-progress", env=env))
    pipe, kw = spec.load(path / "pipeline.yaml", allow_code=True)
    with pipe.compile(**kw) as engine:
        want = engine.run({"jpeg": (jpegs / "2.jpg").read_bytes()})
    np.testing.assert_array_equal(np.load(outs / "2_label.npy"), want["label"])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.npy").write_bytes(b"")
    line = error_line(run_cli("bench", str(path / "pipeline.yaml"), "--allow-code", "--input", str(bad),
                              "--no-progress", env=env))
    assert f"--input folder {bad} (bytes input 'jpeg') holds no .jpg or .jpeg files" in line


def test_bench_refuses_a_batch_above_one(folder):
    path, _ = folder
    line = error_line(run_cli("bench", str(path / "pipeline.yaml"), "--allow-code", "--batch", "2",
                              "--no-progress", env={"PYTHONPATH": os.path.join(REPO, "examples")}))
    assert "--batch 2: a pipeline with a bytes input runs one JPEG per request (--batch 1)" in line


def test_trace_has_a_lane_per_image_node(folder, tmp_path):
    path, _ = folder
    out = tmp_path / "t.json"
    proc = ok(run_cli("trace", str(path / "pipeline.yaml"), "--allow-code", "--requests", "4", "--out",
                      str(out), env={"PYTHONPATH": os.path.join(REPO, "examples")}))
    assert "(4 requests; one JPEG per request)" in proc.stdout
    lanes = {e["args"]["name"] for e in json.loads(out.read_text())["traceEvents"]
             if e.get("ph") == "M" and "name" in e.get("args", {})}
    for node in ("decode", "resize", "crops"):
        assert any(lane.endswith(f"image node {node}") for lane in lanes), lanes
    spans = {e["name"] for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") == "X"}
    assert {"decode", "resize", "crops"} <= spans


def test_the_documented_spec_parses(folder):
    import re

    import yaml

    path, _ = folder
    with open(os.path.join(REPO, "docs", "pipeline-spec.md"), encoding="utf-8") as f:
        section = f.read().split("## Image steps", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    parsed = spec.parse(yaml.safe_load(blocks[0]), base_dir=str(path))
    assert [m.op for m in parsed.images] == ["jpeg_decode", "resize", "crop_resize"]
    assert parsed.inputs[0].bench_size == (640, 480)


def test_bench_jpegs_follow_bench_size_else_the_decode(folder):
    import io

    from PIL import Image

    from ascend_engine.bench import jpegs

    path, _ = folder
    plan = spec.load(path / "pipeline.yaml", allow_code=True).pipeline.plan()
    pool = jpegs.feeds(plan, {"jpeg": (96, 64)}, 2)
    assert [Image.open(io.BytesIO(f["jpeg"])).size for f in pool] == [(96, 64), (96, 64)]
    assert pool[0]["jpeg"] != pool[1]["jpeg"]
    assert Image.open(io.BytesIO(jpegs.feeds(plan, {}, 1)[0]["jpeg"])).size == (1920, 1080)   # 4096 capped


MODEL_BOXES_SPEC = """\
inputs:
  jpeg: {dtype: bytes, max_bytes: 1048576}
images:
  - {name: decode, op: jpeg_decode, inputs: [jpeg], max_size: [4096, 4096]}
  - {name: resize, op: resize, inputs: decode, size: [64, 48]}
  - {name: crops, op: crop_resize, inputs: [resize, detector.boxes], size: [32, 32]}
models:
  - {name: detector, path: detector_nv12.om, inputs: [resize]}
  - {name: classifier, path: classifier_nv12.om, inputs: [crops]}
outputs: {label: classifier.label, crops: crops}
"""


def test_a_spec_crops_a_models_boxes_without_host_code(folder):
    # detector.boxes is (1, 32, 4) float32: the planner inserts the native step "crops boxes", so the spec
    # holds no code and loads without allow_code; it crops what a Python step passing the boxes on crops
    import yaml

    path, models = folder
    pipe, kwargs = spec.load(yaml.safe_load(MODEL_BOXES_SPEC), base_dir=str(path))
    assert next(n for n in pipe.plan().nodes if n.name == "crops boxes").max_rows == dc.CANDIDATES
    rng = np.random.default_rng(4)
    jpegs = [_images.random_jpeg(rng, 160, 120) for _ in range(3)]
    with pipe.compile(depth=2) as engine:
        got = [engine.run({"jpeg": j}) for j in jpegs]
    with _host_step_reference(models).compile(depth=2) as engine:
        want = [engine.run({"jpeg": j}) for j in jpegs]
    for g, w in zip(got, want, strict=True):
        assert g["crops"].shape[0] == dc.CANDIDATES
        np.testing.assert_array_equal(g["crops"], w["crops"])
        np.testing.assert_array_equal(g["label"], w["label"])


def _host_step_reference(models):
    """The same pipeline with a Python host step passing the detector's boxes on."""
    import ascend_engine as ae

    pipe = ae.Pipeline()
    picture = pipe.resize(pipe.jpeg_decode(pipe.bytes_input("jpeg", 1 << 20), (4096, 4096)), dc.PICTURE)
    _scores, boxes = pipe.model(models["detector"].path, picture, name="detector")
    kept = pipe.host(lambda b: b.reshape(-1, 4), boxes, outputs=[("boxes", "float32", (-1, 4))], rows="any",
                     max_rows=dc.CANDIDATES, name="pass")
    crops = pipe.crop_resize(picture, kept, dc.CROP, name="crops")
    pipe.output("label", pipe.model(models["classifier"].path, crops, name="classifier")[1])
    pipe.output("crops", crops)
    return pipe
