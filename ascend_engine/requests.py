"""What a request is, for each kind of plan an Engine runs (docs/executor.md).

An engine picks one kind when it is built (:func:`for_plan`) and asks it, for
every request, instead of testing the plan in every method:

* :class:`Plain` -- no host steps, no dynamic shapes.  Every output is known
  before the request runs, so ``run_batch`` is one GIL-free call into the
  executor and ``run_many`` hands requests to the executor directly (the
  fast paths, ``direct``);
* :class:`HostSteps` -- host steps: an output whose rows a step sets is known
  only once the request ran; requests go through ``submit`` and the server;
* :class:`DynamicShapes` -- image-size or dims-gear models: each request has
  shapes of its own, its inputs are padded to its gears and its outputs cut
  back; requests go through ``submit`` and the server.

Each kind answers how feeds are checked, which arrays a request's outputs are
written into, how a finished request is delivered, and how ``run_batch`` and
``trace`` split their feeds into requests (and join the results).  Nothing
here touches the executor: the device queue does (ascend_engine/_executor.pyx).
"""

from __future__ import annotations

import numpy as np

from ascend_engine._feeds import check_feeds, random_feeds
from ascend_engine.shapes import ShapedRequests, pad_to


class DeviceRequest:
    """One request on the executor (what runs in one slot): its number, the
    arrays its outputs are written into (owned here, so they outlive any
    caller that gives up on them), and its outcome once the executor is done
    with it."""

    __slots__ = ("ticket", "outputs", "done", "error", "on_done", "out_rows", "walk", "shape", "times")

    def __init__(self, outputs, on_done=None, variable=False):
        self.ticket = None
        self.outputs = outputs
        self.done = False
        self.error = None
        self.on_done = on_done      # called (engine lock held) once the outcome is known
        # rows of each output, reported by the executor, when a host step sets some
        self.out_rows = np.zeros(len(outputs), dtype=np.uint64) if variable else None
        # its RequestWalk, when host steps read or set its shapes
        self.walk = None
        # its RequestShape in a plan with dynamic shapes (the executor copies it into the slot)
        self.shape = None
        # a timed request: int64 [enqueued, done] on time.monotonic_ns()'s clock, which the executor
        # writes (docs/executor.md, "Timing run_many's requests"); None: untimed
        self.times = None


def for_plan(plan) -> Requests:
    """The kind of requests ``plan`` runs."""
    if plan.shaped:
        return DynamicShapes(plan)
    if any(node.kind == "image" for node in plan.nodes):
        from ascend_engine.image_requests import Images
        return Images(plan)
    if any(node.kind == "host" for node in plan.nodes):
        return HostSteps(plan)
    return Plain(plan)


class Requests:
    """What every kind shares: the plan's inputs and outputs, and the
    arrays a device request's outputs are written into."""

    direct = False    # run_many and run_batch go through submit and the server
    shapes = None     # the ShapedRequests of a plan with dynamic shapes

    def __init__(self, plan):
        self.plan = plan
        tensors = plan.tensors
        self.input_specs = [(name, tensors[t].dtype, tuple(tensors[t].shape[1:])) for name, t in plan.inputs]
        self.output_specs = [(name, tensors[t].dtype, tuple(tensors[t].shape[1:]))
                             for name, t in plan.outputs]
        self.names = [name for name, _, _ in self.output_specs]
        self.variable = list(plan.variable_outputs)   # outputs whose rows a host step sets
        # output index -> the rows its array must hold (the step's max_rows)
        self.var_rows = {k: plan.nodes[tensors[plan.outputs[k][1]].domain].max_rows for k in self.variable}

    def output_room(self, k, rows):
        """An array output k of a request of ``rows`` rows can be written
        into: its rows (a host step's max_rows where the step sets them) at
        its largest shape (flat where its trailing dimensions change per
        request; the request's walk gives it its shape once it is done)."""
        _name, dtype, trailing = self.output_specs[k]
        rows = self.var_rows.get(k, rows)
        if -1 in trailing:
            t = self.plan.outputs[k][1]
            return np.empty(rows * self.plan.tensors[t].row_bytes // np.dtype(dtype).itemsize, dtype=dtype)
        return np.empty((rows,) + trailing, dtype=dtype)

    def device_request(self, inputs, outputs, rows, on_done, shape=None, timed=False) -> DeviceRequest:
        """The record of one device request of the server.  Where a host step
        sets an output's rows or shape, ``outputs`` holds None: the record
        gets an array with room for them (cut to what it got on delivery).
        ``timed``: the executor records when it went in and came out."""
        outputs = [self.output_room(k, rows) if o is None else o for k, o in enumerate(outputs)]
        record = DeviceRequest(outputs, on_done, bool(self.variable))
        if timed:
            record.times = np.zeros(2, np.int64)
        return record

    # the requests whose shapes host steps read, by request number (DynamicShapes only)

    def track(self, ticket, record):
        """``record`` is about to be submitted as request ``ticket``."""

    def forget(self, ticket):
        """Request ``ticket`` is done, or was not submitted after all."""

    def forget_all(self):
        """The engine cancelled every request."""

    def deliver(self, record):
        """The outputs of a finished request, as its caller gets them."""
        return record.outputs

    def result(self, outputs):
        """{output name: array} of a finished request's outputs."""
        return dict(zip(self.names, outputs, strict=True))


class FixedShapes(Requests):
    """What Plain and HostSteps share: feeds of the inputs' trailing shapes,
    any number of rows."""

    def __init__(self, plan):
        super().__init__(plan)
        self.feed_specs = [(name, dtype, (-1,) + trailing) for name, dtype, trailing in self.input_specs]

    def prepare(self, feeds):
        """Check feeds before anything is submitted; returns (arrays, rows).

        Names, dtypes and shapes must match the pipeline inputs exactly (no
        silent casts); arrays that are not C-contiguous are copied.
        """
        return check_feeds(feeds, self.feed_specs, "pipeline")

    def check_fixed(self, rows, batch):
        fixed = self.plan.fixed_batch
        if fixed and (batch != fixed or rows % fixed):
            raise ValueError(f"the pipeline has a fixed batch of {fixed} (a static model or input): "
                             f"requests must carry exactly {fixed} rows, got batches of {batch} "
                             f"over {rows} rows")

    def call_outputs(self, rows):
        """The output arrays of one submitted request (None: known once it ran)."""
        raise NotImplementedError

    def request(self, feeds):
        """submit(): (inputs, outputs, rows, shape) of one request, checked."""
        arrays, rows = self.prepare(feeds)
        self.check_fixed(rows, min(rows, self.plan.max_batch))
        return arrays, self.call_outputs(rows), rows, None

    def trace_requests(self, feeds, requests, batch):
        """trace(): the feeds dict of each request to record (``feeds``: whole
        arrays split like run_batch, by default random inputs), and what the
        document says of them."""
        if feeds is None:
            feeds = random_feeds(self.input_specs, requests * batch)[0]
        arrays, total = self.prepare(feeds)
        total = min(total, requests * batch)
        return self._split(arrays, total, batch), {"batch": batch}

    def _split(self, arrays, rows, batch):
        """One feeds dict per ``batch`` rows of the arrays (the last maybe smaller)."""
        names = [name for name, _, _ in self.input_specs]
        return [{name: a[lo:min(lo + batch, rows)] for name, a in zip(names, arrays, strict=True)}
                for lo in range(0, rows, batch)]


class Plain(FixedShapes):
    """A plan without host steps or dynamic shapes: every output is known
    before the request runs."""

    direct = True     # run_many and run_batch hand requests to the executor themselves

    def outputs_for(self, rows):
        """The arrays the executor writes ``rows`` rows of outputs into."""
        return [np.empty((rows,) + trailing, dtype=dtype) for _, dtype, trailing in self.output_specs]

    def call_outputs(self, rows):
        return self.outputs_for(rows)


class HostSteps(FixedShapes):
    """A plan with host steps (and fixed trailing shapes): an output whose
    rows a step sets comes back with the rows the request got."""

    def call_outputs(self, rows):
        return [None if k in self.var_rows else np.empty((rows,) + trailing, dtype=dtype)
                for k, (_, dtype, trailing) in enumerate(self.output_specs)]

    def deliver(self, record):
        if record.out_rows is None:
            return record.outputs
        # the rows each output carries for this request
        outputs = record.outputs
        return [o[:int(record.out_rows[k])] if k in self.var_rows else o for k, o in enumerate(outputs)]

    def batches(self, feeds, batch):
        """run_batch(): (one feeds dict per ``batch`` rows, the function joining
        their outputs).  A request above max_batch runs in pieces (the server
        splits it and joins its rows).  Outputs are concatenated, except those
        whose rows a host step sets: one array per request."""
        arrays, rows = self.prepare(feeds)
        self.check_fixed(rows, min(batch, self.plan.max_batch))

        def join(outs):
            result = {}
            for k, (name, dtype, trailing) in enumerate(self.output_specs):
                per_request = [out[name] for out in outs]
                if k in self.var_rows:
                    result[name] = per_request
                else:
                    result[name] = (np.concatenate(per_request) if per_request
                                    else np.empty((0,) + trailing, dtype))
            return result

        return self._split(arrays, rows, batch), join


class DynamicShapes(Requests):
    """A plan with image-size or dims-gear models: each request is resolved
    to its gears (``pipeline.ShapedRequests``), its inputs padded to them
    and its outputs cut back to its size; requests of a plan with host
    steps also carry their walk, which the steps read and extend."""

    def __init__(self, plan):
        super().__init__(plan)
        self.shapes = ShapedRequests(plan)
        tensors = plan.tensors
        # one request: the inputs' whole shapes; run_batch: any rows of one shape past them
        self.request_specs = [(name, tensors[t].dtype, tensors[t].shape) for name, t in plan.inputs]
        self.batch_specs = [(name, tensors[t].dtype, (-1,) + tuple(tensors[t].shape[1:]))
                            for name, t in plan.inputs]

    def request(self, feeds):
        """submit(): each model's gear from the request's shapes, the inputs padded to it."""
        arrays = check_feeds(feeds, self.request_specs, "pipeline", batched=False)[0]
        rows = arrays[0].shape[0]
        for (name, _, _), a in zip(self.request_specs, arrays, strict=True):
            if a.shape[0] != rows:
                raise ValueError(f"input {name!r}: {a.shape[0]} rows differ from the other inputs' {rows}")
        if rows > self.plan.max_batch:
            raise ValueError(f"a request of a pipeline with dynamic shapes carries at most "
                             f"{self.plan.max_batch} rows (its models' gears), got {rows}: "
                             "submit smaller requests")
        shape = self.shapes.resolve([a.shape for a in arrays])
        inputs = [pad_to(a, s) for a, s in zip(arrays, shape.inputs, strict=True)]
        # None: known once the request ran (after a host step that sets rows or shapes)
        outputs = [None if s is None or shape.walk is not None else np.empty(s, dtype=dtype)
                   for s, (_, dtype, _) in zip(shape.outputs, self.output_specs, strict=True)]
        return inputs, outputs, rows, shape

    def device_request(self, inputs, outputs, rows, on_done, shape=None, timed=False):
        """As Requests.device_request; ``shape``: the request's RequestShape
        (else looked up from the padded inputs)."""
        if shape is None:
            shape = self.shapes.padded([a.shape for a in inputs])
        record = super().device_request(inputs, outputs, rows, on_done, timed=timed)
        record.shape = shape
        record.walk = shape.walk.copy() if shape.walk is not None else None
        return record

    def track(self, ticket, record):
        if record.walk is not None:   # its host steps may run before submit returns
            self.shapes.live[ticket] = record.walk

    def forget(self, ticket):
        self.shapes.live.pop(ticket, None)

    def forget_all(self):
        self.shapes.live.clear()

    def deliver(self, record):
        if record.walk is None:
            return record.outputs
        return record.walk.deliver(record.outputs, record.out_rows)

    def batches(self, feeds, batch):
        """run_batch(): the arrays (one shape past the first axis) split into
        requests of ``batch`` rows (at most max_batch), and the function
        joining their outputs along the first axis -- except outputs after a
        host step that sets rows or shapes: one array per request."""
        arrays = check_feeds(feeds, self.batch_specs, "pipeline", batched=False)[0]
        rows = arrays[0].shape[0]
        step = min(batch, self.plan.max_batch)

        def join(outs):
            later = self.shapes.resolve([(min(step, rows),) + a.shape[1:] for a in arrays]).outputs
            return {name: [o[name] for o in outs] if later[k] is None
                    else np.concatenate([o[name] for o in outs]) for k, name in enumerate(self.names)}

        return ({name: a[lo:lo + step] for (name, _, _), a in zip(self.batch_specs, arrays, strict=True)}
                for lo in range(0, rows, step)), join

    def trace_requests(self, feeds, requests, batch):
        """trace(): each feeds dict is a request of its own shape (a list,
        cycled, or one dict for every request)."""
        if feeds is None:
            raise ValueError("trace() of a pipeline with dynamic shapes needs feeds: one feeds dict per "
                             "request (a list, cycled) or one dict for every request, at the shapes to trace")
        pool = [feeds] if isinstance(feeds, dict) else list(feeds)
        if not pool or not all(isinstance(f, dict) for f in pool):
            raise ValueError("trace() of a pipeline with dynamic shapes takes feeds dicts, one per request; "
                             f"got {type(feeds).__name__}")
        return (pool[k % len(pool)] for k in range(requests)), {}
