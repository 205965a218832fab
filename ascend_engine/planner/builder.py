"""The graph builder: :class:`Pipeline`, its tensor handles and native host steps.

Python only configures.  A :class:`Pipeline` records inputs, model nodes,
host steps and outputs; :meth:`Pipeline.plan` validates the graph against
the models' descriptions (:mod:`~ascend_engine.planner.validate`), lowers it
to plan nodes and tensors (:mod:`~ascend_engine.planner.nodes`), places them
on streams and devices (:mod:`~ascend_engine.planner.placement`) and lays out
device memory (:mod:`~ascend_engine.planner.memory`).
:meth:`ascend_engine.Pipeline.compile` (ascend_engine/pipeline.py, above the
planner) hands the :class:`~ascend_engine.planner.plan.Plan` to the native
executor (:class:`ascend_engine.Engine`): the planner never imports the
executor.  The builder is the one part of the planner that asks the runtime
(through :mod:`~ascend_engine.planner.models`): the others are pure
functions of what it hands them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from ascend_engine._checks import device_id, positive_int, tensor_dtype
from ascend_engine._checks import shape as check_shape
from ascend_engine._feeds import shape_text
from ascend_engine._gears import chunk_span
from ascend_engine.errors import PipelineError
from ascend_engine.native_step import NativeStep  # noqa: F401  (planner.builder.NativeStep stays importable)
from ascend_engine.options import OPTIONS
from ascend_engine.planner import placement, validate
from ascend_engine.planner.images import check_image_readers, size_box_steps
from ascend_engine.planner.memory import plan_memory
from ascend_engine.planner.models import describe_file, device_count, is_model, kind_of, peer_link
from ascend_engine.planner.nodes import node_order, plan_nodes, plan_tensors
from ascend_engine.planner.plan import Plan
from ascend_engine.planner.validate import shape_label


@dataclass(frozen=True)
class TensorHandle:
    """A tensor of a pipeline: a pipeline input or one output of a model node."""

    pipeline_id: int
    index: int
    name: str
    dtype: np.dtype
    shape: tuple

    def __repr__(self) -> str:
        return f"TensorHandle({self.name!r}, {self.dtype}, {shape_label(self.shape)})"


ROWS_CHOICES = ("same", "any")
MAX_STEP_ROWS = 1 << 20


@dataclass
class _Node:
    """A node as the builder records it: a model node or a host step."""

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
    image: dict | None = None  # an image node's operation and sizes (planner/images.py)
    boxes_for: tuple | None = None  # a step the planner put before a crop_resize: (its name, max_boxes asked)

    @property
    def native(self) -> bool:
        """A host step implemented in native code (it carries rows, not shapes)."""
        return isinstance(self.fn, NativeStep) or self.boxes_for is not None   # bound at plan()


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
        self.device = device_id(device, error=PipelineError)
        Pipeline._next_id += 1
        self._id = Pipeline._next_id
        self._inputs: list[TensorHandle] = []
        self._nodes: list[_Node] = []
        self._outputs: list[tuple[str, TensorHandle]] = []
        self._tensors: list[TensorHandle] = []
        self._names: set[str] = set()
        # tensor index -> (node name, output name) for outputs without a batch
        # dimension in dynamic-batch models (see validate.check_fixed_outputs)
        self._fixed_outputs: dict[int, tuple[str, str]] = {}
        self._byte_inputs: set[int] = set()   # tensor indices of bytes inputs (one JPEG per request)

    def __repr__(self) -> str:
        return (
            f"Pipeline(device={self.device}, inputs={[t.name for t in self._inputs]}, "
            f"nodes={[n.name for n in self._nodes]}, outputs={[n for n, _ in self._outputs]})"
        )

    # ---- building ---------------------------------------------------------

    def _new_tensor(self, name, dtype, shape) -> TensorHandle:
        handle = TensorHandle(self._id, len(self._tensors), name, dtype, tuple(shape))
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
        # None: the batch, as -1 is
        dtype = tensor_dtype(dtype, f"input {name!r}", error=PipelineError)
        shape = check_shape(shape, f"input {name!r}", error=PipelineError, variable=True)
        if name in self._names:
            raise PipelineError(f"input {name!r}: the name is already used in this pipeline")
        self._names.add(name)
        handle = self._new_tensor(name, dtype, shape)
        self._inputs.append(handle)
        return handle

    def bytes_input(self, name: str, max_bytes: int) -> TensorHandle:
        """Declare a pipeline input carrying one byte string per request (a
        JPEG for :meth:`jpeg_decode`) of at most ``max_bytes`` bytes; only
        its own length is copied to the device."""
        max_bytes = positive_int(max_bytes, f"bytes input {name!r}: max_bytes", error=PipelineError)
        handle = self.input(name, "uint8", (1, max_bytes))
        self._byte_inputs.add(handle.index)
        return handle

    def jpeg_decode(self, data: TensorHandle, max_size, name: str | None = None) -> TensorHandle:
        """Decode the JPEG in bytes input ``data`` on the device (DVPP's JPEGD)
        into an NV12 picture; JPEGs up to ``max_size`` = (width, height)."""
        from ascend_engine.planner.images import image_node
        return image_node(self, "decode", [data], max_size, name)

    def resize(self, image: TensorHandle, size, name: str | None = None,
               interpolation: str = "default") -> TensorHandle:
        """Resize a picture on the device (DVPP's VPC) to ``size`` = (width,
        height): NV12, as a static-AIPP ``YUV420SP_U8`` model input takes it."""
        from ascend_engine.planner.images import image_node
        return image_node(self, "resize", [image], size, name, interpolation=interpolation)

    def crop_resize(self, image: TensorHandle, boxes: TensorHandle, size, name: str | None = None,
                    max_boxes: int = 0, interpolation: str = "default") -> TensorHandle:
        """Crop every box of ``boxes`` out of ``image`` and resize it to
        ``size`` on the device, one NV12 picture per box (0 to the boxes'
        rows).  ``boxes``: int32 pixels or float32 fractions of the picture
        (x0, y0, x1, y1), either a host step's rows="any" output (rows, 4),
        or a model output (rows, 4) or (rows, K, 4), every box of which is
        cropped: the planner then puts a native host step named
        ``"<name> boxes"`` before the crop to bring them to the host.
        ``max_boxes`` caps the boxes of one request (default: all the
        boxes can carry; 256 at most)."""
        from ascend_engine.planner.images import image_node
        return image_node(self, "crop_resize", [image, boxes], size, name, max_boxes=max_boxes,
                          interpolation=interpolation)

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
        if device is not None:
            device = device_id(device, f"model node {node_name!r}: device", error=PipelineError)
        instances = positive_int(instances, f"model node {node_name!r}: instances", 1024, error=PipelineError)
        handles = [self._check(h, f"model node {node_name!r}") for h in inputs]
        if instances > 1 and is_model(model):
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
        if not is_model(model):
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

    # ---- native steps (ascend_engine/steps/; docs/executor.md, "Native steps") ---------------------------

    def decode_boxes(self, raw: TensorHandle, kind: str, image_size, strides=(), anchors=(), priors=None,
                     variances=(0.1, 0.2), clip: bool = False, name: str | None = None) -> TensorHandle:
        """Decode a detector head's boxes to float32 corners (x0, y0, x1, y1) in pixels, natively.

        ``raw``: float32 (rows, n, channels), the first 4 channels decoded;
        ``kind``: ``"xywh"`` (centre and size in pixels), ``"yolox"`` and
        ``"ltrb"`` (anchor-free grids over ``strides``), ``"yolov5"``
        (anchor-based: ``anchors`` (w, h) per stride, logits), ``"ssd"``
        (``priors`` (n, 4) fractions, ``variances``); ``image_size`` =
        (width, height); ``clip`` clips to the picture.  Returns (rows, n, 4).
        """
        from ascend_engine.steps import nodes
        return nodes.decode_boxes(self, raw, kind, image_size, strides, anchors, priors, variances, clip,
                                  name)

    def nms(self, boxes: TensorHandle, scores: TensorHandle, iou_threshold: float = 0.45,
            score_threshold: float = 0.25, max_boxes: int = 100, max_images: int = 1,
            class_agnostic: bool = False, name: str | None = None):
        """Greedy non-maximum suppression per image, natively (TensorRT's BatchedNMS semantics).

        ``boxes`` float32 (rows, n, 4) corners; ``scores`` float32 (rows, n)
        or (rows, n, classes).  Candidates score above ``score_threshold``;
        by falling score (ties: lower box index, then lower class), one is
        kept unless its IoU with a kept one of its class (any class with
        ``class_agnostic``) exceeds ``iou_threshold``; ``max_boxes`` per
        image.  A request may hold ``max_images`` rows.  Returns
        ``Detections(boxes, scores, classes, images, indices)``, rows="any".
        """
        from ascend_engine.steps import nodes
        return nodes.nms(self, boxes, scores, iou_threshold, score_threshold, max_boxes, max_images,
                         class_agnostic, name)

    def topk(self, x: TensorHandle, k: int, name: str | None = None):
        """The ``k`` largest values of the last axis and their indices (int32), largest first, ties
        by lower index, natively.  Returns ``TopK(values, indices)``, (rows, ..., k)."""
        from ascend_engine.steps import nodes
        return nodes.topk(self, x, k, name)

    def argmax(self, x: TensorHandle, name: str | None = None) -> TensorHandle:
        """The index (int32) of the largest value of the last axis, the lowest on a tie, natively."""
        from ascend_engine.steps import nodes
        return nodes.argmax(self, x, name)

    def softmax(self, x: TensorHandle, name: str | None = None) -> TensorHandle:
        """Softmax over the last axis (float32), natively."""
        from ascend_engine.steps import nodes
        return nodes.softmax(self, x, name)

    def ctc_greedy(self, x: TensorHandle, blank: int = 0, name: str | None = None):
        """CTC greedy decoding of a recognizer's (rows, steps, classes) float32 output, natively.

        Returns ``CTCText(labels, lengths, scores)``: int32 (rows, steps)
        labels (then -1), int32 lengths, float32 mean scores;
        ``ascend_engine.steps.ctc_text`` applies a character table."""
        from ascend_engine.steps import nodes
        return nodes.ctc_greedy(self, x, blank, name)

    def crop_resize_host(self, image: TensorHandle, boxes: TensorHandle, size, image_index=None,
                         interpolation: str = "bilinear", max_boxes: int | None = None,
                         name: str | None = None) -> TensorHandle:
        """Crop ``boxes`` (float32 (rows, 4) pixels x0, y0, x1, y1) out of ``image`` (uint8 or
        float32 (rows, h, w[, c])) and resize each to ``size`` = (width, height) on the host,
        natively; ``image_index`` (int32 per box) names each box's picture.  Returns the crops,
        rows="any" (up to the boxes' max_rows, or ``max_boxes``)."""
        from ascend_engine.steps import nodes
        return nodes.crop_resize_host(self, image, boxes, size, image_index, interpolation, max_boxes, name)

    def warp_affine_host(self, image: TensorHandle, matrices: TensorHandle, size, image_index=None,
                         border: float = 0.0, max_boxes: int | None = None,
                         name: str | None = None) -> TensorHandle:
        """Sample ``image`` through affine maps (float32 (rows, 2, 3), output pixel to source point)
        into ``size`` = (width, height) pictures on the host, bilinear, ``border`` outside."""
        from ascend_engine.steps import nodes
        return nodes.warp_affine_host(self, image, matrices, size, image_index, border, max_boxes, name)

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
            dtype = tensor_dtype(dtype, f"{where}: output {out_name!r}", error=PipelineError)
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
        if not is_model(node.model):
            node.path = node.model
            node.model = describe_file(node.path, self.device if node.device is None else node.device,
                                       node.name)
        kind = kind_of(node.model)
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
             host_workers=1, priority_levels: int = 1, default_priority: int | None = None,
             queue_timeout: float | None = None, timeout_action: str = "reject",
             preferred_batch_sizes=()) -> Plan:
        """Validate the graph and return the plan (without creating anything).

        ``device`` places the plan on another device than the pipeline's
        (models given by path are loaded there; see :meth:`compile_replicas`).
        """
        device = self.device if device is None else device_id(device, error=PipelineError)

        def option(name, value):      # the table of compile options (ascend_engine/options.py)
            return OPTIONS[name].check(value, error=PipelineError)

        depth = option("depth", depth)
        timeout_in_ms = option("timeout", timeout)
        max_queue = 4 * depth if max_queue is None else option("max_queue", max_queue)
        max_delay_ms = option("max_delay_ms", max_delay_ms)
        gear_policy = option("gear_policy", gear_policy)
        wait = option("wait", wait)
        streams = option("streams", streams)
        policy = _queue_policy(option, priority_levels, default_priority, queue_timeout, timeout_action,
                               preferred_batch_sizes, max_delay_ms)
        validate.check_graph(self._nodes, self._outputs)
        validate.check_devices(self._nodes, device, device_count())
        validate.check_fixed_outputs(self._nodes, self._outputs, self._fixed_outputs)
        workers = validate.workers_per_step(self._nodes, host_workers)
        order = node_order(self._nodes)
        tensors = plan_tensors(self._tensors)
        check_image_readers(self._nodes, self._outputs)
        max_batch, fixed, domains = validate.check_bindings(order, self._nodes, self._inputs, tensors,
                                                            self._byte_inputs)
        # the executor's own chunking rule (ae_chunk_span, ascend_engine._gears) sizes the rows after a
        # host step; a builtin native step brings a model's boxes to the host for a crop_resize
        size_box_steps(self._nodes, order, tensors, max_batch)
        in_order = [self._nodes[i] for i in order]
        single = streams == "single"

        nodes = plan_nodes(order, self._nodes, tensors, placement.assign_streams(in_order, single), domains,
                           workers, gear_policy, max_batch, chunk_span)
        validate.check_shaped_sources(self._inputs, self._nodes, tensors, nodes)
        if any(n.shape_kind for n in nodes):
            validate.check_shaped_plan(nodes, tensors, max_delay_ms)
        validate.check_batcher(nodes, max_delay_ms)
        for _name, h in self._outputs:
            tensors[h.index].readers.append(len(nodes))   # the copy-out step
        validate.check_unused(self._inputs, tensors)
        outputs = [(n, h.index) for n, h in self._outputs]
        node_device, tensor_device = placement.node_devices(in_order, self._inputs, device)
        devices, stream_devices = placement.place(nodes, tensors, outputs, node_device, tensor_device, device,
                                                  single, peer_link)
        region_bytes, working_set, unshared = plan_memory(tensors, nodes, max_batch, len(devices))
        too_large = [s for s in policy["preferred_batch_sizes"] if s > max_batch]
        if too_large:
            raise PipelineError(f"preferred_batch_sizes {too_large} exceed the pipeline's largest batch "
                                f"({max_batch} rows)")
        slot_bytes = region_bytes[0]
        n_streams = 1 if single else len(stream_devices)
        return Plan(
            device=device, depth=depth, n_streams=n_streams, single_stream=single,
            profile=bool(profile), timeout_ms=timeout_in_ms, wait=wait,
            tensors=tensors, nodes=nodes,
            inputs=[(h.name, h.index) for h in self._inputs],
            byte_inputs=tuple(k for k, h in enumerate(self._inputs) if h.index in self._byte_inputs),
            outputs=outputs,
            slot_bytes=slot_bytes, max_batch=max_batch, fixed_batch=fixed,
            working_set=working_set, unshared_bytes=unshared,
            max_queue=max_queue, max_delay_ms=max_delay_ms, gear_policy=gear_policy,
            gears=tuple(sorted({g for n in nodes if n.domain < 0 for g in n.gears if g <= max_batch}
                               | {max_batch})),
            devices=tuple(devices), device_slot_bytes=tuple(region_bytes),
            stream_devices=tuple(stream_devices if not single else (0,)), **policy,
        )


def _queue_policy(option, levels, default, queue_timeout, action, preferred, max_delay_ms) -> dict:
    """The queue policy's plan fields, checked (``option`` checks one value by the table)."""
    levels = option("priority_levels", levels)
    default = levels if default is None else option("default_priority", default)
    if default > levels:
        raise PipelineError(f"default_priority must be between 1 and priority_levels ({levels}), "
                            f"got {default}")
    preferred = option("preferred_batch_sizes", preferred)
    if preferred and not max_delay_ms:
        raise PipelineError(f"preferred_batch_sizes {list(preferred)} shape the dynamic batcher's batches, "
                            "which is off: compile with max_delay_ms > 0 too")
    return {"priority_levels": levels, "default_priority": default,
            "queue_timeout_ms": option("queue_timeout", queue_timeout),
            "timeout_action": option("timeout_action", action), "preferred_batch_sizes": preferred}
