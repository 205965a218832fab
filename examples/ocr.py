"""OCR-shaped pipeline with two host steps, checked against plain numpy.

    text detector -> host: threshold, NMS, crop every text box (rows="any"),
                     and the width its line takes at the recognizer's height
                  -> angle classifier (upright or upside down)
                  -> host: rotate the upside-down crops, stretch each to its
                     line's width, normalize (rows="same"; each request's
                     lines as wide as its widest, zero-padded)
                  -> recognizer, dims gears over (lines 1 ... 16, width 16, 32, 64)
                     -> one symbol per column

The recognizer runs each request's lines at the smallest width gear that
holds them (the engine pads them; the host steps choose the width per
request), in chunks of its line gears.  The symbols are decoded on the host
(greedy CTC: repeats merged, blanks dropped), each line up to its own width.
The script asserts that every request equals the numpy implementation of the
whole pipeline and prints the throughput:

    python examples/ocr.py [--images 300] [--per-request 2]
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

IMAGE_HW = (32, 64)
CROP_HW = (8, 32)                 # the angle classifier's input
LINE_HEIGHT = CROP_HW[0]          # the recognizer's; its width follows each box
LINE_WIDTHS = (16, 32, 64)        # the recognizer's width gears
CANDIDATES = 16
ALPHABET = "-abcdefghijklmnopqrstuvwxyz0123456789"   # index 0: the CTC blank
THRESHOLD = 0.5
IOU = 0.3
OUTPUTS = ("boxes", "image", "angle", "chars", "widths")


def build_models(folder, detector_us=300, angle_us=80, angle_per_item_us=5, recognizer_us=150,
                 recognizer_per_item_us=20):
    """The text detector, the angle classifier and the recognizer as simulator model files."""
    return {
        "detector": _models.boxes_model(folder, "text_detector", IMAGE_HW, CANDIDATES, seed=11,
                                        latency_us=detector_us),
        "angle": _models.classifier_model(folder, "angle", CROP_HW, 2, seed=12, latency_us=angle_us,
                                          latency_per_item_us=angle_per_item_us),
        "recognizer": _models.recognizer_model(folder, "recognizer", CROP_HW, len(ALPHABET), seed=13,
                                               latency_us=recognizer_us,
                                               latency_per_item_us=recognizer_per_item_us,
                                               widths=LINE_WIDTHS),
    }


boxes_and_crops = functools.partial(_models.detections, threshold=THRESHOLD, iou_threshold=IOU,
                                    crop_hw=CROP_HW)


def line_width(box):
    """A text line's width at LINE_HEIGHT, its box's aspect ratio kept (at most the widest gear)."""
    height, width = box[2] - box[0], box[3] - box[1]
    return int(np.clip(np.rint(width * LINE_HEIGHT / height), 1, LINE_WIDTHS[-1]))


def find_text(images, scores, boxes):
    """Host step 1: text boxes above the threshold, NMS, a CROP_HW crop per box,
    and the width of its line (``line_width``).  Returns crops, widths, boxes,
    scores, image."""
    crops, kept, scores, which = boxes_and_crops(images, scores, boxes)
    widths = np.array([line_width(b) for b in kept], np.int32)
    return crops, widths, kept, scores, which


def upright(crops, widths, angle):
    """Host step 2: turn crops classified upside down (angle 1) by 180 degrees,
    stretch each to its line's width (nearest column), and scale it to zero
    mean and unit variance.  The lines of a request are as wide as its widest
    (the others zero-padded after their width): the engine pads that width
    to the recognizer's gear."""
    lines = np.zeros((len(crops), LINE_HEIGHT, max(widths, default=1)), np.float32)
    for i, (crop, w, a) in enumerate(zip(crops, widths, angle, strict=True)):
        turned = crop[::-1, ::-1] if a == 1 else crop
        line = turned[:, (np.arange(w) * crop.shape[1]) // w]
        lines[i, :, :w] = (line - line.mean()) / (line.std() + np.float32(1e-3))
    return lines


def decode(chars):
    """Greedy CTC decoding of one row of symbols: merge repeats, drop blanks."""
    text, previous = [], 0
    for c in chars:
        if c != previous and c != 0:
            text.append(ALPHABET[c])
        previous = c
    return "".join(text)


def build_pipeline(models, images_per_request=1, steps=None) -> ae.Pipeline:
    """The OCR pipeline; ``steps`` = {"crop": fn, "upright": fn} replaces host functions (for tests)."""
    steps = steps or {}
    pipe = ae.Pipeline(device=0)
    image = pipe.input("image", "float32", (-1, *IMAGE_HW))
    scores, boxes = pipe.model(models["detector"].path, image, name="detector")
    crops, widths, kept_boxes, _scores, which = pipe.host(
        steps.get("crop", find_text), image, scores, boxes, name="crop",
        outputs=[("crops", "float32", (-1, *CROP_HW)), ("widths", "int32", (-1,)),
                 ("boxes", "float32", (-1, 4)), ("scores", "float32", (-1,)), ("image", "int32", (-1,))],
        rows="any", max_rows=CANDIDATES * images_per_request)
    _probs, angle = pipe.model(models["angle"].path, crops, name="angle")
    # the lines' width is chosen per request: the recognizer's gear follows it
    fixed = pipe.host(steps.get("upright", upright), crops, widths, angle, name="upright",
                      outputs=[("lines", "float32", (-1, LINE_HEIGHT, -1))])
    chars = pipe.model(models["recognizer"].path, fixed, name="recognizer")
    for name, handle in zip(OUTPUTS, (kept_boxes, which, angle, chars, widths), strict=True):
        pipe.output(name, handle)
    return pipe


def reference(models, images):
    """The whole pipeline for one request in plain numpy."""
    det = models["detector"].forward(images)
    crops, widths, boxes, _scores, which = find_text(images, det["scores"], det["boxes"])
    angle = models["angle"].forward(crops)["label"]
    chars = models["recognizer"].forward(upright(crops, widths, angle))["chars"]
    return {"boxes": boxes, "image": which, "angle": angle, "chars": chars, "widths": widths}


def assert_same(got, want, where):
    for name in ("image", "angle", "chars", "widths"):
        assert got[name].dtype == want[name].dtype, (where, name, got[name].dtype)
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{where}: {name}")
    np.testing.assert_allclose(got["boxes"], want["boxes"], rtol=0, atol=1e-3,
                               err_msg=f"{where}: boxes (pixels)")


def check(n_images=300, images_per_request=2, seed=0, depth=8, gear_policy="upper", folder=None,
          models=None, steps=None) -> dict:
    """Run ``n_images`` random images through the engine and through numpy; assert equality."""
    with tempfile.TemporaryDirectory() as tmp:
        models = models or build_models(folder or tmp)
        rng = np.random.default_rng(seed)
        images = _models.random_images(rng, n_images, IMAGE_HW)
        pipe = build_pipeline(models, images_per_request, steps)
        seconds, out, wants = _models.run_checked(pipe, images, images_per_request,
                                                  lambda x: reference(models, x),
                                                  assert_same, OUTPUTS, depth, gear_policy)
        counts = [len(want["chars"]) for want in wants]
        texts = [decode(row[:w]) for chars, widths in zip(out["chars"], out["widths"], strict=True)
                 for row, w in zip(chars, widths, strict=True)]
        line_widths = [int(w) for widths in out["widths"] for w in widths]
        turned = sum(int(want["angle"].sum()) for want in wants)
        return {"images": n_images, "requests": len(counts), "images_per_s": n_images / seconds,
                "lines": int(sum(counts)), "max_per_request": max(counts), "turned": turned,
                "texts": texts, "line_widths": line_widths}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--per-request", type=int, default=2, help="images per request")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--gear-policy", default="upper", choices=("upper", "lower", "nearest"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    f = check(args.images, args.per_request, seed=args.seed, depth=args.depth, gear_policy=args.gear_policy)
    print(f"{f['images']} images in {f['requests']} requests: every result equals numpy")
    print(f"{f['lines']} text lines ({f['turned']} turned upright), "
          f"up to {f['max_per_request']} in one request, {min(f['line_widths'])} to "
          f"{max(f['line_widths'])} columns wide")
    print(f"first lines read: {', '.join(repr(t) for t in f['texts'][:4])}")
    print(f"throughput: {f['images_per_s']:.0f} images/s")


if __name__ == "__main__":
    main()
