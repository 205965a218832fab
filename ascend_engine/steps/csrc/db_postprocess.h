/*
 * DB text-detection post-processing as a native host step (docs/executor.md,
 * "DB text boxes"): a detector's probability map in, rotated text boxes and
 * their scores out.
 *
 * The step's inputs (the ae_host_fn contract of executor.h):
 *   inputs[0]  the map: one row of map_height x map_width float32 values;
 *   inputs[1]  (when has_picture) one row of 4 float32 values: the picture's
 *              height and width, and the factors from the picture to the map
 *              (ratio_h, ratio_w): a map point (x, y) is the picture point
 *              (x / ratio_w, y / ratio_h), clamped to [0, width] x [0, height].
 * Its outputs (rows "any", up to max_candidates):
 *   outputs[0] rows of 8 float32: the corners (x, y) top-left, top-right,
 *              bottom-right, bottom-left, in picture pixels;
 *   outputs[1] rows of 1 float32: the box's score.
 */
#ifndef AE_DB_POSTPROCESS_H
#define AE_DB_POSTPROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "ascend_engine/executor.h"

#define AE_DB_NAME_MAX 128

/* The step's parameters: its context (ctx), owned by the caller. */
typedef struct ae_db_params {
    int64_t map_height;        /* the map's size: a row of inputs[0] is height x width float32 */
    int64_t map_width;
    double thresh;             /* a pixel is text when its probability is above thresh */
    double box_thresh;         /* a box is kept when its score is at least box_thresh */
    double unclip_ratio;       /* the box grows by area * unclip_ratio / perimeter on each side */
    double min_size;           /* shortest side kept: min_size before, min_size + 2 after growing */
    int64_t max_candidates;    /* regions looked at, in raster order of their first pixel */
    int32_t has_picture;       /* inputs[1] gives the picture's size and the map's scale */
    char name[AE_DB_NAME_MAX]; /* the step's name, for its messages */
} ae_db_params;

/* The boxes of one map: up to max_out of them into boxes (8 floats each) and
 * scores; picture = {height, width, ratio_h, ratio_w} or NULL (the map's own
 * size, ratio 1).  Returns 0 and sets *count, or nonzero with a message. */
int ae_db_boxes(const ae_db_params *params, const float *map, const float *picture, float *boxes,
                float *scores, uint64_t max_out, uint64_t *count, char *message, size_t message_size);

/* The native host step (ae_host_fn): ctx is an ae_db_params. */
int ae_db_postprocess(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                      ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                      size_t message_size);

/* Greedy CTC over one line: per column the best class (the first on a tie),
 * repeats merged, blanks dropped; the classes into out (at most max_out, the
 * rest -1 up to max_out).  probs holds columns x classes float32.  Returns the
 * count, or -1 with a message (a NaN, more characters than max_out). */
int64_t ae_ctc_greedy_line(const float *probs, int64_t columns, int64_t classes, int64_t blank, int32_t *out,
                           int64_t max_out, char *message, size_t message_size);

#endif
