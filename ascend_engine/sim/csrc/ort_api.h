/*
 * ort_api.h -- our own declarations of the part of ONNX Runtime's C API the
 * simulator calls (ort_exec.c), to run the ONNX graph of a version-3 model.
 *
 * ONNX Runtime exports one function, OrtGetApiBase; GetApi(version) returns
 * a table of function pointers whose order is fixed: entries are only ever
 * appended, and a library accepts every version up to its own.  We declare
 * version 1 of the table up to the last entry we call (ReleaseSessionOptions,
 * entry 100), with placeholder slots for the entries we do not call, so any
 * onnxruntime 1.x library serves.  The positions are listed in
 * docs/simulator.md ("ONNX models").
 */
#ifndef ASCEND_SIM_ORT_API_H
#define ASCEND_SIM_ORT_API_H

#include <stddef.h>
#include <stdint.h>

#define SIM_ORT_API_VERSION 1u

typedef struct OrtStatus OrtStatus;   /* NULL means success */
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtAllocator OrtAllocator;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;

/* ONNXTensorElementDataType values (ONNX's TensorProto.DataType) */
enum {
    SIM_ORT_FLOAT = 1, SIM_ORT_UINT8 = 2, SIM_ORT_INT32 = 6, SIM_ORT_INT64 = 7, SIM_ORT_FLOAT16 = 10,
};
enum { SIM_ORT_LOG_FATAL = 4 };          /* OrtLoggingLevel */
enum { SIM_ORT_DEVICE_ALLOCATOR = 0 };   /* OrtAllocatorType */
enum { SIM_ORT_MEM_DEFAULT = 0 };        /* OrtMemType */
enum { SIM_ORT_SEQUENTIAL = 0 };         /* ExecutionMode */
enum { SIM_ORT_ENABLE_ALL = 99 };        /* GraphOptimizationLevel */

typedef struct sim_ort_api {
    OrtStatus *(*CreateStatus)(int code, const char *msg);                               /* 0 */
    int (*GetErrorCode)(const OrtStatus *status);                                        /* 1 */
    const char *(*GetErrorMessage)(const OrtStatus *status);                             /* 2 */
    OrtStatus *(*CreateEnv)(int log_level, const char *logid, OrtEnv **out);             /* 3 */
    void *unused_4_7[4];
    OrtStatus *(*CreateSessionFromArray)(const OrtEnv *env, const void *data, size_t len,
                                         const OrtSessionOptions *options, OrtSession **out);   /* 8 */
    OrtStatus *(*Run)(OrtSession *session, const OrtRunOptions *run_options, const char *const *input_names,
                      const OrtValue *const *inputs, size_t n_inputs, const char *const *output_names,
                      size_t n_outputs, OrtValue **outputs);                             /* 9 */
    OrtStatus *(*CreateSessionOptions)(OrtSessionOptions **out);                         /* 10 */
    void *unused_11_12[2];
    OrtStatus *(*SetSessionExecutionMode)(OrtSessionOptions *options, int mode);         /* 13 */
    void *unused_14_22[9];
    OrtStatus *(*SetSessionGraphOptimizationLevel)(OrtSessionOptions *options, int level);   /* 23 */
    OrtStatus *(*SetIntraOpNumThreads)(OrtSessionOptions *options, int n);               /* 24 */
    OrtStatus *(*SetInterOpNumThreads)(OrtSessionOptions *options, int n);               /* 25 */
    void *unused_26_29[4];
    OrtStatus *(*SessionGetInputCount)(const OrtSession *session, size_t *out);          /* 30 */
    OrtStatus *(*SessionGetOutputCount)(const OrtSession *session, size_t *out);         /* 31 */
    void *unused_32_35[4];
    OrtStatus *(*SessionGetInputName)(const OrtSession *session, size_t index, OrtAllocator *allocator,
                                      char **out);                                       /* 36 */
    OrtStatus *(*SessionGetOutputName)(const OrtSession *session, size_t index, OrtAllocator *allocator,
                                       char **out);                                      /* 37 */
    void *unused_38_48[11];
    OrtStatus *(*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo *info, void *data, size_t len,
                                                 const int64_t *shape, size_t rank, int elem_type,
                                                 OrtValue **out);                        /* 49 */
    void *unused_50;
    OrtStatus *(*GetTensorMutableData)(OrtValue *value, void **out);                     /* 51 */
    void *unused_52_60[9];
    OrtStatus *(*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo *info, size_t *out);   /* 61 */
    OrtStatus *(*GetDimensions)(const OrtTensorTypeAndShapeInfo *info, int64_t *dims, size_t n);   /* 62 */
    void *unused_63_64[2];
    OrtStatus *(*GetTensorTypeAndShape)(const OrtValue *value, OrtTensorTypeAndShapeInfo **out);   /* 65 */
    void *unused_66_68[3];
    OrtStatus *(*CreateCpuMemoryInfo)(int allocator_type, int mem_type, OrtMemoryInfo **out);   /* 69 */
    void *unused_70_75[6];
    OrtStatus *(*AllocatorFree)(OrtAllocator *allocator, void *p);                       /* 76 */
    void *unused_77;
    OrtStatus *(*GetAllocatorWithDefaultOptions)(OrtAllocator **out);                    /* 78 */
    void *unused_79_91[13];
    void (*ReleaseEnv)(OrtEnv *env);                                                     /* 92 */
    void (*ReleaseStatus)(OrtStatus *status);                                            /* 93 */
    void (*ReleaseMemoryInfo)(OrtMemoryInfo *info);                                      /* 94 */
    void (*ReleaseSession)(OrtSession *session);                                         /* 95 */
    void (*ReleaseValue)(OrtValue *value);                                               /* 96 */
    void *unused_97_98[2];
    void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *info);             /* 99 */
    void (*ReleaseSessionOptions)(OrtSessionOptions *options);                           /* 100 */
} sim_ort_api;

_Static_assert(offsetof(sim_ort_api, CreateSessionFromArray) == 8 * sizeof(void *), "OrtApi entry 8");
_Static_assert(offsetof(sim_ort_api, SetSessionGraphOptimizationLevel) == 23 * sizeof(void *), "OrtApi entry 23");
_Static_assert(offsetof(sim_ort_api, SessionGetInputCount) == 30 * sizeof(void *), "OrtApi entry 30");
_Static_assert(offsetof(sim_ort_api, SessionGetInputName) == 36 * sizeof(void *), "OrtApi entry 36");
_Static_assert(offsetof(sim_ort_api, CreateTensorWithDataAsOrtValue) == 49 * sizeof(void *), "OrtApi entry 49");
_Static_assert(offsetof(sim_ort_api, GetTensorMutableData) == 51 * sizeof(void *), "OrtApi entry 51");
_Static_assert(offsetof(sim_ort_api, GetDimensionsCount) == 61 * sizeof(void *), "OrtApi entry 61");
_Static_assert(offsetof(sim_ort_api, GetTensorTypeAndShape) == 65 * sizeof(void *), "OrtApi entry 65");
_Static_assert(offsetof(sim_ort_api, ReleaseTensorTypeAndShapeInfo) == 99 * sizeof(void *), "OrtApi entry 99");
_Static_assert(offsetof(sim_ort_api, AllocatorFree) == 76 * sizeof(void *), "OrtApi entry 76");
_Static_assert(offsetof(sim_ort_api, GetAllocatorWithDefaultOptions) == 78 * sizeof(void *), "OrtApi entry 78");
_Static_assert(offsetof(sim_ort_api, CreateCpuMemoryInfo) == 69 * sizeof(void *), "OrtApi entry 69");
_Static_assert(offsetof(sim_ort_api, ReleaseEnv) == 92 * sizeof(void *), "OrtApi entry 92");
_Static_assert(offsetof(sim_ort_api, ReleaseSessionOptions) == 100 * sizeof(void *), "OrtApi entry 100");

typedef struct sim_ort_api_base {
    const sim_ort_api *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} sim_ort_api_base;

#endif /* ASCEND_SIM_ORT_API_H */
