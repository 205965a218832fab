"""A C++ program written the way the Ascend DVPP-with-AIPP detection samples
are (tests/toolkit/samples/dvpp_aipp_detect.cpp), built against the toolkit
and run on a `sim atc` model whose AIPP configuration switches the colour
conversion on without a matrix: it allocates the model's memory from
aclmdlQuerySize (non-zero work), decodes a 150-pixel-wide JPEG at its own
128 x 16 strides, resizes it with the VPC and runs the model.  Its output is
checked against a Pillow/numpy reference of the whole chain."""

import re

import numpy as np
import pytest

onnx_nets = pytest.importorskip("helpers.onnx_nets", reason="sim atc needs onnx and onnxruntime")

W, H = 32, 24  # the model's input
SRC_W, SRC_H = 150, 100  # JPEGD's width stride: 192 at the SoC's 64, 256 at the program's 128


def _identity(tmp_path):
    import onnx
    from onnx import helper as h

    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, H, W])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3, H, W])
    one = onnx.numpy_helper.from_array(np.ones((1,), np.float32), "one")
    g = h.make_graph([h.make_node("Mul", ["x", "one"], ["y"])], "net", [x], [y], [one])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return onnx_nets.save(m, tmp_path, "identity")


def _bilinear(plane, w, h):
    """Half-pixel bilinear resize of a 2-D plane (the VPC's default interpolation)."""
    ph, pw = plane.shape
    fx = np.clip((np.arange(w) + 0.5) * pw / w - 0.5, 0, pw - 1)
    fy = np.clip((np.arange(h) + 0.5) * ph / h - 0.5, 0, ph - 1)
    x0, y0 = fx.astype(int), fy.astype(int)
    x1, y1 = np.minimum(x0 + 1, pw - 1), np.minimum(y0 + 1, ph - 1)
    wx, wy = fx - x0, (fy - y0)[:, None]
    top = plane[y0][:, x0] * (1 - wx) + plane[y0][:, x1] * wx
    bottom = plane[y1][:, x0] * (1 - wx) + plane[y1][:, x1] * wx
    return top * (1 - wy) + bottom * wy


def _reference(jpeg):
    """Pillow's decode, 4:2:0 chroma, resized per plane, through ATC's default YUV420SP matrix."""
    from PIL import Image

    img = Image.open(jpeg)
    img.draft("YCbCr", img.size)
    ycc = np.asarray(img).astype(float)[:SRC_H, :SRC_W]
    y = _bilinear(ycc[..., 0], W, H)
    chroma = [ycc[..., c].reshape(SRC_H // 2, 2, SRC_W // 2, 2).mean(axis=(1, 3)) for c in (1, 2)]
    u, v = (np.round(_bilinear(c, W // 2, H // 2)).repeat(2, 0).repeat(2, 1) for c in chroma)
    y = np.round(y)
    b = (298 * (y - 16) + 516 * (u - 128)) / 256
    g = (298 * (y - 16) - 100 * (u - 128) - 208 * (v - 128)) / 256
    r = (298 * (y - 16) + 409 * (v - 128)) / 256
    return np.clip(np.stack([b, g, r]), 0, 255)  # output channel 0 is B with ATC's default matrix


def test_dvpp_aipp_detection_program_runs_unchanged(run_sample, tmp_path):
    from PIL import Image

    cfg = tmp_path / "aipp.cfg"
    cfg.write_text("aipp_op {\n  aipp_mode: static\n  input_format: YUV420SP_U8\n  csc_switch: true\n}\n")
    om = onnx_nets.convert(_identity(tmp_path), tmp_path / "det", f"--insert_op_conf={cfg}")
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:SRC_H, 0:SRC_W]
    rgb = np.stack([xx * 255 / SRC_W, yy * 255 / SRC_H, 128 + 60 * np.sin(xx / 9.0)], axis=-1)
    rgb = np.clip(rgb + rng.normal(0, 4, rgb.shape), 0, 255).astype(np.uint8)
    jpeg = tmp_path / "in.jpg"
    Image.fromarray(rgb).save(jpeg, quality=95, subsampling=2)
    proc = run_sample("dvpp_aipp_detect", om, jpeg)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    work = int(re.search(r"model: work (\d+) bytes", out).group(1))
    assert work > 0  # aclmdlQuerySize never reports 0 work for a converted model
    assert f"model input: {W} x {H}, {W * H * 3 // 2} bytes" in out
    assert f"decoded: {SRC_W} x {SRC_H}, stride 256 x 112" in out  # the program's strides, honoured
    values = np.array(re.search(r"^output 0 'y':(.*)$", out, re.M).group(1).split(), np.float32)
    got = values.reshape(3, H, W)
    want = _reference(jpeg)
    worst = np.abs(got - want).max()
    assert worst <= 4, worst  # a few levels: JPEG's +-1 through the matrix
    assert got.std() > 20  # a picture, not the constant input zero matrices made
    assert "dvpp_aipp_detect: OK" in out
