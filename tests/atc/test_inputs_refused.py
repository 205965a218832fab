"""sim atc and what it reads and writes: weights held as ONNX external data travel inside the
.om, files are read with a bound, and bad values are E10001 refusals naming their flag."""

import os

import numpy as np
import onnx
import pytest
from helpers import onnx_nets
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import ascend_engine as ae
from ascend_engine.errors import AtcError
from ascend_engine.sim import atc
from ascend_engine.sim.atc import convert as atc_convert


def weighted(weights, name="x"):
    """y = x @ W, W (4, 3) float32: a model whose weights matter."""
    g = h.make_graph([h.make_node("MatMul", [name, "W"], ["y"])], "net",
                     [h.make_tensor_value_info(name, T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 3])], [nh.from_array(weights, "W")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", onnx_nets.OPSET)])
    m.ir_version = 8
    return m


def save_external(model, folder):
    """``folder/net.onnx`` with its weights in ``folder/weights.bin`` (as exporters write large models)."""
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(folder / "net.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert os.path.getsize(folder / "weights.bin") == 48
    return str(folder / "net.onnx")


def test_external_weights_are_carried_in_the_om(tmp_path, monkeypatch):
    """Converted from another folder, then loaded from a folder holding another weights.bin
    of the same size: the model computes with its own weights."""
    mine = np.arange(12, dtype=np.float32).reshape(4, 3)
    path = save_external(weighted(mine), tmp_path / "export")
    elsewhere = tmp_path / "elsewhere"
    save_external(weighted(-mine), elsewhere)            # another weights.bin, the same size
    monkeypatch.chdir(elsewhere)
    om = onnx_nets.convert(path, "net")                  # written here, beside the other weights.bin
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    with ae.Model.load(om) as m:
        np.testing.assert_allclose(m(x=x)["y"], x @ mine, rtol=1e-6)


@pytest.mark.parametrize("case,why", [
    ("missing", "cannot be read: cannot read the file: No such file or directory"),
    ("outside", "lie outside the model's folder: external data is named relative to it"),
    ("short", "hold 48 bytes, not the 0 + 96 the model says"),
])
def test_external_weights_that_are_missing_outside_or_short_are_refused(tmp_path, case, why):
    path = save_external(weighted(np.ones((4, 3), np.float32)), tmp_path / "a")
    model = onnx.load_model(path, load_external_data=False)
    entries = {e.key: e for e in model.graph.initializer[0].external_data}
    if case == "missing":
        os.remove(tmp_path / "a" / "weights.bin")
    elif case == "outside":
        os.rename(tmp_path / "a" / "weights.bin", tmp_path / "weights.bin")
        entries["location"].value = "../weights.bin"
    else:
        entries["length"].value = "96"
    onnx.save_model(model, path)
    with pytest.raises(AtcError) as refused:
        onnx_nets.convert(path, tmp_path / "out")
    text = str(refused.value)
    assert text.startswith(f"E10001: Value [{path}] for parameter [--model] is invalid. Reason: its external "
                           f"weights "), text
    assert "(tensor 'W')" in text and why in text, text


@pytest.mark.parametrize("flag", ["model", "insert_op_conf"])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_file_that_is_not_regular_is_refused(nets, tmp_path, flag, kind):
    """/dev/zero is never read (it has no end), a FIFO with no writer never waited on."""
    special = "/dev/zero"
    if kind == "fifo":
        special = str(tmp_path / "fifo")
        os.mkfifo(special)
    model = special if flag == "model" else nets["resnet"]
    extra = [f"--insert_op_conf={special}"] if flag == "insert_op_conf" else []
    with pytest.raises(AtcError) as refused:
        onnx_nets.convert(model, tmp_path / "out", "--input_shape=x:1,3,16,16", *extra)
    assert str(refused.value).startswith(f"E10001: Value [{special}] for parameter [--{flag}] is invalid. "
                                         "Reason: not a regular file")


@pytest.mark.parametrize("flag", ["model", "insert_op_conf"])
def test_a_file_above_the_size_bound_is_refused(nets, tmp_path, monkeypatch, flag):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(4096)                       # sparse: the size is what matters
    bound = {"model": "MAX_MODEL_BYTES", "insert_op_conf": "MAX_CONF_BYTES"}[flag]
    monkeypatch.setattr(atc_convert if flag == "model" else atc_convert.aipp_config, bound, 1024)
    model = str(big) if flag == "model" else nets["resnet"]
    extra = [f"--insert_op_conf={big}"] if flag == "insert_op_conf" else []
    with pytest.raises(AtcError) as refused:
        onnx_nets.convert(model, tmp_path / "out", "--input_shape=x:1,3,16,16", *extra)
    assert str(refused.value) == (f"E10001: Value [{big}] for parameter [--{flag}] is invalid. Reason: the "
                                  f"file is 4096 bytes; at most 1024 are read")


@pytest.mark.parametrize("shape,why", [
    ("x:9223372036854775808,3,16,16", "dimension 9223372036854775808 is above 9223372036854775807"),
    ("x:4294967296,4294967296,4294967296,3", "input 'x' has more than 9223372036854775807 elements"),
])
def test_an_input_shape_that_overflows_int64_is_refused(nets, tmp_path, shape, why):
    with pytest.raises(AtcError) as refused:
        onnx_nets.convert(nets["resnet"], tmp_path / "out", f"--input_shape={shape}")
    text = str(refused.value)
    assert text.startswith(f"E10001: Value [{shape}] for parameter [--input_shape] is invalid. "), text
    assert why in text


@pytest.mark.parametrize("name,why", [("x\x01y", "a control character"), ("n" * 128, "128 bytes")])
def test_an_input_name_atc_cannot_keep_is_refused(tmp_path, name, why):
    path = onnx_nets.save(weighted(np.ones((4, 3), np.float32), name=name), tmp_path, "net")
    with pytest.raises(AtcError) as refused:
        onnx_nets.convert(path, tmp_path / "out")
    text = str(refused.value)
    assert text.startswith(f"E10001: Value [{path}] for parameter [--model] is invalid. Reason: input ")
    assert why in text and "1 to 127 bytes of text without control characters" in text


def test_an_unwritable_output_is_refused_naming_it(nets, tmp_path):
    out = tmp_path / "no such folder" / "net"
    with pytest.raises(AtcError) as refused:
        onnx_nets.convert(nets["resnet"], out, "--input_shape=x:1,3,16,16")
    text = str(refused.value)
    assert text.startswith(f"E10001: Value [{out}] for parameter [--output] is invalid. Reason: cannot write "
                           f"{out}.om: ")
    assert ".tmp" not in text
    assert not os.listdir(tmp_path)


def test_atc_main_reports_them_as_atc_does(tmp_path, capsys):
    assert atc.main(["--model=/dev/zero", "--framework=5", f"--output={tmp_path / 'o'}",
                     "--soc_version=Ascend310P3"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "parameter [--model]" in err and "not a regular file" in err
