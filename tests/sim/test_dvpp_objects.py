"""DVPP handles: channel and picture descriptions, batches, ROI / resize / border / JPEG-encode configs.

Every getter returns what its setter stored; every bad handle (NULL, destroyed,
of another kind) and out-of-range value is refused with 100000 and a message
naming the argument.
"""

import ctypes

import pytest
from helpers.dvpp import INVALID_PARAM, NV21


def test_pic_desc_every_setter_and_getter(dvpp):
    lib = dvpp.lib
    d = lib.acldvppCreatePicDesc()
    assert d
    ptr = dvpp.malloc(1024)
    values = {
        "Size": 1000,
        "Format": NV21,
        "Width": 33,
        "Height": 17,
        "WidthStride": 48,
        "HeightStride": 18,
        "RetCode": 7,
    }
    dvpp.ok(lib.acldvppSetPicDescData(d, ptr))
    for field, v in values.items():
        dvpp.ok(getattr(lib, f"acldvppSetPicDesc{field}")(d, v))
    assert lib.acldvppGetPicDescData(d) == ptr
    for field, v in values.items():
        assert getattr(lib, f"acldvppGetPicDesc{field}")(d) == v, field
    dvpp.ok(lib.acldvppDestroyPicDesc(d))
    dvpp.ok(lib.acldvppFree(ptr))


def test_fresh_pic_desc_is_zero(dvpp):
    lib = dvpp.lib
    d = lib.acldvppCreatePicDesc()
    assert lib.acldvppGetPicDescData(d) is None
    assert [lib.acldvppGetPicDescSize(d), lib.acldvppGetPicDescFormat(d), lib.acldvppGetPicDescWidth(d)] == [
        0,
        0,
        0,
    ]
    dvpp.ok(lib.acldvppDestroyPicDesc(d))


def test_destroyed_pic_desc_is_refused_not_dereferenced(dvpp):
    lib = dvpp.lib
    d = lib.acldvppCreatePicDesc()
    dvpp.ok(lib.acldvppDestroyPicDesc(d))
    dvpp.refused(
        lib.acldvppSetPicDescWidth(d, 4),
        INVALID_PARAM,
        "acldvppSetPicDescWidth",
        "picDesc",
        "is not a live acldvppPicDesc",
    )
    assert lib.acldvppGetPicDescWidth(d) == 0
    dvpp.refused(lib.acldvppDestroyPicDesc(d), INVALID_PARAM, "acldvppDestroyPicDesc", "already destroyed")
    dvpp.refused(lib.acldvppDestroyPicDesc(None), INVALID_PARAM, "picDesc is NULL")


def test_handle_of_another_kind_is_refused(dvpp):
    lib = dvpp.lib
    roi = lib.acldvppCreateRoiConfig(0, 9, 0, 5)
    dvpp.refused(lib.acldvppSetPicDescWidth(roi, 4), INVALID_PARAM, "is not a live acldvppPicDesc")
    dvpp.refused(lib.acldvppDestroyResizeConfig(roi), INVALID_PARAM, "is not a live acldvppResizeConfig")
    dvpp.ok(lib.acldvppDestroyRoiConfig(roi))


def test_channel_lifecycle_and_ids(dvpp):
    lib = dvpp.lib
    a, b = dvpp.channel(), dvpp.channel()
    ida, idb = lib.acldvppGetChannelDescChannelId(a), lib.acldvppGetChannelDescChannelId(b)
    assert ida != idb
    dvpp.refused(lib.acldvppCreateChannel(a), INVALID_PARAM, "already has a channel")
    dvpp.refused(lib.acldvppDestroyChannelDesc(a), INVALID_PARAM, "call acldvppDestroyChannel first")
    dvpp.refused(lib.acldvppSetChannelDescMode(a, 1), INVALID_PARAM, "before acldvppCreateChannel")
    dvpp.close_channel(a)
    dvpp.close_channel(b)
    c = lib.acldvppCreateChannelDesc()
    dvpp.refused(lib.acldvppDestroyChannel(c), INVALID_PARAM, "has no channel")
    dvpp.refused(lib.acldvppSetChannelDescMode(c, 8), INVALID_PARAM, "mode 8 is not a combination")
    dvpp.ok(lib.acldvppDestroyChannelDesc(c))


def test_channel_needs_a_current_device():
    from simrt_util import run_child

    run_child("""
        from helpers import dvpp as D
        lib.aclInit(None)
        d = D.load()
        c = d.acldvppCreateChannelDesc()
        rc = d.acldvppCreateChannel(c)
        assert rc == 107002, rc
        assert "acldvppCreateChannel" in err() and "aclrtSetDevice" in err(), err()
    """)


def test_batch_pictures_belong_to_the_batch(dvpp):
    lib = dvpp.lib
    b = lib.acldvppCreateBatchPicDesc(3)
    assert b
    p0, p2 = lib.acldvppGetPicDesc(b, 0), lib.acldvppGetPicDesc(b, 2)
    assert p0 and p2 and p0 != p2
    dvpp.ok(lib.acldvppSetPicDescWidth(p2, 64))
    assert lib.acldvppGetPicDescWidth(p2) == 64
    assert lib.acldvppGetPicDesc(b, 3) is None
    assert "index 3 is out of range: the batch holds 3 pictures" in dvpp.err()
    dvpp.refused(
        lib.acldvppDestroyPicDesc(p0), INVALID_PARAM, "belongs to batch", "acldvppDestroyBatchPicDesc"
    )
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(b))
    dvpp.refused(lib.acldvppSetPicDescWidth(p2, 1), INVALID_PARAM, "is not a live acldvppPicDesc")
    assert lib.acldvppCreateBatchPicDesc(0) is None
    assert "batchSize is 0" in dvpp.err()


def test_roi_config_setters(dvpp):
    lib = dvpp.lib
    r = lib.acldvppCreateRoiConfig(2, 11, 4, 9)
    assert r
    for side, v in (("Left", 6), ("Right", 21), ("Top", 8), ("Bottom", 19)):
        dvpp.ok(getattr(lib, f"acldvppSetRoiConfig{side}")(r, v))
    dvpp.ok(lib.acldvppSetRoiConfig(r, 0, 9, 0, 5))
    dvpp.ok(lib.acldvppDestroyRoiConfig(r))


@pytest.mark.parametrize("value,ok", [(0, True), (1, True), (2, True), (3, False)])
def test_resize_interpolation(dvpp, value, ok):
    lib = dvpp.lib
    r = lib.acldvppCreateResizeConfig()
    assert lib.acldvppGetResizeConfigInterpolation(r) == 0
    rc = lib.acldvppSetResizeConfigInterpolation(r, value)
    if ok:
        dvpp.ok(rc)
        assert lib.acldvppGetResizeConfigInterpolation(r) == value
    else:
        dvpp.refused(rc, INVALID_PARAM, "interpolation 3 is not supported")
    dvpp.ok(lib.acldvppDestroyResizeConfig(r))


def test_border_config(dvpp):
    lib = dvpp.lib
    b = lib.acldvppCreateBorderConfig()
    for i, v in enumerate((16.0, 128.0, 200.0, 0.0)):
        dvpp.ok(lib.acldvppSetBorderConfigValue(b, i, v))
        assert lib.acldvppGetBorderConfigValue(b, i) == v
    dvpp.refused(lib.acldvppSetBorderConfigValue(b, 4, 1.0), INVALID_PARAM, "index 4 is out of range")
    assert lib.acldvppGetBorderConfigValue(b, 4) == -1.0
    dvpp.refused(lib.acldvppSetBorderConfigValue(b, 0, 256.0), INVALID_PARAM, "value 256 is out of range")
    dvpp.ok(lib.acldvppSetBorderConfigBorderType(b, 3))
    assert lib.acldvppGetBorderConfigBorderType(b) == 3
    dvpp.refused(
        lib.acldvppSetBorderConfigBorderType(b, 4), INVALID_PARAM, "borderType 4 is not an acldvppBorderType"
    )
    for side, v in (("Top", 2), ("Bottom", 4), ("Left", 6), ("Right", 8)):
        dvpp.ok(getattr(lib, f"acldvppSetBorderConfig{side}")(b, v))
        assert getattr(lib, f"acldvppGetBorderConfig{side}")(b) == v
    dvpp.ok(lib.acldvppDestroyBorderConfig(b))


def test_jpege_config_level(dvpp):
    lib = dvpp.lib
    j = lib.acldvppCreateJpegeConfig()
    dvpp.ok(lib.acldvppSetJpegeConfigLevel(j, 100))
    assert lib.acldvppGetJpegeConfigLevel(j) == 100
    dvpp.refused(
        lib.acldvppSetJpegeConfigLevel(j, 101), INVALID_PARAM, "level 101 is out of range: expected 0 .. 100"
    )
    dvpp.ok(lib.acldvppDestroyJpegeConfig(j))


def test_dvpp_malloc_rounds_to_128(dvpp):
    p = ctypes.c_void_p()
    dvpp.ok(dvpp.lib.acldvppMalloc(ctypes.byref(p), 1))
    assert p.value % 128 == 0
    dvpp.sim.write(p.value, b"\x01" * 128)  # the rounded size is usable
    dvpp.ok(dvpp.lib.acldvppFree(p.value))
    dvpp.refused(dvpp.lib.acldvppMalloc(ctypes.byref(p), 0), INVALID_PARAM, "size 0 is invalid")


def test_every_declared_function_is_exported(dvpp):
    import os
    import re

    from helpers import simlib

    header = os.path.join(simlib.REPO, "ascend_engine", "sim", "include", "acl", "ops", "acl_dvpp.h")
    with open(header) as f:
        names = set(re.findall(r"\b(acldvpp\w+)\s*\(", f.read()))
    assert len(names) > 70
    missing = sorted(n for n in names if not hasattr(dvpp.lib, n))
    assert not missing
