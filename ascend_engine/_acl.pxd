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
        aclTensorDesc *(*aclCreateTensorDesc)(aclDataType dataType, int numDims, const int64_t *dims, aclFormat format) noexcept nogil
        void (*aclDestroyTensorDesc)(const aclTensorDesc *desc) noexcept nogil
        aclDataType (*aclGetTensorDescType)(const aclTensorDesc *desc) noexcept nogil
        aclFormat (*aclGetTensorDescFormat)(const aclTensorDesc *desc) noexcept nogil
        size_t (*aclGetTensorDescSize)(const aclTensorDesc *desc) noexcept nogil
        size_t (*aclGetTensorDescElementCount)(const aclTensorDesc *desc) noexcept nogil
        size_t (*aclGetTensorDescNumDims)(const aclTensorDesc *desc) noexcept nogil
        aclError (*aclGetTensorDescDimV2)(const aclTensorDesc *desc, size_t index, int64_t *dimSize) noexcept nogil
        void *(*aclGetTensorDescAddress)(const aclTensorDesc *desc) noexcept nogil
        aclTensorDesc *(*aclGetTensorDescByIndex)(aclTensorDesc *desc, size_t index) noexcept nogil
        aclError (*aclmdlSetDatasetTensorDesc)(aclmdlDataset *dataset, aclTensorDesc *tensorDesc, size_t index) noexcept nogil
        aclTensorDesc *(*aclmdlGetDatasetTensorDesc)(const aclmdlDataset *dataset, size_t index) noexcept nogil
        aclError (*aclmdlGetDynamicHW)(const aclmdlDesc *modelDesc, size_t index, aclmdlHW *hw) noexcept nogil
        aclError (*aclmdlSetDynamicHWSize)(uint32_t modelId, aclmdlDataset *dataset, size_t index, uint64_t height, uint64_t width) noexcept nogil
        aclError (*aclmdlGetInputDynamicGearCount)(const aclmdlDesc *modelDesc, size_t index, size_t *gearCount) noexcept nogil
        aclError (*aclmdlGetInputDynamicDims)(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims, size_t gearCount) noexcept nogil
        aclError (*aclmdlSetInputDynamicDims)(uint32_t modelId, aclmdlDataset *dataset, size_t index, const aclmdlIODims *dims) noexcept nogil
        aclError (*aclmdlGetInputDimsV2)(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims) noexcept nogil
        aclError (*aclmdlGetInputDimsRange)(const aclmdlDesc *modelDesc, size_t index, aclmdlIODimsRange *dimsRange) noexcept nogil
        aclmdlAIPP *(*aclmdlCreateAIPP)(uint64_t batchSize) noexcept nogil
        aclError (*aclmdlDestroyAIPP)(const aclmdlAIPP *aippParmsSet) noexcept nogil
        aclError (*aclmdlSetAIPPInputFormat)(aclmdlAIPP *aippParmsSet, aclAippInputFormat inputFormat) noexcept nogil
        aclError (*aclmdlSetAIPPCscParams)(aclmdlAIPP *aippParmsSet, int8_t cscSwitch, int16_t cscMatrixR0C0, int16_t cscMatrixR0C1, int16_t cscMatrixR0C2, int16_t cscMatrixR1C0, int16_t cscMatrixR1C1, int16_t cscMatrixR1C2, int16_t cscMatrixR2C0, int16_t cscMatrixR2C1, int16_t cscMatrixR2C2, uint8_t cscOutputBiasR0, uint8_t cscOutputBiasR1, uint8_t cscOutputBiasR2, uint8_t cscInputBiasR0, uint8_t cscInputBiasR1, uint8_t cscInputBiasR2) noexcept nogil
        aclError (*aclmdlSetAIPPRbuvSwapSwitch)(aclmdlAIPP *aippParmsSet, int8_t rbuvSwapSwitch) noexcept nogil
        aclError (*aclmdlSetAIPPAxSwapSwitch)(aclmdlAIPP *aippParmsSet, int8_t axSwapSwitch) noexcept nogil
        aclError (*aclmdlSetAIPPSrcImageSize)(aclmdlAIPP *aippParmsSet, int32_t srcImageSizeW, int32_t srcImageSizeH) noexcept nogil
        aclError (*aclmdlSetAIPPCropParams)(aclmdlAIPP *aippParmsSet, int8_t cropSwitch, int32_t cropStartPosW, int32_t cropStartPosH, int32_t cropSizeW, int32_t cropSizeH, uint64_t batchIndex) noexcept nogil
        aclError (*aclmdlSetAIPPPaddingParams)(aclmdlAIPP *aippParmsSet, int8_t paddingSwitch, int32_t paddingSizeTop, int32_t paddingSizeBottom, int32_t paddingSizeLeft, int32_t paddingSizeRight, uint64_t batchIndex) noexcept nogil
        aclError (*aclmdlSetAIPPDtcPixelMean)(aclmdlAIPP *aippParmsSet, int16_t dtcPixelMeanChn0, int16_t dtcPixelMeanChn1, int16_t dtcPixelMeanChn2, int16_t dtcPixelMeanChn3, uint64_t batchIndex) noexcept nogil
        aclError (*aclmdlSetAIPPDtcPixelMin)(aclmdlAIPP *aippParmsSet, float dtcPixelMinChn0, float dtcPixelMinChn1, float dtcPixelMinChn2, float dtcPixelMinChn3, uint64_t batchIndex) noexcept nogil
        aclError (*aclmdlSetAIPPPixelVarReci)(aclmdlAIPP *aippParmsSet, float dtcPixelVarReciChn0, float dtcPixelVarReciChn1, float dtcPixelVarReciChn2, float dtcPixelVarReciChn3, uint64_t batchIndex) noexcept nogil
        aclError (*aclmdlSetInputAIPP)(uint32_t modelId, aclmdlDataset *dataset, size_t index, const aclmdlAIPP *aippParmsSet) noexcept nogil
        aclError (*aclmdlGetAippType)(uint32_t modelId, size_t index, aclmdlInputAippType *type, size_t *dynamicAttachedDataIndex) noexcept nogil
        aclError (*aclrtSetExceptionInfoCallback)(aclrtExceptionInfoCallback callback) noexcept nogil
        uint32_t (*aclrtGetTaskIdFromExceptionInfo)(const aclrtExceptionInfo *info) noexcept nogil
        uint32_t (*aclrtGetStreamIdFromExceptionInfo)(const aclrtExceptionInfo *info) noexcept nogil
        uint32_t (*aclrtGetThreadIdFromExceptionInfo)(const aclrtExceptionInfo *info) noexcept nogil
        uint32_t (*aclrtGetDeviceIdFromExceptionInfo)(const aclrtExceptionInfo *info) noexcept nogil
        uint32_t (*aclrtGetErrorCodeFromExceptionInfo)(const aclrtExceptionInfo *info) noexcept nogil
        aclError (*aclmdlCreateAndGetOpDesc)(uint32_t deviceId, uint32_t streamId, uint32_t taskId, char *opName, size_t opNameLen, aclTensorDesc **inputDesc, size_t *numInputs, aclTensorDesc **outputDesc, size_t *numOutputs) noexcept nogil
        aclError (*aclrtSetDeviceSatMode)(aclrtFloatOverflowMode mode) noexcept nogil
        aclError (*aclrtGetDeviceSatMode)(aclrtFloatOverflowMode *mode) noexcept nogil

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
