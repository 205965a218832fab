# cython: language_level=3
"""Cython view of the C headers: include/ascend_engine/acl.h and loader.h.

Plain ``cdef extern`` declarations, nothing else: types, enum values and the
``ae_acl_api`` function table.  Cython modules never call AscendCL functions
by name -- there is nothing to link against -- but through the table returned
by ``ae_api()`` (in practice through the checked wrappers and ``api()`` of
``ascend_engine/_runtime.pxd``, which load the backend first).

The ``ae_acl_api`` struct is not written by hand: it comes from
include/ascend_engine/acl_functions.h, the list C expands into the same
struct, through the generated ``_acl_functions.pxi`` included below.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef extern from "ascend_engine/acl.h" nogil:
    ctypedef int aclError
    ctypedef uint16_t aclFloat16
    ctypedef void *aclrtContext
    ctypedef void *aclrtStream
    ctypedef void *aclrtEvent
    ctypedef void (*aclrtCallback)(void *userData) noexcept
    ctypedef struct aclDataBuffer:
        pass
    ctypedef struct aclmdlDesc:
        pass
    ctypedef struct aclmdlDataset:
        pass
    ctypedef struct aclTensorDesc:
        pass
    ctypedef struct aclmdlAIPP:
        pass
    ctypedef struct aclAippInfo:
        pass
    ctypedef struct aclrtExceptionInfo:
        pass
    ctypedef void (*aclrtExceptionInfoCallback)(aclrtExceptionInfo *exceptionInfo) noexcept
    ctypedef int aclAippInputFormat
    ctypedef int aclmdlInputAippType
    ctypedef int aclrtFloatOverflowMode

    # Error codes: declared as plain ints here; in CANN's own headers some are
    # static const objects, so they are usable as values, not as case labels.
    const int ACL_SUCCESS
    const int ACL_ERROR_INVALID_PARAM
    const int ACL_ERROR_UNINITIALIZE
    const int ACL_ERROR_REPEAT_INITIALIZE
    const int ACL_ERROR_REPEAT_FINALIZE
    const int ACL_ERROR_RT_PARAM_INVALID
    const int ACL_ERROR_RT_CONTEXT_NULL
    const int ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    const int ACL_ERROR_RT_EVENT_SYNC_TIMEOUT

    ctypedef enum aclDataType:
        ACL_DT_UNDEFINED
        ACL_FLOAT
        ACL_FLOAT16
        ACL_INT8
        ACL_INT32
        ACL_UINT8
        ACL_INT16
        ACL_UINT16
        ACL_UINT32
        ACL_INT64
        ACL_UINT64
        ACL_DOUBLE
        ACL_BOOL
        ACL_STRING
        ACL_COMPLEX64
        ACL_COMPLEX128
        ACL_BF16

    ctypedef enum aclFormat:
        ACL_FORMAT_UNDEFINED
        ACL_FORMAT_NCHW
        ACL_FORMAT_NHWC
        ACL_FORMAT_ND

    ctypedef enum aclrtRunMode:
        ACL_DEVICE
        ACL_HOST

    ctypedef enum aclrtMemMallocPolicy:
        ACL_MEM_MALLOC_HUGE_FIRST
        ACL_MEM_MALLOC_HUGE_ONLY
        ACL_MEM_MALLOC_NORMAL_ONLY

    ctypedef enum aclrtMemcpyKind:
        ACL_MEMCPY_HOST_TO_HOST
        ACL_MEMCPY_HOST_TO_DEVICE
        ACL_MEMCPY_DEVICE_TO_HOST
        ACL_MEMCPY_DEVICE_TO_DEVICE
        ACL_MEMCPY_DEFAULT

    ctypedef enum aclrtEventRecordedStatus:
        ACL_EVENT_RECORDED_STATUS_NOT_READY
        ACL_EVENT_RECORDED_STATUS_COMPLETE

    ctypedef enum aclrtStreamStatus:
        ACL_STREAM_STATUS_COMPLETE
        ACL_STREAM_STATUS_NOT_READY
        ACL_STREAM_STATUS_RESERVED

    ctypedef enum aclrtCallbackBlockType:
        ACL_CALLBACK_NO_BLOCK
        ACL_CALLBACK_BLOCK

    ctypedef enum aclrtMemAttr:
        ACL_DDR_MEM
        ACL_HBM_MEM

    const unsigned int ACL_EVENT_SYNC
    const unsigned int ACL_EVENT_CAPTURE_STREAM_PROGRESS
    const unsigned int ACL_EVENT_TIME_LINE

    enum:
        ACL_MAX_DIM_CNT
        ACL_MAX_TENSOR_NAME_LEN
        ACL_MAX_BATCH_NUM
        ACL_MAX_HW_NUM
    const char *ACL_DYNAMIC_TENSOR_NAME

    ctypedef struct aclmdlIODims:
        char name[128]
        size_t dimCount
        int64_t dims[128]

    ctypedef struct aclmdlBatch:
        size_t batchCount
        uint64_t batch[128]

    ctypedef struct aclmdlHW:
        size_t hwCount
        uint64_t hw[128][2]

    ctypedef struct aclmdlIODimsRange:
        size_t rangeCount
        int64_t range[128][2]


# The ae_acl_api function table: generated from include/ascend_engine/acl_functions.h
# by tools/gen_acl_pxd.py, which setup.py runs on every build.  Included here, after
# the types its members use, so that `from ascend_engine._acl cimport *` brings it too.
include "_acl_functions.pxi"


cdef extern from "ascend_engine/loader.h" nogil:
    ctypedef enum ae_backend_kind:
        AE_BACKEND_NONE
        AE_BACKEND_ACL
        AE_BACKEND_SIM

    int ae_load_backend(const char *request, const char *sim_path, char *err, size_t err_len)
    const ae_acl_api *ae_api()
    ae_backend_kind ae_backend()
    const char *ae_backend_name()
    const char *ae_backend_library()
    int ae_backend_initialized()
    const char *ae_backend_note()
    const char *ae_missing_function_message(const char *name)

    ctypedef struct ae_dvpp_api:      # DVPP's function table (loader.h); only C reads its entries
        pass
    const ae_dvpp_api *ae_load_dvpp(char *err, size_t err_len)
