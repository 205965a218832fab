// (a) Image classification, synchronous, in the shape of the Ascend resnet50
// sample: the program asks the model how much work and weight memory it needs
// (aclmdlQuerySize), allocates both on the device itself and loads the model
// into them (aclmdlLoadFromFileWithMem), then runs one float16 NCHW image
// and prints the five best classes.
//
// usage: classify_sync MODEL IMAGE.bin [acl.json]
#include "sample_common.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL IMAGE.bin [acl.json]\n", argv[0]);
        return 2;
    }
    const char *modelPath = argv[1];
    std::vector<char> image = ReadFile(argv[2]);

    CHECK_ACL(aclInit(argc > 3 ? argv[3] : nullptr));
    const int32_t deviceId = 0;
    CHECK_ACL(aclrtSetDevice(deviceId));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, deviceId));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    aclrtRunMode runMode;
    CHECK_ACL(aclrtGetRunMode(&runMode));
    const aclrtMemcpyKind toDevice = runMode == ACL_HOST ? ACL_MEMCPY_HOST_TO_DEVICE : ACL_MEMCPY_DEVICE_TO_DEVICE;
    const aclrtMemcpyKind toHost = runMode == ACL_HOST ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_DEVICE_TO_DEVICE;

    size_t workSize = 0, weightSize = 0;
    CHECK_ACL(aclmdlQuerySize(modelPath, &workSize, &weightSize));
    void *workPtr = nullptr, *weightPtr = nullptr;
    CHECK_ACL(aclrtMalloc(&workPtr, workSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&weightPtr, weightSize, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFileWithMem(modelPath, &modelId, workPtr, workSize, weightPtr, weightSize));
    std::printf("loaded model %u: work %zu bytes, weight %zu bytes\n", modelId, workSize, weightSize);

    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_TRUE(desc != nullptr);
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    CHECK_TRUE(aclmdlGetNumInputs(desc) == 1 && aclmdlGetNumOutputs(desc) == 1);
    aclmdlIODims inDims, outDims;
    CHECK_ACL(aclmdlGetInputDims(desc, 0, &inDims));
    CHECK_ACL(aclmdlGetOutputDims(desc, 0, &outDims));
    aclDataType inType = aclmdlGetInputDataType(desc, 0);
    aclFormat inFormat = aclmdlGetInputFormat(desc, 0);
    std::printf("input %s: dtype %d format %d dims %s\n", aclmdlGetInputNameByIndex(desc, 0), (int)inType,
                (int)inFormat, DimsToString(inDims).c_str());
    std::printf("output %s: dtype %d format %d dims %s\n", aclmdlGetOutputNameByIndex(desc, 0),
                (int)aclmdlGetOutputDataType(desc, 0), (int)aclmdlGetOutputFormat(desc, 0),
                DimsToString(outDims).c_str());
    CHECK_TRUE(inType == ACL_FLOAT16 && inFormat == ACL_FORMAT_NCHW);
    CHECK_TRUE(aclmdlGetOutputDataType(desc, 0) == ACL_FLOAT);

    // Buffers sized by the descriptor (the device wants padded sizes).
    size_t inSize = aclmdlGetInputSizeByIndex(desc, 0);
    size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);
    CHECK_TRUE(image.size() <= inSize);
    void *inDev = nullptr, *outDev = nullptr;
    CHECK_ACL(aclrtMalloc(&inDev, inSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&outDev, outSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemset(inDev, inSize, 0, inSize));
    CHECK_ACL(aclrtMemcpy(inDev, inSize, image.data(), image.size(), toDevice));

    aclmdlDataset *input = aclmdlCreateDataset();
    aclmdlDataset *output = aclmdlCreateDataset();
    aclDataBuffer *inBuf = aclCreateDataBuffer(inDev, inSize);
    aclDataBuffer *outBuf = aclCreateDataBuffer(outDev, outSize);
    CHECK_TRUE(input && output && inBuf && outBuf);
    CHECK_ACL(aclmdlAddDatasetBuffer(input, inBuf));
    CHECK_ACL(aclmdlAddDatasetBuffer(output, outBuf));

    CHECK_ACL(aclmdlExecute(modelId, input, output));

    aclDataBuffer *result = aclmdlGetDatasetBuffer(output, 0);
    size_t resultSize = aclGetDataBufferSizeV2(result);
    void *host = nullptr;
    CHECK_ACL(aclrtMallocHost(&host, resultSize));
    CHECK_ACL(aclrtMemcpy(host, resultSize, aclGetDataBufferAddr(result), resultSize, toHost));
    size_t classes = (size_t)outDims.dims[outDims.dimCount - 1];
    PrintTopK("image", static_cast<float *>(host), classes, 5);

    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclDestroyDataBuffer(inBuf));
    CHECK_ACL(aclDestroyDataBuffer(outBuf));
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclrtFree(inDev));
    CHECK_ACL(aclrtFree(outDev));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtFree(workPtr));
    CHECK_ACL(aclrtFree(weightPtr));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(deviceId));
    CHECK_ACL(aclFinalize());
    std::printf("classify_sync: OK\n");
    return 0;
}
