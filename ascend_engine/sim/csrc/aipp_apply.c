/*
 * aipp_apply.c -- static AIPP at execution: the source images an AIPP input
 * holds become the model tensor, before the model's ops (or its ONNX graph)
 * run.
 *
 * The steps follow the AIPP unit's order (docs/simulator.md, "Static AIPP"):
 * channel swap (U/V or R/B, and the alpha byte of XRGB) on the source pixel,
 * crop, colour-space conversion in integer arithmetic,
 *     out_c = clip(((sum_k matrix[c][k] * (in_k - input_bias_k)) >> 8) + output_bias_c, 0, 255),
 * where the unit takes the input biases for a YUV source and the output
 * biases for an RGB one (the other triple counts as 0: ATC fills both),
 * normalization (x - mean_chn_c - min_chn_c) * var_reci_chn_c, then padding
 * with padding_value.  format_aipp.c has checked every size, so the loops
 * stay inside the image and the tensor.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "sim.h"

/* An arithmetic right shift by 8 that floors negative sums too. */
static int32_t shr8(int64_t v)
{
    return (int32_t)(v >= 0 ? v / 256 : -((-v + 255) / 256));
}

static int32_t clip255(int32_t v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* The source pixel at (x, y) as up to three channels, swaps applied. */
static void read_pixel(const sim_aipp *a, const unsigned char *img, int64_t x, int64_t y, int32_t px[3])
{
    int64_t w = a->src_w;
    const unsigned char *p;
    switch (a->format) {
    case ACL_YUV420SP_U8: {
        const unsigned char *uv = img + w * a->src_h + (y / 2) * w + (x / 2) * 2;
        px[0] = img[y * w + x];
        px[1] = uv[a->rbuv_swap ? 1 : 0];   /* NV12: U first; swapped: NV21 */
        px[2] = uv[a->rbuv_swap ? 0 : 1];
        return;
    }
    case ACL_XRGB8888_U8:
        p = img + (y * w + x) * 4 + (a->ax_swap ? 0 : 1);   /* XRGB: skip X; swapped: RGBX */
        break;
    case ACL_RGB888_U8:
        p = img + (y * w + x) * 3;
        break;
    default:   /* YUV400 */
        px[0] = img[y * w + x];
        px[1] = px[2] = 0;
        return;
    }
    px[0] = p[a->rbuv_swap ? 2 : 0];
    px[1] = p[1];
    px[2] = p[a->rbuv_swap ? 0 : 2];
}

static void store(void *out, aclDataType dtype, size_t at, float v)
{
    if (dtype == ACL_FLOAT16)
        ((uint16_t *)out)[at] = sim_float_to_half(v);
    else
        ((float *)out)[at] = v;
}

void sim_aipp_apply(const sim_aipp *a, aclDataType dtype, const unsigned char *image, void *out)
{
    int64_t C = a->c, H = a->h, W = a->w;
    for (int64_t b = 0; b < a->n; b++) {
        const unsigned char *img = image + (uint64_t)b * a->image_bytes;
        size_t base = (size_t)(b * C * H * W);
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                int64_t cx = x - a->pad_left, cy = y - a->pad_top;
                int inside = cx >= 0 && cx < a->crop_w && cy >= 0 && cy < a->crop_h;
                int32_t px[3] = {0, 0, 0};
                if (inside) {
                    read_pixel(a, img, a->crop_x + cx, a->crop_y + cy, px);
                    if (a->csc) {
                        int32_t in[3] = {px[0], px[1], px[2]};
                        int yuv = a->format == ACL_YUV420SP_U8 || a->format == ACL_YUV400_U8;
                        for (int c = 0; c < 3; c++) {
                            int64_t sum = 0;
                            for (int k = 0; k < 3; k++)
                                sum += (int64_t)a->matrix[3 * c + k] * (in[k] - (yuv ? a->in_bias[k] : 0));
                            px[c] = clip255(shr8(sum) + (yuv ? 0 : a->out_bias[c]));
                        }
                    }
                }
                for (int64_t c = 0; c < C; c++) {
                    float v = inside ? ((float)px[c] - (float)a->mean[c] - a->min[c]) * a->var_reci[c]
                                     : a->pad_value;
                    size_t at = a->nhwc ? base + (size_t)((y * W + x) * C + c) : base + (size_t)((c * H + y) * W + x);
                    store(out, dtype, at, v);
                }
            }
    }
}

static int32_t rd_i32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int16_t rd_i16(const unsigned char *p)
{
    return (int16_t)((uint16_t)p[0] | (uint16_t)p[1] << 8);
}

aclError sim_aipp_from_block(const sim_aipp *model, const unsigned char *block, size_t len, uint64_t b,
                             sim_aipp *out, char *err, size_t n)
{
    if (len < SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * (uint64_t)model->n) {
        snprintf(err, n, "the %s buffer holds %zu bytes, the parameters of %" PRId64 " images need %" PRIu64,
                 ACL_DYNAMIC_AIPP_NAME, len, model->n, SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * (uint64_t)model->n);
        return ACL_ERROR_GE_PARAM_INVALID;
    }
    if (block[0] == 0) {
        snprintf(err, n, "the dynamic AIPP parameters of input %u were never set: call aclmdlSetInputAIPP on the "
                 "input dataset before executing", model->input);
        return ACL_ERROR_GE_AIPP_BATCH_EMPTY;
    }
    *out = *model;
    out->dynamic = 0;
    out->n = 1;
    out->format = (aclAippInputFormat)block[0];
    out->csc = (int8_t)block[1];
    out->rbuv_swap = (int8_t)block[2];
    out->ax_swap = (int8_t)block[3];
    out->src_w = rd_i32(block + 8);
    out->src_h = rd_i32(block + 12);
    for (int i = 0; i < 9; i++)
        out->matrix[i] = rd_i16(block + 16 + 2 * i);
    for (int i = 0; i < 3; i++) {
        out->out_bias[i] = block[40 + i];
        out->in_bias[i] = block[43 + i];
    }
    const unsigned char *e = block + SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * b;
    out->crop = (int8_t)e[0];
    out->padding = (int8_t)e[2];
    out->crop_x = out->crop ? rd_i32(e + 8) : 0;
    out->crop_y = out->crop ? rd_i32(e + 12) : 0;
    out->crop_w = out->crop ? rd_i32(e + 16) : out->src_w;
    out->crop_h = out->crop ? rd_i32(e + 20) : out->src_h;
    out->pad_top = out->padding ? rd_i32(e + 40) : 0;
    out->pad_bottom = out->padding ? rd_i32(e + 44) : 0;
    out->pad_left = out->padding ? rd_i32(e + 48) : 0;
    out->pad_right = out->padding ? rd_i32(e + 52) : 0;
    for (int i = 0; i < 4; i++) {
        out->mean[i] = rd_i16(e + 56 + 2 * i);
        out->min[i] = sim_half_to_float((uint16_t)rd_i16(e + 64 + 2 * i));
        out->var_reci[i] = sim_half_to_float((uint16_t)rd_i16(e + 72 + 2 * i));
    }
    out->pad_value = 0.0f;
    char rule[256];
    if (block[4] != model->n) {
        snprintf(err, n, "the dynamic AIPP parameters are for %u images, input %u holds %" PRId64, block[4],
                 model->input, model->n);
        return ACL_ERROR_GE_PARAM_INVALID;
    }
    if (!sim_aipp_check(out, rule, sizeof rule)) {
        snprintf(err, n, "input %u, batch image %" PRIu64 ": %s", model->input, b, rule);
        return ACL_ERROR_GE_PARAM_INVALID;
    }
    if (out->image_bytes * (uint64_t)model->n > model->max_src_bytes) {
        snprintf(err, n, "input %u: %" PRId64 " images of %" PRIu64 " bytes exceed its max_src_image_size of %" PRIu64,
                 model->input, model->n, out->image_bytes, model->max_src_bytes);
        return ACL_ERROR_GE_PARAM_INVALID;
    }
    return ACL_SUCCESS;
}
