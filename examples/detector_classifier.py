"""Detector -> host NMS -> classifier, checked against a plain numpy pipeline.

A detector scores 32 candidate boxes per image; a host step in numpy keeps
the boxes above a threshold, applies greedy IoU NMS and crops each surviving
box out of the image; a classifier with gears 1, 2, 4, 8 and 16 labels the
crops.  Every image yields its own number of crops (0 to a dozen or more), so
a request of several images may need several executions of the classifier:
the engine picks the gears per request.

    python examples/detector_classifier.py [--images 400] [--per-request 2]

The script runs the pipeline on random images, asserts that every result
equals the numpy implementation of the whole pipeline, and prints the
throughput.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _models  # noqa: E402

import ascend_engine as ae  # noqa: E402

IMAGE_HW = (32, 32)
CROP_HW = (8, 8)
CANDIDATES = 32
CLASSES = 10
THRESHOLD = 0.5
IOU = 0.45
OUTPUTS = ("boxes", "scores", "image", "label", "probs")


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


def build_pipeline(models, images_per_request=1, step=None) -> ae.Pipeline:
    """image -> detector -> host NMS and crops (rows="any") -> classifier.

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
          models=None, step=None) -> dict:
    """Run ``n_images`` random images through the engine and the numpy pipeline.

    Asserts that every request's outputs match; returns the figures
    (images/s, detections, the largest number of crops in one request).
    """
    with tempfile.TemporaryDirectory() as tmp:
        models = models or build_models(folder or tmp)
        rng = np.random.default_rng(seed)
        images = _models.random_images(rng, n_images, IMAGE_HW)
        pipe = build_pipeline(models, images_per_request, step)
        seconds, _, wants = _models.run_checked(pipe, images, images_per_request,
                                                  lambda x: reference(models, x),
                                                assert_same, OUTPUTS, depth, gear_policy)
        counts = [len(want["label"]) for want in wants]
        return {"images": n_images, "requests": len(counts), "images_per_s": n_images / seconds,
                "detections": int(sum(counts)), "max_per_request": max(counts),
                "empty_requests": counts.count(0)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--per-request", type=int, default=2, help="images per request")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--gear-policy", default="upper", choices=("upper", "lower", "nearest"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    figures = check(args.images, args.per_request, seed=args.seed, depth=args.depth,
                    gear_policy=args.gear_policy)
    print(f"{figures['images']} images in {figures['requests']} requests: every result equals numpy")
    print(f"{figures['detections']} detections, up to {figures['max_per_request']} in one request, "
          f"{figures['empty_requests']} request(s) with none")
    print(f"throughput: {figures['images_per_s']:.0f} images/s")


if __name__ == "__main__":
    main()
