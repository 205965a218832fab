"""Whole models (MLP, transformer block, small CNN-style head) and dynamic batch."""

import ctypes

import numpy as np
import pytest
from helpers import acl, mdl
from helpers.mdl import mlp, transformer_block
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascend_engine import sim

GEARS = (1, 2, 4, 8)


def compare(got, want, rtol=1e-4, atol=1e-4):
    assert set(got) == set(want)
    for k in want:
        assert got[k].shape == want[k].shape and got[k].dtype == want[k].dtype, k
        if want[k].dtype.kind == "f":
            np.testing.assert_allclose(
                got[k].astype(np.float64), want[k].astype(np.float64), rtol=rtol, atol=atol, err_msg=k
            )
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_mlp_every_batch(lib):
    rng = np.random.default_rng(0)
    g = mlp(rng)
    model = mdl.load_bytes(lib, g.to_bytes(batch_sizes=GEARS))
    try:
        assert model.gears == list(GEARS)
        for batch in range(1, max(GEARS) + 1):  # every gear and every batch below the largest
            x = rng.standard_normal((batch, 32)).astype(np.float32)
            got = mdl.run_loaded(model, {"x": x})
            want = sim.reference(g, {"x": x})
            # argmax may differ only where the top two logits are float-close
            compare(
                {k: v for k, v in got.items() if k != "label"},
                {k: v for k, v in want.items() if k != "label"},
            )
            top2 = np.sort(want["logits"], axis=1)[:, -2:]
            clear = top2[:, 1] - top2[:, 0] > 1e-4
            np.testing.assert_array_equal(got["label"][clear], want["label"][clear])
    finally:
        model.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seq=st.sampled_from([4, 8]),
    d=st.sampled_from([8, 16]),
    heads=st.sampled_from([1, 2]),
    batch=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_transformer_block(lib, seq, d, heads, batch, seed):
    rng = np.random.default_rng(seed)
    g = transformer_block(rng, seq=seq, d=d, heads=heads)
    x = rng.standard_normal((batch, seq, d)).astype(np.float32)
    got = mdl.run(lib, g, {"x": x}, batch_sizes=(1, 2, 4))
    compare(got, sim.reference(g, {"x": x}), rtol=1e-3, atol=1e-4)


def test_transformer_block_float16(lib):
    rng = np.random.default_rng(3)
    g = transformer_block(rng, dtype="float16")
    x = rng.standard_normal((3, 8, 16)).astype(np.float16)
    got = mdl.run(lib, g, {"x": x}, batch_sizes=(4,))
    want = sim.reference(g, {"x": x})
    assert got["y"].dtype == np.float16
    compare(got, want, rtol=2e-2, atol=2e-2)


def test_mlp_float16_end_to_end(lib):
    rng = np.random.default_rng(4)
    g = mlp(rng, dtype="float16")
    x = rng.standard_normal((5, 32)).astype(np.float16)
    got = mdl.run(lib, g, {"x": x}, batch_sizes=GEARS)
    want = sim.reference(g, {"x": x})
    for k in ("logits", "probs"):
        assert got[k].dtype == np.float16
        np.testing.assert_allclose(
            got[k].astype(np.float32), want[k].astype(np.float32), rtol=2e-2, atol=2e-2
        )


def test_image_model_nchw(lib):
    """An image-shaped model kept small with reductions: NCHW in, class scores out."""
    rng = np.random.default_rng(5)
    g = sim.Graph("img")
    x = g.input("image", "uint8", (-1, 3, 8, 8), format="NCHW")
    f = g.mul(g.cast(x, "float32"), np.float32(1 / 255))
    pooled = g.mean(f, axes=(2, 3))  # (-1, 3)
    logits = g.matmul(pooled, g.const(rng.standard_normal((3, 5)).astype(np.float32)))
    g.output("scores", g.sigmoid(logits))
    img = rng.integers(0, 256, (2, 3, 8, 8)).astype(np.uint8)
    model = mdl.load_bytes(lib, g.to_bytes(batch_sizes=(2,)))
    try:
        assert model.inputs[0]["format"] == 0  # ACL_FORMAT_NCHW
        compare(mdl.run_loaded(model, {"image": img}), sim.reference(g, {"image": img}))
    finally:
        model.close()


def test_non_gear_rejected_and_static_model(lib):
    rng = np.random.default_rng(6)
    dyn = mdl.load_bytes(lib, mlp(rng).to_bytes(batch_sizes=(2, 4)))
    g = sim.Graph("static")
    x = g.input("x", "float32", (2, 3))
    g.output("y", g.relu(x))
    static = mdl.load_bytes(lib, g.to_bytes())
    try:
        assert static.gears == []
        bufs = mdl.Buffers(dyn)
        # batch 0 is an argument error, checked first (CANN 9.1)
        rc = lib.aclmdlSetDynamicBatchSize(dyn.id, bufs.input, len(dyn.inputs) - 1, 0)
        assert rc == acl.ACL_ERROR_INVALID_PARAM
        for bad in (1, 3, 5, 8):
            rc = lib.aclmdlSetDynamicBatchSize(dyn.id, bufs.input, len(dyn.inputs) - 1, bad)
            assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
            assert "not a gear" in mdl.simlib.recent_error(lib) and "2, 4" in mdl.simlib.recent_error(lib)
        # executing without a gear set
        rc = lib.aclmdlExecute(dyn.id, bufs.input, bufs.output)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert "aclmdlSetDynamicBatchSize" in mdl.simlib.recent_error(lib)
        # another index: not checked (CANN 9.1), the batch goes into that input's buffer
        mdl.check(lib, lib.aclmdlSetDynamicBatchSize(dyn.id, bufs.input, 0, 2), "index 0")
        # the gear is written into the dynamic input's device buffer as int64
        bufs.set_batch(4)
        v = ctypes.c_int64()
        mdl.check(
            lib, lib.aclrtMemcpy(ctypes.byref(v), 8, bufs.in_ptrs[-1], 8, acl.ACL_MEMCPY_DEVICE_TO_HOST), "cp"
        )
        assert v.value == 4
        bufs.close()

        sbufs = mdl.Buffers(static)
        rc = lib.aclmdlSetDynamicBatchSize(static.id, sbufs.input, 0, 1)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID  # CANN 9.1: no gear matches a static model
        sbufs.close()
    finally:
        dyn.close()
        static.close()


def test_cur_output_dims_follow_the_gear(lib):
    rng = np.random.default_rng(7)
    model = mdl.load_bytes(lib, mlp(rng).to_bytes(batch_sizes=(2, 4)))
    try:
        d = mdl.IODims()
        mdl.check(lib, lib.aclmdlGetCurOutputDims(model.desc, 0, ctypes.byref(d)), "cur")
        assert list(d.dims[:2]) == [4, 10]  # nothing set: the largest gear
        bufs = mdl.Buffers(model)
        bufs.set_batch(2)
        mdl.check(lib, lib.aclmdlGetCurOutputDims(model.desc, 0, ctypes.byref(d)), "cur")
        assert list(d.dims[:2]) == [2, 10]
        mdl.check(lib, lib.aclmdlGetOutputDims(model.desc, 0, ctypes.byref(d)), "dims")
        assert list(d.dims[:2]) == [-1, 10]
        bufs.close()
    finally:
        model.close()


@pytest.mark.parametrize("gear", [1, 3])
def test_static_and_single_gear(lib, gear):
    rng = np.random.default_rng(8)
    g = mlp(rng)
    x = rng.standard_normal((gear, 32)).astype(np.float32)
    got = mdl.run(lib, g, {"x": x}, batch_sizes=(gear,))
    want = sim.reference(g, {"x": x})
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-4, atol=1e-4)
