"""Detector -> host NMS -> classifier, checked against a plain numpy pipeline.

A detector scores 32 candidate boxes per image; the host keeps the boxes
above a threshold, applies greedy IoU NMS and crops each surviving box out of
the image; a classifier with gears 1, 2, 4, 8 and 16 labels the crops.  Every
image yields its own number of crops (0 to a dozen or more), so a request of
several images may need several executions of the classifier: the engine
picks the gears per request.

The NMS is the engine's native step (``pipe.nms``, C without the GIL); the
box corners before it and the crops after it are small numpy steps.
``--python`` runs the whole host part as the one numpy step ``select``
instead, which stays the reference every result is compared against.

    python examples/detector_classifier.py [--images 400] [--per-request 2] [--python]
    python examples/detector_classifier.py --write-models DIR

``--write-models DIR`` writes ``detector.om``, ``classifier.om`` and
``detector_classifier.yaml`` (the README's spec) into DIR and exits; the spec's
host step is this file's ``select``, imported from the spec's folder, so
``--write-models examples`` lets ``ascend-engine bench
examples/detector_classifier.yaml --allow-code`` run it.

The script runs the pipeline on random images, asserts that every result
equals the numpy implementation of the whole pipeline, and prints the
throughput.

With ``--device-images`` it runs the all-device variant instead: a JPEG per
request is decoded and resized on the device (DVPP), the detector reads the
NV12 picture through static AIPP, a host step turns its scores into boxes
(only boxes come to the host), ``crop_resize`` cuts them out of the picture
on the device and the classifier reads the crops through AIPP
(docs/executor.md, "Image nodes").  Each step is checked against a
numpy/Pillow reference of the same step.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _images  # noqa: E402
import _models  # noqa: E402

import ascend_engine as ae  # noqa: E402

IMAGE_HW = (32, 32)
CROP_HW = (8, 8)
CANDIDATES = 32
CLASSES = 10
THRESHOLD = 0.5
IOU = 0.45
OUTPUTS = ("boxes", "scores", "image", "label", "probs")
# the all-device variant: pictures (width, height)
JPEG_SIZE = (320, 240)
PICTURE = (64, 48)
CROP = (32, 32)


def build_models(folder, detector_us=300, classifier_us=100, classifier_per_item_us=10):
    """The detector and the classifier as simulator model files in ``folder``."""
    return {
        "detector": _models.boxes_model(folder, "detector", IMAGE_HW, CANDIDATES, seed=1,
                                        latency_us=detector_us),
        "classifier": _models.classifier_model(folder, "classifier", CROP_HW, CLASSES, seed=2,
                                               latency_us=classifier_us,
                                               latency_per_item_us=classifier_per_item_us),
    }


# The host step: what the engine calls between the detector and the classifier.
select = functools.partial(_models.detections, threshold=THRESHOLD, iou_threshold=IOU, crop_hw=CROP_HW)


def pixel_corners(boxes):
    """The detector's (rows, n, 4) (cy, cx, h, w) fractions as pixel corners (y1, x1, y2, x2), float32.

    NMS reads corners in either axis order (IoU is the same), so the native
    step takes them as ``select`` computes them."""
    return np.stack([_models.corners(b, IMAGE_HW) for b in boxes]).reshape(len(boxes), CANDIDATES, 4)


def crop_kept(images, kept_boxes, which):
    """The crops of the boxes the NMS kept, each from its own image of the request."""
    h, w = CROP_HW
    crops = [_models.crop(images[k], b, CROP_HW) for b, k in zip(kept_boxes, which, strict=True)]
    return np.asarray(crops, np.float32).reshape(-1, h, w)


def build_native_pipeline(models, images_per_request=1, step=None) -> ae.Pipeline:
    """image -> detector -> corners (numpy) -> native NMS -> crops (numpy, rows="any") -> classifier.

    ``step`` replaces the crop step (the tests plant a broken one in it).
    """
    pipe = ae.Pipeline(device=0)
    image = pipe.input("image", "float32", (-1, *IMAGE_HW))
    scores, boxes = pipe.model(models["detector"].path, image, name="detector")
    corners = pipe.host(pixel_corners, boxes, name="corners",
                        outputs=[("corners", "float32", (-1, CANDIDATES, 4))])
    det = pipe.nms(corners, scores, iou_threshold=IOU, score_threshold=THRESHOLD, max_boxes=CANDIDATES,
                   max_images=images_per_request, class_agnostic=True, name="nms")
    crops = pipe.host(step or crop_kept, image, det.boxes, det.images, name="crops",
                      outputs=[("crops", "float32", (-1, *CROP_HW))], rows="any",
                      max_rows=CANDIDATES * images_per_request)
    probs, label = pipe.model(models["classifier"].path, crops, name="classifier")
    for name, handle in zip(OUTPUTS, (det.boxes, det.scores, det.images, label, probs), strict=True):
        pipe.output(name, handle)
    return pipe


def build_pipeline(models, images_per_request=1, step=None) -> ae.Pipeline:
    """image -> detector -> host NMS and crops in numpy (``select``, rows="any") -> classifier.

    ``step`` replaces the host function (the tests plant a broken one in it).
    """
    pipe = ae.Pipeline(device=0)
    image = pipe.input("image", "float32", (-1, *IMAGE_HW))
    scores, boxes = pipe.model(models["detector"].path, image, name="detector")
    crops, kept_boxes, kept_scores, which = pipe.host(
        step or select, image, scores, boxes, name="nms",
        outputs=[("crops", "float32", (-1, *CROP_HW)), ("boxes", "float32", (-1, 4)),
                 ("scores", "float32", (-1,)), ("image", "int32", (-1,))],
        rows="any", max_rows=CANDIDATES * images_per_request)
    probs, label = pipe.model(models["classifier"].path, crops, name="classifier")
    for name, handle in zip(OUTPUTS, (kept_boxes, kept_scores, which, label, probs), strict=True):
        pipe.output(name, handle)
    return pipe


def reference(models, images):
    """The whole pipeline for one request in plain numpy: {output name: array}."""
    det = models["detector"].forward(images)
    crops, boxes, scores, which = select(images, det["scores"], det["boxes"])
    cls = models["classifier"].forward(crops)
    return {"boxes": boxes, "scores": scores, "image": which, "label": cls["label"], "probs": cls["probs"]}


def assert_same(got, want, where):
    """Equal detections and labels; probabilities to float32 rounding."""
    for name in ("image", "label"):
        assert got[name].dtype == want[name].dtype, (where, name, got[name].dtype)
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{where}: {name}")
    for name, atol in (("boxes", 1e-3), ("scores", 1e-6), ("probs", 1e-6)):   # boxes: pixels
        assert got[name].shape == want[name].shape, (where, name, got[name].shape, want[name].shape)
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=atol, err_msg=f"{where}: {name}")


def check(n_images=400, images_per_request=2, seed=0, depth=8, gear_policy="upper", folder=None,
          models=None, step=None, native=True) -> dict:
    """Run ``n_images`` random images through the engine and the numpy pipeline.

    ``native``: the pipeline with the native NMS (else the one numpy step
    ``select``); ``step`` replaces its crop step (or ``select``).

    Asserts that every request's outputs match; returns the figures
    (images/s, detections, the largest number of crops in one request).
    """
    with tempfile.TemporaryDirectory() as tmp:
        models = models or build_models(folder or tmp)
        rng = np.random.default_rng(seed)
        images = _models.random_images(rng, n_images, IMAGE_HW)
        build = build_native_pipeline if native else build_pipeline
        pipe = build(models, images_per_request, step)
        seconds, _, wants = _models.run_checked(pipe, images, images_per_request,
                                                  lambda x: reference(models, x),
                                                assert_same, OUTPUTS, depth, gear_policy)
        counts = [len(want["label"]) for want in wants]
        return {"images": n_images, "requests": len(counts), "images_per_s": n_images / seconds,
                "detections": int(sum(counts)), "max_per_request": max(counts),
                "empty_requests": counts.count(0)}


# ---- the all-device variant ---------------------------------------------------------------------------


def build_image_models(folder, detector_us=300, classifier_us=100):
    """The detector and the classifier with static AIPP (NV12 in) as simulator model files."""
    return {
        "detector": _images.detector_model(folder, "detector_nv12", PICTURE, CANDIDATES, seed=1,
                                           latency_us=detector_us),
        "classifier": _images.classifier_model(folder, "classifier_nv12", CROP, CLASSES, seed=2,
                                               latency_us=classifier_us),
    }


def pixel_boxes(scores, boxes):
    """The host step of the all-device variant: threshold and NMS on the detector's outputs.

    Returns (n, 4) int32 boxes (x0, y0, x1, y1) in the picture's pixels, ends
    excluded, best first: each box lies inside the picture, its corners even
    (the VPC's region rule) and its sides at least 16 pixels.
    """
    w, h = PICTURE
    scores, boxes = scores.reshape(-1), boxes.reshape(-1, 4)
    candidates = np.flatnonzero(scores > THRESHOLD)
    b = boxes[candidates].astype(np.float64)
    half_w, half_h = (0.3 + 0.4 * b[:, 3]) * w / 2, (0.3 + 0.4 * b[:, 2]) * h / 2
    cx, cy = np.clip(b[:, 1] * w, half_w, w - half_w), np.clip(b[:, 0] * h, half_h, h - half_h)
    x0, y0 = np.floor((cx - half_w) / 2) * 2, np.floor((cy - half_h) / 2) * 2
    x1, y1 = np.minimum(np.ceil((cx + half_w) / 2) * 2, w), np.minimum(np.ceil((cy + half_h) / 2) * 2, h)
    corners = np.stack([y0, x0, y1, x1], axis=1).astype(np.float32)
    kept = _models.nms(corners, scores[candidates], IOU)
    return np.stack([x0, y0, x1, y1], axis=1)[kept].astype(np.int32).reshape(-1, 4)


DEVICE_OUTPUTS = ("boxes", "label", "probs")
DEBUG_OUTPUTS = ("picture", "scores", "crops")


def build_device_pipeline(models, debug=True, step=None) -> ae.Pipeline:
    """JPEG -> jpeg_decode -> resize -> detector -> host NMS (boxes) -> crop_resize -> classifier.

    ``debug`` also outputs the picture, the detector's scores and the crops,
    so that each step can be checked (a pipeline without them moves only
    boxes and labels to the host).  ``step`` replaces the host step.
    """
    w, h = PICTURE
    pipe = ae.Pipeline(device=0)
    jpeg = pipe.bytes_input("jpeg", 1 << 20)
    picture = pipe.resize(pipe.jpeg_decode(jpeg, (4096, 4096), name="decode"), (w, h), name="resize")
    scores, boxes = pipe.model(models["detector"].path, picture, name="detector")
    kept = pipe.host(step or pixel_boxes, scores, boxes, outputs=[("boxes", "int32", (-1, 4))], rows="any",
                     max_rows=CANDIDATES, name="nms")
    crops = pipe.crop_resize(picture, kept, CROP, name="crops")
    probs, label = pipe.model(models["classifier"].path, crops, name="classifier")
    for name, handle in (("boxes", kept), ("label", label), ("probs", probs)):
        pipe.output(name, handle)
    if debug:
        for name, handle in (("picture", picture), ("scores", scores), ("crops", crops)):
            pipe.output(name, handle)
    return pipe


def check_device_images(n_jpegs=24, seed=0, depth=4, folder=None, models=None, step=None) -> dict:
    """Run ``n_jpegs`` random JPEGs through the all-device variant and check every step.

    The picture is checked against Pillow's decode resized in numpy (within 3
    grey levels: Pillow's libjpeg and the simulator's may round differently);
    each later step exactly, or to float32 rounding, against its numpy
    reference applied to what the engine gave the step.  ``step`` replaces
    the host step (the tests plant a broken one).  Returns figures.
    """
    pw, ph = PICTURE
    cw, ch = CROP
    with tempfile.TemporaryDirectory() as tmp:
        models = models or build_image_models(folder or tmp)
        rng = np.random.default_rng(seed)
        jpegs = [_images.random_jpeg(rng, *JPEG_SIZE) for _ in range(n_jpegs)]
        pipe = build_device_pipeline(models, step=step)
        with pipe.compile(depth=depth) as engine:
            out = engine.run_batch({"jpeg": jpegs}, batch_size=1)
        counts, worst = [], 0
        for r, jpeg in enumerate(jpegs):
            picture = out["picture"][r:r + 1]
            diff = np.abs(picture.astype(int) - _images.host_picture(jpeg, pw, ph)[None].astype(int)).max()
            assert diff <= 3, f"request {r}: the picture is {diff} grey levels from Pillow's"
            worst = max(worst, int(diff))
            det = models["detector"].forward(picture)
            np.testing.assert_allclose(out["scores"][r:r + 1], det["scores"], rtol=1e-5, atol=1e-6,
                                       err_msg=f"request {r}: scores")
            boxes = pixel_boxes(out["scores"][r:r + 1], det["boxes"])
            np.testing.assert_array_equal(out["boxes"][r], boxes, err_msg=f"request {r}: boxes")
            crops = out["crops"][r]
            assert crops.shape == (len(boxes), ch * 3 // 2, cw, 1), (r, crops.shape)
            for k, box in enumerate(boxes):
                np.testing.assert_array_equal(crops[k], _images.crop_resize(picture, box, pw, ph, cw, ch),
                                              err_msg=f"request {r}: crop {k} {box.tolist()}")
                cls = models["classifier"].forward(crops[k])
                np.testing.assert_allclose(out["probs"][r][k:k + 1], cls["probs"], rtol=1e-5, atol=1e-6)
                np.testing.assert_array_equal(out["label"][r][k:k + 1], cls["label"])
            counts.append(len(boxes))
        return {"jpegs": n_jpegs, "detections": int(sum(counts)), "max_per_request": max(counts),
                "empty_requests": counts.count(0), "picture_max_diff": worst}


SPEC = """\
# The README's detector -> host NMS -> classifier pipeline (python examples/detector_classifier.py
# --write-models DIR writes it with its models).  Its host step is detector_classifier:select:
# examples/detector_classifier.py, imported from sys.path or this file's folder.
inputs: {image: {dtype: float32, shape: [-1, 32, 32]}}
models:
  - {name: detector, path: detector.om, inputs: [image]}
  - {name: classifier, path: classifier.om, inputs: [nms.crops]}
host:
  - name: nms
    function: detector_classifier:select
    inputs: [image, detector.scores, detector.boxes]
    outputs:
      crops: {dtype: float32, shape: [-1, 8, 8]}
      boxes: {dtype: float32, shape: [-1, 4]}
      scores: {dtype: float32, shape: [-1]}
      image: {dtype: int32, shape: [-1]}
    rows: any
    max_rows: 32
outputs: {boxes: nms.boxes, label: classifier.label}
compile: {depth: 8, host_workers: 2}
"""


def write_models(folder) -> dict:
    """detector.om, classifier.om and detector_classifier.yaml in ``folder``: {name: path}."""
    os.makedirs(folder, exist_ok=True)
    written = {name: model.path for name, model in build_models(folder).items()}
    written["spec"] = os.path.join(folder, "detector_classifier.yaml")
    with open(written["spec"], "w", encoding="utf-8") as f:
        f.write(SPEC)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--per-request", type=int, default=2, help="images per request")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--gear-policy", default="upper", choices=("upper", "lower", "nearest"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--python", action="store_true",
                        help="run NMS and crops as the one numpy step (the reference), not the native NMS")
    parser.add_argument("--device-images", action="store_true",
                        help="the all-device variant: JPEG decode, resize and crops on DVPP")
    parser.add_argument("--write-models", metavar="DIR",
                        help="write detector.om, classifier.om and detector_classifier.yaml into DIR "
                             "and exit")
    args = parser.parse_args(argv)
    if args.write_models:
        for name, path in write_models(args.write_models).items():
            print(f"{name:<10}: {path}")
        return
    if args.device_images:
        figures = check_device_images(args.images, seed=args.seed, depth=args.depth)
        print(f"{figures['jpegs']} JPEGs: every step equals its numpy/Pillow reference "
              f"(pictures within {figures['picture_max_diff']} grey levels of Pillow's decode)")
        print(f"{figures['detections']} detections, up to {figures['max_per_request']} in one request, "
              f"{figures['empty_requests']} request(s) with none")
        return
    figures = check(args.images, args.per_request, seed=args.seed, depth=args.depth,
                    gear_policy=args.gear_policy, native=not args.python)
    print(f"{figures['images']} images in {figures['requests']} requests: every result equals numpy")
    print(f"{figures['detections']} detections, up to {figures['max_per_request']} in one request, "
          f"{figures['empty_requests']} request(s) with none")
    print(f"throughput: {figures['images_per_s']:.0f} images/s")


if __name__ == "__main__":
    main()
