"""Static AIPP settings: ATC's rules, and the record the model file stores.

AIPP is the NPU's image pre-processing stage in front of a model input: the
input becomes a uint8 image (YUV420SP, RGB888, XRGB8888 or YUV400) that the
AIPP unit crops, converts to RGB (or another colour space), normalizes and
pads into the model's float input.  The settings are ATC's ``aipp_op``
fields (``--insert_op_conf``, parsed by ``sim/atc/aipp_config.py``), or the
same fields as a dict for ``Graph.save(..., aipp=...)``.

:func:`resolve` checks one input's settings against ATC's rules and the model
input they feed, fills the defaults ATC fills, and returns the complete
settings; :func:`record` packs them for the model file
(docs/sim-model-format.md, "Version 4: AIPP").  Both callers use this one
validator, so a hand-built model and a converted one follow the same rules
(the rules and their sources: docs/simulator.md, "Static AIPP").
"""

from __future__ import annotations

import math
import struct

from ascend_engine.errors import AippError

__all__ = ["INPUT_FORMATS", "FIELDS", "RECORD_SIZE", "DEFAULT_CSC", "DEFAULT_CSC_BIAS", "resolve", "record",
           "image_bytes"]

# aclAippInputFormat values of the four formats static AIPP takes here
INPUT_FORMATS = {"YUV420SP_U8": 1, "XRGB8888_U8": 2, "RGB888_U8": 3, "YUV400_U8": 4}
MAX_IMAGE_SIDE = 4096
MATRIX_RANGE = (-32677, 32676)  # ATC's range of matrix_r*c*

_BOOL, _INT, _FLOAT, _TEXT = "bool", "int", "float", "text"
_MATRIX = [f"matrix_r{r}c{c}" for r in range(3) for c in range(3)]

# What ATC fills for the colour conversion when csc_switch is on and a field is not given (CANN 9.1,
# GE's AippOp::SetDefaultParams): a YUV420SP_U8 input gets the BT.601 narrow-range YUV-to-BGR
# matrix (output channel 0 is B), any other input the RGB-to-YUV one; both bias triples are 16, 128,
# 128, of which the unit uses the input biases for a YUV input and the output biases for an RGB one.
DEFAULT_CSC = {
    "YUV420SP_U8": (298, 516, 0, 298, -100, -208, 298, 0, 409),
    "RGB": (66, 129, 25, -38, -74, 112, 112, -94, -18),
}
DEFAULT_CSC_BIAS = (16, 128, 128)

# every field of an aipp_op this simulator models, with its kind and (min, max)
FIELDS = {
    "aipp_mode": (_TEXT, None),
    "related_input_rank": (_INT, (0, 4095)),
    "max_src_image_size": (_INT, (1, (1 << 31) - 1)),
    "input_format": (_TEXT, None),
    "src_image_size_w": (_INT, (0, MAX_IMAGE_SIDE)),
    "src_image_size_h": (_INT, (0, MAX_IMAGE_SIDE)),
    "crop": (_BOOL, None),
    "load_start_pos_w": (_INT, (0, MAX_IMAGE_SIDE - 1)),
    "load_start_pos_h": (_INT, (0, MAX_IMAGE_SIDE - 1)),
    "crop_size_w": (_INT, (0, MAX_IMAGE_SIDE)),
    "crop_size_h": (_INT, (0, MAX_IMAGE_SIDE)),
    "padding": (_BOOL, None),
    "left_padding_size": (_INT, (0, MAX_IMAGE_SIDE)),
    "right_padding_size": (_INT, (0, MAX_IMAGE_SIDE)),
    "top_padding_size": (_INT, (0, MAX_IMAGE_SIDE)),
    "bottom_padding_size": (_INT, (0, MAX_IMAGE_SIDE)),
    "padding_value": (_FLOAT, (-65504.0, 65504.0)),
    "csc_switch": (_BOOL, None),
    **{m: (_INT, MATRIX_RANGE) for m in _MATRIX},
    **{f"input_bias_{i}": (_INT, (0, 255)) for i in range(3)},
    **{f"output_bias_{i}": (_INT, (0, 255)) for i in range(3)},
    "rbuv_swap_switch": (_BOOL, None),
    "ax_swap_switch": (_BOOL, None),
    **{f"mean_chn_{i}": (_INT, (0, 255)) for i in range(4)},
    **{f"min_chn_{i}": (_FLOAT, (0.0, 255.0)) for i in range(4)},
    **{f"var_reci_chn_{i}": (_FLOAT, (-65504.0, 65504.0)) for i in range(4)},
}

# the record of docs/sim-model-format.md, "Version 4: AIPP"
_RECORD = struct.Struct("<IIiii5B3x8i9i3i3i4i4f4ff4x")
RECORD_SIZE = _RECORD.size
assert RECORD_SIZE == 176


def _value(name, value):
    """``value`` as the field's kind, within its range; AippError otherwise."""
    kind, bounds = FIELDS[name]
    if kind == _TEXT:
        if not isinstance(value, str):
            raise AippError(f"{name}: expected a name, got {value!r}")
        return value
    if kind == _BOOL:
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise AippError(f"{name}: expected true or false, got {value!r}")
    if kind == _INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise AippError(f"{name}: expected an integer, got {value!r}")
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise AippError(f"{name}: expected a finite number, got {value!r}")
        value = float(value)
    lo, hi = bounds
    if not lo <= value <= hi:
        raise AippError(f"{name}: {value} is outside [{lo}, {hi}]")
    return value


def image_bytes(input_format, w, h):
    """Bytes of one source image (the descriptor's input size per batch item)."""
    per_pixel = {"YUV420SP_U8": 1.5, "RGB888_U8": 3, "XRGB8888_U8": 4, "YUV400_U8": 1}[input_format]
    return int(w * h * per_pixel)


def resolve(settings, name, shape, fmt, dtype):
    """The complete static AIPP settings of model input ``name``.

    ``settings``: a dict of ATC ``aipp_op`` fields.  ``shape``, ``fmt``,
    ``dtype``: the model input the AIPP output feeds (4-D NCHW or NHWC, fixed
    dimensions, float32 or float16).  Fills what ATC fills: the source size
    from the model input's W and H, a crop window of the source (or of the
    model's size less the padding when ``crop_size`` is 0), the identity
    normalization.  Raises AippError naming the rule broken.
    """
    if not isinstance(settings, dict):
        raise AippError(f"input {name!r}: AIPP settings must be a dict of aipp_op fields, not {settings!r}")
    unknown = sorted(k for k in settings if k not in FIELDS)
    if unknown:
        raise AippError(
            f"input {name!r}: unknown aipp_op field {unknown[0]!r} (the simulator models: "
            f"{', '.join(FIELDS)})"
        )
    try:
        s = {k: _value(k, v) for k, v in settings.items()}
    except AippError as exc:
        raise AippError(f"input {name!r}: {exc}") from None
    mode = s.get("aipp_mode")
    if mode is None:
        raise AippError(f"input {name!r}: aipp_mode is required (static)")
    if mode == "dynamic":
        return _resolve_dynamic(s, name, shape, fmt, dtype)
    if mode != "static":
        raise AippError(f"input {name!r}: aipp_mode {mode!r}: expected static or dynamic")
    if "max_src_image_size" in s:
        raise AippError(f"input {name!r}: max_src_image_size belongs to dynamic AIPP (aipp_mode: dynamic)")
    fmt_name = s.get("input_format")
    if fmt_name is None:
        raise AippError(f"input {name!r}: input_format is required in static AIPP")
    if fmt_name not in INPUT_FORMATS:
        raise AippError(
            f"input {name!r}: input_format {fmt_name!r}: the simulator models {', '.join(INPUT_FORMATS)}"
        )
    _check_model_input(name, fmt_name, shape, fmt, dtype)
    n, c, h, w = (shape[0], shape[1], shape[2], shape[3]) if fmt == "NCHW" else (shape[0], shape[3], shape[1],
                                                                                shape[2])
    out = {k: s.get(k, False) for k, (kind, _) in FIELDS.items() if kind == _BOOL}
    out.update({k: s.get(k, 0) for k, (kind, _) in FIELDS.items() if kind == _INT})
    out.update({k: s.get(k, 0.0) for k, (kind, _) in FIELDS.items() if kind == _FLOAT})
    for i in range(4):
        out[f"var_reci_chn_{i}"] = s.get(f"var_reci_chn_{i}", 1.0)
    if out["csc_switch"]:  # ATC's defaults, field by field, for what the configuration leaves out
        matrix = DEFAULT_CSC["YUV420SP_U8" if fmt_name == "YUV420SP_U8" else "RGB"]
        for m, v in zip(_MATRIX, matrix, strict=True):
            out[m] = s.get(m, v)
        for i, v in enumerate(DEFAULT_CSC_BIAS):
            out[f"input_bias_{i}"] = s.get(f"input_bias_{i}", v)
            out[f"output_bias_{i}"] = s.get(f"output_bias_{i}", v)
    out.update(aipp_mode="static", input_format=fmt_name, channels=c, batch=n)
    pads = (out["left_padding_size"], out["right_padding_size"], out["top_padding_size"],
            out["bottom_padding_size"])
    if not out["padding"] and any(pads):
        raise AippError(f"input {name!r}: padding sizes {pads} are given but padding is false")
    if not out["crop"] and any(s.get(k) for k in ("load_start_pos_w", "load_start_pos_h", "crop_size_w",
                                                  "crop_size_h")):
        raise AippError(f"input {name!r}: a crop window is given but crop is false")
    left, right, top, bottom = pads
    out["src_image_size_w"] = out["src_image_size_w"] or (out["crop_size_w"] if out["crop"] else 0) or (
        w - left - right
    )
    out["src_image_size_h"] = out["src_image_size_h"] or (out["crop_size_h"] if out["crop"] else 0) or (
        h - top - bottom
    )
    src_w, src_h = out["src_image_size_w"], out["src_image_size_h"]
    if src_w < 1 or src_h < 1:
        raise AippError(f"input {name!r}: the source image is {src_w} x {src_h}: both must be >= 1")
    if out["crop"]:
        out["crop_size_w"] = out["crop_size_w"] or (w - left - right)
        out["crop_size_h"] = out["crop_size_h"] or (h - top - bottom)
    else:
        out["crop_size_w"], out["crop_size_h"] = src_w, src_h
    x0, y0, cw, ch = out["load_start_pos_w"], out["load_start_pos_h"], out["crop_size_w"], out["crop_size_h"]
    if fmt_name == "YUV420SP_U8":
        if src_w % 2 or src_h % 2:
            raise AippError(
                f"input {name!r}: src_image_size_w and src_image_size_h must be even for YUV420SP_U8, got "
                f"{src_w} x {src_h}"
            )
        if x0 % 2 or y0 % 2:
            raise AippError(
                f"input {name!r}: load_start_pos_w and load_start_pos_h must be even for YUV420SP_U8, got "
                f"({x0}, {y0})"
            )
    if cw < 1 or ch < 1 or x0 + cw > src_w or y0 + ch > src_h:
        raise AippError(
            f"input {name!r}: the crop window at ({x0}, {y0}) of {cw} x {ch} must lie inside the "
            f"{src_w} x {src_h} source image"
        )
    if cw + left + right != w or ch + top + bottom != h:
        raise AippError(
            f"input {name!r}: the AIPP output is {cw + left + right} x {ch + top + bottom} (W x H: the crop "
            f"{cw} x {ch} plus padding left {left} right {right} top {top} bottom {bottom}), the model "
            f"input is {w} x {h}: they must be equal"
        )
    return out


def _resolve_dynamic(s, name, shape, fmt, dtype):
    """Dynamic AIPP: the image's largest size here, every other setting from
    aclmdlSetInputAIPP at run time (ATC takes no other field in this mode)."""
    extra = sorted(k for k in s if k not in ("aipp_mode", "related_input_rank", "max_src_image_size"))
    if extra:
        raise AippError(
            f"input {name!r}: {extra[0]} is a static AIPP field; with aipp_mode dynamic the settings come "
            "from aclmdlSetInputAIPP at run time"
        )
    if "max_src_image_size" not in s:
        raise AippError(f"input {name!r}: dynamic AIPP needs max_src_image_size (the largest image's bytes)")
    _check_model_input(name, None, shape, fmt, dtype)
    c = shape[1] if fmt == "NCHW" else shape[3]
    return {"aipp_mode": "dynamic", "max_src_image_size": s["max_src_image_size"], "batch": shape[0],
            "channels": c}


def _check_model_input(name, fmt_name, shape, fmt, dtype):
    if fmt not in ("NCHW", "NHWC") or len(shape) != 4:
        raise AippError(
            f"input {name!r}: AIPP needs a 4-D NCHW or NHWC model input, got {fmt} {tuple(shape)}"
        )
    if any(isinstance(d, str) or d < 1 for d in shape):
        raise AippError(
            f"input {name!r}: AIPP on an input with dynamic dimensions {tuple(shape)} is not modelled by "
            "the simulator (docs/simulator.md, Static AIPP)"
        )
    if dtype not in ("float32", "float16"):
        raise AippError(f"input {name!r}: AIPP produces a float32 or float16 model input, not {dtype}")
    c = shape[1] if fmt == "NCHW" else shape[3]
    if fmt_name is None:  # dynamic: the format comes at run time, one or three channels
        if c not in (1, 3):
            raise AippError(f"input {name!r}: AIPP gives 1 or 3 channels, the model input {fmt} "
                            f"{tuple(shape)} has C = {c}")
        return
    want = 1 if fmt_name == "YUV400_U8" else 3
    if c != want:
        raise AippError(
            f"input {name!r}: {fmt_name} through AIPP gives {want} channel{'s' if want > 1 else ''}, the "
            f"model input {fmt} {tuple(shape)} has C = {c}"
        )


def record(input_index, s):
    """The model file's AIPP record for input ``input_index`` with resolved settings ``s``."""
    if s["aipp_mode"] == "dynamic":
        return struct.pack("<IIiI", input_index, 2, 0, s["max_src_image_size"]) + bytes(RECORD_SIZE - 16)
    return _RECORD.pack(
        input_index,
        1,  # static
        INPUT_FORMATS[s["input_format"]],
        s["src_image_size_w"],
        s["src_image_size_h"],
        s["crop"],
        s["padding"],
        s["csc_switch"],
        s["rbuv_swap_switch"],
        s["ax_swap_switch"],
        s["load_start_pos_w"],
        s["load_start_pos_h"],
        s["crop_size_w"],
        s["crop_size_h"],
        s["left_padding_size"],
        s["right_padding_size"],
        s["top_padding_size"],
        s["bottom_padding_size"],
        *(s[m] for m in _MATRIX),
        *(s[f"input_bias_{i}"] for i in range(3)),
        *(s[f"output_bias_{i}"] for i in range(3)),
        *(s[f"mean_chn_{i}"] for i in range(4)),
        *(s[f"min_chn_{i}"] for i in range(4)),
        *(s[f"var_reci_chn_{i}"] for i in range(4)),
        s["padding_value"],
    )
