"""Placement: which stream and which device every node of a plan runs on.

The policy, in plan order (the graph's topological order, host steps as late
as their consumers allow)::

    streams="per-model" (the default)          streams="single"

    x ──► [enc]            s0                  every node, host step and copy
           │                                   on s0, in plan order (the
          [dec]  "a"       s1  ┐ one label,    benchmarks' baseline); one
           │                   │ one stream    device only
          [head] "a"       s1  ┘
           │
          (nms)            s2  a host step: a stream of its own, for the
           │                   copies of its inputs, and s6 for its results
          [cls]  ×3        s3 s4 s5  instances=3: a stream per instance,
           │                         request r runs on s(3 + r % 3)
           ▼
           y

* a model node gets a stream of its own; nodes that pass the same
  ``stream=`` label share one, and so do nodes using the same Model object
  (one loaded model may not execute on two streams at once);
* streams are numbered in the order of their first use; then each host
  step gets one more for its results (its input copies, queued as requests
  are submitted, would hold them up: executor.h, ``ae_node_host``); the
  executor adds its own copy-in and copy-out streams on the plan's device.

Devices (docs/scale-out.md, "Several devices in one pipeline"; the stream
numbers as without peer links)::

    device 0                                 device 1
    x ──► [enc] s0 ── h ─────────────────►  {copy h to device 1} s2
                      (no peer link: bridge s3 on device 0, via pinned host)
                                              │
    {copy y to device 0} s4  ◄──── y ──────  [dec] s1
    │   (no peer link: bridge s5 on device 1)
    ▼
    y leaves from device 0

* a node runs on the device it was placed on (``device=``), else where its
  loaded model lives, else on the plan's device; a host step where its
  first input is; every tensor lives on its producer's device, pipeline
  inputs on the plan's device (index 0 of the plan's devices);
* a tensor read on another device gets one copy node per reading device,
  placed just before its first reader, on a new stream of the reading
  device; without a peer link the copy goes through pinned host memory and
  takes a second ("bridge") stream on the source device; an output produced
  elsewhere is copied back to the plan's device, after the last node.

Pure functions of their inputs: the graph nodes (as the builder keeps them),
the plan nodes and tensors, and ``peer(a, b)``, whether device a copies
straight to device b.
"""

from __future__ import annotations

from ascend_engine.errors import PipelineError
from ascend_engine.planner.plan import PlanNode, PlanTensor


def assign_streams(nodes, single) -> list[tuple]:
    """The streams of each of the graph ``nodes`` (given in plan order): one
    tuple per node, an instanced node's with one stream per instance."""
    stream_of = {}   # what owns a stream -> its number, in the order of first use

    def stream(owner):
        return 0 if single else stream_of.setdefault(owner, len(stream_of))

    streams = []
    for k, node in enumerate(nodes):
        if node.kind in ("host", "image"):   # a step's copies, an image node's DVPP work: a stream each
            streams.append((stream((node.kind, k)),))
            continue
        model = node.model
        key = ("label", node.stream) if node.stream is not None else ("model", id(model))
        if node.instances > 1:   # a stream per instance, used by no other node
            streams.append(tuple(stream(("instance", k, j)) for j in range(node.instances)))
        else:
            streams.append((stream(key),))
    return streams


def device_of(node, device, tensor_device) -> int:
    """The device id a graph node runs on: where it was placed, where its
    loaded model lives, or the plan's ``device``; a host step where its
    first input is (``tensor_device``: tensor index -> device id)."""
    if node.kind in ("host", "image"):
        return tensor_device[node.inputs[0].index]
    if node.device is not None:
        return node.device
    return node.model.device_id if node.path is None else device


def node_devices(nodes, inputs, device) -> tuple[list, dict]:
    """(device id of each of the graph ``nodes``, given in plan order;
    {tensor index: device id}): every tensor on its producer's device, the
    pipeline ``inputs`` on ``device``."""
    tensor_device = {h.index: device for h in inputs}
    node_device = []
    for node in nodes:
        d = device_of(node, device, tensor_device)
        node_device.append(d)
        for h in node.outputs:
            tensor_device[h.index] = d
    return node_device, tensor_device


def place(nodes, tensors, outputs, node_device, tensor_device, device, single, peer):
    """Put every plan node and tensor on its device; where a tensor is read
    on another device than its producer's, insert a copy node (device to
    device with peer access, else through pinned host memory).  Pipeline
    inputs arrive on and outputs leave from the plan's ``device``.  Rewrites
    ``nodes`` (copies before their first reader), the tensors' producers,
    readers and domains, and ``outputs``; returns (device ids, stream
    devices: per compute stream the index of its device)."""
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
    for node in nodes:
        if node.kind == "host":   # its results' stream (executor.h, ae_node_host)
            node.results_stream = node.stream if single else len(stream_devices)
            stream_devices[node.results_stream] = node.device
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
        stream = n_streams
        stream_devices[stream] = d
        n_streams += 1
        bridge = -1
        if not peer(devices[src_device], devices[d]):
            bridge = n_streams
            stream_devices[bridge] = src_device
            n_streams += 1
        by_position.setdefault(before, []).append(PlanNode(
            name=f"copy {tensors[t].name} to device {devices[d]}"[:63], model=None, stream=stream,
            inputs=[t], outputs=[new], dyn_index=-1, dyn_offset=0, dyn_size=0, gears=(), static_batch=0,
            streams=(stream,), kind="copy", domain=tensors[t].domain, device=d, bridge_stream=bridge))
    _insert_copies(nodes, tensors, outputs, by_position)
    return devices, [stream_devices[s] for s in range(n_streams)]


def _insert_copies(nodes, tensors, outputs, by_position):
    """Put the copy nodes before the position they serve and renumber what
    refers to plan positions: domains (a host step's rows), producers, readers."""
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
