/*
 * decode_boxes: a detector head's raw boxes to corners (x0, y0, x1, y1) in
 * pixels, float32, row by row (docs/executor.md, "Native steps").
 * inputs[0]: rows of n x channels float32 (the first 4 channels decoded);
 * outputs[0]: rows of n x 4 float32.  A non-finite input or result fails
 * the request, naming the box.
 */
#include "steps.h"

#include <math.h>

#define KIND "decode_boxes"

static float sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

/* One box's centre and size in pixels, from its raw values at location g (grid cell gx, gy of stride s). */
static void decode_one(const ae_decode_ctx *c, const float *t, uint64_t i, int gx, int gy, int s, int anchor,
                       int level, float out[4])
{
    float cx, cy, w, h;
    switch (c->kind) {
    case AE_DECODE_YOLOX:
        cx = (t[0] + (float)gx) * (float)s;
        cy = (t[1] + (float)gy) * (float)s;
        w = expf(t[2]) * (float)s;
        h = expf(t[3]) * (float)s;
        break;
    case AE_DECODE_LTRB: {
        float px = ((float)gx + 0.5f) * (float)s, py = ((float)gy + 0.5f) * (float)s;
        out[0] = px - t[0] * (float)s;
        out[1] = py - t[1] * (float)s;
        out[2] = px + t[2] * (float)s;
        out[3] = py + t[3] * (float)s;
        return;
    }
    case AE_DECODE_YOLOV5: {
        float sx = 2.0f * sigmoid(t[0]), sy = 2.0f * sigmoid(t[1]);
        float sw = 2.0f * sigmoid(t[2]), sh = 2.0f * sigmoid(t[3]);
        cx = (sx - 0.5f + (float)gx) * (float)s;
        cy = (sy - 0.5f + (float)gy) * (float)s;
        w = sw * sw * c->anchors[level][anchor][0];
        h = sh * sh * c->anchors[level][anchor][1];
        break;
    }
    case AE_DECODE_SSD: {
        const float *p = c->priors + 4 * i;
        cx = (p[0] + t[0] * c->variances[0] * p[2]) * (float)c->width;
        cy = (p[1] + t[1] * c->variances[0] * p[3]) * (float)c->height;
        w = p[2] * expf(t[2] * c->variances[1]) * (float)c->width;
        h = p[3] * expf(t[3] * c->variances[1]) * (float)c->height;
        break;
    }
    default:   /* AE_DECODE_XYWH */
        cx = t[0];
        cy = t[1];
        w = t[2];
        h = t[3];
        break;
    }
    out[0] = cx - w * 0.5f;
    out[1] = cy - h * 0.5f;
    out[2] = cx + w * 0.5f;
    out[3] = cy + h * 0.5f;
}

static float clampf(float v, float hi)
{
    return v < 0.0f ? 0.0f : v > hi ? hi : v;
}

/* Decode one row: the grid walk is the same for every grid kind, levels in stride order,
 * (anchor,) y, x within a level (the layout the plan checked n against). */
static int decode_row(const ae_decode_ctx *c, const float *in, float *out, uint64_t row, char *message,
                      size_t message_size)
{
    uint64_t i = 0;
    int grid = c->kind == AE_DECODE_YOLOX || c->kind == AE_DECODE_LTRB || c->kind == AE_DECODE_YOLOV5;
    int levels = grid ? c->n_levels : 1;
    for (int level = 0; level < levels; level++) {
        int s = grid ? c->strides[level] : 1;
        int gw = grid ? (int)(c->width / s) : 1, gh = grid ? (int)(c->height / s) : 1;
        int anchors = c->kind == AE_DECODE_YOLOV5 ? c->n_anchors : 1;
        uint64_t cells = grid ? (uint64_t)anchors * (uint64_t)gw * (uint64_t)gh : c->n;
        for (uint64_t k = 0; k < cells; k++, i++) {
            if (i >= c->n)
                return ae_step_fail(message, message_size, KIND, c->name, "the grid has more than %llu boxes",
                                    (unsigned long long)c->n);
            int cell = grid ? (int)(k % ((uint64_t)gw * (uint64_t)gh)) : 0;
            int anchor = grid ? (int)(k / ((uint64_t)gw * (uint64_t)gh)) : 0;
            const float *t = in + i * c->channels;
            float *o = out + 4 * i;
            if (!isfinite(t[0]) || !isfinite(t[1]) || !isfinite(t[2]) || !isfinite(t[3]))
                return ae_step_fail(message, message_size, KIND, c->name,
                                    "row %llu box %llu has a non-finite value (%g, %g, %g, %g)",
                                    (unsigned long long)row, (unsigned long long)i, t[0], t[1], t[2], t[3]);
            decode_one(c, t, i, cell % (gw ? gw : 1), cell / (gw ? gw : 1), s, anchor, level, o);
            if (!isfinite(o[0]) || !isfinite(o[1]) || !isfinite(o[2]) || !isfinite(o[3]))
                return ae_step_fail(message, message_size, KIND, c->name,
                                    "row %llu box %llu decodes to a non-finite corner (its values %g, %g, %g, "
                                    "%g overflow)", (unsigned long long)row, (unsigned long long)i, t[0], t[1],
                                    t[2], t[3]);
            if (c->clip) {
                o[0] = clampf(o[0], (float)c->width);
                o[1] = clampf(o[1], (float)c->height);
                o[2] = clampf(o[2], (float)c->width);
                o[3] = clampf(o[3], (float)c->height);
            }
        }
    }
    if (i != c->n)
        return ae_step_fail(message, message_size, KIND, c->name, "the grid has %llu boxes, the rows %llu",
                            (unsigned long long)i, (unsigned long long)c->n);
    return 0;
}

int ae_step_decode_boxes(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                         ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                         size_t message_size)
{
    const ae_decode_ctx *c = ctx;
    (void)request;
    if (!c)
        return ae_step_fail(message, message_size, KIND, "?", "has no context");
    uint64_t in_bytes[1] = {c->n * c->channels * sizeof(float)}, out_bytes[1] = {c->n * 4 * sizeof(float)};
    if (c->channels < 4 || (c->kind == AE_DECODE_SSD && !c->priors))
        return ae_step_fail(message, message_size, KIND, c->name, "its context is incomplete");
    if (ae_step_check_io(message, message_size, KIND, c->name, inputs, n_inputs, 1, in_bytes, outputs, n_outputs,
                         1, out_bytes))
        return -1;
    if (inputs[0].rows > outputs[0].rows)
        return ae_step_fail(message, message_size, KIND, c->name, "%llu rows in, room for %llu",
                            (unsigned long long)inputs[0].rows, (unsigned long long)outputs[0].rows);
    for (uint64_t r = 0; r < inputs[0].rows; r++)
        if (decode_row(c, (const float *)inputs[0].data + r * c->n * c->channels,
                       (float *)outputs[0].data + r * c->n * 4, r, message, message_size))
            return -1;
    *rows_out = inputs[0].rows;
    return 0;
}
