"""What AscendCL reports of a model converted by sim atc, as a C program sees it.

The descriptor of a real .om converted with the same flags (docs/simulator.md,
"sim atc"): the -1 dimensions, the ascend_mbatch_shape_data input appended
last (int64, one value per dynamic dimension), every size exact at the
largest profile, the profiles through aclmdlGetDynamicBatch /
aclmdlGetDynamicHW, and each output's shape at the current profile.
"""

import ctypes

import numpy as np
import pytest
from helpers import mdl, onnx_nets
from helpers.acl import DYNAMIC_NAME

FLOAT, INT64, NCHW, ND = 0, 9, 0, 2


def load(lib, path):
    with open(path, "rb") as f:
        return mdl.load_bytes(lib, f.read())


@pytest.fixture
def loaded(lib):
    models = []

    def _load(path):
        models.append(load(lib, path))
        return models[-1]

    yield _load
    for m in models:
        m.close()


def test_static_model(nets, tmp_path, loaded):
    m = loaded(onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:2,3,16,16"))
    assert [(i["name"], i["dims"], i["dtype"], i["format"], i["size"]) for i in m.inputs] == [
        ("x", (2, 3, 16, 16), FLOAT, NCHW, 2 * 3 * 16 * 16 * 4)
    ]
    assert [(o["name"], o["dims"], o["format"], o["size"]) for o in m.outputs] == [("probs", (2, 10), ND, 80)]
    assert m.gears == []


def test_dynamic_batch_model(nets, tmp_path, loaded):
    m = loaded(
        onnx_nets.convert(
            nets["resnet"], tmp_path / "r", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,4,8"
        )
    )
    assert m.gears == [1, 2, 4, 8]
    x, dyn = m.inputs
    assert (x["dims"], x["size"]) == ((-1, 3, 16, 16), 8 * 3 * 16 * 16 * 4)  # the largest gear, exact
    assert (dyn["name"], dyn["dtype"], dyn["format"], dyn["dims"], dyn["size"]) == (
        DYNAMIC_NAME,
        INT64,
        ND,
        (1,),
        8,
    )
    assert (m.outputs[0]["dims"], m.outputs[0]["size"]) == ((-1, 10), 8 * 10 * 4)


def test_dynamic_image_size_model(lib, nets, tmp_path, loaded):
    m = loaded(
        onnx_nets.convert(
            nets["yolo"],
            tmp_path / "y",
            "--input_shape=img:1,3,-1,-1",
            "--dynamic_image_size=16,16;32,48;24,64",
        )
    )
    hw = mdl.HW()
    mdl.check(lib, lib.aclmdlGetDynamicHW(m.desc, -1, ctypes.byref(hw)), "aclmdlGetDynamicHW")
    assert [tuple(hw.hw[i]) for i in range(hw.hwCount)] == [(16, 16), (32, 48), (24, 64)]
    img, dyn = m.inputs
    assert (img["dims"], img["size"]) == ((1, 3, -1, -1), 3 * 32 * 48 * 4)  # 32x48 is the largest
    assert (dyn["dims"], dyn["size"]) == ((2,), 16)
    feat, boxes = m.outputs
    assert (feat["dims"], feat["size"]) == ((1, 8, -1, -1), 8 * 16 * 24 * 4)
    assert (boxes["dims"], boxes["size"]) == ((1, 4, -1, -1), 4 * 8 * 12 * 4)
    b = mdl.Buffers(m)
    try:
        for h, w in [(24, 64), (16, 16)]:
            b.set_hw(h, w)
            d = mdl.IODims()
            mdl.check(lib, lib.aclmdlGetCurOutputDims(m.desc, 1, ctypes.byref(d)), "aclmdlGetCurOutputDims")
            assert tuple(d.dims[k] for k in range(d.dimCount)) == (1, 4, h // 4, w // 4)
    finally:
        b.close()


def test_dynamic_dims_model(nets, tmp_path, loaded):
    m = loaded(
        onnx_nets.convert(
            nets["crnn"],
            tmp_path / "c",
            "--input_format=ND",
            "--input_shape=seq:1,-1,32;mask:1,-1",
            "--dynamic_dims=4,4;16,16;8,8",
        )
    )
    seq, mask, dyn = m.inputs
    assert (seq["dims"], seq["size"], seq["format"]) == ((1, -1, 32), 16 * 32 * 4, ND)
    assert (mask["dims"], mask["size"]) == ((1, -1), 16 * 4)
    assert (dyn["name"], dyn["dims"], dyn["size"]) == (DYNAMIC_NAME, (2,), 16)  # one value per -1
    probs, pooled = m.outputs
    assert (probs["dims"], probs["size"]) == ((1, -1, 12), 16 * 12 * 4)
    assert (pooled["dims"], pooled["size"]) == ((1, 12), 48)  # the same at every profile: fixed


def test_output_type_and_out_nodes(nets, tmp_path, loaded):
    m = loaded(
        onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:1,3,16,16", "--output_type=FP16")
    )
    assert (m.outputs[0]["dtype"], m.outputs[0]["size"]) == (1, 20)  # float16
    m = loaded(
        onnx_nets.convert(
            nets["yolo"],
            tmp_path / "y",
            "--input_shape=img:1,3,16,16",
            "--out_nodes=boxes_cat:0;clip:0",
            "--output_type=boxes_cat:0:UINT8",
        )
    )
    assert [(o["name"], o["dtype"], o["dims"]) for o in m.outputs] == [
        ("boxes", 4, (1, 4, 4, 4)),
        ("feat", 0, (1, 8, 8, 8)),
    ]


def _with_input(path):
    """The ONNX model at path with its input fixed at 1x3x16x16, as the conversion fixes it."""
    import onnx

    m = onnx.load(path)
    for d, v in zip(m.graph.input[0].type.tensor_type.shape.dim, (1, 3, 16, 16), strict=True):
        d.ClearField("dim_param")
        d.dim_value = v
    return m


def test_query_size_reports_the_graph_as_weights(lib, nets, tmp_path):
    om = onnx_nets.convert(nets["resnet"], tmp_path / "r", "--input_shape=x:1,3,16,16")
    work, weight = ctypes.c_size_t(), ctypes.c_size_t()
    mdl.check(
        lib,
        lib.aclmdlQuerySize(str(om).encode(), ctypes.byref(work), ctypes.byref(weight)),
        "aclmdlQuerySize",
    )
    with open(om, "rb") as f:
        blob = f.read()
    data_size = int.from_bytes(blob[112:120], "little")
    assert weight.value == data_size and data_size > 1000
    # work: never 0, as no real converted model reports it (a program passes it to aclrtMalloc);
    # every node output at 512 bytes, float tensors as float16, from ONNX's own shape inference
    import onnx

    g = onnx.shape_inference.infer_shapes(_with_input(nets["resnet"])).graph
    shapes = {vi.name: vi.type.tensor_type for vi in list(g.value_info) + list(g.output)}
    want = 0
    for node in g.node:
        for o in node.output:
            t = shapes[o]
            n = int(np.prod([d.dim_value for d in t.shape.dim]))
            want += -(-n * (2 if t.elem_type == onnx.TensorProto.FLOAT else 8) // 512) * 512
    assert work.value == want > 0
    assert int.from_bytes(blob[152:160], "little") == want  # the header field it comes from
