"""JPEGD: header information, decode sizes and acldvppJpegDecodeAsync against Pillow's libjpeg.

Decoded Y must equal Pillow's YCbCr decode (draft mode: libjpeg's own YCbCr,
no colour conversion) within 1 grey level; chroma equals Pillow's chroma
averaged over each 2 x 2 block within 1.  Every refusal carries 100000 and a
message naming the rule; corrupt data fails the task on the stream.
"""

import ctypes
import io
import textwrap

import numpy as np
import pytest
from helpers.dvpp import (
    INVALID_PARAM,
    JPEG_CSS,
    NV12,
    NV21,
    TASK_FAILED,
    UNKNOWN,
    YVU444SP,
    align,
    jpeg_bytes,
    planes_from_nv12,
    sample_image,
)

U32 = ctypes.c_uint32


def pillow_ycc(data):
    """Pillow's decode of the JPEG straight to YCbCr (no RGB round trip): uint8 H x W x 3."""
    from PIL import Image

    img = Image.open(io.BytesIO(data))
    img.draft("YCbCr", img.size)
    return np.asarray(img.convert("YCbCr") if img.mode != "YCbCr" else img)


def info(dvpp, data, v2=True):
    w, h, c, f = U32(), U32(), ctypes.c_int32(), ctypes.c_int()
    buf = ctypes.create_string_buffer(data, len(data))
    if v2:
        rc = dvpp.lib.acldvppJpegGetImageInfoV2(
            buf, len(data), ctypes.byref(w), ctypes.byref(h), ctypes.byref(c), ctypes.byref(f)
        )
    else:
        rc = dvpp.lib.acldvppJpegGetImageInfo(
            buf, len(data), ctypes.byref(w), ctypes.byref(h), ctypes.byref(c)
        )
    return rc, (w.value, h.value, c.value, f.value)


@pytest.mark.parametrize("subsampling,css", [(0, "444"), (1, "422"), (2, "420")])
def test_image_info_reports_size_components_and_subsampling(dvpp, subsampling, css):
    data = jpeg_bytes(sample_image(97, 61), subsampling=subsampling)
    rc, got = info(dvpp, data)
    dvpp.ok(rc)
    assert got == (97, 61, 3, JPEG_CSS[css])
    rc, got = info(dvpp, data, v2=False)
    dvpp.ok(rc)
    assert got[:3] == (97, 61, 3)


def test_image_info_grey(dvpp):
    rc, got = info(dvpp, jpeg_bytes(sample_image(40, 40, mode="L")))
    dvpp.ok(rc)
    assert got == (40, 40, 1, JPEG_CSS["gray"])


def test_image_info_refuses_what_is_not_jpeg(dvpp):
    rc, _ = info(dvpp, b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    dvpp.refused(rc, INVALID_PARAM, "acldvppJpegGetImageInfoV2", "is not a readable JPEG header")
    w = U32()
    rc = dvpp.lib.acldvppJpegGetImageInfo(None, 10, ctypes.byref(w), ctypes.byref(w), None)
    dvpp.refused(rc, INVALID_PARAM, "data is NULL")


@pytest.mark.parametrize("soc,walign", [("Ascend310", 128), ("Ascend310P3", 64), ("Ascend910B", 64)])
def test_predict_dec_size_per_soc(soc, walign):
    from simrt_util import run_child

    run_child(
        f"""
        from helpers import dvpp as D
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0, err()
        assert lib.aclrtGetSocName() == b"{soc}-sim"
        d = D.load()
        data = D.jpeg_bytes(D.sample_image(130, 50), subsampling=2)
        buf = ctypes.create_string_buffer(data, len(data))
        n = ctypes.c_uint32()
        assert d.acldvppJpegPredictDecSize(buf, len(data), D.NV12, ctypes.byref(n)) == 0, err()
        assert n.value == D.align(130, {walign}) * D.align(50, 16) * 3 // 2, n.value  # 256 or 192 wide
        data = D.jpeg_bytes(D.sample_image(130, 50), subsampling=0)
        buf = ctypes.create_string_buffer(data, len(data))
        assert d.acldvppJpegPredictDecSize(buf, len(data), D.UNKNOWN, ctypes.byref(n)) == 0, err()
        assert n.value == D.align(130, {walign}) * 64 * 3, n.value   # its own 4:4:4, semi-planar
    """,
        env={"ASCEND_SIM_SOC_VERSION": soc},
    )


def test_bad_soc_version_fails_acl_init():
    from simrt_util import run_child

    run_child(
        """
        assert lib.aclInit(None) == 100000
        assert "ASCEND_SIM_SOC_VERSION='Ascend999'" in err() and "Ascend310P3" in err(), err()
    """,
        env={"ASCEND_SIM_SOC_VERSION": "Ascend999"},
    )


def test_predict_refuses_output_format_the_source_cannot_give(dvpp):
    data = jpeg_bytes(sample_image(64, 64), subsampling=2)
    buf = ctypes.create_string_buffer(data, len(data))
    n = U32()
    rc = dvpp.lib.acldvppJpegPredictDecSize(buf, len(data), YVU444SP, ctypes.byref(n))
    dvpp.refused(rc, INVALID_PARAM, "output format 6", "not one JPEGD writes for a 4:2:0 JPEG")


def decode(dvpp, channel, stream, data, fmt=NV12, out_size=None):
    """Decode through DVPP memory; returns (rc of the call, rc of the sync, desc, out pointer, out size)."""
    src, n = dvpp.put(data)
    need = U32()
    buf = ctypes.create_string_buffer(data, len(data))
    dvpp.ok(dvpp.lib.acldvppJpegPredictDecSize(buf, len(data), fmt, ctypes.byref(need)))
    size = out_size if out_size is not None else need.value
    out = dvpp.malloc(size)
    desc = dvpp.pic(out, size, fmt)
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, src, n, desc, stream)
    sync = dvpp.sim.lib.aclrtSynchronizeStream(stream)
    return rc, sync, desc, out, size, src


def release(dvpp, desc, *ptrs):
    dvpp.ok(dvpp.lib.acldvppDestroyPicDesc(desc))
    for p in ptrs:
        dvpp.ok(dvpp.lib.acldvppFree(p))


@pytest.mark.parametrize(
    "w,h,subsampling", [(96, 64, 2), (101, 67, 2), (128, 40, 1), (64, 48, 0), (250, 33, 2)]
)
@pytest.mark.parametrize("fmt", [NV12, NV21])
def test_decode_matches_libjpeg(dvpp, channel, stream, w, h, subsampling, fmt):
    data = jpeg_bytes(sample_image(w, h, seed=w + h), subsampling=subsampling, quality=90)
    rc, sync, desc, out, size, src = decode(dvpp, channel, stream, data, fmt)
    dvpp.ok(rc)
    dvpp.ok(sync)
    lib = dvpp.lib
    ew, eh = w & ~1, h & ~1  # 4:2:0 output: odd sizes round down to even
    ws, hs = align(w, 64), align(h, 16)  # the default SoC is Ascend910B
    assert (lib.acldvppGetPicDescWidth(desc), lib.acldvppGetPicDescHeight(desc)) == (ew, eh)
    assert (lib.acldvppGetPicDescWidthStride(desc), lib.acldvppGetPicDescHeightStride(desc)) == (ws, hs)
    assert lib.acldvppGetPicDescFormat(desc) == fmt
    assert lib.acldvppGetPicDescSize(desc) == ws * hs * 3 // 2
    assert lib.acldvppGetPicDescRetCode(desc) == 0
    y, u, v = planes_from_nv12(dvpp.get(out, size), ew, eh, ws, hs, nv21=fmt == NV21)
    ref = pillow_ycc(data).astype(int)[:eh, :ew]
    assert np.abs(y.astype(int) - ref[..., 0]).max() <= 1
    ref_u = ref[..., 1].reshape(eh // 2, 2, ew // 2, 2).mean(axis=(1, 3))
    ref_v = ref[..., 2].reshape(eh // 2, 2, ew // 2, 2).mean(axis=(1, 3))
    assert np.abs(u - ref_u).max() <= 1
    assert np.abs(v - ref_v).max() <= 1
    release(dvpp, desc, out, src)


def test_decode_grey_fills_chroma_with_0x80(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 32, mode="L"))
    rc, sync, desc, out, size, src = decode(dvpp, channel, stream, data)
    dvpp.ok(rc)
    dvpp.ok(sync)
    y, u, v = planes_from_nv12(dvpp.get(out, size), 64, 32, 64, 32)
    assert (u == 0x80).all() and (v == 0x80).all()
    assert np.abs(y.astype(int) - pillow_ycc(data)[..., 0].astype(int)).max() <= 1
    release(dvpp, desc, out, src)


def test_decode_to_own_subsampling(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 32), subsampling=0)
    rc, sync, desc, out, size, src = decode(dvpp, channel, stream, data, UNKNOWN)
    dvpp.ok(rc)
    dvpp.ok(sync)
    assert dvpp.lib.acldvppGetPicDescFormat(desc) == YVU444SP
    buf = dvpp.get(out, size)
    ref = pillow_ycc(data).astype(int)
    vu = buf[64 * 32 : 64 * 32 * 3].reshape(32, 128)
    assert np.abs(vu[:, 0::2] - ref[..., 2]).max() <= 1  # V first
    assert np.abs(vu[:, 1::2] - ref[..., 1]).max() <= 1
    release(dvpp, desc, out, src)


def test_decode_refuses_progressive(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 64), progressive=True)
    src, n = dvpp.put(data)
    out = dvpp.malloc(64 * 64 * 2)
    desc = dvpp.pic(out, 64 * 64 * 2)
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, src, n, desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "acldvppJpegDecodeAsync", "progressive", "baseline JPEG only")
    release(dvpp, desc, out, src)


def patched(data, marker, edit):
    """The JPEG with its first `marker` segment (e.g. 0xC0, SOF0) changed by edit(bytearray, offset)."""
    b = bytearray(data)
    at = b.index(bytes([0xFF, marker]))
    edit(b, at)
    return bytes(b)


def arithmetic(data):
    """SOF0 (baseline Huffman) relabelled SOF9 (sequential arithmetic): the header says arithmetic-coded."""
    return patched(data, 0xC0, lambda b, at: b.__setitem__(at + 1, 0xC9))


def subsampling_411(data):
    """A 4:2:2 JPEG's luma sampling factors turned from 2x1 into 4x1: the header says 4:1:1."""

    def edit(b, at):
        assert b[at + 11] == 0x21  # component 1 (Y): H=2, V=1
        b[at + 11] = 0x41

    return patched(data, 0xC0, edit)


@pytest.mark.parametrize(
    "make,fragment",
    [
        (
            lambda: jpeg_bytes(sample_image(31, 64)),
            "the JPEG is 31 x 64: JPEGD decodes 32 x 32 up to 8192 x 8192",
        ),
        (
            lambda: arithmetic(jpeg_bytes(sample_image(64, 64))),
            "arithmetic-coded: JPEGD decodes Huffman-coded",
        ),
        (
            lambda: subsampling_411(jpeg_bytes(sample_image(64, 64), subsampling=1)),
            "subsampling is 4:1:1: JPEGD decodes 4:4:4, 4:2:2, 4:2:0, 4:0:0 and 4:4:0 only",
        ),
    ],
    ids=["too-small", "arithmetic", "4:1:1"],
)
def test_decode_refusals(dvpp, channel, stream, make, fragment):
    data = make()
    src, n = dvpp.put(data)
    out = dvpp.malloc(1 << 16)
    desc = dvpp.pic(out, 1 << 16)
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, src, n, desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "acldvppJpegDecodeAsync", fragment)
    buf = ctypes.create_string_buffer(data, len(data))
    need = U32()
    rc = dvpp.lib.acldvppJpegPredictDecSize(buf, len(data), NV12, ctypes.byref(need))
    dvpp.refused(rc, INVALID_PARAM, "acldvppJpegPredictDecSize", fragment)
    release(dvpp, desc, out, src)


def test_image_info_of_411_and_arithmetic_headers(dvpp):
    rc, got = info(dvpp, subsampling_411(jpeg_bytes(sample_image(64, 64), subsampling=1)))
    dvpp.ok(rc)
    assert got == (64, 64, 3, JPEG_CSS["411"])
    rc, got = info(dvpp, arithmetic(jpeg_bytes(sample_image(64, 48))))
    dvpp.ok(rc)  # the header reads fine; only decoding is refused
    assert got[:2] == (64, 48)


def test_injected_task_fault(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 64))
    rc, sync, desc, out, size, src = None, None, None, None, None, None
    dvpp.sim.faults("task:dvpp@1=507018")
    try:
        rc, sync, desc, out, size, src = decode(dvpp, channel, stream, data)
    finally:
        dvpp.sim.faults(None)
    dvpp.ok(rc)
    assert sync == TASK_FAILED and "injected fault" in dvpp.err()
    release(dvpp, desc, out, src)


def test_decode_refuses_small_output_buffer(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 64))
    src, n = dvpp.put(data)
    out = dvpp.malloc(64 * 64)
    desc = dvpp.pic(out, 64 * 64)
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, src, n, desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "outputDesc size 4096 is too small", "takes 6144 bytes")
    dvpp.ok(dvpp.lib.acldvppSetPicDescSize(desc, 8192))  # the description claims more than the buffer holds
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, src, n, desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "outputDesc data")
    release(dvpp, desc, out, src)


def test_decode_refuses_host_input(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 64))
    buf = ctypes.create_string_buffer(data, len(data))
    out = dvpp.malloc(64 * 64 * 2)
    desc = dvpp.pic(out, 64 * 64 * 2)
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, buf, len(data), desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "acldvppJpegDecodeAsync", "data")
    release(dvpp, desc, out)


def test_truncated_jpeg_fails_the_task_cleanly(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(128, 128), quality=95)
    cut = data[: len(data) // 2]
    rc, sync, desc, out, size, src = decode(dvpp, channel, stream, cut, out_size=128 * 128 * 2)
    dvpp.ok(rc)  # the header is whole: the task is queued
    assert sync == TASK_FAILED, dvpp.err()
    assert "corrupt or truncated" in dvpp.err()
    assert dvpp.lib.acldvppGetPicDescRetCode(desc) != 0
    release(dvpp, desc, out, src)


def test_output_freed_while_queued_fails_the_task(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 64))
    src, n = dvpp.put(data)
    out = dvpp.malloc(64 * 64 * 2)
    desc = dvpp.pic(out, 64 * 64 * 2)
    dvpp.sim.faults("stall:dvpp@1=300")  # the task waits on its stream while the program frees
    dvpp.ok(dvpp.lib.acldvppJpegDecodeAsync(channel, src, n, desc, stream))
    dvpp.ok(dvpp.lib.acldvppFree(out))
    dvpp.ok(dvpp.lib.acldvppDestroyPicDesc(desc))  # the task keeps its own reference
    sync = dvpp.sim.lib.aclrtSynchronizeStream(stream)
    dvpp.sim.faults(None)
    assert sync == TASK_FAILED, dvpp.err()
    assert "outputDesc data (allocation" in dvpp.err() and "was freed while the task was queued" in dvpp.err()
    dvpp.ok(dvpp.lib.acldvppFree(src))


def test_decode_input_must_be_128_byte_aligned(dvpp, channel, stream):
    data = jpeg_bytes(sample_image(64, 64))
    src = dvpp.malloc(len(data) + 64)
    dvpp.sim.write(src + 64, data)
    out = dvpp.malloc(64 * 64 * 2)
    desc = dvpp.pic(out, 64 * 64 * 2)
    rc = dvpp.lib.acldvppJpegDecodeAsync(channel, src + 64, len(data), desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "is not 128-byte aligned")
    release(dvpp, desc, out, src)


def test_channel_destroyed_with_work_queued(dvpp, stream):
    lib = dvpp.lib
    c = dvpp.channel()
    data = jpeg_bytes(sample_image(64, 64))
    src, n = dvpp.put(data)
    out = dvpp.malloc(64 * 64 * 2)
    desc = dvpp.pic(out, 64 * 64 * 2)
    dvpp.sim.faults("stall:dvpp@1=300")  # hold the first task so the destroy lands while it is queued
    dvpp.ok(lib.acldvppJpegDecodeAsync(c, src, n, desc, stream))
    dvpp.ok(lib.acldvppJpegDecodeAsync(c, src, n, desc, stream))
    dvpp.close_channel(c)
    sync = dvpp.sim.lib.aclrtSynchronizeStream(stream)
    dvpp.sim.faults(None)
    assert sync == TASK_FAILED, dvpp.err()
    assert "DVPP channel was destroyed (acldvppDestroyChannel) while the task was queued" in dvpp.err()
    release(dvpp, desc, out, src)


def test_decode_on_a_channel_without_jpegd(dvpp, stream):
    c = dvpp.channel(mode=1)  # VPC only
    data = jpeg_bytes(sample_image(64, 64))
    src, n = dvpp.put(data)
    out = dvpp.malloc(64 * 64 * 2)
    desc = dvpp.pic(out, 64 * 64 * 2)
    rc = dvpp.lib.acldvppJpegDecodeAsync(c, src, n, desc, stream)
    dvpp.refused(rc, INVALID_PARAM, "mode 1 does not include DVPP_CHNMODE_JPEGD")
    dvpp.close_channel(c)
    release(dvpp, desc, out, src)


def test_encode_round_trip(dvpp, channel, stream):
    """JPEGE: NV12 encoded, then decoded by Pillow, comes back close; *size becomes the file's length."""
    from helpers.dvpp import nv12_from_planes

    lib = dvpp.lib
    img = np.asarray(pillow_ycc(jpeg_bytes(sample_image(64, 48), quality=95)))
    y = img[..., 0]
    u = img[..., 1].reshape(24, 2, 32, 2).mean(axis=(1, 3)).round().astype(np.uint8)
    v = img[..., 2].reshape(24, 2, 32, 2).mean(axis=(1, 3)).round().astype(np.uint8)
    src, n = dvpp.put(nv12_from_planes(y, u, v, 64, 48).tobytes())
    desc = dvpp.pic(src, n, NV12, 64, 48, 64, 48)
    cfg = lib.acldvppCreateJpegeConfig()
    dvpp.ok(lib.acldvppSetJpegeConfigLevel(cfg, 95))
    need = U32()
    dvpp.ok(lib.acldvppJpegPredictEncSize(desc, cfg, ctypes.byref(need)))
    out = dvpp.malloc(need.value)
    size = U32(need.value)
    dvpp.ok(lib.acldvppJpegEncodeAsync(channel, desc, out, ctypes.byref(size), cfg, stream))
    dvpp.sim.ok(dvpp.sim.lib.aclrtSynchronizeStream(stream))
    assert 0 < size.value < need.value
    data = bytes(dvpp.get(out, size.value))
    rc, got = info(dvpp, data)
    dvpp.ok(rc)
    assert got == (64, 48, 3, JPEG_CSS["420"])
    back = pillow_ycc(data).astype(int)
    assert np.abs(back[..., 0] - y.astype(int)).mean() < 2.0
    # too small a buffer: the task fails and says how much it needed
    small = U32(100)
    dvpp.ok(lib.acldvppJpegEncodeAsync(channel, desc, out, ctypes.byref(small), cfg, stream))
    assert dvpp.sim.lib.aclrtSynchronizeStream(stream) == TASK_FAILED
    assert "but the output buffer holds 100 (*size)" in dvpp.err()
    dvpp.ok(lib.acldvppSetPicDescHeightStride(desc, 50))
    rc = lib.acldvppJpegEncodeAsync(channel, desc, out, ctypes.byref(size), cfg, stream)
    dvpp.refused(rc, INVALID_PARAM, "inputDesc heightStride 50 is invalid: expected a multiple of 16")
    dvpp.ok(lib.acldvppDestroyJpegeConfig(cfg))
    release(dvpp, desc, out, src)


def test_input_rewritten_after_submission_never_overflows(dvpp, channel, stream):
    """The task re-reads the JPEG when it runs: another size then fails it, never writing past the output."""
    small = jpeg_bytes(sample_image(64, 64))
    large = jpeg_bytes(sample_image(256, 256))
    src = dvpp.malloc(max(len(small), len(large)))
    dvpp.sim.write(src, small)
    out = dvpp.malloc(64 * 64 * 3 // 2)
    desc = dvpp.pic(out, 64 * 64 * 3 // 2)
    dvpp.sim.faults("stall:dvpp@1=300")
    try:
        dvpp.ok(dvpp.lib.acldvppJpegDecodeAsync(channel, src, len(small), desc, stream))
        dvpp.sim.write(src, large[: len(small)])  # a 256 x 256 header in the same bytes
        sync = dvpp.sim.lib.aclrtSynchronizeStream(stream)
    finally:
        dvpp.sim.faults(None)
    assert sync == TASK_FAILED, dvpp.err()
    assert "is now 256 x 256 but was 64 x 64 when the task was submitted" in dvpp.err()
    release(dvpp, desc, out, src)


def test_ascend310_takes_only_dvpp_memory():
    """Ascend 310's DVPP reaches only acldvppMalloc memory; 310P and 910B also take aclrtMalloc memory."""
    from simrt_util import run_child

    code = """
        from helpers import dvpp as D
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0, err()
        d = D.load()
        s = ctypes.c_void_p(); assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        c = d.acldvppCreateChannelDesc(); assert d.acldvppCreateChannel(c) == 0, err()
        data = D.jpeg_bytes(D.sample_image(64, 64))
        host = ctypes.create_string_buffer(data, len(data))
        def dvpp_buf(n):
            p = ctypes.c_void_p(); assert d.acldvppMalloc(ctypes.byref(p), n) == 0, err(); return p.value
        def acl_buf(n):
            p = ctypes.c_void_p(); assert lib.aclrtMalloc(ctypes.byref(p), n, 0) == 0, err(); return p.value
        def decode(src):
            assert lib.aclrtMemcpy(src, len(data), host, len(data), 1) == 0, err()
            out = d.acldvppCreatePicDesc()
            o = dvpp_buf(128 * 64 * 2)   # Ascend 310 aligns the decoded width to 128
            d.acldvppSetPicDescData(out, o); d.acldvppSetPicDescSize(out, 128 * 64 * 2)
            d.acldvppSetPicDescFormat(out, D.NV12)
            rc = d.acldvppJpegDecodeAsync(c, src, len(data), out, s)
            assert lib.aclrtSynchronizeStream(s) == 0, err()
            return rc
        assert decode(dvpp_buf(len(data))) == 0, err()
        rc = decode(acl_buf(len(data)))
        if STRICT:
            assert rc == 100000, rc
            assert "is not DVPP memory: on Ascend 310 the DVPP reads and writes only buffers from" in err()
        else:
            assert rc == 0, err()
        p = dvpp_buf(4096)
        assert d.acldvppFree(p) == 0
    """
    run_child("STRICT = True\n" + textwrap.dedent(code), env={"ASCEND_SIM_SOC_VERSION": "Ascend310"})
    run_child("STRICT = False\n" + textwrap.dedent(code), env={"ASCEND_SIM_SOC_VERSION": "Ascend310P3"})
