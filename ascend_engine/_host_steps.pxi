# Included by _executor.pyx: the trampoline through which the executor's
# host-step workers call a Python host step (docs/executor.md, "Host steps").


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
        return (<_PyStep>ctx).run(request, inputs, n_inputs, outputs, n_outputs, rows_out, edit, message,
                                  message_size)

