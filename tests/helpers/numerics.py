"""How a simulator model's outputs are compared with numpy's (``sim.reference``
or a numpy forward pass): ``assert_matches_reference``.

The simulator's float kernels and numpy agree to float32 rounding, not bit for
bit (docs/sim-graph.md).  A reduction (matmul, sum, mean, softmax, layernorm)
gives the same exact sum either way, rounded differently: the simulator's
gemm (ascend_engine/sim/csrc/kernels.c) adds each dot product in k order,
with FMA on a CPU that has AVX2+FMA and without it elsewhere, while numpy's
BLAS picks its own blocking, order and FMA use by CPU.  The two differ by a
few ulp, and by how much depends on the machine, so a test that compares
them bit for bit passes on one CPU and fails on another.

Float tolerances, per dtype (``FLOAT_TOLERANCE``):

- float32: ``rtol=1e-5, atol=1e-5``.  The tests' models reduce over K <= 64
  products of O(1) values (weights and inputs drawn from N(0, 1)), so the
  terms of a dot product add up to sum|a*b| of about 0.64 K <= 40.  Each
  addition rounds by up to u = 2**-24 (6e-8) of the running sum, and the
  roundings of random sign grow as sqrt(K): an implementation's result is
  off by a few u * sum|a*b|, whatever the result itself, since the sum may
  cancel to near 0.  Measured over the simulator's two gemm paths and
  OpenBLAS on such models: at most 2.9e-6 apart for K = 16, 5.7e-6 for
  K = 32, 1.4e-5 for K = 64 (about 5 u * sum|a*b|), which used at most
  0.44 of this tolerance.  Hence an absolute term, with a margin of about
  two at K = 32 on results near 0; rtol=1e-5 (80 to 170 ulp) covers large
  results.  Both stay far below the O(1) difference between two different
  rows, so a swapped, duplicated or missing row still fails.
- float16: ``rtol=2e-3, atol=1e-3``.  The simulator and the reference both
  compute in float32 and round to float16 after every op, so they differ
  only where the float32 results straddle a float16 rounding boundary: one
  float16 ulp (at most 2**-10 = 9.8e-4 of the value), twice that through
  a chain; atol is one ulp of the O(1) intermediates, for a result that
  cancels to near 0 after one of them was rounded the other way.

Integer and bool outputs (argmax, integer ops, casts) are compared exactly.
Results that are exact by construction (copies, elementwise ops without a
reduction, the simulator against itself) keep ``np.testing.assert_array_equal``.
"""

import numpy as np

FLOAT_TOLERANCE = {
    np.dtype(np.float32): {"rtol": 1e-5, "atol": 1e-5},
    np.dtype(np.float16): {"rtol": 2e-3, "atol": 1e-3},
}


def assert_matches_reference(actual, expected, dtype=None, err_msg=""):
    """Assert that ``actual`` (a simulator output) is numpy's ``expected``: the
    same shape and dtype, floats within ``FLOAT_TOLERANCE[dtype]``, every other
    dtype exactly.

    ``dtype`` is the dtype the output is computed in (default: ``expected``'s).
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    dtype = np.dtype(expected.dtype if dtype is None else dtype)
    where = f"{err_msg}: " if err_msg else ""
    assert actual.shape == expected.shape, f"{where}shape {actual.shape}, numpy's is {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}dtype {actual.dtype}, numpy's is {expected.dtype}"
    if dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=err_msg)
        return
    if dtype not in FLOAT_TOLERANCE:
        raise ValueError(f"assert_matches_reference: no tolerance for {dtype} (the simulator computes "
                         f"{', '.join(str(d) for d in FLOAT_TOLERANCE)})")
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               err_msg=err_msg, **FLOAT_TOLERANCE[dtype])
