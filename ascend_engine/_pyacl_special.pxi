# The pyACL functions of ascend_engine.acl that are not one C call with plain
# arguments (included by _pyacl.pyx after the generated ones): init, host
# callbacks and threads, the pointer helpers, dims as lists and dicts.


def _init(config_path=None):
    """acl.init(config_path=None) -> ret: aclInit (a config file path, or none)."""
    global _init_claimed
    cdef bytes path = None if config_path is None or config_path == "" else _cstr(config_path, "acl.init",
                                                                                    "config_path")
    cdef const char *c = NULL
    if path is not None:
        c = path
    cdef aclError rc
    _api()
    with nogil:
        rc = _t.aclInit(c)
    # The loader's "auto" probe of a real libascendcl.so called aclInit itself: the
    # program's first acl.init() is the one it stands for.
    if rc == ACL_ERROR_REPEAT_INITIALIZE and _loader_initialized and not _init_claimed:
        rc = ACL_SUCCESS
    if rc == ACL_SUCCESS:
        _init_claimed = True
    return rc


def _get_recent_err_msg():
    """acl.get_recent_err_msg() -> str: aclGetRecentErrMsg ("" when there is none)."""
    _api()
    return _pystr(_t.aclGetRecentErrMsg())


def _get_soc_name():
    """acl.get_soc_name() -> str: aclrtGetSocName ("" when the library lacks it)."""
    _api()
    if _t.aclrtGetSocName is NULL:
        return ""
    return _pystr(_t.aclrtGetSocName())


def _get_data_buffer_size(data_buffer):
    """acl.get_data_buffer_size(data_buffer) -> size: the buffer's size (aclGetDataBufferSizeV2)."""
    cdef aclDataBuffer *b = <aclDataBuffer *>_ptr(data_buffer, "acl.get_data_buffer_size", "data_buffer")
    _api()
    return _t.aclGetDataBufferSizeV2(b)


def _create_tensor_desc(data_type, dims, format):
    """acl.create_tensor_desc(data_type, dims, format) -> tensor_desc: aclCreateTensorDesc (dims a list)."""
    fn = "acl.create_tensor_desc"
    cdef aclDataType dt = <aclDataType>_sint(data_type, INT32_MIN, INT32_MAX, fn, "data_type")
    cdef aclFormat fmt = <aclFormat>_sint(format, INT32_MIN, INT32_MAX, fn, "format")
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"{fn}: argument 'dims' must be a list of ints, got {_tname(dims)}")
    if len(dims) > ACL_MAX_DIM_CNT:
        raise OverflowError(f"{fn}: argument 'dims' has {len(dims)} dims, more than {ACL_MAX_DIM_CNT}")
    cdef int64_t values[128]
    for i, v in enumerate(dims):
        values[i] = _sint(v, INT64_MIN, INT64_MAX, fn, f"dims[{i}]")
    _api()
    if _t.aclCreateTensorDesc is NULL:
        _missing("aclCreateTensorDesc", fn)
        return 0
    return <uintptr_t>_t.aclCreateTensorDesc(dt, <int>len(dims), values, fmt)


def _mdl_get_input_dynamic_dims(model_desc, index, gear_count):
    """acl.mdl.get_input_dynamic_dims(model_desc, index, gear_count) -> (dims list, ret):
    aclmdlGetInputDynamicDims, one dims dict per gear."""
    fn = "acl.mdl.get_input_dynamic_dims"
    cdef aclmdlDesc *d = <aclmdlDesc *>_ptr(model_desc, fn, "model_desc")
    cdef size_t i = <size_t>_uint(index, SIZE_MAX, fn, "index")
    cdef size_t n = <size_t>_uint(gear_count, ACL_MAX_DIM_CNT, fn, "gear_count")
    cdef aclmdlIODims gears[128]
    cdef aclError rc
    memset(gears, 0, sizeof(gears))
    _api()
    if _t.aclmdlGetInputDynamicDims is NULL:
        return [], _missing("aclmdlGetInputDynamicDims", fn)
    rc = _t.aclmdlGetInputDynamicDims(d, i, gears, n)
    return [_dims_dict(&gears[g]) for g in range(n)] if rc == ACL_SUCCESS else [], rc


def _mdl_set_input_dynamic_dims(model_id, dataset, index, dims):
    """acl.mdl.set_input_dynamic_dims(model_id, dataset, index, dims) -> ret: aclmdlSetInputDynamicDims
    (dims a dict as get_input_dims gives)."""
    fn = "acl.mdl.set_input_dynamic_dims"
    cdef uint32_t m = <uint32_t>_uint(model_id, UINT32_MAX, fn, "model_id")
    cdef aclmdlDataset *ds = <aclmdlDataset *>_ptr(dataset, fn, "dataset")
    cdef size_t i = <size_t>_uint(index, SIZE_MAX, fn, "index")
    cdef aclmdlIODims d
    _fill_dims(dims, &d, fn, "dims")
    _api()
    if _t.aclmdlSetInputDynamicDims is NULL:
        return _missing("aclmdlSetInputDynamicDims", fn)
    return _t.aclmdlSetInputDynamicDims(m, ds, i, &d)


# ---- host callbacks ------------------------------------------------------------------------------------

cdef void _callback_trampoline(void *user_data) noexcept with gil:
    """Runs on the thread in acl.rt.process_report: fn(args) of a launch_callback."""
    cdef object item = <object>user_data
    Py_DECREF(item)   # the reference launch_callback took; `item` holds one until the end
    fn, args = item
    try:
        fn(args)
    except BaseException:   # a callback's failure is reported, never lost nor fatal
        try:
            import traceback

            sys.stderr.write(f"exception in a callback of acl.rt.launch_callback ({fn!r}):\n")
            traceback.print_exc()
        except BaseException:
            pass


def _rt_launch_callback(fn, args, block_type, stream):
    """acl.rt.launch_callback(fn, args, block_type, stream) -> ret: aclrtLaunchCallback; fn(args) runs
    on the thread subscribed to the stream, inside acl.rt.process_report."""
    name = "acl.rt.launch_callback"
    if not callable(fn):
        raise TypeError(f"{name}: argument 'fn' must be callable, got {_tname(fn)}")
    cdef aclrtCallbackBlockType bt = <aclrtCallbackBlockType>_sint(block_type, INT32_MIN, INT32_MAX, name,
                                                                   "block_type")
    cdef aclrtStream s = <aclrtStream>_ptr(stream, name, "stream")
    cdef aclError rc
    _api()
    if _t.aclrtLaunchCallback is NULL:
        return _missing("aclrtLaunchCallback", name)
    item = (fn, args)
    Py_INCREF(item)   # released by the trampoline, or below when nothing was queued
    cdef void *user_data = <void *>item
    with nogil:   # it queues on the stream, which may block while the queue is full
        rc = _t.aclrtLaunchCallback(_callback_trampoline, user_data, bt, s)
    if rc != ACL_SUCCESS:
        Py_DECREF(item)
    return rc


def _rt_process_report(timeout):
    """acl.rt.process_report(timeout) -> ret: aclrtProcessReport (releases the GIL while it waits;
    the callbacks it runs take it)."""
    cdef int32_t ms = <int32_t>_sint(timeout, INT32_MIN, INT32_MAX, "acl.rt.process_report", "timeout")
    cdef aclError rc
    _api()
    if _t.aclrtProcessReport is NULL:
        return _missing("aclrtProcessReport", "acl.rt.process_report")
    with nogil:
        rc = _t.aclrtProcessReport(ms)
    return rc


_threads = {}   # thread id -> threading.Thread, from start_thread until stop_thread


def _util_start_thread(fn, args):
    """acl.util.start_thread(fn, args) -> (thread_id, ret): a thread running fn(args); its id is the
    one acl.rt.subscribe_report takes (the thread's pthread id)."""
    if not callable(fn):
        raise TypeError(f"acl.util.start_thread: argument 'fn' must be callable, got {_tname(fn)}")
    thread = threading.Thread(target=fn, args=(args,), name="acl.util.start_thread", daemon=True)
    thread.start()
    _threads[thread.ident] = thread
    return thread.ident, ACL_SUCCESS


def _util_stop_thread(thread_id):
    """acl.util.stop_thread(thread_id) -> ret: waits for a start_thread thread to return (the program
    tells it to stop first); ACL_ERROR_INVALID_PARAM for an id start_thread did not give."""
    _uint(thread_id, UINT64_MAX, "acl.util.stop_thread", "thread_id")
    thread = _threads.pop(thread_id, None)
    if thread is None:
        return ACL_ERROR_INVALID_PARAM
    if thread is not threading.current_thread():
        thread.join()
    return ACL_SUCCESS


# ---- pointers ------------------------------------------------------------------------------------------

def _util_numpy_to_ptr(array):
    """acl.util.numpy_to_ptr(array) -> ptr: the address of a C-contiguous numpy array's data (the
    caller keeps the array alive while the pointer is used)."""
    import numpy as np

    if not isinstance(array, np.ndarray):
        raise TypeError(f"acl.util.numpy_to_ptr: argument 'array' must be a numpy.ndarray, got {_tname(array)}")
    if not array.flags.c_contiguous:
        raise ValueError("acl.util.numpy_to_ptr: the array is not C-contiguous: its bytes are not one run "
                         "from the pointer; pass numpy.ascontiguousarray(array)")
    return array.__array_interface__["data"][0]


def _util_bytes_to_ptr(data):
    """acl.util.bytes_to_ptr(data) -> ptr: the address of a bytes object's own buffer (no copy: the
    caller keeps the object alive while the pointer is used)."""
    if isinstance(data, bytes):
        return <uintptr_t>PyBytes_AS_STRING(data)
    if isinstance(data, bytearray):
        import ctypes

        return ctypes.addressof(ctypes.c_char.from_buffer(data)) if len(data) else 0
    raise TypeError(f"acl.util.bytes_to_ptr: argument 'data' must be bytes, got {_tname(data)}")


cdef int _check_readable(uintptr_t p, size_t n, str fn, char *dst) except -1:
    """Refuse [p, p+n) unless this process can read it: the simulator's verdict on its own memory
    (freed, or past an allocation's end), then the kernel's (unmapped pages).  Copies into dst when
    given; else probes one byte per page."""
    cdef char why[512]
    cdef char probe[64]
    cdef iovec local[64]
    cdef iovec remote[64]
    cdef size_t page = <size_t>sysconf(_SC_PAGESIZE)
    cdef size_t k, cnt
    cdef uintptr_t a
    cdef ssize_t got
    if p == 0:
        raise ValueError(f"{fn}: ptr is NULL")
    if n > UINT64_MAX - p:
        raise ValueError(f"{fn}: ptr {p:#x} + {n} bytes wraps around the address space")
    if _sim_mem_range is not NULL and _sim_mem_range(<void *>p, n, why, sizeof(why)) != 0:
        raise ValueError(f"{fn}: {_pystr(why)}")
    if n == 0:
        return 0
    if dst is not NULL:
        local[0].iov_base, local[0].iov_len = dst, n
        remote[0].iov_base, remote[0].iov_len = <void *>p, n
        with nogil:
            got = process_vm_readv(getpid(), local, 1, remote, 1, 0)
        if got == <ssize_t>n:
            return 0
    else:
        a = p - p % page
        while a < p + n:
            cnt = 0
            while cnt < 64 and a < p + n:
                k = cnt
                local[k].iov_base, local[k].iov_len = &probe[k], 1
                remote[k].iov_base, remote[k].iov_len = <void *>(a if a >= p else p), 1
                a += page
                cnt += 1
            with nogil:
                got = process_vm_readv(getpid(), local, cnt, remote, cnt, 0)
            if got != <ssize_t>cnt:
                break
        else:
            return 0
    raise ValueError(f"{fn}: ptr {p:#x} + {n} bytes is not memory this process can read "
                     "(unmapped, or freed)")


cdef size_t _nbytes(object n, str fn, str arg) except? 0:
    return <size_t>_uint(n, <unsigned long long>(SIZE_MAX >> 1), fn, arg)


def _util_ptr_to_bytes(ptr, size):
    """acl.util.ptr_to_bytes(ptr, size) -> bytes: a copy of size bytes at ptr (host memory, or device
    memory where the host can read it, as on the simulator); ValueError for memory that cannot be
    read, which is refused before any byte is touched."""
    fn = "acl.util.ptr_to_bytes"
    cdef uintptr_t p = <uintptr_t>_ptr(ptr, fn, "ptr")
    cdef size_t n = _nbytes(size, fn, "size")
    _api()
    _check_readable(p, n, fn, NULL)     # before allocating: a wild size fails here, not in malloc
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n)
    _check_readable(p, n, fn, PyBytes_AS_STRING(out))
    return out


_npy_types = None


def _npy_dtype(int num):
    """The numpy dtype of a type number (NPY_FLOAT32 = 11...), or None."""
    global _npy_types
    import numpy as np

    if _npy_types is None:
        table = {}
        for t in set(np.sctypeDict.values()):
            try:
                d = np.dtype(t)
            except TypeError:
                continue
            if d.kind in "biufc?":
                table.setdefault(d.num, d)
        _npy_types = table
    return _npy_types.get(num)


def _util_ptr_to_numpy(ptr, shape, npy_type):
    """acl.util.ptr_to_numpy(ptr, shape, npy_type) -> numpy.ndarray: a view (no copy) of the memory
    at ptr, of numpy type number npy_type (NPY_FLOAT32 = 11...).  The memory must stay allocated
    while the array is used; what cannot be read now is refused (ValueError)."""
    import ctypes

    import numpy as np

    fn = "acl.util.ptr_to_numpy"
    cdef uintptr_t p = <uintptr_t>_ptr(ptr, fn, "ptr")
    if isinstance(shape, (int,)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{fn}: argument 'shape' must be a tuple of ints, got {_tname(shape)}")
    dims = tuple(_nbytes(d, fn, f"shape[{i}]") for i, d in enumerate(shape))
    dtype = _npy_dtype(_sint(npy_type, INT32_MIN, INT32_MAX, fn, "npy_type"))
    if dtype is None:
        raise ValueError(f"{fn}: npy_type {npy_type} is not a numeric numpy type number (NPY_FLOAT32 is 11)")
    count = 1
    for d in dims:
        count *= d
    nbytes = count * dtype.itemsize
    if nbytes > (SIZE_MAX >> 1):
        raise OverflowError(f"{fn}: shape {dims} of {dtype} is {nbytes} bytes, more than memory holds")
    _api()
    _check_readable(p, nbytes, fn, NULL)
    if nbytes == 0:
        return np.empty(dims, dtype)
    raw = (ctypes.c_char * nbytes).from_address(p)
    return np.frombuffer(raw, dtype=dtype).reshape(dims)


# The hand-written functions, by namespace, as GENERATED lists the generated ones.
SPECIAL = {
    "": {
        "init": _init, "get_recent_err_msg": _get_recent_err_msg, "get_soc_name": _get_soc_name,
        "get_data_buffer_size": _get_data_buffer_size, "create_tensor_desc": _create_tensor_desc,
    },
    "rt": {"launch_callback": _rt_launch_callback, "process_report": _rt_process_report},
    "mdl": {
        "get_input_dynamic_dims": _mdl_get_input_dynamic_dims,
        "set_input_dynamic_dims": _mdl_set_input_dynamic_dims,
    },
    "media": {
        "dvpp_vpc_batch_crop_async": _media_dvpp_vpc_batch_crop_async,
        "dvpp_vpc_batch_crop_and_paste_async": _media_dvpp_vpc_batch_crop_and_paste_async,
        "dvpp_vpc_batch_crop_resize_paste_async": _media_dvpp_vpc_batch_crop_resize_paste_async,
    },
    "util": {
        "start_thread": _util_start_thread, "stop_thread": _util_stop_thread,
        "numpy_to_ptr": _util_numpy_to_ptr, "bytes_to_ptr": _util_bytes_to_ptr,
        "ptr_to_bytes": _util_ptr_to_bytes, "ptr_to_numpy": _util_ptr_to_numpy,
    },
}


def media_error():
    """Why no DVPP library loaded ("" when one did, or before the first media call)."""
    return _media_error


def loaded_library():
    """The AscendCL library the module calls (loads the backend, without aclInit)."""
    _api()
    return _library
