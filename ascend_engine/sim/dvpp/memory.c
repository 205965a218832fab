/*
 * memory.c -- acldvppMalloc / acldvppFree.  DVPP memory is device memory on
 * the NPU; here it is simulator device memory from aclrtMalloc, so copies,
 * model inputs and aclrtFree/acldvppFree all treat it as such.  The
 * simulator's allocations are already 128-byte aligned (the JPEGD/VPC buffer
 * rule), so only the size is rounded up.
 */
#include "dvpp_internal.h"

#define DVPP_ALIGN 128u

STANDIN_EXPORT aclError acldvppMalloc(void **devPtr, size_t size)
{
    if (!devPtr)
        return aeSimError(ACL_ERROR_INVALID_PARAM, "acldvppMalloc", "devPtr is NULL; pass the address of a void *");
    if (size == 0 || size > (size_t)-1 - DVPP_ALIGN)
        return aeSimError(ACL_ERROR_INVALID_PARAM, "acldvppMalloc", "size %zu is invalid: expected 1 .. %zu bytes",
                          size, (size_t)-1 - DVPP_ALIGN);
    size_t rounded = (size + DVPP_ALIGN - 1) / DVPP_ALIGN * DVPP_ALIGN;
    return aclrtMalloc(devPtr, rounded, ACL_MEM_MALLOC_HUGE_FIRST);
}

STANDIN_EXPORT aclError acldvppFree(void *devPtr)
{
    return aclrtFree(devPtr);
}
