"""Native steps in real pipelines between simulator models (docs/executor.md,
"Native steps"): a detector head -> decode_boxes -> nms -> crop_resize_host
-> classifier -> softmax -> topk, a recognizer -> ctc_greedy, and host warps.
Each step's outputs equal its numpy reference applied to what the engine gave
it, they feed the next model and come back to the caller, and a bad value
fails its request alone with a message naming the step."""

import numpy as np
import pytest
from helpers.pipelines import GEARS
from helpers.steps import (
    CROP,
    MAX_BOXES,
    MAX_IMAGES,
    SIDE,
    STRIDES,
    classifier_graph,
    head_graph,
)

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.steps import ctc_text
from ascend_engine.steps import reference as ref


def detection_pipeline(head, cls):
    """image -> head -> decode_boxes -> nms -> crop_resize_host -> classifier -> softmax -> topk, argmax;
    every tensor an output."""
    pipe = ae.Pipeline(device=0)
    image = pipe.input("image", "float32", (-1, SIDE, SIDE))
    raw, scores = pipe.model(head.path, image, name="head")
    boxes = pipe.decode_boxes(raw, "yolox", (SIDE, SIDE), strides=STRIDES, clip=True, name="decode")
    det = pipe.nms(boxes, scores, iou_threshold=0.4, score_threshold=0.5, max_boxes=MAX_BOXES,
                   max_images=MAX_IMAGES, name="nms")
    crops = pipe.crop_resize_host(image, det.boxes, CROP, image_index=det.images, name="crops")
    logits = pipe.model(cls.path, crops, name="cls")
    probs = pipe.softmax(logits, name="probs")
    top = pipe.topk(probs, 3, name="top")
    for name, h in (("raw", raw), ("scores", scores), ("boxes", boxes), ("det_boxes", det.boxes),
                    ("det_scores", det.scores), ("det_classes", det.classes), ("det_images", det.images),
                    ("det_indices", det.indices), ("crops", crops), ("logits", logits), ("probs", probs),
                    ("top_values", top.values), ("top_indices", top.indices),
                    ("label", pipe.argmax(logits, name="label"))):
        pipe.output(name, h)
    return pipe


@pytest.fixture(scope="module")
def detection(build):
    head, cls = build(head_graph(), "nshead"), build(classifier_graph(), "nscls")
    with detection_pipeline(head, cls).compile(depth=4) as engine:
        yield engine, cls


def images_for(rng, n):
    return rng.random((n, SIDE, SIDE)).astype(np.float32)


def check_request(out, images, cls):
    """Every step's outputs against its numpy reference, fed what the engine gave the step."""
    want_boxes = ref.decode_boxes(out["raw"], "yolox", (SIDE, SIDE), strides=STRIDES, clip=True)
    np.testing.assert_allclose(out["boxes"], want_boxes, rtol=2e-6, atol=1e-5)
    det = ref.nms(out["boxes"], out["scores"], 0.4, 0.5, MAX_BOXES)
    for name, want in zip(("det_boxes", "det_scores", "det_classes", "det_images", "det_indices"), det,
                          strict=True):
        assert out[name].dtype == want.dtype
        np.testing.assert_array_equal(out[name], want, err_msg=name)
    crops = ref.crop_resize(images, out["det_boxes"], CROP, out["det_images"])
    np.testing.assert_array_equal(out["crops"], crops)
    if len(crops):
        np.testing.assert_allclose(out["logits"], sim.reference(cls.graph, {"crop": crops})["logits"],
                                   rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["probs"], ref.softmax(out["logits"]), rtol=1e-6, atol=1e-7)
    values, indices = ref.topk(out["probs"], 3)
    np.testing.assert_array_equal(out["top_values"], values)
    np.testing.assert_array_equal(out["top_indices"], indices)
    np.testing.assert_array_equal(out["label"], ref.argmax(out["logits"]))
    return len(det[0])


def test_detection_pipeline_equals_the_references(detection):
    engine, cls = detection
    rng = np.random.default_rng(5)
    counts = []
    for n in (1, 2, 3, 4, 1, 4):
        images = images_for(rng, n)
        out = engine.run({"image": images})
        counts.append(check_request(out, images, cls))
    assert max(counts) > GEARS[-1] // 2 and min(counts) >= 0 and len(set(counts)) > 1


def test_detection_pipeline_many_requests_at_once(detection):
    engine, cls = detection
    rng = np.random.default_rng(9)
    images = images_for(rng, 24)
    out = engine.run_batch({"image": images}, batch_size=3)
    for r in range(8):
        # outputs in the request's rows come concatenated, those of rows="any" steps one array a request
        one = {k: v[r] if isinstance(v, list) else v[3 * r:3 * r + 3] for k, v in out.items()}
        check_request(one, images[3 * r:3 * r + 3], cls)


def test_native_steps_run_for_several_requests_at_once(build):
    """Two workers a step: a context is only read, so requests running one step together agree."""
    head, cls = build(head_graph(), "nshead"), build(classifier_graph(), "nscls")
    rng = np.random.default_rng(11)
    images = images_for(rng, 64)
    with detection_pipeline(head, cls).compile(depth=8, host_workers=2) as engine:
        out = engine.run_batch({"image": images}, batch_size=2)
    for r in range(32):
        one = {k: v[r] if isinstance(v, list) else v[2 * r:2 * r + 2] for k, v in out.items()}
        check_request(one, images[2 * r:2 * r + 2], cls)


def test_bad_values_fail_their_request_alone_naming_the_step(detection):
    engine, cls = detection
    rng = np.random.default_rng(2)
    images = images_for(rng, 2)
    images[1, 3, 4] = np.nan                      # the head's outputs for image 1 are NaN
    with pytest.raises(ae.HostStepError, match=r"decode_boxes 'decode': row 1 box 0 has a non-finite value"):
        engine.run({"image": images})
    with pytest.raises(ae.HostStepError, match="nms 'nms': the request has 5 images, more than max_images=4"):
        engine.run({"image": images_for(rng, 5)})
    good = images_for(rng, 2)
    check_request(engine.run({"image": good}), good, cls)


def test_ctc_greedy_in_a_pipeline(build):
    steps, classes = 12, 6
    rng = np.random.default_rng(4)
    g = sim.Graph("rec")
    x = g.input("x", "float32", (-1, 16))
    w = (rng.standard_normal((16, steps * classes)) * 2).astype(np.float32)
    g.output("probs", g.softmax(g.reshape(g.matmul(x, g.const(w)), (-1, steps, classes))))
    rec = build(g, "nsrec")
    pipe = ae.Pipeline(device=0)
    probs = pipe.model(rec.path, pipe.input("x", "float32", (-1, 16)), name="rec")
    text = pipe.ctc_greedy(probs, blank=0, name="ctc")
    for name, h in (("probs", probs), ("labels", text.labels), ("lengths", text.lengths),
                    ("scores", text.scores)):
        pipe.output(name, h)
    feeds = rng.standard_normal((7, 16)).astype(np.float32)
    with pipe.compile(depth=2) as engine:
        out = engine.run({"x": feeds})
    labels, lengths, scores = ref.ctc_greedy(out["probs"], 0)
    np.testing.assert_array_equal(out["labels"], labels)
    np.testing.assert_array_equal(out["lengths"], lengths)
    np.testing.assert_allclose(out["scores"], scores, rtol=1e-6)
    assert lengths.max() > 0
    texts = ctc_text(out["labels"], out["lengths"], "abcde")
    assert [len(t) for t in texts] == lengths.tolist()


def test_warp_affine_host_in_a_pipeline_feeding_a_model(build):
    cls = build(classifier_graph(), "nscls")
    g = sim.Graph("prep")       # relu: the identity on pictures in [0, 1)
    g.output("image", g.relu(g.input("image", "float32", (-1, SIDE, SIDE))))
    prep = build(g, "nsprep")
    pipe = ae.Pipeline(device=0)
    image = pipe.model(prep.path, pipe.input("image", "float32", (-1, SIDE, SIDE)), name="prep")
    mats = pipe.input("mats", "float32", (-1, 2, 3))
    warped = pipe.warp_affine_host(image, mats, CROP, border=0.5, max_boxes=4, name="warp")
    pipe.output("warped", warped)
    pipe.output("logits", pipe.model(cls.path, warped, name="cls"))
    rng = np.random.default_rng(3)
    image_in = images_for(rng, 1)
    m = np.array([[[1, 0, 3], [0, 1, 5]], [[0.5, 0.5, 0], [-0.5, 0.5, 20]], [[2, 0, 28], [0, 2, 28]]],
                 np.float32)
    with pipe.compile(depth=2) as engine:
        out = engine.run({"image": image_in, "mats": m[:1]})
        want = ref.warp_affine(image_in, m[:1], CROP, border=0.5)
        np.testing.assert_array_equal(out["warped"], want)
        np.testing.assert_allclose(out["logits"], sim.reference(cls.graph, {"crop": want})["logits"],
                                   rtol=1e-5, atol=1e-5)
        # without image_index every matrix reads picture 0, so a request holds one picture
        with pytest.raises(ae.HostStepError, match="warp_affine_host 'warp': without picture indices the "
                                                   "request must hold one picture, it holds 3"):
            engine.run({"image": np.repeat(image_in, 3, axis=0), "mats": m})
