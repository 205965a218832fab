"""DB text-detection post-processing (what PP-OCR's ``DBPostProcess`` does) as a
native step, and its numpy reference (docs/executor.md, "DB text boxes").

* :func:`db_postprocess` adds the step to a pipeline: a detector's probability
  map in, rotated text boxes in the picture's pixels and their scores out
  (``rows="any"``, up to ``max_candidates``).  It runs the C function
  ``ae_db_postprocess`` (steps/csrc/db_postprocess.c) on the host-step workers
  without the GIL.
* :func:`db_step` is the same function as a NativeStep, for a spec file.
* :func:`db_boxes` runs the same C code on one map, the GIL released: for a
  Python step that reads maps whose size changes per request (a native step
  takes fixed shapes only).
* :func:`db_boxes_reference` is the definition in numpy, operation for
  operation: the tests hold the C code to it.
* :func:`ctc_greedy` decodes recognizer scores greedily in C; it serves the
  OCR example and is not a pipeline step.
"""

from __future__ import annotations

import math

import numpy as np

from ascend_engine._checks import positive_int
from ascend_engine.errors import PipelineError
from ascend_engine.planner.builder import MAX_STEP_ROWS, NativeStep

DEFAULTS = {"thresh": 0.3, "box_thresh": 0.6, "unclip_ratio": 1.5, "min_size": 3.0, "max_candidates": 1000}
# A pixel centre this far outside a rectangle still counts as inside it (db_postprocess.c, DB_INSIDE_EPS).
INSIDE_EPS = 1e-3
MAX_MAP_SIDE = 1 << 20


def _native():
    from ascend_engine.steps import _ocr  # the extension; imported when first used

    return _ocr


def check_params(where, thresh, box_thresh, unclip_ratio, min_size, max_candidates):
    """The step's parameters as floats and an int, or a PipelineError naming ``where``."""
    values = {}
    for key, value in (("thresh", thresh), ("box_thresh", box_thresh), ("unclip_ratio", unclip_ratio),
                       ("min_size", min_size)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise PipelineError(f"{where}: {key} must be a finite number, got {value!r}")
        if key in ("unclip_ratio", "min_size") and value < 0:
            raise PipelineError(f"{where}: {key} must be >= 0, got {value!r}")
        values[key] = float(value)
    values["max_candidates"] = positive_int(max_candidates, f"{where}: max_candidates", MAX_STEP_ROWS,
                                            error=PipelineError)
    return values


def _map_size(where, prob):
    """(height, width) of a map handle: float32 (rows, H, W) or (rows, 1, H, W), fixed H and W."""
    shape = tuple(prob.shape)
    if np.dtype(prob.dtype) != np.float32:
        raise PipelineError(f"{where}: the map {prob.name!r} must be float32, got {prob.dtype}")
    if len(shape) == 4 and shape[1] == 1:
        shape = (shape[0], *shape[2:])
    if len(shape) != 3 or any(d < 1 or d > MAX_MAP_SIDE for d in shape[1:]):
        raise PipelineError(f"{where}: the map {prob.name!r} must be (rows, H, W) or (rows, 1, H, W) with "
                            f"fixed H and W (1 to {MAX_MAP_SIDE}), got {tuple(prob.shape)}")
    if shape[0] not in (-1, 1):
        raise PipelineError(f"{where}: the map {prob.name!r} holds {shape[0]} rows; the step reads one map "
                            "per request (rows 1, or -1 with one row a request)")
    return shape[1], shape[2]


def db_postprocess(pipe, prob, picture=None, *, name="db", thresh=DEFAULTS["thresh"],
                   box_thresh=DEFAULTS["box_thresh"], unclip_ratio=DEFAULTS["unclip_ratio"],
                   min_size=DEFAULTS["min_size"], max_candidates=DEFAULTS["max_candidates"]):
    """Add DB post-processing after a text detector: returns the handles of its
    ``boxes`` ((N, 4, 2) float32: corners x, y top-left, top-right,
    bottom-right, bottom-left) and ``scores`` ((N,) float32), N from 0 to
    ``max_candidates`` per request.

    ``prob`` is the detector's map, float32 (rows, 1, H, W) or (rows, H, W)
    with fixed H and W, one map a request.  ``picture``, when given, is a
    float32 (rows, 4) tensor of (height, width, ratio_h, ratio_w) per request:
    map point (x, y) is picture point (x / ratio_w, y / ratio_h), clamped to
    the picture; without it boxes are in map pixels.  Definitions:
    docs/executor.md, "DB text boxes".  A map holding NaN or an infinity fails
    its request with a message naming the step."""
    where = f"db_postprocess step {name!r}"
    values = check_params(where, thresh, box_thresh, unclip_ratio, min_size, max_candidates)
    height, width = _map_size(where, prob)
    inputs = [prob]
    if picture is not None:
        if np.dtype(picture.dtype) != np.float32 or tuple(picture.shape)[1:] != (4,):
            raise PipelineError(f"{where}: picture {picture.name!r} must be float32 (rows, 4): height, "
                                f"width, ratio_h, ratio_w; got {picture.dtype} {tuple(picture.shape)}")
        inputs.append(picture)
    step = db_step(height, width, picture=picture is not None, name=name, **values)
    return pipe.host(step, *inputs, name=name, rows="any", max_rows=values["max_candidates"],
                     outputs=[("boxes", "float32", (-1, 4, 2)), ("scores", "float32", (-1,))])


def db_step(height, width, *, picture=False, name="db", thresh=DEFAULTS["thresh"],
            box_thresh=DEFAULTS["box_thresh"], unclip_ratio=DEFAULTS["unclip_ratio"],
            min_size=DEFAULTS["min_size"], max_candidates=DEFAULTS["max_candidates"]) -> NativeStep:
    """The DB step's function as a :class:`NativeStep` for ``height`` x
    ``width`` maps (with a picture input when ``picture``), for a spec file's
    ``host:`` entry (docs/pipeline-spec.md, "DB text boxes").  Its messages
    name the step ``name``; :func:`db_postprocess` is the same with the
    checks of the graph."""
    where = f"db_postprocess step {name!r}"
    values = check_params(where, thresh, box_thresh, unclip_ratio, min_size, max_candidates)
    height = positive_int(height, f"{where}: the map's height", MAX_MAP_SIDE, error=PipelineError)
    width = positive_int(width, f"{where}: the map's width", MAX_MAP_SIDE, error=PipelineError)
    params = _native().DBParams(name, height, width, values["thresh"], values["box_thresh"],
                                values["unclip_ratio"], values["min_size"], values["max_candidates"],
                                bool(picture))
    return NativeStep(_native().db_postprocess_address(), params.address, keep=params)


def db_boxes(prob, picture=None, *, name="db", thresh=DEFAULTS["thresh"], box_thresh=DEFAULTS["box_thresh"],
             unclip_ratio=DEFAULTS["unclip_ratio"], min_size=DEFAULTS["min_size"],
             max_candidates=DEFAULTS["max_candidates"]):
    """The DB boxes of one (H, W) map by the step's C code, without the GIL:
    ((N, 4, 2) float32 corners, (N,) float32 scores).  ValueError on a bad map."""
    values = check_params(f"db_postprocess step {name!r}", thresh, box_thresh, unclip_ratio, min_size,
                          max_candidates)
    prob = np.asarray(prob)
    if prob.ndim != 2 or prob.dtype != np.float32:
        raise ValueError(f"db_postprocess step {name!r}: the map must be (H, W) float32, got "
                         f"{prob.dtype} {prob.shape}")
    params = _native().DBParams(name, prob.shape[0], prob.shape[1], values["thresh"], values["box_thresh"],
                                values["unclip_ratio"], values["min_size"], values["max_candidates"],
                                picture is not None)
    return params.boxes(prob, picture)


def ctc_greedy(probs, blank=0, max_chars=None):
    """Greedy CTC over (lines, columns, classes) float32 scores, in C without
    the GIL: per column the best class (the first on a tie), repeats merged,
    blanks dropped; (lines, max_chars) int32, -1 after each line's last
    (max_chars defaults to the columns).  ValueError on a NaN."""
    probs = np.asarray(probs, np.float32)
    if probs.ndim != 3:
        raise ValueError(f"ctc: scores are (lines, columns, classes), got shape {probs.shape}")
    return _native().ctc_greedy(probs, int(blank), int(probs.shape[1] if max_chars is None else max_chars))


# ---- the numpy reference --------------------------------------------------------------


def _runs(text):
    """Runs of True per row, raster order: (y, x0, x1) int arrays."""
    h, w = text.shape
    padded = np.zeros((h, w + 2), np.int8)
    padded[:, 1:-1] = text
    edges = np.diff(padded, axis=1)
    ys, starts = np.nonzero(edges == 1)
    ye, ends = np.nonzero(edges == -1)
    order_s, order_e = np.lexsort((starts, ys)), np.lexsort((ends, ye))
    return ys[order_s], starts[order_s], ends[order_e] - 1


def _regions(ys, x0, x1):
    """Each run's region, numbered in raster order of the region's first run
    (8-connectivity: runs of adjacent rows whose columns overlap or meet at a corner)."""
    parent = list(range(len(ys)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    row_start = np.searchsorted(ys, np.arange(int(ys[-1]) + 2 if len(ys) else 1))
    for k in range(len(ys)):
        y = int(ys[k])
        if y == 0:
            continue
        for j in range(int(row_start[y - 1]), int(row_start[y])):
            if x1[j] + 1 < x0[k]:
                continue
            if x0[j] > x1[k] + 1:
                break
            a, b = root(j), root(k)
            parent[max(a, b)] = min(a, b)
    roots = [root(i) for i in range(len(ys))]
    number = {r: n for n, r in enumerate(sorted(set(roots)))}
    return np.array([number[r] for r in roots], np.int64)


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _hull(points):
    """Andrew's monotone chain over points in raster order, collinear vertices dropped."""
    if len(points) <= 1:
        return list(points)
    hull = []
    for p in points:
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) <= 0:
            hull.pop()
        hull.append(p)
    lower = len(hull) + 1
    for p in reversed(points[:-1]):
        while len(hull) >= lower and _cross(hull[-2], hull[-1], p) <= 0:
            hull.pop()
        hull.append(p)
    return hull[:-1]


def _min_area_rect(hull):
    """(ux, uy, vx, vy, a0, a1, b0, b1): over each hull edge, the rectangle along
    it; the first of the smallest area."""
    x, y = float(hull[0][0]), float(hull[0][1])
    best, best_area = (1.0, 0.0, -0.0, 1.0, x, x, y, y), 0.0
    m = len(hull)
    for i in range(m if m > 1 else 0):
        (px, py), (qx, qy) = hull[i], hull[(i + 1) % m]
        dx, dy = float(qx - px), float(qy - py)
        length = math.sqrt(dx * dx + dy * dy)
        ux, uy = dx / length, dy / length
        vx, vy = -uy, ux
        a = [float(hx) * ux + float(hy) * uy for hx, hy in hull]
        b = [float(hx) * vx + float(hy) * vy for hx, hy in hull]
        rect = (ux, uy, vx, vy, min(a), max(a), min(b), max(b))
        area = (rect[5] - rect[4]) * (rect[7] - rect[6])
        if i == 0 or area < best_area:
            best, best_area = rect, area
    return best


def _corners(rect):
    ux, uy, vx, vy, a0, a1, b0, b1 = rect
    return [(a * ux + b * vx, a * uy + b * vy) for a, b in ((a0, b0), (a1, b0), (a1, b1), (a0, b1))]


def _score(rect, prob):
    ux, uy, vx, vy, a0, a1, b0, b1 = rect
    h, w = prob.shape
    xs, ys = zip(*_corners(rect), strict=True)
    x0 = int(max(0.0, min(w - 1.0, math.floor(min(xs)))))
    x1 = int(max(0.0, min(w - 1.0, math.ceil(max(xs)))))
    y0 = int(max(0.0, min(h - 1.0, math.floor(min(ys)))))
    y1 = int(max(0.0, min(h - 1.0, math.ceil(max(ys)))))
    px, py = np.meshgrid(np.arange(x0, x1 + 1, dtype=np.float64), np.arange(y0, y1 + 1, dtype=np.float64))
    a, b = px * ux + py * uy, px * vx + py * vy
    eps = INSIDE_EPS
    inside = (a >= a0 - eps) & (a <= a1 + eps) & (b >= b0 - eps) & (b <= b1 + eps)
    values = prob[y0:y1 + 1, x0:x1 + 1].astype(np.float64)[inside]
    return float(values.sum() / len(values)) if len(values) else 0.0


def _ordered(corners):
    """PP-OCR's corner order: sorted by x then y; the upper left, upper right, lower right, lower left."""
    p = sorted(corners, key=lambda c: (c[0], c[1]))
    tl, bl = (0, 1) if p[1][1] > p[0][1] else (1, 0)
    tr, br = (2, 3) if p[3][1] > p[2][1] else (3, 2)
    return [p[tl], p[tr], p[br], p[bl]]


def db_boxes_reference(prob, picture=None, *, name="db", thresh=DEFAULTS["thresh"],
                       box_thresh=DEFAULTS["box_thresh"], unclip_ratio=DEFAULTS["unclip_ratio"],
                       min_size=DEFAULTS["min_size"], max_candidates=DEFAULTS["max_candidates"]):
    """The DB boxes of one (H, W) float32 map in numpy, by the definition the C
    step implements (docs/executor.md, "DB text boxes"): same arguments and
    results as :func:`db_boxes`."""
    prob = np.asarray(prob)
    if prob.ndim != 2 or prob.dtype != np.float32:
        raise ValueError(f"db_postprocess step {name!r}: the map must be (H, W) float32, got "
                         f"{prob.dtype} {prob.shape}")
    bad = np.argwhere(~np.isfinite(prob))
    if len(bad):
        y, x = (int(v) for v in bad[0])
        what = "NaN" if np.isnan(prob[y, x]) else "an infinity"
        raise ValueError(f"db_postprocess step {name!r}: the map holds {what} at (y={y}, x={x}); "
                         "probabilities must be finite")
    h, w = prob.shape
    pic_h, pic_w, ratio_h, ratio_w = (float(h), float(w), 1.0, 1.0) if picture is None else (
        float(v) for v in np.asarray(picture, np.float32).reshape(4))
    ys, x0, x1 = _runs(prob.astype(np.float64) > thresh)
    boxes, scores = [], []
    if len(ys) == 0:
        return np.zeros((0, 4, 2), np.float32), np.zeros(0, np.float32)
    region = _regions(ys, x0, x1)
    for r in range(min(int(region.max()) + 1, max_candidates)):
        points = []
        for k in np.nonzero(region == r)[0]:
            points.append((int(x0[k]), int(ys[k])))
            if x1[k] > x0[k]:
                points.append((int(x1[k]), int(ys[k])))
        rect = _min_area_rect(_hull(points))
        bw, bh = rect[5] - rect[4], rect[7] - rect[6]
        if min(bw, bh) < min_size:
            continue
        score = _score(rect, prob)
        if score < box_thresh:
            continue
        perimeter = 2.0 * (bw + bh)
        d = bw * bh * unclip_ratio / perimeter if perimeter > 0.0 else 0.0
        ux, uy, vx, vy, a0, a1, b0, b1 = rect
        grown = (ux, uy, vx, vy, a0 - d, a1 + d, b0 - d, b1 + d)
        if min(bw + 2.0 * d, bh + 2.0 * d) < min_size + 2.0:
            continue
        boxes.append([(min(pic_w, max(0.0, x / ratio_w)), min(pic_h, max(0.0, y / ratio_h)))
                      for x, y in _ordered(_corners(grown))])
        scores.append(score)
    return np.array(boxes, np.float32).reshape(-1, 4, 2), np.array(scores, np.float32)
