"""The simulator model file writer: ``Graph.to_bytes`` and ``Graph.save``.

Checks the dynamic mechanism a save asks for (batch gears, image sizes, dims
gears or shape ranges) against the graph's inputs, then lays out the header,
the tensor, op and I/O records, the gears, the strings and the constant data
(format: ``docs/sim-model-format.md``).  :class:`Graph` in ``graph.py``
delegates its two writing methods here.
"""

import math
import os
import struct

from ascend_engine.errors import AippError

from . import aipp as aipp_settings
from .graph_common import (
    _DTYPES,
    _FORMATS,
    KIND_CONST,
    MAX_INTS,
    MAX_OP_INPUTS,
    MAX_RANK,
    GraphError,
    _is_sym,
    _shape_str,
)

__all__ = ["MAGIC", "VERSION", "save", "to_bytes"]

MAGIC = b"AESIMMDL"
VERSION = 2  # the newest version written; static and dynamic-batch models are still written as version 1

HEADER_SIZE = 136
HEADER_SIZE_V2 = 160
VERSION_AIPP = 4  # any model with static AIPP inputs (docs/sim-model-format.md, "Version 4: AIPP")
HEADER_SIZE_V4 = 208
MAX_SYMS = 32
# dynamic mechanisms (docs/sim-model-format.md, "Dynamic section")
DYN_NONE, DYN_BATCH, DYN_HW, DYN_DIMS, DYN_RANGE = 0, 1, 2, 3, 4
TENSOR_RECORD = 104
OP_RECORD = 192
IO_RECORD = 16
DATA_ALIGN = 64

MAX_FLOATS = 4
MAX_GEARS = 128
MAX_GEAR_VALUE = 1 << 20

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


def _gears(graph, batch_sizes):
    if batch_sizes is None:
        if graph.batched:
            names = [t.name for t in graph.inputs if t.batched]
            raise GraphError(
                f"save: graph {graph.name!r} has batched inputs {names} (-1 first dimension): "
                "pass batch_sizes=(...) with the batch gears"
            )
        return []
    gears = sorted({int(b) for b in batch_sizes})
    if not gears or len(gears) > MAX_GEARS or gears[0] < 1 or gears[-1] > MAX_GEAR_VALUE:
        raise GraphError(
            f"save: batch_sizes must be 1..{MAX_GEARS} values in 1..{MAX_GEAR_VALUE}, got {batch_sizes}"
        )
    if not graph.batched:
        raise GraphError("save: batch_sizes given but no input has a -1 (batch) first dimension")
    return gears


def _dynamic(graph, batch_sizes, hw_sizes, dims, shape_ranges):
    """(kind, symbol order, gear rows, ranges) for the mechanism the caller chose (one, as ATC allows)."""
    chosen = [k for k, v in (("batch_sizes", batch_sizes), ("hw_sizes", hw_sizes), ("dims", dims),
                             ("shape_ranges", shape_ranges)) if v is not None]
    syms = graph.symbols()
    named = [d for d in syms if isinstance(d, str)]
    if len(chosen) > 1:
        raise GraphError(f"save: {' and '.join(chosen)} are mutually exclusive (one dynamic "
                         "mechanism per "
                         "model, as ATC's --dynamic_batch_size / --dynamic_image_size / --dynamic_dims / "
                         "--input_shape_range)")
    if not chosen or chosen == ["batch_sizes"]:
        if named:
            raise GraphError(f"save: graph {graph.name!r} has the dynamic dimensions {named}: "
                             "pass hw_sizes=, "
                             "dims= or shape_ranges= with their values")
        gears = _gears(graph, batch_sizes)
        return (DYN_BATCH if gears else DYN_NONE), ([-1] if gears else []), [[g] for g in gears], None
    if len(syms) > MAX_SYMS:
        raise GraphError(f"save: {len(syms)} dynamic dimensions, the format holds {MAX_SYMS}")
    if chosen == ["hw_sizes"]:
        return (DYN_HW,) + _hw(graph, hw_sizes, syms) + (None,)
    if chosen == ["dims"]:
        return DYN_DIMS, syms, _dims_gears(graph, dims, syms), None
    return DYN_RANGE, syms, [], _ranges(graph, shape_ranges, syms)


def _hw(graph, hw_sizes, syms):
    imgs = [t for t in graph.inputs if t.dynamic]
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
    _check_gear_rows("hw_sizes", gears)
    return list(hw), gears


def _dims_gears(graph, dims, syms):
    # ATC's --dynamic_dims: one value per dynamic dimension of the inputs, in input order; a name shared
    # by several inputs takes one value (give it each time, or pass a dict {name: value})
    slots = [d for t in graph.inputs for d in t.shape if _is_sym(d)]
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
    _check_gear_rows("dims", gears)
    return gears


def _check_gear_rows(what, gears):
    if not 1 <= len(gears) <= MAX_GEARS:
        raise GraphError(f"save: {what} needs 1..{MAX_GEARS} gears, got {len(gears)}")
    for g in gears:
        if any(not 1 <= v <= MAX_GEAR_VALUE for v in g):
            raise GraphError(f"save: {what} gear {g} has values outside 1..{MAX_GEAR_VALUE}")
    if len({tuple(g) for g in gears}) != len(gears):
        raise GraphError(f"save: {what} lists a gear twice: {gears}")


def _ranges(graph, shape_ranges, syms):
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


def _aipp(graph, aipp):
    """{input index: resolved settings} of ``aipp`` ({input name or index: aipp_op fields})."""
    if aipp is None:
        return {}
    if not isinstance(aipp, dict):
        raise GraphError(f"save: aipp must be a dict {{input name: aipp_op fields}}, got {aipp!r}")
    names = [t.name for t in graph.inputs]
    out = {}
    for key, fields in aipp.items():
        index = key if isinstance(key, int) and not isinstance(key, bool) else (
            names.index(key) if key in names else None)
        if index is None or not 0 <= index < len(names):
            raise GraphError(f"save: aipp names input {key!r}; the graph's inputs are {names}")
        if index in out:
            raise GraphError(f"save: aipp gives input {names[index]!r} twice")
        t = graph.inputs[index]
        if isinstance(fields, dict) and fields.get("related_input_rank", index) != index:
            raise GraphError(f"save: aipp for input {t.name!r} (index {index}) has related_input_rank "
                             f"{fields['related_input_rank']}")
        try:
            out[index] = aipp_settings.resolve(fields, t.name, t.shape, t.format, t.dtype)
        except AippError as exc:
            raise GraphError(f"save: aipp: {exc}") from None
    return out


def to_bytes(graph, batch_sizes=None, latency_us=0, latency_per_item_us=0, hw_sizes=None, dims=None,
             shape_ranges=None, aipp=None):
    """``graph``'s model file as bytes (see :meth:`Graph.save`)."""
    if not graph.outputs:
        raise GraphError(f"save: graph {graph.name!r} has no outputs")
    kind, syms, gear_rows, ranges = _dynamic(graph, batch_sizes, hw_sizes, dims, shape_ranges)
    aipp = _aipp(graph, aipp)
    if kind != DYN_NONE and any(s["aipp_mode"] == "dynamic" for s in aipp.values()):
        raise GraphError("save: dynamic AIPP in a model with a dynamic batch, image size, dims or shape "
                         "range is not modelled by the simulator")
    version = VERSION_AIPP if aipp else 1 if kind in (DYN_NONE, DYN_BATCH) else 2
    header_size = {1: HEADER_SIZE, 2: HEADER_SIZE_V2, VERSION_AIPP: HEADER_SIZE_V4}[version]
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

    name_ref = string(graph.name)
    tensor_names = [string(t.name) for t in graph.tensors]
    in_names = [string(t.name) for t in graph.inputs]
    out_names = [string(n) for n, _, _ in graph.outputs]

    n_t, n_o, n_in, n_out = len(graph.tensors), len(graph.ops), len(graph.inputs), len(graph.outputs)
    tensor_off = header_size
    op_off = tensor_off + n_t * TENSOR_RECORD
    io_off = op_off + n_o * OP_RECORD
    gear_off = io_off + (n_in + n_out) * IO_RECORD
    range_off = gear_off + 8 * len(syms) * len(gear_rows)
    aipp_off = range_off + (16 * len(ranges) if ranges else 0)
    str_off = aipp_off + aipp_settings.RECORD_SIZE * len(aipp)
    data_off = (str_off + len(strings) + DATA_ALIGN - 1) // DATA_ALIGN * DATA_ALIGN

    data = bytearray()
    const_place = {}
    for t in graph.tensors:
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
    if version >= 2:
        out += struct.pack("<IIQQ", kind, len(syms), range_off if ranges else 0, 0)
    if version == VERSION_AIPP:
        # executor 0 (the simulator's ops), no ONNX tables, no command; then the AIPP table
        out += struct.pack("<IIQQII", 0, 0, 0, 0, 0, 0)
        out += struct.pack("<QII", aipp_off, len(aipp), 0)
    assert len(out) == header_size
    for t, (noff, nlen) in zip(graph.tensors, tensor_names, strict=True):
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
    for op in graph.ops:
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
    for t, (noff, nlen) in zip(graph.inputs, in_names, strict=True):
        out += struct.pack("<IIIi", t.index, noff, nlen, _FORMATS[t.format])
    for (_name, t, fmt), (noff, nlen) in zip(graph.outputs, out_names, strict=True):
        out += struct.pack("<IIIi", t.index, noff, nlen, _FORMATS[fmt])
    for row in gear_rows:
        out += struct.pack(f"<{len(row)}Q", *row)
    for lo, hi in ranges or ():
        out += struct.pack("<qq", lo, hi)
    for index in sorted(aipp):
        out += aipp_settings.record(index, aipp[index])
    out += strings
    out += b"\0" * (data_off - len(out))
    out += data
    assert len(out) == file_size
    return bytes(out)


def save(graph, path, batch_sizes=None, latency_us=0, latency_per_item_us=0, hw_sizes=None, dims=None,
         shape_ranges=None, aipp=None):
    """Write ``graph``'s model file to ``path`` (see :meth:`Graph.save`); returns ``path``."""
    blob = to_bytes(graph, batch_sizes, latency_us, latency_per_item_us, hw_sizes=hw_sizes, dims=dims,
                    shape_ranges=shape_ranges, aipp=aipp)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, path)
    return path
