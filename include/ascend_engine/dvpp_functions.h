/*
 * The DVPP functions the executor's image nodes call (libacl_dvpp.so), one
 * entry each, as in acl_functions.h:
 *
 *     AE_DVPP_FN(return type, name, (parameter list))
 *
 * All of them are needed by an engine with image nodes; the loader refuses a
 * DVPP library that lacks one (naming it), and an engine without image nodes
 * never loads the library.  No include guard: expanded several times.
 */

/* DVPP memory: on Ascend 310 every DVPP input and output lies in it */
AE_DVPP_FN(aclError, acldvppMalloc, (void **devPtr, size_t size))
AE_DVPP_FN(aclError, acldvppFree, (void *devPtr))

/* channels */
AE_DVPP_FN(acldvppChannelDesc *, acldvppCreateChannelDesc, (void))
AE_DVPP_FN(aclError, acldvppDestroyChannelDesc, (acldvppChannelDesc *channelDesc))
AE_DVPP_FN(aclError, acldvppSetChannelDescMode, (acldvppChannelDesc *channelDesc, uint32_t mode))
AE_DVPP_FN(aclError, acldvppCreateChannel, (acldvppChannelDesc *channelDesc))
AE_DVPP_FN(aclError, acldvppDestroyChannel, (acldvppChannelDesc *channelDesc))

/* picture descriptions */
AE_DVPP_FN(acldvppPicDesc *, acldvppCreatePicDesc, (void))
AE_DVPP_FN(aclError, acldvppDestroyPicDesc, (acldvppPicDesc *picDesc))
AE_DVPP_FN(aclError, acldvppSetPicDescData, (acldvppPicDesc *picDesc, void *dataDev))
AE_DVPP_FN(aclError, acldvppSetPicDescSize, (acldvppPicDesc *picDesc, uint32_t size))
AE_DVPP_FN(aclError, acldvppSetPicDescFormat, (acldvppPicDesc *picDesc, acldvppPixelFormat format))
AE_DVPP_FN(aclError, acldvppSetPicDescWidth, (acldvppPicDesc *picDesc, uint32_t width))
AE_DVPP_FN(aclError, acldvppSetPicDescHeight, (acldvppPicDesc *picDesc, uint32_t height))
AE_DVPP_FN(aclError, acldvppSetPicDescWidthStride, (acldvppPicDesc *picDesc, uint32_t widthStride))
AE_DVPP_FN(aclError, acldvppSetPicDescHeightStride, (acldvppPicDesc *picDesc, uint32_t heightStride))
/* after a task: nonzero when the picture was not written (a JPEG whose data did not decode) */
AE_DVPP_FN(aclError, acldvppSetPicDescRetCode, (acldvppPicDesc *picDesc, uint32_t retCode))
AE_DVPP_FN(uint32_t, acldvppGetPicDescRetCode, (const acldvppPicDesc *picDesc))
AE_DVPP_FN(acldvppBatchPicDesc *, acldvppCreateBatchPicDesc, (uint32_t batchSize))
AE_DVPP_FN(acldvppPicDesc *, acldvppGetPicDesc, (acldvppBatchPicDesc *batchPicDesc, uint32_t index))
AE_DVPP_FN(aclError, acldvppDestroyBatchPicDesc, (acldvppBatchPicDesc *batchPicDesc))

/* regions and resize configurations */
AE_DVPP_FN(acldvppRoiConfig *, acldvppCreateRoiConfig, (uint32_t left, uint32_t right, uint32_t top, uint32_t bottom))
AE_DVPP_FN(aclError, acldvppDestroyRoiConfig, (acldvppRoiConfig *roiConfig))
AE_DVPP_FN(aclError, acldvppSetRoiConfig, (acldvppRoiConfig *config, uint32_t left, uint32_t right, uint32_t top, uint32_t bottom))
AE_DVPP_FN(acldvppResizeConfig *, acldvppCreateResizeConfig, (void))
AE_DVPP_FN(aclError, acldvppDestroyResizeConfig, (acldvppResizeConfig *resizeConfig))
AE_DVPP_FN(aclError, acldvppSetResizeConfigInterpolation, (acldvppResizeConfig *resizeConfig, uint32_t interpolation))

/* JPEG decode (JPEGD) */
AE_DVPP_FN(aclError, acldvppJpegGetImageInfoV2, (const void *data, uint32_t size, uint32_t *width, uint32_t *height, int32_t *components, acldvppJpegFormat *format))
AE_DVPP_FN(aclError, acldvppJpegDecodeAsync, (acldvppChannelDesc *channelDesc, const void *data, uint32_t size, acldvppPicDesc *outputDesc, aclrtStream stream))

/* VPC */
AE_DVPP_FN(aclError, acldvppVpcResizeAsync, (acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, acldvppResizeConfig *resizeConfig, aclrtStream stream))
AE_DVPP_FN(aclError, acldvppVpcBatchCropResizeAsync, (acldvppChannelDesc *channelDesc, acldvppBatchPicDesc *srcBatchPicDescs, uint32_t *roiNums, uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs, acldvppRoiConfig *cropAreas[], acldvppResizeConfig *resizeConfig, aclrtStream stream))
