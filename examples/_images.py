"""Pictures for the all-device detector -> classifier (examples/detector_classifier.py):
static-AIPP models, JPEGs, and numpy/Pillow references of each device step.

The device steps follow docs/simulator.md ("DVPP", "Static AIPP") and
docs/executor.md ("Image nodes"): JPEGD decodes to NV12 (chroma averaged over
each 2 x 2 block), the VPC resamples each plane at its own resolution
(bilinear, pixel centres aligned, edges clamped, rounded to the nearest), and
the AIPP turns NV12 into RGB with the integer BT.601 matrix (``>> 8``) and
normalizes it before the model computes.
"""

from __future__ import annotations

import io
import os

import numpy as np
from _models import SimModel, relu, sigmoid, softmax, weights

from ascend_engine import sim

# NV12 -> RGB, BT.601 full range (JPEG's), as ATC configurations write it; then (x - 128) / 128
AIPP = {
    "aipp_mode": "static", "input_format": "YUV420SP_U8", "csc_switch": True,
    "matrix_r0c0": 256, "matrix_r0c1": 0, "matrix_r0c2": 359,
    "matrix_r1c0": 256, "matrix_r1c1": -88, "matrix_r1c2": -183,
    "matrix_r2c0": 256, "matrix_r2c1": 454, "matrix_r2c2": 0,
    "input_bias_0": 0, "input_bias_1": 128, "input_bias_2": 128,
    "mean_chn_0": 128, "mean_chn_1": 128, "mean_chn_2": 128,
    "var_reci_chn_0": 0.0078125, "var_reci_chn_1": 0.0078125, "var_reci_chn_2": 0.0078125,
}  # fmt: skip


def aipp(picture, w, h) -> np.ndarray:
    """The float32 (1, 3, h, w) tensor the AIPP above makes from one NV12 picture."""
    flat = np.asarray(picture, np.uint8).reshape(-1)
    y = flat[: w * h].reshape(h, w).astype(np.int64)
    uv = flat[w * h: w * h * 3 // 2].reshape(h // 2, w // 2, 2).repeat(2, axis=0).repeat(2, axis=1)
    yuv = np.stack([y, uv[..., 0].astype(np.int64) - 128, uv[..., 1].astype(np.int64) - 128])
    m = np.array([[AIPP[f"matrix_r{r}c{c}"] for c in range(3)] for r in range(3)], np.int64)
    rgb = np.clip(np.einsum("rc,chw->rhw", m, yuv) >> 8, 0, 255).astype(np.float32)
    return ((rgb - np.float32(128)) * np.float32(0.0078125))[None]


def detector_model(folder, name, size, candidates, seed, latency_us=0) -> SimModel:
    """A detector reading an NV12 picture of ``size`` = (w, h) through AIPP: ``scores``
    (1, candidates) and ``boxes`` (1, candidates, 4) as (cy, cx, h, w) fractions."""
    w, h = size
    rng = np.random.default_rng(seed)
    w_hidden = weights(rng, 3 * h * w, 64)
    w_scores = weights(rng, 64, candidates, scale=3.0)
    w_boxes = weights(rng, 64, candidates * 4, scale=2.0)
    g = sim.Graph(name)
    x = g.input("image", "float32", (1, 3, h, w), "NCHW")
    hidden = g.relu(g.matmul(g.reshape(x, (1, 3 * h * w)), g.const(w_hidden)))
    g.output("scores", g.sigmoid(g.matmul(hidden, g.const(w_scores))))
    g.output("boxes", g.reshape(g.sigmoid(g.matmul(hidden, g.const(w_boxes))), (1, candidates, 4)))
    path = g.save(os.path.join(folder, f"{name}.om"), aipp={"image": AIPP}, latency_us=latency_us)

    def forward(picture):
        hid = relu(aipp(picture, w, h).reshape(1, -1) @ w_hidden)
        return {"scores": sigmoid(hid @ w_scores), "boxes": sigmoid(hid @ w_boxes).reshape(1, candidates, 4)}

    return SimModel(g, forward, path)


def classifier_model(folder, name, size, classes, seed, latency_us=0) -> SimModel:
    """A classifier of one NV12 crop of ``size`` through AIPP: ``probs`` (1, classes), ``label`` (1,)."""
    w, h = size
    rng = np.random.default_rng(seed)
    w1 = weights(rng, 3 * h * w, 32)
    w2 = weights(rng, 32, classes, scale=2.0)
    g = sim.Graph(name)
    x = g.input("image", "float32", (1, 3, h, w), "NCHW")
    logits = g.matmul(g.relu(g.matmul(g.reshape(x, (1, 3 * h * w)), g.const(w1))), g.const(w2))
    g.output("probs", g.softmax(logits))
    g.output("label", g.argmax(logits))
    path = g.save(os.path.join(folder, f"{name}.om"), aipp={"image": AIPP}, latency_us=latency_us)

    def forward(crop):
        out = relu(aipp(crop, w, h).reshape(1, -1) @ w1) @ w2
        return {"probs": softmax(out), "label": out.argmax(axis=-1).astype(np.int32)}

    return SimModel(g, forward, path)


def random_jpeg(rng, w, h, quality=90) -> bytes:
    """A JPEG of smooth random blobs over noise (4:2:0, baseline)."""
    from PIL import Image

    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for _ in range(6):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(0.05, 0.3) * max(w, h)
        img += np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r))[..., None] * rng.uniform(0, 255, 3)
    img = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(img).save(out, "JPEG", quality=quality, subsampling=2)
    return out.getvalue()


def decode_planes(jpeg):
    """Y, U, V (float64) of a JPEG as JPEGD writes them: libjpeg's YCbCr (Pillow's decode),
    the size rounded down to even, chroma averaged over each 2 x 2 block."""
    from PIL import Image

    img = Image.open(io.BytesIO(jpeg))
    img.draft("YCbCr", img.size)
    ycc = np.asarray(img.convert("YCbCr")).astype(np.float64)
    h, w = ycc.shape[0] & ~1, ycc.shape[1] & ~1
    ycc = ycc[:h, :w]
    chroma = ycc[:, :, 1:].reshape(h // 2, 2, w // 2, 2, 2).mean(axis=(1, 3))
    return ycc[:, :, 0], chroma[..., 0], chroma[..., 1]


def bilinear(plane, out_w, out_h):
    """The VPC's bilinear resampling of a whole plane, rounded to the nearest (ties to even)."""
    in_h, in_w = plane.shape
    p = plane.astype(np.float64)

    def taps(n_out, n_in):
        f = np.maximum((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0)
        lo = f.astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        weight = f - lo
        edge = lo >= n_in - 1
        lo, hi, weight = np.where(edge, n_in - 1, lo), np.where(edge, n_in - 1, hi), np.where(edge, 0, weight)
        return lo, hi, weight

    x0, x1, wx = taps(out_w, in_w)
    y0, y1, wy = taps(out_h, in_h)
    top = p[y0][:, x0] * (1 - wx) + p[y0][:, x1] * wx
    bottom = p[y1][:, x0] * (1 - wx) + p[y1][:, x1] * wx
    return np.clip(np.rint(top * (1 - wy)[:, None] + bottom * wy[:, None]), 0, 255).astype(np.uint8)


def nv12(y, u, v) -> np.ndarray:
    """One NV12 picture (h * 3 / 2, w, 1) from its planes."""
    h, w = y.shape
    uv = np.stack([u, v], axis=-1).reshape(h // 2, w)
    return np.concatenate([y, uv]).astype(np.uint8).reshape(h * 3 // 2, w, 1)


def planes(picture, w, h):
    """Y, U, V planes (uint8) of one NV12 picture of w x h."""
    flat = np.asarray(picture, np.uint8).reshape(-1)
    uv = flat[w * h: w * h * 3 // 2].reshape(h // 2, w // 2, 2)
    return flat[: w * h].reshape(h, w), uv[..., 0], uv[..., 1]


def host_picture(jpeg, w, h) -> np.ndarray:
    """jpeg_decode -> resize on the host: the NV12 picture (h * 3 / 2, w, 1)."""
    y, u, v = decode_planes(jpeg)
    return nv12(bilinear(np.rint(y), w, h), bilinear(np.rint(u), w // 2, h // 2),
                bilinear(np.rint(v), w // 2, h // 2))


def crop_resize(picture, box, w, h, out_w, out_h) -> np.ndarray:
    """crop_resize of one box (x0, y0, x1, y1; even starts and ends, ends excluded) on the host."""
    y, u, v = planes(picture, w, h)
    x0, y0, x1, y1 = (int(c) for c in box)
    return nv12(bilinear(y[y0:y1, x0:x1], out_w, out_h),
                bilinear(u[y0 // 2:y1 // 2, x0 // 2:x1 // 2], out_w // 2, out_h // 2),
                bilinear(v[y0 // 2:y1 // 2, x0 // 2:x1 // 2], out_w // 2, out_h // 2))
