"""Shapes and gears at run time: one rule for Model, the planner and the engine.

A model with gears runs each execution at one of them: a batch gear (a
number of rows), an image size (height x width) or a dims gear (the shape of
every input).  Two rules answer every question about them, and every caller
uses these two:

* :func:`holding_gear` -- which gear holds these input shapes: of the gears
  whose every input dimension is at least the request's, the one with the
  fewest input elements (ties: the smaller gear).  ``Model.gear_for`` (batch
  gears), ``Model.gear_shapes`` (image-size and dims gears, one synchronous
  call) and the pipeline's per-request choice (:class:`RequestWalk`) call it.
* :func:`pad_to` -- an array padded with zeros after its data up to a gear's
  shape (``Model(...)`` calls and the engine's inputs and host-step outputs).

The rest is the per-request shape resolution of a compiled plan with shaped
tensors (docs/executor.md): :class:`ShapedRequests` caches, per distinct
input shapes, the :class:`RequestShape` the executor takes, which
:class:`RequestWalk` works out node by node.  This module runs on the
engine's submitting and worker threads; it imports neither the planner nor
the executor (it reads a plan's nodes and tensors by their fields).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def pad_to(a, shape):
    """``a`` padded with zeros after its data, at the end of each dimension, up
    to ``shape``; ``a`` itself (made C-contiguous) when it has that shape."""
    if tuple(a.shape) == tuple(shape):
        return np.ascontiguousarray(a)
    out = np.zeros(shape, a.dtype)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out


def holding_gear(gears, shapes, chunked=False):
    """The entry of ``gears`` whose gear holds the input ``shapes``, or None.

    ``gears`` lists ``(gear, input shapes, ...)`` entries: ``(g, ((g,),))``
    for a batch gear g, and for image-size and dims gears a model's
    ``gear_io`` entries ``(gear, input shapes, output shapes)``.  A gear holds
    the shapes when every input has its rank and no dimension larger than the
    gear's (``chunked``: the rows are free, they run in chunks of the gear's);
    a gear with more rows runs the request's padded, as a batch gear does.  Of
    those, the one with the fewest input elements wins, ties to the smaller
    gear (for dims gears: the index, so the first listed).
    """
    best = None
    for entry in gears:
        gear, g_in = entry[0], entry[1]
        if all(len(h) == len(g) and (chunked or h[0] <= g[0])
               and all(a <= b for a, b in zip(h[1:], g[1:], strict=True))
               for h, g in zip(shapes, g_in, strict=True)):
            key = (sum(math.prod(g) for g in g_in), gear)
            if best is None or key < best[0]:
                best = (key, entry)
    return None if best is None else best[1]


def bytes_per_row(shape, dtype) -> int:
    """Bytes of one row (the first dimension) of a tensor of ``shape``."""
    return math.prod(shape[1:]) * np.dtype(dtype).itemsize if len(shape) > 1 else \
        np.dtype(dtype).itemsize


def gear_text(node, gear) -> str:
    """A gear as messages write it: HxW for image sizes, "gear k" for dims gears."""
    return f"{gear[0]}x{gear[1]}" if node.shape_kind == "hw" else f"gear {gear}"


def row_table(inputs, gear_io) -> tuple:
    """A dims model whose rows are a gear dimension, running a host step's
    rows in chunks: (every gear's flattened dims, where each input's rows sit
    among them, the ascending rows of each group of gears that differ in
    the rows only).  ``inputs``: the model's input specs; ``gear_io``: its
    (gear, input shapes, output shapes) per gear."""
    table, groups = [], {}
    for _gear, g_in, _g_out in gear_io:
        table.append(tuple(d for s in g_in for d in s))
        groups.setdefault(tuple(tuple(s[1:]) for s in g_in), set()).add(g_in[0][0])
    places, at = [], 0
    for spec in inputs:
        if spec.shape[0] == -1:
            places.append(at)
        at += len(spec.shape)
    return tuple(table), tuple(places), [sorted(rows) for rows in groups.values()]


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
                    f"gear {gear_text(node, gear)} takes {want} (tensors pass between models unpadded)")
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
        return bytes_per_row(self.device_shape(t), tp.dtype)

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


def _gear_values(node, gear_io_entry) -> list:
    gear, g_in, _g_out = gear_io_entry
    return list(gear) if node.shape_kind == "hw" else [d for s in g_in for d in s]


def _choose(node, ins, have, rows, chunked=False):
    """(gear, input shapes, output shapes) of the smallest gear holding
    ``have`` (or, ``chunked``, its trailing dimensions only: the rows run in
    chunks of the gear's).  A gear with more rows than the request's runs
    them padded, as a batch gear does: the executor moves the request's rows
    only and the extra ones are never read back."""
    chosen = holding_gear(node.gear_io, have, chunked)
    if chosen is None:
        names = [node.model.inputs[i].name for i in range(len(ins))]
        got = {n: tuple(h) for n, h in zip(names, have, strict=True)}
        if node.shape_kind == "hw":
            listed = ", ".join(gear_text(node, g) for g, _i, _o in node.gear_io)
            what = f"image sizes (height x width) {listed}"
        else:
            what = "; ".join(
                f"gear {g}: " + ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, g_in, strict=True))
                for g, g_in, _o in node.gear_io)
        rows_rule = "(its rows run in chunks)" if chunked else f"with {rows} row(s)"
        raise ValueError(
            f"model node {node.name!r}: no gear holds the input shapes {got} {rows_rule}; its gears: {what}")
    return chosen

