"""sim atc's command line: ATC's flags, spelling and rules, each refusal with its message."""

import json

import pytest
from helpers import onnx_nets

from ascend_engine.errors import AtcError
from ascend_engine.sim import atc
from ascend_engine.sim.atc import flags

BASE = ["--model=m.onnx", "--framework=5", "--output=out", "--soc_version=Ascend310P3"]


def refused(argv, message):
    with pytest.raises(AtcError) as exc:
        flags.parse(argv)
    assert message in str(exc.value)
    return str(exc.value)


def test_a_plain_conversion_parses():
    o = flags.parse(BASE + ["--input_shape=x:1,3,224,224", "--log=info"])
    assert (o.model, o.output, o.soc_version, o.input_format, o.log) == (
        "m.onnx",
        "out",
        "Ascend310P3",
        "NCHW",
        "info",
    )
    assert o.input_shape == {"x": [1, 3, 224, 224]} and o.dynamic == "static"


def test_space_separated_values_parse_like_equals():
    o = flags.parse(["--model", "m.onnx", "--framework", "5", "--output", "o", "--soc_version", "Ascend310"])
    assert (o.model, o.output, o.soc_version) == ("m.onnx", "o", "Ascend310")


@pytest.mark.parametrize("missing", ["model", "framework", "output", "soc_version"])
def test_required_flags(missing):
    argv = [a for a in BASE if not a.startswith(f"--{missing}=")]
    refused(argv, f"for parameter [--{missing}] is invalid. Reason: --{missing} is required")


def test_unknown_flags_are_refused_not_ignored():
    msg = refused(BASE + ["--weight=w.bin"], "E10001: unknown option [--weight]")
    assert "--dynamic_batch_size" in msg  # lists what is accepted
    refused(BASE + ["stray"], "unexpected argument [stray]")
    refused(BASE + ["--log=info", "--log=debug"], "--log is given twice")
    refused(BASE + ["--input_shape"], "[--input_shape] is invalid. Reason: the option needs a value")


@pytest.mark.parametrize("fw,name", [("0", "Caffe"), ("1", "MindSpore"), ("3", "TensorFlow")])
def test_other_frameworks_are_refused(fw, name):
    argv = [a for a in BASE if not a.startswith("--framework")] + [f"--framework={fw}"]
    refused(
        argv,
        f"Value [{fw}] for parameter [--framework] is invalid. Reason: the simulator converts ONNX "
        f"models only (--framework=5), not {name}",
    )
    refused(
        [a for a in BASE if not a.startswith("--framework")] + ["--framework=7"],
        "expected 0 (Caffe), 1 (MindSpore), 3 (TensorFlow) or 5 (ONNX)",
    )


def test_dynamic_batch_rules():
    o = flags.parse(BASE + ["--input_shape=x:-1,3,8,8", "--dynamic_batch_size=1,2,4,8"])
    assert (o.dynamic, o.profiles) == ("batch", [[1], [2], [4], [8]])
    refused(
        BASE + ["--input_shape=x:1,-1,8,8", "--dynamic_batch_size=1,2"],
        "the batch must be the first dimension; -1 at x[1] (use --dynamic_dims for other dimensions)",
    )
    refused(BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=4"], "1 profile(s); ATC takes 2 to 100")
    refused(
        BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=" + ",".join(map(str, range(1, 102)))],
        "101 profile(s); ATC takes 2 to 100",
    )
    refused(BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=1,0"], "0 is below 1")
    refused(BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=2,2"], "a profile is given twice")
    refused(BASE + ["--input_shape=x:2,3", "--dynamic_batch_size=1,2"], "--input_shape has no -1 dimension")
    refused(BASE + ["--dynamic_batch_size=1,2"], "--dynamic_batch_size needs --input_shape with -1")


def test_dynamic_image_size_rules():
    o = flags.parse(BASE + ["--input_shape=img:1,3,-1,-1", "--dynamic_image_size=32,32;64,48"])
    assert (o.dynamic, o.profiles) == ("hw", [[32, 32], [64, 48]])
    o = flags.parse(
        BASE + ["--input_format=NHWC", "--input_shape=img:1,-1,-1,3", "--dynamic_image_size=8,8;16,16"]
    )
    assert o.dynamic == "hw"
    refused(
        BASE + ["--input_shape=img:1,-1,-1,3", "--dynamic_image_size=8,8;16,16"],
        "input 'img': -1 must be exactly H and W of a 4-dimensional NCHW shape (dimensions 2 and 3)",
    )
    refused(
        BASE + ["--input_shape=img:1,3,-1,-1", "--dynamic_image_size=8,8,8;16,16,16"],
        "profile 8,8,8 has 3 value(s), --input_shape has 2 -1 dimension(s) to fill",
    )
    refused(
        BASE + ["--input_format=ND", "--input_shape=img:1,3,-1,-1", "--dynamic_image_size=8,8;16,16"],
        "--dynamic_image_size needs --input_format NCHW or NHWC, got ND",
    )


def test_dynamic_dims_rules():
    o = flags.parse(
        BASE + ["--input_format=ND", "--input_shape=seq:1,-1,32;mask:1,-1", "--dynamic_dims=4,4;8,8"]
    )
    assert (o.dynamic, o.profiles) == ("dims", [[4, 4], [8, 8]])
    refused(
        BASE + ["--input_shape=seq:1,-1", "--dynamic_dims=4;8"],
        "--dynamic_dims needs --input_format=ND, got NCHW",
    )
    refused(
        BASE + ["--input_format=ND", "--input_shape=seq:1,-1,-1", "--dynamic_dims=4;8"],
        "profile 4 has 1 value(s), --input_shape has 2 -1 dimension(s) to fill",
    )


def test_one_dynamic_mechanism_and_every_minus_one_covered():
    refused(
        BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=1,2", "--dynamic_dims=1;2"],
        "--dynamic_batch_size and --dynamic_dims are mutually exclusive: choose one dynamic mechanism",
    )
    refused(BASE + ["--input_shape=x:1,0"], "input 'x': dimension 0; expected >= 1, -1 or lo~hi")
    refused(BASE + ["--input_shape=x1,3"], "'x1,3' is not name:d,d,...")


def test_unsupported_features_are_refused_clearly():
    # the file is read with the model (tests/atc/test_aipp.py)
    assert flags.parse(BASE + ["--insert_op_conf=aipp.cfg"]).insert_op_conf == "aipp.cfg"
    refused(BASE + ["--insert_op_conf="], "expected the path of an AIPP configuration file")
    refused(BASE + ["--mode=3"], "the simulator supports 0 (convert) and 1 (model to JSON)")


def test_value_lists():
    o = flags.parse(BASE + ["--output_type=FP16", "--out_nodes=softmax:0;gemm:0"])
    assert o.output_type == "float16" and o.out_nodes == [("softmax", 0), ("gemm", 0)]
    o = flags.parse(BASE + ["--output_type=softmax:0:UINT8"])
    assert o.output_type == {("softmax", 0): "uint8"}
    refused(BASE + ["--output_type=INT8"], "expected FP32, FP16 or UINT8")
    refused(BASE + ["--out_nodes=softmax"], "expected node:index;..., got 'softmax'")
    refused(BASE + ["--log=loud"], "expected one of debug, info, warning, error, null")
    refused(BASE + ["--input_format=NC1HWC0"], "expected one of NCHW, NHWC, ND")
    refused(BASE + ["--precision_mode=fast"], "expected one of force_fp16")
    o = flags.parse(BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=1,2", "--sim_latency_us=100,250"])
    assert o.latency_us == [100.0, 250.0]
    refused(
        BASE + ["--input_shape=x:-1,3", "--dynamic_batch_size=1,2", "--sim_latency_us=1,2,3"],
        "3 values: give one, or one per profile (2)",
    )
    refused(BASE + ["--sim_latency_us=-5"], "each value must be within 0..6e7 microseconds")


def test_mode_1_flags():
    o = flags.parse(["--mode=1", "--om=a.om", "--json=a.json"])
    assert (o.mode, o.om, o.json) == (1, "a.om", "a.json")
    refused(["--mode=1", "--om=a.om"], "--mode=1 needs --json")
    refused(
        ["--mode=1", "--om=a.om", "--json=a.json", "--model=m.onnx"], "--mode=1 takes --om and --json only"
    )
    refused(BASE + ["--om=a.om"], "--om belongs to --mode=1")


def test_unknown_soc_is_refused(nets, tmp_path):
    with pytest.raises(
        AtcError, match=r"\[--soc_version\] is invalid. Reason: the simulator models Ascend310, "
    ):
        onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:1,3,16,16", soc="Ascend999")


def test_main_prints_atc_verdicts(nets, tmp_path, capsys):
    rc = atc.main(
        [
            f"--model={nets['resnet']}",
            "--framework=5",
            f"--output={tmp_path / 'r'}",
            "--soc_version=Ascend310P3",
            "--input_shape=x:-1,3,16,16",
            "--dynamic_batch_size=1,4",
            "--precision_mode=force_fp16",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0 and out.out.strip() == atc.SUCCESS and (tmp_path / "r.om").exists()
    assert "--precision_mode=force_fp16: the simulator computes in the ONNX graph's dtypes" in out.err
    assert atc.main([a for a in BASE if not a.startswith("--framework")] + ["--framework=3"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(atc.FAILURE) and "not TensorFlow" in err
    assert atc.main(["--help"]) == 0 and "--dynamic_image_size" in capsys.readouterr().out
    assert atc.main(["--mode=1", f"--om={tmp_path / 'r.om'}", f"--json={tmp_path / 'r.json'}"]) == 0
    desc = json.loads((tmp_path / "r.json").read_text())
    assert desc["dynamic"] == "batch" and desc["gears"] == [[1], [4]]
    assert desc["inputs"] == [{"name": "x", "dtype": "float32", "format": "NCHW", "dims": [-1, 3, 16, 16]}]
    assert desc["outputs"][0]["gear_dims"] == [[1, 10], [4, 10]]
    assert "--dynamic_batch_size=1,4" in desc["command"] and len(desc["device_time_us"]) == 2
    assert atc.main(["--mode=1", f"--om={nets['resnet']}", f"--json={tmp_path / 'x.json'}"]) == 1
    assert "not a model converted by sim atc" in capsys.readouterr().err
