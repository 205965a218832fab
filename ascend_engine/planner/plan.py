"""The compiled plan: what the executor creates at compile time, decided in Python.

:class:`Plan` holds the tensors (:class:`PlanTensor`) and nodes
(:class:`PlanNode`) in plan order, the slot layout and the serving options;
``_lowering.pyx`` turns it into the C plan (executor.h, ``ae_plan``) and
:meth:`Plan.memory_report` is what ``engine.memory()`` returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ascend_engine.planner.memory import ALIGN, POOL_HEADROOM, carve


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
    results_stream: int = -1          # a host step: the stream of its results' copies
    shape_kind: str = ""              # "hw" or "dims": the gear is chosen per request from shapes
    gear_io: tuple = ()               # shaped nodes: (gear, input shapes, output shapes) per gear
    follow: tuple = ()                # shaped nodes: Model.output_follow
    dims_table: tuple = ()            # dims gears over a host step's rows: every gear's values
    row_dims: tuple = ()              # ... and where the inputs' rows sit among them
    image: dict = field(default_factory=dict)   # an image node: op, size, max_boxes, ... (planner/images.py)


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
    # Triton's queue policy (ascend_engine/queue_policy.py)
    priority_levels: int = 1
    default_priority: int = 1          # 1 .. priority_levels
    queue_timeout_ms: int = -1         # -1: a request may wait in the queue for ever
    timeout_action: str = "reject"     # or "delay"
    preferred_batch_sizes: tuple = ()  # sizes the batcher sends without waiting max_delay_ms
    devices: tuple = ()      # device ids; [0] is `device` (inputs arrive and outputs leave there)
    device_slot_bytes: tuple = ()   # one slot's bytes on each device ([0] == slot_bytes)
    stream_devices: tuple = ()      # per compute stream: index into devices
    byte_inputs: tuple = ()         # pipeline inputs (indices) carrying one byte string per request

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
            if n.kind in ("host", "image"):
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
