/*
 * picture.c -- the pixel formats the simulator's DVPP knows and the bytes a
 * picture of each takes, and the buffer check every task makes on its
 * picture descriptions.  Widths strides are in bytes of the first plane's
 * line: the width for the semi-planar YUVs, twice it for packed YUV 4:2:2,
 * three times for RGB and packed YUV 4:4:4, four times for xRGB.
 */
#include <stdio.h>

#include "dvpp_internal.h"

static const struct {
    uint32_t format;
    dvpp_format_info info;
} formats[] = {
    {PIXEL_FORMAT_YUV_400, {"YUV400", 1, 0, 0, 0}},
    {PIXEL_FORMAT_YUV_SEMIPLANAR_420, {"YUV420SP (NV12)", 1, 2, 2, 0}},
    {PIXEL_FORMAT_YVU_SEMIPLANAR_420, {"YVU420SP (NV21)", 1, 2, 2, 0}},
    {PIXEL_FORMAT_YUV_SEMIPLANAR_422, {"YUV422SP", 1, 2, 1, 0}},
    {PIXEL_FORMAT_YVU_SEMIPLANAR_422, {"YVU422SP", 1, 2, 1, 0}},
    {PIXEL_FORMAT_YUV_SEMIPLANAR_444, {"YUV444SP", 1, 1, 1, 0}},
    {PIXEL_FORMAT_YVU_SEMIPLANAR_444, {"YVU444SP", 1, 1, 1, 0}},
    {PIXEL_FORMAT_YUV_SEMIPLANAR_440, {"YUV440SP", 1, 1, 2, 0}},
    {PIXEL_FORMAT_YVU_SEMIPLANAR_440, {"YVU440SP", 1, 1, 2, 0}},
    {PIXEL_FORMAT_YUYV_PACKED_422, {"YUYV422 packed", 2, 0, 0, 1}},
    {PIXEL_FORMAT_UYVY_PACKED_422, {"UYVY422 packed", 2, 0, 0, 1}},
    {PIXEL_FORMAT_YVYU_PACKED_422, {"YVYU422 packed", 2, 0, 0, 1}},
    {PIXEL_FORMAT_VYUY_PACKED_422, {"VYUY422 packed", 2, 0, 0, 1}},
    {PIXEL_FORMAT_YUV_PACKED_444, {"YUV444 packed", 3, 0, 0, 1}},
    {PIXEL_FORMAT_RGB_888, {"RGB888", 3, 0, 0, 1}},
    {PIXEL_FORMAT_BGR_888, {"BGR888", 3, 0, 0, 1}},
    {PIXEL_FORMAT_ARGB_8888, {"ARGB8888", 4, 0, 0, 1}},
    {PIXEL_FORMAT_ABGR_8888, {"ABGR8888", 4, 0, 0, 1}},
    {PIXEL_FORMAT_RGBA_8888, {"RGBA8888", 4, 0, 0, 1}},
    {PIXEL_FORMAT_BGRA_8888, {"BGRA8888", 4, 0, 0, 1}},
};

const dvpp_format_info *dvpp_format(uint32_t format)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].format == format)
            return &formats[i].info;
    return NULL;
}

const char *dvpp_format_name(uint32_t format)
{
    const dvpp_format_info *f = dvpp_format(format);
    return f ? f->name : "an unknown format";
}

uint64_t dvpp_pic_bytes(uint32_t format, uint32_t width_stride, uint32_t height_stride)
{
    const dvpp_format_info *f = dvpp_format(format);
    uint64_t luma = (uint64_t)width_stride * height_stride;
    if (!f || f->packed || !f->chroma_w_div)
        return luma;
    /* two chroma samples (U and V) per chroma position */
    return luma + 2 * luma / ((uint64_t)f->chroma_w_div * f->chroma_h_div);
}

void dvpp_pic_snapshot_locked(const acldvppPicDesc *d, dvpp_pic *out)
{
    out->data = d->data;
    out->size = d->size;
    out->format = d->format;
    out->width = d->width;
    out->height = d->height;
    out->width_stride = d->width_stride;
    out->height_stride = d->height_stride;
}

aclError dvpp_pic_check_buffer(const char *fn, const char *arg, const dvpp_pic *p, int32_t device_id)
{
    if (!p->data)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s has no data: set a DVPP buffer (acldvppMalloc) with acldvppSetPicDescData", arg);
    uint64_t need = dvpp_pic_bytes(p->format, p->width_stride, p->height_stride);
    if (p->size < need)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s size %u is too small: a %s picture of widthStride %u x heightStride %u takes %llu bytes",
                          arg, p->size, dvpp_format_name(p->format), p->width_stride, p->height_stride,
                          (unsigned long long)need);
    char what[96];
    snprintf(what, sizeof what, "%s data", arg);
    return dvpp_check_memory(fn, what, p->data, p->size, device_id);
}
