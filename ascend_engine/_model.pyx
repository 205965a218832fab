# cython: language_level=3
"""Models: load a model file, describe its tensors, execute it.

``Model.load(path, device=0)`` loads with ``aclmdlLoadFromFile`` (or, with
``weights=``, ``aclmdlLoadFromFileWithMem`` on a caller-placed weight
allocation; ``Model.load_instances`` loads k copies sharing one) and reads
every tensor's name, dtype, dims and size from the model's descriptor, and
its dynamic mechanism: batch gears, image-size (HW) gears, dims gears or
shape ranges.  ``model(x=array)`` runs once synchronously: it picks the gear
from the arrays' shapes (padding up to it and slicing the outputs back), or
describes a shape-range model's inputs; ``execute_async`` queues an execution
on device buffers (at a batch, a gear or input shapes).
"""

from collections import namedtuple
import os
import threading

import numpy as np

from libc.stdint cimport int64_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memset
from cpython.mem cimport PyMem_Malloc, PyMem_Free

from ascend_engine._acl cimport *
# api(), check(), the checked_<name> / require_<name> AscendCL wrappers, and the
# runtime's classes and handle accessors (see ascend_engine/_runtime.pxd).
from ascend_engine._runtime cimport *

from ascend_engine import errors as _errors
from ascend_engine._feeds import check_feeds, shape_text
from ascend_engine._checks import positive_int
from ascend_engine.shapes import holding_gear, pad_to as _pad_to

# Dataset pairs execute_async keeps per model for the buffer sets it was
# given, so that a caller cycling through a few sets of buffers (one per
# request slot) creates its datasets once.  Beyond this many sets, the least
# recently used pairs are released.
ASYNC_DATASETS_CACHED = 64

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


cdef object _spec(aclmdlDesc *desc, size_t i, bint is_input):
    cdef const ae_acl_api *t = api()
    cdef aclmdlIODims dims
    cdef const char *name
    cdef aclDataType dt
    cdef size_t nbytes
    cdef int fmt = -1
    memset(&dims, 0, sizeof(dims))
    if is_input:
        checked_aclmdlGetInputDims(desc, i, &dims)
        name = t.aclmdlGetInputNameByIndex(desc, i)
        dt = t.aclmdlGetInputDataType(desc, i)
        nbytes = t.aclmdlGetInputSizeByIndex(desc, i)
        if t.aclmdlGetInputFormat is not NULL:
            fmt = <int>t.aclmdlGetInputFormat(desc, i)
    else:
        checked_aclmdlGetOutputDims(desc, i, &dims)
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
    """An input and an output dataset bound to fixed device buffers (kept for reuse).

    The pair keeps the buffers its datasets point into alive; it closes them
    too when it owns them (staging buffers the model allocated itself).  A
    pair dropped without destroy() (one evicted from a model's cache once the
    streams that ran it no longer hold it) is destroyed when collected.
    """
    cdef aclmdlDataset *inputs
    cdef aclmdlDataset *outputs
    cdef list buffers          # aclDataBuffer* as ints, destroyed with the pair
    cdef DeviceBuffer dynamic  # the dynamic-batch input's buffer, or None
    cdef list keep             # device buffers the datasets point into
    cdef bint owns             # destroy() closes the buffers in keep

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


class _SharedWeights:
    """One device allocation holding a model file's weights, used by every
    instance loaded on it.  An allocation the engine made (``owned``) is
    freed when the last instance is unloaded, with the Device opened for it;
    a caller's DeviceBuffer stays the caller's."""

    __slots__ = ("buffer", "path", "owned", "own_device", "users")

    def __init__(self, buffer, path, owned, own_device=None):
        self.buffer = buffer
        self.path = path
        self.owned = owned
        self.own_device = own_device
        self.users = 0

    def release(self):
        self.users -= 1
        if self.users == 0 and self.owned:
            try:
                self.buffer.close()
            finally:
                if self.own_device is not None:
                    self.own_device.close()


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


cdef class Model(Resource):
    """A model loaded on a device.

    ``Model.load(path, device=0)``; ``inputs`` / ``outputs`` are lists of
    :class:`TensorSpec`.  The dynamic mechanism (``dynamic_kind``: "static",
    "batch", "hw", "dims" or "range") and its gears: ``batch_sizes`` (batch
    gears), ``hw_sizes`` ((height, width) gears), ``dims_gears`` (one dict
    {input name: shape} per gear), ``shape_ranges`` ({input name: ((min,
    max), ...) per dimension}, max -1 unbounded); each is empty unless it is
    the model's mechanism.  One loaded model executes one request at a time:
    calls from several threads are serialized.  To run one model on several
    streams at once, load it several times: ``Model.load_instances(path, k)``
    gives k models that share one copy of the weights on the device.
    """

    cdef uint32_t _id
    cdef aclmdlDesc *_desc
    cdef readonly Device device
    cdef readonly str path
    cdef readonly tuple inputs
    cdef readonly tuple outputs
    cdef readonly tuple batch_sizes
    cdef readonly tuple hw_sizes
    cdef readonly tuple dims_gears
    cdef readonly dict shape_ranges
    cdef readonly str dynamic_kind
    cdef readonly int dynamic_index
    cdef object _follow
    cdef public object range_output_nbytes
    cdef readonly size_t dynamic_nbytes
    cdef object _own_device
    cdef object _lock
    cdef _DatasetPair _sync
    cdef dict _async_sets
    cdef object _weights       # _SharedWeights when the weights are caller-placed, else None

    def __init__(self):
        raise TypeError("use Model.load(path, device=...)")

    @staticmethod
    def query_size(path):
        """``(work_bytes, weight_bytes)`` a model file needs on the device (``aclmdlQuerySize``)."""
        cdef const ae_acl_api *t = api()
        cdef size_t work = 0, weight = 0
        cdef aclError rc
        require_aclmdlQuerySize()
        bpath = str(path).encode()
        cdef const char *cpath = bpath
        with nogil:
            rc = t.aclmdlQuerySize(cpath, &work, &weight)
        if rc != ACL_SUCCESS:
            msg = t.aclGetRecentErrMsg()
            text = msg.decode("utf-8", "replace") if msg is not NULL else ""
            raise _errors.error_class(rc)("aclmdlQuerySize", rc, f"model file {str(path)!r}: {text}")
        return int(work), int(weight)

    @staticmethod
    def load_instances(path, instances, device=0):
        """Load a model file ``instances`` times sharing one copy of its weights.

        Returns a tuple of Models: distinct model ids (each may run on its
        own stream, concurrently with the others), each with its own work
        memory, all reading one weight allocation made here
        (``aclmdlQuerySize``, ``aclrtMalloc``, ``aclmdlLoadFromFileWithMem``),
        which is freed when the last of them is closed.
        """
        cdef Resource owner
        instances = positive_int(instances, "instances", 1024)
        _work, weight = Model.query_size(path)
        own_device = None
        if isinstance(device, (Device, Context)):
            owner = device
        else:
            own_device = Device(int(device))
            owner = own_device
        try:
            buf = DeviceBuffer(owner, max(weight, 1))
        except BaseException:
            if own_device is not None:
                own_device.close()
            raise
        shared = _SharedWeights(buf, str(path), True, own_device)
        models = []
        try:
            for _ in range(instances):
                models.append(Model._load(path, device, shared))
        except BaseException:
            for m in reversed(models):
                m.close()
            if not models:
                shared.users = 1
                shared.release()
            raise
        return tuple(models)

    @staticmethod
    def load(path, device=0, weights=None):
        """Load a model file on ``device`` (an id, a Device or a Context).

        ``weights`` places the model's weights in memory the caller chose
        (``aclmdlLoadFromFileWithMem``): a DeviceBuffer of at least
        ``Model.query_size(path)[1]`` bytes on the same device (the caller's:
        it must stay open while the model lives), or a Model loaded that way
        from the same file, whose weight memory is then shared.  The model
        keeps that memory referenced; work memory is the model's own.
        """
        if weights is None:
            return Model._load(path, device, None)
        if isinstance(weights, Model):
            shared = (<Model>weights)._weights
            if shared is None:
                raise ValueError(f"weights: model {weights.path!r} holds its weights in runtime-managed memory; "
                                 "only a model loaded with weights= or by Model.load_instances can share its own")
            if not _same_file(shared.path, str(path)):
                raise ValueError(f"weights: the weights of {shared.path!r} cannot serve model file {str(path)!r}; "
                                 "instances share weights only when they load the same file")
            if not isinstance(shared.buffer, DeviceBuffer) or shared.buffer.closed:
                raise ValueError(f"weights: the weight memory of {shared.path!r} has been freed")
        elif isinstance(weights, DeviceBuffer):
            if weights.closed:
                raise ValueError("weights: the DeviceBuffer is closed")
            shared = _SharedWeights(weights, str(path), False)
        else:
            raise TypeError(f"weights must be None, a DeviceBuffer or a Model, got {type(weights).__name__}")
        return Model._load(path, device, shared)

    @staticmethod
    def _load(path, device, shared):
        cdef Model m = Model.__new__(Model)
        cdef Resource owner
        cdef const ae_acl_api *t = api()
        cdef uint32_t model_id = 0
        cdef aclError rc
        cdef bytes bpath
        cdef void *wptr = NULL
        cdef size_t wsize = 0
        if shared is not None:
            require_aclmdlLoadFromFileWithMem()
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
        fn = "aclmdlLoadFromFile"
        if shared is not None:
            fn = "aclmdlLoadFromFileWithMem"
            wptr = buffer_ptr(<DeviceBuffer>shared.buffer)   # checked: the weights are open
            wsize = (<DeviceBuffer>shared.buffer).nbytes
        with nogil:
            if wptr is NULL:
                rc = t.aclmdlLoadFromFile(cpath, &model_id)
            else:
                rc = t.aclmdlLoadFromFileWithMem(cpath, &model_id, NULL, 0, wptr, wsize)
        if rc != ACL_SUCCESS:
            msg = t.aclGetRecentErrMsg()
            text = msg.decode("utf-8", "replace") if msg is not NULL else ""
            if m._own_device is not None:
                m._own_device.close()
            # a file that is not there is a wrong path, not a model of another kind
            hint = None if os.path.exists(m.path) else (
                "no file at this path (a relative path starts from the current folder)")
            raise _errors.error_class(rc)(fn, rc, f"model file {m.path!r}: {text}", hint)
        m._id = model_id
        if shared is not None:
            m._weights = shared
            shared.users += 1
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
        checked_aclmdlGetDesc(self._desc, self._id)
        n_in = t.aclmdlGetNumInputs(self._desc)
        n_out = t.aclmdlGetNumOutputs(self._desc)
        memset(&batch, 0, sizeof(batch))
        checked_aclmdlGetDynamicBatch(self._desc, &batch)
        self.batch_sizes = tuple(sorted(int(batch.batch[k]) for k in
                                        range(min(<size_t>batch.batchCount, <size_t>ACL_MAX_BATCH_NUM))))
        self.dynamic_index = -1
        self.dynamic_nbytes = 0
        self.hw_sizes = ()
        self.dims_gears = ()
        self.shape_ranges = {}
        self.range_output_nbytes = None
        self._follow = None
        self.dynamic_kind = "batch" if self.batch_sizes else "static"
        gear_count = 0
        if not self.batch_sizes:
            gear_count = self._describe_hw_or_count()
        if self.dynamic_kind != "static":
            checked_aclmdlGetInputIndexByName(self._desc, ACL_DYNAMIC_TENSOR_NAME, &index)
            self.dynamic_index = <int>index
            self.dynamic_nbytes = t.aclmdlGetInputSizeByIndex(self._desc, index)
        self.inputs = tuple(_spec(self._desc, i, True) for i in range(n_in) if <int>i != self.dynamic_index)
        self.outputs = tuple(_spec(self._desc, i, False) for i in range(n_out))
        if self.dynamic_kind == "dims":
            self._describe_dims(gear_count)
        elif self.dynamic_kind == "static" and any(d == -1 for s in self.inputs for d in s.shape):
            self._describe_ranges()

    cdef size_t _describe_hw_or_count(self) except? 0:
        """Image-size gears (aclmdlGetDynamicHW) or the number of dims gears; sets dynamic_kind."""
        cdef const ae_acl_api *t = api()
        cdef aclmdlHW hw
        cdef size_t count = 0
        cdef size_t minus_one = <size_t>-1
        if t.aclmdlGetDynamicHW is not NULL:
            memset(&hw, 0, sizeof(hw))
            checked_aclmdlGetDynamicHW(self._desc, minus_one, &hw)
            if hw.hwCount:
                self.hw_sizes = tuple((int(hw.hw[k][0]), int(hw.hw[k][1]))
                                      for k in range(min(<size_t>hw.hwCount, <size_t>ACL_MAX_HW_NUM)))
                self.dynamic_kind = "hw"
                return 0
        if t.aclmdlGetInputDynamicGearCount is not NULL:
            checked_aclmdlGetInputDynamicGearCount(self._desc, minus_one, &count)
            if count:
                self.dynamic_kind = "dims"
        return count

    cdef _describe_dims(self, size_t count):
        """Dims gears from aclmdlGetInputDynamicDims: every input's shape per gear, concatenated."""
        cdef size_t minus_one = <size_t>-1
        cdef aclmdlIODims *gears
        require_aclmdlGetInputDynamicDims()
        gears = <aclmdlIODims *>PyMem_Malloc(count * sizeof(aclmdlIODims))
        if gears is NULL:
            raise MemoryError()
        try:
            memset(gears, 0, count * sizeof(aclmdlIODims))
            checked_aclmdlGetInputDynamicDims(self._desc, minus_one, gears, count)
            out = []
            for g in range(count):
                flat = [int(gears[g].dims[k])
                        for k in range(min(<size_t>gears[g].dimCount, <size_t>ACL_MAX_DIM_CNT))]
                shapes, at = {}, 0
                for spec in self.inputs:
                    shapes[spec.name] = tuple(flat[at:at + len(spec.shape)])
                    at += len(spec.shape)
                out.append(shapes)
        finally:
            PyMem_Free(gears)
        self.dims_gears = tuple(out)

    cdef _describe_ranges(self):
        """A shape-range model: each input's (min, max) per dimension from aclmdlGetInputDimsRange."""
        cdef aclmdlIODimsRange r
        require_aclmdlGetInputDimsRange()
        ranges = {}
        for i, spec in enumerate(self.inputs):
            memset(&r, 0, sizeof(r))
            checked_aclmdlGetInputDimsRange(self._desc, i, &r)
            ranges[spec.name] = tuple((int(r.range[k][0]), int(r.range[k][1]))
                                      for k in range(min(<size_t>r.rangeCount, <size_t>ACL_MAX_DIM_CNT)))
        self.shape_ranges = ranges
        self.dynamic_kind = "range"

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
        shared, self._weights = self._weights, None
        try:
            checked_aclmdlUnload(self._id)
        finally:
            if shared is not None:
                shared.release()   # after the unload: the last instance frees the weights
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
    def weights(self):
        """The DeviceBuffer holding the weights when they are caller-placed
        (``weights=`` or ``load_instances``), else None (runtime-managed)."""
        return None if self._weights is None else self._weights.buffer

    @property
    def weight_sharers(self):
        """How many loaded models use this model's weight memory (1 when it is its own)."""
        return 1 if self._weights is None else self._weights.users

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
        found = holding_gear([(g, ((g,),)) for g in self.batch_sizes], ((rows,),))
        if found is not None:
            return found[0]
        raise ValueError(f"batch {rows} exceeds the largest gear {self.max_batch} of {self.path!r}")

    def __repr__(self):
        if self._closed:
            return f"<ascend_engine.Model {self.path!r} closed>"
        ins = ", ".join(f"{s.name}:{s.dtype}{shape_text(s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{s.name}:{s.dtype}{shape_text(s.shape)}" for s in self.outputs)
        gears = f" gears={list(self.batch_sizes)}" if self.batch_sizes else ""
        return f"<ascend_engine.Model {self.path!r} id={self._id} device={self.device.id} [{ins}] -> [{outs}]{gears}>"

    # ---- synchronous execution ---------------------------------------------------

    def _check_feeds(self, feeds):
        """Validate feeds against the inputs; returns (arrays in input order, rows)."""
        return check_feeds(feeds, [(s.name, s.dtype, s.shape) for s in self.inputs], f"model {self.path!r}")

    cdef _DatasetPair _staging_pair(self):
        """A dataset pair over new device buffers of the descriptor's sizes, which the pair owns."""
        bufs = []
        try:
            for spec in self.inputs + self.outputs:
                bufs.append(DeviceBuffer(self.device, spec.nbytes))
            return self._make_pair(bufs[:len(self.inputs)], bufs[len(self.inputs):], True)
        except BaseException:
            for buf in bufs:
                buf.close()
            raise

    cdef _DatasetPair _async_pair(self, list inputs, list outputs):
        """The datasets over these buffers, kept across calls (lock held).
        Keyed by the buffers' serials, which unlike id() are never reused."""
        key = tuple((<Resource>b)._serial for b in inputs + outputs)
        pair = self._async_sets.pop(key, None)
        if pair is None:
            self._trim_async_sets()
            pair = self._make_pair(inputs, outputs)
        self._async_sets[key] = pair     # most recently used last
        return pair

    cdef _DatasetPair _make_pair(self, list ins, list outs, bint owns=False):
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

    def __call__(self, **feeds):
        """Run once synchronously on numpy inputs; returns {output name: array}.

        A dynamic-batch model runs each chunk of up to the largest gear at the
        smallest gear that holds it (padding, then slicing the outputs).  An
        image-size or dims-gear model runs at the smallest gear holding every
        input's shape: the inputs are padded with zeros up to it (after the
        data, at the end of each dimension) and every output dimension that
        follows an input dimension across the gears is sliced back to the
        request's size; the others keep the gear's size.  A shape-range model
        gets its inputs' shapes as tensor descriptions, and each output comes
        back with the shape the execution reports (``range_output_nbytes``,
        if set, is the first capacity tried for each output buffer).
        """
        api()
        cdef uint32_t mid
        cdef aclmdlDataset *ins
        cdef aclmdlDataset *outs
        if self.dynamic_kind in ("hw", "dims"):
            return self._call_gear(feeds)
        if self.dynamic_kind == "range":
            return self._call_range(feeds)
        arrays, rows = self._check_feeds(feeds)
        per_row = [self.output_has_batch(k) for k in range(len(self.outputs))]
        results = [np.empty((rows,) + tuple(s.shape[1:]) if batched else tuple(s.shape), dtype=s.dtype)
                   for s, batched in zip(self.outputs, per_row)]
        with self._lock:
            self._activate()
            if self._sync is None:
                self._sync = self._staging_pair()
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
                    checked_aclmdlSetDynamicBatchSize(self._id, pair.inputs, <size_t>self.dynamic_index,
                                                      <uint64_t>self.gear_for(stop - start))
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

    # ---- image-size, dims-gear and shape-range models --------------------------------

    def _shaped_arrays(self, feeds):
        """Feeds in input order, checked for names, dtypes, ranks and fixed dimensions."""
        return check_feeds(feeds, [(s.name, s.dtype, s.shape) for s in self.inputs], f"model {self.path!r}",
                           batched=False)[0]

    def gear_shapes(self, feeds):
        """The gear a call with these feeds runs at: (gear, {input name: padded shape}).

        ``gear`` is (height, width) for an image-size model, the gear's index in
        ``dims_gears`` for a dims-gear model.  ValueError when no gear holds them.
        """
        arrays = self._shaped_arrays(feeds)
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

    cdef int _set_gear(self, aclmdlDataset *dataset, gear) except -1:
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

    cdef tuple _cur_output_shape(self, size_t k):
        cdef aclmdlIODims dims
        memset(&dims, 0, sizeof(dims))
        checked_aclmdlGetCurOutputDims(self._desc, k, &dims)
        return tuple(int(dims.dims[i]) for i in range(min(<size_t>dims.dimCount, <size_t>ACL_MAX_DIM_CNT)))

    def _gear_list(self):
        if self.dynamic_kind == "hw":
            return list(self.hw_sizes)
        return list(range(len(self.dims_gears)))

    def _input_dim(self, gear, i, k):
        if self.dynamic_kind == "hw":
            dyn = [j for j, d in enumerate(self.inputs[i].shape) if d == -1]
            return gear[dyn.index(k)]
        return self.dims_gears[gear][self.inputs[i].name][k]

    cdef _learn_follow(self, _DatasetPair pair):
        """Which input dimension each dynamic output dimension follows across the gears (None: none)."""
        per_gear = []
        for gear in self._gear_list():
            self._set_gear(pair.inputs, gear)
            per_gear.append((gear, [self._cur_output_shape(k) for k in range(len(self.outputs))]))
        slots = [(i, k) for i, spec in enumerate(self.inputs) for k, d in enumerate(spec.shape) if d == -1]
        follow = []
        for o, spec in enumerate(self.outputs):
            dims = []
            for j, d in enumerate(spec.shape):
                found = None
                if d == -1:
                    for i, k in slots:
                        if all(shapes[o][j] == self._input_dim(gear, i, k) for gear, shapes in per_gear):
                            found = (i, k)
                            break
                dims.append(found)
            follow.append(dims)
        self._follow = follow

    def gear_io_shapes(self):
        """Every gear's input and output shapes: {gear: (input shapes, output shapes)}.

        For an image-size or dims-gear model: ``gear`` as in :meth:`gear_shapes`
        ((height, width), or the index in ``dims_gears``); the input shapes in
        input order, the output shapes as ``aclmdlGetCurOutputDims`` reports
        them with that gear set (what a buffer of the gear holds).  ValueError
        for other models.
        """
        cdef _DatasetPair pair
        if self.dynamic_kind not in ("hw", "dims"):
            raise ValueError(f"model {self.path!r} has {self.dynamic_kind} shapes, not image-size or dims "
                             "gears")
        out = {}
        with self._lock:
            self._activate()
            if self._sync is None:
                self._sync = self._staging_pair()
            pair = self._sync
            if self._follow is None:
                self._learn_follow(pair)
            for gear in self._gear_list():
                self._set_gear(pair.inputs, gear)
                ins = tuple(tuple(self._input_dim(gear, i, k) if d == -1 else d for k, d in enumerate(spec.shape))
                            for i, spec in enumerate(self.inputs))
                out[gear] = (ins, tuple(self._cur_output_shape(k) for k in range(len(self.outputs))))
        return out

    @property
    def output_follow(self):
        """Per output, per dimension: the (input index, dimension) it follows
        across the gears, or None (it keeps the gear's size).  An output sliced
        back to a request's size cuts exactly the dimensions that follow an
        input.  Image-size and dims-gear models only (else None)."""
        if self.dynamic_kind not in ("hw", "dims"):
            return None
        if self._follow is None:
            self.gear_io_shapes()
        return tuple(tuple(dims) for dims in self._follow)

    def _call_gear(self, feeds):
        cdef uint32_t mid
        cdef aclmdlDataset *ins
        cdef aclmdlDataset *outs
        cdef _DatasetPair pair
        arrays = self._shaped_arrays(feeds)
        gear, shapes = self.gear_shapes(feeds)
        with self._lock:
            self._activate()
            if self._sync is None:
                self._sync = self._staging_pair()
            pair = self._sync
            in_bufs = [b for b in pair.keep[:len(self.inputs) + 1] if b is not pair.dynamic]
            out_bufs = pair.keep[len(pair.keep) - len(self.outputs):]
            if self._follow is None:
                self._learn_follow(pair)
            for spec, a, buf in zip(self.inputs, arrays, in_bufs):
                buf.copy_from(_pad_to(a, shapes[spec.name]))
            self._set_gear(pair.inputs, gear)
            mid = self._id
            ins = pair.inputs
            outs = pair.outputs
            with nogil:
                checked_aclmdlExecute(mid, ins, outs)
            results = {}
            for k, (spec, buf) in enumerate(zip(self.outputs, out_bufs)):
                r = np.empty(self._cur_output_shape(k), dtype=spec.dtype)
                buf.copy_to(r, nbytes=r.nbytes)
                cut = tuple(slice(0, arrays[f[0]].shape[f[1]]) if f is not None else slice(None)
                            for f in self._follow[k])
                results[spec.name] = np.ascontiguousarray(r[cut])
        return results

    cdef _describe_input(self, aclmdlDataset *dataset, size_t i, tuple shape):
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

    cdef tuple _dataset_shape(self, aclmdlDataset *dataset, size_t k):
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

    def _call_range(self, feeds):
        arrays = self._shaped_arrays(feeds)
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
                return self._run_range(arrays, ins_bufs, cap)
            finally:
                for buf in ins_bufs:
                    buf.close()

    cdef _run_range(self, list arrays, list ins_bufs, cap):
        """Execute a shape-range model on filled input buffers (lock held), growing the outputs until they fit."""
        cdef const ae_acl_api *t = api()
        cdef aclError rc = ACL_SUCCESS
        cdef uint32_t mid
        cdef aclmdlDataset *ins
        cdef aclmdlDataset *outs
        cdef _DatasetPair pair
        for attempt in range(24):
            # an output's size is known only after the execution: grow the buffers until they hold it
            outs_sizes = [s.nbytes if s.nbytes and -1 not in s.shape else cap for s in self.outputs]
            out_bufs = []
            pair = None
            try:
                for n in outs_sizes:
                    out_bufs.append(DeviceBuffer(self.device, n))
                pair = self._make_pair(ins_bufs, out_bufs)
                for i, a in enumerate(arrays):
                    self._describe_input(pair.inputs, i, tuple(a.shape))
                mid = self._id
                ins = pair.inputs
                outs = pair.outputs
                with nogil:
                    rc = t.aclmdlExecute(mid, ins, outs)
                if rc == 100018 and attempt < 23:   # ACL_ERROR_MODEL_OUTPUT_NOT_MATCH
                    cap *= 2
                    continue
                check(rc, b"aclmdlExecute")
                results = {}
                for k, (spec, buf) in enumerate(zip(self.outputs, out_bufs)):
                    r = np.empty(self._dataset_shape(pair.outputs, k), dtype=spec.dtype)
                    buf.copy_to(r, nbytes=r.nbytes)
                    results[spec.name] = r
                return results
            finally:
                if pair is not None:
                    pair.destroy()
                for buf in out_bufs:
                    buf.close()

    def execute_async(self, inputs, outputs, Stream stream not None, batch=None, *, gear=None, shapes=None):
        """Queue one execution on ``stream`` with device buffers.

        ``inputs`` / ``outputs``: DeviceBuffers in the model's order, each at
        least the TensorSpec's ``nbytes``.  A dynamic-batch model needs
        ``batch`` (rows); it runs at the smallest gear holding them, which is
        returned.  An image-size model needs ``gear=(height, width)``, one of
        ``hw_sizes``; a dims-gear model ``gear=`` the gear's index in
        ``dims_gears``; a shape-range model ``shapes=`` one shape per input
        (inside ``shape_ranges``), with output buffers large enough for what
        those shapes produce.  Read the outputs only after the stream is
        synchronized.
        """
        api()
        cdef _DatasetPair pair
        cdef aclrtStream s = stream_handle(stream)   # a closed stream stops here, before any AscendCL call
        if batch is not None:   # rows, never truncated or parsed: 2.7, '4' and True are refused
            batch = positive_int(batch, f"model {self.path!r}: batch")
        if self.dynamic_kind in ("hw", "dims", "range"):
            return self._execute_shaped_async(list(inputs), list(outputs), stream, gear, shapes)
        if gear is not None or shapes is not None:
            raise ValueError(f"model {self.path!r} has {self.dynamic_kind} shapes: gear= and shapes= are for "
                             "image-size, dims-gear and shape-range models")
        inputs, outputs = list(inputs), list(outputs)
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
        gear = None
        if self.dynamic_index >= 0:
            if batch is None:
                raise ValueError(f"model {self.path!r} has a dynamic batch: pass batch= (gears {list(self.batch_sizes)})")
            gear = self.gear_for(batch)
        elif batch is not None and batch != self.max_batch:
            raise ValueError(f"model {self.path!r} is static with batch {self.max_batch}, got batch={batch}")
        with self._lock:
            self._activate()
            pair = self._async_pair(inputs, outputs)
            if gear is not None:
                checked_aclmdlSetDynamicBatchSize(self._id, pair.inputs, <size_t>self.dynamic_index, <uint64_t>gear)
            checked_aclmdlExecuteAsync(self._id, pair.inputs, pair.outputs, s)
            # The execution reads the datasets (and the buffers they point
            # into) until it has run: the stream holds them until synchronized.
            stream._keep(pair)
        return gear

    def _execute_shaped_async(self, list inputs, list outputs, Stream stream, gear, shapes):
        """execute_async for image-size, dims-gear and shape-range models (see there)."""
        cdef _DatasetPair pair
        cdef aclrtStream s = stream_handle(stream)
        if self.dynamic_kind == "hw" and isinstance(gear, list):
            gear = tuple(gear)
        if self.dynamic_kind == "range":
            if gear is not None or shapes is None or len(shapes) != len(self.inputs):
                raise ValueError(f"model {self.path!r} has shape ranges: pass shapes= (one shape per input, "
                                 f"{len(self.inputs)} in all), not gear=")
        elif shapes is not None or gear is None or gear not in self._gear_list():
            allowed = list(self.hw_sizes) if self.dynamic_kind == "hw" else \
                f"indexes 0..{len(self.dims_gears) - 1} of dims_gears"
            raise ValueError(f"model {self.path!r} has {'image-size' if self.dynamic_kind == 'hw' else 'dims'} "
                             f"gears: pass gear= one of {allowed}, got {gear!r}")
        if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            raise ValueError(f"model {self.path!r} takes {len(self.inputs)} input and {len(self.outputs)} "
                             f"output buffers, got {len(inputs)} and {len(outputs)}")
        need = [spec.nbytes for spec in self.inputs + self.outputs]
        if self.dynamic_kind == "range":
            shapes = [tuple(int(d) for d in shape) for shape in shapes]
            for k, (spec, shape) in enumerate(zip(self.inputs, shapes)):
                ranges = self.shape_ranges[spec.name]
                if len(shape) != len(ranges) or any(n < lo or (hi != -1 and n > hi)
                                                    for n, (lo, hi) in zip(shape, ranges)):
                    raise ValueError(f"input {spec.name!r}: shape {shape} is outside the model's ranges "
                                     f"{[(lo, 'any' if hi == -1 else hi) for lo, hi in ranges]}")
                need[k] = int(np.prod(shape)) * spec.dtype.itemsize
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
            pair = self._async_pair(inputs, outputs)
            if self.dynamic_kind == "range":
                for i, shape in enumerate(shapes):
                    self._describe_input(pair.inputs, i, shape)
            else:
                self._set_gear(pair.inputs, gear)
            checked_aclmdlExecuteAsync(self._id, pair.inputs, pair.outputs, s)
            stream._keep(pair)
        return gear if gear is not None else shapes

    cdef _trim_async_sets(self):
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
