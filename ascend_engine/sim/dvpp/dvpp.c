/*
 * dvpp.c -- libacl_dvpp.so, the simulator's companion to CANN's DVPP library.
 *
 * Only the memory functions are provided: programs allocate their image
 * buffers with acldvppMalloc even when they do their pre-processing on the
 * host, so these two are what a client links against.  DVPP memory is device
 * memory on the NPU; here it is simulator device memory from aclrtMalloc, so
 * copies, model inputs and aclrtFree/acldvppFree all treat it as such.
 *
 * aclrtMalloc and aclrtFree are left undefined in this library and resolved
 * at load time from the AscendCL library the program is linked with (the
 * simulator), as the real libacl_dvpp.so resolves them from libascendcl.so.
 */
#include <stddef.h>

#include "ascend_engine/acl.h"

#define DVPP_EXPORT __attribute__((visibility("default")))

/* DVPP buffers must be 128-byte aligned and padded; the simulator's
 * allocations already are, so only the size needs rounding up. */
#define DVPP_ALIGN 128u

DVPP_EXPORT aclError acldvppMalloc(void **devPtr, size_t size)
{
    if (!devPtr || size == 0 || size > (size_t)-1 - DVPP_ALIGN)
        return ACL_ERROR_INVALID_PARAM;
    size_t rounded = (size + DVPP_ALIGN - 1) / DVPP_ALIGN * DVPP_ALIGN;
    return aclrtMalloc(devPtr, rounded, ACL_MEM_MALLOC_HUGE_FIRST);
}

DVPP_EXPORT aclError acldvppFree(void *devPtr)
{
    return aclrtFree(devPtr);
}
