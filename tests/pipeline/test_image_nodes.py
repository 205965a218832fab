"""Image nodes in pipelines (docs/executor.md, "Image nodes"): JPEG decode,
resize and crop_resize on DVPP, feeding static-AIPP models, checked against a
numpy/Pillow reference of the same steps."""

import asyncio
import json
import os
import sys

import numpy as np
import pytest
from helpers.aipp import BT601_NV12_TO_RGB, reference
from helpers.dvpp import bilinear, jpeg_bytes, sample_image

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine.errors import EngineError, PipelineError

# the decode reference is the all-device example's (examples/_images.py), not a copy of it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from _images import decode_planes  # noqa: E402

from ascend_engine.sim import aipp as aipp_settings

W, H = 64, 48          # the detector's picture
CW, CH = 32, 32        # the classifier's crops
AIPP = {"aipp_mode": "static", "input_format": "YUV420SP_U8", **BT601_NV12_TO_RGB}


def aipp_model(folder, name, w, h):
    """A model whose output is its AIPP input's RGB tensor (times one)."""
    g = sim.Graph(name)
    x = g.input("image", "float32", (1, 3, h, w), "NCHW")
    g.output("y", g.mul(x, g.const(np.ones((1, 3, h, w), np.float32))))
    return g.save(str(folder / f"{name}.om"), aipp={"image": AIPP})


def aipp_reference(picture, w, h):
    s = aipp_settings.resolve(AIPP, "image", (1, 3, h, w), "NCHW", "float32")
    return reference(s, picture.reshape(-1))


def planes(picture, w, h):
    flat = picture.reshape(-1)
    y = flat[: w * h].reshape(h, w).astype(np.float64)
    uv = flat[w * h: w * h * 3 // 2].reshape(h // 2, w // 2, 2).astype(np.float64)
    return y, uv[..., 0], uv[..., 1]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("image_nodes")
    return aipp_model(folder, "det", W, H), aipp_model(folder, "cls", CW, CH)


def detector_pipeline(det, max_size=(1024, 1024)):
    pipe = ae.Pipeline()
    data = pipe.bytes_input("jpeg", 1 << 20)
    picture = pipe.resize(pipe.jpeg_decode(data, max_size, name="decode"), (W, H), name="resize")
    pipe.output("y", pipe.model(det, picture, name="det"))
    pipe.output("picture", picture)
    return pipe


def test_decode_resize_aipp_model_matches_the_reference(models):
    det, _ = models
    jpeg = jpeg_bytes(sample_image(200, 150, seed=3))
    with detector_pipeline(det).compile(depth=4) as engine:
        out = engine.run({"jpeg": jpeg})
    picture = out["picture"]
    assert picture.shape == (1, H * 3 // 2, W, 1)
    got = planes(picture, W, H)
    want_y, want_u, want_v = decode_planes(jpeg)
    # decode within a grey level of Pillow's libjpeg, then bilinear: 2 levels for rounding on both
    np.testing.assert_allclose(got[0], bilinear(want_y, W, H), atol=2.5)
    np.testing.assert_allclose(got[1], bilinear(want_u, W // 2, H // 2), atol=2.5)
    np.testing.assert_allclose(got[2], bilinear(want_v, W // 2, H // 2), atol=2.5)
    # the model sees exactly the AIPP of the picture the VPC wrote
    np.testing.assert_array_equal(out["y"], aipp_reference(picture, W, H))


def test_submit_run_async_and_run_batch(models):
    det, _ = models
    jpegs = [jpeg_bytes(sample_image(96 + 32 * k, 64 + 16 * k, seed=k)) for k in range(4)]
    with detector_pipeline(det).compile(depth=2) as engine:
        alone = [engine.run({"jpeg": j})["picture"] for j in jpegs]
        futures = [engine.submit({"jpeg": j}) for j in jpegs]
        for f, want in zip(futures, alone, strict=True):
            np.testing.assert_array_equal(f.result(timeout=30)["picture"], want)

        async def gather():
            return await asyncio.gather(*(engine.run_async({"jpeg": j}) for j in jpegs))

        for got, want in zip(asyncio.run(gather()), alone, strict=True):
            np.testing.assert_array_equal(got["picture"], want)
        batch = engine.run_batch({"jpeg": jpegs}, batch_size=1)
        np.testing.assert_array_equal(batch["picture"], np.concatenate(alone))
        assert len({a.tobytes() for a in alone}) == 4


@pytest.mark.parametrize("bad", ["truncated", "not a jpeg", "progressive", "too large"])
def test_a_bad_jpeg_fails_its_request_alone(models, bad):
    det, _ = models
    good = jpeg_bytes(sample_image(120, 80, seed=1))
    data = {"truncated": good[: len(good) // 2], "not a jpeg": b"\x89PNG not a jpeg at all" * 4,
            "progressive": jpeg_bytes(sample_image(120, 80), progressive=True),
            "too large": jpeg_bytes(sample_image(300, 80))}[bad]
    with detector_pipeline(det, max_size=(256, 256)).compile(depth=2) as engine:
        want = engine.run({"jpeg": good})["picture"]
        first = engine.submit({"jpeg": good})
        why = {"truncated": "end marker", "not a jpeg": "not a JPEG it can read",
               "progressive": "progressive",
               "too large": "this node decodes 32x32 to 256x256"}[bad]
        # refused at submission, naming the node and why: nothing reached the device
        with pytest.raises(EngineError, match=f"image node 'decode'.*{why}") as refused:
            engine.run({"jpeg": data})
        assert not isinstance(refused.value, ae.errors.AclError)   # the input's fault, not the device's
        np.testing.assert_array_equal(first.result(timeout=30)["picture"], want)
        np.testing.assert_array_equal(engine.run({"jpeg": good})["picture"], want)


def crops_pipeline(det, cls, boxes_fn, max_boxes=8):
    pipe = ae.Pipeline()
    data = pipe.bytes_input("jpeg", 1 << 20)
    picture = pipe.resize(pipe.jpeg_decode(data, (1024, 1024), name="decode"), (W, H), name="resize")
    scores = pipe.model(det, picture, name="det")
    boxes = pipe.host(boxes_fn, scores, outputs=[("boxes", "int32", (-1, 4))], rows="any",
                      max_rows=max_boxes, name="nms")
    crops = pipe.crop_resize(picture, boxes, (CW, CH), name="crops")
    pipe.output("classes", pipe.model(cls, crops, name="cls"))
    pipe.output("crops", crops)
    pipe.output("picture", picture)
    return pipe


@pytest.mark.parametrize("count", [0, 1, 5])
def test_crop_resize_from_a_host_steps_boxes(models, count):
    det, cls = models
    table = np.array([[0, 0, 64, 48], [8, 6, 40, 30], [20, 10, 52, 42], [2, 2, 34, 34], [30, 16, 62, 48]],
                     np.int32)

    def nms(scores):
        return table[:count]

    jpeg = jpeg_bytes(sample_image(160, 120, seed=5))
    with crops_pipeline(det, cls, nms).compile(depth=3) as engine:
        out = engine.run({"jpeg": jpeg})
        again = engine.submit({"jpeg": jpeg}).result(timeout=30)
    assert out["crops"].shape == (count, CH * 3 // 2, CW, 1)
    assert out["classes"].shape == (count, 3, CH, CW)
    np.testing.assert_array_equal(again["crops"], out["crops"])
    y, _, _ = planes(out["picture"], W, H)
    for k, (x0, y0, x1, y1) in enumerate(table[:count]):
        crop_y, _, _ = planes(out["crops"][k], CW, CH)
        want = bilinear(y, CW, CH, x0, y0, x1 - x0, y1 - y0)
        np.testing.assert_allclose(crop_y, want, atol=1.5)
        np.testing.assert_array_equal(out["classes"][k:k + 1], aipp_reference(out["crops"][k], CW, CH))


def test_a_trace_has_a_lane_per_image_node(models, tmp_path):
    det, cls = models
    jpeg = jpeg_bytes(sample_image(160, 120, seed=5))
    with crops_pipeline(det, cls, lambda s: np.array([[0, 0, 32, 32]], np.int32)).compile(
            depth=2, profile=True) as engine:
        path = tmp_path / "trace.json"
        engine.trace(str(path), feeds=[{"jpeg": jpeg}], requests=3)
    doc = json.loads(path.read_text())
    names = {e.get("args", {}).get("name") for e in doc["traceEvents"] if e.get("ph") == "M"}
    for node in ("decode", "resize", "crops"):
        assert any(n and n.endswith(f"image node {node}") for n in names), names


def test_the_dynamic_batcher_is_refused_for_decoded_jpegs(models):
    det, _ = models
    with pytest.raises(PipelineError, match="max_delay_ms: the dynamic batcher merges requests' rows, but "
                                            "image node\\(s\\) 'decode' decode one JPEG per request: "
                                            "compile with max_delay_ms=0"):
        detector_pipeline(det).plan(max_delay_ms=2)
    assert detector_pipeline(det).plan(max_delay_ms=0).nodes   # without the batcher it plans


def test_plan_time_refusals(models):
    det, cls = models
    pipe = ae.Pipeline()
    data = pipe.bytes_input("jpeg", 4096)
    picture = pipe.jpeg_decode(data, (512, 512))
    with pytest.raises(PipelineError, match="multiple of 16"):
        pipe.resize(picture, (50, 40))
    with pytest.raises(PipelineError, match="outside the DVPP"):
        pipe.resize(picture, (8192, 48))
    small = pipe.resize(picture, (CW, CH), name="small")
    pipe.output("y", pipe.model(det, small, name="det"))
    with pytest.raises(PipelineError,
                       match="model node 'det' input 'image' reads resize 'small'.*static-AIPP"):
        pipe.plan()

    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (1, 3, H, W))
    picture = pipe.resize(pipe.jpeg_decode(pipe.bytes_input("jpeg", 4096), (512, 512)), (W, H))
    pipe.output("y", pipe.model(det, picture, name="det"))
    boxes = pipe.host(lambda a: a, x, outputs=[("b", "int32", (-1, 4))], rows="same", name="same")
    pipe.output("crops", pipe.crop_resize(picture, boxes, (CW, CH), name="crops"))
    with pytest.raises(PipelineError, match="crop_resize 'crops': its boxes must be a model output or an "
                                            "output of a host step with rows=\"any\""):
        pipe.plan()

    pipe = ae.Pipeline()
    x = pipe.input("x", "uint8", (1, 10))
    pipe.output("y", pipe.model(det, pipe.resize(pipe.jpeg_decode(x, (512, 512)), (W, H)), name="det"))
    with pytest.raises(PipelineError, match="decodes a bytes input"):
        pipe.plan()


def host_crop(picture, x0, y0, x1, y1):
    """crop_resize of the region [x0, x1) x [y0, y1) (even bounds) of an NV12 picture, on the host."""
    y, u, v = planes(picture, W, H)
    return (bilinear(y, CW, CH, x0, y0, x1 - x0, y1 - y0),
            bilinear(u, CW // 2, CH // 2, x0 // 2, y0 // 2, (x1 - x0) // 2, (y1 - y0) // 2),
            bilinear(v, CW // 2, CH // 2, x0 // 2, y0 // 2, (x1 - x0) // 2, (y1 - y0) // 2))


# boxes the VPC cannot take as they are, and the regions the executor makes of them
# (docs/executor.md, "Image nodes": even first, odd last, at least 10 x 6, inside the picture)
ODD_AND_SMALL = [([3, 9, 37, 39], (2, 8, 38, 40)),     # odd bounds widen to even ones
                 ([0, 0, 4, 3], (0, 0, 10, 6)),         # grown to the least region
                 ([60, 42, 64, 48], (54, 42, 64, 48)),  # grown, then moved back inside
                 ([-8, -9, 90, 69], (0, 0, 64, 48))]    # clamped to the picture
# (every y is a multiple of 3, so each box is exact as float32 fractions of 64 x 48 too)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_boxes_are_aligned_grown_and_clamped(models, dtype):
    det, cls = models
    boxes = np.array([b for b, _ in ODD_AND_SMALL], np.float64)
    if dtype == "float32":
        boxes = boxes / np.array([W, H, W, H])
    boxes = boxes.astype(dtype)

    pipe = ae.Pipeline()
    picture = pipe.resize(pipe.jpeg_decode(pipe.bytes_input("jpeg", 1 << 20), (1024, 1024)), (W, H))
    scores = pipe.model(det, picture, name="det")
    kept = pipe.host(lambda s: boxes, scores, outputs=[("boxes", dtype, (-1, 4))], rows="any", max_rows=8,
                     name="nms")
    pipe.output("crops", pipe.crop_resize(picture, kept, (CW, CH), name="crops"))
    pipe.output("picture", picture)
    with pipe.compile(depth=2) as engine:
        out = engine.run({"jpeg": jpeg_bytes(sample_image(160, 120, seed=9))})
    assert out["crops"].shape == (len(ODD_AND_SMALL), CH * 3 // 2, CW, 1)
    for k, (_, region) in enumerate(ODD_AND_SMALL):
        got = planes(out["crops"][k], CW, CH)
        for plane, want in zip(got, host_crop(out["picture"], *region), strict=True):
            np.testing.assert_allclose(plane, want, atol=0.5 + 1e-9, err_msg=f"box {k} -> {region}")


def test_odd_sized_jpegs_decode_to_even_pictures(models):
    det, _ = models
    jpeg = jpeg_bytes(sample_image(101, 77, seed=4))
    with detector_pipeline(det).compile(depth=2) as engine:
        picture = engine.run({"jpeg": jpeg})["picture"]
    want_y, want_u, want_v = decode_planes(jpeg)
    assert want_y.shape == (76, 100)
    got = planes(picture, W, H)
    np.testing.assert_allclose(got[0], bilinear(want_y, W, H), atol=2.5)
    np.testing.assert_allclose(got[1], bilinear(want_u, W // 2, H // 2), atol=2.5)


def test_request_refusals_before_submission(models):
    det, _ = models
    good = jpeg_bytes(sample_image(120, 80, seed=1))
    pipe = ae.Pipeline()
    picture = pipe.resize(pipe.jpeg_decode(pipe.bytes_input("jpeg", len(good)), (256, 256), name="decode"),
                          (W, H))
    pipe.output("y", pipe.model(det, picture, name="det"))
    with pipe.compile(depth=2) as engine:
        with pytest.raises(ValueError, match=rf"input 'jpeg': {len(good) + 1} bytes; this bytes input takes "
                                             rf"1 to {len(good)}"):
            engine.run({"jpeg": good + b"\0"})
        with pytest.raises(ValueError, match="runs one image per request: batch_size must be 1, got 2"):
            engine.run_batch({"jpeg": [good, good]}, batch_size=2)
        with pytest.raises(ValueError, match=r"pipeline inputs are \['jpeg'\]: missing \['jpeg'\], "
                                             r"unexpected \['image'\]"):
            engine.run({"image": good})
        with pytest.raises(TypeError, match="input 'jpeg': one byte string per request .* got list"):
            engine.run({"jpeg": [good]})
        assert engine.run({"jpeg": good})["y"].shape == (1, 3, H, W)


def test_plan_time_refusals_of_scaling_boxes_and_counts(models):
    det, _ = models

    def base():
        pipe = ae.Pipeline()
        return pipe, pipe.jpeg_decode(pipe.bytes_input("jpeg", 4096), (512, 512))

    pipe, decoded = base()
    tiny = pipe.resize(decoded, (16, 6), name="tiny")
    pipe.output("big", pipe.resize(tiny, (512, 6), name="big"))
    pipe.output("y", pipe.model(det, pipe.resize(decoded, (W, H)), name="det"))
    with pytest.raises(PipelineError, match=r"resize 'big': 16x6 to 512x6 is beyond the VPC's scaling "
                                            r"\(each side 1/32 to 16 times\)"):
        pipe.plan()

    for dtype, max_boxes, message in [
            ("int64", 0, r"crop_resize 'crops': boxes are \(rows, 4\) int32 pixels or float32 fractions"),
            ("int32", 4, r"crop_resize 'crops': host step 'nms' returns up to 8 boxes, more than "
                         r"max_boxes=4")]:
        pipe, decoded = base()
        picture = pipe.resize(decoded, (W, H))
        boxes = pipe.host(lambda s: s, pipe.model(det, picture, name="det"),
                          outputs=[("boxes", dtype, (-1, 4))], rows="any", max_rows=8, name="nms")
        pipe.output("crops", pipe.crop_resize(picture, boxes, (CW, CH), name="crops", max_boxes=max_boxes))
        with pytest.raises(PipelineError, match=message):
            pipe.plan()


def test_a_jpeg_of_exactly_max_size_decodes(models):
    # the decoded picture's buffer holds JPEGD's whole NV12 layout at max_size (strides: 128 x 16)
    det, _ = models
    pipe = detector_pipeline(det, max_size=(250, 250))
    plan = pipe.plan()
    decode = next(n for n in plan.nodes if n.name == "decode")
    assert plan.tensors[decode.outputs[0]].shape[1:] == (256 * 256 * 3 // 2,)
    jpeg = jpeg_bytes(sample_image(250, 250, seed=8))
    with pipe.compile(depth=2) as engine:
        picture = engine.run({"jpeg": jpeg})["picture"]
    np.testing.assert_allclose(planes(picture, W, H)[0], bilinear(decode_planes(jpeg)[0], W, H), atol=2.5)


# boxes a model computes (docs/executor.md, "Image nodes", "Boxes from a model"): even bounds, so each
# region is its box, and every y a multiple of 6, so each box is exact as float32 fractions of 64 x 48
BOX_TABLE = np.array([[0, 0, 64, 48], [8, 6, 40, 30], [20, 12, 52, 42], [2, 18, 34, 48]], np.int32)


def boxes_model(folder, name, table, dtype, shape):
    """A detector with an NV12 AIPP input whose ``boxes`` output (``shape``,
    ``dtype``) is ``table`` whatever the picture: 0 x the picture's mean + the
    table (as fractions of the picture for float32), cast for int32."""
    values = table.astype(np.float64)
    if dtype == "float32":
        values = values / np.array([W, H, W, H])
    g = sim.Graph(name)
    x = g.input("image", "float32", (1, 3, H, W), "NCHW")
    mean = g.reshape(g.mean(x, axes=[1, 2, 3], keepdims=True), (1,) * len(shape))
    boxes = g.add(g.mul(mean, g.const(np.zeros((1,) * len(shape), np.float32))),
                  g.const(values.astype(np.float32).reshape(shape)))
    g.output("boxes", boxes if dtype == "float32" else g.cast(boxes, dtype))
    return g.save(str(folder / f"{name}.om"), aipp={"image": AIPP})


def model_boxes_pipeline(boxes_det, cls, max_boxes=0):
    pipe = ae.Pipeline()
    picture = pipe.resize(pipe.jpeg_decode(pipe.bytes_input("jpeg", 1 << 20), (1024, 1024), name="decode"),
                          (W, H), name="resize")
    boxes = pipe.model(boxes_det, picture, name="det")
    crops = pipe.crop_resize(picture, boxes, (CW, CH), name="crops", max_boxes=max_boxes)
    pipe.output("classes", pipe.model(cls, crops, name="cls"))
    pipe.output("crops", crops)
    pipe.output("picture", picture)
    return pipe


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("form", ["(rows, 4)", "(rows, K, 4)"])
def test_crop_resize_from_a_models_boxes(models, tmp_path, form, dtype):
    _, cls = models
    table = BOX_TABLE[1:2] if form == "(rows, 4)" else BOX_TABLE[1:]
    shape = (1, 4) if form == "(rows, 4)" else (1, len(table), 4)
    det = boxes_model(tmp_path, "boxes_det", table, dtype, shape)
    pipe = model_boxes_pipeline(det, cls)
    plan = pipe.plan()
    # the planner inserted a native step before the crop; the crop takes every box the model gives
    step = next(n for n in plan.nodes if n.name == "crops boxes")
    assert (step.kind, step.rows_any, step.max_rows) == ("host", True, len(table))
    assert isinstance(step.fn, ae.NativeStep)
    assert next(n for n in plan.nodes if n.name == "crops").image["max_boxes"] == len(table)
    jpegs = [jpeg_bytes(sample_image(160, 120, seed=s)) for s in (5, 6)]
    with pipe.compile(depth=2) as engine:
        results = [engine.run({"jpeg": jpegs[0]}), engine.submit({"jpeg": jpegs[1]}).result(timeout=30)]
    for out in results:
        assert out["crops"].shape == (len(table), CH * 3 // 2, CW, 1)
        for k, box in enumerate(table):
            got = planes(out["crops"][k], CW, CH)
            for plane, want in zip(got, host_crop(out["picture"], *box), strict=True):
                np.testing.assert_allclose(plane, want, atol=0.5 + 1e-9, err_msg=f"box {k}: {box}")
            np.testing.assert_array_equal(out["classes"][k:k + 1], aipp_reference(out["crops"][k], CW, CH))


def test_the_inserted_step_has_its_own_trace_lane(models, tmp_path):
    _, cls = models
    det = boxes_model(tmp_path, "boxes_det", BOX_TABLE, "int32", (1, 4, 4))
    with model_boxes_pipeline(det, cls).compile(depth=2, profile=True) as engine:
        path = tmp_path / "trace.json"
        engine.trace(str(path), feeds=[{"jpeg": jpeg_bytes(sample_image(160, 120, seed=5))}], requests=2)
    doc = json.loads(path.read_text())
    names = {e.get("args", {}).get("name") for e in doc["traceEvents"] if e.get("ph") == "M"}
    assert any(n and n.endswith("host step crops boxes") for n in names), names


def test_model_boxes_refusals(models, tmp_path):
    _, cls = models
    for dtype, shape, got in [("int32", (1, 5), r"int32 \(1, 5\)"), ("int64", (1, 4), r"int64 \(1, 4\)"),
                              ("int32", (1, 2, 2), r"int32 \(1, 2, 2\)")]:
        det = boxes_model(tmp_path, "bad_det", np.zeros(shape, np.int32), dtype, shape)
        with pytest.raises(PipelineError, match=r"crop_resize 'crops': boxes from model output 'det.boxes' "
                                                r"are \(rows, 4\) or \(rows, K, 4\) int32 pixels or float32 "
                                                rf"fractions \(x0, y0, x1, y1\), got {got}"):
            model_boxes_pipeline(det, cls)
    many = boxes_model(tmp_path, "many_det", np.tile(BOX_TABLE, (65, 1)), "int32", (1, 260, 4))
    with pytest.raises(PipelineError, match="crop_resize 'crops': model output 'det.boxes' carries up to "
                                            "260 boxes a request; one batch crop takes 256 at most: set "
                                            "max_boxes"):
        model_boxes_pipeline(many, cls).plan()
    capped = model_boxes_pipeline(many, cls, max_boxes=256).plan()
    assert next(n for n in capped.nodes if n.name == "crops boxes").max_rows == 256


def test_more_boxes_than_max_boxes_fail_the_request_in_the_native_step(models, tmp_path):
    _, cls = models
    det = boxes_model(tmp_path, "boxes_det", BOX_TABLE, "int32", (1, 4, 4))
    pipe = model_boxes_pipeline(det, cls, max_boxes=3)
    assert next(n for n in pipe.plan().nodes if n.name == "crops boxes").max_rows == 3
    with pipe.compile(depth=2) as engine:
        for _ in range(2):   # the request fails alone; the engine takes the next
            with pytest.raises(ae.errors.HostStepError,
                               match=r"host step 'crops boxes': the request has 4 boxes \(1 row\(s\) of 4\), "
                                     r"more than crop_resize 'crops' takes \(max_boxes=3\)"):
                engine.run({"jpeg": jpeg_bytes(sample_image(160, 120, seed=5))})


def damaged_scan(jpeg):
    """The JPEG with its header whole and its scan data damaged: a restart
    marker where none belongs, which JPEGD's decoder reports as corrupt."""
    scan = jpeg.index(b"\xff\xda")
    start = scan + 2 + int.from_bytes(jpeg[scan + 2:scan + 4], "big")
    middle = (start + len(jpeg) - 2) // 2
    return jpeg[:middle] + b"\xff\xd3" * 8 + jpeg[middle + 16:]


@pytest.mark.parametrize("at,kind", [(0, "detector"), (5, "detector"), (15, "detector"), (5, "crops")])
def test_a_damaged_scan_fails_its_request_alone_in_a_burst(models, at, kind):
    """A JPEG whose header reads but whose scan data is damaged fails on the
    device; only its own request fails, every other request of the burst
    (run again from its staged inputs) returns what it returns alone."""
    det, cls = models
    jpegs = [jpeg_bytes(sample_image(96 + 8 * k, 64 + 4 * k, seed=k)) for k in range(16)]
    jpegs[at] = damaged_scan(jpegs[at])
    table = np.array([[0, 0, 64, 48], [8, 6, 40, 30]], np.int32)
    pipe = detector_pipeline(det) if kind == "detector" else crops_pipeline(det, cls, lambda scores: table)
    with pipe.compile(depth=8) as engine:
        alone = {k: engine.run({"jpeg": j}) for k, j in enumerate(jpegs) if k != at}
        for _burst in range(2):
            futures = [engine.submit({"jpeg": j}) for j in jpegs]
            for k, f in enumerate(futures):
                if k == at:
                    with pytest.raises(EngineError, match=r"image node 'decode'.*corrupt") as failed:
                        f.result(timeout=60)
                    assert failed.value.request is not None
                    continue
                got = f.result(timeout=60)
                assert got.keys() == alone[k].keys()
                for name, value in got.items():
                    np.testing.assert_array_equal(value, alone[k][name])
        with pytest.raises(EngineError, match=r"image node 'decode'.*corrupt"):
            engine.run({"jpeg": jpegs[at]})
        other = (at + 1) % len(jpegs)
        np.testing.assert_array_equal(engine.run({"jpeg": jpegs[other]})["picture"], alone[other]["picture"])
