"""Native steps against their numpy versions: host CPU per request, side by side in one run.

Run:  python -m pytest benchmarks/bench_native_steps.py -o python_files='bench_*.py' --benchmark-only -q -s

Each step of ascend_engine/steps/ runs on one request of a realistic size,
called as an engine's worker calls it (``_native.call`` with ``repeat``, so
the figure is the C function's own time), against its numpy version
(ascend_engine/steps/reference.py: what a Python host step would run), both
timed with the thread CPU clock (``time.thread_time``) in interleaved rounds;
the figure is each one's median CPU time per request and their ratio.  The
outputs are checked equal (to float32 rounding where the docs say so) before
anything is timed.

* decode_boxes: a YOLOv5 head on 640x640 (25,200 boxes x 85 channels, logits);
* nms: 8,400 boxes x 80 classes, class-aware, about 900 candidates above 0.25, 300 kept at most;
* topk (k = 5) and softmax: 8 rows of 1,000 classes;
* ctc_greedy: 8 text lines of 40 steps x 6,625 classes (PP-OCR's dictionary);
* crop_resize_host: 16 boxes of a 640x480 RGB uint8 picture to 320x48, bilinear;
* warp_affine_host: the same 16 regions through rotations, bilinear.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _report import report  # noqa: E402

from ascend_engine.steps import _native as native  # noqa: E402
from ascend_engine.steps import reference as ref  # noqa: E402

ROUNDS = int(os.environ.get("NATIVE_STEPS_ROUNDS", "5"))


def yolov5_case(rng):
    strides, anchors = (8, 16, 32), (((10, 13), (16, 30), (33, 23)), ((30, 61), (62, 45), (59, 119)),
                                     ((116, 90), (156, 198), (373, 326)))
    n = sum(3 * (640 // s) ** 2 for s in strides)
    raw = rng.standard_normal((1, n, 85)).astype(np.float32)
    ctx = native.decode_context("decode", "yolov5", n, 85, 640, 640, True, strides, anchors)
    out = [np.zeros((1, n, 4), np.float32)]
    return ("decode_boxes", ctx, [raw], out,
            lambda: ref.decode_boxes(raw, "yolov5", (640, 640), strides, anchors, clip=True),
            lambda got, want: np.testing.assert_allclose(got[0], want, rtol=2e-6, atol=1e-3))


def nms_case(rng):
    n, classes = 8400, 80
    xy = rng.uniform(0, 600, (1, n, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + rng.uniform(8, 120, (1, n, 2))], axis=-1).astype(np.float32)
    scores = (rng.random((1, n, classes)) ** 1000).astype(np.float32)   # about 900 above 0.25
    ctx = native.nms_context("nms", n, classes, False, 0.45, 0.25, 300, 1)
    out = [np.zeros((300, 4), np.float32), np.zeros(300, np.float32), np.zeros(300, np.int32),
           np.zeros(300, np.int32), np.zeros(300, np.int32)]

    def same(got, want):
        k = len(want[0])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g[:k], w)

    return ("nms", ctx, [boxes, scores], out, lambda: ref.nms(boxes, scores, 0.45, 0.25, 300), same)


def topk_case(rng):
    x = rng.standard_normal((8, 1000)).astype(np.float32)
    ctx = native.rowwise_context("topk", "top", 1, 1000, 5)
    out = [np.zeros((8, 5), np.float32), np.zeros((8, 5), np.int32)]
    return ("topk", ctx, [x], out, lambda: ref.topk(x, 5),
            lambda got, want: [np.testing.assert_array_equal(g, w) for g, w in zip(got, want, strict=True)])


def softmax_case(rng):
    x = rng.standard_normal((8, 1000)).astype(np.float32)
    ctx = native.rowwise_context("softmax", "sm", 1, 1000)
    return ("softmax", ctx, [x], [np.zeros((8, 1000), np.float32)], lambda: ref.softmax(x),
            lambda got, want: np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-8))


def ctc_case(rng):
    x = rng.random((8, 40, 6625)).astype(np.float32)
    ctx = native.ctc_context("ctc", 40, 6625, 0)
    out = [np.zeros((8, 40), np.int32), np.zeros(8, np.int32), np.zeros(8, np.float32)]

    def same(got, want):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6)

    return ("ctc_greedy", ctx, [x], out, lambda: ref.ctc_greedy(x, 0), same)


def regions(rng):
    xy = rng.uniform(0, 300, (16, 2))
    return np.concatenate([xy, xy + rng.uniform([100, 20], [320, 60], (16, 2))], axis=1).astype(np.float32)


def crop_case(rng):
    picture = rng.integers(0, 256, (1, 480, 640, 3), dtype=np.uint8)
    boxes = regions(rng)
    ctx = native.crop_context("crop_resize_host", "crops", 480, 640, 3, 48, 320, True, True, False)
    return ("crop_resize_host", ctx, [picture, boxes], [np.zeros((16, 48, 320, 3), np.uint8)],
            lambda: ref.crop_resize(picture, boxes, (320, 48)),
            lambda got, want: np.testing.assert_array_equal(got[0], want))


def warp_case(rng):
    picture = rng.integers(0, 256, (1, 480, 640, 3), dtype=np.uint8)
    boxes = regions(rng)
    angle = rng.uniform(-0.2, 0.2, 16)
    sx, sy = (boxes[:, 2] - boxes[:, 0]) / 320, (boxes[:, 3] - boxes[:, 1]) / 48
    mats = np.stack([np.cos(angle) * sx, -np.sin(angle) * sy, boxes[:, 0], np.sin(angle) * sx,
                     np.cos(angle) * sy, boxes[:, 1]], axis=1).astype(np.float32)
    ctx = native.crop_context("warp_affine_host", "warp", 480, 640, 3, 48, 320, True, True, False, 0.0)
    return ("warp_affine_host", ctx, [picture, mats], [np.zeros((16, 48, 320, 3), np.uint8)],
            lambda: ref.warp_affine(picture, mats, (320, 48)),
            lambda got, want: np.testing.assert_array_equal(got[0], want))


CASES = (yolov5_case, nms_case, topk_case, softmax_case, ctc_case, crop_case, warp_case)


def cpu_per_call(fn, calls):
    t0 = time.thread_time()
    fn(calls)
    return (time.thread_time() - t0) / calls


def test_native_steps_against_numpy(benchmark):
    rng = np.random.default_rng(0)
    figures = {}
    cases = [make(rng) for make in CASES]
    for step, ctx, ins, outs, numpy_version, same in cases:
        native.call(step, ctx, ins, outs)
        same(outs, numpy_version())               # equal before timed
    times = {c[0]: ([], []) for c in cases}
    for _ in range(ROUNDS):
        for step, ctx, ins, outs, numpy_version, _same in cases:
            t_np = cpu_per_call(lambda k, f=numpy_version: [f() for _ in range(k)], 3)
            calls = max(3, min(2000, int(0.05 / max(t_np / 20, 1e-6))))
            t_c = cpu_per_call(lambda k, s=step, c=ctx, i=ins, o=outs: native.call(s, c, i, o, repeat=k),
                               calls)
            times[step][0].append(t_c)
            times[step][1].append(t_np)
    for step, (t_c, t_np) in times.items():
        c, n = statistics.median(t_c), statistics.median(t_np)
        figures[f"{step}: native CPU us/request"] = c * 1e6
        figures[f"{step}: numpy CPU us/request"] = n * 1e6
        figures[f"{step}: numpy / native"] = n / c
    step, ctx, ins, outs, _, _ = cases[1]
    benchmark.pedantic(lambda: native.call(step, ctx, ins, outs), rounds=20)
    report(benchmark, "native steps: host CPU per request, native against numpy", figures)
