// (d) The AscendCL surface a real client links against, resolved strictly:
// the program takes the address of every function of the list (so linking
// with -Wl,--no-undefined fails on any missing one, and -z now makes the
// loader bind them all at start-up), then exercises the paths that have no
// other sample: tensor descriptions, AIPP parameter sets, dynamic HW/dims on
// a model without them, saturation mode, DVPP memory, and the exception
// callback for a task that fails on a stream.
//
// usage: api_coverage MODEL CONFIG.json
//   MODEL: the float16 classifier; run with ASCEND_SIM_FAULTS=task:execute@1=507011
//   so that its first execution fails on the device.
#include <cstring>

#include "sample_common.h"

// acl/ops/acl_dvpp.h is not among the headers the toolkit carries; these two
// declarations are CANN's.
extern "C" aclError acldvppMalloc(void **devPtr, size_t size);
extern "C" aclError acldvppFree(void *devPtr);

namespace {

typedef void (*AnyFn)();
struct Entry {
    const char *name;
    AnyFn fn;
};
#define FN(name) {#name, reinterpret_cast<AnyFn>(&name)}

const Entry kApi[] = {
    FN(aclInit), FN(aclFinalize), FN(aclGetRecentErrMsg), FN(aclDataTypeSize), FN(aclFloat16ToFloat),
    FN(aclFloatToFloat16), FN(aclCreateDataBuffer), FN(aclDestroyDataBuffer), FN(aclUpdateDataBuffer),
    FN(aclGetDataBufferAddr), FN(aclGetDataBufferSizeV2), FN(aclCreateTensorDesc), FN(aclDestroyTensorDesc),
    FN(aclGetTensorDescType), FN(aclGetTensorDescFormat), FN(aclGetTensorDescSize), FN(aclGetTensorDescNumDims),
    FN(aclGetTensorDescDimV2), FN(aclGetTensorDescAddress), FN(aclGetTensorDescByIndex), FN(aclrtSetDevice),
    FN(aclrtResetDevice), FN(aclrtGetDeviceCount), FN(aclrtGetRunMode), FN(aclrtSetDeviceSatMode),
    FN(aclrtCreateContext), FN(aclrtDestroyContext), FN(aclrtSetCurrentContext), FN(aclrtGetCurrentContext),
    FN(aclrtCreateStream), FN(aclrtDestroyStream), FN(aclrtSynchronizeStream), FN(aclrtMalloc), FN(aclrtFree),
    FN(aclrtMallocHost), FN(aclrtFreeHost), FN(aclrtMemcpy), FN(aclrtMemset), FN(aclrtSubscribeReport),
    FN(aclrtUnSubscribeReport), FN(aclrtLaunchCallback), FN(aclrtProcessReport), FN(aclrtSetExceptionInfoCallback),
    FN(aclrtGetDeviceIdFromExceptionInfo), FN(aclrtGetStreamIdFromExceptionInfo),
    FN(aclrtGetTaskIdFromExceptionInfo), FN(aclmdlQuerySize), FN(aclmdlLoadFromFile),
    FN(aclmdlLoadFromFileWithMem), FN(aclmdlUnload), FN(aclmdlExecute), FN(aclmdlExecuteAsync),
    FN(aclmdlCreateDesc), FN(aclmdlGetDesc), FN(aclmdlDestroyDesc), FN(aclmdlGetNumInputs), FN(aclmdlGetNumOutputs),
    FN(aclmdlGetInputSizeByIndex), FN(aclmdlGetOutputSizeByIndex), FN(aclmdlGetInputDims), FN(aclmdlGetOutputDims),
    FN(aclmdlGetCurOutputDims), FN(aclmdlGetInputDataType), FN(aclmdlGetOutputDataType), FN(aclmdlGetInputFormat),
    FN(aclmdlGetOutputFormat), FN(aclmdlGetInputNameByIndex), FN(aclmdlGetOutputNameByIndex),
    FN(aclmdlGetInputIndexByName), FN(aclmdlCreateDataset), FN(aclmdlDestroyDataset), FN(aclmdlAddDatasetBuffer),
    FN(aclmdlGetDatasetBuffer), FN(aclmdlGetDatasetNumBuffers), FN(aclmdlGetDatasetTensorDesc),
    FN(aclmdlSetDatasetTensorDesc), FN(aclmdlGetDynamicBatch), FN(aclmdlSetDynamicBatchSize), FN(aclmdlGetDynamicHW),
    FN(aclmdlSetDynamicHWSize), FN(aclmdlGetInputDynamicDims), FN(aclmdlGetInputDynamicGearCount),
    FN(aclmdlSetInputDynamicDims), FN(aclmdlCreateAIPP), FN(aclmdlDestroyAIPP), FN(aclmdlSetAIPPInputFormat),
    FN(aclmdlSetAIPPCscParams), FN(aclmdlSetAIPPRbuvSwapSwitch), FN(aclmdlSetAIPPAxSwapSwitch),
    FN(aclmdlSetAIPPSrcImageSize), FN(aclmdlSetAIPPCropParams), FN(aclmdlSetAIPPPaddingParams),
    FN(aclmdlSetAIPPDtcPixelMean), FN(aclmdlSetAIPPDtcPixelMin), FN(aclmdlSetAIPPPixelVarReci),
    FN(aclmdlSetInputAIPP), FN(aclmdlGetAippType), FN(aclmdlCreateAndGetOpDesc), FN(acldvppMalloc),
    FN(acldvppFree),
};

#define EXPECT_CODE(call, code)                                                                  \
    do {                                                                                         \
        aclError got_ = (call);                                                                  \
        if (got_ != (aclError)(code)) {                                                          \
            std::fprintf(stderr, "%s:%d: %s returned %d, expected %d (%s)\n", __FILE__, __LINE__, \
                         #call, got_, (int)(code), aclGetRecentErrMsg());                        \
            std::exit(1);                                                                        \
        }                                                                                        \
        std::printf("  %s -> %d\n", #call, got_);                                                \
    } while (0)

struct ExceptionSeen {
    int count;
    uint32_t device, stream, task, code;
} g_seen;

void OnException(aclrtExceptionInfo *info)
{
    g_seen.count++;
    g_seen.device = aclrtGetDeviceIdFromExceptionInfo(info);
    g_seen.stream = aclrtGetStreamIdFromExceptionInfo(info);
    g_seen.task = aclrtGetTaskIdFromExceptionInfo(info);
    g_seen.code = aclrtGetErrorCodeFromExceptionInfo(info);
}

void TensorDescriptions()
{
    std::printf("tensor descriptions\n");
    const int64_t dims[4] = {1, 3, 224, 224};
    aclTensorDesc *desc = aclCreateTensorDesc(ACL_FLOAT16, 4, dims, ACL_FORMAT_NCHW);
    CHECK_TRUE(desc != nullptr);
    CHECK_TRUE(aclGetTensorDescType(desc) == ACL_FLOAT16);
    CHECK_TRUE(aclGetTensorDescFormat(desc) == ACL_FORMAT_NCHW);
    CHECK_TRUE(aclGetTensorDescNumDims(desc) == 4);
    CHECK_TRUE(aclGetTensorDescSize(desc) == 1 * 3 * 224 * 224 * 2);
    int64_t d = 0;
    CHECK_ACL(aclGetTensorDescDimV2(desc, 2, &d));
    CHECK_TRUE(d == 224);
    EXPECT_CODE(aclGetTensorDescDimV2(desc, 4, &d), ACL_ERROR_INVALID_PARAM);
    CHECK_TRUE(aclGetTensorDescAddress(desc) == nullptr);
    CHECK_TRUE(aclGetTensorDescByIndex(desc, 0) == desc);
    CHECK_TRUE(aclGetTensorDescByIndex(desc, 1) == nullptr);

    const int64_t unknown[2] = {-1, 1000};
    aclTensorDesc *dyn = aclCreateTensorDesc(ACL_FLOAT, 2, unknown, ACL_FORMAT_ND);
    CHECK_TRUE(dyn && aclGetTensorDescSize(dyn) == 0 && aclGetTensorDescNumDims(dyn) == 2);
    CHECK_TRUE(aclCreateTensorDesc(ACL_FLOAT, -1, nullptr, ACL_FORMAT_ND) == nullptr);

    // A dataset slot keeps its own copy of the description.
    aclmdlDataset *ds = aclmdlCreateDataset();
    static char storage[64];
    aclDataBuffer *buf = aclCreateDataBuffer(storage, sizeof storage);
    CHECK_ACL(aclmdlAddDatasetBuffer(ds, buf));
    CHECK_TRUE(aclmdlGetDatasetTensorDesc(ds, 0) == nullptr);
    CHECK_ACL(aclmdlSetDatasetTensorDesc(ds, desc, 0));
    EXPECT_CODE(aclmdlSetDatasetTensorDesc(ds, desc, 1), ACL_ERROR_INVALID_PARAM);
    aclDestroyTensorDesc(desc);
    aclTensorDesc *kept = aclmdlGetDatasetTensorDesc(ds, 0);
    CHECK_TRUE(kept != nullptr && kept != desc);
    CHECK_TRUE(aclGetTensorDescFormat(kept) == ACL_FORMAT_NCHW && aclGetTensorDescSize(kept) == 301056);
    CHECK_ACL(aclmdlSetDatasetTensorDesc(ds, dyn, 0));
    CHECK_TRUE(aclGetTensorDescType(aclmdlGetDatasetTensorDesc(ds, 0)) == ACL_FLOAT);
    aclDestroyTensorDesc(dyn);
    CHECK_ACL(aclDestroyDataBuffer(buf));
    CHECK_ACL(aclmdlDestroyDataset(ds));
    std::printf("  OK\n");
}

void AippAndDynamic(uint32_t modelId, aclmdlDesc *desc, aclmdlDataset *input)
{
    std::printf("AIPP parameter sets\n");
    CHECK_TRUE(aclmdlCreateAIPP(0) == nullptr);
    aclmdlAIPP *aipp = aclmdlCreateAIPP(1);
    CHECK_TRUE(aipp != nullptr);
    // Applying an incomplete set is refused before the model is looked at.
    EXPECT_CODE(aclmdlSetInputAIPP(modelId, input, 0, aipp), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclmdlSetAIPPInputFormat(aipp, ACL_YUV420SP_U8));
    CHECK_ACL(aclmdlSetAIPPCscParams(aipp, 1, 256, 0, 359, 256, -88, -183, 256, 454, 0, 0, 0, 0, 0, 128, 128));
    CHECK_ACL(aclmdlSetAIPPRbuvSwapSwitch(aipp, 0));
    CHECK_ACL(aclmdlSetAIPPAxSwapSwitch(aipp, 0));
    CHECK_ACL(aclmdlSetAIPPSrcImageSize(aipp, 256, 256));
    CHECK_ACL(aclmdlSetAIPPCropParams(aipp, 1, 100, 100, 224, 224, 0));   // does not fit in 256 x 256
    CHECK_ACL(aclmdlSetAIPPPaddingParams(aipp, 0, 0, 0, 0, 0, 0));
    CHECK_ACL(aclmdlSetAIPPDtcPixelMean(aipp, 104, 117, 123, 0, 0));
    CHECK_ACL(aclmdlSetAIPPDtcPixelMin(aipp, 0.0f, 0.0f, 0.0f, 0.0f, 0));
    CHECK_ACL(aclmdlSetAIPPPixelVarReci(aipp, 1.0f / 58, 1.0f / 57, 1.0f / 57, 1.0f, 0));
    EXPECT_CODE(aclmdlSetAIPPCropParams(aipp, 1, 0, 0, 224, 224, 1), ACL_ERROR_INVALID_PARAM);   // batch 1 of 1
    EXPECT_CODE(aclmdlSetAIPPRbuvSwapSwitch(aipp, 2), ACL_ERROR_INVALID_PARAM);
    EXPECT_CODE(aclmdlSetInputAIPP(modelId, input, 0, aipp), ACL_ERROR_INVALID_PARAM);   // crop window
    std::printf("  stored crop rejected: %s\n", aclGetRecentErrMsg());
    CHECK_ACL(aclmdlSetAIPPCropParams(aipp, 1, 16, 16, 224, 224, 0));
    // no dynamic AIPP input on this model: CANN 9.1's lookup of it by name fails with 100000
    EXPECT_CODE(aclmdlSetInputAIPP(modelId, input, 0, aipp), ACL_ERROR_INVALID_PARAM);
    std::printf("  no dynamic AIPP input: %s\n", aclGetRecentErrMsg());
    aclmdlInputAippType type;
    size_t attached = 0;
    CHECK_ACL(aclmdlGetAippType(modelId, 0, &type, &attached));
    CHECK_TRUE(type == ACL_DATA_WITHOUT_AIPP && attached == ACL_INVALID_NODE_INDEX);
    CHECK_ACL(aclmdlDestroyAIPP(aipp));

    std::printf("dynamic HW and dims on a model without them\n");
    aclmdlHW hw;
    CHECK_ACL(aclmdlGetDynamicHW(desc, 0, &hw));
    CHECK_TRUE(hw.hwCount == 0);
    // a static model: no gear matches (145013, CANN 9.1)
    EXPECT_CODE(aclmdlSetDynamicHWSize(modelId, input, 0, 224, 224), ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID);
    size_t gearCount = 99;
    CHECK_ACL(aclmdlGetInputDynamicGearCount(desc, -1, &gearCount));
    CHECK_TRUE(gearCount == 0);
    EXPECT_CODE(aclmdlGetInputDynamicGearCount(desc, 0, &gearCount), ACL_ERROR_INVALID_PARAM);
    aclmdlIODims dims;
    CHECK_ACL(aclmdlGetInputDynamicDims(desc, -1, &dims, 0));
    CHECK_ACL(aclmdlGetInputDims(desc, 0, &dims));
    EXPECT_CODE(aclmdlSetInputDynamicDims(modelId, input, 0, &dims), ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID);
    EXPECT_CODE(aclmdlSetDynamicBatchSize(modelId, input, 0, 1), ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID);
    std::printf("  OK\n");
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL CONFIG.json\n", argv[0]);
        return 2;
    }
    size_t n = sizeof kApi / sizeof kApi[0];
    for (size_t i = 0; i < n; i++)
        CHECK_TRUE(kApi[i].fn != nullptr);
    std::printf("resolved %zu functions\n", n);

    CHECK_ACL(aclInit(argv[2]));
    EXPECT_CODE(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK_TRUE(aclDataTypeSize(ACL_FLOAT16) == 2 && aclFloat16ToFloat(aclFloatToFloat16(1.5f)) == 1.5f);
    uint32_t devices = 0;
    CHECK_ACL(aclrtGetDeviceCount(&devices));
    CHECK_TRUE(devices >= 1);
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext ctx = nullptr, cur = nullptr;
    CHECK_ACL(aclrtCreateContext(&ctx, 0));
    CHECK_ACL(aclrtSetCurrentContext(ctx));
    CHECK_ACL(aclrtGetCurrentContext(&cur));
    CHECK_TRUE(cur == ctx);
    CHECK_ACL(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION));
    aclrtFloatOverflowMode mode;
    CHECK_ACL(aclrtGetDeviceSatMode(&mode));
    CHECK_TRUE(mode == ACL_RT_OVERFLOW_MODE_SATURATION);
    EXPECT_CODE(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_UNDEF), ACL_ERROR_INVALID_PARAM);

    void *dvpp = nullptr;
    CHECK_ACL(acldvppMalloc(&dvpp, 1000));
    CHECK_ACL(aclrtMemset(dvpp, 1000, 0x7f, 1000));
    CHECK_ACL(acldvppFree(dvpp));

    TensorDescriptions();

    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    size_t inSize = aclmdlGetInputSizeByIndex(desc, 0), outSize = aclmdlGetOutputSizeByIndex(desc, 0);
    void *inDev = nullptr, *outDev = nullptr;
    CHECK_ACL(aclrtMalloc(&inDev, inSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&outDev, outSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemset(inDev, inSize, 0, inSize));
    aclmdlDataset *input = aclmdlCreateDataset(), *output = aclmdlCreateDataset();
    aclDataBuffer *inBuf = aclCreateDataBuffer(inDev, inSize), *outBuf = aclCreateDataBuffer(outDev, outSize);
    CHECK_ACL(aclmdlAddDatasetBuffer(input, inBuf));
    CHECK_ACL(aclmdlAddDatasetBuffer(output, outBuf));

    AippAndDynamic(modelId, desc, input);

    std::printf("exception callback\n");
    CHECK_ACL(aclrtSetExceptionInfoCallback(OnException));
    CHECK_ACL(aclmdlExecuteAsync(modelId, input, output, stream));   // fails on the device (injected)
    EXPECT_CODE(aclrtSynchronizeStream(stream), ACL_ERROR_RT_MODEL_EXECUTE);
    CHECK_TRUE(g_seen.count == 1 && g_seen.device == 0 && g_seen.code == ACL_ERROR_RT_MODEL_EXECUTE);
    std::printf("  exception: device %u stream %u task %u code %u\n", g_seen.device, g_seen.stream, g_seen.task,
                g_seen.code);
    char opName[256];
    aclTensorDesc *inDesc = nullptr, *outDesc = nullptr;
    size_t nIn = 0, nOut = 0;
    CHECK_ACL(aclmdlCreateAndGetOpDesc(g_seen.device, g_seen.stream, g_seen.task, opName, sizeof opName, &inDesc,
                                       &nIn, &outDesc, &nOut));
    std::printf("  failed op '%s': %zu inputs, %zu outputs\n", opName, nIn, nOut);
    CHECK_TRUE(nIn == 1 && nOut == 1);
    aclTensorDesc *first = aclGetTensorDescByIndex(inDesc, 0);
    CHECK_TRUE(aclGetTensorDescAddress(first) == inDev);
    CHECK_TRUE(aclGetTensorDescType(first) == ACL_FLOAT16 && aclGetTensorDescFormat(first) == ACL_FORMAT_NCHW);
    CHECK_TRUE(aclGetTensorDescSize(first) == 301056);
    CHECK_TRUE(aclGetTensorDescAddress(aclGetTensorDescByIndex(outDesc, 0)) == outDev);
    aclDestroyTensorDesc(inDesc);
    aclDestroyTensorDesc(outDesc);
    EXPECT_CODE(aclmdlCreateAndGetOpDesc(g_seen.device, g_seen.stream, g_seen.task + 1000, opName, sizeof opName,
                                         &inDesc, &nIn, &outDesc, &nOut),
                ACL_ERROR_INVALID_PARAM);
    // The stream's error was reported by the synchronize; the next run is clean.
    CHECK_ACL(aclmdlExecuteAsync(modelId, input, output, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_TRUE(g_seen.count == 1);
    CHECK_ACL(aclrtSetExceptionInfoCallback(nullptr));

    CHECK_ACL(aclDestroyDataBuffer(inBuf));
    CHECK_ACL(aclDestroyDataBuffer(outBuf));
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclrtFree(inDev));
    CHECK_ACL(aclrtFree(outDev));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(ctx));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("api_coverage: OK\n");
    return 0;
}
