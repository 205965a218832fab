"""Dynamic image size, dynamic dims and shape ranges in the simulator, through the AscendCL API.

Every gear (and several shapes inside a range) is checked against
``sim.reference``; wrong gears, mixed mechanisms and buffers too small for the
chosen gear give the codes CANN's runtime gives, with messages naming the
input and the gears allowed.
"""

import ctypes

import numpy as np
import pytest
from helpers import acl, mdl, simlib

from ascend_engine import sim

HW_GEARS = [(16, 24), (32, 32), (24, 16)]


def hw_graph(rng):
    """An image model: per-channel scale and shift, then a 3->4 projection per pixel, and a channel sum."""
    g = sim.Graph("hwnet")
    x = g.input("image", "float32", (1, 3, "h", "w"), format="NCHW")
    scaled = g.add(g.mul(x, rng.standard_normal((1, 3, 1, 1)).astype(np.float32)),
                   rng.standard_normal((1, 3, 1, 1)).astype(np.float32))
    nhwc = g.transpose(g.relu(scaled), (0, 2, 3, 1))
    feat = g.matmul(nhwc, g.const(rng.standard_normal((3, 4)).astype(np.float32)))
    g.output("feat", feat, format="NHWC")
    g.output("energy", g.sum(feat, axes=3))
    g.output("bias", g.const(np.arange(5, dtype=np.int32)))   # a fixed-shape output
    return g


def dims_graph(rng):
    """A sequence model: tokens (b, seq, 8) masked by (b, seq), projected to 5 classes and normalized."""
    g = sim.Graph("seqnet")
    x = g.input("tokens", "float32", (-1, "seq", 8))
    mask = g.input("mask", "float32", (-1, "seq"))
    m3 = g.reshape(mask, (-1, "seq", 1))
    logits = g.matmul(g.mul(x, m3), g.const(rng.standard_normal((8, 5)).astype(np.float32)))
    g.output("probs", g.softmax(logits, axis=-1))
    g.output("total", g.sum(logits, axes=2))
    return g


DIMS_GEARS = [[1, 4, 1, 4], [2, 8, 2, 8], [4, 16, 4, 16]]  # ATC order: tokens' -1, seq, mask's -1, seq


def range_graph(rng):
    g = sim.Graph("rangenet")
    x = g.input("x", "float32", ("n", 16))
    y = g.relu(g.matmul(x, g.const(rng.standard_normal((16, 8)).astype(np.float32))))
    g.output("y", y)
    g.output("s", g.sum(y, axes=1))
    return g


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def load(lib, graph, **save):
    return mdl.load_bytes(lib, graph.to_bytes(**save))


def err(lib):
    return simlib.recent_error(lib)


# ---------------------------------------------------------------------------
# dynamic image size
# ---------------------------------------------------------------------------


def test_hw_descriptor(lib, rng):
    m = load(lib, hw_graph(rng), hw_sizes=HW_GEARS)
    try:
        names = [io["name"] for io in m.inputs]
        assert names == ["image", acl.DYNAMIC_NAME]
        img, dyn = m.inputs
        assert img["dims"] == (1, 3, -1, -1)
        assert img["size"] == 3 * 32 * 32 * 4  # the largest gear's bytes
        assert dyn["dims"] == (2,) and dyn["size"] == 16  # height and width, int64
        feat, energy, bias = m.outputs
        assert feat["dims"] == (1, -1, -1, 4) and feat["size"] == 32 * 32 * 4 * 4
        assert energy["size"] == 32 * 32 * 4 and bias["size"] == 20
        hw = mdl.HW()
        mdl.check(lib, lib.aclmdlGetDynamicHW(m.desc, -1, ctypes.byref(hw)), "aclmdlGetDynamicHW")
        assert [(hw.hw[i][0], hw.hw[i][1]) for i in range(hw.hwCount)] == HW_GEARS
        assert m.gears == []  # no batch gears
        count = ctypes.c_size_t(9)
        mdl.check(lib, lib.aclmdlGetInputDynamicGearCount(m.desc, -1, ctypes.byref(count)), "gear count")
        assert count.value == 0
        r = mdl.IODimsRange()
        mdl.check(lib, lib.aclmdlGetInputDimsRange(m.desc, 0, ctypes.byref(r)), "aclmdlGetInputDimsRange")
        assert [tuple(r.range[k]) for k in range(r.rangeCount)] == [(1, 1), (3, 3), (16, 32), (16, 32)]
        d = mdl.IODims()
        mdl.check(lib, lib.aclmdlGetInputDimsV2(m.desc, 0, ctypes.byref(d)), "aclmdlGetInputDimsV2")
        assert tuple(d.dims[k] for k in range(d.dimCount)) == (1, 3, -1, -1)
    finally:
        m.close()


def test_hw_every_gear_matches_reference(lib, rng, stream):
    g = hw_graph(rng)
    m = load(lib, g, hw_sizes=HW_GEARS)
    bufs = mdl.Buffers(m)
    try:
        for h, w in HW_GEARS:
            x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
            bufs.feed({"image": x})
            bufs.set_hw(h, w)
            bufs.execute(stream)
            mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
            d = mdl.IODims()
            mdl.check(lib, lib.aclmdlGetCurOutputDims(m.desc, 0, ctypes.byref(d)), "aclmdlGetCurOutputDims")
            assert tuple(d.dims[k] for k in range(d.dimCount)) == (1, h, w, 4)
            out = bufs.fetch(shapes={"feat": (1, h, w, 4), "energy": (1, h, w), "bias": (5,)})
            ref = sim.reference(g, {"image": x})
            for k in ref:
                np.testing.assert_allclose(out[k], ref[k], rtol=1e-5, atol=1e-5, err_msg=f"{k} at {h}x{w}")
            # what the setter wrote into ascend_mbatch_shape_data: height, width as int64
            v = (ctypes.c_int64 * 2)()
            mdl.check(lib, lib.aclrtMemcpy(v, 16, bufs.in_ptrs[1], 16, acl.ACL_MEMCPY_DEVICE_TO_HOST), "cp")
            assert list(v) == [h, w]
    finally:
        bufs.close()
        m.close()


def test_hw_buffers_sized_for_the_selected_gear(lib, rng):
    """Clients allocate a lower gear's bytes: accepted at that gear, rejected at a larger one."""
    g = hw_graph(rng)
    m = load(lib, g, hw_sizes=HW_GEARS)
    h, w = 24, 16
    bufs = mdl.Buffers(m, in_sizes=[3 * h * w * 4, 16],
                       out_sizes=[h * w * 4 * 4, h * w * 4, 20])
    try:
        x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        bufs.feed({"image": x})
        bufs.set_hw(h, w)
        bufs.execute()
        out = bufs.fetch(shapes={"feat": (1, h, w, 4), "energy": (1, h, w), "bias": (5,)})
        np.testing.assert_allclose(out["feat"], sim.reference(g, {"image": x})["feat"], rtol=1e-5, atol=1e-5)
        bufs.set_hw(16, 24)  # the same bytes, another shape
        bufs.execute()
        bufs.set_hw(32, 32)
        assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_GE_FAILURE
        assert err(lib) == (
            f"aclmdlExecute: input 0 ('image'): buffer of 4608 bytes, model {m.id} needs 12288 "
            "(aclmdlGetInputSizeByIndex); CANN accepts up to 64 bytes fewer (and does not check gear or "
            "dynamic-AIPP models: ASCEND_SIM_GEAR_CHECKS=cann)"
        )
    finally:
        bufs.close()
        m.close()


def test_hw_wrong_gears_and_mechanisms(lib, rng):
    m = load(lib, hw_graph(rng), hw_sizes=HW_GEARS)
    bufs = mdl.Buffers(m)
    idx = bufs.dynamic_index()
    try:
        # executing before any gear is set
        assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert "has dynamic image size but the input dataset has no gear set" in err(lib)
        assert "aclmdlSetDynamicHWSize" in err(lib) and "16x24, 32x32, 24x16" in err(lib)
        # not a gear: (16, 24) is, (24, 24) is not
        rc = lib.aclmdlSetDynamicHWSize(m.id, bufs.input, idx, 24, 24)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert err(lib) == (
            f"aclmdlSetDynamicHWSize: image size 24x24 (height x width) is not a gear of model {m.id} "
            "(gears: 16x24, 32x32, 24x16)"
        )
        # another index: CANN 9.1 does not check it, the values go into that input's buffer
        mdl.check(lib, lib.aclmdlSetDynamicHWSize(m.id, bufs.input, 0, 16, 24), "index 0")
        head = np.zeros(2, np.uint64)
        mdl.check(lib, lib.aclrtMemcpy(head.ctypes.data, 16, bufs.in_ptrs[0], 16, 2), "d2h")
        assert head.tolist() == [16, 24]
        # another mechanism's setter: its gears never match (GE answers 145013)
        rc = lib.aclmdlSetDynamicBatchSize(m.id, bufs.input, idx, 1)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert "has dynamic image size, not dynamic batch" in err(lib)
        assert "use aclmdlSetDynamicHWSize (gears: 16x24, 32x32, 24x16)" in err(lib)
        d = mdl.io_dims([1, 3, 16, 24])
        rc = lib.aclmdlSetInputDynamicDims(m.id, bufs.input, idx, ctypes.byref(d))
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        # a gear set, plus a tensor description on an input: mutually exclusive on one model
        bufs.set_hw(16, 24)
        bufs.describe_inputs({0: (1, 3, 16, 24)})
        assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM
        assert "mutually exclusive" in err(lib) and "input 0 ('image')" in err(lib)
    finally:
        bufs.close()
        m.close()


def test_hw_dynamic_input_too_small(lib, rng):
    m = load(lib, hw_graph(rng), hw_sizes=HW_GEARS)
    bufs = mdl.Buffers(m, in_sizes=[m.inputs[0]["size"], 4])
    try:
        rc = lib.aclmdlSetDynamicHWSize(m.id, bufs.input, 1, 16, 24)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
        assert "the buffer at index 1 holds 4 bytes, needs at least 8" in err(lib)
    finally:
        bufs.close()
        m.close()


# ---------------------------------------------------------------------------
# dynamic dims
# ---------------------------------------------------------------------------


def test_dims_descriptor(lib, rng):
    m = load(lib, dims_graph(rng), dims=DIMS_GEARS)
    try:
        tokens, mask, dyn = m.inputs
        assert tokens["dims"] == (-1, -1, 8) and mask["dims"] == (-1, -1)
        assert tokens["size"] == 4 * 16 * 8 * 4 and mask["size"] == 4 * 16 * 4
        assert dyn["name"] == acl.DYNAMIC_NAME and dyn["dims"] == (4,) and dyn["size"] == 32
        count = ctypes.c_size_t()
        mdl.check(lib, lib.aclmdlGetInputDynamicGearCount(m.desc, -1, ctypes.byref(count)), "gear count")
        assert count.value == 3
        gears = (mdl.IODims * 3)()
        mdl.check(lib, lib.aclmdlGetInputDynamicDims(m.desc, -1, gears, 3), "aclmdlGetInputDynamicDims")
        listed = [tuple(gd.dims[k] for k in range(gd.dimCount)) for gd in gears]
        assert listed == [(1, 4, 8, 1, 4), (2, 8, 8, 2, 8), (4, 16, 8, 4, 16)]
        assert lib.aclmdlGetInputDynamicDims(m.desc, -1, gears, 2) == acl.ACL_ERROR_INVALID_PARAM
        assert "gearCount 2 does not match the model's 3" in err(lib)
        hw = mdl.HW()
        mdl.check(lib, lib.aclmdlGetDynamicHW(m.desc, -1, ctypes.byref(hw)), "hw")
        assert hw.hwCount == 0
    finally:
        m.close()


def test_dims_every_gear_matches_reference(lib, rng):
    g = dims_graph(rng)
    m = load(lib, g, dims=DIMS_GEARS)
    bufs = mdl.Buffers(m)
    try:
        for b, s, _, _ in DIMS_GEARS:
            feeds = {"tokens": rng.standard_normal((b, s, 8)).astype(np.float32),
                     "mask": (rng.random((b, s)) > 0.3).astype(np.float32)}
            bufs.feed(feeds)
            bufs.set_dims([b, s, 8, b, s])
            bufs.execute()
            out = bufs.fetch(shapes={"probs": (b, s, 5), "total": (b, s)})
            ref = sim.reference(g, feeds)
            for k in ref:
                np.testing.assert_allclose(out[k], ref[k], rtol=1e-5, atol=1e-5, err_msg=f"{k} at {b}x{s}")
            v = (ctypes.c_int64 * 4)()
            mdl.check(lib, lib.aclrtMemcpy(v, 32, bufs.in_ptrs[2], 32, acl.ACL_MEMCPY_DEVICE_TO_HOST), "cp")
            assert list(v) == [b, s, b, s]  # the values of the -1 dims, as the runtime writes them
    finally:
        bufs.close()
        m.close()


def test_dims_errors(lib, rng):
    m = load(lib, dims_graph(rng), dims=DIMS_GEARS)
    bufs = mdl.Buffers(m)
    idx = bufs.dynamic_index()

    def set_dims(values):
        d = mdl.io_dims(values)
        return lib.aclmdlSetInputDynamicDims(m.id, bufs.input, idx, ctypes.byref(d))

    try:
        assert set_dims([2, 8, 8, 2]) == acl.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
        assert "dims->dimCount is 4, the model's inputs have 5 dimensions in all" in err(lib)
        assert set_dims([2, 8, 7, 2, 8]) == acl.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
        assert "dimension 2 of input 0 ('tokens') is fixed at 8" in err(lib)
        assert set_dims([2, 4, 8, 2, 4]) == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert err(lib) == (
            f"aclmdlSetInputDynamicDims: the dynamic dims are not a gear of model {m.id} (values of its -1 "
            "dimensions per gear: (1, 4), (2, 8), (4, 16))"
        )
        # "seq" is one dimension of both inputs: two different values match no gear
        assert set_dims([2, 8, 8, 2, 16]) == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        rc = lib.aclmdlSetDynamicHWSize(m.id, bufs.input, idx, 8, 8)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert "has dynamic dims, not dynamic image size" in err(lib)
        # the selected gear's bytes: a buffer for gear (1, 4) cannot run gear (2, 8)
        small = mdl.Buffers(m, in_sizes=[1 * 4 * 8 * 4, 4 * 4, 32])
        try:
            d = mdl.io_dims([2, 8, 8, 2, 8])
            mdl.check(lib, lib.aclmdlSetInputDynamicDims(m.id, small.input, idx, ctypes.byref(d)), "set")
            assert lib.aclmdlExecute(m.id, small.input, small.output) == acl.ACL_ERROR_GE_FAILURE
            assert "input 0 ('tokens'): buffer of 128 bytes" in err(lib)
            assert "needs 512 at dims gear (2, 8)" in err(lib)
        finally:
            small.close()
    finally:
        bufs.close()
        m.close()


# ---------------------------------------------------------------------------
# shape ranges
# ---------------------------------------------------------------------------


def test_range_descriptor(lib, rng):
    m = load(lib, range_graph(rng), shape_ranges={"n": (1, 64)})
    try:
        assert [io["name"] for io in m.inputs] == ["x"]  # no ascend_mbatch_shape_data
        # CANN 9.1: the product of the range maxima (64 x 16 float32)
        assert m.inputs[0]["dims"] == (-1, 16) and m.inputs[0]["size"] == 64 * 16 * 4
        assert [o["size"] for o in m.outputs] == [64 * 8 * 4, 64 * 4]
        r = mdl.IODimsRange()
        mdl.check(lib, lib.aclmdlGetInputDimsRange(m.desc, 0, ctypes.byref(r)), "aclmdlGetInputDimsRange")
        assert [tuple(r.range[k]) for k in range(r.rangeCount)] == [(1, 64), (16, 16)]
    finally:
        m.close()


@pytest.mark.parametrize("ranges", [{"n": (1, 64)}, {"n": (1, None)}])
def test_range_shapes_match_reference(lib, rng, stream, ranges):
    g = range_graph(rng)
    m = load(lib, g, shape_ranges=ranges)
    top = 100 if ranges["n"][1] is None else 64
    bufs = mdl.Buffers(m, in_sizes=[top * 16 * 4], out_sizes=[top * 8 * 4, top * 4])
    try:
        for n in (1, 3, 17, top):
            x = rng.standard_normal((n, 16)).astype(np.float32)
            bufs.feed({"x": x})
            bufs.describe_inputs({0: (n, 16)})
            bufs.execute(stream)
            mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
            assert bufs.output_shape(0) == (n, 8) and bufs.output_shape(1) == (n,)
            out = bufs.fetch(shapes={"y": (n, 8), "s": (n,)})
            ref = sim.reference(g, {"x": x})
            for k in ref:
                np.testing.assert_allclose(out[k], ref[k], rtol=1e-5, atol=1e-5, err_msg=f"{k} at n={n}")
    finally:
        bufs.close()
        m.close()


def test_range_errors(lib, rng):
    m = load(lib, range_graph(rng), shape_ranges={"n": (2, 64)})
    bufs = mdl.Buffers(m, in_sizes=[64 * 16 * 4], out_sizes=[64 * 8 * 4, 64 * 4])
    try:
        assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM
        assert err(lib) == (
            f"aclmdlExecute: input 0 ('x') of model {m.id} has the shape range (2~64, 16): describe its "
            "actual shape with aclmdlSetDatasetTensorDesc(dataset, desc, 0) before executing"
        )
        for shape, text in (((65, 16), "is 65, outside the model's range 2~64"),
                            ((1, 16), "is 1, outside the model's range 2~64"),
                            ((4, 15), "dimension 1 of the tensor description (4, 15) is 15, the model fixes "
                                      "it at 16"),
                            ((4, 16, 1), "the dims (4, 16, 1), the model's input is (2~64, 16)")):
            bufs.describe_inputs({0: shape})
            assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM, shape
            assert text in err(lib), err(lib)
        # the gear setters do not apply to a shape-range model
        rc = lib.aclmdlSetDynamicBatchSize(m.id, bufs.input, 0, 2)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert "it has shape ranges, with no gears" in err(lib)
        # buffers too small for the described shape
        bufs.describe_inputs({0: (64, 16)})
        short = mdl.Buffers(m, in_sizes=[64 * 16 * 4], out_sizes=[64 * 8 * 4 - acl.EXEC_SLACK - 1, 64 * 4])
        short.describe_inputs({0: (64, 16)})
        assert lib.aclmdlExecute(m.id, short.input, short.output) == acl.ACL_ERROR_GE_FAILURE
        assert "output 0 ('y'): buffer of 1983 bytes" in err(lib)
        assert "needs 2048 (aclmdlGetOutputSizeByIndex); CANN accepts up to 64 bytes fewer" in err(lib)
        short.close()
    finally:
        bufs.close()
        m.close()


def test_range_rejects_a_gear_from_another_model(lib, rng):
    """A dataset carrying a dims gear executed on a shape-range model: two mechanisms on one execution."""
    dm = load(lib, dims_graph(rng), dims=DIMS_GEARS)
    rm = load(lib, range_graph(rng), shape_ranges={"n": (1, 64)})
    dbufs = mdl.Buffers(dm)
    try:
        dbufs.set_dims([1, 4, 8, 1, 4])
        out = mdl.Buffers(rm, in_sizes=[64], out_sizes=[64 * 8 * 4, 64 * 4])
        # reuse the dims model's input dataset (3 buffers) with one-input range model: count first
        assert lib.aclmdlExecute(rm.id, dbufs.input, out.output) == acl.ACL_ERROR_GE_FAILURE
        out.close()
    finally:
        dbufs.close()
        dm.close()
        rm.close()


# ---------------------------------------------------------------------------
# the model file
# ---------------------------------------------------------------------------


def test_versions(lib, rng):
    static = sim.Graph("s")
    static.output("y", static.relu(static.input("x", "float32", (2, 3))))
    assert static.to_bytes()[8:12] == (1).to_bytes(4, "little")  # version 1 where it suffices
    blob = bytearray(hw_graph(rng).to_bytes(hw_sizes=HW_GEARS))
    assert blob[8:12] == (2).to_bytes(4, "little") and blob[12:16] == (160).to_bytes(4, "little")
    blob[8:12] = (5).to_bytes(4, "little")
    mid = ctypes.c_uint32()
    assert lib.aclmdlLoadFromMem(bytes(blob), len(blob), ctypes.byref(mid)) == acl.ACL_ERROR_PARSE_MODEL
    assert "simulator model version 5 is not supported (this simulator reads versions 1 to 4" in err(lib)
    blob[8:12] = (4).to_bytes(4, "little")  # version 4 (static AIPP) has a 208-byte header
    assert lib.aclmdlLoadFromMem(bytes(blob), len(blob), ctypes.byref(mid)) == acl.ACL_ERROR_PARSE_MODEL
    assert "header size 160 at byte 12, expected 208 for version 4" in err(lib)
    blob[8:12] = (3).to_bytes(4, "little")  # version 3 (ONNX models) has a 192-byte header
    assert lib.aclmdlLoadFromMem(bytes(blob), len(blob), ctypes.byref(mid)) == acl.ACL_ERROR_PARSE_MODEL
    assert "header size 160 at byte 12, expected 192 for version 3" in err(lib)
    blob[8:12] = (2).to_bytes(4, "little")
    blob[136:140] = (9).to_bytes(4, "little")  # the dynamic kind
    assert lib.aclmdlLoadFromMem(bytes(blob), len(blob), ctypes.byref(mid)) == acl.ACL_ERROR_PARSE_MODEL
    assert "dynamic kind 9 at byte 136" in err(lib)


def test_graph_errors(rng):
    g = hw_graph(rng)
    with pytest.raises(sim.GraphError, match="hw_sizes and dims are mutually exclusive"):
        g.to_bytes(hw_sizes=HW_GEARS, dims=[[1, 1]])
    with pytest.raises(sim.GraphError, match=r"has the dynamic dimensions \['h', 'w'\]: pass hw_sizes="):
        g.to_bytes(batch_sizes=(1, 2))
    with pytest.raises(sim.GraphError, match="lists a gear twice"):
        g.to_bytes(hw_sizes=[(8, 8), (8, 8)])
    d = dims_graph(rng)
    with pytest.raises(sim.GraphError, match="has 3 values, the inputs have 4 dynamic dimensions"):
        d.to_bytes(dims=[[1, 4, 1]])
    with pytest.raises(sim.GraphError, match="gives 'seq' two values"):
        d.to_bytes(dims=[[1, 4, 1, 8]])
    with pytest.raises(sim.GraphError, match="must be NCHW or NHWC with named H and W"):
        d.to_bytes(hw_sizes=[(4, 4)])
    r = range_graph(rng)
    with pytest.raises(sim.GraphError, match=r"a \(min, max\) for each dynamic dimension \['n'\]"):
        r.to_bytes(shape_ranges={"m": (1, 2)})
    x = sim.Graph("g").input("x", "float32", (1, "n"))
    with pytest.raises(sim.GraphError, match="axis 1 of 'x' .* is the dynamic dimension 'n'"):
        x.graph.softmax(x, axis=1)
