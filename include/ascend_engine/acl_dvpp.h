/*
 * ascend_engine/acl_dvpp.h -- the subset of AscendCL's DVPP (image
 * pre-processing, acl/ops/acl_dvpp.h) that the executor's image nodes call.
 *
 * Written for this project to CANN's names, argument lists and enum values,
 * like acl.h.  With AE_USE_CANN_HEADERS, CANN's own acl/ops/acl_dvpp.h is
 * used when the include path has it (the conformance tests also compile
 * dvpp_functions.h against the simulator's mirror of it).  The functions live
 * in libacl_dvpp.so beside libascendcl.so; the loader fills ae_dvpp_api from
 * it only when an engine has image nodes (loader.h, ae_load_dvpp).
 */
#ifndef ASCEND_ENGINE_ACL_DVPP_H
#define ASCEND_ENGINE_ACL_DVPP_H

#include "ascend_engine/acl.h"

#if defined(AE_USE_CANN_HEADERS) && defined(__has_include)
#if __has_include("acl/ops/acl_dvpp.h")
#include "acl/ops/acl_dvpp.h"
#define AE_HAVE_CANN_DVPP_H 1
#endif
#endif

#ifndef AE_HAVE_CANN_DVPP_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct acldvppChannelDesc acldvppChannelDesc;
typedef struct acldvppPicDesc acldvppPicDesc;
typedef struct acldvppBatchPicDesc acldvppBatchPicDesc;
typedef struct acldvppRoiConfig acldvppRoiConfig;
typedef struct acldvppResizeConfig acldvppResizeConfig;

/* The pixel formats the image nodes use (CANN's enum has many more). */
enum acldvppPixelFormat {
    PIXEL_FORMAT_YUV_400 = 0,
    PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1, /* NV12: the AIPP's YUV420SP_U8 input */
    PIXEL_FORMAT_UNKNOWN = 10000
};
typedef enum acldvppPixelFormat acldvppPixelFormat;

enum acldvppChannelMode { DVPP_CHNMODE_VPC = 1, DVPP_CHNMODE_JPEGD = 2, DVPP_CHNMODE_JPEGE = 4 };
typedef enum acldvppChannelMode acldvppChannelMode;

enum acldvppJpegFormat {
    ACL_JPEG_CSS_444 = 0,
    ACL_JPEG_CSS_422,
    ACL_JPEG_CSS_420,
    ACL_JPEG_CSS_GRAY,
    ACL_JPEG_CSS_440,
    ACL_JPEG_CSS_411,
    ACL_JPEG_CSS_UNKNOWN = 1000
};
typedef enum acldvppJpegFormat acldvppJpegFormat;

#ifdef __cplusplus
}
#endif

#endif /* !AE_HAVE_CANN_DVPP_H */

#endif /* ASCEND_ENGINE_ACL_DVPP_H */
