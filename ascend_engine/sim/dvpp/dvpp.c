/*
 * dvpp.c -- libacl_dvpp.so, the simulator's companion to CANN's DVPP library,
 * implementing the declarations of acl/ops/acl_dvpp.h (ours).
 *
 * Only the memory functions do real work: programs allocate their image
 * buffers with acldvppMalloc even when they pre-process on the host.  DVPP
 * memory is device memory on the NPU; here it is simulator device memory from
 * aclrtMalloc, so copies, model inputs and aclrtFree/acldvppFree all treat it
 * as such.  The image functions (channels, picture descriptions, JPEG decode,
 * VPC resize) have no CPU model: they report ACL_ERROR_API_NOT_SUPPORT through
 * the simulator's recent error, and the Create functions return NULL.
 *
 * aclrtMalloc, aclrtFree and aeSimNotSupported are left undefined in this
 * library and resolved at load time from the AscendCL library the program is
 * linked with (the simulator), as the real libacl_dvpp.so resolves its
 * runtime calls from libascendcl.so.
 */
#include <stddef.h>

#include "standin.h"
#define AE_DVPP_OWN_BASE
#include "acl/ops/acl_dvpp.h"

/* DVPP buffers must be 128-byte aligned and padded; the simulator's
 * allocations already are, so only the size needs rounding up. */
#define DVPP_ALIGN 128u

#define DVPP_NOT_SIMULATED "DVPP image processing has no CPU model; pre-process on the host instead"

STANDIN_EXPORT aclError acldvppMalloc(void **devPtr, size_t size)
{
    if (!devPtr || size == 0 || size > (size_t)-1 - DVPP_ALIGN)
        return ACL_ERROR_INVALID_PARAM;
    size_t rounded = (size + DVPP_ALIGN - 1) / DVPP_ALIGN * DVPP_ALIGN;
    return aclrtMalloc(devPtr, rounded, ACL_MEM_MALLOC_HUGE_FIRST);
}

STANDIN_EXPORT aclError acldvppFree(void *devPtr)
{
    return aclrtFree(devPtr);
}

/* Functions returning a description: NULL, with the reason recorded. */
#define DVPP_NULL(type, name)                                  \
    STANDIN_EXPORT type *name(void)                            \
    {                                                          \
        aeSimNotSupported(#name, DVPP_NOT_SIMULATED);          \
        return NULL;                                           \
    }

DVPP_NULL(acldvppChannelDesc, acldvppCreateChannelDesc)
DVPP_NULL(acldvppPicDesc, acldvppCreatePicDesc)
DVPP_NULL(acldvppResizeConfig, acldvppCreateResizeConfig)

#define DVPP_UNSUPPORTED(name, params, uses)                   \
    STANDIN_EXPORT aclError name params                        \
    {                                                          \
        uses;                                                  \
        return aeSimNotSupported(#name, DVPP_NOT_SIMULATED);   \
    }

DVPP_UNSUPPORTED(acldvppDestroyChannelDesc, (acldvppChannelDesc *channelDesc), (void)channelDesc)
DVPP_UNSUPPORTED(acldvppCreateChannel, (acldvppChannelDesc *channelDesc), (void)channelDesc)
DVPP_UNSUPPORTED(acldvppDestroyChannel, (acldvppChannelDesc *channelDesc), (void)channelDesc)
DVPP_UNSUPPORTED(acldvppDestroyPicDesc, (acldvppPicDesc *picDesc), (void)picDesc)
DVPP_UNSUPPORTED(acldvppSetPicDescData, (acldvppPicDesc *picDesc, void *dataDev), ((void)picDesc, (void)dataDev))
DVPP_UNSUPPORTED(acldvppSetPicDescSize, (acldvppPicDesc *picDesc, uint32_t size), ((void)picDesc, (void)size))
DVPP_UNSUPPORTED(acldvppSetPicDescFormat, (acldvppPicDesc *picDesc, acldvppPixelFormat format),
                 ((void)picDesc, (void)format))
DVPP_UNSUPPORTED(acldvppSetPicDescWidth, (acldvppPicDesc *picDesc, uint32_t width), ((void)picDesc, (void)width))
DVPP_UNSUPPORTED(acldvppSetPicDescHeight, (acldvppPicDesc *picDesc, uint32_t height),
                 ((void)picDesc, (void)height))
DVPP_UNSUPPORTED(acldvppSetPicDescWidthStride, (acldvppPicDesc *picDesc, uint32_t widthStride),
                 ((void)picDesc, (void)widthStride))
DVPP_UNSUPPORTED(acldvppSetPicDescHeightStride, (acldvppPicDesc *picDesc, uint32_t heightStride),
                 ((void)picDesc, (void)heightStride))
DVPP_UNSUPPORTED(acldvppDestroyResizeConfig, (acldvppResizeConfig *resizeConfig), (void)resizeConfig)
DVPP_UNSUPPORTED(acldvppVpcResizeAsync,
                 (acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc,
                  acldvppResizeConfig *resizeConfig, aclrtStream stream),
                 ((void)channelDesc, (void)inputDesc, (void)outputDesc, (void)resizeConfig, (void)stream))
DVPP_UNSUPPORTED(acldvppJpegGetImageInfo,
                 (const void *data, uint32_t size, uint32_t *width, uint32_t *height, int32_t *components),
                 ((void)data, (void)size, (void)width, (void)height, (void)components))
DVPP_UNSUPPORTED(acldvppJpegDecodeAsync,
                 (acldvppChannelDesc *channelDesc, const void *data, uint32_t size, acldvppPicDesc *outputDesc,
                  aclrtStream stream),
                 ((void)channelDesc, (void)data, (void)size, (void)outputDesc, (void)stream))
