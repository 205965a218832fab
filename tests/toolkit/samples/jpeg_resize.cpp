// (h) Image pre-processing the way the Ascend DVPP samples do it, against
// CANN's documented DVPP API only: a JPEG file is read on the host, its size
// taken from its header (acldvppJpegGetImageInfo), copied into DVPP memory,
// decoded by JPEGD into YUV420SP (acldvppJpegDecodeAsync, output buffer sized
// by acldvppJpegPredictDecSize), resized by the VPC to the requested size
// (acldvppVpcResizeAsync, output strides aligned to 16 x 2), and the NV12
// result written to a file.  Each step is asynchronous on one stream.
//
// usage: jpeg_resize IN.jpg OUT.yuv WIDTH HEIGHT
#include "acl/ops/acl_dvpp.h"
#include "sample_common.h"

static uint32_t AlignUp(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s IN.jpg OUT.yuv WIDTH HEIGHT\n", argv[0]);
        return 2;
    }
    const uint32_t outWidth = static_cast<uint32_t>(std::atoi(argv[3]));
    const uint32_t outHeight = static_cast<uint32_t>(std::atoi(argv[4]));
    std::vector<char> jpeg = ReadFile(argv[1]);

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));

    acldvppChannelDesc *channel = acldvppCreateChannelDesc();
    CHECK_TRUE(channel != nullptr);
    CHECK_ACL(acldvppCreateChannel(channel));

    uint32_t width = 0, height = 0;
    int32_t components = 0;
    CHECK_ACL(acldvppJpegGetImageInfo(jpeg.data(), static_cast<uint32_t>(jpeg.size()), &width, &height, &components));
    std::printf("jpeg: %u x %u, %d components\n", width, height, components);

    // The JPEG into DVPP memory, the decoder's output buffer sized by the decoder.
    void *jpegDev = nullptr;
    CHECK_ACL(acldvppMalloc(&jpegDev, jpeg.size()));
    CHECK_ACL(aclrtMemcpy(jpegDev, jpeg.size(), jpeg.data(), jpeg.size(), ACL_MEMCPY_HOST_TO_DEVICE));
    uint32_t decodeSize = 0;
    CHECK_ACL(acldvppJpegPredictDecSize(jpeg.data(), static_cast<uint32_t>(jpeg.size()),
                                        PIXEL_FORMAT_YUV_SEMIPLANAR_420, &decodeSize));
    void *decodeDev = nullptr;
    CHECK_ACL(acldvppMalloc(&decodeDev, decodeSize));
    acldvppPicDesc *decodeDesc = acldvppCreatePicDesc();
    CHECK_TRUE(decodeDesc != nullptr);
    CHECK_ACL(acldvppSetPicDescData(decodeDesc, decodeDev));
    CHECK_ACL(acldvppSetPicDescSize(decodeDesc, decodeSize));
    CHECK_ACL(acldvppSetPicDescFormat(decodeDesc, PIXEL_FORMAT_YUV_SEMIPLANAR_420));
    CHECK_ACL(acldvppJpegDecodeAsync(channel, jpegDev, static_cast<uint32_t>(jpeg.size()), decodeDesc, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::printf("decoded: %u x %u, stride %u x %u, %u bytes\n", acldvppGetPicDescWidth(decodeDesc),
                acldvppGetPicDescHeight(decodeDesc), acldvppGetPicDescWidthStride(decodeDesc),
                acldvppGetPicDescHeightStride(decodeDesc), acldvppGetPicDescSize(decodeDesc));

    // VPC resize to the requested size: output strides 16 x 2.
    const uint32_t outWidthStride = AlignUp(outWidth, 16), outHeightStride = AlignUp(outHeight, 2);
    const uint32_t outSize = outWidthStride * outHeightStride * 3 / 2;
    void *resizeDev = nullptr;
    CHECK_ACL(acldvppMalloc(&resizeDev, outSize));
    acldvppPicDesc *resizeDesc = acldvppCreatePicDesc();
    CHECK_TRUE(resizeDesc != nullptr);
    CHECK_ACL(acldvppSetPicDescData(resizeDesc, resizeDev));
    CHECK_ACL(acldvppSetPicDescSize(resizeDesc, outSize));
    CHECK_ACL(acldvppSetPicDescFormat(resizeDesc, PIXEL_FORMAT_YUV_SEMIPLANAR_420));
    CHECK_ACL(acldvppSetPicDescWidth(resizeDesc, outWidth));
    CHECK_ACL(acldvppSetPicDescHeight(resizeDesc, outHeight));
    CHECK_ACL(acldvppSetPicDescWidthStride(resizeDesc, outWidthStride));
    CHECK_ACL(acldvppSetPicDescHeightStride(resizeDesc, outHeightStride));
    acldvppResizeConfig *resizeConfig = acldvppCreateResizeConfig();
    CHECK_TRUE(resizeConfig != nullptr);
    CHECK_ACL(acldvppVpcResizeAsync(channel, decodeDesc, resizeDesc, resizeConfig, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));

    std::vector<char> yuv(outSize);
    CHECK_ACL(aclrtMemcpy(yuv.data(), outSize, resizeDev, outSize, ACL_MEMCPY_DEVICE_TO_HOST));
    FILE *out = std::fopen(argv[2], "wb");
    CHECK_TRUE(out != nullptr);
    CHECK_TRUE(std::fwrite(yuv.data(), 1, yuv.size(), out) == yuv.size());
    std::fclose(out);
    std::printf("resized: %u x %u, stride %u x %u, %u bytes written\n", outWidth, outHeight, outWidthStride,
                outHeightStride, outSize);

    CHECK_ACL(acldvppDestroyResizeConfig(resizeConfig));
    CHECK_ACL(acldvppDestroyPicDesc(resizeDesc));
    CHECK_ACL(acldvppDestroyPicDesc(decodeDesc));
    CHECK_ACL(acldvppFree(resizeDev));
    CHECK_ACL(acldvppFree(decodeDev));
    CHECK_ACL(acldvppFree(jpegDev));
    CHECK_ACL(acldvppDestroyChannel(channel));
    CHECK_ACL(acldvppDestroyChannelDesc(channel));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("jpeg_resize: OK\n");
    return 0;
}
