// (c) Dynamic batch, in the shape of the Ascend googlenet dynamic-batch
// sample: the model has an extra input, ACL_DYNAMIC_TENSOR_NAME, whose index
// the program looks up by name; it allocates every input at the size the
// descriptor gives (the largest gear), copies `batch` rows in, selects the
// gear with aclmdlSetDynamicBatchSize and prints every output value.
//
// usage: dynamic_batch MODEL ROWS.bin BATCH
#include "sample_common.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s MODEL ROWS.bin BATCH\n", argv[0]);
        return 2;
    }
    std::vector<char> rows = ReadFile(argv[2]);
    const uint64_t batch = std::strtoull(argv[3], nullptr, 10);

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));

    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_ACL(aclmdlGetDesc(desc, modelId));

    aclmdlBatch gears;
    CHECK_ACL(aclmdlGetDynamicBatch(desc, &gears));
    std::printf("gears:");
    for (size_t i = 0; i < gears.batchCount; i++)
        std::printf(" %lu", (unsigned long)gears.batch[i]);
    std::printf("\n");
    // The model has no dynamic image size or dynamic dims: both report none.
    aclmdlHW hw;
    CHECK_ACL(aclmdlGetDynamicHW(desc, -1, &hw));
    size_t dimGears = 1;
    CHECK_ACL(aclmdlGetInputDynamicGearCount(desc, -1, &dimGears));
    CHECK_TRUE(hw.hwCount == 0 && dimGears == 0);

    size_t dynIndex = 0;
    CHECK_ACL(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &dynIndex));
    std::printf("%s is input %zu\n", ACL_DYNAMIC_TENSOR_NAME, dynIndex);

    aclmdlDataset *input = aclmdlCreateDataset();
    std::vector<void *> inDev;
    for (size_t i = 0; i < aclmdlGetNumInputs(desc); i++) {
        size_t size = aclmdlGetInputSizeByIndex(desc, i);
        void *p = nullptr;
        CHECK_ACL(aclrtMalloc(&p, size, ACL_MEM_MALLOC_NORMAL_ONLY));
        if (i != dynIndex) {
            CHECK_TRUE(rows.size() <= size);
            CHECK_ACL(aclrtMemcpy(p, size, rows.data(), rows.size(), ACL_MEMCPY_HOST_TO_DEVICE));
        }
        CHECK_ACL(aclmdlAddDatasetBuffer(input, aclCreateDataBuffer(p, size)));
        inDev.push_back(p);
    }
    aclmdlDataset *output = aclmdlCreateDataset();
    size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);
    void *outDev = nullptr;
    CHECK_ACL(aclrtMalloc(&outDev, outSize, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(outDev, outSize)));

    CHECK_ACL(aclmdlSetDynamicBatchSize(modelId, input, dynIndex, batch));
    CHECK_ACL(aclmdlExecute(modelId, input, output));

    aclmdlIODims cur;
    CHECK_ACL(aclmdlGetCurOutputDims(desc, 0, &cur));
    std::printf("output dims %s\n", DimsToString(cur).c_str());
    size_t count = 1;
    for (size_t i = 0; i < cur.dimCount; i++)
        count *= (size_t)cur.dims[i];
    std::vector<float> host(count);
    CHECK_ACL(aclrtMemcpy(host.data(), count * sizeof(float), outDev, count * sizeof(float),
                          ACL_MEMCPY_DEVICE_TO_HOST));
    std::printf("values:");
    for (float v : host)
        std::printf(" %.7g", v);
    std::printf("\n");

    for (size_t i = 0; i < aclmdlGetDatasetNumBuffers(input); i++)
        CHECK_ACL(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(input, i)));
    CHECK_ACL(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(output, 0)));
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(aclmdlDestroyDataset(output));
    for (void *p : inDev)
        CHECK_ACL(aclrtFree(p));
    CHECK_ACL(aclrtFree(outDev));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("dynamic_batch: OK\n");
    return 0;
}
