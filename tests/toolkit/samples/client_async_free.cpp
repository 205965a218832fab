// (g) The asynchronous sample's memory pattern: every image gets its own
// output buffers; a blocking host callback, run by a report thread, prints
// the result and frees the buffers it consumed (aclrtFreeHost and aclrtFree
// inside the callback).  Nothing may wait for the stream that is waiting for
// that very callback.
//
// usage: client_async_free MODEL IMAGE.bin [IMAGE.bin ...]
#include <pthread.h>

#include <atomic>

#include "sample_common.h"

namespace {

aclrtContext g_context = nullptr;
std::atomic<bool> g_exit(false);
std::atomic<int> g_freed(0);

struct Result {
    int index;
    void *outDev;
    void *outHost;
    size_t size;
};

void *ReportThread(void *)
{
    CHECK_ACL(aclrtSetCurrentContext(g_context));
    while (!g_exit.load()) {
        aclError ret = aclrtProcessReport(100);
        if (ret != ACL_SUCCESS && ret != ACL_ERROR_RT_REPORT_TIMEOUT && ret != ACL_ERROR_RT_THREAD_SUBSCRIBE) {
            std::fprintf(stderr, "aclrtProcessReport: %d %s\n", ret, aclGetRecentErrMsg());
            std::exit(1);
        }
    }
    return nullptr;
}

void OnResult(void *userData)
{
    Result *r = static_cast<Result *>(userData);
    std::string label = "image " + std::to_string(r->index);
    PrintTopK(label.c_str(), static_cast<const float *>(r->outHost), r->size / sizeof(float), 5);
    CHECK_ACL(aclrtFreeHost(r->outHost));
    CHECK_ACL(aclrtFree(r->outDev));
    delete r;
    g_freed++;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL IMAGE.bin [IMAGE.bin ...]\n", argv[0]);
        return 2;
    }
    const int images = argc - 2;
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclrtCreateContext(&g_context, 0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    pthread_t reporter;
    CHECK_TRUE(pthread_create(&reporter, nullptr, ReportThread, nullptr) == 0);
    CHECK_ACL(aclrtSubscribeReport(static_cast<uint64_t>(reporter), stream));

    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    size_t inSize = aclmdlGetInputSizeByIndex(desc, 0);
    size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);

    std::vector<void *> inputs;
    std::vector<aclmdlDataset *> datasets;
    for (int i = 0; i < images; i++) {
        std::vector<char> image = ReadFile(argv[2 + i]);
        CHECK_TRUE(image.size() == inSize);
        void *inDev = nullptr;
        CHECK_ACL(aclrtMalloc(&inDev, inSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMemcpy(inDev, inSize, image.data(), image.size(), ACL_MEMCPY_HOST_TO_DEVICE));
        Result *r = new Result{i, nullptr, nullptr, outSize};
        CHECK_ACL(aclrtMalloc(&r->outDev, outSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMallocHost(&r->outHost, outSize));
        aclmdlDataset *input = aclmdlCreateDataset();
        aclmdlDataset *output = aclmdlCreateDataset();
        CHECK_ACL(aclmdlAddDatasetBuffer(input, aclCreateDataBuffer(inDev, inSize)));
        CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(r->outDev, outSize)));
        CHECK_ACL(aclmdlExecuteAsync(modelId, input, output, stream));
        CHECK_ACL(aclrtMemcpyAsync(r->outHost, outSize, r->outDev, outSize, ACL_MEMCPY_DEVICE_TO_HOST, stream));
        CHECK_ACL(aclrtLaunchCallback(OnResult, r, ACL_CALLBACK_BLOCK, stream));
        inputs.push_back(inDev);
        datasets.push_back(input);
        datasets.push_back(output);
    }
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_TRUE(g_freed.load() == images);
    CHECK_ACL(aclrtUnSubscribeReport(static_cast<uint64_t>(reporter), stream));
    g_exit = true;
    pthread_join(reporter, nullptr);

    for (aclmdlDataset *ds : datasets) {
        CHECK_ACL(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(ds, 0)));
        CHECK_ACL(aclmdlDestroyDataset(ds));
    }
    for (void *p : inputs)
        CHECK_ACL(aclrtFree(p));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(g_context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("client_async_free: OK (%d images, buffers freed in callbacks)\n", images);
    return 0;
}
