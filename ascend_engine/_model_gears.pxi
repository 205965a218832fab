# Included by _model.pyx: image-size and dims gears: the gear that holds a call's feeds,
# setting a gear on a dataset, each gear's output shapes and which input dimension each
# output dimension follows.  The functions are Model's methods' bodies and take it as self.


cdef _gear_shapes(Model self, feeds):
    """The body of Model.gear_shapes (see there)."""
    arrays = _shaped_arrays(self, feeds)
    if self.dynamic_kind == "hw":
        hw = None
        for spec, a in zip(self.inputs, arrays):
            dyn = [k for k, d in enumerate(spec.shape) if d == -1]
            if len(dyn) == 2:
                got = (int(a.shape[dyn[0]]), int(a.shape[dyn[1]]))
                if hw is not None and got != hw:
                    raise ValueError(f"input {spec.name!r}: image size {got[0]}x{got[1]} differs from the "
                                     f"other image inputs' {hw[0]}x{hw[1]}")
                hw = got
        gears = []
        for gear in self.hw_sizes:
            ins = []
            for spec in self.inputs:
                sub = dict(zip([k for k, d in enumerate(spec.shape) if d == -1], gear))
                ins.append(tuple(sub.get(k, d) for k, d in enumerate(spec.shape)))
            gears.append((gear, tuple(ins)))
        found = holding_gear(gears, [a.shape for a in arrays])
        if found is None:
            raise ValueError(f"model {self.path!r}: image size {hw[0]}x{hw[1]} (height x width) exceeds every "
                             f"gear {[f'{h}x{w}' for h, w in self.hw_sizes]}: resize it to fit one")
        gear, ins = found
        return gear, {spec.name: shape for spec, shape in zip(self.inputs, ins)}
    if self.dynamic_kind == "dims":
        found = holding_gear([(i, tuple(tuple(g[spec.name]) for spec in self.inputs))
                              for i, g in enumerate(self.dims_gears)], [a.shape for a in arrays])
        if found is None:
            got = {spec.name: tuple(a.shape) for spec, a in zip(self.inputs, arrays)}
            raise ValueError(f"model {self.path!r}: no dims gear holds the input shapes {got}; gears: "
                             f"{list(self.dims_gears)}")
        return found[0], dict(self.dims_gears[found[0]])
    raise ValueError(f"model {self.path!r} has {self.dynamic_kind} shapes, not image-size or dims gears")


cdef int _set_gear(Model self, aclmdlDataset *dataset, gear) except -1:
    cdef aclmdlIODims dims
    if self.dynamic_kind == "hw":
        checked_aclmdlSetDynamicHWSize(self._id, dataset, <size_t>self.dynamic_index, <uint64_t>gear[0],
                                       <uint64_t>gear[1])
        return 0
    require_aclmdlSetInputDynamicDims()
    memset(&dims, 0, sizeof(dims))
    flat = [d for spec in self.inputs for d in self.dims_gears[gear][spec.name]]
    dims.dimCount = len(flat)
    for k, v in enumerate(flat):
        dims.dims[k] = <int64_t>v
    checked_aclmdlSetInputDynamicDims(self._id, dataset, <size_t>self.dynamic_index, &dims)
    return 0


cdef tuple _cur_output_shape(Model self, size_t k):
    cdef aclmdlIODims dims
    memset(&dims, 0, sizeof(dims))
    checked_aclmdlGetCurOutputDims(self._desc, k, &dims)
    return tuple(int(dims.dims[i]) for i in range(min(<size_t>dims.dimCount, <size_t>ACL_MAX_DIM_CNT)))


cdef _gear_list(Model self):
    if self.dynamic_kind == "hw":
        return list(self.hw_sizes)
    return list(range(len(self.dims_gears)))


cdef _input_dim(Model self, gear, i, k):
    if self.dynamic_kind == "hw":
        dyn = [j for j, d in enumerate(self.inputs[i].shape) if d == -1]
        return gear[dyn.index(k)]
    return self.dims_gears[gear][self.inputs[i].name][k]


cdef _learn_follow(Model self, _DatasetPair pair):
    """Which input dimension each dynamic output dimension follows across the gears (None: none)."""
    per_gear = []
    for gear in _gear_list(self):
        _set_gear(self, pair.inputs, gear)
        per_gear.append((gear, [_cur_output_shape(self, k) for k in range(len(self.outputs))]))
    slots = [(i, k) for i, spec in enumerate(self.inputs) for k, d in enumerate(spec.shape) if d == -1]
    follow = []
    for o, spec in enumerate(self.outputs):
        dims = []
        for j, d in enumerate(spec.shape):
            found = None
            if d == -1:
                for i, k in slots:
                    if all(shapes[o][j] == _input_dim(self, gear, i, k) for gear, shapes in per_gear):
                        found = (i, k)
                        break
            dims.append(found)
        follow.append(dims)
    self._follow = follow


cdef _gear_io_shapes(Model self):
    """The body of Model.gear_io_shapes (see there)."""
    cdef _DatasetPair pair
    if self.dynamic_kind not in ("hw", "dims"):
        raise ValueError(f"model {self.path!r} has {self.dynamic_kind} shapes, not image-size or dims "
                         "gears")
    out = {}
    with self._lock:
        self._activate()
        if self._sync is None:
            self._sync = _staging_pair(self)
        pair = self._sync
        if self._follow is None:
            _learn_follow(self, pair)
        for gear in _gear_list(self):
            _set_gear(self, pair.inputs, gear)
            ins = tuple(tuple(_input_dim(self, gear, i, k) if d == -1 else d for k, d in enumerate(spec.shape))
                        for i, spec in enumerate(self.inputs))
            out[gear] = (ins, tuple(_cur_output_shape(self, k) for k in range(len(self.outputs))))
    return out
