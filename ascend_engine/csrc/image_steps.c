/*
 * image_steps.c -- image nodes (AE_NODE_IMAGE): JPEG decode, resize and
 * crop-resize on DVPP, each node on its own stream and channel, chained to
 * the rest of the request by events like every node (docs/executor.md,
 * "Image nodes").
 *
 * Everything DVPP needs is made at compile: one channel and one resize
 * configuration per node; per slot and node the picture descriptions, and
 * for a crop_resize its batches (one source picture, max_boxes outputs) and
 * max_boxes regions.  A request only sets values on them.
 *
 * Sizes must be known when the work is enqueued, before the device decoded
 * anything: at submission the JPEG's header is read on the host
 * (acldvppJpegGetImageInfoV2, as CANN's samples do), which gives the decoded
 * layout (docs/simulator.md, "DVPP": width stride aligned to 128 on Ascend
 * 310, 64 elsewhere, height stride to 16) and lets a request whose JPEG is
 * unreadable, progressive, arithmetic-coded, too large or cut short fail at
 * submission, alone, naming the node.  Boxes are read from their host step's
 * staging when the step's worker enqueues the crop; boxes a model computes
 * reach that staging through ae_rows_to_boxes, a native host step the
 * planner inserts before the crop.
 */
#include "executor_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The DVPP limits are include/ascend_engine/dvpp_limits.h's (through executor.h): the planner
 * reads the same table. */

typedef struct image_pic {
    uint32_t w, h, ws, hs;        /* size and strides of an NV12 picture */
} image_pic;

struct image_slot {
    acldvppPicDesc *in, *out;           /* resize: both; decode: out */
    acldvppBatchPicDesc *src, *dst;     /* crop_resize: 1 source picture, max_boxes outputs */
    acldvppRoiConfig **rois;            /* crop_resize: max_boxes */
    uint32_t roi_nums[1];
    image_pic pic;                      /* what the node wrote for the slot's request */
};

struct image_engine {
    const ae_dvpp_api *d;
    acldvppChannelDesc **channels;      /* per node (NULL but for image nodes) */
    int *channel_made;                  /* acldvppCreateChannel succeeded */
    acldvppResizeConfig **resize;       /* per node */
    int *source;                        /* per image node: the image node whose picture it reads */
    int *input_of;                      /* per decode node: its pipeline input */
    int *boxes_step, *boxes_out;        /* per crop_resize: the host step and output holding its boxes */
    image_pic *pending;                 /* per decode node: the request being submitted */
    uint32_t jpegd_align;
};

static uint32_t align_up(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

static uint32_t nv12_bytes(uint32_t ws, uint32_t hs)
{
    return ws * hs * 3 / 2;
}

#define DVPP_CALL(e, err, node, call, ...)                                          \
    do {                                                                           \
        aclError rc_ = (e)->img->d->call(__VA_ARGS__);                             \
        if (rc_ != ACL_SUCCESS)                                                    \
            return aex_fail((e), (err), rc_, #call, (node), "%s failed", #call);   \
    } while (0)

/* Set a picture description to an NV12 picture at data. */
static int set_pic(ae_engine *e, acldvppPicDesc *pd, void *data, uint32_t size, image_pic pic, const char *node,
                   ae_error *err)
{
    DVPP_CALL(e, err, node, acldvppSetPicDescData, pd, data);
    DVPP_CALL(e, err, node, acldvppSetPicDescSize, pd, size);
    DVPP_CALL(e, err, node, acldvppSetPicDescFormat, pd, PIXEL_FORMAT_YUV_SEMIPLANAR_420);
    DVPP_CALL(e, err, node, acldvppSetPicDescWidth, pd, pic.w);
    DVPP_CALL(e, err, node, acldvppSetPicDescHeight, pd, pic.h);
    DVPP_CALL(e, err, node, acldvppSetPicDescWidthStride, pd, pic.ws);
    DVPP_CALL(e, err, node, acldvppSetPicDescHeightStride, pd, pic.hs);
    return 0;
}

static image_pic fixed_pic(const ae_node_image *im)
{
    return (image_pic){im->width, im->height, im->width, im->height};
}

/* The producer of tensor t among the nodes before n, or -1. */
static int producer_of(const ae_engine *e, int t, int n)
{
    for (int m = 0; m < n; m++)
        for (int o = 0; o < e->nodes[m].n_outputs; o++)
            if (e->nodes[m].outputs[o] == t)
                return m;
    return -1;
}

static int make_slot_objects(ae_engine *e, slot *sl, int n, ae_error *err)
{
    const ae_node_plan *np = &e->nodes[n];
    const ae_dvpp_api *d = e->img->d;
    struct image_slot *is = &sl->images[n];
    int t_out = np->outputs[0];
    const ae_tensor_plan *out = &e->tensors[t_out];
    char *out_addr = aex_tensor_addr(e, sl, t_out);
    image_pic pic = fixed_pic(&np->image);
    if (np->image.op != AE_IMAGE_CROP_RESIZE) {
        is->out = d->acldvppCreatePicDesc();
        if (np->image.op == AE_IMAGE_RESIZE)
            is->in = d->acldvppCreatePicDesc();
        if (!is->out || (np->image.op == AE_IMAGE_RESIZE && !is->in))
            return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "acldvppCreatePicDesc", np->name,
                            "could not create a picture description");
        if (np->image.op == AE_IMAGE_RESIZE)
            return set_pic(e, is->out, out_addr, nv12_bytes(pic.ws, pic.hs), pic, np->name, err);
        return 0;   /* a decode's output is set per request, from its JPEG's size */
    }
    uint32_t k = np->image.max_boxes;
    is->src = d->acldvppCreateBatchPicDesc(1);
    is->dst = d->acldvppCreateBatchPicDesc(k);
    is->rois = aex_calloc(k, sizeof(acldvppRoiConfig *));
    if (!is->src || !is->dst || !is->rois)
        return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "acldvppCreateBatchPicDesc", np->name,
                        "could not create the batches of %u boxes", k);
    for (uint32_t i = 0; i < k; i++) {
        is->rois[i] = d->acldvppCreateRoiConfig(0, AE_DVPP_VPC_REGION_MIN_W - 1, 0,
                                                AE_DVPP_VPC_REGION_MIN_H - 1);
        if (!is->rois[i])
            return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "acldvppCreateRoiConfig", np->name,
                            "could not create region %u", i);
        acldvppPicDesc *pd = d->acldvppGetPicDesc(is->dst, i);
        if (!pd)
            return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "acldvppGetPicDesc", np->name, "no output picture %u", i);
        if (set_pic(e, pd, out_addr + (size_t)i * out->row_bytes, nv12_bytes(pic.ws, pic.hs), pic, np->name, err))
            return -1;
    }
    return 0;
}

int aex_images_create(ae_engine *e, ae_error *err)
{
    const ae_plan *p = &e->plan;
    int any = 0;
    for (int n = 0; n < p->n_nodes; n++)
        any |= e->nodes[n].kind == AE_NODE_IMAGE;
    if (!any)
        return 0;
    struct image_engine *im = e->img = aex_calloc(1, sizeof *im);
    if (!im)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    size_t nn = (size_t)p->n_nodes;
    im->d = p->dvpp;
    im->channels = aex_calloc(nn, sizeof *im->channels);
    im->channel_made = aex_calloc(nn, sizeof(int));
    im->resize = aex_calloc(nn, sizeof *im->resize);
    im->source = aex_calloc(nn, sizeof(int));
    im->input_of = aex_calloc(nn, sizeof(int));
    im->boxes_step = aex_calloc(nn, sizeof(int));
    im->boxes_out = aex_calloc(nn, sizeof(int));
    im->pending = aex_calloc(nn, sizeof(image_pic));
    if (!im->channels || !im->channel_made || !im->resize || !im->source || !im->input_of || !im->boxes_step ||
        !im->boxes_out || !im->pending)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    const char *soc = e->acl->aclrtGetSocName ? e->acl->aclrtGetSocName() : NULL;
    im->jpegd_align = soc && strstr(soc, "310") && !strstr(soc, "310P") ? 128u : 64u;
    for (int n = 0; n < p->n_nodes; n++) {
        const ae_node_plan *np = &e->nodes[n];
        im->source[n] = im->input_of[n] = im->boxes_step[n] = -1;
        if (np->kind != AE_NODE_IMAGE)
            continue;
        if (np->image.op == AE_IMAGE_DECODE) {
            for (int i = 0; i < p->n_inputs; i++)
                if (e->input_tensors[i] == np->inputs[0])
                    im->input_of[n] = i;
        } else {
            im->source[n] = producer_of(e, np->inputs[0], n);
        }
        if (np->image.op == AE_IMAGE_CROP_RESIZE) {
            int step = producer_of(e, np->inputs[1], n);
            im->boxes_step[n] = step;
            for (int o = 0; step >= 0 && o < e->nodes[step].n_outputs; o++)
                if (e->nodes[step].outputs[o] == np->inputs[1])
                    im->boxes_out[n] = o;
        }
        if ((np->image.op == AE_IMAGE_DECODE && im->input_of[n] < 0) ||
            (np->image.op != AE_IMAGE_DECODE &&
             (im->source[n] < 0 || e->nodes[im->source[n]].kind != AE_NODE_IMAGE)) ||
            (np->image.op == AE_IMAGE_CROP_RESIZE &&
             (im->boxes_step[n] < 0 || e->runner_of[im->boxes_step[n]] < 0)))
            return aex_fail(e, err, 0, "ae_engine_create", np->name,
                            "image node '%s' must read a pipeline input (decode) or an image node's picture, "
                            "and a crop_resize its boxes from a host step", np->name);
        im->channels[n] = im->d->acldvppCreateChannelDesc();
        im->resize[n] = im->d->acldvppCreateResizeConfig();
        if (!im->channels[n] || !im->resize[n])
            return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "acldvppCreateChannelDesc", np->name,
                            "could not create a channel description or resize configuration");
        uint32_t mode = np->image.op == AE_IMAGE_DECODE ? DVPP_CHNMODE_JPEGD : DVPP_CHNMODE_VPC;
        DVPP_CALL(e, err, np->name, acldvppSetChannelDescMode, im->channels[n], mode);
        DVPP_CALL(e, err, np->name, acldvppCreateChannel, im->channels[n]);
        im->channel_made[n] = 1;
        DVPP_CALL(e, err, np->name, acldvppSetResizeConfigInterpolation, im->resize[n], np->image.interpolation);
    }
    for (int s = 0; s < p->depth; s++) {
        slot *sl = &e->slots[s];
        sl->images = aex_calloc(nn, sizeof(struct image_slot));
        if (!sl->images)
            return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
        for (int n = 0; n < p->n_nodes; n++)
            if (e->nodes[n].kind == AE_NODE_IMAGE && make_slot_objects(e, sl, n, err))
                return -1;
    }
    return 0;
}

/* The coding of a JPEG that JPEGD takes: baseline or extended Huffman
 * (SOF0, SOF1), whole (ending with EOI).  0, or -1 with why. */
static int check_coding(const uint8_t *b, size_t size, char *why, size_t why_size)
{
    size_t end = size;
    while (end > 2 && b[end - 1] == 0)   /* zero bytes after the image are no part of it */
        end--;
    if (end < 4 || b[end - 2] != 0xFF || b[end - 1] != 0xD9) {
        snprintf(why, why_size, "it does not end with the JPEG end marker: truncated or not a whole JPEG");
        return -1;
    }
    for (size_t at = 2; at + 4 <= end && b[at] == 0xFF;) {
        uint8_t m = b[at + 1];
        if (m == 0xFF) {   /* fill byte */
            at++;
            continue;
        }
        if (m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE) {
            snprintf(why, why_size, "it is progressive, which JPEGD does not decode");
            return -1;
        }
        if (m >= 0xC9 && m <= 0xCF && m != 0xCC) {
            snprintf(why, why_size, "it is arithmetic-coded, which JPEGD does not decode");
            return -1;
        }
        if (m == 0xC0 || m == 0xC1 || m == 0xDA)
            return 0;   /* a Huffman frame, or the scan: the header is over */
        at += 2 + ((size_t)b[at + 2] << 8 | b[at + 3]);
    }
    return 0;
}

/* A picture of w x h scaled to out_w x out_h within the VPC's ratios. */
static int scale_ok(uint32_t w, uint32_t h, uint32_t out_w, uint32_t out_h)
{
    return (uint64_t)out_w <= (uint64_t)w * AE_DVPP_VPC_MAX_UP &&
           (uint64_t)out_h <= (uint64_t)h * AE_DVPP_VPC_MAX_UP &&
           (uint64_t)w <= (uint64_t)out_w * AE_DVPP_VPC_MAX_DOWN &&
           (uint64_t)h <= (uint64_t)out_h * AE_DVPP_VPC_MAX_DOWN;
}

int aex_images_check(ae_engine *e, const void *const *inputs, const ae_request_shape *shape, ae_error *err)
{
    struct image_engine *im = e->img;
    if (!im)
        return 0;
    char why[256];
    for (int n = 0; n < e->plan.n_nodes; n++) {
        const ae_node_plan *np = &e->nodes[n];
        if (np->kind != AE_NODE_IMAGE)
            continue;
        if (np->image.op != AE_IMAGE_DECODE) {
            int src = im->source[n];
            if (e->nodes[src].image.op != AE_IMAGE_DECODE)
                continue;   /* a fixed size, checked by the planner */
            image_pic in = im->pending[src];
            if (np->image.op == AE_IMAGE_RESIZE && !scale_ok(in.w, in.h, np->image.width, np->image.height)) {
                aex_fail(e, err, 0, "acldvppVpcResizeAsync", np->name,
                         "image node '%s': the request's %ux%u picture cannot be resized to %ux%u (the VPC "
                         "scales each side from 1/%u to %u times)", np->name, in.w, in.h, np->image.width,
                         np->image.height, AE_DVPP_VPC_MAX_DOWN, AE_DVPP_VPC_MAX_UP);
                goto refused;
            }
            continue;
        }
        int t = np->inputs[0];
        const uint8_t *data = inputs[im->input_of[n]];
        size_t size = shape ? shape->row_bytes[t] : e->tensors[t].row_bytes;
        uint32_t w = 0, h = 0;
        int32_t components = 0;
        acldvppJpegFormat format = ACL_JPEG_CSS_UNKNOWN;
        aclError rc = im->d->acldvppJpegGetImageInfoV2(data, (uint32_t)size, &w, &h, &components, &format);
        if (rc != ACL_SUCCESS) {
            /* the request's input, not the device, is at fault: refused like every other bad
             * JPEG below (an EngineError), the DVPP code in the message */
            aex_fail(e, err, 0, "acldvppJpegGetImageInfoV2", np->name,
                     "image node '%s': the request's %zu bytes are not a JPEG it can read "
                     "(acldvppJpegGetImageInfoV2 returned %d)", np->name, size, (int)rc);
            goto refused;
        }
        if (check_coding(data, size, why, sizeof why)) {
            aex_fail(e, err, 0, "acldvppJpegDecodeAsync", np->name, "image node '%s': the request's JPEG: %s",
                     np->name, why);
            goto refused;
        }
        if (format == ACL_JPEG_CSS_411 || format == ACL_JPEG_CSS_UNKNOWN) {
            aex_fail(e, err, 0, "acldvppJpegDecodeAsync", np->name,
                     "image node '%s': the request's JPEG has a chroma subsampling JPEGD does not decode "
                     "(4:4:4, 4:2:2, 4:2:0, 4:0:0 and 4:4:0 only)", np->name);
            goto refused;
        }
        if (w < AE_DVPP_JPEGD_MIN_SIDE || h < AE_DVPP_JPEGD_MIN_SIDE || w > np->image.width ||
            h > np->image.height) {
            aex_fail(e, err, 0, "acldvppJpegDecodeAsync", np->name,
                     "image node '%s': the request's JPEG is %ux%u; this node decodes %ux%u to %ux%u", np->name,
                     w, h, AE_DVPP_JPEGD_MIN_SIDE, AE_DVPP_JPEGD_MIN_SIDE, np->image.width, np->image.height);
            goto refused;
        }
        image_pic pic = {w & ~1u, h & ~1u, align_up(w, im->jpegd_align), align_up(h, AE_DVPP_JPEGD_HEIGHT_ALIGN)};
        if ((size_t)nv12_bytes(pic.ws, pic.hs) > e->tensors[np->outputs[0]].capacity) {
            aex_fail(e, err, 0, "acldvppJpegDecodeAsync", np->name,
                     "image node '%s': the %ux%u JPEG decodes to %u bytes, more than the %zu planned", np->name,
                     w, h, nv12_bytes(pic.ws, pic.hs), e->tensors[np->outputs[0]].capacity);
            goto refused;
        }
        im->pending[n] = pic;
    }
    return 0;
refused:
    if (err)
        err->request = e->next_request;
    return -1;
}

int aex_images_reads_input(const ae_engine *e, int input)
{
    for (int n = 0; n < e->plan.n_nodes; n++)
        if (e->img->input_of[n] == input)
            return 1;
    return 0;
}

int aex_images_decode_failed(const ae_engine *e, const slot *sl, int n)
{
    const ae_node_plan *np = &e->nodes[n];
    if (!e->img || np->kind != AE_NODE_IMAGE || np->image.op != AE_IMAGE_DECODE || !sl->images[n].out)
        return 0;
    return e->img->d->acldvppGetPicDescRetCode(sl->images[n].out) != 0;
}

void aex_images_take(ae_engine *e, slot *sl)
{
    for (int n = 0; n < e->plan.n_nodes; n++)
        if (e->nodes[n].kind == AE_NODE_IMAGE && e->nodes[n].image.op == AE_IMAGE_DECODE)
            sl->images[n].pic = e->img->pending[n];
}

/* One side of a box in a picture of `side` pixels (even): [lo, hi) from the
 * boxes, to the VPC's inclusive bounds (first even, last odd), at least
 * `least` pixels long (even) and at most `most`, inside the picture. */
static void box_side(double lo, double hi, uint32_t side, uint32_t least, uint32_t most, uint32_t *first,
                     uint32_t *last)
{
    if (!(lo >= 0))   /* NaN too */
        lo = 0;
    if (!(hi <= side))
        hi = side;
    uint32_t a = (uint32_t)floor(lo < side ? lo : side) & ~1u;
    uint32_t b = hi > a ? (uint32_t)ceil(hi) : a;
    b = (b + 1) & ~1u;
    least = least > side ? side : least;
    if (b - a < least)
        b = a + least;
    if (b - a > most)
        b = a + most;
    if (b > side) {
        a -= b - side;
        b = side;
    }
    *first = a;
    *last = b - 1;
}

static int enqueue_crops(ae_engine *e, slot *sl, int n, aclrtStream st, ae_error *err)
{
    struct image_engine *im = e->img;
    const ae_node_plan *np = &e->nodes[n];
    struct image_slot *is = &sl->images[n];
    int t_boxes = np->inputs[1];
    uint64_t k = aex_rows(sl, e->tensors[t_boxes].domain);
    if (k == 0)
        return 0;
    if (k > np->image.max_boxes)
        return aex_fail(e, err, 0, "acldvppVpcBatchCropResizeAsync", np->name,
                        "image node '%s': %llu boxes, more than its %u", np->name, (unsigned long long)k,
                        np->image.max_boxes);
    step_runner *r = &e->runners[e->runner_of[im->boxes_step[n]]];
    const char *boxes = sl->host_steps + r->out_off[im->boxes_out[n]];
    image_pic src = sl->images[im->source[n]].pic;
    uint32_t w = np->image.width, h = np->image.height;
    uint32_t least_w = (w + AE_DVPP_VPC_MAX_UP - 1) / AE_DVPP_VPC_MAX_UP;
    uint32_t least_h = (h + AE_DVPP_VPC_MAX_UP - 1) / AE_DVPP_VPC_MAX_UP;
    least_w = least_w < AE_DVPP_VPC_REGION_MIN_W ? AE_DVPP_VPC_REGION_MIN_W : least_w;
    least_h = least_h < AE_DVPP_VPC_REGION_MIN_H ? AE_DVPP_VPC_REGION_MIN_H : least_h;
    for (uint64_t i = 0; i < k; i++) {
        double v[4];
        for (int c = 0; c < 4; c++) {
            if (np->image.boxes_float) {
                float f;
                memcpy(&f, boxes + (i * 4 + (uint64_t)c) * 4, 4);
                v[c] = (double)f * (c % 2 ? src.h : src.w);
            } else {
                int32_t x;
                memcpy(&x, boxes + (i * 4 + (uint64_t)c) * 4, 4);
                v[c] = x;
            }
        }
        uint32_t left, right, top, bottom;
        box_side(v[0], v[2], src.w, least_w, w * AE_DVPP_VPC_MAX_DOWN, &left, &right);
        box_side(v[1], v[3], src.h, least_h, h * AE_DVPP_VPC_MAX_DOWN, &top, &bottom);
        DVPP_CALL(e, err, np->name, acldvppSetRoiConfig, is->rois[i], left, right, top, bottom);
    }
    acldvppPicDesc *in = im->d->acldvppGetPicDesc(is->src, 0);
    const ae_tensor_plan *tp = &e->tensors[np->inputs[0]];
    if (!in || set_pic(e, in, aex_tensor_addr(e, sl, np->inputs[0]), (uint32_t)tp->capacity, src, np->name, err))
        return in ? -1 : aex_fail(e, err, 0, "acldvppGetPicDesc", np->name, "no source picture");
    is->roi_nums[0] = (uint32_t)k;
    DVPP_CALL(e, err, np->name, acldvppVpcBatchCropResizeAsync, im->channels[n], is->src, is->roi_nums, 1, is->dst,
              is->rois, im->resize[n], st);
    return 0;
}

#define BOX_BYTES 16u   /* x0, y0, x1, y1: four 4-byte values */

/* The native step before a crop_resize fed by a model's boxes (executor.h):
 * no GIL, no Python, one copy of rows * K boxes. */
int ae_rows_to_boxes(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                     ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                     size_t message_size)
{
    const char *node = ctx ? (const char *)ctx : "crop_resize";
    (void)request;
    if (n_inputs != 1 || n_outputs != 1 || outputs[0].row_bytes != BOX_BYTES || inputs[0].row_bytes == 0 ||
        inputs[0].row_bytes % BOX_BYTES) {
        snprintf(message, message_size, "host step '%s boxes': takes one tensor of rows of boxes (4 values "
                 "of 4 bytes each) and returns one of boxes", node);
        return -1;
    }
    uint64_t per_row = inputs[0].row_bytes / BOX_BYTES;
    uint64_t boxes = inputs[0].rows * per_row;
    if (boxes > outputs[0].rows) {
        snprintf(message, message_size, "host step '%s boxes': the request has %llu boxes (%llu row(s) of %llu), "
                 "more than crop_resize '%s' takes (max_boxes=%llu)", node, (unsigned long long)boxes,
                 (unsigned long long)inputs[0].rows, (unsigned long long)per_row, node,
                 (unsigned long long)outputs[0].rows);
        return -1;
    }
    if (boxes)
        memcpy(outputs[0].data, inputs[0].data, (size_t)boxes * BOX_BYTES);
    *rows_out = boxes;
    return 0;
}

int aex_images_enqueue(ae_engine *e, slot *sl, int n, int skip, ae_error *err)
{
    struct image_engine *im = e->img;
    const ae_node_plan *np = &e->nodes[n];
    struct image_slot *is = &sl->images[n];
    aclrtStream st = e->streams[np->stream];
    if (aex_begin_node(e, sl, n, st, NULL, err))
        return -1;
    if (e->plan.profile)
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_start[n], st);
    if (!skip) {
        int t_in = np->inputs[0], t_out = np->outputs[0];
        char *in_addr = aex_tensor_addr(e, sl, t_in), *out_addr = aex_tensor_addr(e, sl, t_out);
        if (np->image.op == AE_IMAGE_DECODE) {
            image_pic pic = is->pic;
            if (set_pic(e, is->out, out_addr, (uint32_t)e->tensors[t_out].capacity, pic, np->name, err))
                return -1;
            /* cleared: a nonzero code after the task is this request's JPEG's (complete.c) */
            DVPP_CALL(e, err, np->name, acldvppSetPicDescRetCode, is->out, 0);
            DVPP_CALL(e, err, np->name, acldvppJpegDecodeAsync, im->channels[n], in_addr,
                      (uint32_t)aex_row_bytes(e, sl, t_in), is->out, st);
        } else if (np->image.op == AE_IMAGE_RESIZE) {
            image_pic src = sl->images[im->source[n]].pic;
            if (set_pic(e, is->in, in_addr, (uint32_t)e->tensors[t_in].capacity, src, np->name, err))
                return -1;
            DVPP_CALL(e, err, np->name, acldvppVpcResizeAsync, im->channels[n], is->in, is->out, im->resize[n], st);
            is->pic = fixed_pic(&np->image);
        } else if (enqueue_crops(e, sl, n, st, err)) {
            return -1;
        }
    }
    ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_done[n], st);
    return 0;
}

int aex_images_release(ae_engine *e, ae_error *err)
{
    struct image_engine *im = e->img;
    if (!im)
        return 0;
    int failed = 0;
#define RELEASE(call, ...)                                                                      \
    do {                                                                                        \
        aclError rc_ = im->d->call(__VA_ARGS__);                                                \
        if (rc_ != ACL_SUCCESS && failed++ == 0 && err)                                         \
            aex_fail(e, err, rc_, #call, NULL, "%s failed while closing the engine", #call);    \
    } while (0)
    for (int s = 0; e->slots && s < e->plan.depth; s++) {
        struct image_slot *images = e->slots[s].images;
        for (int n = 0; images && n < e->plan.n_nodes; n++) {
            struct image_slot *is = &images[n];
            if (is->in)
                RELEASE(acldvppDestroyPicDesc, is->in);
            if (is->out)
                RELEASE(acldvppDestroyPicDesc, is->out);
            for (uint32_t i = 0; is->rois && i < e->nodes[n].image.max_boxes; i++)
                if (is->rois[i])
                    RELEASE(acldvppDestroyRoiConfig, is->rois[i]);
            free(is->rois);
            if (is->src)
                RELEASE(acldvppDestroyBatchPicDesc, is->src);
            if (is->dst)
                RELEASE(acldvppDestroyBatchPicDesc, is->dst);
        }
        free(images);
        e->slots[s].images = NULL;
    }
    for (int n = 0; im->channels && n < e->plan.n_nodes; n++) {
        if (im->channel_made && im->channel_made[n])
            RELEASE(acldvppDestroyChannel, im->channels[n]);
        if (im->channels[n])
            RELEASE(acldvppDestroyChannelDesc, im->channels[n]);
        if (im->resize && im->resize[n])
            RELEASE(acldvppDestroyResizeConfig, im->resize[n]);
    }
#undef RELEASE
    free(im->channels);
    free(im->channel_made);
    free(im->resize);
    free(im->source);
    free(im->input_of);
    free(im->boxes_step);
    free(im->boxes_out);
    free(im->pending);
    free(im);
    e->img = NULL;
    return failed;
}
