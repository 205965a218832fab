// (j) The flow of a detection program that pre-processes with DVPP and a
// static-AIPP model, as the Ascend DVPP-with-AIPP samples are written: the
// model loaded into memory the program allocates from aclmdlQuerySize's
// sizes (aclmdlLoadFromFileWithMem), the JPEG decoded by JPEGD into a buffer
// laid out at the strides the program chose (width to 128, height to 16,
// whatever the SoC), resized by the VPC to the model's input size, and that
// NV12 picture fed to the model, whose AIPP converts it to float RGB/BGR.
// Every output is read through its data buffer and printed.
//
// usage: dvpp_aipp_detect MODEL.om IN.jpg
#include "acl/ops/acl_dvpp.h"
#include "sample_common.h"

static uint32_t AlignUp(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

// A picture description over buf: format NV12, the given size and strides.
static acldvppPicDesc *Picture(void *buf, uint32_t size, uint32_t w, uint32_t h, uint32_t ws, uint32_t hs)
{
    acldvppPicDesc *d = acldvppCreatePicDesc();
    CHECK_TRUE(d != nullptr);
    CHECK_ACL(acldvppSetPicDescData(d, buf));
    CHECK_ACL(acldvppSetPicDescSize(d, size));
    CHECK_ACL(acldvppSetPicDescFormat(d, PIXEL_FORMAT_YUV_SEMIPLANAR_420));
    CHECK_ACL(acldvppSetPicDescWidth(d, w));
    CHECK_ACL(acldvppSetPicDescHeight(d, h));
    CHECK_ACL(acldvppSetPicDescWidthStride(d, ws));
    CHECK_ACL(acldvppSetPicDescHeightStride(d, hs));
    return d;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL.om IN.jpg\n", argv[0]);
        return 2;
    }
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    aclrtRunMode mode;
    CHECK_ACL(aclrtGetRunMode(&mode));

    // The model, in memory of the program's own.
    size_t workSize = 0, weightSize = 0;
    CHECK_ACL(aclmdlQuerySize(argv[1], &workSize, &weightSize));
    std::printf("model: work %zu bytes, weights %zu bytes\n", workSize, weightSize);
    void *work = nullptr, *weights = nullptr;
    CHECK_ACL(aclrtMalloc(&work, workSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&weights, weightSize, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFileWithMem(argv[1], &modelId, work, workSize, weights, weightSize));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_TRUE(desc != nullptr);
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    aclmdlIODims dims;
    CHECK_ACL(aclmdlGetInputDims(desc, 0, &dims));   // a static-AIPP input: n, h, w, c of the image
    CHECK_TRUE(dims.dimCount == 4);
    const uint32_t modelH = static_cast<uint32_t>(dims.dims[1]), modelW = static_cast<uint32_t>(dims.dims[2]);
    const size_t inputSize = aclmdlGetInputSizeByIndex(desc, 0);
    std::printf("model input: %u x %u, %zu bytes\n", modelW, modelH, inputSize);

    // JPEG decode at the strides the program chose.
    acldvppChannelDesc *channel = acldvppCreateChannelDesc();
    CHECK_TRUE(channel != nullptr);
    CHECK_ACL(acldvppCreateChannel(channel));
    std::vector<char> jpeg = ReadFile(argv[2]);
    uint32_t width = 0, height = 0;
    int32_t components = 0;
    CHECK_ACL(acldvppJpegGetImageInfo(jpeg.data(), static_cast<uint32_t>(jpeg.size()), &width, &height, &components));
    void *jpegDev = nullptr;
    CHECK_ACL(acldvppMalloc(&jpegDev, jpeg.size()));
    CHECK_ACL(aclrtMemcpy(jpegDev, jpeg.size(), jpeg.data(), jpeg.size(), ACL_MEMCPY_HOST_TO_DEVICE));
    const uint32_t decW = width & ~1u, decH = height & ~1u;
    const uint32_t decWs = AlignUp(width, 128), decHs = AlignUp(height, 16);
    const uint32_t decSize = decWs * decHs * 3 / 2;
    void *decodeDev = nullptr;
    CHECK_ACL(acldvppMalloc(&decodeDev, decSize));
    acldvppPicDesc *decoded = Picture(decodeDev, decSize, decW, decH, decWs, decHs);
    CHECK_ACL(acldvppJpegDecodeAsync(channel, jpegDev, static_cast<uint32_t>(jpeg.size()), decoded, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::printf("decoded: %u x %u, stride %u x %u\n", acldvppGetPicDescWidth(decoded),
                acldvppGetPicDescHeight(decoded), acldvppGetPicDescWidthStride(decoded),
                acldvppGetPicDescHeightStride(decoded));

    // VPC resize to the model's input.
    const uint32_t outWs = AlignUp(modelW, 16), outHs = AlignUp(modelH, 2);
    const uint32_t outSize = outWs * outHs * 3 / 2;
    CHECK_TRUE(outSize == inputSize);
    void *resizeDev = nullptr;
    CHECK_ACL(acldvppMalloc(&resizeDev, outSize));
    acldvppPicDesc *resized = Picture(resizeDev, outSize, modelW, modelH, outWs, outHs);
    acldvppResizeConfig *config = acldvppCreateResizeConfig();
    CHECK_TRUE(config != nullptr);
    CHECK_ACL(acldvppVpcResizeAsync(channel, decoded, resized, config, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));

    // Inference on the picture.
    aclmdlDataset *input = aclmdlCreateDataset();
    aclDataBuffer *image = aclCreateDataBuffer(resizeDev, outSize);
    CHECK_ACL(aclmdlAddDatasetBuffer(input, image));
    aclmdlDataset *output = aclmdlCreateDataset();
    const size_t nOut = aclmdlGetNumOutputs(desc);
    for (size_t i = 0; i < nOut; i++) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        void *buf = nullptr;
        CHECK_ACL(aclrtMalloc(&buf, size, ACL_MEM_MALLOC_NORMAL_ONLY));
        CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(buf, size)));
    }
    CHECK_ACL(aclmdlExecute(modelId, input, output));
    for (size_t i = 0; i < nOut; i++) {
        aclDataBuffer *buf = aclmdlGetDatasetBuffer(output, i);
        void *data = aclGetDataBufferAddr(buf);
        size_t size = aclGetDataBufferSizeV2(buf);
        std::vector<float> host(size / sizeof(float));
        CHECK_ACL(aclrtMemcpy(host.data(), size, data, size, ACL_MEMCPY_DEVICE_TO_HOST));
        std::printf("output %zu '%s':", i, aclmdlGetOutputNameByIndex(desc, i));
        for (float v : host)
            std::printf(" %.1f", v);
        std::printf("\n");
        CHECK_ACL(aclrtFree(data));
        CHECK_ACL(aclDestroyDataBuffer(buf));
    }

    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclDestroyDataBuffer(image));
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(acldvppDestroyResizeConfig(config));
    CHECK_ACL(acldvppDestroyPicDesc(resized));
    CHECK_ACL(acldvppDestroyPicDesc(decoded));
    CHECK_ACL(acldvppFree(resizeDev));
    CHECK_ACL(acldvppFree(decodeDev));
    CHECK_ACL(acldvppFree(jpegDev));
    CHECK_ACL(acldvppDestroyChannel(channel));
    CHECK_ACL(acldvppDestroyChannelDesc(channel));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclrtFree(work));
    CHECK_ACL(aclrtFree(weights));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("dvpp_aipp_detect: OK\n");
    return 0;
}
