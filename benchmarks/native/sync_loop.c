/*
 * sync_loop.c -- the plainest way to run one model: per request, in the calling thread,
 *
 *   aclrtMemcpy H2D (the request's input, one row, into the model's input buffer)
 *   [aclmdlSetDynamicBatchSize: a model with batch gears runs at gear 1]
 *   aclmdlExecute   (synchronous: returns when the model has run)
 *   aclrtMemcpy D2H (the output back into host memory)
 *
 * one request after another, no stream, no event, nothing in flight.  The
 * limit a caller of Engine.run() in a loop is measured against
 * (benchmarks/bench_serve.py).  Returns the process's CPU nanoseconds
 * (CLOCK_PROCESS_CPUTIME_ID: every thread, the simulator's included) for the
 * request loop alone, or -1 after printing what failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "loops.h"

/* One row's bytes of a float32 tensor of these dims (the first dimension is the batch). */
static size_t row_bytes(const aclmdlIODims *dims)
{
    size_t row = sizeof(float);
    for (size_t d = 1; d < dims->dimCount; d++)
        row *= (size_t)dims->dims[d];
    return row;
}

static long long run(uint32_t id, aclmdlDesc *desc, int n_requests)
{
    size_t in_size = aclmdlGetInputSizeByIndex(desc, 0), out_size = aclmdlGetOutputSizeByIndex(desc, 0);
    aclmdlIODims dims;
    CHECK(aclmdlGetInputDims(desc, 0, &dims));
    size_t in_row = row_bytes(&dims);
    CHECK(aclmdlGetOutputDims(desc, 0, &dims));
    size_t out_row = row_bytes(&dims);
    void *dev_in = NULL, *dev_out = NULL, *dev_gear = NULL;
    CHECK(aclrtMalloc(&dev_in, in_size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&dev_out, out_size, ACL_MEM_MALLOC_HUGE_FIRST));
    aclmdlDataset *ins = aclmdlCreateDataset(), *outs = aclmdlCreateDataset();
    CHECK(aclmdlAddDatasetBuffer(ins, aclCreateDataBuffer(dev_in, in_size)));
    size_t gear;
    int gears = aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &gear) == ACL_SUCCESS;
    if (gears) {
        size_t gear_size = aclmdlGetInputSizeByIndex(desc, gear);
        CHECK(aclrtMalloc(&dev_gear, gear_size, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclmdlAddDatasetBuffer(ins, aclCreateDataBuffer(dev_gear, gear_size)));
    }
    CHECK(aclmdlAddDatasetBuffer(outs, aclCreateDataBuffer(dev_out, out_size)));
    float *host_in = calloc(1, in_row), *host_out = calloc(1, out_row);
    if (!host_in || !host_out)
        return -1;
    long long start = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (int r = 0; r < n_requests; r++) {
        host_in[0] = (float)r;
        CHECK(aclrtMemcpy(dev_in, in_size, host_in, in_row, ACL_MEMCPY_HOST_TO_DEVICE));
        if (gears)
            CHECK(aclmdlSetDynamicBatchSize(id, ins, gear, 1));
        CHECK(aclmdlExecute(id, ins, outs));
        CHECK(aclrtMemcpy(host_out, out_row, dev_out, out_row, ACL_MEMCPY_DEVICE_TO_HOST));
    }
    long long elapsed = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - start;
    for (size_t b = 0; b < aclmdlGetDatasetNumBuffers(ins); b++)
        aclDestroyDataBuffer(aclmdlGetDatasetBuffer(ins, b));
    for (size_t b = 0; b < aclmdlGetDatasetNumBuffers(outs); b++)
        aclDestroyDataBuffer(aclmdlGetDatasetBuffer(outs, b));
    aclmdlDestroyDataset(ins);
    aclmdlDestroyDataset(outs);
    aclrtFree(dev_in);
    aclrtFree(dev_out);
    if (dev_gear)
        aclrtFree(dev_gear);
    free(host_in);
    free(host_out);
    return elapsed;
}

long long sync_loop(const char *path, int n_requests)
{
    uint32_t id;
    CHECK(aclrtSetDevice(0));
    CHECK(aclmdlLoadFromFile(path, &id));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK(aclmdlGetDesc(desc, id));
    long long elapsed = run(id, desc, n_requests);
    aclmdlDestroyDesc(desc);
    aclmdlUnload(id);
    aclrtResetDevice(0);
    return elapsed;
}
