"""The examples (examples/detector_classifier.py, examples/ocr.py) stay true:
their checks run here on small counts, under every gear policy, and a broken
host step makes them fail."""

import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
sys.path.insert(0, EXAMPLES)

import detector_classifier  # noqa: E402
import ocr  # noqa: E402


@pytest.fixture(scope="module")
def dc_models(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("dc"))
    return detector_classifier.build_models(folder, detector_us=0, classifier_us=0, classifier_per_item_us=0)


@pytest.fixture(scope="module")
def ocr_models(tmp_path_factory):
    return ocr.build_models(str(tmp_path_factory.mktemp("ocr")), detector_us=0, angle_us=0,
                            angle_per_item_us=0, recognizer_us=0, recognizer_per_item_us=0)


@pytest.mark.parametrize("native", [True, False], ids=["native-nms", "numpy-select"])
@pytest.mark.parametrize("policy", ["upper", "lower", "nearest"])
@pytest.mark.parametrize("per_request,depth", [(1, 1), (4, 2), (3, 8)])
def test_detector_classifier_matches_numpy(dc_models, policy, per_request, depth, native):
    f = detector_classifier.check(96, per_request, seed=depth, depth=depth, gear_policy=policy,
                                  models=dc_models, native=native)
    assert f["requests"] == -(-96 // per_request)
    if per_request == 1:
        assert f["empty_requests"] > 0          # zero rows: the classifier is skipped for them
    if per_request == 4:
        assert f["max_per_request"] > detector_classifier._models.GEARS[-1]   # split over executions


@pytest.mark.parametrize("policy", ["upper", "lower"])
@pytest.mark.parametrize("per_request,depth", [(1, 2), (4, 8)])
def test_ocr_matches_numpy(ocr_models, policy, per_request, depth):
    f = ocr.check(64, per_request, seed=depth, depth=depth, gear_policy=policy, models=ocr_models)
    assert f["lines"] > 0 and 0 < f["turned"] < f["lines"]   # both angles occur
    assert len(f["texts"]) == f["lines"]
    # lines of every width gear of the recognizer (16, 32, 64), each read up to its own width
    assert {ocr.LINE_WIDTHS[int(np.searchsorted(ocr.LINE_WIDTHS, w))] for w in f["line_widths"]} == \
        set(ocr.LINE_WIDTHS)
    assert all(len(t) <= w for t, w in zip(f["texts"], f["line_widths"], strict=True))


def test_nms_keeps_the_best_of_overlapping_boxes():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 5]], np.float32)
    scores = np.array([0.6, 0.9, 0.7, 0.8], np.float32)
    # box 1 (best) suppresses box 0 (IoU 81/119 = 0.68); box 3 overlaps box 1 by 36/136 = 0.26
    assert detector_classifier._models.nms(boxes, scores, 0.45).tolist() == [1, 3, 2]
    assert detector_classifier._models.nms(boxes, scores, 0.25).tolist() == [1, 2]
    assert detector_classifier._models.nms(boxes[:0], scores[:0], 0.5).tolist() == []


def test_ocr_lines_of_other_widths_break_the_check(ocr_models):
    """The widths the crop step gives decide the recognizer's gear and what is
    decoded: lines all stretched to the widest gear are caught."""
    def widest(images, scores, boxes):
        crops, widths, *rest = ocr.find_text(images, scores, boxes)
        return (crops, np.full_like(widths, ocr.LINE_WIDTHS[-1]), *rest)
    with pytest.raises(AssertionError, match=r"request \d+: (chars|widths)"):
        ocr.check(32, 2, models=ocr_models, steps={"crop": widest})


def test_ctc_decode():
    a = ocr.ALPHABET.index
    assert ocr.decode([0, a("a"), a("a"), 0, a("a"), a("b"), 0, 0]) == "aab"


def first_rows(step, limit):
    """A host step that keeps at most ``limit`` detections per request: the
    hand-batched sample's bug of a static batch that drops the rest."""
    def truncated(*arrays):
        return tuple(out[:limit] for out in step(*arrays))
    return truncated


def test_detector_classifier_check_catches_dropped_crops(dc_models):
    with pytest.raises(AssertionError, match=r"request \d+: image"):
        detector_classifier.check(32, 4, models=dc_models, step=first_rows(detector_classifier.select, 10),
                                  native=False)


def test_detector_classifier_native_check_catches_crops_from_the_wrong_image(dc_models):
    """The native NMS's images output decides which image each crop comes from: cropping every box
    from the request's first image is caught."""
    def first_image(images, boxes, which):
        return detector_classifier.crop_kept(images, boxes, np.zeros_like(which))
    with pytest.raises(AssertionError, match=r"request \d+: (label|probs)"):
        detector_classifier.check(32, 4, models=dc_models, step=first_image)


def test_detector_classifier_uses_the_native_nms(dc_models):
    from ascend_engine.planner.builder import NativeStep

    pipe = detector_classifier.build_native_pipeline(dc_models, 2)
    kinds = {n.name: isinstance(n.fn, NativeStep) for n in pipe._nodes if n.kind == "host"}
    assert kinds == {"corners": False, "nms": True, "crops": False}


def test_ocr_check_catches_a_missing_rotation(ocr_models):
    def no_turn(crops, widths, angle):
        return ocr.upright(crops, widths, np.zeros_like(angle))
    with pytest.raises(AssertionError, match=r"request \d+: chars"):
        ocr.check(32, 2, models=ocr_models, steps={"upright": no_turn})


def test_trace_of_a_host_step_pipeline_has_the_step_lane(dc_models, tmp_path):
    import json

    pipe = detector_classifier.build_pipeline(dc_models)
    rng = np.random.default_rng(0)
    images = detector_classifier._models.random_images(rng, 8, detector_classifier.IMAGE_HW)
    with pipe.compile(depth=4, profile=True) as engine:
        summary = engine.trace(tmp_path / "t.json", requests=8, feeds={"image": images}, batch_size=1)
    assert summary["requests"] == 8
    with open(tmp_path / "t.json") as f:
        names = {e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"}
    assert {"detector", "nms", "classifier"} <= names


# ---- the all-device variant (JPEG -> DVPP -> AIPP models, only boxes on the host) ----------------------


@pytest.fixture(scope="module")
def image_models(tmp_path_factory):
    return detector_classifier.build_image_models(str(tmp_path_factory.mktemp("dci")), detector_us=0,
                                                  classifier_us=0)


@pytest.mark.parametrize("depth", [1, 4])
def test_all_device_detector_classifier_matches_its_references(image_models, depth):
    f = detector_classifier.check_device_images(12, seed=depth, depth=depth, models=image_models)
    assert f["jpegs"] == 12 and f["detections"] >= 12
    assert f["max_per_request"] >= 2 and f["picture_max_diff"] <= 3


def test_all_device_check_catches_a_dropped_box(image_models):
    def drop_last(scores, boxes):
        return detector_classifier.pixel_boxes(scores, boxes)[:-1]

    with pytest.raises(AssertionError, match=r"request \d+: boxes"):
        detector_classifier.check_device_images(4, models=image_models, step=drop_last)


def test_all_device_pipeline_moves_only_boxes_and_labels(image_models):
    pipe = detector_classifier.build_device_pipeline(image_models, debug=False)
    plan = pipe.plan()
    assert [name for name, _ in plan.outputs] == ["boxes", "label", "probs"]
    assert [(n.name, n.kind) for n in plan.nodes] == [
        ("decode", "image"), ("resize", "image"), ("detector", "model"), ("nms", "host"), ("crops", "image"),
        ("classifier", "model")]


def test_pixel_boxes_are_even_inside_the_picture_and_large_enough():
    rng = np.random.default_rng(7)
    w, h = detector_classifier.PICTURE
    for _ in range(50):
        scores = rng.uniform(0, 1, (1, detector_classifier.CANDIDATES)).astype(np.float32)
        boxes = rng.uniform(0, 1, (1, detector_classifier.CANDIDATES, 4)).astype(np.float32)
        got = detector_classifier.pixel_boxes(scores, boxes)
        assert got.dtype == np.int32 and got.shape[1] == 4
        x0, y0, x1, y1 = got.T
        assert (x0 % 2 == 0).all() and (y0 % 2 == 0).all() and (x1 % 2 == 0).all() and (y1 % 2 == 0).all()
        assert (x0 >= 0).all() and (y0 >= 0).all() and (x1 <= w).all() and (y1 <= h).all()
        assert (x1 - x0 >= 16).all() and (y1 - y0 >= 16).all()
