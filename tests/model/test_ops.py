"""Every op of sim.Graph, run by the simulator's C kernels, against sim.reference."""

import numpy as np
import pytest
from helpers import mdl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascend_engine import sim

SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float16": dict(rtol=2e-2, atol=2e-2)}


def rnd(rng, shape, dtype="float32", lo=-2.0, hi=2.0):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(lo, hi, size=shape).astype(dt)
    if dt == np.uint8:
        return rng.integers(0, 256, size=shape, dtype=np.int64).astype(dt)
    return rng.integers(-1000, 1000, size=shape).astype(dt)


def check_graph(lib, g, feeds, batch_sizes=None, dtype="float32", stream=None):
    want = sim.reference(g, feeds)
    got = mdl.run(lib, g, feeds, batch_sizes=batch_sizes, stream=stream)
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert got[k].shape == want[k].shape, k
        if want[k].dtype.kind == "f":
            np.testing.assert_allclose(
                got[k].astype(np.float64), want[k].astype(np.float64), **TOL[dtype], err_msg=k
            )
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["relu", "gelu", "sigmoid", "tanh"])
def test_unary(lib, op, dtype):
    rng = np.random.default_rng(1)
    g = sim.Graph(op)
    x = g.input("x", dtype, (-1, 7, 5))
    g.output("y", getattr(g, op)(x))
    check_graph(lib, g, {"x": rnd(rng, (3, 7, 5), dtype, -6, 6)}, batch_sizes=(1, 4), dtype=dtype)


@SETTINGS
@given(data=st.data())
def test_binary_broadcast(lib, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    rank = data.draw(st.integers(1, 4))
    out = [data.draw(st.integers(1, 5)) for _ in range(rank)]
    # b takes a suffix of out's dims, each kept or set to 1
    brank = data.draw(st.integers(0, rank))
    bshape = [d if data.draw(st.booleans()) else 1 for d in out[rank - brank :]]
    ashape = [d if data.draw(st.booleans()) else 1 for d in out]
    dtype = data.draw(st.sampled_from(["float32", "float16", "int32", "int64", "uint8"]))
    op = data.draw(st.sampled_from(["add", "mul"]))
    swap = data.draw(st.booleans())
    g = sim.Graph("bin")
    a = g.input("a", dtype, ashape)
    b = g.input("b", dtype, bshape)
    g.output("y", getattr(g, op)(b, a) if swap else getattr(g, op)(a, b))
    check_graph(
        lib,
        g,
        {"a": rnd(rng, ashape, dtype), "b": rnd(rng, bshape, dtype)},
        dtype=dtype if dtype.startswith("float") else "float32",
    )


def test_binary_batched_with_const(lib):
    rng = np.random.default_rng(2)
    g = sim.Graph("bias")
    x = g.input("x", "float32", (-1, 3, 8))
    y = g.mul(g.add(x, g.const(rnd(rng, (8,)))), g.const(rnd(rng, (3, 1))))
    g.output("y", g.add(y, 0.5))
    for batch in (1, 2, 5):
        check_graph(lib, g, {"x": rnd(rng, (batch, 3, 8))}, batch_sizes=(2, 5))


@SETTINGS
@given(data=st.data())
def test_matmul(lib, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    m, k, n = (data.draw(st.integers(1, 40)) for _ in range(3))
    dtype = data.draw(st.sampled_from(["float32", "float16"]))
    lead = data.draw(st.sampled_from([(), (3,), (2, 1)]))
    blead = data.draw(st.sampled_from([(), (1,), lead]))
    g = sim.Graph("mm")
    a = g.input("a", dtype, lead + (m, k))
    b = g.input("b", dtype, blead + (k, n))
    g.output("y", g.matmul(a, b))
    check_graph(
        lib, g, {"a": rnd(rng, lead + (m, k), dtype), "b": rnd(rng, blead + (k, n), dtype)}, dtype=dtype
    )


def test_matmul_large_blocks(lib):
    """Shapes past the cache blocks (K > 256, N > 256) and ragged edges."""
    rng = np.random.default_rng(3)
    g = sim.Graph("mm")
    a = g.input("a", "float32", (-1, 300))
    w = g.const(rnd(rng, (300, 277)))
    g.output("y", g.matmul(a, w))
    check_graph(lib, g, {"a": rnd(rng, (37, 300))}, batch_sizes=(37, 64))


def test_batched_attention_matmul(lib):
    rng = np.random.default_rng(4)
    g = sim.Graph("att")
    q = g.input("q", "float32", (-1, 2, 6, 4))
    k = g.input("k", "float32", (-1, 2, 6, 4))
    g.output("s", g.matmul(q, g.transpose(k, (0, 1, 3, 2))))
    check_graph(lib, g, {"q": rnd(rng, (3, 2, 6, 4)), "k": rnd(rng, (3, 2, 6, 4))}, batch_sizes=(1, 3))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("axis", [-1, 1, 2])
def test_softmax(lib, dtype, axis):
    rng = np.random.default_rng(5)
    g = sim.Graph("sm")
    x = g.input("x", dtype, (-1, 4, 9))
    g.output("y", g.softmax(x, axis=axis))
    check_graph(lib, g, {"x": rnd(rng, (2, 4, 9), dtype, -5, 5)}, batch_sizes=(2,), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("affine", [False, True])
def test_layernorm(lib, dtype, affine):
    rng = np.random.default_rng(6)
    g = sim.Graph("ln")
    x = g.input("x", dtype, (-1, 5, 16))
    kw = dict(gamma=rnd(rng, (16,), dtype), beta=rnd(rng, (16,), dtype)) if affine else {}
    g.output("y", g.layernorm(x, eps=1e-3, **kw))
    check_graph(lib, g, {"x": rnd(rng, (3, 5, 16), dtype, -3, 3)}, batch_sizes=(1, 3), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "uint8"])
def test_layout_ops(lib, dtype):
    rng = np.random.default_rng(7)
    g = sim.Graph("layout")
    x = g.input("x", dtype, (-1, 2, 3, 4))
    c = g.input("c", dtype, (2, 5))
    t = g.transpose(x, (0, 3, 1, 2))
    r = g.reshape(t, (-1, 4, 6))
    cat = g.concat([r, g.reshape(x, (-1, 4, 6)), r], axis=2)
    g.output("cat", cat)
    g.output("t", g.transpose(x, (0, 2, 3, 1)))
    g.output("static", g.concat([c, g.transpose(g.reshape(c, (5, 2)), (1, 0))], axis=0))
    g.output("flat", g.reshape(c, (-1,)))
    feeds = {"x": rnd(rng, (3, 2, 3, 4), dtype), "c": rnd(rng, (2, 5), dtype)}
    check_graph(lib, g, feeds, batch_sizes=(1, 3, 8))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "uint8"])
def test_argmax(lib, dtype):
    rng = np.random.default_rng(8)
    g = sim.Graph("am")
    x = g.input("x", dtype, (-1, 6, 7))
    g.output("a1", g.argmax(x, axis=1))
    g.output("a2", g.argmax(x))
    feeds = {"x": rnd(rng, (4, 6, 7), dtype)}
    feeds["x"][0, :, 0] = feeds["x"][0, 0, 0]  # ties: the first index wins
    check_graph(lib, g, feeds, batch_sizes=(4,))


def test_argmax_nan_wins(lib):
    g = sim.Graph("am")
    x = g.input("x", "float32", (2, 4))
    g.output("a", g.argmax(x))
    feeds = {"x": np.array([[1, np.nan, 3, np.nan], [5, 1, 2, 9]], np.float32)}
    check_graph(lib, g, feeds)


DTYPES = ["float32", "float16", "int32", "int64", "uint8"]


@pytest.mark.parametrize("src", DTYPES)
def test_cast(lib, src):
    rng = np.random.default_rng(9)
    g = sim.Graph("cast")
    x = g.input("x", src, (-1, 10))
    for dst in DTYPES:
        g.output(dst, g.cast(x, dst))
    if np.dtype(src).kind == "f":
        a = rnd(rng, (3, 10), src, -100, 250)  # in range for every destination except uint8 negatives
        a = np.abs(a).astype(src)
    else:
        a = rnd(rng, (3, 10), src)
        if src != "uint8":
            a = np.clip(a, -2000, 2000).astype(src)
    feeds = {"x": a}
    want = sim.reference(g, feeds)
    got = mdl.run(lib, g, feeds, batch_sizes=(3,))
    for k in want:
        assert got[k].dtype == want[k].dtype
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{src}->{k}")


@pytest.mark.parametrize(
    "op,dtype",
    [
        ("mean", "float32"),
        ("mean", "float16"),
        ("sum", "float32"),
        ("sum", "float16"),
        ("sum", "int32"),
        ("sum", "int64"),
    ],
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(lib, op, dtype, keepdims):
    rng = np.random.default_rng(10)
    g = sim.Graph("red")
    x = g.input("x", dtype, (-1, 3, 4, 5))
    fn = getattr(g, op)
    g.output("a", fn(x, axes=(2, 3), keepdims=keepdims))  # global pooling, NCHW style
    g.output("b", fn(x, axes=1, keepdims=keepdims))
    g.output("c", fn(x, axes=(1, 3), keepdims=keepdims))
    check_graph(
        lib,
        g,
        {"x": rnd(rng, (2, 3, 4, 5), dtype)},
        batch_sizes=(2, 4),
        dtype=dtype if dtype.startswith("float") else "float32",
    )


def test_static_model_all_axes(lib):
    rng = np.random.default_rng(11)
    g = sim.Graph("static")
    x = g.input("x", "float32", (3, 4), format="NCHW")
    g.output("s", g.sum(x))
    g.output("m", g.mean(x, keepdims=True))
    g.output("x", x)  # an input as an output
    g.output("k", g.const(np.arange(3, dtype=np.int32)))  # a constant as an output
    check_graph(lib, g, {"x": rnd(rng, (3, 4))})


def test_integer_wraparound(lib):
    g = sim.Graph("wrap")
    a = g.input("a", "int32", (2,))
    g.output("s", g.add(a, a))
    g.output("p", g.mul(a, a))
    check_graph(lib, g, {"a": np.array([2**31 - 1, -(2**31)], np.int32)})


def test_async_on_stream(lib, stream):
    rng = np.random.default_rng(12)
    g = sim.Graph("async")
    x = g.input("x", "float32", (-1, 8))
    g.output("y", g.tanh(g.matmul(x, g.const(rnd(rng, (8, 8))))))
    check_graph(lib, g, {"x": rnd(rng, (2, 8))}, batch_sizes=(2,), stream=stream)
