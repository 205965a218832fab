/*
 * acl/ops/acl_dvpp.h -- ascend-engine's own declarations of the DVPP (image
 * pre-processing) functions of AscendCL: DVPP memory, channel and picture
 * descriptions, ROI / resize / border / JPEG-encode configurations, JPEG
 * decode and encode, PNG decode, and the VPC (resize, crop, crop-and-paste,
 * batch crop, borders, colour conversion), and the video decode / encode
 * API (VDEC, VENC), which the simulator answers as unsupported.  CANN's names, argument lists and enum values,
 * not a copy of CANN's header, which the torch-npu wheel does not ship
 * (docs/toolkit.md, "Headers").  A simulator toolkit installs it when its
 * header source lacks one.  What the simulator's libacl_dvpp.so does with
 * each call, and which rules it enforces, is in docs/simulator.md ("DVPP").
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
typedef struct acldvppBatchPicDesc acldvppBatchPicDesc;
typedef struct acldvppRoiConfig acldvppRoiConfig;
typedef struct acldvppResizeConfig acldvppResizeConfig;
typedef struct acldvppBorderConfig acldvppBorderConfig;
typedef struct acldvppJpegeConfig acldvppJpegeConfig;

/* Pixel formats (CANN's names and values; docs/simulator.md, "DVPP", says
 * which ones the simulator's modules read and write). */
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
    PIXEL_FORMAT_BGRA_8888 = 17,
    PIXEL_FORMAT_YUV_SEMI_PLANNER_420_10BIT = 18,
    PIXEL_FORMAT_YVU_SEMI_PLANNER_420_10BIT = 19,
    PIXEL_FORMAT_YVU_PLANAR_420 = 20,
    PIXEL_FORMAT_YVU_PLANAR_422 = 21,
    PIXEL_FORMAT_YVU_PLANAR_444 = 22,
    PIXEL_FORMAT_RGB_444 = 23,
    PIXEL_FORMAT_BGR_444 = 24,
    PIXEL_FORMAT_ARGB_4444 = 25,
    PIXEL_FORMAT_ABGR_4444 = 26,
    PIXEL_FORMAT_RGBA_4444 = 27,
    PIXEL_FORMAT_BGRA_4444 = 28,
    PIXEL_FORMAT_RGB_555 = 29,
    PIXEL_FORMAT_BGR_555 = 30,
    PIXEL_FORMAT_RGB_565 = 31,
    PIXEL_FORMAT_BGR_565 = 32,
    PIXEL_FORMAT_ARGB_1555 = 33,
    PIXEL_FORMAT_ABGR_1555 = 34,
    PIXEL_FORMAT_RGBA_1555 = 35,
    PIXEL_FORMAT_BGRA_1555 = 36,
    PIXEL_FORMAT_ARGB_8565 = 37,
    PIXEL_FORMAT_ABGR_8565 = 38,
    PIXEL_FORMAT_RGBA_8565 = 39,
    PIXEL_FORMAT_BGRA_8565 = 40,
    PIXEL_FORMAT_RGB_BAYER_8BPP = 50,
    PIXEL_FORMAT_RGB_BAYER_10BPP = 51,
    PIXEL_FORMAT_RGB_BAYER_12BPP = 52,
    PIXEL_FORMAT_RGB_BAYER_14BPP = 53,
    PIXEL_FORMAT_RGB_BAYER_16BPP = 54,
    PIXEL_FORMAT_BGR_888_PLANAR = 70,
    PIXEL_FORMAT_HSV_888_PACKAGE = 71,
    PIXEL_FORMAT_HSV_888_PLANAR = 72,
    PIXEL_FORMAT_LAB_888_PACKAGE = 73,
    PIXEL_FORMAT_LAB_888_PLANAR = 74,
    PIXEL_FORMAT_S8C1 = 75,
    PIXEL_FORMAT_S8C2_PACKAGE = 76,
    PIXEL_FORMAT_S8C2_PLANAR = 77,
    PIXEL_FORMAT_S16C1 = 78,
    PIXEL_FORMAT_U8C1 = 79,
    PIXEL_FORMAT_U16C1 = 80,
    PIXEL_FORMAT_S32C1 = 81,
    PIXEL_FORMAT_U32C1 = 82,
    PIXEL_FORMAT_U64C1 = 83,
    PIXEL_FORMAT_S64C1 = 84,
    PIXEL_FORMAT_YUV_SEMIPLANAR_440 = 1000,
    PIXEL_FORMAT_YVU_SEMIPLANAR_440 = 1001,
    PIXEL_FORMAT_FLOAT32 = 1002,
    PIXEL_FORMAT_BUTT = 1003,
    PIXEL_FORMAT_UNKNOWN = 10000
};
typedef enum acldvppPixelFormat acldvppPixelFormat;

/* Which hardware modules a channel drives (bits; 0 = all of them). */
enum acldvppChannelMode { DVPP_CHNMODE_VPC = 1, DVPP_CHNMODE_JPEGD = 2, DVPP_CHNMODE_JPEGE = 4 };
typedef enum acldvppChannelMode acldvppChannelMode;

enum acldvppBorderType { BORDER_CONSTANT = 0, BORDER_REPLICATE, BORDER_REFLECT, BORDER_REFLECT_101 };
typedef enum acldvppBorderType acldvppBorderType;

/* Chroma subsampling of a JPEG file (acldvppJpegGetImageInfoV2). */
enum acldvppJpegFormat {
    ACL_JPEG_CSS_444 = 0,
    ACL_JPEG_CSS_422,
    ACL_JPEG_CSS_420,
    ACL_JPEG_CSS_GRAY,
    ACL_JPEG_CSS_440,
    ACL_JPEG_CSS_411,
    ACL_JPEG_CSS_UNKNOWN = 1000
};
typedef enum acldvppJpegFormat acldvppJpegFormat;

/* DVPP memory: device memory the DVPP hardware can reach. */
aclError acldvppMalloc(void **devPtr, size_t size);
aclError acldvppFree(void *devPtr);

/* Channels: one per pre-processing pipeline. */
acldvppChannelDesc *acldvppCreateChannelDesc(void);
aclError acldvppDestroyChannelDesc(acldvppChannelDesc *channelDesc);
aclError acldvppSetChannelDescMode(acldvppChannelDesc *channelDesc, uint32_t mode);
uint64_t acldvppGetChannelDescChannelId(const acldvppChannelDesc *channelDesc);
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
aclError acldvppSetPicDescRetCode(acldvppPicDesc *picDesc, uint32_t retCode);
void *acldvppGetPicDescData(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescSize(const acldvppPicDesc *picDesc);
acldvppPixelFormat acldvppGetPicDescFormat(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescWidth(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescHeight(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescWidthStride(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescHeightStride(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescRetCode(const acldvppPicDesc *picDesc);

acldvppBatchPicDesc *acldvppCreateBatchPicDesc(uint32_t batchSize);
acldvppPicDesc *acldvppGetPicDesc(acldvppBatchPicDesc *batchPicDesc, uint32_t index);
aclError acldvppDestroyBatchPicDesc(acldvppBatchPicDesc *batchPicDesc);

/* Regions of interest: inclusive bounds, left/top even, right/bottom odd. */
acldvppRoiConfig *acldvppCreateRoiConfig(uint32_t left, uint32_t right, uint32_t top, uint32_t bottom);
aclError acldvppDestroyRoiConfig(acldvppRoiConfig *roiConfig);
aclError acldvppSetRoiConfigLeft(acldvppRoiConfig *config, uint32_t left);
aclError acldvppSetRoiConfigRight(acldvppRoiConfig *config, uint32_t right);
aclError acldvppSetRoiConfigTop(acldvppRoiConfig *config, uint32_t top);
aclError acldvppSetRoiConfigBottom(acldvppRoiConfig *config, uint32_t bottom);
aclError acldvppSetRoiConfig(acldvppRoiConfig *config, uint32_t left, uint32_t right, uint32_t top, uint32_t bottom);

acldvppResizeConfig *acldvppCreateResizeConfig(void);
aclError acldvppDestroyResizeConfig(acldvppResizeConfig *resizeConfig);
aclError acldvppSetResizeConfigInterpolation(acldvppResizeConfig *resizeConfig, uint32_t interpolation);
uint32_t acldvppGetResizeConfigInterpolation(const acldvppResizeConfig *resizeConfig);

acldvppBorderConfig *acldvppCreateBorderConfig(void);
aclError acldvppDestroyBorderConfig(acldvppBorderConfig *borderConfig);
aclError acldvppSetBorderConfigValue(acldvppBorderConfig *borderConfig, uint32_t index, double value);
aclError acldvppSetBorderConfigBorderType(acldvppBorderConfig *borderConfig, acldvppBorderType borderType);
aclError acldvppSetBorderConfigTop(acldvppBorderConfig *borderConfig, uint32_t top);
aclError acldvppSetBorderConfigBottom(acldvppBorderConfig *borderConfig, uint32_t bottom);
aclError acldvppSetBorderConfigLeft(acldvppBorderConfig *borderConfig, uint32_t left);
aclError acldvppSetBorderConfigRight(acldvppBorderConfig *borderConfig, uint32_t right);
double acldvppGetBorderConfigValue(const acldvppBorderConfig *borderConfig, uint32_t index);
acldvppBorderType acldvppGetBorderConfigBorderType(const acldvppBorderConfig *borderConfig);
uint32_t acldvppGetBorderConfigTop(const acldvppBorderConfig *borderConfig);
uint32_t acldvppGetBorderConfigBottom(const acldvppBorderConfig *borderConfig);
uint32_t acldvppGetBorderConfigLeft(const acldvppBorderConfig *borderConfig);
uint32_t acldvppGetBorderConfigRight(const acldvppBorderConfig *borderConfig);

acldvppJpegeConfig *acldvppCreateJpegeConfig(void);
aclError acldvppDestroyJpegeConfig(acldvppJpegeConfig *jpegeConfig);
aclError acldvppSetJpegeConfigLevel(acldvppJpegeConfig *jpegeConfig, uint32_t level);
uint32_t acldvppGetJpegeConfigLevel(const acldvppJpegeConfig *jpegeConfig);

/* JPEG (JPEGD decode, JPEGE encode); the Async calls are tasks on a stream. */
aclError acldvppJpegGetImageInfo(const void *data, uint32_t size, uint32_t *width, uint32_t *height,
                                 int32_t *components);
aclError acldvppJpegGetImageInfoV2(const void *data, uint32_t size, uint32_t *width, uint32_t *height,
                                   int32_t *components, acldvppJpegFormat *format);
aclError acldvppJpegPredictDecSize(const void *data, uint32_t dataSize, acldvppPixelFormat outputPixelFormat,
                                   uint32_t *decSize);
aclError acldvppJpegPredictEncSize(const acldvppPicDesc *inputDesc, const acldvppJpegeConfig *config,
                                   uint32_t *size);
aclError acldvppJpegDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size,
                                acldvppPicDesc *outputDesc, aclrtStream stream);
aclError acldvppJpegEncodeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, const void *data,
                                uint32_t *size, acldvppJpegeConfig *config, aclrtStream stream);

/* PNG (PNGD decode; a task on a stream). */
aclError acldvppPngGetImageInfo(const void *data, uint32_t dataSize, uint32_t *width, uint32_t *height,
                                int32_t *components);
aclError acldvppPngPredictDecSize(const void *data, uint32_t dataSize, acldvppPixelFormat outputPixelFormat,
                                  uint32_t *decSize);
aclError acldvppPngDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size,
                               acldvppPicDesc *outputDesc, aclrtStream stream);

/* VPC (tasks on a stream). */
aclError acldvppVpcResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                               acldvppPicDesc *outputDesc, acldvppResizeConfig *resizeConfig, aclrtStream stream);
aclError acldvppVpcCropAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc,
                             acldvppRoiConfig *cropArea, aclrtStream stream);
aclError acldvppVpcCropResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                   acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea,
                                   acldvppResizeConfig *resizeConfig, aclrtStream stream);
aclError acldvppVpcCropAndPasteAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                     acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea,
                                     acldvppRoiConfig *pasteArea, aclrtStream stream);
aclError acldvppVpcCropResizePasteAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                        acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea,
                                        acldvppRoiConfig *pasteArea, acldvppResizeConfig *resizeConfig,
                                        aclrtStream stream);
aclError acldvppVpcBatchCropAsync(acldvppChannelDesc *channelDesc, acldvppBatchPicDesc *srcBatchPicDescs,
                                  uint32_t *roiNums, uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                  acldvppRoiConfig *cropAreas[], aclrtStream stream);
aclError acldvppVpcBatchCropAndPasteAsync(acldvppChannelDesc *channelDesc, acldvppBatchPicDesc *srcBatchPicDescs,
                                          uint32_t *roiNums, uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                          acldvppRoiConfig *cropAreas[], acldvppRoiConfig *pasteAreas[],
                                          aclrtStream stream);
aclError acldvppVpcBatchCropResizeAsync(acldvppChannelDesc *channelDesc, acldvppBatchPicDesc *srcBatchPicDescs,
                                        uint32_t *roiNums, uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                        acldvppRoiConfig *cropAreas[], acldvppResizeConfig *resizeConfig,
                                        aclrtStream stream);
aclError acldvppVpcBatchCropResizePasteAsync(acldvppChannelDesc *channelDesc,
                                             acldvppBatchPicDesc *srcBatchPicDescs, uint32_t *roiNums, uint32_t size,
                                             acldvppBatchPicDesc *dstBatchPicDescs, acldvppRoiConfig *cropAreas[],
                                             acldvppRoiConfig *pasteAreas[], acldvppResizeConfig *resizeConfig,
                                             aclrtStream stream);
aclError acldvppVpcConvertColorAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                     acldvppPicDesc *outputDesc, aclrtStream stream);
aclError acldvppVpcMakeBorderAsync(const acldvppChannelDesc *channelDesc, const acldvppPicDesc *inputDesc,
                                   acldvppPicDesc *outputDesc, const acldvppBorderConfig *borderConfig,
                                   aclrtStream stream);

/* ---- video decode (VDEC) and encode (VENC) --------------------------------
 * Declared so that programs and libraries written for CANN compile and link;
 * the simulator has no video codec: every function answers
 * ACL_ERROR_FEATURE_UNSUPPORTED (200006) with a message, the create
 * functions return NULL and the getters 0 (docs/simulator.md, "DVPP"). */
typedef struct acldvppStreamDesc acldvppStreamDesc;
typedef struct aclvdecChannelDesc aclvdecChannelDesc;
typedef struct aclvdecFrameConfig aclvdecFrameConfig;
typedef struct aclvencChannelDesc aclvencChannelDesc;
typedef struct aclvencFrameConfig aclvencFrameConfig;

/* The coded stream's format (CANN's names and values). */
enum acldvppStreamFormat {
    H265_MAIN_LEVEL = 0,
    H264_BASELINE_LEVEL = 1,
    H264_MAIN_LEVEL = 2,
    H264_HIGH_LEVEL = 3,
};
typedef enum acldvppStreamFormat acldvppStreamFormat;

typedef void (*aclvdecCallback)(acldvppStreamDesc *input, acldvppPicDesc *output, void *userData);
typedef void (*aclvencCallback)(acldvppPicDesc *input, acldvppStreamDesc *output, void *userdata);

acldvppStreamDesc *acldvppCreateStreamDesc(void);
aclError acldvppDestroyStreamDesc(acldvppStreamDesc *streamDesc);
aclError acldvppSetStreamDescData(acldvppStreamDesc *streamDesc, void *dataDev);
aclError acldvppSetStreamDescSize(acldvppStreamDesc *streamDesc, uint32_t size);
aclError acldvppSetStreamDescFormat(acldvppStreamDesc *streamDesc, acldvppStreamFormat format);
aclError acldvppSetStreamDescTimestamp(acldvppStreamDesc *streamDesc, uint64_t timestamp);
aclError acldvppSetStreamDescRetCode(acldvppStreamDesc *streamDesc, uint32_t retCode);
aclError acldvppSetStreamDescEos(acldvppStreamDesc *streamDesc, uint8_t eos);
void *acldvppGetStreamDescData(const acldvppStreamDesc *streamDesc);
uint32_t acldvppGetStreamDescSize(const acldvppStreamDesc *streamDesc);
acldvppStreamFormat acldvppGetStreamDescFormat(const acldvppStreamDesc *streamDesc);
uint64_t acldvppGetStreamDescTimestamp(const acldvppStreamDesc *streamDesc);
uint32_t acldvppGetStreamDescRetCode(const acldvppStreamDesc *streamDesc);
uint8_t acldvppGetStreamDescEos(const acldvppStreamDesc *streamDesc);

aclvdecChannelDesc *aclvdecCreateChannelDesc(void);
aclError aclvdecDestroyChannelDesc(aclvdecChannelDesc *channelDesc);
aclError aclvdecSetChannelDescChannelId(aclvdecChannelDesc *channelDesc, uint32_t channelId);
aclError aclvdecSetChannelDescThreadId(aclvdecChannelDesc *channelDesc, uint64_t threadId);
aclError aclvdecSetChannelDescCallback(aclvdecChannelDesc *channelDesc, aclvdecCallback callback);
aclError aclvdecSetChannelDescEnType(aclvdecChannelDesc *channelDesc, acldvppStreamFormat enType);
aclError aclvdecSetChannelDescOutPicFormat(aclvdecChannelDesc *channelDesc, acldvppPixelFormat outPicFormat);
aclError aclvdecSetChannelDescOutPicWidth(aclvdecChannelDesc *channelDesc, uint32_t outPicWidth);
aclError aclvdecSetChannelDescOutPicHeight(aclvdecChannelDesc *channelDesc, uint32_t outPicHeight);
aclError aclvdecSetChannelDescRefFrameNum(aclvdecChannelDesc *channelDesc, uint32_t refFrameNum);
aclError aclvdecSetChannelDescOutMode(aclvdecChannelDesc *channelDesc, uint32_t outMode);
aclError aclvdecSetChannelDescBitDepth(aclvdecChannelDesc *channelDesc, uint32_t bitDepth);
uint32_t aclvdecGetChannelDescChannelId(const aclvdecChannelDesc *channelDesc);
uint64_t aclvdecGetChannelDescThreadId(const aclvdecChannelDesc *channelDesc);
aclvdecCallback aclvdecGetChannelDescCallback(const aclvdecChannelDesc *channelDesc);
acldvppStreamFormat aclvdecGetChannelDescEnType(const aclvdecChannelDesc *channelDesc);
acldvppPixelFormat aclvdecGetChannelDescOutPicFormat(const aclvdecChannelDesc *channelDesc);
uint32_t aclvdecGetChannelDescOutPicWidth(const aclvdecChannelDesc *channelDesc);
uint32_t aclvdecGetChannelDescOutPicHeight(const aclvdecChannelDesc *channelDesc);
uint32_t aclvdecGetChannelDescRefFrameNum(const aclvdecChannelDesc *channelDesc);
uint32_t aclvdecGetChannelDescOutMode(const aclvdecChannelDesc *channelDesc);
uint32_t aclvdecGetChannelDescBitDepth(const aclvdecChannelDesc *channelDesc);
aclvdecFrameConfig *aclvdecCreateFrameConfig(void);
aclError aclvdecDestroyFrameConfig(aclvdecFrameConfig *vdecFrameConfig);
aclError aclvdecCreateChannel(aclvdecChannelDesc *channelDesc);
aclError aclvdecDestroyChannel(aclvdecChannelDesc *channelDesc);
aclError aclvdecSendFrame(aclvdecChannelDesc *channelDesc, acldvppStreamDesc *input, acldvppPicDesc *output,
                          aclvdecFrameConfig *config, void *userData);
aclError aclvdecSendSkippedFrame(aclvdecChannelDesc *channelDesc, acldvppStreamDesc *input,
                                 aclvdecFrameConfig *config, void *userData);

aclvencChannelDesc *aclvencCreateChannelDesc(void);
aclError aclvencDestroyChannelDesc(aclvencChannelDesc *channelDesc);
aclError aclvencSetChannelDescThreadId(aclvencChannelDesc *channelDesc, uint64_t threadId);
aclError aclvencSetChannelDescCallback(aclvencChannelDesc *channelDesc, aclvencCallback callback);
aclError aclvencSetChannelDescEnType(aclvencChannelDesc *channelDesc, acldvppStreamFormat enType);
aclError aclvencSetChannelDescPicFormat(aclvencChannelDesc *channelDesc, acldvppPixelFormat picFormat);
aclError aclvencSetChannelDescPicWidth(aclvencChannelDesc *channelDesc, uint32_t picWidth);
aclError aclvencSetChannelDescPicHeight(aclvencChannelDesc *channelDesc, uint32_t picHeight);
aclError aclvencSetChannelDescKeyFrameInterval(aclvencChannelDesc *channelDesc, uint32_t keyFrameInterval);
aclError aclvencSetChannelDescBufAddr(aclvencChannelDesc *channelDesc, void *bufAddr);
aclError aclvencSetChannelDescBufSize(aclvencChannelDesc *channelDesc, uint32_t bufSize);
aclError aclvencSetChannelDescRcMode(aclvencChannelDesc *channelDesc, uint32_t rcMode);
aclError aclvencSetChannelDescSrcRate(aclvencChannelDesc *channelDesc, uint32_t srcRate);
aclError aclvencSetChannelDescMaxBitRate(aclvencChannelDesc *channelDesc, uint32_t maxBitRate);
uint64_t aclvencGetChannelDescThreadId(const aclvencChannelDesc *channelDesc);
aclvencCallback aclvencGetChannelDescCallback(const aclvencChannelDesc *channelDesc);
acldvppStreamFormat aclvencGetChannelDescEnType(const aclvencChannelDesc *channelDesc);
acldvppPixelFormat aclvencGetChannelDescPicFormat(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescPicWidth(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescPicHeight(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescKeyFrameInterval(const aclvencChannelDesc *channelDesc);
void *aclvencGetChannelDescBufAddr(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescBufSize(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescRcMode(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescSrcRate(const aclvencChannelDesc *channelDesc);
uint32_t aclvencGetChannelDescMaxBitRate(const aclvencChannelDesc *channelDesc);
aclvencFrameConfig *aclvencCreateFrameConfig(void);
aclError aclvencDestroyFrameConfig(aclvencFrameConfig *vencFrameConfig);
aclError aclvencSetFrameConfigForceIFrame(aclvencFrameConfig *config, uint8_t forceIFrame);
aclError aclvencSetFrameConfigEos(aclvencFrameConfig *config, uint8_t eos);
uint8_t aclvencGetFrameConfigForceIFrame(const aclvencFrameConfig *config);
uint8_t aclvencGetFrameConfigEos(const aclvencFrameConfig *config);
aclError aclvencCreateChannel(aclvencChannelDesc *channelDesc);
aclError aclvencDestroyChannel(aclvencChannelDesc *channelDesc);
aclError aclvencSendFrame(aclvencChannelDesc *channelDesc, acldvppPicDesc *input, void *reserve,
                          aclvencFrameConfig *config, void *userdata);

#ifdef __cplusplus
}
#endif

#endif /* AE_ACL_OPS_ACL_DVPP_H */
