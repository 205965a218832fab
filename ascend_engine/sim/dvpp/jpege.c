/*
 * jpege.c -- the JPEG encoder (JPEGE): acldvppJpegPredictEncSize and
 * acldvppJpegEncodeAsync, encoding with the system's libjpeg-turbo.
 *
 * CANN's JPEGE rules (docs/simulator.md, "DVPP"): input YUV420SP (NV12,
 * NV21) or packed YUV 4:2:2 (YUYV, UYVY, YVYU, VYUY), 32 x 32 to 8192 x 8192,
 * width stride a multiple of 16 of at least the line's bytes, height stride a
 * multiple of 16 of at least the height, in DVPP memory.  The output is a
 * baseline JFIF file of the input's subsampling; level 1 .. 100 is the
 * quality, and level 0 encodes like 100.  *size gives the output buffer's
 * capacity and, once the task has run, the file's length.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "dvpp_internal.h"

#define JPEGE_MIN_SIDE 32u
#define JPEGE_MAX_SIDE 8192u
#define JPEGE_STRIDE_ALIGN 16u
#define JPEGE_HEADER_BYTES 4096u   /* markers and tables on top of the picture's bytes */

static int jpege_reads(uint32_t format)
{
    return format == PIXEL_FORMAT_YUV_SEMIPLANAR_420 || format == PIXEL_FORMAT_YVU_SEMIPLANAR_420 ||
           (format >= PIXEL_FORMAT_YUYV_PACKED_422 && format <= PIXEL_FORMAT_VYUY_PACKED_422);
}

static aclError check_input(const char *fn, const dvpp_pic *p)
{
    if (!jpege_reads(p->format))
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "inputDesc format %u (%s) is not one JPEGE encodes: expected YUV420SP (1, 2) or packed "
                          "YUV 4:2:2 (7 .. 10)", p->format, dvpp_format_name(p->format));
    if (p->width < JPEGE_MIN_SIDE || p->width > JPEGE_MAX_SIDE || p->height < JPEGE_MIN_SIDE ||
        p->height > JPEGE_MAX_SIDE)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "inputDesc is %u x %u: JPEGE encodes %u x %u up to %u x %u",
                          p->width, p->height, JPEGE_MIN_SIDE, JPEGE_MIN_SIDE, JPEGE_MAX_SIDE, JPEGE_MAX_SIDE);
    uint32_t line = p->width * dvpp_format(p->format)->line_bytes_per_pixel;
    if (p->width_stride % JPEGE_STRIDE_ALIGN || p->width_stride < line)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "inputDesc widthStride %u is invalid: expected a multiple of %u of at least %u",
                          p->width_stride, JPEGE_STRIDE_ALIGN, line);
    if (p->height_stride % JPEGE_STRIDE_ALIGN || p->height_stride < p->height)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "inputDesc heightStride %u is invalid: expected a multiple of %u of at least the height %u",
                          p->height_stride, JPEGE_STRIDE_ALIGN, p->height);
    return ACL_SUCCESS;
}

static uint64_t predicted_size(const dvpp_pic *p)
{
    return dvpp_pic_bytes(PIXEL_FORMAT_YUV_SEMIPLANAR_420, p->width_stride, p->height_stride) * 2 +
           JPEGE_HEADER_BYTES;
}

STANDIN_EXPORT aclError acldvppJpegPredictEncSize(const acldvppPicDesc *inputDesc, const acldvppJpegeConfig *config,
                                                  uint32_t *size)
{
    const char *fn = "acldvppJpegPredictEncSize";
    if (!size)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "size is NULL; pass the address of a uint32_t");
    dvpp_pic p;
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "inputDesc", inputDesc, DVPP_OBJ_PIC);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "config", config, DVPP_OBJ_JPEGE);
    if (!rc)
        dvpp_pic_snapshot_locked(inputDesc, &p);
    dvpp_unlock();
    if (!rc)
        rc = check_input(fn, &p);
    if (!rc)
        *size = (uint32_t)predicted_size(&p);
    return rc;
}

typedef struct {
    dvpp_pic in;
    uint8_t *out;
    uint32_t capacity;
    uint32_t *size;
    int quality;
} encode_payload;

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf on_error;
    char message[JMSG_LENGTH_MAX];
} encode_errors;

static void on_encode_error(j_common_ptr cinfo)
{
    encode_errors *e = (encode_errors *)cinfo->err;
    cinfo->err->format_message(cinfo, e->message);
    longjmp(e->on_error, 1);
}

static aclError encode_work(dvpp_job *job, char *msg, size_t n)
{
    encode_payload *p = job->payload;
    uint32_t w = p->in.width, h = p->in.height;
    uint8_t *ycc = malloc((size_t)w * h * 3);
    if (!ycc || dvpp_read_ycc(&p->in, ycc)) {
        free(ycc);
        snprintf(msg, n, "%s: out of host memory encoding a %u x %u picture", job->fn, w, h);
        return DVPP_TASK_FAILED;
    }
    struct jpeg_compress_struct cinfo;
    encode_errors e;
    /* jpeg_mem_dest writes these through their addresses: they stay valid after longjmp */
    unsigned char *buffer = NULL;
    unsigned long length = 0;
    cinfo.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = on_encode_error;
    jpeg_create_compress(&cinfo);
    if (setjmp(e.on_error)) {
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        free(ycc);
        snprintf(msg, n, "%s: encoding failed: %s", job->fn, e.message);
        return DVPP_TASK_FAILED;
    }
    jpeg_mem_dest(&cinfo, &buffer, &length);
    cinfo.image_width = w;
    cinfo.image_height = h;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_YCbCr;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, p->quality, TRUE);
    /* the input's own subsampling: 4:2:0 for YUV420SP, 4:2:2 for the packed formats */
    cinfo.comp_info[0].h_samp_factor = 2;
    cinfo.comp_info[0].v_samp_factor = p->in.format <= PIXEL_FORMAT_YVU_SEMIPLANAR_420 ? 2 : 1;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < h) {
        JSAMPROW row = ycc + (size_t)cinfo.next_scanline * w * 3;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(ycc);
    aclError rc = ACL_SUCCESS;
    if (length > p->capacity) {
        snprintf(msg, n, "%s: the encoded picture takes %lu bytes but the output buffer holds %u (*size); "
                 "size it with acldvppJpegPredictEncSize", job->fn, length, p->capacity);
        rc = DVPP_TASK_FAILED;
    } else {
        memcpy(p->out, buffer, length);
        *p->size = (uint32_t)length;
    }
    free(buffer);
    return rc;
}

STANDIN_EXPORT aclError acldvppJpegEncodeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc,
                                               const void *data, uint32_t *size, acldvppJpegeConfig *config,
                                               aclrtStream stream)
{
    const char *fn = "acldvppJpegEncodeAsync";
    int32_t device = -1;
    aclError rc = aeSimStreamDevice(fn, stream, &device);
    if (rc)
        return rc;
    if (!size)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "size is NULL; pass the output buffer's capacity in a uint32_t");
    if (!data)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "data is NULL; expected the output buffer (acldvppMalloc)");
    encode_payload *p = calloc(1, sizeof *p);
    if (!p)
        return aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    dvpp_lock();
    rc = dvpp_check_channel_locked(fn, channelDesc, DVPP_CHNMODE_JPEGE, device);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "inputDesc", inputDesc, DVPP_OBJ_PIC);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "config", config, DVPP_OBJ_JPEGE);
    if (!rc) {
        dvpp_pic_snapshot_locked(inputDesc, &p->in);
        p->quality = config->level ? (int)config->level : 100;
    }
    dvpp_job *job = NULL;
    if (!rc) {
        job = dvpp_job_new_locked(fn, channelDesc);
        if (!job)
            rc = aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    }
    dvpp_unlock();
    if (!rc)
        rc = check_input(fn, &p->in);
    if (!rc)
        rc = dvpp_pic_check_buffer(fn, "inputDesc", &p->in, device);
    if (!rc && *size == 0)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "*size is 0; expected the output buffer's capacity in bytes");
    if (!rc)
        rc = dvpp_check_memory(fn, "data", data, *size, device);
    if (!rc && (dvpp_job_pin(job, p->in.data, "inputDesc data") || dvpp_job_pin(job, data, "data")))
        rc = aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    if (rc) {
        free(p);
        dvpp_job_free(job);
        return rc;
    }
    p->out = (uint8_t *)(uintptr_t)data;
    p->capacity = *size;
    p->size = size;
    job->payload = p;
    job->work = encode_work;
    job->device_ns = dvpp_jpege_time_ns(dvpp_current_soc(), (uint64_t)p->in.width * p->in.height);
    return dvpp_job_submit(job, stream, "dvpp jpeg encode");
}
