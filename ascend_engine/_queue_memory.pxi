# Included by _executor.pyx: the executor's own native steps (bound into a
# lowered plan by name), the raw pointers of a request's arrays, and what a
# closed queue could not release yet (docs/executor.md, "The rooms").


def rows_to_boxes_address():
    """The address of ``ae_rows_to_boxes`` (executor.h), the native host step
    the planner puts before a crop_resize whose boxes are a model output
    (docs/executor.md, "Image nodes"); the plan names it
    (``BuiltinStep("rows_to_boxes")``) and the queue binds it at construction."""
    return <size_t>&ae_rows_to_boxes


cdef ae_host_fn _builtin_step(str name) except NULL:
    """The C function of a builtin native step (native_step.BUILTIN_STEPS)."""
    if name == "rows_to_boxes":
        return ae_rows_to_boxes
    raise EngineError(f"the plan names a native step {name!r} this executor does not have")


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
    cdef list _models
    cdef Device _device

    @staticmethod
    cdef keep(ae_engine *engine, list models, Device device):
        cdef _Remains r = _Remains.__new__(_Remains)
        r._engine = engine
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
        for m in self._models:
            m.close()
        self._models = []
        self._device.close()
        return 0


_REMAINS = set()   # keeps _Remains alive until released (the registry holds them weakly)
