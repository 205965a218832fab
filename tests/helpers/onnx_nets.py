"""Small ONNX networks built with onnx.helper, for the sim atc tests.

Each covers the ops of one family of real networks: ``resnet`` (Conv,
BatchNormalization, Relu, residual Add, MaxPool, GlobalAveragePool, Flatten,
Gemm, Softmax), ``yolo`` (strided Conv, HardSwish, Sigmoid, SiLU as x *
sigmoid(x), Clip, HardSigmoid, AveragePool, Resize, ConvTranspose, Concat,
Split, Slice) and ``crnn`` (MatMul, LayerNormalization, Transpose, Reshape,
ReduceMean, Softmax over a sequence).  ``convert`` runs ``sim atc`` on a
network and returns the .om path; ``ort_run`` is ONNX Runtime's Python
reference on the same file and inputs.
"""

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from ascend_engine.sim import atc

OPSET = 17

# With libasan preloaded (the sanitizer run), ASan's __cxa_throw interceptor fails a CHECK when
# onnxruntime's Python module throws (any plain `InferenceSession` of a bad graph aborts), so
# the tests whose conversion makes ONNX Runtime's Python API raise are skipped there; the
# simulator's own ONNX Runtime calls (C API) run under the sanitizers in every test.
throws_in_ort_python = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="onnxruntime's Python module aborts under a preloaded ASan when it raises",
)


def _w(rng, name, shape, scale=0.3):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits):
    g = h.make_graph(nodes, "net", inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def resnet(seed=0, batch="n"):
    """x [batch, 3, 16, 16] -> probs [batch, 10]."""
    rng = np.random.default_rng(seed)
    inits = [
        _w(rng, "w1", (8, 3, 3, 3)),
        _w(rng, "b1", (8,)),
        _w(rng, "w2", (8, 8, 3, 3)),
        nh.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "g"),
        _w(rng, "beta", (8,)),
        _w(rng, "mean", (8,)),
        nh.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "var"),
        _w(rng, "fc", (10, 8)),
        _w(rng, "fcb", (10,)),
    ]
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c2", "g", "beta", "mean", "var"], ["bn"], epsilon=1e-5),
        h.make_node("Add", ["bn", "r1"], ["res"]),
        h.make_node("Relu", ["res"], ["r2"]),
        h.make_node("MaxPool", ["r2"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("GlobalAveragePool", ["mp"], ["gap"]),
        h.make_node("Flatten", ["gap"], ["flat"]),
        h.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"], transB=1),
        h.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
    ]
    return _model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [batch, 3, 16, 16])],
        [h.make_tensor_value_info("probs", T.FLOAT, [batch, 10])],
        inits,
    )


def yolo(seed=1):
    """img [1, 3, H, W] (H, W multiples of 4) -> feat [1, 8, H/2, W/2], boxes [1, 4, H/4, W/4]."""
    rng = np.random.default_rng(seed)
    inits = [
        _w(rng, "w1", (8, 3, 3, 3)),
        _w(rng, "w2", (8, 8, 3, 3)),
        _w(rng, "wt", (8, 8, 2, 2)),
        _w(rng, "w3", (8, 16, 1, 1)),
        nh.from_array(np.array([1.0, 1.0, 2.0, 2.0], np.float32), "scales"),
        nh.from_array(np.array([4, 4], np.int64), "split"),
        nh.from_array(np.array([0], np.int64), "s0"),
        nh.from_array(np.array([2], np.int64), "s1"),
        nh.from_array(np.array([1], np.int64), "axis1"),
        nh.from_array(np.array(-1.0, np.float32), "lo"),
        nh.from_array(np.array(1.0, np.float32), "hi"),
    ]
    nodes = [
        h.make_node("Conv", ["img", "w1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("HardSwish", ["c1"], ["a1"]),
        h.make_node("Conv", ["a1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        h.make_node("Sigmoid", ["c2"], ["sg"]),
        h.make_node("Mul", ["c2", "sg"], ["silu"]),
        h.make_node("MaxPool", ["silu"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("ConvTranspose", ["mp", "wt"], ["up_t"], strides=[2, 2]),
        h.make_node("AveragePool", ["silu"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Resize", ["ap", "", "scales"], ["up_r"], mode="nearest"),
        h.make_node("Add", ["up_t", "up_r"], ["up"]),
        h.make_node("Concat", ["up", "a1"], ["cat"], axis=1),
        h.make_node("Conv", ["cat", "w3"], ["c3"]),
        h.make_node("Clip", ["c3", "lo", "hi"], ["feat"], name="clip"),
        h.make_node("HardSigmoid", ["mp"], ["hs"]),
        h.make_node("Split", ["hs", "split"], ["p0", "p1"], axis=1),
        h.make_node("Slice", ["p0", "s0", "s1", "axis1"], ["p0s"]),
        h.make_node("Concat", ["p0s", "p1"], ["p_cat"], axis=1),
        h.make_node("Slice", ["p_cat", "s0", "axis1", "axis1"], ["first"]),
        h.make_node("Concat", ["first", "p0s", "first"], ["boxes"], axis=1, name="boxes_cat"),
    ]
    return _model(
        nodes,
        [h.make_tensor_value_info("img", T.FLOAT, [1, 3, "h", "w"])],
        [
            h.make_tensor_value_info("feat", T.FLOAT, [1, 8, "h2", "w2"]),
            h.make_tensor_value_info("boxes", T.FLOAT, [1, 4, "h4", "w4"]),
        ],
        inits,
    )


def crnn(seed=2):
    """seq [1, T, 32], mask [1, T] -> probs [1, T, 12], pooled [1, 12]."""
    rng = np.random.default_rng(seed)
    inits = [
        _w(rng, "wm", (32, 24)),
        _w(rng, "bm", (24,)),
        nh.from_array(rng.uniform(0.5, 1.5, 24).astype(np.float32), "ln_g"),
        _w(rng, "ln_b", (24,)),
        _w(rng, "wo", (24, 12)),
        nh.from_array(np.array([0, 0, 12], np.int64), "shape"),
        nh.from_array(np.array([-1], np.int64), "last"),
    ]
    nodes = [
        h.make_node("MatMul", ["seq", "wm"], ["mm"]),
        h.make_node("Add", ["mm", "bm"], ["mmb"]),
        h.make_node("LayerNormalization", ["mmb", "ln_g", "ln_b"], ["ln"], axis=-1, epsilon=1e-5),
        h.make_node("Relu", ["ln"], ["act"]),
        h.make_node("MatMul", ["act", "wo"], ["lo"]),
        h.make_node("Unsqueeze", ["mask", "last"], ["mask3"]),
        h.make_node("Mul", ["lo", "mask3"], ["masked"]),
        h.make_node("Transpose", ["masked"], ["tr"], perm=[0, 2, 1]),
        h.make_node("Transpose", ["tr"], ["back"], perm=[0, 2, 1]),
        h.make_node("Reshape", ["back", "shape"], ["rs"]),
        h.make_node("Softmax", ["rs"], ["probs"], axis=-1),
        h.make_node("ReduceMean", ["rs"], ["pooled"], axes=[1], keepdims=0),
    ]
    return _model(
        nodes,
        [
            h.make_tensor_value_info("seq", T.FLOAT, [1, "t", 32]),
            h.make_tensor_value_info("mask", T.FLOAT, [1, "t"]),
        ],
        [
            h.make_tensor_value_info("probs", T.FLOAT, [1, "t", 12]),
            h.make_tensor_value_info("pooled", T.FLOAT, [1, 12]),
        ],
        inits,
    )


def save(model, folder, name):
    path = str(folder / f"{name}.onnx")
    onnx.save(model, path)
    return path


def convert(onnx_path, out, *flags, soc="Ascend310P3"):
    """``sim atc`` on ``onnx_path`` with ``flags``; the .om path."""
    return atc.convert_file(
        [f"--model={onnx_path}", "--framework=5", f"--output={out}", f"--soc_version={soc}", *flags]
    )


def ort_run(onnx_path, feeds):
    """ONNX Runtime's Python session on the same inputs: {output name: array}."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds), strict=True))
