# cython: language_level=3, embedsignature=False
"""The core of ``ascend_engine.acl``: pyACL's functions over the run-time table.

Most functions are generated (``_pyacl_functions.pxi``, from
``tools/pyacl_table.py`` by ``tools/gen_pyacl.py``); this file holds what they
call -- the table, the DVPP library, argument conversion -- and the functions
that are not one C call with plain arguments: ``init``, host callbacks and
threads, the pointer helpers of ``acl.util``, dims given as lists and dicts.
``ascend_engine/acl.py`` assembles the namespaces (``acl.rt``, ``acl.mdl``...).

pyACL's contract is kept: AscendCL failures are return codes, never
exceptions; only arguments of the wrong Python type (TypeError), out of their
C type's range (OverflowError) or pointing at memory that cannot be read
(ValueError, the pointer helpers) raise, naming the function and argument.
"""

import os
import sys
import threading

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.errno cimport errno
from libc.stdint cimport (INT8_MAX, INT8_MIN, INT16_MAX, INT16_MIN, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                          UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX, int64_t, uintptr_t)
from libc.string cimport memset, strlen
from posix.dlfcn cimport RTLD_LOCAL, RTLD_NOW, dlopen, dlsym

from ascend_engine._acl cimport *
from ascend_engine._runtime cimport api_loaded

cdef extern from "<limits.h>":
    const int INT_MIN
    const int INT_MAX
cdef extern from "<stdint.h>":
    const size_t SIZE_MAX
cdef extern from "<dlfcn.h>":
    const int RTLD_NOLOAD
    const int RTLD_GLOBAL
cdef extern from "<sys/uio.h>" nogil:
    struct iovec:
        void *iov_base
        size_t iov_len
cdef extern from "<unistd.h>" nogil:
    int getpid()
    long sysconf(int name)
    const int _SC_PAGESIZE
cdef extern from *:
    """
    #include <sys/uio.h>
    #include <sys/types.h>
    #include <errno.h>
    """
    ssize_t process_vm_readv(int pid, const iovec *local, unsigned long liovcnt,
                             const iovec *remote, unsigned long riovcnt, unsigned long flags) nogil
    const int EFAULT

cdef extern from "ascend_engine/acl.h":
    const int ACL_ERROR_API_NOT_SUPPORT
    const int ACL_ERROR_FEATURE_UNSUPPORTED

ctypedef aclError (*_NotSupportedFn)(const char *fn, const char *what) noexcept nogil
ctypedef int (*_MemRangeFn)(const void *ptr, size_t length, char *why, size_t why_len) noexcept nogil

# ---- the tables --------------------------------------------------------------------------------------

cdef const ae_acl_api *_t = NULL
cdef _NotSupportedFn _sim_not_supported = NULL   # the simulator's recorder of "not simulated"
cdef _MemRangeFn _sim_mem_range = NULL           # the simulator's check of host reads
cdef bint _media_tried = False
cdef bint _media_loaded = False
_media_error = ""
_library = ""
_loader_initialized = False
_init_claimed = False
_lock = threading.Lock()


cdef int _load_api() except -1:
    """Load the backend (not aclInit: acl.init() does that) and look up the simulator's extras."""
    global _t, _sim_not_supported, _sim_mem_range, _library, _loader_initialized
    from ascend_engine import _runtime

    table = api_loaded()
    _library, _loader_initialized = _runtime._loaded_backend()
    cdef void *h = dlopen(os.fsencode(_library), RTLD_NOW | RTLD_NOLOAD)
    if h is not NULL:
        _sim_not_supported = <_NotSupportedFn>dlsym(h, b"aeSimNotSupported")
        _sim_mem_range = <_MemRangeFn>dlsym(h, b"aeSimMemRange")
    _t = table
    return 0


cdef inline int _api() except -1:
    if _t is NULL:
        _load_api()
    return 0


cdef bint _media() except -1:
    """Load libacl_dvpp.so on first use, as the engine does (csrc/dvpp_loader.c): the
    library beside the AscendCL library, else the dynamic linker's.  False when none
    loads: every media function then answers ACL_ERROR_API_NOT_SUPPORT."""
    global _media_tried, _media_loaded, _media_error
    if _media_tried:
        return _media_loaded
    _api()
    with _lock:
        if _media_tried:
            return _media_loaded
        # The DVPP library's own runtime calls resolve from the AscendCL library in
        # the global scope, as for a program linked to both.
        dlopen(os.fsencode(_library), RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)
        tried = [os.path.join(os.path.dirname(_library), "libacl_dvpp.so"), "libacl_dvpp.so"]
        reasons = []
        for path in tried:
            h = dlopen(os.fsencode(path), RTLD_NOW | RTLD_LOCAL)
            if h is NULL:
                reasons.append(f"{path}: cannot be loaded")
                continue
            if _fill_media(h) > 0:
                _fill_media_batch(h)
                _media_loaded = True
                break
            reasons.append(f"{path}: exports no DVPP function")
        _media_error = "; ".join(reasons)
        _media_tried = True
    return _media_loaded


cdef aclError _missing(str cname, str qualname) except? -1:
    """The code for a function the loaded library lacks (ACL_ERROR_API_NOT_SUPPORT)."""
    if _sim_not_supported is not NULL:
        _sim_not_supported(cname.encode(), b"the loaded library does not export it")
    return ACL_ERROR_API_NOT_SUPPORT


def _unsupported(str qualname):
    """ACL_ERROR_FEATURE_UNSUPPORTED for a pyACL function this module does not do (docs/pyacl.md):
    the code the simulator's own video stubs answer (docs/simulator.md), so a program fails the
    way it does on a chip without the feature; on the simulator the reason goes to
    acl.get_recent_err_msg()."""
    if _t is NULL:
        try:
            _load_api()
        except Exception:
            return ACL_ERROR_FEATURE_UNSUPPORTED
    if _sim_not_supported is not NULL:
        _sim_not_supported(qualname.encode(), b"single operators, profiling and video are not simulated")
    return ACL_ERROR_FEATURE_UNSUPPORTED


# ---- arguments ---------------------------------------------------------------------------------------

cdef str _tname(object v):
    return type(v).__name__


cdef unsigned long long _uint(object v, unsigned long long hi, str fn, str arg) except? 0xFFFFFFFFFFFFFFFF:
    """An int argument of an unsigned C type, 0 to hi; -1 is hi, as in C (CANN documents -1 for
    reserved indices)."""
    cdef unsigned long long x
    if isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn}: argument '{arg}' must be an int, got {_tname(v)}")
    if v == -1:
        return hi
    try:
        x = v
    except OverflowError:
        raise OverflowError(f"{fn}: argument '{arg}' = {v} is out of range (0 to {hi}, or -1)") from None
    if x > hi:
        raise OverflowError(f"{fn}: argument '{arg}' = {v} is out of range (0 to {hi}, or -1)")
    return x


cdef long long _sint(object v, long long lo, long long hi, str fn, str arg) except? -1:
    """An int argument of a signed C type or an enum, lo to hi."""
    cdef long long x
    if isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn}: argument '{arg}' must be an int, got {_tname(v)}")
    try:
        x = v
    except OverflowError:
        raise OverflowError(f"{fn}: argument '{arg}' = {v} is out of range ({lo} to {hi})") from None
    if x < lo or x > hi:
        raise OverflowError(f"{fn}: argument '{arg}' = {v} is out of range ({lo} to {hi})")
    return x


cdef double _float(object v, str fn, str arg) except? -1.0:
    if not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
        raise TypeError(f"{fn}: argument '{arg}' must be a float, got {_tname(v)}")
    return float(v)


cdef void *_ptr(object v, str fn, str arg) except? NULL:
    """A pointer or handle argument: an int (0 or None is NULL)."""
    cdef uintptr_t x
    if v is None:
        return NULL
    if isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn}: argument '{arg}' must be a pointer or handle (an int), got {_tname(v)}")
    try:
        x = v
    except OverflowError:
        raise OverflowError(f"{fn}: argument '{arg}' = {v} is not a pointer (0 to {UINT64_MAX})") from None
    return <void *>x


cdef bytes _cstr(object v, str fn, str arg):
    """A str argument (a path or a name) as NUL-terminated UTF-8 bytes."""
    cdef bytes b
    if isinstance(v, str):
        b = (<str>v).encode("utf-8")
    elif isinstance(v, bytes):
        b = <bytes>v
    elif isinstance(v, os.PathLike):
        b = os.fsencode(v)
    else:
        raise TypeError(f"{fn}: argument '{arg}' must be a str, got {_tname(v)}")
    if b"\0" in b:
        raise ValueError(f"{fn}: argument '{arg}' holds a NUL character")
    return b


cdef str _pystr(const char *s):
    return "" if s is NULL else s[:strlen(s)].decode("utf-8", "replace")


# ---- structures as pyACL's dicts ---------------------------------------------------------------------

cdef dict _dims_dict(const aclmdlIODims *d):
    cdef size_t n = min(d.dimCount, <size_t>ACL_MAX_DIM_CNT)
    return {"name": _pystr(d.name), "dimCount": <int>d.dimCount, "dims": [d.dims[i] for i in range(n)]}


cdef dict _batch_dict(const aclmdlBatch *b):
    cdef size_t n = min(b.batchCount, <size_t>ACL_MAX_BATCH_NUM)
    return {"batchCount": <int>b.batchCount, "batch": [b.batch[i] for i in range(n)]}


cdef dict _hw_dict(const aclmdlHW *h):
    cdef size_t n = min(h.hwCount, <size_t>ACL_MAX_HW_NUM)
    return {"hwCount": <int>h.hwCount, "hw": [[h.hw[i][0], h.hw[i][1]] for i in range(n)]}


cdef int _fill_dims(object dims, aclmdlIODims *out, str fn, str arg) except -1:
    """A pyACL dims dict ({"name", "dimCount", "dims"}) into an aclmdlIODims."""
    if not isinstance(dims, dict) or "dims" not in dims:
        raise TypeError(f"{fn}: argument '{arg}' must be a dict with 'dims' (and 'dimCount', 'name'), "
                        f"got {_tname(dims)}")
    values = dims["dims"]
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{fn}: {arg}['dims'] must be a list of ints, got {_tname(values)}")
    count = dims.get("dimCount", len(values))
    if _sint(count, 0, len(values), fn, f"{arg}['dimCount']") > ACL_MAX_DIM_CNT:
        raise OverflowError(f"{fn}: {arg}['dimCount'] = {count} exceeds ACL_MAX_DIM_CNT ({ACL_MAX_DIM_CNT})")
    memset(out, 0, sizeof(out[0]))
    name = _cstr(dims.get("name", ""), fn, f"{arg}['name']")
    if len(name) >= ACL_MAX_TENSOR_NAME_LEN:
        raise ValueError(f"{fn}: {arg}['name'] is longer than {ACL_MAX_TENSOR_NAME_LEN - 1} bytes")
    for i, c in enumerate(name):
        out.name[i] = c
    out.dimCount = count
    for i in range(count):
        out.dims[i] = _sint(values[i], INT64_MIN, INT64_MAX, fn, f"{arg}['dims'][{i}]")
    return 0


include "_pyacl_functions.pxi"
include "_pyacl_media.pxi"
include "_pyacl_special.pxi"
