"""Static AIPP on hand-built models: ``Graph.save(..., aipp=...)``, what the
descriptor reports for an AIPP input, and the AIPP unit's steps at execution
against the numpy reference of tests/helpers/aipp.py (docs/simulator.md,
"Static AIPP")."""

import ctypes
import struct

import numpy as np
import pytest
from helpers import mdl, simlib
from helpers.aipp import BT601_NV12_TO_RGB, AippInfo, nv12, reference

from ascend_engine import sim
from ascend_engine.sim import aipp as aipp_settings

ACL_DATA_WITHOUT_AIPP, ACL_DATA_WITH_STATIC_AIPP = 0, 1
ACL_UINT8, ACL_FORMAT_NHWC = 4, 1
ACL_ERROR_INVALID_PARAM, ACL_ERROR_PARSE_MODEL, ACL_ERROR_NOT_STATIC_AIPP = 100000, 100013, 100038
ACL_ERROR_GE_FAILURE = 500002


def identity(shape, fmt="NCHW", dtype="float32", extra_input=False):
    """A graph whose output is its input: the output is what AIPP made."""
    g = sim.Graph("aipp")
    x = g.input("image", dtype, shape, fmt)
    if extra_input:
        g.output("z", g.relu(g.input("plain", "float32", (2,))))
    g.output("y", x)
    return g


def static(**fields):
    return {"aipp_mode": "static", **fields}


NV12_CROP_PAD = static(
    input_format="YUV420SP_U8", src_image_size_w=16, src_image_size_h=10, crop=True, load_start_pos_w=4,
    load_start_pos_h=2, crop_size_w=9, crop_size_h=5, padding=True, left_padding_size=2, right_padding_size=1,
    top_padding_size=1, bottom_padding_size=2, **BT601_NV12_TO_RGB,
    mean_chn_0=10, mean_chn_1=20, mean_chn_2=30,
    min_chn_0=0.5, min_chn_1=1.5, min_chn_2=2.5, var_reci_chn_0=0.5, var_reci_chn_1=0.25, var_reci_chn_2=2.0,
)


def run(lib, graph, fields, image, extra=None):
    model = mdl.load_bytes(lib, graph.to_bytes(aipp={"image": fields}))
    try:
        feeds = {"image": image, **(extra or {})}
        return model, mdl.run_loaded(model, feeds)
    finally:
        model.close()


def resolved(graph, fields):
    t = graph.inputs[0]
    return aipp_settings.resolve(fields, t.name, t.shape, t.format, t.dtype)


def test_nv12_crop_csc_normalize_pad_matches_the_reference(lib):
    rng = np.random.default_rng(1)
    g = identity((1, 3, 8, 12))
    img = nv12(rng, 16, 10)
    _, out = run(lib, g, NV12_CROP_PAD, img)
    want = reference(resolved(g, NV12_CROP_PAD), img)
    assert out["y"].shape == (1, 3, 8, 12)
    np.testing.assert_array_equal(out["y"], want)
    # the padding is 0 and the crop lands at (left, top)
    assert (out["y"][0, :, 0, :] == 0).all() and (out["y"][0, :, :, :2] == 0).all()
    assert (out["y"][0, :, -2:, :] == 0).all() and (out["y"][0, :, :, -1] == 0).all()


def test_bt601_conversion_is_within_one_level_of_the_float_formula(lib):
    """The integer matrix ATC users write against BT.601 full range in floats:
    >> 8 floors and the matrix is rounded to 1/256, so a level of difference."""
    rng = np.random.default_rng(2)
    g = identity((1, 3, 16, 16))
    img = nv12(rng, 16, 16)
    _, out = run(lib, g, static(input_format="YUV420SP_U8", **BT601_NV12_TO_RGB), img)
    y = img[:256].reshape(16, 16).astype(np.float64)
    uv = img[256:].reshape(8, 8, 2).repeat(2, 0).repeat(2, 1).astype(np.float64) - 128
    u, v = uv[..., 0], uv[..., 1]
    rgb = np.clip(np.stack([y + 1.402 * v, y - 0.344136 * u - 0.714136 * v, y + 1.772 * u]), 0, 255)
    diff = np.abs(out["y"][0] - rgb)
    assert diff.max() <= 1.6, diff.max()
    assert np.mean(diff) < 0.8


def test_nv21_swaps_u_and_v_before_the_conversion(lib):
    rng = np.random.default_rng(3)
    g = identity((1, 3, 4, 4))
    img = nv12(rng, 4, 4)
    swapped = img.copy()
    swapped[16:] = img[16:].reshape(-1, 2)[:, ::-1].reshape(-1)
    fields = static(input_format="YUV420SP_U8", **BT601_NV12_TO_RGB)
    _, plain = run(lib, g, fields, img)
    _, nv21 = run(lib, g, {**fields, "rbuv_swap_switch": True}, swapped)
    np.testing.assert_array_equal(plain["y"], nv21["y"])


def test_rgb888_into_an_nhwc_float16_input_with_the_swap(lib):
    rng = np.random.default_rng(4)
    g = identity((2, 6, 5, 3), fmt="NHWC", dtype="float16")
    fields = static(input_format="RGB888_U8", rbuv_swap_switch=True, mean_chn_0=100, mean_chn_2=7,
                    var_reci_chn_0=0.0039215686, var_reci_chn_1=0.5, var_reci_chn_2=3.0)
    img = rng.integers(0, 256, size=2 * 6 * 5 * 3, dtype=np.uint8)
    _, out = run(lib, g, fields, img)
    want = reference(resolved(g, fields), img, fmt="NHWC", dtype=np.float16)
    assert out["y"].dtype == np.float16
    np.testing.assert_array_equal(out["y"], want)
    # the swap: the first model channel comes from the third byte
    first = img[:3].astype(np.float32)
    assert out["y"][0, 0, 0, 0] == np.float16((first[2] - 100) * np.float32(0.0039215686))


@pytest.mark.parametrize("ax_swap", [False, True])
def test_xrgb8888_skips_the_alpha_byte(lib, ax_swap):
    rng = np.random.default_rng(5)
    g = identity((1, 3, 3, 4))
    fields = static(input_format="XRGB8888_U8", ax_swap_switch=ax_swap)
    img = rng.integers(0, 256, size=3 * 4 * 4, dtype=np.uint8)
    _, out = run(lib, g, fields, img)
    px = img.reshape(3, 4, 4)
    want = (px[..., :3] if ax_swap else px[..., 1:]).transpose(2, 0, 1).astype(np.float32)
    np.testing.assert_array_equal(out["y"][0], want)


def test_yuv400_fills_one_channel_and_pads_with_the_value(lib):
    rng = np.random.default_rng(6)
    g = identity((1, 1, 6, 5))
    fields = static(input_format="YUV400_U8", src_image_size_w=4, src_image_size_h=4, padding=True,
                    right_padding_size=1, top_padding_size=2, padding_value=-1.5, min_chn_0=3.0)
    img = rng.integers(0, 256, size=16, dtype=np.uint8)
    _, out = run(lib, g, fields, img)
    np.testing.assert_array_equal(out["y"], reference(resolved(g, fields), img))
    assert (out["y"][0, 0, :2] == -1.5).all() and (out["y"][0, 0, :, 4] == -1.5).all()
    np.testing.assert_array_equal(out["y"][0, 0, 2:, :4], img.reshape(4, 4).astype(np.float32) - 3)


def _describe(lib, model, index):
    t, att = ctypes.c_int(), ctypes.c_size_t()
    rc = lib.aclmdlGetAippType(model.id, index, ctypes.byref(t), ctypes.byref(att))
    mdl.check(lib, rc, "aclmdlGetAippType")
    return t.value, att.value


def _dims(fn, model, index):
    d = mdl.IODims()
    mdl.check(model.lib, fn(model.desc, index, ctypes.byref(d)), "dims")
    return tuple(d.dims[k] for k in range(d.dimCount))


def test_the_descriptor_reports_the_source_image(lib):
    g = identity((1, 3, 8, 12), extra_input=True)
    model = mdl.load_bytes(lib, g.to_bytes(aipp={"image": NV12_CROP_PAD}))
    try:
        io = model.inputs[0]
        assert io["size"] == 16 * 10 * 3 // 2  # YUV420SP: w * h * 3 / 2
        assert io["dtype"] == ACL_UINT8 and io["format"] == ACL_FORMAT_NHWC
        assert io["dims"] == (1, 10, 16, 3)  # aclmdlGetInputDims: n, h, w, c of the image
        assert _dims(lib.aclmdlGetInputDimsV2, model, 0) == (1, 15, 16, 1)  # n, h * 1.5, w, 1: its bytes
        assert model.inputs[1]["size"] == 8 and model.inputs[1]["dtype"] == 0
        assert _describe(lib, model, 0) == (ACL_DATA_WITH_STATIC_AIPP, 0xFFFFFFFF)  # ACL_INVALID_NODE_INDEX
        assert _describe(lib, model, 1)[0] == ACL_DATA_WITHOUT_AIPP
        info = AippInfo()
        mdl.check(lib, lib.aclmdlGetFirstAippInfo(model.id, 0, ctypes.byref(info)), "aclmdlGetFirstAippInfo")
        assert (info.inputFormat, info.srcImageSizeW, info.srcImageSizeH) == (1, 16, 10)
        assert (info.cropSwitch, info.loadStartPosW, info.loadStartPosH, info.cropSizeW, info.cropSizeH) == (
            1, 4, 2, 9, 5)
        assert (info.paddingSwitch, info.leftPaddingSize, info.rightPaddingSize, info.topPaddingSize,
                info.bottomPaddingSize) == (1, 2, 1, 1, 2)
        # the output biases were not given: ATC fills 16, 128, 128 (which a YUV source does not use)
        assert (info.cscSwitch, info.matrixR0C2, info.matrixR2C1, info.inputBias1, info.outputBias0) == (
            1, 359, 454, 128, 16)
        assert (info.meanChn2, info.minChn1, info.varReciChn1) == (30, 1.5, 0.25)
        assert (info.srcFormat, info.srcDatatype, info.srcDimNum, info.shapeCount) == (0, 0, 4, 1)
        src = info.outDims[0].srcDims
        assert tuple(src.dims[:src.dimCount]) == (1, 3, 8, 12) and info.outDims[0].srcSize == 4 * 3 * 8 * 12
        rc = lib.aclmdlGetFirstAippInfo(model.id, 1, ctypes.byref(info))
        assert rc == ACL_ERROR_NOT_STATIC_AIPP
        assert "input 1 ('plain') of model" in simlib.recent_error(lib)
        assert lib.aclmdlGetFirstAippInfo(model.id, 3, ctypes.byref(info)) == ACL_ERROR_INVALID_PARAM
        assert lib.aclmdlGetFirstAippInfo(model.id, 0, None) == ACL_ERROR_INVALID_PARAM
    finally:
        model.close()


def test_an_image_buffer_more_than_64_bytes_short_is_refused(lib):
    """GE's slack (CANN 9.1): 64 bytes short runs (the missing bytes read as zeros), 65 is 500002."""
    g = identity((1, 3, 8, 12))
    model = mdl.load_bytes(lib, g.to_bytes(aipp={"image": NV12_CROP_PAD}))
    bufs = mdl.Buffers(model, in_sizes=[16 * 10 * 3 // 2 - 65])
    ok = mdl.Buffers(model, in_sizes=[16 * 10 * 3 // 2 - 64])
    try:
        with pytest.raises(mdl.AclFailed) as e:
            bufs.execute()
        assert e.value.code == ACL_ERROR_GE_FAILURE
        assert "input 0 ('image'): buffer of 175 bytes" in e.value.msg and "needs 240" in e.value.msg
        ok.execute()
    finally:
        bufs.close()
        ok.close()
        model.close()


@pytest.mark.parametrize(
    "shape, fmt, dtype, fields, message",
    [
        ((1, 3, 8, 12), "NCHW", "float32", {**NV12_CROP_PAD, "load_start_pos_w": 3},
         "load_start_pos_w and load_start_pos_h must be even for YUV420SP_U8, got (3, 2)"),
        ((1, 3, 8, 12), "NCHW", "float32", {**NV12_CROP_PAD, "src_image_size_w": 15},
         "src_image_size_w and src_image_size_h must be even for YUV420SP_U8, got 15 x 10"),
        ((1, 3, 8, 12), "NCHW", "float32", {**NV12_CROP_PAD, "load_start_pos_w": 8},
         "the crop window at (8, 2) of 9 x 5 must lie inside the 16 x 10 source image"),
        ((1, 3, 8, 13), "NCHW", "float32", NV12_CROP_PAD,
         "the AIPP output is 12 x 8 (W x H: the crop 9 x 5 plus padding left 2 right 1 top 1 bottom 2), "
         "the model input is 13 x 8: they must be equal"),
        ((1, 3, 9, 12), "NCHW", "float32", NV12_CROP_PAD, "the model input is 12 x 9: they must be equal"),
        ((1, 4, 8, 12), "NCHW", "float32", NV12_CROP_PAD,
         "YUV420SP_U8 through AIPP gives 3 channels, the model input NCHW (1, 4, 8, 12) has C = 4"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="YUV400_U8"),
         "YUV400_U8 through AIPP gives 1 channel, the model input NCHW (1, 3, 4, 4) has C = 3"),
        ((3, 4, 4), "ND", "float32", static(input_format="RGB888_U8"),
         "AIPP needs a 4-D NCHW or NHWC model input"),
        ((1, 3, 4, 4), "NCHW", "int32", static(input_format="RGB888_U8"),
         "AIPP produces a float32 or float16 model input, not int32"),
        ((-1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8"),
         "AIPP on an input with dynamic dimensions"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", crop_sise_w=2),
         "unknown aipp_op field 'crop_sise_w'"),
        ((1, 3, 4, 4), "NCHW", "float32", {"aipp_mode": "dynamic"},
         "dynamic AIPP needs max_src_image_size (the largest image's bytes)"),
        ((1, 3, 4, 4), "NCHW", "float32", {"aipp_mode": "dynamic", "max_src_image_size": 64, "crop": True},
         "crop is a static AIPP field; with aipp_mode dynamic the settings come from aclmdlSetInputAIPP"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", max_src_image_size=64),
         "max_src_image_size belongs to dynamic AIPP"),
        ((1, 3, 4, 4), "NCHW", "float32", {"input_format": "RGB888_U8"}, "aipp_mode is required"),
        ((1, 3, 4, 4), "NCHW", "float32", static(), "input_format is required in static AIPP"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="YUV422SP_U8"),
         "input_format 'YUV422SP_U8': the simulator models YUV420SP_U8"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", matrix_r0c0=40000),
         "matrix_r0c0: 40000 is outside [-32677, 32676]"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", mean_chn_0=256),
         "mean_chn_0: 256 is outside [0, 255]"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", crop="yes"),
         "crop: expected true or false, got 'yes'"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", left_padding_size=1),
         "padding sizes (1, 0, 0, 0) are given but padding is false"),
        ((1, 3, 4, 4), "NCHW", "float32", static(input_format="RGB888_U8", crop_size_w=2),
         "a crop window is given but crop is false"),
    ],
)
def test_save_refuses_what_atc_refuses(shape, fmt, dtype, fields, message):
    g = sim.Graph("bad")
    g.output("y", g.input("image", dtype, shape, fmt))
    with pytest.raises(sim.GraphError) as e:
        g.to_bytes(aipp={"image": fields}, **({"batch_sizes": [1, 2]} if -1 in shape else {}))
    assert message in str(e.value)
    assert str(e.value).startswith("save: aipp: input 'image': ")


def test_save_refuses_an_unknown_input_and_a_rank_that_disagrees():
    g = identity((1, 3, 4, 4))
    with pytest.raises(sim.GraphError, match=r"aipp names input 'img'; the graph's inputs are \['image'\]"):
        g.to_bytes(aipp={"img": static(input_format="RGB888_U8")})
    with pytest.raises(sim.GraphError, match="has related_input_rank 1"):
        g.to_bytes(aipp={0: static(input_format="RGB888_U8", related_input_rank=1)})


def _aipp_record_at(blob):
    off, count = struct.unpack_from("<QI", blob, 192)
    assert count == 1
    return off


@pytest.mark.parametrize(
    "field_at, value, message",
    [
        (28, 3, "YUV420SP_U8 needs an even source size and an even crop start"),
        (36, 20, "crop window at (4, 2) of 20 x 5 must lie inside the 16 x 10 source image"),
        (44, 3, "the AIPP output is 13 x 8 (crop + padding, W x H), the tensor's W x H is 12 x 8"),
        (4, 3, "aipp_mode 3: expected 1 (static) or 2 (dynamic)"),
        (4, 2, "a dynamic AIPP record (mode 2) has only its input and max_src_image_size: byte 8 is 1"),
        (8, 9, "input_format 9"),
        (0, 5, "input 5 does not exist"),
    ],
)
def test_the_loader_checks_every_record(lib, field_at, value, message):
    blob = bytearray(identity((1, 3, 8, 12)).to_bytes(aipp={"image": NV12_CROP_PAD}))
    assert struct.unpack_from("<I", blob, 8)[0] == 4  # version 4: a model with AIPP
    struct.pack_into("<i", blob, _aipp_record_at(blob) + field_at, value)
    mid = ctypes.c_uint32()
    rc = lib.aclmdlLoadFromMem(bytes(blob), len(blob), ctypes.byref(mid))
    assert rc == ACL_ERROR_PARSE_MODEL
    assert message in simlib.recent_error(lib)


def test_a_model_without_aipp_keeps_its_version_and_descriptor(lib):
    g = identity((1, 3, 4, 4))
    assert struct.unpack_from("<I", g.to_bytes(), 8)[0] == 1
    model = mdl.load_bytes(lib, g.to_bytes())
    try:
        assert model.inputs[0]["size"] == 4 * 48 and _describe(lib, model, 0)[0] == ACL_DATA_WITHOUT_AIPP
    finally:
        model.close()


def test_aipp_adds_no_device_time(sim, lib, stream):
    """Two executions queued back to back: the second starts when the first ends,
    so the events around it read exactly the model's modelled time."""
    g = identity((1, 3, 8, 12))
    model = mdl.load_bytes(lib, g.to_bytes(aipp={"image": NV12_CROP_PAD}, latency_us=20000))
    bufs = mdl.Buffers(model)
    start, end = sim.event(), sim.event()
    try:
        bufs.feed({"image": nv12(np.random.default_rng(9), 16, 10)})
        bufs.execute(stream)
        sim.ok(lib.aclrtRecordEvent(start, stream))
        bufs.execute(stream)
        sim.ok(lib.aclrtRecordEvent(end, stream))
        sim.ok(lib.aclrtSynchronizeStream(stream))
        ms = ctypes.c_float()
        sim.ok(lib.aclrtEventElapsedTime(ctypes.byref(ms), start, end))
        assert ms.value == pytest.approx(20.0, abs=0.01)
    finally:
        for e in (start, end):
            sim.ok(lib.aclrtDestroyEvent(e))
        bufs.close()
        model.close()
