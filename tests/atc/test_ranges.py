"""Shape-range models from sim atc: ATC's range forms, what AscendCL reports, and the numbers.

ATC turns ``lo~hi`` and an unprofiled ``-1`` in ``--input_shape`` (and the
deprecated ``--input_shape_range=name:[...]``) into a dynamic-shape model:
the caller describes each execution's input shapes with
aclmdlSetDatasetTensorDesc and reads each output's shape from the output
dataset's tensor descriptions afterwards (docs/simulator.md, "sim atc").
The reference numbers are ONNX Runtime's Python session on the original file.
"""

import contextlib
import ctypes
import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import acl, mdl, onnx_nets, simlib

import ascend_engine as ae
from ascend_engine.errors import AtcError, PipelineError
from ascend_engine.sim import atc
from ascend_engine.sim.atc import flags, om_file

BASE = ["--model=m.onnx", "--framework=5", "--output=out", "--soc_version=Ascend310P3"]
F32 = dict(rtol=1e-5, atol=1e-6)


def refused(argv, message):
    with pytest.raises(AtcError) as exc:
        flags.parse(argv)
    assert message in str(exc.value), str(exc.value)


def test_range_forms_parse_to_a_range_model():
    o = flags.parse(BASE + ["--input_shape=x:1~8,3,-1,16~16"])
    assert o.dynamic == "range" and o.input_shape == {"x": [-1, 3, -1, -1]}
    assert o.ranges == {("x", 0): (1, 8), ("x", 2): (1, -1), ("x", 3): (16, 16)}
    o = flags.parse(BASE + ["--input_shape=x:-1,3;y:2~5"])
    assert o.ranges == {("x", 0): (1, -1), ("y", 0): (2, 5)}
    o = flags.parse(BASE + ['--input_shape_range="x:[8~20,3,5,-1];y:[5,3~9]"'])
    assert o.dynamic == "range" and o.input_shape == {"x": [-1, 3, 5, -1], "y": [5, -1]}
    assert o.ranges == {("x", 0): (8, 20), ("x", 3): (1, -1), ("y", 1): (3, 9)}
    o = flags.parse(BASE + ["--input_shape=x:4~-1,3"])
    assert o.ranges == {("x", 0): (4, -1)}


def test_range_refusals():
    refused(
        BASE + ["--input_shape=x:8~2,3"],
        "E10001: Value [x:8~2,3] for parameter [--input_shape] is invalid. Reason: input 'x' dimension 0 "
        "(8~2): the low end 8 is above the high end 2",
    )
    refused(BASE + ["--input_shape=x:0~4,3"], "input 'x' dimension 0 (0~4): the low end is 0; expected >= 1")
    refused(BASE + ["--input_shape=x:1~a,3"], "'a' is not an integer")
    refused(BASE + ["--input_shape=x:1~2000000"], "a range end above 1048576")
    refused(
        BASE + ["--input_shape=x:1~4,-1", "--dynamic_dims=1;2", "--input_format=ND"],
        "--input_shape gives a shape range ('x' dimension 0: 1~4) and --dynamic_dims gives profiles: shape "
        "ranges and profiles are mutually exclusive",
    )
    refused(
        BASE + ["--input_shape_range=x:[1~4,3]", "--dynamic_batch_size=1,2"],
        "--dynamic_batch_size and --input_shape_range are mutually exclusive",
    )
    refused(
        BASE + ["--input_shape_range=x:[1~4,3]", "--input_shape=x:1,3"],
        "--input_shape_range and --input_shape both give the input shapes",
    )
    refused(
        BASE + ["--input_shape_range=x:1~4,3"],
        "Reason: input 'x': the shape must be in brackets, [d,d,...], got '1~4,3'",
    )


@pytest.fixture(scope="module")
def yolo_range(nets, tmp_path_factory):
    """yolo (stride-2 and stride-4 outputs) with H in 16~64 and W unbounded from 16."""
    d = tmp_path_factory.mktemp("range")
    return onnx_nets.convert(nets["yolo"], d / "yr", "--input_shape=img:1,3,16~64,16~-1")


def test_the_file_records_the_ranges(yolo_range):
    with open(yolo_range, "rb") as f:
        info = om_file.describe(f.read())
    assert info["dynamic"] == "range" and info["gears"] == []
    assert info["inputs"] == [
        {
            "name": "img",
            "dtype": "float32",
            "format": "NCHW",
            "dims": [1, 3, -1, -1],
            "ranges": [None, None, [16, 64], [16, -1]],
        }
    ]
    assert [(o["name"], o["dims"]) for o in info["outputs"]] == [
        ("feat", [1, 8, -1, -1]),
        ("boxes", [1, 4, -1, -1]),
    ]
    assert info["shape_ranges"] == [[16, 64], [16, -1]]
    assert info["device_time_us"][0] > 0


def test_mode_1_dumps_the_ranges(yolo_range, tmp_path):
    out = tmp_path / "d.json"
    assert atc.main(["--mode=1", f"--om={yolo_range}", f"--json={out}"]) == 0
    assert json.loads(out.read_text())["shape_ranges"] == [[16, 64], [16, -1]]


def test_descriptor_reports_minus_one_ranges_and_zero_sizes(lib, yolo_range):
    with _loaded(lib, yolo_range) as m:
        assert m.gears == [] and len(m.inputs) == 1  # no ascend_mbatch_shape_data input
        assert m.inputs[0]["dims"] == (1, 3, -1, -1) and m.inputs[0]["size"] == 0
        assert [(o["dims"], o["size"]) for o in m.outputs] == [((1, 8, -1, -1), 0), ((1, 4, -1, -1), 0)]
        r = mdl.IODimsRange()
        mdl.check(lib, lib.aclmdlGetInputDimsRange(m.desc, 0, ctypes.byref(r)), "aclmdlGetInputDimsRange")
        assert [tuple(r.range[k]) for k in range(r.rangeCount)] == [(1, 1), (3, 3), (16, 64), (16, -1)]


@contextlib.contextmanager
def _loaded(lib, path):
    """The model file at ``path`` loaded through aclmdlLoadFromMem, unloaded after."""
    with open(path, "rb") as f:
        m = mdl.load_bytes(lib, f.read())
    try:
        yield m
    finally:
        m.close()


@contextlib.contextmanager
def _buffers(lib, m, img, out_sizes):
    """Datasets for one execution of ``m`` on ``img`` (its shape described), ``out_sizes`` output bytes."""
    bufs = mdl.Buffers(m, in_sizes=[img.nbytes], out_sizes=out_sizes)
    try:
        bufs.describe_inputs({0: img.shape})
        bufs.feed({"img": img})
        yield bufs
    finally:
        bufs.close()


def _check_yolo_run(lib, nets, m, img, execute):
    """``execute(bufs)`` runs ``img`` through the yolo range model ``m``: the output descriptions
    then hold the stride-2 and stride-4 shapes, and the outputs equal ONNX Runtime's."""
    h, w = img.shape[2:]
    with _buffers(lib, m, img, [8 * h * w * 4, 4 * h * w * 4]) as bufs:
        execute(bufs)
        shapes = {"feat": bufs.output_shape(0), "boxes": bufs.output_shape(1)}
        assert shapes == {"feat": (1, 8, h // 2, w // 2), "boxes": (1, 4, h // 4, w // 4)}
        got = bufs.fetch(shapes=shapes)
    want = onnx_nets.ort_run(nets["yolo"], {"img": img})
    for k in want:
        np.testing.assert_allclose(got[k], want[k], **F32, err_msg=k)


def test_aclmdl_execute_reports_the_output_shapes(lib, nets, yolo_range):
    rng = np.random.default_rng(5)
    with _loaded(lib, yolo_range) as m:
        for h, w in ((16, 16), (40, 100)):
            img = rng.standard_normal((1, 3, h, w)).astype(np.float32)
            _check_yolo_run(lib, nets, m, img, lambda bufs: bufs.execute())


def test_a_too_small_output_buffer_fails_clearly(lib, yolo_range):
    img = np.zeros((1, 3, 32, 32), np.float32)
    with _loaded(lib, yolo_range) as m:
        need = 8 * 16 * 16 * 4
        with _buffers(lib, m, img, [need - 4, 4 * 8 * 8 * 4]) as bufs:
            assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_GE_FAILURE
            assert (
                f"output 0 ('feat'): the output buffer holds {need - 4} bytes, the execution produced "
                f"(1,8,16,16) = {need} bytes" in simlib.recent_error(lib)
            )
        # the model stays usable: the exact size works
        with _buffers(lib, m, img, [need, 4 * 8 * 8 * 4]) as bufs:
            bufs.execute()
            assert bufs.output_shape(0) == (1, 8, 16, 16)


def test_a_shape_outside_the_range_is_refused_by_the_simulator(lib, yolo_range):
    img = np.zeros((1, 3, 72, 16), np.float32)
    with _loaded(lib, yolo_range) as m, _buffers(lib, m, img, [1 << 16, 1 << 16]) as bufs:
        assert lib.aclmdlExecute(m.id, bufs.input, bufs.output) == acl.ACL_ERROR_INVALID_PARAM
        assert (
            "input 0 ('img'): dimension 2 of the tensor description (1, 3, 72, 16) is 72, outside the "
            "model's range 16~64" in simlib.recent_error(lib)
        )


def test_model_call_equals_onnx_runtime_within_the_range(nets, yolo_range):
    rng = np.random.default_rng(9)
    with ae.Model.load(yolo_range) as m:
        assert m.dynamic_kind == "range"
        assert m.shape_ranges == {"img": ((1, 1), (3, 3), (16, 64), (16, -1))}
        for h, w in ((16, 16), (20, 28), (64, 100), (48, 256)):
            img = rng.standard_normal((1, 3, h, w)).astype(np.float32)
            got = m(img=img)
            want = onnx_nets.ort_run(nets["yolo"], {"img": img})
            assert {k: v.shape for k, v in got.items()} == {k: v.shape for k, v in want.items()}
            for k in want:
                np.testing.assert_allclose(got[k], want[k], **F32, err_msg=k)
        with pytest.raises(ValueError, match="dimension 2 is 70, outside the model's range 16..64"):
            m(img=np.zeros((1, 3, 70, 16), np.float32))
        with pytest.raises(ValueError, match="dimension 3 is 8, outside the model's range 16..any"):
            m(img=np.zeros((1, 3, 16, 8), np.float32))


def test_batch_and_two_inputs_with_ranges(nets, tmp_path):
    """crnn: seq and mask share no symbol in ATC's ranges; each -1 is its own dimension."""
    om = onnx_nets.convert(
        nets["crnn"],
        tmp_path / "cr",
        "--input_format=ND",
        '--input_shape_range="seq:[1,2~40,32];mask:[1,2~40]"',
    )
    rng = np.random.default_rng(3)
    with ae.Model.load(om) as m:
        assert m.shape_ranges == {"seq": ((1, 1), (2, 40), (32, 32)), "mask": ((1, 1), (2, 40))}
        assert [o.shape for o in m.outputs] == [(1, -1, 12), (1, 12)]
        assert [o.nbytes for o in m.outputs] == [0, 48]  # open dims: 0; fixed dims: the exact bytes
        for t in (2, 7, 40):
            feeds = {
                "seq": rng.standard_normal((1, t, 32)).astype(np.float32),
                "mask": (rng.random((1, t)) > 0.3).astype(np.float32),
            }
            got = m(**feeds)
            want = onnx_nets.ort_run(nets["crnn"], feeds)
            for k in want:
                assert got[k].shape == want[k].shape, k
                np.testing.assert_allclose(got[k], want[k], **F32, err_msg=k)


def test_resnet_with_an_unbounded_batch_and_its_device_time(nets, tmp_path):
    om = onnx_nets.convert(nets["resnet"], tmp_path / "rr", "--input_shape=x:-1,3,16,16")
    with open(om, "rb") as f:
        info = om_file.describe(f.read())
    assert info["shape_ranges"] == [[1, -1]] and info["outputs"][0]["dims"] == [-1, 10]
    assert info["device_time_per_item_us"] > 0  # the batch dimension scales the modelled time
    rng = np.random.default_rng(1)
    with ae.Model.load(om) as m:
        for n in (1, 3, 17):
            x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32)
            got = m(x=x)["probs"]
            np.testing.assert_allclose(got, onnx_nets.ort_run(nets["resnet"], {"x": x})["probs"], **F32)


def test_a_pipeline_refuses_a_converted_range_model_by_name(tmp_path, nets):
    """ae's pipelines take gear models only; a converted range model is refused at compile, clearly."""
    om = onnx_nets.convert(nets["resnet"], tmp_path / "rp", "--input_shape=x:-1,3,16,16")
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 3, 16, 16))
    pipe.output("probs", pipe.model(om, x, name="r"))
    with pytest.raises(
        PipelineError, match="model node 'r': the model has shape ranges; pipelines take static"
    ):
        pipe.compile(depth=1)


def test_execute_async_reports_the_shapes_once_the_stream_is_synchronized(lib, nets, yolo_range):
    """The worker writes each output's shape into the output dataset's description when the run ends."""
    s = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(s)), "aclrtCreateStream")

    def execute_async(bufs):
        bufs.execute(s.value)
        mdl.check(lib, lib.aclrtSynchronizeStream(s.value), "aclrtSynchronizeStream")

    rng = np.random.default_rng(8)
    try:
        with _loaded(lib, yolo_range) as m:
            for h, w in ((24, 40), (64, 16)):
                img = rng.standard_normal((1, 3, h, w)).astype(np.float32)
                _check_yolo_run(lib, nets, m, img, execute_async)
    finally:
        lib.aclrtDestroyStream(s.value)


def test_input_shape_range_names_its_own_flag_in_model_errors(nets, tmp_path):
    with pytest.raises(AtcError) as exc:
        onnx_nets.convert(nets["resnet"], tmp_path / "bad", "--input_shape_range=y:[1~4,3,16,16]")
    assert str(exc.value) == (
        "E10001: Value [y:[1~4,3,16,16]] for parameter [--input_shape_range] is invalid. Reason: the model "
        "has no input 'y'; its inputs: x"
    )
    with pytest.raises(
        AtcError,
        match=r"Value \[x:\[1~4,3,16,8\]\] for parameter \[--input_shape_range\] is "
        "invalid. Reason: input 'x' dimension 3 is fixed to 16 in the ONNX graph, got 8",
    ):
        onnx_nets.convert(nets["resnet"], tmp_path / "bad2", "--input_shape_range=x:[1~4,3,16,8]")


def test_compute_skip_reports_open_dimensions_as_zero(yolo_range):
    out = simlib.run_python(
        f"""
        import numpy as np, ascend_engine as ae
        with ae.Model.load({str(yolo_range)!r}) as m:
            got = m(img=np.ones((1, 3, 32, 32), np.float32))
        print("SHAPES", got["feat"].shape, got["boxes"].shape)
        """,
        env={"ASCEND_SIM_COMPUTE": "skip"},
    )
    assert out.returncode == 0, out.stderr
    assert "SHAPES (1, 8, 0, 0) (1, 4, 0, 0)" in out.stdout


def test_bench_and_trace_run_a_converted_range_model_at_the_given_shapes(yolo_range, tmp_path):
    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "ascend_engine", *args], capture_output=True, text=True, timeout=120
        )

    refused = cli("bench", str(yolo_range), "--requests", "4")
    assert refused.returncode == 2
    assert "has shape ranges (img: [1, 3, 16..64, 16..any]): choose the shapes to run with --shapes" in (
        refused.stderr
    )
    bench = cli("bench", str(yolo_range), "--requests", "8", "--shapes", "img:1,3,32,48")
    assert bench.returncode == 0, bench.stderr
    assert "model yr" in bench.stdout
    trace = cli(
        "trace",
        str(yolo_range),
        "--requests",
        "3",
        "--shapes",
        "img:1,3,32,48",
        "--out",
        str(tmp_path / "t.json"),
    )
    assert trace.returncode == 0, trace.stderr
    assert "gears     : shape ranges img: [1, 3, 16..64, 16..any]" in trace.stdout
    assert "(3 requests at img:1,3,32,48" in trace.stdout
    assert json.loads((tmp_path / "t.json").read_text())
