# cython: language_level=3
"""Engine: a compiled pipeline, run by the C executor with the GIL released.

Build one with ``Pipeline.compile()``.  ``run`` executes one request,
``run_batch`` many (split along the first axis, pipelined, in one GIL-free
call), ``run_many`` streams requests from an iterable keeping ``depth`` in
flight.

Threads: an Engine may be shared by several Python threads.  Each call takes
the engine's lock for as long as it talks to the executor (enqueueing or
waiting), so calls are serialized, while the GIL stays free for other Python
work.  Requests are numbered; a caller waits until its own request is done,
whoever completes it, so run(), run_batch() and run_many() from different
threads interleave safely.  For parallel throughput, compile the pipeline
into several engines (on several devices, for data parallelism).

Requests and failures: every request submitted by run() or run_many() has a
record (:class:`_Request`) that the engine keeps until the executor is done
with it.  The record owns the output arrays the executor writes into, so a
caller that abandons a run_many() generator (break, an exception, Ctrl-C)
never leaves the executor writing into freed memory; and the record carries
the request's own outcome, so each caller gets its own result or error:
the request that failed raises the AscendCL error (naming the node), the
others in flight at that moment raise EngineError saying they were
cancelled and why.
"""

import asyncio
import collections
import json
import time
import threading
import traceback
import warnings

import logging

import numpy as np

cimport numpy as cnp
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset, strncpy

from ascend_engine._acl cimport *
from ascend_engine._executor_api cimport *
from ascend_engine._runtime cimport api, check_not_forked, Resource, Device

from ascend_engine import _runtime
from ascend_engine import errors as _errors
from ascend_engine._checks import positive_int, timeout_ms
from ascend_engine._feeds import check_feeds, random_feeds
from ascend_engine.errors import EngineBusy, EngineError, HostStepError
from ascend_engine.planner.builder import NativeStep
from ascend_engine.shapes import ShapedRequests, pad_to
from ascend_engine.serving import Call, Server
from concurrent.futures import Future

_log = logging.getLogger("ascend_engine")
cnp.import_array()


cdef object _error_of(ae_error *err):
    """The exception for an executor error (an AclError subclass when AscendCL failed)."""
    function = err.function.decode("utf-8", "replace")
    node = err.node.decode("utf-8", "replace")
    message = err.message.decode("utf-8", "replace")
    if function == "ae_host_step":
        request = None if err.request == AE_NO_REQUEST else int(err.request)
        return HostStepError(f"request {request}: {message}", step=node, request=request)
    where = f"node {node!r}: " if node else ""
    if err.code != 0:
        exc = _errors.error_class(err.code)(function, err.code, where + message)
        exc.node = node or None
        return exc
    return EngineError(where + message)


cdef object _raise_error(ae_error *err):
    raise _error_of(err)


# Ctrl-C during a long GIL-free call: the executor asks this function every
# 20 ms while the main thread waits for the device.  The exception a signal
# handler raised (KeyboardInterrupt) is kept here until the call returns,
# drains what was in flight and re-raises it.  Only the main thread runs
# signal handlers, so only its calls set the function (see _arm_poll).
_pending_signal = None
_MAIN_THREAD = threading.main_thread().ident


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef int _poll_signals(void *ctx) noexcept nogil:
    global _pending_signal
    with gil:
        try:
            PyErr_CheckSignals()
        except BaseException as exc:
            _pending_signal = exc
            return 1
    return 0


_GEAR_POLICY = {"upper": AE_GEAR_UPPER, "lower": AE_GEAR_LOWER, "nearest": AE_GEAR_NEAREST}


def chunk_span(gears, policy, uint64_t max_rows):
    """The most rows a model with ``gears`` (ascending) reaches, padding
    included, running any number of rows up to ``max_rows`` in chunks under
    ``policy`` (executor.h, ae_chunk_span: the rule the executor runs by)."""
    cdef uint64_t g[256]
    cdef int n = len(gears)
    if not 0 < n <= 256:
        raise ValueError(f"chunk_span needs 1 to 256 gears, got {n}")
    for k, v in enumerate(gears):
        g[k] = v
    return int(ae_chunk_span(g, n, _GEAR_POLICY[policy], max_rows))


def chunk_plan(gears, policy, uint64_t rows):
    """[(gear, rows taken)] of the executions a model with ``gears`` runs for
    ``rows`` rows after a host step (the executor's own rule, ae_chunk_next)."""
    cdef uint64_t g[256]
    cdef uint64_t gear, take, left = rows
    cdef int n = len(gears)
    if not 0 < n <= 256:
        raise ValueError(f"chunk_plan needs 1 to 256 gears, got {n}")
    for k, v in enumerate(gears):
        g[k] = v
    chunks = []
    while left > 0:
        ae_chunk_next(g, n, _GEAR_POLICY[policy], left, &gear, &take)
        chunks.append((int(gear), int(take)))
        left -= take
    return chunks


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    int PyBUF_WRITE


def _rows_shape(trailing):
    """"(rows, 4)" for a host step output of trailing shape (4,)."""
    return "(" + ", ".join(["rows"] + [str(d) for d in trailing]) + (",)" if not trailing else ")")


cdef class _PyStep:
    """A Python host step as the executor calls it: the function, what its
    inputs and outputs look like, and the exceptions it raised (kept by
    request number until the request's caller collects them)."""
    cdef readonly str name
    cdef object fn
    cdef list in_specs       # (dtype, trailing shape) per input
    cdef list out_specs      # (name, dtype, trailing shape) per output
    cdef bint rows_any
    cdef dict errors
    cdef object errors_lock
    cdef object shapes       # the engine's ShapedRequests (a plan with dynamic shapes), else None
    cdef int node            # the step's index in the plan
    cdef bint reshapes       # some output's trailing dimensions are chosen per request

    def __init__(self, name, fn, in_specs, out_specs, rows_any, shapes=None, node=-1):
        self.name = name
        self.fn = fn
        self.in_specs = list(in_specs)
        self.out_specs = list(out_specs)
        self.rows_any = rows_any
        self.errors = {}
        self.errors_lock = threading.Lock()
        self.shapes = shapes
        self.node = node
        self.reshapes = any(-1 in trailing for _name, _dtype, trailing in self.out_specs)

    def take_error(self, request):
        """The exception the function raised for ``request``, once."""
        with self.errors_lock:
            return self.errors.pop(request, None)

    def forget_errors(self):
        with self.errors_lock:
            self.errors.clear()

    cdef object _walk(self, uint64_t request):
        walk = self.shapes.live.get(request) if self.shapes is not None else None
        if walk is None:
            raise HostStepError(f"host step {self.name!r}: request {request} has no shapes on record")
        return walk

    cdef object _input(self, uint64_t request, int i, const ae_host_tensor *t):
        """Input i as the function sees it: its rows at the request's shape."""
        dtype, trailing = self.in_specs[i]
        nbytes = t.rows * t.row_bytes
        view = PyMemoryView_FromMemory(<char *>t.data, nbytes, PyBUF_READ)
        a = np.frombuffer(view, dtype=dtype)
        if -1 not in trailing:
            return a.reshape((t.rows,) + trailing)
        # laid out at the gear's shape on the device: cut to the request's
        device, logical = self._walk(request).host_input(self.shapes.plan.nodes[self.node].inputs[i], t.rows)
        a = a.reshape(device)
        return a if device == logical else a[tuple(slice(0, n) for n in logical)]

    cdef list _reshape(self, uint64_t request, list result, uint64_t rows, ae_shape_edit *edit):
        """Outputs whose shapes the step chose: resolve the models after it
        from them, pad each to the gear of the model reading it, and give the
        executor the request's new sizes."""
        cdef int n, j
        if edit is NULL:
            raise HostStepError(f"host step {self.name!r}: the executor gave no shapes to edit")
        walk = self._walk(request)
        try:
            device, row_bytes, values = walk.after_step(self.node, [a.shape for a in result], rows)
        except ValueError as exc:
            raise HostStepError(f"host step {self.name!r} returned shapes no model after it takes: {exc}") from None
        for t_, rb in row_bytes.items():
            if 0 <= t_ < edit.n_tensors:
                edit.row_bytes[t_] = rb
        for n, vals in values.items():
            if 0 <= n < edit.n_nodes and len(vals) <= AE_MAX_GEAR_DIMS:
                edit.gear_count[n] = len(vals)
                for j in range(len(vals)):
                    edit.gear_dims[<size_t>n * AE_MAX_GEAR_DIMS + j] = vals[j]
        return [pad_to(a, shape) for a, shape in zip(result, device)]

    cdef int run(self, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                 ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, ae_shape_edit *edit,
                 char *message, size_t message_size):
        """Call the function on views of the pinned staging; copy its outputs
        into the output staging (padded to the gears of the models after it,
        whose sizes it sets in ``edit``, when it chooses its outputs' shapes).
        Returns 0, or 1 with ``message`` filled."""
        try:
            arrays = [self._input(request, i, &inputs[i]) for i in range(n_inputs)]
            result = self.fn(*arrays)
            if isinstance(result, np.ndarray) or not isinstance(result, (tuple, list)):
                result = (result,)
            if len(result) != n_outputs:
                raise HostStepError(f"host step {self.name!r} returned {len(result)} value(s); it declares "
                                    f"{n_outputs} output(s): {', '.join(o[0] for o in self.out_specs)}")
            rows = None
            for o in range(n_outputs):
                name, dtype, trailing = self.out_specs[o]
                a = result[o]
                if not isinstance(a, np.ndarray):
                    raise HostStepError(f"host step {self.name!r} output {name!r}: expected a numpy array, got "
                                        f"{type(a).__name__}")
                if a.dtype != dtype or a.ndim != 1 + len(trailing) or any(
                        d != w and not (w == -1 and d > 0) for d, w in zip(a.shape[1:], trailing)):
                    raise HostStepError(
                        f"host step {self.name!r} output {name!r}: expected {dtype} of shape "
                        f"{_rows_shape(trailing)}, got {a.dtype} of shape {a.shape}")
                if rows is None:
                    rows = a.shape[0]
                elif a.shape[0] != rows:
                    raise HostStepError(f"host step {self.name!r}: its outputs have different numbers of rows "
                                        f"({self.out_specs[0][0]!r} {rows}, {name!r} {a.shape[0]}); "
                                        "they must agree")
                if a.shape[0] > outputs[o].rows:
                    limit = "its max_rows is" if self.rows_any else "rows='same' needs at most"
                    raise HostStepError(f"host step {self.name!r} output {name!r}: returned {a.shape[0]} rows; "
                                        f"{limit} {outputs[o].rows}")
            rows = rows if rows is not None else 0
            result = list(result)
            if self.reshapes:
                result = self._reshape(request, result, rows, edit)
            for o in range(n_outputs):
                a = np.ascontiguousarray(result[o])
                if a.nbytes > outputs[o].rows * outputs[o].row_bytes:   # the plan's gears bound it: cannot happen
                    raise HostStepError(f"host step {self.name!r} output {self.out_specs[o][0]!r}: {a.nbytes} "
                                        f"bytes do not fit its {outputs[o].rows * outputs[o].row_bytes}-byte buffer")
                if a.nbytes:
                    view = PyMemoryView_FromMemory(<char *>outputs[o].data, a.nbytes, PyBUF_WRITE)
                    np.frombuffer(view, dtype=a.dtype)[:] = a.reshape(-1)
            rows_out[0] = rows
            return 0
        except BaseException as exc:
            if isinstance(exc, HostStepError):
                text = str(exc)
            else:
                tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                text = f"host step {self.name!r} raised {type(exc).__name__}: {exc}\n{tb}"
                with self.errors_lock:
                    self.errors[request] = exc   # becomes the HostStepError's __cause__
            data = text.encode("utf-8", "replace")[:message_size - 1]   # room for the NUL
            memcpy(message, <const char *>data, len(data))
            message[len(data)] = 0
            return 1


cdef int _run_py_step(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                      ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, ae_shape_edit *edit,
                      char *message, size_t message_size) noexcept nogil:
    # called on an engine worker thread: the GIL only while the step runs
    with gil:
        return (<_PyStep>ctx).run(request, inputs, n_inputs, outputs, n_outputs, rows_out, edit, message,
                                  message_size)


def _take_pending_signal():
    global _pending_signal
    exc, _pending_signal = _pending_signal, None
    return exc if exc is not None else KeyboardInterrupt()


class _Request:
    """One submitted request: its number, the arrays its outputs are written
    into (owned here, so they outlive any caller that gives up on them), and
    its outcome once the executor is done with it."""

    __slots__ = ("ticket", "outputs", "done", "error", "on_done", "out_rows", "walk")

    def __init__(self, outputs, on_done=None, variable=False, walk=None):
        self.ticket = None
        self.outputs = outputs
        self.done = False
        self.error = None
        self.on_done = on_done      # called (engine lock held) once the outcome is known
        # rows of each output, reported by the executor, when a host step sets some
        self.out_rows = np.zeros(len(outputs), dtype=np.uint64) if variable else None
        # its RequestWalk, when host steps read or set its shapes
        self.walk = walk


class _ShapedCall(Call):
    """A request of a pipeline with dynamic shapes: its outputs arrive at the
    gears' shapes and are cut back to the request's size when it is done."""

    __slots__ = ("cuts",)

    def __init__(self, future, inputs, outputs, rows, deadline, names, shape):
        super().__init__(future, inputs, outputs, rows, deadline, names)
        self.shape = shape          # its RequestShape (padded inputs of other sizes share gears, not cuts)
        self.cuts = shape.cuts

    def piece_done(self):
        self.pieces_left -= 1
        if self.pieces_left == 0 and not self.failed and not self.future.done():
            # None: an output known only once the request ran (its only part is final)
            outputs = [self.parts[k][0][1] if o is None else o if cut is None else np.ascontiguousarray(o[cut])
                       for k, (o, cut) in enumerate(zip(self.outputs, self.cuts))]
            self.future.set_result(dict(zip(self.names, outputs, strict=True)))


cdef int _put_ints(int *dst, int at, values) except -1:
    """Write `values` into dst from index `at`; returns the index after them."""
    for v in values:
        dst[at] = v
        at += 1
    return at


cdef class _Arrays:
    """Raw pointers of a list of numpy arrays (kept alive with it)."""
    cdef const void **ptrs
    cdef list keep

    def __cinit__(self, list arrays):
        self.keep = arrays
        self.ptrs = <const void **>PyMem_Calloc(max(1, len(arrays)), sizeof(void *))
        if self.ptrs is NULL:
            raise MemoryError()
        for i, a in enumerate(arrays):
            # the arrays are C-contiguous ndarrays (checked by the callers)
            self.ptrs[i] = <const void *>cnp.PyArray_DATA(<cnp.ndarray>a)

    def __dealloc__(self):
        PyMem_Free(self.ptrs)


cdef class _Remains:
    """What a closed engine could not release yet: its executor, while the
    device still runs requests abandoned after a timeout, with the models and
    device reference it uses.  A child of the device: released (waiting for
    the device as long as it takes) when the device is closed or at exit."""
    cdef ae_engine *_engine
    cdef void *_plan_arrays[4]
    cdef list _models
    cdef Device _device
    cdef object _serial
    cdef object __weakref__

    @staticmethod
    cdef keep(ae_engine *engine, list models, Device device, void *a, void *b, void *c, void *d):
        cdef _Remains r = _Remains.__new__(_Remains)
        r._engine = engine
        r._plan_arrays[0] = a
        r._plan_arrays[1] = b
        r._plan_arrays[2] = c
        r._plan_arrays[3] = d
        r._models = list(models)
        r._device = device
        r._serial = _runtime._adopt(r, device)
        _REMAINS.add(r)

    def close(self):
        """Wait for the device, then release everything. Idempotent."""
        cdef ae_engine *engine = self._engine
        if engine is NULL:
            return
        self._engine = NULL
        _REMAINS.discard(self)
        _runtime._disown(self._serial, self._device)
        (<Resource>self._device)._activate()
        with nogil:
            ae_engine_destroy(engine)
        for k in range(4):
            PyMem_Free(self._plan_arrays[k])
            self._plan_arrays[k] = NULL
        for m in self._models:
            m.close()
        self._models = []
        self._device.close()

    def _forget_after_fork(self):
        self._engine = NULL


_REMAINS = set()   # keeps _Remains alive until released (they are only weakly in the tree)


cdef class Engine:
    """A compiled pipeline (see :meth:`ascend_engine.Pipeline.compile`).

    ``engine.run({"x": a})`` -> ``{"y": array}``;
    ``engine.run_batch({"x": big}, batch_size=4)``; ``for out in
    engine.run_many(feeds_iterable): ...``; ``stats()``, ``memory()``,
    ``close()``, and ``with pipe.compile() as engine:``.
    """

    cdef ae_engine *_engine
    cdef readonly object plan
    cdef Device _device
    cdef object _lock
    cdef dict _pending         # ticket -> _Request, in submission order, until the executor is done
    cdef object _serial        # place in the device's ownership tree (see _runtime._adopt)
    cdef object _server        # admission queue, batcher and engine threads (ascend_engine.serving)
    cdef object __weakref__
    cdef object _input_specs   # [(name, dtype, trailing shape)]
    cdef object _feed_specs    # [(name, dtype, (-1,) + trailing shape)]: what _feeds.check_feeds takes
    cdef object _output_specs
    cdef list _owned_models    # models loaded for this engine, unloaded by close()
    cdef dict _py_steps        # name -> _PyStep: the Python host steps (their ctx pointers live here)
    cdef list _keep            # what native host steps need alive, and plan arrays until create copies them
    cdef list _variable        # indices of outputs whose rows a host step sets
    cdef dict _var_rows        # output index -> rows its array must hold
    cdef object _shapes        # ShapedRequests of a plan with dynamic shapes, else None
    # C copies of the plan, alive as long as the engine
    cdef ae_tensor_plan *_tensors
    cdef ae_node_plan *_nodes
    cdef int *_ints
    cdef uint64_t *_gears
    cdef list _other_devices   # Device objects of the plan's devices after the first
    cdef void *_dev_arrays     # contexts, device ids, slot bytes, stream devices (one block)

    def __cinit__(self):
        self._engine = NULL

    def __init__(self, plan, *, owned_models=(), bint _unsafe_skip_waits=False):
        cdef const ae_acl_api *t = api()
        cdef ae_plan p
        cdef ae_error err
        cdef ae_engine *engine = NULL
        cdef int rc
        self.plan = plan
        self._owned_models = list(owned_models)
        self._lock = threading.Lock()
        self._pending = {}
        self._server = Server(self, self._lock)
        self._device = Device(plan.device)
        self._other_devices = [Device(d) for d in plan.devices[1:]]
        self._input_specs = [(name, plan.tensors[t_].dtype, tuple(plan.tensors[t_].shape[1:]))
                             for name, t_ in plan.inputs]
        self._output_specs = [(name, plan.tensors[t_].dtype, tuple(plan.tensors[t_].shape[1:]))
                              for name, t_ in plan.outputs]
        self._feed_specs = [(name, dtype, (-1,) + trailing) for name, dtype, trailing in self._input_specs]
        self._shapes = ShapedRequests(plan) if plan.shaped else None
        self._variable = list(plan.variable_outputs)
        self._var_rows = {k: plan.nodes[plan.tensors[plan.outputs[k][1]].domain].max_rows for k in self._variable}
        self._py_steps = {}
        self._keep = []
        for node in plan.nodes:
            if node.kind == "host" and not isinstance(node.fn, NativeStep):
                self._py_steps[node.name] = _PyStep(
                    node.name, node.fn, [(plan.tensors[t_].dtype, tuple(plan.tensors[t_].shape[1:]))
                                         for t_ in node.inputs],
                    node.output_specs, node.rows_any, self._shapes, plan.nodes.index(node))
            elif node.kind == "host":
                self._keep.append(node.fn)
        memset(&p, 0, sizeof(p))   # fields a plan does not use stay 0
        self._fill_plan(&p)
        p.unsafe_skip_waits = 1 if _unsafe_skip_waits else 0
        (<Resource>self._device)._activate()
        with nogil:
            rc = ae_engine_create(t, &p, &engine, &err)
        if rc != 0:
            self._free_plan()
            self._device.close()
            for d in self._other_devices:
                d.close()
            _raise_error(&err)
        self._engine = engine
        # A child of its device: Device.close() and the exit hook close the
        # engine before the device is reset and AscendCL finalized.
        self._serial = _runtime._adopt(self, self._device)

    cdef _fill_plan(self, ae_plan *p):
        plan = self.plan
        n_ints = len(plan.inputs) + len(plan.outputs) + sum(len(n.inputs) + len(n.outputs) for n in plan.nodes)
        # instanced nodes: a stream and a model id per instance, both in the int block
        n_ints += sum(2 * len(n.models) for n in plan.nodes if len(n.models) > 1)
        n_gears = sum(len(n.gears) for n in plan.nodes)
        self._tensors = <ae_tensor_plan *>PyMem_Calloc(len(plan.tensors), sizeof(ae_tensor_plan))
        self._nodes = <ae_node_plan *>PyMem_Calloc(len(plan.nodes), sizeof(ae_node_plan))
        self._ints = <int *>PyMem_Calloc(max(1, n_ints), sizeof(int))
        self._gears = <uint64_t *>PyMem_Calloc(max(1, n_gears), sizeof(uint64_t))
        if not self._tensors or not self._nodes or not self._ints or not self._gears:
            self._free_plan()
            raise MemoryError()
        for i, tp in enumerate(plan.tensors):
            self._tensors[i].row_bytes = tp.row_bytes
            self._tensors[i].offset = tp.offset
            self._tensors[i].capacity = tp.capacity
            self._tensors[i].domain = tp.domain
            self._tensors[i].device = tp.device
        cdef int k = 0, g = 0
        cdef cnp.ndarray table, places
        p.input_tensors = &self._ints[k]
        k = _put_ints(self._ints, k, [t_ for _, t_ in plan.inputs])
        p.output_tensors = &self._ints[k]
        k = _put_ints(self._ints, k, [t_ for _, t_ in plan.outputs])
        for i, node in enumerate(plan.nodes):
            name = node.name.encode()[:AE_NAME_MAX - 1]
            strncpy(self._nodes[i].name, name, AE_NAME_MAX - 1)
            self._nodes[i].domain = node.domain
            self._nodes[i].device = node.device
            self._nodes[i].bridge_stream = node.bridge_stream
            if node.kind == "copy":
                self._nodes[i].kind = AE_NODE_COPY
            elif node.kind == "host":
                self._nodes[i].kind = AE_NODE_HOST
                self._nodes[i].rows_any = node.rows_any
                self._nodes[i].max_rows = node.max_rows
                self._nodes[i].workers = node.workers
                if isinstance(node.fn, NativeStep):
                    self._nodes[i].host_fn = <ae_host_fn><size_t>node.fn.address
                    self._nodes[i].host_ctx = <void *><size_t>node.fn.context
                else:
                    self._nodes[i].host_reshape_fn = _run_py_step
                    self._nodes[i].host_ctx = <void *>self._py_steps[node.name]
            else:
                self._nodes[i].kind = AE_NODE_MODEL
                self._nodes[i].model_id = node.model.model_id
            self._nodes[i].stream = node.stream
            if len(node.models) > 1:
                self._nodes[i].instances = len(node.models)
                self._nodes[i].streams = &self._ints[k]
                k = _put_ints(self._ints, k, node.streams)
                # uint32_t ids in int storage: C allows access through the unsigned type
                self._nodes[i].model_ids = <const uint32_t *>&self._ints[k]
                for m in node.models:
                    (<uint32_t *>&self._ints[k])[0] = m.model_id
                    k += 1
            self._nodes[i].n_inputs = len(node.inputs)
            self._nodes[i].inputs = &self._ints[k]
            k = _put_ints(self._ints, k, node.inputs)
            self._nodes[i].n_outputs = len(node.outputs)
            self._nodes[i].outputs = &self._ints[k]
            k = _put_ints(self._ints, k, node.outputs)
            self._nodes[i].dyn_index = node.dyn_index
            self._nodes[i].dyn_offset = node.dyn_offset
            self._nodes[i].dyn_size = node.dyn_size
            self._nodes[i].n_gears = len(node.gears)
            self._nodes[i].gears = &self._gears[g]
            for v in node.gears:
                self._gears[g] = v
                g += 1
            self._nodes[i].static_batch = node.static_batch
            if node.dims_table:   # dims gears over a host step's rows
                table = np.ascontiguousarray(node.dims_table, dtype=np.int64)
                places = np.ascontiguousarray(node.row_dims, dtype=np.intc)
                self._keep += [table, places]
                self._nodes[i].n_dims_gears = table.shape[0]
                self._nodes[i].dims_count = table.shape[1]
                self._nodes[i].dims_gears = <const int64_t *>cnp.PyArray_DATA(table)
                self._nodes[i].n_row_dims = places.shape[0]
                self._nodes[i].row_dims = <const int *>cnp.PyArray_DATA(places)
            self._nodes[i].dyn_kind = {"hw": AE_DYN_HW, "dims": AE_DYN_DIMS}.get(node.shape_kind, AE_DYN_BATCH)
        p.context = (<Resource>self._device)._ctx
        p.device_id = plan.device
        p.depth = plan.depth
        p.n_streams = plan.n_streams
        p.single_stream = plan.single_stream
        p.profile = plan.profile
        p.timeout_ms = plan.timeout_ms
        p.n_tensors = len(plan.tensors)
        p.tensors = self._tensors
        p.n_nodes = len(plan.nodes)
        p.nodes = self._nodes
        p.n_inputs = len(plan.inputs)
        p.n_outputs = len(plan.outputs)
        p.slot_bytes = plan.slot_bytes
        p.max_batch = plan.max_batch
        p.spin_wait = 1 if plan.wait == "spin" else 0
        p.gear_policy = _GEAR_POLICY[plan.gear_policy]
        cdef int n_dev = len(plan.devices)
        cdef size_t block
        if n_dev > 1:
            # one block: contexts | device ids | slot bytes | stream devices
            block = n_dev * (sizeof(aclrtContext) + sizeof(int32_t) + sizeof(size_t)) + \
                plan.n_streams * sizeof(int) + 64
            self._dev_arrays = PyMem_Calloc(1, block)
            if self._dev_arrays is NULL:
                self._free_plan()
                raise MemoryError()
            p.n_devices = n_dev
            p.contexts = <const aclrtContext *>self._dev_arrays
            p.device_slot_bytes = <const size_t *>(<char *>self._dev_arrays + n_dev * sizeof(aclrtContext))
            p.device_ids = <const int32_t *>(<char *>p.device_slot_bytes + n_dev * sizeof(size_t))
            p.stream_devices = <const int *>(<char *>p.device_ids + n_dev * sizeof(int32_t) + 8)
            devices = [self._device] + self._other_devices
            for k in range(n_dev):
                (<aclrtContext *>p.contexts)[k] = (<Resource>devices[k])._ctx
                (<int32_t *>p.device_ids)[k] = plan.devices[k]
                (<size_t *>p.device_slot_bytes)[k] = plan.device_slot_bytes[k]
            for k in range(plan.n_streams):
                (<int *>p.stream_devices)[k] = plan.stream_devices[k]

    cdef _free_plan(self):
        PyMem_Free(self._tensors)
        PyMem_Free(self._nodes)
        PyMem_Free(self._ints)
        PyMem_Free(self._gears)
        PyMem_Free(self._dev_arrays)
        self._dev_arrays = NULL
        self._tensors = NULL
        self._nodes = NULL
        self._ints = NULL
        self._gears = NULL

    def close(self):
        """Wait for the work in flight, deliver it, then release every stream,
        event, buffer and model of the engine.  Idempotent.

        Everything that can be released is released even when some release
        fails; the failures are then reported in one EngineError.  If the
        device is still running requests abandoned after a timeout, the
        engine is closed at once but its device memory, streams and models
        are released only when the device is done with them (at the latest
        when the device is closed or the process exits): until then the
        device may still write into that memory.
        """
        cdef ae_engine *engine
        cdef ae_error err
        cdef int rc
        problems = []
        if self._engine is not NULL and not _runtime.in_forked_child():
            self._server.close()     # queued requests fail; in-flight ones complete
        with self._lock:
            if self._engine is NULL:
                return
            check_not_forked()
            (<Resource>self._device)._activate()
            # deliver what is in flight to its requests (their owners may still collect)
            rc = AE_REQUEST_FAILED
            while rc == AE_REQUEST_FAILED:   # one request's host step failed: go on with the others
                with nogil:
                    rc = ae_engine_flush(self._engine, &err)
                self._settle(rc, &err)
            engine = self._engine
            with nogil:
                rc = ae_engine_close(engine, &err)
            self._engine = NULL
            self._cancel_pending("the engine was closed before the request completed")
            _runtime._disown(self._serial, self._device)
            if rc == 1:
                _log.warning("ascend_engine: %s; its memory is released once the device finishes "
                             "(at the latest when the device is closed)", _error_of(&err).message)
                # the other devices stay open until the remains are released
                _Remains.keep(engine, self._owned_models + self._other_devices, self._device, self._tensors,
                              self._nodes, self._ints, self._gears)
                self._other_devices = []
                self._tensors = self._nodes = NULL
                self._ints = NULL
                self._gears = NULL
                self._owned_models = []
                return
            if rc != 0:
                problems.append(_error_of(&err))
            self._free_plan()
            for m in self._owned_models:
                try:
                    m.close()
                except Exception as exc:
                    problems.append(exc)
            self._owned_models = []
            for d in [self._device] + self._other_devices:
                try:
                    d.close()
                except Exception as exc:
                    problems.append(exc)
            self._other_devices = []
        if problems:
            text = "; ".join(f"{type(p).__name__}: {p}" for p in problems)
            raise EngineError(f"close() released everything it could, but {len(problems)} release(s) "
                              f"failed: {text}") from problems[0]

    def _forget_after_fork(self):
        # In a forked child: the executor's handles belong to the parent.
        self._engine = NULL

    def __del__(self):
        # Dropped without close(): close it now, as files and sockets do, and
        # say so.  A PEP 442 finalizer (tp_finalize): the whole engine is
        # still intact, so the orderly close runs -- the requests already
        # admitted complete and their futures resolve, then models and
        # devices are released.  The engine's lock may be held by the thread
        # that dropped the last reference (its completer drops the engine
        # under the lock): then the close runs on a thread of its own once
        # the lock is free.  After shutdown() or in a forked child nothing is
        # called.
        if self._engine is NULL or _runtime.in_forked_child() or _runtime._shut_down:
            return
        warnings.warn(f"unclosed {self!r}: closed when it was garbage-collected; call close() or use a "
                      "with block", ResourceWarning, source=self)
        if self._lock.acquire(blocking=False):
            self._lock.release()
            self._close_dropped()
        else:
            threading.Thread(target=self._close_dropped, name="ascend-engine-close", daemon=True).start()

    def _close_dropped(self):
        # What was admitted still runs: its callers may hold its futures.
        # Bounded by the plan's timeout in all; what is left then fails clearly.
        timeout = self.plan.timeout_ms / 1000.0 if self.plan.timeout_ms >= 0 else 60.0
        deadline = time.monotonic() + timeout
        while (self._server.queued_calls or self._in_flight()) and time.monotonic() < deadline:
            time.sleep(0.002)
        try:
            self.close()
        except Exception:
            _log.exception("ascend_engine: closing an engine dropped without close() failed")

    def __dealloc__(self):
        # Dropped without close().  After shutdown or in a forked child the
        # runtime is gone: nothing may be called, the process owns nothing.
        cdef ae_engine *engine = self._engine
        if engine is not NULL and not _runtime.in_forked_child() and not _runtime._shut_down:
            self._engine = NULL
            with nogil:   # host-step workers may need the GIL to finish before they are joined
                ae_engine_destroy(engine)
            for m in self._owned_models or ():
                try:
                    m.close()
                except Exception:
                    pass
            if self._device is not None:
                try:
                    _runtime._disown(self._serial, self._device)
                    self._device.close()
                except Exception:
                    pass
            for d in self._other_devices or ():
                try:
                    d.close()
                except Exception:
                    pass
        self._free_plan()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def closed(self):
        """True once close() has run."""
        return self._engine is NULL

    @property
    def depth(self):
        """Requests that may be in flight at once."""
        return self.plan.depth

    @property
    def max_batch(self):
        """Rows one request carries at most (larger requests are split)."""
        return self.plan.max_batch

    def __repr__(self):
        state = "closed" if self._engine is NULL else f"depth={self.plan.depth}"
        nodes = ", ".join(f"{n.name}@stream{n.stream}" for n in self.plan.nodes)
        return (f"<ascend_engine.Engine device={self.plan.device} {state} max_batch={self.plan.max_batch} "
                f"nodes=[{nodes}]>")

    # ---- inputs and outputs ------------------------------------------------------

    def _prepare(self, feeds):
        """Check feeds before anything is submitted; returns (arrays, rows).

        Names, dtypes and shapes must match the pipeline inputs exactly (no
        silent casts); arrays that are not C-contiguous are copied.
        """
        if self._shapes is not None:
            raise ValueError("a pipeline with dynamic shapes (image-size or dims-gear models) takes requests of "
                             "any shape through run(), submit(), run_async(), run_many() or run_batch(); this "
                             "call takes arrays of one fixed shape")
        return check_feeds(feeds, self._feed_specs, "pipeline")

    def _outputs_for(self, rows):
        """Arrays the executor writes one request's outputs into: ``rows`` rows,
        or room for the host step's max_rows where a host step sets them."""
        return [np.empty((self._var_rows.get(k, rows),) + trailing, dtype=dtype)
                for k, (_, dtype, trailing) in enumerate(self._output_specs)]

    def _output_room(self, k, rows):
        """An array output k of a request of ``rows`` rows can be written
        into: its rows (a host step's max_rows where the step sets them) at
        its largest shape (flat where its trailing dimensions change per
        request; the request's walk gives it its shape once it is done)."""
        name, dtype, trailing = self._output_specs[k]
        rows = self._var_rows.get(k, rows)
        t_ = self.plan.outputs[k][1]
        if -1 in trailing:
            return np.empty(rows * self.plan.tensors[t_].row_bytes // np.dtype(dtype).itemsize, dtype=dtype)
        return np.empty((rows,) + trailing, dtype=dtype)

    def _check_fixed(self, rows, batch):
        fixed = self.plan.fixed_batch
        if fixed and (batch != fixed or rows % fixed):
            raise ValueError(f"the pipeline has a fixed batch of {fixed} (a static model or input): "
                             f"requests must carry exactly {fixed} rows, got batches of {batch} "
                             f"over {rows} rows")

    cdef int _ensure_open(self) except -1:
        if self._engine is NULL:
            check_not_forked()
            raise EngineError("the engine is closed")
        return 0

    cdef object _settle(self, int rc, ae_error *err):
        """Bring the request records up to date after an executor call (lock held).

        Every record below the executor's completion mark is done: cancelled
        if the call failed and cancelled it (the one that failed gets the
        call's own error), else delivered.  Returns the call's error as an
        exception (None when it succeeded).
        """
        cdef uint64_t begin = 0, end = 0
        cdef uint64_t completed = ae_engine_completed(self._engine) if self._engine is not NULL else 2**64 - 1
        failure = None
        failed = None
        if rc != 0:
            failure = _error_of(err)
            failed = None if err.request == AE_NO_REQUEST else int(err.request)
            failure.request = failed
            ae_engine_last_cancelled(self._engine, &begin, &end)
        pending = self._pending
        if isinstance(failure, HostStepError):
            step = self._py_steps.get(failure.step)
            cause = step.take_error(failed) if step is not None else None
            if cause is not None:
                failure.__cause__ = cause
        while pending:
            ticket = next(iter(pending))
            if ticket >= completed:
                break
            record = pending.pop(ticket)
            record.done = True
            if record.walk is not None:
                self._shapes.live.pop(ticket, None)
                if not (rc != 0 and begin <= ticket < end):
                    record.outputs = record.walk.deliver(record.outputs, record.out_rows)
            elif record.out_rows is not None and not (rc != 0 and begin <= ticket < end):
                # the rows each output carries for this request
                record.outputs = [o[:int(record.out_rows[k])] if k in self._var_rows else o
                                  for k, o in enumerate(record.outputs)]
            if rc != 0 and begin <= ticket < end:
                if rc == AE_INTERRUPTED:
                    record.error = EngineError(f"request {ticket} was cancelled: the caller waiting for "
                                               f"request {failed} was interrupted (Ctrl-C)")
                elif ticket == failed:
                    record.error = failure
                else:
                    cause = "timed out" if isinstance(failure, _errors.AclTimeoutError) else "failed"
                    record.error = EngineError(
                        f"request {ticket} was cancelled because request {failed} {cause} while it was "
                        f"in flight: {failure}")
            if record.on_done is not None:
                try:
                    record.on_done(record)
                except Exception:
                    _log.exception("ascend_engine: delivering request %d failed", ticket)
        return failure

    cdef _arm_poll(self):
        """Let the main thread's waits notice Ctrl-C (lock held); others wait plainly."""
        if threading.get_ident() == _MAIN_THREAD:
            ae_engine_set_poll(self._engine, _poll_signals, NULL, 20)
        else:
            ae_engine_set_poll(self._engine, NULL, NULL, 20)

    cdef _cancel_pending(self, str why):
        for ticket, record in self._pending.items():
            record.done = True
            record.error = EngineError(f"request {ticket}: {why}")
        self._pending.clear()
        if self._shapes is not None:
            self._shapes.live.clear()

    cdef _submit(self, record, _Arrays ins, uint64_t n_rows, shape=None):
        """Enqueue one request for ``record`` (lock held).

        If completing an older request fails on the way (to free a slot),
        that failure belongs to the older request's caller and this request
        was not enqueued: try again (the engine has drained, so it goes in).
        """
        cdef ae_error err
        cdef int rc
        cdef _Arrays outp = _Arrays(record.outputs)
        cdef uint64_t *out_rows = NULL
        cdef cnp.ndarray rows_array
        cdef ae_request_shape req
        cdef const ae_request_shape *req_ptr = NULL
        cdef cnp.ndarray row_bytes, gear_dims, gear_at, gear_count
        if shape is not None:
            # the executor copies these into the slot before submit returns
            row_bytes, gear_dims = shape.row_bytes, shape.gear_dims
            gear_at, gear_count = shape.gear_at, shape.gear_count
            req.row_bytes = <const size_t *>cnp.PyArray_DATA(row_bytes)
            req.gear_dims = <const int64_t *>cnp.PyArray_DATA(gear_dims)
            req.gear_at = <const int *>cnp.PyArray_DATA(gear_at)
            req.gear_count = <const int *>cnp.PyArray_DATA(gear_count)
            req_ptr = &req
        if record.out_rows is not None:
            rows_array = record.out_rows
            out_rows = <uint64_t *>cnp.PyArray_DATA(rows_array)
        while True:
            self._ensure_open()
            self._arm_poll()
            ticket = ae_engine_submitted(self._engine)
            if record.walk is not None:   # its host steps may run before submit returns
                self._shapes.live[ticket] = record.walk
            with nogil:
                rc = ae_engine_submit_shaped(self._engine, ins.ptrs, n_rows, <void *const *>outp.ptrs, out_rows,
                                             req_ptr, &err)
            if rc != 0 and record.walk is not None:
                self._shapes.live.pop(ticket, None)
            failure = self._settle(rc, &err)
            if rc == 0:
                record.ticket = ticket
                self._pending[ticket] = record
                return
            if rc == AE_INTERRUPTED:
                raise _take_pending_signal()
            if err.request == AE_NO_REQUEST or err.request == ticket:
                raise failure

    cdef _wait_for(self, record):
        """Complete requests until ``record`` is done (lock held); raise its own error."""
        cdef ae_error err
        cdef int rc
        while not record.done:
            self._ensure_open()
            self._arm_poll()
            with nogil:
                rc = ae_engine_complete_one(self._engine, &err)
            failure = self._settle(rc, &err)
            if rc == AE_INTERRUPTED:
                raise _take_pending_signal()
            if rc != 0 and rc != AE_REQUEST_FAILED and not record.done:
                raise failure
        if record.error is not None:
            raise record.error

    cdef _flush_others(self):
        """Complete every request in flight (lock held).  Their failures go to
        their own records; only a failure that belongs to no request raises."""
        cdef ae_error err
        cdef int rc = AE_REQUEST_FAILED
        self._arm_poll()
        while rc == AE_REQUEST_FAILED:   # a request whose host step failed: its own record has it
            with nogil:
                rc = ae_engine_flush(self._engine, &err)
            failure = self._settle(rc, &err)
        if rc == AE_INTERRUPTED:
            raise _take_pending_signal()
        if rc != 0 and err.request == AE_NO_REQUEST:
            raise failure

    def _result(self, record):
        return {name: o for (name, _, _), o in zip(self._output_specs, record.outputs)}

    # ---- running -----------------------------------------------------------------

    def run(self, feeds, *, timeout=None):
        """Run one request; returns {output name: array}.

        ``submit(feeds).result()``: concurrent run() calls from several
        threads are pipelined like run_batch.  A request larger than
        ``max_batch`` rows is split and run pipelined.  Ctrl-C while waiting
        raises KeyboardInterrupt at once; the request is dropped (cancelled
        if it had not started).
        """
        future = self.submit(feeds, timeout=timeout)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def submit(self, feeds, *, timeout=None, block=True):
        """Admit one request and return a ``concurrent.futures.Future`` of its
        outputs dict (or of its own error).  Callable from any thread.

        The request waits in the admission queue (``compile(max_queue=)``)
        until a slot is free; when the queue is full, ``submit`` blocks, or
        with ``block=False`` raises :class:`EngineBusy`.  ``timeout``
        (seconds): a request not started by then fails with TimeoutError and
        never runs.  ``Future.cancel()`` works until the request is put on the
        device.  With ``compile(max_delay_ms=...)`` small requests are merged
        into device requests of up to ``max_batch`` rows (each caller gets
        back exactly its own rows).
        """
        if self._shapes is not None:
            return self._submit_shaped(feeds, timeout, block)
        arrays, rows = self._prepare(feeds)
        self._check_fixed(rows, min(rows, self.plan.max_batch))
        deadline = None if timeout is None else time.monotonic() + timeout_ms(timeout) / 1000.0
        self._ensure_open()
        outputs = [None if k in self._var_rows else np.empty((rows,) + trailing, dtype=dtype)
                   for k, (_, dtype, trailing) in enumerate(self._output_specs)]
        call = Call(Future(), arrays, outputs, rows, deadline, [name for name, _, _ in self._output_specs])
        self._server.admit(call, bool(block))
        return call.future

    def _submit_shaped(self, feeds, timeout, block):
        """submit() for a pipeline with dynamic shapes: each model's gear from
        the request's shapes, the inputs padded to it, outputs cut back."""
        specs = [(name, self.plan.tensors[t_].dtype, self.plan.tensors[t_].shape) for name, t_ in self.plan.inputs]
        arrays = check_feeds(feeds, specs, "pipeline", batched=False)[0]
        rows = arrays[0].shape[0]
        for (name, _, _), a in zip(specs, arrays):
            if a.shape[0] != rows:
                raise ValueError(f"input {name!r}: {a.shape[0]} rows differ from the other inputs' {rows}")
        if rows > self.plan.max_batch:
            raise ValueError(f"a request of a pipeline with dynamic shapes carries at most {self.plan.max_batch} "
                             f"rows (its models' gears), got {rows}: submit smaller requests")
        shape = self._shapes.resolve([a.shape for a in arrays])
        deadline = None if timeout is None else time.monotonic() + timeout_ms(timeout) / 1000.0
        self._ensure_open()
        inputs = [pad_to(a, s) for a, s in zip(arrays, shape.inputs)]
        # None: known once the request ran (after a host step that sets rows or shapes)
        outputs = [None if s is None or shape.walk is not None else np.empty(s, dtype=dtype)
                   for s, (_, dtype, _) in zip(shape.outputs, self._output_specs)]
        call = _ShapedCall(Future(), inputs, outputs, rows, deadline, [name for name, _, _ in self._output_specs],
                           shape)
        self._server.admit(call, bool(block))
        return call.future

    async def run_async(self, feeds, *, timeout=None):
        """``await engine.run_async(feeds)``: run one request without blocking
        the event loop (no thread per request: the engine's completer resolves
        the future, which wakes the caller's loop).  Works with any running
        loop (asyncio, uvloop) and from several loops in several threads.
        When the admission queue is full it waits for room without blocking
        the loop.  Cancelling the task cancels the request if it had not
        started."""
        while True:
            try:
                future = self.submit(feeds, timeout=timeout, block=False)
                break
            except EngineBusy:
                await asyncio.wrap_future(self._server.space_future())
        return await asyncio.wrap_future(future)

    # ---- the serving protocol (ascend_engine.serving; engine lock held unless said) ----

    def _free_slots(self):
        return 0 if self._engine is NULL else ae_engine_free_slots(self._engine)

    def _free_slots_unlocked(self):
        # a hint read without the lock (an int of the executor)
        return 0 if self._engine is NULL else ae_engine_free_slots(self._engine)

    def _in_flight(self):
        return 0 if self._engine is NULL else ae_engine_in_flight(self._engine)

    def _oldest(self):
        return ae_engine_completed(self._engine)

    def _wait_request(self, uint64_t ticket):
        """Wait for request ``ticket`` without the lock and without the GIL."""
        cdef aclError rc
        cdef ae_engine *engine = self._engine
        if engine is NULL:
            return 0
        with nogil:
            rc = ae_engine_wait_request(engine, ticket)
        return rc

    def _complete_waited(self, uint64_t ticket, aclError wait_rc):
        cdef ae_error err
        cdef int rc
        if self._engine is NULL:
            return
        self._arm_poll()
        with nogil:
            rc = ae_engine_complete_waited(self._engine, ticket, wait_rc, &err)
        failure = self._settle(rc, &err)
        if rc in (0, AE_REQUEST_FAILED) and ae_engine_in_flight(self._engine) > 0:
            # more may be over already: deliver them in the same turn.  Without
            # the GIL: delivering a failed one drains the engine, which waits
            # for the host-step workers, and a Python step needs the GIL
            with nogil:
                rc = ae_engine_complete_ready(self._engine, &err)
            failure = self._settle(rc if rc < 0 else 0, &err)
        if rc < 0 and err.request == AE_NO_REQUEST:
            _log.warning("ascend_engine: completing requests failed: %s", failure)

    def _enqueue_device(self, list inputs, list outputs, uint64_t rows, on_done, shape=None):
        """Put one device request on the device (a free slot is known to exist).
        Where a host step sets an output's rows, ``outputs`` holds None: the
        record gets an array with room for them, cut to the rows it got.
        ``shape``: the request's RequestShape in a plan with dynamic shapes
        (else looked up from the padded inputs)."""
        if shape is None and self._shapes is not None:
            shape = self._shapes.padded([a.shape for a in inputs])
        outputs = [self._output_room(k, rows) if o is None else o for k, o in enumerate(outputs)]
        walk = shape.walk.copy() if shape is not None and shape.walk is not None else None
        record = _Request(outputs, on_done, bool(self._variable), walk)
        cdef _Arrays ins = _Arrays(inputs)
        self._submit(record, ins, rows, shape)
        self._server.cv.notify()     # the completer

    def run_batch(self, feeds, batch_size=None):
        """Split the feeds along their first axis into requests of ``batch_size``
        rows and run them pipelined in one call with the GIL released.

        The last request may be smaller; requests above ``max_batch`` are split.
        Default batch_size: ``max_batch``.  Returns the outputs concatenated
        in order -- except outputs whose rows a host step with rows="any"
        sets: each of those is a list with one array per request (of
        ``batch_size`` rows, the last maybe smaller), since a request's rows
        there need not match its input rows.
        """
        batch = self.plan.max_batch if batch_size is None else positive_int(batch_size, "batch_size")
        if self._shapes is not None:
            return self._run_batch_shaped(feeds, batch)
        arrays, rows = self._prepare(feeds)
        self._check_fixed(rows, min(batch, self.plan.max_batch))
        if self._py_steps or self._keep:
            return self._run_batch_steps(arrays, rows, batch)
        outs = self._outputs_for(rows)
        cdef _Arrays ins = _Arrays(arrays)
        cdef _Arrays outp = _Arrays(outs)
        cdef ae_error err
        cdef int rc
        cdef uint64_t total = rows, b = batch
        with self._lock:
            self._ensure_open()
            # other callers' requests first, so that a failure of theirs is
            # theirs, and every failure inside the call below is ours
            self._flush_others()
            self._arm_poll()
            try:
                with nogil:
                    rc = ae_engine_run_batch(self._engine, ins.ptrs, total, b, <void *const *>outp.ptrs, &err)
                failure = self._settle(rc, &err)
            finally:
                # serving calls that queued up while this call held every slot
                # go on now, not when the dispatcher next looks
                self._server.dispatch_locked("exclusive")
            if rc == AE_INTERRUPTED:
                raise _take_pending_signal()
            if rc != 0:
                raise failure
        return {name: o for (name, _, _), o in zip(self._output_specs, outs)}

    def _run_batch_steps(self, arrays, rows, batch):
        """run_batch for a plan with host steps: requests submitted one by one
        (depth in flight), each with its own record; a request above
        max_batch goes in pieces whose rows are joined again."""
        piece = min(batch, self.plan.max_batch)
        starts = [lo for r0 in range(0, rows, batch) for lo in range(r0, min(rows, r0 + batch), piece)]
        feeds = ({name: a[lo:min(lo + piece, (lo // batch + 1) * batch, rows)]
                  for (name, _, _), a in zip(self._input_specs, arrays)} for lo in starts)
        per_request = collections.defaultdict(list)
        for lo, out in zip(starts, self.run_many(feeds)):
            per_request[lo // batch].append(out)
        result = {}
        for k, (name, dtype, trailing) in enumerate(self._output_specs):
            joined = [np.concatenate([out[name] for out in outs]) for _, outs in sorted(per_request.items())]
            if k in self._var_rows:
                result[name] = joined
            else:
                result[name] = np.concatenate(joined) if joined else np.empty((0,) + trailing, dtype)
        return result

    def _run_many_shaped(self, feeds_iterable):
        """run_many for a pipeline with dynamic shapes: each feeds dict is a
        request of its own shape, submitted with ``depth`` in flight.  An
        abandoned generator cancels what has not started; what has runs to
        the end into arrays its request owns."""
        pending = collections.deque()
        try:
            for feeds in feeds_iterable:
                if len(pending) >= self.plan.depth:
                    yield pending.popleft().result()
                pending.append(self.submit(feeds))
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()

    def _run_batch_shaped(self, feeds, batch):
        """run_batch for a pipeline with dynamic shapes: the arrays (one shape
        past the first axis) split into requests of ``batch`` rows, the
        outputs joined again along the first axis."""
        # any number of rows here; each request then has the rows the inputs declare
        specs = [(name, self.plan.tensors[t_].dtype, (-1,) + tuple(self.plan.tensors[t_].shape[1:]))
                 for name, t_ in self.plan.inputs]
        arrays = check_feeds(feeds, specs, "pipeline", batched=False)[0]
        rows = arrays[0].shape[0]
        step = min(batch, self.plan.max_batch)
        outs = list(self._run_many_shaped({name: a[lo:lo + step] for (name, _, _), a in zip(specs, arrays)}
                                          for lo in range(0, rows, step)))
        # outputs after a host step that sets rows or shapes: one array per request
        later = self._shapes.resolve([(min(step, rows),) + a.shape[1:] for a in arrays]).outputs
        return {name: [o[name] for o in outs] if later[k] is None else np.concatenate([o[name] for o in outs])
                for k, (name, _, _) in enumerate(self._output_specs)}

    def run_many(self, feeds_iterable):
        """Yield the outputs of each feeds dict in order, keeping up to ``depth``
        requests in flight.  Each feeds dict is one request (split if above
        ``max_batch``).

        The generator may be abandoned at any point (break, an exception in
        the loop or in the iterable, close()): requests already submitted
        complete in the background and their results are dropped.
        """
        if self._shapes is not None:
            yield from self._run_many_shaped(feeds_iterable)
            return
        mine = collections.deque()   # this generator's records, oldest first
        cdef _Arrays ins
        for feeds in feeds_iterable:
            arrays, rows = self._prepare(feeds)
            if rows > self.plan.max_batch:
                # rare: deliver ours, then run this one split
                while mine:
                    yield self._collect(mine.popleft())
                out = self.run_batch(feeds, batch_size=rows)
                if self._var_rows:   # one request: its pieces' rows together
                    out = {name: np.concatenate(v) if isinstance(v, list) else v for name, v in out.items()}
                yield out
                continue
            self._check_fixed(rows, rows)
            record = _Request(self._outputs_for(rows), variable=bool(self._variable))
            ins = _Arrays(arrays)
            if len(mine) >= self.plan.depth:
                yield self._collect(mine.popleft())
            with self._lock:
                self._submit(record, ins, rows)
            mine.append(record)
        while mine:
            yield self._collect(mine.popleft())

    def _collect(self, record):
        if not record.done:
            with self._lock:
                self._wait_for(record)
        elif record.error is not None:
            raise record.error
        return self._result(record)

    # ---- reporting -----------------------------------------------------------------

    def stats(self):
        """Counters: requests, failures, in flight (and high-water mark), host
        enqueue and wait seconds, and device milliseconds per node when the
        pipeline was compiled with ``profile=True``."""
        cdef ae_stats s
        cdef double ms[256]
        with self._lock:
            self._ensure_open()
            ae_engine_get_stats(self._engine, &s)
            per_node = {}
            if self.plan.profile and len(self.plan.nodes) <= 256:
                ae_engine_node_device_ms(self._engine, ms)
                per_node = {n.name: ms[i] for i, n in enumerate(self.plan.nodes)}
        return {
            "requests": s.requests,
            "failures": s.failures,
            "in_flight": s.in_flight,
            "in_flight_high_water": s.in_flight_high_water,
            "enqueue_seconds": s.enqueue_ns / 1e9,
            "wait_seconds": s.wait_ns / 1e9,
            "device_ms_per_node": per_node,
            "serving": self._server.stats(),
        }

    def memory(self):
        """Device and pinned host bytes: the arena, per slot, per node, the peak
        working set and the recommended pool size (peak + 15 %)."""
        report = self.plan.memory_report()
        with self._lock:
            self._ensure_open()
            report["arena_bytes"] = ae_engine_arena_bytes(self._engine)
            report["host_pinned_bytes"] = ae_engine_host_bytes(self._engine)
        return report

    # ---- timelines -----------------------------------------------------------------

    def trace(self, path, requests=16, feeds=None, batch_size=None):
        """Run ``requests`` requests and write their timeline to ``path`` as
        Chrome trace-event JSON (open it in Perfetto or chrome://tracing).

        One lane per stream: copy-in, each compute stream, copy-out; every
        copy, wait and model execution is a span timed by device timing
        events.  Needs an engine compiled with ``profile=True``.  ``feeds``
        (whole arrays, split like run_batch) default to random inputs of
        ``batch_size`` rows per request (default: max_batch).  A pipeline
        with dynamic shapes takes ``feeds`` as one feeds dict per request
        (a list, cycled) or one dict for every request.  Returns a summary
        dict.
        """
        cdef ae_error err
        cdef int rc
        cdef size_t cap
        with self._lock:
            self._ensure_open()
        if not self.plan.profile:
            raise EngineError("timelines need timing events: compile the pipeline with profile=True")
        requests = positive_int(requests, "requests", 1 << 20)
        cap = requests
        batch = self.plan.max_batch if batch_size is None else positive_int(batch_size, "batch_size")
        batch = min(batch, self.plan.max_batch)
        if self.plan.fixed_batch:
            batch = self.plan.fixed_batch
        if self._shapes is not None:
            return self._trace_shaped(path, int(requests), feeds)
        if feeds is None:
            feeds = random_feeds(self._input_specs, int(requests) * batch)[0]
        arrays, total = self._prepare(feeds)
        total = min(total, int(requests) * batch)
        arrays = [a[:total] for a in arrays]
        outs = self._outputs_for(total)
        cdef _Arrays ins = _Arrays(arrays)
        cdef _Arrays outp = _Arrays(outs)
        cdef uint64_t c_total = total, c_batch = batch
        if self._py_steps or self._keep:
            # host steps: requests one by one (run_batch's C loop does not take them)
            self._timeline_begin(cap)
            try:
                self._run_batch_steps(arrays, total, batch)
            finally:
                with self._lock:
                    request_ids, table = self._take_timeline()
        else:
            with self._lock:
                self._ensure_open()
                self._flush_others()
                if ae_engine_trace_begin(self._engine, cap, &err) != 0:
                    _raise_error(&err)
                with nogil:
                    rc = ae_engine_run_batch(self._engine, ins.ptrs, c_total, c_batch, <void *const *>outp.ptrs,
                                             &err)
                request_ids, table = self._take_timeline()
                failure = self._settle(rc, &err)
                if rc != 0:
                    raise failure
        return self._write_trace(path, request_ids, table, {"batch": batch})

    def _write_trace(self, path, request_ids, table, other):
        events = self._trace_events(table, request_ids)
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms",
                       "otherData": {"engine": repr(self), **other}}, f)
        spans = [e for e in events if e["ph"] == "X"]
        return {"path": str(path), "requests": len(table), "events": len(spans),
                "lanes": sorted({e["tid"] for e in spans})}

    def _trace_shaped(self, path, requests, feeds):
        """trace() of a pipeline with dynamic shapes: each feeds dict is a
        request of its own shape, run by run_many while every request's
        steps are recorded."""
        if feeds is None:
            raise ValueError("trace() of a pipeline with dynamic shapes needs feeds: one feeds dict per request "
                             "(a list, cycled) or one dict for every request, at the shapes to trace")
        pool = [feeds] if isinstance(feeds, dict) else list(feeds)
        if not pool or not all(isinstance(f, dict) for f in pool):
            raise ValueError("trace() of a pipeline with dynamic shapes takes feeds dicts, one per request; "
                             f"got {type(feeds).__name__}")
        self._timeline_begin(requests)
        try:
            for _ in self.run_many(pool[k % len(pool)] for k in range(requests)):
                pass
        finally:
            request_ids, table = self._timeline_end()
        return self._write_trace(path, request_ids, table, {})

    cdef tuple _take_timeline(self):
        """Stop recording timeline rows; returns (request numbers, rows) (lock held by the caller)."""
        cdef const double *rows_ptr
        cdef const uint64_t *ids_ptr
        cdef size_t n_rows = ae_engine_trace_end(self._engine, &rows_ptr, &ids_ptr)
        columns = AE_TRACE_COLUMNS(len(self.plan.nodes))
        table = [[rows_ptr[r * columns + c] for c in range(columns)] for r in range(n_rows)]
        return [int(ids_ptr[r]) for r in range(n_rows)], table

    def _timeline_begin(self, max_requests):
        """Keep one timeline row for each of the next ``max_requests`` completed
        requests, whichever call runs them (profile engines only; the rows are
        the ones :meth:`trace` writes).  Completes what is in flight first.
        Returns the number the next submitted request will get.  Used by the
        ``bench`` command to time every step of the requests it measures."""
        cdef ae_error err
        cdef size_t cap = positive_int(max_requests, "max_requests", 1 << 24)
        if not self.plan.profile:
            raise EngineError("timelines need timing events: compile the pipeline with profile=True")
        with self._lock:
            self._ensure_open()
            self._flush_others()
            if ae_engine_trace_begin(self._engine, cap, &err) != 0:
                _raise_error(&err)
            return int(ae_engine_submitted(self._engine))

    def _timeline_end(self):
        """Stop recording; returns ``(request numbers, rows)``: one row of
        millisecond offsets per completed request, laid out as
        ``AE_TRACE_COLUMNS`` in executor.h (-1 where a time could not be read)."""
        with self._lock:
            self._ensure_open()
            return self._take_timeline()

    def _trace_events(self, table, request_ids):
        """Chrome trace events (ph "X" spans in microseconds) from timeline rows:
        one process per device, one lane per stream."""
        plan = self.plan
        devices = list(plan.devices or (plan.device,))
        pid = plan.device
        n_nodes = len(plan.nodes)
        copy_in = 0
        copy_out = plan.n_streams + 1 if not plan.single_stream else 1
        def lane_of(k, request=0):
            # an instanced node runs request r on the stream of instance r % instances
            if plan.single_stream:
                return 1
            streams = plan.nodes[k].streams or (plan.nodes[k].stream,)
            return streams[request % len(streams)] + 1

        pid_of = lambda k: devices[plan.nodes[k].device]
        names = {(pid, copy_in): "copy-in (H2D)" if not plan.single_stream else "stream 0 (copies)",
                 (pid, copy_out): "copy-out (D2H)"}
        for k, node in enumerate(plan.nodes):
            streams = node.streams or (node.stream,)
            for j, st in enumerate(streams):
                lane = (pid_of(k), lane_of(k, j))
                what = f" host step {node.name}" if node.kind == "host" else f" {node.name}"
                if len(streams) > 1 and not plan.single_stream:
                    what += f" (instance {j})"
                names[lane] = names.get(lane, f"stream {st}") + what
        events = [{"name": "thread_name", "ph": "M", "pid": p, "tid": tid, "args": {"name": label}}
                  for (p, tid), label in sorted(names.items())]
        events += [{"name": "process_name", "ph": "M", "pid": d, "tid": 0,
                    "args": {"name": f"ascend-engine device {d}"}} for d in devices]

        def span(name, cat, tid, start, end, request, on=pid):
            if start < 0 or end < 0 or end < start:
                return
            events.append({"name": name, "cat": cat, "ph": "X", "pid": on, "tid": tid,
                           "ts": round(start * 1000.0, 3), "dur": round((end - start) * 1000.0, 3),
                           "args": {"request": request}})

        for row, request in zip(table, request_ids):
            span("H2D", "copy", copy_in, row[0], row[1], request)
            for k in range(n_nodes):
                wait, start, end = row[2 + 3 * k], row[3 + 3 * k], row[4 + 3 * k]
                name = plan.nodes[k].name
                if start - wait > 1e-3:
                    span(f"wait {name}", "wait", lane_of(k, request), wait, start, request, pid_of(k))
                span(name, "execute", lane_of(k, request), start, end, request, pid_of(k))
            wait, start, end = row[2 + 3 * n_nodes], row[3 + 3 * n_nodes], row[4 + 3 * n_nodes]
            if start - wait > 1e-3:
                span("wait outputs", "wait", copy_out, wait, start, request)
            span("D2H", "copy", copy_out, start, end, request)
        return events
