/*
 * Host crops (docs/executor.md, "Native steps"), for pipelines without DVPP:
 * crop_resize_host cuts boxes out of pictures and resizes them, and
 * warp_affine_host samples pictures through affine maps.
 *
 * inputs[0]: rows of pictures height x width x channels (uint8 or float32);
 * inputs[1]: crop: boxes (x0, y0, x1, y1) float32 in pixels, the box
 * covering [x0, x1) x [y0, y1); warp: 6 float32 (m00 m01 m02 m10 m11 m12)
 * mapping an output pixel (x, y) to the source point (m00 x + m01 y + m02,
 * m10 x + m11 y + m12), pixel centres at integers; inputs[2] (when the step
 * has it): the picture (request row) of each box, int32.  outputs[0]: one
 * out_height x out_width x channels picture per box, the input's type.
 *
 * Sampling, in double: a crop's output pixel (i, j) samples the source at
 * y = y0 + ((i + 0.5) * (y1 - y0)) / out_height (x likewise); nearest takes
 * floor(y), bilinear the 4 pixels around y - 0.5, clamped to the picture.
 * A warp is bilinear and reads `border` outside the picture.  uint8 results
 * round half up.  A box outside the picture or empty, a non-finite value
 * or a picture index out of the request fails it.
 */
#include "steps.h"

#include <math.h>
#include <stdlib.h>

#define CROP "crop_resize_host"
#define WARP "warp_affine_host"

static size_t pixel_bytes(const ae_crop_ctx *c)
{
    return c->pixels == AE_PIXELS_U8 ? 1 : 4;
}

/* Shared checks; returns the number of boxes, or -1. */
static int64_t check_common(const ae_crop_ctx *c, const char *kind, uint64_t box_bytes, const ae_host_tensor *inputs,
                            int n_inputs, ae_host_tensor *outputs, int n_outputs, char *message, size_t message_size)
{
    uint64_t pic = c->height * c->width * c->channels * pixel_bytes(c);
    uint64_t in_bytes[3] = {pic, box_bytes, 4};
    uint64_t out_bytes[1] = {c->out_height * c->out_width * c->channels * pixel_bytes(c)};
    if (!c->height || !c->width || !c->channels || !c->out_height || !c->out_width)
        return ae_step_fail(message, message_size, kind, c->name, "its context is incomplete");
    if (ae_step_check_io(message, message_size, kind, c->name, inputs, n_inputs, c->has_index ? 3 : 2, in_bytes,
                         outputs, n_outputs, 1, out_bytes))
        return -1;
    uint64_t boxes = inputs[1].rows;
    if (c->has_index && inputs[2].rows != boxes)
        return ae_step_fail(message, message_size, kind, c->name, "%llu boxes but %llu picture indices",
                            (unsigned long long)boxes, (unsigned long long)inputs[2].rows);
    if (boxes > outputs[0].rows)
        return ae_step_fail(message, message_size, kind, c->name, "%llu boxes, more than its max_rows=%llu",
                            (unsigned long long)boxes, (unsigned long long)outputs[0].rows);
    if (!c->has_index && boxes && inputs[0].rows != 1)
        return ae_step_fail(message, message_size, kind, c->name,
                            "without picture indices the request must hold one picture, it holds %llu",
                            (unsigned long long)inputs[0].rows);
    return (int64_t)boxes;
}

/* The picture box k reads, or NULL (with the message) when its index is outside the request. */
static const void *picture_of(const ae_crop_ctx *c, const char *kind, const ae_host_tensor *inputs, uint64_t k,
                              char *message, size_t message_size)
{
    int64_t p = c->has_index ? ((const int32_t *)inputs[2].data)[k] : 0;
    if (p < 0 || (uint64_t)p >= inputs[0].rows) {
        ae_step_fail(message, message_size, kind, c->name, "box %llu names picture %lld, the request has %llu",
                     (unsigned long long)k, (long long)p, (unsigned long long)inputs[0].rows);
        return NULL;
    }
    return (const uint8_t *)inputs[0].data + (uint64_t)p * inputs[0].row_bytes;
}

static int64_t clamp_index(int64_t v, uint64_t size)
{
    return v < 0 ? 0 : v >= (int64_t)size ? (int64_t)size - 1 : v;
}

/* Where output column (or row) j of `out` samples a box side [lo, hi) of a picture side `size`:
 * the two source pixels and the weight of the second (bilinear), or the one pixel (nearest). */
typedef struct tap {
    int64_t a, b;
    double w;
} tap;

static void taps(tap *t, uint64_t out, float lo, float hi, uint64_t size, int bilinear)
{
    double d = (double)(hi - lo);
    for (uint64_t j = 0; j < out; j++) {
        double s = (double)lo + ((double)j + 0.5) * d / (double)out;
        if (!bilinear) {
            t[j].a = t[j].b = clamp_index((int64_t)floor(s), size);
            t[j].w = 0.0;
            continue;
        }
        double f = s - 0.5;
        f = f < 0.0 ? 0.0 : f > (double)(size - 1) ? (double)(size - 1) : f;
        t[j].a = (int64_t)floor(f);
        t[j].b = clamp_index(t[j].a + 1, size);
        t[j].w = f - (double)t[j].a;
    }
}

/* One crop: rows ty, columns tx, from picture pic into out (oh x ow x chs values of type T). */
#define CROP_ONE(T, STORE)                                                                              \
    do {                                                                                                \
        const T *p = pic;                                                                               \
        T *o = (T *)outputs[0].data + (uint64_t)k * oh * ow * chs;                                      \
        for (uint64_t i = 0; i < oh; i++) {                                                             \
            const T *r0 = p + (uint64_t)ty[i].a * c->width * chs, *r1 = p + (uint64_t)ty[i].b * c->width * chs; \
            double wy = ty[i].w;                                                                        \
            for (uint64_t j = 0; j < ow; j++) {                                                         \
                uint64_t xa = (uint64_t)tx[j].a * chs, xb = (uint64_t)tx[j].b * chs;                    \
                double wx = tx[j].w;                                                                    \
                for (uint64_t ch = 0; ch < chs; ch++, o++) {                                            \
                    if (!bilinear) {                                                                    \
                        *o = r0[xa + ch];                                                               \
                        continue;                                                                       \
                    }                                                                                   \
                    double top = (1.0 - wx) * (double)r0[xa + ch] + wx * (double)r0[xb + ch];            \
                    double bottom = (1.0 - wx) * (double)r1[xa + ch] + wx * (double)r1[xb + ch];         \
                    double v = (1.0 - wy) * top + wy * bottom;                                          \
                    *o = STORE;                                                                         \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    } while (0)

/* uint8: round half up (the value is a mix of uint8 values, so within 0..255) */
#define STORE_U8 ((uint8_t)(v + 0.5))
#define STORE_F32 ((float)v)

int ae_step_crop_resize(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                        ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                        size_t message_size)
{
    const ae_crop_ctx *c = ctx;
    (void)request;
    if (!c)
        return ae_step_fail(message, message_size, CROP, "?", "has no context");
    int64_t boxes = check_common(c, CROP, 16, inputs, n_inputs, outputs, n_outputs, message, message_size);
    if (boxes < 0)
        return -1;
    uint64_t oh = c->out_height, ow = c->out_width, chs = c->channels;
    int bilinear = c->interpolation == AE_SAMPLE_BILINEAR;
    for (int64_t k = 0; k < boxes; k++) {     /* every box checked before any is cut */
        const float *b = (const float *)inputs[1].data + 4 * k;
        if (!(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3]) && b[0] >= 0.0f &&
              b[1] >= 0.0f && b[2] <= (float)c->width && b[3] <= (float)c->height && b[0] < b[2] && b[1] < b[3]))
            return ae_step_fail(message, message_size, CROP, c->name,
                                "box %lld (%g, %g, %g, %g) is not a non-empty box inside the %llux%llu picture",
                                (long long)k, b[0], b[1], b[2], b[3], (unsigned long long)c->width,
                                (unsigned long long)c->height);
        if (!picture_of(c, CROP, inputs, (uint64_t)k, message, message_size))
            return -1;
    }
    tap *ty = malloc((oh + ow) * sizeof *ty);
    if (!ty)
        return ae_step_fail(message, message_size, CROP, c->name, "out of host memory");
    tap *tx = ty + oh;
    for (int64_t k = 0; k < boxes; k++) {
        const float *b = (const float *)inputs[1].data + 4 * k;
        const void *pic = picture_of(c, CROP, inputs, (uint64_t)k, message, message_size);
        taps(ty, oh, b[1], b[3], c->height, bilinear);
        taps(tx, ow, b[0], b[2], c->width, bilinear);
        if (c->pixels == AE_PIXELS_U8)
            CROP_ONE(uint8_t, STORE_U8);
        else
            CROP_ONE(float, STORE_F32);
    }
    free(ty);
    *rows_out = (uint64_t)boxes;
    return 0;
}

/* One warp: output pixel (j, i) of picture pic through matrix m into out (oh x ow x chs values of
 * type T).  The four neighbours' places are found once a pixel, then read for every channel; one
 * outside the picture reads `border`. */
#define WARP_ONE(T, STORE)                                                                              \
    do {                                                                                                \
        const T *p = pic;                                                                               \
        T *o = (T *)outputs[0].data + (uint64_t)k * oh * ow * chs;                                      \
        for (uint64_t i = 0; i < oh; i++)                                                               \
            for (uint64_t j = 0; j < ow; j++, o += chs) {                                               \
                double sx = (double)m[0] * (double)j + (double)m[1] * (double)i + (double)m[2];         \
                double sy = (double)m[3] * (double)j + (double)m[4] * (double)i + (double)m[5];         \
                if (fabs(sx) > limit || fabs(sy) > limit) {                                             \
                    for (uint64_t ch = 0; ch < chs; ch++) {                                             \
                        double v = border;                                                              \
                        o[ch] = STORE;                                                                  \
                    }                                                                                   \
                    continue;                                                                           \
                }                                                                                       \
                int64_t x0 = floor_i64(sx), y0 = floor_i64(sy);                                         \
                double wx = sx - (double)x0, wy = sy - (double)y0;                                      \
                const T *q[4];                                                                          \
                for (int n = 0; n < 4; n++) {                                                           \
                    int64_t y = y0 + (n >> 1), x = x0 + (n & 1);                                        \
                    q[n] = inside(c, y, x) ? p + ((uint64_t)y * c->width + (uint64_t)x) * chs : NULL;   \
                }                                                                                       \
                for (uint64_t ch = 0; ch < chs; ch++) {                                                 \
                    double a = q[0] ? (double)q[0][ch] : border, b = q[1] ? (double)q[1][ch] : border;  \
                    double d = q[2] ? (double)q[2][ch] : border, e = q[3] ? (double)q[3][ch] : border;  \
                    double top = (1.0 - wx) * a + wx * b;                                               \
                    double bottom = (1.0 - wx) * d + wx * e;                                            \
                    double v = (1.0 - wy) * top + wy * bottom;                                          \
                    o[ch] = STORE;                                                                      \
                }                                                                                       \
            }                                                                                           \
    } while (0)

/* A warp's values may fall outside 0..255 (the border is any number): uint8 rounds half up and clamps. */
#define STORE_U8_CLAMPED round_u8(v)

/* floor() of a value within int64's range (the warp's limit keeps it there), without a libm call */
static inline int64_t floor_i64(double v)
{
    int64_t t = (int64_t)v;
    return (double)t > v ? t - 1 : t;
}

static inline uint8_t round_u8(double v)
{
    if (!(v > -0.5))
        return 0;
    if (v >= 255.0)
        return 255;
    return (uint8_t)floor_i64(v + 0.5);
}

static int inside(const ae_crop_ctx *c, int64_t y, int64_t x)
{
    return y >= 0 && x >= 0 && y < (int64_t)c->height && x < (int64_t)c->width;
}

int ae_step_warp_affine(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                        ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                        size_t message_size)
{
    const ae_crop_ctx *c = ctx;
    (void)request;
    if (!c)
        return ae_step_fail(message, message_size, WARP, "?", "has no context");
    int64_t boxes = check_common(c, WARP, 24, inputs, n_inputs, outputs, n_outputs, message, message_size);
    if (boxes < 0)
        return -1;
    uint64_t oh = c->out_height, ow = c->out_width, chs = c->channels;
    double limit = 4.0 * (double)(c->height + c->width + oh + ow);   /* keeps floor() within int64 */
    double border = (double)c->border;
    for (int64_t k = 0; k < boxes; k++) {
        const float *m = (const float *)inputs[1].data + 6 * k;
        for (int q = 0; q < 6; q++)
            if (!isfinite(m[q]))
                return ae_step_fail(message, message_size, WARP, c->name, "matrix %lld has a non-finite value",
                                    (long long)k);
        const void *pic = picture_of(c, WARP, inputs, (uint64_t)k, message, message_size);
        if (!pic)
            return -1;
        if (c->pixels == AE_PIXELS_U8)
            WARP_ONE(uint8_t, STORE_U8_CLAMPED);
        else
            WARP_ONE(float, STORE_F32);
    }
    *rows_out = (uint64_t)boxes;
    return 0;
}
