"""Memory sharing on the device: tensors placed at one offset never clobber each other.

Each test runs a graph whose plan shares memory (or must not) and checks the
numbers exactly or against sim.reference: a planner that shares a buffer too
eagerly gives wrong numbers here, not an error.
"""

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, compile_chain, dense, joiner
from helpers.planning import check_memory_plan
from helpers.scale import scaled

import ascend_engine as ae
from ascend_engine import sim


def unary(name, op):
    """x -> op(x) as a one-op model with one output called ``y``."""
    g = sim.Graph(name)
    x = g.input("x", "float32", (-1, WIDTH))
    g.output("y", op(g, x))
    return g


def test_unused_output_does_not_share_memory_with_a_live_tensor(build):
    # Model T's only output (tanh x) is read by nothing; independent model C
    # (2 x) writes the pipeline output on another stream.  T comes first in
    # topological order but runs late: it shares its stream with P, which
    # holds the stream 2 ms, while C computes at once and then keeps its
    # stream 6 ms.  If T's and C's outputs share bytes, T's tanh lands on top
    # of C's result before the copy-out reads it.
    p_model = build(unary("relu", lambda g, x: g.relu(x)), "hold-relu", latency_us=2000)
    t_model = build(unary("tanh", lambda g, x: g.tanh(x)), "unused-tanh", latency_us=0)
    c_model = build(unary("twice", lambda g, x: g.add(x, x)), "twice", latency_us=6000)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    p = pipe.model(p_model.path, x, name="P", stream="late")
    pipe.model(t_model.path, x, name="T", stream="late")   # its output is never read
    c = pipe.model(c_model.path, x, name="C")
    pipe.output("c", c)
    pipe.output("p", p)
    rng = np.random.default_rng(21)
    data = rng.standard_normal((64, WIDTH)).astype(np.float32)
    with pipe.compile(depth=2) as engine:
        by_name = {t.name: t for t in engine.plan.tensors}
        assert by_name["T.y"].offset != by_name["C.y"].offset
        # one request at a time: each runs the timeline above from an idle device
        outs = [engine.run({"x": data[i:i + 8]}) for i in range(0, len(data), 8)]
    # 2 x and relu x are exact in float32: every element must be exactly that
    np.testing.assert_array_equal(np.concatenate([o["c"] for o in outs]), data + data)
    np.testing.assert_array_equal(np.concatenate([o["p"] for o in outs]), np.maximum(data, 0))


@pytest.mark.parametrize("length", [4, 6])
def test_long_chains_share_memory_and_stay_exact(build, length):
    # On a chain a tensor is dead once its one reader has run: two buffers
    # used in turn hold the whole chain however long it is, and the numbers
    # stay right.
    rng = np.random.default_rng(length)
    models = [build(dense(200 + i, act="tanh"), f"long{i}", latency_us=int(rng.integers(0, 400)))
              for i in range(length)]
    x = rng.standard_normal((scaled(96), WIDTH)).astype(np.float32)
    with compile_chain(models, depth=3) as engine:
        plan = engine.plan
        assert len({t.offset for t in plan.tensors}) == 2
        assert plan.slot_bytes < plan.unshared_bytes
        out = engine.run_batch({"x": x}, batch_size=5)
    np.testing.assert_allclose(out["y"], chain_reference(models, x), rtol=1e-4, atol=1e-5)


def uneven(build, latencies):
    """An uneven DAG: a long branch beside a short one, joined, with a side output.

    x -> A -> B -> C -> J(l) ;  x -> S -> J(r) ;  outputs: J's y and S's s.
    S's output is read by J and by the copy-out; A..C are a chain of three.
    In topological order S comes after C, so a planner that reuses memory by
    topological index instead of by happens-before puts S's output on top of
    tensors the long branch still uses.
    """
    a, b, c, s = (build(dense(300 + i, act="tanh"), f"uneven{i}", latency_us=lat)
                  for i, lat in enumerate(latencies[:4]))
    j = build(joiner(310), "uneven-join", latency_us=latencies[4])
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    h = pipe.model(a.path, x, name="A")
    h = pipe.model(b.path, h, name="B")
    h = pipe.model(c.path, h, name="C")
    hs = pipe.model(s.path, x, name="S")
    pipe.output("y", pipe.model(j.path, h, hs, name="J"))
    pipe.output("s", hs)

    def reference(data):
        rs = s.ref(x=data)
        return {"y": j.ref(l=c.ref(x=b.ref(x=a.ref(x=data))), r=rs), "s": rs}

    return pipe, reference


@pytest.mark.parametrize("latencies", [(0, 0, 0, 2000, 0), (800, 800, 800, 0, 300), (300, 0, 900, 500, 0)])
def test_uneven_dag_matches_reference(build, latencies):
    pipe, reference = uneven(build, latencies)
    rng = np.random.default_rng(sum(latencies))
    feeds = [rng.standard_normal((int(rng.integers(1, 9)), WIDTH)).astype(np.float32)
             for _ in range(scaled(40))]
    with pipe.compile(depth=3) as engine:
        results = list(engine.run_many({"x": f} for f in feeds))
    for data, out in zip(feeds, results, strict=True):
        ref = reference(data)
        np.testing.assert_allclose(out["y"], ref["y"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(out["s"], ref["s"], rtol=1e-4, atol=1e-5)


def test_uneven_dag_keeps_the_short_branch_apart_from_the_long_one(build):
    pipe, _ = uneven(build, (0, 0, 0, 0, 0))
    plan = pipe.plan(depth=1)
    by_name = {t.name: t for t in plan.tensors}
    # S runs concurrently with A, B and C: its output may share with none of
    # the tensors they read or write
    for name in ("x", "A.y", "B.y", "C.y"):
        assert by_name["S.y"].offset != by_name[name].offset, name


def test_stream_order_alone_lets_a_later_node_reuse_memory(build):
    # x -> A -> t -> P -> p ;  x -> Q -> q, with P and Q on one stream.  Q has
    # no data dependency on P, but the stream runs P first, so Q's output may
    # take t's bytes (t's only reader, P, is over).  Q is slow to start and P
    # slow to finish: were that order not real, q would be clobbered.
    a, p, q = (build(dense(320 + i), f"order{i}", latency_us=lat) for i, lat in enumerate((0, 1500, 0)))
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    t = pipe.model(a.path, x, name="A")
    pipe.output("p", pipe.model(p.path, t, name="P", stream="s"))
    pipe.output("q", pipe.model(q.path, x, name="Q", stream="s"))
    rng = np.random.default_rng(32)
    data = rng.standard_normal((24, WIDTH)).astype(np.float32)
    with pipe.compile(depth=2) as engine:
        by_name = {tensor.name: tensor for tensor in engine.plan.tensors}
        assert by_name["Q.y"].offset == by_name["A.y"].offset
        check_memory_plan(engine.plan)
        out = engine.run_batch({"x": data}, batch_size=4)
    np.testing.assert_allclose(out["p"], p.ref(x=a.ref(x=data)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["q"], q.ref(x=data), rtol=1e-4, atol=1e-5)
