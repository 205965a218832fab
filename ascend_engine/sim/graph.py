"""Builder for simulator model files.

A :class:`Graph` collects inputs, constants and ops; shapes and dtypes are
inferred and checked as the graph is built, so a mistake is reported at the
call that made it.  :meth:`Graph.save` writes the file that the simulator's
``aclmdlLoadFromFile`` reads (the writer: ``graph_file.py``; format:
``docs/sim-model-format.md``), and :func:`ascend_engine.sim.reference`
(``graph_reference.py``) evaluates the same graph with numpy: the oracle the C
kernels are tested against.

Pure Python + numpy: importable without the native extensions.
"""

import math

import numpy as np

from . import graph_file
from .graph_common import (
    _DTYPES,
    _FORMATS,
    KIND_CONST,
    KIND_INPUT,
    KIND_RESULT,
    MAX_INTS,
    MAX_NAME,
    MAX_OP_INPUTS,
    MAX_RANK,
    GraphError,
    _is_sym,
    _shape_str,
)
from .graph_file import MAGIC, VERSION

__all__ = ["Graph", "Tensor", "GraphError", "MAGIC", "VERSION"]

DYNAMIC_INPUT_NAME = "ascend_mbatch_shape_data"
_FLOATS = ("float32", "float16")


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

    def to_bytes(self, batch_sizes=None, latency_us=0, latency_per_item_us=0, hw_sizes=None, dims=None,
                 shape_ranges=None, aipp=None):
        """The model file as bytes (see :meth:`save`)."""
        return graph_file.to_bytes(self, batch_sizes, latency_us, latency_per_item_us, hw_sizes, dims,
                                   shape_ranges, aipp)

    def save(self, path, batch_sizes=None, latency_us=0, latency_per_item_us=0, hw_sizes=None, dims=None,
             shape_ranges=None, aipp=None):
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

        ``aipp={input name: {aipp_op fields}}`` gives inputs static AIPP, with
        the fields and rules of ATC's ``--insert_op_conf`` file
        (``ascend_engine/sim/aipp.py``): the input then takes a uint8 image
        that the simulator crops, converts, normalizes and pads into the
        graph's float input before the ops run.

        ``latency_us + latency_per_item_us * items`` is the least device time
        an execution occupies its stream (items: dimension 0 of the first
        input when it is dynamic -- the batch --, else 1).  Returns ``path``.
        """
        return graph_file.save(self, path, batch_sizes, latency_us, latency_per_item_us, hw_sizes, dims,
                               shape_ranges, aipp)
