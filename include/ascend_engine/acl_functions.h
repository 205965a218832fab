/*
 * The AscendCL functions ascend-engine uses, one entry each:
 *
 *     AE_ACL_FN(required, return type, name, (parameter list))
 *
 * `required` is 1 for functions without which nothing works (the loader
 * refuses a library that lacks one) and 0 for optional ones (a missing
 * optional function is reported by name when first needed).
 *
 * Includers define AE_ACL_FN before including this file.  No include guard:
 * it is meant to be expanded several times.
 */

/* process, device, context */
AE_ACL_FN(1, aclError, aclInit, (const char *configPath))
AE_ACL_FN(1, aclError, aclFinalize, (void))
AE_ACL_FN(1, const char *, aclGetRecentErrMsg, (void))
AE_ACL_FN(1, aclError, aclrtSetDevice, (int32_t deviceId))
AE_ACL_FN(1, aclError, aclrtResetDevice, (int32_t deviceId))
AE_ACL_FN(1, aclError, aclrtGetDevice, (int32_t *deviceId))
AE_ACL_FN(1, aclError, aclrtGetDeviceCount, (uint32_t *count))
AE_ACL_FN(0, aclError, aclrtGetRunMode, (aclrtRunMode *runMode))
AE_ACL_FN(0, const char *, aclrtGetSocName, (void))
AE_ACL_FN(1, aclError, aclrtCreateContext, (aclrtContext *context, int32_t deviceId))
AE_ACL_FN(1, aclError, aclrtDestroyContext, (aclrtContext context))
AE_ACL_FN(1, aclError, aclrtSetCurrentContext, (aclrtContext context))
AE_ACL_FN(1, aclError, aclrtGetCurrentContext, (aclrtContext *context))

/* streams */
AE_ACL_FN(1, aclError, aclrtCreateStream, (aclrtStream *stream))
AE_ACL_FN(1, aclError, aclrtDestroyStream, (aclrtStream stream))
AE_ACL_FN(1, aclError, aclrtSynchronizeStream, (aclrtStream stream))
AE_ACL_FN(0, aclError, aclrtSynchronizeStreamWithTimeout, (aclrtStream stream, int32_t timeout))
AE_ACL_FN(1, aclError, aclrtStreamWaitEvent, (aclrtStream stream, aclrtEvent event))
AE_ACL_FN(0, aclError, aclrtStreamQuery, (aclrtStream stream, aclrtStreamStatus *status))

/* events */
AE_ACL_FN(1, aclError, aclrtCreateEvent, (aclrtEvent *event))
AE_ACL_FN(0, aclError, aclrtCreateEventWithFlag, (aclrtEvent *event, uint32_t flag))
AE_ACL_FN(1, aclError, aclrtDestroyEvent, (aclrtEvent event))
AE_ACL_FN(1, aclError, aclrtRecordEvent, (aclrtEvent event, aclrtStream stream))
AE_ACL_FN(1, aclError, aclrtResetEvent, (aclrtEvent event, aclrtStream stream))
AE_ACL_FN(1, aclError, aclrtQueryEventStatus, (aclrtEvent event, aclrtEventRecordedStatus *status))
AE_ACL_FN(1, aclError, aclrtSynchronizeEvent, (aclrtEvent event))
AE_ACL_FN(0, aclError, aclrtSynchronizeEventWithTimeout, (aclrtEvent event, int32_t timeout))
AE_ACL_FN(1, aclError, aclrtEventElapsedTime, (float *ms, aclrtEvent startEvent, aclrtEvent endEvent))

/* memory and copies */
AE_ACL_FN(1, aclError, aclrtMalloc, (void **devPtr, size_t size, aclrtMemMallocPolicy policy))
AE_ACL_FN(1, aclError, aclrtFree, (void *devPtr))
AE_ACL_FN(1, aclError, aclrtMallocHost, (void **hostPtr, size_t size))
AE_ACL_FN(1, aclError, aclrtFreeHost, (void *hostPtr))
AE_ACL_FN(1, aclError, aclrtMemcpy, (void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind))
AE_ACL_FN(1, aclError, aclrtMemcpyAsync, (void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream))
AE_ACL_FN(1, aclError, aclrtMemset, (void *devPtr, size_t maxCount, int32_t value, size_t count))
AE_ACL_FN(1, aclError, aclrtMemsetAsync, (void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream))
AE_ACL_FN(1, aclError, aclrtGetMemInfo, (aclrtMemAttr attr, size_t *free, size_t *total))

/* host callbacks */
AE_ACL_FN(0, aclError, aclrtLaunchCallback, (aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream))
AE_ACL_FN(0, aclError, aclrtSubscribeReport, (uint64_t threadId, aclrtStream stream))
AE_ACL_FN(0, aclError, aclrtUnSubscribeReport, (uint64_t threadId, aclrtStream stream))
AE_ACL_FN(0, aclError, aclrtProcessReport, (int32_t timeout))

/* data types */
AE_ACL_FN(0, size_t, aclDataTypeSize, (aclDataType dataType))
AE_ACL_FN(0, float, aclFloat16ToFloat, (aclFloat16 value))
AE_ACL_FN(0, aclFloat16, aclFloatToFloat16, (float value))

/* data buffers and datasets */
AE_ACL_FN(1, aclDataBuffer *, aclCreateDataBuffer, (void *data, size_t size))
AE_ACL_FN(1, aclError, aclDestroyDataBuffer, (const aclDataBuffer *dataBuffer))
AE_ACL_FN(0, aclError, aclUpdateDataBuffer, (aclDataBuffer *dataBuffer, void *data, size_t size))
AE_ACL_FN(1, void *, aclGetDataBufferAddr, (const aclDataBuffer *dataBuffer))
AE_ACL_FN(1, size_t, aclGetDataBufferSizeV2, (const aclDataBuffer *dataBuffer))
AE_ACL_FN(1, aclmdlDataset *, aclmdlCreateDataset, (void))
AE_ACL_FN(1, aclError, aclmdlDestroyDataset, (const aclmdlDataset *dataset))
AE_ACL_FN(1, aclError, aclmdlAddDatasetBuffer, (aclmdlDataset *dataset, aclDataBuffer *dataBuffer))
AE_ACL_FN(1, size_t, aclmdlGetDatasetNumBuffers, (const aclmdlDataset *dataset))
AE_ACL_FN(1, aclDataBuffer *, aclmdlGetDatasetBuffer, (const aclmdlDataset *dataset, size_t index))

/* models: load, execute */
AE_ACL_FN(1, aclError, aclmdlLoadFromFile, (const char *modelPath, uint32_t *modelId))
AE_ACL_FN(1, aclError, aclmdlLoadFromMem, (const void *model, size_t modelSize, uint32_t *modelId))
AE_ACL_FN(0, aclError, aclmdlQuerySize, (const char *fileName, size_t *workSize, size_t *weightSize))
AE_ACL_FN(0, aclError, aclmdlLoadFromFileWithMem, (const char *modelPath, uint32_t *modelId, void *workPtr, size_t workSize, void *weightPtr, size_t weightSize))
AE_ACL_FN(1, aclError, aclmdlUnload, (uint32_t modelId))
AE_ACL_FN(1, aclError, aclmdlExecute, (uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output))
AE_ACL_FN(1, aclError, aclmdlExecuteAsync, (uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output, aclrtStream stream))

/* models: description */
AE_ACL_FN(1, aclmdlDesc *, aclmdlCreateDesc, (void))
AE_ACL_FN(1, aclError, aclmdlDestroyDesc, (aclmdlDesc *modelDesc))
AE_ACL_FN(1, aclError, aclmdlGetDesc, (aclmdlDesc *modelDesc, uint32_t modelId))
AE_ACL_FN(1, size_t, aclmdlGetNumInputs, (aclmdlDesc *modelDesc))
AE_ACL_FN(1, size_t, aclmdlGetNumOutputs, (aclmdlDesc *modelDesc))
AE_ACL_FN(1, size_t, aclmdlGetInputSizeByIndex, (aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(1, size_t, aclmdlGetOutputSizeByIndex, (aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(1, aclError, aclmdlGetInputDims, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims))
AE_ACL_FN(1, aclError, aclmdlGetOutputDims, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims))
AE_ACL_FN(0, aclError, aclmdlGetCurOutputDims, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims))
AE_ACL_FN(1, aclDataType, aclmdlGetInputDataType, (const aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(1, aclDataType, aclmdlGetOutputDataType, (const aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(0, aclFormat, aclmdlGetInputFormat, (const aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(0, aclFormat, aclmdlGetOutputFormat, (const aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(1, const char *, aclmdlGetInputNameByIndex, (const aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(1, const char *, aclmdlGetOutputNameByIndex, (const aclmdlDesc *modelDesc, size_t index))
AE_ACL_FN(1, aclError, aclmdlGetInputIndexByName, (const aclmdlDesc *modelDesc, const char *name, size_t *index))
AE_ACL_FN(0, aclError, aclmdlGetOutputIndexByName, (const aclmdlDesc *modelDesc, const char *name, size_t *index))
AE_ACL_FN(1, aclError, aclmdlGetDynamicBatch, (const aclmdlDesc *modelDesc, aclmdlBatch *batch))
AE_ACL_FN(1, aclError, aclmdlSetDynamicBatchSize, (uint32_t modelId, aclmdlDataset *dataset, size_t index, uint64_t batchSize))
