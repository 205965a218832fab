/*
 * acl/ops/acl_dvpp.h -- ascend-engine's own declarations of the few DVPP
 * (image pre-processing) functions that AscendCL clients commonly call: the
 * DVPP memory allocator, channel and picture descriptions, JPEG decoding and
 * VPC resizing: CANN's names, argument lists and enum values, not a copy of
 * CANN's header, which the torch-npu wheel does not ship (docs/toolkit.md,
 * "Headers").  A simulator toolkit installs it when its header source lacks one.
 *
 * In the simulator's libacl_dvpp.so only acldvppMalloc and acldvppFree do
 * real work; every other function returns ACL_ERROR_API_NOT_SUPPORT (200001)
 * with a message for aclGetRecentErrMsg(), and the Create functions return
 * NULL after recording that message (docs/toolkit.md).
 */
#ifndef AE_ACL_OPS_ACL_DVPP_H
#define AE_ACL_OPS_ACL_DVPP_H

#include <stddef.h>
#include <stdint.h>

#ifndef AE_DVPP_OWN_BASE   /* the simulator's own build brings its acl.h first */
#include "acl/acl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct acldvppChannelDesc acldvppChannelDesc;
typedef struct acldvppPicDesc acldvppPicDesc;
typedef struct acldvppResizeConfig acldvppResizeConfig;

/* Pixel formats (8-bit ones; the values are CANN's). */
enum acldvppPixelFormat {
    PIXEL_FORMAT_YUV_400 = 0,
    PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1, /* NV12 */
    PIXEL_FORMAT_YVU_SEMIPLANAR_420 = 2, /* NV21 */
    PIXEL_FORMAT_YUV_SEMIPLANAR_422 = 3,
    PIXEL_FORMAT_YVU_SEMIPLANAR_422 = 4,
    PIXEL_FORMAT_YUV_SEMIPLANAR_444 = 5,
    PIXEL_FORMAT_YVU_SEMIPLANAR_444 = 6,
    PIXEL_FORMAT_YUYV_PACKED_422 = 7,
    PIXEL_FORMAT_UYVY_PACKED_422 = 8,
    PIXEL_FORMAT_YVYU_PACKED_422 = 9,
    PIXEL_FORMAT_VYUY_PACKED_422 = 10,
    PIXEL_FORMAT_YUV_PACKED_444 = 11,
    PIXEL_FORMAT_RGB_888 = 12,
    PIXEL_FORMAT_BGR_888 = 13,
    PIXEL_FORMAT_ARGB_8888 = 14,
    PIXEL_FORMAT_ABGR_8888 = 15,
    PIXEL_FORMAT_RGBA_8888 = 16,
    PIXEL_FORMAT_BGRA_8888 = 17
};
typedef enum acldvppPixelFormat acldvppPixelFormat;

/* DVPP memory: device memory the DVPP hardware can reach. */
aclError acldvppMalloc(void **devPtr, size_t size);
aclError acldvppFree(void *devPtr);

/* Channels: one per pre-processing pipeline. */
acldvppChannelDesc *acldvppCreateChannelDesc(void);
aclError acldvppDestroyChannelDesc(acldvppChannelDesc *channelDesc);
aclError acldvppCreateChannel(acldvppChannelDesc *channelDesc);
aclError acldvppDestroyChannel(acldvppChannelDesc *channelDesc);

/* Picture descriptions: where an image lives and how it is laid out. */
acldvppPicDesc *acldvppCreatePicDesc(void);
aclError acldvppDestroyPicDesc(acldvppPicDesc *picDesc);
aclError acldvppSetPicDescData(acldvppPicDesc *picDesc, void *dataDev);
aclError acldvppSetPicDescSize(acldvppPicDesc *picDesc, uint32_t size);
aclError acldvppSetPicDescFormat(acldvppPicDesc *picDesc, acldvppPixelFormat format);
aclError acldvppSetPicDescWidth(acldvppPicDesc *picDesc, uint32_t width);
aclError acldvppSetPicDescHeight(acldvppPicDesc *picDesc, uint32_t height);
aclError acldvppSetPicDescWidthStride(acldvppPicDesc *picDesc, uint32_t widthStride);
aclError acldvppSetPicDescHeightStride(acldvppPicDesc *picDesc, uint32_t heightStride);

/* VPC resize and JPEG decode (asynchronous: tasks on a stream). */
acldvppResizeConfig *acldvppCreateResizeConfig(void);
aclError acldvppDestroyResizeConfig(acldvppResizeConfig *resizeConfig);
aclError acldvppVpcResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                               acldvppPicDesc *outputDesc, acldvppResizeConfig *resizeConfig, aclrtStream stream);
aclError acldvppJpegGetImageInfo(const void *data, uint32_t size, uint32_t *width, uint32_t *height,
                                 int32_t *components);
aclError acldvppJpegDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size,
                                acldvppPicDesc *outputDesc, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* AE_ACL_OPS_ACL_DVPP_H */
