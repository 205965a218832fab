/*
 * format_aipp.c -- the static AIPP table of a version-4 simulator model
 * (docs/sim-model-format.md, "Version 4: AIPP").
 *
 * A record gives one model input static AIPP, as ATC's --insert_op_conf
 * does: the input then takes a uint8 source image, and the AIPP unit crops,
 * converts, normalizes and pads it into the model tensor (aipp_apply.c).
 * Every field is checked here, against ATC's rules and against the tensor
 * it feeds, so that aipp_apply.c can trust every size and offset.  The
 * input's descriptor becomes the source image's: uint8, NHWC, the dims
 * aclmdlGetInputDimsV2 reports and the image's bytes (docs/simulator.md,
 * "Static AIPP").
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

#define MAX_SIDE 4096
#define MATRIX_MIN (-32677)
#define MATRIX_MAX 32676

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int32_t rdi32(const unsigned char *p)
{
    return (int32_t)rd32(p);
}

static float rdf32(const unsigned char *p)
{
    uint32_t u = rd32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static const char *format_name(int32_t f)
{
    switch (f) {
    case ACL_YUV420SP_U8: return "YUV420SP_U8";
    case ACL_XRGB8888_U8: return "XRGB8888_U8";
    case ACL_RGB888_U8: return "RGB888_U8";
    case ACL_YUV400_U8: return "YUV400_U8";
    default: return NULL;
    }
}

/* Bytes of one w x h source image in format f (f checked). */
static uint64_t image_bytes(int32_t f, uint64_t w, uint64_t h)
{
    return f == ACL_YUV420SP_U8 ? w * h * 3 / 2 : f == ACL_XRGB8888_U8 ? w * h * 4 : f == ACL_RGB888_U8 ? w * h * 3
                                                                                                        : w * h;
}

/* Read record r into *a; the first broken rule goes to why. */
static int read_record(const unsigned char *r, sim_aipp *a, char *why, size_t n)
{
    a->input = rd32(r);
    uint32_t mode = rd32(r + 4);
    a->format = (aclAippInputFormat)rdi32(r + 8);
    a->src_w = rdi32(r + 12);
    a->src_h = rdi32(r + 16);
    const unsigned char *sw = r + 20;
    a->crop = (int8_t)sw[0];
    a->padding = (int8_t)sw[1];
    a->csc = (int8_t)sw[2];
    a->rbuv_swap = (int8_t)sw[3];
    a->ax_swap = (int8_t)sw[4];
    int32_t *ints[8] = {&a->crop_x, &a->crop_y, &a->crop_w, &a->crop_h,
                        &a->pad_left, &a->pad_right, &a->pad_top, &a->pad_bottom};
    for (int i = 0; i < 8; i++)
        *ints[i] = rdi32(r + 28 + 4 * i);
    for (int i = 0; i < 9; i++)
        a->matrix[i] = rdi32(r + 60 + 4 * i);
    for (int i = 0; i < 3; i++) {
        a->in_bias[i] = rdi32(r + 96 + 4 * i);
        a->out_bias[i] = rdi32(r + 108 + 4 * i);
    }
    for (int i = 0; i < 4; i++) {
        a->mean[i] = rdi32(r + 120 + 4 * i);
        a->min[i] = rdf32(r + 136 + 4 * i);
        a->var_reci[i] = rdf32(r + 152 + 4 * i);
    }
    a->pad_value = rdf32(r + 168);

    if (mode == 2) {
        /* dynamic: the input's largest size, the rest of the record 0 */
        a->dynamic = 1;
        a->max_src_bytes = rd32(r + 12);
        for (size_t i = 8; i < SIM_AIPP_RECORD; i++)
            if ((i < 12 || i >= 16) && r[i]) {
                snprintf(why, n, "a dynamic AIPP record (mode 2) has only its input and max_src_image_size: "
                         "byte %zu is %u", i, r[i]);
                return 0;
            }
        if (a->max_src_bytes < 1 || a->max_src_bytes > INT32_MAX) {
            snprintf(why, n, "max_src_image_size %" PRIu64 " is outside 1..%d", a->max_src_bytes, INT32_MAX);
            return 0;
        }
        return 1;
    }
    if (mode != 1) {
        snprintf(why, n, "aipp_mode %u: expected 1 (static) or 2 (dynamic)", mode);
        return 0;
    }
    for (int i = 0; i < 8; i++)
        if (sw[i] > (i < 5 ? 1 : 0)) {
            snprintf(why, n, "byte %d is %u: the switches (20..24) are 0 or 1, bytes 25..27 are 0", 20 + i, sw[i]);
            return 0;
        }
    return 1;
}

/* The rules every static setting follows, whatever the tensor. */
static int check_settings(const sim_aipp *a, char *why, size_t n)
{
    if (!format_name(a->format)) {
        snprintf(why, n, "input_format %d: expected 1 (YUV420SP_U8), 2 (XRGB8888_U8), 3 (RGB888_U8) or 4 "
                 "(YUV400_U8)", (int)a->format);
        return 0;
    }
    if (a->crop > 1 || a->padding > 1 || a->csc > 1 || a->rbuv_swap > 1 || a->ax_swap > 1 || a->crop < 0 ||
        a->padding < 0 || a->csc < 0 || a->rbuv_swap < 0 || a->ax_swap < 0) {
        snprintf(why, n, "switches are 0 or 1: crop %d padding %d csc %d rbuv_swap %d ax_swap %d", a->crop,
                 a->padding, a->csc, a->rbuv_swap, a->ax_swap);
        return 0;
    }
    if (a->src_w < 1 || a->src_w > MAX_SIDE || a->src_h < 1 || a->src_h > MAX_SIDE) {
        snprintf(why, n, "source image %d x %d: width and height must be in 1..%d", a->src_w, a->src_h, MAX_SIDE);
        return 0;
    }
    if (a->crop_x < 0 || a->crop_y < 0 || a->crop_w < 1 || a->crop_h < 1 ||
        (int64_t)a->crop_x + a->crop_w > a->src_w || (int64_t)a->crop_y + a->crop_h > a->src_h) {
        snprintf(why, n, "crop window at (%d, %d) of %d x %d must lie inside the %d x %d source image", a->crop_x,
                 a->crop_y, a->crop_w, a->crop_h, a->src_w, a->src_h);
        return 0;
    }
    if (!a->crop && (a->crop_x || a->crop_y || a->crop_w != a->src_w || a->crop_h != a->src_h)) {
        snprintf(why, n, "crop is off, so the window must be the whole %d x %d source image", a->src_w, a->src_h);
        return 0;
    }
    if (a->pad_left < 0 || a->pad_right < 0 || a->pad_top < 0 || a->pad_bottom < 0 || a->pad_left > MAX_SIDE ||
        a->pad_right > MAX_SIDE || a->pad_top > MAX_SIDE || a->pad_bottom > MAX_SIDE ||
        (!a->padding && (a->pad_left || a->pad_right || a->pad_top || a->pad_bottom))) {
        snprintf(why, n, "padding left %d right %d top %d bottom %d: sizes in 0..%d, all 0 when padding is off",
                 a->pad_left, a->pad_right, a->pad_top, a->pad_bottom, MAX_SIDE);
        return 0;
    }
    if (a->format == ACL_YUV420SP_U8 && (a->src_w % 2 || a->src_h % 2 || a->crop_x % 2 || a->crop_y % 2)) {
        snprintf(why, n, "YUV420SP_U8 needs an even source size and an even crop start, got %d x %d from (%d, %d)",
                 a->src_w, a->src_h, a->crop_x, a->crop_y);
        return 0;
    }
    if (a->format == ACL_YUV400_U8 && a->csc) {
        snprintf(why, n, "csc_switch is on for YUV400_U8, a single channel with no colour to convert");
        return 0;
    }
    for (int i = 0; i < 9; i++)
        if (a->matrix[i] < MATRIX_MIN || a->matrix[i] > MATRIX_MAX) {
            snprintf(why, n, "matrix_r%dc%d %d is outside [%d, %d]", i / 3, i % 3, a->matrix[i], MATRIX_MIN,
                     MATRIX_MAX);
            return 0;
        }
    for (int i = 0; i < 3; i++)
        if (a->in_bias[i] < 0 || a->in_bias[i] > 255 || a->out_bias[i] < 0 || a->out_bias[i] > 255) {
            snprintf(why, n, "input_bias_%d %d / output_bias_%d %d: biases are 0..255", i, a->in_bias[i], i,
                     a->out_bias[i]);
            return 0;
        }
    for (int i = 0; i < 4; i++)
        if (a->mean[i] < 0 || a->mean[i] > 255 || !(a->min[i] >= 0 && a->min[i] <= 255) ||
            !(fabsf(a->var_reci[i]) <= 65504.0f)) {
            snprintf(why, n, "channel %d: mean_chn %d (0..255), min_chn %g (0..255), var_reci_chn %g "
                     "(-65504..65504)", i, a->mean[i], (double)a->min[i], (double)a->var_reci[i]);
            return 0;
        }
    if (!(fabsf(a->pad_value) <= 65504.0f)) {
        snprintf(why, n, "padding_value %g is outside -65504..65504", (double)a->pad_value);
        return 0;
    }
    return 1;
}

/* The record must fit the model tensor it feeds: a fixed 4-D NCHW or NHWC
 * float tensor with the channels the format gives, and the AIPP output size
 * (crop + padding) equal to its H x W. */
static int fit_tensor(const sim_model_info *m, sim_aipp *a, char *why, size_t n)
{
    const sim_io *io = &m->inputs[a->input];
    const sim_tensor *t = &m->tensors[io->tensor];
    a->tensor = io->tensor;
    if (t->rank != 4 || (t->format != ACL_FORMAT_NCHW && t->format != ACL_FORMAT_NHWC)) {
        snprintf(why, n, "input %u '%s': AIPP needs a 4-D NCHW or NHWC tensor (rank %u, format %d)", a->input,
                 io->name, t->rank, (int)t->format);
        return 0;
    }
    if (t->syms) {
        snprintf(why, n, "input %u '%s': AIPP on an input with dynamic dimensions is not modelled", a->input,
                 io->name);
        return 0;
    }
    if (t->dtype != ACL_FLOAT && t->dtype != ACL_FLOAT16) {
        snprintf(why, n, "input %u '%s': AIPP fills a float32 or float16 tensor, this one is %s", a->input, io->name,
                 sim_dtype_name(t->dtype));
        return 0;
    }
    a->nhwc = t->format == ACL_FORMAT_NHWC;
    a->n = t->dims[0];
    a->c = a->nhwc ? t->dims[3] : t->dims[1];
    a->h = a->nhwc ? t->dims[1] : t->dims[2];
    a->w = a->nhwc ? t->dims[2] : t->dims[3];
    if (a->dynamic) {
        if (a->c != 1 && a->c != 3) {
            snprintf(why, n, "input %u '%s': AIPP gives 1 or 3 channels, the tensor has C = %" PRId64, a->input,
                     io->name, a->c);
            return 0;
        }
        return 1;
    }
    char rule[160];
    if (!sim_aipp_check(a, rule, sizeof rule)) {
        snprintf(why, n, "input %u '%s': %s", a->input, io->name, rule);
        return 0;
    }
    if ((uint64_t)a->n > SIM_MAX_TENSOR_BYTES / a->image_bytes) {
        snprintf(why, n, "input %u '%s': %" PRId64 " source images are too large", a->input, io->name, a->n);
        return 0;
    }
    return 1;
}

int sim_aipp_check(sim_aipp *a, char *why, size_t n)
{
    if (!check_settings(a, why, n))
        return 0;
    int64_t want_c = a->format == ACL_YUV400_U8 ? 1 : 3;
    if (a->c != want_c) {
        snprintf(why, n, "%s gives %" PRId64 " channel(s), the tensor has C = %" PRId64, format_name(a->format),
                 want_c, a->c);
        return 0;
    }
    int64_t out_w = (int64_t)a->crop_w + a->pad_left + a->pad_right;
    int64_t out_h = (int64_t)a->crop_h + a->pad_top + a->pad_bottom;
    if (out_w != a->w || out_h != a->h) {
        snprintf(why, n, "the AIPP output is %" PRId64 " x %" PRId64 " (crop + padding, W x H), the tensor's W x H "
                 "is %" PRId64 " x %" PRId64, out_w, out_h, a->w, a->h);
        return 0;
    }
    a->image_bytes = image_bytes(a->format, (uint64_t)a->src_w, (uint64_t)a->src_h);
    return 1;
}

void sim_aipp_image_dims(const sim_aipp *a, int64_t dims[4])
{
    int64_t c = a->format == ACL_YUV400_U8 ? 1 : a->format == ACL_XRGB8888_U8 ? 4 : 3;
    dims[0] = a->n;
    dims[1] = a->src_h;
    dims[2] = a->src_w;
    dims[3] = c;
}

/* The descriptor of an AIPP input: its source image, uint8, NHWC, with the
 * dims aclmdlGetInputDimsV2 reports (YUV420SP: n, h x 1.5, w, 1), whose
 * product is the input size. */
static void describe_image(sim_io *io, const sim_aipp *a)
{
    io->aipp = a;
    if (a->dynamic) {   /* the format and size come at run time: max_src_image_size bytes */
        io->dtype = ACL_UINT8;
        io->format = ACL_FORMAT_ND;
        io->rank = 1;
        memset(io->dims, 0, sizeof io->dims);
        io->dims[0] = (int64_t)a->max_src_bytes;
        io->max_bytes = io->size = a->max_src_bytes;
        return;
    }
    io->dtype = ACL_UINT8;
    io->format = ACL_FORMAT_NHWC;
    io->rank = 4;
    memset(io->dims, 0, sizeof io->dims);
    io->dims[0] = a->n;
    io->dims[1] = a->format == ACL_YUV420SP_U8 ? (int64_t)a->src_h * 3 / 2 : a->src_h;
    io->dims[2] = a->src_w;
    io->dims[3] = a->format == ACL_XRGB8888_U8 ? 4 : a->format == ACL_RGB888_U8 ? 3 : 1;
    io->max_bytes = (uint64_t)a->n * a->image_bytes;
    io->size = io->max_bytes;
}

/* A model with dynamic AIPP gets the ascend_dynamic_aipp_data input, last,
 * holding the parameter block for the model's batch (aclmdlGetAippDataSize).
 * One dynamic AIPP input per model, and no gears (their input would be last
 * too): both are not modelled. */
static int add_data_input(sim_model_info *m, char *why, size_t n)
{
    sim_aipp *dyn = NULL;
    for (uint32_t k = 0; k < m->n_aipp; k++)
        if (m->aipp[k].dynamic) {
            if (dyn) {
                snprintf(why, n, "two inputs with dynamic AIPP: one is modelled");
                return 0;
            }
            dyn = &m->aipp[k];
        }
    for (uint32_t i = 0; i < m->n_file_inputs; i++)
        if (strcmp(m->inputs[i].name, ACL_DYNAMIC_AIPP_NAME) == 0) {
            snprintf(why, n, "input %u: the name %s is reserved", i, ACL_DYNAMIC_AIPP_NAME);
            return 0;
        }
    if (!dyn)
        return 1;
    if (m->n_gears > 0 || m->dyn_kind == SIM_DYN_RANGE) {
        snprintf(why, n, "dynamic AIPP in a model with a dynamic %s is not modelled", sim_dyn_kind_name(m->dyn_kind));
        return 0;
    }
    dyn->data_input = m->n_inputs;
    sim_io *d = &m->inputs[m->n_inputs++];   /* the slot the gear models' input would take */
    d->tensor = UINT32_MAX;
    snprintf(d->name, sizeof d->name, "%s", ACL_DYNAMIC_AIPP_NAME);
    d->format = ACL_FORMAT_ND;
    d->dtype = ACL_UINT8;
    d->rank = 1;
    d->dims[0] = (int64_t)(SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * (uint64_t)dyn->n);
    d->max_bytes = d->size = (uint64_t)d->dims[0];
    return 1;
}

int sim_format_read_aipp(sim_model_info *m, const unsigned char *b, size_t size, char *why, size_t n)
{
    uint64_t off = rd64(b + 192);
    uint32_t count = rd32(b + 200);
    if (rd32(b + 204) != 0) {
        snprintf(why, n, "reserved header bytes 204..207 must be 0");
        return 0;
    }
    if (count < 1 || count > m->n_file_inputs) {
        snprintf(why, n, "AIPP record count %u at byte 200 is outside 1..%u (the inputs)", count, m->n_file_inputs);
        return 0;
    }
    if (off > size || (uint64_t)count * SIM_AIPP_RECORD > size - off) {
        snprintf(why, n, "AIPP table (offset %" PRIu64 ", %u records) lies outside the %zu-byte model", off, count,
                 size);
        return 0;
    }
    m->aipp = calloc(count, sizeof *m->aipp);
    if (!m->aipp) {
        snprintf(why, n, "out of host memory reading the AIPP table");
        return 0;
    }
    m->n_aipp = count;
    for (uint32_t k = 0; k < count; k++) {
        sim_aipp *a = &m->aipp[k];
        char rule[384];
        int ok = read_record(b + off + (uint64_t)k * SIM_AIPP_RECORD, a, rule, sizeof rule);
        if (ok && a->input >= m->n_file_inputs) {
            snprintf(rule, sizeof rule, "input %u does not exist (%u inputs)", a->input, m->n_file_inputs);
            ok = 0;
        }
        if (!ok || !fit_tensor(m, a, rule, sizeof rule)) {
            snprintf(why, n, "AIPP record %u (byte %" PRIu64 "): %s", k, off + (uint64_t)k * SIM_AIPP_RECORD, rule);
            return 0;
        }
        if (m->inputs[a->input].aipp) {
            snprintf(why, n, "AIPP record %u: input %u '%s' has a record already", k, a->input,
                     m->inputs[a->input].name);
            return 0;
        }
        describe_image(&m->inputs[a->input], a);
    }
    return add_data_input(m, why, n);
}

void sim_aipp_model_io(const sim_model_info *m, const sim_io *io, sim_io *out)
{
    *out = *io;
    if (!io->aipp)
        return;
    const sim_tensor *t = &m->tensors[io->tensor];
    out->dtype = t->dtype;
    out->rank = t->rank;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->max_bytes = t->max_bytes;
    out->size = t->max_bytes;
    out->aipp = NULL;
}
