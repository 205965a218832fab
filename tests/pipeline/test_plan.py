"""The pipeline planner on stand-in models: validation, streams, memory sharing.

These tests need no device work: Pipeline accepts any object that describes
itself like a loaded Model, so the planning rules are checked in isolation.
"""

import numpy as np
import pytest
from helpers.planning import FakeModel

import ascend_engine as ae
from ascend_engine.errors import PipelineError
from ascend_engine.planner.builder import Pipeline
from ascend_engine.planner.memory import ALIGN, PADDING, carve


def mlp(width_in=16, width_out=16, **kw):
    return FakeModel([("x", (-1, width_in))], [("y", (-1, width_out))], **kw)


def chain(n=3, depth=2, **kw):
    pipe = Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, 16))
    for i in range(n):
        h = pipe.model(mlp(), h, name=f"m{i}")
    pipe.output("y", h)
    return pipe.plan(depth=depth, **kw)


def test_carve_follows_the_documented_alignment():
    assert carve(1) == ALIGN
    assert carve(ALIGN - PADDING) == ALIGN
    assert carve(ALIGN - PADDING + 1) == 2 * ALIGN
    assert all(carve(n) % ALIGN == 0 and carve(n) >= n + PADDING for n in range(0, 5000, 37))


def test_chain_gets_a_stream_per_model_and_copy_ordering():
    plan = chain()
    assert [n.stream for n in plan.nodes] == [0, 1, 2]
    assert plan.n_streams == 3 and not plan.single_stream
    assert plan.max_batch == 8 and plan.fixed_batch == 0
    single = chain(streams="single")
    assert single.n_streams == 1 and [n.stream for n in single.nodes] == [0, 0, 0]


def test_chain_shares_memory_between_tensors_that_never_overlap():
    plan = chain(n=3)
    t = plan.tensors
    # x (read by m0) can be reused by m1's output: m0 finished before m1 starts
    x, h0, h1, h2 = (t[i] for i in range(4))
    assert h1.offset == x.offset
    # h0 is read by m1 while m1 writes h1: they must not share
    assert h0.offset != h1.offset
    # m2 reads h1 while writing h2; h0's last reader (m1) is over by then
    assert h2.offset != h1.offset and h2.offset in (x.offset, h0.offset)
    assert plan.slot_bytes < plan.unshared_bytes
    for tensor in t:
        assert tensor.offset % ALIGN == 0 and tensor.capacity % ALIGN == 0
        assert tensor.capacity >= tensor.row_bytes * plan.max_batch


def test_buffers_hold_every_descriptor_size():
    big_in = FakeModel([("x", (-1, 16))], [("y", (-1, 16))])
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(big_in, x, name="a"))
    plan = pipe.plan()
    for spec, t in zip(big_in.inputs + big_in.outputs, plan.tensors, strict=True):
        assert t.capacity >= spec.nbytes


def test_diamond_keeps_parallel_branches_apart():
    a, b, c = mlp(), mlp(), mlp()
    d = FakeModel([("l", (-1, 16)), ("r", (-1, 16))], [("y", (-1, 16))])
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    ha = pipe.model(a, x, name="A")
    hb = pipe.model(b, ha, name="B")
    hc = pipe.model(c, ha, name="C")
    pipe.output("y", pipe.model(d, hb, hc, name="D"))
    plan = pipe.plan(depth=3)
    names = [n.name for n in plan.nodes]
    assert names.index("A") < names.index("B") < names.index("D")
    assert names.index("C") < names.index("D")
    by_name = {t.name: t for t in plan.tensors}
    # B and C run concurrently on different streams: their outputs, and A's
    # output that both read, all need their own memory
    offsets = {by_name[n].offset for n in ("A.y", "B.y", "C.y")}
    assert len(offsets) == 3
    assert len({n.stream for n in plan.nodes}) == 4
    # D's inputs include a dynamic-batch slot at index 2
    node_d = plan.nodes[names.index("D")]
    assert node_d.inputs[node_d.dyn_index] == -1 and node_d.dyn_offset >= 0


def test_same_model_object_in_two_nodes_shares_a_stream():
    m = mlp()
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(m, pipe.model(m, x, name="first"), name="second"))
    plan = pipe.plan()
    assert plan.nodes[0].stream == plan.nodes[1].stream


def test_stream_labels_group_nodes():
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    h = pipe.model(mlp(), x, name="a", stream="s")
    h = pipe.model(mlp(), h, name="b", stream="s")
    pipe.output("y", pipe.model(mlp(), h, name="c"))
    plan = pipe.plan()
    assert plan.nodes[0].stream == plan.nodes[1].stream != plan.nodes[2].stream


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda p, x: p.model(mlp(width_in=8), x, name="n"),
         "model node 'n' input 'x' (fed by 'x'): expected shape (batch, 8), got (batch, 16)"),
        (lambda p, x: p.model(FakeModel([("x", (-1, 16), "float16")], [("y", (-1, 4))]), x, name="n"),
         "model node 'n' input 'x' (fed by 'x'): expected dtype float16, got float32"),
        (lambda p, x: p.model(FakeModel([("a", (-1, 16)), ("b", (-1, 16))], [("y", (-1, 4))]), x, name="n"),
         "model node 'n': the model takes 2 input(s) (a, b), got 1"),
    ],
)
def test_binding_mismatches_name_node_and_tensor(build, message):
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", build(pipe, x))
    with pytest.raises(PipelineError) as info:
        pipe.plan()
    assert message in str(info.value)


def test_unused_input_is_an_error():
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    pipe.input("unused", "float32", (-1, 4))
    pipe.output("y", pipe.model(mlp(), x, name="n"))
    with pytest.raises(PipelineError, match="input 'unused' is not used"):
        pipe.plan()


def test_tensor_from_another_pipeline_is_rejected():
    other = Pipeline()
    y = other.input("x", "float32", (-1, 16))
    pipe = Pipeline()
    pipe.input("x", "float32", (-1, 16))
    with pytest.raises(PipelineError, match="belongs to another pipeline"):
        pipe.model(mlp(), y, name="n")


def test_graph_without_outputs_or_nodes():
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    with pytest.raises(PipelineError, match="no model nodes"):
        pipe.plan()
    pipe.model(mlp(), x, name="n")
    with pytest.raises(PipelineError, match="no outputs"):
        pipe.plan()


def test_duplicate_names_and_bad_options():
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    with pytest.raises(PipelineError, match="already used"):
        pipe.input("x", "float32", (-1, 16))
    h = pipe.model(mlp(), x, name="n")
    with pytest.raises(PipelineError, match="already used"):
        pipe.model(mlp(), x, name="n")
    pipe.output("y", h)
    with pytest.raises(PipelineError, match="depth must be between 1 and 4096, got 0"):
        pipe.plan(depth=0)
    with pytest.raises(PipelineError, match="streams must be"):
        pipe.plan(streams="many")


def test_model_on_another_device_gets_copies_both_ways():
    pipe = Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(mlp(device_id=1), x, name="n"))
    plan = pipe.plan()
    assert plan.devices == (0, 1)
    assert [(n.kind, n.device) for n in plan.nodes] == [("copy", 1), ("model", 1), ("copy", 0)]
    copy_in, model, copy_out = plan.nodes
    assert plan.tensors[copy_in.inputs[0]].device == 0 and plan.tensors[copy_in.outputs[0]].device == 1
    assert [t for t in model.inputs if t >= 0] == copy_in.outputs and copy_out.inputs == model.outputs
    assert plan.outputs == [("y", copy_out.outputs[0])] and plan.tensors[copy_out.outputs[0]].device == 0
    assert [plan.stream_devices[n.stream] for n in plan.nodes] == [1, 1, 0]
    with pytest.raises(PipelineError, match="streams='single' runs everything on one stream, but the "
                       "pipeline spans devices \\[0, 1\\]"):
        pipe.plan(streams="single")


def test_pipeline_on_missing_device_is_rejected():
    pipe = Pipeline(device=99)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(mlp(device_id=99), x, name="n"))
    with pytest.raises(PipelineError, match="pipeline device 99 does not exist"):
        pipe.plan()


def test_static_models_fix_the_batch_and_mixed_batches_fail():
    static4 = FakeModel([("x", (4, 16))], [("y", (4, 16))], gears=())
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(mlp(), pipe.model(static4, x, name="s"), name="d"))
    plan = pipe.plan()
    assert plan.fixed_batch == 4 and plan.max_batch == 4
    assert plan.nodes[0].static_batch == 4 and plan.nodes[0].dyn_index == -1

    static2 = FakeModel([("x", (2, 16))], [("y", (2, 16))], gears=())
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(static2, pipe.model(static4, x, name="s4"), name="s2"))
    with pytest.raises(PipelineError, match=r"mixes fixed batch sizes \[2, 4\]"):
        pipe.plan()


def test_max_batch_is_the_smallest_largest_gear():
    pipe = Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    h = pipe.model(mlp(gears=(1, 2, 4, 8)), x, name="a")
    pipe.output("y", pipe.model(mlp(gears=(1, 3)), h, name="b"))
    assert pipe.plan().max_batch == 3


def test_memory_report_recommends_peak_plus_headroom():
    plan = chain(n=3, depth=4)
    report = plan.memory_report()
    assert report["arena_bytes"] == plan.slot_bytes * 4
    assert report["peak_working_set"] == plan.working_set * 4
    peak = report["peak_working_set"]
    assert peak * 1.10 <= report["recommended_pool_bytes"] <= peak * 1.2 + ALIGN
    assert set(report["per_node_bytes"]) == {"m0", "m1", "m2"}


def test_path_node_pinned_to_another_device_runs_there(tmp_path):
    from ascend_engine import sim

    g = sim.Graph("m")
    g.output("y", g.relu(g.input("x", "float32", (-1, 16))))
    path = tmp_path / "m.om"
    g.save(str(path), batch_sizes=(1, 2))
    pipe = ae.Pipeline(device=0)   # the compiling Pipeline (the planner's does not compile)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(path, x, name="n", device=1))
    xs = np.linspace(-1, 1, 5 * 16, dtype=np.float32).reshape(5, 16)
    with pipe.compile(depth=2) as engine:
        assert engine.plan.nodes[1].model.device_id == 1
        np.testing.assert_array_equal(engine.run_batch({"x": xs}, batch_size=2)["y"], np.maximum(xs, 0))
    with pytest.raises(PipelineError, match="model node 'bad': .*deviceId 99 is out of range"):
        Pipeline(device=0).model(path, name="bad", device=99)
