/*
 * chain_loop.c -- the hand-written C limit for the host-overhead benchmark.
 *
 * The same AscendCL call sequence the engine issues per request (staging
 * copy, H2D on a copy stream, per model: wait on the producer's event, set
 * the gear, execute, record; D2H after the last model; a done event per
 * slot; when every slot is busy, one blocking wait for half the ring),
 * written directly against AscendCL with nothing else around it.
 * Returns the calling thread's CPU nanoseconds for the request loop only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ascend_engine/acl.h"

#define MAX_MODELS 8
#define MAX_DEPTH 16
#define CHECK(call)                                                            \
    do {                                                                       \
        aclError rc_ = (call);                                                 \
        if (rc_ != ACL_SUCCESS) {                                              \
            fprintf(stderr, "%s failed: %d %s\n", #call, rc_, aclGetRecentErrMsg()); \
            return -1;                                                         \
        }                                                                      \
    } while (0)

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Models form a chain: model k's only output feeds model k+1's only input. */
long long chain_loop(const char *const *paths, int n_models, int depth, int n_requests, int batch)
{
    if (n_models < 1 || n_models > MAX_MODELS || depth < 1 || depth > MAX_DEPTH)
        return -1;
    CHECK(aclrtSetDevice(0));
    uint32_t ids[MAX_MODELS];
    aclmdlDesc *descs[MAX_MODELS];
    size_t dyn[MAX_MODELS], in_size[MAX_MODELS], out_size[MAX_MODELS];
    for (int m = 0; m < n_models; m++) {
        CHECK(aclmdlLoadFromFile(paths[m], &ids[m]));
        descs[m] = aclmdlCreateDesc();
        CHECK(aclmdlGetDesc(descs[m], ids[m]));
        CHECK(aclmdlGetInputIndexByName(descs[m], ACL_DYNAMIC_TENSOR_NAME, &dyn[m]));
        in_size[m] = aclmdlGetInputSizeByIndex(descs[m], 0);
        out_size[m] = aclmdlGetOutputSizeByIndex(descs[m], 0);
    }
    aclmdlIODims dims;
    CHECK(aclmdlGetInputDims(descs[0], 0, &dims));
    size_t in_row = sizeof(float);
    for (size_t d = 1; d < dims.dimCount; d++)
        in_row *= (size_t)dims.dims[d];
    CHECK(aclmdlGetOutputDims(descs[n_models - 1], 0, &dims));
    size_t out_row = sizeof(float);
    for (size_t d = 1; d < dims.dimCount; d++)
        out_row *= (size_t)dims.dims[d];

    aclrtStream copy_in, copy_out, streams[MAX_MODELS];
    CHECK(aclrtCreateStream(&copy_in));
    CHECK(aclrtCreateStream(&copy_out));
    for (int m = 0; m < n_models; m++)
        CHECK(aclrtCreateStream(&streams[m]));

    /* per slot: device tensors (input + one per model output), dynamic
     * buffers, datasets, events, pinned staging */
    void *tensor[MAX_DEPTH][MAX_MODELS + 1], *dynbuf[MAX_DEPTH][MAX_MODELS];
    aclmdlDataset *ins[MAX_DEPTH][MAX_MODELS], *outs[MAX_DEPTH][MAX_MODELS];
    aclrtEvent node_done[MAX_DEPTH][MAX_MODELS], ready[MAX_DEPTH], done[MAX_DEPTH];
    void *host_in[MAX_DEPTH], *host_out[MAX_DEPTH];
    int busy[MAX_DEPTH] = {0};
    for (int s = 0; s < depth; s++) {
        CHECK(aclrtMalloc(&tensor[s][0], in_size[0], ACL_MEM_MALLOC_HUGE_FIRST));
        for (int m = 0; m < n_models; m++) {
            CHECK(aclrtMalloc(&tensor[s][m + 1], out_size[m], ACL_MEM_MALLOC_HUGE_FIRST));
            CHECK(aclrtMalloc(&dynbuf[s][m], aclmdlGetInputSizeByIndex(descs[m], dyn[m]),
                              ACL_MEM_MALLOC_HUGE_FIRST));
            ins[s][m] = aclmdlCreateDataset();
            outs[s][m] = aclmdlCreateDataset();
            CHECK(aclmdlAddDatasetBuffer(ins[s][m], aclCreateDataBuffer(tensor[s][m], in_size[m])));
            CHECK(aclmdlAddDatasetBuffer(
                ins[s][m], aclCreateDataBuffer(dynbuf[s][m], aclmdlGetInputSizeByIndex(descs[m], dyn[m]))));
            CHECK(aclmdlAddDatasetBuffer(outs[s][m], aclCreateDataBuffer(tensor[s][m + 1], out_size[m])));
            CHECK(aclrtCreateEventWithFlag(&node_done[s][m], ACL_EVENT_SYNC));
        }
        CHECK(aclrtCreateEventWithFlag(&ready[s], ACL_EVENT_SYNC));
        CHECK(aclrtCreateEventWithFlag(&done[s], ACL_EVENT_SYNC));
        CHECK(aclrtMallocHost(&host_in[s], in_row * (size_t)batch));
        CHECK(aclrtMallocHost(&host_out[s], out_row * (size_t)batch));
    }
    float *user_in = calloc((size_t)batch, in_row);
    float *user_out = calloc((size_t)batch, out_row);

    long long start = thread_cpu_ns();
    for (int r = 0; r < n_requests; r++) {
        int s = r % depth;
        if (busy[s]) {
            /* all slots busy: block once for half the ring, as the engine does */
            int ahead = depth / 2 - 1 > 0 ? depth / 2 - 1 : 0;
            CHECK(aclrtSynchronizeEvent(done[(r + ahead) % depth]));
            for (int k = 0; k <= ahead; k++) {
                int old = (r + k) % depth;
                CHECK(aclrtSynchronizeEvent(done[old]));
                memcpy(user_out, host_out[old], out_row * (size_t)batch);
                busy[old] = 0;
            }
        }
        memcpy(host_in[s], user_in, in_row * (size_t)batch);
        CHECK(aclrtMemcpyAsync(tensor[s][0], in_size[0], host_in[s], in_row * (size_t)batch,
                               ACL_MEMCPY_HOST_TO_DEVICE, copy_in));
        CHECK(aclrtRecordEvent(ready[s], copy_in));
        for (int m = 0; m < n_models; m++) {
            CHECK(aclrtStreamWaitEvent(streams[m], m == 0 ? ready[s] : node_done[s][m - 1]));
            CHECK(aclmdlSetDynamicBatchSize(ids[m], ins[s][m], dyn[m], (uint64_t)batch));
            CHECK(aclmdlExecuteAsync(ids[m], ins[s][m], outs[s][m], streams[m]));
            CHECK(aclrtRecordEvent(node_done[s][m], streams[m]));
        }
        CHECK(aclrtStreamWaitEvent(copy_out, node_done[s][n_models - 1]));
        CHECK(aclrtMemcpyAsync(host_out[s], out_row * (size_t)batch, tensor[s][n_models],
                               out_row * (size_t)batch, ACL_MEMCPY_DEVICE_TO_HOST, copy_out));
        CHECK(aclrtRecordEvent(done[s], copy_out));
        busy[s] = 1;
    }
    for (int k = 0; k < depth; k++) {
        int s = (n_requests + k) % depth;
        if (busy[s]) {
            CHECK(aclrtSynchronizeEvent(done[s]));
            memcpy(user_out, host_out[s], out_row * (size_t)batch);
        }
    }
    long long elapsed = thread_cpu_ns() - start;

    for (int s = 0; s < depth; s++) {
        for (int m = 0; m < n_models; m++) {
            for (int k = 0; k < 2; k++)
                aclDestroyDataBuffer(aclmdlGetDatasetBuffer(ins[s][m], (size_t)k));
            aclDestroyDataBuffer(aclmdlGetDatasetBuffer(outs[s][m], 0));
            aclmdlDestroyDataset(ins[s][m]);
            aclmdlDestroyDataset(outs[s][m]);
            aclrtDestroyEvent(node_done[s][m]);
            aclrtFree(tensor[s][m + 1]);
            aclrtFree(dynbuf[s][m]);
        }
        aclrtFree(tensor[s][0]);
        aclrtDestroyEvent(ready[s]);
        aclrtDestroyEvent(done[s]);
        aclrtFreeHost(host_in[s]);
        aclrtFreeHost(host_out[s]);
    }
    for (int m = 0; m < n_models; m++) {
        aclrtDestroyStream(streams[m]);
        aclmdlDestroyDesc(descs[m]);
        aclmdlUnload(ids[m]);
    }
    aclrtDestroyStream(copy_in);
    aclrtDestroyStream(copy_out);
    free(user_in);
    free(user_out);
    aclrtResetDevice(0);
    return elapsed;
}
