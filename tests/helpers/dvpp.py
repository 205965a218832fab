"""ctypes access to the simulator's libacl_dvpp.so, for the DVPP tests (tests/sim/test_dvpp_*.py).

The DVPP library leaves its AscendCL calls undefined and takes them from the
AscendCL library already loaded (as a program linking ``-lascendcl -lacl_dvpp``
gets them), so the simulator is loaded first with global symbols.

:class:`Dvpp` wraps the calls the tests make: every ``ok`` call checks its code,
and pictures move between numpy arrays and DVPP memory.
"""

import ctypes
import io
import os

import numpy as np

from helpers import simlib

P = ctypes.c_void_p
U32 = ctypes.c_uint32

# acldvppPixelFormat values (acl/ops/acl_dvpp.h)
YUV400, NV12, NV21 = 0, 1, 2
YUV422SP, YVU422SP, YUV444SP, YVU444SP = 3, 4, 5, 6
YUYV, UYVY, YVYU, VYUY, YUV444_PACKED = 7, 8, 9, 10, 11
RGB888, BGR888, ARGB8888, ABGR8888, RGBA8888, BGRA8888 = 12, 13, 14, 15, 16, 17
UNKNOWN = 10000
JPEG_CSS = {"444": 0, "422": 1, "420": 2, "gray": 3, "440": 4, "411": 5}
INVALID_PARAM = 100000
TASK_FAILED = 507018

# name: (restype, argtypes)
_SIGNATURES = {
    "acldvppMalloc": (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_size_t]),
    "acldvppFree": (ctypes.c_int, [P]),
    "acldvppCreateChannelDesc": (P, []),
    "acldvppDestroyChannelDesc": (ctypes.c_int, [P]),
    "acldvppSetChannelDescMode": (ctypes.c_int, [P, U32]),
    "acldvppGetChannelDescChannelId": (ctypes.c_uint64, [P]),
    "acldvppCreateChannel": (ctypes.c_int, [P]),
    "acldvppDestroyChannel": (ctypes.c_int, [P]),
    "acldvppCreatePicDesc": (P, []),
    "acldvppDestroyPicDesc": (ctypes.c_int, [P]),
    "acldvppSetPicDescData": (ctypes.c_int, [P, P]),
    "acldvppGetPicDescData": (P, [P]),
    "acldvppCreateBatchPicDesc": (P, [U32]),
    "acldvppGetPicDesc": (P, [P, U32]),
    "acldvppDestroyBatchPicDesc": (ctypes.c_int, [P]),
    "acldvppCreateRoiConfig": (P, [U32, U32, U32, U32]),
    "acldvppDestroyRoiConfig": (ctypes.c_int, [P]),
    "acldvppSetRoiConfig": (ctypes.c_int, [P, U32, U32, U32, U32]),
    "acldvppCreateResizeConfig": (P, []),
    "acldvppDestroyResizeConfig": (ctypes.c_int, [P]),
    "acldvppSetResizeConfigInterpolation": (ctypes.c_int, [P, U32]),
    "acldvppGetResizeConfigInterpolation": (U32, [P]),
    "acldvppCreateBorderConfig": (P, []),
    "acldvppDestroyBorderConfig": (ctypes.c_int, [P]),
    "acldvppSetBorderConfigValue": (ctypes.c_int, [P, U32, ctypes.c_double]),
    "acldvppGetBorderConfigValue": (ctypes.c_double, [P, U32]),
    "acldvppSetBorderConfigBorderType": (ctypes.c_int, [P, ctypes.c_int]),
    "acldvppGetBorderConfigBorderType": (ctypes.c_int, [P]),
    "acldvppCreateJpegeConfig": (P, []),
    "acldvppDestroyJpegeConfig": (ctypes.c_int, [P]),
    "acldvppSetJpegeConfigLevel": (ctypes.c_int, [P, U32]),
    "acldvppGetJpegeConfigLevel": (U32, [P]),
    "acldvppJpegGetImageInfo": (
        ctypes.c_int,
        [P, U32, ctypes.POINTER(U32), ctypes.POINTER(U32), ctypes.POINTER(ctypes.c_int32)],
    ),
    "acldvppJpegGetImageInfoV2": (
        ctypes.c_int,
        [
            P,
            U32,
            ctypes.POINTER(U32),
            ctypes.POINTER(U32),
            ctypes.POINTER(ctypes.c_int32),
            ctypes.POINTER(ctypes.c_int),
        ],
    ),
    "acldvppJpegPredictDecSize": (ctypes.c_int, [P, U32, ctypes.c_int, ctypes.POINTER(U32)]),
    "acldvppJpegDecodeAsync": (ctypes.c_int, [P, P, U32, P, P]),
    "acldvppJpegPredictEncSize": (ctypes.c_int, [P, P, ctypes.POINTER(U32)]),
    "acldvppJpegEncodeAsync": (ctypes.c_int, [P, P, P, ctypes.POINTER(U32), P, P]),
    "acldvppPngGetImageInfo": (
        ctypes.c_int,
        [P, U32, ctypes.POINTER(U32), ctypes.POINTER(U32), ctypes.POINTER(ctypes.c_int32)],
    ),
    "acldvppPngPredictDecSize": (ctypes.c_int, [P, U32, ctypes.c_int, ctypes.POINTER(U32)]),
    "acldvppPngDecodeAsync": (ctypes.c_int, [P, P, U32, P, P]),
    "acldvppVpcResizeAsync": (ctypes.c_int, [P, P, P, P, P]),
    "acldvppVpcCropAsync": (ctypes.c_int, [P, P, P, P, P]),
    "acldvppVpcCropResizeAsync": (ctypes.c_int, [P, P, P, P, P, P]),
    "acldvppVpcCropAndPasteAsync": (ctypes.c_int, [P, P, P, P, P, P]),
    "acldvppVpcBatchCropAsync": (ctypes.c_int, [P, P, ctypes.POINTER(U32), U32, P, ctypes.POINTER(P), P]),
    "acldvppVpcBatchCropAndPasteAsync": (
        ctypes.c_int,
        [P, P, ctypes.POINTER(U32), U32, P, ctypes.POINTER(P), ctypes.POINTER(P), P],
    ),
    "acldvppVpcCropResizePasteAsync": (ctypes.c_int, [P, P, P, P, P, P, P]),
    "acldvppVpcBatchCropResizeAsync": (
        ctypes.c_int,
        [P, P, ctypes.POINTER(U32), U32, P, ctypes.POINTER(P), P, P],
    ),
    "acldvppVpcBatchCropResizePasteAsync": (
        ctypes.c_int,
        [P, P, ctypes.POINTER(U32), U32, P, ctypes.POINTER(P), ctypes.POINTER(P), P, P],
    ),
    "acldvppVpcConvertColorAsync": (ctypes.c_int, [P, P, P, P]),
    "acldvppVpcMakeBorderAsync": (ctypes.c_int, [P, P, P, P, P]),
}
for _field in ("Size", "Format", "Width", "Height", "WidthStride", "HeightStride", "RetCode"):
    _SIGNATURES[f"acldvppSetPicDesc{_field}"] = (ctypes.c_int, [P, U32])
    _SIGNATURES[f"acldvppGetPicDesc{_field}"] = (U32, [P])
for _side in ("Top", "Bottom", "Left", "Right"):
    _SIGNATURES[f"acldvppSetBorderConfig{_side}"] = (ctypes.c_int, [P, U32])
    _SIGNATURES[f"acldvppGetBorderConfig{_side}"] = (U32, [P])
    _SIGNATURES[f"acldvppSetRoiConfig{_side}"] = (ctypes.c_int, [P, U32])

_LIB = None


def load():
    """libacl_dvpp.so through ctypes, every function typed, its AscendCL calls bound to the simulator."""
    global _LIB
    if _LIB is None:
        simlib.load()
        ctypes.CDLL(simlib.library_path(), mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(os.path.join(os.path.dirname(simlib.library_path()), "libacl_dvpp.so"))
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name, None)
            if fn is not None:  # tests/sim/test_dvpp_objects.py checks that every declared one is exported
                fn.restype, fn.argtypes = restype, argtypes
        _LIB = lib
    return _LIB


def align(v, a):
    return (v + a - 1) // a * a


def jpeg_bytes(img, **save_args):
    """A Pillow image saved as JPEG (baseline unless save_args say otherwise)."""
    from PIL import Image

    buf = io.BytesIO()
    (img if isinstance(img, Image.Image) else Image.fromarray(img)).save(buf, format="JPEG", **save_args)
    return buf.getvalue()


def sample_image(w, h, seed=0, mode="RGB"):
    """A smooth colour image with some texture (JPEG keeps it close)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(h - 1, 1)).astype(np.uint8)
    b = ((x + y) * 3 % 256).astype(np.uint8)
    rgb = np.stack([r, g, b], axis=-1)
    rgb = np.clip(rgb.astype(int) + rng.integers(-8, 9, rgb.shape), 0, 255).astype(np.uint8)
    img = Image.fromarray(rgb)
    return img.convert(mode) if mode != "RGB" else img


def bilinear(plane, out_w, out_h, x0=0, y0=0, in_w=None, in_h=None):
    """Bilinear with pixel centres aligned, edges clamped (docs/simulator.md, "DVPP", resampling)."""
    in_w = plane.shape[1] - x0 if in_w is None else in_w
    in_h = plane.shape[0] - y0 if in_h is None else in_h
    p = plane.astype(np.float64)
    sx = np.clip((np.arange(out_w) + 0.5) * in_w / out_w - 0.5, 0, in_w - 1)
    sy = np.clip((np.arange(out_h) + 0.5) * in_h / out_h - 0.5, 0, in_h - 1)
    xa, ya = np.floor(sx).astype(int), np.floor(sy).astype(int)
    xb, yb = np.minimum(xa + 1, in_w - 1), np.minimum(ya + 1, in_h - 1)
    fx, fy = sx - xa, sy - ya
    sub = p[y0:y0 + in_h, x0:x0 + in_w]
    top = sub[ya][:, xa] * (1 - fx) + sub[ya][:, xb] * fx
    bot = sub[yb][:, xa] * (1 - fx) + sub[yb][:, xb] * fx
    return top * (1 - fy)[:, None] + bot * fy[:, None]


def nv12_from_planes(y, u, v, ws, hs, nv21=False):
    """A semi-planar 4:2:0 buffer (width stride ws, height stride hs) from Y and half-size U, V planes."""
    h, w = y.shape
    buf = np.zeros(ws * hs * 3 // 2, np.uint8)
    buf[: ws * hs].reshape(hs, ws)[:h, :w] = y
    uv = buf[ws * hs :].reshape(hs // 2, ws)
    first, second = (v, u) if nv21 else (u, v)
    uv[: h // 2, 0:w:2] = first
    uv[: h // 2, 1:w:2] = second
    return buf


def planes_from_nv12(buf, w, h, ws, hs, nv21=False):
    """(Y, U, V) of a semi-planar 4:2:0 buffer."""
    y = buf[: ws * hs].reshape(hs, ws)[:h, :w]
    uv = buf[ws * hs : ws * hs * 3 // 2].reshape(hs // 2, ws)[: h // 2, :w]
    a, b = uv[:, 0::2], uv[:, 1::2]
    return (y, b, a) if nv21 else (y, a, b)


class Dvpp:
    """The DVPP library plus the simulator session, with checked helpers."""

    def __init__(self, sim):
        self.sim = sim
        self.acl = sim.lib
        self.lib = load()

    def err(self):
        return simlib.recent_error(self.acl)

    def ok(self, rc):
        assert rc == 0, f"code {rc}: {self.err()}"

    def refused(self, rc, code, *fragments):
        """Assert a refusal with `code` whose recent-error message holds every fragment."""
        msg = self.err()
        assert rc == code, f"expected {code}, got {rc}: {msg}"
        for f in fragments:
            assert f in msg, f"{f!r} not in {msg!r}"
        return msg

    def malloc(self, size):
        p = P()
        self.ok(self.lib.acldvppMalloc(ctypes.byref(p), size))
        return p.value

    def put(self, data):
        """Bytes (or an array) copied into fresh DVPP memory: (pointer, size)."""
        data = bytes(data) if not isinstance(data, bytes) else data
        p = self.malloc(len(data))
        self.sim.write(p, data)
        return p, len(data)

    def get(self, ptr, size):
        return np.frombuffer(self.sim.read(ptr, size), np.uint8).copy()

    def channel(self, mode=0):
        c = self.lib.acldvppCreateChannelDesc()
        assert c, self.err()
        if mode:
            self.ok(self.lib.acldvppSetChannelDescMode(c, mode))
        self.ok(self.lib.acldvppCreateChannel(c))
        return c

    def close_channel(self, c):
        self.ok(self.lib.acldvppDestroyChannel(c))
        self.ok(self.lib.acldvppDestroyChannelDesc(c))

    def pic(self, data=None, size=0, fmt=NV12, w=0, h=0, ws=0, hs=0, desc=None):
        d = desc or self.lib.acldvppCreatePicDesc()
        assert d, self.err()
        lib = self.lib
        self.ok(lib.acldvppSetPicDescData(d, data))
        self.ok(lib.acldvppSetPicDescSize(d, size))
        self.ok(lib.acldvppSetPicDescFormat(d, fmt))
        self.ok(lib.acldvppSetPicDescWidth(d, w))
        self.ok(lib.acldvppSetPicDescHeight(d, h))
        self.ok(lib.acldvppSetPicDescWidthStride(d, ws))
        self.ok(lib.acldvppSetPicDescHeightStride(d, hs))
        return d

    def nv12_pic(self, y, u, v, nv21=False):
        """An NV12 (or NV21) picture in DVPP memory from planes, at VPC's 16 x 2 strides: (desc, ptr)."""
        h, w = y.shape
        ws, hs = align(w, 16), align(h, 2)
        buf = nv12_from_planes(y, u, v, ws, hs, nv21)
        ptr, size = self.put(buf.tobytes())
        return self.pic(ptr, size, NV21 if nv21 else NV12, w, h, ws, hs), ptr

    def out_pic(self, w, h, fmt=NV12, fill=0):
        """An empty picture of w x h at VPC's output strides: (desc, ptr, size)."""
        ws, hs = align(w, 16), align(h, 2)
        size = ws * hs * 3 // 2 if fmt in (NV12, NV21) else ws * hs * (3 if fmt in (RGB888, BGR888) else 1)
        if fmt in (RGB888, BGR888):
            ws = align(w * 3, 16)
            size = ws * hs
        ptr = self.malloc(size)
        self.sim.write(ptr, bytes([fill]) * size)
        return self.pic(ptr, size, fmt, w, h, ws, hs), ptr, size
