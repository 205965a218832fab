"""The native steps as pipeline nodes: plan-time checks of their inputs and
parameters, and the host node each one adds (docs/executor.md, "Native steps").

``Pipeline.decode_boxes``, ``nms``, ``topk``, ``argmax``, ``softmax``,
``ctc_greedy``, ``crop_resize_host`` and ``warp_affine_host``
(planner/builder.py) call these.  Each checks dtypes, shapes, counts and
parameters against what its C step takes, fills the step's context
(:mod:`ascend_engine.steps._native`) and adds a host node through
``Pipeline.host`` with a NativeStep that keeps the context alive.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ascend_engine.errors import PipelineError
from ascend_engine.planner.builder import MAX_STEP_ROWS, NativeStep  # the one import of NativeStep here
from ascend_engine.steps import _native

DECODE_KINDS = tuple(_native.DECODE_KINDS)
GRID_KINDS = ("yolox", "ltrb", "yolov5")
MAX_SIDE = 1 << 16


class Detections(NamedTuple):
    """The outputs of :meth:`Pipeline.nms`, one row per kept box."""

    boxes: object      # float32 (rows, 4): x0, y0, x1, y1
    scores: object     # float32 (rows,)
    classes: object    # int32 (rows,)
    images: object     # int32 (rows,): the request row (image) the box comes from
    indices: object    # int32 (rows,): the box's index among its image's candidates


class TopK(NamedTuple):
    """The outputs of :meth:`Pipeline.topk`."""

    values: object     # float32 (rows, ..., k)
    indices: object    # int32 (rows, ..., k)


class CTCText(NamedTuple):
    """The outputs of :meth:`Pipeline.ctc_greedy`."""

    labels: object     # int32 (rows, steps): the decoded classes first, then -1
    lengths: object    # int32 (rows,)
    scores: object     # float32 (rows,): mean of the kept steps' best values


def _name(pipe, name, kind):
    name = name or f"{kind}{len(pipe._nodes)}"
    if not isinstance(name, str) or not name or len(name.encode()) > _native.NAME_MAX:
        raise PipelineError(f"{kind}: a step name is a non-empty string of at most {_native.NAME_MAX} bytes, "
                            f"got {name!r}")
    return name


def _tensor(pipe, handle, where, what, dtypes, ndim=None, min_ndim=None):
    """``handle`` checked: one of ``dtypes``, ``ndim`` dimensions (or at least ``min_ndim``),
    the rows first."""
    handle = pipe._check(handle, where)
    shape = tuple(handle.shape)
    ok_dims = (ndim is None or len(shape) == ndim) and (min_ndim is None or len(shape) >= min_ndim)
    if handle.dtype not in [np.dtype(d) for d in dtypes] or not ok_dims or any(d < 1 for d in shape[1:]):
        dims = f"{ndim}" if ndim is not None else f"at least {min_ndim}"
        raise PipelineError(f"{where}: {what} must be {' or '.join(np.dtype(d).name for d in dtypes)} with "
                            f"{dims} dimensions (rows first, fixed sizes after), got {handle.name!r} "
                            f"{handle.dtype} {_shape(shape)}")
    return handle


def _shape(shape):
    return "(" + ", ".join("rows" if k == 0 else str(d) for k, d in enumerate(shape)) + ")"


def _count(value, where, what, lo=1, hi=MAX_STEP_ROWS):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise PipelineError(f"{where}: {what} must be an integer from {lo} to {hi}, got {value!r}")
    return int(value)


def _number(value, where, what, lo=-math.inf, hi=math.inf):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not math.isfinite(value) or not lo <= value <= hi:
        raise PipelineError(f"{where}: {what} must be a finite number from {lo} to {hi}, got {value!r}")
    return float(value)


def _size(value, where, what="size"):
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= MAX_SIDE
                   for v in value)):
        raise PipelineError(f"{where}: {what} must be (width, height) in pixels, 1 to {MAX_SIDE}, "
                            f"got {value!r}")
    return int(value[0]), int(value[1])


def _add(pipe, kind, name, context, inputs, outputs, rows="same", max_rows=None):
    step = NativeStep(_native.ADDRESSES[kind], context.address, keep=context)
    return pipe.host(step, *inputs, outputs=outputs, name=name, rows=rows, max_rows=max_rows)


# ---- decode_boxes ------------------------------------------------------------------------------------


def decode_boxes(pipe, raw, kind, image_size, strides=(), anchors=(), priors=None, variances=(0.1, 0.2),
                 clip=False, name=None):
    """See :meth:`Pipeline.decode_boxes`."""
    name = _name(pipe, name, "decode_boxes")
    where = f"decode_boxes {name!r}"
    if kind not in DECODE_KINDS:
        raise PipelineError(f"{where}: kind must be one of {', '.join(DECODE_KINDS)}, got {kind!r}")
    raw = _tensor(pipe, raw, where, "the head output", ("float32",), ndim=3)
    n, channels = raw.shape[1], raw.shape[2]
    if channels < 4:
        raise PipelineError(f"{where}: each box needs 4 values (the first 4 of its channels are decoded), "
                            f"got {channels}")
    width, height = _size(image_size, where, "image_size")
    strides, anchors = tuple(strides), tuple(tuple(tuple(a) for a in level) for level in anchors)
    if kind in GRID_KINDS:
        want = _grid_boxes(where, kind, width, height, strides, anchors)
        if want != n:
            per_level = f" and {len(anchors[0])} anchors a level" if anchors else ""
            raise PipelineError(f"{where}: a {kind} head on a {width}x{height} picture with strides "
                                f"{list(strides)}{per_level} has {want} boxes, the input has {n}")
    elif strides or anchors:
        raise PipelineError(f"{where}: strides and anchors apply to the grid kinds ({', '.join(GRID_KINDS)})")
    if kind == "ssd":
        if priors is None:
            raise PipelineError(f"{where}: kind 'ssd' needs priors, (n, 4) (cx, cy, w, h) fractions")
        priors = np.ascontiguousarray(priors, dtype=np.float32)
        if priors.shape != (n, 4) or not np.isfinite(priors).all() or (priors[:, 2:] <= 0).any():
            raise PipelineError(f"{where}: priors must be ({n}, 4) finite (cx, cy, w, h) with w, h > 0, got "
                                f"shape {priors.shape}")
        variances = tuple(_number(v, where, "a variance", 1e-6, 1e6) for v in variances)
        if len(variances) != 2:
            raise PipelineError(f"{where}: variances are (centre, size), got {variances!r}")
    elif priors is not None:
        raise PipelineError(f"{where}: priors apply to kind 'ssd' only")
    context = _native.decode_context(name, kind, n, channels, width, height, bool(clip), strides, anchors,
                                     priors, tuple(variances))
    return _add(pipe, "decode_boxes", name, context, [raw], [("boxes", "float32", (-1, n, 4))])


def _grid_boxes(where, kind, width, height, strides, anchors) -> int:
    """The boxes a grid head lays out, its strides and anchors checked."""
    if not 1 <= len(strides) <= _native.MAX_LEVELS:
        raise PipelineError(f"{where}: a {kind} head needs 1 to {_native.MAX_LEVELS} strides, "
                            f"got {list(strides)}")
    for s in strides:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1 or width % s or height % s:
            raise PipelineError(f"{where}: each stride must be a positive integer dividing the picture's "
                                f"{width}x{height}, got {s!r}")
    per_cell = 1
    if kind == "yolov5":
        if len(anchors) != len(strides) or not anchors[0] or any(len(a) != len(anchors[0]) for a in anchors):
            raise PipelineError(f"{where}: yolov5 needs anchors per stride, the same count for each "
                                f"(a list of (w, h) pixel pairs per level), got {anchors!r}")
        if len(anchors[0]) > _native.MAX_ANCHORS:
            raise PipelineError(f"{where}: at most {_native.MAX_ANCHORS} anchors a level, "
                                f"got {len(anchors[0])}")
        for level in anchors:
            for pair in level:
                if len(pair) != 2:
                    raise PipelineError(f"{where}: an anchor is (w, h), got {pair!r}")
                for v in pair:
                    _number(v, where, "an anchor side", 1e-6, 1e6)
        per_cell = len(anchors[0])
    elif anchors:
        raise PipelineError(f"{where}: anchors apply to kind 'yolov5' only")
    return sum(per_cell * (width // s) * (height // s) for s in strides)


# ---- nms -----------------------------------------------------------------------------------------------


def nms(pipe, boxes, scores, iou_threshold=0.45, score_threshold=0.25, max_boxes=100, max_images=1,
        class_agnostic=False, name=None) -> Detections:
    """See :meth:`Pipeline.nms`."""
    name = _name(pipe, name, "nms")
    where = f"nms {name!r}"
    boxes = _tensor(pipe, boxes, where, "boxes", ("float32",), ndim=3)
    scores = _tensor(pipe, scores, where, "scores", ("float32",), min_ndim=2)
    n = boxes.shape[1]
    if boxes.shape[2] != 4:
        raise PipelineError(f"{where}: boxes are (rows, n, 4) corners (x0, y0, x1, y1), "
                            f"got {_shape(boxes.shape)}")
    if len(scores.shape) > 3 or scores.shape[1] != n:
        raise PipelineError(f"{where}: scores are (rows, {n}) or (rows, {n}, classes) for {n} boxes, got "
                            f"{_shape(scores.shape)}")
    classes = scores.shape[2] if len(scores.shape) == 3 else 1
    iou = _number(iou_threshold, where, "iou_threshold", 0.0, 1.0)
    score = _number(score_threshold, where, "score_threshold")
    max_boxes = _count(max_boxes, where, "max_boxes")
    max_images = _count(max_images, where, "max_images")
    if max_boxes * max_images > MAX_STEP_ROWS:
        raise PipelineError(f"{where}: max_boxes x max_images = {max_boxes * max_images} rows, more than "
                            f"a step returns ({MAX_STEP_ROWS})")
    context = _native.nms_context(name, n, classes, bool(class_agnostic), iou, score, max_boxes, max_images)
    outs = [("boxes", "float32", (-1, 4)), ("scores", "float32", (-1,)), ("classes", "int32", (-1,)),
            ("images", "int32", (-1,)), ("indices", "int32", (-1,))]
    return Detections(*_add(pipe, "nms", name, context, [boxes, scores], outs, rows="any",
                            max_rows=max_boxes * max_images))


# ---- topk, argmax, softmax --------------------------------------------------------------------------


def _rowwise(pipe, x, kind, name, k=0):
    where = f"{kind} {name!r}"
    x = _tensor(pipe, x, where, "the input", ("float32",), min_ndim=2)
    length = x.shape[-1]
    vectors = int(np.prod(x.shape[1:-1], dtype=np.int64)) if len(x.shape) > 2 else 1
    if length > np.iinfo(np.int32).max:
        raise PipelineError(f"{where}: the last axis is too long ({length})")
    if kind == "topk":
        k = _count(k, where, "k", 1, length)
    return _native.rowwise_context("softmax" if kind == "softmax" else "topk", name, vectors, length, k), x


def topk(pipe, x, k, name=None) -> TopK:
    """See :meth:`Pipeline.topk`."""
    name = _name(pipe, name, "topk")
    context, x = _rowwise(pipe, x, "topk", name, k)
    trailing = (*x.shape[1:-1], int(k))
    return TopK(*_add(pipe, "topk", name, context, [x], [("values", "float32", (-1, *trailing)),
                                                        ("indices", "int32", (-1, *trailing))]))


def argmax(pipe, x, name=None):
    """See :meth:`Pipeline.argmax`."""
    name = _name(pipe, name, "argmax")
    context, x = _rowwise(pipe, x, "topk", name, 1)
    return _add(pipe, "topk", name, context, [x], [("indices", "int32", (-1, *x.shape[1:-1]))])


def softmax(pipe, x, name=None):
    """See :meth:`Pipeline.softmax`."""
    name = _name(pipe, name, "softmax")
    context, x = _rowwise(pipe, x, "softmax", name)
    return _add(pipe, "softmax", name, context, [x], [("probs", "float32", (-1, *x.shape[1:]))])


# ---- ctc_greedy ------------------------------------------------------------------------------------------


def ctc_greedy(pipe, x, blank=0, name=None) -> CTCText:
    """See :meth:`Pipeline.ctc_greedy`."""
    name = _name(pipe, name, "ctc_greedy")
    where = f"ctc_greedy {name!r}"
    x = _tensor(pipe, x, where, "the recognizer's output", ("float32",), ndim=3)
    steps, classes = x.shape[1], x.shape[2]
    if classes < 2:
        raise PipelineError(f"{where}: CTC needs the blank and at least one class, got {classes} class(es)")
    blank = _count(blank, where, "blank", 0, classes - 1)
    context = _native.ctc_context(name, steps, classes, blank)
    return CTCText(*_add(pipe, "ctc_greedy", name, context, [x], [
        ("labels", "int32", (-1, steps)), ("lengths", "int32", (-1,)), ("scores", "float32", (-1,))]))


# ---- crops on the host -------------------------------------------------------------------------------------


def _producer_rows(pipe, handle):
    """The max_rows of the rows="any" host step writing ``handle``, or None."""
    for node in pipe._nodes:
        if node.kind == "host" and node.rows == "any" and any(h.index == handle.index for h in node.outputs):
            return node.max_rows
    return None


def _crop_like(pipe, kind, image, regions, size, image_index, max_boxes, name, per_region, what):
    where = f"{kind} {name!r}"
    image = _tensor(pipe, image, where, "the pictures (rows, height, width[, channels])",
                    ("uint8", "float32"), min_ndim=3)
    if len(image.shape) > 4:
        raise PipelineError(f"{where}: the pictures are (rows, height, width[, channels]), got "
                            f"{_shape(image.shape)}")
    regions = _tensor(pipe, regions, where, what, ("float32",), min_ndim=2)
    if int(np.prod(regions.shape[1:])) != per_region:
        raise PipelineError(f"{where}: {what} must hold {per_region} values a row, "
                            f"got {_shape(regions.shape)}")
    inputs = [image, regions]
    if image_index is not None:
        image_index = _tensor(pipe, image_index, where, "image_index (the picture of each row)", ("int32",),
                              ndim=1)
        inputs.append(image_index)
    out_w, out_h = _size(size, where)
    most = _producer_rows(pipe, regions)
    if max_boxes is None:
        if most is None:
            raise PipelineError(f"{where}: max_boxes is needed when {regions.name!r} is not a "
                                "rows=\"any\" host step's output (it sizes the crops)")
        max_boxes = most
    max_boxes = _count(max_boxes, where, "max_boxes")
    height, width = image.shape[1], image.shape[2]
    channels = image.shape[3] if len(image.shape) == 4 else 1
    out_shape = (-1, out_h, out_w, *image.shape[3:])
    return inputs, (height, width, channels, out_h, out_w), image.dtype, out_shape, max_boxes


def crop_resize_host(pipe, image, boxes, size, image_index=None, interpolation="bilinear", max_boxes=None,
                     name=None):
    """See :meth:`Pipeline.crop_resize_host`."""
    name = _name(pipe, name, "crop_resize_host")
    if interpolation not in ("bilinear", "nearest"):
        raise PipelineError(f"crop_resize_host {name!r}: interpolation must be 'bilinear' or 'nearest', got "
                            f"{interpolation!r}")
    inputs, sizes, dtype, out_shape, max_boxes = _crop_like(
        pipe, "crop_resize_host", image, boxes, size, image_index, max_boxes, name, 4,
        "boxes (rows, 4) (x0, y0, x1, y1 pixels)")
    context = _native.crop_context("crop_resize_host", name, *sizes, dtype == np.uint8,
                                   interpolation == "bilinear", image_index is not None)
    return _add(pipe, "crop_resize_host", name, context, inputs, [("crops", dtype, out_shape)], rows="any",
                max_rows=max_boxes)


def warp_affine_host(pipe, image, matrices, size, image_index=None, border=0.0, max_boxes=None, name=None):
    """See :meth:`Pipeline.warp_affine_host`."""
    name = _name(pipe, name, "warp_affine_host")
    border = _number(border, f"warp_affine_host {name!r}", "border")
    inputs, sizes, dtype, out_shape, max_boxes = _crop_like(
        pipe, "warp_affine_host", image, matrices, size, image_index, max_boxes, name, 6,
        "matrices (rows, 2, 3) (output pixel to source point)")
    context = _native.crop_context("warp_affine_host", name, *sizes, dtype == np.uint8, True,
                                   image_index is not None, border)
    return _add(pipe, "warp_affine_host", name, context, inputs, [("crops", dtype, out_shape)], rows="any",
                max_rows=max_boxes)
