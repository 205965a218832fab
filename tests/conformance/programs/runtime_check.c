/*
 * runtime_check.c -- an AscendCL runtime program written against the real
 * CANN headers only (no ascend-engine header), as a user would write it.
 *
 * The conformance test compiles it with -I<torch_npu/include>, links it to
 * libascendcl_sim and runs it: the simulator must be a drop-in libascendcl.
 *
 * Flow: init, device, explicit context, two streams; stream 1 uploads a
 * buffer (H2D) and records an event; stream 2 waits for that event, copies
 * device to device, downloads (D2H) and records a timing event; then the data
 * and the timing are checked and everything is torn down in CANN's order
 * (events/streams, memory, context, device, finalize).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"

#define N_FLOATS (256 * 1024)
#define NBYTES (N_FLOATS * sizeof(float))

#define CHECK(call)                                                                     \
    do {                                                                                \
        aclError rc_ = (call);                                                          \
        if (rc_ != ACL_SUCCESS) {                                                       \
            const char *m_ = aclGetRecentErrMsg();                                      \
            fprintf(stderr, "runtime_check: %s failed with %d at line %d: %s\n", #call, \
                    (int)rc_, __LINE__, m_ ? m_ : "(no message)");                      \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

#define EXPECT(cond)                                                                    \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "runtime_check: expectation failed at line %d: %s\n",       \
                    __LINE__, #cond);                                                   \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

int main(void)
{
    CHECK(aclInit(NULL));

    uint32_t count = 0;
    CHECK(aclrtGetDeviceCount(&count));
    EXPECT(count >= 1);

    CHECK(aclrtSetDevice(0));
    int32_t dev = -1;
    CHECK(aclrtGetDevice(&dev));
    EXPECT(dev == 0);

    aclrtRunMode mode;
    CHECK(aclrtGetRunMode(&mode));
    EXPECT(mode == ACL_HOST || mode == ACL_DEVICE);
    const char *soc_name = aclrtGetSocName();
    EXPECT(soc_name != NULL && soc_name[0] != '\0');
    char soc[128];
    snprintf(soc, sizeof(soc), "%s", soc_name);   /* may not outlive aclFinalize */

    aclrtContext ctx = NULL, cur = NULL;
    CHECK(aclrtCreateContext(&ctx, 0));
    CHECK(aclrtSetCurrentContext(ctx));
    CHECK(aclrtGetCurrentContext(&cur));
    EXPECT(cur == ctx);

    aclrtStream s1 = NULL, s2 = NULL;
    CHECK(aclrtCreateStream(&s1));
    CHECK(aclrtCreateStream(&s2));

    aclrtEvent uploaded = NULL, t0 = NULL, t1 = NULL;
    CHECK(aclrtCreateEvent(&uploaded));
    CHECK(aclrtCreateEventWithFlag(&t0, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    CHECK(aclrtCreateEventWithFlag(&t1, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));

    size_t free_before = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total));
    EXPECT(total > 0 && free_before <= total);

    void *h_in = NULL, *h_out = NULL, *d_a = NULL, *d_b = NULL;
    CHECK(aclrtMallocHost(&h_in, NBYTES));
    CHECK(aclrtMallocHost(&h_out, NBYTES));
    CHECK(aclrtMalloc(&d_a, NBYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&d_b, NBYTES, ACL_MEM_MALLOC_NORMAL_ONLY));

    size_t free_after = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total));
    EXPECT(free_after + 2 * NBYTES <= free_before);

    float *in = (float *)h_in, *out = (float *)h_out;
    for (size_t i = 0; i < N_FLOATS; i++)
        in[i] = (float)i * 0.5f - 7.0f;
    memset(h_out, 0xAB, NBYTES);

    /* stream 1: upload, then mark it */
    CHECK(aclrtRecordEvent(t0, s1));
    CHECK(aclrtMemcpyAsync(d_a, NBYTES, h_in, NBYTES, ACL_MEMCPY_HOST_TO_DEVICE, s1));
    CHECK(aclrtRecordEvent(uploaded, s1));

    /* stream 2: wait for the upload, copy on the device, download */
    CHECK(aclrtStreamWaitEvent(s2, uploaded));
    CHECK(aclrtMemsetAsync(d_b, NBYTES, 0, NBYTES, s2));
    CHECK(aclrtMemcpyAsync(d_b, NBYTES, d_a, NBYTES, ACL_MEMCPY_DEVICE_TO_DEVICE, s2));
    CHECK(aclrtMemcpyAsync(h_out, NBYTES, d_b, NBYTES, ACL_MEMCPY_DEVICE_TO_HOST, s2));
    CHECK(aclrtRecordEvent(t1, s2));

    CHECK(aclrtSynchronizeStream(s2));
    CHECK(aclrtSynchronizeEvent(t1));
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    CHECK(aclrtQueryEventStatus(t1, &st));
    EXPECT(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);

    for (size_t i = 0; i < N_FLOATS; i++) {
        if (out[i] != in[i]) {
            fprintf(stderr, "runtime_check: data mismatch at %zu: %f != %f\n", i, (double)out[i], (double)in[i]);
            return 1;
        }
    }

    CHECK(aclrtSynchronizeStream(s1));
    float ms = -1.0f;
    CHECK(aclrtEventElapsedTime(&ms, t0, t1));
    EXPECT(ms >= 0.0f && ms < 60000.0f);

    /* synchronous copies and memset through the context's default stream */
    CHECK(aclrtMemset(d_b, NBYTES, 0, NBYTES));
    CHECK(aclrtMemcpy(h_out, NBYTES, d_b, NBYTES, ACL_MEMCPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < N_FLOATS; i++)
        EXPECT(out[i] == 0.0f);
    CHECK(aclrtMemcpy(d_b, NBYTES, h_in, NBYTES, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(h_out, NBYTES, d_b, NBYTES, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(memcmp(h_out, h_in, NBYTES) == 0);

    /* an out-of-bounds copy is refused with a parameter error and a message */
    aclError bad = aclrtMemcpy(h_out, NBYTES / 2, d_b, NBYTES, ACL_MEMCPY_DEVICE_TO_HOST);
    EXPECT(bad != ACL_SUCCESS);
    const char *msg = aclGetRecentErrMsg();
    EXPECT(msg != NULL && strstr(msg, "aclrtMemcpy") != NULL);

    /* teardown in CANN's order */
    CHECK(aclrtDestroyEvent(t1));
    CHECK(aclrtDestroyEvent(t0));
    CHECK(aclrtDestroyEvent(uploaded));
    CHECK(aclrtDestroyStream(s2));
    CHECK(aclrtDestroyStream(s1));
    CHECK(aclrtFree(d_b));
    CHECK(aclrtFree(d_a));
    CHECK(aclrtFreeHost(h_out));
    CHECK(aclrtFreeHost(h_in));
    CHECK(aclrtDestroyContext(ctx));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());

    printf("runtime_check: OK (%u devices, soc %s, %.3f ms)\n", count, soc, (double)ms);
    return 0;
}
