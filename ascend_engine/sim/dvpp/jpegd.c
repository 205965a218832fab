/*
 * jpegd.c -- the JPEG decoder (JPEGD): header information, decode sizes and
 * acldvppJpegDecodeAsync, decoding with the system's libjpeg-turbo.
 *
 * CANN's JPEGD rules (docs/simulator.md, "DVPP"): input 32 x 32 to
 * 8192 x 8192, baseline Huffman coding only (no arithmetic coding, no
 * progressive JPEG), a YUV colour space with subsampling 4:4:4, 4:2:2,
 * 4:2:0, 4:0:0 or 4:4:0; the input in DVPP memory, 128-byte aligned.  Output: semi-planar YUV,
 * 4:2:0 from every source (grey sources get chroma 0x80) or the source's own
 * subsampling, width stride aligned to 128 (Ascend 310) or 64 (310P, 910B),
 * height stride to 16; the real width/height are written back to the output
 * description, rounded down to even where the output subsampling needs it.
 * A stride the program set in the output description is honoured when it
 * keeps that alignment and holds the picture, and refused otherwise; a stride
 * left 0 is the decoder's own, written back (docs/simulator.md, "DVPP").
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "dvpp_internal.h"

#define JPEGD_MIN_SIDE 32u
#define JPEGD_MAX_SIDE 8192u
#define JPEGD_INPUT_ALIGN 128u

/* ---- libjpeg with errors as return values ------------------------------------------------------ */

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf on_error;
    char message[JMSG_LENGTH_MAX];
} jpeg_errors;

static void on_jpeg_error(j_common_ptr cinfo)
{
    jpeg_errors *e = (jpeg_errors *)cinfo->err;
    cinfo->err->format_message(cinfo, e->message);
    longjmp(e->on_error, 1);
}

/* Warnings (corrupt or truncated data) are kept, never printed: the decode
 * task fails on them as the hardware does. */
static void on_jpeg_message(j_common_ptr cinfo, int level)
{
    jpeg_errors *e = (jpeg_errors *)cinfo->err;
    if (level < 0) {
        cinfo->err->num_warnings++;
        if (cinfo->err->num_warnings == 1)
            cinfo->err->format_message(cinfo, e->message);
    }
}

static void install_errors(struct jpeg_decompress_struct *cinfo, jpeg_errors *e)
{
    cinfo->err = jpeg_std_error(&e->mgr);
    e->mgr.error_exit = on_jpeg_error;
    e->mgr.emit_message = on_jpeg_message;
    e->message[0] = '\0';
}

typedef struct {
    uint32_t width, height;
    int32_t components;
    acldvppJpegFormat css;
    int progressive, arithmetic, yuv;
} jpeg_header;

static acldvppJpegFormat subsampling_of(const struct jpeg_decompress_struct *c)
{
    if (c->num_components == 1)
        return ACL_JPEG_CSS_GRAY;
    if (c->num_components != 3)
        return ACL_JPEG_CSS_UNKNOWN;
    const jpeg_component_info *y = &c->comp_info[0], *u = &c->comp_info[1], *v = &c->comp_info[2];
    if (u->h_samp_factor != v->h_samp_factor || u->v_samp_factor != v->v_samp_factor ||
        y->h_samp_factor % u->h_samp_factor || y->v_samp_factor % u->v_samp_factor)
        return ACL_JPEG_CSS_UNKNOWN;
    int h = y->h_samp_factor / u->h_samp_factor, v_ = y->v_samp_factor / u->v_samp_factor;
    if (h == 1 && v_ == 1) return ACL_JPEG_CSS_444;
    if (h == 2 && v_ == 1) return ACL_JPEG_CSS_422;
    if (h == 2 && v_ == 2) return ACL_JPEG_CSS_420;
    if (h == 1 && v_ == 2) return ACL_JPEG_CSS_440;
    if (h == 4 && v_ == 1) return ACL_JPEG_CSS_411;
    return ACL_JPEG_CSS_UNKNOWN;
}

static const char *css_name(acldvppJpegFormat css)
{
    switch (css) {
    case ACL_JPEG_CSS_444: return "4:4:4";
    case ACL_JPEG_CSS_422: return "4:2:2";
    case ACL_JPEG_CSS_420: return "4:2:0";
    case ACL_JPEG_CSS_GRAY: return "4:0:0 (grey)";
    case ACL_JPEG_CSS_440: return "4:4:0";
    case ACL_JPEG_CSS_411: return "4:1:1";
    case ACL_JPEG_CSS_UNKNOWN: break;
    }
    return "an unknown subsampling";
}

static aclError read_header(const char *fn, const void *data, uint32_t size, jpeg_header *h)
{
    if (!data)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "data is NULL; expected the JPEG file's bytes");
    if (size == 0)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "size is 0; expected the JPEG file's length in bytes");
    struct jpeg_decompress_struct cinfo;
    jpeg_errors e;
    install_errors(&cinfo, &e);
    jpeg_create_decompress(&cinfo);
    if (setjmp(e.on_error)) {
        jpeg_destroy_decompress(&cinfo);
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "the data (%u bytes) is not a readable JPEG header: %s", size,
                          e.message);
    }
    jpeg_mem_src(&cinfo, (const unsigned char *)data, size);
    jpeg_read_header(&cinfo, TRUE);
    h->width = cinfo.image_width;
    h->height = cinfo.image_height;
    h->components = cinfo.num_components;
    h->css = subsampling_of(&cinfo);
    h->progressive = cinfo.progressive_mode;
    h->arithmetic = cinfo.arith_code;
    h->yuv = cinfo.jpeg_color_space == JCS_YCbCr || cinfo.jpeg_color_space == JCS_GRAYSCALE;
    jpeg_destroy_decompress(&cinfo);
    return ACL_SUCCESS;
}

/* The JPEGD input rules; fn names the call refused. */
static aclError check_decodable(const char *fn, const jpeg_header *h)
{
    if (h->arithmetic)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the JPEG is arithmetic-coded: JPEGD decodes Huffman-coded JPEG only");
    if (h->progressive)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "the JPEG is progressive: JPEGD decodes baseline JPEG only");
    if (!h->yuv)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the JPEG's colour space is not YUV (%d components): JPEGD decodes YUV and grey JPEG only",
                          (int)h->components);
    if (h->css != ACL_JPEG_CSS_444 && h->css != ACL_JPEG_CSS_422 && h->css != ACL_JPEG_CSS_420 &&
        h->css != ACL_JPEG_CSS_GRAY && h->css != ACL_JPEG_CSS_440)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the JPEG's subsampling is %s: JPEGD decodes 4:4:4, 4:2:2, 4:2:0, 4:0:0 and 4:4:0 only",
                          css_name(h->css));
    if (h->width < JPEGD_MIN_SIDE || h->width > JPEGD_MAX_SIDE || h->height < JPEGD_MIN_SIDE ||
        h->height > JPEGD_MAX_SIDE)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the JPEG is %u x %u: JPEGD decodes %u x %u up to %u x %u", h->width, h->height,
                          JPEGD_MIN_SIDE, JPEGD_MIN_SIDE, JPEGD_MAX_SIDE, JPEGD_MAX_SIDE);
    return ACL_SUCCESS;
}

/* The output format for a requested one (PIXEL_FORMAT_UNKNOWN: the source's
 * own subsampling, V before U), or a refusal naming what the source allows. */
static aclError output_format(const char *fn, const jpeg_header *h, uint32_t requested, uint32_t *out)
{
    uint32_t own;
    switch (h->css) {
    case ACL_JPEG_CSS_444: own = PIXEL_FORMAT_YVU_SEMIPLANAR_444; break;
    case ACL_JPEG_CSS_422: own = PIXEL_FORMAT_YVU_SEMIPLANAR_422; break;
    case ACL_JPEG_CSS_440: own = PIXEL_FORMAT_YVU_SEMIPLANAR_440; break;
    default: own = PIXEL_FORMAT_YVU_SEMIPLANAR_420; break;
    }
    if (requested == PIXEL_FORMAT_UNKNOWN) {
        *out = own;
        return ACL_SUCCESS;
    }
    int nv = requested == PIXEL_FORMAT_YUV_SEMIPLANAR_420 || requested == PIXEL_FORMAT_YVU_SEMIPLANAR_420;
    /* the source's own subsampling, in either chroma order */
    int same = (own == PIXEL_FORMAT_YVU_SEMIPLANAR_444 &&
                (requested == PIXEL_FORMAT_YUV_SEMIPLANAR_444 || requested == PIXEL_FORMAT_YVU_SEMIPLANAR_444)) ||
               (own == PIXEL_FORMAT_YVU_SEMIPLANAR_422 &&
                (requested == PIXEL_FORMAT_YUV_SEMIPLANAR_422 || requested == PIXEL_FORMAT_YVU_SEMIPLANAR_422)) ||
               (own == PIXEL_FORMAT_YVU_SEMIPLANAR_440 &&
                (requested == PIXEL_FORMAT_YUV_SEMIPLANAR_440 || requested == PIXEL_FORMAT_YVU_SEMIPLANAR_440));
    if (!nv && !same)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "output format %u (%s) is not one JPEGD writes for a %s JPEG: expected "
                          "PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1), PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2)%s%s or "
                          "PIXEL_FORMAT_UNKNOWN (10000)",
                          requested, dvpp_format_name(requested), css_name(h->css),
                          own != PIXEL_FORMAT_YVU_SEMIPLANAR_420 ? ", the source's own " : "",
                          own != PIXEL_FORMAT_YVU_SEMIPLANAR_420 ? dvpp_format_name(own) : "");
    *out = requested;
    return ACL_SUCCESS;
}

static uint32_t align_up(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

typedef struct {
    uint32_t format, width, height, width_stride, height_stride;
    uint64_t bytes;
} decode_layout;

static void layout_for(const jpeg_header *h, uint32_t format, dvpp_soc soc, decode_layout *l)
{
    const dvpp_format_info *f = dvpp_format(format);
    l->format = format;
    l->width = f->chroma_w_div == 2 ? h->width & ~1u : h->width;
    l->height = f->chroma_h_div == 2 ? h->height & ~1u : h->height;
    l->width_stride = align_up(h->width, dvpp_jpegd_width_align(soc));
    l->height_stride = align_up(h->height, DVPP_JPEGD_HEIGHT_ALIGN);
    l->bytes = dvpp_pic_bytes(format, l->width_stride, l->height_stride);
}

/* The program's strides (nonzero in the output description) replace the
 * decoder's minimum ones in l when they keep the SoC's alignment and are at
 * least as large; otherwise the refusal naming the stride. */
static aclError program_strides(const char *fn, const dvpp_pic *out, dvpp_soc soc, decode_layout *l)
{
    uint32_t wa = dvpp_jpegd_width_align(soc), ha = DVPP_JPEGD_HEIGHT_ALIGN;
    if (out->width_stride && (out->width_stride % wa || out->width_stride < l->width_stride))
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "outputDesc widthStride %u: JPEGD on %s writes rows of a "
                          "multiple of %u bytes, at least %u for this %u-pixel-wide picture (or leave it 0 for "
                          "the decoder's own)", out->width_stride, dvpp_soc_name(soc), wa, l->width_stride,
                          l->width);
    if (out->height_stride && (out->height_stride % ha || out->height_stride < l->height_stride))
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "outputDesc heightStride %u: JPEGD writes a multiple of %u "
                          "rows, at least %u for this %u-row picture (or leave it 0 for the decoder's own)",
                          out->height_stride, ha, l->height_stride, l->height);
    if (out->width_stride)
        l->width_stride = out->width_stride;
    if (out->height_stride)
        l->height_stride = out->height_stride;
    l->bytes = dvpp_pic_bytes(l->format, l->width_stride, l->height_stride);
    return ACL_SUCCESS;
}

/* ---- AscendCL: header information and sizes ----------------------------------------------------- */

STANDIN_EXPORT aclError acldvppJpegGetImageInfoV2(const void *data, uint32_t size, uint32_t *width, uint32_t *height,
                                                  int32_t *components, acldvppJpegFormat *format)
{
    const char *fn = format ? "acldvppJpegGetImageInfoV2" : "acldvppJpegGetImageInfo";
    if (!width || !height)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL; pass the address of a uint32_t",
                          !width ? "width" : "height");
    jpeg_header h;
    aclError rc = read_header(fn, data, size, &h);
    if (rc)
        return rc;
    *width = h.width;
    *height = h.height;
    if (components)
        *components = h.components;
    if (format)
        *format = h.css;
    return ACL_SUCCESS;
}

STANDIN_EXPORT aclError acldvppJpegGetImageInfo(const void *data, uint32_t size, uint32_t *width, uint32_t *height,
                                                int32_t *components)
{
    return acldvppJpegGetImageInfoV2(data, size, width, height, components, NULL);
}

STANDIN_EXPORT aclError acldvppJpegPredictDecSize(const void *data, uint32_t dataSize,
                                                  acldvppPixelFormat outputPixelFormat, uint32_t *decSize)
{
    const char *fn = "acldvppJpegPredictDecSize";
    if (!decSize)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "decSize is NULL; pass the address of a uint32_t");
    jpeg_header h;
    uint32_t format;
    aclError rc = read_header(fn, data, dataSize, &h);
    if (!rc)
        rc = check_decodable(fn, &h);
    if (!rc)
        rc = output_format(fn, &h, (uint32_t)outputPixelFormat, &format);
    if (rc)
        return rc;
    decode_layout l;
    layout_for(&h, format, dvpp_current_soc(), &l);
    *decSize = (uint32_t)l.bytes;
    return ACL_SUCCESS;
}

/* ---- the decode task ---------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *data;
    uint32_t size;
    uint32_t width, height;   /* the header's, at submission: the layout was sized for them */
    uint8_t *out;
    decode_layout layout;
    acldvppPicDesc *out_desc;
} decode_payload;

/* Full-resolution Y, Cb, Cr (interleaved, 3 bytes a pixel) into the
 * semi-planar output: chroma averaged over each subsampling block. */
static void write_semiplanar(const uint8_t *ycc, uint32_t w, const decode_layout *l, uint8_t *out, int grey)
{
    const dvpp_format_info *f = dvpp_format(l->format);
    uint32_t ws = l->width_stride;
    for (uint32_t y = 0; y < l->height; y++)
        for (uint32_t x = 0; x < l->width; x++)
            out[(size_t)y * ws + x] = ycc[((size_t)y * w + x) * 3];
    uint32_t wd = f->chroma_w_div, hd = f->chroma_h_div;
    int v_first = l->format == PIXEL_FORMAT_YVU_SEMIPLANAR_420 || l->format == PIXEL_FORMAT_YVU_SEMIPLANAR_422 ||
                  l->format == PIXEL_FORMAT_YVU_SEMIPLANAR_444 || l->format == PIXEL_FORMAT_YVU_SEMIPLANAR_440;
    uint8_t *chroma = out + (size_t)ws * l->height_stride;
    size_t chroma_line = (size_t)ws * 2 / wd;
    for (uint32_t cy = 0; cy < l->height / hd; cy++)
        for (uint32_t cx = 0; cx < l->width / wd; cx++) {
            unsigned su = 0, sv = 0;
            for (uint32_t dy = 0; dy < hd; dy++)
                for (uint32_t dx = 0; dx < wd; dx++) {
                    const uint8_t *p = ycc + (((size_t)(cy * hd + dy)) * w + cx * wd + dx) * 3;
                    su += p[1];
                    sv += p[2];
                }
            unsigned n = wd * hd;
            uint8_t u = grey ? 0x80 : (uint8_t)((su + n / 2) / n), v = grey ? 0x80 : (uint8_t)((sv + n / 2) / n);
            uint8_t *dst = chroma + (size_t)cy * chroma_line + (size_t)cx * 2;
            dst[0] = v_first ? v : u;
            dst[1] = v_first ? u : v;
        }
}

static aclError decode_work(dvpp_job *job, char *msg, size_t n)
{
    decode_payload *p = job->payload;
    struct jpeg_decompress_struct cinfo;
    jpeg_errors e;
    uint8_t *volatile ycc = NULL;
    install_errors(&cinfo, &e);
    jpeg_create_decompress(&cinfo);
    if (setjmp(e.on_error)) {
        jpeg_destroy_decompress(&cinfo);
        free(ycc);
        snprintf(msg, n, "%s: the JPEG data (%u bytes) is corrupt: %s", job->fn, p->size, e.message);
        goto failed;
    }
    jpeg_mem_src(&cinfo, p->data, p->size);
    jpeg_read_header(&cinfo, TRUE);
    int grey = cinfo.num_components == 1;
    cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_YCbCr;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    uint32_t w = cinfo.output_width, h = cinfo.output_height;
    if (w != p->width || h != p->height) {
        /* the program rewrote the input after submitting it: never write past the output */
        jpeg_destroy_decompress(&cinfo);
        snprintf(msg, n, "%s: the JPEG in data is now %u x %u but was %u x %u when the task was submitted", job->fn,
                 w, h, p->width, p->height);
        goto failed;
    }
    ycc = malloc((size_t)w * h * 3 + w);   /* plus one grey row, freed with it */
    if (!ycc) {
        jpeg_destroy_decompress(&cinfo);
        snprintf(msg, n, "%s: out of host memory decoding a %u x %u JPEG", job->fn, w, h);
        goto failed;
    }
    /* colour decodes straight into the Y, Cb, Cr buffer; grey goes through one row */
    JSAMPROW row = ycc + (size_t)w * h * 3;
    while (cinfo.output_scanline < h) {
        uint32_t y = cinfo.output_scanline;
        JSAMPROW dst = grey ? row : ycc + (size_t)y * w * 3;
        jpeg_read_scanlines(&cinfo, &dst, 1);
        for (uint32_t x = 0; grey && x < w; x++) {
            uint8_t *px = ycc + ((size_t)y * w + x) * 3;
            px[0] = row[x];
            px[1] = px[2] = 0x80;
        }
    }
    long warnings = cinfo.err->num_warnings;
    if (!warnings)
        jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    if (warnings) {
        free(ycc);
        snprintf(msg, n, "%s: the JPEG data (%u bytes) is corrupt or truncated: %s", job->fn, p->size, e.message);
        goto failed;
    }
    write_semiplanar(ycc, w, &p->layout, p->out, grey);
    free(ycc);
    dvpp_lock();
    acldvppPicDesc *d = p->out_desc;
    d->format = p->layout.format;
    d->width = p->layout.width;
    d->height = p->layout.height;
    d->width_stride = p->layout.width_stride;
    d->height_stride = p->layout.height_stride;
    d->size = (uint32_t)p->layout.bytes;
    d->ret_code = 0;
    dvpp_unlock();
    return ACL_SUCCESS;

failed:
    dvpp_lock();
    p->out_desc->ret_code = 1;   /* nonzero: the picture was not decoded */
    dvpp_unlock();
    return DVPP_TASK_FAILED;
}

STANDIN_EXPORT aclError acldvppJpegDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size,
                                               acldvppPicDesc *outputDesc, aclrtStream stream)
{
    const char *fn = "acldvppJpegDecodeAsync";
    int32_t device = -1;
    aclError rc = aeSimStreamDevice(fn, stream, &device);
    if (rc)
        return rc;
    /* the input is in DVPP memory, 128-byte aligned: check it before reading the header */
    if (data && size)
        rc = dvpp_check_memory(fn, "data", data, size, device);
    if (!rc && data && (uintptr_t)data % JPEGD_INPUT_ALIGN)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "data %p is not %u-byte aligned: JPEGD reads its input from the start of an acldvppMalloc "
                        "buffer or a %u-byte aligned offset in one", data, JPEGD_INPUT_ALIGN, JPEGD_INPUT_ALIGN);
    jpeg_header h;
    if (!rc)
        rc = read_header(fn, data, size, &h);
    if (!rc)
        rc = check_decodable(fn, &h);
    dvpp_lock();
    dvpp_pic out;
    decode_layout layout;
    if (!rc)
        rc = dvpp_check_channel_locked(fn, channelDesc, DVPP_CHNMODE_JPEGD, device);
    if (!rc)
        rc = dvpp_obj_check_locked(fn, "outputDesc", outputDesc, DVPP_OBJ_PIC);
    if (!rc) {
        dvpp_pic_snapshot_locked(outputDesc, &out);
        rc = output_format(fn, &h, out.format, &layout.format);
    }
    if (!rc) {
        layout_for(&h, layout.format, dvpp_current_soc(), &layout);
        rc = program_strides(fn, &out, dvpp_current_soc(), &layout);
    }
    if (!rc) {
        /* the layout the decoder writes, against the buffer the description gives */
        out.format = layout.format;
        out.width_stride = layout.width_stride;
        out.height_stride = layout.height_stride;
        rc = dvpp_pic_check_buffer(fn, "outputDesc", &out, device);
    }
    decode_payload payload;
    dvpp_decode_task task = {0};
    if (!rc) {
        payload = (decode_payload){data, size, h.width, h.height, out.data, layout, outputDesc};
        task = (dvpp_decode_task){channelDesc, outputDesc, data, out.data, &payload, sizeof payload, decode_work,
                                  dvpp_jpegd_time_ns(dvpp_current_soc(), (uint64_t)h.width * h.height),
                                  "dvpp jpeg decode"};
    }
    return dvpp_decode_submit_locked(fn, rc, &task, stream);
}
