"""Benchmarks of pipelines with dynamic shapes: every figure a ratio measured side by side in one run.

Run:  python -m pytest benchmarks/bench_dynamic_shapes.py -o python_files='bench_*.py' --benchmark-only -q -s

The graphs are the pipeline tests' (tests/helpers/shaped.py): per-pixel
models, so a result can be checked exactly against the models run by hand.

* (a) two stages: an image-size detector (2 ms of device time per execution,
  gears 8x8, 16x16, 16x32, 32x32) feeding a dims-gear recognizer (1 ms),
  requests of random image sizes (1..32 x 1..32) put in with
  ``engine.submit`` at depth 8.  Throughput against the bound 1 / 2 ms (the
  slowest model), and against the two ``Model`` objects called one after the
  other from Python.  Target: >= 0.9 of the bound.  The sequential calls
  take 2 + 1 ms of device time per request plus their host time h, the
  engine at best 2 ms, so engine / sequential is at most (3 ms + h) / 2 ms:
  1.5 on a device with no host cost, not 2.
* (b) reshaping OCR: the same detector -> a Python step (rows="any") cutting
  0..5 text-line crops as wide as the image -> a line reader with width
  gears 8, 16, 32 (0.3 ms per execution, one crop per execution).  Against
  the bound (see ``ocr_bound``) and against the sequential calls (detector
  Model, the step, the line reader Model per crop).
* (c) host CPU per request of ``submit`` with zero device latency: the
  shaped two-stage pipeline against the same chain saved with static shapes
  at 16x16, every request at the 16x16 gears (so the simulator's kernels,
  whose CPU time counts, do the same work in each case): shaped requests of
  16x16 (a gear: no padding), of a pool of four smaller sizes (padded; the
  per-shape cache hits), of each of the 192 sizes that run the 16x16 gear
  given to a fresh engine (the cache misses on every request), and the same
  sizes again (it hits).  Two views: the CPU time of every thread of the
  process, and the calling thread's time in the ``submit`` calls alone.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
Results of the pipelines are checked exactly against the by-hand calls.
"""

import os
import statistics
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)

from _report import report  # noqa: E402
from helpers.shaped import DET_GEARS, LINE_WIDTHS, REC_GEARS, detector, image, line_reader, recognizer  # noqa: E402

import ascend_engine as ae  # noqa: E402

DEPTH = 8
DETECTOR_US, RECOGNIZER_US, LINE_US = 2000, 1000, 300
MAX_CROPS = 5
ROUNDS = 5            # interleaved rounds per figure; the median is reported, the range beside it
STATIC_HW = (16, 16)  # the one size of the static chain in (c), a detector gear


def spread(values):
    """'min..max' of a figure's rounds."""
    return f"{min(values):.4g}..{max(values):.4g}"


def random_sizes(rng, n):
    """n (height, width) image sizes, each in 1..32 (every detector gear gets some)."""
    return [(int(rng.integers(1, 33)), int(rng.integers(1, 33))) for _ in range(n)]


def submit_rate(engine, feeds):
    """Requests/s of ``engine.submit`` for every feed (all put in at once), to the last result."""
    t0 = time.perf_counter()
    futures = [engine.submit(f) for f in feeds]
    results = [f.result(timeout=300) for f in futures]
    return len(feeds) / (time.perf_counter() - t0), results


def against_sequential(engine, feeds, images, n_seq, by_hand, benchmark):
    """ROUNDS of the engine's submit rate over ``feeds`` and the rate of
    ``by_hand`` (the models called in sequence) over the first ``n_seq``
    images, interleaved so a noisy moment hits both; the last round's results
    are checked exactly against by_hand's.  Returns (rates, sequential rates,
    the engine's results)."""
    submit_rate(engine, feeds[:32])                    # warm-up: slots, gears, caches
    by_hand(images[:8])
    rates, seq_rates = [], []
    for _ in range(ROUNDS):
        rate, results = submit_rate(engine, feeds)
        rates.append(rate)
        t0 = time.perf_counter()
        want = by_hand(images[:n_seq])
        seq_rates.append(n_seq / (time.perf_counter() - t0))
    for k, (got, w) in enumerate(zip(results, want, strict=False)):
        check_exact(got, w, f"request {k} {images[k].shape}")
    benchmark.pedantic(submit_rate, args=(engine, feeds[:100]), rounds=2, iterations=1)
    return rates, seq_rates, results


def check_exact(got, want, what):
    for name, w in want.items():
        assert got[name].shape == w.shape, f"{name} at {what}: {got[name].shape} != {w.shape}"
        np.testing.assert_array_equal(got[name], w, err_msg=f"{name} at {what}")


# ---- (a) two stages: image-size detector -> dims-gear recognizer -----------------------------


@pytest.fixture(scope="module")
def two_stage_paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("shaped2")
    return (detector().save(str(d / "det.om"), hw_sizes=DET_GEARS, latency_us=DETECTOR_US),
            recognizer().save(str(d / "rec.om"), dims=REC_GEARS, latency_us=RECOGNIZER_US))


def two_stage(det_path, rec_path, depth=DEPTH, shape=(1, 3, -1, -1)):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", shape)
    feat, _energy = pipe.model(det_path, x, name="det")
    probs, score = pipe.model(rec_path, feat, name="rec")
    pipe.output("probs", probs)
    pipe.output("score", score)
    return pipe.compile(depth=depth)


def two_stage_by_hand(det, rec, images):
    """The sequential baseline: the detector Model, then the recognizer Model, per request."""
    out = []
    for x in images:
        r = rec(feat=det(image=x)["feat"])
        out.append({"probs": r["probs"], "score": r["score"]})
    return out


def test_two_stage_shaped_throughput(benchmark, two_stage_paths):
    det_path, rec_path = two_stage_paths
    rng = np.random.default_rng(1)
    n, n_seq = 600, 150
    images = [image(rng, h, w) for h, w in random_sizes(rng, n)]
    feeds = [{"image": x} for x in images]
    det, rec = ae.Model.load(det_path, device=0), ae.Model.load(rec_path, device=0)
    with two_stage(det_path, rec_path) as engine:
        rates, seq_rates, results = against_sequential(
            engine, feeds, images, n_seq, lambda x: two_stage_by_hand(det, rec, x), benchmark)
    det.close()
    rec.close()
    bound = 1e6 / max(DETECTOR_US, RECOGNIZER_US)
    rate, seq_rate = statistics.median(rates), statistics.median(seq_rates)
    report(benchmark, "two stages, random image sizes: detector (hw, 2 ms) -> recognizer (dims, 1 ms), "
                      "submit at depth 8", {
        "bound_req_s": bound, "engine_req_s": rate, "engine_over_bound": rate / bound,
        "engine_over_bound_rounds": spread([r / bound for r in rates]),
        "sequential_req_s": seq_rate, "engine_over_sequential": rate / seq_rate,
        "engine_over_sequential_rounds": spread([a / b for a, b in zip(rates, seq_rates, strict=True)]),
        "sequential_ceiling": (DETECTOR_US + RECOGNIZER_US) / max(DETECTOR_US, RECOGNIZER_US),
    })


# ---- (b) reshaping OCR: detector -> crop step -> line reader per crop -----------------------


def cut_lines(feat):
    """The host step: (h + 2 w) % 6 text-line crops (0..5) of 8 x w x 4, each a
    band of the detector's features (repeated where the image is under 8 rows)
    scaled by its line number; the crop width is the image's, so it is known
    only per request."""
    _, h, w, _ = feat.shape
    n = (h + 2 * w) % (MAX_CROPS + 1)
    crops = np.empty((n, 8, w, 4), np.float32)
    for i in range(n):
        crops[i] = np.resize(feat[0], (8, w, 4)) * np.float32(i + 1)
    return crops


@pytest.fixture(scope="module")
def ocr_paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("ocr")
    return (detector().save(str(d / "det.om"), hw_sizes=DET_GEARS, latency_us=DETECTOR_US),
            line_reader(1).save(str(d / "line.om"), dims=[[w] for w in LINE_WIDTHS], latency_us=LINE_US))


def ocr(det_path, line_path, depth=DEPTH):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, _energy = pipe.model(det_path, x, name="det")
    crops = pipe.host(cut_lines, feat, outputs=[("crops", "float32", (-1, 8, -1, 4))], rows="any",
                      max_rows=MAX_CROPS, name="crop")
    probs, score = pipe.model(line_path, crops, name="line")
    pipe.output("probs", probs)
    pipe.output("score", score)
    return pipe.compile(depth=depth)


def ocr_by_hand(det, line, images):
    """The sequential baseline: detector Model, the step, the line reader Model once per crop."""
    out = []
    for x in images:
        crops = cut_lines(det(image=x)["feat"])
        reads = [line(crop=crops[i:i + 1]) for i in range(len(crops))]
        w = x.shape[3]
        empty = {"probs": np.zeros((0, 8, w, 5), np.float32), "score": np.zeros((0, 8, w), np.float32)}
        out.append({k: np.concatenate([r[k] for r in reads]) if reads else empty[k] for k in empty})
    return out


def step_ms(det, images):
    """Mean time of one call of the crop step on these images' features (least disturbed of 5 passes)."""
    feats = [det(image=x)["feat"] for x in images]
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for f in feats:
            cut_lines(f)
        best = min(best, (time.perf_counter() - t0) / len(feats))
    return best * 1e3


def ocr_bound(crop_counts, host_ms):
    """Requests/s no schedule can beat, and the stage that sets it.

    The detector's stream, the line reader's stream and the host step's
    worker each do one thing at a time, and a request's crops cannot be read
    before its detection, but nothing stops request k's crops being read
    while request k + 1 is detected.  Over N requests the run lasts at least
    each resource's total busy time: N x 2 ms, (sum of crops) x 0.3 ms,
    N x (the step's time).  So the bound per request is the largest of the
    per-request means: max(2 ms, mean crops x 0.3 ms, step) -- a max of
    sums, not a sum of per-request maxes (which would charge a request with
    many crops as if the detector waited for its line reads).  Here every
    request has at most 5 crops, 1.5 ms of reading, under the detector's
    2 ms, so both agree: the detector sets the bound.
    """
    stages = {"detector": DETECTOR_US / 1000, "line_reader": statistics.mean(crop_counts) * LINE_US / 1000,
              "host_step": host_ms}
    slowest = max(stages, key=stages.get)
    return 1000 / stages[slowest], slowest, stages


def test_reshaping_ocr_throughput(benchmark, ocr_paths):
    det_path, line_path = ocr_paths
    rng = np.random.default_rng(2)
    n, n_seq = 600, 150
    sizes = random_sizes(rng, n)
    images = [image(rng, h, w) for h, w in sizes]
    feeds = [{"image": x} for x in images]
    det, line = ae.Model.load(det_path, device=0), ae.Model.load(line_path, device=0)
    host_ms = step_ms(det, images[:64])
    with ocr(det_path, line_path) as engine:
        rates, seq_rates, results = against_sequential(
            engine, feeds, images, n_seq, lambda x: ocr_by_hand(det, line, x), benchmark)
    det.close()
    line.close()
    counts = [len(r["probs"]) for r in results]
    bound, slowest, stages = ocr_bound(counts, host_ms)
    rate, seq_rate = statistics.median(rates), statistics.median(seq_rates)
    report(benchmark, "reshaping OCR, random image sizes: detector (hw, 2 ms) -> crop step (0..5 crops) -> "
                      "line reader (width gears, 0.3 ms per crop), submit at depth 8", {
        "mean_crops": statistics.mean(counts), "max_crops": max(counts),
        "host_step_ms": host_ms, "line_reader_mean_ms": stages["line_reader"], "slowest_stage": slowest,
        "bound_req_s": bound, "engine_req_s": rate, "engine_over_bound": rate / bound,
        "engine_over_bound_rounds": spread([r / bound for r in rates]),
        "sequential_req_s": seq_rate, "engine_over_sequential": rate / seq_rate,
        "engine_over_sequential_rounds": spread([a / b for a, b in zip(rates, seq_rates, strict=True)]),
        "sequential_ceiling": sum(stages.values()) / max(stages.values()),
    })


# ---- (c) host CPU per request: shaped against static --------------------------------------


@pytest.fixture(scope="module")
def zero_latency_paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostcpu")
    return {
        "shaped": (detector().save(str(d / "det.om"), hw_sizes=DET_GEARS),
                   recognizer().save(str(d / "rec.om"), dims=REC_GEARS)),
        "static": (detector(*STATIC_HW, name="det_static").save(str(d / "det_static.om")),
                   recognizer("rec_static", *STATIC_HW).save(str(d / "rec_static.om"))),
    }


def cpu_per_request(engine, feeds):
    """(process CPU seconds per request -- every thread: the caller, the
    completer, the simulator's streams --, the calling thread's CPU seconds
    per request spent in the submit calls alone) through ``submit``."""
    c0 = time.process_time()
    t0 = time.thread_time()
    futures = [engine.submit(f) for f in feeds]
    caller = time.thread_time() - t0
    for f in futures:
        f.result(timeout=300)
    return (time.process_time() - c0) / len(feeds), caller / len(feeds)


def gear_sizes(gear):
    """Every (h, w) whose smallest holding detector gear is ``gear``."""
    return [(h, w) for h in range(1, 33) for w in range(1, 33)
            if min((g for g in DET_GEARS if g[0] >= h and g[1] >= w), key=lambda g: g[0] * g[1]) == gear]


def test_host_cpu_shaped_against_static(benchmark, zero_latency_paths):
    """Every shaped request here runs the 16x16 gears, as the static chain
    does, so the simulator's kernels (which run on its stream threads and
    count in the process's CPU time) do the same work in every case and the
    differences are the host's: resolving the gears, padding, cutting."""
    shaped, static = zero_latency_paths["shaped"], zero_latency_paths["static"]
    rng = np.random.default_rng(3)
    n, fresh_engines = 2048, 6
    one_size = [{"image": image(rng, *STATIC_HW)} for _ in range(64)]
    same = [one_size[k % len(one_size)] for k in range(n)]
    pool_sizes = [(9, 10), (12, 15), (16, 13), (5, 16)]        # padded to the 16x16 gear
    pool_images = [image(rng, h, w) for h, w in pool_sizes for _ in range(16)]
    pool = [{"image": pool_images[k % len(pool_images)]} for k in range(n)]
    sizes = gear_sizes(STATIC_HW)                              # the 192 sizes that run the 16x16 gear
    distinct = [[{"image": image(rng, int(h), int(w))} for h, w in rng.permutation(sizes)]
                for _ in range(fresh_engines)]

    def misses_then_hits():
        """Each size new to a fresh engine (its per-shape cache empty), then the same sizes again."""
        miss, hit = [], []
        for feeds in distinct:
            with two_stage(*shaped) as fresh:
                fresh.run(same[0])
                miss.append(cpu_per_request(fresh, feeds))
                hit.append(cpu_per_request(fresh, feeds))
        return tuple(tuple(statistics.mean(v) for v in zip(*m, strict=True)) for m in (miss, hit))

    with two_stage(*static, shape=(1, 3, *STATIC_HW)) as static_engine, two_stage(*shaped) as shaped_engine:
        want = static_engine.run(same[0])
        check_exact(shaped_engine.run(same[0]), want, "16x16 shaped against static")
        for e in (static_engine, shaped_engine):   # warm-up (and the shaped cache holds the pool)
            cpu_per_request(e, same[:256])
        cpu_per_request(shaped_engine, pool[:256])
        misses_then_hits()
        figures = {k: [] for k in ("static", "same", "pool", "miss", "hit")}
        for _ in range(ROUNDS):   # interleaved, so a noisy moment hits all
            figures["static"].append(cpu_per_request(static_engine, same))
            figures["same"].append(cpu_per_request(shaped_engine, same))
            figures["pool"].append(cpu_per_request(shaped_engine, pool))
            miss, hit = misses_then_hits()
            figures["miss"].append(miss)
            figures["hit"].append(hit)
        benchmark.pedantic(cpu_per_request, args=(shaped_engine, pool[:512]), rounds=2, iterations=1)
    # [k][0]: every thread, [k][1]: the caller's submit calls
    us = {k: [statistics.median(r[j] for r in v) * 1e6 for j in (0, 1)] for k, v in figures.items()}

    def ratio_rounds(a, b, j=0):
        return spread([x[j] / y[j] for x, y in zip(figures[a], figures[b], strict=True)])

    out = {"static_us": us["static"][0], "static_caller_us": us["static"][1]}
    for key, label in (("same", "shaped_16x16"), ("pool", "shaped_pool4"), ("miss", "shaped_new_size"),
                       ("hit", "shaped_same_sizes_again")):
        out[f"{label}_us"] = us[key][0]
        out[f"{label}_over_static"] = us[key][0] / us["static"][0]
        out[f"{label}_over_static_rounds"] = ratio_rounds(key, "static")
        out[f"{label}_caller_us"] = us[key][1]
        out[f"{label}_caller_over_static"] = us[key][1] / us["static"][1]
    out["miss_over_hit"] = us["miss"][0] / us["hit"][0]
    out["miss_over_hit_rounds"] = ratio_rounds("miss", "hit")
    out["miss_over_hit_caller"] = us["miss"][1] / us["hit"][1]
    report(benchmark, "host CPU per request through submit (zero device latency, depth 8, all at the "
                      "16x16 gears): every thread, and the caller's submit calls alone", out)
