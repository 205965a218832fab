"""Spec files with native steps (docs/pipeline-spec.md, "Native steps"): ``host:``
entries with ``step:`` build the same pipeline as the Pipeline's methods, load
without allow_code (they name no Python code), and every schema error names its
key path."""

import copy

import numpy as np
import pytest
from helpers.steps import CROP, MAX_BOXES, MAX_IMAGES, SIDE, STRIDES, classifier_graph, head_graph

from ascend_engine import spec
from ascend_engine.errors import SpecError
from ascend_engine.steps import reference as ref

DOC = {
    "inputs": {"image": {"dtype": "float32", "shape": [-1, SIDE, SIDE]}},
    "models": [{"name": "head", "path": "head.om", "inputs": ["image"]},
               {"name": "cls", "path": "cls.om", "inputs": ["crops"]}],
    "host": [
        {"name": "decode", "step": "decode_boxes", "inputs": ["head.raw"],
         "params": {"kind": "yolox", "image_size": [SIDE, SIDE], "strides": list(STRIDES), "clip": True}},
        {"name": "nms", "step": "nms", "inputs": ["decode", "head.scores"],
         "params": {"iou_threshold": 0.4, "score_threshold": 0.5, "max_boxes": MAX_BOXES,
                    "max_images": MAX_IMAGES}},
        {"name": "crops", "step": "crop_resize_host", "inputs": ["image", "nms.boxes", "nms.images"],
         "params": {"size": list(CROP)}},
        {"name": "top", "step": "topk", "inputs": ["cls"], "params": {"k": 2}},
    ],
    "outputs": {"boxes": "decode", "scores": "head.scores", "det": "nms.boxes", "images": "nms.images",
                "crops": "crops", "top": "top.indices", "logits": "cls"},
    "compile": {"depth": 2},
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("stepspec")
    head_graph().save(str(path / "head.om"), batch_sizes=(1, 2, 4))
    classifier_graph().save(str(path / "cls.om"), batch_sizes=(1, 2, 4, 8))
    return str(path)


def test_a_spec_of_native_steps_runs_without_allow_code(folder):
    pipe, options = spec.load(copy.deepcopy(DOC), base_dir=folder)
    names = [n.name for n in pipe._nodes]
    assert sorted(names) == ["cls", "crops", "decode", "head", "nms", "top"]
    images = np.random.default_rng(1).random((3, SIDE, SIDE)).astype(np.float32)
    with pipe.compile(**options) as engine:
        out = engine.run({"image": images})
    det = ref.nms(out["boxes"], out["scores"], 0.4, 0.5, MAX_BOXES)
    np.testing.assert_array_equal(out["det"], det[0])
    np.testing.assert_array_equal(out["images"], det[3])
    np.testing.assert_array_equal(out["crops"], ref.crop_resize(images, det[0], CROP, det[3]))
    np.testing.assert_array_equal(out["top"], ref.topk(out["logits"], 2)[1])
    assert len(det[0]) > 0


def test_a_spec_of_native_steps_round_trips(folder):
    parsed = spec.parse(copy.deepcopy(DOC), base_dir=folder)
    again = spec.to_dict(parsed)
    assert again["host"][1] == {"name": "nms", "step": "nms", "inputs": ["decode", "head.scores"],
                                "params": DOC["host"][1]["params"]}
    assert spec.to_dict(spec.parse(again, base_dir=folder)) == again


@pytest.mark.parametrize("edit,key,message", [
    (lambda d: d["host"][1].update(step="nmx"), "host[1].step", "expected one of decode_boxes, nms"),
    (lambda d: d["host"][1]["params"].update(iou=0.5), "host[1].params.iou",
     "unknown key; allowed keys: iou_threshold, score_threshold, max_boxes, max_images, class_agnostic"),
    (lambda d: d["host"][1].update(rows="any"), "host[1].rows",
     "a native step (nms) declares its own outputs"),
    (lambda d: d["host"][1].update(inputs=["decode"]), "host[1].inputs", "nms takes 2 input(s), got 1"),
    (lambda d: d["host"][3].update(params={}), "host[3].params", "missing required key 'k'"),
    (lambda d: d["host"][0]["params"].update(kind="yolo"), "host[0]",
     "decode_boxes 'decode': kind must be one of xywh, yolox"),
    (lambda d: d["host"][1]["params"].update(max_boxes=0), "host[1]",
     "nms 'nms': max_boxes must be an integer"),
])
def test_spec_errors_name_the_entry(folder, edit, key, message):
    doc = copy.deepcopy(DOC)
    edit(doc)
    with pytest.raises(SpecError) as info:
        spec.load(doc, base_dir=folder)
    assert info.value.key == key and message in str(info.value), str(info.value)
