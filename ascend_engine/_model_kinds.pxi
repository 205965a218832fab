# Included by _model.pyx: a model's dynamic mechanism as one strategy object per kind
# ("static", "batch", "hw", "dims", "range"), chosen once when the model is described
# (_model_base's _describe, through the classes registered at the end of _model.pyx).
# Each kind answers what differs between them: describing its gears, running a call,
# checking and preparing an execute_async request, and (image-size and dims gears) the
# gear holding a call's feeds, setting a gear on a dataset and each gear's input shapes.
# Adding a kind is one class here, its register_kind line and its test in _describe.


cdef class _StaticKind(_Kind):
    """A static model: no gear, one batch per execution (the base of every kind here)."""

    cdef call(self, Model m, feeds):
        return _call_rows(m, feeds)

    cdef execute_async(self, Model m, list inputs, list outputs, Stream stream, batch, gear, shapes):
        if gear is not None or shapes is not None:
            raise ValueError(f"model {m.path!r} has {self.name} shapes: gear= and shapes= are for "
                             "image-size, dims-gear and shape-range models")
        return _execute_rows_async(m, inputs, outputs, stream, batch)

    cdef request_gear(self, Model m, batch):
        """The batch gear an execute_async of ``batch`` rows runs at (None: no gear to set)."""
        if batch is not None and batch != m.max_batch:
            raise ValueError(f"model {m.path!r} is static with batch {m.max_batch}, got batch={batch}")
        return None

    cdef int set_rows(self, Model m, aclmdlDataset *dataset, size_t rows) except -1:
        """Set the gear a synchronous chunk of ``rows`` rows runs at (nothing for a static model)."""
        return 0

    cdef list gear_list(self, Model m):
        raise ValueError(f"model {m.path!r} has {self.name} shapes, not image-size or dims gears")

    cdef input_dim(self, Model m, gear, i, k):
        raise ValueError(f"model {m.path!r} has {self.name} shapes, not image-size or dims gears")

    cdef int set_gear(self, Model m, aclmdlDataset *dataset, gear) except -1:
        raise ValueError(f"model {m.path!r} has {self.name} shapes, not image-size or dims gears")

    cdef check_shaped(self, Model m, gear, shapes, list need):
        """Check an execute_async request's gear= / shapes=; fill the bytes each buffer needs.

        Returns (gear, shapes) as the execution uses them.  Shaped kinds only."""
        raise NotImplementedError(self.name)

    cdef int prepare(self, Model m, aclmdlDataset *inputs, gear, shapes) except -1:
        """Set what the execution runs at on its input dataset (a gear, or the inputs' shapes)."""
        return self.set_gear(m, inputs, gear)


cdef class _BatchKind(_StaticKind):
    """Batch gears (aclmdlGetDynamicBatch): a call runs in chunks at the smallest gear holding each."""

    def __cinit__(self):
        self.name = "batch"
        self.has_tensor = True

    cdef request_gear(self, Model m, batch):
        if batch is None:
            raise ValueError(f"model {m.path!r} has a dynamic batch: pass batch= (gears {list(m.batch_sizes)})")
        return m.gear_for(batch)

    cdef int set_rows(self, Model m, aclmdlDataset *dataset, size_t rows) except -1:
        checked_aclmdlSetDynamicBatchSize(m._id, dataset, <size_t>m.dynamic_index, <uint64_t>m.gear_for(rows))
        return 0


cdef class _ShapedKind(_StaticKind):
    """Image-size gears, dims gears and shape ranges: a call runs once, at the request's shapes."""

    cdef call(self, Model m, feeds):
        return _call_gear(m, feeds)

    cdef execute_async(self, Model m, list inputs, list outputs, Stream stream, batch, gear, shapes):
        return _execute_shaped_async(m, inputs, outputs, stream, gear, shapes)

    cdef check_shaped(self, Model m, gear, shapes, list need):
        if shapes is not None or gear is None or gear not in self.gear_list(m):
            raise ValueError(f"model {m.path!r} has {self.gears_text()} gears: pass gear= one of "
                             f"{self.allowed(m)}, got {gear!r}")
        return gear, shapes

    cdef str gears_text(self):
        return self.name

    cdef gear_io_shapes(self, Model m):
        if not self.has_gears:
            return _StaticKind.gear_io_shapes(self, m)
        return _gear_io_shapes(m)

    cdef allowed(self, Model m):
        return self.gear_list(m)


cdef class _HwKind(_ShapedKind):
    """Image-size gears (aclmdlGetDynamicHW): gear = (height, width), one of ``hw_sizes``."""

    def __cinit__(self):
        self.name = "hw"
        self.has_gears = True
        self.has_tensor = True

    cdef gear_shapes(self, Model m, feeds):
        arrays = _shaped_arrays(m, feeds)
        hw = None
        for spec, a in zip(m.inputs, arrays):
            dyn = [k for k, d in enumerate(spec.shape) if d == -1]
            if len(dyn) == 2:
                got = (int(a.shape[dyn[0]]), int(a.shape[dyn[1]]))
                if hw is not None and got != hw:
                    raise ValueError(f"input {spec.name!r}: image size {got[0]}x{got[1]} differs from the "
                                     f"other image inputs' {hw[0]}x{hw[1]}")
                hw = got
        gears = []
        for gear in m.hw_sizes:
            ins = []
            for spec in m.inputs:
                sub = dict(zip([k for k, d in enumerate(spec.shape) if d == -1], gear))
                ins.append(tuple(sub.get(k, d) for k, d in enumerate(spec.shape)))
            gears.append((gear, tuple(ins)))
        found = holding_gear(gears, [a.shape for a in arrays])
        if found is None:
            raise ValueError(f"model {m.path!r}: image size {hw[0]}x{hw[1]} (height x width) exceeds every "
                             f"gear {[f'{h}x{w}' for h, w in m.hw_sizes]}: resize it to fit one")
        gear, ins = found
        return gear, {spec.name: shape for spec, shape in zip(m.inputs, ins)}

    cdef list gear_list(self, Model m):
        return list(m.hw_sizes)

    cdef input_dim(self, Model m, gear, i, k):
        dyn = [j for j, d in enumerate(m.inputs[i].shape) if d == -1]
        return gear[dyn.index(k)]

    cdef int set_gear(self, Model m, aclmdlDataset *dataset, gear) except -1:
        checked_aclmdlSetDynamicHWSize(m._id, dataset, <size_t>m.dynamic_index, <uint64_t>gear[0],
                                       <uint64_t>gear[1])
        return 0

    cdef check_shaped(self, Model m, gear, shapes, list need):
        if isinstance(gear, list):
            gear = tuple(gear)
        return _ShapedKind.check_shaped(self, m, gear, shapes, need)

    cdef str gears_text(self):
        return "image-size"


cdef class _DimsKind(_ShapedKind):
    """Dims gears (aclmdlGetInputDynamicDims): gear = the gear's index in ``dims_gears``."""

    def __cinit__(self):
        self.name = "dims"
        self.has_gears = True
        self.has_tensor = True

    cdef describe(self, Model m, size_t gear_count):
        _describe_dims(m, gear_count)

    cdef gear_shapes(self, Model m, feeds):
        arrays = _shaped_arrays(m, feeds)
        found = holding_gear([(i, tuple(tuple(g[spec.name]) for spec in m.inputs))
                              for i, g in enumerate(m.dims_gears)], [a.shape for a in arrays])
        if found is None:
            got = {spec.name: tuple(a.shape) for spec, a in zip(m.inputs, arrays)}
            raise ValueError(f"model {m.path!r}: no dims gear holds the input shapes {got}; gears: "
                             f"{list(m.dims_gears)}")
        return found[0], dict(m.dims_gears[found[0]])

    cdef list gear_list(self, Model m):
        return list(range(len(m.dims_gears)))

    cdef input_dim(self, Model m, gear, i, k):
        return m.dims_gears[gear][m.inputs[i].name][k]

    cdef int set_gear(self, Model m, aclmdlDataset *dataset, gear) except -1:
        cdef aclmdlIODims dims
        require_aclmdlSetInputDynamicDims()
        memset(&dims, 0, sizeof(dims))
        flat = [d for spec in m.inputs for d in m.dims_gears[gear][spec.name]]
        dims.dimCount = len(flat)
        for k, v in enumerate(flat):
            dims.dims[k] = <int64_t>v
        checked_aclmdlSetInputDynamicDims(m._id, dataset, <size_t>m.dynamic_index, &dims)
        return 0

    cdef allowed(self, Model m):
        return f"indexes 0..{len(m.dims_gears) - 1} of dims_gears"


cdef class _RangeKind(_ShapedKind):
    """Shape ranges (aclmdlGetInputDimsRange): shapes = one shape per input, inside ``shape_ranges``."""

    def __cinit__(self):
        self.name = "range"

    cdef describe(self, Model m, size_t gear_count):
        _describe_ranges(m)

    cdef call(self, Model m, feeds):
        return _call_range(m, feeds)

    cdef check_shaped(self, Model m, gear, shapes, list need):
        if gear is not None or shapes is None or len(shapes) != len(m.inputs):
            raise ValueError(f"model {m.path!r} has shape ranges: pass shapes= (one shape per input, "
                             f"{len(m.inputs)} in all), not gear=")
        shapes = [tuple(int(d) for d in shape) for shape in shapes]
        for k, (spec, shape) in enumerate(zip(m.inputs, shapes)):
            ranges = m.shape_ranges[spec.name]
            if len(shape) != len(ranges) or any(n < lo or (hi != -1 and n > hi)
                                                for n, (lo, hi) in zip(shape, ranges)):
                raise ValueError(f"input {spec.name!r}: shape {shape} is outside the model's ranges "
                                 f"{[(lo, 'any' if hi == -1 else hi) for lo, hi in ranges]}")
            need[k] = int(np.prod(shape)) * spec.dtype.itemsize
        for k, spec in enumerate(m.outputs):   # sized by the shapes: the simulator checks it at the call
            if -1 in spec.shape:
                need[len(m.inputs) + k] = 0
        return gear, shapes

    cdef int prepare(self, Model m, aclmdlDataset *inputs, gear, shapes) except -1:
        for i, shape in enumerate(shapes):
            _describe_input(m, inputs, i, shape)
        return 0


cdef tuple _cur_output_shape(Model self, size_t k):
    cdef aclmdlIODims dims
    memset(&dims, 0, sizeof(dims))
    checked_aclmdlGetCurOutputDims(self._desc, k, &dims)
    return tuple(int(dims.dims[i]) for i in range(min(<size_t>dims.dimCount, <size_t>ACL_MAX_DIM_CNT)))


cdef _learn_follow(Model self, _DatasetPair pair):
    """Which input dimension each dynamic output dimension follows across the gears (None: none)."""
    cdef _StaticKind kind = self._kind
    per_gear = []
    for gear in kind.gear_list(self):
        kind.set_gear(self, pair.inputs, gear)
        per_gear.append((gear, [_cur_output_shape(self, k) for k in range(len(self.outputs))]))
    slots = [(i, k) for i, spec in enumerate(self.inputs) for k, d in enumerate(spec.shape) if d == -1]
    follow = []
    for o, spec in enumerate(self.outputs):
        dims = []
        for j, d in enumerate(spec.shape):
            found = None
            if d == -1:
                for i, k in slots:
                    if all(shapes[o][j] == kind.input_dim(self, gear, i, k) for gear, shapes in per_gear):
                        found = (i, k)
                        break
            dims.append(found)
        follow.append(dims)
    self._follow = follow


cdef _gear_io_shapes(Model self):
    """The body of Model.gear_io_shapes for image-size and dims gears (see there)."""
    cdef _DatasetPair pair
    cdef _StaticKind kind = self._kind
    out = {}
    with self._lock:
        self._activate()
        if self._sync is None:
            self._sync = _staging_pair(self)
        pair = self._sync
        if self._follow is None:
            _learn_follow(self, pair)
        for gear in kind.gear_list(self):
            kind.set_gear(self, pair.inputs, gear)
            ins = tuple(tuple(kind.input_dim(self, gear, i, k) if d == -1 else d for k, d in enumerate(spec.shape))
                        for i, spec in enumerate(self.inputs))
            out[gear] = (ins, tuple(_cur_output_shape(self, k) for k in range(len(self.outputs))))
    return out
