"""Host steps between models: rows that change per request, failures that stay
with their request, native steps, and a dependency that must not be dropped.

The detector -> host step -> classifier pipeline here is checked against the
same pipeline in plain numpy, request by request."""

import asyncio
import ctypes
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest
from ascend_engine._gears import chunk_plan, chunk_span
from helpers.scale import scaled

import ascend_engine as ae
from ascend_engine import sim

BOXES = 32          # candidate boxes per image
FEAT = 4            # features per box
CLASSES = 3
CLS_GEARS = (1, 2, 4, 8)


class Detector:
    """x (-1, 8) -> scores (-1, 32) in (0, 1), features (-1, 128): a numpy oracle beside its model."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.w_scores = rng.standard_normal((8, BOXES)).astype(np.float32)
        self.w_feats = rng.standard_normal((8, BOXES * FEAT)).astype(np.float32)
        self.w_cls = rng.standard_normal((FEAT, CLASSES)).astype(np.float32)

    def save(self, folder, det_latency_us=0, cls_latency_us=0, cls_gears=CLS_GEARS):
        g = sim.Graph("det")
        x = g.input("x", "float32", (-1, 8))
        g.output("scores", g.sigmoid(g.matmul(x, g.const(self.w_scores))))
        g.output("feats", g.matmul(x, g.const(self.w_feats)))
        det = folder / f"det-{det_latency_us}.om"
        g.save(str(det), batch_sizes=[1, 2, 4], latency_us=det_latency_us)
        c = sim.Graph("cls")
        f = c.input("f", "float32", (-1, FEAT))
        c.output("logits", c.matmul(f, c.const(self.w_cls)))
        cls = folder / f"cls-{cls_latency_us}-{len(cls_gears)}.om"
        c.save(str(cls), batch_sizes=list(cls_gears), latency_us=cls_latency_us)
        return str(det), str(cls)

    def reference(self, x, threshold):
        scores = 1.0 / (1.0 + np.exp(-(x @ self.w_scores)))
        kept = keep_boxes(scores.astype(np.float32), (x @ self.w_feats).astype(np.float32), threshold)
        return kept @ self.w_cls


def keep_boxes(scores, feats, threshold):
    """The host step: the features of the boxes scoring above `threshold`, image by image."""
    s = scores.reshape(-1)
    f = feats.reshape(-1, FEAT)
    return np.ascontiguousarray(f[s > threshold], dtype=np.float32)


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    d = Detector()
    d.folder = tmp_path_factory.mktemp("hoststeps")
    return d


def detector_pipeline(det_path, cls_path, step, max_rows=4 * BOXES, rows="any", **kw):
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 8))
    scores, feats = pipe.model(det_path, x, name="det")
    crops = pipe.host(step, scores, feats, outputs=[("crops", "float32", (-1, FEAT))], rows=rows,
                      max_rows=max_rows, name="keep", **kw)
    pipe.output("logits", pipe.model(cls_path, crops, name="cls"))
    pipe.output("scores", scores)
    return pipe


def threshold_step(threshold):
    return lambda scores, feats: keep_boxes(scores, feats, threshold)


# ---- the gear rule ------------------------------------------------------------------


def test_chunks_follow_the_gear_policy():
    assert chunk_plan(CLS_GEARS, "upper", 13) == [(8, 8), (8, 5)]
    assert chunk_plan(CLS_GEARS, "lower", 13) == [(8, 8), (4, 4), (1, 1)]
    assert chunk_plan(CLS_GEARS, "nearest", 13) == [(8, 8), (4, 4), (1, 1)]
    assert chunk_plan(CLS_GEARS, "nearest", 15) == [(8, 8), (8, 7)]   # 7: 8 is nearer than 4
    assert chunk_plan(CLS_GEARS, "nearest", 6) == [(8, 6)]             # a tie goes up
    assert chunk_plan((4,), "lower", 5) == [(4, 4), (4, 1)]           # no gear below: padded
    assert chunk_plan(CLS_GEARS, "upper", 0) == []
    # the padding of any chunk sequence stays inside the span the planner sizes buffers by
    for policy in ("upper", "lower", "nearest"):
        for gears, max_rows in ((CLS_GEARS, 40), ((4,), 9), ((3, 5), 17)):
            span = chunk_span(gears, policy, max_rows)
            for rows in range(1, max_rows + 1):
                start = 0
                for gear, take in chunk_plan(gears, policy, rows):
                    assert take <= gear and start + gear <= span
                    start += take
                assert start == rows
    assert chunk_span((4,), "upper", 9) == 12


# ---- exact results ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 8])
@pytest.mark.parametrize("policy", ["upper", "lower", "nearest"])
def test_detector_classifier_matches_numpy(detector, policy, depth):
    """0 to 40+ surviving boxes per request (beyond the classifier's largest
    gear of 8), every request checked against numpy."""
    det, cls = detector.save(detector.folder)
    rng = np.random.default_rng(depth * 10 + len(policy))
    threshold = 0.8
    engine = detector_pipeline(det, cls, threshold_step(threshold)).compile(depth=depth, gear_policy=policy)
    counts = set()
    with engine:
        for _ in range(scaled(60)):
            images = int(rng.integers(1, 5))
            x = (rng.standard_normal((images, 8)) * rng.choice([0.1, 1.0, 3.0])).astype(np.float32)
            out = engine.run({"x": x})
            expected = detector.reference(x, threshold)
            counts.add(len(expected))
            assert out["logits"].shape == expected.shape
            np.testing.assert_allclose(out["logits"], expected, rtol=1e-4, atol=1e-4)
            assert out["scores"].shape == (images, BOXES)
    assert 0 in counts and max(counts) > 2 * CLS_GEARS[-1]


def test_concurrent_callers_each_get_their_rows(detector):
    det, cls = detector.save(detector.folder, det_latency_us=300, cls_latency_us=200)
    engine = detector_pipeline(det, cls, threshold_step(0.7)).compile(depth=4, host_workers=2)
    rng = np.random.default_rng(5)
    feeds = [rng.standard_normal((int(rng.integers(1, 5)), 8)).astype(np.float32) for _ in range(scaled(200))]
    with engine:
        futures = [engine.submit({"x": x}) for x in feeds]
        for x, f in zip(feeds, futures, strict=True):
            np.testing.assert_allclose(f.result(timeout=60)["logits"], detector.reference(x, 0.7),
                                       rtol=1e-4, atol=1e-4)

        async def main():
            outs = await asyncio.gather(*(engine.run_async({"x": x}) for x in feeds[:50]))
            for x, out in zip(feeds[:50], outs, strict=True):
                np.testing.assert_allclose(out["logits"], detector.reference(x, 0.7), rtol=1e-4, atol=1e-4)

        asyncio.run(main())


def test_run_batch_and_run_many_give_per_request_rows(detector):
    det, cls = detector.save(detector.folder)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((11, 8)).astype(np.float32)
    with detector_pipeline(det, cls, threshold_step(0.75)).compile(depth=2) as engine:
        out = engine.run_batch({"x": x}, batch_size=3)
        assert isinstance(out["logits"], list) and len(out["logits"]) == 4
        for k, logits in enumerate(out["logits"]):
            expected = detector.reference(x[3 * k:3 * k + 3], 0.75)
            np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
        assert out["scores"].shape == (11, BOXES)
        # a request above max_batch (4) is split, and its rows come back joined
        many = list(engine.run_many([{"x": x[:2]}, {"x": x[2:9]}]))
        np.testing.assert_allclose(many[1]["logits"], detector.reference(x[2:9], 0.75), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(engine.run({"x": x[2:9]})["logits"], detector.reference(x[2:9], 0.75),
                                   rtol=1e-4, atol=1e-4)


def test_zero_rows_give_empty_outputs(detector):
    det, cls = detector.save(detector.folder)
    x = np.ones((2, 8), np.float32)
    with detector_pipeline(det, cls, threshold_step(2.0)).compile(depth=2) as engine:
        for _ in range(3):
            out = engine.run({"x": x})
            assert out["logits"].shape == (0, CLASSES) and out["logits"].dtype == np.float32
            np.testing.assert_allclose(out["scores"], 1 / (1 + np.exp(-(x @ detector.w_scores))), rtol=1e-5)
        assert engine.stats()["requests"] == 3 and engine.stats()["failures"] == 0


GEAR_LOG = """
import json, os, sys
import numpy as np
import ascend_engine as ae
from ascend_engine import sim

folder = sys.argv[1] if len(sys.argv) > 1 else os.environ["FOLDER"]
eye = np.eye(4, dtype=np.float32)
for name, gears in (("first", [1, 2, 4]), ("second", [1, 2, 4, 8])):
    g = sim.Graph(name)
    g.output("y", g.matmul(g.input("x", "float32", (-1, 4)), g.const(eye)))
    g.save(os.path.join(folder, name + ".om"), batch_sizes=gears)

def repeat(x):   # x[0, 0] rows, all equal to the first row
    return np.repeat(x[:1], int(x[0, 0]), axis=0)

results = {}
for policy in ("upper", "lower", "nearest"):
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 4))
    h = pipe.host(repeat, pipe.model(os.path.join(folder, "first.om"), x, name="first"),
                  outputs=[("y", "float32", (-1, 4))], rows="any", max_rows=20, name="repeat")
    pipe.output("y", pipe.model(os.path.join(folder, "second.om"), h, name="second"))
    with pipe.compile(depth=2, gear_policy=policy) as engine:
        second = engine.plan.nodes[2].model.model_id
        print("MARK", policy, second, flush=True)
        for rows in (13, 0, 3, 20):
            out = engine.run({"x": np.full((1, 4), rows, np.float32)})["y"]
            assert out.shape == (rows, 4) and (out == rows).all(), (policy, rows, out)
            print("ROWS", rows, flush=True)
"""


def test_models_after_a_step_run_the_gears_of_the_policy(tmp_path):
    """The simulator's call log shows every gear the second model ran: per
    request, the chunks of the policy, and nothing for zero rows."""
    from helpers import simlib

    log = tmp_path / "calls.log"
    proc = simlib.run_python(GEAR_LOG, env={"ASCEND_SIM_LOG": str(log), "FOLDER": str(tmp_path),
                                             "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    markers = [line.split() for line in proc.stdout.splitlines() if line.startswith(("MARK", "ROWS"))]
    calls = [line for line in log.read_text().splitlines() if "aclmdlSetDynamicBatchSize(" in line]
    # the log is in call order; split it at each policy's engine by the model id
    gears = {}
    for policy, model_id in ((m[1], m[2]) for m in markers if m[0] == "MARK"):
        gears[policy] = [int(c.split(" batch ")[1].split(")")[0]) for c in calls if f"(id {model_id} " in c]
    expected = {
        "upper": [8, 8] + [] + [4] + [8, 8, 4],
        "lower": [8, 4, 1] + [] + [2, 1] + [8, 8, 4],
        "nearest": [8, 4, 1] + [] + [4] + [8, 8, 4],
    }
    assert gears == expected


def test_a_static_model_after_a_step_runs_padded_chunks(detector, tmp_path):
    det, _ = detector.save(detector.folder)
    c = sim.Graph("cls4")
    f = c.input("f", "float32", (4, FEAT))
    c.output("logits", c.matmul(f, c.const(detector.w_cls)))
    cls = tmp_path / "cls4.om"
    c.save(str(cls))
    rng = np.random.default_rng(2)
    with detector_pipeline(det, str(cls), threshold_step(0.6)).compile(depth=3) as engine:
        for _ in range(20):
            x = rng.standard_normal((int(rng.integers(1, 5)), 8)).astype(np.float32)
            np.testing.assert_allclose(engine.run({"x": x})["logits"], detector.reference(x, 0.6),
                                       rtol=1e-4, atol=1e-4)


def test_a_step_with_rows_same_between_two_models(build):
    from helpers.pipelines import dense

    a, b = build(dense(1), "d1"), build(dense(2), "d2")
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    h = pipe.host(lambda t: (t * 2.0 + 1.0,), pipe.model(a.path, x, name="a"),
                  outputs=[("y", "float32", (-1, 16))], name="affine")
    pipe.output("y", pipe.model(b.path, h, name="b"))
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((21, 16)).astype(np.float32)
    with pipe.compile(depth=4) as engine:
        out = engine.run_batch({"x": xs}, batch_size=5)["y"]
    np.testing.assert_allclose(out, b.ref(x=a.ref(x=xs) * 2.0 + 1.0), rtol=1e-5, atol=1e-5)


# ---- failures -----------------------------------------------------------------------


def test_a_step_that_raises_fails_its_request_alone(detector):
    det, cls = detector.save(detector.folder)

    def step(scores, feats):
        if scores.shape[0] == 3:
            raise ValueError(f"three images are not allowed ({scores.shape})")
        return keep_boxes(scores, feats, 0.7)

    rng = np.random.default_rng(4)
    feeds = [rng.standard_normal((1 + k % 4, 8)).astype(np.float32) for k in range(24)]
    with detector_pipeline(det, cls, step).compile(depth=4) as engine:
        futures = [engine.submit({"x": x}) for x in feeds]
        for x, f in zip(feeds, futures, strict=True):
            if len(x) == 3:
                with pytest.raises(ae.HostStepError) as info:
                    f.result(timeout=60)
                assert info.value.step == "keep"
                assert isinstance(info.value.__cause__, ValueError)
                assert "three images are not allowed ((3, 32))" in str(info.value)
                assert "Traceback" in str(info.value) and "in step" in str(info.value)
            else:
                np.testing.assert_allclose(f.result(timeout=60)["logits"], detector.reference(x, 0.7),
                                           rtol=1e-4, atol=1e-4)
        assert engine.stats()["failures"] == 6
        # run_many: the failure is that request's, the others are delivered
        results = []
        gen = engine.run_many({"x": x} for x in feeds[:4])
        for k in range(4):
            if k == 2:
                with pytest.raises(ae.HostStepError):
                    next(gen)
                gen = engine.run_many({"x": x} for x in feeds[3:4])
            results.append(next(gen) if k != 2 else None)
        expected = detector.reference(feeds[3], 0.7)
        np.testing.assert_allclose(results[3]["logits"], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad, message", [
    (lambda s, f: f.reshape(-1, FEAT)[:2].astype(np.float64),
     "host step 'keep' output 'crops': expected float32 of shape (rows, 4), got float64 of shape (2, 4)"),
    (lambda s, f: np.zeros((2, 5), np.float32),
     "host step 'keep' output 'crops': expected float32 of shape (rows, 4), got float32 of shape (2, 5)"),
    (lambda s, f: np.zeros((9, 4), np.float32), "output 'crops': returned 9 rows; its max_rows is 8"),
    (lambda s, f: (np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32)),
     "host step 'keep' returned 2 value(s); it declares 1 output(s): crops"),
    (lambda s, f: [1, 2], "host step 'keep' returned a list of 2 element(s); it declares 1 output(s): crops, "
     "so it must return one numpy array"),
    (lambda s, f: None, "host step 'keep' output 'crops': expected a numpy array, got NoneType"),
])
def test_wrong_step_outputs_name_the_step_and_output(detector, bad, message):
    det, cls = detector.save(detector.folder)
    with detector_pipeline(det, cls, bad, max_rows=8).compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError) as info:
            engine.run({"x": np.ones((1, 8), np.float32)})
        assert message in str(info.value)
        assert info.value.request == 0 and info.value.__cause__ is None
        assert engine.stats()["failures"] == 1


def test_a_step_whose_outputs_disagree_on_rows_fails_its_request(detector, tmp_path):
    det, _ = detector.save(detector.folder)
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 8))
    scores, feats = pipe.model(det, x, name="det")
    def uneven(s, f):
        return np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32)

    a, b = pipe.host(uneven, scores, feats,
                     outputs=[("a", "float32", (-1, 4)), ("b", "float32", (-1, 4))], rows="any", max_rows=8,
                     name="two")
    pipe.output("a", a)
    pipe.output("b", b)
    with pipe.compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError,
                           match="host step 'two': its outputs have different numbers of rows "
                           "\\('a' 2, 'b' 3\\); they must agree"):
            engine.run({"x": np.ones((1, 8), np.float32)})


def test_rows_same_step_must_keep_its_rows(build):
    from helpers.pipelines import dense

    a = build(dense(1), "d1")
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    h = pipe.host(lambda t: t[:1].copy(), pipe.model(a.path, x, name="a"),
                  outputs=[("y", "float32", (-1, 16))], name="cut")
    pipe.output("y", pipe.model(a.path, h, name="b"))
    with pipe.compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError, match="host step 'cut' returned 1 rows; rows=\"same\" needs 3"):
            engine.run({"x": np.ones((3, 16), np.float32)})
        assert engine.run({"x": np.ones((1, 16), np.float32)})["y"].shape == (1, 16)


def test_a_dropped_dependency_is_caught(detector):
    """Without the step's wait for the detector, it reads the detector's
    output before it is written: the results must be wrong, and the test
    comparing with numpy must see it (the safe engine matches, above)."""
    det, cls = detector.save(detector.folder, det_latency_us=3000)
    rng = np.random.default_rng(6)
    feeds = [rng.standard_normal((2, 8)).astype(np.float32) for _ in range(12)]
    wrong = 0
    with detector_pipeline(det, cls, threshold_step(0.7)).compile(depth=4, _unsafe_skip_waits=True) as engine:
        futures = [engine.submit({"x": x}) for x in feeds]
        for x, f in zip(feeds, futures, strict=True):
            got, expected = f.result(timeout=60)["logits"], detector.reference(x, 0.7)
            wrong += got.shape != expected.shape or not np.allclose(got, expected, atol=1e-4)
    assert wrong > 0


def test_a_step_past_the_timeout_fails_on_time_and_the_engine_recovers(detector):
    det, cls = detector.save(detector.folder)
    release = threading.Event()

    def slow(scores, feats):
        release.wait(10)
        return keep_boxes(scores, feats, 0.7)

    x = np.ones((1, 8), np.float32)
    with detector_pipeline(det, cls, slow).compile(depth=2, timeout=0.3) as engine:
        t0 = time.monotonic()
        with pytest.raises(ae.AclTimeoutError, match="a host step still holds it"):
            engine.run({"x": x})
        assert time.monotonic() - t0 < 5.0   # bounded by the timeout, not by the step
        release.set()
        np.testing.assert_allclose(engine.run({"x": x})["logits"], detector.reference(x, 0.7), rtol=1e-4,
                                   atol=1e-4)


def test_close_while_a_step_runs_waits_for_it(detector):
    det, cls = detector.save(detector.folder)
    started = threading.Event()

    def slow(scores, feats):
        started.set()
        time.sleep(0.2)
        return keep_boxes(scores, feats, 0.7)

    engine = detector_pipeline(det, cls, slow).compile(depth=2)
    future = engine.submit({"x": np.ones((1, 8), np.float32)})
    assert started.wait(10)
    engine.close()
    assert future.result(timeout=10)["logits"].shape[1] == CLASSES
    assert engine.closed


# ---- native steps -------------------------------------------------------------------

NATIVE_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef struct { void *data; uint64_t rows; size_t row_bytes; } ae_host_tensor;
/* keep the features of boxes scoring above *(float *)ctx */
int keep(void *ctx, uint64_t request, const ae_host_tensor *in, int n_in, ae_host_tensor *out, int n_out,
         uint64_t *rows_out, char *message, size_t message_size)
{
    float threshold = *(const float *)ctx;
    const float *scores = in[0].data, *feats = in[1].data;
    float *crops = out[0].data;
    uint64_t n = 0, boxes = in[0].rows * (in[0].row_bytes / sizeof(float));
    (void)request; (void)n_in; (void)n_out;
    for (uint64_t b = 0; b < boxes; b++) {
        if (scores[b] <= threshold)
            continue;
        if (n == out[0].rows) {
            snprintf(message, message_size, "more than %llu boxes", (unsigned long long)out[0].rows);
            return 1;
        }
        memcpy(crops + 4 * n++, feats + 4 * b, 4 * sizeof(float));
    }
    *rows_out = n;
    return 0;
}
/* claims one row more than it has room for (and writes nothing) */
int overclaim(void *ctx, uint64_t request, const ae_host_tensor *in, int n_in, ae_host_tensor *out, int n_out,
              uint64_t *rows_out, char *message, size_t message_size)
{
    (void)ctx; (void)request; (void)in; (void)n_in; (void)n_out; (void)message; (void)message_size;
    *rows_out = out[0].rows + 1;
    return 0;
}
"""


@pytest.fixture(scope="module")
def native_keep(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the native step")
    folder = tmp_path_factory.mktemp("native")
    (folder / "keep.c").write_text(NATIVE_SOURCE)
    lib = folder / "libkeep.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(folder / "keep.c")], check=True)
    return ctypes.CDLL(str(lib))


def test_a_native_step_runs_without_python(detector, native_keep):
    det, cls = detector.save(detector.folder)
    threshold = ctypes.c_float(0.7)
    step = ae.NativeStep(ctypes.cast(native_keep.keep, ctypes.c_void_p).value,
                         ctypes.addressof(threshold), keep=(native_keep, threshold))
    rng = np.random.default_rng(8)
    with detector_pipeline(det, cls, step, max_rows=40).compile(depth=4) as engine:
        for _ in range(30):
            x = rng.standard_normal((int(rng.integers(1, 3)), 8)).astype(np.float32)
            expected = detector.reference(x, np.float32(0.7))
            if len(expected) > 40:
                with pytest.raises(ae.HostStepError, match="more than 40 boxes"):
                    engine.run({"x": x})
                continue
            np.testing.assert_allclose(engine.run({"x": x})["logits"], expected, rtol=1e-4, atol=1e-4)


def test_a_native_step_cannot_claim_more_rows_than_max_rows(detector, native_keep):
    det, cls = detector.save(detector.folder)
    step = ae.NativeStep(ctypes.cast(native_keep.overclaim, ctypes.c_void_p).value, keep=native_keep)
    with detector_pipeline(det, cls, step, max_rows=12).compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError, match="host step 'keep' returned 13 rows; its max_rows is 12"):
            engine.run({"x": np.ones((1, 8), np.float32)})
        assert engine.stats()["failures"] == 1


ABANDONED = """
import os, threading, time
import numpy as np
import ascend_engine as ae
from ascend_engine import sim

folder = os.environ["FOLDER"]
for name in ("first", "second"):
    g = sim.Graph(name)
    g.output("y", g.relu(g.input("x", "float32", (-1, 4))))
    g.save(os.path.join(folder, name + ".om"), batch_sizes=[1, 2])
release, calls = threading.Event(), []

def step(x):
    calls.append(1)
    if len(calls) == 1:
        release.wait(20)   # the first request's step outlives its timeout
    return x + 1.0

pipe = ae.Pipeline()
x = pipe.input("x", "float32", (-1, 4))
h = pipe.host(step, pipe.model(os.path.join(folder, "first.om"), x, name="first"),
              outputs=[("y", "float32", (-1, 4))], name="step")
pipe.output("y", pipe.model(os.path.join(folder, "second.om"), h, name="second"))
with pipe.compile(depth=1, timeout=0.3) as engine:
    print("SECOND", engine.plan.nodes[2].model.model_id, flush=True)
    try:
        engine.run({"x": np.ones((1, 4), np.float32)})
        raise SystemExit("no timeout")
    except ae.AclTimeoutError as exc:
        print("TIMEOUT", exc, flush=True)
    release.set()
    for _ in range(100):   # the engine accepts requests once the step has returned
        try:
            out = engine.run({"x": np.full((1, 4), 2.0, np.float32)})
            break
        except ae.AclTimeoutError:
            time.sleep(0.05)
    assert (out["y"] == 3.0).all(), out
    print("DONE", flush=True)
"""


def test_an_abandoned_request_is_not_resumed_after_its_step_returns(tmp_path):
    """A request that timed out while its step ran is abandoned: when the
    step returns, nothing more of it is enqueued (the call log shows the
    second model executing once: for the next request only)."""
    from helpers import simlib

    log = tmp_path / "calls.log"
    proc = simlib.run_python(ABANDONED, env={"ASCEND_SIM_LOG": str(log), "FOLDER": str(tmp_path),
                                             "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "a host step still holds it" in proc.stdout and "DONE" in proc.stdout
    second = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("SECOND"))
    executions = [line for line in log.read_text().splitlines()
                  if "aclmdlExecuteAsync(" in line and f"(id {second} " in line]
    assert len(executions) == 1, executions


# ---- planning -----------------------------------------------------------------------


def test_plan_errors_name_the_step(detector, build):
    from helpers.pipelines import dense, joiner

    det, cls = detector.save(detector.folder)
    step = threshold_step(0.5)
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 8))
    scores, feats = pipe.model(det, x, name="det")
    with pytest.raises(ae.PipelineError, match="host step 'k': rows='any' needs max_rows"):
        pipe.host(step, scores, feats, outputs=[("c", "float32", (-1, 4))], rows="any", name="k")
    with pytest.raises(ae.PipelineError, match="max_rows applies to rows='any' only"):
        pipe.host(step, scores, feats, outputs=[("c", "float32", (-1, 4))], max_rows=3, name="k")
    with pytest.raises(ae.PipelineError, match="rows must be 'same' or 'any', got 'some'"):
        pipe.host(step, scores, outputs=[("c", "float32", (-1, 4))], rows="some", name="k")
    with pytest.raises(ae.PipelineError,
                       match=r"output 'c': the first dimension must be the rows .*got \(4, 4\)"):
        pipe.host(step, scores, outputs=[("c", "float32", (4, 4))], name="k")
    with pytest.raises(ae.PipelineError, match="fn must be a callable or a NativeStep, got int"):
        pipe.host(3, scores, outputs=[("c", "float32", (-1, 4))], name="k")
    with pytest.raises(ae.PipelineError, match="outputs must be a list of"):
        pipe.host(step, scores, outputs="c", name="k")
    crops = pipe.host(step, scores, feats, outputs=[("c", "float32", (-1, 4))], rows="any", max_rows=64,
                      name="k")
    logits = pipe.model(cls, crops, name="cls")
    pipe.output("logits", logits)
    with pytest.raises(ae.PipelineError, match="host step\\(s\\) 'k' with rows='any'.*max_delay_ms=0"):
        pipe.compile(max_delay_ms=2)
    with pytest.raises(ae.PipelineError, match=r"host_workers names \['nope'\]"):
        pipe.compile(host_workers={"nope": 2})
    # a model may not mix the request's rows with the step's
    j = build(joiner(0), "join")
    pipe2 = ae.Pipeline()
    x2 = pipe2.input("x", "float32", (-1, 16))
    h = pipe2.host(lambda t: t[:1].copy(), x2, outputs=[("y", "float32", (-1, 16))], rows="any", max_rows=4,
                   name="pick")
    a = pipe2.model(build(dense(1), "d1").path, x2, name="a")
    pipe2.output("y", pipe2.model(j.path, h, a, name="join"))
    with pytest.raises(ae.PipelineError,
                       match="model node 'join' reads tensors with different numbers of rows: "
                       "'pick.y' \\(host step 'pick''s rows\\) and 'a.y' \\(the request's rows\\)"):
        pipe2.plan()


def test_the_trace_shows_the_step_on_its_own_lane(detector, tmp_path):
    import json

    det, cls = detector.save(detector.folder, det_latency_us=500, cls_latency_us=300)
    with detector_pipeline(det, cls, threshold_step(0.7)).compile(depth=4, profile=True) as engine:
        summary = engine.trace(tmp_path / "t.json", requests=8, batch_size=2)
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    step_lane = [tid for tid, name in lanes.items() if "host step keep" in name]
    assert len(step_lane) == 1
    spans = [e for e in events if e["ph"] == "X" and e["tid"] == step_lane[0] and e["name"] == "keep"]
    assert len(spans) == summary["requests"] == 8
    assert all(e["dur"] >= 0 for e in spans)


def test_a_device_error_while_python_steps_run_does_not_stall_the_completer(detector, sim_faults):
    """The completer delivers a request that failed on the device while other
    requests' Python steps are running: cancelling waits for those steps, so
    it must not hold the GIL they need.  Holding it, the cancel would wait
    out the plan's whole timeout (no Python thread can even notice meanwhile);
    not holding it, every request has its outcome at once, and the engine
    takes requests again."""
    det, cls = detector.save(detector.folder, det_latency_us=300)

    def slow_keep(scores, feats):
        time.sleep(0.002)
        return keep_boxes(scores, feats, 0.5)

    timeout_s = 10
    rng = np.random.default_rng(31)
    with detector_pipeline(det, cls, slow_keep).compile(depth=8, timeout=timeout_s, host_workers=2) as engine:
        engine.run({"x": rng.standard_normal((4, 8)).astype(np.float32)})
        for n in range(5, 25):   # the failed request delivered at many points of the steps' work
            sim_faults(f"task:execute@{n}=507011")
            started = time.monotonic()
            feeds = [{"x": rng.standard_normal((4, 8)).astype(np.float32)} for _ in range(24)]
            futures = [engine.submit(f) for f in feeds]
            errors = [f.exception() for f in futures]
            # not a speed figure: a cancel that waits for the GIL lasts the plan's whole timeout
            assert time.monotonic() - started < timeout_s, "the cancel ran into the plan's timeout"
            assert sum(isinstance(e, ae.AclError) and e.code == 507011 for e in errors) == 1
            assert all(e is None or isinstance(e, (ae.AclError, ae.EngineError)) for e in errors)
            sim_faults(None)
        x = rng.standard_normal((4, 8)).astype(np.float32)
        np.testing.assert_array_equal(engine.run({"x": x})["scores"], engine.run({"x": x})["scores"])


def test_a_trace_started_while_a_step_holds_a_request_waits_for_the_step(detector, tmp_path):
    """Starting a trace first completes what is in flight; a request still inside a slow host step
    must be waited for (its done event is not enqueued until the step's worker enqueues the rest),
    never delivered before the step and the classifier after it have run."""
    det, cls = detector.save(detector.folder)
    release = threading.Event()

    def slow(scores, feats):
        release.wait(10)
        return keep_boxes(scores, feats, 0.5)

    x = np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32)
    with detector_pipeline(det, cls, slow).compile(depth=2, profile=True) as engine:
        held = engine.submit({"x": x})
        time.sleep(0.05)                         # the request is in the step, waiting on `release`
        threading.Timer(0.2, release.set).start()
        engine.trace(str(tmp_path / "t.json"), requests=2, feeds={"x": x})
        out = held.result(timeout=10)
    expected = detector.reference(x, 0.5)
    assert out["logits"].shape == expected.shape and len(expected) > 0
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-4, atol=1e-4)


def test_a_steps_results_do_not_wait_behind_later_requests(detector, tmp_path):
    """A step's result copy runs on a stream of its own: on the step's input stream it would
    queue behind the input copies of every later request submitted meanwhile, each waiting for
    its own detector run, so the classifier of request 0 would start only after the detector of
    the last request in flight (docs/executor.md, "Host steps").  Device times (the simulator's
    modelled clock) of 4 requests submitted at once, detector 200 ms each."""
    import json

    det, cls = detector.save(detector.folder, det_latency_us=200_000, cls_latency_us=1_000)
    pipe = detector_pipeline(det, cls, threshold_step(0.0))
    plan = pipe.plan(depth=4)
    step = next(n for n in plan.nodes if n.kind == "host")
    assert step.results_stream not in {n.stream for n in plan.nodes}
    with pipe.compile(depth=4, profile=True) as engine:
        engine.trace(tmp_path / "t.json", requests=4, batch_size=1)
    spans = {}
    for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]:
        if e["ph"] == "X" and e["name"] in ("det", "cls"):
            spans[e["name"], e["args"]["request"]] = (e["ts"] / 1000, (e["ts"] + e["dur"]) / 1000)
    first = min(r for _name, r in spans)
    det_end = [spans["det", first + k][1] for k in range(4)]
    assert det_end[3] - det_end[0] >= 600 - 1   # the detector runs one request after another
    # request 0's classifier starts once its detector and step are done, long before the
    # detector of request 1 (the step's own time is far below the detector's 200 ms)
    assert det_end[0] <= spans["cls", first][0] < det_end[1]


def test_streams_single_keeps_a_steps_results_on_its_one_stream(detector):
    det, cls = detector.save(detector.folder)
    plan = detector_pipeline(det, cls, threshold_step(0.5)).plan(depth=2, streams="single")
    step = next(n for n in plan.nodes if n.kind == "host")
    assert (plan.n_streams, step.stream, step.results_stream) == (1, 0, 0)
