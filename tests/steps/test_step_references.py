"""Every native step equals its numpy reference (ascend_engine/steps/reference.py),
called directly as an engine's worker calls it: random inputs, and the edges
(empty, one box, all-equal scores and their tie-break, boxes touching the
border, NaN refused, counts over the max refused with the step's name)."""

import numpy as np
import pytest

from ascend_engine.steps import _native as native
from ascend_engine.steps import ctc_text
from ascend_engine.steps import reference as ref

call = native.call


def random_boxes(rng, rows, n, size=100.0):
    xy = rng.uniform(0, size, (rows, n, 2)).astype(np.float32)
    wh = rng.uniform(1, size / 2, (rows, n, 2)).astype(np.float32)
    return np.concatenate([xy, xy + wh], axis=-1).astype(np.float32)


def run_nms(boxes, scores, iou=0.45, score=0.3, max_boxes=20, max_images=8, agnostic=False, room=None):
    rows, n = boxes.shape[:2]
    classes = scores.shape[2] if scores.ndim == 3 else 1
    ctx = native.nms_context("det", n, classes, agnostic, iou, score, max_boxes, max_images)
    room = room or max(1, max_boxes * max_images)
    outs = [np.zeros((room, 4), np.float32), np.zeros(room, np.float32), np.zeros(room, np.int32),
            np.zeros(room, np.int32), np.zeros(room, np.int32)]
    k = call("nms", ctx, [boxes, scores], outs)
    return tuple(o[:k] for o in outs)


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w)


# ---- nms ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("agnostic", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_nms_equals_numpy_on_random_boxes(seed, agnostic):
    rng = np.random.default_rng(seed)
    rows, n, classes = int(rng.integers(1, 5)), int(rng.integers(1, 200)), int(rng.integers(1, 6))
    boxes = random_boxes(rng, rows, n)
    scores = rng.random((rows, n, classes)).astype(np.float32)
    iou, score, max_boxes = float(rng.uniform(0.1, 0.9)), float(rng.uniform(0, 0.9)), int(rng.integers(1, 50))
    got = run_nms(boxes, scores, iou, score, max_boxes, agnostic=agnostic)
    want = ref.nms(boxes, scores, iou, score, max_boxes, agnostic)
    assert_same(got, want)
    assert len(got[0]) > 0


def test_nms_matches_the_examples_plain_nms():
    """The example's own NMS (examples/_models.nms, one class) keeps the same boxes in the same order."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import _models

    rng = np.random.default_rng(3)
    boxes = random_boxes(rng, 1, 150)
    scores = rng.random((1, 150)).astype(np.float32)
    scores[0, ::7] = scores[0, 3]                     # ties
    _, _, _, _, index = run_nms(boxes, scores, 0.45, -1.0, 150, agnostic=True)
    np.testing.assert_array_equal(index, _models.nms(boxes[0], scores[0], 0.45))


def test_nms_empty_and_one_box():
    boxes = np.array([[[10, 10, 20, 20]]], np.float32)
    got = run_nms(boxes, np.array([[0.1]], np.float32), score=0.5)
    assert all(len(g) == 0 for g in got)
    got = run_nms(boxes, np.array([[0.9]], np.float32), score=0.5)
    assert got[0].tolist() == [[10, 10, 20, 20]] and got[1].tolist() == [np.float32(0.9)]
    assert got[2].tolist() == [0] and got[3].tolist() == [0] and got[4].tolist() == [0]
    # zero rows: a request of no images
    got = run_nms(np.zeros((0, 1, 4), np.float32), np.zeros((0, 1), np.float32))
    assert all(len(g) == 0 for g in got)


def test_nms_ties_go_to_the_lower_box_then_the_lower_class():
    # three identical boxes with equal scores: only box 0 survives; class-aware, each class keeps box 0
    boxes = np.tile(np.array([0, 0, 10, 10], np.float32), (1, 3, 1))
    scores = np.full((1, 3, 2), 0.7, np.float32)
    got = run_nms(boxes, scores)
    assert got[4].tolist() == [0, 0] and got[2].tolist() == [0, 1]
    assert_same(got, ref.nms(boxes, scores, 0.45, 0.3, 20))
    agnostic = run_nms(boxes, scores, agnostic=True)
    assert agnostic[4].tolist() == [0] and agnostic[2].tolist() == [0]   # best class: the lower on a tie
    # all-equal scores on disjoint boxes: every box, in index order
    boxes = np.array([[[i * 20, 0, i * 20 + 10, 10] for i in range(5)]], np.float32)
    got = run_nms(boxes, np.full((1, 5), 0.5, np.float32))
    assert got[4].tolist() == [0, 1, 2, 3, 4]


def test_nms_iou_at_the_threshold_keeps_and_above_suppresses():
    # IoU of these two boxes is exactly 0.5 (50 / 100 ... as float32): kept at 0.5, suppressed below
    boxes = np.array([[[0, 0, 10, 10], [0, 0, 10, 5]]], np.float32)
    scores = np.array([[0.9, 0.8]], np.float32)
    assert run_nms(boxes, scores, iou=0.5)[4].tolist() == [0, 1]
    assert run_nms(boxes, scores, iou=0.49)[4].tolist() == [0]


def test_nms_keeps_max_boxes_per_image_and_boxes_touching_each_other():
    # boxes that share an edge do not overlap (IoU 0): all kept up to max_boxes, the best first
    boxes = np.array([[[i * 10, 0, i * 10 + 10, 10] for i in range(6)]] * 2, np.float32)
    scores = np.array([[0.1, 0.9, 0.5, 0.7, 0.3, 0.8]] * 2, np.float32)
    got = run_nms(boxes, scores, score=0.0, max_boxes=3)
    assert got[4].tolist() == [1, 5, 3, 1, 5, 3] and got[3].tolist() == [0, 0, 0, 1, 1, 1]


def test_nms_refuses_nan_scores_bad_boxes_and_too_many_images():
    boxes = random_boxes(np.random.default_rng(0), 2, 4)
    scores = np.full((2, 4), 0.9, np.float32)
    scores[1, 2] = np.nan
    with pytest.raises(native.StepError, match=r"^nms 'det': row 1 box 2 class 0 has a NaN score$"):
        run_nms(boxes, scores)
    scores[1, 2] = 0.9
    boxes[0, 3] = [5, 5, 1, 9]
    with pytest.raises(native.StepError, match=r"nms 'det': row 0 box 3 is not a box .* \(5, 5, 1, 9\)"):
        run_nms(boxes, scores)
    boxes[0, 3] = [5, 5, 9, np.inf]
    with pytest.raises(native.StepError, match="row 0 box 3 is not a box"):
        run_nms(boxes, scores)
    scores[0, 3] = 0.0     # below the threshold: not a candidate, so not checked
    assert_same(run_nms(boxes, scores), ref.nms(boxes, scores, 0.45, 0.3, 20))
    with pytest.raises(native.StepError, match="nms 'det': the request has 2 images, more than max_images=1"):
        run_nms(boxes, scores, max_images=1)


# ---- decode_boxes ------------------------------------------------------------------------------------

ANCHORS = (((10, 13), (16, 30), (33, 23)), ((30, 61), (62, 45), (59, 119)))


def run_decode(raw, kind, size, clip=False, **kw):
    rows, n, channels = raw.shape
    ctx = native.decode_context("head", kind, n, channels, size[0], size[1], clip, kw.get("strides", ()),
                                kw.get("anchors", ()), kw.get("priors"), kw.get("variances", (0.1, 0.2)))
    out = np.zeros((rows, n, 4), np.float32)
    assert call("decode_boxes", ctx, [raw], [out]) == rows
    return out


@pytest.mark.parametrize("kind,kw", [
    ("yolox", {"strides": (8, 16)}), ("ltrb", {"strides": (8, 16)}),
    ("yolov5", {"strides": (8, 16), "anchors": ANCHORS}),
    ("ssd", {}), ("xywh", {}),
])
@pytest.mark.parametrize("clip", [False, True])
def test_decode_boxes_equals_numpy(kind, kw, clip):
    rng = np.random.default_rng(len(kind))
    size = (64, 32)
    per = len(ANCHORS[0]) if kind == "yolov5" else 1
    n = sum(per * (64 // s) * (32 // s) for s in kw["strides"]) if "strides" in kw else 37
    raw = rng.standard_normal((3, n, 6)).astype(np.float32)
    if kind == "xywh":
        raw[..., :4] = np.abs(raw[..., :4]) * 40
    if kind == "ssd":
        kw = {"priors": rng.uniform(0.05, 0.95, (n, 4)).astype(np.float32), "variances": (0.1, 0.2)}
    got = run_decode(raw, kind, size, clip, **kw)
    want = ref.decode_boxes(raw, kind, size, clip=clip, **kw)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5)   # expf against numpy's exp: an ulp
    if clip:
        assert got[..., 0::2].max() <= 64 and got[..., 1::2].max() <= 32 and got.min() >= 0


def test_decode_boxes_grid_layout_by_hand():
    # yolox, stride 16 on 32x16: cells (0,0), (1,0); zero offsets and log-sizes -> 16x16 boxes at the cells
    raw = np.zeros((1, 2, 4), np.float32)
    out = run_decode(raw, "yolox", (32, 16), strides=(16,))
    assert out.tolist() == [[[-8, -8, 8, 8], [8, -8, 24, 8]]]
    out = run_decode(raw + 1, "ltrb", (32, 16), strides=(16,))    # one stride each way from the centre
    assert out.tolist() == [[[-8, -8, 24, 24], [8, -8, 40, 24]]]


def test_decode_boxes_refuses_non_finite_values():
    raw = np.zeros((2, 2, 4), np.float32)
    raw[1, 1, 2] = np.nan
    with pytest.raises(native.StepError, match=r"decode_boxes 'head': row 1 box 1 has a non-finite value"):
        run_decode(raw, "yolox", (32, 16), strides=(16,))
    raw[1, 1, 2] = 200.0      # exp overflows
    with pytest.raises(native.StepError, match="row 1 box 1 decodes to a non-finite corner"):
        run_decode(raw, "yolox", (32, 16), strides=(16,))


# ---- topk, argmax, softmax ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape,k", [((4, 10), 3), ((3, 5, 7), 7), ((2, 1), 1), ((0, 6), 2), ((5, 1000), 5)])
def test_topk_and_argmax_equal_numpy(shape, k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., ::3] = np.round(x[..., ::3])            # ties
    vectors = int(np.prod(shape[1:-1])) if len(shape) > 2 else 1
    ctx = native.rowwise_context("topk", "top", vectors, shape[-1], k)
    values = np.zeros((*shape[:-1], k), np.float32)
    indices = np.zeros((*shape[:-1], k), np.int32)
    assert call("topk", ctx, [x], [values, indices]) == shape[0]
    want_v, want_i = ref.topk(x, k)
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(indices, want_i)
    ctx1 = native.rowwise_context("topk", "arg", vectors, shape[-1], 1)
    arg = np.zeros(shape[:-1], np.int32)
    call("topk", ctx1, [x], [arg])
    np.testing.assert_array_equal(arg, ref.argmax(x))


def test_topk_ties_keep_the_lower_index():
    x = np.array([[1, 3, 3, 2, 3]], np.float32)
    ctx = native.rowwise_context("topk", "top", 1, 5, 4)
    values, indices = np.zeros((1, 4), np.float32), np.zeros((1, 4), np.int32)
    call("topk", ctx, [x], [values, indices])
    assert indices.tolist() == [[1, 2, 4, 3]] and values.tolist() == [[3, 3, 3, 2]]


def test_softmax_equals_numpy_and_refuses_nan():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 3, 50)) * 20).astype(np.float32)
    x[0, 0] = 5.0                                  # all equal: uniform
    x[1, 0, :49] = -np.inf                         # one finite value: probability 1
    ctx = native.rowwise_context("softmax", "sm", 3, 50)
    out = np.zeros_like(x)
    call("softmax", ctx, [x], [out])
    np.testing.assert_allclose(out, ref.softmax(x), rtol=1e-6, atol=1e-7)
    assert out[1, 0, 49] == 1.0 and np.allclose(out[0, 0], 1 / 50)
    x[4, 2, 7] = np.nan
    with pytest.raises(native.StepError, match=r"^softmax 'sm': row 4 vector 2 holds a NaN at 7$"):
        call("softmax", ctx, [x], [out])
    x[4, 2, 7] = np.inf
    with pytest.raises(native.StepError, match="softmax 'sm': row 4 vector 2 holds an infinite value"):
        call("softmax", ctx, [x], [out])


def test_topk_refuses_nan():
    x = np.zeros((2, 4), np.float32)
    x[1, 3] = np.nan
    ctx = native.rowwise_context("topk", "top", 1, 4, 2)
    with pytest.raises(native.StepError, match=r"^topk 'top': row 1 vector 0 holds a NaN at 3$"):
        call("topk", ctx, [x], [np.zeros((2, 2), np.float32), np.zeros((2, 2), np.int32)])


# ---- ctc_greedy --------------------------------------------------------------------------------------


def run_ctc(x, blank=0):
    rows, steps, classes = x.shape
    ctx = native.ctc_context("rec", steps, classes, blank)
    outs = [np.zeros((rows, steps), np.int32), np.zeros(rows, np.int32), np.zeros(rows, np.float32)]
    call("ctc_greedy", ctx, [x], outs)
    return outs


@pytest.mark.parametrize("blank", [0, 3, 5])
def test_ctc_greedy_equals_numpy(blank):
    rng = np.random.default_rng(blank)
    x = rng.random((7, 30, 6)).astype(np.float32)
    x[:, ::4] = x[:, 1::4][:, :x[:, ::4].shape[1]]        # repeats to collapse
    x[2] = 0.0
    x[2, :, blank] = 1.0                                    # all blank: an empty text
    labels, lengths, scores = run_ctc(x, blank)
    want = ref.ctc_greedy(x, blank)
    np.testing.assert_array_equal(labels, want[0])
    np.testing.assert_array_equal(lengths, want[1])
    np.testing.assert_allclose(scores, want[2], rtol=1e-6)
    assert lengths[2] == 0 and scores[2] == 0 and (labels[2] == -1).all()


def test_ctc_greedy_collapses_repeats_around_blanks_and_applies_a_table():
    path = [1, 1, 0, 1, 2, 2, 0, 0, 3, 1]
    x = np.zeros((1, len(path), 4), np.float32)
    x[0, np.arange(len(path)), path] = 0.5
    labels, lengths, scores = run_ctc(x)
    assert labels[0, :lengths[0]].tolist() == [1, 1, 2, 3, 1] and (labels[0, 5:] == -1).all()
    assert scores[0] == np.float32(0.5)
    assert ctc_text(labels, lengths, "abc") == ["aabca"]
    # the table lists the classes without the blank: above it, class c is characters[c - 1]
    assert ctc_text(np.array([[0, 2, 4, -1]], np.int32), np.array([3], np.int32), "abcd", blank=1) == ["abd"]


def test_ctc_greedy_ties_go_to_the_lower_class():
    # long vectors (the vectorised pass) with the maximum at two classes, in every lane position
    x = np.zeros((1, 40, 45), np.float32)
    for t in range(40):
        x[0, t, [1 + t % 20, 21 + t % 24]] = 1.0
    x[0, 1::2] = 0.0                        # blanks between, so that repeats still show
    labels, lengths, _ = run_ctc(x)
    assert labels[0, :lengths[0]].tolist() == [1 + t % 20 for t in range(0, 40, 2)]
    np.testing.assert_array_equal(labels, ref.ctc_greedy(x)[0])


def test_ctc_greedy_refuses_nan():
    x = np.zeros((2, 3, 4), np.float32)
    x[1, 2, 1] = np.nan
    with pytest.raises(native.StepError, match=r"^ctc_greedy 'rec': row 1 step 2 class 1 is NaN$"):
        run_ctc(x)


# ---- host crops and warps ------------------------------------------------------------------------------


def run_crop(images, boxes, size, index=None, interpolation="bilinear", room=8):
    h, w = images.shape[1:3]
    channels = images.shape[3] if images.ndim == 4 else 1
    ctx = native.crop_context("crop_resize_host", "crops", h, w, channels, size[1], size[0],
                              images.dtype == np.uint8, interpolation == "bilinear", index is not None)
    out = np.zeros((room, size[1], size[0], *images.shape[3:]), images.dtype)
    ins = [images, boxes] + ([index] if index is not None else [])
    k = call("crop_resize_host", ctx, ins, [out])
    return out[:k]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("channels", [None, 3])
def test_crop_resize_host_equals_numpy(dtype, interpolation, channels):
    rng = np.random.default_rng(7)
    shape = (3, 37, 53) + ((channels,) if channels else ())
    images = (rng.random(shape) * 255).astype(dtype)
    xy = rng.uniform(0, 16, (6, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(0.5, 20, (6, 2))], 1).astype(np.float32)
    boxes[0] = [0, 0, 53, 37]                     # the whole picture, touching every border
    boxes[1] = [52, 36, 53, 37]                   # the last pixel
    index = np.array([0, 2, 1, 1, 0, 2], np.int32)
    got = run_crop(images, boxes, (9, 5), index, interpolation)
    want = ref.crop_resize(images, boxes, (9, 5), index, interpolation)
    assert got.dtype == want.dtype and got.shape == want.shape == (6, 5, 9, *shape[3:])
    np.testing.assert_array_equal(got, want)
    if interpolation == "nearest":     # bilinear samples around the box too (the picture's pixels)
        assert (got[1] == images[2, 36, 52]).all()


def test_crop_resize_host_edges_and_refusals():
    images = np.arange(2 * 4 * 6, dtype=np.uint8).reshape(2, 4, 6)
    assert run_crop(images, np.zeros((0, 4), np.float32), (3, 3), np.zeros(0, np.int32)).shape == (0, 3, 3)
    # identity: a box of the whole picture at its own size is the picture
    np.testing.assert_array_equal(run_crop(images[:1], np.array([[0, 0, 6, 4]], np.float32), (6, 4))[0],
                                  images[0])
    for box in ([-1, 0, 3, 3], [0, 0, 6.5, 3], [2, 0, 2, 3], [0, np.nan, 3, 3]):
        with pytest.raises(native.StepError, match=r"crop_resize_host 'crops': box 0 .* is not a non-empty "
                                                   r"box inside the 6x4 picture"):
            run_crop(images, np.array([box], np.float32), (3, 3), np.zeros(1, np.int32))
    with pytest.raises(native.StepError, match="box 0 names picture 2, the request has 2"):
        run_crop(images, np.array([[0, 0, 3, 3]], np.float32), (3, 3), np.array([2], np.int32))
    with pytest.raises(native.StepError, match="without picture indices the request must hold one picture"):
        run_crop(images, np.array([[0, 0, 3, 3]], np.float32), (3, 3))
    with pytest.raises(native.StepError, match="9 boxes, more than its max_rows=8"):
        run_crop(images, np.tile(np.array([[0, 0, 3, 3]], np.float32), (9, 1)), (3, 3), np.zeros(9, np.int32))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_warp_affine_host_equals_numpy(dtype):
    rng = np.random.default_rng(11)
    images = (rng.random((2, 20, 30, 3)) * 255).astype(dtype)
    mats = np.array([[1, 0, 0, 0, 1, 0],                # identity: the picture's corner
                     [0.7, -0.7, 12, 0.7, 0.7, -3],     # a rotation, partly outside: border
                     [2.5, 0.1, 3.3, -0.2, 1.9, 40],    # mostly outside
                     [1e9, 0, 1e9, 0, 1, 0]],           # far outside
                    np.float32)
    index = np.array([0, 1, 1, 0], np.int32)
    h, w = 12, 16
    ctx = native.crop_context("warp_affine_host", "warp", 20, 30, 3, h, w, dtype == np.uint8, True, True, 9.0)
    out = np.zeros((4, h, w, 3), dtype)
    assert call("warp_affine_host", ctx, [images, mats, index], [out]) == 4
    want = ref.warp_affine(images, mats, (w, h), index, 9.0)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out[0], images[0, :h, :w])
    assert (out[3] == 9).all()
    mats[2, 4] = np.inf
    with pytest.raises(native.StepError, match="warp_affine_host 'warp': matrix 2 has a non-finite value"):
        call("warp_affine_host", ctx, [images, mats, index], [out])


def test_a_step_refuses_tensors_unlike_its_plan():
    ctx = native.rowwise_context("topk", "top", 1, 4, 2)
    with pytest.raises(native.StepError, match="topk 'top': input 0 has 20 bytes per row, the plan says 16"):
        call("topk", ctx, [np.zeros((2, 5), np.float32)], [np.zeros((2, 2), np.float32),
                                                          np.zeros((2, 2), np.int32)])
    with pytest.raises(native.StepError, match="takes 1 input"):
        call("topk", ctx, [np.zeros((2, 4), np.float32)] * 2, [np.zeros((2, 2), np.float32)])
