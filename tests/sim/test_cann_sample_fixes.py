"""What the official DVPP samples hit, fixed as CANN 9.1 behaves
(docs/simulator.md, "Fidelity to CANN 9.1"): the JPEG decoder honours the
output strides the program set, on every SoC; static AIPP with csc_switch on
and no matrix uses ATC's default matrix and biases; the video decode/encode
API links and answers ACL_ERROR_FEATURE_UNSUPPORTED."""

import ctypes
import textwrap

import numpy as np
import pytest
from helpers import mdl
from helpers.aipp import nv12
from simrt_util import run_child

from ascend_engine import sim
from ascend_engine.sim import aipp as aipp_settings

FEATURE_UNSUPPORTED = 200006

# ---- JPEG decode at the program's strides --------------------------------------------------------

STRIDE_CHILD = """
import io
import numpy as np
from PIL import Image
from helpers import dvpp as D
assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0, err()
d = D.load()
s = ctypes.c_void_p(); assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
c = d.acldvppCreateChannelDesc(); assert d.acldvppCreateChannel(c) == 0, err()
W, H = 799, 301
data = D.jpeg_bytes(D.sample_image(W, H, seed=5), subsampling=2, quality=90)
def dvpp_buf(n):
    p = ctypes.c_void_p(); assert d.acldvppMalloc(ctypes.byref(p), n) == 0, err(); return p.value
src = dvpp_buf(len(data))
host = ctypes.create_string_buffer(data, len(data))
assert lib.aclrtMemcpy(src, len(data), host, len(data), 1) == 0, err()

def decode(ws, hs):
    size = max(ws, 1) * max(hs, 1) * 3 // 2 if ws and hs else 1024 * 320 * 3 // 2
    o = dvpp_buf(size)
    out = d.acldvppCreatePicDesc()
    d.acldvppSetPicDescData(out, o); d.acldvppSetPicDescSize(out, size)
    d.acldvppSetPicDescFormat(out, D.NV12)
    d.acldvppSetPicDescWidthStride(out, ws); d.acldvppSetPicDescHeightStride(out, hs)
    rc = d.acldvppJpegDecodeAsync(c, src, len(data), out, s)
    assert lib.aclrtSynchronizeStream(s) == 0, err()
    return rc, out, o, size

# the sample's strides: width to 128, height to 16, whatever the SoC's own minimum
ws, hs = D.align(W, 128), D.align(H, 16)
rc, out, o, size = decode(ws, hs)
assert rc == 0, err()
assert (d.acldvppGetPicDescWidthStride(out), d.acldvppGetPicDescHeightStride(out)) == (ws, hs)
assert (d.acldvppGetPicDescWidth(out), d.acldvppGetPicDescHeight(out)) == (798, 300)
buf = (ctypes.c_uint8 * size)()
assert lib.aclrtMemcpy(buf, size, o, size, 2) == 0, err()
y, u, v = D.planes_from_nv12(np.frombuffer(bytes(buf), np.uint8), 798, 300, ws, hs)
img = Image.open(io.BytesIO(data)); img.draft("YCbCr", img.size)
ref = np.asarray(img.convert("YCbCr") if img.mode != "YCbCr" else img).astype(int)[:300, :798]
assert np.abs(y.astype(int) - ref[..., 0]).max() <= 1
ref_u = ref[..., 1].reshape(150, 2, 399, 2).mean(axis=(1, 3))
ref_v = ref[..., 2].reshape(150, 2, 399, 2).mean(axis=(1, 3))
assert np.abs(u - ref_u).max() <= 1 and np.abs(v - ref_v).max() <= 1

# strides left 0: the decoder's own, written back
rc, out, o, size = decode(0, 0)
assert rc == 0, err()
own = (d.acldvppGetPicDescWidthStride(out), d.acldvppGetPicDescHeightStride(out))
assert own == (D.align(W, WALIGN), 304), own

# refused: off the SoC's alignment, or smaller than the picture
rc, out, o, size = decode(D.align(W, WALIGN) + WALIGN // 2, hs)
assert rc == 100000 and f"writes rows of a multiple of {WALIGN} bytes" in err(), (rc, err())
rc, out, o, size = decode(D.align(W, WALIGN) - WALIGN, hs)
assert rc == 100000 and f"at least {D.align(W, WALIGN)} for this 798-pixel-wide picture" in err(), err()
rc, out, o, size = decode(ws, 296)
assert rc == 100000 and "heightStride 296: JPEGD writes a multiple of 16 rows, at least 304" in err(), err()
print("stride checks OK")
"""


@pytest.mark.parametrize("soc,walign", [("Ascend310", 128), ("Ascend310P3", 64), ("Ascend910B", 64)])
def test_jpeg_decode_honours_the_program_strides(soc, walign):
    """A 799-wide picture decoded at the sample's 128 x 16 strides, to +-1 of Pillow, on every SoC."""
    proc = run_child(
        f"WALIGN = {walign}\n" + textwrap.dedent(STRIDE_CHILD),
        env={"ASCEND_SIM_SOC_VERSION": soc},
        timeout=120,
    )
    assert "stride checks OK" in proc.stdout


# ---- static AIPP: ATC's default colour conversion ----------------------------------------------------


def _default_csc_reference(image, w, h, yuv):
    """numpy: the CSC ATC's defaults give, per pixel (YUV420SP: BT.601 narrow range to B, G, R)."""
    if yuv:
        y = image[: w * h].reshape(h, w).astype(np.int64)
        uv = image[w * h :].reshape(h // 2, w // 2, 2).repeat(2, axis=0).repeat(2, axis=1).astype(np.int64)
        px = np.stack([y - 16, uv[..., 0] - 128, uv[..., 1] - 128], axis=-1)
        m = np.array([[298, 516, 0], [298, -100, -208], [298, 0, 409]])
        return np.clip((px @ m.T) >> 8, 0, 255)
    px = image.reshape(h, w, 3).astype(np.int64)
    m = np.array([[66, 129, 25], [-38, -74, 112], [112, -94, -18]])
    return np.clip(((px @ m.T) >> 8) + np.array([16, 128, 128]), 0, 255)


@pytest.mark.parametrize("fmt", ["YUV420SP_U8", "RGB888_U8"])
def test_static_aipp_csc_without_matrix_uses_atc_defaults(lib, fmt):
    w, h = 16, 10
    g = sim.Graph("aipp_default")
    g.output("y", g.input("image", "float32", (1, 3, h, w), "NCHW"))
    cfg = {"aipp_mode": "static", "input_format": fmt, "csc_switch": True}
    m = mdl.load_bytes(lib, g.to_bytes(aipp={"image": cfg}))
    rng = np.random.default_rng(9)
    image = nv12(rng, w, h) if fmt == "YUV420SP_U8" else rng.integers(0, 256, w * h * 3, dtype=np.uint8)
    bufs = mdl.Buffers(m)
    try:
        mdl.check(
            lib, lib.aclrtMemcpy(bufs.in_ptrs[0], image.nbytes, image.ctypes.data, image.nbytes, 1), "h2d"
        )
        bufs.execute()
        got = bufs.fetch(1)["y"][0].transpose(1, 2, 0)
    finally:
        bufs.close()
        m.close()
    want = _default_csc_reference(image, w, h, fmt == "YUV420SP_U8")
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert got.std() > 10  # a picture, not one constant input


def test_static_aipp_csc_defaults_are_filled_field_by_field():
    given = {
        "aipp_mode": "static",
        "input_format": "YUV420SP_U8",
        "csc_switch": True,
        "matrix_r0c0": 256,
        "input_bias_0": 0,
    }
    s = aipp_settings.resolve(given, "image", (1, 3, 4, 4), "NCHW", "float32")
    assert [s[f"matrix_r{r}c{c}"] for r in range(3) for c in range(3)] == [
        256,
        516,
        0,
        298,
        -100,
        -208,
        298,
        0,
        409,
    ]
    assert [s[f"input_bias_{i}"] for i in range(3)] == [0, 128, 128]
    assert [s[f"output_bias_{i}"] for i in range(3)] == [16, 128, 128]
    off = aipp_settings.resolve({**given, "csc_switch": False}, "image", (1, 3, 4, 4), "NCHW", "float32")
    assert off["matrix_r0c1"] == 0 and off["input_bias_1"] == 0  # nothing is filled with the switch off


# ---- the video API: linked, answered as unsupported ------------------------------------------------------


@pytest.mark.parametrize(
    "name,args,failed",
    [
        ("acldvppCreateStreamDesc", [], None),
        ("aclvdecCreateChannelDesc", [], None),
        ("aclvencCreateChannelDesc", [], None),
        ("aclvdecCreateChannel", [None], FEATURE_UNSUPPORTED),
        ("aclvdecSendFrame", [None, None, None, None, None], FEATURE_UNSUPPORTED),
        ("aclvencSendFrame", [None, None, None, None, None], FEATURE_UNSUPPORTED),
        ("acldvppSetStreamDescSize", [None, 16], FEATURE_UNSUPPORTED),
        ("aclvdecGetChannelDescOutPicWidth", [None], 0),
    ],
)
def test_video_api_answers_feature_unsupported(dvpp, name, args, failed):
    fn = getattr(dvpp.lib, name)
    fn.restype = ctypes.c_void_p if failed is None else ctypes.c_int
    got = fn(*args)
    assert got == failed
    assert dvpp.err() == (
        f"{name}: {name} exists in CANN but is not simulated: the simulator has no video decoder or encoder "
        "(VDEC / VENC); ACL_ERROR_FEATURE_UNSUPPORTED (200006). Decode video on the host (e.g. with FFmpeg) "
        "or run this part on an Ascend device"
    )
