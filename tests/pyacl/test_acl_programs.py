"""pyACL programs written from pyACL's documented API (tests/pyacl/programs),
run unchanged on the simulator through `import acl` (ascend_engine.acl), each
checked against a numpy reference of its model."""

import os
import sys

import numpy as np
import pytest
from helpers.aipp import BT601_NV12_TO_RGB, reference
from helpers.dvpp import bilinear, jpeg_bytes, sample_image

from ascend_engine import sim
from ascend_engine.sim import aipp as aipp_settings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from _images import decode_planes  # noqa: E402

CLASSES = 10


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A classifier: per-channel means of a 3 x 8 x 8 image, a dense layer, softmax."""
    rng = np.random.default_rng(7)
    w = rng.normal(size=(3, CLASSES)).astype(np.float32)
    b = rng.normal(size=(1, CLASSES)).astype(np.float32)
    g = sim.Graph("classifier")
    x = g.input("x", "float32", (1, 3, 8, 8), "NCHW")
    g.output("prob", g.softmax(g.add(g.matmul(g.mean(x, axes=(2, 3)), g.const(w)), g.const(b))))
    path = g.save(str(tmp_path_factory.mktemp("classifier") / "classifier.om"))

    def ref(images):
        return softmax(images.mean(axis=(2, 3)) @ w + b)
    return path, ref


def images(n, seed):
    return np.random.default_rng(seed).normal(size=(n, 3, 8, 8)).astype(np.float32)


def test_sync_classification_matches_numpy(classifier, program, tmp_path):
    path, ref = classifier
    x = images(5, 1)
    np.save(tmp_path / "x.npy", x)
    program("classify_sync.py", path, tmp_path / "x.npy", tmp_path / "out.npy")
    got = np.load(tmp_path / "out.npy")
    assert got.shape == (5, CLASSES)
    np.testing.assert_allclose(got, ref(x), rtol=1e-5, atol=1e-6)
    assert (got.argmax(axis=1) == ref(x).argmax(axis=1)).all()


def test_async_classification_with_callbacks_matches_numpy(classifier, program, tmp_path):
    path, ref = classifier
    x = images(6, 2)
    np.save(tmp_path / "x.npy", x)
    proc = program("classify_async.py", path, tmp_path / "x.npy", tmp_path / "out.npy")
    assert "callbacks 6" in proc.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), ref(x), rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def dynamic_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dynamic")
    rng = np.random.default_rng(3)
    w = rng.normal(size=(16, 4)).astype(np.float32)
    g = sim.Graph("batch")
    g.output("y", g.relu(g.matmul(g.input("x", "float32", (-1, 16)), g.const(w))))
    batch = g.save(str(folder / "batch.om"), batch_sizes=[1, 2, 4, 8])
    scale = np.array([1.0, -2.0, 0.5], np.float32).reshape(1, 3, 1, 1)
    g = sim.Graph("hw")
    g.output("y", g.mul(g.input("x", "float32", (1, 3, "h", "w"), "NCHW"), g.const(scale)))
    hw = g.save(str(folder / "hw.om"), hw_sizes=[(8, 8), (16, 24)])
    return {"batch": (batch, lambda x: np.maximum(x @ w, 0)), "hw": (hw, lambda x: x * scale)}


@pytest.mark.parametrize("mode, shape", [("batch", (2, 16)), ("batch", (8, 16)), ("hw", (1, 3, 16, 24)),
                                         ("hw", (1, 3, 8, 8))])
def test_dynamic_gears_match_numpy(dynamic_models, program, tmp_path, mode, shape):
    path, ref = dynamic_models[mode]
    x = np.random.default_rng(sum(shape)).normal(size=shape).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    program("dynamic.py", path, mode, tmp_path / "x.npy", tmp_path / "out.npy")
    got = np.load(tmp_path / "out.npy")
    assert got.shape == ref(x).shape
    np.testing.assert_allclose(got, ref(x), rtol=1e-5, atol=1e-6)


W, H = 64, 48
AIPP = {"aipp_mode": "static", "input_format": "YUV420SP_U8", **BT601_NV12_TO_RGB}


def test_jpeg_decode_resize_into_a_static_aipp_model(program, tmp_path):
    g = sim.Graph("aipp")
    x = g.input("image", "float32", (1, 3, H, W), "NCHW")
    g.output("y", g.mul(x, g.const(np.full((1, 3, 1, 1), 0.5, np.float32))))
    model = g.save(str(tmp_path / "aipp.om"), aipp={"image": AIPP})
    jpeg = jpeg_bytes(sample_image(200, 150, seed=5))
    (tmp_path / "in.jpg").write_bytes(jpeg)
    program("jpeg_aipp.py", model, tmp_path / "in.jpg", tmp_path / "out.npy", tmp_path / "pic.npy", W, H)
    picture = np.load(tmp_path / "pic.npy")
    # the VPC's picture: Pillow's decode within a grey level, then bilinear (2 levels of rounding)
    want_y, want_u, want_v = decode_planes(jpeg)
    y = picture[: W * H].reshape(H, W)
    uv = picture[W * H:].reshape(H // 2, W // 2, 2)
    np.testing.assert_allclose(y, bilinear(want_y, W, H), atol=2.5)
    np.testing.assert_allclose(uv[..., 0], bilinear(want_u, W // 2, H // 2), atol=2.5)
    np.testing.assert_allclose(uv[..., 1], bilinear(want_v, W // 2, H // 2), atol=2.5)
    # the model saw exactly the AIPP of that picture
    settings = aipp_settings.resolve(AIPP, "image", (1, 3, H, W), "NCHW", "float32")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), reference(settings, picture) * 0.5)


def _nv12_window(picture, width, height, left, top, w, h):
    """The w x h window at (left, top) of an NV12 picture, as one NV12 picture."""
    y = picture[: width * height].reshape(height, width)
    uv = picture[width * height:].reshape(height // 2, width)
    return np.concatenate([y[top:top + h, left:left + w].ravel(),
                           uv[top // 2:(top + h) // 2, left:left + w].ravel()])


def test_batch_crop_and_paste_take_lists_and_return_the_batch(program, tmp_path):
    """pyACL's batch VPC calls: region counts and regions as lists, (dst_batch_pic_descs, ret) back."""
    width, height = 256, 128
    src = np.random.default_rng(9).integers(0, 256, width * height * 3 // 2, dtype=np.uint8)
    np.save(tmp_path / "src.npy", src)
    proc = program("batch_crop.py", tmp_path / "src.npy", width, height, tmp_path / "out.npz")
    got = np.load(tmp_path / "out.npz")
    regions = [(0, 0), (64, 32), (128, 96)]
    for i, (x, y) in enumerate(regions):
        np.testing.assert_array_equal(got["crop"][i], _nv12_window(src, width, height, x, y, 64, 32))
        pasted = np.zeros(128 * 64 * 3 // 2, np.uint8)
        window = _nv12_window(src, width, height, x, y, 64, 32)
        py = pasted[: 128 * 64].reshape(64, 128)
        puv = pasted[128 * 64:].reshape(32, 128)
        py[16:48, 32:96] = window[: 64 * 32].reshape(32, 64)
        puv[8:24, 32:96] = window[64 * 32:].reshape(16, 64)
        np.testing.assert_array_equal(got["paste"][i], pasted)
        np.testing.assert_array_equal(got["resize_paste"][i], pasted)
    # a region list shorter than the counts: ACL_ERROR_INVALID_PARAM, not a read past the list
    for kind in ("crop", "paste", "resize_paste"):
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(f"{kind} short list"))
        assert line.startswith(f"{kind} short list 100000 ") and "cropAreas[1] is NULL" in line, line
