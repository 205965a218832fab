"""ascend_engine.Model on image-size, dims-gear and shape-range models.

``model(x=...)`` picks the smallest gear that holds the arrays, pads up to it
and slices the outputs back (per-pixel and per-token graphs, so the sliced
result equals the reference on the unpadded input); a shape-range model gets
tensor descriptions and returns each output at the shape the execution
reports.
"""

import numpy as np
import pytest
from test_dynamic_shapes import DIMS_GEARS, HW_GEARS, dims_graph, hw_graph, range_graph

import ascend_engine as ae
from ascend_engine import sim


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    rng = np.random.default_rng(11)
    d = tmp_path_factory.mktemp("dyn")
    graphs = {"hw": hw_graph(rng), "dims": dims_graph(rng), "range": range_graph(rng)}
    graphs["hw"].save(str(d / "hw.om"), hw_sizes=HW_GEARS)
    graphs["dims"].save(str(d / "dims.om"), dims=DIMS_GEARS)
    graphs["range"].save(str(d / "range.om"), shape_ranges={"n": (1, None)})
    loaded = {k: ae.Model.load(str(d / f"{k}.om"), device=0) for k in graphs}
    yield graphs, loaded
    for m in loaded.values():
        m.close()


def close(out, ref):
    assert sorted(out) == sorted(ref)
    for k in ref:
        assert out[k].shape == ref[k].shape, k
        np.testing.assert_allclose(out[k], ref[k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_gears_are_exposed(models):
    _, m = models
    assert m["hw"].dynamic_kind == "hw" and m["hw"].hw_sizes == tuple(HW_GEARS)
    assert m["hw"].batch_sizes == () and m["hw"].dims_gears == () and m["hw"].shape_ranges == {}
    assert [s.name for s in m["hw"].inputs] == ["image"] and m["hw"].inputs[0].shape == (1, 3, -1, -1)
    assert m["dims"].dynamic_kind == "dims"
    assert m["dims"].dims_gears == (
        {"tokens": (1, 4, 8), "mask": (1, 4)},
        {"tokens": (2, 8, 8), "mask": (2, 8)},
        {"tokens": (4, 16, 8), "mask": (4, 16)},
    )
    assert m["range"].dynamic_kind == "range" and m["range"].shape_ranges == {"x": ((1, -1), (16, 16))}
    assert m["range"].inputs[0].nbytes == 0


@pytest.mark.parametrize("h,w,gear", [(16, 24, (16, 24)), (10, 20, (16, 24)), (17, 16, (24, 16)),
                                      (30, 5, (32, 32)), (32, 32, (32, 32))])
def test_hw_call_pads_to_the_gear_and_slices_back(models, h, w, gear):
    g, m = models
    x = np.random.default_rng(h * w).standard_normal((1, 3, h, w)).astype(np.float32)
    assert m["hw"].gear_shapes({"image": x}) == (gear, {"image": (1, 3) + gear})
    close(m["hw"](image=x), sim.reference(g["hw"], {"image": x}))


def test_hw_call_errors(models):
    _, m = models
    with pytest.raises(ValueError, match=r"image size 40x8 \(height x width\) exceeds every gear "
                                         r"\['16x24', '32x32', '24x16'\]"):
        m["hw"](image=np.zeros((1, 3, 40, 8), np.float32))
    with pytest.raises(ValueError, match=r"expected shape \(1, 3, -1, -1\) \(-1: dynamic\), "
                                         r"got \(1, 4, 8, 8\)"):
        m["hw"](image=np.zeros((1, 4, 8, 8), np.float32))
    with pytest.raises(ValueError, match=r"has image-size gears: pass gear= one of \[\(16, 24\), \(32, 32\), "
                                         r"\(24, 16\)\], got None"):
        m["hw"].execute_async([], [], ae.Stream(m["hw"].device))


@pytest.mark.parametrize("b,s,gear", [(1, 4, 0), (1, 3, 0), (2, 5, 1), (3, 9, 2), (4, 16, 2)])
def test_dims_call_matches_reference(models, b, s, gear):
    g, m = models
    rng = np.random.default_rng(b * 100 + s)
    feeds = {"tokens": rng.standard_normal((b, s, 8)).astype(np.float32),
             "mask": (rng.random((b, s)) > 0.2).astype(np.float32)}
    assert m["dims"].gear_shapes(feeds)[0] == gear
    close(m["dims"](**feeds), sim.reference(g["dims"], feeds))


def test_dims_no_gear_holds(models):
    _, m = models
    feeds = {"tokens": np.zeros((1, 17, 8), np.float32), "mask": np.zeros((1, 17), np.float32)}
    with pytest.raises(ValueError, match=r"no dims gear holds the input shapes \{'tokens': \(1, 17, 8\)"):
        m["dims"](**feeds)


@pytest.mark.parametrize("n", [1, 7, 300, 5000])
def test_range_call_matches_reference(models, n):
    g, m = models
    x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
    close(m["range"](x=x), sim.reference(g["range"], {"x": x}))


def test_range_out_of_range(models, tmp_path):
    g, _ = models
    g["range"].save(str(tmp_path / "r.om"), shape_ranges={"n": (2, 8)})
    with ae.Model.load(str(tmp_path / "r.om"), device=0) as m:
        assert m.shape_ranges == {"x": ((2, 8), (16, 16))}
        with pytest.raises(ValueError, match="dimension 0 is 9, outside the model's range 2..8"):
            m(x=np.zeros((9, 16), np.float32))
        m.range_output_nbytes = 8 * 8 * 4  # exactly enough for the largest output
        x = np.ones((8, 16), np.float32)
        close(m(x=x), sim.reference(g["range"], {"x": x}))


def test_pipelines_refuse_shape_ranges(models):
    # image-size and dims-gear models run in pipelines (tests/pipeline/test_dynamic_pipeline.py)
    _, m = models
    pipe = ae.Pipeline(device=0)
    handles = [pipe.input(s.name, dtype=s.dtype, shape=tuple(4 if d == -1 else d for d in s.shape))
               for s in m["range"].inputs]
    out = pipe.model(m["range"], *handles, name="dyn")
    pipe.output("y", out[0] if isinstance(out, (list, tuple)) else out)
    want = ("model node 'dyn': the model has shape ranges; pipelines take static, dynamic-batch, image-size "
            "and dims-gear models")
    with pytest.raises(ae.PipelineError, match=want):
        pipe.compile(depth=2)
