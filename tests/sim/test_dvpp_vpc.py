"""VPC: resize, crop, crop-and-paste, batch crop (+paste), borders, colour conversion.

Results are compared with references of the same steps: Pillow's NEAREST
(exact), Pillow's BILINEAR for upscaling and a numpy half-pixel bilinear for
downscaling (both within 1 grey level), plain numpy slicing and padding for
crops, pastes and borders (exact), and the full-range BT.601 matrix for colour
conversion (within 1).  Every rule is refused with 100000 and a message naming it.
"""

import ctypes

import numpy as np
import pytest
from helpers.dvpp import INVALID_PARAM, NV12, NV21, RGB888, align, planes_from_nv12

P = ctypes.c_void_p


def planes(w, h, seed=0):
    """Smooth Y, U, V test planes (U, V at half size)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    y = ((xx * 7 + yy * 3) % 200 + 20 + rng.integers(0, 20, (h, w))).astype(np.uint8)
    u = (np.arange(w // 2)[None, :] * 5 % 255 + np.zeros((h // 2, 1), int)).astype(np.uint8)
    v = (np.arange(h // 2)[:, None] * 9 % 255 + np.zeros((1, w // 2), int)).astype(np.uint8)
    return y, u, v


def bilinear(src, dw, dh):
    """Half-pixel-centre bilinear with edge clamping (the VPC's resampling)."""
    sh, sw = src.shape
    fx = np.clip((np.arange(dw) + 0.5) * sw / dw - 0.5, 0, sw - 1)
    fy = np.clip((np.arange(dh) + 0.5) * sh / dh - 0.5, 0, sh - 1)
    x0, y0 = np.floor(fx).astype(int), np.floor(fy).astype(int)
    x1, y1 = np.minimum(x0 + 1, sw - 1), np.minimum(y0 + 1, sh - 1)
    wx, wy = fx - x0, fy - y0
    s = src.astype(float)
    top = s[y0][:, x0] * (1 - wx) + s[y0][:, x1] * wx
    bottom = s[y1][:, x0] * (1 - wx) + s[y1][:, x1] * wx
    return np.clip(np.rint(top * (1 - wy)[:, None] + bottom * wy[:, None]), 0, 255)


def pillow(src, dw, dh, how):
    from PIL import Image

    return np.asarray(Image.fromarray(src).resize((dw, dh), how)).astype(int)


def result(dvpp, ptr, size, w, h, nv21=False):
    ws, hs = align(w, 16), align(h, 2)
    return planes_from_nv12(dvpp.get(ptr, size), w, h, ws, hs, nv21)


def sync(dvpp, stream):
    dvpp.sim.ok(dvpp.sim.lib.aclrtSynchronizeStream(stream))


def resize(dvpp, channel, stream, src_planes, dw, dh, interpolation=0, nv21=False):
    lib = dvpp.lib
    src, sptr = dvpp.nv12_pic(*src_planes, nv21=nv21)
    out, optr, osize = dvpp.out_pic(dw, dh, NV21 if nv21 else NV12)
    cfg = lib.acldvppCreateResizeConfig()
    dvpp.ok(lib.acldvppSetResizeConfigInterpolation(cfg, interpolation))
    dvpp.ok(lib.acldvppVpcResizeAsync(channel, src, out, cfg, stream))
    sync(dvpp, stream)
    got = result(dvpp, optr, osize, dw, dh, nv21)
    assert lib.acldvppGetPicDescRetCode(out) == 0
    for h in (src, out):
        dvpp.ok(lib.acldvppDestroyPicDesc(h))
    dvpp.ok(lib.acldvppDestroyResizeConfig(cfg))
    for p in (sptr, optr):
        dvpp.ok(lib.acldvppFree(p))
    return got


@pytest.mark.parametrize("dw,dh", [(48, 32), (40, 24), (64, 64)])
def test_resize_down_is_half_pixel_bilinear(dvpp, channel, stream, dw, dh):
    y, u, v = planes(96, 64)
    gy, gu, gv = resize(dvpp, channel, stream, (y, u, v), dw, dh)
    assert np.abs(gy - bilinear(y, dw, dh)).max() <= 1
    assert np.abs(gu - bilinear(u, dw // 2, dh // 2)).max() <= 1
    assert np.abs(gv - bilinear(v, dw // 2, dh // 2)).max() <= 1


@pytest.mark.parametrize("nv21", [False, True])
def test_resize_up_matches_pillow_bilinear(dvpp, channel, stream, nv21):
    from PIL import Image

    y, u, v = planes(64, 48, seed=3)
    gy, gu, gv = resize(dvpp, channel, stream, (y, u, v), 160, 100, nv21=nv21)
    assert np.abs(gy.astype(int) - pillow(y, 160, 100, Image.BILINEAR)).max() <= 1
    assert np.abs(gv.astype(int) - pillow(v, 80, 50, Image.BILINEAR)).max() <= 1


def nearest(src, dw, dh):
    """The source pixel holding each target pixel's centre, exactly: floor((2i + 1) * n / 2m)."""
    sh, sw = src.shape
    xs = (2 * np.arange(dw) + 1) * sw // (2 * dw)
    ys = (2 * np.arange(dh) + 1) * sh // (2 * dh)
    return src[ys][:, xs]


def test_resize_nearest(dvpp, channel, stream):
    from PIL import Image

    y, u, v = planes(96, 64, seed=5)
    gy, gu, _ = resize(dvpp, channel, stream, (y, u, v), 144, 40, interpolation=2)
    assert (gy == nearest(y, 144, 40)).all()
    assert (gu == nearest(u, 72, 20)).all()
    # Pillow's NEAREST is the same rule but in floating point: it differs only where a centre
    # falls exactly on a pixel boundary
    differs = gy.astype(int) != pillow(y, 144, 40, Image.NEAREST)
    assert differs.mean() < 0.2


def roi(dvpp, left, right, top, bottom):
    r = dvpp.lib.acldvppCreateRoiConfig(left, right, top, bottom)
    assert r, dvpp.err()
    return r


def test_crop_without_scaling_copies_exactly(dvpp, channel, stream):
    lib = dvpp.lib
    y, u, v = planes(96, 64, seed=1)
    src, sptr = dvpp.nv12_pic(y, u, v)
    out, optr, osize = dvpp.out_pic(32, 20)
    area = roi(dvpp, 10, 41, 6, 25)
    dvpp.ok(lib.acldvppVpcCropAsync(channel, src, out, area, stream))
    sync(dvpp, stream)
    gy, gu, gv = result(dvpp, optr, osize, 32, 20)
    assert (gy == y[6:26, 10:42]).all()
    assert (gu == u[3:13, 5:21]).all() and (gv == v[3:13, 5:21]).all()


def test_crop_and_paste_leaves_the_rest_of_the_output(dvpp, channel, stream):
    lib = dvpp.lib
    y, u, v = planes(96, 64, seed=2)
    src, _ = dvpp.nv12_pic(y, u, v)
    out, optr, osize = dvpp.out_pic(64, 48, fill=7)
    crop, paste = roi(dvpp, 0, 31, 0, 19), roi(dvpp, 16, 47, 8, 27)
    dvpp.ok(lib.acldvppVpcCropAndPasteAsync(channel, src, out, crop, paste, stream))
    sync(dvpp, stream)
    gy, gu, _ = result(dvpp, optr, osize, 64, 48)
    assert (gy[8:28, 16:48] == y[0:20, 0:32]).all()
    mask = np.ones_like(gy, bool)
    mask[8:28, 16:48] = False
    assert (gy[mask] == 7).all()
    assert (gu[4:14, 8:24] == u[0:10, 0:16]).all() and gu[0, 0] == 7


def test_batch_crop_and_paste(dvpp, channel, stream):
    lib = dvpp.lib
    images = [planes(64, 48, seed=s) for s in (10, 11)]
    srcs, dsts = lib.acldvppCreateBatchPicDesc(2), lib.acldvppCreateBatchPicDesc(3)
    for i, (y, u, v) in enumerate(images):
        d = lib.acldvppGetPicDesc(srcs, i)
        ws, hs = 64, 48
        from helpers.dvpp import nv12_from_planes

        ptr, size = dvpp.put(nv12_from_planes(y, u, v, ws, hs).tobytes())
        dvpp.pic(ptr, size, NV12, 64, 48, ws, hs, desc=d)
    outs = []
    for k in range(3):
        ptr = dvpp.malloc(32 * 24 * 3 // 2)
        dvpp.sim.write(ptr, b"\x05" * (32 * 24 * 3 // 2))
        dvpp.pic(ptr, 32 * 24 * 3 // 2, NV12, 32, 24, 32, 24, desc=lib.acldvppGetPicDesc(dsts, k))
        outs.append(ptr)
    crops = [roi(dvpp, 0, 15, 0, 11), roi(dvpp, 20, 35, 10, 21), roi(dvpp, 40, 55, 30, 41)]
    pastes = [roi(dvpp, 0, 15, 0, 11), roi(dvpp, 16, 31, 12, 23), roi(dvpp, 0, 15, 12, 23)]
    nums = (ctypes.c_uint32 * 2)(2, 1)
    rc = lib.acldvppVpcBatchCropAndPasteAsync(
        channel, srcs, nums, 2, dsts, (P * 3)(*crops), (P * 3)(*pastes), stream
    )
    dvpp.ok(rc)
    sync(dvpp, stream)
    want = [
        (0, (0, 12, 0, 16), (0, 12, 0, 16)),
        (0, (10, 22, 20, 36), (12, 24, 16, 32)),
        (1, (30, 42, 40, 56), (12, 24, 0, 16)),
    ]
    for k, (i, (top, bottom, left, right), (pt, pb, pl, pr)) in enumerate(want):
        gy, _, _ = planes_from_nv12(dvpp.get(outs[k], 32 * 24 * 3 // 2), 32, 24, 32, 24)
        assert (gy[pt:pb, pl:pr] == images[i][0][top:bottom, left:right]).all(), k
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(srcs))
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(dsts))


@pytest.mark.parametrize("kind,mode", [(0, "constant"), (1, "edge"), (2, "symmetric"), (3, "reflect")])
def test_make_border_matches_numpy_pad(dvpp, channel, stream, kind, mode):
    lib = dvpp.lib
    y, u, v = planes(64, 32, seed=4)
    src, _ = dvpp.nv12_pic(y, u, v)
    out, optr, osize = dvpp.out_pic(64 + 4 + 8, 32 + 2 + 6)
    b = lib.acldvppCreateBorderConfig()
    dvpp.ok(lib.acldvppSetBorderConfigBorderType(b, kind))
    for side, n in (("Top", 2), ("Bottom", 6), ("Left", 4), ("Right", 8)):
        dvpp.ok(getattr(lib, f"acldvppSetBorderConfig{side}")(b, n))
    for i, val in enumerate((16, 128, 128)):
        dvpp.ok(lib.acldvppSetBorderConfigValue(b, i, val))
    dvpp.ok(lib.acldvppVpcMakeBorderAsync(channel, src, out, b, stream))
    sync(dvpp, stream)
    gy, _, _ = result(dvpp, optr, osize, 76, 40)
    pad = ((2, 6), (4, 8))
    want = np.pad(y, pad, mode, constant_values=16) if mode == "constant" else np.pad(y, pad, mode)
    assert (gy == want).all()
    dvpp.ok(lib.acldvppDestroyBorderConfig(b))


def test_make_border_refuses_a_wrong_output_size(dvpp, channel, stream):
    lib = dvpp.lib
    src, _ = dvpp.nv12_pic(*planes(64, 32))
    out, _, _ = dvpp.out_pic(64, 32)
    b = lib.acldvppCreateBorderConfig()
    dvpp.ok(lib.acldvppSetBorderConfigTop(b, 2))
    rc = lib.acldvppVpcMakeBorderAsync(channel, src, out, b, stream)
    dvpp.refused(rc, INVALID_PARAM, "outputDesc is 64 x 32 but the 64 x 32 input with borders", "is 64 x 34")


def test_convert_nv12_to_rgb(dvpp, channel, stream):
    lib = dvpp.lib
    y, u, v = planes(64, 32, seed=6)
    src, _ = dvpp.nv12_pic(y, u, v)
    size = align(64 * 3, 16) * 32
    optr = dvpp.malloc(size)
    out = dvpp.pic(optr, size, RGB888)  # width, height and strides 0: they follow the input
    dvpp.ok(lib.acldvppVpcConvertColorAsync(channel, src, out, stream))
    sync(dvpp, stream)
    assert (lib.acldvppGetPicDescWidth(out), lib.acldvppGetPicDescWidthStride(out)) == (64, 192)
    rgb = dvpp.get(optr, size).reshape(32, 192)[:, :192].reshape(32, 64, 3).astype(float)
    # chroma comes to full resolution the way every VPC resampling does: half-pixel bilinear
    uu = bilinear(u, 64, 32) - 128
    vv = bilinear(v, 64, 32) - 128
    yy = y.astype(float)
    want = np.stack([yy + 1.402 * vv, yy - 0.344136 * uu - 0.714136 * vv, yy + 1.772 * uu], -1)
    assert np.abs(rgb - np.clip(np.rint(want), 0, 255)).max() <= 1


def test_rgb_output_refused_on_ascend310():
    from simrt_util import run_child

    run_child(
        """
        from helpers import dvpp as D
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0, err()
        d = D.load()
        s = ctypes.c_void_p(); assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        c = d.acldvppCreateChannelDesc(); assert d.acldvppCreateChannel(c) == 0, err()
        def buf(n):
            p = ctypes.c_void_p(); assert d.acldvppMalloc(ctypes.byref(p), n) == 0; return p.value
        def pic(fmt, ws, n):
            x = d.acldvppCreatePicDesc(); ptr = buf(n)
            for f, val in (("Size", n), ("Format", fmt), ("Width", 64), ("Height", 32), ("WidthStride", ws),
                           ("HeightStride", 32)):
                getattr(d, "acldvppSetPicDesc" + f)(x, val)
            d.acldvppSetPicDescData(x, ptr)
            return x
        src, out = pic(D.NV12, 64, 64 * 48), pic(D.RGB888, 192, 192 * 32)
        cfg = d.acldvppCreateResizeConfig()
        rc = d.acldvppVpcResizeAsync(c, src, out, cfg, s)
        assert rc == 100000, rc
        assert "not one the VPC writes on Ascend 310" in err(), err()
    """,
        env={"ASCEND_SIM_SOC_VERSION": "Ascend310"},
    )


# ---- refusals -----------------------------------------------------------------------------------


@pytest.fixture
def pics(dvpp):
    """An NV12 96 x 64 input and a 48 x 32 output."""
    src, _ = dvpp.nv12_pic(*planes(96, 64))
    out, _, _ = dvpp.out_pic(48, 32)
    yield src, out
    for d in (src, out):
        dvpp.lib.acldvppDestroyPicDesc(d)


@pytest.mark.parametrize(
    "area,fragment",
    [
        ((1, 40, 0, 19), "parity rule: left and top must be even, right and bottom odd"),
        ((0, 40, 0, 19), "parity rule"),
        ((0, 39, 3, 19), "parity rule"),
        ((0, 97, 0, 19), "is not inside the 96 x 64 picture"),
        ((0, 7, 0, 19), "is 8 x 20: the VPC's smallest region is 10 x 6"),
        ((0, 39, 0, 3), "is 40 x 4: the VPC's smallest region is 10 x 6"),
    ],
)
def test_crop_region_rules(dvpp, channel, stream, pics, area, fragment):
    src, out = pics
    r = roi(dvpp, *area)
    dvpp.refused(
        dvpp.lib.acldvppVpcCropAsync(channel, src, out, r, stream), INVALID_PARAM, "cropArea", fragment
    )
    dvpp.ok(dvpp.lib.acldvppDestroyRoiConfig(r))


def test_scale_limits(dvpp, channel, stream, pics):
    src, out = pics
    r = roi(dvpp, 0, 9, 0, 5)  # 10 x 6 up to 48 x 32: fine (4.8x, 5.3x)
    dvpp.ok(dvpp.lib.acldvppVpcCropAsync(channel, src, out, r, stream))
    sync(dvpp, stream)
    big, _, _ = dvpp.out_pic(176, 32)  # 10 wide to 176: 17.6 times
    rc = dvpp.lib.acldvppVpcCropAsync(channel, src, big, r, stream)
    dvpp.refused(
        rc, INVALID_PARAM, "scaling 10 x 6 to 176 x 32 is out of the VPC's range", "1/32 to 16 times"
    )


@pytest.mark.parametrize(
    "field,value,fragment",
    [
        ("Width", 8, "outputDesc width 8 is out of the VPC's range 10 .. 4096"),
        ("Width", 4097, "outputDesc width 4097 is out of the VPC's range 10 .. 4096"),
        ("Width", 47, "outputDesc width 47 is odd: YUV420SP (NV12) needs an even width"),
        ("Height", 4, "outputDesc height 4 is out of the VPC's range 6 .. 4096"),
        ("WidthStride", 56, "outputDesc widthStride 56 is invalid: expected a multiple of 16"),
        ("WidthStride", 32, "outputDesc widthStride 32 is invalid"),
        ("HeightStride", 33, "outputDesc heightStride 33 is invalid: expected a multiple of 2"),
        ("Size", 100, "outputDesc size 100 is too small"),
        ("Format", 1000, "outputDesc format 1000"),
    ],
)
def test_output_picture_rules(dvpp, channel, stream, pics, field, value, fragment):
    src, out = pics
    dvpp.ok(getattr(dvpp.lib, f"acldvppSetPicDesc{field}")(out, value))
    cfg = dvpp.lib.acldvppCreateResizeConfig()
    rc = dvpp.lib.acldvppVpcResizeAsync(channel, src, out, cfg, stream)
    dvpp.refused(rc, INVALID_PARAM, "acldvppVpcResizeAsync", fragment)
    dvpp.ok(dvpp.lib.acldvppDestroyResizeConfig(cfg))


def test_resize_needs_a_resize_config(dvpp, channel, stream, pics):
    src, out = pics
    rc = dvpp.lib.acldvppVpcResizeAsync(channel, src, out, None, stream)
    dvpp.refused(rc, INVALID_PARAM, "resizeConfig is NULL")


def test_picture_pointing_at_freed_memory(dvpp, channel, stream, pics):
    src, out = pics
    ptr = dvpp.lib.acldvppGetPicDescData(src)
    dvpp.ok(dvpp.lib.acldvppFree(ptr))
    cfg = dvpp.lib.acldvppCreateResizeConfig()
    rc = dvpp.lib.acldvppVpcResizeAsync(channel, src, out, cfg, stream)
    dvpp.refused(rc, INVALID_PARAM, "inputDesc data")
    dvpp.ok(dvpp.lib.acldvppDestroyResizeConfig(cfg))


def test_batch_takes_at_most_256_regions(dvpp, channel, stream):
    lib = dvpp.lib
    srcs, dsts = lib.acldvppCreateBatchPicDesc(1), lib.acldvppCreateBatchPicDesc(257)
    nums = (ctypes.c_uint32 * 1)(257)
    crops = (P * 257)()
    rc = lib.acldvppVpcBatchCropAsync(channel, srcs, nums, 1, dsts, crops, stream)
    dvpp.refused(rc, INVALID_PARAM, "1 pictures with 257 regions in all: the VPC takes 1 .. 256 regions")
    rc = lib.acldvppVpcBatchCropAsync(channel, srcs, nums, 2, dsts, crops, stream)  # roiNums[1] is never read
    dvpp.refused(rc, INVALID_PARAM, "size 2 is invalid: expected 1 .. the 1 pictures of srcBatchPicDescs")
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(srcs))
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(dsts))


def test_tasks_on_two_streams_follow_events(dvpp, channel, stream):
    """Crop on stream B after stream A fills the source: the event orders them."""
    lib, acl = dvpp.lib, dvpp.sim.lib
    y, u, v = planes(64, 32, seed=8)
    from helpers.dvpp import nv12_from_planes

    data = nv12_from_planes(y, u, v, 64, 32).tobytes()
    host = ctypes.create_string_buffer(data, len(data))
    src_ptr = dvpp.malloc(len(data))
    src = dvpp.pic(src_ptr, len(data), NV12, 64, 32, 64, 32)
    out, optr, osize = dvpp.out_pic(32, 16)
    other = dvpp.sim.stream()
    ev = dvpp.sim.event()
    dvpp.sim.faults("stall:memcpy@1=200")
    dvpp.sim.ok(acl.aclrtMemcpyAsync(src_ptr, len(data), host, len(data), 1, stream))
    dvpp.sim.ok(acl.aclrtRecordEvent(ev, stream))
    dvpp.sim.ok(acl.aclrtStreamWaitEvent(other, ev))
    r = roi(dvpp, 0, 31, 0, 15)
    dvpp.ok(lib.acldvppVpcCropAsync(channel, src, out, r, other))
    dvpp.sim.ok(acl.aclrtSynchronizeStream(other))
    dvpp.sim.faults(None)
    gy, _, _ = result(dvpp, optr, osize, 32, 16)
    assert (gy == y[0:16, 0:32]).all()
    dvpp.sim.ok(acl.aclrtSynchronizeStream(stream))
    dvpp.sim.ok(acl.aclrtDestroyEvent(ev))
    dvpp.sim.ok(acl.aclrtDestroyStream(other))


# ---- formats ----------------------------------------------------------------------------------


def rgb_to_yuv(rgb):
    """Full-range BT.601 (JFIF), the VPC's matrix."""
    r, g, b = (rgb[..., i].astype(float) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    u = -0.168736 * r - 0.331264 * g + 0.5 * b + 128
    v = 0.5 * r - 0.418688 * g - 0.081312 * b + 128
    return [np.clip(np.rint(c), 0, 255) for c in (y, u, v)]


def packed_pic(dvpp, data, fmt, w, h, bpp):
    ws = align(w * bpp, 16)
    buf = np.zeros((h, ws), np.uint8)
    buf[:, : w * bpp] = data.reshape(h, w * bpp)
    ptr, size = dvpp.put(buf.tobytes())
    return dvpp.pic(ptr, size, fmt, w, h, ws, h)


@pytest.mark.parametrize("fmt,order", [(RGB888, (0, 1, 2)), (13, (2, 1, 0))])
def test_rgb_input_to_nv12(dvpp, channel, stream, fmt, order):
    rng = np.random.default_rng(12)
    rgb = rng.integers(0, 256, (32, 64, 3), dtype=np.uint8)
    src = packed_pic(dvpp, rgb[..., list(order)], fmt, 64, 32, 3)
    out, optr, osize = dvpp.out_pic(64, 32)
    cfg = dvpp.lib.acldvppCreateResizeConfig()
    dvpp.ok(dvpp.lib.acldvppVpcResizeAsync(channel, src, out, cfg, stream))
    sync(dvpp, stream)
    gy, gu, gv = result(dvpp, optr, osize, 64, 32)
    y, u, v = rgb_to_yuv(rgb)
    assert np.abs(gy - y).max() <= 1
    # chroma: each 2 x 2 block's average (half-pixel bilinear at exactly half size)
    assert np.abs(gu - u.reshape(16, 2, 32, 2).mean(axis=(1, 3))).max() <= 1
    assert np.abs(gv - v.reshape(16, 2, 32, 2).mean(axis=(1, 3))).max() <= 1


@pytest.mark.parametrize(
    "fmt,pos", [(7, (0, 1, 2, 3)), (8, (1, 0, 3, 2)), (9, (0, 3, 2, 1)), (10, (1, 2, 3, 0))]
)
def test_packed_yuv422_input_to_nv12(dvpp, channel, stream, fmt, pos):
    """YUYV, UYVY, YVYU, VYUY: positions of Y0, U, Y1, V in each pixel pair."""
    y, u, v = planes(64, 32, seed=13)
    u422 = np.repeat(u, 2, axis=0)  # 4:2:2 chroma: full height
    v422 = np.repeat(v, 2, axis=0)
    pairs = np.zeros((32, 32, 4), np.uint8)
    pairs[..., pos[0]], pairs[..., pos[2]] = y[:, 0::2], y[:, 1::2]
    pairs[..., pos[1]], pairs[..., pos[3]] = u422, v422
    src = packed_pic(dvpp, pairs, fmt, 64, 32, 2)
    out, optr, osize = dvpp.out_pic(64, 32)
    r = roi(dvpp, 0, 63, 0, 31)
    dvpp.ok(dvpp.lib.acldvppVpcCropAsync(channel, src, out, r, stream))
    sync(dvpp, stream)
    gy, gu, gv = result(dvpp, optr, osize, 64, 32)
    assert (gy == y).all()
    assert (gu == u).all() and (gv == v).all()  # each pair of equal rows averages to itself


def test_nv12_to_yuyv_output(dvpp, channel, stream):
    y, u, v = planes(64, 32, seed=14)
    src, _ = dvpp.nv12_pic(y, u, v)
    ws = 128
    optr = dvpp.malloc(ws * 32)
    out = dvpp.pic(optr, ws * 32, 7, 64, 32, ws, 32)
    r = roi(dvpp, 0, 63, 0, 31)
    dvpp.ok(dvpp.lib.acldvppVpcCropAsync(channel, src, out, r, stream))
    sync(dvpp, stream)
    pairs = dvpp.get(optr, ws * 32).reshape(32, 32, 4)
    assert (pairs[..., 0] == y[:, 0::2]).all() and (pairs[..., 2] == y[:, 1::2]).all()
    # 4:2:0 chroma up to 4:2:2 rows: half-pixel bilinear in the vertical direction
    assert np.abs(pairs[..., 1] - bilinear(u, 32, 32)).max() <= 1


def test_channels_per_device_limit(dvpp):
    lib = dvpp.lib
    made = []
    try:
        while len(made) < 300:
            c = lib.acldvppCreateChannelDesc()
            rc = lib.acldvppCreateChannel(c)
            if rc:
                dvpp.refused(rc, 207005, "already has 256 DVPP channels, the most a device has")
                dvpp.ok(lib.acldvppDestroyChannelDesc(c))
                break
            made.append(c)
        assert len(made) <= 256 and len(made) >= 250  # the session's other tests may hold a few
    finally:
        for c in made:
            dvpp.close_channel(c)


def test_crop_resize_paste_with_nearest(dvpp, channel, stream):
    lib = dvpp.lib
    y, u, v = planes(96, 64, seed=15)
    src, _ = dvpp.nv12_pic(y, u, v)
    out, optr, osize = dvpp.out_pic(64, 48, fill=9)
    crop, paste = roi(dvpp, 10, 49, 4, 33), roi(dvpp, 8, 31, 6, 23)  # 40 x 30 -> 24 x 18
    cfg = lib.acldvppCreateResizeConfig()
    dvpp.ok(lib.acldvppSetResizeConfigInterpolation(cfg, 2))
    dvpp.ok(lib.acldvppVpcCropResizePasteAsync(channel, src, out, crop, paste, cfg, stream))
    sync(dvpp, stream)
    gy, _, _ = result(dvpp, optr, osize, 64, 48)
    assert (gy[6:24, 8:32] == nearest(y[4:34, 10:50], 24, 18)).all()
    assert gy[0, 0] == 9 and gy[47, 63] == 9
    rc = lib.acldvppVpcCropResizePasteAsync(channel, src, out, crop, paste, None, stream)
    dvpp.refused(rc, INVALID_PARAM, "resizeConfig is NULL")
    dvpp.ok(lib.acldvppDestroyResizeConfig(cfg))


def test_batch_crop_resize_with_nearest(dvpp, channel, stream):
    from helpers.dvpp import nv12_from_planes

    lib = dvpp.lib
    y, u, v = planes(64, 48, seed=16)
    srcs, dsts = lib.acldvppCreateBatchPicDesc(1), lib.acldvppCreateBatchPicDesc(2)
    ptr, size = dvpp.put(nv12_from_planes(y, u, v, 64, 48).tobytes())
    dvpp.pic(ptr, size, NV12, 64, 48, 64, 48, desc=lib.acldvppGetPicDesc(srcs, 0))
    outs = []
    for k in range(2):
        o = dvpp.malloc(32 * 24 * 3 // 2)
        dvpp.pic(o, 32 * 24 * 3 // 2, NV12, 32, 24, 32, 24, desc=lib.acldvppGetPicDesc(dsts, k))
        outs.append(o)
    crops = [roi(dvpp, 0, 47, 0, 35), roi(dvpp, 16, 63, 12, 47)]  # 48 x 36 each, to 32 x 24
    cfg = lib.acldvppCreateResizeConfig()
    dvpp.ok(lib.acldvppSetResizeConfigInterpolation(cfg, 2))
    nums = (ctypes.c_uint32 * 1)(2)
    dvpp.ok(lib.acldvppVpcBatchCropResizeAsync(channel, srcs, nums, 1, dsts, (P * 2)(*crops), cfg, stream))
    sync(dvpp, stream)
    for k, (top, left) in enumerate(((0, 0), (12, 16))):
        gy, _, _ = planes_from_nv12(dvpp.get(outs[k], 32 * 24 * 3 // 2), 32, 24, 32, 24)
        assert (gy == nearest(y[top : top + 36, left : left + 48], 32, 24)).all(), k
    dvpp.ok(lib.acldvppDestroyResizeConfig(cfg))
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(srcs))
    dvpp.ok(lib.acldvppDestroyBatchPicDesc(dsts))
