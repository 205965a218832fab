"""Descriptors, datasets, load paths and the errors of the aclmdl* API."""

import ctypes

import numpy as np
import pytest
from helpers import acl, mdl, simlib

from ascend_engine import sim


def two_io_graph():
    g = sim.Graph("two")
    img = g.input("image", "float16", (-1, 3, 4, 4), format="NCHW")
    mask = g.input("mask", "int32", (5,), format="ND")
    feat = g.mean(g.cast(img, "float32"), axes=(2, 3))
    g.output("feat", feat)
    g.output("mask_sum", g.sum(mask, keepdims=True))
    g.output("nhwc", g.transpose(img, (0, 2, 3, 1)), format="NHWC")
    return g


@pytest.fixture
def model(lib):
    m = mdl.load_bytes(lib, two_io_graph().to_bytes(batch_sizes=(1, 2, 6)))
    yield m
    m.close()


def test_descriptor_values(lib, model):
    names = [io["name"] for io in model.inputs]
    assert names == ["image", "mask", acl.DYNAMIC_NAME]  # the dynamic input last
    assert [io["name"] for io in model.outputs] == ["feat", "mask_sum", "nhwc"]
    img, mask, dyn = model.inputs
    assert img["dims"] == (-1, 3, 4, 4) and img["dtype"] == 1 and img["format"] == 0
    # exact bytes, as CANN reports them: shape x dtype at the largest gear (6),
    # no allocation padding (that belongs to aclrtMalloc)
    assert img["size"] == 6 * 3 * 4 * 4 * 2 == 576
    assert mask["dims"] == (5,) and mask["dtype"] == 3 and mask["size"] == 20
    assert dyn["dims"] == (1,) and dyn["dtype"] == 9 and dyn["size"] == 8
    feat, msum, nhwc = model.outputs
    assert feat["dims"] == (-1, 3) and feat["dtype"] == 0 and feat["size"] == 6 * 3 * 4 == 72
    assert msum["dims"] == (1,) and msum["dtype"] == 3 and msum["size"] == 4
    assert nhwc["dims"] == (-1, 4, 4, 3) and nhwc["format"] == 1 and nhwc["dtype"] == 1
    assert nhwc["size"] == 6 * 4 * 4 * 3 * 2
    assert img["dims_name"] == "image"
    assert model.gears == [1, 2, 6]

    idx = ctypes.c_size_t()
    for i, n in enumerate(names):
        mdl.check(lib, lib.aclmdlGetInputIndexByName(model.desc, n.encode(), ctypes.byref(idx)), n)
        assert idx.value == i
    mdl.check(lib, lib.aclmdlGetOutputIndexByName(model.desc, b"nhwc", ctypes.byref(idx)), "out")
    assert idx.value == 2
    assert (
        lib.aclmdlGetInputIndexByName(model.desc, b"nope", ctypes.byref(idx)) == acl.ACL_ERROR_INVALID_PARAM
    )
    assert "'image'" in simlib.recent_error(lib)


def test_descriptor_bad_index_and_empty(lib, model):
    assert lib.aclmdlGetInputSizeByIndex(model.desc, 3) == 0
    assert "out of range" in simlib.recent_error(lib)
    assert lib.aclmdlGetOutputDataType(model.desc, 7) == -1
    assert lib.aclmdlGetInputFormat(model.desc, 9) == -1
    assert lib.aclmdlGetInputNameByIndex(model.desc, 9) is None
    d = mdl.IODims()
    assert lib.aclmdlGetOutputDims(model.desc, 3, ctypes.byref(d)) == acl.ACL_ERROR_INVALID_PARAM
    empty = lib.aclmdlCreateDesc()
    assert lib.aclmdlGetNumInputs(empty) == 0
    assert "aclmdlGetDesc" in simlib.recent_error(lib)
    assert lib.aclmdlGetDesc(empty, 999999) == acl.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    mdl.check(lib, lib.aclmdlDestroyDesc(empty), "destroy")


def test_desc_outlives_unload(lib):
    m = mdl.load_bytes(lib, two_io_graph().to_bytes(batch_sizes=(2,)))
    desc = lib.aclmdlCreateDesc()
    mdl.check(lib, lib.aclmdlGetDesc(desc, m.id), "desc")
    m.close()
    assert lib.aclmdlGetInputNameByIndex(desc, 0) == b"image"
    assert lib.aclmdlUnload(m.id) == acl.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    mdl.check(lib, lib.aclmdlDestroyDesc(desc), "destroy")


def test_model_io_mismatches(lib, model):
    """GE's rule (CANN 9.1): a buffer may be up to 64 bytes short; one byte more is 500002."""
    sizes_in = [io["size"] for io in model.inputs]
    sizes_out = [io["size"] for io in model.outputs]
    # at the largest gear: an input buffer 65 bytes short of the reported size
    short = mdl.Buffers(model, in_sizes=[sizes_in[0] - acl.EXEC_SLACK - 1] + sizes_in[1:])
    short.set_batch(6)
    assert lib.aclmdlExecute(model.id, short.input, short.output) == acl.ACL_ERROR_GE_FAILURE
    assert simlib.recent_error(lib) == (
        f"aclmdlExecute: input 0 ('image'): buffer of 511 bytes, model {model.id} needs 576 "
        "(aclmdlGetInputSizeByIndex); CANN accepts up to 64 bytes fewer (and does not check gear or "
        "dynamic-AIPP models: ASCEND_SIM_GEAR_CHECKS=cann)"
    )
    short.close()
    # 64 bytes short runs
    short = mdl.Buffers(model, in_sizes=[sizes_in[0] - acl.EXEC_SLACK] + sizes_in[1:])
    short.set_batch(6)
    mdl.check(lib, lib.aclmdlExecute(model.id, short.input, short.output), "64 bytes short")
    short.close()
    # an output buffer too small
    short = mdl.Buffers(model, out_sizes=sizes_out[:2] + [sizes_out[2] - acl.EXEC_SLACK - 1])
    short.set_batch(6)
    assert lib.aclmdlExecute(model.id, short.input, short.output) == acl.ACL_ERROR_GE_FAILURE
    assert "output 2 ('nhwc'): buffer of 511 bytes" in simlib.recent_error(lib)
    short.close()
    # wrong buffer counts
    few = mdl.Buffers(model, in_sizes=sizes_in[:2])
    assert lib.aclmdlExecute(model.id, few.input, few.output) == acl.ACL_ERROR_GE_FAILURE
    assert "dynamic-batch input" in simlib.recent_error(lib)
    few.close()
    few = mdl.Buffers(model, out_sizes=sizes_out[:1])
    few.set_batch(1)
    assert lib.aclmdlExecute(model.id, few.input, few.output) == acl.ACL_ERROR_GE_FAILURE
    few.close()


def per_gear(size, gear, max_gear=6):
    """How clients size a lower gear's buffer from the descriptor."""
    return size * gear // max_gear


@pytest.mark.parametrize("gear", [1, 2, 6])
def test_execution_accepts_buffers_sized_for_the_selected_gear(lib, model, gear):
    # size * gear / max_gear for the batched tensors, the full size otherwise
    ins = [per_gear(io["size"], gear) if io["dims"][0] == -1 else io["size"] for io in model.inputs]
    outs = [per_gear(io["size"], gear) if io["dims"][0] == -1 else io["size"] for io in model.outputs]
    assert ins[0] == gear * 3 * 4 * 4 * 2 and outs[0] == gear * 3 * 4
    bufs = mdl.Buffers(model, in_sizes=ins, out_sizes=outs)
    rng = np.random.default_rng(gear)
    feeds = {
        "image": rng.standard_normal((gear, 3, 4, 4)).astype(np.float16),
        "mask": rng.integers(-9, 9, 5).astype(np.int32),
    }
    try:
        for i, name in enumerate(("image", "mask")):
            a = feeds[name]
            mdl.check(lib, lib.aclrtMemcpy(bufs.in_ptrs[i], ins[i], a.ctypes.data, a.nbytes, 1), "h2d")
        bufs.set_batch(gear)
        bufs.execute()
        got = bufs.fetch(gear)
    finally:
        bufs.close()
    want = sim.reference(two_io_graph(), feeds)
    for k in want:
        np.testing.assert_allclose(
            got[k].astype(np.float64), want[k].astype(np.float64), rtol=2e-2, atol=2e-2, err_msg=k
        )


@pytest.mark.parametrize("is_in", [True, False])
def test_a_buffer_below_the_selected_gear_still_fails(lib, model, is_in):
    """ASCEND_SIM_GEAR_CHECKS=strict (the default): 65 bytes below gear 2's bytes is refused."""
    sizes_in = [io["size"] for io in model.inputs]
    sizes_out = [io["size"] for io in model.outputs]
    if is_in:
        sizes_in[0] = per_gear(sizes_in[0], 2) - acl.EXEC_SLACK - 1
    else:
        sizes_out[2] = per_gear(sizes_out[2], 2) - acl.EXEC_SLACK - 1
    bufs = mdl.Buffers(model, in_sizes=sizes_in, out_sizes=sizes_out)
    try:
        bufs.set_batch(2)
        rc = lib.aclmdlExecute(model.id, bufs.input, bufs.output)
        msg = simlib.recent_error(lib)
        bufs.set_batch(1)  # the same buffer is enough at gear 1
        mdl.check(lib, lib.aclmdlExecute(model.id, bufs.input, bufs.output), "gear 1")
    finally:
        bufs.close()
    if is_in:
        assert rc == acl.ACL_ERROR_GE_FAILURE
        assert msg.startswith(
            f"aclmdlExecute: input 0 ('image'): buffer of 127 bytes, model {model.id} needs 192 at batch 2 "
            "(aclmdlGetInputSizeByIndex reports 576 for the largest gear); CANN accepts up to 64 bytes fewer"
        )
    else:
        assert rc == acl.ACL_ERROR_GE_FAILURE
        assert msg.startswith(
            f"aclmdlExecute: output 2 ('nhwc'): buffer of 127 bytes, model {model.id} needs 192 at batch 2 "
            "(aclmdlGetOutputSizeByIndex reports 576 for the largest gear); CANN accepts up to 64 bytes fewer"
        )


@pytest.mark.parametrize(
    "dtype, fmt, shape, nbytes",
    [
        ("float32", "ND", (7, 5), 140),
        ("float16", "NCHW", (1, 3, 224, 224), 301056),
        ("float16", "NHWC", (1, 224, 224, 3), 301056),
        ("uint8", "NHWC", (1, 224, 224, 3), 150528),
        ("uint8", "NCHW", (1, 3, 7, 9), 189),
        ("int32", "ND", (3,), 12),
        ("int64", "ND", (5,), 40),
    ],
)
def test_descriptor_sizes_are_exact_for_every_format_and_dtype(lib, dtype, fmt, shape, nbytes):
    g = sim.Graph("sizes")
    x = g.input("x", dtype, shape, format=fmt)
    g.output("y", g.reshape(x, shape), format=fmt)
    m = mdl.load_bytes(lib, g.to_bytes())
    try:
        assert m.inputs[0]["size"] == nbytes == int(np.prod(shape)) * np.dtype(dtype).itemsize
        assert m.outputs[0]["size"] == nbytes
    finally:
        m.close()


def test_dynamic_batch_sizes_are_the_largest_gear(lib):
    g = sim.Graph("dyn")
    x = g.input("x", "float32", (-1, 1000))
    g.output("prob", g.softmax(x))
    g.output("best", g.argmax(x, axis=-1))
    m = mdl.load_bytes(lib, g.to_bytes(batch_sizes=(1, 4, 16)))
    try:
        assert [io["size"] for io in m.inputs] == [16 * 4000, 8]
        assert [io["size"] for io in m.outputs] == [16 * 4000, 16 * 4]
        # a batch's outputs are strided by size / batch, as clients read them
        assert m.outputs[0]["size"] // 16 == 4000
    finally:
        m.close()


def test_buffers_must_be_live_device_memory(lib, model):
    bufs = mdl.Buffers(model)
    bufs.set_batch(1)
    host = np.zeros(model.inputs[0]["size"], np.uint8)
    b = lib.aclmdlGetDatasetBuffer(bufs.input, 0)
    mdl.check(lib, lib.aclUpdateDataBuffer(b, host.ctypes.data, host.nbytes), "update")
    assert lib.aclmdlExecute(model.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM
    assert "input 0 ('image')" in simlib.recent_error(lib)
    # freed device memory
    p = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtMalloc(ctypes.byref(p), model.inputs[0]["size"], 0), "malloc")
    mdl.check(lib, lib.aclrtFree(p.value), "free")
    mdl.check(lib, lib.aclUpdateDataBuffer(b, p.value, model.inputs[0]["size"]), "update")
    assert lib.aclmdlExecute(model.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM
    mdl.check(lib, lib.aclUpdateDataBuffer(b, bufs.in_ptrs[0], model.inputs[0]["size"]), "update")
    mdl.check(lib, lib.aclmdlExecute(model.id, bufs.input, bufs.output), "execute")
    bufs.close()


def test_dataset_api(lib):
    ds = lib.aclmdlCreateDataset()
    assert lib.aclmdlGetDatasetNumBuffers(ds) == 0
    b1 = lib.aclCreateDataBuffer(None, 0)
    b2 = lib.aclCreateDataBuffer(ctypes.c_void_p(0x1000), 64)
    mdl.check(lib, lib.aclmdlAddDatasetBuffer(ds, b1), "add")
    mdl.check(lib, lib.aclmdlAddDatasetBuffer(ds, b2), "add")
    assert lib.aclmdlGetDatasetNumBuffers(ds) == 2
    assert lib.aclmdlGetDatasetBuffer(ds, 1) == b2
    assert lib.aclmdlGetDatasetBuffer(ds, 2) is None
    assert lib.aclGetDataBufferAddr(b2) == 0x1000 and lib.aclGetDataBufferSizeV2(b2) == 64
    assert lib.aclmdlAddDatasetBuffer(ds, None) == acl.ACL_ERROR_INVALID_PARAM
    mdl.check(lib, lib.aclmdlDestroyDataset(ds), "destroy")  # leaves the buffers alone
    assert lib.aclGetDataBufferSizeV2(b2) == 64
    mdl.check(lib, lib.aclDestroyDataBuffer(b1), "destroy")
    mdl.check(lib, lib.aclDestroyDataBuffer(b2), "destroy")
    assert lib.aclDestroyDataBuffer(None) == acl.ACL_ERROR_INVALID_PARAM


def test_load_from_file_codes(lib, tmp_path):
    mid = ctypes.c_uint32()
    missing = str(tmp_path / "missing.om").encode()
    assert lib.aclmdlLoadFromFile(missing, ctypes.byref(mid)) == acl.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID
    assert "missing.om" in simlib.recent_error(lib)
    om = tmp_path / "real.om"
    om.write_bytes(b"IMOD" + bytes(300))  # any non-simulator file, e.g. a real OM
    rc = lib.aclmdlLoadFromFile(str(om).encode(), ctypes.byref(mid))
    assert rc == acl.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID
    msg = simlib.recent_error(lib)
    assert "acl backend" in msg and "ASCEND_ENGINE_BACKEND=acl" in msg
    blob = bytearray(two_io_graph().to_bytes(batch_sizes=(2,)))
    blob[8] = 9  # version 9
    bad = tmp_path / "v9.om"
    bad.write_bytes(bytes(blob))
    assert lib.aclmdlLoadFromFile(str(bad).encode(), ctypes.byref(mid)) == acl.ACL_ERROR_PARSE_MODEL
    assert "version 9" in simlib.recent_error(lib)
    assert lib.aclmdlLoadFromMem(None, 10, ctypes.byref(mid)) == acl.ACL_ERROR_INVALID_PARAM

    good = tmp_path / "good.om"
    two_io_graph().save(str(good), batch_sizes=(2,))
    mdl.check(lib, lib.aclmdlLoadFromFile(str(good).encode(), ctypes.byref(mid)), "load")
    m = mdl.Loaded(lib, mid.value)
    assert m.gears == [2]
    m.close()


def test_query_size_and_load_with_mem(lib, tmp_path):
    rng = np.random.default_rng(0)
    g = sim.Graph("q")
    x = g.input("x", "float32", (-1, 16))
    w = rng.standard_normal((16, 8)).astype(np.float32)
    g.output("y", g.relu(g.matmul(x, g.const(w))))
    path = tmp_path / "q.om"
    g.save(str(path), batch_sizes=(1, 4))
    work, weight = ctypes.c_size_t(), ctypes.c_size_t()
    mdl.check(lib, lib.aclmdlQuerySize(str(path).encode(), ctypes.byref(work), ctypes.byref(weight)), "query")
    assert weight.value == w.nbytes
    assert work.value >= 4 * 8 * 4  # the matmul result at the largest gear
    wp, pp = ctypes.c_void_p(), ctypes.c_void_p()
    mdl.check(lib, lib.aclrtMalloc(ctypes.byref(wp), work.value, 0), "malloc")
    mdl.check(lib, lib.aclrtMalloc(ctypes.byref(pp), weight.value, 0), "malloc")
    mid = ctypes.c_uint32()
    # too small a work region
    rc = lib.aclmdlLoadFromFileWithMem(
        str(path).encode(), ctypes.byref(mid), wp.value, work.value - 1, pp.value, weight.value
    )
    assert rc == acl.ACL_ERROR_GE_PARAM_INVALID and "workSize" in simlib.recent_error(lib)
    # host memory is not device memory
    host = np.zeros(work.value, np.uint8)
    rc = lib.aclmdlLoadFromFileWithMem(
        str(path).encode(), ctypes.byref(mid), host.ctypes.data, work.value, pp.value, weight.value
    )
    assert rc == acl.ACL_ERROR_INVALID_PARAM
    mdl.check(
        lib,
        lib.aclmdlLoadFromFileWithMem(
            str(path).encode(), ctypes.byref(mid), wp.value, work.value, pp.value, weight.value
        ),
        "load with mem",
    )
    m = mdl.Loaded(lib, mid.value)
    xv = rng.standard_normal((3, 16)).astype(np.float32)
    got = mdl.run_loaded(m, {"x": xv})
    np.testing.assert_allclose(got["y"], sim.reference(g, {"x": xv})["y"], rtol=1e-4, atol=1e-5)
    m.close()
    lib.aclrtFree(wp.value)
    lib.aclrtFree(pp.value)


def test_load_reserves_device_memory(lib):
    free0, total = ctypes.c_size_t(), ctypes.c_size_t()
    mdl.check(lib, lib.aclrtGetMemInfo(1, ctypes.byref(free0), ctypes.byref(total)), "meminfo")
    g = sim.Graph("big")
    x = g.input("x", "float32", (-1, 256))
    g.output("y", g.matmul(x, g.const(np.zeros((256, 1024), np.float32))))
    m = mdl.load_bytes(lib, g.to_bytes(batch_sizes=(64,)))
    free1 = ctypes.c_size_t()
    mdl.check(lib, lib.aclrtGetMemInfo(1, ctypes.byref(free1), ctypes.byref(total)), "meminfo")
    assert free0.value - free1.value >= 256 * 1024 * 4 + 64 * 1024 * 4
    m.close()
    mdl.check(lib, lib.aclrtGetMemInfo(1, ctypes.byref(free1), ctypes.byref(total)), "meminfo")
    assert free1.value == free0.value


def test_unknown_model_id(lib):
    ds = lib.aclmdlCreateDataset()
    assert lib.aclmdlExecute(424242, ds, ds) == acl.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    # the setter looks at the dataset's buffer at index before the model (CANN 9.1's order)
    assert lib.aclmdlSetDynamicBatchSize(424242, ds, 0, 1) == acl.ACL_ERROR_INVALID_PARAM
    buf = lib.aclCreateDataBuffer(None, 0)
    mdl.check(lib, lib.aclmdlAddDatasetBuffer(ds, buf), "add")
    assert lib.aclmdlSetDynamicBatchSize(424242, ds, 0, 1) == acl.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    lib.aclmdlDestroyDataset(ds)
    lib.aclDestroyDataBuffer(buf)


def test_float16_helpers(lib):
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    want = halves.view(np.float16).astype(np.float32)
    got = np.array([lib.aclFloat16ToFloat(int(h)) for h in halves[::97]], np.float32)
    np.testing.assert_array_equal(
        got.view(np.uint32)[~np.isnan(got)], want[::97].view(np.uint32)[~np.isnan(got)]
    )
    rng = np.random.default_rng(0)
    floats = np.concatenate(
        [
            rng.standard_normal(2000).astype(np.float32) * np.float32(10.0) ** rng.integers(-9, 6, 2000),
            np.array(
                [0.0, -0.0, np.inf, -np.inf, 65504, 65520, 65519.99, 6e-8, 3e-8, 2.98e-8, 1e-10, 6.1e-5],
                np.float32,
            ),
        ]
    ).astype(np.float32)
    got = np.array([lib.aclFloatToFloat16(float(f)) for f in floats], np.uint16)
    with np.errstate(over="ignore"):  # numpy warns on the values that round to inf
        want16 = floats.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(got, want16)
    assert np.isnan(lib.aclFloat16ToFloat(lib.aclFloatToFloat16(float("nan"))))
    assert [lib.aclDataTypeSize(t) for t in (0, 1, 3, 4, 9, 12, 13)] == [4, 2, 4, 1, 8, 1, 0]
