"""The device-time model of a converted model: a roofline from the graph.

For one set of input shapes, :func:`estimate_us` counts the graph's
floating-point work (a multiply-add is 2 FLOPs: convolutions, matrix products;
one per output element for the other ops) and the bytes it moves (weights
read once, every tensor written once and read once, at the NPU's float16 size
for float tensors), and returns ``max(FLOPs / peak, bytes / bandwidth)`` plus
a fixed launch cost, with the peaks of the ``--soc_version``.  The figures and
their sources are in docs/simulator.md ("Device time of converted models").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ascend_engine.errors import AtcError

__all__ = ["SOCS", "Soc", "soc", "estimate_us", "work_bytes"]


@dataclass(frozen=True)
class Soc:
    """Published peaks of one SoC: float16 compute and memory bandwidth."""

    name: str
    fp16_tflops: float
    mem_gbps: float
    launch_us: float = 10.0  # fixed cost of one model execution on the device (assumed)


SOCS = {
    s.name: s
    for s in (
        Soc("Ascend310", 8.0, 47.8),
        Soc("Ascend310P1", 70.0, 204.8),
        Soc("Ascend310P3", 70.0, 204.8),
        Soc("Ascend310B1", 10.0, 51.2),
        Soc("Ascend910", 256.0, 1200.0),
        Soc("Ascend910B1", 378.0, 1600.0),
        Soc("Ascend910B2", 353.0, 1600.0),
        Soc("Ascend910B3", 313.0, 1600.0),
        Soc("Ascend910B4", 280.0, 800.0),
    )
}


def soc(name: str) -> Soc:
    """The SoC named by --soc_version; AtcError listing the known ones otherwise."""
    if name not in SOCS:
        raise AtcError(
            f"E10001: Value [{name}] for parameter [--soc_version] is invalid. Reason: the simulator "
            f"models {', '.join(SOCS)}"
        )
    return SOCS[name]


def _shapes(model):
    """tensor name -> (shape, elem_type) for every tensor whose shape inference found a full shape."""
    out = {}
    g = model.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if all(d is not None for d in dims):
            out[vi.name] = (dims, t.elem_type)
    for init in g.initializer:
        out[init.name] = (list(init.dims), init.data_type)
    return out


_FLOAT_TYPES = (1, 10, 11, 16)  # float, float16, double, bfloat16: stored as float16 on the NPU
_SIZES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def _bytes(shape, elem_type):
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    return n * (2 if elem_type in _FLOAT_TYPES else _SIZES.get(elem_type, 4))


def _node_flops(node, shapes):
    """FLOPs of one node, or None when a shape it needs is unknown."""
    outs = [shapes.get(o) for o in node.output if o]
    if not outs or outs[0] is None:
        return None
    out_elems = int(np.prod(outs[0][0], dtype=np.int64)) if outs[0][0] else 1
    op = node.op_type
    if op in ("Conv", "ConvTranspose"):
        w = shapes.get(node.input[1])
        x = shapes.get(node.input[0])
        if w is None or x is None:
            return None
        # weights: Conv [Cout, Cin / group, kH, kW]; ConvTranspose [Cin, Cout / group, kH, kW]
        kernel = int(np.prod(w[0][2:], dtype=np.int64))
        if op == "Conv":
            return 2 * out_elems * w[0][1] * kernel
        return 2 * int(np.prod(x[0], dtype=np.int64)) * w[0][1] * kernel
    if op in ("MatMul", "Gemm"):
        a = shapes.get(node.input[0])
        if a is None:
            return None
        trans_a = op == "Gemm" and any(attr.name == "transA" and attr.i for attr in node.attribute)
        k = a[0][0] if trans_a else a[0][-1]  # the reduced dimension of A
        return 2 * out_elems * k
    if op in ("Softmax", "LayerNormalization", "BatchNormalization", "InstanceNormalization"):
        return 5 * out_elems
    return out_elems


def estimate_us(model, soc_spec: Soc) -> tuple[float, int]:
    """(device microseconds, nodes whose shapes were unknown) of one execution of ``model``,
    an ONNX ModelProto whose inputs have concrete shapes."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference is best effort: an exotic graph keeps only the shapes it states
        inferred = model
    shapes = _shapes(inferred)
    flops, moved, unknown = 0, 0, 0
    g = inferred.graph
    for init in g.initializer:
        moved += _bytes(list(init.dims), init.data_type)
    inits = {i.name for i in g.initializer}
    for node in g.node:
        f = _node_flops(node, shapes)
        if f is None:
            unknown += 1
            continue
        flops += f
        for o in node.output:
            if o in shapes:
                moved += 2 * _bytes(*shapes[o])  # written once, read once
    for vi in g.input:
        if vi.name not in inits and vi.name in shapes:
            moved += _bytes(*shapes[vi.name])
    compute_s = flops / (soc_spec.fp16_tflops * 1e12)
    memory_s = moved / (soc_spec.mem_gbps * 1e9)
    return max(compute_s, memory_s) * 1e6 + soc_spec.launch_us, unknown


# GE places each feature map at a 512-byte boundary.
_WORK_ALIGN = 512


def work_bytes(model) -> int:
    """The work memory of one execution of ``model`` (an ONNX ModelProto whose inputs have concrete
    shapes), as ``aclmdlQuerySize`` reports it: every node output whose shape inference finds a full
    shape, each at a 512-byte boundary, without reuse between them (an upper bound of a memory
    planner's result); at least one aligned block, since a converted graph always has work memory."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference is best effort, as in estimate_us
        inferred = model
    shapes = _shapes(inferred)
    total = 0
    for node in inferred.graph.node:
        for o in node.output:
            if o in shapes:
                total += -(-_bytes(*shapes[o]) // _WORK_ALIGN) * _WORK_ALIGN
    return max(total, _WORK_ALIGN)
