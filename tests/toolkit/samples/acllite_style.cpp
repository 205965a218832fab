// (j) A program in the style of ACLLite-based applications: a resource object
// that initializes AscendCL (and may be initialized twice by two components),
// a model object that loads from a file and sizes its buffers with the 32-bit
// aclGetDataBufferSize, log lines through aclAppLog (ACL_APP_LOG), copies in
// host run mode made with synchronous aclrtMemcpy whose device-to-host copy
// names ACL_MEMCPY_HOST_TO_HOST (the synchronous copy ignores the kind), and a
// release that gives back each aclInit reference with aclFinalizeReference.
//
// usage: acllite_style MODEL IMAGE.bin acl.json
#include <cstdint>
#include <cstring>

#include "sample_common.h"

#define APP_INFO(fmt, ...) ACL_APP_LOG(ACL_INFO, fmt, ##__VA_ARGS__)
#define APP_ERROR(fmt, ...) ACL_APP_LOG(ACL_ERROR, fmt, ##__VA_ARGS__)

namespace {

// Initializes AscendCL once per component; a second component finds it up.
class Resource {
public:
    explicit Resource(const char *config) : config_(config) {}

    void Init()
    {
        aclError ret = aclInit(config_);
        if (ret == ACL_ERROR_REPEAT_INITIALIZE) {
            APP_INFO("AscendCL already initialized by another component, sharing it");
        } else {
            CHECK_ACL(ret);
        }
        CHECK_ACL(aclrtSetDevice(0));
        CHECK_ACL(aclrtCreateContext(&context_, 0));
        CHECK_ACL(aclrtGetRunMode(&runMode_));
        APP_INFO("resource ready, run mode %d", (int)runMode_);
    }

    aclrtRunMode RunMode() const { return runMode_; }

    void Release()
    {
        CHECK_ACL(aclrtDestroyContext(context_));
        CHECK_ACL(aclrtResetDevice(0));
    }

private:
    const char *config_;
    aclrtContext context_ = nullptr;
    aclrtRunMode runMode_ = ACL_HOST;
};

// Copies between host and device as host-run-mode code does: one synchronous
// call, the direction found by the runtime from the two addresses.
void *CopyToDevice(const void *src, uint32_t size)
{
    void *dev = nullptr;
    CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_ACL(aclrtMemcpy(dev, size, src, size, ACL_MEMCPY_HOST_TO_DEVICE));
    return dev;
}

void *CopyToHost(const void *dev, uint32_t size)
{
    void *host = nullptr;
    CHECK_ACL(aclrtMallocHost(&host, size));
    CHECK_ACL(aclrtMemcpy(host, size, dev, size, ACL_MEMCPY_HOST_TO_HOST));
    return host;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s MODEL IMAGE.bin acl.json\n", argv[0]);
        return 2;
    }
    std::vector<char> image = ReadFile(argv[2]);
    Resource first(argv[3]), second(argv[3]);
    first.Init();
    second.Init();   // the second aclInit answers ACL_ERROR_REPEAT_INITIALIZE and counts a reference
    CHECK_TRUE(first.RunMode() == ACL_HOST);

    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_TRUE(desc != nullptr);
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    const size_t inSize = aclmdlGetInputSizeByIndex(desc, 0);
    const size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);
    CHECK_TRUE(image.size() == inSize);

    void *inDev = CopyToDevice(image.data(), (uint32_t)inSize);
    void *outDev = nullptr;
    CHECK_ACL(aclrtMalloc(&outDev, outSize, ACL_MEM_MALLOC_NORMAL_ONLY));
    aclmdlDataset *input = aclmdlCreateDataset();
    aclmdlDataset *output = aclmdlCreateDataset();
    aclDataBuffer *inBuf = aclCreateDataBuffer(inDev, inSize);
    aclDataBuffer *outBuf = aclCreateDataBuffer(outDev, outSize);
    CHECK_TRUE(input && output && inBuf && outBuf);
    CHECK_ACL(aclmdlAddDatasetBuffer(input, inBuf));
    CHECK_ACL(aclmdlAddDatasetBuffer(output, outBuf));
    APP_INFO("model %u loaded, input %zu bytes, output %zu bytes", modelId, inSize, outSize);

    CHECK_ACL(aclmdlExecute(modelId, input, output));

    // The deprecated 32-bit size, as older application code reads it.
    aclDataBuffer *result = aclmdlGetDatasetBuffer(output, 0);
    const uint32_t resultSize = aclGetDataBufferSize(result);
    CHECK_TRUE(resultSize == outSize);
    void *host = CopyToHost(aclGetDataBufferAddr(result), resultSize);
    PrintTopK("image", static_cast<const float *>(host), resultSize / sizeof(float), 5);

    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclDestroyDataBuffer(inBuf));
    CHECK_ACL(aclDestroyDataBuffer(outBuf));
    CHECK_ACL(aclrtFree(inDev));
    CHECK_ACL(aclrtFree(outDev));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    second.Release();
    first.Release();

    // Each component gives its reference back; the last one finalizes.
    uint64_t left = 99;
    CHECK_ACL(aclFinalizeReference(&left));
    std::printf("references left: %llu\n", (unsigned long long)left);
    CHECK_TRUE(left == 1);
    CHECK_TRUE(aclrtGetSocName() != nullptr);   // still up for the other component
    CHECK_ACL(aclFinalizeReference(&left));
    std::printf("references left: %llu\n", (unsigned long long)left);
    CHECK_TRUE(left == 0);
    CHECK_TRUE(aclFinalize() == ACL_ERROR_REPEAT_FINALIZE);
    APP_ERROR("acllite_style finished (an error-level line, shown at the default log level)");
    std::printf("acllite_style: OK\n");
    return 0;
}
