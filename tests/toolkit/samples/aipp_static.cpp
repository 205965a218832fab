// (i) A model converted with static AIPP, queried and run the way the Ascend
// samples that feed DVPP output to a network do: the input is the NV12
// image (its size from the descriptor), aclmdlGetAippType and
// aclmdlGetFirstAippInfo say how the model pre-processes it, and the
// output's values are printed.
//
// usage: aipp_static MODEL IMAGE.nv12
#include "sample_common.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL IMAGE.nv12\n", argv[0]);
        return 2;
    }
    std::vector<char> image = ReadFile(argv[2]);

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));

    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_ACL(aclmdlGetDesc(desc, modelId));

    aclmdlInputAippType type;
    size_t attached = 0;
    CHECK_ACL(aclmdlGetAippType(modelId, 0, &type, &attached));
    CHECK_TRUE(type == ACL_DATA_WITH_STATIC_AIPP);
    aclAippInfo *info = new aclAippInfo();   // large (one aclAippDims per shape): not on the stack
    CHECK_ACL(aclmdlGetFirstAippInfo(modelId, 0, info));
    std::printf("aipp: format %d source %dx%d crop %d at %d,%d size %dx%d csc %d r0c2 %d bias %d,%d,%d\n",
                (int)info->inputFormat, info->srcImageSizeW, info->srcImageSizeH, (int)info->cropSwitch,
                info->loadStartPosW, info->loadStartPosH, info->cropSizeW, info->cropSizeH, (int)info->cscSwitch,
                info->matrixR0C2, info->inputBias0, info->inputBias1, info->inputBias2);
    std::printf("aipp: mean %d,%d,%d var %.4f,%.4f,%.4f model input %s\n", info->meanChn0, info->meanChn1,
                info->meanChn2, info->varReciChn0, info->varReciChn1, info->varReciChn2,
                DimsToString(info->outDims[0].srcDims).c_str());
    delete info;

    aclmdlIODims dims, dims2;
    CHECK_ACL(aclmdlGetInputDims(desc, 0, &dims));
    CHECK_ACL(aclmdlGetInputDimsV2(desc, 0, &dims2));
    size_t size = aclmdlGetInputSizeByIndex(desc, 0);
    std::printf("input: dtype %d format %d dims %s v2 %s size %zu\n", (int)aclmdlGetInputDataType(desc, 0),
                (int)aclmdlGetInputFormat(desc, 0), DimsToString(dims).c_str(), DimsToString(dims2).c_str(), size);
    CHECK_TRUE(image.size() == size);

    void *inDev = nullptr, *outDev = nullptr;
    CHECK_ACL(aclrtMalloc(&inDev, size, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_ACL(aclrtMemcpy(inDev, size, image.data(), size, ACL_MEMCPY_HOST_TO_DEVICE));
    aclmdlDataset *input = aclmdlCreateDataset();
    CHECK_ACL(aclmdlAddDatasetBuffer(input, aclCreateDataBuffer(inDev, size)));
    size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);
    CHECK_ACL(aclrtMalloc(&outDev, outSize, ACL_MEM_MALLOC_NORMAL_ONLY));
    aclmdlDataset *output = aclmdlCreateDataset();
    CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(outDev, outSize)));
    CHECK_ACL(aclmdlExecute(modelId, input, output));

    std::vector<float> host(outSize / sizeof(float));
    CHECK_ACL(aclrtMemcpy(host.data(), outSize, outDev, outSize, ACL_MEMCPY_DEVICE_TO_HOST));
    std::printf("values:");
    for (float v : host)
        std::printf(" %.7g", v);
    std::printf("\n");

    CHECK_ACL(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(input, 0)));
    CHECK_ACL(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(output, 0)));
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclrtFree(inDev));
    CHECK_ACL(aclrtFree(outDev));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("aipp_static: OK\n");
    return 0;
}
