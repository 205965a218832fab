"""The Model class on a model with a static-AIPP input: the input's spec is
the source image (uint8, the dims of its bytes from aclmdlGetInputDimsV2,
since aclmdlGetInputDims gives the image's n, h, w, c), and a call takes the
image (docs/simulator.md, "Static AIPP")."""

import numpy as np
from helpers.aipp import BT601_NV12_TO_RGB, nv12, reference

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.sim import aipp as aipp_settings


def test_the_model_class_takes_the_image(tmp_path):
    g = sim.Graph("classifier")
    x = g.input("image", "float32", (1, 3, 6, 8), "NCHW")
    g.output("y", g.mul(x, g.const(np.full((1, 3, 6, 8), 2.0, np.float32))))
    fields = {"aipp_mode": "static", "input_format": "YUV420SP_U8", **BT601_NV12_TO_RGB, "mean_chn_1": 5}
    path = g.save(str(tmp_path / "m.om"), aipp={"image": fields})
    img = nv12(np.random.default_rng(8), 8, 6)
    with ae.Model.load(path) as m:
        spec = m.inputs[0]
        assert (spec.dtype, spec.shape, spec.nbytes, spec.format) == (np.uint8, (1, 9, 8, 1), 72, "NHWC")
        out = m(image=img.reshape(spec.shape))["y"]
    want = 2 * reference(aipp_settings.resolve(fields, "image", (1, 3, 6, 8), "NCHW", "float32"), img)
    np.testing.assert_array_equal(out, want)
