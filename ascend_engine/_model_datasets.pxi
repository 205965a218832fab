# Included by _model_base.pyx: the AscendCL datasets that bind device buffers to a model's
# inputs and outputs: the staging pair of synchronous calls, and the pairs execute_async
# keeps per buffer set.  The functions are Model's methods' bodies and take it as self.


# Dataset pairs execute_async keeps per model for the buffer sets it was
# given, so that a caller cycling through a few sets of buffers (one per
# request slot) creates its datasets once.  Beyond this many sets, the least
# recently used pairs are released.
ASYNC_DATASETS_CACHED = 64


cdef class _DatasetPair:
    """An input and an output dataset bound to fixed device buffers (kept for reuse).

    The pair keeps the buffers its datasets point into alive; it closes them
    too when it owns them (staging buffers the model allocated itself).  A
    pair dropped without destroy() (one evicted from a model's cache once the
    streams that ran it no longer hold it) is destroyed when collected.
    """
    def __cinit__(self):
        self.buffers = []
        self.keep = []

    def __dealloc__(self):
        if runtime_usable() and (self.inputs is not NULL or self.outputs is not NULL or self.buffers
                                 or self.dynamic is not None):
            self.destroy(True)

    cdef int add(self, aclmdlDataset *dataset, DeviceBuffer buf) except -1:
        cdef const ae_acl_api *t = api()
        cdef aclDataBuffer *db = t.aclCreateDataBuffer(buffer_ptr(buf), buf.nbytes)
        if db is NULL:
            raise MemoryError("aclCreateDataBuffer failed")
        self.buffers.append(<uintptr_t>db)
        self.keep.append(buf)
        checked_aclmdlAddDatasetBuffer(dataset, db)
        return 0

    cdef destroy(self, bint from_finalizer=False):
        """Destroy the datasets and close the buffers the pair owns.  From a
        finalizer, failures are logged and the thread's context is kept."""
        cdef const ae_acl_api *t = api()
        if self.inputs is not NULL:
            t.aclmdlDestroyDataset(self.inputs)
            self.inputs = NULL
        if self.outputs is not NULL:
            t.aclmdlDestroyDataset(self.outputs)
            self.outputs = NULL
        for db in self.buffers:
            t.aclDestroyDataBuffer(<aclDataBuffer *><uintptr_t>db)
        self.buffers = []
        keep, self.keep = self.keep, []
        owned = ([self.dynamic] if self.dynamic is not None else []) + (keep if self.owns else [])
        self.dynamic = None
        for buf in owned:
            if from_finalizer:
                close_from_finalizer(buf)
            else:
                buf.close()


cdef _DatasetPair _staging_pair(Model self):
    """A dataset pair over new device buffers of the descriptor's sizes, which the pair owns."""
    bufs = []
    try:
        for spec in self.inputs + self.outputs:
            bufs.append(DeviceBuffer(self.device, spec.nbytes))
        return _make_pair(self, bufs[:len(self.inputs)], bufs[len(self.inputs):], True)
    except BaseException:
        for buf in bufs:
            buf.close()
        raise


cdef _DatasetPair _async_pair(Model self, list inputs, list outputs):
    """The datasets over these buffers, kept across calls (lock held).
    Keyed by the buffers' serials, which unlike id() are never reused."""
    key = tuple((<Resource>b)._serial for b in inputs + outputs)
    pair = self._async_sets.pop(key, None)
    if pair is None:
        _trim_async_sets(self)
        pair = _make_pair(self, inputs, outputs)
    self._async_sets[key] = pair     # most recently used last
    return pair


cdef _DatasetPair _make_pair(Model self, list ins, list outs, bint owns=False):
    cdef const ae_acl_api *t = api()
    cdef _DatasetPair pair = _DatasetPair()
    pair.owns = owns
    pair.inputs = t.aclmdlCreateDataset()
    pair.outputs = t.aclmdlCreateDataset()
    if pair.inputs is NULL or pair.outputs is NULL:
        pair.destroy()
        raise MemoryError("aclmdlCreateDataset failed")
    try:
        k = 0
        for i in range(len(self.inputs) + (1 if self.dynamic_index >= 0 else 0)):
            if i == self.dynamic_index:
                pair.dynamic = DeviceBuffer(self.device, self.dynamic_nbytes)
                pair.add(pair.inputs, pair.dynamic)
            else:
                pair.add(pair.inputs, ins[k])
                k += 1
        for buf in outs:
            pair.add(pair.outputs, buf)
    except BaseException:
        pair.destroy()
        raise
    return pair


cdef _trim_async_sets(Model self):
    """Make room for one more cached dataset pair (lock held).

    Pairs over a buffer that was closed can never run again and go first;
    then the least recently used, down to ASYNC_DATASETS_CACHED.  A pair
    an unsynchronized stream still holds is destroyed once the stream lets
    it go.
    """
    for key in [k for k, p in self._async_sets.items()
                if any((<DeviceBuffer>b).closed for b in (<_DatasetPair>p).keep)]:
        del self._async_sets[key]
    while len(self._async_sets) >= ASYNC_DATASETS_CACHED:
        del self._async_sets[next(iter(self._async_sets))]
