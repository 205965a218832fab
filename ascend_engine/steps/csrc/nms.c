/*
 * nms: greedy non-maximum suppression, image by image (docs/executor.md,
 * "Native steps").
 *
 * inputs[0]: rows of n boxes (x0, y0, x1, y1) float32; inputs[1]: rows of
 * n x classes scores float32.  A candidate is a (box, class) whose score is
 * above score_threshold (class-agnostic: each box once, at its best class,
 * the lowest class on a tie).  Candidates are taken by falling score, ties
 * by lower box index, then lower class; one is kept when its IoU with every
 * kept candidate (of its class, unless class-agnostic) is at most
 * iou_threshold, until max_boxes are kept.  IoU is computed in float32 as
 * inter / ((area_a + area_b) - inter), 0 when that union is 0.
 *
 * outputs, one row per kept candidate, image by image: boxes (4 float32),
 * scores (float32), classes (int32), images (int32: the request row), and
 * indices (int32: the box index within its row).  A NaN score, a non-finite
 * or inverted candidate box, or a request of more rows than max_images
 * fails the request.
 */
#include "steps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KIND "nms"

typedef struct candidate {
    float score;
    uint32_t box;
    uint32_t cls;
} candidate;

static int by_score(const void *pa, const void *pb)
{
    const candidate *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->box != b->box)
        return a->box < b->box ? -1 : 1;
    return (a->cls > b->cls) - (a->cls < b->cls);
}

/* A binary heap of candidates, the first by by_score on top: the NMS takes candidates best
 * first and usually stops long before the last (max_boxes kept), so a heap (linear to build,
 * a logarithmic step per candidate taken) costs less than sorting them all. */
static void sift_down(candidate *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, top = i;
        if (l < n && by_score(&h[l], &h[top]) < 0)
            top = l;
        if (r < n && by_score(&h[r], &h[top]) < 0)
            top = r;
        if (top == i)
            return;
        candidate t = h[i];
        h[i] = h[top];
        h[top] = t;
        i = top;
    }
}

static void heapify(candidate *h, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(h, n, i);
}

/* The best candidate, taken off the heap of n. */
static candidate pop(candidate *h, size_t n)
{
    candidate top = h[0];
    h[0] = h[n - 1];
    sift_down(h, n - 1, 0);
    return top;
}

static float iou(const float *a, float area_a, const float *b, float area_b)
{
    float w = fminf(a[2], b[2]) - fmaxf(a[0], b[0]);
    float h = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
    if (w <= 0.0f || h <= 0.0f)
        return 0.0f;
    float inter = w * h;
    float uni = (area_a + area_b) - inter;
    return uni > 0.0f ? inter / uni : 0.0f;
}

/* The candidates of one row into cand (room for n * classes); returns their count, or -1 on a bad value. */
static int64_t gather(const ae_nms_ctx *c, const float *boxes, const float *scores, uint64_t row, candidate *cand,
                      char *message, size_t message_size)
{
    uint64_t count = 0;
    for (uint64_t i = 0; i < c->n; i++) {
        const float *s = scores + i * c->classes;
        uint64_t first = count;
        /* most boxes have no score above the threshold: one branch-free pass finds them (and any NaN) */
        int nan = 0, hit = 0;
        for (uint64_t k = 0; k < c->classes; k++) {
            nan |= s[k] != s[k];
            hit |= s[k] > c->score_threshold;
        }
        if (!nan && !hit)
            continue;
        for (uint64_t k = 0; k < c->classes; k++) {
            if (isnan(s[k])) {
                ae_step_fail(message, message_size, KIND, c->name, "row %llu box %llu class %llu has a NaN score",
                             (unsigned long long)row, (unsigned long long)i, (unsigned long long)k);
                return -1;
            }
            if (c->class_agnostic) {
                if (s[k] > c->score_threshold && (count == first || s[k] > cand[first].score)) {
                    cand[first] = (candidate){s[k], (uint32_t)i, (uint32_t)k};
                    count = first + 1;
                }
            } else if (s[k] > c->score_threshold) {
                cand[count++] = (candidate){s[k], (uint32_t)i, (uint32_t)k};
            }
        }
        if (count > first) {
            const float *b = boxes + 4 * i;
            if (!isfinite(b[0]) || !isfinite(b[1]) || !isfinite(b[2]) || !isfinite(b[3]) || b[2] < b[0] ||
                b[3] < b[1]) {
                ae_step_fail(message, message_size, KIND, c->name,
                             "row %llu box %llu is not a box (x0, y0, x1, y1) with x0 <= x1 and y0 <= y1: "
                             "(%g, %g, %g, %g)", (unsigned long long)row, (unsigned long long)i, b[0], b[1], b[2],
                             b[3]);
                return -1;
            }
        }
    }
    return (int64_t)count;
}

int ae_step_nms(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message, size_t message_size)
{
    const ae_nms_ctx *c = ctx;
    (void)request;
    if (!c)
        return ae_step_fail(message, message_size, KIND, "?", "has no context");
    uint64_t in_bytes[2] = {c->n * 16, c->n * c->classes * 4};
    uint64_t out_bytes[5] = {16, 4, 4, 4, 4};
    if (!c->n || !c->classes || !c->max_boxes || c->n > UINT32_MAX || c->classes > UINT32_MAX)
        return ae_step_fail(message, message_size, KIND, c->name, "its context is incomplete");
    if (ae_step_check_io(message, message_size, KIND, c->name, inputs, n_inputs, 2, in_bytes, outputs, n_outputs,
                         5, out_bytes))
        return -1;
    uint64_t rows = inputs[0].rows;
    if (inputs[1].rows != rows)
        return ae_step_fail(message, message_size, KIND, c->name, "%llu rows of boxes but %llu of scores",
                            (unsigned long long)rows, (unsigned long long)inputs[1].rows);
    if (rows > c->max_images)
        return ae_step_fail(message, message_size, KIND, c->name,
                            "the request has %llu images, more than max_images=%llu",
                            (unsigned long long)rows, (unsigned long long)c->max_images);
    for (int o = 0; o < 5; o++)
        if (outputs[o].rows < rows * c->max_boxes)
            return ae_step_fail(message, message_size, KIND, c->name,
                                "output %d has room for %llu rows, %llu images need %llu", o,
                                (unsigned long long)outputs[o].rows, (unsigned long long)rows,
                                (unsigned long long)(rows * c->max_boxes));
    uint64_t per_row = c->class_agnostic ? c->n : c->n * c->classes;
    candidate *cand = malloc((per_row ? per_row : 1) * sizeof *cand);
    float *area = malloc(c->max_boxes * sizeof *area);
    const float **kept = malloc(c->max_boxes * sizeof *kept);
    if (!cand || !area || !kept) {
        free(cand), free(area), free(kept);
        return ae_step_fail(message, message_size, KIND, c->name, "out of host memory");
    }
    float *o_boxes = outputs[0].data, *o_scores = outputs[1].data;
    int32_t *o_classes = outputs[2].data, *o_images = outputs[3].data, *o_index = outputs[4].data;
    uint64_t total = 0;
    int rc = 0;
    for (uint64_t r = 0; r < rows && !rc; r++) {
        const float *boxes = (const float *)inputs[0].data + r * c->n * 4;
        int64_t count = gather(c, boxes, (const float *)inputs[1].data + r * c->n * c->classes, r, cand, message,
                               message_size);
        if (count < 0) {
            rc = -1;
            break;
        }
        heapify(cand, (size_t)count);
        uint64_t n_kept = 0;
        uint32_t *kept_cls = (uint32_t *)o_classes + total;   /* the kept so far, as written */
        for (int64_t left = count; left > 0 && n_kept < c->max_boxes; left--) {
            candidate best = pop(cand, (size_t)left);
            const candidate *cj = &best;
            const float *b = boxes + 4 * cj->box;
            float a = (b[2] - b[0]) * (b[3] - b[1]);
            int suppressed = 0;
            for (uint64_t q = 0; q < n_kept && !suppressed; q++)
                if ((c->class_agnostic || kept_cls[q] == cj->cls) && iou(kept[q], area[q], b, a) > c->iou_threshold)
                    suppressed = 1;
            if (suppressed)
                continue;
            kept[n_kept] = b;
            area[n_kept] = a;
            uint64_t at = total + n_kept;
            memcpy(o_boxes + 4 * at, b, 16);
            o_scores[at] = cj->score;
            o_classes[at] = (int32_t)cj->cls;
            o_images[at] = (int32_t)r;
            o_index[at] = (int32_t)cj->box;
            n_kept++;
        }
        total += n_kept;
    }
    free(cand), free(area), free(kept);
    if (rc)
        return rc;
    *rows_out = total;
    return 0;
}
