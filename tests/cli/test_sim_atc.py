"""`ascend-engine sim atc` hands every argument to the ATC stand-in, ATC's flags included."""

import pytest

from ascend_engine import cli

onnx_nets = pytest.importorskip("helpers.onnx_nets", reason="sim atc needs onnx and onnxruntime")


def test_sim_atc_converts(tmp_path, capsys):
    src = onnx_nets.save(onnx_nets.resnet(), tmp_path, "resnet")
    rc = cli.main(
        [
            "sim",
            "atc",
            f"--model={src}",
            "--framework=5",
            f"--output={tmp_path / 'r'}",
            "--soc_version=Ascend310",
            "--input_shape=x:1,3,16,16",
        ]
    )
    assert rc == 0 and capsys.readouterr().out.strip() == "ATC run success, welcome to the next use."
    assert (tmp_path / "r.om").exists()


def test_sim_atc_help_and_refusals_are_atcs(capsys):
    assert cli.main(["sim", "atc", "--help"]) == 0
    assert "--dynamic_batch_size" in capsys.readouterr().out
    assert cli.main(["sim", "atc", "--model=x.onnx", "--bogus=1"]) == 1
    assert "E10001: unknown option [--bogus]" in capsys.readouterr().err


SPEC = """\
device: 0
inputs:
  img: {dtype: float32, shape: [1, 3, -1, -1]}
models:
  - {name: det, path: det.om, inputs: [img]}
  - {name: cls, path: cls.om, inputs: [det.feat]}
outputs:
  boxes: det.boxes
  probs: cls
compile:
  depth: 2
"""


def test_spec_bench_and_trace_run_converted_models(tmp_path, capsys):
    """A spec chaining a dynamic-image-size detector into a dynamic-dims classifier, both converted."""
    import json

    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    det = onnx_nets.save(onnx_nets.yolo(), tmp_path, "yolo")
    onnx_nets.convert(
        det, tmp_path / "det", "--input_shape=img:1,3,-1,-1", "--dynamic_image_size=16,16;32,32"
    )
    g = h.make_graph(
        [
            h.make_node("ReduceMean", ["feat"], ["pooled"], axes=[2, 3], keepdims=0),
            h.make_node("Softmax", ["pooled"], ["probs"], axis=1),
        ],
        "cls",
        [h.make_tensor_value_info("feat", T.FLOAT, [1, 8, "h", "w"])],
        [h.make_tensor_value_info("probs", T.FLOAT, [1, 8])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "cls.onnx"))
    onnx_nets.convert(
        str(tmp_path / "cls.onnx"),
        tmp_path / "cls",
        "--input_format=ND",
        "--input_shape=feat:1,8,-1,-1",
        "--dynamic_dims=8,8;16,16",
    )
    (tmp_path / "spec.yaml").write_text(SPEC)
    capsys.readouterr()
    assert (
        cli.main(
            [
                "bench",
                str(tmp_path / "spec.yaml"),
                "--shapes",
                "img:1,3,32,32",
                "--requests",
                "20",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "throughput:" in out and "model det" in out and "model cls" in out
    assert (
        cli.main(
            [
                "trace",
                str(tmp_path / "spec.yaml"),
                "--shapes",
                "img:1,3,16,16",
                "--requests",
                "3",
                "--out",
                str(tmp_path / "t.json"),
            ]
        )
        == 0
    )
    events = json.loads((tmp_path / "t.json").read_text())
    names = {e.get("name", "") for e in (events["traceEvents"] if isinstance(events, dict) else events)}
    assert any("det" in n for n in names) and any("cls" in n for n in names)
