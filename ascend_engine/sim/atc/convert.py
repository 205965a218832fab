"""From an ONNX file and ATC's options to a converted simulator model.

:func:`convert` reads and checks the ONNX graph, fixes its inputs' shapes
as ``--input_shape`` says (a named symbolic dimension for each ``-1``),
keeps the ``--out_nodes`` outputs, casts outputs to ``--output_type``, then
builds the graph with ONNX Runtime and runs it once at every profile (on
zeros), which both proves that ONNX Runtime accepts every profile and gives
each output's exact shape there, and estimates the device time of each
profile (cost.py).  A shape-range model is not run (ATC does not refuse a
range for shapes the graph cannot take; the execution does): its outputs'
dtypes and dims come from ONNX Runtime's shape inference, -1 where it leaves a
dimension open (the simulator learns it from each execution; an output of
unknown rank is run once at the lower bounds to learn it), and its device
time is the estimate at the lower bounds plus a per-item slope in the first
input's first dimension when that is a range.  The result is an
:class:`om_file.ConvertedModel`.
"""

from __future__ import annotations

import os

import numpy as np

from ascend_engine.errors import AtcError

from ..graph_common import MAX_NAME
from . import aipp_config, cost, flags
from .om_file import ConvertedModel, IoSpec

__all__ = ["convert", "load_onnx"]

# ONNX TensorProto element types the simulator's tensors can hold
_ONNX_DTYPES = {1: "float32", 10: "float16", 6: "int32", 7: "int64", 2: "uint8"}
_ONNX_OF = {v: k for k, v in _ONNX_DTYPES.items()}
_ONNX_NAMES = {
    0: "undefined",
    3: "int8",
    4: "uint16",
    5: "int16",
    8: "string",
    9: "bool",
    11: "double",
    12: "uint32",
    13: "uint64",
    16: "bfloat16",
}
SYMBOL_PREFIX = "ascend_sym"
MAX_SYMBOLS = 32  # dynamic dimensions a model may have (docs/sim-model-format.md)
MAX_MODEL_BYTES = (2 << 30) - 1  # an ONNX file and its external weights: protobuf's 2 GiB


def _imports():
    try:
        import onnx
        import onnxruntime
    except ImportError as exc:
        raise AtcError(
            f"sim atc needs the onnx and onnxruntime packages ({exc.name} is missing): "
            "pip install ascend-engine[onnx]"
        ) from None
    return onnx, onnxruntime


def _tensors(graph):
    """Every TensorProto of a graph: initializers and node attributes, subgraphs included."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from _tensors(attribute.g)
            for sub in attribute.graphs:
                yield from _tensors(sub)


def _embed_external_data(onnx, model, path):
    """Read the weights an ONNX file keeps as external data (``weights.bin`` beside it, as
    exporters write large models) into the model itself, so the .om carries them: the
    location is resolved against the model file's folder, never the current one, must stay
    inside it, and each tensor's bytes must all be there.  AtcError naming --model otherwise."""
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    folder = os.path.dirname(os.path.abspath(path))
    budget = MAX_MODEL_BYTES
    for tensor in _tensors(model.graph):
        if not uses_external_data(tensor):
            continue
        info = ExternalDataInfo(tensor)
        where = os.path.normpath(os.path.join(folder, info.location))

        def refused(why, where=where, tensor=tensor):
            return flags.invalid("model", path,
                                 f"its external weights {where} (tensor {tensor.name!r}) {why}")

        if os.path.isabs(info.location) or os.path.relpath(where, folder).startswith(os.pardir):
            raise refused("lie outside the model's folder: external data is named relative to it")
        try:
            data = flags.read_file("model", where, budget)
        except AtcError as exc:
            raise refused(f"cannot be read: {str(exc).partition('Reason: ')[2]}") from None
        offset = info.offset or 0
        length = len(data) - offset if info.length is None else info.length
        if offset < 0 or length < 0 or offset + length > len(data):
            raise refused(f"hold {len(data)} bytes, not the {offset} + {length} the model says")
        tensor.raw_data = data[offset:offset + length]
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT
        budget -= length


def load_onnx(path):
    """The checked ModelProto of ``path``, its external weights read into it; AtcError
    naming the problem otherwise (the file is read with a bound: flags.read_file)."""
    onnx, _ = _imports()
    raw = flags.read_file("model", path, MAX_MODEL_BYTES)
    try:
        model = onnx.load_model_from_string(raw)
    except Exception as exc:  # protobuf's DecodeError and friends: the file is not a ModelProto
        raise AtcError(
            f"E10001: Value [{path}] for parameter [--model] is invalid. Reason: not a readable ONNX "
            f"model ({len(raw)} bytes; truncated or corrupt?): {exc}"
        ) from None
    if not model.graph.node and not model.graph.output:
        raise AtcError(
            f"E10001: Value [{path}] for parameter [--model] is invalid. Reason: not an ONNX model (no graph)"
        )
    _embed_external_data(onnx, model, path)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise AtcError(
            f"E10001: Value [{path}] for parameter [--model] is invalid. Reason: the ONNX graph is "
            f"malformed: {str(exc).splitlines()[0]}"
        ) from None
    return model


def _check_name(path, what, name):
    """A model input's or output's name as the .om keeps it: 1 to MAX_NAME bytes, no control character."""
    raw = name.encode()
    bad = [c for c in name if ord(c) < 0x20 or ord(c) == 0x7F]
    if bad or not 1 <= len(raw) <= MAX_NAME:
        why = (f"it holds a control character ({ord(bad[0]):#04x})" if bad
               else f"it is {len(raw)} bytes")
        raise flags.invalid("model", path, f"{what} {name!r}: {why}; a name is 1 to {MAX_NAME} bytes of text "
                                           "without control characters")


def _dtype(what, name, elem_type, hint=""):
    if elem_type not in _ONNX_DTYPES:
        raise AtcError(
            f"{what} {name!r} is {_ONNX_NAMES.get(elem_type, elem_type)}: the simulator's tensors are "
            f"float32, float16, int32, int64 or uint8{hint}"
        )
    return _ONNX_DTYPES[elem_type]


def _graph_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def _input_specs(opts, inputs):
    """IoSpecs of the model inputs (symbolic dims coded -1 - s), the symbol count and, for a
    shape-range model, each symbol's (lo, hi)."""
    names = [vi.name for vi in inputs]
    flag = "input_shape_range" if "input_shape_range" in opts.raw else "input_shape"
    text = opts.raw.get(flag)
    for n in opts.input_shape:
        if n not in names:
            raise AtcError(
                f"E10001: Value [{text}] for parameter [--{flag}] is invalid. "
                f"Reason: the model has no input {n!r}; its inputs: {', '.join(names)}"
            )
    specs, counter, sym_ranges = [], 0, []
    h_pos = 2 if opts.input_format == "NCHW" else 1
    for vi in inputs:
        t = vi.type.tensor_type
        onnx_dims = [
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in t.shape.dim
        ]
        given = opts.input_shape.get(vi.name)
        if given is None:
            if any(d is None for d in onnx_dims):
                raise AtcError(
                    f"E10001: input {vi.name!r} has dynamic dimensions in the ONNX graph "
                    f"({_dims_text(t)}): give its shape with --input_shape"
                )
            given = onnx_dims
        elif len(given) != len(onnx_dims) and t.HasField("shape"):
            raise AtcError(
                f"E10001: Value [{text}] for parameter [--{flag}] is invalid. "
                f"Reason: input {vi.name!r} has rank {len(onnx_dims)} in the ONNX graph, got "
                f"{len(given)} dimensions"
            )
        dims = []
        for k, d in enumerate(given):
            fixed = onnx_dims[k] if k < len(onnx_dims) else None
            if fixed is not None and d != fixed:
                raise AtcError(
                    f"E10001: Value [{text}] for parameter [--{flag}] is "
                    f"invalid. Reason: input {vi.name!r} dimension {k} is fixed to {fixed} in the ONNX "
                    f"graph, got {d}"
                )
            if d != -1:
                dims.append(d)
            elif opts.dynamic == "batch":
                dims.append(-1)  # symbol 0: the batch
            elif opts.dynamic == "hw":
                dims.append(-1 if k == h_pos else -2)  # symbols 0 and 1: H and W
            else:
                dims.append(-1 - counter)  # dims and range: each -1 in order is its own symbol
                counter += 1
                if opts.dynamic == "range":
                    sym_ranges.append(opts.ranges[(vi.name, k)])
        fmt = opts.input_format if len(dims) == 4 or opts.input_format == "ND" else "ND"
        specs.append(IoSpec(vi.name, _dtype("input", vi.name, t.elem_type), fmt, tuple(dims)))
    if counter > MAX_SYMBOLS:
        raise AtcError(
            f"E10001: Value [{text}] for parameter [--{flag}] is invalid. Reason: {counter} dynamic "
            f"dimensions; the simulator takes at most {MAX_SYMBOLS}"
        )
    n_syms = {"batch": 1, "hw": 2, "dims": counter, "range": counter}.get(opts.dynamic, 0)
    return specs, n_syms, sym_ranges


def _dims_text(t):
    return ",".join(
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim
    )


def _fix_inputs(model, specs):
    """Write the converted shapes into the graph's inputs (a dim_param per symbol)."""
    by_name = {s.name: s for s in specs}
    for vi in _graph_inputs(model):
        shape = vi.type.tensor_type.shape
        del shape.dim[:]
        for d in by_name[vi.name].dims:
            dim = shape.dim.add()
            if d < 0:
                dim.dim_param = f"{SYMBOL_PREFIX}{-1 - d}"
            else:
                dim.dim_value = d


def _select_outputs(model, opts):
    """--out_nodes: the graph's outputs become the named node outputs, in that order."""
    if not opts.out_nodes:
        return
    onnx, _ = _imports()
    nodes = {n.name: n for n in model.graph.node}
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    outs = []
    for node, index in opts.out_nodes:
        if node not in nodes:
            raise AtcError(
                f"E10001: Value [{opts.raw['out_nodes']}] for parameter [--out_nodes] is invalid. "
                f"Reason: the graph has no node {node!r}"
            )
        if index >= len(nodes[node].output):
            raise AtcError(
                f"E10001: Value [{opts.raw['out_nodes']}] for parameter [--out_nodes] is invalid. "
                f"Reason: node {node!r} has {len(nodes[node].output)} output(s), no output {index}"
            )
        name = nodes[node].output[index]
        vi = known.get(name)
        if vi is None or not vi.type.tensor_type.elem_type:
            raise AtcError(f"E10001: --out_nodes: the type of {node}:{index} ({name!r}) cannot be inferred")
        outs.append(vi)
    del model.graph.output[:]
    model.graph.output.extend(outs)


def _cast_outputs(model, opts):
    """--output_type: a Cast at the end of each output whose type changes (the name stays)."""
    if opts.output_type is None:
        return
    onnx, _ = _imports()
    producer = {o: (n.name, i) for n in model.graph.node for i, o in enumerate(n.output)}
    if isinstance(opts.output_type, dict):
        wanted = {}
        for (node, index), dtype in opts.output_type.items():
            match = [o.name for o in model.graph.output if producer.get(o.name) == (node, index)]
            if not match:
                raise AtcError(
                    f"E10001: Value [{opts.raw['output_type']}] for parameter [--output_type] is "
                    f"invalid. Reason: {node}:{index} is not an output of the model"
                )
            wanted[match[0]] = dtype
    else:
        wanted = {o.name: opts.output_type for o in model.graph.output}
    for out in model.graph.output:
        dtype = wanted.get(out.name)
        if dtype is None or _ONNX_DTYPES.get(out.type.tensor_type.elem_type) == dtype:
            continue
        inner = f"{out.name}__before_output_type"
        for n in model.graph.node:
            for i, x in enumerate(n.input):
                if x == out.name:
                    n.input[i] = inner
            for i, x in enumerate(n.output):
                if x == out.name:
                    n.output[i] = inner
        model.graph.node.append(
            onnx.helper.make_node(
                "Cast", [inner], [out.name], to=_ONNX_OF[dtype], name=f"{out.name}__output_type"
            )
        )
        out.type.tensor_type.elem_type = _ONNX_OF[dtype]


def _feeds(specs, row):
    """Zero inputs at one profile (row: the symbol values; None for a static model)."""
    feeds = {}
    for s in specs:
        shape = [row[-1 - d] if d < 0 else d for d in s.dims]
        feeds[s.name] = np.zeros(shape, dtype=s.dtype)
    return feeds


def _profile_rows(opts, sym_ranges):
    """The symbol rows conversion runs at: every profile, or None (static)."""
    if opts.dynamic in ("batch", "hw", "dims"):
        return [list(r) for r in opts.profiles]
    return [None]


def _range_output_dims(declared):
    """A range model's output dims: ONNX Runtime's inferred fixed dims, -1 for the rest
    (``declared``: the session's output shape, ints, names or None per dimension)."""
    return tuple(d if isinstance(d, int) and d >= 1 else -1 for d in declared)


def _range_time(model, specs, row, soc):
    """(us at the lower bounds without the per-item part, us per item) of a range model."""
    base, _ = cost.estimate_us(_with_shapes(model, specs, row), soc)
    first = specs[0].dims[0] if specs and specs[0].dims else 0
    if first >= 0:
        return base, 0.0
    s = -1 - first
    bigger = list(row)
    bigger[s] += 1
    more, _ = cost.estimate_us(_with_shapes(model, specs, bigger), soc)
    per_item = max(0.0, more - base)
    return max(0.0, base - per_item * row[s]), per_item


def _with_shapes(model, specs, row):
    """A copy of ``model`` whose inputs have the profile's concrete shapes (for cost.py)."""
    import copy

    m = copy.deepcopy(model)
    concrete = [
        IoSpec(s.name, s.dtype, s.format, tuple(row[-1 - d] if d < 0 else d for d in s.dims)) for s in specs
    ]
    _fix_inputs(m, concrete)
    return m


_DYNAMIC_FLAG = {"batch": "dynamic_batch_size", "hw": "dynamic_image_size", "dims": "dynamic_dims",
                 "range": "input_shape"}


def convert(opts, command=""):
    """The ConvertedModel for ``opts`` (flags.AtcOptions); AtcError on any problem."""
    _onnx, ort = _imports()
    soc = cost.soc(opts.soc_version)
    model = load_onnx(opts.model)
    inputs = _graph_inputs(model)
    for what, io in [("input", vi) for vi in inputs] + [("output", vi) for vi in model.graph.output]:
        _check_name(opts.model, what, io.name)
    specs, n_syms, sym_ranges = _input_specs(opts, inputs)
    aipp = aipp_config.apply(opts.insert_op_conf, specs) if opts.insert_op_conf else {}
    if opts.dynamic != "static" and any(s["aipp_mode"] == "dynamic" for s in aipp.values()):
        raise AtcError(
            f"E10001: Value [{opts.insert_op_conf}] for parameter [--insert_op_conf] is invalid. Reason: "
            f"dynamic AIPP with --{_DYNAMIC_FLAG[opts.dynamic]} is not modelled by the simulator"
        )
    _select_outputs(model, opts)
    _cast_outputs(model, opts)
    _fix_inputs(model, specs)
    blob = model.SerializeToString()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    try:
        sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise AtcError(
            f"E10001: Value [{opts.model}] for parameter [--model] is invalid. Reason: ONNX Runtime "
            f"cannot build the graph (an unsupported op or a malformed node): "
            f"{str(exc).splitlines()[0]}"
        ) from None
    out_names = [o.name for o in sess.get_outputs()]
    if opts.dynamic == "range":
        converted = _convert_range(opts, model, blob, sess, specs, n_syms, sym_ranges, soc, command)
        converted.aipp = aipp
        return converted
    rows = _profile_rows(opts, sym_ranges)
    shapes, dtypes, times, work = [], None, [], 0
    for row in rows:
        try:
            results = sess.run(out_names, _feeds(specs, row))
        except Exception as exc:
            at = "" if row is None else f" at profile {','.join(map(str, row))}"
            raise AtcError(
                f"E10001: ONNX Runtime rejects the model{at}: {str(exc).splitlines()[0]}"
            ) from None
        shapes.append([tuple(int(d) for d in r.shape) for r in results])
        dtypes = [str(r.dtype) for r in results]
        shaped = _with_shapes(model, specs, row) if row else model
        us, _unknown = cost.estimate_us(shaped, soc)
        times.append(us)
        work = max(work, cost.work_bytes(shaped))   # the largest gear's
    outputs = []
    for k, name in enumerate(out_names):
        if dtypes[k] not in _ONNX_OF:
            raise AtcError(
                f"output {name!r} is {dtypes[k]}: the simulator's tensors are float32, float16, int32, "
                "int64 or uint8; choose one with --output_type"
            )
        per_gear = [s[k] for s in shapes]
        if len({len(p) for p in per_gear}) != 1 or len(per_gear[0]) > 8:
            raise AtcError(f"output {name!r} changes rank between profiles or has rank above 8")
        dims = tuple(
            per_gear[0][d] if all(p[d] == per_gear[0][d] for p in per_gear) else -1
            for d in range(len(per_gear[0]))
        )
        outputs.append(IoSpec(name, dtypes[k], "ND", dims, [list(p) for p in per_gear] if rows[0] else []))
    if opts.latency_us:
        times = opts.latency_us * len(rows) if len(opts.latency_us) == 1 else list(opts.latency_us)
    gears = [list(r) for r in rows] if rows[0] is not None else []
    name = os.path.basename(_om_path(opts.output))[:-3] or "model"
    return ConvertedModel(
        name=name[:127],
        onnx=blob,
        inputs=specs,
        outputs=outputs,
        kind=opts.dynamic,
        gears=gears,
        n_syms=n_syms if gears else 0,
        gear_latency_us=times if gears else [],
        latency_us=times[0] if not gears else 0.0,
        command=command,
        aipp=aipp,
        work_bytes=work,
    )


_ORT_TYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(uint8)": "uint8",
}


def _convert_range(opts, model, blob, sess, specs, n_syms, sym_ranges, soc, command):
    """The ConvertedModel of a shape-range conversion (see the module docstring)."""
    declared = {o.name: o for o in model.graph.output}
    outputs, lower = [], [lo for lo, _hi in sym_ranges]
    for o in sess.get_outputs():
        dtype = _ORT_TYPES.get(o.type)
        if dtype is None:
            raise AtcError(
                f"output {o.name!r} is {o.type}: the simulator's tensors are float32, float16, int32, int64 "
                "or uint8; choose one with --output_type"
            )
        vi = declared.get(o.name)
        if vi is not None and vi.type.tensor_type.HasField("shape"):
            dims = _range_output_dims(o.shape)
        else:  # rank unknown to shape inference: one run at the lower bounds shows it
            try:
                ran = sess.run([o.name], _feeds(specs, lower))[0]
            except Exception as exc:
                raise AtcError(
                    f"E10001: output {o.name!r} has no shape in the graph and ONNX Runtime rejects the "
                    f"model at the lower bounds of its ranges ({','.join(map(str, lower))}): "
                    f"{str(exc).splitlines()[0]}"
                ) from None
            dims = tuple(-1 for _ in ran.shape)
        if len(dims) > 8:
            raise AtcError(f"output {o.name!r} has rank {len(dims)}: the simulator supports up to 8")
        outputs.append(IoSpec(o.name, dtype, "ND", dims))
    base, per_item = _range_time(model, specs, lower, soc)
    if opts.latency_us:
        base, per_item = opts.latency_us[0], 0.0
    name = os.path.basename(_om_path(opts.output))[:-3] or "model"
    return ConvertedModel(
        name=name[:127],
        onnx=blob,
        inputs=specs,
        outputs=outputs,
        kind="range",
        n_syms=n_syms,
        sym_ranges=[tuple(r) for r in sym_ranges],
        latency_us=base,
        latency_per_item_us=per_item,
        command=command,
        # at the upper bounds when every range has one, else at the lower bounds
        work_bytes=cost.work_bytes(_with_shapes(model, specs, _work_row(sym_ranges))),
    )


def _work_row(sym_ranges):
    """The symbol values a range model's work memory is planned at: each range's upper bound, or its
    lower bound when it has none."""
    return [hi if hi > 0 else lo for lo, hi in sym_ranges]


def _om_path(output):
    return output if output.endswith(".om") else output + ".om"
