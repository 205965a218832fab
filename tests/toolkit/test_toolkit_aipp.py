"""A C++ program written against CANN's headers (tests/toolkit/samples/aipp_static.cpp)
runs a static-AIPP model: the aclAippInfo layout of the real acl_mdl.h, the
descriptor of the image input, and the network's output on the AIPP of an
NV12 image, against the numpy reference (docs/simulator.md, "Static AIPP")."""

import re

import numpy as np
from helpers.aipp import BT601_NV12_TO_RGB, nv12, reference

from ascend_engine import sim
from ascend_engine.sim import aipp as aipp_settings

FIELDS = {"aipp_mode": "static", "input_format": "YUV420SP_U8", "src_image_size_w": 12, "src_image_size_h": 8,
          "crop": True, "load_start_pos_w": 2, "load_start_pos_h": 2, "crop_size_w": 8, "crop_size_h": 6,
          **BT601_NV12_TO_RGB, "mean_chn_0": 10, "mean_chn_1": 20, "mean_chn_2": 30,
          "var_reci_chn_0": 0.5, "var_reci_chn_1": 0.25, "var_reci_chn_2": 0.125}


def test_a_c_program_reads_the_aipp_and_runs_the_image(run_sample, tmp_path):
    rng = np.random.default_rng(12)
    g = sim.Graph("aipp_net")
    x = g.input("image", "float32", (1, 3, 6, 8), "NCHW")
    w = rng.standard_normal((1, 3, 8, 4)).astype(np.float32)
    g.output("y", g.matmul(x, g.const(w)))
    model = g.save(str(tmp_path / "aipp.om"), aipp={"image": FIELDS})
    img = nv12(rng, 12, 8)
    img.tofile(tmp_path / "image.nv12")
    proc = run_sample("aipp_static", model, tmp_path / "image.nv12")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "aipp: format 1 source 12x8 crop 1 at 2,2 size 8x6 csc 1 r0c2 359 bias 0,128,128" in out
    assert "aipp: mean 10,20,30 var 0.5000,0.2500,0.1250 model input 1x3x6x8" in out
    assert "input: dtype 4 format 1 dims 1x8x12x3 v2 1x12x12x1 size 144" in out  # uint8 NHWC, 12 * 8 * 1.5
    values = np.array(re.search(r"^values:(.*)$", out, re.M).group(1).split(), dtype=np.float32)
    settings = aipp_settings.resolve(FIELDS, "image", (1, 3, 6, 8), "NCHW", "float32")
    want = reference(settings, img) @ w
    np.testing.assert_allclose(values.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
    assert "aipp_static: OK" in out
