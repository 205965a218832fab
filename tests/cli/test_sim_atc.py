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


def test_bench_says_which_clock_bound_a_converted_model_and_its_soc(tmp_path, capsys):
    """bench reported ONNX Runtime's CPU time as a converted model's device time, called the run
    "device-bound", and named Ascend910B-sim whatever --soc_version the model was made for."""
    import json

    src = onnx_nets.save(onnx_nets.resnet(batch=1), tmp_path, "resnet")
    # 40 ms modelled is far above what this small network computes in; 1 us far below it
    onnx_nets.convert(src, tmp_path / "slow", "--input_shape=x:1,3,16,16", "--sim_latency_us=40000",
                      soc="Ascend310B1")
    onnx_nets.convert(src, tmp_path / "fast", "--input_shape=x:1,3,16,16", "--sim_latency_us=1")
    runs = {}
    for name in ("slow", "fast"):
        capsys.readouterr()
        js = tmp_path / f"{name}.json"
        assert cli.main(["bench", str(tmp_path / f"{name}.om"), "--profile", "--requests", "4", "--warmup",
                         "1", "--no-progress", "--json", str(js)]) == 0
        runs[name] = (capsys.readouterr().out, json.loads(js.read_text()))
    out, fig = runs["slow"]
    [c] = fig["clocks"].values()
    assert c["soc"] == "Ascend310B1" and c["modelled_ms"] == [40.0] and c["bound"] == "modelled"
    assert c["measured_ms"] >= 40.0           # the execution holds its stream for the modelled time
    assert ("(models converted by sim atc for Ascend310B1; the simulated device is Ascend910B-sim)"
            in out.splitlines()[0])
    assert (f"clock     : model slow: {c['measured_ms']:.3f} ms per execution (p50) is the device time "
            "modelled for Ascend310B1 (40.000 ms); ONNX Runtime's compute on this CPU took less") in out
    out, fig = runs["fast"]
    [c] = fig["clocks"].values()
    assert c["soc"] == "Ascend310P3" and c["modelled_ms"] == [0.001] and c["bound"] == "cpu"
    assert (f"clock     : model fast: {c['measured_ms']:.3f} ms per execution (p50) is ONNX Runtime's real "
            "compute on this CPU, not Ascend310P3's: its modelled device time is 0.001 ms") in out
    bound = next(ln for ln in out.splitlines() if ln.startswith("bound     : "))
    assert "device-bound" not in bound
    if not fig["breakdown"]["host_bound"]:
        assert bound.startswith("bound     : bound by this CPU's compute: ")
        assert bound.endswith(", ONNX Runtime's real compute, longer than its modelled device time")


def test_models_not_converted_by_sim_atc_have_no_clock_line(tmp_path, capsys):
    from ascend_engine import sim
    from ascend_engine.bench import clocks

    g = sim.Graph("plain")
    g.output("y", g.relu(g.input("x", "float32", (1, 4))))
    g.save(str(tmp_path / "plain.om"), latency_us=100)
    assert clocks.converted(str(tmp_path / "plain.om")) is None
    assert clocks.converted(str(tmp_path / "missing.om")) is None
    capsys.readouterr()
    argv = ["bench", str(tmp_path / "plain.om"), "--profile", "--requests", "2", "--no-progress"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "clock     :" not in out and "(Ascend910B-sim)" in out.splitlines()[0]
