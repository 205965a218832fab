/*
 * ascend_engine/acl.h -- the subset of AscendCL that ascend-engine calls.
 *
 * These declarations are written for this project and follow the CANN ABI:
 * the same function names, parameter types, enum values, struct layouts and
 * error codes as the real headers (acl/acl.h).  The conformance tests compile
 * every native source against the real headers too, with AE_USE_CANN_HEADERS
 * defined, so any drift between this file and CANN fails the build.
 *
 * The function list itself lives in acl_functions.h (one X-macro entry per
 * function) so that prototypes, the loader's function table and the call
 * checks are generated from a single source.
 */
#ifndef ASCEND_ENGINE_ACL_H
#define ASCEND_ENGINE_ACL_H

#ifdef AE_USE_CANN_HEADERS
#include "acl/acl.h"
#else

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scalar and handle types ------------------------------------------ */
typedef int aclError;
typedef uint16_t aclFloat16;
typedef void *aclrtContext;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef struct aclDataBuffer aclDataBuffer;
typedef struct aclmdlDesc aclmdlDesc;
typedef struct aclmdlDataset aclmdlDataset;
typedef struct aclTensorDesc aclTensorDesc;
typedef struct aclmdlAIPP aclmdlAIPP;
typedef struct rtExceptionInfo aclrtExceptionInfo;
typedef void (*aclrtCallback)(void *userData);
typedef void (*aclrtExceptionInfoCallback)(aclrtExceptionInfo *exceptionInfo);

/* ---- error codes (the ones this project produces or reacts to) -------- */
#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_WRITE_FILE 100004
#define ACL_ERROR_INVALID_FILE_SIZE 100005
#define ACL_ERROR_PARSE_FILE 100006
#define ACL_ERROR_FILE_MISSING_ATTR 100007
#define ACL_ERROR_FILE_ATTR_INVALID 100008
#define ACL_ERROR_INVALID_MODEL_ID 100011
#define ACL_ERROR_DESERIALIZE_MODEL 100012
#define ACL_ERROR_PARSE_MODEL 100013
#define ACL_ERROR_READ_MODEL_FAILURE 100014
#define ACL_ERROR_MODEL_SIZE_INVALID 100015
#define ACL_ERROR_MODEL_MISSING_ATTR 100016
#define ACL_ERROR_MODEL_INPUT_NOT_MATCH 100017
#define ACL_ERROR_MODEL_OUTPUT_NOT_MATCH 100018
#define ACL_ERROR_MODEL_NOT_DYNAMIC 100019
#define ACL_ERROR_UNSUPPORTED_DATA_TYPE 100026
#define ACL_ERROR_FORMAT_NOT_MATCH 100027
#define ACL_ERROR_REPEAT_SUBSCRIBE 100033
#define ACL_ERROR_STREAM_NOT_SUBSCRIBE 100034
#define ACL_ERROR_THREAD_NOT_SUBSCRIBE 100035
#define ACL_ERROR_WAIT_CALLBACK_TIMEOUT 100036
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_API_NOT_SUPPORT 200001
#define ACL_ERROR_INVALID_DEVICE 200002
#define ACL_ERROR_MEMORY_ADDRESS_UNALIGNED 200003
#define ACL_ERROR_RESOURCE_NOT_MATCH 200004
#define ACL_ERROR_INVALID_RESOURCE_HANDLE 200005
#define ACL_ERROR_FEATURE_UNSUPPORTED 200006
#define ACL_ERROR_STORAGE_OVER_LIMIT 300000
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_FAILURE 500001
#define ACL_ERROR_RT_FAILURE 500003
#define ACL_ERROR_DRV_FAILURE 500004

#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_MODEL_CONTEXT 107004
#define ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID 107006
#define ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL 107007
#define ACL_ERROR_RT_ADDR_UNALIGNED 107008
#define ACL_ERROR_RT_STREAM_SUBSCRIBE 107011
#define ACL_ERROR_RT_THREAD_SUBSCRIBE 107012
#define ACL_ERROR_RT_STREAM_NO_CB_REG 107015
#define ACL_ERROR_RT_INVALID_MEMORY_TYPE 107016
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_INVALID_MALLOC_TYPE 107018
#define ACL_ERROR_RT_WAIT_TIMEOUT 107019
#define ACL_ERROR_RT_TASK_TIMEOUT 107020
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_MEMORY_FREE 207002
#define ACL_ERROR_RT_NO_DEVICE 207004
#define ACL_ERROR_RT_RESOURCE_ALLOC_FAIL 207005
#define ACL_ERROR_RT_NO_EVENT_RESOURCE 207007
#define ACL_ERROR_RT_NO_STREAM_RESOURCE 207008
#define ACL_ERROR_RT_NO_MODEL_RESOURCE 207010
#define ACL_ERROR_RT_OVER_LIMIT 207012
#define ACL_ERROR_RT_DEVICE_OOM 207018
#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#define ACL_ERROR_RT_CONTEXT_RELEASE_ERROR 507007
#define ACL_ERROR_RT_REPORT_TIMEOUT 507012
#define ACL_ERROR_RT_STREAM_NOT_COMPLETE 507004
#define ACL_ERROR_RT_EVENT_NOT_COMPLETE 507006
#define ACL_ERROR_RT_MODEL_EXECUTE 507011
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015
#define ACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046
#define ACL_ERROR_RT_EVENT_SYNC_TIMEOUT 507047
#define ACL_ERROR_RT_COPY_DATA 507052
#define ACL_ERROR_GE_PARAM_INVALID 145000
#define ACL_ERROR_GE_EXEC_NOT_INIT 145001
#define ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID 145002
#define ACL_ERROR_GE_EXEC_MODEL_ID_INVALID 145003
#define ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID 145006
#define ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID 145012
#define ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID 145013
#define ACL_ERROR_GE_AIPP_BATCH_EMPTY 145014
#define ACL_ERROR_GE_AIPP_NOT_EXIST 145015
#define ACL_ERROR_NOT_STATIC_AIPP 100038
#define ACL_ERROR_GE_SHAPE_INVALID 145021
#define ACL_ERROR_GE_DATATYPE_INVALID 145022
#define ACL_ERROR_GE_MEMORY_ALLOCATION 245000
#define ACL_ERROR_GE_LOAD_MODEL 545001
#define ACL_ERROR_GE_FAILURE 500002

/* ---- enums ------------------------------------------------------------- */
typedef enum {
    ACL_DT_UNDEFINED = -1,
    ACL_FLOAT = 0,
    ACL_FLOAT16 = 1,
    ACL_INT8 = 2,
    ACL_INT32 = 3,
    ACL_UINT8 = 4,
    ACL_INT16 = 6,
    ACL_UINT16 = 7,
    ACL_UINT32 = 8,
    ACL_INT64 = 9,
    ACL_UINT64 = 10,
    ACL_DOUBLE = 11,
    ACL_BOOL = 12,
    ACL_STRING = 13,
    ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17,
    ACL_BF16 = 27
} aclDataType;

typedef enum {
    ACL_FORMAT_UNDEFINED = -1,
    ACL_FORMAT_NCHW = 0,
    ACL_FORMAT_NHWC = 1,
    ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3,
    ACL_FORMAT_FRACTAL_Z = 4,
    ACL_FORMAT_NC1HWC0_C04 = 12,
    ACL_FORMAT_HWCN = 16,
    ACL_FORMAT_NDHWC = 27,
    ACL_FORMAT_FRACTAL_NZ = 29,
    ACL_FORMAT_NCDHW = 30,
    ACL_FORMAT_NDC1HWC0 = 32,
    ACL_FRACTAL_Z_3D = 33,
    ACL_FORMAT_NC = 35,
    ACL_FORMAT_NCL = 47
} aclFormat;

typedef enum aclrtRunMode {
    ACL_DEVICE = 0,
    ACL_HOST = 1
} aclrtRunMode;

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

typedef enum aclrtStreamStatus {
    ACL_STREAM_STATUS_COMPLETE = 0,
    ACL_STREAM_STATUS_NOT_READY = 1,
    ACL_STREAM_STATUS_RESERVED = 0xFFFF
} aclrtStreamStatus;

typedef enum aclrtCallbackBlockType {
    ACL_CALLBACK_NO_BLOCK = 0,
    ACL_CALLBACK_BLOCK = 1
} aclrtCallbackBlockType;

typedef enum aclrtFloatOverflowMode {
    ACL_RT_OVERFLOW_MODE_SATURATION = 0,
    ACL_RT_OVERFLOW_MODE_INFNAN = 1,
    ACL_RT_OVERFLOW_MODE_UNDEF = 2
} aclrtFloatOverflowMode;

typedef enum aclrtMemAttr {
    ACL_DDR_MEM = 0,
    ACL_HBM_MEM = 1,
    ACL_DDR_MEM_HUGE = 2,
    ACL_DDR_MEM_NORMAL = 3,
    ACL_HBM_MEM_HUGE = 4,
    ACL_HBM_MEM_NORMAL = 5,
    ACL_DDR_MEM_P2P_HUGE = 6,
    ACL_DDR_MEM_P2P_NORMAL = 7,
    ACL_HBM_MEM_P2P_HUGE = 8,
    ACL_HBM_MEM_P2P_NORMAL = 9,
    ACL_HBM_MEM_HUGE1G = 10,
    ACL_HBM_MEM_P2P_HUGE1G = 11,
    ACL_MEM_NORMAL = 12,
    ACL_MEM_HUGE = 13,
    ACL_MEM_HUGE1G = 14,
    ACL_MEM_P2P_NORMAL = 15,
    ACL_MEM_P2P_HUGE = 16,
    ACL_MEM_P2P_HUGE1G = 17
} aclrtMemAttr;

/* ---- event flags (aclrtCreateEventWithFlag) ---------------------------- */
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010U

/* ---- model constants and structs -------------------------------------- */
#define ACL_MAX_DIM_CNT 128
#define ACL_MAX_TENSOR_NAME_LEN 128
#define ACL_MAX_BATCH_NUM 128
#define ACL_MAX_HW_NUM 128
#define ACL_MAX_SHAPE_COUNT 128
#define ACL_DIM_ENDPOINTS 2
#define ACL_DYNAMIC_TENSOR_NAME "ascend_mbatch_shape_data"
#define ACL_DYNAMIC_AIPP_NAME "ascend_dynamic_aipp_data"

#define ACL_INVALID_NODE_INDEX 0xFFFFFFFF
#define ACL_UNKNOWN_RANK 0xFFFFFFFFFFFFFFFE

typedef enum {
    ACL_YUV420SP_U8 = 1,
    ACL_XRGB8888_U8 = 2,
    ACL_RGB888_U8 = 3,
    ACL_YUV400_U8 = 4,
    ACL_NC1HWC0DI_FP16 = 5,
    ACL_NC1HWC0DI_S8 = 6,
    ACL_ARGB8888_U8 = 7,
    ACL_YUYV_U8 = 8,
    ACL_YUV422SP_U8 = 9,
    ACL_AYUV444_U8 = 10,
    ACL_RAW10 = 11,
    ACL_RAW12 = 12,
    ACL_RAW16 = 13,
    ACL_RAW24 = 14,
    ACL_AIPP_RESERVED = 0xFFFF
} aclAippInputFormat;

typedef enum {
    ACL_DATA_WITHOUT_AIPP = 0,
    ACL_DATA_WITH_STATIC_AIPP = 1,
    ACL_DATA_WITH_DYNAMIC_AIPP = 2,
    ACL_DYNAMIC_AIPP_NODE = 3
} aclmdlInputAippType;

typedef struct aclmdlIODims {
    char name[ACL_MAX_TENSOR_NAME_LEN];
    size_t dimCount;
    int64_t dims[ACL_MAX_DIM_CNT];
} aclmdlIODims;

typedef struct aclmdlIODimsRange {
    size_t rangeCount;
    int64_t range[ACL_MAX_DIM_CNT][ACL_DIM_ENDPOINTS];
} aclmdlIODimsRange;

/* aclmdlGetFirstAippInfo: one input's AIPP (acl_mdl.h) */
typedef struct aclAippExtendInfo aclAippExtendInfo;

typedef struct aclAippDims {
    aclmdlIODims srcDims;        /* the model input before AIPP was inserted */
    size_t srcSize;
    aclmdlIODims aippOutdims;    /* what AIPP produces */
    size_t aippOutSize;
} aclAippDims;

typedef struct aclAippInfo {
    aclAippInputFormat inputFormat;
    int32_t srcImageSizeW;
    int32_t srcImageSizeH;
    int8_t cropSwitch;
    int32_t loadStartPosW;
    int32_t loadStartPosH;
    int32_t cropSizeW;
    int32_t cropSizeH;
    int8_t resizeSwitch;
    int32_t resizeOutputW;
    int32_t resizeOutputH;
    int8_t paddingSwitch;
    int32_t leftPaddingSize;
    int32_t rightPaddingSize;
    int32_t topPaddingSize;
    int32_t bottomPaddingSize;
    int8_t cscSwitch;
    int8_t rbuvSwapSwitch;
    int8_t axSwapSwitch;
    int8_t singleLineMode;
    int32_t matrixR0C0;
    int32_t matrixR0C1;
    int32_t matrixR0C2;
    int32_t matrixR1C0;
    int32_t matrixR1C1;
    int32_t matrixR1C2;
    int32_t matrixR2C0;
    int32_t matrixR2C1;
    int32_t matrixR2C2;
    int32_t outputBias0;
    int32_t outputBias1;
    int32_t outputBias2;
    int32_t inputBias0;
    int32_t inputBias1;
    int32_t inputBias2;
    int32_t meanChn0;
    int32_t meanChn1;
    int32_t meanChn2;
    int32_t meanChn3;
    float minChn0;
    float minChn1;
    float minChn2;
    float minChn3;
    float varReciChn0;
    float varReciChn1;
    float varReciChn2;
    float varReciChn3;
    aclFormat srcFormat;         /* the original model input's format, dtype and rank */
    aclDataType srcDatatype;
    size_t srcDimNum;
    size_t shapeCount;           /* entries of outDims: 1 for a static model */
    aclAippDims outDims[ACL_MAX_SHAPE_COUNT];
    aclAippExtendInfo *aippExtend;   /* reserved, NULL */
} aclAippInfo;

typedef struct aclmdlBatch {
    size_t batchCount;
    uint64_t batch[ACL_MAX_BATCH_NUM];
} aclmdlBatch;

typedef struct aclmdlHW {
    size_t hwCount;
    uint64_t hw[ACL_MAX_HW_NUM][2];
} aclmdlHW;

/* ---- prototypes --------------------------------------------------------- */
#define AE_ACL_FN(required, ret, name, params) ret name params;
#include "ascend_engine/acl_functions.h"
#undef AE_ACL_FN

/* Exported by the simulator for programs written against CANN (the engine
 * itself does not load them): the reference-counted finalize, the
 * application log, and the deprecated 32-bit buffer size. */
typedef enum {
    ACL_DEBUG = 0,
    ACL_INFO = 1,
    ACL_WARNING = 2,
    ACL_ERROR = 3,
} aclLogLevel;

aclError aclFinalizeReference(uint64_t *refCount);
void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer);

#ifdef __cplusplus
}
#endif

#endif /* AE_USE_CANN_HEADERS */
#endif /* ASCEND_ENGINE_ACL_H */
