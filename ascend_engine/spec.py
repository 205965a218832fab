"""Pipeline spec files: a pipeline described in YAML or JSON (docs/pipeline-spec.md).

::

    device: 0
    inputs:
      x: {dtype: float32, shape: [-1, 64]}
    models:
      - {name: enc, path: encoder.om, inputs: [x]}
      - {name: head, path: head.om, inputs: [enc.y]}
    outputs:
      probs: head
    compile: {depth: 8, streams: per-model, max_delay_ms: 2}

A ``host:`` list adds host steps, Python functions named ``module:function``
that run between models (``Pipeline.host``)::

    host:
      - name: nms
        function: steps:keep_boxes
        inputs: [image, det.scores, det.boxes]
        outputs: {crops: {dtype: float32, shape: [-1, 8, 8]}}
        rows: any
        max_rows: 32

:func:`parse` checks the schema without touching a device and returns a
:class:`Spec`; :func:`build` turns a Spec into a :class:`Pipeline`;
:func:`load` does both and also returns the keyword arguments for
``Pipeline.compile``.  Every schema error is a :class:`SpecError` naming the
key path (``models[1].inputs[0]``), what was expected and what was found.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ascend_engine._checks import is_tensor_dtype, shown
from ascend_engine._checks import shape as check_shape
from ascend_engine.errors import (
    PipelineError,
    SpecError,  # noqa: F401  (spec.SpecError stays importable)
)
from ascend_engine.native_step import NativeStep
from ascend_engine.options import MAX_HOST_WORKERS, OPTIONS, SPEC_KEYS
from ascend_engine.pipeline import Pipeline
from ascend_engine.planner.builder import MAX_STEP_ROWS, ROWS_CHOICES
from ascend_engine.spec_files import SPEC_SUFFIXES, is_spec_path, read  # noqa: F401  (spec.read stays)
from ascend_engine.spec_images import ImageSpec, add_image, bytes_input, image_steps, is_bytes_input
from ascend_engine.spec_images import to_dict as image_to_dict
from ascend_engine.spec_steps import add_step, parse_step
from ascend_engine.toposort import CycleError, topological_order

TOP_KEYS = ("device", "inputs", "models", "host", "images", "outputs", "compile")
INPUT_KEYS = ("dtype", "shape", "bench_shape")
MODEL_KEYS = ("name", "path", "inputs", "device", "stream")
HOST_KEYS = ("name", "function", "inputs", "outputs", "rows", "max_rows", "step", "params")
HOST_OUTPUT_KEYS = ("dtype", "shape")
COMPILE_KEYS = SPEC_KEYS


@dataclass
class InputSpec:
    """A pipeline input: ``name``, numpy ``dtype`` and ``shape`` (-1 first: the batch).

    ``bench_shape``: the shape ``bench`` and ``trace`` feed this input when no
    ``--shapes`` is given (None: their defaults).  A bytes input (one JPEG per
    request, ``dtype: bytes``) has ``max_bytes`` set, and ``bench_size``: the
    (width, height) of the JPEGs bench and trace encode for it (None: the
    decode's ``max_size``).
    """

    name: str
    dtype: np.dtype
    shape: tuple
    bench_shape: tuple | None = None
    max_bytes: int | None = None
    bench_size: tuple | None = None


@dataclass
class ModelSpec:
    """A model node: its name, absolute model path, input references and placement."""

    name: str
    path: str
    inputs: list
    device: int | None = None
    stream: str | None = None
    index: int = 0            # position in the spec's ``models`` list (for key paths)


@dataclass
class HostSpec:
    """A host step: its name, the function it names (``module:function``, not
    imported: :func:`build` imports it when code is allowed), input references,
    declared outputs ``[(name, dtype, shape)]`` and rows.  A native step
    (``step:``, ascend_engine/spec_steps.py) has ``step`` and ``params``
    instead of a function and outputs."""

    name: str
    function: str
    inputs: list
    outputs: list
    rows: str = "same"
    max_rows: int | None = None
    index: int = 0            # position in the spec's ``host`` list (for key paths)
    step: str = ""            # a native step's name (then function is "" and outputs [])
    params: dict = field(default_factory=dict)


@dataclass
class Spec:
    """A validated spec document.

    ``models``, ``host`` and ``images`` are in dependency order; ``nodes``
    holds the three kinds in one dependency order (the order :func:`build`
    adds them in).
    """

    device: int
    inputs: list
    models: list
    outputs: list             # (name, reference)
    compile: dict = field(default_factory=dict)
    source: str | None = None
    host: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    base_dir: str = ""        # the spec's folder: host-step modules are looked for there after sys.path
    images: list = field(default_factory=list)

    @property
    def host_code(self) -> list:
        """The host steps that name Python code (``function:``); native steps (``step:``) are not code."""
        return [h for h in self.host if h.function]


class Loaded(NamedTuple):
    """What :func:`load` returns: the pipeline and ``Pipeline.compile`` keyword arguments."""

    pipeline: Pipeline
    compile_kwargs: dict


# ---- schema checks ----------------------------------------------------------------

def _kind(value) -> str:
    """How a value reads in an error message: its type and (bounded) repr."""
    if value is None:
        return "null"
    return f"{type(value).__name__} {shown(value)}"


class _Checker:
    def __init__(self, source):
        self.source = source

    def fail(self, key, message):
        raise SpecError(key, message, self.source)

    def mapping(self, key, value, allowed, required=()):
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping with keys {', '.join(allowed)}, got {_kind(value)}")
        for k in value:
            if not isinstance(k, str):
                self.fail(key, f"expected string keys, got {_kind(k)}")
            if k not in allowed:
                close = difflib.get_close_matches(k, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.fail(_join(key, k), f"unknown key{hint}; allowed keys: {', '.join(allowed)}")
        for k in required:
            if k not in value:
                self.fail(key, f"missing required key {k!r}")
        return value

    def name(self, key, value, what):
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected {what} (a non-empty string), got {_kind(value)}")
        return value

    def integer(self, key, value, what, minimum=None, maximum=None):
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected {what} (an integer), got {_kind(value)}")
        if minimum is not None and value < minimum:
            self.fail(key, f"expected {what} of at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            self.fail(key, f"expected {what} of at most {maximum}, got {value}")
        return value


def _join(key, part) -> str:
    if isinstance(part, int):
        return f"{key}[{part}]"
    return f"{key}.{part}" if key else part


def parse(data, base_dir: str | None = None, source: str | None = None) -> Spec:
    """Check a spec document (a dict) against the schema; returns a :class:`Spec`.

    Relative model paths resolve against ``base_dir`` (the spec file's folder;
    the working directory when None).  Model files must exist; nothing is
    loaded, and no code is imported: a host step's ``module:function`` is
    checked for its form only.  Models come back in dependency order.
    """
    c = _Checker(source)
    base_dir = os.path.abspath(base_dir or os.getcwd())
    c.mapping("", data, TOP_KEYS, required=("inputs", "models", "outputs"))

    device = c.integer("device", data.get("device", 0), "a device id", minimum=0)

    inputs = []
    raw_inputs = data["inputs"]
    if not isinstance(raw_inputs, dict) or not raw_inputs:
        c.fail("inputs", f"expected a mapping of input name -> {{dtype, shape}}, got {_kind(raw_inputs)}")
    for name, value in raw_inputs.items():
        key = _join("inputs", name)
        c.name(key, name, "an input name")
        if is_bytes_input(value):
            inputs.append(bytes_input(c, key, name, value, InputSpec))
            continue
        c.mapping(key, value, INPUT_KEYS, required=("dtype", "shape"))
        shape = _shape(c, _join(key, "shape"), value["shape"])
        bench_shape = None
        if "bench_shape" in value:
            bench_shape = _bench_shape(c, _join(key, "bench_shape"), value["bench_shape"], shape)
        inputs.append(InputSpec(name, _dtype(c, _join(key, "dtype"), value["dtype"]), shape, bench_shape))

    raw_models = data["models"]
    if not isinstance(raw_models, list) or not raw_models:
        c.fail("models", f"expected a non-empty list of models, got {_kind(raw_models)}")
    models = []
    for i, value in enumerate(raw_models):
        key = _join("models", i)
        c.mapping(key, value, MODEL_KEYS, required=("name", "path", "inputs"))
        name = c.name(_join(key, "name"), value["name"], "a model name")
        path = c.name(_join(key, "path"), value["path"], "a model file path")
        path = os.path.normpath(os.path.join(base_dir, os.path.expanduser(path)))
        if not os.path.isfile(path):
            c.fail(_join(key, "path"), f"model file not found: {path}")
        refs = _input_refs(c, _join(key, "inputs"), value["inputs"])
        dev = value.get("device")
        if dev is not None:
            c.integer(_join(key, "device"), dev, "a device id", minimum=0)
        stream = value.get("stream")
        if stream is not None and (isinstance(stream, bool) or not isinstance(stream, str | int)):
            c.fail(_join(key, "stream"), f"expected a stream label (a string), got {_kind(stream)}")
        models.append(ModelSpec(name, path, list(refs), dev, None if stream is None else str(stream), i))

    host = _host_steps(c, data.get("host"))
    images = image_steps(c, data.get("images"), _input_refs)
    _check_names(c, inputs, models, [*host, *images])

    raw_outputs = data["outputs"]
    if not isinstance(raw_outputs, dict) or not raw_outputs:
        c.fail("outputs", f"expected a mapping of output name -> tensor reference, got {_kind(raw_outputs)}")
    outputs = []
    for name, ref in raw_outputs.items():
        key = _join("outputs", name)
        c.name(key, name, "an output name")
        c.name(key, ref, "a tensor reference (input, model or model.output)")
        outputs.append((name, ref))

    nodes = _dependency_order(c, inputs, models + host + images, outputs)
    return Spec(device, inputs, [n for n in nodes if isinstance(n, ModelSpec)], outputs,
                _compile_options(c, data.get("compile", {}), [h.name for h in host]), source,
                host=[n for n in nodes if isinstance(n, HostSpec)], nodes=nodes, base_dir=base_dir,
                images=[n for n in nodes if isinstance(n, ImageSpec)])


def _host_steps(c, raw) -> list:
    """The ``host:`` list: each step's function name, outputs and rows checked (nothing imported)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        c.fail("host", f"expected a list of host steps, got {_kind(raw)}")
    steps = []
    for i, value in enumerate(raw):
        key = _join("host", i)
        if isinstance(value, dict) and "step" in value:
            c.mapping(key, value, HOST_KEYS, required=("name", "step", "inputs"))
            name = c.name(_join(key, "name"), value["name"], "a host step name")
            refs = _input_refs(c, _join(key, "inputs"), value["inputs"])
            step, params = parse_step(c, key, value, len(refs))
            steps.append(HostSpec(name, "", list(refs), [], index=i, step=step, params=params))
            continue
        c.mapping(key, value, HOST_KEYS, required=("name", "function", "inputs", "outputs"))
        if "params" in value:
            c.fail(_join(key, "params"), "params apply to native steps (step:) only")
        name = c.name(_join(key, "name"), value["name"], "a host step name")
        function = _function_name(c, _join(key, "function"), value["function"])
        refs = _input_refs(c, _join(key, "inputs"), value["inputs"])
        outputs = _host_outputs(c, _join(key, "outputs"), value["outputs"])
        rows = value.get("rows", "same")
        if rows not in ROWS_CHOICES:
            c.fail(_join(key, "rows"), f"expected one of {', '.join(ROWS_CHOICES)}, got {_kind(rows)}")
        max_rows = value.get("max_rows")
        if rows == "any":
            if max_rows is None:
                c.fail(key, "rows: any needs max_rows (the most rows the step may return; "
                            "it sizes the buffers of everything after it)")
            c.integer(_join(key, "max_rows"), max_rows, "a row count", minimum=1, maximum=MAX_STEP_ROWS)
        elif max_rows is not None:
            c.fail(_join(key, "max_rows"), "max_rows applies to rows: any only (rows: same returns as many "
                                           "rows as the step is given)")
        steps.append(HostSpec(name, function, list(refs), outputs, rows, max_rows, i))
    return steps


def _function_name(c, key, text) -> str:
    """``module:function`` (a dotted attribute path after the colon), checked for its form only."""
    if not isinstance(text, str) or text.count(":") != 1 or not all(part.strip() for part in text.split(":")):
        c.fail(key, f"expected 'module:function' (a Python function to import), got {_kind(text)}")
    return text


def require_code_allowed(spec: Spec, allow_code: bool) -> None:
    """A spec whose host steps name functions is code: a :class:`SpecError` unless ``allow_code``."""
    code = spec.host_code
    if not code or allow_code:
        return
    c = _Checker(spec.source)
    steps = ", ".join(f"{h.name!r} ({h.function})" for h in code)
    c.fail(_join(_join("host", code[0].index), "function"),
           f"the spec's host step(s) {steps} name Python code that loading it would import and run: "
           "a spec with host functions is code. Load it with allow_code=True (on the command line: "
           "--allow-code) only if you trust it and the modules beside it (docs/pipeline-spec.md, "
           "\"Host steps are code\")")


def _import_function(c, key, text, base_dir):
    """Import ``module:function`` (a dotted attribute path after the colon).

    The module is looked for on ``sys.path`` and then in the spec's folder.
    """
    module_name, attr_path = (part.strip() for part in text.split(":"))
    added = base_dir not in sys.path
    if added:
        sys.path.append(base_dir)   # last: the spec's folder never shadows an installed module
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name != exc.name and not module_name.startswith(exc.name + "."):
            # the module exists but something it imports does not
            c.fail(key, f"importing module {module_name!r} failed: {exc}")
        c.fail(key, f"cannot import module {module_name!r}: no such module on sys.path or in {base_dir}")
    except Exception as exc:   # the module's own code failed: say how
        c.fail(key, f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}")
    finally:
        if added:
            try:
                sys.path.remove(base_dir)
            except ValueError:
                pass
    obj, where = module, module_name
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            c.fail(key, f"{where!r} has no attribute {part!r}{hint}")
        obj, where = getattr(obj, part), f"{where}.{part}"
    if not (callable(obj) or isinstance(obj, NativeStep)):
        c.fail(key, f"{text!r} is a {type(obj).__name__}, not a function "
                    "(expected a callable or a NativeStep)")
    return obj


def _host_outputs(c, key, value) -> list:
    """``outputs: {name: {dtype, shape}}`` in the order the function returns them."""
    if not isinstance(value, dict) or not value:
        c.fail(key, "expected a mapping of output name -> {dtype, shape}, in the order the function "
                    f"returns them, got {_kind(value)}")
    outputs = []
    for name, spec in value.items():
        out_key = _join(key, name)
        c.name(out_key, name, "an output name")
        if "." in name:
            c.fail(out_key, "an output name may not contain '.' (references are step.output)")
        c.mapping(out_key, spec, HOST_OUTPUT_KEYS, required=HOST_OUTPUT_KEYS)
        shape = _shape(c, _join(out_key, "shape"), spec["shape"])
        if shape[0] != -1:
            c.fail(_join(_join(out_key, "shape"), 0), "expected the rows (-1, null or batch) as the first "
                                                      f"dimension, got {_kind(spec['shape'][0])}")
        outputs.append((name, _dtype(c, _join(out_key, "dtype"), spec["dtype"]), shape))
    return outputs


def _dtype(c, key, value) -> np.dtype:
    if not isinstance(value, str):
        c.fail(key, f"expected a dtype name such as 'float32', got {_kind(value)}")
    try:
        dt = np.dtype(value)
    except (TypeError, ValueError):
        c.fail(key, f"expected a dtype name such as 'float32' or 'int8', got {shown(value)}")
    if not is_tensor_dtype(dt):
        c.fail(key, f"expected a numeric or bool dtype, got {value!r}")
    return dt


def _shape(c, key, value) -> tuple:
    """A shape: positive dimensions, -1 (or null, or 'batch') first for the batch, and -1 (or null)
    after the first for a size that changes per request (images of any size: ``[1, 3, -1, -1]``)."""
    if not isinstance(value, list) or not value:
        c.fail(key, f"expected a list of dimensions such as [-1, 64], got {_kind(value)}")
    dims = []
    for j, d in enumerate(value):
        if d is None or (d == "batch" and j == 0):   # null: -1, as None is in Python
            d = -1
        if isinstance(d, bool) or not isinstance(d, int) or d == 0 or d < -1:
            c.fail(_join(key, j), "expected a positive dimension, -1 or null (the batch as the first "
                                  "dimension, a size that changes per request after it; 'batch' as the first "
                                  f"one), got {_kind(value[j])}")
        dims.append(d)
    try:
        return check_shape(dims, "shape", variable=True)
    except ValueError as exc:
        c.fail(key, str(exc).removeprefix("shape: "))


def _input_refs(c, key, refs) -> list:
    """A node's ``inputs``: one tensor reference or a non-empty list of them."""
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list) or not refs:
        c.fail(key, f"expected a non-empty list of tensor references, got {_kind(refs)}")
    for j, ref in enumerate(refs):
        c.name(_join(key, j), ref, "a tensor reference (input, model or model.output)")
    return refs


def _bench_shape(c, key, value, shape) -> tuple:
    """``bench_shape``: a concrete shape of the input (a size for each -1, the other dimensions equal)."""
    if not isinstance(value, list) or not value or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                                                       for d in value):
        c.fail(key, f"expected a list of positive dimensions such as [4, 64], got {_kind(value)}")
    if len(value) != len(shape) or any(w != -1 and d != w for d, w in zip(value, shape, strict=True)):
        c.fail(key, f"expected the input's shape {list(shape)} with a size in place of each -1, got {value}")
    return tuple(value)


def _compile_options(c, value, host_names=()) -> dict:
    """The ``compile:`` mapping, each key checked by its kind in the table of options.py."""
    if value is None:
        return {}
    c.mapping("compile", value, COMPILE_KEYS)
    out = {}
    for name, v in value.items():
        option, key = OPTIONS[name], _join("compile", name)
        if option.kind == "int":
            out[name] = c.integer(key, v, option.what, minimum=option.minimum, maximum=option.maximum)
        elif option.kind == "choice":
            if v not in option.choices:
                c.fail(key, f"expected one of {', '.join(option.choices)}, got {_kind(v)}")
            out[name] = v
        elif option.kind == "bool":
            if not isinstance(v, bool):
                c.fail(key, f"expected true or false, got {_kind(v)}")
            out[name] = v
        elif option.kind == "seconds":
            try:
                option.check(v)
            except ValueError:
                c.fail(key, f"expected seconds (a finite number from {option.minimum} to "
                            f"{option.maximum}) or null, got {_kind(v)}")
            out[name] = None if v is None else float(v)
        elif option.kind == "ms":
            try:
                out[name] = option.check(v)
            except ValueError:
                c.fail(key, f"expected milliseconds (a finite number from {option.minimum} to "
                            f"{option.maximum}), got {_kind(v)}")
        elif option.kind == "sizes":
            try:
                out[name] = list(option.check(v))
            except ValueError as exc:
                c.fail(key, f"expected a list of distinct batch sizes from 1 to {option.maximum}, got "
                            f"{_kind(v)} ({exc})")
        else:   # workers (docs/executor.md, "Host steps")
            out[name] = _host_workers(c, v, host_names)
    return out


def _host_workers(c, value, host_names):
    """``host_workers``: threads for every host step (an integer) or ``{step: integer}``."""
    key = "compile.host_workers"
    if not host_names:
        c.fail(key, "the spec has no host steps")
    if isinstance(value, dict):
        for name, count in value.items():
            if name not in host_names:
                c.fail(_join(key, str(name)), f"not a host step; the host steps: {', '.join(host_names)}")
            c.integer(_join(key, name), count, "a thread count", minimum=1, maximum=MAX_HOST_WORKERS)
        return dict(value)
    return c.integer(key, value, "a thread count per host step (or a mapping step -> count)", minimum=1,
                     maximum=MAX_HOST_WORKERS)


def _node_key(node) -> str:
    """``models[i]``, ``host[i]`` or ``images[i]``: where a node is in the document."""
    kind = "host" if isinstance(node, HostSpec) else "images" if isinstance(node, ImageSpec) else "models"
    return _join(kind, node.index)


def _check_names(c, inputs, models, host=()):
    seen = {}
    for inp in inputs:
        seen[inp.name] = _join("inputs", inp.name)
    for m in [*models, *host]:
        key = _join(_node_key(m), "name")
        if m.name in seen:
            c.fail(key, f"the name {m.name!r} is already used by {seen[m.name]}")
        seen[m.name] = key


def _split_ref(ref, input_names, model_names):
    """What a tensor reference names, as ``(model, output)``.

    ``(None, ref)`` for a pipeline input, ``(model, None)`` for a model's
    only output, ``(model, output)`` for ``model.output``: the longest model
    name that prefixes the reference (names may hold dots).  KeyError when
    it names nothing.
    """
    if ref in input_names:
        return None, ref
    if ref in model_names:
        return ref, None
    head = ref
    while "." in head:
        head = head.rsplit(".", 1)[0]
        if head in model_names:
            return head, ref[len(head) + 1:]
    raise KeyError(ref)


def _ref_error(c, key, ref, input_names, nodes):
    if all(isinstance(n, ModelSpec) for n in nodes.values()):
        what, dotted = "a model", "model.output"
    elif not any(isinstance(n, ImageSpec) for n in nodes.values()):
        what, dotted = "a model or host step", "node.output"
    else:
        what, dotted = "a model, host step or image step", "node.output"
    c.fail(key, f"unknown tensor {ref!r}: expected an input ({', '.join(input_names) or 'none'}), "
                f"{what} ({', '.join(nodes)}) or {dotted}")


def _dependency_order(c, inputs, models, outputs) -> list:
    """Nodes (models and host steps) sorted so that each comes after the nodes it reads from."""
    input_names = [i.name for i in inputs]
    by_name = {m.name: m for m in models}
    deps = {}
    for m in models:
        deps[m.name] = []
        for j, ref in enumerate(m.inputs):
            try:
                p, _ = _split_ref(ref, input_names, by_name)
            except KeyError:
                _ref_error(c, f"{_node_key(m)}.inputs[{j}]", ref, input_names, by_name)
            if p is not None:
                deps[m.name].append(p)
    for name, ref in outputs:
        try:
            _split_ref(ref, input_names, by_name)
        except KeyError:
            _ref_error(c, _join("outputs", name), ref, input_names, by_name)

    names = [m.name for m in models]
    index = {name: k for k, name in enumerate(names)}
    try:   # listed order breaks ties, so independent models keep their order
        order = topological_order([[index[p] for p in deps[name]] for name in names])
    except CycleError as exc:
        cycle = [names[k] for k in exc.cycle]
        if all(isinstance(by_name[n], ModelSpec) for n in cycle):
            c.fail("models", f"the models form a cycle: {' -> '.join(cycle)} (a model may only read "
                             "pipeline inputs and the outputs of models before it in the graph)")
        c.fail("images" if any(isinstance(by_name[n], ImageSpec) for n in cycle) else "host",
               f"the models and host steps form a cycle: {' -> '.join(cycle)} (a node may only "
                       "read pipeline inputs and the outputs of nodes before it in the graph)")
    return [models[k] for k in order]


# ---- building ---------------------------------------------------------------------


def _resolve(c, key, ref, handles, outputs_of, host_names=None):
    """The TensorHandle a reference names, given the handles built so far."""
    try:
        model, wanted = _split_ref(ref, handles, outputs_of)
    except KeyError:
        raise AssertionError(f"unresolved reference {ref!r}") from None   # parse() checked every reference
    if model is None:
        return handles[ref]
    outs = outputs_of[model]
    what = (host_names or {}).get(model, "model")   # {name: "host step" or "image step"}
    if wanted is None:
        if len(outs) != 1:
            names = ", ".join(f"{ref}.{h.name.split('.')[-1]}" for h in outs)
            c.fail(key, f"{what} {ref!r} has {len(outs)} outputs: name one of {names}")
        return outs[0]
    for h in outs:
        if h.name == f"{model}.{wanted}":
            return h
    have = ", ".join(h.name[len(model) + 1:] for h in outs)
    c.fail(key, f"{what} {model!r} has no output {wanted!r}; its outputs: {have}")


def build(spec: Spec, device: int | None = None, allow_code: bool = False) -> Pipeline:
    """Build the :class:`Pipeline` a parsed spec describes (model files are read here).

    ``device`` moves the whole pipeline (and every model) to another device.
    A spec with host steps imports and runs the modules they name, so it is
    refused with a :class:`SpecError` unless ``allow_code`` is true.
    """
    require_code_allowed(spec, allow_code)
    c = _Checker(spec.source)
    pipe_device = spec.device if device is None else int(device)
    pipe = Pipeline(device=pipe_device)
    handles = {}
    for inp in spec.inputs:
        handles[inp.name] = (pipe.bytes_input(inp.name, inp.max_bytes) if inp.max_bytes
                             else pipe.input(inp.name, inp.dtype, inp.shape))
    outputs_of = {}
    host_names = {**{h.name: "host step" for h in spec.host}, **{m.name: "image step" for m in spec.images}}
    for m in spec.nodes or spec.models:
        key = _node_key(m)
        ins = [_resolve(c, f"{key}.inputs[{j}]", ref, handles, outputs_of, host_names)
               for j, ref in enumerate(m.inputs)]
        if isinstance(m, HostSpec) and m.function:
            fn = _import_function(c, _join(key, "function"), m.function, spec.base_dir or os.getcwd())
        try:
            if isinstance(m, ImageSpec):
                out = add_image(pipe, m, ins)
            elif isinstance(m, HostSpec) and m.step:
                out = add_step(pipe, m.step, m.params, m.name, ins)
            elif isinstance(m, HostSpec):
                out = pipe.host(fn, *ins, outputs=m.outputs, name=m.name, rows=m.rows, max_rows=m.max_rows)
            else:
                node_device = m.device if device is None else pipe_device
                out = pipe.model(m.path, *ins, name=m.name, device=node_device, stream=m.stream)
        except PipelineError as exc:
            raise SpecError(key, str(exc), spec.source) from exc
        outputs_of[m.name] = list(out) if isinstance(out, tuple) else [out]
    for name, ref in spec.outputs:
        pipe.output(name, _resolve(c, _join("outputs", name), ref, handles, outputs_of, host_names))
    return pipe


def _parse_any(path_or_dict, base_dir=None) -> Spec:
    if isinstance(path_or_dict, dict):
        return parse(path_or_dict, base_dir=base_dir)
    path = os.fspath(path_or_dict)
    data = read(path)
    return parse(data, base_dir=os.path.dirname(os.path.abspath(path)), source=path)


def load(path_or_dict, device: int | None = None, base_dir: str | None = None,
         allow_code: bool = False) -> Loaded:
    """Read, check and build a spec; returns ``(pipeline, compile_kwargs)``.

    ``path_or_dict`` is a spec file (YAML, or JSON for ``.json``) or an
    already-parsed document; for a dict, relative model paths resolve against
    ``base_dir`` (default: the working directory).  ``allow_code``: see
    :func:`build` (a spec with host steps is code).
    """
    spec = _parse_any(path_or_dict, base_dir)
    return Loaded(build(spec, device=device, allow_code=allow_code), dict(spec.compile))


def from_spec(path_or_dict, device: int | None = None, base_dir: str | None = None,
              allow_code: bool = False) -> Pipeline:
    """The pipeline a spec describes (its compile options: :func:`load`)."""
    return load(path_or_dict, device=device, base_dir=base_dir, allow_code=allow_code).pipeline


def to_dict(spec: Spec) -> dict[str, Any]:
    """A spec as a plain document (absolute model paths), e.g. to save it as JSON."""
    return {
        "device": spec.device,
        "inputs": {i.name: _input_to_dict(i) for i in spec.inputs},
        "models": [
            {k: v for k, v in (("name", m.name), ("path", m.path), ("inputs", list(m.inputs)),
                               ("device", m.device), ("stream", m.stream)) if v is not None}
            for m in sorted(spec.models, key=lambda m: m.index)
        ],
        **({"host": [_host_to_dict(h) for h in sorted(spec.host, key=lambda h: h.index)]}
           if spec.host else {}),
        **({"images": [image_to_dict(m) for m in sorted(spec.images, key=lambda m: m.index)]}
           if spec.images else {}),
        "outputs": dict(spec.outputs),
        "compile": dict(spec.compile),
    }


def _host_to_dict(h) -> dict:
    if h.step:
        return {"name": h.name, "step": h.step, "inputs": list(h.inputs),
                **({"params": dict(h.params)} if h.params else {})}
    return {k: v for k, v in (("name", h.name), ("function", h.function), ("inputs", list(h.inputs)),
                              ("outputs", {n: {"dtype": dt.name, "shape": list(shape)}
                                           for n, dt, shape in h.outputs}),
                              ("rows", h.rows), ("max_rows", h.max_rows)) if v is not None}


def _input_to_dict(i) -> dict:
    if i.max_bytes:
        return {"dtype": "bytes", "max_bytes": i.max_bytes,
                **({"bench_size": list(i.bench_size)} if i.bench_size else {})}
    return {"dtype": i.dtype.name, "shape": list(i.shape),
            **({"bench_shape": list(i.bench_shape)} if i.bench_shape else {})}
