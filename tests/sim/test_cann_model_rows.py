"""Rows 58-76 of the CANN behaviour table: what CANN 9.1's model calls (GE)
check and return, case by case, against the simulator (docs/simulator.md,
"Fidelity to CANN 9.1", "Models, AIPP and DVPP (rows 58-76)").

Each test id names the row, the case and "CANN 9.1"; each asserts the code
and the message.  Rows 63 and 65, where the simulator keeps a check CANN
does not make, test both settings of ASCEND_SIM_GEAR_CHECKS."""

import ctypes
import threading

import numpy as np
import pytest
from helpers import acl, mdl, simlib
from helpers.aipp import BT601_NV12_TO_RGB

from ascend_engine import sim

UNKNOWN_ID = 424242


def err(lib):
    return simlib.recent_error(lib)


def relu_graph(shape=(4, 32), batch=False):
    g = sim.Graph("relu")
    g.output("y", g.relu(g.input("x", "float32", ((-1,) + shape[1:]) if batch else shape)))
    return g


@pytest.fixture
def static(lib):
    m = mdl.load_bytes(lib, relu_graph().to_bytes())
    yield m
    m.close()


@pytest.fixture
def gear(lib):
    m = mdl.load_bytes(lib, relu_graph(batch=True).to_bytes(batch_sizes=(1, 2, 4)))
    yield m
    m.close()


def dataset(lib, *pairs):
    """A dataset of data buffers over (pointer, size) pairs, and the buffers."""
    ds = lib.aclmdlCreateDataset()
    bufs = []
    for ptr, size in pairs:
        b = lib.aclCreateDataBuffer(ptr, size)
        bufs.append(b)
        mdl.check(lib, lib.aclmdlAddDatasetBuffer(ds, b), "aclmdlAddDatasetBuffer")
    return ds, bufs


def drop(lib, ds, bufs):
    lib.aclmdlDestroyDataset(ds)
    for b in bufs:
        lib.aclDestroyDataBuffer(b)


def device(lib, n):
    p = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtMalloc(ctypes.byref(p), n, 0), "aclrtMalloc")
    return p.value


def put(lib, ptr, a):
    mdl.check(
        lib, lib.aclrtMemcpy(ptr, a.nbytes, a.ctypes.data, a.nbytes, acl.ACL_MEMCPY_HOST_TO_DEVICE), "h2d"
    )


def get(lib, ptr, n, dtype=np.uint8):
    out = np.empty(n // np.dtype(dtype).itemsize, dtype)
    mdl.check(lib, lib.aclrtMemcpy(out.ctypes.data, n, ptr, n, acl.ACL_MEMCPY_DEVICE_TO_HOST), "d2h")
    return out


# ---- row 58: an unknown model id -------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "aclmdlExecute",
        "aclmdlExecuteAsync",
        "aclmdlUnload",
        "aclmdlGetDesc",
        "aclmdlSetDynamicBatchSize",
        "aclmdlSetInputAIPP",
        "aclmdlGetAippType",
        "aclmdlGetFirstAippInfo",
    ],
    ids=lambda c: f"row58-CANN9.1-unknown-model-id-145003-{c}",
)
def test_row58_unknown_model_id_is_145003(lib, call):
    ptr = device(lib, 64)
    ds, bufs = dataset(lib, (ptr, 64))
    aipp = lib.aclmdlCreateAIPP(1)
    desc = lib.aclmdlCreateDesc()
    stream = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(stream)), "stream")
    t, att = ctypes.c_int(), ctypes.c_size_t()
    info = (ctypes.c_uint8 * 4096)()
    try:
        rc = {
            "aclmdlExecute": lambda: lib.aclmdlExecute(UNKNOWN_ID, ds, ds),
            "aclmdlExecuteAsync": lambda: lib.aclmdlExecuteAsync(UNKNOWN_ID, ds, ds, stream),
            "aclmdlUnload": lambda: lib.aclmdlUnload(UNKNOWN_ID),
            "aclmdlGetDesc": lambda: lib.aclmdlGetDesc(desc, UNKNOWN_ID),
            "aclmdlSetDynamicBatchSize": lambda: lib.aclmdlSetDynamicBatchSize(UNKNOWN_ID, ds, 0, 1),
            "aclmdlSetInputAIPP": lambda: lib.aclmdlSetInputAIPP(UNKNOWN_ID, ds, 0, aipp),
            "aclmdlGetAippType": lambda: lib.aclmdlGetAippType(
                UNKNOWN_ID, 0, ctypes.byref(t), ctypes.byref(att)
            ),
            "aclmdlGetFirstAippInfo": lambda: lib.aclmdlGetFirstAippInfo(UNKNOWN_ID, 0, info),
        }[call]()
        assert rc == acl.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, (rc, err(lib))
        assert err(lib) == f"{call}: modelId {UNKNOWN_ID} is not a loaded model"
    finally:
        lib.aclrtDestroyStream(stream)
        lib.aclmdlDestroyDesc(desc)
        lib.aclmdlDestroyAIPP(aipp)
        drop(lib, ds, bufs)
        lib.aclrtFree(ptr)


# ---- rows 59-62: loading ---------------------------------------------------------------------------


def test_row59_CANN91_missing_model_file_is_145002(lib, tmp_path):
    mid = ctypes.c_uint32()
    missing = str(tmp_path / "absent.om").encode()
    assert lib.aclmdlLoadFromFile(missing, ctypes.byref(mid)) == acl.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID
    assert "cannot open model file" in err(lib) and "absent.om" in err(lib)
    work, weight = ctypes.c_size_t(), ctypes.c_size_t()
    rc = lib.aclmdlQuerySize(missing, ctypes.byref(work), ctypes.byref(weight))
    assert rc == acl.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, err(lib)


@pytest.mark.parametrize(
    "case", ["bad-magic", "truncated-header", "wrong-length"], ids=lambda c: f"row60-CANN9.1-{c}-145006"
)
def test_row60_bad_magic_or_length_is_145006(lib, case):
    blob = relu_graph().to_bytes()
    bad = {"bad-magic": b"IMOD" + blob[4:], "truncated-header": blob[:12], "wrong-length": blob[:-10]}[case]
    mid = ctypes.c_uint32()
    assert (
        lib.aclmdlLoadFromMem(bad, len(bad), ctypes.byref(mid))
        == acl.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID
    )
    want = {
        "bad-magic": "not a simulator model",
        "truncated-header": "truncated header: 12 bytes",
        "wrong-length": "(truncated or corrupted)",
    }[case]
    assert want in err(lib), err(lib)


def test_row61_CANN91_load_from_null_memory_or_null_id_is_100000(lib):
    mid = ctypes.c_uint32()
    assert lib.aclmdlLoadFromMem(None, 0, ctypes.byref(mid)) == acl.ACL_ERROR_INVALID_PARAM
    blob = relu_graph().to_bytes()
    assert lib.aclmdlLoadFromMem(blob, len(blob), None) == acl.ACL_ERROR_INVALID_PARAM
    assert "modelId is NULL" in err(lib)


@pytest.mark.parametrize("short", ["work", "weight"], ids=lambda s: f"row62-CANN9.1-{s}Size-too-small-145000")
def test_row62_work_or_weight_too_small_is_145000(lib, tmp_path, short):
    g = sim.Graph("mm")
    g.output("y", g.matmul(g.input("x", "float32", (4, 8)), g.const(np.ones((8, 8), np.float32))))
    path = tmp_path / "mm.om"
    path.write_bytes(g.to_bytes())
    work, weight = ctypes.c_size_t(), ctypes.c_size_t()
    mdl.check(lib, lib.aclmdlQuerySize(str(path).encode(), ctypes.byref(work), ctypes.byref(weight)), "query")
    assert work.value > 0 and weight.value == 8 * 8 * 4
    wp, pp = device(lib, work.value), device(lib, weight.value)
    mid = ctypes.c_uint32()
    sizes = {"work": (work.value - 1, weight.value), "weight": (work.value, weight.value - 1)}[short]
    rc = lib.aclmdlLoadFromFileWithMem(str(path).encode(), ctypes.byref(mid), wp, sizes[0], pp, sizes[1])
    assert rc == acl.ACL_ERROR_GE_PARAM_INVALID
    assert f"{short}Size {sizes[0] if short == 'work' else sizes[1]} is smaller than" in err(lib)
    # NULL pointers: GE allocates that part itself
    mdl.check(
        lib, lib.aclmdlLoadFromFileWithMem(str(path).encode(), ctypes.byref(mid), None, 0, None, 0), "load"
    )
    mdl.check(lib, lib.aclmdlUnload(mid.value), "unload")
    lib.aclrtFree(wp)
    lib.aclrtFree(pp)


# ---- row 63: buffers up to 64 bytes short ----------------------------------------------------------


@pytest.mark.parametrize("which", ["input", "output"], ids=lambda w: f"row63-CANN9.1-{w}-64-bytes-short-runs")
def test_row63_a_buffer_up_to_64_bytes_short_runs(lib, static, which):
    x = np.arange(-64, 64, dtype=np.float32).reshape(4, 32)
    need = x.nbytes
    # the allocation is larger than the buffer declared, so the bytes past it can be checked
    xin, yout = device(lib, need + 256), device(lib, need + 256)
    put(lib, xin, x)
    put(lib, yout, np.full(need + 256, 0xAB, np.uint8))
    in_size, out_size = (need - 64, need) if which == "input" else (need, need - 64)
    ins, ib = dataset(lib, (xin, in_size))
    outs, ob = dataset(lib, (yout, out_size))
    try:
        mdl.check(lib, lib.aclmdlExecute(static.id, ins, outs), "64 bytes short")
        got = get(lib, yout, need + 256)
        y = got[:need].view(np.float32).reshape(4, 32)
        want = np.maximum(x, 0)
        if which == "input":  # the 16 floats past the buffer read as zeros
            want.reshape(-1)[-16:] = 0
            np.testing.assert_array_equal(y, want)
        else:  # only the buffer's bytes are written
            np.testing.assert_array_equal(y.reshape(-1)[:-16], want.reshape(-1)[:-16])
            assert (got[need - 64 :] == 0xAB).all()
        assert (got[need:] == 0xAB).all()
    finally:
        drop(lib, ins, ib)
        drop(lib, outs, ob)
        lib.aclrtFree(xin)
        lib.aclrtFree(yout)


@pytest.mark.parametrize(
    "which", ["input", "output"], ids=lambda w: f"row63-CANN9.1-{w}-65-bytes-short-500002"
)
def test_row63_a_buffer_65_bytes_short_is_refused(lib, static, which):
    sizes = {"input": ([512 - 65], None), "output": (None, [512 - 65])}[which]
    bufs = mdl.Buffers(static, in_sizes=sizes[0], out_sizes=sizes[1])
    try:
        assert lib.aclmdlExecute(static.id, bufs.input, bufs.output) == acl.ACL_ERROR_GE_FAILURE
        name = "x" if which == "input" else "y"
        assert err(lib) == (
            f"aclmdlExecute: {which} 0 ('{name}'): buffer of 447 bytes, model {static.id} needs 512 "
            f"(aclmdlGet{'Input' if which == 'input' else 'Output'}SizeByIndex); "
            "CANN accepts up to 64 bytes fewer"
        )
    finally:
        bufs.close()


def test_row63_CANN91_gear_model_sizes_unchecked_only_under_cann(lib, gear, monkeypatch):
    """CANN does not check a gear model's buffers; the simulator does unless ASCEND_SIM_GEAR_CHECKS=cann."""
    sizes = [io["size"] for io in gear.inputs]
    bufs = mdl.Buffers(gear, in_sizes=[4] + sizes[1:])  # 4 bytes for a 4 x 32 float32 input at batch 4
    try:
        bufs.set_batch(4)
        assert lib.aclmdlExecute(gear.id, bufs.input, bufs.output) == acl.ACL_ERROR_GE_FAILURE
        assert "ASCEND_SIM_GEAR_CHECKS=cann" in err(lib)
        monkeypatch.setenv("ASCEND_SIM_GEAR_CHECKS", "cann")
        put(lib, bufs.in_ptrs[0], np.array([3.0], np.float32))
        bufs.execute()  # the device would read past the buffer; the simulator reads zeros there
        y = bufs.fetch(4)["y"]
        assert y[0, 0] == 3.0 and (y.reshape(-1)[1:] == 0).all()
    finally:
        bufs.close()


# ---- row 64: NULL output data in a synchronous execution ---------------------------------------------


def test_row64_CANN91_null_output_allocated_by_sync_execute(lib, static):
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(4, 32)
    xin = device(lib, x.nbytes)
    put(lib, xin, x)
    ins, ib = dataset(lib, (xin, x.nbytes))
    outs, ob = dataset(lib, (None, 0))
    try:
        mdl.check(lib, lib.aclmdlExecute(static.id, ins, outs), "NULL output")
        addr = lib.aclGetDataBufferAddr(ob[0])
        assert addr and lib.aclGetDataBufferSizeV2(ob[0]) == 512
        np.testing.assert_array_equal(get(lib, addr, 512, np.float32).reshape(4, 32), np.maximum(x, 0))
        mdl.check(lib, lib.aclrtFree(addr), "the program frees it")
        # an asynchronous execution does not allocate
        stream = ctypes.c_void_p()
        mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(stream)), "stream")
        outs2, ob2 = dataset(lib, (None, 0))
        assert lib.aclmdlExecuteAsync(static.id, ins, outs2, stream) == acl.ACL_ERROR_GE_FAILURE
        assert "output 0 ('y'): buffer of 0 bytes" in err(lib)
        drop(lib, outs2, ob2)
        lib.aclrtDestroyStream(stream)
    finally:
        drop(lib, ins, ib)
        drop(lib, outs, ob)
        lib.aclrtFree(xin)


# ---- rows 65-70: the gear setters ---------------------------------------------------------------------


def test_row65_CANN91_gear_model_without_setter(lib, gear, monkeypatch):
    """strict (the default): 145013, the message naming the setter and the switch; cann: the gear the
    buffer holds."""
    bufs = mdl.Buffers(gear)
    try:
        assert (
            lib.aclmdlExecute(gear.id, bufs.input, bufs.output) == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        )
        assert "call aclmdlSetDynamicBatchSize" in err(lib) and "ASCEND_SIM_GEAR_CHECKS=cann" in err(lib)
        monkeypatch.setenv("ASCEND_SIM_GEAR_CHECKS", "cann")
        x = np.arange(-64, 64, dtype=np.float32).reshape(4, 32)
        put(lib, bufs.in_ptrs[0], x)
        put(lib, bufs.in_ptrs[1], np.array([2], np.uint64))  # the device runs the gear the buffer holds
        bufs.execute()
        np.testing.assert_array_equal(bufs.fetch(2)["y"], np.maximum(x[:2], 0))
        put(lib, bufs.in_ptrs[1], np.array([3], np.uint64))  # no gear: the device's branch is undefined
        assert lib.aclmdlExecute(gear.id, bufs.input, bufs.output) == acl.ACL_ERROR_RT_MODEL_EXECUTE
        assert "holds none of its gears (1, 2, 4)" in err(lib)
        monkeypatch.setenv("ASCEND_SIM_GEAR_CHECKS", "loose")
        assert lib.aclmdlExecute(gear.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM
        assert "ASCEND_SIM_GEAR_CHECKS='loose' is invalid" in err(lib)
    finally:
        bufs.close()


def test_row66_CANN91_batch_size_0_is_100000_first(lib):
    assert lib.aclmdlSetDynamicBatchSize(UNKNOWN_ID, None, 7, 0) == acl.ACL_ERROR_INVALID_PARAM
    assert err(lib) == "aclmdlSetDynamicBatchSize: batchSize is 0: expected one of the model's batch gears"


def test_row67_CANN91_setter_index_not_checked(lib, gear):
    bufs = mdl.Buffers(gear)
    try:
        mdl.check(lib, lib.aclmdlSetDynamicBatchSize(gear.id, bufs.input, 0, 2), "index 0")
        assert get(lib, bufs.in_ptrs[0], 8, np.uint64)[0] == 2  # written into input 0's buffer
    finally:
        bufs.close()


@pytest.mark.parametrize("kind", ["static", "range"], ids=lambda k: f"row68-CANN9.1-{k}-model-145013")
def test_row68_setter_on_a_model_without_gears_is_145013(lib, static, kind):
    m = static if kind == "static" else _range_model(lib)
    bufs = mdl.Buffers(m, in_sizes=[512])
    try:
        rc = lib.aclmdlSetDynamicBatchSize(m.id, bufs.input, 0, 1)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
        assert ("it is static" if kind == "static" else "it has shape ranges") in err(lib)
    finally:
        bufs.close()
        if m is not static:
            m.close()


def _range_model(lib):
    g = sim.Graph("ranged")
    g.output("y", g.relu(g.input("x", "float32", ("n", 32))))
    return mdl.load_bytes(lib, g.to_bytes(shape_ranges={"n": (1, 8)}))


@pytest.mark.parametrize(
    "size,width", [(3, 0), (4, 4), (7, 4), (8, 8)], ids=lambda v: f"row69-CANN9.1-batch-buffer-{v}"
)
def test_row69_batch_buffer_sizes(lib, gear, size, width):
    """< 4 bytes: 145012; 4..7: a uint32; 8 and more: a uint64."""
    sizes = [io["size"] for io in gear.inputs]
    bufs = mdl.Buffers(gear, in_sizes=sizes[:-1] + [size])
    try:
        put(lib, bufs.in_ptrs[-1], np.full(size, 0xEE, np.uint8))
        rc = lib.aclmdlSetDynamicBatchSize(gear.id, bufs.input, bufs.dynamic_index(), 2)
        if width == 0:
            assert rc == acl.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
            assert "holds 3 bytes, needs at least 4" in err(lib)
            return
        mdl.check(lib, rc, "set")
        raw = get(lib, bufs.in_ptrs[-1], size)
        assert int.from_bytes(raw[:width].tobytes(), "little") == 2
        assert (raw[width:] == 0xEE).all()
        bufs.execute()  # the gear recorded in the dataset runs
    finally:
        bufs.close()


def test_row69_CANN91_hw_buffer_under_8_bytes_is_145012(lib):
    g = sim.Graph("hw")
    g.output("y", g.relu(g.input("x", "float32", (1, 3, "h", "w"), format="NCHW")))
    m = mdl.load_bytes(lib, g.to_bytes(hw_sizes=[(8, 8), (16, 16)]))
    bufs = mdl.Buffers(m, in_sizes=[m.inputs[0]["size"], 4])
    try:
        rc = lib.aclmdlSetDynamicHWSize(m.id, bufs.input, 1, 8, 8)
        assert rc == acl.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
        assert "holds 4 bytes, needs at least 8" in err(lib)
    finally:
        bufs.close()
        m.close()


def test_row70_CANN91_dynamic_dims_count_0_is_100000(lib, gear):
    bufs = mdl.Buffers(gear)
    try:
        d = mdl.IODims()
        assert (
            lib.aclmdlSetInputDynamicDims(gear.id, bufs.input, 1, ctypes.byref(d))
            == acl.ACL_ERROR_INVALID_PARAM
        )
        assert "dims->dimCount 0 out of range" in err(lib)
    finally:
        bufs.close()


# ---- row 71: sizes -------------------------------------------------------------------------------------


def test_row71_CANN91_sizes_exact_and_range_maxima(lib):
    g = sim.Graph("odd")
    g.output("y", g.relu(g.input("x", "float32", (3, 5))))
    m = mdl.load_bytes(lib, g.to_bytes())
    assert (m.inputs[0]["size"], m.outputs[0]["size"]) == (60, 60)  # no 32 / 64 padding
    m.close()
    r = _range_model(lib)
    assert (r.inputs[0]["size"], r.outputs[0]["size"]) == (
        8 * 32 * 4,
        8 * 32 * 4,
    )  # the product of the maxima
    r.close()
    g = sim.Graph("open")
    g.output("y", g.relu(g.input("x", "float32", ("n", 32))))
    u = mdl.load_bytes(lib, g.to_bytes(shape_ranges={"n": (1, None)}))
    assert (u.inputs[0]["size"], u.outputs[0]["size"]) == (0, 0)  # no upper bound: no largest size
    u.close()


# ---- rows 72-75: dynamic AIPP ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "batch,want",
    [(1, 160), (128, 64 + 96 * 128), (1000, 64 + 96 * 1000), (0, None)],
    ids=lambda v: f"row72-CANN9.1-aipp-data-size-{v}",
)
def test_row72_aipp_data_size_has_no_upper_bound(lib, batch, want):
    size = ctypes.c_size_t()
    rc = lib.aclmdlGetAippDataSize(batch, ctypes.byref(size))
    if want is None:
        assert rc == acl.ACL_ERROR_INVALID_PARAM and "batchSize is 0" in err(lib)
    else:
        mdl.check(lib, rc, "size")
        assert size.value == want


@pytest.fixture
def dyn_aipp(lib):
    g = sim.Graph("dyn")
    g.output("y", g.input("image", "float32", (2, 3, 6, 8), "NCHW"))
    m = mdl.load_bytes(lib, g.to_bytes(aipp={"image": {"aipp_mode": "dynamic", "max_src_image_size": 360}}))
    yield m
    m.close()


def aipp_set(lib, batch):
    a = lib.aclmdlCreateAIPP(batch)
    mdl.check(lib, lib.aclmdlSetAIPPInputFormat(a, 1), "format")
    mdl.check(lib, lib.aclmdlSetAIPPSrcImageSize(a, 12, 10), "src")
    m = BT601_NV12_TO_RGB
    mdl.check(
        lib,
        lib.aclmdlSetAIPPCscParams(
            a,
            1,
            *(m[f"matrix_r{r}c{c}"] for r in range(3) for c in range(3)),
            0,
            0,
            0,
            *(m[f"input_bias_{i}"] for i in range(3)),
        ),
        "csc",
    )
    for b in range(batch):
        mdl.check(lib, lib.aclmdlSetAIPPCropParams(a, 1, 0, 0, 8, 6, b), "crop")
    return a


def test_row73_CANN91_aipp_buffer_too_small_is_145012(lib, dyn_aipp):
    bufs = mdl.Buffers(dyn_aipp, in_sizes=[360, 64 + 96 * 2 - 1])
    a = aipp_set(lib, 2)
    try:
        assert (
            lib.aclmdlSetInputAIPP(dyn_aipp.id, bufs.input, 1, a)
            == acl.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
        )
        assert "holds 255 bytes, the parameters of 2 images need 256" in err(lib)
    finally:
        lib.aclmdlDestroyAIPP(a)
        bufs.close()


def test_row74_CANN91_set_input_aipp_without_dynamic_aipp_is_100000(lib, static):
    bufs = mdl.Buffers(static)
    a = aipp_set(lib, 1)
    try:
        assert lib.aclmdlSetInputAIPP(static.id, bufs.input, 0, a) == acl.ACL_ERROR_INVALID_PARAM
        assert "has no dynamic AIPP input (no input named ascend_dynamic_aipp_data)" in err(lib)
    finally:
        lib.aclmdlDestroyAIPP(a)
        bufs.close()


@pytest.mark.parametrize("case", ["batch", "index"], ids=lambda c: f"row75-CANN9.1-wrong-{c}-100000")
def test_row75_aipp_batch_or_index_mismatch_is_100000(lib, dyn_aipp, case):
    bufs = mdl.Buffers(dyn_aipp)
    a = aipp_set(lib, 1 if case == "batch" else 2)
    try:
        rc = lib.aclmdlSetInputAIPP(dyn_aipp.id, bufs.input, 1 if case == "batch" else 0, a)
        assert rc == acl.ACL_ERROR_INVALID_PARAM
        assert ("created for 1 images" if case == "batch" else "index 0 is not the") in err(lib)
    finally:
        lib.aclmdlDestroyAIPP(a)
        bufs.close()


# ---- row 76: another context -----------------------------------------------------------------------


def test_row76_CANN91_execute_from_another_device_is_107004(lib, static):
    bufs = mdl.Buffers(static)
    got = {}

    def other():  # a thread whose current context is device 1's
        mdl.check(lib, lib.aclrtSetDevice(1), "aclrtSetDevice(1)")
        got["rc"] = lib.aclmdlExecute(static.id, bufs.input, bufs.output)
        got["msg"] = err(lib)
        lib.aclrtResetDevice(1)

    try:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert got["rc"] == 107004 and "is loaded on device 0" in got["msg"], got
    finally:
        bufs.close()
