"""Pipelines with dynamic shapes: an image-size detector feeding a dims-gear recognizer.

Each request's images have their own size; the engine picks every model's
gear from the request's shapes, pads the pipeline inputs on the host, runs
the recognizer at the gear the detector's output has, and cuts the outputs
back to the request's size.  Every result must equal running the two
``Model`` objects by hand (``Model(x=...)`` pads and slices the same way;
the graphs work per pixel, so padding never reaches the kept values).
"""

import json
import re

import numpy as np
import pytest
from helpers import simlib
from helpers.scale import scaled
from helpers.shaped import DET_GEARS, REC_GEARS, detector, image, recognizer

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.errors import PipelineError


def batch_model():
    g = sim.Graph("plain")
    x = g.input("x", "float32", (-1, 3, 8, 8))
    g.output("y", g.relu(x))
    return g


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("dynpipe")
    out = {"det": str(d / "det.om"), "rec": str(d / "rec.om"), "rec_short": str(d / "rec_short.om"),
           "plain": str(d / "plain.om")}
    detector().save(out["det"], hw_sizes=DET_GEARS)
    recognizer().save(out["rec"], dims=REC_GEARS)
    recognizer("rec_short").save(out["rec_short"], dims=[[8, 8], [16, 16], [32, 32]])   # no 16x32 gear
    batch_model().save(out["plain"], batch_sizes=[1, 2, 4])
    return out


@pytest.fixture(scope="module")
def models(paths):
    det = ae.Model.load(paths["det"], device=0)
    rec = ae.Model.load(paths["rec"], device=0)
    yield det, rec
    det.close()
    rec.close()


def two_stage(det_path, rec_path):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, energy = pipe.model(det_path, x, name="det")
    probs, score = pipe.model(rec_path, feat, name="rec")
    pipe.output("energy", energy)
    pipe.output("feat", feat)
    pipe.output("probs", probs)
    pipe.output("score", score)
    return pipe


def by_hand(models, x):
    det, rec = models
    d = det(image=x)
    r = rec(feat=d["feat"])
    return {"energy": d["energy"], "feat": d["feat"], "probs": r["probs"], "score": r["score"]}


def test_gear_io_shapes_and_follow(models):
    det, rec = models
    io = det.gear_io_shapes()
    assert list(io) == DET_GEARS
    assert io[(16, 32)] == (((1, 3, 16, 32),), ((1, 16, 32, 4), (1, 16, 32)))
    assert det.output_follow == ((None, (0, 2), (0, 3), None), (None, (0, 2), (0, 3)))
    rio = rec.gear_io_shapes()
    assert list(rio) == [0, 1, 2, 3, 4]
    assert rio[1] == (((1, 8, 16, 4),), ((1, 8, 16, 5), (1, 8, 16)))
    assert rec.output_follow == ((None, (0, 1), (0, 2), None), (None, (0, 1), (0, 2)))


def test_plan_sizes_shaped_tensors_from_the_largest_gear(paths):
    plan = two_stage(paths["det"], paths["rec"]).plan(depth=2)
    assert plan.shaped and plan.max_batch == 1 and plan.fixed_batch == 1
    t = {x.name: x for x in plan.tensors}
    assert t["image"].shaped and t["image"].row_bytes == 3 * 32 * 32 * 4
    assert t["det.feat"].row_bytes == 32 * 32 * 4 * 4 and t["rec.probs"].row_bytes == 32 * 32 * 5 * 4
    assert all(x.capacity >= x.row_bytes for x in plan.tensors)
    kinds = {n.name: n.shape_kind for n in plan.nodes}
    assert kinds == {"det": "hw", "rec": "dims"}


def test_random_image_sizes_match_the_models_run_by_hand(paths, models):
    rng = np.random.default_rng(3)
    sizes = [(int(rng.integers(1, 33)), int(rng.integers(1, 33))) for _ in range(scaled(300))]
    images = [image(rng, h, w) for h, w in sizes]
    with two_stage(paths["det"], paths["rec"]).compile(depth=4) as engine:
        futures = [engine.submit({"image": x}) for x in images]   # many in flight, of many shapes
        results = [f.result(timeout=120) for f in futures]
        again = engine.run({"image": images[0]})
    for x, (h, w), got in zip(images, sizes, results, strict=True):
        want = by_hand(models, x)
        assert got["feat"].shape == (1, h, w, 4) and got["probs"].shape == (1, h, w, 5)
        assert got["energy"].shape == got["score"].shape == (1, h, w)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} at {h}x{w}")
    for name in again:
        np.testing.assert_array_equal(again[name], results[0][name])


def test_each_request_sets_the_gear_its_shapes_need(tmp_path, paths):
    """The simulator's call log: one aclmdlSetDynamicHWSize and one
    aclmdlSetInputDynamicDims per request, at the smallest gear that holds it,
    and copies of exactly the gear's bytes (not the largest gear's)."""
    sizes = [(5, 7), (9, 3), (16, 17), (20, 20), (8, 8), (3, 30)]
    code = f"""
import json
import numpy as np
import ascend_engine as ae
pipe = ae.Pipeline(device=0)
x = pipe.input("image", "float32", (1, 3, -1, -1))
feat, energy = pipe.model({paths["det"]!r}, x, name="det")
probs, score = pipe.model({paths["rec"]!r}, feat, name="rec")
pipe.output("score", score)
with pipe.compile(depth=1) as engine:
    print(json.dumps({{n.name: n.model.model_id for n in engine.plan.nodes}}))
    for h, w in {sizes}:
        out = engine.run({{"image": np.ones((1, 3, h, w), np.float32)}})
        assert out["score"].shape == (1, h, w), out["score"].shape
"""
    log = tmp_path / "calls.log"
    proc = simlib.run_python(code, env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    ids = json.loads(proc.stdout.strip().splitlines()[-1])
    text = log.read_text()
    pattern = r"aclmdlSetDynamicHWSize\(id (\d+) index \d+ (\d+)x(\d+)\) = 0"
    hw = [(int(h), int(w)) for i, h, w in re.findall(pattern, text) if int(i) == ids["det"]]
    assert hw == [(8, 8), (16, 16), (16, 32), (32, 32), (8, 8), (16, 32)]
    dims_calls = [c for c in re.findall(r"aclmdlSetInputDynamicDims\(id (\d+)[^\n]*\) = 0", text)
                  if int(c) == ids["rec"]]
    assert len(dims_calls) == len(sizes)
    copies = re.findall(r"aclrtMemcpyAsync\([^\n]*count=(\d+), kind=(\w+)", text)
    gears = [(8, 8), (16, 16), (16, 32), (32, 32), (8, 8), (16, 32)]
    h2d = [int(n) for n, kind in copies if "HOST_TO_DEVICE" in kind]
    d2h = [int(n) for n, kind in copies if "DEVICE_TO_HOST" in kind]
    assert h2d == [3 * h * w * 4 for h, w in gears]   # the image padded to the detector's gear
    assert d2h == [h * w * 4 for h, w in gears]       # the recognizer's score at that gear


def test_a_shape_larger_than_every_gear(paths):
    with two_stage(paths["det"], paths["rec"]).compile(depth=2) as engine:
        with pytest.raises(ValueError, match=re.escape(
                "model node 'det': no gear holds the input shapes {'image': (1, 3, 40, 8)} with 1 "
                "row(s); its gears: image sizes (height x width) 8x8, 16x16, 16x32, "
                "32x32")):
            engine.submit({"image": np.zeros((1, 3, 40, 8), np.float32)})
        with pytest.raises(ValueError, match=r"expected shape \(1, 3, -1, -1\)"):
            engine.submit({"image": np.zeros((1, 4, 8, 8), np.float32)})
        # the engine still serves after refusing them
        out = engine.run({"image": np.ones((1, 3, 4, 4), np.float32)})
        assert out["probs"].shape == (1, 4, 4, 5)
        # run_batch: three images of one size, one request each, outputs joined
        images = np.stack([np.full((3, 5, 7), k, np.float32) for k in range(3)])
        joined = engine.run_batch({"image": images})
        for k in range(3):
            single = engine.run({"image": images[k:k + 1]})
            for name in single:
                np.testing.assert_array_equal(joined[name][k:k + 1], single[name])


def test_a_mismatching_model_to_model_edge_is_refused_at_plan_time(paths):
    with pytest.raises(PipelineError, match=re.escape(
            "model node 'rec' input 'feat' (fed by 'det.feat'): tensors pass between models unpadded, so "
            "every gear's output of model node 'det' must be exactly one of the input shapes of 'rec''s "
            "gears ['(1, 8, 8, 4)', '(1, 16, 16, 4)', '(1, 32, 32, 4)']; these gears of 'det' give others: "
            "16x32 -> (1, 16, 32, 4)")):
        two_stage(paths["det"], paths["rec_short"]).plan()


def test_a_shaped_input_feeding_a_batch_model(paths):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 3, -1, -1))
    pipe.output("y", pipe.model(paths["plain"], x, name="plain"))
    with pytest.raises(PipelineError, match=re.escape(
            "model node 'plain' input 'x' (fed by 'x'): 'x' has the shape (-1, 3, -1, -1), whose -1 "
            "dimensions change per request; only image-size or dims-gear models (or pipeline outputs) take "
            "such a tensor")):
        pipe.plan()


def test_a_shaped_input_feeding_only_outputs(paths):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (1, 3, -1, -1))
    pipe.output("x", x)
    y = pipe.input("y", "float32", (-1, 3, 8, 8))
    pipe.output("y", pipe.model(paths["plain"], y, name="plain"))
    with pytest.raises(PipelineError, match=r"input 'x' has the shape \(1, 3, -1, -1\), whose -1 "
                                            r"dimensions change per request, but it feeds no image-size or "
                                            r"dims-gear model"):
        pipe.plan()


def test_the_batcher_refuses_shaped_pipelines(paths):
    with pytest.raises(PipelineError, match=r"max_delay_ms: the dynamic batcher merges requests of one "
                                            r"shape, but model node\(s\) 'det', 'rec' pick their gear"):
        two_stage(paths["det"], paths["rec"]).plan(max_delay_ms=2.0)


def sequence_model():
    """tokens (b, seq, 8) masked by (b, seq), projected to 5 classes per token: dims gears over b and seq."""
    rng = np.random.default_rng(23)
    g = sim.Graph("seq")
    x = g.input("tokens", "float32", (-1, "seq", 8))
    mask = g.input("mask", "float32", (-1, "seq"))
    w = g.const(rng.standard_normal((8, 5)).astype(np.float32))
    logits = g.matmul(g.mul(x, g.reshape(mask, (-1, "seq", 1))), w)
    g.output("logits", logits)
    g.output("total", g.sum(logits, axes=2))
    return g


SEQ_GEARS = [[1, 4, 1, 4], [2, 8, 2, 8], [4, 16, 4, 16]]   # tokens' rows, seq, mask's rows, seq


def test_a_dims_model_on_the_pipeline_inputs_takes_its_rows_from_the_gears(tmp_path):
    """Rows are a gear dimension here: a request's rows and sequence length pick
    the gear, both padded up to it (3 rows run the 4-row gear), as Model does."""
    path = str(tmp_path / "seq.om")
    sequence_model().save(path, dims=SEQ_GEARS)
    pipe = ae.Pipeline(device=0)
    tokens = pipe.input("tokens", "float32", (-1, -1, 8))
    mask = pipe.input("mask", "float32", (-1, -1))
    logits, total = pipe.model(path, tokens, mask, name="seq")
    pipe.output("logits", logits)
    pipe.output("total", total)
    rng = np.random.default_rng(9)
    cases = [(b, int(rng.integers(1, s + 1))) for b, s in [(1, 4), (2, 8), (3, 16), (4, 16)]
             for _ in range(scaled(20))]
    feeds = [{"tokens": rng.standard_normal((b, s, 8)).astype(np.float32),
              "mask": (rng.random((b, s)) > 0.3).astype(np.float32)} for b, s in cases]
    with pipe.compile(depth=3) as engine, ae.Model.load(path, device=0) as model:
        assert engine.plan.max_batch == 4 and engine.plan.fixed_batch == 0
        results = [f.result(timeout=60) for f in [engine.submit(f) for f in feeds]]
        for f, (b, s), got in zip(feeds, cases, results, strict=True):
            want = model(**f)
            assert got["logits"].shape == (b, s, 5) and got["total"].shape == (b, s)
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} at {b}x{s}")
        with pytest.raises(ValueError, match=re.escape(
                "model node 'seq': no gear holds the input shapes {'tokens': (3, 17, 8), 'mask': (3, 17)} "
                "with 3 row(s); its gears: gear 0: tokens (1, 4, 8), mask (1, 4); "
                "gear 1: tokens (2, 8, 8), mask (2, 8); gear 2: tokens (4, 16, 8), mask (4, 16)")):
            engine.submit({"tokens": np.zeros((3, 17, 8), np.float32), "mask": np.zeros((3, 17), np.float32)})
        with pytest.raises(ValueError, match="carries at most 4 rows"):
            engine.submit({"tokens": np.zeros((5, 2, 8), np.float32), "mask": np.zeros((5, 2), np.float32)})
        with pytest.raises(ValueError, match="input 'mask': 2 rows differ from the other inputs' 1"):
            engine.submit({"tokens": np.zeros((1, 2, 8), np.float32), "mask": np.zeros((2, 2), np.float32)})


@pytest.mark.parametrize("link", ["peer", "through the host"])
def test_shaped_tensors_cross_devices_and_instances(paths, models, no_p2p, link):
    """The detector on device 0, two instances of the recognizer on device 1:
    the copy between devices moves each request's own bytes."""
    if link != "peer":
        no_p2p("0-1")
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, energy = pipe.model(paths["det"], x, name="det")
    probs, score = pipe.model(paths["rec"], feat, name="rec", device=1, instances=2)
    pipe.output("energy", energy)
    pipe.output("probs", probs)
    pipe.output("score", score)
    rng = np.random.default_rng(4)
    sizes = [(int(rng.integers(1, 33)), int(rng.integers(1, 33))) for _ in range(scaled(60))]
    images = [image(rng, h, w) for h, w in sizes]
    with pipe.compile(depth=4) as engine:
        assert [n.kind for n in engine.plan.nodes] == ["model", "copy", "model", "copy", "copy"]
        results = [f.result(timeout=120) for f in [engine.submit({"image": x}) for x in images]]
    for x, (h, w), got in zip(images, sizes, results, strict=True):
        want = by_hand(models, x)
        for name in got:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} at {h}x{w}")


def test_host_steps_beside_shaped_models(paths, models):
    """A host step reads fixed-shape tensors of a shaped pipeline (its staging
    moves the planned bytes); a native step reading a shaped one is refused,
    naming it (Python steps read them: test_reshaping_steps.py)."""
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    meta = pipe.input("meta", "float32", (1, 4))
    feat, energy = pipe.model(paths["det"], x, name="det")
    pipe.output("score", pipe.model(paths["rec"], feat, name="rec")[1])
    doubled = pipe.host(lambda m: m * 2.0, meta, outputs=[("m", "float32", (-1, 4))], name="double")
    pipe.output("scaled", doubled)
    rng = np.random.default_rng(8)
    with pipe.compile(depth=2) as engine:
        for h, w in [(3, 5), (30, 2), (16, 16)]:
            x_in, m_in = image(rng, h, w), rng.standard_normal((1, 4)).astype(np.float32)
            out = engine.run({"image": x_in, "meta": m_in})
            np.testing.assert_array_equal(out["scaled"], m_in * 2.0)
            np.testing.assert_array_equal(out["score"], by_hand(models, x_in)["score"])
        # run_many: requests of different shapes, in order
        feeds = [{"image": image(rng, h, w), "meta": rng.standard_normal((1, 4)).astype(np.float32)}
                 for h, w in [(7, 3), (20, 20), (1, 1), (32, 9)]]
        for f, out in zip(feeds, engine.run_many(feeds), strict=True):
            np.testing.assert_array_equal(out["scaled"], f["meta"] * 2.0)
            np.testing.assert_array_equal(out["score"], by_hand(models, f["image"])["score"])

    bad = ae.Pipeline(device=0)
    x = bad.input("image", "float32", (1, 3, -1, -1))
    feat, energy = bad.model(paths["det"], x, name="det")
    bad.output("e", bad.host(ae.NativeStep(0x1000), energy, outputs=[("e", "float32", (-1, 4))], name="step"))
    with pytest.raises(PipelineError, match=re.escape(
            "host step 'step': 'det.energy' has the shape (1, -1, -1), whose -1 dimensions change per "
            "request; a native step's contract (ae_host_fn) carries rows, not shapes")):
        bad.plan()
