"""Shared building blocks of the examples: simulator models, their plain numpy
forward passes, and the numpy host code that runs between them.

Each model is made twice from one set of seeded weights: once as a
``sim.Graph`` saved to a model file for the engine, once as a numpy function
for the reference pipeline the examples check the engine against.  The host
functions (thresholding, NMS, cropping, rotating) are plain numpy and serve
both: the engine calls them as host steps, the reference calls them directly.
"""

from __future__ import annotations

import os

import numpy as np

from ascend_engine import sim

GEARS = (1, 2, 4, 8, 16)


# ---- numpy versions of the graph ops the models use ----------------------------


def sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def relu(x):
    return np.maximum(x, np.float32(0))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def weights(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale / np.sqrt(shape[0])).astype(np.float32)


# ---- a model: its graph and its numpy twin ---------------------------------------


class SimModel:
    """A simulator model file and the numpy function computing the same outputs."""

    def __init__(self, graph: sim.Graph, forward, path: str):
        self.graph = graph
        self.forward = forward      # forward(x) -> {output name: array}
        self.path = path


def boxes_model(folder, name, image_hw, candidates, seed, latency_us=0, latency_per_item_us=0,
                gears=GEARS) -> SimModel:
    """A detector: an image (rows, H, W) in, ``candidates`` scored boxes out.

    ``scores`` (rows, candidates) are sigmoid probabilities; ``boxes``
    (rows, candidates, 4) are (cy, cx, h, w) as fractions of the image, each
    in (0, 1): the host turns them into pixel corners.
    """
    h, w = image_hw
    rng = np.random.default_rng(seed)
    w_hidden = weights(rng, h * w, 64)
    w_scores = weights(rng, 64, candidates, scale=3.0)
    b_scores = np.float32(-1.5)
    w_boxes = weights(rng, 64, candidates * 4, scale=2.0)

    g = sim.Graph(name)
    image = g.input("image", "float32", (-1, h, w))
    hidden = g.relu(g.matmul(g.reshape(image, (-1, h * w)), g.const(w_hidden)))
    g.output("scores", g.sigmoid(g.add(g.matmul(hidden, g.const(w_scores)), b_scores)))
    g.output("boxes", g.reshape(g.sigmoid(g.matmul(hidden, g.const(w_boxes))), (-1, candidates, 4)))
    path = g.save(os.path.join(folder, f"{name}.om"), batch_sizes=gears, latency_us=latency_us,
                  latency_per_item_us=latency_per_item_us)

    def forward(images):
        hid = relu(images.reshape(len(images), h * w) @ w_hidden)
        return {"scores": sigmoid(hid @ w_scores + b_scores),
                "boxes": sigmoid(hid @ w_boxes).reshape(len(images), candidates, 4)}

    return SimModel(g, forward, path)


def classifier_model(folder, name, crop_hw, classes, seed, latency_us=0, latency_per_item_us=0,
                     gears=GEARS) -> SimModel:
    """A classifier of crops (rows, h, w): ``probs`` (rows, classes) and ``label`` (rows,) int32."""
    h, w = crop_hw
    rng = np.random.default_rng(seed)
    w1 = weights(rng, h * w, 32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = weights(rng, 32, classes, scale=2.0)

    g = sim.Graph(name)
    crops = g.input("crops", "float32", (-1, h, w))
    hidden = g.relu(g.add(g.matmul(g.reshape(crops, (-1, h * w)), g.const(w1)), g.const(b1)))
    logits = g.matmul(hidden, g.const(w2))
    g.output("probs", g.softmax(logits))
    g.output("label", g.argmax(logits))
    path = g.save(os.path.join(folder, f"{name}.om"), batch_sizes=gears, latency_us=latency_us,
                  latency_per_item_us=latency_per_item_us)

    def forward(x):
        logits = relu(x.reshape(len(x), h * w) @ w1 + b1) @ w2
        return {"probs": softmax(logits), "label": logits.argmax(axis=-1).astype(np.int32)}

    return SimModel(g, forward, path)


def recognizer_model(folder, name, crop_hw, alphabet, seed, latency_us=0, latency_per_item_us=0,
                     gears=GEARS, widths=None) -> SimModel:
    """A text recognizer: a crop (rows, h, w) read column by column.

    ``chars`` (rows, w) int32 is the best symbol per column, 0 meaning blank
    (the input of a greedy CTC decode).  With ``widths`` the crops' width
    changes per request: dims gears over (rows, width), every batch gear at
    every width (what ATC's ``--dynamic_dims`` builds for a text recognizer).
    """
    h, w = crop_hw
    rng = np.random.default_rng(seed)
    w1 = weights(rng, h, 24)
    w2 = weights(rng, 24, alphabet, scale=2.0)

    g = sim.Graph(name)
    crops = g.input("crops", "float32", (-1, h, "w" if widths else w))
    columns = g.transpose(crops, (0, 2, 1))                      # (rows, w, h)
    logits = g.matmul(g.tanh(g.matmul(columns, g.const(w1))), g.const(w2))
    g.output("chars", g.argmax(logits))
    shapes = {"dims": [[n, width] for n in gears for width in widths]} if widths else {"batch_sizes": gears}
    path = g.save(os.path.join(folder, f"{name}.om"), latency_us=latency_us,
                  latency_per_item_us=latency_per_item_us, **shapes)

    def forward(x):
        logits = np.tanh(x.transpose(0, 2, 1) @ w1).astype(np.float32) @ w2
        return {"chars": logits.argmax(axis=-1).astype(np.int32)}

    return SimModel(g, forward, path)


# ---- host code: boxes, NMS, crops ---------------------------------------------------


def random_images(rng, n, hw):
    """Noise images of random contrast: some give no box above the threshold, some many."""
    amplitude = rng.uniform(0.2, 3.0, size=(n, 1, 1)).astype(np.float32)
    return rng.standard_normal((n, *hw)).astype(np.float32) * amplitude


def corners(boxes, hw, min_side=0.1, span=0.4):
    """(cy, cx, h, w) fractions in (0, 1) -> (y1, x1, y2, x2) pixels.

    A box's sides are ``min_side + span * fraction`` of the image's.
    """
    H, W = hw
    cy, cx = boxes[:, 0] * H, boxes[:, 1] * W
    half_h = (min_side + span * boxes[:, 2]) * H / 2
    half_w = (min_side + span * boxes[:, 3]) * W / 2
    return np.stack([cy - half_h, cx - half_w, cy + half_h, cx + half_w], axis=1).astype(np.float32)


def nms(box_corners, scores, iou_threshold):
    """Greedy non-maximum suppression: indices of the kept boxes, best score first.

    Boxes are taken in order of falling score (ties: lower index first); a
    box is kept when its IoU with every box kept before it is at most
    ``iou_threshold``.
    """
    order = np.argsort(-scores, kind="stable")
    area = (box_corners[:, 2] - box_corners[:, 0]) * (box_corners[:, 3] - box_corners[:, 1])
    keep = []
    for i in order:
        if keep:
            k = np.asarray(keep)
            top = np.maximum(box_corners[k, :2], box_corners[i, :2])
            bottom = np.minimum(box_corners[k, 2:], box_corners[i, 2:])
            inter = np.prod(np.clip(bottom - top, 0, None), axis=1)
            iou = inter / (area[k] + area[i] - inter)
            if (iou > iou_threshold).any():
                continue
        keep.append(int(i))
    return np.asarray(keep, dtype=np.int64)


def crop(image, box, out_hw):
    """The pixels of ``image`` inside ``box`` (y1, x1, y2, x2), resized to ``out_hw`` (nearest)."""
    H, W = image.shape
    h, w = out_hw
    ys = np.clip(np.floor(box[0] + (np.arange(h) + 0.5) * (box[2] - box[0]) / h), 0, H - 1).astype(np.intp)
    xs = np.clip(np.floor(box[1] + (np.arange(w) + 0.5) * (box[3] - box[1]) / w), 0, W - 1).astype(np.intp)
    return image[np.ix_(ys, xs)]


def detections(images, scores, boxes, threshold, iou_threshold, crop_hw):
    """Threshold, NMS and crop for every image of a request.

    Returns ``crops`` (n, h, w) float32, ``boxes`` (n, 4) float32 pixel
    corners, ``scores`` (n,) float32 and ``image`` (n,) int32 (which image of
    the request each detection comes from), image by image, best first.
    """
    out_crops, out_boxes, out_scores, out_image = [], [], [], []
    for k, (img, sc, bx) in enumerate(zip(images, scores, boxes, strict=True)):
        candidates = np.flatnonzero(sc > threshold)
        pixels = corners(bx[candidates], img.shape)
        kept = candidates[nms(pixels, sc[candidates], iou_threshold)]
        kept_pixels = corners(bx[kept], img.shape)
        out_crops.extend(crop(img, b, crop_hw) for b in kept_pixels)
        out_boxes.append(kept_pixels)
        out_scores.append(sc[kept])
        out_image.append(np.full(len(kept), k, np.int32))
    h, w = crop_hw
    return (np.asarray(out_crops, np.float32).reshape(-1, h, w),
            np.concatenate(out_boxes).astype(np.float32).reshape(-1, 4),
            np.concatenate(out_scores).astype(np.float32),
            np.concatenate(out_image).astype(np.int32))


def run_checked(pipe, images, per_request, reference, assert_same, outputs, depth=8, gear_policy="upper"):
    """Run ``images`` through ``pipe`` in requests of ``per_request`` images
    (after a warm-up) and assert that each request's ``outputs`` equal
    ``reference`` of its images.  Returns (seconds of the timed run, the
    engine's per-request outputs, the references)."""
    import time

    with pipe.compile(depth=depth, gear_policy=gear_policy) as engine:
        engine.run({"image": images[:per_request]})            # warm-up
        t0 = time.perf_counter()
        out = engine.run_batch({"image": images}, batch_size=per_request)
        seconds = time.perf_counter() - t0
        single = engine.run({"image": images[:per_request]})   # run(): one request's arrays
    wants = []
    for r, start in enumerate(range(0, len(images), per_request)):
        wants.append(reference(images[start:start + per_request]))
        assert_same({name: out[name][r] for name in outputs}, wants[-1], f"request {r}")
    assert_same({name: single[name] for name in outputs}, wants[0], "run()")
    assert all(len(out[name]) == len(wants) for name in outputs)
    return seconds, out, wants
