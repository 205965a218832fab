# Included by _model_base.pyx: what a loaded model is, read from its descriptor: every input's
# and output's TensorSpec, and its dynamic mechanism (batch, image-size or dims gears, or
# shape ranges).  The functions are Model's methods' bodies and take the Model as self.


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
    if (is_input and t.aclmdlGetInputDimsV2 is not NULL and all(d >= 0 for d in shape)
            and math.prod(shape) * dtype.itemsize != nbytes):
        # a static-AIPP input: aclmdlGetInputDims gives the source image's n, h, w, c, and
        # aclmdlGetInputDimsV2 the dims of its bytes (YUV420SP: n, h * 1.5, w, 1), whose
        # product is the input size (docs/simulator.md, "Static AIPP")
        memset(&dims, 0, sizeof(dims))
        if t.aclmdlGetInputDimsV2(desc, i, &dims) == 0:
            shape = tuple(int(dims.dims[k]) for k in range(min(<size_t>dims.dimCount, <size_t>ACL_MAX_DIM_CNT)))
    return TensorSpec(text, dtype, shape, int(nbytes), _FORMATS.get(fmt, str(fmt)))


cdef _describe(Model self):
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
    # the kind is chosen once, here: every later difference between the kinds is its object's
    cdef size_t gear_count = 0
    cdef _Kind kind = _new_kind("batch") if self.batch_sizes else _hw_or_dims_kind(self, &gear_count)
    if kind.has_tensor:
        checked_aclmdlGetInputIndexByName(self._desc, ACL_DYNAMIC_TENSOR_NAME, &index)
        self.dynamic_index = <int>index
        self.dynamic_nbytes = t.aclmdlGetInputSizeByIndex(self._desc, index)
    self.inputs = tuple(_spec(self._desc, i, True) for i in range(n_in) if <int>i != self.dynamic_index)
    self.outputs = tuple(_spec(self._desc, i, False) for i in range(n_out))
    if not kind.has_tensor and any(d == -1 for s in self.inputs for d in s.shape):
        kind = _new_kind("range")
    kind.describe(self, gear_count)
    self._kind = kind
    self.dynamic_kind = kind.name


cdef _Kind _hw_or_dims_kind(Model self, size_t *count):
    """Image-size gears (aclmdlGetDynamicHW), dims gears (their number in ``count``), or none
    (a static kind)."""
    cdef const ae_acl_api *t = api()
    cdef aclmdlHW hw
    cdef size_t minus_one = <size_t>-1
    if t.aclmdlGetDynamicHW is not NULL:
        memset(&hw, 0, sizeof(hw))
        checked_aclmdlGetDynamicHW(self._desc, minus_one, &hw)
        if hw.hwCount:
            self.hw_sizes = tuple((int(hw.hw[k][0]), int(hw.hw[k][1]))
                                  for k in range(min(<size_t>hw.hwCount, <size_t>ACL_MAX_HW_NUM)))
            return _new_kind("hw")
    if t.aclmdlGetInputDynamicGearCount is not NULL:
        checked_aclmdlGetInputDynamicGearCount(self._desc, minus_one, count)
        if count[0]:
            return _new_kind("dims")
    return _new_kind("static")


cdef _describe_dims(Model self, size_t count):
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


cdef _describe_ranges(Model self):
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
