"""NaN goes through every float kernel exactly as numpy's reference says.

The simulator fills fresh device memory with a NaN pattern so that a read of
memory nothing wrote shows up in the results.  That only works if every kernel
carries NaN through as numpy does: a relu that maps NaN to 0, an argmax that
skips NaN, a softmax or layernorm that confines a NaN to one element would
hide exactly those reads.  Each test compares the NaN positions (and every
other value) with ``sim.reference``.
"""

import numpy as np
import pytest
from helpers import mdl

from ascend_engine import sim

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float16": dict(rtol=2e-2, atol=2e-2)}


def with_nans(dtype, shape, seed=0):
    """Random values with NaN and +-inf sprinkled in, at known places."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = np.inf
    flat[5::13] = -np.inf
    return x.astype(dtype)


def same_as_reference(lib, g, feeds, dtype, batch_sizes=None):
    want = sim.reference(g, feeds)
    got = mdl.run(lib, g, feeds, batch_sizes=batch_sizes)
    for name, w in want.items():
        r = got[name]
        assert r.shape == w.shape and r.dtype == w.dtype, name
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(r, w, err_msg=name)
            continue
        assert np.isnan(w).any(), f"{name}: the reference has no NaN, the case proves nothing"
        np.testing.assert_array_equal(np.isnan(r), np.isnan(w), err_msg=f"{name}: NaN positions differ")
        ok = ~np.isnan(w)
        np.testing.assert_array_equal(np.isinf(r[ok]), np.isinf(w[ok]), err_msg=f"{name}: inf differs")
        fin = ok & ~np.isinf(w)
        np.testing.assert_allclose(
            r[fin].astype(np.float64), w[fin].astype(np.float64), **TOL[dtype], err_msg=name
        )


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["relu", "gelu", "sigmoid", "tanh"])
def test_unary_ops_propagate_nan(lib, op, dtype):
    g = sim.Graph(op)
    x = g.input("x", dtype, (-1, 6, 5))
    g.output("y", getattr(g, op)(x))
    same_as_reference(lib, g, {"x": with_nans(dtype, (3, 6, 5))}, dtype, batch_sizes=(1, 4))


def test_relu_keeps_nan_and_zeroes_only_negatives(lib):
    """The case the NaN fill exists for, spelled out: relu(NaN) is NaN, not 0."""
    g = sim.Graph("relu")
    x = g.input("x", "float32", (6,))
    g.output("y", g.relu(x))
    got = mdl.run(lib, g, {"x": np.array([np.nan, -1, 0, 2, -np.inf, np.inf], np.float32)})["y"]
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], [0, 0, 2, 0, np.inf])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_ops_propagate_nan(lib, op, dtype):
    g = sim.Graph(op)
    a = g.input("a", dtype, (4, 5))
    b = g.input("b", dtype, (5,))
    g.output("y", getattr(g, op)(a, b))
    feeds = {"a": with_nans(dtype, (4, 5), 1), "b": with_nans(dtype, (5,), 2)}
    feeds["b"][1] = 0  # inf * 0 is NaN as well
    same_as_reference(lib, g, feeds, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul_spreads_nan_along_rows_and_columns(lib, dtype):
    g = sim.Graph("mm")
    a = g.input("a", dtype, (-1, 16))
    w = np.random.default_rng(3).standard_normal((16, 24)).astype(dtype)
    w[4, 7] = np.nan
    g.output("y", g.matmul(a, g.const(w)))
    x = np.random.default_rng(4).standard_normal((9, 16)).astype(dtype)
    x[2, 5] = np.nan
    same_as_reference(lib, g, {"a": x}, dtype, batch_sizes=(16,))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_row_with_nan_is_all_nan(lib, dtype, axis):
    g = sim.Graph("sm")
    x = g.input("x", dtype, (4, 5, 6))
    g.output("y", g.softmax(x, axis=axis))
    v = np.random.default_rng(5).standard_normal((4, 5, 6)).astype(dtype)
    v[1, 2, 3] = np.nan
    v[0, 0, 0] = np.nan  # first element of its row: the running maximum starts at NaN
    same_as_reference(lib, g, {"x": v}, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_layernorm_row_with_nan_is_all_nan(lib, dtype):
    g = sim.Graph("ln")
    x = g.input("x", dtype, (5, 8))
    g.output("y", g.layernorm(x))
    v = np.random.default_rng(6).standard_normal((5, 8)).astype(dtype)
    v[3, 6] = np.nan
    same_as_reference(lib, g, {"x": v}, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kind", ["mean", "sum"])
def test_reductions_propagate_nan(lib, kind, dtype):
    g = sim.Graph(kind)
    x = g.input("x", dtype, (4, 5, 6))
    g.output("y", getattr(g, kind)(x, axes=(1,)))
    g.output("all", getattr(g, kind)(x))
    v = np.random.default_rng(7).standard_normal((4, 5, 6)).astype(dtype)
    v[2, 1, 4] = np.nan
    same_as_reference(lib, g, {"x": v}, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("axis", [0, -1])
def test_argmax_picks_the_first_nan(lib, dtype, axis):
    g = sim.Graph("am")
    x = g.input("x", dtype, (5, 7))
    g.output("i", g.argmax(x, axis=axis))
    g.output("nan_probe", g.relu(x))  # keeps the reference's NaN check meaningful
    v = np.random.default_rng(8).standard_normal((5, 7)).astype(dtype)
    v[0, 0] = np.nan  # a NaN first: nothing beats it
    v[3, 2] = v[3, 5] = np.nan  # two NaNs: the first one wins
    v[1, 6] = np.nan  # the last element
    same_as_reference(lib, g, {"x": v}, dtype)


def test_cast_keeps_nan_between_float_types_and_maps_it_to_zero_for_integers(lib):
    g = sim.Graph("cast")
    x = g.input("x", "float32", (8,))
    g.output("h", g.cast(x, "float16"))
    g.output("i", g.cast(x, "int32"))
    v = np.array([np.nan, 1.5, -2.5, np.inf, -np.inf, np.nan, 7, 0], np.float32)
    same_as_reference(lib, g, {"x": v}, "float16")
    got = mdl.run(lib, g, {"x": v})["i"]
    np.testing.assert_array_equal(got, [0, 1, -2, 2**31 - 1, -(2**31), 0, 7, 0])
