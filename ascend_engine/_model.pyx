# cython: language_level=3
"""Models: load a model file, describe its tensors, execute it.

``Model.load(path, device=0)`` loads with ``aclmdlLoadFromFile`` and reads
every tensor's name, dtype, dims and the padded size the device needs from
the model's descriptor.  ``model(x=array)`` runs once synchronously (choosing
the dynamic-batch gear, padding and slicing, splitting batches above the
largest gear); ``execute_async`` queues an execution on device buffers.
"""

from collections import namedtuple
import os
import threading

import numpy as np

from libc.stdint cimport uint32_t, uint64_t, uintptr_t
from libc.string cimport memset

from ascend_engine._acl cimport *
from ascend_engine._runtime cimport api, check, Resource, Device, Context, Stream, DeviceBuffer

from ascend_engine import errors as _errors

DYNAMIC_TENSOR_NAME = "ascend_mbatch_shape_data"

TensorSpec = namedtuple("TensorSpec", ["name", "dtype", "shape", "nbytes", "format"])
TensorSpec.__doc__ = """One model input or output.

``shape`` has -1 as its first dimension when the model takes a dynamic
batch; ``nbytes`` is the descriptor's size: the tensor's exact bytes, and for
a dynamic batch the largest gear's, which is what a buffer bound to this
tensor must hold to run every gear."""

_DTYPES = {
    ACL_FLOAT: np.dtype(np.float32),
    ACL_FLOAT16: np.dtype(np.float16),
    ACL_INT8: np.dtype(np.int8),
    ACL_INT32: np.dtype(np.int32),
    ACL_UINT8: np.dtype(np.uint8),
    ACL_INT16: np.dtype(np.int16),
    ACL_UINT16: np.dtype(np.uint16),
    ACL_UINT32: np.dtype(np.uint32),
    ACL_INT64: np.dtype(np.int64),
    ACL_UINT64: np.dtype(np.uint64),
    ACL_DOUBLE: np.dtype(np.float64),
    ACL_BOOL: np.dtype(np.bool_),
}
_FORMATS = {-1: "UNDEFINED", 0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 29: "FRACTAL_NZ"}


def _shape_text(shape):
    return "(" + ", ".join("batch" if d == -1 else str(d) for d in shape) + ")"


cdef object _spec(aclmdlDesc *desc, size_t i, bint is_input):
    cdef const ae_acl_api *t = api()
    cdef aclmdlIODims dims
    cdef const char *name
    cdef aclDataType dt
    cdef size_t nbytes
    cdef int fmt = -1
    memset(&dims, 0, sizeof(dims))
    if is_input:
        check(t.aclmdlGetInputDims(desc, i, &dims), b"aclmdlGetInputDims")
        name = t.aclmdlGetInputNameByIndex(desc, i)
        dt = t.aclmdlGetInputDataType(desc, i)
        nbytes = t.aclmdlGetInputSizeByIndex(desc, i)
        if t.aclmdlGetInputFormat is not NULL:
            fmt = <int>t.aclmdlGetInputFormat(desc, i)
    else:
        check(t.aclmdlGetOutputDims(desc, i, &dims), b"aclmdlGetOutputDims")
        name = t.aclmdlGetOutputNameByIndex(desc, i)
        dt = t.aclmdlGetOutputDataType(desc, i)
        nbytes = t.aclmdlGetOutputSizeByIndex(desc, i)
        if t.aclmdlGetOutputFormat is not NULL:
            fmt = <int>t.aclmdlGetOutputFormat(desc, i)
    shape = tuple(int(dims.dims[k]) for k in range(min(<size_t>dims.dimCount, <size_t>ACL_MAX_DIM_CNT)))
    text = name.decode("utf-8", "replace") if name is not NULL else f"{'input' if is_input else 'output'}{i}"
    dtype = _DTYPES.get(<int>dt)
    if dtype is None:
        raise _errors.ModelError("aclmdlGetInputDataType" if is_input else "aclmdlGetOutputDataType",
                                 100026,   # ACL_ERROR_UNSUPPORTED_DATA_TYPE
                                 f"tensor {text!r} has AscendCL data type {<int>dt}, which has no numpy dtype")
    return TensorSpec(text, dtype, shape, int(nbytes), _FORMATS.get(fmt, str(fmt)))


cdef class _DatasetPair:
    """An input and an output dataset bound to fixed device buffers (kept for reuse)."""
    cdef aclmdlDataset *inputs
    cdef aclmdlDataset *outputs
    cdef list buffers          # aclDataBuffer* as ints, destroyed with the pair
    cdef DeviceBuffer dynamic  # the dynamic-batch input's buffer, or None
    cdef list keep             # device buffers the datasets point into

    def __cinit__(self):
        self.buffers = []
        self.keep = []

    cdef int add(self, aclmdlDataset *dataset, DeviceBuffer buf) except -1:
        cdef const ae_acl_api *t = api()
        cdef aclDataBuffer *db = t.aclCreateDataBuffer(<void *>buf._ptr, buf.nbytes)
        if db is NULL:
            raise MemoryError("aclCreateDataBuffer failed")
        self.buffers.append(<uintptr_t>db)
        self.keep.append(buf)
        check(t.aclmdlAddDatasetBuffer(dataset, db), b"aclmdlAddDatasetBuffer")
        return 0

    cdef destroy(self):
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
        self.keep = []
        if self.dynamic is not None:
            self.dynamic.close()
            self.dynamic = None


cdef class Model(Resource):
    """A model loaded on a device.

    ``Model.load(path, device=0)``; ``inputs`` / ``outputs`` are lists of
    :class:`TensorSpec`; ``batch_sizes`` the dynamic-batch gears (empty for a
    static model).  One loaded model executes one request at a time: calls
    from several threads are serialized.
    """

    cdef uint32_t _id
    cdef aclmdlDesc *_desc
    cdef readonly Device device
    cdef readonly str path
    cdef readonly tuple inputs
    cdef readonly tuple outputs
    cdef readonly tuple batch_sizes
    cdef readonly int dynamic_index
    cdef readonly size_t dynamic_nbytes
    cdef object _own_device
    cdef object _lock
    cdef _DatasetPair _sync
    cdef dict _async_sets

    def __init__(self):
        raise TypeError("use Model.load(path, device=...)")

    @staticmethod
    def load(path, device=0):
        """Load a model file on ``device`` (an id, a Device or a Context)."""
        cdef Model m = Model.__new__(Model)
        cdef Resource owner
        cdef const ae_acl_api *t = api()
        cdef uint32_t model_id = 0
        cdef aclError rc
        cdef bytes bpath
        m.path = str(path)
        m._lock = threading.Lock()
        m._async_sets = {}
        if isinstance(device, (Device, Context)):
            owner = device
            m._own_device = None
        else:
            owner = Device(int(device))
            m._own_device = owner
        m.device = owner if isinstance(owner, Device) else (<Context>owner).device
        owner._activate()
        bpath = m.path.encode()
        cdef const char *cpath = bpath
        with nogil:
            rc = t.aclmdlLoadFromFile(cpath, &model_id)
        if rc != ACL_SUCCESS:
            msg = t.aclGetRecentErrMsg()
            text = msg.decode("utf-8", "replace") if msg is not NULL else ""
            if m._own_device is not None:
                m._own_device.close()
            # a file that is not there is a wrong path, not a model of another kind
            hint = None if os.path.exists(m.path) else (
                "no file at this path (a relative path starts from the current folder)")
            raise _errors.error_class(rc)("aclmdlLoadFromFile", rc, f"model file {m.path!r}: {text}", hint)
        m._id = model_id
        m._ctx = owner._ctx
        # A model that opened its own Device is a root object and closes that
        # device after unloading; otherwise the caller's device owns it.
        m._register(None if m._own_device is not None else owner)
        try:
            m._describe()
        except BaseException:
            m.close()
            raise
        return m

    cdef _describe(self):
        cdef const ae_acl_api *t = api()
        cdef aclmdlBatch batch
        cdef size_t index = 0
        self._desc = t.aclmdlCreateDesc()
        if self._desc is NULL:
            raise MemoryError("aclmdlCreateDesc failed")
        check(t.aclmdlGetDesc(self._desc, self._id), b"aclmdlGetDesc")
        n_in = t.aclmdlGetNumInputs(self._desc)
        n_out = t.aclmdlGetNumOutputs(self._desc)
        memset(&batch, 0, sizeof(batch))
        check(t.aclmdlGetDynamicBatch(self._desc, &batch), b"aclmdlGetDynamicBatch")
        self.batch_sizes = tuple(sorted(int(batch.batch[k]) for k in
                                        range(min(<size_t>batch.batchCount, <size_t>ACL_MAX_BATCH_NUM))))
        self.dynamic_index = -1
        self.dynamic_nbytes = 0
        if self.batch_sizes:
            check(t.aclmdlGetInputIndexByName(self._desc, ACL_DYNAMIC_TENSOR_NAME, &index),
                  b"aclmdlGetInputIndexByName")
            self.dynamic_index = <int>index
            self.dynamic_nbytes = t.aclmdlGetInputSizeByIndex(self._desc, index)
        self.inputs = tuple(_spec(self._desc, i, True) for i in range(n_in) if <int>i != self.dynamic_index)
        self.outputs = tuple(_spec(self._desc, i, False) for i in range(n_out))

    cdef int _release(self) except -1:
        cdef const ae_acl_api *t = api()
        if self._sync is not None:
            self._sync.destroy()
            self._sync = None
        for pair in self._async_sets.values():
            (<_DatasetPair>pair).destroy()
        self._async_sets = {}
        if self._desc is not NULL:
            t.aclmdlDestroyDesc(self._desc)
            self._desc = NULL
        check(t.aclmdlUnload(self._id), b"aclmdlUnload")
        return 0

    def close(self):
        """Unload the model and free what it holds. Idempotent."""
        own, self._own_device = self._own_device, None
        try:
            Resource.close(self)
        finally:
            if own is not None:
                own.close()

    # ---- description ----------------------------------------------------------

    @property
    def model_id(self):
        """The AscendCL model id."""
        self._ensure_open()
        return self._id

    @property
    def device_id(self):
        """Id of the device the model is loaded on."""
        return self.device.id

    @property
    def max_batch(self):
        """Largest batch one execution takes (the largest gear, or the static batch)."""
        if self.batch_sizes:
            return self.batch_sizes[-1]
        return int(self.inputs[0].shape[0]) if self.inputs else 1

    def output_has_batch(self, index):
        """Whether output ``index`` carries one row per batch item.

        In a dynamic-batch model the batch dimension is reported as -1; an
        output without it (a class table, an anchor grid) has a fixed shape
        and is returned whole.  In a static model every output is whole.
        """
        return self.dynamic_index >= 0 and len(self.outputs[index].shape) > 0 \
            and self.outputs[index].shape[0] == -1

    def gear_for(self, rows):
        """The smallest gear holding ``rows`` rows (ValueError above the largest)."""
        for g in self.batch_sizes:
            if g >= rows:
                return g
        raise ValueError(f"batch {rows} exceeds the largest gear {self.max_batch} of {self.path!r}")

    def __repr__(self):
        if self._closed:
            return f"<ascend_engine.Model {self.path!r} closed>"
        ins = ", ".join(f"{s.name}:{s.dtype}{_shape_text(s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{s.name}:{s.dtype}{_shape_text(s.shape)}" for s in self.outputs)
        gears = f" gears={list(self.batch_sizes)}" if self.batch_sizes else ""
        return f"<ascend_engine.Model {self.path!r} id={self._id} device={self.device.id} [{ins}] -> [{outs}]{gears}>"

    # ---- synchronous execution ---------------------------------------------------

    def _check_feeds(self, feeds):
        """Validate feeds against the inputs; returns (arrays in input order, rows)."""
        names = [s.name for s in self.inputs]
        missing = [n for n in names if n not in feeds]
        extra = [n for n in feeds if n not in names]
        if missing or extra:
            raise ValueError(f"model {self.path!r}: inputs are {names}; missing {missing}, unexpected {extra}")
        arrays, rows = [], None
        for spec in self.inputs:
            a = np.asarray(feeds[spec.name])
            if a.dtype != spec.dtype:
                raise ValueError(f"input {spec.name!r}: expected dtype {spec.dtype}, got {a.dtype}")
            if a.ndim != len(spec.shape) or tuple(a.shape[1:]) != tuple(spec.shape[1:]):
                raise ValueError(
                    f"input {spec.name!r}: expected shape {_shape_text(spec.shape)}, got {tuple(a.shape)}")
            if spec.shape[0] != -1 and a.shape[0] != spec.shape[0]:
                raise ValueError(
                    f"input {spec.name!r}: the model is static with batch {spec.shape[0]}, got {a.shape[0]}")
            if rows is None:
                rows = a.shape[0]
            elif a.shape[0] != rows:
                raise ValueError(f"input {spec.name!r}: batch {a.shape[0]} differs from the other inputs' {rows}")
            arrays.append(np.ascontiguousarray(a))
        if rows == 0:
            raise ValueError("inputs have an empty batch")
        return arrays, rows

    cdef _DatasetPair _make_pair(self, list ins, list outs):
        cdef const ae_acl_api *t = api()
        cdef _DatasetPair pair = _DatasetPair()
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

    def __call__(self, **feeds):
        """Run once synchronously on numpy inputs; returns {output name: array}.

        A dynamic-batch model runs each chunk of up to the largest gear at the
        smallest gear that holds it (padding, then slicing the outputs).
        """
        cdef const ae_acl_api *t = api()
        cdef aclError rc
        cdef uint32_t mid
        cdef aclmdlDataset *ins
        cdef aclmdlDataset *outs
        arrays, rows = self._check_feeds(feeds)
        per_row = [self.output_has_batch(k) for k in range(len(self.outputs))]
        results = [np.empty((rows,) + tuple(s.shape[1:]) if batched else tuple(s.shape), dtype=s.dtype)
                   for s, batched in zip(self.outputs, per_row)]
        with self._lock:
            self._activate()
            if self._sync is None:
                self._sync = self._make_pair(
                    [DeviceBuffer(self.device, s.nbytes) for s in self.inputs],
                    [DeviceBuffer(self.device, s.nbytes) for s in self.outputs])
            pair = self._sync
            in_bufs = pair.keep[:len(self.inputs) + (1 if self.dynamic_index >= 0 else 0)]
            in_bufs = [b for b in in_bufs if b is not pair.dynamic]
            out_bufs = pair.keep[len(pair.keep) - len(self.outputs):]
            step = self.max_batch
            for start in range(0, rows, step):
                stop = min(rows, start + step)
                for a, buf in zip(arrays, in_bufs):
                    buf.copy_from(a[start:stop])
                if self.dynamic_index >= 0:
                    check(t.aclmdlSetDynamicBatchSize(self._id, pair.inputs, <size_t>self.dynamic_index,
                                                      <uint64_t>self.gear_for(stop - start)),
                          b"aclmdlSetDynamicBatchSize")
                mid = self._id
                ins = pair.inputs
                outs = pair.outputs
                with nogil:
                    rc = t.aclmdlExecute(mid, ins, outs)
                check(rc, b"aclmdlExecute")
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
                                f"{_shape_text(spec.shape)} and differs between the executions a batch of "
                                f"{rows} rows was split into (largest gear {self.max_batch}): call with at "
                                f"most {self.max_batch} rows to read it")
        return {s.name: r for s, r in zip(self.outputs, results)}

    def execute_async(self, inputs, outputs, Stream stream not None, batch=None):
        """Queue one execution on ``stream`` with device buffers.

        ``inputs`` / ``outputs``: DeviceBuffers in the model's order, each at
        least the TensorSpec's ``nbytes``.  A dynamic-batch model needs
        ``batch`` (rows); it runs at the smallest gear holding them, which is
        returned.  Read the outputs only after the stream is synchronized.
        """
        cdef const ae_acl_api *t = api()
        cdef _DatasetPair pair
        cdef aclError rc
        inputs, outputs = list(inputs), list(outputs)
        if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            raise ValueError(f"model {self.path!r} takes {len(self.inputs)} input and {len(self.outputs)} "
                             f"output buffers, got {len(inputs)} and {len(outputs)}")
        for buf, spec in zip(inputs + outputs, self.inputs + self.outputs):
            if not isinstance(buf, DeviceBuffer):
                raise TypeError(f"tensor {spec.name!r}: expected a DeviceBuffer, got {type(buf).__name__}")
            if (<DeviceBuffer>buf).nbytes < spec.nbytes:
                raise ValueError(f"tensor {spec.name!r}: the buffer holds {(<DeviceBuffer>buf).nbytes} bytes, "
                                 f"the model needs {spec.nbytes}")
        gear = None
        if self.dynamic_index >= 0:
            if batch is None:
                raise ValueError(f"model {self.path!r} has a dynamic batch: pass batch= (gears {list(self.batch_sizes)})")
            gear = self.gear_for(int(batch))
        elif batch is not None and int(batch) != self.max_batch:
            raise ValueError(f"model {self.path!r} is static with batch {self.max_batch}, got batch={batch}")
        with self._lock:
            self._activate()
            key = tuple(id(b) for b in inputs + outputs)
            pair = self._async_sets.get(key)
            if pair is None:
                # Datasets are cached per set of buffers (for the model's
                # lifetime): queued executions may still use older ones, so
                # none is freed before close().  Reuse buffers across calls.
                pair = self._make_pair(inputs, outputs)
                self._async_sets[key] = pair
            if gear is not None:
                check(t.aclmdlSetDynamicBatchSize(self._id, pair.inputs, <size_t>self.dynamic_index,
                                                  <uint64_t>gear), b"aclmdlSetDynamicBatchSize")
            rc = t.aclmdlExecuteAsync(self._id, pair.inputs, pair.outputs, stream._handle)
            check(rc, b"aclmdlExecuteAsync")
        return gear
