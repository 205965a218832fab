"""Converted models compute what ONNX Runtime computes, at every profile.

The simulator runs the converted model's ONNX graph with ONNX Runtime's C
API; the reference is ONNX Runtime's Python InferenceSession on the original
file and the same inputs, one thread each.  Tolerance: float32 outputs within
rtol 1e-5 / atol 1e-6 (the graph optimizer may fuse differently from a fresh
session); float16 outputs (--output_type=FP16) within one float16 ulp of the
float32 reference rounded (rtol 1e-3).
"""

import numpy as np
import pytest
from helpers import onnx_nets

import ascend_engine as ae

F32 = dict(rtol=1e-5, atol=1e-6)


def close(got, want, **tol):
    assert set(got) == set(want)
    for k in want:
        assert got[k].shape == want[k].shape, k
        np.testing.assert_allclose(got[k], want[k], **(tol or F32), err_msg=k)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(23)


@pytest.fixture(scope="module")
def converted(nets, tmp_path_factory):
    d = tmp_path_factory.mktemp("om")
    return {
        "batch": onnx_nets.convert(
            nets["resnet"], d / "rb", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,4,8"
        ),
        "hw": onnx_nets.convert(
            nets["yolo"], d / "yh", "--input_shape=img:1,3,-1,-1", "--dynamic_image_size=16,16;32,48;24,64"
        ),
        "dims": onnx_nets.convert(
            nets["crnn"],
            d / "cd",
            "--input_format=ND",
            "--input_shape=seq:1,-1,32;mask:1,-1",
            "--dynamic_dims=4,4;8,8;16,16",
        ),
        "fp16": onnx_nets.convert(
            nets["resnet"], d / "rf", "--input_shape=x:2,3,16,16", "--output_type=FP16"
        ),
    }


def test_dynamic_batch_at_every_gear_and_between(nets, converted, rng):
    with ae.Model.load(converted["batch"]) as m:
        assert m.batch_sizes == (1, 2, 4, 8)
        for rows in (1, 2, 3, 4, 8):
            x = rng.standard_normal((rows, 3, 16, 16)).astype(np.float32)
            close(m(x=x), onnx_nets.ort_run(nets["resnet"], {"x": x}))


def test_dynamic_image_size_at_every_gear(nets, converted, rng):
    with ae.Model.load(converted["hw"]) as m:
        assert m.hw_sizes == ((16, 16), (32, 48), (24, 64))
        for h, w in m.hw_sizes:
            img = rng.standard_normal((1, 3, h, w)).astype(np.float32)
            got = m(img=img)
            assert got["boxes"].shape == (1, 4, h // 4, w // 4)
            close(got, onnx_nets.ort_run(nets["yolo"], {"img": img}))


def test_dynamic_dims_at_every_gear(nets, converted, rng):
    with ae.Model.load(converted["dims"]) as m:
        assert m.dynamic_kind == "dims" and len(m.dims_gears) == 3
        for t in (4, 8, 16):
            feeds = {
                "seq": rng.standard_normal((1, t, 32)).astype(np.float32),
                "mask": (rng.random((1, t)) > 0.3).astype(np.float32),
            }
            close(m(**feeds), onnx_nets.ort_run(nets["crnn"], feeds))


def test_float16_outputs(nets, converted, rng):
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    with ae.Model.load(converted["fp16"]) as m:
        got = m(x=x)
    assert got["probs"].dtype == np.float16
    want = onnx_nets.ort_run(nets["resnet"], {"x": x})["probs"].astype(np.float16)
    np.testing.assert_allclose(got["probs"].astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-4)


def resnet_then_itself_pipeline(path):
    """Two nodes of the same converted model in a chain: x -> r1 -> probs, x -> r2 -> probs2."""
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 3, 16, 16))
    pipe.output("probs", pipe.model(path, x, name="r1"))
    pipe.output("probs2", pipe.model(path, x, name="r2"))
    return pipe


@pytest.mark.parametrize("depth", [1, 2, 8])
def test_pipeline_and_run_batch(nets, converted, rng, depth):
    with resnet_then_itself_pipeline(converted["batch"]).compile(depth=depth) as engine:
        for rows in (1, 3, 8):
            x = rng.standard_normal((rows, 3, 16, 16)).astype(np.float32)
            want = onnx_nets.ort_run(nets["resnet"], {"x": x})["probs"]
            got = engine.run({"x": x})
            np.testing.assert_allclose(got["probs"], want, **F32)
            np.testing.assert_allclose(got["probs2"], want, **F32)
        big = rng.standard_normal((21, 3, 16, 16)).astype(np.float32)
        got = engine.run_batch({"x": big}, batch_size=4)
        np.testing.assert_allclose(
            got["probs"], onnx_nets.ort_run(nets["resnet"], {"x": big})["probs"], **F32
        )


def test_pipeline_with_image_size_gears(nets, converted, rng):
    pipe = ae.Pipeline(device=0)
    img = pipe.input("img", "float32", (1, 3, -1, -1))
    feat, boxes = pipe.model(converted["hw"], img, name="det")
    pipe.output("feat", feat)
    pipe.output("boxes", boxes)
    with pipe.compile(depth=2) as engine:
        for h, w in ((32, 48), (16, 16), (24, 64)):
            x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
            close(engine.run({"img": x}), onnx_nets.ort_run(nets["yolo"], {"img": x}))


def test_instances_share_the_weights(nets, converted, rng):
    """instances=2 loads the converted model twice on one weight allocation, each with its own session."""
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 3, 16, 16))
    pipe.output("probs", pipe.model(converted["batch"], x, name="r", instances=2))
    with pipe.compile(depth=4) as engine:
        big = rng.standard_normal((16, 3, 16, 16)).astype(np.float32)
        got = engine.run_batch({"x": big}, batch_size=2)
    np.testing.assert_allclose(got["probs"], onnx_nets.ort_run(nets["resnet"], {"x": big})["probs"], **F32)
