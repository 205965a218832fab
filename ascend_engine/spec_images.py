"""Image steps in pipeline spec files (docs/pipeline-spec.md, "Image steps").

A bytes input takes one JPEG per request::

    inputs:
      jpeg: {dtype: bytes, max_bytes: 1048576, bench_size: [640, 480]}

and an ``images:`` list adds the image nodes of ``Pipeline.jpeg_decode``,
``resize`` and ``crop_resize`` (docs/executor.md, "Image nodes")::

    images:
      - {name: decode, op: jpeg_decode, inputs: [jpeg], max_size: [1024, 1024]}
      - {name: picture, op: resize, inputs: [decode], size: [64, 48]}
      - {name: crops, op: crop_resize, inputs: [picture, nms.boxes], size: [32, 32], max_boxes: 8}

A crop_resize's boxes may be a model output too (``inputs: [picture,
det.boxes]``): the pipeline brings them to the host with a native step of its
own (docs/executor.md, "Image nodes", "Boxes from a model").

:mod:`ascend_engine.spec` calls :func:`bytes_input` and :func:`image_steps`
while it checks a document and :func:`add_image` while it builds one; the
sizes are checked here for their form, and against the DVPP's limits by the
pipeline (planner/images.py) when the node is added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ascend_engine.planner.images import JPEGD_MAX, MAX_BOXES

BYTES = "bytes"                      # the dtype of a bytes input
BYTES_INPUT_KEYS = ("dtype", "max_bytes", "bench_size")
IMAGE_KEYS = ("name", "op", "inputs", "size", "max_size", "max_boxes", "interpolation")
IMAGE_OPS = {"jpeg_decode": 1, "resize": 1, "crop_resize": 2}   # op -> inputs it takes
INTERPOLATIONS = ("default", "bilinear", "nearest")
MAX_BYTES = 1 << 30                  # a bytes input's max_bytes at most
MAX_SIDE = JPEGD_MAX                 # the largest JPEGD side (include/ascend_engine/dvpp_limits.h)


@dataclass
class ImageSpec:
    """An image node: its name, operation (``jpeg_decode``, ``resize`` or
    ``crop_resize``), input references (the picture or bytes input, then the
    boxes for a crop_resize), its ``size`` (a decode: its ``max_size``) as
    (width, height), ``max_boxes`` (0: the boxes' ``max_rows``, or every box
    of a model output) and interpolation."""

    name: str
    op: str
    inputs: list
    size: tuple
    max_boxes: int = 0
    interpolation: str = "default"
    index: int = 0            # position in the spec's ``images`` list (for key paths)


def is_bytes_input(value) -> bool:
    """True for an ``inputs`` entry declaring a bytes input (``dtype: bytes``)."""
    return isinstance(value, dict) and value.get("dtype") == BYTES


def bytes_input(c, key, name, value, input_spec):
    """An ``inputs.NAME`` entry with ``dtype: bytes``, as an ``input_spec`` (the spec's
    InputSpec class) with ``max_bytes`` and ``bench_size`` set."""
    c.mapping(key, value, BYTES_INPUT_KEYS, required=("dtype", "max_bytes"))
    max_bytes = c.integer(f"{key}.max_bytes", value["max_bytes"], "a byte count", minimum=1,
                          maximum=MAX_BYTES)
    bench_size = None
    if "bench_size" in value:
        bench_size = size_pair(c, f"{key}.bench_size", value["bench_size"], "the JPEGs bench feeds")
    return input_spec(name, np.dtype(np.uint8), (1, max_bytes), max_bytes=max_bytes, bench_size=bench_size)


def size_pair(c, key, value, what) -> tuple:
    """``[width, height]``: two positive integers."""
    if (not isinstance(value, list) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in value)):
        c.fail(key, f"expected [width, height] in pixels ({what}), got {kind_of(c, value)}")
    for j, v in enumerate(value):
        c.integer(f"{key}[{j}]", v, "a side in pixels", minimum=1, maximum=MAX_SIDE)
    return int(value[0]), int(value[1])


def kind_of(c, value) -> str:
    from ascend_engine.spec import _kind

    return _kind(value)


def image_steps(c, raw, input_refs) -> list:
    """The ``images:`` list checked (``input_refs`` checks a node's ``inputs``)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        c.fail("images", f"expected a list of image steps, got {kind_of(c, raw)}")
    steps = []
    for i, value in enumerate(raw):
        key = f"images[{i}]"
        c.mapping(key, value, IMAGE_KEYS, required=("name", "op", "inputs"))
        name = c.name(f"{key}.name", value["name"], "an image step name")
        op = value["op"]
        if op not in IMAGE_OPS:
            c.fail(f"{key}.op", f"expected one of {', '.join(IMAGE_OPS)}, got {kind_of(c, op)}")
        refs = input_refs(c, f"{key}.inputs", value["inputs"])
        if len(refs) != IMAGE_OPS[op]:
            what = ("the picture and the boxes (a model output or a host step's rows: any output)"
                    if op == "crop_resize" else
                    "the bytes input" if op == "jpeg_decode" else "the picture")
            c.fail(f"{key}.inputs", f"{op} takes {IMAGE_OPS[op]} input(s), {what}; got {len(refs)}")
        size_key, other = ("max_size", "size") if op == "jpeg_decode" else ("size", "max_size")
        if other in value:
            c.fail(f"{key}.{other}", f"{op} takes {size_key}, not {other}" + (
                " (the largest JPEG it decodes; the picture has the JPEG's own size)"
                if op == "jpeg_decode" else " (the size of the pictures it writes)"))
        if size_key not in value:
            c.fail(key, f"missing required key {size_key!r} ([width, height] in pixels)")
        size = size_pair(c, f"{key}.{size_key}", value[size_key],
                         "the largest JPEG" if op == "jpeg_decode" else "the output pictures")
        max_boxes = value.get("max_boxes", 0)
        if "max_boxes" in value:
            if op != "crop_resize":
                c.fail(f"{key}.max_boxes", "max_boxes applies to crop_resize only")
            c.integer(f"{key}.max_boxes", max_boxes, "a box count", minimum=1, maximum=MAX_BOXES)
        interpolation = value.get("interpolation", "default")
        if interpolation not in INTERPOLATIONS:
            c.fail(f"{key}.interpolation", f"expected one of {', '.join(INTERPOLATIONS)}, "
                                           f"got {kind_of(c, interpolation)}")
        if op == "jpeg_decode" and "interpolation" in value:
            c.fail(f"{key}.interpolation", "a decode does not resample: interpolation applies to resize "
                                           "and crop_resize")
        steps.append(ImageSpec(name, op, list(refs), size, max_boxes, interpolation, i))
    return steps


def add_image(pipe, step, inputs):
    """Add image step ``step`` to ``pipe`` on its resolved input handles; returns its output handle."""
    if step.op == "jpeg_decode":
        return pipe.jpeg_decode(inputs[0], step.size, name=step.name)
    if step.op == "resize":
        return pipe.resize(inputs[0], step.size, name=step.name, interpolation=step.interpolation)
    return pipe.crop_resize(inputs[0], inputs[1], step.size, name=step.name, max_boxes=step.max_boxes,
                            interpolation=step.interpolation)


def to_dict(step) -> dict:
    """An image step as a document entry."""
    out = {"name": step.name, "op": step.op, "inputs": list(step.inputs),
           ("max_size" if step.op == "jpeg_decode" else "size"): list(step.size)}
    if step.max_boxes:
        out["max_boxes"] = step.max_boxes
    if step.interpolation != "default":
        out["interpolation"] = step.interpolation
    return out
