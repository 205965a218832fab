/*
 * Native steps between models (docs/executor.md, "Native steps"): each one an
 * ae_host_fn (include/ascend_engine/executor.h) run on a host-step worker
 * without the GIL.  Each step owns a context struct holding its parameters
 * and the name of its node, which every message starts with; the Python side
 * (ascend_engine/steps/) fills it at plan time and keeps it alive with the
 * NativeStep.  A context is read-only while the engine runs: several workers
 * may call one step at once.
 *
 * The layouts here are what ascend_engine/steps/_native.pyx fills.
 */
#ifndef ASCEND_ENGINE_STEPS_H
#define ASCEND_ENGINE_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "ascend_engine/executor.h"

#define AE_STEP_NAME_MAX 128

/* ---- box decoding (decode_boxes.c) ---- */
enum {
    AE_DECODE_XYWH = 0,     /* (cx, cy, w, h) already in pixels */
    AE_DECODE_YOLOX = 1,    /* anchor-free: ((tx + gx) * s, (ty + gy) * s, exp(tw) * s, exp(th) * s) */
    AE_DECODE_LTRB = 2,     /* anchor-free: distances (l, t, r, b) * s from the cell centre (gx + .5) * s */
    AE_DECODE_YOLOV5 = 3,   /* anchor-based, logits: xy = (2 sig(t) - .5 + g) * s, wh = (2 sig(t))^2 * anchor */
    AE_DECODE_SSD = 4       /* priors (cx, cy, w, h): cx = pcx + l0 * v0 * pw, w = pw * exp(l2 * v1) */
};
#define AE_DECODE_MAX_LEVELS 8
#define AE_DECODE_MAX_ANCHORS 16

typedef struct ae_decode_ctx {
    char name[AE_STEP_NAME_MAX];
    int kind;
    uint64_t n;                 /* boxes per row */
    uint64_t channels;          /* values per box in the input (the first 4 are decoded) */
    double width, height;       /* the picture: YOLO grids, SSD's scale, clipping */
    int clip;                   /* clip corners to [0, width] x [0, height] */
    int n_levels;
    int strides[AE_DECODE_MAX_LEVELS];
    int n_anchors;              /* yolov5: anchors per level */
    float anchors[AE_DECODE_MAX_LEVELS][AE_DECODE_MAX_ANCHORS][2];   /* (w, h) pixels */
    float variances[2];         /* ssd */
    const float *priors;        /* ssd: n x (cx, cy, w, h) fractions of the picture */
} ae_decode_ctx;

/* ---- non-maximum suppression (nms.c) ---- */
typedef struct ae_nms_ctx {
    char name[AE_STEP_NAME_MAX];
    uint64_t n;                 /* boxes per row */
    uint64_t classes;           /* scores per box */
    int class_agnostic;         /* 1: one NMS over every box at its best class */
    float iou_threshold;        /* suppress when IoU > iou_threshold */
    float score_threshold;      /* candidates: score > score_threshold */
    uint64_t max_boxes;         /* kept per row (image) at most */
    uint64_t max_images;        /* rows a request may have */
} ae_nms_ctx;

/* ---- top-k, argmax, softmax over the last axis (topk.c) ---- */
typedef struct ae_rowwise_ctx {
    char name[AE_STEP_NAME_MAX];
    uint64_t vectors;           /* vectors per row (product of the middle dimensions) */
    uint64_t length;            /* values per vector (the last dimension) */
    uint64_t k;                 /* top-k: values kept per vector */
} ae_rowwise_ctx;

/* ---- CTC greedy decoding (ctc_greedy.c) ---- */
typedef struct ae_ctc_ctx {
    char name[AE_STEP_NAME_MAX];
    uint64_t steps;             /* time steps per row */
    uint64_t classes;           /* classes per step, blank included */
    int64_t blank;
} ae_ctc_ctx;

/* ---- host crops: resize and affine warp (crop_resize.c) ---- */
enum { AE_SAMPLE_NEAREST = 0, AE_SAMPLE_BILINEAR = 1 };
enum { AE_PIXELS_U8 = 0, AE_PIXELS_F32 = 1 };

typedef struct ae_crop_ctx {
    char name[AE_STEP_NAME_MAX];
    uint64_t height, width, channels;        /* the source picture */
    uint64_t out_height, out_width;
    int pixels;                 /* AE_PIXELS_*: input and output */
    int interpolation;          /* AE_SAMPLE_* (crops; warps are bilinear) */
    int has_index;              /* inputs[2]: the picture (row) of each box, int32 */
    float border;               /* warp: value outside the picture */
} ae_crop_ctx;

int ae_step_decode_boxes(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                         ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                         size_t message_size);
int ae_step_nms(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message, size_t message_size);
int ae_step_topk(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                 ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message, size_t message_size);
int ae_step_softmax(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                    ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                    size_t message_size);
int ae_step_ctc_greedy(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                       ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                       size_t message_size);
int ae_step_crop_resize(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                        ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                        size_t message_size);
int ae_step_warp_affine(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                        ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                        size_t message_size);

/* The one error path: "<step kind> '<node>': <message>", always returning -1. */
int ae_step_fail(char *message, size_t message_size, const char *kind, const char *node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Whether the tensors are as the step was planned: counts and bytes per row. */
int ae_step_check_io(char *message, size_t message_size, const char *kind, const char *node,
                     const ae_host_tensor *inputs, int n_inputs, int want_inputs, const uint64_t *in_bytes,
                     const ae_host_tensor *outputs, int n_outputs, int want_outputs, const uint64_t *out_bytes);

#endif
