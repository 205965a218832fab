"""Builder for simulator model files, and the numpy reference that evaluates them.

A :class:`Graph` collects inputs, constants and ops; shapes and dtypes are
inferred and checked as the graph is built, so a mistake is reported at the
call that made it.  :meth:`Graph.save` writes the file that the simulator's
``aclmdlLoadFromFile`` reads (format: ``docs/sim-model-format.md``), and
:func:`reference` evaluates the same graph with numpy: the oracle the C
kernels are tested against.

Pure Python + numpy: importable without the native extensions.
"""

import math
import os
import struct

import numpy as np

__all__ = ["Graph", "Tensor", "GraphError", "reference", "MAGIC", "VERSION"]

MAGIC = b"AESIMMDL"
VERSION = 2  # the newest version written; static and dynamic-batch models are still written as version 1

HEADER_SIZE = 136
HEADER_SIZE_V2 = 160
MAX_SYMS = 32
# dynamic mechanisms (docs/sim-model-format.md, "Dynamic section")
DYN_NONE, DYN_BATCH, DYN_HW, DYN_DIMS, DYN_RANGE = 0, 1, 2, 3, 4
TENSOR_RECORD = 104
OP_RECORD = 192
IO_RECORD = 16
DATA_ALIGN = 64

MAX_RANK = 8
MAX_OP_INPUTS = 16
MAX_INTS = 8
MAX_FLOATS = 4
MAX_NAME = 127
MAX_GEARS = 128
MAX_GEAR_VALUE = 1 << 20
DYNAMIC_INPUT_NAME = "ascend_mbatch_shape_data"

# aclDataType values
_DTYPES = {
    "float32": 0,
    "float16": 1,
    "int32": 3,
    "uint8": 4,
    "int64": 9,
}
_FLOATS = ("float32", "float16")
# aclFormat values
_FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2}

# opcodes (docs/sim-model-format.md, "Ops")
OPCODES = {
    "matmul": 1,
    "add": 2,
    "mul": 3,
    "relu": 4,
    "gelu": 5,
    "sigmoid": 6,
    "tanh": 7,
    "softmax": 8,
    "layernorm": 9,
    "reshape": 10,
    "transpose": 11,
    "concat": 12,
    "argmax": 13,
    "cast": 14,
    "mean": 15,
    "sum": 16,
}

KIND_INPUT, KIND_CONST, KIND_RESULT = 0, 1, 2


class GraphError(ValueError):
    """A graph that cannot be built or saved; the message names the op and what was expected."""


def _dtype_name(dtype):
    """Normalize a dtype spec (str, numpy dtype or type) to one of the supported names."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise GraphError(f"unknown dtype {dtype!r}; supported: {', '.join(_DTYPES)}") from None
    if name not in _DTYPES:
        raise GraphError(f"unsupported dtype {name!r}; supported: {', '.join(_DTYPES)}")
    return name


def _check_name(where, what, name):
    """Names are 1..127 bytes of UTF-8 without control characters (they end up in C strings and messages)."""
    name = str(name)
    encoded = name.encode()
    if not 1 <= len(encoded) <= MAX_NAME or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise GraphError(
            f"{where}: {what} {name!r} must be 1..{MAX_NAME} bytes of UTF-8 without control characters"
        )
    return name


def _is_sym(d):
    """A dynamic dimension: the batch (-1) or a named one (a str)."""
    return isinstance(d, str) or d == -1


def _shape_str(shape):
    return (
        "("
        + ", ".join("batch" if d == -1 else str(d) for d in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )


def _dims(where, shape):
    """``shape`` as ints and names.  ``None`` or -1 first stands for the batch (docs/sim-graph.md);
    a str anywhere is a named dynamic dimension (an image's "h" and "w", a sequence's "seq")."""
    dims = []
    for i, d in enumerate(tuple(shape)):
        if isinstance(d, str):
            if not d or not d.isidentifier():
                raise GraphError(f"{where}: dimension {i} of shape {tuple(shape)} is the name {d!r}: a "
                                 "dynamic "
                                 "dimension's name is an identifier (letters, digits, _)")
            dims.append(d)
            continue
        if d is None:
            if i:
                raise GraphError(f"{where}: dimension {i} of shape {tuple(shape)} is None: only the first "
                                 "(batch) dimension may be None or -1")
            d = -1
        try:
            dims.append(int(d))
        except (TypeError, ValueError):
            raise GraphError(f"{where}: dimension {i} of shape {tuple(shape)} must be an integer (or None / "
                             f"-1 first for the batch), got {d!r}; a str names a dynamic dimension") from None
    return tuple(dims)


class Tensor:
    """A value in a :class:`Graph`: an input, a constant or an op's result.

    ``shape`` uses ``-1`` for the dynamic batch dimension (always the first)
    and names (str) for other dynamic dimensions.
    """

    __slots__ = ("graph", "index", "name", "dtype", "shape", "format", "kind", "data")

    def __init__(self, graph, index, name, dtype, shape, fmt, kind, data=None):
        self.graph = graph
        self.index = index
        self.name = name
        self.dtype = dtype
        self.shape = tuple(d if isinstance(d, str) else int(d) for d in shape)
        self.format = fmt
        self.kind = kind
        self.data = data

    @property
    def batched(self):
        """True when the first dimension is the dynamic batch."""
        return len(self.shape) > 0 and self.shape[0] == -1

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def dynamic(self):
        """True when some dimension is dynamic (the batch or a named one)."""
        return any(_is_sym(d) for d in self.shape)

    def __repr__(self):
        return f"Tensor({self.name!r}, {self.dtype}, {_shape_str(self.shape)})"


class _Op:
    __slots__ = ("kind", "inputs", "output", "ints", "floats")

    def __init__(self, kind, inputs, output, ints=(), floats=()):
        self.kind = kind
        self.inputs = list(inputs)
        self.output = output
        self.ints = [int(v) for v in ints]
        self.floats = [float(v) for v in floats]


def _broadcast(op, a, b):
    """numpy broadcasting of two shapes where -1 is the batch (only as dim 0)."""
    ra, rb = len(a), len(b)
    n = max(ra, rb)
    out = []
    for i in range(n):
        da = a[i - n + ra] if i - n + ra >= 0 else 1
        db = b[i - n + rb] if i - n + rb >= 0 else 1
        if da == db:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        else:
            raise GraphError(
                f"{op}: shapes {_shape_str(a)} and {_shape_str(b)} do not broadcast "
                f"(dimension {i} of the result: {'batch' if da == -1 else da} vs "
                f"{'batch' if db == -1 else db})"
            )
    if -1 in out[1:]:
        raise GraphError(
            f"{op}: broadcasting {_shape_str(a)} with {_shape_str(b)} moves the batch dimension away from "
            f"dimension 0 (result {_shape_str(out)}); give both operands the same rank"
        )
    return tuple(out)


def _fixed_axis(op, t, ax):
    """Ops that reduce, normalize or concatenate along an axis need it fixed (the simulator's rule)."""
    if isinstance(t.shape[ax], str):
        raise GraphError(
            f"{op}: axis {ax} of {t.name!r} {_shape_str(t.shape)} is the dynamic dimension {t.shape[ax]!r}; "
            "this op needs a fixed axis"
        )


def _norm_axis(op, axis, rank):
    axis = int(axis)
    if not -rank <= axis < rank:
        raise GraphError(f"{op}: axis {axis} out of range for a tensor of rank {rank}")
    return axis % rank


class Graph:
    """A simulator model under construction.

    Example::

        g = Graph("mlp")
        x = g.input("x", "float32", (-1, 64))
        h = g.relu(g.add(g.matmul(x, g.const(w1)), g.const(b1)))
        g.output("y", g.matmul(h, g.const(w2)))
        g.save("mlp.om", batch_sizes=(1, 2, 4, 8), latency_us=200)

    Every method that makes a tensor checks its operands and raises
    :class:`GraphError` naming the op and stating expected versus got.
    Float16 tensors are stored as float16 and computed in float32.
    """

    def __init__(self, name="model"):
        self.name = _check_name("Graph", "name", name)
        self.tensors = []
        self.ops = []
        self.inputs = []
        self.outputs = []  # (name, tensor, format)
        self._names = set()

    # -- helpers -------------------------------------------------------------
    def _new(self, name, dtype, shape, fmt="ND", kind=KIND_RESULT, data=None, op=None):
        shape = tuple(d if isinstance(d, str) else int(d) for d in shape)
        where = op or "Graph"
        if len(shape) > MAX_RANK:
            raise GraphError(f"{where}: rank {len(shape)} exceeds the maximum {MAX_RANK}")
        for i, d in enumerate(shape):
            if (d == -1 and i == 0) or isinstance(d, str):
                continue
            if d < 1:
                raise GraphError(
                    f"{where}: dimension {i} of shape {shape} must be >= 1"
                    + (" (only dimension 0 may be -1, the batch)" if d == -1 else "")
                )
        if name is None:
            base = op.split(" ")[0] if op else "t"
            name = f"{base}_{len(self.tensors)}"
            while name in self._names:
                name += "_"
        name = _check_name(where, "tensor name", name)
        if name in self._names:
            raise GraphError(f"{where}: tensor name {name!r} is already used in graph {self.name!r}")
        self._names.add(name)
        t = Tensor(self, len(self.tensors), name, dtype, shape, fmt, kind, data)
        self.tensors.append(t)
        return t

    def _check(self, op, *tensors):
        for t in tensors:
            if not isinstance(t, Tensor):
                raise GraphError(f"{op}: expected a Tensor of graph {self.name!r}, got {type(t).__name__}")
            if t.graph is not self:
                raise GraphError(
                    f"{op}: tensor {t.name!r} belongs to graph {t.graph.name!r}, not {self.name!r}"
                )

    def _operand(self, op, value, like):
        """A Tensor, or a Python/numpy value turned into a constant of like's dtype."""
        if isinstance(value, Tensor):
            self._check(op, value)
            return value
        return self.const(np.asarray(value, dtype=like.dtype))

    def _result(self, op, inputs, dtype, shape, ints=(), floats=(), fmt="ND", name=None):
        out = self._new(name, dtype, shape, fmt, KIND_RESULT, op=op)
        self.ops.append(_Op(op, [t.index for t in inputs], out.index, ints, floats))
        return out

    def _need_float(self, op, t):
        if t.dtype not in _FLOATS:
            raise GraphError(f"{op}: tensor {t.name!r} must be float32 or float16, got {t.dtype}")

    # -- sources ---------------------------------------------------------------
    def input(self, name, dtype, shape, format="ND"):
        """A model input.  A -1 (or None) first dimension is the dynamic batch.

        ``format`` ("ND", "NCHW" or "NHWC") is what the descriptor reports.
        """
        if format not in _FORMATS:
            raise GraphError(f"input {name!r}: format must be one of {sorted(_FORMATS)}, got {format!r}")
        if name == DYNAMIC_INPUT_NAME:
            raise GraphError(f"input: the name {name!r} is reserved for the dynamic-batch input")
        where = f"input {name!r}"
        t = self._new(str(name), _dtype_name(dtype), _dims(where, shape), format, KIND_INPUT, op=where)
        self.inputs.append(t)
        return t

    def const(self, array, name=None):
        """A constant (weights).  float64 data is stored as float32, Python ints as int64."""
        a = np.asarray(array)
        if a.dtype == np.float64:
            a = a.astype(np.float32)
        dtype = _dtype_name(a.dtype)
        a = np.ascontiguousarray(a, dtype=dtype)
        return self._new(name, dtype, a.shape, "ND", KIND_CONST, data=a, op="const")

    # -- ops ---------------------------------------------------------------------
    def matmul(self, a, b, name=None):
        """numpy matmul of tensors of rank >= 2: [..., M, K] @ [..., K, N], batch dims broadcast."""
        op = "matmul"
        self._check(op, a, b)
        for t in (a, b):
            self._need_float(op, t)
            if t.ndim < 2:
                raise GraphError(
                    f"{op}: tensor {t.name!r} must have rank >= 2, got shape {_shape_str(t.shape)}"
                )
        if a.dtype != b.dtype:
            raise GraphError(f"{op}: operands must have the same dtype, got {a.dtype} and {b.dtype}")
        if a.shape[-1] != b.shape[-2] or a.shape[-1] == -1:
            raise GraphError(
                f"{op}: inner dimensions differ: {a.name!r} {_shape_str(a.shape)} has K={a.shape[-1]}, "
                f"{b.name!r} {_shape_str(b.shape)} has K={b.shape[-2]}"
            )
        if b.ndim == 2 and b.shape[-1] == -1:
            raise GraphError(f"{op}: the batch cannot be the N dimension")
        batch = _broadcast(op, a.shape[:-2], b.shape[:-2]) if (a.ndim > 2 or b.ndim > 2) else ()
        shape = batch + (a.shape[-2], b.shape[-1])
        if -1 in shape[1:]:
            raise GraphError(
                f"{op}: the batch dimension would not be dimension 0 of the result {_shape_str(shape)}"
            )
        return self._result(op, [a, b], a.dtype, shape, name=name)

    def _binary(self, op, a, b, name):
        if not isinstance(a, Tensor) and isinstance(b, Tensor):
            a = self._operand(op, a, b)
        self._check(op, a)
        b = self._operand(op, b, a)
        if a.dtype != b.dtype:
            raise GraphError(
                f"{op}: operands must have the same dtype, "
                f"got {a.dtype} ({a.name!r}) and {b.dtype} ({b.name!r})"
            )
        shape = _broadcast(op, a.shape, b.shape)
        fmt = a.format if len(shape) == a.ndim else "ND"
        return self._result(op, [a, b], a.dtype, shape, fmt=fmt, name=name)

    def add(self, a, b, name=None):
        """Elementwise a + b with numpy broadcasting (integers wrap)."""
        return self._binary("add", a, b, name)

    def mul(self, a, b, name=None):
        """Elementwise a * b with numpy broadcasting (integers wrap)."""
        return self._binary("mul", a, b, name)

    def _unary(self, op, x, name):
        self._check(op, x)
        self._need_float(op, x)
        return self._result(op, [x], x.dtype, x.shape, fmt=x.format, name=name)

    def relu(self, x, name=None):
        """max(x, 0)."""
        return self._unary("relu", x, name)

    def gelu(self, x, name=None):
        """GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
        return self._unary("gelu", x, name)

    def sigmoid(self, x, name=None):
        """1 / (1 + exp(-x))."""
        return self._unary("sigmoid", x, name)

    def tanh(self, x, name=None):
        """tanh(x)."""
        return self._unary("tanh", x, name)

    def softmax(self, x, axis=-1, name=None):
        """Softmax along ``axis`` (not the batch axis)."""
        op = "softmax"
        self._check(op, x)
        self._need_float(op, x)
        ax = _norm_axis(op, axis, x.ndim) if x.ndim else None
        if ax is None:
            raise GraphError(f"{op}: needs a tensor of rank >= 1")
        if ax == 0 and x.batched:
            raise GraphError(
                f"{op}: axis {axis} is the batch axis of {x.name!r}; softmax over the batch is not supported"
            )
        _fixed_axis(op, x, ax)
        return self._result(op, [x], x.dtype, x.shape, ints=[ax], fmt=x.format, name=name)

    def layernorm(self, x, gamma=None, beta=None, eps=1e-5, name=None):
        """Layer normalization over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta.

        ``gamma`` / ``beta`` are tensors or arrays of shape (D,); missing ones are ones / zeros.
        """
        op = "layernorm"
        self._check(op, x)
        self._need_float(op, x)
        if x.ndim < 1 or (x.ndim == 1 and x.batched):
            raise GraphError(f"{op}: needs a last axis that is not the batch, got {_shape_str(x.shape)}")
        _fixed_axis(op, x, x.ndim - 1)
        d = x.shape[-1]
        np_dt = np.dtype(x.dtype)
        gamma = self.const(np.ones(d, np_dt)) if gamma is None else self._operand(op, gamma, x)
        beta = self.const(np.zeros(d, np_dt)) if beta is None else self._operand(op, beta, x)
        for label, t in (("gamma", gamma), ("beta", beta)):
            if t.shape != (d,) or t.dtype != x.dtype:
                raise GraphError(
                    f"{op}: {label} must be {x.dtype} of shape ({d},), "
                    f"got {t.dtype} of shape {_shape_str(t.shape)}"
                )
        eps = float(eps)
        if not (eps >= 0 and math.isfinite(eps)):
            raise GraphError(f"{op}: eps must be a finite number >= 0, got {eps}")
        return self._result(op, [x, gamma, beta], x.dtype, x.shape, floats=[eps], fmt=x.format, name=name)

    def reshape(self, x, shape, name=None):
        """Reshape.  For a batched tensor the new shape must start with -1 or None (the batch stays first);
        for a static tensor one -1 may stand for the inferred dimension, as in numpy."""
        op = "reshape"
        self._check(op, x)
        shape = _dims(op, shape)
        names_in = sorted(d for d in x.shape if isinstance(d, str))
        names_out = sorted(d for d in shape if isinstance(d, str))
        if names_in != names_out:
            raise GraphError(
                f"{op}: {x.name!r} {_shape_str(x.shape)} has the dynamic dimensions {names_in}, "
                f"the new shape "
                f"{_shape_str(shape)} has {names_out}: each must stay a dimension of its own"
            )
        if names_in:  # the named dimensions stay; the fixed ones (and the batch) follow the usual rules
            x_fixed = tuple(d for d in x.shape if not isinstance(d, str))
            new_fixed = tuple(d for d in shape if not isinstance(d, str))
            if (-1 in x_fixed) != (-1 in new_fixed) or new_fixed.count(-1) > 1:
                raise GraphError(
                    f"{op}: the batch must stay in {_shape_str(shape)} as in {_shape_str(x.shape)}"
                )
            have = int(np.prod([d for d in x_fixed if d != -1], dtype=np.int64))
            want = int(np.prod([d for d in new_fixed if d != -1], dtype=np.int64))
            if have != want or any(d < 1 and d != -1 for d in new_fixed):
                raise GraphError(
                    f"{op}: cannot reshape {x.name!r} {_shape_str(x.shape)} to {_shape_str(shape)}: "
                    "the fixed "
                    f"dimensions hold {have} elements vs {want}"
                )
            return self._result(op, [x], x.dtype, shape, name=name)
        if x.batched:
            if not shape or shape[0] != -1 or -1 in shape[1:]:
                raise GraphError(
                    f"{op}: {x.name!r} is batched {_shape_str(x.shape)}: the new shape must be (-1, ...) "
                    f"with the batch first and the other dimensions given, got {shape}"
                )
            have, want = int(np.prod(x.shape[1:], dtype=np.int64)), int(np.prod(shape[1:], dtype=np.int64))
        else:
            if shape.count(-1) > 1:
                raise GraphError(f"{op}: at most one -1 in the new shape, got {shape}")
            have = int(np.prod(x.shape, dtype=np.int64))
            if -1 in shape:
                rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
                if rest <= 0 or have % rest:
                    raise GraphError(f"{op}: cannot infer -1 in {shape} for {have} elements of {x.name!r}")
                shape = tuple(have // rest if d == -1 else d for d in shape)
            want = int(np.prod(shape, dtype=np.int64))
        if have != want or any(d < 1 for d in shape[1:]) or (shape and shape[0] == 0):
            raise GraphError(
                f"{op}: cannot reshape {x.name!r} {_shape_str(x.shape)} to {_shape_str(shape)}: "
                f"{have} elements per item vs {want}"
            )
        return self._result(op, [x], x.dtype, shape, name=name)

    def transpose(self, x, perm, name=None):
        """Permute dimensions (numpy.transpose).  A batched tensor keeps its batch first: perm[0] == 0."""
        op = "transpose"
        self._check(op, x)
        perm = [int(p) for p in perm]
        if sorted(p % x.ndim if x.ndim else p for p in perm) != list(range(x.ndim)) or len(perm) != x.ndim:
            raise GraphError(f"{op}: perm must be a permutation of 0..{x.ndim - 1}, got {perm}")
        perm = [p % x.ndim for p in perm]
        if x.batched and perm[0] != 0:
            raise GraphError(
                f"{op}: {x.name!r} is batched: perm[0] must be 0 (the batch stays first), got {perm}"
            )
        shape = tuple(x.shape[p] for p in perm)
        return self._result(op, [x], x.dtype, shape, ints=perm, name=name)

    def concat(self, tensors, axis=0, name=None):
        """Concatenate 1..16 tensors of one dtype along ``axis`` (not the batch axis)."""
        op = "concat"
        tensors = list(tensors)
        if not 1 <= len(tensors) <= MAX_OP_INPUTS:
            raise GraphError(f"{op}: needs 1..{MAX_OP_INPUTS} tensors, got {len(tensors)}")
        self._check(op, *tensors)
        first = tensors[0]
        if first.ndim < 1:
            raise GraphError(f"{op}: tensors must have rank >= 1")
        ax = _norm_axis(op, axis, first.ndim)
        total = 0
        for t in tensors:
            if t.dtype != first.dtype:
                raise GraphError(f"{op}: all tensors must be {first.dtype}, {t.name!r} is {t.dtype}")
            if t.ndim != first.ndim or any(
                t.shape[i] != first.shape[i] for i in range(first.ndim) if i != ax
            ):
                raise GraphError(
                    f"{op}: {t.name!r} {_shape_str(t.shape)} does not match {first.name!r} "
                    f"{_shape_str(first.shape)} outside axis {ax}"
                )
            if t.shape[ax] == -1:
                raise GraphError(
                    f"{op}: axis {ax} is the batch axis of {t.name!r}; cannot concatenate along the batch"
                )
            _fixed_axis(op, t, ax)
            total += t.shape[ax]
        shape = list(first.shape)
        shape[ax] = total
        return self._result(op, tensors, first.dtype, shape, ints=[ax], name=name)

    def argmax(self, x, axis=-1, name=None):
        """Index of the maximum along ``axis`` (first on ties; a NaN wins), as int32; the axis is removed."""
        op = "argmax"
        self._check(op, x)
        if x.ndim < 1:
            raise GraphError(f"{op}: needs a tensor of rank >= 1")
        ax = _norm_axis(op, axis, x.ndim)
        if ax == 0 and x.batched:
            raise GraphError(f"{op}: axis {axis} is the batch axis of {x.name!r}")
        _fixed_axis(op, x, ax)
        shape = x.shape[:ax] + x.shape[ax + 1 :]
        return self._result(op, [x], "int32", shape, ints=[ax], name=name)

    def cast(self, x, dtype, name=None):
        """Convert to ``dtype``.  Float to integer truncates toward zero; out-of-range values saturate."""
        op = "cast"
        self._check(op, x)
        return self._result(op, [x], _dtype_name(dtype), x.shape, fmt=x.format, name=name)

    def _reduce(self, op, x, axes, keepdims, name):
        self._check(op, x)
        if op == "mean":
            self._need_float(op, x)
        elif x.dtype == "uint8":
            raise GraphError(f"{op}: uint8 is not supported, got {x.name!r} uint8")
        if axes is None:
            axes = list(range(x.ndim))
        elif isinstance(axes, (int, np.integer)):
            axes = [axes]
        axes = sorted({_norm_axis(op, a, x.ndim) for a in axes})
        if not axes or len(axes) > MAX_INTS - 1:
            raise GraphError(f"{op}: needs 1..{MAX_INTS - 1} axes, got {len(axes)}")
        if x.batched and 0 in axes:
            raise GraphError(f"{op}: cannot reduce over the batch axis of {x.name!r} {_shape_str(x.shape)}")
        for a in axes:
            _fixed_axis(op, x, a)
        if keepdims:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return self._result(op, [x], x.dtype, shape, ints=[1 if keepdims else 0] + axes, name=name)

    def mean(self, x, axes=None, keepdims=False, name=None):
        """Mean over ``axes`` (int, list, or None = all; never the batch axis)."""
        return self._reduce("mean", x, axes, keepdims, name)

    def sum(self, x, axes=None, keepdims=False, name=None):
        """Sum over ``axes``, keeping the dtype (integers wrap)."""
        return self._reduce("sum", x, axes, keepdims, name)

    def output(self, name, tensor, format=None):
        """Declare a model output named ``name``; ``format`` defaults to the tensor's."""
        self._check("output", tensor)
        name = _check_name("output", "name", name)
        if any(n == name for n, _, _ in self.outputs):
            raise GraphError(f"output: an output named {name!r} already exists")
        fmt = tensor.format if format is None else format
        if fmt not in _FORMATS:
            raise GraphError(f"output {name!r}: format must be one of {sorted(_FORMATS)}, got {fmt!r}")
        self.outputs.append((name, tensor, fmt))
        return tensor

    # -- writing -----------------------------------------------------------------
    @property
    def batched(self):
        """True when some tensor has the dynamic batch dimension."""
        return any(t.batched for t in self.tensors)

    def symbols(self):
        """The graph's dynamic dimensions in the order ATC lists them: by input, then by dimension.

        The batch is ``-1``; named dimensions are their names.  Each appears once.
        """
        out = []
        for t in self.inputs:
            for d in t.shape:
                if _is_sym(d) and d not in out:
                    out.append(d)
        return out

    def _gears(self, batch_sizes):
        if batch_sizes is None:
            if self.batched:
                names = [t.name for t in self.inputs if t.batched]
                raise GraphError(
                    f"save: graph {self.name!r} has batched inputs {names} (-1 first dimension): "
                    "pass batch_sizes=(...) with the batch gears"
                )
            return []
        gears = sorted({int(b) for b in batch_sizes})
        if not gears or len(gears) > MAX_GEARS or gears[0] < 1 or gears[-1] > MAX_GEAR_VALUE:
            raise GraphError(
                f"save: batch_sizes must be 1..{MAX_GEARS} values in 1..{MAX_GEAR_VALUE}, got {batch_sizes}"
            )
        if not self.batched:
            raise GraphError("save: batch_sizes given but no input has a -1 (batch) first dimension")
        return gears

    def _dynamic(self, batch_sizes, hw_sizes, dims, shape_ranges):
        """(kind, symbol order, gear rows, ranges) for the mechanism the caller chose (one, as ATC allows)."""
        chosen = [k for k, v in (("batch_sizes", batch_sizes), ("hw_sizes", hw_sizes), ("dims", dims),
                                 ("shape_ranges", shape_ranges)) if v is not None]
        syms = self.symbols()
        named = [d for d in syms if isinstance(d, str)]
        if len(chosen) > 1:
            raise GraphError(f"save: {' and '.join(chosen)} are mutually exclusive (one dynamic "
                             "mechanism per "
                             "model, as ATC's --dynamic_batch_size / --dynamic_image_size / --dynamic_dims / "
                             "--input_shape_range)")
        if not chosen or chosen == ["batch_sizes"]:
            if named:
                raise GraphError(f"save: graph {self.name!r} has the dynamic dimensions {named}: "
                                 "pass hw_sizes=, "
                                 "dims= or shape_ranges= with their values")
            gears = self._gears(batch_sizes)
            return (DYN_BATCH if gears else DYN_NONE), ([-1] if gears else []), [[g] for g in gears], None
        if len(syms) > MAX_SYMS:
            raise GraphError(f"save: {len(syms)} dynamic dimensions, the format holds {MAX_SYMS}")
        if chosen == ["hw_sizes"]:
            return (DYN_HW,) + self._hw(hw_sizes, syms) + (None,)
        if chosen == ["dims"]:
            return DYN_DIMS, syms, self._dims_gears(dims, syms), None
        return DYN_RANGE, syms, [], self._ranges(shape_ranges, syms)

    def _hw(self, hw_sizes, syms):
        imgs = [t for t in self.inputs if t.dynamic]
        hw = None
        for t in imgs:
            pos = {"NCHW": 2, "NHWC": 1}.get(t.format)
            ok = pos is not None and t.ndim == 4 and all(
                isinstance(d, str) if i in (pos, pos + 1) else not _is_sym(d) for i, d in enumerate(t.shape))
            if not ok or (hw is not None and (t.shape[pos], t.shape[pos + 1]) != hw):
                raise GraphError(
                    f"save: hw_sizes: input {t.name!r} {_shape_str(t.shape)} ({t.format}) must be "
                    "NCHW or NHWC "
                    "with named H and W dimensions (the same in every image input) and nothing else dynamic"
                )
            hw = (t.shape[pos], t.shape[pos + 1])
        if hw is None or hw[0] == hw[1]:
            raise GraphError("save: hw_sizes needs an NCHW or NHWC input with two different named dimensions "
                             "for H and W, e.g. shape (1, 3, 'h', 'w')")
        gears = []
        for g in hw_sizes:
            try:
                h, w = (int(v) for v in g)
            except (TypeError, ValueError):
                raise GraphError(f"save: hw_sizes entries are (height, width) pairs, got {g!r}") from None
            gears.append([h, w])
        self._check_gear_rows("hw_sizes", gears)
        return list(hw), gears

    def _dims_gears(self, dims, syms):
        # ATC's --dynamic_dims: one value per dynamic dimension of the inputs, in input order; a name shared
        # by several inputs takes one value (give it each time, or pass a dict {name: value})
        slots = [d for t in self.inputs for d in t.shape if _is_sym(d)]
        gears = []
        for g in dims:
            if isinstance(g, dict):
                extra = set(g) - set(syms)
                if extra or set(syms) - set(g):
                    raise GraphError(f"save: dims gear {g!r} must give exactly the dynamic dimensions {syms}")
                gears.append([int(g[sym]) for sym in syms])
                continue
            vals = [int(v) for v in g]
            if len(vals) != len(slots):
                raise GraphError(f"save: dims gear {list(g)} has {len(vals)} values, the inputs have "
                                 f"{len(slots)} "
                                 f"dynamic dimensions {[('batch' if d == -1 else d) for d in slots]}")
            row = {}
            for sym, v in zip(slots, vals, strict=True):
                if row.setdefault(sym, v) != v:
                    raise GraphError(f"save: dims gear {vals} gives {sym!r} two values ({row[sym]} and {v})")
            gears.append([row[sym] for sym in syms])
        self._check_gear_rows("dims", gears)
        return gears

    @staticmethod
    def _check_gear_rows(what, gears):
        if not 1 <= len(gears) <= MAX_GEARS:
            raise GraphError(f"save: {what} needs 1..{MAX_GEARS} gears, got {len(gears)}")
        for g in gears:
            if any(not 1 <= v <= MAX_GEAR_VALUE for v in g):
                raise GraphError(f"save: {what} gear {g} has values outside 1..{MAX_GEAR_VALUE}")
        if len({tuple(g) for g in gears}) != len(gears):
            raise GraphError(f"save: {what} lists a gear twice: {gears}")

    def _ranges(self, shape_ranges, syms):
        ranges = dict(shape_ranges)
        keys = [("batch" if k in (-1, None) else k) for k in ranges]
        want = ["batch" if d == -1 else d for d in syms]
        if sorted(map(str, keys)) != sorted(map(str, want)):
            raise GraphError(f"save: shape_ranges must give a (min, max) for each dynamic dimension {want}, "
                             f"got {keys}")
        out = []
        for sym in syms:
            lo, hi = ranges[sym] if sym in ranges else ranges.get("batch", ranges.get(None))
            hi = -1 if hi is None else int(hi)
            lo = int(lo)
            if not 1 <= lo <= MAX_GEAR_VALUE or (hi != -1 and not lo <= hi <= MAX_GEAR_VALUE):
                raise GraphError(f"save: the range of {sym!r} is ({lo}, {hi}): expected 1 <= min <= max <= "
                                 f"{MAX_GEAR_VALUE}, or max None / -1 (unbounded)")
            out.append((lo, hi))
        return out

    def to_bytes(self, batch_sizes=None, latency_us=0, latency_per_item_us=0, hw_sizes=None, dims=None,
                 shape_ranges=None):
        """The model file as bytes (see :meth:`save`)."""
        if not self.outputs:
            raise GraphError(f"save: graph {self.name!r} has no outputs")
        kind, syms, gear_rows, ranges = self._dynamic(batch_sizes, hw_sizes, dims, shape_ranges)
        version = 1 if kind in (DYN_NONE, DYN_BATCH) else 2
        header_size = HEADER_SIZE if version == 1 else HEADER_SIZE_V2
        code = {sym: -1 - i for i, sym in enumerate(syms)}
        latency_us, latency_per_item_us = float(latency_us), float(latency_per_item_us)
        for label, v in (("latency_us", latency_us), ("latency_per_item_us", latency_per_item_us)):
            if not (math.isfinite(v) and 0 <= v <= 60e6):
                raise GraphError(f"save: {label} must be in 0..60e6 microseconds, got {v}")

        strings = bytearray()
        str_index = {}

        def string(s):
            b = s.encode()
            if b not in str_index:
                str_index[b] = len(strings)
                strings.extend(b)
            return str_index[b], len(b)

        name_ref = string(self.name)
        tensor_names = [string(t.name) for t in self.tensors]
        in_names = [string(t.name) for t in self.inputs]
        out_names = [string(n) for n, _, _ in self.outputs]

        n_t, n_o, n_in, n_out = len(self.tensors), len(self.ops), len(self.inputs), len(self.outputs)
        tensor_off = header_size
        op_off = tensor_off + n_t * TENSOR_RECORD
        io_off = op_off + n_o * OP_RECORD
        gear_off = io_off + (n_in + n_out) * IO_RECORD
        range_off = gear_off + 8 * len(syms) * len(gear_rows)
        str_off = range_off + (16 * len(ranges) if ranges else 0)
        data_off = (str_off + len(strings) + DATA_ALIGN - 1) // DATA_ALIGN * DATA_ALIGN

        data = bytearray()
        const_place = {}
        for t in self.tensors:
            if t.kind == KIND_CONST:
                pad = (-len(data)) % DATA_ALIGN
                data.extend(b"\0" * pad)
                const_place[t.index] = (data_off + len(data), t.data.nbytes)
                data.extend(t.data.astype(t.data.dtype.newbyteorder("<"), copy=False).tobytes())
        file_size = data_off + len(data)

        out = bytearray()
        out += struct.pack(
            "<8sIIQIIIIIIII QQQQQQQQ dd",
            MAGIC,
            version,
            header_size,
            file_size,
            n_t,
            n_o,
            n_in,
            n_out,
            len(gear_rows),
            name_ref[0],
            name_ref[1],
            0,
            tensor_off,
            op_off,
            io_off,
            gear_off,
            str_off,
            len(strings),
            data_off,
            len(data),
            latency_us,
            latency_per_item_us,
        )
        if version == 2:
            out += struct.pack("<IIQQ", kind, len(syms), range_off if ranges else 0, 0)
        assert len(out) == header_size
        for t, (noff, nlen) in zip(self.tensors, tensor_names, strict=True):
            dims = [code[d] if _is_sym(d) else d for d in t.shape] + [0] * (MAX_RANK - t.ndim)
            doff, dsize = const_place.get(t.index, (0, 0))
            out += struct.pack(
                "<IIiiII8qQQ",
                noff,
                nlen,
                _DTYPES[t.dtype],
                _FORMATS[t.format],
                t.kind,
                t.ndim,
                *dims,
                doff,
                dsize,
            )
        for op in self.ops:
            ins = op.inputs + [0] * (MAX_OP_INPUTS - len(op.inputs))
            ints = op.ints + [0] * (MAX_INTS - len(op.ints))
            floats = op.floats + [0.0] * (MAX_FLOATS - len(op.floats))
            out += struct.pack(
                "<IIIIII16I8q4dQ",
                OPCODES[op.kind],
                len(op.inputs),
                op.output,
                len(op.ints),
                len(op.floats),
                0,
                *ins,
                *ints,
                *floats,
                0,
            )
        for t, (noff, nlen) in zip(self.inputs, in_names, strict=True):
            out += struct.pack("<IIIi", t.index, noff, nlen, _FORMATS[t.format])
        for (_name, t, fmt), (noff, nlen) in zip(self.outputs, out_names, strict=True):
            out += struct.pack("<IIIi", t.index, noff, nlen, _FORMATS[fmt])
        for row in gear_rows:
            out += struct.pack(f"<{len(row)}Q", *row)
        for lo, hi in ranges or ():
            out += struct.pack("<qq", lo, hi)
        out += strings
        out += b"\0" * (data_off - len(out))
        out += data
        assert len(out) == file_size
        return bytes(out)

    def save(self, path, batch_sizes=None, latency_us=0, latency_per_item_us=0, hw_sizes=None, dims=None,
             shape_ranges=None):
        """Write the model file read by ``aclmdlLoadFromFile``.

        One dynamic mechanism at most, as ATC builds models:

        * ``batch_sizes``: the batch gears (required when an input has a -1
          batch dimension and nothing else is dynamic);
        * ``hw_sizes=[(h, w), ...]``: dynamic image size -- the image inputs
          are NCHW or NHWC with named H and W dimensions, e.g. (1, 3, "h", "w");
        * ``dims=[[...], ...]``: dynamic dims gears -- each gear gives a value
          for every dynamic dimension of the inputs in input order (ATC's
          --dynamic_dims), or is a dict {name: value};
        * ``shape_ranges={name: (min, max)}``: a shape-range model (ATC's
          --input_shape_range); max None is unbounded, "batch" names the -1.

        ``latency_us + latency_per_item_us * items`` is the least device time
        an execution occupies its stream (items: dimension 0 of the first
        input when it is dynamic -- the batch --, else 1).  Returns ``path``.
        """
        blob = self.to_bytes(batch_sizes, latency_us, latency_per_item_us, hw_sizes=hw_sizes, dims=dims,
                             shape_ranges=shape_ranges)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
        return path


# -- reference evaluation -------------------------------------------------------


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
