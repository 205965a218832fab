"""The numpy references of the native steps: the exact semantics each C step
implements (docs/executor.md, "Native steps"), written plainly.  The tests
compare every step against these, and the benchmarks time them side by side.

Each function takes one request's arrays (first dimension the rows) and the
step's parameters, and returns what the step writes.
"""

from __future__ import annotations

import numpy as np


class ReferenceError(ValueError):
    """A value the step refuses (the native step fails the request instead)."""


def _f32(x):
    return np.float32(x)


def decode_boxes(raw, kind, image_size, strides=(), anchors=(), priors=None, variances=(0.1, 0.2),
                 clip=False):
    """(rows, n, channels) head output -> (rows, n, 4) float32 corners (x0, y0, x1, y1) in pixels."""
    raw = np.asarray(raw, np.float32)
    if not np.isfinite(raw[..., :4]).all():
        raise ReferenceError("non-finite box value")
    t = raw[..., :4]
    width, height = image_size
    half = _f32(0.5)
    if kind in ("yolox", "ltrb", "yolov5"):
        gx, gy, s, aw, ah = _grid(kind, image_size, strides, anchors)
        if kind == "ltrb":
            px, py = (gx + half) * s, (gy + half) * s
            out = np.stack([px - t[..., 0] * s, py - t[..., 1] * s, px + t[..., 2] * s, py + t[..., 3] * s],
                           axis=-1)
            return _finish(out, clip, width, height)
        if kind == "yolox":
            cx, cy = (t[..., 0] + gx) * s, (t[..., 1] + gy) * s
            w, h = np.exp(t[..., 2]) * s, np.exp(t[..., 3]) * s
        else:
            two = _f32(2.0)
            sig = two * (_f32(1.0) / (_f32(1.0) + np.exp(-t)))
            cx = (sig[..., 0] - half + gx) * s
            cy = (sig[..., 1] - half + gy) * s
            w, h = sig[..., 2] * sig[..., 2] * aw, sig[..., 3] * sig[..., 3] * ah
    elif kind == "ssd":
        p = np.asarray(priors, np.float32)
        v0, v1 = _f32(variances[0]), _f32(variances[1])
        cx = (p[:, 0] + t[..., 0] * v0 * p[:, 2]) * _f32(width)
        cy = (p[:, 1] + t[..., 1] * v0 * p[:, 3]) * _f32(height)
        w = p[:, 2] * np.exp(t[..., 2] * v1) * _f32(width)
        h = p[:, 3] * np.exp(t[..., 3] * v1) * _f32(height)
    else:   # xywh
        cx, cy, w, h = t[..., 0], t[..., 1], t[..., 2], t[..., 3]
    out = np.stack([cx - w * half, cy - h * half, cx + w * half, cy + h * half], axis=-1)
    return _finish(out, clip, width, height)


def _finish(out, clip, width, height):
    out = out.astype(np.float32)
    if not np.isfinite(out).all():
        raise ReferenceError("non-finite corner")
    if clip:
        out[..., 0::2] = np.clip(out[..., 0::2], 0, _f32(width))
        out[..., 1::2] = np.clip(out[..., 1::2], 0, _f32(height))
    return out


def _grid(kind, image_size, strides, anchors):
    """Per box: its cell (gx, gy), stride and anchor (w, h), float32, in the order the head lays them out."""
    width, height = image_size
    gx, gy, s, aw, ah = [], [], [], [], []
    for level, stride in enumerate(strides):
        gw, gh = int(width // stride), int(height // stride)
        ys, xs = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
        pairs = anchors[level] if kind == "yolov5" else [(0.0, 0.0)]
        for a_w, a_h in pairs:
            gx.append(xs.ravel())
            gy.append(ys.ravel())
            s.append(np.full(gw * gh, stride))
            aw.append(np.full(gw * gh, a_w))
            ah.append(np.full(gw * gh, a_h))
    return tuple(np.concatenate(v).astype(np.float32) for v in (gx, gy, s, aw, ah))


def iou_row(kept_boxes, box):
    """IoU of ``box`` with each of ``kept_boxes`` in float32, as the step computes it (0 for an
    empty union)."""
    top = np.maximum(kept_boxes[:, :2], box[:2])
    bottom = np.minimum(kept_boxes[:, 2:], box[2:])
    wh = np.clip(bottom - top, 0, None)
    inter = wh[:, 0] * wh[:, 1]
    area_k = (kept_boxes[:, 2] - kept_boxes[:, 0]) * (kept_boxes[:, 3] - kept_boxes[:, 1])
    area = (box[2] - box[0]) * (box[3] - box[1])
    union = (area_k + area) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), np.float32(0)).astype(np.float32)


def nms(boxes, scores, iou_threshold, score_threshold, max_boxes, class_agnostic=False):
    """Greedy NMS per row: (boxes (k, 4), scores (k,), classes (k,), images (k,), indices (k,))."""
    boxes = np.asarray(boxes, np.float32)
    scores = np.asarray(scores, np.float32)
    if scores.ndim == 2:
        scores = scores[:, :, None]
    if np.isnan(scores).any():
        raise ReferenceError("NaN score")
    iou_threshold, score_threshold = _f32(iou_threshold), _f32(score_threshold)
    out = ([], [], [], [], [])
    for r in range(len(boxes)):
        s = scores[r]
        if class_agnostic:
            cls = np.argmax(s, axis=1)
            best = s[np.arange(len(s)), cls]
            box_i = np.flatnonzero(best > score_threshold)
            cls_i, sc = cls[box_i], best[box_i]
        else:
            box_i, cls_i = np.nonzero(s > score_threshold)
            sc = s[box_i, cls_i]
        b = boxes[r][box_i]
        if len(b) and not (np.isfinite(b).all() and (b[:, 2] >= b[:, 0]).all()
                           and (b[:, 3] >= b[:, 1]).all()):
            raise ReferenceError("not a box")
        order = np.lexsort((cls_i, box_i, -sc))     # falling score, then box index, then class
        keep = []
        for j in order:
            if len(keep) == max_boxes:
                break
            if keep:
                k = np.asarray(keep)
                rivals = k if class_agnostic else k[cls_i[k] == cls_i[j]]
                if len(rivals) and (iou_row(b[rivals], b[j]) > iou_threshold).any():
                    continue
            keep.append(j)
        keep = np.asarray(keep, np.int64)
        found = (b[keep], sc[keep], cls_i[keep], np.full(len(keep), r), box_i[keep])
        for dst, src in zip(out, found, strict=True):
            dst.append(src)
    dtypes = (np.float32, np.float32, np.int32, np.int32, np.int32)
    shapes = ((-1, 4), (-1,), (-1,), (-1,), (-1,))
    return tuple(np.concatenate(v).astype(dt).reshape(sh) if v else np.zeros((0, *sh[1:]), dt)
                 for v, dt, sh in zip(out, dtypes, shapes, strict=True))


def topk(x, k):
    """(values, indices int32) of the k largest along the last axis, largest first, ties by lower index."""
    x = np.asarray(x, np.float32)
    if np.isnan(x).any():
        raise ReferenceError("NaN")
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


def argmax(x):
    """The index of the largest value along the last axis (the lowest on a tie), int32."""
    return topk(x, 1)[1][..., 0]


def softmax(x):
    """exp(x - max) / sum along the last axis, float32."""
    x = np.asarray(x, np.float32)
    if np.isnan(x).any() or np.isinf(x.max(axis=-1)).any():
        raise ReferenceError("NaN or infinite maximum")
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True, dtype=np.float64)).astype(np.float32)


def ctc_greedy(x, blank=0):
    """(labels (rows, steps) int32 padded with -1, lengths (rows,) int32, scores (rows,) float32)."""
    x = np.asarray(x, np.float32)
    if np.isnan(x).any():
        raise ReferenceError("NaN")
    rows, steps, _ = x.shape
    labels = np.full((rows, steps), -1, np.int32)
    lengths = np.zeros(rows, np.int32)
    scores = np.zeros(rows, np.float32)
    best = np.argmax(x, axis=2)
    for r in range(rows):
        path = best[r]
        keep = np.ones(steps, bool)
        keep[1:] = path[1:] != path[:-1]
        keep &= path != blank
        chosen = path[keep]
        labels[r, :len(chosen)] = chosen
        lengths[r] = len(chosen)
        if len(chosen):
            scores[r] = np.float32(x[r][keep, chosen].astype(np.float64).mean())
    return labels, lengths, scores


def crop_resize(images, boxes, size, image_index=None, interpolation="bilinear"):
    """Crops of ``images`` (rows, H, W[, C]) in ``boxes`` (k, 4) resized to ``size`` (w, h):
    (k, h, w[, C])."""
    images = np.asarray(images)
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    index = np.zeros(len(boxes), np.int64) if image_index is None else np.asarray(image_index)
    height, width = images.shape[1:3]
    ow, oh = size
    out = []
    for k, b in enumerate(boxes):
        if not (np.isfinite(b).all() and b[0] >= 0 and b[1] >= 0 and b[2] <= width and b[3] <= height
                and b[0] < b[2] and b[1] < b[3]):
            raise ReferenceError(f"box {k} outside the picture")
        if not 0 <= index[k] < len(images):
            raise ReferenceError(f"box {k} names no picture")
        pic = images[index[k]].astype(np.float64)
        sy = np.float64(b[1]) + (np.arange(oh) + 0.5) * np.float64(b[3] - b[1]) / oh
        sx = np.float64(b[0]) + (np.arange(ow) + 0.5) * np.float64(b[2] - b[0]) / ow
        if interpolation == "nearest":
            ys = np.clip(np.floor(sy), 0, height - 1).astype(np.intp)
            xs = np.clip(np.floor(sx), 0, width - 1).astype(np.intp)
            out.append(pic[np.ix_(ys, xs)])
            continue
        fy, fx = np.clip(sy - 0.5, 0, height - 1), np.clip(sx - 0.5, 0, width - 1)
        y0, x0 = np.floor(fy).astype(np.intp), np.floor(fx).astype(np.intp)
        y1, x1 = np.minimum(y0 + 1, height - 1), np.minimum(x0 + 1, width - 1)
        wy, wx = fy - y0, fx - x0
        if pic.ndim == 3:
            wy, wx = wy[:, None, None], wx[None, :, None]
        else:
            wy, wx = wy[:, None], wx[None, :]
        top = (1.0 - wx) * pic[np.ix_(y0, x0)] + wx * pic[np.ix_(y0, x1)]
        bottom = (1.0 - wx) * pic[np.ix_(y1, x0)] + wx * pic[np.ix_(y1, x1)]
        out.append((1.0 - wy) * top + wy * bottom)
    return _pixels(out, images.dtype, (0, oh, ow, *images.shape[3:]))


def _pixels(out, dtype, empty_shape):
    if not out:
        return np.zeros(empty_shape, dtype)
    v = np.stack(out)
    if dtype == np.uint8:
        return np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8)
    return v.astype(np.float32)


def warp_affine(images, matrices, size, image_index=None, border=0.0):
    """Pictures sampled through affine maps (k, 2, 3) (output pixel -> source point), bilinear, ``border``
    outside: (k, h, w[, C])."""
    images = np.asarray(images)
    mats = np.asarray(matrices, np.float32).reshape(-1, 6).astype(np.float64)
    index = np.zeros(len(mats), np.int64) if image_index is None else np.asarray(image_index)
    height, width = images.shape[1:3]
    ow, oh = size
    limit = 4.0 * (height + width + oh + ow)
    border = float(np.float32(border))
    out = []
    for k, m in enumerate(mats):
        if not np.isfinite(m).all():
            raise ReferenceError(f"matrix {k} is not finite")
        if not 0 <= index[k] < len(images):
            raise ReferenceError(f"matrix {k} names no picture")
        pic = images[index[k]].astype(np.float64)
        if pic.ndim == 2:
            pic = pic[:, :, None]
        pad = np.full((height + 2, width + 2, pic.shape[2]), border)
        pad[1:-1, 1:-1] = pic
        j, i = np.meshgrid(np.arange(ow, dtype=np.float64), np.arange(oh, dtype=np.float64))
        sx = m[0] * j + m[1] * i + m[2]
        sy = m[3] * j + m[4] * i + m[5]
        far = (np.abs(sx) > limit) | (np.abs(sy) > limit)
        sx, sy = np.where(far, 0.0, sx), np.where(far, 0.0, sy)
        x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
        wx, wy = (sx - x0)[..., None], (sy - y0)[..., None]

        def at(y, x, pad=pad):
            inside = (y >= 0) & (y < height) & (x >= 0) & (x < width)
            return np.where(inside[..., None], pad[np.clip(y, -1, height) + 1, np.clip(x, -1, width) + 1],
                            border)

        top = (1.0 - wx) * at(y0, x0) + wx * at(y0, x0 + 1)
        bottom = (1.0 - wx) * at(y0 + 1, x0) + wx * at(y0 + 1, x0 + 1)
        v = (1.0 - wy) * top + wy * bottom
        v[far] = border
        out.append(v if images.ndim == 4 else v[..., 0])
    return _pixels(out, images.dtype, (0, oh, ow, *images.shape[3:]))


def ctc_text(labels, lengths, characters, blank=0):
    """The strings of ``ctc_greedy``'s labels: class c is ``characters[c]`` for c < blank and
    ``characters[c - 1]`` above it (the table lists the classes without the blank)."""
    texts = []
    for row, n in zip(np.asarray(labels), np.asarray(lengths), strict=True):
        texts.append("".join(characters[int(c) - (int(c) > blank)] for c in row[:int(n)]))
    return texts
