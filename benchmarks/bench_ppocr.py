"""The PP-OCR pipeline of examples/ppocr.py in timing-only mode against its modelled bound.

Run:  python -m pytest benchmarks/bench_ppocr.py -o python_files='bench_*.py' --benchmark-only -q -s

The three real PP-OCR networks (the ``rapidocr-onnxruntime`` wheel's) are
converted by sim atc for Ascend 310P3 and for Ascend 310 (a quarter of its
compute: the same networks four times slower) and loaded with
``ASCEND_SIM_COMPUTE=skip`` (docs/simulator.md, "Execution"): nothing is
computed, each execution holds its stream for the device time the converted
model carries for its gear (docs/simulator.md, "Device time of converted
models").  This is how a user looks at a real network's schedule on a small
CPU.

Timing-only outputs are zeros, so a detector map of zeros would find no text
and the classifier and recognizer would never run.  The first host step
therefore reads the map ONNX Runtime computes for the same picture (computed
once, before timing) instead of the detector's zeros: the lines, their
number and widths, and so the classifier's and recognizer's gears, are those
of the real picture.  Everything else is the example's pipeline unchanged.

Figures:

* the modelled bound: 1 / (the slowest node's device time per request),
  from a profiled pass (timing events on every step, ``stats()``'s
  ``device_ms_per_node``);
* throughput of ``run_batch`` (profiling off, depth 8, one picture per
  request) against that bound, with the post-processing in C (``native``: DB
  boxes and CTC by ascend_engine.steps.ocr, without the GIL) and in numpy
  (``python``: their references), each with one and with two host workers,
  the four engines alternated round by round: goal >= 0.9 with native steps;
* each variant's host time per request for the DB boxes alone, ``find_lines``
  (DB boxes, crops and resizes) and ``ctc`` (best of 10 calls each), to say
  when the host, not the device, is the bound.
"""

import os
import sys
import tempfile
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, HERE)

from _report import report  # noqa: E402

pytest.importorskip("onnxruntime", reason="sim atc needs onnx and onnxruntime")
PIL = pytest.importorskip("PIL")

import ppocr  # noqa: E402

from ascend_engine.steps import ocr  # noqa: E402

LINES = ["HELLO WORLD 2026", "ascend engine", "Pipeline 42", "timing only"]
REQUESTS = 120
DEPTH = 8


def real_map(det_onnx, x):
    """The detector's probability map for input ``x``, computed by ONNX Runtime."""
    import onnxruntime as ort

    return ort.InferenceSession(det_onnx, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.fixture(scope="module", params=["Ascend310P3", "Ascend310"])
def timing_only_models(request, tmp_path_factory):
    cache = os.environ.get("AE_PPOCR_MODELS") or os.path.join(tempfile.gettempdir(), "ascend-engine-ppocr")
    try:
        onnx_paths = ppocr.fetch_models(cache)
    except Exception as exc:
        pytest.skip(f"PP-OCR models unavailable ({exc})")
    om = ppocr.convert_models(onnx_paths, str(tmp_path_factory.mktemp("ppocr")), soc=request.param)
    return onnx_paths, om, request.param


def pipeline_on_map(om, prob, native):
    """examples/ppocr.py's pipeline whose first host step reads ``prob`` (the real map)."""
    real_find_lines = ppocr.find_lines
    ppocr.find_lines = lambda image, _zeros, picture, **kw: real_find_lines(image, prob, picture, **kw)
    try:
        return ppocr.build_pipeline(om, native=native)
    finally:
        ppocr.find_lines = real_find_lines


def host_ms(fn, *args, repeat=10):
    """Wall time of fn(*args) in ms, the best of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best * 1000.0


def test_ppocr_timing_only_against_bound(benchmark, timing_only_models, monkeypatch):
    onnx_paths, om, soc = timing_only_models
    image = ppocr.text_picture(LINES, (720, 400))
    x, picture = ppocr.det_input(image), ppocr.picture_row(image)
    prob = real_map(onnx_paths["det"], x)
    lines, rec, widths, _ = ppocr.find_lines(x, prob, picture)
    assert ppocr.find_lines(x, prob, picture, native=False)[0].shape == lines.shape
    rec_probs = np.random.default_rng(0).random((len(lines), ppocr.MAX_COLUMNS, 6625), np.float32)
    monkeypatch.setenv("ASCEND_SIM_COMPUTE", "skip")  # read at each model load
    pipes = {variant: pipeline_on_map(om, prob, variant == "native") for variant in ("native", "python")}
    feeds = {"image": np.repeat(x, REQUESTS, axis=0), "picture": np.repeat(picture, REQUESTS, axis=0)}

    with pipes["native"].compile(depth=DEPTH, profile=True) as engine:
        engine.run_batch(feeds, batch_size=1)
        per_node = engine.stats()["device_ms_per_node"]
    # stats() accumulates each node's device time over the pass: per request, divide by it
    models = {k: v / REQUESTS for k, v in per_node.items() if k in ("det", "cls", "rec")}
    slowest = max(models, key=models.get)
    bound = 1000.0 / models[slowest]

    db = {"thresh": ppocr.THRESHOLD, "box_thresh": ppocr.BOX_SCORE, "unclip_ratio": ppocr.UNCLIP}
    steps = {
        "db_boxes_native_ms": host_ms(lambda: ocr.db_boxes(prob[0, 0], **db)),
        "db_boxes_python_ms": host_ms(lambda: ocr.db_boxes_reference(prob[0, 0], **db)),
        "find_lines_native_ms": host_ms(ppocr.find_lines, x, prob, picture),
        "find_lines_python_ms": host_ms(lambda: ppocr.find_lines(x, prob, picture, native=False)),
        "ctc_native_ms": host_ms(ppocr.ctc_native, rec_probs),
        "ctc_python_ms": host_ms(ppocr.ctc, rec_probs),
    }

    keys = [(variant, w) for variant in pipes for w in (1, 2)]
    rates = {k: [] for k in keys}
    engines = {(v, w): pipes[v].compile(depth=DEPTH, host_workers=w) for v, w in keys}
    try:
        for engine in engines.values():
            engine.run_batch({"image": x, "picture": picture}, batch_size=1)  # warm

        def once():  # one pass of each, alternated, so all see the same machine
            for k, engine in engines.items():
                t0 = time.perf_counter()
                engine.run_batch(feeds, batch_size=1)
                rates[k].append(REQUESTS / (time.perf_counter() - t0))

        benchmark.pedantic(once, rounds=3, iterations=1)
    finally:
        for engine in engines.values():
            engine.close()
    best = {f"{v}_{w}_workers": max(r) for (v, w), r in rates.items()}
    report(
        benchmark,
        f"PP-OCR (det -> find_lines -> cls -> upright -> rec -> ctc), ASCEND_SIM_COMPUTE=skip, {soc}",
        {
            "lines_per_request": len(lines),
            **{f"device_ms_{k}": v for k, v in models.items()},
            "slowest": slowest,
            "bound_req_s": bound,
            **steps,
            **{f"engine_req_s_{k}": r for k, r in best.items()},
            **{f"engine_over_bound_{k}": r / bound for k, r in best.items()},
            **{f"rounds_req_s_{v}_{w}_workers": ", ".join(f"{r:.1f}" for r in rates[(v, w)])
               for v, w in keys},
        },
    )
    assert len(lines) == len(LINES), "the real map must find every drawn line"
