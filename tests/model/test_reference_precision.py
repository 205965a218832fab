"""How exactly the simulator's float results are pinned down (docs/sim-graph.md).

Against numpy (``sim.reference``) a reduction agrees to float32 rounding, not
bit for bit: the simulator's gemm and numpy's BLAS sum in different orders,
each chosen by the CPU, so the tests compare with
``helpers.numerics.assert_matches_reference``.  Against itself the simulator
is exact: a row's result does not depend on the rows beside it in the
execution, the gear it runs at, or its place in the batch.  Tests that
compare a pipeline with its models run by hand (instances, replicas, chunks
of crops, padding to a gear) rely on that, bit for bit.
"""

import numpy as np
import pytest
from helpers import mdl
from helpers.numerics import FLOAT_TOLERANCE, assert_matches_reference

from ascend_engine import sim

GEARS = (1, 3, 4, 8, 16)


def wide_dense():
    """y = x @ W with K = 300 (two of the gemm's K blocks) and N = 40 (16-, 8- and
    1-column tails): every code path of the simulator's gemm."""
    rng = np.random.default_rng(5)
    g = sim.Graph("wide")
    x = g.input("x", "float32", (-1, 300))
    g.output("y", g.matmul(x, g.const((rng.standard_normal((300, 40)) / np.sqrt(300)).astype(np.float32))))
    return g


def test_a_rows_result_does_not_depend_on_the_rows_beside_it(lib):
    g = wide_dense()
    model = mdl.load_bytes(lib, g.to_bytes(batch_sizes=GEARS))
    try:
        x = np.random.default_rng(6).standard_normal((16, 300)).astype(np.float32)
        alone = np.concatenate([mdl.run_loaded(model, {"x": x[i:i + 1]})["y"] for i in range(16)])
        # 4-row tiles, leftover rows, padded gears, and the rows at other places
        for start, rows in [(0, 16), (0, 13), (3, 5), (1, 3), (7, 2), (2, 4), (9, 7)]:
            got = mdl.run_loaded(model, {"x": x[start:start + rows]})["y"]
            np.testing.assert_array_equal(got, alone[start:start + rows], err_msg=f"{rows} rows from {start}")
        flipped = mdl.run_loaded(model, {"x": x[::-1].copy()})["y"]
        np.testing.assert_array_equal(flipped, alone[::-1])
        # and numpy agrees with every one of them to float32 rounding
        assert_matches_reference(alone, sim.reference(g, {"x": x})["y"])
    finally:
        model.close()


def test_a_few_ulp_pass_and_a_swapped_or_duplicated_row_fails():
    rng = np.random.default_rng(1)
    want = rng.standard_normal((6, 8)).astype(np.float32)
    off = want.view(np.int32) + rng.integers(-3, 4, want.shape).astype(np.int32)
    assert_matches_reference(off.view(np.float32), want)          # 3 ulp: rounding, not a bug
    swapped = want[[0, 2, 1, 3, 4, 5]]
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        assert_matches_reference(swapped, want)
    duplicated = want[[0, 1, 1, 3, 4, 5]]
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        assert_matches_reference(duplicated, want)
    with pytest.raises(AssertionError, match=r"shape \(5, 8\), numpy's is \(6, 8\)"):
        assert_matches_reference(want[:5], want)
    with pytest.raises(AssertionError, match="dtype float64, numpy's is float32"):
        assert_matches_reference(want.astype(np.float64), want)


def test_integers_are_compared_exactly_and_float16_to_its_rounding():
    labels = np.array([3, 1, 4, 1, 5], np.int32)
    assert_matches_reference(labels.copy(), labels)
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        assert_matches_reference(labels + np.array([0, 0, 1, 0, 0], np.int32), labels)
    half = np.linspace(-4, 4, 33, dtype=np.float16)
    one_ulp = np.nextafter(half, np.float16(np.inf))
    assert_matches_reference(one_ulp, half)
    with pytest.raises(AssertionError):
        assert_matches_reference(half[::-1].copy(), half)
    with pytest.raises(ValueError, match="no tolerance for float64"):
        assert_matches_reference(np.zeros(2), np.zeros(2))
    assert set(FLOAT_TOLERANCE) == {np.dtype("float32"), np.dtype("float16")}
