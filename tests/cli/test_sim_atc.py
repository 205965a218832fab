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
