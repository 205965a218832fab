"""PNGD: header information, decode sizes and acldvppPngDecodeAsync, against Pillow.

PNG is lossless: decoded pixels must equal Pillow's exactly.
"""

import ctypes
import io

import numpy as np
import pytest
from helpers.dvpp import INVALID_PARAM, RGB888, RGBA8888, TASK_FAILED, UNKNOWN, align

U32 = ctypes.c_uint32


def png_bytes(arr, mode):
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr, mode).save(buf, format="PNG")
    return buf.getvalue()


def image(w, h, channels, seed=0):
    rng = np.random.default_rng(seed)
    shape = (h, w) if channels == 1 else (h, w, channels)
    return rng.integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize(
    "mode,channels,components", [("RGB", 3, 3), ("RGBA", 4, 4), ("L", 1, 1), ("LA", 2, 2)]
)
def test_png_image_info(dvpp, mode, channels, components):
    data = png_bytes(image(50, 40, channels), mode)
    w, h, c = U32(), U32(), ctypes.c_int32()
    buf = ctypes.create_string_buffer(data, len(data))
    dvpp.ok(
        dvpp.lib.acldvppPngGetImageInfo(buf, len(data), ctypes.byref(w), ctypes.byref(h), ctypes.byref(c))
    )
    assert (w.value, h.value, c.value) == (50, 40, components)


def decode(dvpp, channel, stream, data, fmt):
    src, n = dvpp.put(data)
    need = U32()
    buf = ctypes.create_string_buffer(data, len(data))
    dvpp.ok(dvpp.lib.acldvppPngPredictDecSize(buf, len(data), fmt, ctypes.byref(need)))
    out = dvpp.malloc(need.value)
    desc = dvpp.pic(out, need.value, fmt)
    dvpp.ok(dvpp.lib.acldvppPngDecodeAsync(channel, src, n, desc, stream))
    sync = dvpp.sim.lib.aclrtSynchronizeStream(stream)
    return sync, desc, out, need.value, src


@pytest.mark.parametrize(
    "mode,channels,fmt,want_fmt,bpp",
    [
        ("RGB", 3, RGB888, RGB888, 3),
        ("RGBA", 4, UNKNOWN, RGBA8888, 4),
        ("RGBA", 4, RGB888, RGB888, 3),
        ("L", 1, UNKNOWN, RGB888, 3),
        ("LA", 2, RGBA8888, RGBA8888, 4),
    ],
)
def test_png_decode_matches_pillow(dvpp, channel, stream, mode, channels, fmt, want_fmt, bpp):
    from PIL import Image

    arr = image(70, 45, channels, seed=channels)
    data = png_bytes(arr, mode)
    sync, desc, out, size, src = decode(dvpp, channel, stream, data, fmt)
    dvpp.ok(sync)
    lib = dvpp.lib
    ws, hs = align(70, 128) * bpp, align(45, 16)
    assert size == ws * hs
    assert lib.acldvppGetPicDescFormat(desc) == want_fmt
    assert (lib.acldvppGetPicDescWidth(desc), lib.acldvppGetPicDescHeight(desc)) == (70, 45)
    assert (lib.acldvppGetPicDescWidthStride(desc), lib.acldvppGetPicDescHeightStride(desc)) == (ws, hs)
    got = dvpp.get(out, size).reshape(hs, ws)[:45, : 70 * bpp].reshape(45, 70, bpp)
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGBA" if bpp == 4 else "RGB"))
    assert (got == want).all()  # RGB888 from an RGBA source: the alpha dropped, as Pillow's convert does
    for p in (out, src):
        dvpp.ok(lib.acldvppFree(p))
    dvpp.ok(lib.acldvppDestroyPicDesc(desc))


def test_png_refusals(dvpp, channel, stream):
    lib = dvpp.lib
    data = png_bytes(image(64, 64, 3), "RGB")
    buf = ctypes.create_string_buffer(data, len(data))
    n = U32()
    rc = lib.acldvppPngPredictDecSize(buf, len(data), RGBA8888, ctypes.byref(n))
    dvpp.refused(rc, INVALID_PARAM, "output format 16", "RGBA8888 only for sources with alpha")
    small = png_bytes(image(31, 64, 3), "RGB")
    buf = ctypes.create_string_buffer(small, len(small))
    rc = lib.acldvppPngPredictDecSize(buf, len(small), RGB888, ctypes.byref(n))
    dvpp.refused(rc, INVALID_PARAM, "the PNG is 31 x 64: PNGD decodes 32 x 32 up to 4096 x 4096")
    from PIL import Image

    pal = io.BytesIO()
    Image.fromarray(image(64, 64, 3)).convert("P").save(pal, format="PNG")
    pal = pal.getvalue()
    buf = ctypes.create_string_buffer(pal, len(pal))
    rc = lib.acldvppPngPredictDecSize(buf, len(pal), RGB888, ctypes.byref(n))
    dvpp.refused(rc, INVALID_PARAM, "palette-coded")
    rc = lib.acldvppPngGetImageInfo(buf, 10, ctypes.byref(n), ctypes.byref(n), None)
    dvpp.refused(rc, INVALID_PARAM, "is not a readable PNG header")


def test_truncated_png_fails_the_task(dvpp, channel, stream):
    data = png_bytes(image(128, 128, 3, seed=9), "RGB")
    cut = data[: len(data) * 2 // 3]
    src, n = dvpp.put(cut)
    size = align(128, 128) * 3 * 128
    out = dvpp.malloc(size)
    desc = dvpp.pic(out, size, RGB888)
    dvpp.ok(dvpp.lib.acldvppPngDecodeAsync(channel, src, n, desc, stream))
    assert dvpp.sim.lib.aclrtSynchronizeStream(stream) == TASK_FAILED
    assert "the PNG data" in dvpp.err() and "corrupt or truncated" in dvpp.err()
    assert dvpp.lib.acldvppGetPicDescRetCode(desc) != 0


def test_pngd_not_on_ascend310():
    from simrt_util import run_child

    run_child(
        """
        from helpers import dvpp as D
        assert lib.aclInit(None) == 0, err()
        d = D.load()
        import io
        from PIL import Image
        b = io.BytesIO(); Image.new("RGB", (64, 64)).save(b, format="PNG"); data = b.getvalue()
        buf = ctypes.create_string_buffer(data, len(data))
        n = ctypes.c_uint32()
        rc = d.acldvppPngPredictDecSize(buf, len(data), D.RGB888, ctypes.byref(n))
        assert rc == 200006, rc
        assert "PNGD is not available on Ascend310" in err(), err()
    """,
        env={"ASCEND_SIM_SOC_VERSION": "Ascend310"},
    )
