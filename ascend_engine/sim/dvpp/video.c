/*
 * video.c -- the video decode (VDEC) and encode (VENC) API of libacl_dvpp.so,
 * with its stream descriptions: declared by the toolkit's acl/ops/acl_dvpp.h
 * so that programs and libraries written for CANN (ACLLite among them)
 * compile and link, but the simulator models no video codec.  Every call
 * records ACL_ERROR_FEATURE_UNSUPPORTED (200006) as the recent error, naming
 * the function; those returning aclError return that code, the create
 * functions NULL, the getters 0 (docs/simulator.md, "DVPP").  No argument is
 * touched.
 */
#include "dvpp_internal.h"

#define VIDEO_NOT_SIMULATED "the simulator has no video decoder or encoder (VDEC / VENC)"

static aclError unsupported(const char *fn)
{
    return aeSimError(ACL_ERROR_FEATURE_UNSUPPORTED, fn, "%s exists in CANN but is not simulated: %s; "
                      "ACL_ERROR_FEATURE_UNSUPPORTED (200006). Decode video on the host (e.g. with FFmpeg) "
                      "or run this part on an Ascend device", fn, VIDEO_NOT_SIMULATED);
}

STANDIN_EXPORT acldvppStreamDesc *acldvppCreateStreamDesc(void)
{
    unsupported("acldvppCreateStreamDesc");
    return NULL;
}

STANDIN_EXPORT aclError acldvppDestroyStreamDesc(acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    return unsupported("acldvppDestroyStreamDesc");
}

STANDIN_EXPORT aclError acldvppSetStreamDescData(acldvppStreamDesc *streamDesc, void *dataDev)
{
    (void)streamDesc; (void)dataDev;
    return unsupported("acldvppSetStreamDescData");
}

STANDIN_EXPORT aclError acldvppSetStreamDescSize(acldvppStreamDesc *streamDesc, uint32_t size)
{
    (void)streamDesc; (void)size;
    return unsupported("acldvppSetStreamDescSize");
}

STANDIN_EXPORT aclError acldvppSetStreamDescFormat(acldvppStreamDesc *streamDesc, acldvppStreamFormat format)
{
    (void)streamDesc; (void)format;
    return unsupported("acldvppSetStreamDescFormat");
}

STANDIN_EXPORT aclError acldvppSetStreamDescTimestamp(acldvppStreamDesc *streamDesc, uint64_t timestamp)
{
    (void)streamDesc; (void)timestamp;
    return unsupported("acldvppSetStreamDescTimestamp");
}

STANDIN_EXPORT aclError acldvppSetStreamDescRetCode(acldvppStreamDesc *streamDesc, uint32_t retCode)
{
    (void)streamDesc; (void)retCode;
    return unsupported("acldvppSetStreamDescRetCode");
}

STANDIN_EXPORT aclError acldvppSetStreamDescEos(acldvppStreamDesc *streamDesc, uint8_t eos)
{
    (void)streamDesc; (void)eos;
    return unsupported("acldvppSetStreamDescEos");
}

STANDIN_EXPORT void *acldvppGetStreamDescData(const acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    unsupported("acldvppGetStreamDescData");
    return NULL;
}

STANDIN_EXPORT uint32_t acldvppGetStreamDescSize(const acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    unsupported("acldvppGetStreamDescSize");
    return 0;
}

STANDIN_EXPORT acldvppStreamFormat acldvppGetStreamDescFormat(const acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    unsupported("acldvppGetStreamDescFormat");
    return H265_MAIN_LEVEL;
}

STANDIN_EXPORT uint64_t acldvppGetStreamDescTimestamp(const acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    unsupported("acldvppGetStreamDescTimestamp");
    return 0;
}

STANDIN_EXPORT uint32_t acldvppGetStreamDescRetCode(const acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    unsupported("acldvppGetStreamDescRetCode");
    return 0;
}

STANDIN_EXPORT uint8_t acldvppGetStreamDescEos(const acldvppStreamDesc *streamDesc)
{
    (void)streamDesc;
    unsupported("acldvppGetStreamDescEos");
    return 0;
}

STANDIN_EXPORT aclvdecChannelDesc *aclvdecCreateChannelDesc(void)
{
    unsupported("aclvdecCreateChannelDesc");
    return NULL;
}

STANDIN_EXPORT aclError aclvdecDestroyChannelDesc(aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    return unsupported("aclvdecDestroyChannelDesc");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescChannelId(aclvdecChannelDesc *channelDesc, uint32_t channelId)
{
    (void)channelDesc; (void)channelId;
    return unsupported("aclvdecSetChannelDescChannelId");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescThreadId(aclvdecChannelDesc *channelDesc, uint64_t threadId)
{
    (void)channelDesc; (void)threadId;
    return unsupported("aclvdecSetChannelDescThreadId");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescCallback(aclvdecChannelDesc *channelDesc, aclvdecCallback callback)
{
    (void)channelDesc; (void)callback;
    return unsupported("aclvdecSetChannelDescCallback");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescEnType(aclvdecChannelDesc *channelDesc, acldvppStreamFormat enType)
{
    (void)channelDesc; (void)enType;
    return unsupported("aclvdecSetChannelDescEnType");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescOutPicFormat(aclvdecChannelDesc *channelDesc,
                                                          acldvppPixelFormat outPicFormat)
{
    (void)channelDesc; (void)outPicFormat;
    return unsupported("aclvdecSetChannelDescOutPicFormat");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescOutPicWidth(aclvdecChannelDesc *channelDesc, uint32_t outPicWidth)
{
    (void)channelDesc; (void)outPicWidth;
    return unsupported("aclvdecSetChannelDescOutPicWidth");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescOutPicHeight(aclvdecChannelDesc *channelDesc, uint32_t outPicHeight)
{
    (void)channelDesc; (void)outPicHeight;
    return unsupported("aclvdecSetChannelDescOutPicHeight");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescRefFrameNum(aclvdecChannelDesc *channelDesc, uint32_t refFrameNum)
{
    (void)channelDesc; (void)refFrameNum;
    return unsupported("aclvdecSetChannelDescRefFrameNum");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescOutMode(aclvdecChannelDesc *channelDesc, uint32_t outMode)
{
    (void)channelDesc; (void)outMode;
    return unsupported("aclvdecSetChannelDescOutMode");
}

STANDIN_EXPORT aclError aclvdecSetChannelDescBitDepth(aclvdecChannelDesc *channelDesc, uint32_t bitDepth)
{
    (void)channelDesc; (void)bitDepth;
    return unsupported("aclvdecSetChannelDescBitDepth");
}

STANDIN_EXPORT uint32_t aclvdecGetChannelDescChannelId(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescChannelId");
    return 0;
}

STANDIN_EXPORT uint64_t aclvdecGetChannelDescThreadId(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescThreadId");
    return 0;
}

STANDIN_EXPORT aclvdecCallback aclvdecGetChannelDescCallback(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescCallback");
    return NULL;
}

STANDIN_EXPORT acldvppStreamFormat aclvdecGetChannelDescEnType(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescEnType");
    return H265_MAIN_LEVEL;
}

STANDIN_EXPORT acldvppPixelFormat aclvdecGetChannelDescOutPicFormat(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescOutPicFormat");
    return PIXEL_FORMAT_YUV_400;
}

STANDIN_EXPORT uint32_t aclvdecGetChannelDescOutPicWidth(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescOutPicWidth");
    return 0;
}

STANDIN_EXPORT uint32_t aclvdecGetChannelDescOutPicHeight(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescOutPicHeight");
    return 0;
}

STANDIN_EXPORT uint32_t aclvdecGetChannelDescRefFrameNum(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescRefFrameNum");
    return 0;
}

STANDIN_EXPORT uint32_t aclvdecGetChannelDescOutMode(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescOutMode");
    return 0;
}

STANDIN_EXPORT uint32_t aclvdecGetChannelDescBitDepth(const aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvdecGetChannelDescBitDepth");
    return 0;
}

STANDIN_EXPORT aclvdecFrameConfig *aclvdecCreateFrameConfig(void)
{
    unsupported("aclvdecCreateFrameConfig");
    return NULL;
}

STANDIN_EXPORT aclError aclvdecDestroyFrameConfig(aclvdecFrameConfig *vdecFrameConfig)
{
    (void)vdecFrameConfig;
    return unsupported("aclvdecDestroyFrameConfig");
}

STANDIN_EXPORT aclError aclvdecCreateChannel(aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    return unsupported("aclvdecCreateChannel");
}

STANDIN_EXPORT aclError aclvdecDestroyChannel(aclvdecChannelDesc *channelDesc)
{
    (void)channelDesc;
    return unsupported("aclvdecDestroyChannel");
}

STANDIN_EXPORT aclError aclvdecSendFrame(aclvdecChannelDesc *channelDesc, acldvppStreamDesc *input,
                                         acldvppPicDesc *output, aclvdecFrameConfig *config, void *userData)
{
    (void)channelDesc; (void)input; (void)output; (void)config; (void)userData;
    return unsupported("aclvdecSendFrame");
}

STANDIN_EXPORT aclError aclvdecSendSkippedFrame(aclvdecChannelDesc *channelDesc, acldvppStreamDesc *input,
                                                aclvdecFrameConfig *config, void *userData)
{
    (void)channelDesc; (void)input; (void)config; (void)userData;
    return unsupported("aclvdecSendSkippedFrame");
}

STANDIN_EXPORT aclvencChannelDesc *aclvencCreateChannelDesc(void)
{
    unsupported("aclvencCreateChannelDesc");
    return NULL;
}

STANDIN_EXPORT aclError aclvencDestroyChannelDesc(aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    return unsupported("aclvencDestroyChannelDesc");
}

STANDIN_EXPORT aclError aclvencSetChannelDescThreadId(aclvencChannelDesc *channelDesc, uint64_t threadId)
{
    (void)channelDesc; (void)threadId;
    return unsupported("aclvencSetChannelDescThreadId");
}

STANDIN_EXPORT aclError aclvencSetChannelDescCallback(aclvencChannelDesc *channelDesc, aclvencCallback callback)
{
    (void)channelDesc; (void)callback;
    return unsupported("aclvencSetChannelDescCallback");
}

STANDIN_EXPORT aclError aclvencSetChannelDescEnType(aclvencChannelDesc *channelDesc, acldvppStreamFormat enType)
{
    (void)channelDesc; (void)enType;
    return unsupported("aclvencSetChannelDescEnType");
}

STANDIN_EXPORT aclError aclvencSetChannelDescPicFormat(aclvencChannelDesc *channelDesc, acldvppPixelFormat picFormat)
{
    (void)channelDesc; (void)picFormat;
    return unsupported("aclvencSetChannelDescPicFormat");
}

STANDIN_EXPORT aclError aclvencSetChannelDescPicWidth(aclvencChannelDesc *channelDesc, uint32_t picWidth)
{
    (void)channelDesc; (void)picWidth;
    return unsupported("aclvencSetChannelDescPicWidth");
}

STANDIN_EXPORT aclError aclvencSetChannelDescPicHeight(aclvencChannelDesc *channelDesc, uint32_t picHeight)
{
    (void)channelDesc; (void)picHeight;
    return unsupported("aclvencSetChannelDescPicHeight");
}

STANDIN_EXPORT aclError aclvencSetChannelDescKeyFrameInterval(aclvencChannelDesc *channelDesc,
                                                              uint32_t keyFrameInterval)
{
    (void)channelDesc; (void)keyFrameInterval;
    return unsupported("aclvencSetChannelDescKeyFrameInterval");
}

STANDIN_EXPORT aclError aclvencSetChannelDescBufAddr(aclvencChannelDesc *channelDesc, void *bufAddr)
{
    (void)channelDesc; (void)bufAddr;
    return unsupported("aclvencSetChannelDescBufAddr");
}

STANDIN_EXPORT aclError aclvencSetChannelDescBufSize(aclvencChannelDesc *channelDesc, uint32_t bufSize)
{
    (void)channelDesc; (void)bufSize;
    return unsupported("aclvencSetChannelDescBufSize");
}

STANDIN_EXPORT aclError aclvencSetChannelDescRcMode(aclvencChannelDesc *channelDesc, uint32_t rcMode)
{
    (void)channelDesc; (void)rcMode;
    return unsupported("aclvencSetChannelDescRcMode");
}

STANDIN_EXPORT aclError aclvencSetChannelDescSrcRate(aclvencChannelDesc *channelDesc, uint32_t srcRate)
{
    (void)channelDesc; (void)srcRate;
    return unsupported("aclvencSetChannelDescSrcRate");
}

STANDIN_EXPORT aclError aclvencSetChannelDescMaxBitRate(aclvencChannelDesc *channelDesc, uint32_t maxBitRate)
{
    (void)channelDesc; (void)maxBitRate;
    return unsupported("aclvencSetChannelDescMaxBitRate");
}

STANDIN_EXPORT uint64_t aclvencGetChannelDescThreadId(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescThreadId");
    return 0;
}

STANDIN_EXPORT aclvencCallback aclvencGetChannelDescCallback(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescCallback");
    return NULL;
}

STANDIN_EXPORT acldvppStreamFormat aclvencGetChannelDescEnType(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescEnType");
    return H265_MAIN_LEVEL;
}

STANDIN_EXPORT acldvppPixelFormat aclvencGetChannelDescPicFormat(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescPicFormat");
    return PIXEL_FORMAT_YUV_400;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescPicWidth(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescPicWidth");
    return 0;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescPicHeight(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescPicHeight");
    return 0;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescKeyFrameInterval(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescKeyFrameInterval");
    return 0;
}

STANDIN_EXPORT void *aclvencGetChannelDescBufAddr(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescBufAddr");
    return NULL;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescBufSize(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescBufSize");
    return 0;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescRcMode(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescRcMode");
    return 0;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescSrcRate(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescSrcRate");
    return 0;
}

STANDIN_EXPORT uint32_t aclvencGetChannelDescMaxBitRate(const aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    unsupported("aclvencGetChannelDescMaxBitRate");
    return 0;
}

STANDIN_EXPORT aclvencFrameConfig *aclvencCreateFrameConfig(void)
{
    unsupported("aclvencCreateFrameConfig");
    return NULL;
}

STANDIN_EXPORT aclError aclvencDestroyFrameConfig(aclvencFrameConfig *vencFrameConfig)
{
    (void)vencFrameConfig;
    return unsupported("aclvencDestroyFrameConfig");
}

STANDIN_EXPORT aclError aclvencSetFrameConfigForceIFrame(aclvencFrameConfig *config, uint8_t forceIFrame)
{
    (void)config; (void)forceIFrame;
    return unsupported("aclvencSetFrameConfigForceIFrame");
}

STANDIN_EXPORT aclError aclvencSetFrameConfigEos(aclvencFrameConfig *config, uint8_t eos)
{
    (void)config; (void)eos;
    return unsupported("aclvencSetFrameConfigEos");
}

STANDIN_EXPORT uint8_t aclvencGetFrameConfigForceIFrame(const aclvencFrameConfig *config)
{
    (void)config;
    unsupported("aclvencGetFrameConfigForceIFrame");
    return 0;
}

STANDIN_EXPORT uint8_t aclvencGetFrameConfigEos(const aclvencFrameConfig *config)
{
    (void)config;
    unsupported("aclvencGetFrameConfigEos");
    return 0;
}

STANDIN_EXPORT aclError aclvencCreateChannel(aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    return unsupported("aclvencCreateChannel");
}

STANDIN_EXPORT aclError aclvencDestroyChannel(aclvencChannelDesc *channelDesc)
{
    (void)channelDesc;
    return unsupported("aclvencDestroyChannel");
}

STANDIN_EXPORT aclError aclvencSendFrame(aclvencChannelDesc *channelDesc, acldvppPicDesc *input, void *reserve,
                                         aclvencFrameConfig *config, void *userdata)
{
    (void)channelDesc; (void)input; (void)reserve; (void)config; (void)userdata;
    return unsupported("aclvencSendFrame");
}
