"""The DB post-processing step (ascend_engine.steps.ocr.db_postprocess) in a
pipeline: a native step after a detector, checked against its numpy reference
request by request; bad maps fail their own request, naming the step; bad
graphs are refused when the step is added."""

import json
import uuid

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.steps import ocr

H, W = 24, 40


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    """A 'detector' passing its (rows, 1, H, W) input through (relu keeps NaN and [0, 1])."""
    g = sim.Graph("det")
    g.output("prob", g.relu(g.input("x", "float32", (-1, 1, H, W))))
    path = str(tmp_path_factory.mktemp("db") / "det.om")
    g.save(path, batch_sizes=[1, 2])
    return path


def pipeline(detector, picture=True, **kw):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 1, H, W))
    prob = pipe.model(detector, x, name="det")
    pic = pipe.input("picture", "float32", (-1, 4)) if picture else None
    boxes, scores = ocr.db_postprocess(pipe, prob, pic, name="db", **kw)
    pipe.output("boxes", boxes)
    pipe.output("scores", scores)
    return pipe


def text_map(rng):
    prob = (rng.random((H, W)) * 0.3).astype(np.float32)
    for _ in range(int(rng.integers(0, 5))):
        y, x = int(rng.integers(0, H - 2)), int(rng.integers(0, W - 4))
        prob[y:y + int(rng.integers(2, 7)), x:x + int(rng.integers(4, 20))] = rng.uniform(0.5, 1.0)
    return prob


def test_the_step_gives_the_references_boxes_request_by_request(detector):
    rng = np.random.default_rng(35)
    found = 0
    with pipeline(detector, max_candidates=6).compile(depth=4) as engine:
        for _ in range(25):
            prob = text_map(rng)
            picture = np.array([[H * 2, W * 3, 0.5, 1 / 3]], np.float32)
            out = engine.run({"x": prob[None, None], "picture": picture})
            boxes, scores = ocr.db_boxes_reference(prob, picture[0], max_candidates=6)
            np.testing.assert_array_equal(out["boxes"], boxes)
            np.testing.assert_allclose(out["scores"], scores, rtol=1e-6)
            found += len(boxes)
    assert found > 10


def test_boxes_stay_in_map_pixels_without_a_picture(detector):
    prob = np.zeros((H, W), np.float32)
    prob[3:9, 5:30] = 0.9
    with pipeline(detector, picture=False, unclip_ratio=0.0).compile(depth=2) as engine:
        out = engine.run({"x": prob[None, None]})
    np.testing.assert_allclose(out["boxes"], [[(5, 3), (29, 3), (29, 8), (5, 8)]], atol=1e-5)


def test_a_nan_map_fails_its_request_alone_naming_the_step(detector):
    bad = np.zeros((H, W), np.float32)
    bad[5, 7] = np.nan
    good = np.zeros((H, W), np.float32)
    good[2:10, 2:30] = 0.9
    picture = np.array([[H, W, 1, 1]], np.float32)
    with pipeline(detector).compile(depth=4) as engine:
        failing = engine.submit({"x": bad[None, None], "picture": picture})
        fine = engine.submit({"x": good[None, None], "picture": picture})
        nan_at = r"db_postprocess step 'db': the map holds NaN at \(y=5, x=7\)"
        with pytest.raises(ae.HostStepError, match=nan_at):
            failing.result()
        assert len(fine.result()["boxes"]) == 1
        with pytest.raises(ae.HostStepError, match="takes one map per request, got 2"):
            engine.run({"x": np.stack([good, good])[:, None], "picture": np.repeat(picture, 2, 0)})
        bad_row = r"picture row .* must be finite and above 0, got \(24, 40, -1, 1\)"
        with pytest.raises(ae.HostStepError, match=bad_row):
            engine.run({"x": good[None, None], "picture": np.array([[H, W, -1, 1]], np.float32)})


def test_bad_graphs_are_refused_when_the_step_is_added(detector):
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 1, H, W))
    prob = pipe.model(detector, x, name="det")
    with pytest.raises(ae.PipelineError, match="step 'db': the map 'xi' must be float32, got int32"):
        ocr.db_postprocess(pipe, pipe.input("xi", "int32", (1, 1, H, W)), name="db")
    with pytest.raises(ae.PipelineError, match=r"\(rows, H, W\) or \(rows, 1, H, W\) with fixed H and W"):
        ocr.db_postprocess(pipe, pipe.input("dyn", "float32", (1, 1, -1, W)), name="db")
    with pytest.raises(ae.PipelineError, match="holds 3 rows; the step reads one map per request"):
        ocr.db_postprocess(pipe, pipe.input("three", "float32", (3, H, W)), name="db")
    with pytest.raises(ae.PipelineError, match=r"picture 'p' must be float32 \(rows, 4\)"):
        ocr.db_postprocess(pipe, prob, pipe.input("p", "float32", (-1, 3)), name="db")
    with pytest.raises(ae.PipelineError, match="box_thresh must be a finite number, got inf"):
        ocr.db_postprocess(pipe, prob, box_thresh=float("inf"))
    with pytest.raises(ae.PipelineError, match="max_candidates must be between 1 and 1048576, got 0"):
        ocr.db_postprocess(pipe, prob, max_candidates=0)


def test_a_spec_file_names_the_step_made_by_db_step(detector, tmp_path):
    module = f"db_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "from ascend_engine.steps import ocr\n\n"
        f"DB = ocr.db_step({H}, {W}, name='db', unclip_ratio=0.0, max_candidates=8)\n")
    doc = {
        "inputs": {"x": {"dtype": "float32", "shape": [-1, 1, H, W]}},
        "models": [{"name": "det", "path": detector, "inputs": ["x"]}],
        "host": [{"name": "db", "function": f"{module}:DB", "inputs": ["det.prob"], "rows": "any",
                  "max_rows": 8, "outputs": {"boxes": {"dtype": "float32", "shape": [-1, 4, 2]},
                              "scores": {"dtype": "float32", "shape": [-1]}}}],
        "outputs": {"boxes": "db.boxes", "scores": "db.scores"},
    }
    (tmp_path / "db.yaml").write_text(json.dumps(doc))
    prob = text_map(np.random.default_rng(4))
    prob[2:8, 3:30] = 0.95
    with ae.Pipeline.from_spec(tmp_path / "db.yaml", allow_code=True).compile(depth=2) as engine:
        out = engine.run({"x": prob[None, None]})
    boxes, scores = ocr.db_boxes_reference(prob, unclip_ratio=0.0, max_candidates=8)
    assert len(boxes) >= 1
    np.testing.assert_array_equal(out["boxes"], boxes)
    np.testing.assert_allclose(out["scores"], scores, rtol=1e-6)
    with pytest.raises(ae.PipelineError, match="the map's width must be between 1 and 1048576, got 0"):
        ocr.db_step(H, 0)


def test_a_step_made_for_another_map_size_fails_each_request_naming_both_sizes(detector):
    pipe = ae.Pipeline(device=0)
    prob = pipe.model(detector, pipe.input("x", "float32", (-1, 1, H, W)), name="det")
    boxes, _ = pipe.host(ocr.db_step(H, W + 1, name="db"), prob, name="db", rows="any", max_rows=1000,
                         outputs=[("boxes", "float32", (-1, 4, 2)), ("scores", "float32", (-1,))])
    pipe.output("boxes", boxes)
    with pipe.compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError, match=rf"a map row holds {H * W * 4} bytes, expected "
                                                   rf"{H * (W + 1) * 4} \({H} x {W + 1} float32\)"):
            engine.run({"x": np.zeros((1, 1, H, W), np.float32)})
