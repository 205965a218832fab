# Included by _executor.pyx: the Python plan turned into the C plan (ae_plan)
# and the memory behind it kept -- the plan's C copies, the native steps the
# executor provides, the raw pointers of a request's arrays, and what a
# closed engine could not release yet (docs/executor.md, "Where each job lives").


_GEAR_POLICY = {"upper": AE_GEAR_UPPER, "lower": AE_GEAR_LOWER, "nearest": AE_GEAR_NEAREST}


def rows_to_boxes_address():
    """The address of ``ae_rows_to_boxes`` (executor.h), the native host step
    the planner puts before a crop_resize whose boxes are a model output
    (docs/executor.md, "Image nodes"); the plan names it
    (``BuiltinStep("rows_to_boxes")``) and the lowering below binds it."""
    return <size_t>&ae_rows_to_boxes


cdef ae_host_fn _builtin_step(str name) except NULL:
    """The C function of a builtin native step (native_step.BUILTIN_STEPS)."""
    if name == "rows_to_boxes":
        return ae_rows_to_boxes
    raise EngineError(f"the plan names a native step {name!r} this executor does not have")


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



cdef class _Remains(Resource):
    """What a closed engine could not release yet: its executor, while the
    device still runs requests abandoned after a timeout, with the models and
    device reference it uses.  Released (waiting for the device as long as it
    takes) when it is closed: at the latest by the exit hook, which closes
    the newest objects first."""
    cdef ae_engine *_engine
    cdef void *_plan_arrays[4]
    cdef list _models
    cdef Device _device

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
        r._ctx = (<Resource>device)._ctx
        r._register(None)
        _REMAINS.add(r)

    def close(self):
        """Wait for the device, then release everything. Idempotent."""
        _REMAINS.discard(self)
        Resource.close(self)

    cdef int _release(self) except -1:
        cdef ae_engine *engine = self._engine
        self._engine = NULL
        with nogil:
            ae_engine_destroy(engine)
        for k in range(4):
            PyMem_Free(self._plan_arrays[k])
            self._plan_arrays[k] = NULL
        for m in self._models:
            m.close()
        self._models = []
        self._device.close()
        return 0


_REMAINS = set()   # keeps _Remains alive until released (the registry holds them weakly)


# The Engine's plan marshalling, at module level so that it can live in this
# file (Cython includes only at module level): `self` is the Engine whose
# C copies of the plan these fill and free.
cdef _fill_plan(Engine self, ae_plan *p):
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
        _free_plan(self)
        raise MemoryError()
    for i, tp in enumerate(plan.tensors):
        self._tensors[i].row_bytes = tp.row_bytes
        self._tensors[i].offset = tp.offset
        self._tensors[i].capacity = tp.capacity
        self._tensors[i].domain = tp.domain
        self._tensors[i].device = tp.device
    cdef int k = 0, g = 0
    cdef cnp.ndarray table, places
    cdef ae_node_plan *c_node
    p.input_tensors = &self._ints[k]
    k = _put_ints(self._ints, k, [t_ for _, t_ in plan.inputs])
    p.output_tensors = &self._ints[k]
    k = _put_ints(self._ints, k, [t_ for _, t_ in plan.outputs])
    for i, node in enumerate(plan.nodes):
        c_node = &self._nodes[i]
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
                c_node.host.fn = (_builtin_step(node.fn.builtin) if node.fn.builtin is not None
                                  else <ae_host_fn><size_t>node.fn.address)
                c_node.host.ctx = <void *><size_t>node.fn.context
            else:
                c_node.host.reshape_fn = _run_py_step
                c_node.host.ctx = <void *>self._py_steps[node.name]
        else:
            c_node.kind = AE_NODE_MODEL
            c_node.model.id = node.model.model_id
        c_node.stream = node.stream
        if len(node.models) > 1:
            c_node.instances = len(node.models)
            c_node.streams = &self._ints[k]
            k = _put_ints(self._ints, k, node.streams)
            # uint32_t ids in int storage: C allows access through the unsigned type
            c_node.model.ids = <const uint32_t *>&self._ints[k]
            for m in node.models:
                (<uint32_t *>&self._ints[k])[0] = m.model_id
                k += 1
        c_node.n_inputs = len(node.inputs)
        c_node.inputs = &self._ints[k]
        k = _put_ints(self._ints, k, node.inputs)
        c_node.n_outputs = len(node.outputs)
        c_node.outputs = &self._ints[k]
        k = _put_ints(self._ints, k, node.outputs)
        c_node.model.dyn_index = node.dyn_index   # -1 for host steps and copies too
        c_node.model.dyn_offset = node.dyn_offset
        c_node.model.dyn_size = node.dyn_size
        c_node.model.n_gears = len(node.gears)
        c_node.model.gears = &self._gears[g]
        for v in node.gears:
            self._gears[g] = v
            g += 1
        c_node.model.static_batch = node.static_batch
        if node.dims_table:   # dims gears over a host step's rows
            table = np.ascontiguousarray(node.dims_table, dtype=np.int64)
            places = np.ascontiguousarray(node.row_dims, dtype=np.intc)
            self._keep += [table, places]
            c_node.shape.n_dims_gears = table.shape[0]
            c_node.shape.dims_count = table.shape[1]
            c_node.shape.dims_gears = <const int64_t *>cnp.PyArray_DATA(table)
            c_node.shape.n_row_dims = places.shape[0]
            c_node.shape.row_dims = <const int *>cnp.PyArray_DATA(places)
        c_node.shape.dyn_kind = {"hw": AE_DYN_HW, "dims": AE_DYN_DIMS}.get(node.shape_kind, AE_DYN_BATCH)
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
            _free_plan(self)
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

cdef _free_plan(Engine self):
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
