# cython: language_level=3
"""Cython view of the C headers: include/ascend_engine/acl.h and loader.h.

Plain ``cdef extern`` declarations, nothing else (the layering CuPy and
cuda-python use): types, enum values and the ``ae_acl_api`` function table.
Cython modules never call AscendCL functions by name -- there is nothing to
link against -- but through the table returned by ``ae_api()`` (in practice
through ``ascend_engine._runtime.api()``, which loads the backend first).

The members of ``ae_acl_api`` mirror include/ascend_engine/acl_functions.h
one to one; tests/conformance checks that every entry is declared here.
"""

from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t


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


cdef extern from "ascend_engine/loader.h" nogil:
    ctypedef struct ae_acl_api:
        aclError (*aclInit)(const char *configPath) noexcept nogil
        aclError (*aclFinalize)() noexcept nogil
        const char *(*aclGetRecentErrMsg)() noexcept nogil
        aclError (*aclrtSetDevice)(int32_t deviceId) noexcept nogil
        aclError (*aclrtResetDevice)(int32_t deviceId) noexcept nogil
        aclError (*aclrtGetDevice)(int32_t *deviceId) noexcept nogil
        aclError (*aclrtGetDeviceCount)(uint32_t *count) noexcept nogil
        aclError (*aclrtGetRunMode)(aclrtRunMode *runMode) noexcept nogil
        const char *(*aclrtGetSocName)() noexcept nogil
        aclError (*aclrtCreateContext)(aclrtContext *context, int32_t deviceId) noexcept nogil
        aclError (*aclrtDestroyContext)(aclrtContext context) noexcept nogil
        aclError (*aclrtSetCurrentContext)(aclrtContext context) noexcept nogil
        aclError (*aclrtGetCurrentContext)(aclrtContext *context) noexcept nogil
        aclError (*aclrtCreateStream)(aclrtStream *stream) noexcept nogil
        aclError (*aclrtDestroyStream)(aclrtStream stream) noexcept nogil
        aclError (*aclrtSynchronizeStream)(aclrtStream stream) noexcept nogil
        aclError (*aclrtSynchronizeStreamWithTimeout)(aclrtStream stream, int32_t timeout) noexcept nogil
        aclError (*aclrtStreamWaitEvent)(aclrtStream stream, aclrtEvent event) noexcept nogil
        aclError (*aclrtStreamQuery)(aclrtStream stream, aclrtStreamStatus *status) noexcept nogil
        aclError (*aclrtCreateEvent)(aclrtEvent *event) noexcept nogil
        aclError (*aclrtCreateEventWithFlag)(aclrtEvent *event, uint32_t flag) noexcept nogil
        aclError (*aclrtDestroyEvent)(aclrtEvent event) noexcept nogil
        aclError (*aclrtRecordEvent)(aclrtEvent event, aclrtStream stream) noexcept nogil
        aclError (*aclrtResetEvent)(aclrtEvent event, aclrtStream stream) noexcept nogil
        aclError (*aclrtQueryEventStatus)(aclrtEvent event, aclrtEventRecordedStatus *status) noexcept nogil
        aclError (*aclrtSynchronizeEvent)(aclrtEvent event) noexcept nogil
        aclError (*aclrtSynchronizeEventWithTimeout)(aclrtEvent event, int32_t timeout) noexcept nogil
        aclError (*aclrtEventElapsedTime)(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) noexcept nogil
        aclError (*aclrtMalloc)(void **devPtr, size_t size, aclrtMemMallocPolicy policy) noexcept nogil
        aclError (*aclrtFree)(void *devPtr) noexcept nogil
        aclError (*aclrtMallocHost)(void **hostPtr, size_t size) noexcept nogil
        aclError (*aclrtFreeHost)(void *hostPtr) noexcept nogil
        aclError (*aclrtMemcpy)(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) noexcept nogil
        aclError (*aclrtMemcpyAsync)(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream) noexcept nogil
        aclError (*aclrtMemset)(void *devPtr, size_t maxCount, int32_t value, size_t count) noexcept nogil
        aclError (*aclrtMemsetAsync)(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) noexcept nogil
        aclError (*aclrtGetMemInfo)(aclrtMemAttr attr, size_t *free, size_t *total) noexcept nogil
        aclError (*aclrtLaunchCallback)(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream) noexcept nogil
        aclError (*aclrtSubscribeReport)(uint64_t threadId, aclrtStream stream) noexcept nogil
        aclError (*aclrtUnSubscribeReport)(uint64_t threadId, aclrtStream stream) noexcept nogil
        aclError (*aclrtProcessReport)(int32_t timeout) noexcept nogil
        size_t (*aclDataTypeSize)(aclDataType dataType) noexcept nogil
        float (*aclFloat16ToFloat)(aclFloat16 value) noexcept nogil
        aclFloat16 (*aclFloatToFloat16)(float value) noexcept nogil
        aclDataBuffer *(*aclCreateDataBuffer)(void *data, size_t size) noexcept nogil
        aclError (*aclDestroyDataBuffer)(const aclDataBuffer *dataBuffer) noexcept nogil
        aclError (*aclUpdateDataBuffer)(aclDataBuffer *dataBuffer, void *data, size_t size) noexcept nogil
        void *(*aclGetDataBufferAddr)(const aclDataBuffer *dataBuffer) noexcept nogil
        size_t (*aclGetDataBufferSizeV2)(const aclDataBuffer *dataBuffer) noexcept nogil
        aclmdlDataset *(*aclmdlCreateDataset)() noexcept nogil
        aclError (*aclmdlDestroyDataset)(const aclmdlDataset *dataset) noexcept nogil
        aclError (*aclmdlAddDatasetBuffer)(aclmdlDataset *dataset, aclDataBuffer *dataBuffer) noexcept nogil
        size_t (*aclmdlGetDatasetNumBuffers)(const aclmdlDataset *dataset) noexcept nogil
        aclDataBuffer *(*aclmdlGetDatasetBuffer)(const aclmdlDataset *dataset, size_t index) noexcept nogil
        aclError (*aclmdlLoadFromFile)(const char *modelPath, uint32_t *modelId) noexcept nogil
        aclError (*aclmdlLoadFromMem)(const void *model, size_t modelSize, uint32_t *modelId) noexcept nogil
        aclError (*aclmdlQuerySize)(const char *fileName, size_t *workSize, size_t *weightSize) noexcept nogil
        aclError (*aclmdlLoadFromFileWithMem)(const char *modelPath, uint32_t *modelId, void *workPtr, size_t workSize, void *weightPtr, size_t weightSize) noexcept nogil
        aclError (*aclmdlUnload)(uint32_t modelId) noexcept nogil
        aclError (*aclmdlExecute)(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output) noexcept nogil
        aclError (*aclmdlExecuteAsync)(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output, aclrtStream stream) noexcept nogil
        aclmdlDesc *(*aclmdlCreateDesc)() noexcept nogil
        aclError (*aclmdlDestroyDesc)(aclmdlDesc *modelDesc) noexcept nogil
        aclError (*aclmdlGetDesc)(aclmdlDesc *modelDesc, uint32_t modelId) noexcept nogil
        size_t (*aclmdlGetNumInputs)(aclmdlDesc *modelDesc) noexcept nogil
        size_t (*aclmdlGetNumOutputs)(aclmdlDesc *modelDesc) noexcept nogil
        size_t (*aclmdlGetInputSizeByIndex)(aclmdlDesc *modelDesc, size_t index) noexcept nogil
        size_t (*aclmdlGetOutputSizeByIndex)(aclmdlDesc *modelDesc, size_t index) noexcept nogil
        aclError (*aclmdlGetInputDims)(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims) noexcept nogil
        aclError (*aclmdlGetOutputDims)(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims) noexcept nogil
        aclError (*aclmdlGetCurOutputDims)(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims) noexcept nogil
        aclDataType (*aclmdlGetInputDataType)(const aclmdlDesc *modelDesc, size_t index) noexcept nogil
        aclDataType (*aclmdlGetOutputDataType)(const aclmdlDesc *modelDesc, size_t index) noexcept nogil
        aclFormat (*aclmdlGetInputFormat)(const aclmdlDesc *modelDesc, size_t index) noexcept nogil
        aclFormat (*aclmdlGetOutputFormat)(const aclmdlDesc *modelDesc, size_t index) noexcept nogil
        const char *(*aclmdlGetInputNameByIndex)(const aclmdlDesc *modelDesc, size_t index) noexcept nogil
        const char *(*aclmdlGetOutputNameByIndex)(const aclmdlDesc *modelDesc, size_t index) noexcept nogil
        aclError (*aclmdlGetInputIndexByName)(const aclmdlDesc *modelDesc, const char *name, size_t *index) noexcept nogil
        aclError (*aclmdlGetOutputIndexByName)(const aclmdlDesc *modelDesc, const char *name, size_t *index) noexcept nogil
        aclError (*aclmdlGetDynamicBatch)(const aclmdlDesc *modelDesc, aclmdlBatch *batch) noexcept nogil
        aclError (*aclmdlSetDynamicBatchSize)(uint32_t modelId, aclmdlDataset *dataset, size_t index, uint64_t batchSize) noexcept nogil

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
