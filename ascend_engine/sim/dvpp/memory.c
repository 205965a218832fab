/*
 * memory.c -- acldvppMalloc / acldvppFree, and the check that a buffer is
 * DVPP memory.  DVPP memory is device memory on the NPU; here it is simulator
 * device memory from aclrtMalloc, so copies, model inputs and
 * aclrtFree/acldvppFree all treat it as such.  The simulator's allocations
 * are already 128-byte aligned (the JPEGD/VPC buffer rule), so only the size
 * is rounded up.
 *
 * On Ascend 310 the DVPP reaches only its own memory: every buffer a DVPP
 * task reads or writes must come from acldvppMalloc (docs/simulator.md,
 * "DVPP").  The allocations made here are remembered for that check; later
 * SoCs also take aclrtMalloc memory.
 */
#include <pthread.h>
#include <stdlib.h>

#include "dvpp_internal.h"

#define DVPP_ALIGN 128u

typedef struct {
    uintptr_t base;
    size_t size;
} dvpp_block;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static dvpp_block *blocks;
static size_t n_blocks, cap_blocks;

static int remember(void *p, size_t size)
{
    pthread_mutex_lock(&blocks_lock);
    int rc = 0;
    if (n_blocks == cap_blocks) {
        size_t cap = cap_blocks ? cap_blocks * 2 : 64;
        dvpp_block *b = realloc(blocks, cap * sizeof *b);
        if (b) {
            blocks = b;
            cap_blocks = cap;
        } else {
            rc = -1;
        }
    }
    if (!rc)
        blocks[n_blocks++] = (dvpp_block){(uintptr_t)p, size};
    pthread_mutex_unlock(&blocks_lock);
    return rc;
}

static void forget(const void *p)
{
    pthread_mutex_lock(&blocks_lock);
    for (size_t i = 0; i < n_blocks; i++)
        if (blocks[i].base == (uintptr_t)p) {
            blocks[i] = blocks[--n_blocks];
            break;
        }
    pthread_mutex_unlock(&blocks_lock);
}

static int owned(const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p;
    int found = 0;
    pthread_mutex_lock(&blocks_lock);
    for (size_t i = 0; i < n_blocks && !found; i++)
        found = a >= blocks[i].base && len <= blocks[i].size && a - blocks[i].base <= blocks[i].size - len;
    pthread_mutex_unlock(&blocks_lock);
    return found;
}

aclError dvpp_check_memory(const char *fn, const char *arg, const void *p, size_t len, int32_t device_id)
{
    aclError rc = aeSimMemCheck(fn, arg, p, len, device_id);
    if (!rc && dvpp_current_soc() == DVPP_SOC_310 && !owned(p, len))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "%s %p is not DVPP memory: on Ascend 310 the DVPP reads and writes only buffers from "
                        "acldvppMalloc", arg, p);
    return rc;
}

STANDIN_EXPORT aclError acldvppMalloc(void **devPtr, size_t size)
{
    if (!devPtr)
        return aeSimError(ACL_ERROR_INVALID_PARAM, "acldvppMalloc", "devPtr is NULL; pass the address of a void *");
    if (size == 0 || size > (size_t)-1 - DVPP_ALIGN)
        return aeSimError(ACL_ERROR_INVALID_PARAM, "acldvppMalloc", "size %zu is invalid: expected 1 .. %zu bytes",
                          size, (size_t)-1 - DVPP_ALIGN);
    size_t rounded = (size + DVPP_ALIGN - 1) / DVPP_ALIGN * DVPP_ALIGN;
    aclError rc = aclrtMalloc(devPtr, rounded, ACL_MEM_MALLOC_HUGE_FIRST);
    if (!rc && remember(*devPtr, rounded)) {
        aclrtFree(*devPtr);
        *devPtr = NULL;
        rc = aeSimError(ACL_ERROR_BAD_ALLOC, "acldvppMalloc", "out of host memory recording the allocation");
    }
    return rc;
}

STANDIN_EXPORT aclError acldvppFree(void *devPtr)
{
    aclError rc = aclrtFree(devPtr);
    if (!rc)
        forget(devPtr);
    return rc;
}
