/*
 * vpc.c -- the VPC calls: resize, crop, crop-and-resize, crop-and-paste
 * (with or without a resize config), their batch forms, colour conversion
 * and borders.  Each call checks CANN's
 * rules at submission (docs/simulator.md, "DVPP"), copies the picture layouts
 * and regions, and queues one task that does the pixel work (vpc_pixels.c):
 *
 *   pictures   10 x 6 up to 4096 x 4096 (inputs in YUV420SP up to 8192 x 8192,
 *              CANN's 8K case); YUV420SP width and height even, YUV 4:2:2
 *              width even; width stride a multiple of 16, 32 .. 16384 and at
 *              least the line's bytes; height stride even, 6 .. 16384 and at
 *              least the height; the description's size covers
 *              widthStride x heightStride and lies in the buffer;
 *   regions    left and top even, right and bottom odd (inclusive bounds),
 *              inside the picture, at least 10 x 6;
 *   scaling    output / input between 1/32 and 16 in each direction;
 *   batches    at most 256 regions in one call;
 *   formats    Ascend 310 writes YUV420SP only; 310P and 910B also the other
 *              semi-planar and packed YUVs, YUV400 and the RGB formats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dvpp_internal.h"

#define VPC_MIN_WIDTH 10u
#define VPC_MIN_HEIGHT 6u
#define VPC_MAX_SIDE 4096u
#define VPC_MAX_SIDE_8K 8192u
#define VPC_WIDTH_STRIDE_ALIGN 16u
#define VPC_MIN_WIDTH_STRIDE 32u
#define VPC_MIN_HEIGHT_STRIDE 6u
#define VPC_MAX_STRIDE 16384u
#define VPC_HEIGHT_STRIDE_ALIGN 2u
#define VPC_MIN_CROP_WIDTH 10u
#define VPC_MIN_CROP_HEIGHT 6u
#define VPC_MAX_UPSCALE 16u
#define VPC_MAX_DOWNSCALE 32u
#define VPC_MAX_ROIS 256u

typedef enum { VPC_BLIT, VPC_BORDER } vpc_kind;

typedef struct {
    uint32_t src, dst;       /* picture indexes */
    dvpp_rect crop, paste;
} vpc_op;

typedef struct {
    vpc_kind kind;
    dvpp_resample how;
    uint32_t n_src, n_dst, n_ops;
    dvpp_pic *src, *dst;
    acldvppPicDesc **dst_desc;
    vpc_op *ops;
    acldvppBorderConfig border;
} vpc_payload;

/* ---- the rules -------------------------------------------------------------------------------- */

static int vpc_writes(uint32_t format, dvpp_soc soc)
{
    if (format == PIXEL_FORMAT_YUV_SEMIPLANAR_420 || format == PIXEL_FORMAT_YVU_SEMIPLANAR_420)
        return 1;
    return soc != DVPP_SOC_310 && dvpp_format(format) && format != PIXEL_FORMAT_YUV_SEMIPLANAR_440 &&
           format != PIXEL_FORMAT_YVU_SEMIPLANAR_440;
}

static int vpc_reads(uint32_t format)
{
    return dvpp_format(format) && format != PIXEL_FORMAT_YUV_SEMIPLANAR_440 &&
           format != PIXEL_FORMAT_YVU_SEMIPLANAR_440;
}

static aclError check_picture(const char *fn, const char *arg, const dvpp_pic *p, int output, int32_t device)
{
    dvpp_soc soc = dvpp_current_soc();
    if (output ? !vpc_writes(p->format, soc) : !vpc_reads(p->format))
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s format %u (%s) is not one the VPC %s%s%s", arg, p->format,
                          dvpp_format_name(p->format), output ? "writes" : "reads",
                          output && soc == DVPP_SOC_310 ? " on Ascend 310: expected PIXEL_FORMAT_YUV_SEMIPLANAR_420 "
                                                          "(1) or PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2)" : "",
                          output && soc == DVPP_SOC_310 ? "" : " (see docs/simulator.md, DVPP)");
    const dvpp_format_info *f = dvpp_format(p->format);
    int nv = p->format == PIXEL_FORMAT_YUV_SEMIPLANAR_420 || p->format == PIXEL_FORMAT_YVU_SEMIPLANAR_420;
    uint32_t max_side = !output && nv ? VPC_MAX_SIDE_8K : VPC_MAX_SIDE;
    if (p->width < VPC_MIN_WIDTH || p->width > max_side)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s width %u is out of the VPC's range %u .. %u", arg, p->width,
                          VPC_MIN_WIDTH, max_side);
    if (p->height < VPC_MIN_HEIGHT || p->height > max_side)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s height %u is out of the VPC's range %u .. %u", arg,
                          p->height, VPC_MIN_HEIGHT, max_side);
    if ((f->chroma_w_div == 2 || f->line_bytes_per_pixel == 2) && p->width % 2)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s width %u is odd: %s needs an even width", arg, p->width,
                          f->name);
    if (f->chroma_h_div == 2 && p->height % 2)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s height %u is odd: %s needs an even height", arg, p->height,
                          f->name);
    uint64_t line = (uint64_t)p->width * f->line_bytes_per_pixel;
    if (p->width_stride % VPC_WIDTH_STRIDE_ALIGN || p->width_stride < line || p->width_stride < VPC_MIN_WIDTH_STRIDE ||
        p->width_stride > VPC_MAX_STRIDE)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s widthStride %u is invalid: expected a multiple of %u in %u .. %u and at least %llu "
                          "(width %u x %u bytes a pixel for %s)", arg, p->width_stride, VPC_WIDTH_STRIDE_ALIGN,
                          VPC_MIN_WIDTH_STRIDE, VPC_MAX_STRIDE, (unsigned long long)line, p->width,
                          f->line_bytes_per_pixel, f->name);
    if (p->height_stride % VPC_HEIGHT_STRIDE_ALIGN || p->height_stride < p->height ||
        p->height_stride < VPC_MIN_HEIGHT_STRIDE || p->height_stride > VPC_MAX_STRIDE)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s heightStride %u is invalid: expected a multiple of %u in %u .. %u and at least the "
                          "height %u", arg, p->height_stride, VPC_HEIGHT_STRIDE_ALIGN, VPC_MIN_HEIGHT_STRIDE,
                          VPC_MAX_STRIDE, p->height);
    return dvpp_pic_check_buffer(fn, arg, p, device);
}

static aclError check_region(const char *fn, const char *arg, const acldvppRoiConfig *roi, const dvpp_pic *p,
                             dvpp_rect *out)
{
    aclError rc = dvpp_obj_check_locked(fn, arg, roi, DVPP_OBJ_ROI);
    if (rc)
        return rc;
    if (roi->left % 2 || roi->top % 2 || roi->right % 2 == 0 || roi->bottom % 2 == 0)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s (left %u, right %u, top %u, bottom %u) breaks the VPC's parity rule: left and top must "
                          "be even, right and bottom odd", arg, roi->left, roi->right, roi->top, roi->bottom);
    if (roi->right < roi->left || roi->bottom < roi->top || roi->right >= p->width || roi->bottom >= p->height)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s (left %u, right %u, top %u, bottom %u) is not inside the %u x %u picture", arg,
                          roi->left, roi->right, roi->top, roi->bottom, p->width, p->height);
    uint32_t w = roi->right - roi->left + 1, h = roi->bottom - roi->top + 1;
    if (w < VPC_MIN_CROP_WIDTH || h < VPC_MIN_CROP_HEIGHT)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s is %u x %u: the VPC's smallest region is %u x %u", arg, w,
                          h, VPC_MIN_CROP_WIDTH, VPC_MIN_CROP_HEIGHT);
    *out = (dvpp_rect){roi->left, roi->top, w, h};
    return ACL_SUCCESS;
}

static aclError check_scale(const char *fn, dvpp_rect from, dvpp_rect to)
{
    uint32_t a[2] = {from.width, from.height}, b[2] = {to.width, to.height};
    for (int i = 0; i < 2; i++)
        if ((uint64_t)b[i] > (uint64_t)a[i] * VPC_MAX_UPSCALE || (uint64_t)b[i] * VPC_MAX_DOWNSCALE < a[i])
            return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                              "scaling %u x %u to %u x %u is out of the VPC's range: each side may scale from 1/%u "
                              "to %u times", from.width, from.height, to.width, to.height, VPC_MAX_DOWNSCALE,
                              VPC_MAX_UPSCALE);
    return ACL_SUCCESS;
}

/* An output region must hold whole chroma samples of the output format. */
static aclError check_chroma_fit(const char *fn, const char *arg, dvpp_rect r, uint32_t format)
{
    const dvpp_format_info *f = dvpp_format(format);
    uint32_t wd = f->chroma_w_div ? f->chroma_w_div : 1, hd = f->chroma_h_div ? f->chroma_h_div : 1;
    if (f->line_bytes_per_pixel == 2)   /* packed 4:2:2 */
        wd = 2, hd = 1;
    if (r.left % wd || r.width % wd || r.top % hd || r.height % hd)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s (%u x %u at %u, %u) does not fit %s's chroma: width and left must be multiples of %u, "
                          "height and top of %u", arg, r.width, r.height, r.left, r.top, f->name, wd, hd);
    return ACL_SUCCESS;
}

static aclError resize_method(const char *fn, const acldvppResizeConfig *c, int required, dvpp_resample *how)
{
    *how = DVPP_RESAMPLE_BILINEAR;
    if (!c && !required)
        return ACL_SUCCESS;
    aclError rc = dvpp_obj_check_locked(fn, "resizeConfig", c, DVPP_OBJ_RESIZE);
    if (!rc && c->interpolation == 2)
        *how = DVPP_RESAMPLE_NEAREST;
    return rc;
}

static aclError snapshot(const char *fn, const char *arg, const acldvppPicDesc *d, int output, int32_t device,
                         dvpp_pic *out)
{
    aclError rc = dvpp_obj_check_locked(fn, arg, d, DVPP_OBJ_PIC);
    if (rc)
        return rc;
    dvpp_pic_snapshot_locked(d, out);
    return check_picture(fn, arg, out, output, device);
}

static vpc_payload *payload_new(uint32_t n_src, uint32_t n_dst, uint32_t n_ops)
{
    size_t size = sizeof(vpc_payload) + n_src * sizeof(dvpp_pic) + n_dst * (sizeof(dvpp_pic) + sizeof(void *)) +
                  n_ops * sizeof(vpc_op);
    vpc_payload *p = calloc(1, size);
    if (!p)
        return NULL;
    p->n_src = n_src;
    p->n_dst = n_dst;
    p->n_ops = n_ops;
    p->src = (dvpp_pic *)(p + 1);
    p->dst = p->src + n_src;
    p->dst_desc = (acldvppPicDesc **)(p->dst + n_dst);
    p->ops = (vpc_op *)(p->dst_desc + n_dst);
    return p;
}

/* ---- the task ------------------------------------------------------------------------------------ */

static aclError vpc_work(dvpp_job *job, char *msg, size_t n)
{
    vpc_payload *p = job->payload;
    int failed = 0;
    if (p->kind == VPC_BORDER)
        failed = dvpp_vpc_border(&p->src[0], &p->dst[0], &p->border);
    for (uint32_t i = 0; i < p->n_ops && !failed; i++) {
        const vpc_op *op = &p->ops[i];
        failed = dvpp_vpc_blit(&p->src[op->src], op->crop, &p->dst[op->dst], op->paste, p->how);
    }
    dvpp_lock();
    for (uint32_t i = 0; i < p->n_dst; i++)
        p->dst_desc[i]->ret_code = failed ? 1 : 0;
    dvpp_unlock();
    if (failed) {
        snprintf(msg, n, "%s: out of host memory for the VPC's working planes", job->fn);
        return DVPP_TASK_FAILED;
    }
    return ACL_SUCCESS;
}

/* Under the lock: builds the job (references, pins, time) and releases the
 * lock; queues it.  Takes ownership of p. */
static aclError submit_locked(const char *fn, acldvppChannelDesc *channel, vpc_payload *p, aclrtStream stream)
{
    dvpp_job *job = dvpp_job_new_locked(fn, channel);
    int bad = !job;
    for (uint32_t i = 0; i < p->n_dst && !bad; i++)
        bad = dvpp_job_ref_locked(job, &p->dst_desc[i]->h);
    dvpp_unlock();
    for (uint32_t i = 0; i < p->n_src && !bad; i++)
        bad = dvpp_job_pin(job, p->src[i].data, "inputDesc data");
    for (uint32_t i = 0; i < p->n_dst && !bad; i++)
        bad = dvpp_job_pin(job, p->dst[i].data, "outputDesc data");
    if (bad) {
        free(p);
        dvpp_job_free(job);
        return aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory queueing the VPC task");
    }
    uint64_t pixels = 0;
    for (uint32_t i = 0; i < p->n_ops; i++) {
        uint64_t a = (uint64_t)p->ops[i].crop.width * p->ops[i].crop.height;
        uint64_t b = (uint64_t)p->ops[i].paste.width * p->ops[i].paste.height;
        pixels += a > b ? a : b;
    }
    if (p->kind == VPC_BORDER)
        pixels = (uint64_t)p->dst[0].width * p->dst[0].height;
    job->payload = p;
    job->work = vpc_work;
    job->device_ns = dvpp_vpc_time_ns(dvpp_current_soc(), pixels);
    return dvpp_job_submit(job, stream, "dvpp vpc");
}

/* ---- one picture in, one out ------------------------------------------------------------------ */

/* crop NULL: the whole input; paste NULL: the whole output. */
static aclError crop_paste(const char *fn, acldvppChannelDesc *channel, acldvppPicDesc *in, acldvppPicDesc *out,
                           const acldvppRoiConfig *crop, int crop_required, const acldvppRoiConfig *paste,
                           const acldvppResizeConfig *resize, int resize_required, aclrtStream stream)
{
    int32_t device = -1;
    aclError rc = aeSimStreamDevice(fn, stream, &device);
    if (rc)
        return rc;
    vpc_payload *p = payload_new(1, 1, 1);
    if (!p)
        return aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    dvpp_lock();
    rc = dvpp_check_channel_locked(fn, channel, DVPP_CHNMODE_VPC, device);
    if (!rc)
        rc = snapshot(fn, "inputDesc", in, 0, device, &p->src[0]);
    if (!rc)
        rc = snapshot(fn, "outputDesc", out, 1, device, &p->dst[0]);
    vpc_op *op = &p->ops[0];
    op->crop = (dvpp_rect){0, 0, p->src[0].width, p->src[0].height};
    op->paste = (dvpp_rect){0, 0, p->dst[0].width, p->dst[0].height};
    if (!rc && (crop || crop_required))
        rc = check_region(fn, "cropArea", crop, &p->src[0], &op->crop);
    if (!rc && paste)
        rc = check_region(fn, "pasteArea", paste, &p->dst[0], &op->paste);
    if (!rc)
        rc = check_chroma_fit(fn, paste ? "pasteArea" : "outputDesc", op->paste, p->dst[0].format);
    if (!rc)
        rc = check_scale(fn, op->crop, op->paste);
    if (!rc)
        rc = resize_method(fn, resize, resize_required, &p->how);
    if (rc) {
        dvpp_unlock();
        free(p);
        return rc;
    }
    p->kind = VPC_BLIT;
    p->dst_desc[0] = out;
    return submit_locked(fn, channel, p, stream);
}

STANDIN_EXPORT aclError acldvppVpcResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                              acldvppPicDesc *outputDesc, acldvppResizeConfig *resizeConfig,
                                              aclrtStream stream)
{
    return crop_paste("acldvppVpcResizeAsync", channelDesc, inputDesc, outputDesc, NULL, 0, NULL, resizeConfig, 1,
                      stream);
}

STANDIN_EXPORT aclError acldvppVpcCropAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                            acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea, aclrtStream stream)
{
    return crop_paste("acldvppVpcCropAsync", channelDesc, inputDesc, outputDesc, cropArea, 1, NULL, NULL, 0, stream);
}

STANDIN_EXPORT aclError acldvppVpcCropResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                                  acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea,
                                                  acldvppResizeConfig *resizeConfig, aclrtStream stream)
{
    return crop_paste("acldvppVpcCropResizeAsync", channelDesc, inputDesc, outputDesc, cropArea, 1, NULL,
                      resizeConfig, 1, stream);
}

STANDIN_EXPORT aclError acldvppVpcCropAndPasteAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                                    acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea,
                                                    acldvppRoiConfig *pasteArea, aclrtStream stream)
{
    const char *fn = "acldvppVpcCropAndPasteAsync";
    if (!pasteArea)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "pasteArea is NULL; expected an acldvppRoiConfig");
    return crop_paste(fn, channelDesc, inputDesc, outputDesc, cropArea, 1, pasteArea, NULL, 0, stream);
}

STANDIN_EXPORT aclError acldvppVpcCropResizePasteAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                                       acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea,
                                                       acldvppRoiConfig *pasteArea, acldvppResizeConfig *resizeConfig,
                                                       aclrtStream stream)
{
    const char *fn = "acldvppVpcCropResizePasteAsync";
    if (!pasteArea)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "pasteArea is NULL; expected an acldvppRoiConfig");
    return crop_paste(fn, channelDesc, inputDesc, outputDesc, cropArea, 1, pasteArea, resizeConfig, 1, stream);
}

STANDIN_EXPORT aclError acldvppVpcConvertColorAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                                    acldvppPicDesc *outputDesc, aclrtStream stream)
{
    const char *fn = "acldvppVpcConvertColorAsync";
    /* The output's width, height and strides may be left 0: they follow the input. */
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "inputDesc", inputDesc, DVPP_OBJ_PIC);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "outputDesc", outputDesc, DVPP_OBJ_PIC);
    if (!rc && (outputDesc->width || outputDesc->height) &&
        (outputDesc->width != inputDesc->width || outputDesc->height != inputDesc->height))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "outputDesc is %u x %u but the input is %u x %u: colour conversion keeps the size (leave "
                        "the output's width and height 0)", outputDesc->width, outputDesc->height, inputDesc->width,
                        inputDesc->height);
    if (!rc && !outputDesc->width) {
        const dvpp_format_info *f = dvpp_format(outputDesc->format);
        outputDesc->width = inputDesc->width;
        outputDesc->height = inputDesc->height;
        if (f && !outputDesc->width_stride)
            outputDesc->width_stride = (inputDesc->width * f->line_bytes_per_pixel + 15) / 16 * 16;
        if (!outputDesc->height_stride)
            outputDesc->height_stride = (inputDesc->height + 1) / 2 * 2;
    }
    dvpp_unlock();
    if (rc)
        return rc;
    return crop_paste(fn, channelDesc, inputDesc, outputDesc, NULL, 0, NULL, NULL, 0, stream);
}

/* ---- borders ------------------------------------------------------------------------------------- */

STANDIN_EXPORT aclError acldvppVpcMakeBorderAsync(const acldvppChannelDesc *channelDesc,
                                                  const acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc,
                                                  const acldvppBorderConfig *borderConfig, aclrtStream stream)
{
    const char *fn = "acldvppVpcMakeBorderAsync";
    acldvppChannelDesc *channel = (acldvppChannelDesc *)channelDesc;   /* the task keeps a reference */
    int32_t device = -1;
    aclError rc = aeSimStreamDevice(fn, stream, &device);
    if (rc)
        return rc;
    vpc_payload *p = payload_new(1, 1, 0);
    if (!p)
        return aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    dvpp_lock();
    rc = dvpp_check_channel_locked(fn, channel, DVPP_CHNMODE_VPC, device);
    if (!rc)
        rc = snapshot(fn, "inputDesc", inputDesc, 0, device, &p->src[0]);
    if (!rc)
        rc = snapshot(fn, "outputDesc", outputDesc, 1, device, &p->dst[0]);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "borderConfig", borderConfig, DVPP_OBJ_BORDER);
    if (!rc) {
        const acldvppBorderConfig *b = borderConfig;
        uint64_t w = (uint64_t)p->src[0].width + b->left + b->right, h = (uint64_t)p->src[0].height + b->top + b->bottom;
        if (w != p->dst[0].width || h != p->dst[0].height)
            rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                            "outputDesc is %u x %u but the %u x %u input with borders left %u, right %u, top %u, "
                            "bottom %u is %llu x %llu", p->dst[0].width, p->dst[0].height, p->src[0].width,
                            p->src[0].height, b->left, b->right, b->top, b->bottom, (unsigned long long)w,
                            (unsigned long long)h);
        else
            rc = check_chroma_fit(fn, "outputDesc", (dvpp_rect){0, 0, p->dst[0].width, p->dst[0].height},
                                  p->dst[0].format);
        p->border = *b;
    }
    if (rc) {
        dvpp_unlock();
        free(p);
        return rc;
    }
    p->kind = VPC_BORDER;
    p->dst_desc[0] = outputDesc;
    return submit_locked(fn, channel, p, stream);
}

/* ---- batches ------------------------------------------------------------------------------------- */

/* resize NULL: bilinear (the calls without a resize config). */
static aclError batch_crop(const char *fn, acldvppChannelDesc *channel, acldvppBatchPicDesc *srcs,
                           const uint32_t *roi_nums, uint32_t size, acldvppBatchPicDesc *dsts,
                           acldvppRoiConfig *const *crops, acldvppRoiConfig *const *pastes,
                           const acldvppResizeConfig *resize, int resize_required, aclrtStream stream)
{
    int32_t device = -1;
    aclError rc = aeSimStreamDevice(fn, stream, &device);
    if (rc)
        return rc;
    if (!roi_nums)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "roiNums is NULL; expected size (%u) region counts", size);
    if (!crops)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "cropAreas is NULL; expected one region per output picture");
    /* size first, against the input batch: it says how many roiNums to read */
    dvpp_lock();
    rc = dvpp_obj_check_locked(fn, "srcBatchPicDescs", srcs, DVPP_OBJ_BATCH);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "dstBatchPicDescs", dsts, DVPP_OBJ_BATCH);
    if (!rc && (size == 0 || size > srcs->count))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "size %u is invalid: expected 1 .. the %u pictures of "
                        "srcBatchPicDescs", size, srcs->count);
    uint64_t total = 0;
    for (uint32_t i = 0; i < size && !rc; i++)
        total += roi_nums[i];
    if (!rc && (total == 0 || total > VPC_MAX_ROIS))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "%u pictures with %llu regions in all: the VPC takes 1 .. %u regions in one batch call", size,
                        (unsigned long long)total, VPC_MAX_ROIS);
    if (!rc && total > dsts->count)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "roiNums add up to %llu regions but dstBatchPicDescs holds %u pictures",
                        (unsigned long long)total, dsts->count);
    vpc_payload *p = NULL;
    if (!rc && !(p = payload_new(size, (uint32_t)total, (uint32_t)total)))
        rc = aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    if (!rc)
        rc = dvpp_check_channel_locked(fn, channel, DVPP_CHNMODE_VPC, device);
    if (!rc)
        rc = resize_method(fn, resize, resize_required, &p->how);
    char arg[48];
    for (uint32_t i = 0; i < size && !rc; i++) {
        snprintf(arg, sizeof arg, "srcBatchPicDescs[%u]", i);
        rc = snapshot(fn, arg, &srcs->pics[i], 0, device, &p->src[i]);
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < size && !rc; i++)
        for (uint32_t j = 0; j < roi_nums[i] && !rc; j++, k++) {
            vpc_op *op = &p->ops[k];
            op->src = i;
            op->dst = k;
            snprintf(arg, sizeof arg, "dstBatchPicDescs[%u]", k);
            rc = snapshot(fn, arg, &dsts->pics[k], 1, device, &p->dst[k]);
            op->paste = (dvpp_rect){0, 0, p->dst[k].width, p->dst[k].height};
            snprintf(arg, sizeof arg, "cropAreas[%u]", k);
            if (!rc)
                rc = check_region(fn, arg, crops[k], &p->src[i], &op->crop);
            if (pastes)
                snprintf(arg, sizeof arg, "pasteAreas[%u]", k);
            if (!rc && pastes)
                rc = check_region(fn, arg, pastes[k], &p->dst[k], &op->paste);
            if (!rc)
                rc = check_chroma_fit(fn, arg, op->paste, p->dst[k].format);
            if (!rc)
                rc = check_scale(fn, op->crop, op->paste);
            p->dst_desc[k] = &dsts->pics[k];
        }
    if (rc) {
        dvpp_unlock();
        free(p);
        return rc;
    }
    p->kind = VPC_BLIT;
    return submit_locked(fn, channel, p, stream);
}

STANDIN_EXPORT aclError acldvppVpcBatchCropAsync(acldvppChannelDesc *channelDesc,
                                                 acldvppBatchPicDesc *srcBatchPicDescs, uint32_t *roiNums,
                                                 uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                                 acldvppRoiConfig *cropAreas[], aclrtStream stream)
{
    return batch_crop("acldvppVpcBatchCropAsync", channelDesc, srcBatchPicDescs, roiNums, size, dstBatchPicDescs,
                      cropAreas, NULL, NULL, 0, stream);
}

STANDIN_EXPORT aclError acldvppVpcBatchCropAndPasteAsync(acldvppChannelDesc *channelDesc,
                                                         acldvppBatchPicDesc *srcBatchPicDescs, uint32_t *roiNums,
                                                         uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                                         acldvppRoiConfig *cropAreas[], acldvppRoiConfig *pasteAreas[],
                                                         aclrtStream stream)
{
    const char *fn = "acldvppVpcBatchCropAndPasteAsync";
    if (!pasteAreas)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "pasteAreas is NULL; expected one region per output picture");
    return batch_crop(fn, channelDesc, srcBatchPicDescs, roiNums, size, dstBatchPicDescs, cropAreas, pasteAreas,
                      NULL, 0, stream);
}

STANDIN_EXPORT aclError acldvppVpcBatchCropResizeAsync(acldvppChannelDesc *channelDesc,
                                                       acldvppBatchPicDesc *srcBatchPicDescs, uint32_t *roiNums,
                                                       uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                                       acldvppRoiConfig *cropAreas[],
                                                       acldvppResizeConfig *resizeConfig, aclrtStream stream)
{
    return batch_crop("acldvppVpcBatchCropResizeAsync", channelDesc, srcBatchPicDescs, roiNums, size,
                      dstBatchPicDescs, cropAreas, NULL, resizeConfig, 1, stream);
}

STANDIN_EXPORT aclError acldvppVpcBatchCropResizePasteAsync(acldvppChannelDesc *channelDesc,
                                                            acldvppBatchPicDesc *srcBatchPicDescs, uint32_t *roiNums,
                                                            uint32_t size, acldvppBatchPicDesc *dstBatchPicDescs,
                                                            acldvppRoiConfig *cropAreas[],
                                                            acldvppRoiConfig *pasteAreas[],
                                                            acldvppResizeConfig *resizeConfig, aclrtStream stream)
{
    const char *fn = "acldvppVpcBatchCropResizePasteAsync";
    if (!pasteAreas)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "pasteAreas is NULL; expected one region per output picture");
    return batch_crop(fn, channelDesc, srcBatchPicDescs, roiNums, size, dstBatchPicDescs, cropAreas, pasteAreas,
                      resizeConfig, 1, stream);
}
