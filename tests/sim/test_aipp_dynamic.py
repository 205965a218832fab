"""Dynamic AIPP: a model saved with ``aipp_mode: dynamic`` takes its
pre-processing per execution from the ``ascend_dynamic_aipp_data`` input,
written by ``aclmdlSetInputAIPP`` from a set built with the ``aclmdlSetAIPP*``
setters, one crop, padding and normalization per batch image
(docs/simulator.md, "Dynamic AIPP")."""

import ctypes

import numpy as np
import pytest
from helpers import mdl, simlib
from helpers.aipp import BT601_NV12_TO_RGB, AippInfo, nv12, reference

from ascend_engine import sim
from ascend_engine.sim import aipp as aipp_settings

ACL_DATA_WITH_DYNAMIC_AIPP, ACL_DYNAMIC_AIPP_NODE = 2, 3
ACL_ERROR_INVALID_PARAM, ACL_ERROR_GE_AIPP_BATCH_EMPTY = 100000, 145014
SRC_W, SRC_H = 12, 10
MAX_BYTES = 2 * SRC_W * SRC_H * 3 // 2
# per batch image: the crop window, the mean of channel 0, min, var_reci (exact in float16)
BATCH = [((2, 2), 10, 1.5, 0.5), ((4, 4), 30, 0.25, 2.0)]


@pytest.fixture
def model(lib):
    g = sim.Graph("dyn")
    g.output("y", g.input("image", "float32", (2, 3, 6, 8), "NCHW"))
    fields = {"aipp_mode": "dynamic", "max_src_image_size": MAX_BYTES}
    m = mdl.load_bytes(lib, g.to_bytes(aipp={"image": fields}))
    yield m
    m.close()


def aipp_set(lib, batch=2, crop_w=8):
    a = lib.aclmdlCreateAIPP(batch)
    assert a, simlib.recent_error(lib)
    mdl.check(lib, lib.aclmdlSetAIPPInputFormat(a, 1), "format")  # ACL_YUV420SP_U8
    mdl.check(lib, lib.aclmdlSetAIPPSrcImageSize(a, SRC_W, SRC_H), "src")
    m = BT601_NV12_TO_RGB
    mdl.check(lib, lib.aclmdlSetAIPPCscParams(
        a, 1, *(m[f"matrix_r{r}c{c}"] for r in range(3) for c in range(3)), 0, 0, 0,
        *(m[f"input_bias_{i}"] for i in range(3))), "csc")
    for b, ((x, y), mean, mn, var) in enumerate(BATCH[:batch]):
        mdl.check(lib, lib.aclmdlSetAIPPCropParams(a, 1, x, y, crop_w, 6, b), "crop")
        mdl.check(lib, lib.aclmdlSetAIPPDtcPixelMean(a, mean, 0, 0, 0, b), "mean")
        mdl.check(lib, lib.aclmdlSetAIPPDtcPixelMin(a, mn, mn, mn, 0, b), "min")
        mdl.check(lib, lib.aclmdlSetAIPPPixelVarReci(a, var, var, var, 1.0, b), "var")
    return a


def feed(lib, bufs, images):
    """The images into input 0 (the parameter input is aclmdlSetInputAIPP's)."""
    rc = lib.aclrtMemcpy(bufs.in_ptrs[0], MAX_BYTES, images.ctypes.data, images.nbytes, 1)  # host to device
    mdl.check(lib, rc, "aclrtMemcpy")


def want(images):
    out = []
    for b, ((x, y), mean, mn, var) in enumerate(BATCH):
        fields = {"aipp_mode": "static", "input_format": "YUV420SP_U8", "src_image_size_w": SRC_W,
                  "src_image_size_h": SRC_H, "crop": True, "load_start_pos_w": x, "load_start_pos_h": y,
                  "crop_size_w": 8, "crop_size_h": 6, **BT601_NV12_TO_RGB, "mean_chn_0": mean,
                  **{f"min_chn_{i}": mn for i in range(3)}, **{f"var_reci_chn_{i}": var for i in range(3)}}
        s = aipp_settings.resolve(fields, "image", (1, 3, 6, 8), "NCHW", "float32")
        per = SRC_W * SRC_H * 3 // 2
        out.append(reference(s, images[b * per : (b + 1) * per])[0])
    return np.stack(out)


def test_the_descriptor_and_the_aipp_types(lib, model):
    assert [io["name"] for io in model.inputs] == ["image", "ascend_dynamic_aipp_data"]
    assert model.inputs[0]["size"] == MAX_BYTES and model.inputs[0]["dtype"] == 4
    size = ctypes.c_size_t()
    mdl.check(lib, lib.aclmdlGetAippDataSize(2, ctypes.byref(size)), "aclmdlGetAippDataSize")
    assert model.inputs[1]["size"] == size.value == 64 + 2 * 96
    assert lib.aclmdlGetAippDataSize(0, ctypes.byref(size)) == ACL_ERROR_INVALID_PARAM
    t, att = ctypes.c_int(), ctypes.c_size_t()
    mdl.check(lib, lib.aclmdlGetAippType(model.id, 0, ctypes.byref(t), ctypes.byref(att)), "type")
    assert (t.value, att.value) == (ACL_DATA_WITH_DYNAMIC_AIPP, 1)
    mdl.check(lib, lib.aclmdlGetAippType(model.id, 1, ctypes.byref(t), ctypes.byref(att)), "type")
    assert t.value == ACL_DYNAMIC_AIPP_NODE
    info = AippInfo()
    mdl.check(lib, lib.aclmdlGetFirstAippInfo(model.id, 0, ctypes.byref(info)), "info")
    src = info.outDims[0].srcDims
    assert (info.srcDimNum, info.shapeCount, tuple(src.dims[: src.dimCount])) == (4, 1, (2, 3, 6, 8))
    assert info.inputFormat == 0  # only the original input is described for dynamic AIPP


def test_each_batch_image_gets_its_own_crop_and_normalization(lib, model):
    images = nv12(np.random.default_rng(10), SRC_W, SRC_H, n=2)
    bufs = mdl.Buffers(model)
    a = aipp_set(lib)
    try:
        feed(lib, bufs, images)
        mdl.check(lib, lib.aclmdlSetInputAIPP(model.id, bufs.input, 1, a), "aclmdlSetInputAIPP")
        bufs.execute()
        np.testing.assert_array_equal(bufs.fetch()["y"], want(images))
    finally:
        lib.aclmdlDestroyAIPP(a)
        bufs.close()


def test_executing_before_the_parameters_are_set_fails(lib, model):
    bufs = mdl.Buffers(model)
    try:
        mdl.check(lib, lib.aclrtMemset(bufs.in_ptrs[1], 256, 0, 256), "aclrtMemset")
        with pytest.raises(mdl.AclFailed) as e:
            bufs.execute()
        assert e.value.code == ACL_ERROR_GE_AIPP_BATCH_EMPTY
        assert "the dynamic AIPP parameters of input 0 were never set: call aclmdlSetInputAIPP" in e.value.msg
        mdl.check(lib, lib.aclrtMemset(bufs.in_ptrs[1], 256, 7, 256), "aclrtMemset")  # not a parameter block
        with pytest.raises(mdl.AclFailed) as e:
            bufs.execute()
        assert e.value.code == 145000
        assert "the dynamic AIPP parameters are for 7 images, input 0 holds 2" in e.value.msg
    finally:
        bufs.close()


@pytest.mark.parametrize(
    "index, batch, crop_w, message",
    [
        (0, 2, 8, "index 0 is not the ascend_dynamic_aipp_data input of model 'dyn' (it is input 1)"),
        (1, 1, 8, "the AIPP set was created for 1 images, input 0 ('image') takes 2"),
        (1, 2, 7, "input 0, batch image 0: the AIPP output is 7 x 6 (crop + padding, W x H), the "
                  "tensor's W x H is 8 x 6"),
    ],
)
def test_set_input_aipp_checks_the_set_against_the_model(lib, model, index, batch, crop_w, message):
    bufs = mdl.Buffers(model)
    a = aipp_set(lib, batch=batch, crop_w=crop_w)
    try:
        assert lib.aclmdlSetInputAIPP(model.id, bufs.input, index, a) == ACL_ERROR_INVALID_PARAM
        assert message in simlib.recent_error(lib)
    finally:
        lib.aclmdlDestroyAIPP(a)
        bufs.close()


def test_images_larger_than_max_src_image_size_are_refused(lib):
    g = sim.Graph("small")
    g.output("y", g.input("image", "float32", (2, 3, 6, 8), "NCHW"))
    m = mdl.load_bytes(lib, g.to_bytes(aipp={"image": {"aipp_mode": "dynamic", "max_src_image_size": 300}}))
    bufs = mdl.Buffers(m)
    a = aipp_set(lib)
    try:
        assert lib.aclmdlSetInputAIPP(m.id, bufs.input, 1, a) == ACL_ERROR_INVALID_PARAM
        assert "2 images of 180 bytes exceed its max_src_image_size of 300" in simlib.recent_error(lib)
    finally:
        lib.aclmdlDestroyAIPP(a)
        bufs.close()
        m.close()


def test_dynamic_aipp_with_a_dynamic_batch_is_refused():
    g = sim.Graph("gears")
    g.output("y", g.input("image", "float32", (1, 3, 6, 8), "NCHW"))
    g.output("z", g.input("rows", "float32", (-1, 4)))
    with pytest.raises(sim.GraphError, match="dynamic AIPP in a model with a dynamic batch"):
        g.to_bytes(batch_sizes=[1, 2], aipp={"image": {"aipp_mode": "dynamic", "max_src_image_size": 72}})
