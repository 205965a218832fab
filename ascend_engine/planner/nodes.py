"""From graph to plan: the order of the nodes, their plan tensors and plan nodes.

:func:`node_order` sorts the graph (the one topological sort,
:mod:`ascend_engine.toposort`); :func:`plan_tensors` gives every tensor its
bytes per row; :func:`plan_nodes` binds every model node's inputs and outputs
to plan tensors (a buffer holds every descriptor size bound to it), records
its gears, and sizes the rows of tensors after a host step that sets rows
(their models run those rows in chunks, padding included).  Streams come
from :mod:`ascend_engine.planner.placement`, row domains from
:func:`ascend_engine.planner.validate.check_bindings`.
"""

from __future__ import annotations

import numpy as np

from ascend_engine.errors import PipelineError
from ascend_engine.planner.images import plan_image
from ascend_engine.planner.models import follow, gear_io, kind_of, static_batch
from ascend_engine.planner.plan import PlanNode, PlanTensor
from ascend_engine.shapes import row_table
from ascend_engine.toposort import CycleError, topological_order


def node_order(nodes) -> list[int]:
    """The graph nodes' indices in plan order: topological, host steps as
    late as their consumers allow (the nodes after a host step are enqueued
    only once it has run, so a model that does not depend on it comes first)."""
    producer = {}
    for i, node in enumerate(nodes):
        for h in node.outputs:
            producer[h.index] = i
    deps = [[producer[h.index] for h in node.inputs if h.index in producer] for node in nodes]
    perm = [i for i, n in enumerate(nodes) if n.kind == "model"]
    perm += [i for i, n in enumerate(nodes) if n.kind == "image"]
    perm += [i for i, n in enumerate(nodes) if n.kind == "host"]
    at = {i: k for k, i in enumerate(perm)}
    try:
        return [perm[k] for k in topological_order([[at[d] for d in deps[i]] for i in perm])]
    except CycleError as exc:
        cycle = " -> ".join(nodes[j].name for j in exc.cycle)
        raise PipelineError(f"the pipeline has a cycle: {cycle}") from None


def plan_tensors(handles) -> list[PlanTensor]:
    """A plan tensor per tensor handle, with its bytes per row."""
    tensors = []
    for h in handles:
        shaped = any(d == -1 for d in h.shape[1:])
        # a shaped tensor's row_bytes is set from its gears (validate.check_shaped_plan)
        rows = int(np.prod([d for d in h.shape[1:] if d != -1], dtype=np.int64))
        tensors.append(PlanTensor(h.name, h.dtype, h.shape, 0 if shaped else rows * h.dtype.itemsize,
                                  shaped=shaped))
    return tensors


def plan_nodes(order, graph, tensors, streams, domains, workers, gear_policy, max_batch,
               chunk_span) -> list[PlanNode]:
    """The plan node of every graph node, in plan order.

    ``streams``: each node's streams (placement.assign_streams, plan order);
    ``domains``: graph node index -> its row domain; ``workers``: threads
    per host step name; ``chunk_span(gears, policy, max_rows)``: the most
    rows a model reaches running up to ``max_rows`` rows in chunks (the
    executor's own rule, ``ascend_engine._gears.chunk_span``).
    """
    nodes = []
    position = {i: k for k, i in enumerate(order)}
    for i in order:
        node = graph[i]
        if node.kind == "image":
            nodes.append(plan_image(node, position[i], tensors, streams[position[i]], domains[i]))
            continue
        if node.kind == "host":
            nodes.append(_plan_host(node, position[i], tensors, streams[position[i]], domains[i], workers))
            continue
        model = node.model
        node_streams = streams[position[i]]
        stream = node_streams[0]
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
        domain = domains[i]
        kind = kind_of(model)
        shape_kind = kind if kind in ("hw", "dims") else ""
        # a shaped model on a host step's rows runs chunks of its fixed first
        # dimension, or (dims gears over the rows: chunk_rows -1) of its gears' rows
        chunk_rows = model.inputs[0].shape[0] if shape_kind and domain >= 0 else 0
        table = _row_table(model, node.name) if chunk_rows == -1 else None
        if domain >= 0:
            # rows from a host step run in chunks at this model's gears:
            # its tensors hold the rows the padding of any chunk reaches
            if table:
                span = max(chunk_span(rows, gear_policy, nodes[domain].max_rows) for rows in table[2])
            else:
                span = chunk_span(gears or (chunk_rows or static_batch(model),), gear_policy,
                                  nodes[domain].max_rows)
            for h in list(node.inputs) + list(node.outputs):
                tensors[h.index].max_rows = max(tensors[h.index].max_rows, span)
        nodes.append(PlanNode(
            name=node.name, model=model, stream=stream, inputs=inputs, outputs=outputs,
            dyn_index=model.dynamic_index, dyn_offset=0,
            dyn_size=model.dynamic_nbytes if model.dynamic_index >= 0 else 0,
            gears=gears,
            static_batch=max(chunk_rows, 0) if shape_kind else 0 if gears else static_batch(model),
            instances=node.instances, streams=node_streams, domain=domain,
            shape_kind=shape_kind, gear_io=gear_io(model) if shape_kind else (),
            follow=follow(model) if shape_kind else (),
            dims_table=table[0] if table else (), row_dims=table[1] if table else (),
        ))
    for t in tensors:
        rows = max_batch if t.domain < 0 else nodes[t.domain].max_rows
        t.max_rows = max(t.max_rows, rows)
    return nodes


def _plan_host(node, k, tensors, streams, domain, workers) -> PlanNode:
    """A host step's plan node at plan position ``k``: a stream of its own for its copies."""
    stream = streams[0]
    for h in node.inputs:
        tensors[h.index].readers.append(k)
    for h in node.outputs:
        tensors[h.index].producer = k
    return PlanNode(
        name=node.name, model=None, stream=stream, inputs=[h.index for h in node.inputs],
        outputs=[h.index for h in node.outputs], dyn_index=-1, dyn_offset=0, dyn_size=0, gears=(),
        static_batch=0, streams=(stream,), kind="host", fn=node.fn, rows_any=node.rows == "any",
        max_rows=node.max_rows, workers=workers[node.name], domain=domain,
        input_names=tuple(h.name for h in node.inputs),
        output_specs=tuple((h.name.split(".", 1)[1], h.dtype, tuple(h.shape[1:])) for h in node.outputs),
    )


def _row_table(model, name) -> tuple:
    """shapes.row_table of a model running a host step's rows with -1 rows: only dims gears can."""
    if kind_of(model) != "dims":
        raise PipelineError(f"model node {name!r}: its first dimension is -1 but it has no dims gears; "
                            "a model running a host step's rows takes a fixed or a dims-gear first dimension")
    return row_table(model.inputs, gear_io(model))
