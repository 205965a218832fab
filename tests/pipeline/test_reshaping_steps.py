"""Host steps that read and set shapes in pipelines with dynamic shapes.

An image-size detector's features go to a Python step that cuts text-line
crops out of them (any number, rows="any"), each 8 rows high and as wide as
the image; a line reader with width gears (dims) reads every crop at the
smallest width gear holding it.  The step chooses the crops' width per
request, so the reader's gear is known only once the step has run: the
step's worker pads the crops to that gear and sets it for the rest of the
request.  Every result must equal running the ``Model`` objects by hand.
"""

import json
import os
import re
import uuid

import numpy as np
import pytest
from helpers import simlib
from helpers.scale import scaled
from helpers.shaped import (
    DET_GEARS,
    LINE_WIDTHS,
    REC_GEARS,
    crops_of,
    detector,
    image,
    line_reader,
    recognizer,
)

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.errors import HostStepError, PipelineError

MAX_CROPS = 6
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a line reader taking 1, 2 or 4 crops per execution at each width, and 3 at the widest
LINES_GEARS = [[n, w] for n in (1, 2, 4) for w in LINE_WIDTHS] + [[3, 32]]


def line_of(energy):
    """One crop whose width (h + w, at most 32) differs from the image's: rows='same'."""
    _, h, w = energy.shape
    width = min(32, h + w)
    return (np.resize(energy, (1, 8, width, 1)) * np.arange(1, 5, dtype=np.float32)).astype(np.float32)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("reshaping")
    out = {"det": str(d / "det.om"), "line": str(d / "line.om"), "lines": str(d / "lines.om"),
           "rec": str(d / "rec.om"), "plain": str(d / "plain.om")}
    g = sim.Graph("plain")
    g.output("y", g.relu(g.input("crop", "float32", (-1, 8, 8, 4))))
    g.save(out["plain"], batch_sizes=[1, 4])
    detector().save(out["det"], hw_sizes=DET_GEARS)
    recognizer().save(out["rec"], dims=REC_GEARS)
    line_reader(1).save(out["line"], dims=[[w] for w in LINE_WIDTHS])
    line_reader(-1).save(out["lines"], dims=LINES_GEARS)
    return out


@pytest.fixture(scope="module")
def models(paths):
    det = ae.Model.load(paths["det"], device=0)
    line = ae.Model.load(paths["line"], device=0)
    yield det, line
    det.close()
    line.close()


def ocr(paths, fn=crops_of, max_rows=MAX_CROPS, rec=False):
    """detector -> crop step -> line reader (``rec``: the dims-gear recognizer reads the features too)."""
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, energy = pipe.model(paths["det"], x, name="det")
    crops = pipe.host(fn, feat, outputs=[("crops", "float32", (-1, 8, -1, 4))], rows="any",
                      max_rows=max_rows, name="crop")
    probs, score = pipe.model(paths["line"], crops, name="line")
    pipe.output("energy", energy)
    pipe.output("crops", crops)
    pipe.output("probs", probs)
    pipe.output("score", score)
    if rec:
        pipe.output("rec_score", pipe.model(paths["rec"], feat, name="rec")[1])
    return pipe


def ocr_by_hand(models, x):
    det, line = models
    d = det(image=x)
    crops = crops_of(d["feat"])
    reads = [line(crop=crops[i:i + 1]) for i in range(len(crops))]
    w = x.shape[3]
    empty = {"probs": np.zeros((0, 8, w, 5), np.float32), "score": np.zeros((0, 8, w), np.float32)}
    joined = {k: np.concatenate([r[k] for r in reads]) if reads else empty[k] for k in empty}
    return {"energy": d["energy"], "crops": crops, **joined}


def check(got, want, what):
    assert set(got) == set(want)
    for name in want:
        assert got[name].shape == want[name].shape, f"{name} at {what}"
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} at {what}")


def test_the_plan_sizes_a_steps_shaped_output_from_its_readers_gears(paths):
    plan = ocr(paths).plan(depth=2)
    t = {x.name: x for x in plan.tensors}
    assert t["crop.crops"].shaped and t["crop.crops"].row_bytes == 8 * 32 * 4 * 4   # the widest gear
    assert t["crop.crops"].max_rows == MAX_CROPS and t["crop.crops"].capacity >= MAX_CROPS * 8 * 32 * 16
    nodes = {n.name: n for n in plan.nodes}
    assert nodes["line"].shape_kind == "dims" and nodes["line"].static_batch == 1   # one crop per execution
    assert nodes["line"].domain == plan.nodes.index(nodes["crop"])


def test_crops_of_random_images_match_the_models_run_by_hand(paths, models):
    rng = np.random.default_rng(5)
    sizes = [(int(rng.integers(1, 33)), int(rng.integers(1, 33))) for _ in range(scaled(200))]
    sizes += [(2, 3), (1, 4)]   # no crops at all
    images = [image(rng, h, w) for h, w in sizes]
    with ocr(paths).compile(depth=4) as engine:
        futures = [engine.submit({"image": x}) for x in images]   # in flight together, of many shapes
        results = [f.result(timeout=120) for f in futures]
        ordered = list(engine.run_many({"image": x} for x in images[:20]))
    for (h, w), x, got in zip(sizes, images, results, strict=True):
        want = ocr_by_hand(models, x)
        assert got["probs"].shape == ((h + w) % 5, 8, w, 5)
        check(got, want, f"{h}x{w}")
    for x, got, again in zip(images, results, ordered, strict=False):
        check(again, got, x.shape)


def test_from_asyncio(paths, models):
    import asyncio

    rng = np.random.default_rng(6)
    images = [image(rng, int(rng.integers(1, 33)), int(rng.integers(1, 33))) for _ in range(24)]

    async def main(engine):
        return await asyncio.gather(*(engine.run_async({"image": x}) for x in images))

    with ocr(paths).compile(depth=4) as engine:
        results = asyncio.run(main(engine))
    for x, got in zip(images, results, strict=True):
        check(got, ocr_by_hand(models, x), x.shape)


def test_run_batch_gives_one_array_per_request_after_the_step(paths, models):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 3, 9, 13)).astype(np.float32)   # three images of one size
    with ocr(paths).compile(depth=2) as engine:
        out = engine.run_batch({"image": x})
    want = [ocr_by_hand(models, x[i:i + 1]) for i in range(3)]
    np.testing.assert_array_equal(out["energy"], np.concatenate([w["energy"] for w in want]))
    for name in ("crops", "probs", "score"):
        assert isinstance(out[name], list) and len(out[name]) == 3
        for got, w in zip(out[name], want, strict=True):
            np.testing.assert_array_equal(got, w[name])


CASE = """\
import sys

import numpy as np

sys.path.insert(0, {tests!r})

import ascend_engine as ae
from helpers.shaped import crops_of


def pipeline(det, reader):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, _energy = pipe.model(det, x, name="det")
    crops = pipe.host(crops_of, feat, outputs=[("crops", "float32", (-1, 8, -1, 4))], rows="any",
                      max_rows={max_rows}, name="crop")
    pipe.output("score", pipe.model(reader, crops, name="reader")[1])
    return pipe


def run(det, reader, images, out, **compile_kwargs):
    with np.load(images) as d:
        feeds = [{{"image": d[f"arr_{{k}}"]}} for k in range(len(d.files))]
    with pipeline(det, reader).compile(depth=2, **compile_kwargs) as engine:
        np.savez(out, *[engine.run(f)["score"] for f in feeds])
        return next(n.model.model_id for n in engine.plan.nodes if n.name == "reader")
"""


def run_logged(tmp_path, paths, reader, images, **compile_kwargs):
    """Run the crop pipeline (``reader`` reads the crops) over ``images`` in a
    process of its own with the simulator's call log on; returns (the
    reader's model id, its outputs, the log's text)."""
    (tmp_path / "reshaping_case.py").write_text(CASE.format(max_rows=MAX_CROPS, tests=TESTS))
    np.savez(tmp_path / "images.npz", *images)
    code = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport reshaping_case\n"
            f"print(reshaping_case.run({paths['det']!r}, {reader!r}, {str(tmp_path / 'images.npz')!r}, "
            f"{str(tmp_path / 'outs.npz')!r}, **{compile_kwargs!r}))\n")
    log = tmp_path / "calls.log"
    proc = simlib.run_python(code, env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "outs.npz") as d:
        outs = [d[f"arr_{k}"] for k in range(len(d.files))]
    return int(proc.stdout.strip().splitlines()[-1]), outs, log.read_text()


def dims_calls(text, model_id):
    """The dims of every aclmdlSetInputDynamicDims call on ``model_id`` in a call log."""
    calls = re.findall(r"aclmdlSetInputDynamicDims\(id (\d+)[^\n]*dims \[([\d,]+)\]", text)
    return [[int(v) for v in d.split(",")] for i, d in calls if int(i) == model_id]


def test_the_gear_and_bytes_of_every_crop_in_the_call_log(tmp_path, paths):
    """The simulator's call log: the line reader runs each crop at the
    smallest width gear holding it, and the crops go to the device padded to
    exactly that gear (not the widest)."""
    sizes = [(5, 7), (9, 3), (16, 17), (3, 30), (2, 3), (12, 12)]
    images = [np.ones((1, 3, h, w), np.float32) for h, w in sizes]
    line_id, outs, text = run_logged(tmp_path, paths, paths["line"], images)
    assert [o.shape for o in outs] == [((h + w) % 5, 8, w) for h, w in sizes]
    crops = [(h + w) % 5 for h, w in sizes]
    gears = [next(g for g in LINE_WIDTHS if g >= w) for _h, w in sizes]
    executes = [int(i) for i in re.findall(r"aclmdlExecuteAsync\(id (\d+)", text)]
    assert executes.count(line_id) == sum(crops)   # one execution per crop, none for no crops
    assert dims_calls(text, line_id) == [[1, 8, g, 4] for g, n in zip(gears, crops, strict=True) if n]
    h2d = [int(n) for n, kind in re.findall(r"aclrtMemcpyAsync\([^\n]*count=(\d+), kind=(\w+)", text)
           if "HOST_TO_DEVICE" in kind]
    det_gears = [next(g for g in DET_GEARS if g[0] >= h and g[1] >= w) for h, w in sizes]
    want = []
    for (gh, gw), n, g in zip(det_gears, crops, gears, strict=True):
        want.append(3 * gh * gw * 4)          # the image, padded to the detector's gear
        if n:
            want.append(n * 8 * g * 4 * 4)    # the crops, padded to the reader's gear
    assert h2d == want


def test_a_rows_same_step_sets_the_next_models_width(paths, models):
    det, line = models
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    _feat, energy = pipe.model(paths["det"], x, name="det")
    crop = pipe.host(line_of, energy, outputs=[("line", "float32", (-1, 8, -1, 4))], name="widen")
    pipe.output("score", pipe.model(paths["line"], crop, name="line")[1])
    pipe.output("line", crop)
    rng = np.random.default_rng(9)
    sizes = [(int(rng.integers(1, 17)), int(rng.integers(1, 17))) for _ in range(scaled(60))]
    images = [image(rng, h, w) for h, w in sizes]
    with pipe.compile(depth=3) as engine:
        results = [f.result(timeout=60) for f in [engine.submit({"image": x}) for x in images]]
    for (h, w), x, got in zip(sizes, images, results, strict=True):
        crop_in = line_of(det(image=x)["energy"])
        assert got["line"].shape == (1, 8, min(32, h + w), 4)
        check(got, {"line": crop_in, "score": line(crop=crop_in)["score"]}, f"{h}x{w}")


def test_a_step_reads_a_shaped_tensor_at_the_requests_size(paths, models):
    """The detector's energy reaches the step as the request's h x w (not the
    gear's padded size), with the detector's values."""
    seen = []

    def stats(energy):
        seen.append(energy.shape)
        return np.array([[energy.sum(), energy.max(), energy.shape[1], energy.shape[2]]], np.float64)

    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    _feat, energy = pipe.model(paths["det"], x, name="det")
    pipe.output("stats", pipe.host(stats, energy, outputs=[("stats", "float64", (-1, 4))], name="stats"))
    rng = np.random.default_rng(10)
    sizes = [(3, 5), (16, 17), (32, 1), (8, 8)]
    with pipe.compile(depth=2) as engine:
        outs = [engine.run({"image": image(rng, h, w)}) for h, w in sizes]
    rng = np.random.default_rng(10)
    assert seen == [(1, h, w) for h, w in sizes]
    for (h, w), out in zip(sizes, outs, strict=True):
        e = models[0](image=image(rng, h, w))["energy"]
        np.testing.assert_array_equal(out["stats"], [[e.sum(dtype=np.float32), e.max(), h, w]])


def test_a_width_no_gear_holds_fails_that_request_alone(paths, models):
    def too_wide(feat):
        crops = crops_of(feat)
        if feat.shape[1] == 7:   # this request's crops are wider than every gear
            return np.zeros((2, 8, 40, 4), np.float32)
        return crops

    rng = np.random.default_rng(11)
    sizes = [(5, 7), (7, 9), (16, 3)]
    images = [image(rng, h, w) for h, w in sizes]
    with ocr(paths, too_wide).compile(depth=4) as engine:
        futures = [engine.submit({"image": x}) for x in images]
        with pytest.raises(HostStepError, match=re.escape(
                "host step 'crop' returned shapes no model after it takes: model node 'line': no gear holds "
                "the input shapes {'crop': (2, 8, 40, 4)} (its rows run in chunks); its gears: "
                "gear 0: crop (1, 8, 8, 4); gear 1: crop (1, 8, 16, 4); gear 2: crop (1, 8, 32, 4)")):
            futures[1].result(timeout=60)
        for k in (0, 2):
            check(futures[k].result(timeout=60), ocr_by_hand(models, images[k]), sizes[k])
        check(engine.run({"image": images[1][:, :, :5]}), ocr_by_hand(models, images[1][:, :, :5]), "after")


def test_outputs_that_break_the_declared_shape_fail_the_request(paths):
    rng = np.random.default_rng(12)
    with ocr(paths, lambda f: np.zeros((1, 9, 8, 4), np.float32)).compile(depth=2) as engine:
        with pytest.raises(HostStepError, match=re.escape(
                "host step 'crop' output 'crops': expected float32 of shape (rows, 8, -1, 4), got float32 "
                "of shape (1, 9, 8, 4)")):
            engine.run({"image": image(rng, 8, 8)})
    with ocr(paths, lambda f: np.zeros((1, 8, 0, 4), np.float32)).compile(depth=2) as engine:
        with pytest.raises(HostStepError, match=r"expected float32 of shape \(rows, 8, -1, 4\)"):
            engine.run({"image": image(rng, 8, 8)})


def test_plans_that_cannot_hold_a_steps_shapes_are_refused(paths):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, _energy = pipe.model(paths["det"], x, name="det")
    pipe.output("c", pipe.host(crops_of, feat, outputs=[("c", "float32", (-1, 8, -1, 4))], rows="any",
                               max_rows=4, name="crop"))
    with pytest.raises(PipelineError, match=re.escape(
            "host step output 'crop.c' has the shape (-1, 8, -1, 4), whose -1 dimensions change per request, "
            "but it feeds no image-size or dims-gear model: nothing bounds its size")):
        pipe.plan()

    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, _energy = pipe.model(paths["det"], x, name="det")
    c = pipe.host(crops_of, feat, outputs=[("c", "float32", (-1, 8, -1, 4))], rows="any", max_rows=4,
                  name="crop")
    pipe.output("s", pipe.model(paths["plain"], c, name="plain"))
    with pytest.raises(PipelineError, match=re.escape(
            "model node 'plain' input 'crop' (fed by 'crop.c'): 'crop.c' has the shape (-1, 8, -1, 4), "
            "whose -1 dimensions change per request")):
        pipe.plan()


@pytest.mark.parametrize("policy", ["upper", "lower", "nearest"])
def test_dims_gears_over_the_rows_run_the_crops_in_chunks_of_their_width(tmp_path, paths, models, policy):
    """A line reader whose crops per execution are a dims gear too: each
    request's crops run in chunks of the rows its gears at the crops' width
    offer, chosen under gear_policy (the 3-crop gear exists at width 32 only),
    every chunk as chunk_plan says, every result exact."""
    from ascend_engine._gears import chunk_plan

    det, line = models
    # 3 crops at widths 8 and 16 too, where no gear runs 3 (they take 4, or 2 and 1)
    sizes = [(5, 7), (2, 3), (16, 17), (3, 30), (1, 1), (9, 20), (30, 28), (4, 31), (1, 32), (8, 5), (3, 10)]
    rng = np.random.default_rng(17)
    images = [image(rng, h, w) for h, w in sizes]
    lines_id, outs, text = run_logged(tmp_path, paths, paths["lines"], images, gear_policy=policy)
    want_chunks = []
    for (_h, w), x, got in zip(sizes, images, outs, strict=True):
        c = crops_of(det(image=x)["feat"])
        reads = [line(crop=c[i:i + 1])["score"] for i in range(len(c))]
        want = np.concatenate(reads) if reads else np.zeros((0, 8, w), np.float32)
        np.testing.assert_array_equal(got, want)
        width = next(g for g in LINE_WIDTHS if g >= w)
        offered = sorted({n for n, gear_width in LINES_GEARS if gear_width == width})
        plan = chunk_plan(offered, policy, len(c)) if len(c) else []
        want_chunks += [[gear, 8, width, 4] for gear, _take in plan]
    assert dims_calls(text, lines_id) == want_chunks
    assert any(d[0] == 3 for d in want_chunks)   # the gear only the widest crops have is used

    pipe = ae.Pipeline(device=0)   # in this process too, requests in flight together
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, _energy = pipe.model(paths["det"], x, name="det")
    crops = pipe.host(crops_of, feat, outputs=[("crops", "float32", (-1, 8, -1, 4))], rows="any",
                      max_rows=MAX_CROPS, name="crop")
    pipe.output("score", pipe.model(paths["lines"], crops, name="lines")[1])
    with pipe.compile(depth=3, gear_policy=policy) as engine:
        results = [f.result(timeout=60) for f in [engine.submit({"image": x}) for x in images]]
    for got, want in zip(results, outs, strict=True):
        np.testing.assert_array_equal(got["score"], want)


def test_the_executor_refuses_sizes_beyond_the_plan(paths):
    """The C side checks what a step set before it goes on: a size above the
    plan's fails that request, with the tensor and both sizes named."""
    from ascend_engine.shapes import RequestWalk

    real = RequestWalk.after_step

    def oversize(self, k, shapes, rows):
        device, row_bytes, values = real(self, k, shapes, rows)
        return device, {t: rb * 2 for t, rb in row_bytes.items()}, values

    rng = np.random.default_rng(13)
    with ocr(paths).compile(depth=2) as engine:
        RequestWalk.after_step = oversize
        try:
            with pytest.raises(HostStepError, match=r"host step 'crop' set shapes the plan cannot hold: "
                               r"tensor \d+: \d+ bytes per row, expected 1 to the \d+ planned"):
                engine.run({"image": image(rng, 16, 32)})   # the widest gear: doubled is too much
        finally:
            RequestWalk.after_step = real
        assert engine.run({"image": image(rng, 4, 4)})["probs"].shape == (3, 8, 4, 5)


def test_trace_of_requests_of_several_shapes(tmp_path, paths):
    rng = np.random.default_rng(14)
    pool = [{"image": image(rng, h, w)} for h, w in [(5, 7), (16, 17), (3, 30)]]
    with ocr(paths).compile(depth=2, profile=True) as engine:
        summary = engine.trace(tmp_path / "t.json", requests=6, feeds=pool)
        with pytest.raises(ValueError, match="needs feeds: one feeds dict per request"):
            engine.trace(tmp_path / "u.json", requests=2)
    assert summary["requests"] == 6
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    runs = [e for e in events if e["ph"] == "X" and e["cat"] == "execute"]
    per_node = {name: sorted(e["args"]["request"] for e in runs if e["name"] == name)
                for name in ("det", "line")}
    assert per_node["det"] == list(range(6))
    # the line reader's span covers all of a request's crops; a request without crops has none to show
    crops = [(p["image"].shape[2] + p["image"].shape[3]) % 5 for p in pool]
    assert per_node["line"] == [r for r in range(6) if crops[r % 3]]


@pytest.mark.stress
def test_thousands_of_random_shapes_through_both_kinds_of_gear(paths, models):
    """One pipeline with every kind of per-request gear: the detector's image
    size, the recognizer's dims (from the detector's output), and the line
    reader's width (from a host step's crops), 2000 requests of random sizes
    from four threads, every result exact."""
    import concurrent.futures

    det, line = models
    rec = ae.Model.load(paths["rec"], device=0)
    pipe = ocr(paths, rec=True)
    rng = np.random.default_rng(15)
    sizes = [(int(rng.integers(1, 33)), int(rng.integers(1, 33))) for _ in range(scaled(2000))]
    seeds = rng.integers(0, 2**31, len(sizes))

    def one(engine, k):
        x = image(np.random.default_rng(seeds[k]), *sizes[k])
        return x, engine.run({"image": x}, timeout=120)

    with pipe.compile(depth=8, host_workers=2) as engine, rec:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda k: one(engine, k), range(len(sizes))))
        for (h, w), (x, got) in zip(sizes, results, strict=True):
            want = ocr_by_hand((det, line), x)
            want["rec_score"] = rec(feat=det(image=x)["feat"])["score"]
            check(got, want, f"{h}x{w}")


def test_a_step_output_copied_before_its_model_is_known_is_not_padded_twice(tmp_path, paths, models):
    """The crops reach the device when their step has run; a model that reads
    them together with a later shape-setting step's output is resolved only
    after that step, too late to pad the crops to its gear: that request
    fails with a message (never a silently wrong result), and a width that is
    already a gear runs exactly."""
    det, _line = models
    g = sim.Graph("pair")
    a = g.input("a", "float32", (1, 8, "w", 4))
    b = g.input("b", "float32", (1, 8, "w", 4))
    g.output("sum", g.add(a, b))
    pair_path = str(tmp_path / "pair.om")
    g.save(pair_path, dims=[[w, w] for w in LINE_WIDTHS])

    def doubled(crops):   # another step that sets a shape, between the crops and their reader
        return crops * 2

    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    feat, _energy = pipe.model(paths["det"], x, name="det")
    crops = pipe.host(crops_of, feat, outputs=[("crops", "float32", (-1, 8, -1, 4))], rows="any",
                      max_rows=MAX_CROPS, name="crop")
    twice = pipe.host(doubled, crops, outputs=[("twice", "float32", (-1, 8, -1, 4))], name="double")
    pipe.output("sum", pipe.model(pair_path, crops, twice, name="pair"))
    rng = np.random.default_rng(16)
    with pipe.compile(depth=2) as engine:
        with pytest.raises(HostStepError, match=re.escape(
                "'crop.crops' of shape (2, 8, 5, 4) feeds model nodes 'its copy to the device' and 'pair', "
                "whose gears take it as (2, 8, 5, 4) and (2, 8, 8, 4); one tensor padded to two shapes is "
                "not supported")):
            engine.run({"image": image(rng, 2, 5)})
        img = image(rng, 4, 8)   # 12 % 5 = 2 crops of width 8, a gear of the reader
        got = engine.run({"image": img})
    c = crops_of(det(image=img)["feat"])
    np.testing.assert_array_equal(got["sum"], c * 3)


def test_a_step_of_fixed_shapes_feeding_a_width_gear_reader(paths, models):
    """A rows='any' step that reads no shaped tensor and returns crops of one
    width gear: the reader's outputs still come back per request, cut to the
    step's rows."""
    _det, line = models

    def stamps(meta):   # as many crops as meta[0, 0] says, of a fixed width the reader has a gear for
        n = int(meta[0, 0])
        return np.ones((n, 8, 16, 4), np.float32) * meta[0, 1]

    pipe = ae.Pipeline(device=0)
    x = pipe.input("image", "float32", (1, 3, -1, -1))
    meta = pipe.input("meta", "float32", (1, 2))
    pipe.output("energy", pipe.model(paths["det"], x, name="det")[1])
    crops = pipe.host(stamps, meta, outputs=[("crops", "float32", (-1, 8, 16, 4))], rows="any",
                      max_rows=MAX_CROPS, name="stamps")
    pipe.output("score", pipe.model(paths["line"], crops, name="line")[1])
    rng = np.random.default_rng(18)
    with pipe.compile(depth=2) as engine:
        for n, h, w in [(3, 5, 7), (0, 9, 2), (6, 32, 32), (1, 1, 1)]:
            m = np.array([[n, 0.5 + n]], np.float32)
            got = engine.run({"image": image(rng, h, w), "meta": m})
            c = stamps(m)
            reads = [line(crop=c[i:i + 1])["score"] for i in range(n)]
            assert got["energy"].shape == (1, h, w)
            np.testing.assert_array_equal(got["score"], np.concatenate(reads) if n else np.zeros((0, 8, 16)))


def test_a_spec_file_with_a_step_that_sets_shapes(tmp_path, paths, models):
    """The crop pipeline written as a spec file (an input and a host output
    with -1 after the rows) runs like the one built in Python."""
    module = f"crops_{uuid.uuid4().hex[:8]}"   # imported in this process: a name of its own
    (tmp_path / f"{module}.py").write_text(CASE.format(max_rows=MAX_CROPS, tests=TESTS))
    doc = {
        "inputs": {"image": {"dtype": "float32", "shape": [1, 3, -1, -1]}},
        "models": [{"name": "det", "path": paths["det"], "inputs": ["image"]},
                   {"name": "line", "path": paths["line"], "inputs": ["crop.crops"]}],
        "host": [{"name": "crop", "function": f"{module}:crops_of", "inputs": ["det.feat"],
                  "rows": "any", "max_rows": MAX_CROPS,
                  "outputs": {"crops": {"dtype": "float32", "shape": [-1, 8, None, 4]}}}],
        "outputs": {"crops": "crop.crops", "probs": "line.probs", "score": "line.score",
                    "energy": "det.energy"},
        "compile": {"depth": 3},
    }
    (tmp_path / "ocr.yaml").write_text(json.dumps(doc))     # JSON is YAML
    pipe = ae.Pipeline.from_spec(tmp_path / "ocr.yaml", allow_code=True)
    rng = np.random.default_rng(19)
    images = [image(rng, h, w) for h, w in [(5, 7), (2, 3), (16, 17), (3, 30), (12, 12)]]
    with pipe.compile(depth=3) as engine:
        results = [f.result(timeout=60) for f in [engine.submit({"image": x}) for x in images]]
    for x, got in zip(images, results, strict=True):
        check(got, ocr_by_hand(models, x), x.shape)
