# Included by _model.pyx: executing a model: synchronously on numpy arrays (batch chunks,
# gears, shape ranges) and queued on a stream with device buffers (execute_async).  The
# functions are Model's methods' bodies and take the Model as self.


cdef _check_feeds(Model self, feeds):
    """Validate feeds against the inputs; returns (arrays in input order, rows)."""
    return check_feeds(feeds, [(s.name, s.dtype, s.shape) for s in self.inputs], f"model {self.path!r}")


cdef _call_rows(Model self, feeds):
    """A static or dynamic-batch model's call: chunks of up to the largest gear."""
    cdef uint32_t mid
    cdef aclmdlDataset *ins
    cdef aclmdlDataset *outs
    cdef _StaticKind kind = self._kind
    arrays, rows = _check_feeds(self, feeds)
    per_row = [self.output_has_batch(k) for k in range(len(self.outputs))]
    results = [np.empty((rows,) + tuple(s.shape[1:]) if batched else tuple(s.shape), dtype=s.dtype)
               for s, batched in zip(self.outputs, per_row)]
    with self._lock:
        self._activate()
        if self._sync is None:
            self._sync = _staging_pair(self)
        pair = self._sync
        in_bufs = pair.keep[:len(self.inputs) + (1 if self.dynamic_index >= 0 else 0)]
        in_bufs = [b for b in in_bufs if b is not pair.dynamic]
        out_bufs = pair.keep[len(pair.keep) - len(self.outputs):]
        step = self.max_batch
        for start in range(0, rows, step):
            stop = min(rows, start + step)
            for a, buf in zip(arrays, in_bufs):
                buf.copy_from(a[start:stop])
            kind.set_rows(self, pair.inputs, stop - start)
            mid = self._id
            ins = pair.inputs
            outs = pair.outputs
            with nogil:
                checked_aclmdlExecute(mid, ins, outs)
            for spec, r, buf, batched in zip(self.outputs, results, out_bufs, per_row):
                if batched:
                    part = r[start:stop]
                    buf.copy_to(part, nbytes=part.nbytes)
                elif start == 0:
                    buf.copy_to(r, nbytes=r.nbytes)
                else:
                    # A fixed-shape output (no batch dimension) is whole in
                    # every execution: keep it only if all agree.
                    again = np.empty_like(r)
                    buf.copy_to(again, nbytes=again.nbytes)
                    if again.tobytes() != r.tobytes():
                        raise ValueError(
                            f"output {spec.name!r} of {self.path!r} has the fixed shape "
                            f"{shape_text(spec.shape)} and differs between the executions a batch of "
                            f"{rows} rows was split into (largest gear {self.max_batch}): call with at "
                            f"most {self.max_batch} rows to read it")
    return {s.name: r for s, r in zip(self.outputs, results)}


cdef _shaped_arrays(Model self, feeds):
    """Feeds in input order, checked for names, dtypes, ranks and fixed dimensions."""
    return check_feeds(feeds, [(s.name, s.dtype, s.shape) for s in self.inputs], f"model {self.path!r}",
                       batched=False)[0]


cdef _call_gear(Model self, feeds):
    cdef uint32_t mid
    cdef aclmdlDataset *ins
    cdef aclmdlDataset *outs
    cdef _DatasetPair pair
    arrays = _shaped_arrays(self, feeds)
    gear, shapes = self.gear_shapes(feeds)
    with self._lock:
        self._activate()
        if self._sync is None:
            self._sync = _staging_pair(self)
        pair = self._sync
        in_bufs = [b for b in pair.keep[:len(self.inputs) + 1] if b is not pair.dynamic]
        out_bufs = pair.keep[len(pair.keep) - len(self.outputs):]
        if self._follow is None:
            _learn_follow(self, pair)
        for spec, a, buf in zip(self.inputs, arrays, in_bufs):
            buf.copy_from(_pad_to(a, shapes[spec.name]))
        (<_StaticKind>self._kind).set_gear(self, pair.inputs, gear)
        mid = self._id
        ins = pair.inputs
        outs = pair.outputs
        with nogil:
            checked_aclmdlExecute(mid, ins, outs)
        results = {}
        for k, (spec, buf) in enumerate(zip(self.outputs, out_bufs)):
            r = np.empty(_cur_output_shape(self, k), dtype=spec.dtype)
            buf.copy_to(r, nbytes=r.nbytes)
            cut = tuple(slice(0, arrays[f[0]].shape[f[1]]) if f is not None else slice(None)
                        for f in self._follow[k])
            results[spec.name] = np.ascontiguousarray(r[cut])
    return results


cdef _describe_input(Model self, aclmdlDataset *dataset, size_t i, tuple shape):
    cdef const ae_acl_api *t = api()
    cdef int64_t dims[128]
    cdef aclTensorDesc *desc
    require_aclCreateTensorDesc()
    require_aclDestroyTensorDesc()
    require_aclmdlSetDatasetTensorDesc()
    for k, v in enumerate(shape):
        dims[k] = <int64_t>v
    fmt = t.aclmdlGetInputFormat(self._desc, i) if t.aclmdlGetInputFormat is not NULL else ACL_FORMAT_ND
    desc = t.aclCreateTensorDesc(t.aclmdlGetInputDataType(self._desc, i), <int>len(shape), dims, fmt)
    if desc is NULL:
        raise MemoryError("aclCreateTensorDesc failed")
    try:
        checked_aclmdlSetDatasetTensorDesc(dataset, desc, i)
    finally:
        t.aclDestroyTensorDesc(desc)


cdef tuple _dataset_shape(Model self, aclmdlDataset *dataset, size_t k):
    cdef const ae_acl_api *t = api()
    cdef aclTensorDesc *desc
    cdef int64_t v = 0
    require_aclmdlGetDatasetTensorDesc()
    require_aclGetTensorDescNumDims()
    desc = t.aclmdlGetDatasetTensorDesc(dataset, k)
    if desc is NULL:
        check(100000, b"aclmdlGetDatasetTensorDesc")
    shape = []
    for i in range(t.aclGetTensorDescNumDims(desc)):
        checked_aclGetTensorDescDimV2(desc, i, &v)
        shape.append(int(v))
    return tuple(shape)


cdef _call_range(Model self, feeds):
    arrays = _shaped_arrays(self, feeds)
    for spec, a in zip(self.inputs, arrays):
        for k, (lo, hi) in enumerate(self.shape_ranges[spec.name]):
            n = a.shape[k]
            if n < lo or (hi != -1 and n > hi):
                raise ValueError(f"input {spec.name!r}: dimension {k} is {n}, outside the model's range "
                                 f"{lo}..{'any' if hi == -1 else hi}")
    cap = self.range_output_nbytes or max(4096, sum(a.nbytes for a in arrays))
    with self._lock:
        self._activate()
        ins_bufs = []
        try:
            for a in arrays:
                ins_bufs.append(DeviceBuffer(self.device, max(1, a.nbytes)))
                ins_bufs[-1].copy_from(np.ascontiguousarray(a))
            return _run_range(self, arrays, ins_bufs, cap)
        finally:
            for buf in ins_bufs:
                buf.close()


cdef _run_range(Model self, list arrays, list ins_bufs, cap):
    """Execute a shape-range model on filled input buffers (lock held), growing the outputs until they fit."""
    cdef const ae_acl_api *t = api()
    cdef aclError rc = ACL_SUCCESS
    cdef uint32_t mid
    cdef aclmdlDataset *ins
    cdef aclmdlDataset *outs
    cdef _DatasetPair pair
    for attempt in range(24):
        # aclmdlGetOutputSizeByIndex gives a bounded output's largest size (the range maxima); an unbounded
        # one (size 0) is known only after the execution: grow its buffer until it holds it
        outs_sizes = [s.nbytes if s.nbytes else cap for s in self.outputs]
        out_bufs = []
        pair = None
        try:
            for n in outs_sizes:
                out_bufs.append(DeviceBuffer(self.device, n))
            pair = _make_pair(self, ins_bufs, out_bufs)
            for i, a in enumerate(arrays):
                _describe_input(self, pair.inputs, i, tuple(a.shape))
            mid = self._id
            ins = pair.inputs
            outs = pair.outputs
            with nogil:
                rc = t.aclmdlExecute(mid, ins, outs)
            # ACL_ERROR_GE_FAILURE: an output buffer too small (docs/simulator.md, "Shape-range models")
            if rc == 500002 and attempt < 23 and any(not s.nbytes for s in self.outputs):
                cap *= 2
                continue
            check(rc, b"aclmdlExecute")
            results = {}
            for k, (spec, buf) in enumerate(zip(self.outputs, out_bufs)):
                r = np.empty(_dataset_shape(self, pair.outputs, k), dtype=spec.dtype)
                buf.copy_to(r, nbytes=r.nbytes)
                results[spec.name] = r
            return results
        finally:
            if pair is not None:
                pair.destroy()
            for buf in out_bufs:
                buf.close()


cdef _execute_rows_async(Model self, list inputs, list outputs, Stream stream, batch):
    """execute_async for static and dynamic-batch models (``batch`` rows, checked)."""
    cdef _DatasetPair pair
    cdef _StaticKind kind = self._kind
    cdef aclrtStream s = stream_handle(stream)
    if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
        raise ValueError(f"model {self.path!r} takes {len(self.inputs)} input and {len(self.outputs)} "
                         f"output buffers, got {len(inputs)} and {len(outputs)}")
    for buf, spec in zip(inputs + outputs, self.inputs + self.outputs):
        if not isinstance(buf, DeviceBuffer):
            raise TypeError(f"tensor {spec.name!r}: expected a DeviceBuffer, got {type(buf).__name__}")
        if (<DeviceBuffer>buf).closed:
            raise _errors.ObjectClosedError(f"tensor {spec.name!r}: the DeviceBuffer is closed")
        if (<DeviceBuffer>buf).nbytes < spec.nbytes:
            raise ValueError(f"tensor {spec.name!r}: the buffer holds {(<DeviceBuffer>buf).nbytes} bytes, "
                             f"the model needs {spec.nbytes}")
    gear = kind.request_gear(self, batch)
    with self._lock:
        self._activate()
        pair = _async_pair(self, inputs, outputs)
        if gear is not None:
            kind.set_rows(self, pair.inputs, gear)
        checked_aclmdlExecuteAsync(self._id, pair.inputs, pair.outputs, s)
        # The execution reads the datasets (and the buffers they point
        # into) until it has run: the stream holds them until synchronized.
        stream._keep(pair)
    return gear


cdef _execute_shaped_async(Model self, list inputs, list outputs, Stream stream, gear, shapes):
    """execute_async for image-size, dims-gear and shape-range models (see there)."""
    cdef _DatasetPair pair
    cdef aclrtStream s = stream_handle(stream)
    cdef _StaticKind kind = self._kind
    need = [spec.nbytes for spec in self.inputs + self.outputs]
    gear, shapes = kind.check_shaped(self, gear, shapes, need)
    if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
        raise ValueError(f"model {self.path!r} takes {len(self.inputs)} input and {len(self.outputs)} "
                         f"output buffers, got {len(inputs)} and {len(outputs)}")
    for buf, spec, n in zip(inputs + outputs, self.inputs + self.outputs, need):
        if not isinstance(buf, DeviceBuffer):
            raise TypeError(f"tensor {spec.name!r}: expected a DeviceBuffer, got {type(buf).__name__}")
        if (<DeviceBuffer>buf).closed:
            raise _errors.ObjectClosedError(f"tensor {spec.name!r}: the DeviceBuffer is closed")
        if (<DeviceBuffer>buf).nbytes < n:
            raise ValueError(f"tensor {spec.name!r}: the buffer holds {(<DeviceBuffer>buf).nbytes} bytes, "
                             f"the model needs {n}")
    with self._lock:
        self._activate()
        pair = _async_pair(self, inputs, outputs)
        kind.prepare(self, pair.inputs, gear, shapes)
        checked_aclmdlExecuteAsync(self._id, pair.inputs, pair.outputs, s)
        stream._keep(pair)
    return gear if gear is not None else shapes
