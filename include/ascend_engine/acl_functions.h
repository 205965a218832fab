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

/* peer access between devices (optional: some products lack it) */
AE_ACL_FN(0, aclError, aclrtDeviceCanAccessPeer, (int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId))
AE_ACL_FN(0, aclError, aclrtDeviceEnablePeerAccess, (int32_t peerDeviceId, uint32_t flags))
AE_ACL_FN(0, aclError, aclrtDeviceDisablePeerAccess, (int32_t peerDeviceId))

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
AE_ACL_FN(0, aclError, aclmdlLoadFromMemWithMem, (const void *model, size_t modelSize, uint32_t *modelId, void *workPtr, size_t workSize, void *weightPtr, size_t weightSize))
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

/* tensor descriptors (acl_base_mdl.h) */
AE_ACL_FN(0, aclTensorDesc *, aclCreateTensorDesc, (aclDataType dataType, int numDims, const int64_t *dims, aclFormat format))
AE_ACL_FN(0, void, aclDestroyTensorDesc, (const aclTensorDesc *desc))
AE_ACL_FN(0, aclDataType, aclGetTensorDescType, (const aclTensorDesc *desc))
AE_ACL_FN(0, aclFormat, aclGetTensorDescFormat, (const aclTensorDesc *desc))
AE_ACL_FN(0, size_t, aclGetTensorDescSize, (const aclTensorDesc *desc))
AE_ACL_FN(0, size_t, aclGetTensorDescElementCount, (const aclTensorDesc *desc))
AE_ACL_FN(0, size_t, aclGetTensorDescNumDims, (const aclTensorDesc *desc))
AE_ACL_FN(0, aclError, aclGetTensorDescDimV2, (const aclTensorDesc *desc, size_t index, int64_t *dimSize))
AE_ACL_FN(0, void *, aclGetTensorDescAddress, (const aclTensorDesc *desc))
AE_ACL_FN(0, aclTensorDesc *, aclGetTensorDescByIndex, (aclTensorDesc *desc, size_t index))
AE_ACL_FN(0, aclError, aclmdlSetDatasetTensorDesc, (aclmdlDataset *dataset, aclTensorDesc *tensorDesc, size_t index))
AE_ACL_FN(0, aclTensorDesc *, aclmdlGetDatasetTensorDesc, (const aclmdlDataset *dataset, size_t index))

/* dynamic image size, dynamic dims and shape ranges */
AE_ACL_FN(0, aclError, aclmdlGetDynamicHW, (const aclmdlDesc *modelDesc, size_t index, aclmdlHW *hw))
AE_ACL_FN(0, aclError, aclmdlSetDynamicHWSize, (uint32_t modelId, aclmdlDataset *dataset, size_t index, uint64_t height, uint64_t width))
AE_ACL_FN(0, aclError, aclmdlGetInputDynamicGearCount, (const aclmdlDesc *modelDesc, size_t index, size_t *gearCount))
AE_ACL_FN(0, aclError, aclmdlGetInputDynamicDims, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims, size_t gearCount))
AE_ACL_FN(0, aclError, aclmdlSetInputDynamicDims, (uint32_t modelId, aclmdlDataset *dataset, size_t index, const aclmdlIODims *dims))
AE_ACL_FN(0, aclError, aclmdlGetInputDimsV2, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims))
AE_ACL_FN(0, aclError, aclmdlGetInputDimsRange, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODimsRange *dimsRange))

/* AIPP parameter sets (simulator models have no AIPP inputs) */
AE_ACL_FN(0, aclmdlAIPP *, aclmdlCreateAIPP, (uint64_t batchSize))
AE_ACL_FN(0, aclError, aclmdlDestroyAIPP, (const aclmdlAIPP *aippParmsSet))
AE_ACL_FN(0, aclError, aclmdlSetAIPPInputFormat, (aclmdlAIPP *aippParmsSet, aclAippInputFormat inputFormat))
AE_ACL_FN(0, aclError, aclmdlSetAIPPCscParams, (aclmdlAIPP *aippParmsSet, int8_t cscSwitch, int16_t cscMatrixR0C0, int16_t cscMatrixR0C1, int16_t cscMatrixR0C2, int16_t cscMatrixR1C0, int16_t cscMatrixR1C1, int16_t cscMatrixR1C2, int16_t cscMatrixR2C0, int16_t cscMatrixR2C1, int16_t cscMatrixR2C2, uint8_t cscOutputBiasR0, uint8_t cscOutputBiasR1, uint8_t cscOutputBiasR2, uint8_t cscInputBiasR0, uint8_t cscInputBiasR1, uint8_t cscInputBiasR2))
AE_ACL_FN(0, aclError, aclmdlSetAIPPRbuvSwapSwitch, (aclmdlAIPP *aippParmsSet, int8_t rbuvSwapSwitch))
AE_ACL_FN(0, aclError, aclmdlSetAIPPAxSwapSwitch, (aclmdlAIPP *aippParmsSet, int8_t axSwapSwitch))
AE_ACL_FN(0, aclError, aclmdlSetAIPPSrcImageSize, (aclmdlAIPP *aippParmsSet, int32_t srcImageSizeW, int32_t srcImageSizeH))
AE_ACL_FN(0, aclError, aclmdlSetAIPPCropParams, (aclmdlAIPP *aippParmsSet, int8_t cropSwitch, int32_t cropStartPosW, int32_t cropStartPosH, int32_t cropSizeW, int32_t cropSizeH, uint64_t batchIndex))
AE_ACL_FN(0, aclError, aclmdlSetAIPPPaddingParams, (aclmdlAIPP *aippParmsSet, int8_t paddingSwitch, int32_t paddingSizeTop, int32_t paddingSizeBottom, int32_t paddingSizeLeft, int32_t paddingSizeRight, uint64_t batchIndex))
AE_ACL_FN(0, aclError, aclmdlSetAIPPDtcPixelMean, (aclmdlAIPP *aippParmsSet, int16_t dtcPixelMeanChn0, int16_t dtcPixelMeanChn1, int16_t dtcPixelMeanChn2, int16_t dtcPixelMeanChn3, uint64_t batchIndex))
AE_ACL_FN(0, aclError, aclmdlSetAIPPDtcPixelMin, (aclmdlAIPP *aippParmsSet, float dtcPixelMinChn0, float dtcPixelMinChn1, float dtcPixelMinChn2, float dtcPixelMinChn3, uint64_t batchIndex))
AE_ACL_FN(0, aclError, aclmdlSetAIPPPixelVarReci, (aclmdlAIPP *aippParmsSet, float dtcPixelVarReciChn0, float dtcPixelVarReciChn1, float dtcPixelVarReciChn2, float dtcPixelVarReciChn3, uint64_t batchIndex))
AE_ACL_FN(0, aclError, aclmdlSetInputAIPP, (uint32_t modelId, aclmdlDataset *dataset, size_t index, const aclmdlAIPP *aippParmsSet))
AE_ACL_FN(0, aclError, aclmdlGetAippType, (uint32_t modelId, size_t index, aclmdlInputAippType *type, size_t *dynamicAttachedDataIndex))
AE_ACL_FN(0, aclError, aclmdlGetFirstAippInfo, (uint32_t modelId, size_t index, aclAippInfo *aippInfo))
AE_ACL_FN(0, aclError, aclmdlGetAippDataSize, (uint64_t batchSize, size_t *size))

/* device exceptions and saturation mode */
AE_ACL_FN(0, aclError, aclrtSetExceptionInfoCallback, (aclrtExceptionInfoCallback callback))
AE_ACL_FN(0, uint32_t, aclrtGetTaskIdFromExceptionInfo, (const aclrtExceptionInfo *info))
AE_ACL_FN(0, uint32_t, aclrtGetStreamIdFromExceptionInfo, (const aclrtExceptionInfo *info))
AE_ACL_FN(0, uint32_t, aclrtGetThreadIdFromExceptionInfo, (const aclrtExceptionInfo *info))
AE_ACL_FN(0, uint32_t, aclrtGetDeviceIdFromExceptionInfo, (const aclrtExceptionInfo *info))
AE_ACL_FN(0, uint32_t, aclrtGetErrorCodeFromExceptionInfo, (const aclrtExceptionInfo *info))
AE_ACL_FN(0, aclError, aclmdlCreateAndGetOpDesc, (uint32_t deviceId, uint32_t streamId, uint32_t taskId, char *opName, size_t opNameLen, aclTensorDesc **inputDesc, size_t *numInputs, aclTensorDesc **outputDesc, size_t *numOutputs))
AE_ACL_FN(0, aclError, aclrtSetDeviceSatMode, (aclrtFloatOverflowMode mode))
AE_ACL_FN(0, aclError, aclrtGetDeviceSatMode, (aclrtFloatOverflowMode *mode))
