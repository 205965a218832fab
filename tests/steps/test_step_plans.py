"""The native steps' builder calls check their inputs and parameters when the
pipeline is built (ascend_engine/steps/nodes.py): dtypes, shapes, counts and
values, each refusal naming the step, what it expected and what it got."""

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine.errors import PipelineError
from ascend_engine.planner.builder import NativeStep
from ascend_engine.steps import _native


def refused(match):
    """The builder call refuses, with a message matching ``match``."""
    return pytest.raises(PipelineError, match=match)


@pytest.fixture
def pipe():
    return ae.Pipeline(device=0)


def test_nms_checks_its_inputs(pipe):
    boxes = pipe.input("boxes", "float32", (-1, 10, 4))
    scores = pipe.input("scores", "float32", (-1, 10, 3))
    with refused(r"nms 'n': scores are \(rows, 10\) or \(rows, 10, classes\) for 10 "
                     r"boxes, got \(rows, 9\)"):
        pipe.nms(boxes, pipe.input("s9", "float32", (-1, 9)), name="n")
    with refused(r"nms 'n': boxes must be float32 with 3 dimensions .* got 'b16' "
                     r"float16"):
        pipe.nms(pipe.input("b16", "float16", (-1, 10, 4)), scores, name="n")
    with refused(r"boxes are \(rows, n, 4\) corners"):
        pipe.nms(pipe.input("b5", "float32", (-1, 10, 5)), scores, name="n")
    with refused("nms 'n': iou_threshold must be a finite number from 0.0 to 1.0, "
                     "got 1.5"):
        pipe.nms(boxes, scores, iou_threshold=1.5, name="n")
    with refused("score_threshold must be a finite number"):
        pipe.nms(boxes, scores, score_threshold=float("nan"), name="n")
    with refused("nms 'n': max_boxes must be an integer from 1 to"):
        pipe.nms(boxes, scores, max_boxes=0, name="n")
    with refused("max_boxes x max_images = 2000000 rows, more than a step returns"):
        pipe.nms(boxes, scores, max_boxes=1000, max_images=2000, name="n")
    det = pipe.nms(boxes, scores, max_boxes=7, max_images=3, name="n")
    assert [h.name for h in det] == ["n.boxes", "n.scores", "n.classes", "n.images", "n.indices"]
    assert det.boxes.shape == (-1, 4) and det.classes.dtype == np.int32
    node = pipe._nodes[-1]
    assert node.rows == "any" and node.max_rows == 21 and isinstance(node.fn, NativeStep)
    assert node.fn.address == _native.ADDRESSES["nms"] and node.fn.context == node.fn.keep.address


def test_decode_boxes_checks_the_head_layout(pipe):
    raw = pipe.input("raw", "float32", (-1, 20, 6))
    with refused(r"decode_boxes 'd': a yolox head on a 32x32 picture with strides "
                     r"\[8\] has 16 boxes, the input has 20"):
        pipe.decode_boxes(raw, "yolox", (32, 32), strides=(8,), name="d")
    with refused("each stride must be a positive integer dividing the picture's 32x30"):
        pipe.decode_boxes(raw, "ltrb", (32, 30), strides=(8, 16), name="d")
    with refused("kind must be one of xywh, yolox, ltrb, yolov5, ssd, got 'yolo'"):
        pipe.decode_boxes(raw, "yolo", (32, 32), name="d")
    with refused("yolov5 needs anchors per stride"):
        pipe.decode_boxes(raw, "yolov5", (32, 32), strides=(8, 16), anchors=[[(1, 2)]], name="d")
    with refused(r"kind 'ssd' needs priors"):
        pipe.decode_boxes(raw, "ssd", (32, 32), name="d")
    with refused(r"priors must be \(20, 4\) finite"):
        pipe.decode_boxes(raw, "ssd", (32, 32), priors=np.ones((19, 4)), name="d")
    with refused("strides and anchors apply to the grid kinds"):
        pipe.decode_boxes(raw, "xywh", (32, 32), strides=(8,), name="d")
    with refused("each box needs 4 values"):
        pipe.decode_boxes(pipe.input("r3", "float32", (-1, 20, 3)), "xywh", (32, 32), name="d")
    out = pipe.decode_boxes(raw, "yolox", (32, 32), strides=(8, 16), name="d")
    assert out.shape == (-1, 20, 4)
    raw60 = pipe.input("r60", "float32", (-1, 60, 85))
    anchors = [[(1, 2), (3, 4), (5, 6)]] * 2
    anchored = pipe.decode_boxes(raw60, "yolov5", (32, 32), strides=(8, 16), anchors=anchors, name="d5")
    assert anchored.shape == (-1, 60, 4)


def test_rowwise_steps_and_ctc_check_their_inputs(pipe):
    x = pipe.input("x", "float32", (-1, 5, 7))
    with refused("topk 't': k must be an integer from 1 to 7, got 8"):
        pipe.topk(x, 8, name="t")
    with refused("softmax 's': the input must be float32"):
        pipe.softmax(pipe.input("i", "int32", (-1, 4)), name="s")
    top = pipe.topk(x, 2, name="t")
    assert top.values.shape == (-1, 5, 2) and top.indices.dtype == np.int32
    assert pipe.argmax(x, name="a").shape == (-1, 5)
    assert pipe.softmax(x, name="s").shape == (-1, 5, 7)
    with refused("ctc_greedy 'c': blank must be an integer from 0 to 6, got 7"):
        pipe.ctc_greedy(x, blank=7, name="c")
    with refused(r"ctc_greedy 'c': the recognizer's output must be float32 with 3 "):
        pipe.ctc_greedy(pipe.input("x2", "float32", (-1, 7)), name="c")
    text = pipe.ctc_greedy(x, name="c")
    assert text.labels.shape == (-1, 5) and text.lengths.shape == (-1,) and text.scores.dtype == np.float32


def test_host_crops_check_their_inputs(pipe):
    image = pipe.input("image", "uint8", (-1, 48, 64, 3))
    boxes = pipe.input("boxes", "float32", (-1, 4))
    with refused("max_boxes is needed when 'boxes' is not a rows=\"any\" host step"):
        pipe.crop_resize_host(image, boxes, (16, 8), name="c")
    with refused(r"crop_resize_host 'c': size must be \(width, height\) in pixels"):
        pipe.crop_resize_host(image, boxes, (0, 8), max_boxes=4, name="c")
    with refused("interpolation must be 'bilinear' or 'nearest', got 'cubic'"):
        pipe.crop_resize_host(image, boxes, (16, 8), max_boxes=4, interpolation="cubic", name="c")
    with refused(r"the pictures .* must be uint8 or float32"):
        pipe.crop_resize_host(pipe.input("f16", "float16", (-1, 4, 4)), boxes, (2, 2), max_boxes=4, name="c")
    with refused("image_index .* must be int32"):
        pipe.crop_resize_host(image, boxes, (16, 8), image_index=pipe.input("ix", "int64", (-1,)),
                              max_boxes=4, name="c")
    crops = pipe.crop_resize_host(image, boxes, (16, 8), max_boxes=4, name="c")
    assert crops.shape == (-1, 8, 16, 3) and crops.dtype == np.uint8
    # the boxes of an nms: max_boxes defaults to the step's max_rows
    det = pipe.nms(pipe.input("b", "float32", (-1, 9, 4)), pipe.input("s", "float32", (-1, 9)), max_boxes=3,
                   max_images=2, name="n")
    pipe.crop_resize_host(image, det.boxes, (16, 8), image_index=det.images, name="c2")
    assert pipe._nodes[-1].max_rows == 6
    with refused(r"warp_affine_host 'w': matrices .* must hold 6 values a row"):
        pipe.warp_affine_host(image, boxes, (16, 8), max_boxes=4, name="w")
    with refused("warp_affine_host 'w': border must be a finite number"):
        pipe.warp_affine_host(image, pipe.input("m", "float32", (-1, 2, 3)), (16, 8), border=float("inf"),
                              max_boxes=4, name="w")


def test_a_step_name_is_checked_and_unique(pipe):
    x = pipe.input("x", "float32", (-1, 5))
    pipe.softmax(x, name="s")
    with refused("host step 's': the name is already used"):
        pipe.softmax(x, name="s")
    with refused("softmax: a step name is a non-empty string of at most 127 bytes"):
        pipe.softmax(x, name="n" * 128)
