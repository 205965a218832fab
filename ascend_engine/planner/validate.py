"""Validation: the graph, its edges and row domains against the models' descriptors.

Every check raises :class:`PipelineError` with a message naming the node, the
input and what was expected (tests assert these messages).  The checks are
pure functions of what the builder hands them: its graph nodes (each with
its model's description: a ModelDescription or a loaded Model,
:mod:`ascend_engine.planner.models`), the plan tensors and nodes, and facts
it asked the runtime for (the device count).

Rules (docs/executor.md, "Compile: everything decided and created once" and
"Dynamic shapes"):

* every tensor is row based: its first dimension is the request's batch; a
  request carries up to ``max_batch`` rows, the smallest "largest gear" of
  the models on the request's rows, or the batch a static model was built for;
* a host step with ``rows="any"`` starts a *row domain*: everything after it
  runs on its rows; every input of a node carries the same rows;
* a *shaped* tensor (``-1`` after the first dimension) comes from a pipeline
  input, a host step or an image-size or dims-gear model, and only such
  models (or pipeline outputs) read it; tensors pass between models
  unpadded, so each gear's output must be exactly a gear input of its reader.
"""

from __future__ import annotations

import numpy as np

from ascend_engine._feeds import shape_text
from ascend_engine.errors import PipelineError
from ascend_engine.options import host_workers as host_workers_of
from ascend_engine.planner.images import check_image_node
from ascend_engine.planner.models import gear_io, kind_of, static_batch
from ascend_engine.shapes import bytes_per_row, gear_text


def shape_label(shape) -> str:
    """A shape for messages: -1 written as such when a later dimension varies, else as ``batch``."""
    return shape_text(shape, "-1" if any(d == -1 for d in shape[1:]) else "batch")


def check_graph(nodes, outputs):
    """A plan needs a model node and an output."""
    if not any(n.kind == "model" for n in nodes):
        raise PipelineError("the pipeline has no model nodes")
    if not outputs:
        raise PipelineError("the pipeline has no outputs: call pipe.output(name, handle)")


def check_devices(nodes, device, count):
    """The plan's device and every placed node's exist (``count`` devices), and a
    loaded model is placed where it lives."""
    if not 0 <= device < count:
        raise PipelineError(f"pipeline device {device} does not exist: {count} device(s) found")
    for node in nodes:
        if node.device is not None and not 0 <= node.device < count:
            raise PipelineError(f"model node {node.name!r}: device {node.device} does not exist: "
                                f"{count} device(s) found")
        if node.kind == "model" and node.path is None and node.device is not None \
                and node.model.device_id != node.device:
            raise PipelineError(f"model node {node.name!r}: device={node.device}, but the loaded model "
                                f"is on device {node.model.device_id}")


def workers_per_step(nodes, host_workers) -> dict:
    """Threads per host step name, from compile(host_workers=int or {name: int})."""
    return host_workers_of(host_workers, [n.name for n in nodes if n.kind == "host"], error=PipelineError)


def row_domain(node, nodes, tensors, position) -> int:
    """Whose rows ``node`` runs on: -1 (the request's) or a host step's plan position.

    A model, or a host step with rows="same", needs every input from one
    domain; a step with rows="any" may mix them (it sets its own rows).
    """
    domains = {}
    for h in node.inputs:
        domains.setdefault(tensors[h.index].domain, h.name)
    if len(domains) > 1 and not (node.kind == "host" and node.rows == "any"):
        names = {pos: nodes[i].name for i, pos in position.items()}
        parts = [f"{name!r} ({'the request' if d < 0 else 'host step ' + repr(names[d])}'s rows)"
                 for d, name in domains.items()]
        what = "model node" if node.kind == "model" else "host step"
        raise PipelineError(
            f"{what} {node.name!r} reads tensors with different numbers of rows: {' and '.join(parts)}; "
            "every input of a node must carry the same rows"
        )
    return next(iter(domains))


def check_bindings(order, nodes, inputs, tensors, byte_inputs=frozenset()) -> tuple[int, int, dict]:
    """Check every edge against the model descriptors and give every
    tensor its row domain; returns (max_batch, fixed_batch, {graph node
    index: its row domain})."""
    limits, fixed = [], set()
    for h in inputs:
        if h.shape[0] != -1:
            fixed.add(h.shape[0])
    position = {i: k for k, i in enumerate(order)}
    domains = {}
    for i in order:
        node = nodes[i]
        if node.kind == "image":
            domains[i] = check_image_node(node, nodes, tensors, byte_inputs, position)
            continue
        domain = domains[i] = row_domain(node, nodes, tensors, position)
        if node.kind == "host":
            if node.native:
                for h in list(node.inputs) + list(node.outputs):
                    if any(d == -1 for d in h.shape[1:]):
                        raise PipelineError(
                            f"host step {node.name!r}: {h.name!r} has the shape {shape_label(h.shape)}, "
                            "whose -1 dimensions change per request; a native step's contract (ae_host_fn) "
                            "carries rows, not shapes, so it takes and returns fixed shapes: make it a "
                            "Python step")
            for h in node.outputs:
                tensors[h.index].domain = position[i] if node.rows == "any" else domain
            continue
        for h in node.outputs:
            tensors[h.index].domain = domain
        specs = node.model.inputs
        kind = kind_of(node.model)
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
                refuse_shaped(h, where)
                ok = len(spec.shape) == len(h.shape) and tuple(spec.shape[1:]) == tuple(h.shape[1:])
            if not ok:
                raise PipelineError(f"{where}: expected shape {shape_label(spec.shape)}, "
                                    f"got {shape_label(h.shape)}")
        if kind in ("hw", "dims"):
            rows_dim = specs[0].shape[0] if specs else 1
            if domain >= 0:
                continue   # in chunks (rows_dim rows, or its gears' rows): no bound on the request's
            if rows_dim == -1:   # the rows are a gear dimension: bounded by the largest gear's
                limits.append(max(ins[0][0] for _gear, ins, _outs in gear_io(node.model)))
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
            fixed.add(static_batch(node.model))
            limits.append(static_batch(node.model))
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
    return (fixed_batch or max_batch), fixed_batch, domains


def check_fixed_outputs(nodes, outputs, fixed_outputs):
    """A pipeline carries rows of requests: an output without a batch
    dimension (a class table, an anchor grid) can be neither a pipeline
    output nor another model's input; unused, it is harmless.
    ``fixed_outputs``: tensor index -> (node name, output name) of such outputs."""
    uses = [(f"pipeline output {name!r}", h) for name, h in outputs]
    uses += [(f"the input of model node {n.name!r}", h) for n in nodes for h in n.inputs]
    for where, h in uses:
        if h.index in fixed_outputs:
            node, output = fixed_outputs[h.index]
            kind = next(kind_of(n.model) for n in nodes if n.name == node)
            if kind in ("hw", "dims"):
                raise PipelineError(
                    f"{where}: output {output!r} of model node {node!r} has the shape "
                    f"{shape_label(h.shape)}, whose first dimension is not the rows of the model's inputs; "
                    "a pipeline carries per-request rows, so it can only be left unused. Read it with "
                    "Model(...) outside the pipeline"
                )
            raise PipelineError(
                f"{where}: output {output!r} of model node {node!r} has the fixed shape "
                f"{shape_text(h.shape)} (no batch dimension) although the model takes a dynamic batch; "
                "a pipeline carries per-request rows, so it can only be left unused. Read it once with "
                "Model(...) outside the pipeline"
            )


def check_shaped_plan(nodes, tensors, max_delay_ms):
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
            sizes += [bytes_per_row(outs[j], t.dtype) for _gear, _ins, outs in pn.gear_io]
        for k, pos in consumers.get(t_index, ()):
            sizes += [bytes_per_row(ins[pos], t.dtype) for _gear, ins, _outs in nodes[k].gear_io]
        t.row_bytes = max(sizes)
    for t_index, users in consumers.items():
        for k, pos in users:
            _check_shaped_edge(nodes, tensors, t_index, producer.get(t_index), k, pos)


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
        bad = [f"{gear_text(pn, gear)} -> {shape_label(outs[j])}" for gear, _ins, outs in pn.gear_io
               if tuple(outs[j]) not in takes]
        if bad:
            raise PipelineError(
                f"{where}: tensors pass between models unpadded, so every gear's output of model node "
                f"{pn.name!r} must be exactly one of the input shapes of {node.name!r}'s gears "
                f"{[shape_label(s) for s in takes]}; these gears of {pn.name!r} give others: {'; '.join(bad)}"
            )
    elif not t.shaped and not any(tuple(s[1:]) == tuple(t.shape[1:]) for s in takes):
        raise PipelineError(
            f"{where}: its shape {shape_label(t.shape)} is fixed, but no gear of {node.name!r} takes "
            f"it unpadded (the gears take {[shape_label(s) for s in takes]})"
        )


def check_unused(inputs, tensors):
    """Every pipeline input is read by a node or is an output."""
    for h in inputs:
        if not tensors[h.index].readers:
            raise PipelineError(f"input {h.name!r} is not used by any model or output")


def check_shaped_sources(inputs, nodes, tensors, plan_nodes):
    """A shaped pipeline input or host-step output must feed an image-size
    or dims-gear model: only a gear bounds its size."""
    for h in inputs + [h for n in nodes if n.kind == "host" for h in n.outputs]:
        if tensors[h.index].shaped and not any(plan_nodes[r].shape_kind for r in tensors[h.index].readers):
            what = f"input {h.name!r}" if h in inputs else f"host step output {h.name!r}"
            raise PipelineError(
                f"{what} has the shape {shape_label(h.shape)}, whose -1 dimensions change per "
                "request, but it feeds no image-size or dims-gear model: nothing bounds its size"
            )


def check_batcher(plan_nodes, max_delay_ms):
    """The dynamic batcher merges requests' rows and splits them back per caller: no host step may
    set its own rows, and no JPEG may be decoded (a bytes input is one JPEG per request)."""
    decodes = [n.name for n in plan_nodes if n.kind == "image" and n.image["op"] == "decode"]
    if max_delay_ms and decodes:
        raise PipelineError(f"max_delay_ms: the dynamic batcher merges requests' rows, but image node(s) "
                            f"{', '.join(map(repr, decodes))} decode one JPEG per request: compile with "
                            "max_delay_ms=0")
    if max_delay_ms and any(n.rows_any for n in plan_nodes):
        raise PipelineError(
            "max_delay_ms: the dynamic batcher merges requests and splits their rows back per caller, "
            "but host step(s) " + ", ".join(repr(n.name) for n in plan_nodes if n.rows_any) +
            " with rows='any' produce rows that belong to no single caller: compile with max_delay_ms=0"
        )


def refuse_shaped(h, where):
    """Only image-size or dims-gear models take a tensor whose trailing dimensions change."""
    if any(d == -1 for d in h.shape[1:]):
        raise PipelineError(
            f"{where}: {h.name!r} has the shape {shape_label(h.shape)}, whose -1 dimensions change per "
            "request; only image-size or dims-gear models (or pipeline outputs) take such a tensor"
        )
