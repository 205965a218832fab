# cython: language_level=3
"""The plan lowered for C: a :class:`LoweredPlan` holds the ``ae_plan``
(executor.h) built from a :class:`~ascend_engine.planner.plan.Plan`, one way,
for ``ae_engine_create``, which copies what it needs; the device queue
(``_executor.pyx``) frees it as soon as that returns.  Also here: the Python
host steps the C plan points at (``PyStep`` and its trampoline) and the native
steps the executor provides (``BuiltinStep``), listed for the queue to bind.

A cimportable module (``_lowering.pxd``): the device queue reads ``p``.
"""

import threading
import traceback

import numpy as np

cimport numpy as cnp
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset, strncpy

from ascend_engine._acl cimport aclrtContext
from ascend_engine._executor_api cimport *
from ascend_engine._runtime cimport Resource

from ascend_engine._gears import policy_code
from ascend_engine._signals import THREAD as _THREAD
from ascend_engine.errors import HostStepError
from ascend_engine.native_step import NativeStep
from ascend_engine.shapes import pad_to

cnp.import_array()

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    int PyBUF_WRITE


def _rows_shape(trailing):
    """"(rows, 4)" for a host step output of trailing shape (4,)."""
    return "(" + ", ".join(["rows"] + [str(d) for d in trailing]) + (",)" if not trailing else ")")


cdef class PyStep:
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

    cdef str _count_mismatch(self, result):
        """Why ``result`` (a tuple or list) is not one value per declared output."""
        n = len(self.out_specs)
        declared = f"it declares {n} output(s): {', '.join(o[0] for o in self.out_specs)}"
        if isinstance(result, tuple):
            return f"host step {self.name!r} returned {len(result)} value(s); {declared}"
        # a list is taken for one value per output (as a tuple is), not for one array's data
        expected = "one numpy array" if n == 1 else f"a tuple of {n} numpy arrays"
        return (f"host step {self.name!r} returned a list of {len(result)} element(s); {declared}, so it "
                f"must return {expected}")

    cdef int run(self, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                 ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, ae_shape_edit *edit,
                 char *message, size_t message_size):
        """Call the function on views of the pinned staging; copy its outputs
        into the output staging (padded to the gears of the models after it,
        whose sizes it sets in ``edit``, when it chooses its outputs' shapes).
        Returns 0, or 1 with ``message`` filled."""
        try:
            arrays = [self._input(request, i, &inputs[i]) for i in range(n_inputs)]
            outer, _THREAD.step = _THREAD.step, self   # its engine refuses calls from it (no waiting on itself)
            try:
                result = self.fn(*arrays)
            finally:
                _THREAD.step = outer
            if isinstance(result, np.ndarray) or not isinstance(result, (tuple, list)):
                result = (result,)
            if len(result) != n_outputs:
                raise HostStepError(self._count_mismatch(result))
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
                if a.shape[0] > outputs[o].rows:   # before the copy: the staging holds no more
                    # rows="same" wants exactly its input's rows (the executor checks fewer: host_steps.c)
                    limit = "its max_rows is" if self.rows_any else 'rows="same" needs'
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
        return (<PyStep>ctx).run(request, inputs, n_inputs, outputs, n_outputs, rows_out, edit, message,
                                  message_size)


cdef int _put_ints(int *dst, int at, values) except -1:
    """Write `values` into dst from index `at`; returns the index after them."""
    for v in values:
        dst[at] = v
        at += 1
    return at



cdef class LoweredPlan:
    """A Plan as C reads it (``self.p``, an ``ae_plan``) and the host memory
    behind it: built once by ``LoweredPlan(plan, devices, py_steps)``
    (``devices``: the open Device of each of the plan's devices, in order;
    ``py_steps``: name -> PyStep), read by ``ae_engine_create``, which
    copies it, and freed then (``free()``, or when collected)."""

    def __cinit__(self):
        memset(&self.p, 0, sizeof(self.p))   # fields a plan does not use stay 0
        self.keep = []
        self.builtins = []

    def __init__(self, plan, list devices, dict py_steps):
        cdef int n_dev
        cdef size_t block
        cdef int k = 0, g = 0
        cdef cnp.ndarray table, places
        cdef ae_node_plan *c_node
        n_ints = len(plan.inputs) + len(plan.outputs) + sum(len(n.inputs) + len(n.outputs) for n in plan.nodes)
        # instanced nodes: a stream and a model id per instance, both in the int block
        n_ints += sum(2 * len(n.models) for n in plan.nodes if len(n.models) > 1)
        n_gears = sum(len(n.gears) for n in plan.nodes)
        self.tensors = <ae_tensor_plan *>PyMem_Calloc(len(plan.tensors), sizeof(ae_tensor_plan))
        self.nodes = <ae_node_plan *>PyMem_Calloc(len(plan.nodes), sizeof(ae_node_plan))
        self.ints = <int *>PyMem_Calloc(max(1, n_ints), sizeof(int))
        self.gears = <uint64_t *>PyMem_Calloc(max(1, n_gears), sizeof(uint64_t))
        if not self.tensors or not self.nodes or not self.ints or not self.gears:
            self.free()
            raise MemoryError()
        for i, tp in enumerate(plan.tensors):
            self.tensors[i].row_bytes = tp.row_bytes
            self.tensors[i].offset = tp.offset
            self.tensors[i].capacity = tp.capacity
            self.tensors[i].domain = tp.domain
            self.tensors[i].device = tp.device
        self.p.input_tensors = &self.ints[k]
        k = _put_ints(self.ints, k, [t_ for _, t_ in plan.inputs])
        self.p.output_tensors = &self.ints[k]
        k = _put_ints(self.ints, k, [t_ for _, t_ in plan.outputs])
        for i, node in enumerate(plan.nodes):
            c_node = &self.nodes[i]
            name = node.name.encode()[:AE_NAME_MAX - 1]
            strncpy(c_node.name, name, AE_NAME_MAX - 1)
            c_node.domain = node.domain
            c_node.device = node.device
            c_node.copy.bridge_stream = node.bridge_stream
            if node.kind == "copy":
                c_node.kind = AE_NODE_COPY
            elif node.kind == "image":
                c_node.kind = AE_NODE_IMAGE
                c_node.image.op = {"decode": AE_IMAGE_DECODE, "resize": AE_IMAGE_RESIZE,
                                   "crop_resize": AE_IMAGE_CROP_RESIZE}[node.image["op"]]
                c_node.image.width, c_node.image.height = node.image["size"]
                c_node.image.max_boxes = node.image.get("max_boxes", 0)
                c_node.image.boxes_float = node.image.get("boxes_float", False)
                c_node.image.interpolation = node.image.get("interpolation", 0)
            elif node.kind == "host":
                c_node.kind = AE_NODE_HOST
                c_node.host.rows_any = node.rows_any
                c_node.host.max_rows = node.max_rows
                c_node.host.workers = node.workers
                c_node.host.results_stream = node.results_stream
                if isinstance(node.fn, NativeStep):
                    if node.fn.builtin is not None:   # the executor's own: the device queue binds it
                        self.builtins.append((i, node.fn.builtin))
                    else:
                        c_node.host.fn = <ae_host_fn><size_t>node.fn.address
                    c_node.host.ctx = <void *><size_t>node.fn.context
                else:
                    c_node.host.reshape_fn = _run_py_step
                    c_node.host.ctx = <void *>py_steps[node.name]
            else:
                c_node.kind = AE_NODE_MODEL
                c_node.model.id = node.model.model_id
            c_node.stream = node.stream
            if len(node.models) > 1:
                c_node.instances = len(node.models)
                c_node.streams = &self.ints[k]
                k = _put_ints(self.ints, k, node.streams)
                # uint32_t ids in int storage: C allows access through the unsigned type
                c_node.model.ids = <const uint32_t *>&self.ints[k]
                for m in node.models:
                    (<uint32_t *>&self.ints[k])[0] = m.model_id
                    k += 1
            c_node.n_inputs = len(node.inputs)
            c_node.inputs = &self.ints[k]
            k = _put_ints(self.ints, k, node.inputs)
            c_node.n_outputs = len(node.outputs)
            c_node.outputs = &self.ints[k]
            k = _put_ints(self.ints, k, node.outputs)
            c_node.model.dyn_index = node.dyn_index   # -1 for host steps and copies too
            c_node.model.dyn_offset = node.dyn_offset
            c_node.model.dyn_size = node.dyn_size
            c_node.model.n_gears = len(node.gears)
            c_node.model.gears = &self.gears[g]
            for v in node.gears:
                self.gears[g] = v
                g += 1
            c_node.model.static_batch = node.static_batch
            if node.dims_table:   # dims gears over a host step's rows
                table = np.ascontiguousarray(node.dims_table, dtype=np.int64)
                places = np.ascontiguousarray(node.row_dims, dtype=np.intc)
                self.keep += [table, places]
                c_node.shape.n_dims_gears = table.shape[0]
                c_node.shape.dims_count = table.shape[1]
                c_node.shape.dims_gears = <const int64_t *>cnp.PyArray_DATA(table)
                c_node.shape.n_row_dims = places.shape[0]
                c_node.shape.row_dims = <const int *>cnp.PyArray_DATA(places)
            c_node.shape.dyn_kind = {"hw": AE_DYN_HW, "dims": AE_DYN_DIMS}.get(node.shape_kind, AE_DYN_BATCH)
        self.p.context = (<Resource>devices[0])._ctx
        self.p.device_id = plan.device
        self.p.depth = plan.depth
        self.p.n_streams = plan.n_streams
        self.p.single_stream = plan.single_stream
        self.p.profile = plan.profile
        self.p.timeout_ms = plan.timeout_ms
        self.p.n_tensors = len(plan.tensors)
        self.p.tensors = self.tensors
        self.p.n_nodes = len(plan.nodes)
        self.p.nodes = self.nodes
        self.p.n_inputs = len(plan.inputs)
        self.p.n_outputs = len(plan.outputs)
        self.p.slot_bytes = plan.slot_bytes
        self.p.max_batch = plan.max_batch
        self.p.spin_wait = 1 if plan.wait == "spin" else 0
        self.p.gear_policy = policy_code(plan.gear_policy)
        n_dev = len(plan.devices)
        if n_dev > 1:
            # one block: contexts | device ids | slot bytes | stream devices
            block = n_dev * (sizeof(aclrtContext) + sizeof(int32_t) + sizeof(size_t)) + \
                plan.n_streams * sizeof(int) + 64
            self.dev_arrays = PyMem_Calloc(1, block)
            if self.dev_arrays is NULL:
                self.free()
                raise MemoryError()
            self.p.n_devices = n_dev
            self.p.contexts = <const aclrtContext *>self.dev_arrays
            self.p.device_slot_bytes = <const size_t *>(<char *>self.dev_arrays + n_dev * sizeof(aclrtContext))
            self.p.device_ids = <const int32_t *>(<char *>self.p.device_slot_bytes + n_dev * sizeof(size_t))
            self.p.stream_devices = <const int *>(<char *>self.p.device_ids + n_dev * sizeof(int32_t) + 8)
            for k in range(n_dev):
                (<aclrtContext *>self.p.contexts)[k] = (<Resource>devices[k])._ctx
                (<int32_t *>self.p.device_ids)[k] = plan.devices[k]
                (<size_t *>self.p.device_slot_bytes)[k] = plan.device_slot_bytes[k]
            for k in range(plan.n_streams):
                (<int *>self.p.stream_devices)[k] = plan.stream_devices[k]

    cdef void free(self):
        """Release the C arrays (C has its own copy once ae_engine_create returned)."""
        PyMem_Free(self.tensors)
        PyMem_Free(self.nodes)
        PyMem_Free(self.ints)
        PyMem_Free(self.gears)
        PyMem_Free(self.dev_arrays)
        self.tensors = NULL
        self.nodes = NULL
        self.ints = NULL
        self.gears = NULL
        self.dev_arrays = NULL
        self.keep = []

    def __dealloc__(self):
        self.free()
