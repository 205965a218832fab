"""Pipeline graphs: build, validate and plan; the executor runs the plan.

Python only configures.  A :class:`Pipeline` records inputs, model nodes and
outputs; :meth:`Pipeline.compile` validates the graph against the models'
descriptors, plans streams, buffer sizes and device memory, and hands the
plan to the native executor (:class:`ascend_engine.Engine`).

Planning rules (see DESIGN.md §6):

* every tensor is row based: its first dimension is the request's batch;
* a request may carry up to ``max_batch`` rows: the smallest "largest gear"
  of the dynamic models, or the batch a static model was built for;
* each tensor's buffer is as large as the largest descriptor size of the
  model outputs and inputs it is bound to (the padded sizes the device needs);
* tensors whose lifetimes within a request cannot overlap share memory: a
  buffer is reused only when every reader of its previous tensor is ordered
  (by event or stream order) before the writer of the next one; a tensor
  nothing reads lives until its writer has finished;
* a node with ``instances=k`` runs request r on instance r % k, each instance
  on a stream of its own: its stream changes per request, so stream order
  never orders it (only events do);
* every buffer is carved at 128-byte alignment with 32 bytes of padding;
* a host step (``pipe.host``) is a node too, on a stream of its own for the
  copies of its inputs and outputs; with ``rows="any"`` it sets the rows of
  everything downstream of it (its *row domain*): those tensors hold
  ``max_rows`` rows, plus the padding of the gears their models run at;
* a *shaped* tensor has dimensions after the first that change per request
  (``-1``): it is a pipeline input or an output of an image-size or
  dims-gear model, and only such models (or pipeline outputs) read it.
  Its buffer holds the largest gear; per request every such model runs the
  smallest gear holding its inputs (see :class:`ShapedRequests`).
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field

import numpy as np

from ascend_engine._checks import (
    GEAR_POLICIES,
    MAX_DEPTH,
    MAX_QUEUE,
    delay_ms,
    device_id,
    positive_int,
    timeout_ms,
)
from ascend_engine._checks import shape as check_shape
from ascend_engine._feeds import shape_text
from ascend_engine.errors import PipelineError  # noqa: F401  (pipeline.PipelineError stays importable)
from ascend_engine.toposort import CycleError, topological_order

ALIGN = 128
PADDING = 32
POOL_HEADROOM = 1.15   # the seed article's "peak working set + 10-20 %", middle of the range


def _text(shape) -> str:
    """A shape for messages: -1 written as such when a later dimension varies, else as ``batch``."""
    return shape_text(shape, "-1" if any(d == -1 for d in shape[1:]) else "batch")


def carve(nbytes: int) -> int:
    """Bytes a buffer of ``nbytes`` occupies when carved from the arena."""
    return (nbytes + PADDING + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class TensorHandle:
    """A tensor of a pipeline: a pipeline input or one output of a model node."""

    pipeline_id: int
    index: int
    name: str
    dtype: np.dtype
    shape: tuple

    def __repr__(self) -> str:
        return f"TensorHandle({self.name!r}, {self.dtype}, {_text(self.shape)})"


class NativeStep:
    """A host step implemented in native code: the address of a C function
    with the ``ae_host_fn`` signature of executor.h (docs/executor.md, "Host
    steps"), and the ``context`` pointer it is called with.

    It runs on the engine's worker thread without the GIL.  Keep whatever
    owns the function (a ctypes callback object, a loaded library) alive
    while engines use it: pass it as ``keep``.  A ctypes function pointer
    given to ``pipe.host`` directly is wrapped in a NativeStep.
    """

    def __init__(self, address: int, context: int = 0, keep=None):
        if not isinstance(address, int) or isinstance(address, bool) or address <= 0:
            raise PipelineError(f"NativeStep: address must be a nonzero function address (int), "
                                f"got {address!r}")
        if not isinstance(context, int) or isinstance(context, bool) or context < 0:
            raise PipelineError(f"NativeStep: context must be an address (int >= 0), got {context!r}")
        self.address = address
        self.context = context
        self.keep = keep

    def __repr__(self) -> str:
        return f"NativeStep(address={self.address:#x}, context={self.context:#x})"


ROWS_CHOICES = ("same", "any")
MAX_STEP_ROWS = 1 << 20


@dataclass
class _Node:
    name: str
    model: object            # a Model, or a path loaded at compile(); None for a host step
    inputs: list             # TensorHandle per model input
    outputs: list = field(default_factory=list)
    device: int | None = None
    stream: object = None
    path: str | None = None    # model file loaded per engine at compile()
    instances: int = 1
    kind: str = "model"        # or "host"
    fn: object = None          # a host step's Python callable or NativeStep
    rows: str = "same"         # a host step's rows: "same" as its inputs, or "any" up to max_rows
    max_rows: int = 0


@dataclass
class PlanTensor:
    """A tensor in the compiled plan (what the executor needs to know)."""

    name: str
    dtype: np.dtype
    shape: tuple
    row_bytes: int
    capacity: int = 0
    offset: int = 0
    producer: int = -1       # node index, -1 for pipeline inputs
    readers: list = field(default_factory=list)
    domain: int = -1         # whose rows it carries: -1 the request's, else a host step's node index
    max_rows: int = 0        # rows its buffer must hold (padding of gears included)
    device: int = 0          # index into Plan.devices of the device holding it
    shaped: bool = False     # its trailing dimensions change per request (row_bytes is the largest)


@dataclass
class PlanNode:
    """A model node in the compiled plan."""

    name: str
    model: object
    stream: int
    inputs: list             # tensor index per model input, -1 at the dynamic-batch input
    outputs: list
    dyn_index: int
    dyn_offset: int
    dyn_size: int
    gears: tuple
    static_batch: int
    instances: int = 1
    streams: tuple = ()        # the stream of each instance (streams[0] == stream)
    models: list = field(default_factory=list)   # the loaded instances, when instances > 1
    weight_bytes: int | None = None   # device bytes of the weights, once however many instances
    work_bytes: int | None = None     # device work bytes of one instance
    kind: str = "model"               # or "host" (model is then None)
    fn: object = None                 # a host step's callable or NativeStep
    rows_any: bool = False
    max_rows: int = 0
    workers: int = 1
    domain: int = -1                  # whose rows the node runs on (-1: the request's)
    input_names: tuple = ()           # a host step's input tensor names, for messages
    output_specs: tuple = ()          # a host step's (name, dtype, trailing shape) per output
    device: int = 0                   # index into Plan.devices
    bridge_stream: int = -1           # a copy through the host: its stream on the source device
    shape_kind: str = ""              # "hw" or "dims": the gear is chosen per request from shapes
    gear_io: tuple = ()               # shaped nodes: (gear, input shapes, output shapes) per gear
    follow: tuple = ()                # shaped nodes: Model.output_follow
    dims_table: tuple = ()            # dims gears over a host step's rows: every gear's values
    row_dims: tuple = ()              # ... and where the inputs' rows sit among them


@dataclass
class Plan:
    """Everything the executor creates at compile time, decided in Python."""

    device: int
    depth: int
    n_streams: int
    single_stream: bool
    profile: bool
    timeout_ms: int
    wait: str                # "block" (sleep until done) or "spin" (poll, burning a core)
    tensors: list
    nodes: list
    inputs: list             # (name, tensor index)
    outputs: list            # (name, tensor index)
    slot_bytes: int
    max_batch: int
    fixed_batch: int         # 0, or the only batch a request may have (static models)
    working_set: int         # bytes live at the busiest point of one request, unshared
    unshared_bytes: int      # one slot's bytes if no tensor shared memory
    # serving (submit / run / run_async): see docs/executor.md
    max_queue: int = 0       # requests admitted but not yet on the device
    max_delay_ms: float = 0.0  # dynamic batcher: longest wait for more rows (0: no batching)
    gear_policy: str = "upper"
    gears: tuple = ()        # batch sizes the batcher aims at (the models' gears up to max_batch)
    devices: tuple = ()      # device ids; [0] is `device` (inputs arrive and outputs leave there)
    device_slot_bytes: tuple = ()   # one slot's bytes on each device ([0] == slot_bytes)
    stream_devices: tuple = ()      # per compute stream: index into devices

    @property
    def shaped(self) -> bool:
        """Whether some model picks its gear from each request's shapes (image size, dims)."""
        return any(n.shape_kind for n in self.nodes)

    @property
    def variable_outputs(self) -> list:
        """Indices of the outputs whose rows a host step sets (they differ per request)."""
        return [k for k, (_name, t) in enumerate(self.outputs) if self.tensors[t].domain >= 0]

    def memory_report(self) -> dict:
        """Bytes per slot and per node, the arena, and the recommended pool size."""
        per_node = {}
        for n in self.nodes:
            if n.kind == "host":
                per_node[n.name] = sum(self.tensors[t].capacity for t in n.outputs)
                continue
            per_node[n.name] = sum(self.tensors[t].capacity for t in n.outputs) + carve(n.dyn_size) * (
                n.dyn_index >= 0
            )
        peak = self.working_set * self.depth
        return {
            "device": self.device,
            "depth": self.depth,
            "slot_bytes": self.slot_bytes,
            "arena_bytes": sum(self.device_slot_bytes or (self.slot_bytes,)) * self.depth,
            "devices": list(self.devices or (self.device,)),
            "slot_bytes_per_device": list(self.device_slot_bytes or (self.slot_bytes,)),
            "unshared_slot_bytes": self.unshared_bytes,
            "per_node_bytes": per_node,
            "peak_working_set": peak,
            "recommended_pool_bytes": int(math.ceil(peak * POOL_HEADROOM / ALIGN) * ALIGN),
            "models": {
                n.name: {
                    "instances": n.instances,
                    "weight_bytes": n.weight_bytes,
                    "work_bytes_per_instance": n.work_bytes,
                    "device_bytes": n.weight_bytes + n.instances * n.work_bytes,
                }
                for n in self.nodes if n.weight_bytes is not None and n.work_bytes is not None
            },
        }


class Pipeline:
    """A graph of models: inputs, model nodes, edges (tensor handles) and outputs.

    >>> pipe = Pipeline(device=0)
    >>> x = pipe.input("x", "float32", (-1, 64))
    >>> h = pipe.model("encoder.om", x, name="enc")
    >>> pipe.output("y", pipe.model("head.om", h, name="head"))
    >>> engine = pipe.compile(depth=8)
    """

    _next_id = 0

    def __init__(self, device: int = 0):
        Pipeline._next_id += 1
        self._id = Pipeline._next_id
        self.device = int(device)
        self._inputs: list[TensorHandle] = []
        self._nodes: list[_Node] = []
        self._outputs: list[tuple[str, TensorHandle]] = []
        self._tensors: list[TensorHandle] = []
        self._names: set[str] = set()
        # tensor index -> (node name, output name) for outputs without a batch
        # dimension in dynamic-batch models (see _check_fixed_outputs)
        self._fixed_outputs: dict[int, tuple[str, str]] = {}

    def __repr__(self) -> str:
        return (
            f"Pipeline(device={self.device}, inputs={[t.name for t in self._inputs]}, "
            f"nodes={[n.name for n in self._nodes]}, outputs={[n for n, _ in self._outputs]})"
        )

    @classmethod
    def from_spec(cls, path_or_dict, device: int | None = None) -> Pipeline:
        """Build a pipeline from a spec file (YAML or JSON) or an already-parsed dict.

        See docs/pipeline-spec.md; ``ascend_engine.spec.load`` also returns
        the spec's compile options.  Schema errors raise ``SpecError`` (a
        :class:`PipelineError`) naming the key path.
        """
        from ascend_engine import spec

        return spec.from_spec(path_or_dict, device=device)

    # ---- building ---------------------------------------------------------

    def _new_tensor(self, name, dtype, shape) -> TensorHandle:
        handle = TensorHandle(self._id, len(self._tensors), name, np.dtype(dtype), tuple(shape))
        self._tensors.append(handle)
        return handle

    def _check(self, handle, where) -> TensorHandle:
        if not isinstance(handle, TensorHandle):
            raise PipelineError(f"{where}: expected a tensor handle from this pipeline, got {handle!r}")
        if handle.pipeline_id != self._id:
            raise PipelineError(f"{where}: tensor {handle.name!r} belongs to another pipeline")
        return handle

    def input(self, name: str, dtype, shape) -> TensorHandle:
        """Declare a pipeline input; a ``-1`` (or ``None``) first dimension is the request batch.

        ``-1`` in a later dimension makes the input *shaped*: its size changes
        per request (e.g. ``(1, 3, -1, -1)``, images of any size).  A shaped
        input may feed only image-size or dims-gear models (or be a pipeline
        output); each request is padded to the gear its model runs.
        """
        # None: the batch, as in TF/ONNX
        shape = check_shape(shape, f"input {name!r}", error=PipelineError, variable=True)
        if name in self._names:
            raise PipelineError(f"input {name!r}: the name is already used in this pipeline")
        self._names.add(name)
        handle = self._new_tensor(name, dtype, shape)
        self._inputs.append(handle)
        return handle

    def model(self, model, *inputs, name: str | None = None, device: int | None = None, stream=None,
              instances: int = 1):
        """Add a model node fed by ``inputs``; returns its output handle(s).

        ``model`` is a path to a model file (loaded at compile time) or a
        loaded :class:`ascend_engine.Model`.  Nodes that pass the same
        ``stream`` label share a stream; so do nodes using the same Model
        object (one loaded model may not execute on two streams at once).
        ``instances=k`` (a path only) loads the model k times sharing one
        copy of its weights, each instance on a stream of its own; request r
        runs on instance r % k, so k requests run the model at once.
        Returns one handle for a single-output model, else a tuple.
        """
        node_name = name or f"node{len(self._nodes)}"
        if node_name in self._names:
            raise PipelineError(f"model node {node_name!r}: the name is already used in this pipeline")
        instances = positive_int(instances, f"model node {node_name!r}: instances", 1024, error=PipelineError)
        handles = [self._check(h, f"model node {node_name!r}") for h in inputs]
        if instances > 1 and _is_model(model):
            raise PipelineError(
                f"model node {node_name!r}: instances={instances} needs a model file path (each engine "
                f"loads the instances itself, sharing one weight allocation), got a loaded "
                f"{type(model).__name__}"
            )
        if instances > 1 and stream is not None:
            raise PipelineError(
                f"model node {node_name!r}: instances={instances} runs on streams of its own, one per "
                f"instance; it cannot also take the stream label {stream!r}"
            )
        if not _is_model(model):
            model = str(model)
        node = _Node(node_name, model, handles, device=device, stream=stream, instances=instances)
        self._names.add(node_name)
        self._nodes.append(node)
        self._describe_outputs(node)
        return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)

    def host(self, fn, *inputs, outputs, name: str | None = None, rows: str = "same",
             max_rows: int | None = None):
        """Add a host step: code that runs on the host between models.

        ``fn(*arrays) -> array or tuple of arrays`` gets read-only numpy
        views of the request's rows of ``inputs`` (valid only during the
        call: copy what you keep) and returns one array per declared output.
        It runs on a worker thread of the engine while the device runs other
        requests.  ``fn`` may instead be native code: a :class:`NativeStep`
        or a ctypes function pointer with the ``ae_host_fn`` signature
        (docs/executor.md), called without the GIL.

        ``outputs`` declares ``[(name, dtype, shape), ...]``; each shape's
        first dimension is the rows (-1 or None).  ``rows="same"``: the step
        returns as many rows as it was given.  ``rows="any"``: it returns any
        number from 0 to ``max_rows`` (required), and every model after it
        runs on that many rows, at the gears ``compile(gear_policy=)``
        chooses, in several executions when they exceed the model's largest
        gear; zero rows skip the models.  Returns the output handle(s) like
        :meth:`model`.
        """
        node_name = name or f"node{len(self._nodes)}"
        where = f"host step {node_name!r}"
        if node_name in self._names:
            raise PipelineError(f"{where}: the name is already used in this pipeline")
        if rows not in ROWS_CHOICES:
            raise PipelineError(f"{where}: rows must be 'same' or 'any', got {rows!r}")
        if rows == "any":
            if max_rows is None:
                raise PipelineError(f"{where}: rows='any' needs max_rows (the most rows it may return; "
                                    "it sizes the buffers of everything after it)")
            max_rows = positive_int(max_rows, f"{where}: max_rows", MAX_STEP_ROWS, error=PipelineError)
        elif max_rows is not None:
            raise PipelineError(f"{where}: max_rows applies to rows='any' only (rows='same' returns as many "
                                "rows as it is given)")
        if isinstance(fn, ctypes._CFuncPtr):
            fn = NativeStep(ctypes.cast(fn, ctypes.c_void_p).value, keep=fn)
        if not isinstance(fn, NativeStep) and not callable(fn):
            raise PipelineError(f"{where}: fn must be a callable or a NativeStep, got {type(fn).__name__}")
        handles = [self._check(h, where) for h in inputs]
        if not handles:
            raise PipelineError(f"{where}: a host step needs at least one input")
        specs = self._output_specs(outputs, where)
        node = _Node(node_name, None, handles, kind="host", fn=fn, rows=rows, max_rows=max_rows or 0)
        self._names.add(node_name)
        self._nodes.append(node)
        for out_name, dtype, shape in specs:
            node.outputs.append(self._new_tensor(f"{node_name}.{out_name}", dtype, shape))
        return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)

    @staticmethod
    def _output_specs(outputs, where):
        """Check a host step's declared outputs: a list of (name, dtype, shape)."""
        if isinstance(outputs, (str, bytes)) or not hasattr(outputs, "__iter__"):
            raise PipelineError(f"{where}: outputs must be a list of (name, dtype, shape), "
                                f"got {outputs!r:.80}")
        specs, names = [], set()
        for k, item in enumerate(outputs):
            if not isinstance(item, (tuple, list)) or len(item) != 3:
                raise PipelineError(f"{where}: output {k} must be (name, dtype, shape), got {item!r:.80}")
            out_name, dtype, shape = item
            if not isinstance(out_name, str) or not out_name or out_name in names:
                raise PipelineError(f"{where}: output {k} needs a distinct, non-empty name, got {out_name!r}")
            names.add(out_name)
            try:
                dtype = np.dtype(dtype)
            except TypeError as exc:
                raise PipelineError(f"{where}: output {out_name!r}: {dtype!r} is not a dtype "
                                    f"({exc})") from None
            # -1 past the rows: the step chooses those sizes per request (a Python step, feeding models
            # with dynamic image size or dims, whose gears bound them)
            shape = check_shape(shape, f"{where}: output {out_name!r}", error=PipelineError, variable=True)
            if not shape or shape[0] != -1:
                raise PipelineError(f"{where}: output {out_name!r}: the first dimension must be the rows "
                                    f"(-1 or None), got {shape_text(shape)}")
            specs.append((out_name, dtype, shape))
        if not specs:
            raise PipelineError(f"{where}: a host step needs at least one output")
        return specs

    def _describe_outputs(self, node: _Node):
        """Give ``node`` its output handles, from its model's descriptor.

        The output specs are needed now (to return handles), so a model
        given by path is loaded briefly to read its descriptor; every
        compile() then loads its own instance.
        """
        if not _is_model(node.model):
            node.path = node.model
            node.model = _describe_file(node.path, self.device if node.device is None else node.device,
                                        node.name)
        kind = getattr(node.model, "dynamic_kind", "static")
        rows_dim = node.model.inputs[0].shape[0] if kind in ("hw", "dims") and node.model.inputs else None
        for spec in node.model.outputs:
            handle = self._new_tensor(f"{node.name}.{spec.name}", spec.dtype, spec.shape)
            if node.model.batch_sizes and (not spec.shape or spec.shape[0] != -1):
                self._fixed_outputs[handle.index] = (node.name, spec.name)
            elif rows_dim is not None and (not spec.shape or spec.shape[0] != rows_dim):
                self._fixed_outputs[handle.index] = (node.name, spec.name)
            node.outputs.append(handle)

    def output(self, name: str, handle: TensorHandle) -> None:
        """Mark ``handle`` as a pipeline output called ``name``."""
        self._check(handle, f"output {name!r}")
        if any(n == name for n, _ in self._outputs):
            raise PipelineError(f"output {name!r}: the name is already used")
        self._outputs.append((name, handle))

    # ---- compiling ----------------------------------------------------------

    def plan(self, depth: int = 4, streams: str = "per-model", profile: bool = False,
             timeout: float | None = 60.0, wait: str = "block", device: int | None = None,
             max_queue: int | None = None, max_delay_ms: float = 0.0, gear_policy: str = "upper",
             host_workers=1) -> Plan:
        """Validate the graph and return the plan (without creating anything).

        ``device`` places the plan on another device than the pipeline's
        (models given by path are loaded there; see :meth:`compile_replicas`).
        """
        device = self.device if device is None else device_id(device, error=PipelineError)
        depth = positive_int(depth, "depth", MAX_DEPTH, error=PipelineError)
        timeout_in_ms = timeout_ms(timeout, error=PipelineError)
        max_queue = 4 * depth if max_queue is None else positive_int(max_queue, "max_queue", MAX_QUEUE,
                                                                     error=PipelineError)
        max_delay_ms = delay_ms(max_delay_ms, "max_delay_ms", error=PipelineError)
        if gear_policy not in GEAR_POLICIES:
            raise PipelineError(f"gear_policy must be one of {', '.join(GEAR_POLICIES)}, got {gear_policy!r}")
        if wait not in ("block", "spin"):
            raise PipelineError(f"wait must be 'block' or 'spin', got {wait!r}")
        if streams not in ("per-model", "single"):
            raise PipelineError(f"streams must be 'per-model' or 'single', got {streams!r}")
        if not any(n.kind == "model" for n in self._nodes):
            raise PipelineError("the pipeline has no model nodes")
        if not self._outputs:
            raise PipelineError("the pipeline has no outputs: call pipe.output(name, handle)")
        self._check_devices(device)
        self._check_fixed_outputs()
        workers = self._host_workers(host_workers)
        order = self._topological_order()
        tensors = self._plan_tensors()
        max_batch, fixed = self._check_bindings(order, tensors)
        nodes = self._plan_nodes(order, tensors, streams == "single", workers, gear_policy, max_batch)
        for h in self._inputs + [h for n in self._nodes if n.kind == "host" for h in n.outputs]:
            if tensors[h.index].shaped and not any(nodes[r].shape_kind for r in tensors[h.index].readers):
                what = f"input {h.name!r}" if h in self._inputs else f"host step output {h.name!r}"
                raise PipelineError(
                    f"{what} has the shape {_text(h.shape)}, whose -1 dimensions change per "
                    "request, but it feeds no image-size or dims-gear model: nothing bounds its size"
                )
        if any(n.shape_kind for n in nodes):
            self._check_shaped_plan(nodes, tensors, max_delay_ms)
        if max_delay_ms and any(n.rows_any for n in nodes):
            raise PipelineError(
                "max_delay_ms: the dynamic batcher merges requests and splits their rows back per caller, "
                "but host step(s) " + ", ".join(repr(n.name) for n in nodes if n.rows_any) +
                " with rows='any' produce rows that belong to no single caller: compile with max_delay_ms=0"
            )
        for _name, h in self._outputs:
            tensors[h.index].readers.append(len(nodes))   # the copy-out step
        self._check_unused(tensors)
        outputs = [(n, h.index) for n, h in self._outputs]
        devices, stream_devices = self._place(order, nodes, tensors, outputs, device, streams == "single")
        region_bytes, working_set, unshared = _plan_memory(tensors, nodes, max_batch, len(devices))
        slot_bytes = region_bytes[0]
        n_streams = 1 if streams == "single" else len(stream_devices)
        return Plan(
            device=device, depth=depth, n_streams=n_streams, single_stream=streams == "single",
            profile=bool(profile), timeout_ms=timeout_in_ms, wait=wait,
            tensors=tensors, nodes=nodes,
            inputs=[(h.name, h.index) for h in self._inputs],
            outputs=outputs,
            slot_bytes=slot_bytes, max_batch=max_batch, fixed_batch=fixed,
            working_set=working_set, unshared_bytes=unshared,
            max_queue=max_queue, max_delay_ms=max_delay_ms, gear_policy=gear_policy,
            gears=tuple(sorted({g for n in nodes if n.domain < 0 for g in n.gears if g <= max_batch}
                               | {max_batch})),
            devices=tuple(devices), device_slot_bytes=tuple(region_bytes),
            stream_devices=tuple(stream_devices if streams != "single" else (0,)),
        )

    def compile(self, depth: int = 4, streams: str = "per-model", profile: bool = False,
                timeout: float | None = 60.0, wait: str = "block", device: int | None = None,
                max_queue: int | None = None, max_delay_ms: float = 0.0, gear_policy: str = "upper",
                host_workers=1, _unsafe_skip_waits: bool = False):
        """Validate, plan and create everything once; returns an :class:`Engine`.

        ``depth`` requests may be in flight at once (one slot each);
        ``streams="single"`` runs copies and models on one stream, for
        comparison; ``profile`` times every node with timing events;
        ``timeout`` (seconds, None = forever) bounds the wait for one request;
        ``wait="spin"`` polls for completion instead of sleeping, trading a
        busy core for latency; ``device`` compiles for another device than
        the pipeline's (every model must then be given by path).

        Serving (``submit``, ``run``, ``run_async``): ``max_queue`` requests
        may wait for a slot (default 4 x depth; then ``submit`` blocks or
        raises ``EngineBusy``); ``max_delay_ms`` > 0 turns on the dynamic
        batcher, which merges requests of fewer rows than ``max_batch`` into
        one device request, waiting at most that long for more;
        ``gear_policy`` ("upper", "nearest" or "lower") says what the batcher
        does when the merged rows fall between two gears, and how models
        after a host step with ``rows="any"`` run rows between two gears.
        ``host_workers``: threads per host step (an int for every step, or
        ``{step name: int}``), so a step runs for several requests at once.
        (``_unsafe_skip_waits`` drops the cross-stream event waits: only for
        tests proving that a missing dependency is caught.)
        """
        from ascend_engine import Model
        from ascend_engine._executor import Engine

        plan = self.plan(depth=depth, streams=streams, profile=profile, timeout=timeout, wait=wait,
                         device=device, max_queue=max_queue, max_delay_ms=max_delay_ms,
                         gear_policy=gear_policy, host_workers=host_workers)
        # Every engine loads its own instance of a model given by path, so
        # engines compiled from one pipeline never share an executing model.
        loaded = []
        try:
            by_name = {n.name: n for n in self._nodes}
            for plan_node in plan.nodes:
                if plan_node.kind != "model":
                    continue
                node = by_name[plan_node.name]
                on = plan.devices[plan_node.device]
                if plan_node.instances > 1:
                    plan_node.models = list(Model.load_instances(node.path, plan_node.instances, device=on))
                    loaded.extend(plan_node.models)
                    plan_node.model = plan_node.models[0]
                elif node.path is not None:
                    plan_node.model = Model.load(node.path, device=on)
                    loaded.append(plan_node.model)
                plan_node.work_bytes, plan_node.weight_bytes = _query_size(plan_node.model.path)
            return Engine(plan, owned_models=loaded, _unsafe_skip_waits=_unsafe_skip_waits)
        except BaseException:
            for m in loaded:
                m.close()
            raise

    def compile_replicas(self, devices, **compile_kwargs):
        """Compile one engine per device for data parallelism; returns :class:`Replicas`.

        Every model must be given by path (each replica loads its own copy on
        its device).  ``compile_kwargs`` are those of :meth:`compile`.
        """
        from ascend_engine.replicas import Replicas

        devices = [int(d) for d in devices]
        if not devices or len(set(devices)) != len(devices):
            raise PipelineError(f"devices must be distinct device ids, got {devices}")
        fixed = [n.name for n in self._nodes if n.path is None and n.kind == "model"]
        placed = [n.name for n in self._nodes if n.device is not None]
        if placed:
            raise PipelineError(f"model nodes {placed} are placed on devices (device=...): a replicated "
                                "pipeline runs whole on each replica's device")
        if fixed:
            raise PipelineError(f"model nodes {fixed} were given loaded Models, which live on one device: "
                                "give model paths to replicate a pipeline")
        engines = []
        try:
            for d in devices:
                engines.append(self.compile(device=d, **compile_kwargs))
        except BaseException:
            for e in engines:
                e.close()
            raise
        return Replicas(engines)

    # ---- validation helpers ---------------------------------------------------

    def _check_devices(self, device):
        from ascend_engine import devices

        count = len(devices())
        if not 0 <= device < count:
            raise PipelineError(f"pipeline device {device} does not exist: {count} device(s) found")
        for node in self._nodes:
            if node.device is not None and not 0 <= node.device < count:
                raise PipelineError(f"model node {node.name!r}: device {node.device} does not exist: "
                                    f"{count} device(s) found")
            if node.kind == "model" and node.path is None and node.device is not None \
                    and node.model.device_id != node.device:
                raise PipelineError(f"model node {node.name!r}: device={node.device}, but the loaded model "
                                    f"is on device {node.model.device_id}")

    def _node_device(self, node, device, tensor_device) -> int:
        """The device id a node runs on: where it was placed, where its loaded
        model lives, or the plan's device; a host step where its first input is."""
        if node.kind == "host":
            return tensor_device[node.inputs[0].index]
        if node.device is not None:
            return node.device
        return node.model.device_id if node.path is None else device

    def _place(self, order, nodes, tensors, outputs, device, single):
        """Put every node and tensor on its device; where a tensor is read on
        another device than its producer's, insert a copy node (device to
        device with peer access, else through pinned host memory).  Pipeline
        inputs arrive on and outputs leave from the plan's device.  Rewrites
        ``nodes`` (copies before their first reader), the tensors' producers,
        readers and domains, and ``outputs``; returns (device ids, stream
        devices)."""
        tensor_device = {h.index: device for h in self._inputs}
        node_device = []
        for i in order:
            d = self._node_device(self._nodes[i], device, tensor_device)
            node_device.append(d)
            for h in self._nodes[i].outputs:
                tensor_device[h.index] = d
        devices = [device] + sorted(set(node_device) - {device})
        stream_devices = {}
        for node, d in zip(nodes, node_device, strict=True):
            node.device = devices.index(d)
            for st in node.streams:
                if stream_devices.setdefault(st, node.device) != node.device:
                    raise PipelineError(f"node {node.name!r}: its stream label is shared with a node on "
                                        "another device; a stream belongs to one device")
        for t_index, t in enumerate(tensors):
            t.device = devices.index(tensor_device.get(t_index, device))
        if len(devices) == 1:
            return devices, [stream_devices.get(s, 0) for s in range(len(stream_devices) or 1)]
        if single:
            raise PipelineError(f"streams='single' runs everything on one stream, but the pipeline spans "
                                f"devices {devices}")
        copies = {}            # (tensor, device index) -> (copy tensor, position it goes before)
        n_streams = len(stream_devices)

        def copy_of(t, d, before):
            if (t, d) not in copies:
                src = tensors[t]
                tensors.append(PlanTensor(f"{src.name}@device{devices[d]}", src.dtype, src.shape,
                                          src.row_bytes, capacity=src.capacity, domain=src.domain,
                                          max_rows=src.max_rows, device=d, shaped=src.shaped))
                copies[(t, d)] = (len(tensors) - 1, before)
            return copies[(t, d)][0]

        for k, node in enumerate(nodes):
            node.inputs = [t if t < 0 or tensors[t].device == node.device else copy_of(t, node.device, k)
                           for t in node.inputs]
        for o, (name, t) in enumerate(outputs):
            if tensors[t].device != 0:
                outputs[o] = (name, copy_of(t, 0, len(nodes)))
        by_position = {}
        for (t, d), (new, before) in copies.items():
            src_device = tensors[t].device
            peer = _peer_link(devices[src_device], devices[d])
            stream = n_streams
            stream_devices[stream] = d
            n_streams += 1
            bridge = -1
            if not peer:
                bridge = n_streams
                stream_devices[bridge] = src_device
                n_streams += 1
            by_position.setdefault(before, []).append(PlanNode(
                name=f"copy {tensors[t].name} to device {devices[d]}"[:63], model=None, stream=stream,
                inputs=[t], outputs=[new], dyn_index=-1, dyn_offset=0, dyn_size=0, gears=(), static_batch=0,
                streams=(stream,), kind="copy", domain=tensors[t].domain, device=d, bridge_stream=bridge))
        # the new order: copies before their first reader; positions of host steps move with it
        placed, new_position = [], {}
        for k in range(len(nodes) + 1):
            placed.extend(by_position.get(k, ()))
            if k < len(nodes):
                new_position[k] = len(placed)
                placed.append(nodes[k])
        nodes[:] = placed
        for node in nodes:
            node.domain = new_position.get(node.domain, -1) if node.domain >= 0 else -1
        for t in tensors:
            t.domain = new_position[t.domain] if t.domain >= 0 else -1
            t.producer, t.readers = -1, []
        for k, node in enumerate(nodes):
            for t in node.inputs:
                if t >= 0:
                    tensors[t].readers.append(k)
            for t in node.outputs:
                tensors[t].producer = k
        for _name, t in outputs:
            tensors[t].readers.append(len(nodes))
        return devices, [stream_devices[s] for s in range(n_streams)]

    def _topological_order(self) -> list[int]:
        producer = {}
        for i, node in enumerate(self._nodes):
            for h in node.outputs:
                producer[h.index] = i
        deps = [[producer[h.index] for h in node.inputs if h.index in producer] for node in self._nodes]
        # Host steps as late as their consumers allow: the nodes after a host
        # step are enqueued only once it has run, so a model that does not
        # depend on it should come before it.
        perm = [i for i, n in enumerate(self._nodes) if n.kind == "model"]
        perm += [i for i, n in enumerate(self._nodes) if n.kind == "host"]
        at = {i: k for k, i in enumerate(perm)}
        try:
            return [perm[k] for k in topological_order([[at[d] for d in deps[i]] for i in perm])]
        except CycleError as exc:
            cycle = " -> ".join(self._nodes[j].name for j in exc.cycle)
            raise PipelineError(f"the pipeline has a cycle: {cycle}") from None

    def _host_workers(self, host_workers) -> dict:
        """Threads per host step name, from compile(host_workers=int or {name: int})."""
        steps = [n.name for n in self._nodes if n.kind == "host"]
        if isinstance(host_workers, dict):
            unknown = sorted(set(host_workers) - set(steps))
            if unknown:
                raise PipelineError(f"host_workers names {unknown}, which are not host steps of the pipeline "
                                    f"(its host steps: {steps})")
            return {name: positive_int(host_workers.get(name, 1), f"host_workers[{name!r}]", 64,
                                       error=PipelineError) for name in steps}
        count = positive_int(host_workers, "host_workers", 64, error=PipelineError)
        return {name: count for name in steps}

    def _plan_tensors(self) -> list[PlanTensor]:
        tensors = []
        for h in self._tensors:
            shaped = any(d == -1 for d in h.shape[1:])
            # a shaped tensor's row_bytes is set from its gears (_check_shaped_plan)
            rows = int(np.prod([d for d in h.shape[1:] if d != -1], dtype=np.int64))
            tensors.append(PlanTensor(h.name, h.dtype, h.shape, 0 if shaped else rows * h.dtype.itemsize,
                                      shaped=shaped))
        return tensors

    def _row_domain(self, node, tensors, position) -> int:
        """Whose rows ``node`` runs on: -1 (the request's) or a host step's plan position.

        A model, or a host step with rows="same", needs every input from one
        domain; a step with rows="any" may mix them (it sets its own rows).
        """
        domains = {}
        for h in node.inputs:
            domains.setdefault(tensors[h.index].domain, h.name)
        if len(domains) > 1 and not (node.kind == "host" and node.rows == "any"):
            names = {pos: self._nodes[i].name for i, pos in position.items()}
            parts = [f"{name!r} ({'the request' if d < 0 else 'host step ' + repr(names[d])}'s rows)"
                     for d, name in domains.items()]
            what = "model node" if node.kind == "model" else "host step"
            raise PipelineError(
                f"{what} {node.name!r} reads tensors with different numbers of rows: {' and '.join(parts)}; "
                "every input of a node must carry the same rows"
            )
        return next(iter(domains))

    def _check_bindings(self, order, tensors) -> tuple[int, int]:
        """Check every edge against the model descriptors and give every
        tensor its row domain; returns (max_batch, fixed_batch)."""
        limits, fixed = [], set()
        for h in self._inputs:
            if h.shape[0] != -1:
                fixed.add(h.shape[0])
        position = {i: k for k, i in enumerate(order)}
        self._domains = {}
        for i in order:
            node = self._nodes[i]
            domain = self._domains[i] = self._row_domain(node, tensors, position)
            if node.kind == "host":
                if isinstance(node.fn, NativeStep):
                    for h in list(node.inputs) + list(node.outputs):
                        if any(d == -1 for d in h.shape[1:]):
                            raise PipelineError(
                                f"host step {node.name!r}: {h.name!r} has the shape {_text(h.shape)}, whose "
                                "-1 dimensions change per request; a native step's contract (ae_host_fn) "
                                "carries rows, not shapes, so it takes and returns fixed shapes: make it a "
                                "Python step")
                for h in node.outputs:
                    tensors[h.index].domain = position[i] if node.rows == "any" else domain
                continue
            for h in node.outputs:
                tensors[h.index].domain = domain
            specs = node.model.inputs
            kind = getattr(node.model, "dynamic_kind", "static")
            if kind not in ("static", "batch", "hw", "dims"):
                raise PipelineError(
                    f"model node {node.name!r}: the model has shape ranges; pipelines take static, "
                    "dynamic-batch, image-size and dims-gear models -- run this one with Model (model(x=...))"
                )
            if len(node.inputs) != len(specs):
                raise PipelineError(
                    f"model node {node.name!r}: the model takes {len(specs)} input(s) "
                    f"({', '.join(s.name for s in specs)}), got {len(node.inputs)}"
                )
            for h, spec in zip(node.inputs, specs, strict=True):
                where = f"model node {node.name!r} input {spec.name!r} (fed by {h.name!r})"
                if np.dtype(spec.dtype) != h.dtype:
                    raise PipelineError(f"{where}: expected dtype {np.dtype(spec.dtype)}, got {h.dtype}")
                if kind in ("hw", "dims"):
                    # the model's -1 dimensions take any size; a fixed one must match
                    ok = len(spec.shape) == len(h.shape) and all(
                        m == -1 or m == d for m, d in zip(spec.shape[1:], h.shape[1:], strict=True))
                else:
                    _refuse_shaped(h, where)
                    ok = len(spec.shape) == len(h.shape) and tuple(spec.shape[1:]) == tuple(h.shape[1:])
                if not ok:
                    raise PipelineError(f"{where}: expected shape {_text(spec.shape)}, got {_text(h.shape)}")
            if kind in ("hw", "dims"):
                rows_dim = specs[0].shape[0] if specs else 1
                if domain >= 0:
                    continue   # in chunks (rows_dim rows, or its gears' rows): no bound on the request's
                if rows_dim == -1:   # the rows are a gear dimension: bounded by the largest gear's
                    limits.append(max(ins[0][0] for _gear, ins, _outs in _gear_io(node.model)))
                else:
                    fixed.add(rows_dim)
                    limits.append(rows_dim)
                continue
            if domain >= 0:
                continue   # runs a host step's rows, in chunks: no bound on the request's
            gears = tuple(node.model.batch_sizes)
            if gears:
                limits.append(max(gears))
            else:
                fixed.add(_static_batch(node.model))
                limits.append(_static_batch(node.model))
        if not limits:
            raise PipelineError(
                "no model runs on the request's own rows, so nothing bounds how many a request may carry: "
                "feed at least one model from the pipeline inputs (or from a host step with rows='same')"
            )
        if len(fixed) > 1:
            raise PipelineError(
                f"the pipeline mixes fixed batch sizes {sorted(fixed)} (static models or inputs): "
                "every request carries one batch through all models"
            )
        max_batch = min(limits)
        fixed_batch = fixed.pop() if fixed else 0
        if fixed_batch and fixed_batch > max_batch:
            raise PipelineError(
                f"the pipeline's fixed batch {fixed_batch} exceeds the largest gear {max_batch} of a model"
            )
        return (fixed_batch or max_batch), fixed_batch

    def _plan_nodes(self, order, tensors, single, workers, gear_policy, max_batch) -> list[PlanNode]:
        from ascend_engine._executor import chunk_span

        nodes, stream_of = [], {}
        position = {i: k for k, i in enumerate(order)}
        for i in order:
            node = self._nodes[i]
            if node.kind == "host":
                nodes.append(self._plan_host(node, position, tensors, single, stream_of, workers))
                continue
            model = node.model
            key = ("label", node.stream) if node.stream is not None else ("model", id(model))
            if node.instances > 1:   # a stream per instance, used by no other node
                streams = tuple(0 if single else stream_of.setdefault(("instance", i, j), len(stream_of))
                                for j in range(node.instances))
            else:
                streams = (0 if single else stream_of.setdefault(key, len(stream_of)),)
            stream = streams[0]
            n_model_inputs = len(node.inputs) + (1 if model.dynamic_index >= 0 else 0)
            inputs, k = [], 0
            for j in range(n_model_inputs):
                if j == model.dynamic_index:
                    inputs.append(-1)
                else:
                    inputs.append(node.inputs[k].index)
                    k += 1
            for h, spec in zip(node.inputs, model.inputs, strict=True):
                t = tensors[h.index]
                t.capacity = max(t.capacity, spec.nbytes)
                t.readers.append(position[i])
            outputs = []
            for h, spec in zip(node.outputs, model.outputs, strict=True):
                t = tensors[h.index]
                t.capacity = max(t.capacity, spec.nbytes)
                t.producer = position[i]
                outputs.append(h.index)
            gears = tuple(sorted(model.batch_sizes))
            domain = self._domains[i]
            kind = getattr(model, "dynamic_kind", "static")
            shape_kind = kind if kind in ("hw", "dims") else ""
            # a shaped model on a host step's rows runs chunks of its fixed first
            # dimension, or (dims gears over the rows: chunk_rows -1) of its gears' rows
            chunk_rows = model.inputs[0].shape[0] if shape_kind and domain >= 0 else 0
            row_table = _row_table(model, node.name) if chunk_rows == -1 else None
            if domain >= 0:
                # rows from a host step run in chunks at this model's gears:
                # its tensors hold the rows the padding of any chunk reaches
                if row_table:
                    span = max(chunk_span(rows, gear_policy, nodes[domain].max_rows) for rows in row_table[2])
                else:
                    span = chunk_span(gears or (chunk_rows or _static_batch(model),), gear_policy,
                                      nodes[domain].max_rows)
                for h in list(node.inputs) + list(node.outputs):
                    tensors[h.index].max_rows = max(tensors[h.index].max_rows, span)
            nodes.append(PlanNode(
                name=node.name, model=model, stream=stream, inputs=inputs, outputs=outputs,
                dyn_index=model.dynamic_index, dyn_offset=0,
                dyn_size=model.dynamic_nbytes if model.dynamic_index >= 0 else 0,
                gears=gears,
                static_batch=max(chunk_rows, 0) if shape_kind else 0 if gears else _static_batch(model),
                instances=node.instances, streams=streams, domain=domain,
                shape_kind=shape_kind, gear_io=_gear_io(model) if shape_kind else (),
                follow=_follow(model) if shape_kind else (),
                dims_table=row_table[0] if row_table else (), row_dims=row_table[1] if row_table else (),
            ))
        for t in tensors:
            rows = max_batch if t.domain < 0 else nodes[t.domain].max_rows
            t.max_rows = max(t.max_rows, rows)
        return nodes

    def _plan_host(self, node, position, tensors, single, stream_of, workers) -> PlanNode:
        """A host step's plan node: a stream of its own for its copies."""
        k = position[self._nodes.index(node)]
        stream = 0 if single else stream_of.setdefault(("host", k), len(stream_of))
        for h in node.inputs:
            tensors[h.index].readers.append(k)
        for h in node.outputs:
            tensors[h.index].producer = k
        return PlanNode(
            name=node.name, model=None, stream=stream, inputs=[h.index for h in node.inputs],
            outputs=[h.index for h in node.outputs], dyn_index=-1, dyn_offset=0, dyn_size=0, gears=(),
            static_batch=0, streams=(stream,), kind="host", fn=node.fn, rows_any=node.rows == "any",
            max_rows=node.max_rows, workers=workers[node.name], domain=self._domains[self._nodes.index(node)],
            input_names=tuple(h.name for h in node.inputs),
            output_specs=tuple((h.name.split(".", 1)[1], h.dtype, tuple(h.shape[1:])) for h in node.outputs),
        )

    def _check_fixed_outputs(self):
        """A pipeline carries rows of requests: an output without a batch
        dimension (a class table, an anchor grid) can be neither a pipeline
        output nor another model's input; unused, it is harmless."""
        uses = [(f"pipeline output {name!r}", h) for name, h in self._outputs]
        uses += [(f"the input of model node {n.name!r}", h) for n in self._nodes for h in n.inputs]
        for where, h in uses:
            if h.index in self._fixed_outputs:
                node, output = self._fixed_outputs[h.index]
                kind = next(getattr(n.model, "dynamic_kind", "static") for n in self._nodes if n.name == node)
                if kind in ("hw", "dims"):
                    raise PipelineError(
                        f"{where}: output {output!r} of model node {node!r} has the shape {_text(h.shape)}, "
                        "whose first dimension is not the rows of the model's inputs; a pipeline carries "
                        "per-request rows, so it can only be left unused. Read it with Model(...) outside "
                        "the pipeline"
                    )
                raise PipelineError(
                    f"{where}: output {output!r} of model node {node!r} has the fixed shape "
                    f"{shape_text(h.shape)} (no batch dimension) although the model takes a dynamic batch; "
                    "a pipeline carries per-request rows, so it can only be left unused. Read it once with "
                    "Model(...) outside the pipeline"
                )

    def _check_shaped_plan(self, nodes, tensors, max_delay_ms):
        """A plan with image-size or dims-gear models: size its shaped tensors
        (from the largest gear), check every model->model edge of a shaped
        tensor (no padding on the device), and refuse what is not supported."""
        if max_delay_ms:
            raise PipelineError(
                "max_delay_ms: the dynamic batcher merges requests of one shape, but model node(s) "
                + ", ".join(repr(n.name) for n in nodes if n.shape_kind)
                + " pick their gear from each request's shapes: compile with max_delay_ms=0"
            )
        consumers = {}
        producer = {}
        for k, n in enumerate(nodes):
            for t in n.outputs:
                producer[t] = k
            if n.shape_kind:
                for pos, t in enumerate(t_ for t_ in n.inputs if t_ >= 0):
                    consumers.setdefault(t, []).append((k, pos))
        for t_index, t in enumerate(tensors):
            if not t.shaped:
                continue
            sizes = [t.row_bytes]
            if t_index in producer:
                pn = nodes[producer[t_index]]
                j = pn.outputs.index(t_index)
                sizes += [_row_bytes(outs[j], t.dtype) for _gear, _ins, outs in pn.gear_io]
            for k, pos in consumers.get(t_index, ()):
                sizes += [_row_bytes(ins[pos], t.dtype) for _gear, ins, _outs in nodes[k].gear_io]
            t.row_bytes = max(sizes)
        for t_index, users in consumers.items():
            for k, pos in users:
                self._check_shaped_edge(nodes, tensors, t_index, producer.get(t_index), k, pos)

    @staticmethod
    def _check_shaped_edge(nodes, tensors, t_index, prod, k, pos):
        """Tensor ``t_index`` feeds input ``pos`` of the shaped node ``k``: a
        model's output reaches it unpadded, so each shape it can have must be
        exactly one of node k's gear input shapes."""
        node, t = nodes[k], tensors[t_index]
        takes = sorted({ins[pos] for _gear, ins, _outs in node.gear_io})
        where = f"model node {node.name!r} input {node.model.inputs[pos].name!r} (fed by {t.name!r})"
        if prod is not None and nodes[prod].shape_kind:
            pn = nodes[prod]
            j = pn.outputs.index(t_index)
            bad = [f"{_gear_text(pn, gear)} -> {_text(outs[j])}" for gear, _ins, outs in pn.gear_io
                   if tuple(outs[j]) not in takes]
            if bad:
                raise PipelineError(
                    f"{where}: tensors pass between models unpadded, so every gear's output of model node "
                    f"{pn.name!r} must be exactly one of the input shapes of {node.name!r}'s gears "
                    f"{[_text(s) for s in takes]}; these gears of {pn.name!r} give others: {'; '.join(bad)}"
                )
        elif not t.shaped and not any(tuple(s[1:]) == tuple(t.shape[1:]) for s in takes):
            raise PipelineError(
                f"{where}: its shape {_text(t.shape)} is fixed, but no gear of {node.name!r} takes "
                f"it unpadded (the gears take {[_text(s) for s in takes]})"
            )

    def _check_unused(self, tensors):
        for h in self._inputs:
            if not tensors[h.index].readers:
                raise PipelineError(f"input {h.name!r} is not used by any model or output")


@dataclass(frozen=True)
class ModelDescription:
    """What planning needs from a model file, read once (the model is not kept loaded)."""

    path: str
    inputs: tuple
    outputs: tuple
    batch_sizes: tuple
    dynamic_index: int
    dynamic_nbytes: int
    device_id: int
    dynamic_kind: str = "static"
    hw_sizes: tuple = ()
    dims_gears: tuple = ()
    gear_io: tuple = ()      # image-size and dims-gear models: (gear, input shapes, output shapes) per gear
    output_follow: tuple | None = None


def _describe_file(path, device, node_name) -> ModelDescription:
    from ascend_engine import Model

    try:
        with Model.load(path, device=device) as m:
            shaped = m.dynamic_kind in ("hw", "dims")
            return ModelDescription(str(path), m.inputs, m.outputs, m.batch_sizes, m.dynamic_index,
                                    m.dynamic_nbytes, m.device_id, m.dynamic_kind, m.hw_sizes, m.dims_gears,
                                    _gear_io(m) if shaped else (), m.output_follow if shaped else None)
    except Exception as exc:
        raise PipelineError(f"model node {node_name!r}: {exc}") from exc


def _gear_io(model) -> tuple:
    """(gear, input shapes, output shapes) per gear of an image-size or dims-gear model."""
    if isinstance(model, ModelDescription):
        return model.gear_io
    return tuple((gear, tuple(map(tuple, ins)), tuple(map(tuple, outs)))
                 for gear, (ins, outs) in model.gear_io_shapes().items())


def _follow(model) -> tuple:
    return tuple(model.output_follow)


def _row_bytes(shape, dtype) -> int:
    return math.prod(shape[1:]) * np.dtype(dtype).itemsize if len(shape) > 1 else \
        np.dtype(dtype).itemsize


def _gear_text(node, gear) -> str:
    """A gear as messages write it: HxW for image sizes, "gear k" for dims gears."""
    return f"{gear[0]}x{gear[1]}" if node.shape_kind == "hw" else f"gear {gear}"


def _refuse_shaped(h, where):
    if any(d == -1 for d in h.shape[1:]):
        raise PipelineError(
            f"{where}: {h.name!r} has the shape {_text(h.shape)}, whose -1 dimensions change per request; "
            "only image-size or dims-gear models (or pipeline outputs) take such a tensor"
        )


def _query_size(path):
    """(work, weight) bytes of a model file, or (None, None) where the backend cannot tell."""
    from ascend_engine import Model
    from ascend_engine.errors import AclError, BackendError

    try:
        return Model.query_size(path)
    except (AclError, BackendError):
        return None, None


def _is_model(obj) -> bool:
    """A loaded model, or anything describing itself like one (tests plan with stand-ins)."""
    return all(hasattr(obj, a) for a in ("inputs", "outputs", "batch_sizes", "dynamic_index", "device_id"))


def _static_batch(model) -> int:
    """The batch a static model was built for (its first input's first dim)."""
    return int(model.inputs[0].shape[0]) if model.inputs else 1


COPY_IN = -1   # the step staging pipeline inputs; nodes are 0..n-1 and the copy-out is n


def _happens_before(tensors, nodes):
    """after[a]: the steps that start only once step ``a`` has completed.

    Steps are the copy-in (:data:`COPY_IN`), the nodes 0..n-1 in plan order
    and the copy-out ``n``.  The executor orders them in three ways, and
    nothing else: stream order (a node waits for the node enqueued before it
    on its stream), event waits (a node, and the copy-out, wait for the
    producers of what they read) and the copy-in's event (every step reading
    a pipeline input waits for it).  The relation is transitive.
    """
    n = len(nodes)
    edges = {step: set() for step in range(COPY_IN, n + 1)}
    last_on_stream = {}
    for k, node in enumerate(nodes):
        if len(set(getattr(node, "streams", ()))) > 1:
            continue   # an instanced node's stream depends on the request: no stream order
        if node.stream in last_on_stream:
            edges[last_on_stream[node.stream]].add(k)
        last_on_stream[node.stream] = k
    for t in tensors:
        for r in t.readers:
            edges[t.producer].add(r)
    after = {}
    for a in range(n, COPY_IN - 1, -1):   # every edge points to a later step
        after[a] = set()
        for b in edges[a]:
            after[a] |= {b} | after[b]
    return after


def _last_uses(t):
    """The steps whose completion ends tensor ``t``'s lifetime in a request.

    Its readers; a tensor nothing reads still lives until its producer has
    finished writing it.
    """
    return t.readers or [t.producer]


def _plan_memory(tensors, nodes, max_batch, n_devices=1):
    """Give every tensor a capacity and an offset in its device's slot region.

    Returns (slot bytes per device, working_set, unshared_bytes).
    """
    n = len(nodes)
    after = _happens_before(tensors, nodes)
    for t in tensors:
        t.capacity = carve(max(t.capacity, t.row_bytes * max(t.max_rows, max_batch if t.domain < 0 else 0)))
    unshared = sum(t.capacity for t in tensors)
    # working set: bytes live at the busiest step of one request, no sharing
    working = 0
    for step in range(-1, n + 1):
        live = sum(t.capacity for t in tensors if t.producer <= step <= max(t.readers, default=t.producer))
        working = max(working, live)

    # Greedy reuse in producer order: a block can take tensor Y when the
    # lifetime of every tensor already in it has ended (its last uses have
    # completed) before Y's producer starts.
    blocks: list[dict] = []
    for idx in sorted(range(len(tensors)), key=lambda i: tensors[i].producer):
        t = tensors[idx]
        best = None
        if t.producer >= 0:
            for b in blocks:
                if b["device"] != t.device:
                    continue
                ok = all(
                    t.producer in after[r]
                    for other in b["tensors"]
                    for r in _last_uses(tensors[other])
                )
                if ok and (best is None or abs(b["size"] - t.capacity) < abs(best["size"] - t.capacity)):
                    best = b
        if best is None:
            best = {"size": 0, "tensors": [], "device": t.device}
            blocks.append(best)
        best["size"] = max(best["size"], t.capacity)
        best["tensors"].append(idx)

    offsets = [0] * n_devices
    for b in blocks:
        for idx in b["tensors"]:
            tensors[idx].offset = offsets[b["device"]]
            tensors[idx].capacity = b["size"]
        offsets[b["device"]] += b["size"]
    for node in nodes:
        if node.dyn_index >= 0:
            node.dyn_offset = offsets[node.device]
            offsets[node.device] += carve(node.dyn_size)
    return offsets, working, unshared


def _peer_link(a, b) -> bool:
    """Whether device a can copy straight to device b (aclrtDeviceCanAccessPeer)."""
    from ascend_engine import Device
    from ascend_engine.errors import AclError, BackendError

    with Device(a) as dev:
        try:
            return bool(dev.can_access_peer(b))
        except (AclError, BackendError):   # a runtime without peer access: copy through the host
            return False


@dataclass(frozen=True)
class RequestShape:
    """What one request shape means for a plan with shaped tensors.

    ``inputs``: the shape each pipeline input is padded to (zeros after the
    data); ``outputs``: the shape each output arrives in from the device and
    ``cuts``: the slices that bring it back to the request's size (None:
    kept whole); ``row_bytes`` (per plan tensor), ``gear_dims``, ``gear_at``
    and ``gear_count`` (per plan node) are what the executor takes
    (``ae_request_shape``); ``gears``: node name -> the gear it runs.
    """

    inputs: tuple
    outputs: tuple
    cuts: tuple
    row_bytes: np.ndarray
    gear_dims: np.ndarray
    gear_at: np.ndarray
    gear_count: np.ndarray
    gears: dict
    walk: object = None      # the RequestWalk, when host steps read or set shapes (copy() it per request)


class ShapedRequests:
    """Per-request gears of a plan with image-size or dims-gear models.

    Each shaped model runs the smallest gear (fewest input elements) holding
    its inputs' shapes, rows included (a gear with more rows runs the
    request's padded, as a batch gear does; a model after a host step with
    rows="any" runs them in chunks of its fixed first dimension and only the
    trailing dimensions choose the gear).  A tensor that comes from outside the device -- a pipeline input,
    or the output of a host step that chooses its shape per request -- is
    padded on the host up to the gear of the first model reading it; a
    tensor one model passes to another arrives unpadded, so it must be
    exactly a gear input shape of its reader (the plan checked every gear).
    An output comes back at its gear's shape and is cut to the request's
    size in every dimension that follows an input dimension
    (:attr:`Model.output_follow`).

    A request is resolved up to the first host step that changes shapes; that
    step's worker resolves the rest once it has run (:class:`RequestWalk`).
    Results are cached per distinct input shapes (and per padded shapes for
    the executor's side).
    """

    CACHE = 4096

    def __init__(self, plan):
        self.plan = plan
        self._by_raw = {}
        self._by_padded = {}
        self._inputs = {t: k for k, (_name, t) in enumerate(plan.inputs)}
        # requests of a plan with host steps (they may read or set shapes, and
        # the outputs after them are known once they ran): number -> RequestWalk
        self.live = {}
        self.walked = any(n.kind == "host" for n in plan.nodes)

    def resolve(self, shapes) -> RequestShape:
        """The request shape for pipeline inputs of these ``shapes``; ValueError
        naming the model node, the input and the gears when none holds them."""
        shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        found = self._by_raw.get(shapes)
        if found is None:
            walk = RequestWalk(self.plan, {t: shapes[k] for t, k in self._inputs.items()}, shapes[0][0])
            walk.run(0)
            walk.fix_sources(self._inputs)
            found = walk.request_shape(tuple(walk.input_shape(t) for t in self._inputs), keep=self.walked)
            if len(self._by_raw) >= self.CACHE:
                self._by_raw.clear()
                self._by_padded.clear()
            self._by_raw[shapes] = found
            self._by_padded[found.inputs] = found
        return found

    def padded(self, shapes) -> RequestShape:
        """The request shape of already padded inputs (as resolve() padded them)."""
        shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        found = self._by_padded.get(shapes)
        return found if found is not None else self.resolve(shapes)


class RequestWalk:
    """One request's way through a shaped plan: the shape of every tensor on
    the device (padded to a gear) and as the request sees it (``logical``),
    and every shaped node's gear, node by node in plan order.

    :meth:`run` stops at a host step that chooses its outputs' shapes
    (``stopped``); :meth:`after_step` goes on from there with the shapes it
    returned.  Host steps read their shaped inputs through
    :meth:`host_input`; :meth:`deliver` cuts the outputs back at the end.
    """

    def __init__(self, plan, sources, rows):
        self.plan = plan
        self.rows = {-1: rows}            # domain (-1: the request; k: host step k) -> rows
        self.source = dict(sources)       # tensor from outside the device -> its shape as given
        self.origin = {t: t for t in sources}   # tensor -> the source it copies (across devices)
        self.device = {}                  # tensor -> its shape on the device (rows first)
        self.logical = dict(sources)      # tensor -> its shape as the request sees it
        self.padded = {}                  # source -> (shape it is padded to, node that chose it)
        self.values = {}                  # node index -> gear values for the executor
        self.gears = {}                   # node name -> gear
        self.stopped = None               # the host step the walk waits for, or None
        self.producer = {t: k for k, n in enumerate(plan.nodes) for t in n.outputs}

    def copy(self) -> RequestWalk:
        """A walk of its own for one request (the cached one stays as it is)."""
        other = RequestWalk.__new__(RequestWalk)
        other.__dict__.update({k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()})
        other.producer = self.producer
        return other

    def _rows_of(self, t) -> int:
        # rows a host step sets are known once it has run; until then only
        # the trailing dimensions matter (models run those rows in chunks)
        return self.rows.get(self.plan.tensors[t].domain, 0)

    def current(self, t) -> tuple:
        """Tensor t's shape as its readers get it (a source: as given, before padding)."""
        if t in self.origin:
            return self.source[self.origin[t]]
        if t in self.device:
            return self.device[t]
        return (self._rows_of(t),) + tuple(self.plan.tensors[t].shape[1:])

    def device_shape(self, t) -> tuple:
        """Tensor t's shape on the device for this request (a source: padded)."""
        if t in self.origin:
            src = self.origin[t]
            return self.padded[src][0] if src in self.padded else self.source[src]
        return self.device.get(t) or self.current(t)

    def fix_sources(self, sources):
        """The layout these sources are copied to the device in is fixed now:
        a model reached later that wants them padded otherwise is refused."""
        for t in sources:
            if self.plan.tensors[t].shaped:
                self.padded.setdefault(t, (self.source[t], "its copy to the device"))

    def input_shape(self, t) -> tuple:
        """A pipeline input's shape after padding."""
        return self.padded[t][0] if t in self.padded else self.source[t]

    def run(self, start):
        """Resolve nodes from ``start`` until a host step that sets shapes (or the end)."""
        plan, tensors = self.plan, self.plan.tensors
        self.stopped = None
        for k in range(start, len(plan.nodes)):
            node = plan.nodes[k]
            if node.kind == "copy":
                src, dst = node.inputs[0], node.outputs[0]
                for table in (self.origin, self.device, self.logical):
                    if src in table:
                        table[dst] = table[src]
                continue
            if node.kind == "host":
                if any(tensors[t].shaped for t in node.outputs):
                    self.stopped = k
                    return
                continue
            if node.shape_kind:
                self._resolve_node(k, node)

    def _resolve_node(self, k, node):
        tensors = self.plan.tensors
        chunked = node.domain >= 0
        rows = self.rows.get(node.domain, 0)
        ins = [t for t in node.inputs if t >= 0]
        have = [self.current(t) for t in ins]
        gear, g_in, g_out = _choose(node, ins, have, rows, chunked)
        self.values[k] = _gear_values(node, (gear, g_in, g_out))
        if chunked:   # run in chunks: the request's rows, the gear's trailing dimensions
            g_in = tuple((rows,) + tuple(s[1:]) for s in g_in)
            g_out = tuple((rows,) + tuple(s[1:]) for s in g_out)
        for t, want, got in zip(ins, g_in, have, strict=True):
            src = self.origin.get(t)
            if src is not None and tensors[src].shaped:
                first = self.padded.setdefault(src, (want, node.name))
                if first[0] != want:
                    raise ValueError(
                        f"{tensors[src].name!r} of shape {got} feeds model nodes {first[1]!r} and "
                        f"{node.name!r}, whose gears take it as {first[0]} and {want}; one tensor padded "
                        "to two shapes is not supported")
            elif tuple(got) != tuple(want):
                raise ValueError(
                    f"model node {node.name!r}: {tensors[t].name!r} arrives with the shape {got}, but its "
                    f"gear {_gear_text(node, gear)} takes {want} (tensors pass between models unpadded)")
        lin = [self.logical.get(t, self.current(t)) for t in ins]
        for j, t in enumerate(node.outputs):
            self.device[t] = g_out[j]
            follow = node.follow[j] if j < len(node.follow) else ()
            self.logical[t] = tuple(lin[f[0]][f[1]] if f is not None else d
                                    for f, d in zip(follow, g_out[j], strict=False))
        self.gears[node.name] = gear

    def resolved(self, t) -> bool:
        """Whether tensor t's shape is known (it comes before the step the walk waits for)."""
        return self.stopped is None or self.producer.get(t, -1) < self.stopped

    def row_bytes(self, t) -> int:
        """Tensor t's bytes per row for the executor (the planned most while unresolved)."""
        tp = self.plan.tensors[t]
        if not tp.shaped or not self.resolved(t):
            return tp.row_bytes
        return _row_bytes(self.device_shape(t), tp.dtype)

    def request_shape(self, inputs, keep=False) -> RequestShape:
        """The executor's view of the walk so far; outputs after the step it
        waits for, or whose rows a host step sets, are None (known once the
        step has run).  ``keep``: the shape carries the walk, for host steps
        that read or set shapes."""
        plan, tensors = self.plan, self.plan.tensors
        gear_at = np.full(len(plan.nodes), -1, dtype=np.intc)
        gear_count = np.zeros(len(plan.nodes), dtype=np.intc)
        values = []
        for k, node in enumerate(plan.nodes):
            if not node.shape_kind:
                continue
            # a node after the step the walk waits for: any valid gear until the step sets its own
            vals = self.values.get(k) or _gear_values(node, node.gear_io[0])
            gear_at[k] = len(values)
            gear_count[k] = len(vals)
            values.extend(vals)
        row_bytes = np.array([self.row_bytes(t) for t in range(len(tensors))], dtype=np.uintp)
        outputs, cuts = [], []
        for _name, t in plan.outputs:
            if not self.resolved(t) or tensors[t].domain >= 0:
                outputs.append(None)   # known once a host step has run
                cuts.append(None)
                continue
            shape, want = self.device_shape(t), self.logical.get(t, self.current(t))
            outputs.append(tuple(shape))
            cuts.append(None if tuple(want) == tuple(shape) else tuple(slice(0, n) for n in want))
        return RequestShape(tuple(inputs), tuple(outputs), tuple(cuts), row_bytes,
                            np.asarray(values or [0], dtype=np.int64), gear_at, gear_count, dict(self.gears),
                            self if keep else None)

    # ---- host steps (on the step's worker thread) ----------------------------------

    def host_input(self, t, rows) -> tuple:
        """(device shape, shape the step sees) of tensor t, read by a host step."""
        device = tuple(self.device_shape(t))
        logical = tuple(self.logical.get(t, self.current(t)))
        return (rows,) + device[1:], (rows,) + logical[1:]

    def after_step(self, k, shapes, rows):
        """Host step k returned outputs of ``shapes`` (``rows`` rows): resolve
        the nodes after it.  Returns (device shape per output, {tensor: bytes
        per row}, {node: gear values}) for the executor; ValueError when no
        gear of a model after it holds what it returned."""
        plan, tensors = self.plan, self.plan.tensors
        node = plan.nodes[k]
        # the rows of its outputs' domain: its own (rows='any') or those it was given
        self.rows[k if node.rows_any else node.domain] = rows
        for t, shape in zip(node.outputs, shapes, strict=True):
            if tensors[t].shaped:
                self.source[t] = self.logical[t] = tuple(shape)
                self.origin[t] = t
        before = set(self.values)
        self.run(k + 1)
        self.fix_sources(node.outputs)
        device = [tuple(self.device_shape(t)) for t in node.outputs]
        later = {t for j, n in enumerate(plan.nodes) if j >= k for t in n.outputs}
        row_bytes = {t: self.row_bytes(t) for t in later}
        values = {j: v for j, v in self.values.items() if j not in before}
        return device, row_bytes, values

    def deliver(self, outputs, out_rows):
        """The outputs of the finished request, each cut to the request's size."""
        plan, tensors = self.plan, self.plan.tensors
        result = []
        for k, ((_name, t), a) in enumerate(zip(plan.outputs, outputs, strict=True)):
            rows = int(out_rows[k]) if out_rows is not None and tensors[t].domain >= 0 else None
            shape = tuple(self.device_shape(t))
            want = tuple(self.logical.get(t, self.current(t)))
            if rows is not None:
                shape, want = (rows,) + shape[1:], (rows,) + want[1:]
            a = a.reshape(-1)[:math.prod(shape)].reshape(shape)
            result.append(np.ascontiguousarray(a[tuple(slice(0, n) for n in want)]) if want != shape else a)
        return result


def _row_table(model, name) -> tuple:
    """A dims model whose rows are a gear dimension, running a host step's
    rows in chunks: (every gear's flattened dims, where each input's rows sit
    among them, the ascending rows of each group of gears that differ in
    the rows only)."""
    if getattr(model, "dynamic_kind", "") != "dims":
        raise PipelineError(f"model node {name!r}: its first dimension is -1 but it has no dims gears; "
                            "a model running a host step's rows takes a fixed or a dims-gear first dimension")
    table, groups = [], {}
    for _gear, g_in, _g_out in _gear_io(model):
        table.append(tuple(d for s in g_in for d in s))
        groups.setdefault(tuple(tuple(s[1:]) for s in g_in), set()).add(g_in[0][0])
    places, at = [], 0
    for spec in model.inputs:
        if spec.shape[0] == -1:
            places.append(at)
        at += len(spec.shape)
    return tuple(table), tuple(places), [sorted(rows) for rows in groups.values()]


def _gear_values(node, gear_io_entry) -> list:
    gear, g_in, _g_out = gear_io_entry
    return list(gear) if node.shape_kind == "hw" else [d for s in g_in for d in s]


def _choose(node, ins, have, rows, chunked=False):
    """(gear, input shapes, output shapes) of the smallest gear holding
    ``have`` (or, ``chunked``, its trailing dimensions only: the rows run in
    chunks of the gear's).  A gear with more rows than the request's runs
    them padded, as a batch gear does: the executor moves the request's rows
    only and the extra ones are never read back."""
    best = None
    for gear, g_in, g_out in node.gear_io:
        if all(len(h) == len(g) and (chunked or h[0] <= g[0])
               and all(a <= b for a, b in zip(h[1:], g[1:], strict=True))
               for h, g in zip(have, g_in, strict=True)):
            key = (sum(math.prod(g) for g in g_in), gear if node.shape_kind == "hw" else 0)
            if best is None or key < best[0]:
                best = (key, (gear, g_in, g_out))
    if best is None:
        names = [node.model.inputs[i].name for i in range(len(ins))]
        got = {n: tuple(h) for n, h in zip(names, have, strict=True)}
        if node.shape_kind == "hw":
            listed = ", ".join(_gear_text(node, g) for g, _i, _o in node.gear_io)
            what = f"image sizes (height x width) {listed}"
        else:
            what = "; ".join(
                f"gear {g}: " + ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, g_in, strict=True))
                for g, g_in, _o in node.gear_io)
        rows_rule = "(its rows run in chunks)" if chunked else f"with {rows} row(s)"
        raise ValueError(
            f"model node {node.name!r}: no gear holds the input shapes {got} {rows_rule}; its gears: {what}")
    return best[1]


def pad_to(a, shape):
    """``a`` padded with zeros after its data up to ``shape`` (itself when it has that shape)."""
    if tuple(a.shape) == tuple(shape):
        return a
    out = np.zeros(shape, dtype=a.dtype)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out
