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

- float32: ``rtol=1e-5, atol=1e-6``.  The tests' models reduce over K <= 64
  terms of O(1) values.  Each rounding adds at most u = 2**-24 (6e-8) of the
  running sum, and a sum of K roundings of random sign grows as sqrt(K): a
  result is off by about sqrt(K) * u * sum|terms| / |result|, 5e-7 relative
  for K = 64 when nothing cancels, and either implementation may be off
  that much the other way.  rtol=1e-5 leaves a factor of ten over that, and
  stays below the O(1) relative difference between two different rows,
  so a swapped, duplicated or missing row still fails.  atol covers results
  that cancel to near 0, where the error is a few u times the terms (about
  1e-7 to 1e-6 absolute here) and relative error says nothing.
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
    np.dtype(np.float32): {"rtol": 1e-5, "atol": 1e-6},
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
