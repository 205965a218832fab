/*
 * loops.h -- what the benchmarks' hand-written C loops share (chain_loop.c,
 * sync_loop.c): one check of every AscendCL return code, which prints the
 * call and the runtime's message and fails the loop, and a CPU clock.
 */
#ifndef AE_BENCH_LOOPS_H
#define AE_BENCH_LOOPS_H

#include <stdio.h>
#include <time.h>

#include "ascend_engine/acl.h"

#define CHECK(call)                                                                          \
    do {                                                                                     \
        aclError rc_ = (call);                                                               \
        if (rc_ != ACL_SUCCESS) {                                                            \
            fprintf(stderr, "%s failed: %d %s\n", #call, rc_, aclGetRecentErrMsg());       \
            return -1;                                                                       \
        }                                                                                    \
    } while (0)

/* CPU nanoseconds so far on `clock` (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID). */
static inline long long cpu_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
