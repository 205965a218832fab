// (f) A dynamic-batch model run at every gear, the way benchmark tools size
// buffers: the descriptor reports the largest gear's bytes, a lower gear's
// buffers are size * gear / max_gear.  The input file holds max_gear rows;
// gear g runs on its first g rows.  Outputs are read as size / sizeof(float)
// of the gear's buffer.
//
// usage: client_gears MODEL ROWS.bin
#include "sample_common.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL ROWS.bin\n", argv[0]);
        return 2;
    }
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    aclmdlBatch gears;
    CHECK_ACL(aclmdlGetDynamicBatch(desc, &gears));
    CHECK_TRUE(gears.batchCount > 0);
    uint64_t maxGear = 0;
    for (size_t i = 0; i < gears.batchCount; i++)
        maxGear = std::max<uint64_t>(maxGear, gears.batch[i]);
    size_t dynIndex = 0;
    CHECK_ACL(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &dynIndex));
    CHECK_TRUE(dynIndex == 1);

    std::vector<char> rows = ReadFile(argv[2]);
    size_t inSize = aclmdlGetInputSizeByIndex(desc, 0);
    if (rows.size() != inSize) {
        std::fprintf(stderr, "%s holds %zu bytes, the model's input needs %zu (%llu rows)\n", argv[2], rows.size(),
                     inSize, static_cast<unsigned long long>(maxGear));
        return 3;
    }
    size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);
    size_t dynSize = aclmdlGetInputSizeByIndex(desc, dynIndex);
    std::printf("sizes: input %zu output %zu dynamic %zu, max gear %llu\n", inSize, outSize, dynSize,
                static_cast<unsigned long long>(maxGear));

    for (size_t gi = 0; gi < gears.batchCount; gi++) {
        uint64_t gear = gears.batch[gi];
        size_t gearIn = inSize * gear / maxGear, gearOut = outSize * gear / maxGear;
        void *inDev = nullptr, *outDev = nullptr, *dynDev = nullptr;
        CHECK_ACL(aclrtMalloc(&inDev, gearIn, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMalloc(&outDev, gearOut, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMalloc(&dynDev, dynSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMemcpy(inDev, gearIn, rows.data(), gearIn, ACL_MEMCPY_HOST_TO_DEVICE));
        aclmdlDataset *input = aclmdlCreateDataset();
        aclmdlDataset *output = aclmdlCreateDataset();
        aclDataBuffer *bufs[3] = {aclCreateDataBuffer(inDev, gearIn), aclCreateDataBuffer(dynDev, dynSize),
                                  aclCreateDataBuffer(outDev, gearOut)};
        CHECK_ACL(aclmdlAddDatasetBuffer(input, bufs[0]));
        CHECK_ACL(aclmdlAddDatasetBuffer(input, bufs[1]));
        CHECK_ACL(aclmdlAddDatasetBuffer(output, bufs[2]));
        CHECK_ACL(aclmdlSetDynamicBatchSize(modelId, input, dynIndex, gear));
        CHECK_ACL(aclmdlExecute(modelId, input, output));
        std::vector<float> host(gearOut / sizeof(float));
        CHECK_ACL(aclrtMemcpy(host.data(), gearOut, outDev, gearOut, ACL_MEMCPY_DEVICE_TO_HOST));
        std::printf("gear %llu:", static_cast<unsigned long long>(gear));
        for (float v : host)
            std::printf(" %.7g", v);
        std::printf("\n");
        for (aclDataBuffer *b : bufs)
            CHECK_ACL(aclDestroyDataBuffer(b));
        CHECK_ACL(aclmdlDestroyDataset(input));
        CHECK_ACL(aclmdlDestroyDataset(output));
        CHECK_ACL(aclrtFree(inDev));
        CHECK_ACL(aclrtFree(outDev));
        CHECK_ACL(aclrtFree(dynDev));
    }
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("client_gears: OK\n");
    return 0;
}
