"""The toolkit folder's `atc`: on PATH after `source env.sh`, so a conversion script runs unchanged."""

import os
import shutil
import subprocess

import pytest

onnx_nets = pytest.importorskip("helpers.onnx_nets", reason="sim atc needs onnx and onnxruntime")


def test_atc_on_path_converts_and_the_model_runs(toolkit_dir, toolkit_env, tmp_path):
    atc = shutil.which("atc", path=toolkit_env["PATH"])
    assert atc == os.path.join(toolkit_dir, "compiler", "bin", "atc")
    assert toolkit_env["ASCEND_SIM_ORT_LIB"].split("/")[-1].startswith("libonnxruntime.so")
    src = onnx_nets.save(onnx_nets.resnet(), tmp_path, "resnet")
    script = (
        f"atc --model={src} --framework=5 --output={tmp_path / 'r'} --soc_version=Ascend310P3 "
        "--input_shape=x:-1,3,16,16 --dynamic_batch_size=1,2"
    )
    out = subprocess.run(["bash", "-c", script], env=toolkit_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ATC run success, welcome to the next use."
    out = subprocess.run(
        ["bash", "-c", "atc --framework=3"], env=toolkit_env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1 and "ATC run failed" in out.stderr and "[--model] is invalid" in out.stderr
    assert (tmp_path / "r.om").stat().st_size > 0
