/*
 * pngd.c -- the PNG decoder (PNGD): acldvppPngGetImageInfo,
 * acldvppPngPredictDecSize and acldvppPngDecodeAsync, decoding with the
 * system's libpng when the build found it (AE_DVPP_HAVE_PNG; without it the
 * three calls answer ACL_ERROR_API_NOT_SUPPORT).
 *
 * CANN's PNGD rules (docs/simulator.md, "DVPP"): not on Ascend 310; input
 * 32 x 32 to 4096 x 4096, RGB, RGBA, grey or grey + alpha, in DVPP memory;
 * output RGB888 from every source, RGBA8888 from the sources with alpha,
 * PIXEL_FORMAT_UNKNOWN meaning the source's own; width stride the width
 * rounded up to 128 times 3 (RGB888) or 4 (RGBA8888), height stride the
 * height rounded up to 16.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dvpp_internal.h"

#ifndef AE_DVPP_HAVE_PNG

#define PNG_NOT_BUILT "this simulator was built without libpng"

STANDIN_EXPORT aclError acldvppPngGetImageInfo(const void *data, uint32_t dataSize, uint32_t *width,
                                               uint32_t *height, int32_t *components)
{
    (void)data, (void)dataSize, (void)width, (void)height, (void)components;
    return aeSimNotSupported("acldvppPngGetImageInfo", PNG_NOT_BUILT);
}

STANDIN_EXPORT aclError acldvppPngPredictDecSize(const void *data, uint32_t dataSize,
                                                 acldvppPixelFormat outputPixelFormat, uint32_t *decSize)
{
    (void)data, (void)dataSize, (void)outputPixelFormat, (void)decSize;
    return aeSimNotSupported("acldvppPngPredictDecSize", PNG_NOT_BUILT);
}

STANDIN_EXPORT aclError acldvppPngDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size,
                                              acldvppPicDesc *outputDesc, aclrtStream stream)
{
    (void)channelDesc, (void)data, (void)size, (void)outputDesc, (void)stream;
    return aeSimNotSupported("acldvppPngDecodeAsync", PNG_NOT_BUILT);
}

#else

#include <png.h>

#define PNGD_MIN_SIDE 32u
#define PNGD_MAX_SIDE 4096u
#define PNGD_WIDTH_ALIGN 128u
#define PNGD_HEIGHT_ALIGN 16u

typedef struct {
    uint32_t width, height;
    int32_t components;
    int alpha, palette;
} png_header;

static aclError read_header(const char *fn, const void *data, uint32_t size, png_header *h)
{
    if (!data)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "data is NULL; expected the PNG file's bytes");
    if (size == 0)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "size is 0; expected the PNG file's length in bytes");
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, data, size)) {
        aclError rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "the data (%u bytes) is not a readable PNG header: %s",
                                 size, img.message);
        png_image_free(&img);
        return rc;
    }
    h->width = img.width;
    h->height = img.height;
    h->alpha = (img.format & PNG_FORMAT_FLAG_ALPHA) != 0;
    h->palette = (img.format & PNG_FORMAT_FLAG_COLORMAP) != 0;
    h->components = (int32_t)PNG_IMAGE_SAMPLE_CHANNELS(img.format);
    png_image_free(&img);
    return ACL_SUCCESS;
}

static aclError check_decodable(const char *fn, const png_header *h)
{
    dvpp_soc soc = dvpp_current_soc();
    if (soc == DVPP_SOC_310)
        return aeSimError(ACL_ERROR_FEATURE_UNSUPPORTED, fn, "PNGD is not available on %s", dvpp_soc_name(soc));
    if (h->palette)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the PNG is palette-coded: PNGD decodes RGB, RGBA, grey and grey + alpha PNG only");
    if (h->width < PNGD_MIN_SIDE || h->width > PNGD_MAX_SIDE || h->height < PNGD_MIN_SIDE ||
        h->height > PNGD_MAX_SIDE)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "the PNG is %u x %u: PNGD decodes %u x %u up to %u x %u",
                          h->width, h->height, PNGD_MIN_SIDE, PNGD_MIN_SIDE, PNGD_MAX_SIDE, PNGD_MAX_SIDE);
    return ACL_SUCCESS;
}

static aclError output_format(const char *fn, const png_header *h, uint32_t requested, uint32_t *out)
{
    if (requested == PIXEL_FORMAT_UNKNOWN)
        requested = h->alpha ? PIXEL_FORMAT_RGBA_8888 : PIXEL_FORMAT_RGB_888;
    if (requested != PIXEL_FORMAT_RGB_888 && !(requested == PIXEL_FORMAT_RGBA_8888 && h->alpha))
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "output format %u (%s) is not one PNGD writes for this PNG: expected PIXEL_FORMAT_RGB_888 "
                          "(12)%s or PIXEL_FORMAT_UNKNOWN (10000)", requested, dvpp_format_name(requested),
                          h->alpha ? ", PIXEL_FORMAT_RGBA_8888 (16)" : " (RGBA8888 only for sources with alpha)");
    *out = requested;
    return ACL_SUCCESS;
}

typedef struct {
    uint32_t format, width_stride, height_stride;
    uint64_t bytes;
} png_layout;

static void layout_for(const png_header *h, uint32_t format, png_layout *l)
{
    uint32_t channels = format == PIXEL_FORMAT_RGBA_8888 ? 4 : 3;
    l->format = format;
    l->width_stride = (h->width + PNGD_WIDTH_ALIGN - 1) / PNGD_WIDTH_ALIGN * PNGD_WIDTH_ALIGN * channels;
    l->height_stride = (h->height + PNGD_HEIGHT_ALIGN - 1) / PNGD_HEIGHT_ALIGN * PNGD_HEIGHT_ALIGN;
    l->bytes = (uint64_t)l->width_stride * l->height_stride;
}

STANDIN_EXPORT aclError acldvppPngGetImageInfo(const void *data, uint32_t dataSize, uint32_t *width,
                                               uint32_t *height, int32_t *components)
{
    const char *fn = "acldvppPngGetImageInfo";
    if (!width || !height)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL; pass the address of a uint32_t",
                          !width ? "width" : "height");
    png_header h;
    aclError rc = read_header(fn, data, dataSize, &h);
    if (rc)
        return rc;
    *width = h.width;
    *height = h.height;
    if (components)
        *components = h.components;
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError acldvppPngPredictDecSize(const void *data, uint32_t dataSize,
                                                 acldvppPixelFormat outputPixelFormat, uint32_t *decSize)
{
    const char *fn = "acldvppPngPredictDecSize";
    if (!decSize)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "decSize is NULL; pass the address of a uint32_t");
    png_header h;
    uint32_t format;
    aclError rc = read_header(fn, data, dataSize, &h);
    if (!rc)
        rc = check_decodable(fn, &h);
    if (!rc)
        rc = output_format(fn, &h, (uint32_t)outputPixelFormat, &format);
    if (rc)
        return rc;
    png_layout l;
    layout_for(&h, format, &l);
    *decSize = (uint32_t)l.bytes;
    return ACL_SUCCESS;
}

typedef struct {
    const uint8_t *data;
    uint32_t size, width, height;
    uint8_t *out;
    png_layout layout;
    acldvppPicDesc *out_desc;
} png_payload;

static aclError png_work(dvpp_job *job, char *msg, size_t n)
{
    png_payload *p = job->payload;
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    int ok = png_image_begin_read_from_memory(&img, p->data, p->size);
    int resized = ok && (img.width != p->width || img.height != p->height);
    if (resized) {
        /* the program rewrote the input after submitting it: never write past the output */
        snprintf(msg, n, "%s: the PNG in data is now %u x %u but was %u x %u when the task was submitted", job->fn,
                 (unsigned)img.width, (unsigned)img.height, p->width, p->height);
        ok = 0;
    }
    uint8_t *rgba = NULL;
    if (ok && p->layout.format == PIXEL_FORMAT_RGB_888 && (img.format & PNG_FORMAT_FLAG_ALPHA)) {
        /* RGB888 from a source with alpha drops the alpha channel (libpng alone would
         * compose it onto a background) */
        img.format = PNG_FORMAT_RGBA;
        rgba = malloc((size_t)p->width * p->height * 4);
        ok = rgba && png_image_finish_read(&img, NULL, rgba, (png_int_32)p->width * 4, NULL);
        for (uint32_t y = 0; ok && y < p->height; y++)
            for (uint32_t x = 0; x < p->width; x++)
                memcpy(p->out + (size_t)y * p->layout.width_stride + (size_t)x * 3, rgba + ((size_t)y * p->width + x) * 4,
                       3);
        free(rgba);
    } else if (ok) {
        img.format = p->layout.format == PIXEL_FORMAT_RGBA_8888 ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
        ok = png_image_finish_read(&img, NULL, p->out, (png_int_32)p->layout.width_stride, NULL);
    }
    if (!ok && !resized)
        snprintf(msg, n, "%s: the PNG data (%u bytes) is corrupt or truncated: %s", job->fn, p->size, img.message);
    png_image_free(&img);
    dvpp_lock();
    acldvppPicDesc *d = p->out_desc;
    if (ok) {
        d->format = p->layout.format;
        d->width = p->width;
        d->height = p->height;
        d->width_stride = p->layout.width_stride;
        d->height_stride = p->layout.height_stride;
        d->size = (uint32_t)p->layout.bytes;
    }
    d->ret_code = ok ? 0 : 1;
    dvpp_unlock();
    return ok ? ACL_SUCCESS : DVPP_TASK_FAILED;
}

STANDIN_EXPORT aclError acldvppPngDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size,
                                              acldvppPicDesc *outputDesc, aclrtStream stream)
{
    const char *fn = "acldvppPngDecodeAsync";
    int32_t device = -1;
    aclError rc = aeSimStreamDevice(fn, stream, &device);
    if (rc)
        return rc;
    if (data && size)
        rc = dvpp_check_memory(fn, "data", data, size, device);
    png_header h;
    if (!rc)
        rc = read_header(fn, data, size, &h);
    if (!rc)
        rc = check_decodable(fn, &h);
    dvpp_pic out;
    png_layout layout;
    dvpp_lock();
    if (!rc)
        rc = dvpp_check_channel_locked(fn, channelDesc, 0, device);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "outputDesc", outputDesc, DVPP_OBJ_PIC);
    if (!rc) {
        dvpp_pic_snapshot_locked(outputDesc, &out);
        rc = output_format(fn, &h, out.format, &layout.format);
    }
    if (!rc) {
        layout_for(&h, layout.format, &layout);
        out.format = layout.format;
        out.width_stride = layout.width_stride;
        out.height_stride = layout.height_stride;
        rc = dvpp_pic_check_buffer(fn, "outputDesc", &out, device);
    }
    png_payload payload;
    dvpp_decode_task task = {0};
    if (!rc) {
        payload = (png_payload){data, size, h.width, h.height, out.data, layout, outputDesc};
        task = (dvpp_decode_task){channelDesc, outputDesc, data, out.data, &payload, sizeof payload, png_work,
                                  dvpp_jpegd_time_ns(dvpp_current_soc(), (uint64_t)h.width * h.height),
                                  "dvpp png decode"};
    }
    return dvpp_decode_submit_locked(fn, rc, &task, stream);
}

#endif /* AE_DVPP_HAVE_PNG */
