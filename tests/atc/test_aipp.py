"""``sim atc --insert_op_conf``: ATC's AIPP configuration file, its rules, and
the converted model running a uint8 image through its AIPP into the ONNX
graph (docs/simulator.md, "Static AIPP")."""

import json
import struct

import numpy as np
import pytest
from helpers import mdl, onnx_nets
from helpers.aipp import nv12, reference

from ascend_engine.errors import AtcError
from ascend_engine.sim import aipp as aipp_settings
from ascend_engine.sim import atc
from ascend_engine.sim.atc import aipp_config, om_file

NV12_CFG = """
# a DVPP output of 20 x 18 into the 16 x 16 network
aipp_op {
    aipp_mode: static
    related_input_rank: 0
    input_format : YUV420SP_U8
    src_image_size_w : 20
    src_image_size_h : 18
    crop: true
    load_start_pos_w: 2  load_start_pos_h: 0   # two fields on one line
    crop_size_w: 16
    crop_size_h: 14
    padding: true
    top_padding_size: 1
    bottom_padding_size: 1
    csc_switch : true
    matrix_r0c0 : 256
    matrix_r0c1 : 0
    matrix_r0c2 : 359
    matrix_r1c0 : 256
    matrix_r1c1 : -88
    matrix_r1c2 : -183
    matrix_r2c0 : 256
    matrix_r2c1 : 454
    matrix_r2c2 : 0
    input_bias_0 : 0
    input_bias_1 : 128
    input_bias_2 : 128
    mean_chn_0: 124
    mean_chn_1: 117
    mean_chn_2: 104
    var_reci_chn_0: 0.0171
    var_reci_chn_1: 0.0175
    var_reci_chn_2: 0.0174
}
"""


def write(tmp_path, text, name="aipp.cfg"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def convert(nets, tmp_path, cfg_text, *flags):
    return onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:1,3,16,16",
                             f"--insert_op_conf={write(tmp_path, cfg_text)}", *flags)


def test_the_file_format(tmp_path):
    blocks = aipp_config.parse(
        "a.cfg",
        'aipp_op { aipp_mode: static input_format: "RGB888_U8" }  # one line\n'
        "aipp_op {\n related_input_rank : 2\n aipp_mode: static\n min_chn_0: 1.5\n var_reci_chn_0: 2 }\n",
    )
    assert blocks == {
        0: {"aipp_mode": "static", "input_format": "RGB888_U8"},
        2: {"related_input_rank": 2, "aipp_mode": "static", "min_chn_0": 1.5, "var_reci_chn_0": 2},
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("aipp_op { aipp_mode: static\n input_formt: RGB888_U8 }",
         "line 2: unknown aipp_op field 'input_formt'"),
        ("aipp_op { aipp_mode: static\naipp_mode: static }",
         "line 2: the parameter aipp_mode can not be configured repeatedly"),
        ("aipp_op { aipp_mode: static\n", "line 1: the aipp_op block opened here is not closed"),
        ("aipp_op { aipp_mode static }", "line 1: expected 'field: value' after 'aipp_mode'"),
        ("aipp { aipp_mode: static }", "line 1: expected 'aipp_op {', got 'aipp'"),
        ("# nothing\n", "the file has no aipp_op block"),
        ("aipp_op { aipp_mode: static }\naipp_op { aipp_mode: static }",
         "two aipp_op blocks for related_input_rank 0"),
    ],
)
def test_malformed_files_are_refused_with_the_line(text, message):
    with pytest.raises(AtcError) as e:
        aipp_config.parse("bad.cfg", text)
    head = "E10001: Value [bad.cfg] for parameter [--insert_op_conf] is invalid. Reason: "
    assert str(e.value).startswith(head)
    assert message in str(e.value)


@pytest.mark.parametrize(
    "change, message",
    [
        (("load_start_pos_w: 2", "load_start_pos_w: 1"),
         "load_start_pos_w and load_start_pos_h must be even for YUV420SP_U8, got (1, 0)"),
        (("src_image_size_w : 20", "src_image_size_w : 17"), "must be even for YUV420SP_U8, got 17 x 18"),
        (("crop_size_w: 16", "crop_size_w: 15"), "the AIPP output is 15 x 16"),
        (("load_start_pos_h: 0", "load_start_pos_h: 6"),
         "the crop window at (2, 6) of 16 x 14 must lie inside the 20 x 18 source image"),
        (("aipp_mode: static", "aipp_mode: dynamic"),
         "bottom_padding_size is a static AIPP field; with aipp_mode dynamic the settings come from"),
        (("related_input_rank: 0", "related_input_rank: 1"), "related_input_rank 1: the model has 1 inputs"),
        (("mean_chn_0: 124", "mean_chn_0: 300"), "mean_chn_0: 300 is outside [0, 255]"),
        (("csc_switch : true", "csc_switch : on"), "csc_switch: expected true or false, got 'on'"),
    ],
)
def test_atc_rules_are_checked_against_the_model(nets, tmp_path, change, message):
    with pytest.raises(AtcError) as e:
        convert(nets, tmp_path, NV12_CFG.replace(*change))
    assert "[--insert_op_conf] is invalid. Reason: " in str(e.value)
    assert message in str(e.value)


def test_a_missing_file_and_the_channel_rule(nets, tmp_path):
    with pytest.raises(AtcError, match=r"cannot read the AIPP configuration file"):
        onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:1,3,16,16",
                          f"--insert_op_conf={tmp_path / 'none.cfg'}")
    with pytest.raises(AtcError, match=r"YUV400_U8 through AIPP gives 1 channel, the model input NCHW "
                                       r"\(1, 3, 16, 16\) has C = 3"):
        convert(nets, tmp_path, "aipp_op { aipp_mode: static input_format: YUV400_U8 }")
    with pytest.raises(AtcError, match=r"AIPP on an input with dynamic dimensions"):
        cfg = write(tmp_path, "aipp_op { aipp_mode: static input_format: RGB888_U8 }")
        onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:-1,3,16,16",
                          "--dynamic_batch_size=1,2", f"--insert_op_conf={cfg}")


def test_the_converted_model_takes_the_image_and_computes_the_network_on_the_aipp_output(
    nets, tmp_path, sim_lib
):
    path = convert(nets, tmp_path, NV12_CFG)
    blob = open(path, "rb").read()
    assert struct.unpack_from("<II", blob, 8) == (4, 208)
    described = om_file.describe(blob)
    assert described["inputs"][0]["aipp"] == {"input_format": "YUV420SP_U8", "src_image_size_w": 20,
                                              "src_image_size_h": 18}
    json.dumps(described)
    rng = np.random.default_rng(7)
    img = nv12(rng, 20, 18)
    model = mdl.load_bytes(sim_lib, blob)
    try:
        assert model.inputs[0]["size"] == 20 * 18 * 3 // 2 and model.inputs[0]["dims"] == (1, 18, 20, 3)
        out = mdl.run_loaded(model, {"x": img})
    finally:
        model.close()
    fields = aipp_config.parse("cfg", NV12_CFG)[0]
    settings = aipp_settings.resolve(fields, "x", (1, 3, 16, 16), "NCHW", "float32")
    want = onnx_nets.ort_run(nets["resnet"], {"x": reference(settings, img)})
    for k in want:
        np.testing.assert_allclose(out[k], want[k], rtol=1e-5, atol=1e-6)


def test_atc_main_writes_the_model_and_mode_1_shows_the_aipp(nets, tmp_path):
    cfg = write(tmp_path, "aipp_op { aipp_mode: static input_format: RGB888_U8 rbuv_swap_switch: true }")
    out = tmp_path / "m"
    rc = atc.main([f"--model={nets['resnet']}", "--framework=5", f"--output={out}",
                   "--soc_version=Ascend310P3", "--input_shape=x:1,3,16,16", f"--insert_op_conf={cfg}"])
    assert rc == 0
    assert atc.main(["--mode=1", f"--om={out}.om", f"--json={tmp_path / 'm.json'}"]) == 0
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["inputs"][0]["aipp"] == {"input_format": "RGB888_U8", "src_image_size_w": 16,
                                        "src_image_size_h": 16}


def test_dynamic_aipp_converts_and_adds_the_parameter_input(nets, tmp_path, sim_lib):
    cfg = "aipp_op {\n aipp_mode: dynamic\n related_input_rank: 0\n max_src_image_size: 752640\n}\n"
    path = convert(nets, tmp_path, cfg)
    blob = open(path, "rb").read()
    aipp = om_file.describe(blob)["inputs"][0]["aipp"]
    assert aipp == {"aipp_mode": "dynamic", "max_src_image_size": 752640}
    model = mdl.load_bytes(sim_lib, blob)
    try:
        assert [(io["name"], io["size"]) for io in model.inputs] == [
            ("x", 752640), ("ascend_dynamic_aipp_data", 64 + 96)]
    finally:
        model.close()
    with pytest.raises(AtcError, match="AIPP on an input with dynamic dimensions"):
        onnx_nets.convert(nets["resnet"], tmp_path / "r2", "--input_shape=x:-1,3,16,16",
                          "--dynamic_batch_size=1,2", f"--insert_op_conf={write(tmp_path, cfg, 'd.cfg')}")
