// (b) Image classification, asynchronous, in the shape of the Ascend
// callback sample: each image is executed with aclmdlExecuteAsync and
// followed by a host callback (aclrtLaunchCallback) that copies the result
// out and prints it.  The callbacks run on a thread of ours that loops on
// aclrtProcessReport after subscribing to the stream.
//
// usage: classify_async MODEL IMAGE.bin [IMAGE.bin ...]
#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include "sample_common.h"

namespace {

aclrtContext g_context = nullptr;
std::atomic<bool> g_exit(false);
std::atomic<int> g_done(0);

struct Job {
    int index;
    void *outDev;
    size_t outSize;
    size_t classes;
};

void *ReportThread(void *)
{
    // Callbacks may call AscendCL, which needs a current context here too.
    CHECK_ACL(aclrtSetCurrentContext(g_context));
    while (!g_exit.load()) {
        aclError ret = aclrtProcessReport(100);
        // A timeout just means no callback was due in the last 100 ms; before
        // main subscribes us (and after it unsubscribes) we are not subscribed.
        if (ret == ACL_ERROR_RT_THREAD_SUBSCRIBE) {
            usleep(1000);
            continue;
        }
        if (ret != ACL_SUCCESS && ret != ACL_ERROR_RT_REPORT_TIMEOUT) {
            std::fprintf(stderr, "aclrtProcessReport: %d %s\n", ret, aclGetRecentErrMsg());
            std::exit(1);
        }
    }
    return nullptr;
}

void OnResult(void *userData)
{
    Job *job = static_cast<Job *>(userData);
    std::vector<float> host(job->outSize / sizeof(float));
    CHECK_ACL(aclrtMemcpy(host.data(), host.size() * sizeof(float), job->outDev, job->outSize,
                          ACL_MEMCPY_DEVICE_TO_HOST));
    std::string label = "image " + std::to_string(job->index);
    PrintTopK(label.c_str(), host.data(), job->classes, 5);
    g_done++;
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

    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    aclmdlIODims outDims;
    CHECK_ACL(aclmdlGetOutputDims(desc, 0, &outDims));
    size_t inSize = aclmdlGetInputSizeByIndex(desc, 0);
    size_t outSize = aclmdlGetOutputSizeByIndex(desc, 0);

    pthread_t tid;
    CHECK_TRUE(pthread_create(&tid, nullptr, ReportThread, nullptr) == 0);
    CHECK_ACL(aclrtSubscribeReport(static_cast<uint64_t>(tid), stream));

    std::vector<Job> jobs(images);
    std::vector<void *> devBuffers;
    std::vector<aclmdlDataset *> datasets;
    std::vector<aclDataBuffer *> dataBuffers;
    for (int i = 0; i < images; i++) {
        std::vector<char> image = ReadFile(argv[2 + i]);
        CHECK_TRUE(image.size() <= inSize);
        void *inDev = nullptr, *outDev = nullptr;
        CHECK_ACL(aclrtMalloc(&inDev, inSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMalloc(&outDev, outSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMemcpy(inDev, inSize, image.data(), image.size(), ACL_MEMCPY_HOST_TO_DEVICE));
        aclmdlDataset *in = aclmdlCreateDataset();
        aclmdlDataset *out = aclmdlCreateDataset();
        aclDataBuffer *inBuf = aclCreateDataBuffer(inDev, inSize);
        aclDataBuffer *outBuf = aclCreateDataBuffer(outDev, outSize);
        CHECK_ACL(aclmdlAddDatasetBuffer(in, inBuf));
        CHECK_ACL(aclmdlAddDatasetBuffer(out, outBuf));
        jobs[i] = Job{i, outDev, outSize, (size_t)outDims.dims[outDims.dimCount - 1]};

        CHECK_ACL(aclmdlExecuteAsync(modelId, in, out, stream));
        CHECK_ACL(aclrtLaunchCallback(OnResult, &jobs[i], ACL_CALLBACK_BLOCK, stream));

        devBuffers.push_back(inDev);
        devBuffers.push_back(outDev);
        datasets.push_back(in);
        datasets.push_back(out);
        dataBuffers.push_back(inBuf);
        dataBuffers.push_back(outBuf);
    }
    // With blocking callbacks, the stream is done only after every callback ran.
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_TRUE(g_done.load() == images);

    CHECK_ACL(aclrtUnSubscribeReport(static_cast<uint64_t>(tid), stream));
    g_exit = true;
    pthread_join(tid, nullptr);

    for (aclDataBuffer *b : dataBuffers)
        CHECK_ACL(aclDestroyDataBuffer(b));
    for (aclmdlDataset *d : datasets)
        CHECK_ACL(aclmdlDestroyDataset(d));
    for (void *p : devBuffers)
        CHECK_ACL(aclrtFree(p));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(g_context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("classify_async: OK (%d images)\n", images);
    return 0;
}
