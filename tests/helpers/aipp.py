"""A numpy reference of static AIPP, written from ATC's description of each
step (docs/simulator.md, "Static AIPP"), and the image and settings the AIPP
tests share.

``reference`` takes resolved settings (``ascend_engine.sim.aipp.resolve``)
and the source images, and returns the model tensor: channel swap, crop,
colour-space conversion in integers (``>> 8``, clipped to 0..255),
normalization in float32, padding.
"""

import ctypes

import numpy as np

from ascend_engine.sim import aipp

# The YUV420SP (NV12) -> RGB matrix ATC users write (BT.601 full range, JPEG)
BT601_NV12_TO_RGB = {
    "csc_switch": True,
    "matrix_r0c0": 256, "matrix_r0c1": 0, "matrix_r0c2": 359,
    "matrix_r1c0": 256, "matrix_r1c1": -88, "matrix_r1c2": -183,
    "matrix_r2c0": 256, "matrix_r2c1": 454, "matrix_r2c2": 0,
    "input_bias_0": 0, "input_bias_1": 128, "input_bias_2": 128,
}  # fmt: skip


def nv12(rng, w, h, n=1):
    """n random NV12 images of w x h, as one flat uint8 array."""
    return rng.integers(0, 256, size=n * w * h * 3 // 2, dtype=np.uint8)


def _pixels(s, img):
    w, h, f = s["src_image_size_w"], s["src_image_size_h"], s["input_format"]
    if f == "YUV420SP_U8":
        y = img[: w * h].reshape(h, w)
        uv = img[w * h :].reshape(h // 2, w // 2, 2).repeat(2, axis=0).repeat(2, axis=1)
        u, v = (uv[..., 1], uv[..., 0]) if s["rbuv_swap_switch"] else (uv[..., 0], uv[..., 1])
        return np.stack([y, u, v], axis=-1).astype(np.int64)
    if f == "YUV400_U8":
        return img.reshape(h, w, 1).astype(np.int64)
    if f == "RGB888_U8":
        px = img.reshape(h, w, 3)
    else:  # XRGB8888_U8: X first, or RGBX with ax_swap
        px = img.reshape(h, w, 4)
        px = px[..., :3] if s["ax_swap_switch"] else px[..., 1:]
    return (px[..., ::-1] if s["rbuv_swap_switch"] else px).astype(np.int64)


def reference(s, images, fmt="NCHW", dtype=np.float32):
    """The model tensor AIPP makes from ``images`` (flat uint8, batch images one after another)."""
    n = s["batch"]
    per = aipp.image_bytes(s["input_format"], s["src_image_size_w"], s["src_image_size_h"])
    out = []
    for b in range(n):
        px = _pixels(s, images[b * per : (b + 1) * per])
        x0, y0 = s["load_start_pos_w"], s["load_start_pos_h"]
        px = px[y0 : y0 + s["crop_size_h"], x0 : x0 + s["crop_size_w"]]
        if s["csc_switch"]:
            m = np.array([[s[f"matrix_r{r}c{c}"] for c in range(3)] for r in range(3)], np.int64)
            # the unit takes the input biases for a YUV source, the output biases for an RGB one
            yuv = s["input_format"] in ("YUV420SP_U8", "YUV400_U8")
            ib = np.array([s[f"input_bias_{i}"] if yuv else 0 for i in range(3)], np.int64)
            ob = np.array([0 if yuv else s[f"output_bias_{i}"] for i in range(3)], np.int64)
            px = np.clip(((px - ib) @ m.T >> 8) + ob, 0, 255)
        c = px.shape[-1]
        mean = np.array([s[f"mean_chn_{i}"] for i in range(c)], np.float32)
        mn = np.array([s[f"min_chn_{i}"] for i in range(c)], np.float32)
        var = np.array([s[f"var_reci_chn_{i}"] for i in range(c)], np.float32)
        x = (px.astype(np.float32) - mean - mn) * var
        top, left = s["top_padding_size"], s["left_padding_size"]
        out_h = top + x.shape[0] + s["bottom_padding_size"]
        out_w = left + x.shape[1] + s["right_padding_size"]
        full = np.full((out_h, out_w, c), s["padding_value"], np.float32)
        full[top : top + x.shape[0], left : left + x.shape[1]] = x
        out.append(full if fmt == "NHWC" else full.transpose(2, 0, 1))
    return np.stack(out).astype(dtype)


class IODims(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 128), ("dimCount", ctypes.c_size_t), ("dims", ctypes.c_int64 * 128)]


class AippDims(ctypes.Structure):
    _fields_ = [("srcDims", IODims), ("srcSize", ctypes.c_size_t), ("aippOutdims", IODims),
                ("aippOutSize", ctypes.c_size_t)]


_INFO_INTS = ["loadStartPosW", "loadStartPosH", "cropSizeW", "cropSizeH"]


class AippInfo(ctypes.Structure):
    """aclAippInfo (acl_mdl.h)."""

    _fields_ = (
        [("inputFormat", ctypes.c_int), ("srcImageSizeW", ctypes.c_int32), ("srcImageSizeH", ctypes.c_int32),
         ("cropSwitch", ctypes.c_int8)]
        + [(n, ctypes.c_int32) for n in _INFO_INTS]
        + [("resizeSwitch", ctypes.c_int8), ("resizeOutputW", ctypes.c_int32),
           ("resizeOutputH", ctypes.c_int32), ("paddingSwitch", ctypes.c_int8)]
        + [(f"{s}PaddingSize", ctypes.c_int32) for s in ("left", "right", "top", "bottom")]
        + [(n, ctypes.c_int8) for n in ("cscSwitch", "rbuvSwapSwitch", "axSwapSwitch", "singleLineMode")]
        + [(f"matrixR{r}C{c}", ctypes.c_int32) for r in range(3) for c in range(3)]
        + [(f"outputBias{i}", ctypes.c_int32) for i in range(3)]
        + [(f"inputBias{i}", ctypes.c_int32) for i in range(3)]
        + [(f"meanChn{i}", ctypes.c_int32) for i in range(4)]
        + [(f"minChn{i}", ctypes.c_float) for i in range(4)]
        + [(f"varReciChn{i}", ctypes.c_float) for i in range(4)]
        + [("srcFormat", ctypes.c_int), ("srcDatatype", ctypes.c_int), ("srcDimNum", ctypes.c_size_t),
           ("shapeCount", ctypes.c_size_t), ("outDims", AippDims * 128), ("aippExtend", ctypes.c_void_p)]
    )
