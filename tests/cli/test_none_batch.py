"""``None`` as the batch dimension wherever -1 is: sim.Graph, Pipeline.input and spec files."""

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim, spec


def two_layer(shape):
    g = sim.Graph("mlp")
    x = g.input("x", "float32", shape)
    h = g.reshape(g.relu(x), (None, 2, 4))
    g.output("y", g.reshape(g.tanh(h), (None, 8)))
    return g


def test_graph_none_first_is_the_batch_like_minus_one(tmp_path):
    g_none, g_minus = two_layer((None, 8)), two_layer((-1, 8))
    assert g_none.inputs[0].shape == (-1, 8) and g_none.inputs[0].batched
    assert g_none.tensors[-1].shape == (-1, 8)
    a = g_none.to_bytes(batch_sizes=(1, 4), latency_us=50)
    assert a == g_minus.to_bytes(batch_sizes=(1, 4), latency_us=50)   # the same model file
    x = np.arange(24, dtype=np.float32).reshape(3, 8) - 10
    np.testing.assert_array_equal(sim.reference(g_none, {"x": x})["y"], np.tanh(np.maximum(x, 0)))


def test_graph_none_elsewhere_is_a_clear_error():
    g = sim.Graph("bad")
    with pytest.raises(sim.GraphError, match=r"^input 'x': dimension 1 of shape \(4, None\) is None: only "
                                             r"the first \(batch\) dimension may be None or -1$"):
        g.input("x", "float32", (4, None))
    with pytest.raises(sim.GraphError, match=r"^input 'x': dimension 1 of shape \(None, \[3\]\) must be "
                                             r"an integer \(or None / -1 first for the batch\), got \[3\]; "
                                             r"a str names a dynamic dimension$"):
        g.input("x", "float32", (None, [3]))


def test_pipeline_input_and_spec_take_none(tmp_path):
    path = two_layer((None, 8)).save(str(tmp_path / "m.om"), batch_sizes=(1, 2, 4), latency_us=10)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (None, 8))
    assert x.shape == (-1, 8)
    pipe.output("y", pipe.model(path, x, name="m"))
    (tmp_path / "p.yaml").write_text("inputs: {x: {dtype: float32, shape: [null, 8]}}\n"
                                     "models: [{name: m, path: m.om, inputs: [x]}]\n"
                                     "outputs: {y: m}\n")
    from_spec, kw = spec.load(tmp_path / "p.yaml")
    feeds = {"x": np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8)}
    for p in (pipe, from_spec):
        plan = p.plan()
        assert plan.max_batch == 4 and plan.fixed_batch == 0
        with p.compile(**kw) as engine:
            np.testing.assert_allclose(engine.run(feeds)["y"], np.tanh(np.maximum(feeds["x"], 0)), rtol=1e-6)
    # None after the first dimension: a shaped input (dynamic shapes), which only image-size or
    # dims-gear models take
    shaped = ae.Pipeline(device=0)
    z = shaped.input("z", "float32", (8, None))
    assert z.shape == (8, -1)
    shaped.output("y", shaped.model(path, z, name="m"))
    with pytest.raises(ae.PipelineError, match=r"'z' has the shape \(8, -1\), whose -1 dimensions change"):
        shaped.plan()
