"""Simulator matmul kernel against numpy's matmul on the same shapes.

Run:  python -m pytest benchmarks/bench_matmul.py --benchmark-only -q -s

Each shape is timed two ways in one run (the machines are shared, so only
side-by-side ratios mean anything):

* ``numpy``     -- ``a @ w`` (numpy's BLAS, single-threaded unless
  OPENBLAS_NUM_THREADS / OMP_NUM_THREADS say otherwise);
* ``simulator`` -- a one-matmul simulator model executed with aclmdlExecute
  (latency_us=0; the time includes the call overhead and the output copy);

and the ratio simulator / numpy (median of interleaved repeats) is printed and
stored in the benchmark's ``extra_info``.
"""

import os

# The simulator's kernel runs on one thread; compare with single-threaded
# BLAS (set before numpy loads; export the variables to compare otherwise).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import statistics
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests")]

from helpers import mdl, simlib  # noqa: E402

from ascend_engine import sim  # noqa: E402

SHAPES = [(1, 1024, 1024), (64, 1024, 1024), (256, 512, 512), (512, 1024, 1024)]


@pytest.fixture(scope="module")
def lib():
    lib = simlib.load()
    assert lib.aclInit(None) in (0, 100002)
    assert lib.aclrtSetDevice(0) == 0
    return lib


class MatmulModel:
    def __init__(self, lib, m, k, n):
        rng = np.random.default_rng(0)
        self.a = rng.standard_normal((m, k)).astype(np.float32)
        self.w = rng.standard_normal((k, n)).astype(np.float32)
        g = sim.Graph("mm")
        g.output("y", g.matmul(g.input("a", "float32", (m, k)), g.const(self.w)))
        self.model = mdl.load_bytes(lib, g.to_bytes())
        self.bufs = mdl.Buffers(self.model)
        self.bufs.feed({"a": self.a})
        self.lib = lib

    def run(self):
        rc = self.lib.aclmdlExecute(self.model.id, self.bufs.input, self.bufs.output)
        assert rc == 0, simlib.recent_error(self.lib)

    def check(self):
        self.run()
        got = self.bufs.fetch()["y"]
        np.testing.assert_allclose(got, self.a @ self.w, rtol=1e-3, atol=1e-3)

    def close(self):
        self.bufs.close()
        self.model.close()


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@pytest.mark.parametrize("m,k,n", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_matmul_vs_numpy(benchmark, lib, m, k, n):
    mm = MatmulModel(lib, m, k, n)
    try:
        mm.check()
        repeats = max(3, int(2e8 / (2 * m * k * n)))
        sims, nps = [], []
        for _ in range(5):  # interleave so both see the same machine load
            sims.append(_median_time(mm.run, repeats))
            nps.append(_median_time(lambda: mm.a @ mm.w, repeats))
        t_sim, t_np = statistics.median(sims), statistics.median(nps)
        ratio = t_sim / t_np
        gflops = 2 * m * k * n / t_sim / 1e9
        benchmark.extra_info.update(
            shape=f"{m}x{k}x{n}",
            sim_ms=t_sim * 1e3,
            numpy_ms=t_np * 1e3,
            ratio_sim_over_numpy=ratio,
            sim_gflops=gflops,
        )
        print(
            f"\nmatmul {m}x{k} @ {k}x{n}: simulator {t_sim * 1e3:.3f} ms ({gflops:.1f} GFLOP/s), "
            f"numpy {t_np * 1e3:.3f} ms, simulator/numpy = {ratio:.2f}x"
        )
        benchmark.pedantic(mm.run, rounds=5, iterations=1)
    finally:
        mm.close()
