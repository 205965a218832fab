"""The numpy reference: evaluates a :class:`Graph` op by op, the oracle the C kernels are tested against.

Exported as ``ascend_engine.sim.reference``.
"""

import math

import numpy as np

from .graph import Graph
from .graph_common import KIND_CONST, GraphError, _is_sym, _shape_str

__all__ = ["reference"]


def _gelu(x):
    return (
        0.5
        * x
        * (1.0 + np.tanh(np.float32(math.sqrt(2.0 / math.pi)) * (x + np.float32(0.044715) * x * x * x)))
    )


def _softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def _layernorm(x, g, b, eps):
    mu = np.mean(x, axis=-1, keepdims=True, dtype=np.float64)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True, dtype=np.float64)
    return ((x - mu) / np.sqrt(var + eps) * g + b).astype(np.float32)


def _cast(x, dtype):
    dt = np.dtype(dtype)
    if dt.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dt)
        x = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
        x = np.clip(x, info.min, info.max)
    return x.astype(dt)


def _evaluate(op, args, out_dtype):
    kind = op.kind
    f32 = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    with np.errstate(all="ignore"):
        if kind == "matmul":
            r = np.matmul(f32[0], f32[1])
        elif kind == "add":
            r = f32[0] + f32[1]
        elif kind == "mul":
            r = f32[0] * f32[1]
        elif kind == "relu":
            r = np.maximum(f32[0], np.float32(0))
        elif kind == "gelu":
            r = _gelu(f32[0])
        elif kind == "sigmoid":
            r = np.float32(1) / (np.float32(1) + np.exp(-f32[0]))
        elif kind == "tanh":
            r = np.tanh(f32[0])
        elif kind == "softmax":
            r = _softmax(f32[0], op.ints[0])
        elif kind == "layernorm":
            r = _layernorm(f32[0], f32[1], f32[2], op.floats[0])
        elif kind == "reshape":
            return None  # handled by the caller (needs the batch)
        elif kind == "transpose":
            r = np.transpose(args[0], op.ints)
        elif kind == "concat":
            r = np.concatenate(args, axis=op.ints[0])
        elif kind == "argmax":
            r = np.argmax(args[0], axis=op.ints[0])
        elif kind == "cast":
            return _cast(args[0], out_dtype)
        elif kind in ("mean", "sum"):
            axes = tuple(op.ints[1:])
            keep = bool(op.ints[0])
            x = f32[0]
            if x.dtype.kind == "f":
                fn = np.mean if kind == "mean" else np.sum
                r = fn(x.astype(np.float64), axis=axes, keepdims=keep)
            else:
                r = np.sum(x.astype(np.int64), axis=axes, keepdims=keep)
        else:  # pragma: no cover - every opcode is handled above
            raise GraphError(f"reference: unknown op {kind!r}")
    return np.array(np.asarray(r).astype(out_dtype), order="C")  # keeps 0-d (ascontiguousarray would not)


def reference(graph, feeds):
    """Evaluate ``graph`` with numpy on ``feeds`` (input name -> array): {output name: array}.

    Dynamic dimensions take any size >= 1: the batch the same in every batched
    input, a named dimension the same wherever it appears.  Dtypes must match
    exactly.  Float16 is computed in float32 and rounded after every op, as the
    simulator stores float16 intermediates.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"reference: expected a Graph, got {type(graph).__name__}")
    values = {}
    sizes = {}  # dynamic dimension (-1 or a name) -> its size in these feeds
    names = {t.name for t in graph.inputs}
    extra = set(feeds) - names
    if extra:
        raise GraphError(f"reference: unknown inputs {sorted(extra)}; the graph's inputs are {sorted(names)}")
    for t in graph.inputs:
        if t.name not in feeds:
            raise GraphError(f"reference: missing input {t.name!r}")
        a = np.asarray(feeds[t.name])
        if a.dtype != np.dtype(t.dtype):
            raise GraphError(f"reference: input {t.name!r} must be {t.dtype}, got {a.dtype}")
        ok = a.ndim == t.ndim
        for d, n in zip(t.shape, a.shape if ok else (), strict=False):
            if _is_sym(d):
                ok = ok and n >= 1 and sizes.setdefault(d, n) == n
            else:
                ok = ok and d == n
        if not ok:
            known = {("batch" if k == -1 else k): v for k, v in sizes.items()}
            raise GraphError(
                f"reference: input {t.name!r} expects shape {_shape_str(t.shape)}"
                + (f" with {', '.join(f'{k} {v}' for k, v in known.items())}" if known else "")
                + f", got {a.shape}"
            )
        values[t.index] = a
    for t in graph.tensors:
        if t.kind == KIND_CONST:
            values[t.index] = t.data
    for op in graph.ops:
        out_t = graph.tensors[op.output]
        args = [values[i] for i in op.inputs]
        if op.kind == "reshape":
            r = args[0].reshape(tuple(sizes[d] if _is_sym(d) else d for d in out_t.shape))
        else:
            r = _evaluate(op, args, out_t.dtype)
        values[op.output] = r
    return {name: np.array(values[t.index], copy=True) for name, t, _ in graph.outputs}
