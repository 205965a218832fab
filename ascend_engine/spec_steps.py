"""Native steps in pipeline spec files (docs/pipeline-spec.md, "Native steps").

A ``host:`` entry with ``step:`` instead of ``function:`` adds one of the
native steps (``Pipeline.nms``, ``decode_boxes``, ...; docs/executor.md,
"Native steps"), its parameters under ``params:``; its outputs are those the
step declares (``nms.boxes``, ``nms.images``, ...).  It names no Python code,
so a spec of native steps loads without ``allow_code``::

    host:
      - {name: decode, step: decode_boxes, inputs: [det.raw],
         params: {kind: yolox, image_size: [640, 640], strides: [8, 16, 32], clip: true}}
      - {name: nms, step: nms, inputs: [decode, det.scores],
         params: {iou_threshold: 0.45, score_threshold: 0.25, max_boxes: 100}}

:mod:`ascend_engine.spec` calls :func:`parse_step` while it checks a document
(the step's name, its input count and parameter names; the values are
checked by the builder call, whose errors name the entry) and
:func:`add_step` while it builds one.
"""

from __future__ import annotations

# step -> (inputs it takes (lowest, highest), the parameters it accepts)
STEPS = {
    "decode_boxes": ((1, 1), ("kind", "image_size", "strides", "anchors", "priors", "variances", "clip")),
    "nms": ((2, 2), ("iou_threshold", "score_threshold", "max_boxes", "max_images", "class_agnostic")),
    "topk": ((1, 1), ("k",)),
    "argmax": ((1, 1), ()),
    "softmax": ((1, 1), ()),
    "ctc_greedy": ((1, 1), ("blank",)),
    "crop_resize_host": ((2, 3), ("size", "interpolation", "max_boxes")),
    "warp_affine_host": ((2, 3), ("size", "border", "max_boxes")),
}
REQUIRED = {"decode_boxes": ("kind", "image_size"), "topk": ("k",), "crop_resize_host": ("size",),
            "warp_affine_host": ("size",)}
# keys of a host entry that apply to Python functions only
FUNCTION_KEYS = ("function", "outputs", "rows", "max_rows")


def parse_step(c, key, value, n_inputs) -> tuple:
    """A ``host:`` entry with ``step:``: (step, params) checked for their form."""
    step = value["step"]
    if step not in STEPS:
        c.fail(f"{key}.step", f"expected one of {', '.join(STEPS)}, got {step!r}")
    for k in FUNCTION_KEYS:
        if k in value:
            c.fail(f"{key}.{k}", f"a native step ({step}) declares its own outputs and rows; {k!r} "
                                 "applies to host functions only")
    (lo, hi), allowed = STEPS[step]
    if not lo <= n_inputs <= hi:
        takes = str(lo) if lo == hi else f"{lo} or {hi}"
        c.fail(f"{key}.inputs", f"{step} takes {takes} input(s), got {n_inputs}")
    params = value.get("params", {})
    if allowed:
        c.mapping(f"{key}.params", params, allowed, required=REQUIRED.get(step, ()))
    elif params:
        c.fail(f"{key}.params", f"{step} takes no parameters")
    return step, dict(params)


def add_step(pipe, step, params, name, inputs):
    """Add native step ``step`` to ``pipe`` on its resolved input handles; returns its output handle(s)."""
    params = dict(params)
    if step in ("crop_resize_host", "warp_affine_host") and len(inputs) == 3:
        params["image_index"] = inputs[2]
    for key in ("image_size", "size"):
        if key in params and isinstance(params[key], list):
            params[key] = tuple(params[key])
    out = getattr(pipe, step)(*inputs[:2] if step in ("crop_resize_host", "warp_affine_host") else inputs,
                              name=name, **params)
    return tuple(out) if isinstance(out, tuple) else out
