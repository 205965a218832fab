/*
 * submit.c -- taking requests: checking rows and shape against the plan,
 * finding the request a free slot, handing it to enqueue.c, and running
 * whole arrays as a sequence of requests (ae_engine_run_batch_timed).
 */
#include "executor_internal.h"

#include <stdio.h>
#include <string.h>

/* Check a request's shape against the plan (every size must fit its buffer,
 * every gear have the values its kind takes); 0 or -1 with err filled. */
static int check_shape(ae_engine *e, uint64_t rows, const ae_request_shape *shape, ae_error *err)
{
    const ae_plan *p = &e->plan;
    if (!e->shaped) {
        if (shape)
            return aex_fail(e, err, 0, "ae_engine_submit_timed", NULL,
                            "the plan has no dynamic-shape nodes: submit without a request shape");
        return 0;
    }
    if (!shape || !shape->row_bytes || !shape->gear_dims || !shape->gear_at || !shape->gear_count)
        return aex_fail(e, err, 0, "ae_engine_submit_timed", NULL,
                        "the plan has dynamic-shape nodes: every request needs its shape (row bytes and gears)");
    char why[AE_MESSAGE_MAX];
    for (int t = 0; t < p->n_tensors; t++) {
        const ae_tensor_plan *tp = &e->tensors[t];
        if (aex_check_row_bytes(e, t, shape->row_bytes[t], why, sizeof why) ||
            (tp->domain == AE_ROWS_REQUEST && shape->row_bytes[t] * rows > tp->capacity))
            return aex_fail(e, err, 0, "ae_engine_submit_timed", NULL,
                            "tensor %d: %llu rows of %zu bytes do not fit its buffer (%zu bytes per row planned, "
                            "%zu bytes)", t, (unsigned long long)rows, shape->row_bytes[t], tp->row_bytes,
                            tp->capacity);
    }
    for (int n = 0; n < p->n_nodes; n++) {
        int count = shape->gear_count[n];
        if (count && shape->gear_at[n] < 0)
            return aex_fail(e, err, 0, "ae_engine_submit_timed", e->nodes[n].name,
                            "node '%s': its gear is at %d", e->nodes[n].name, shape->gear_at[n]);
        if (aex_check_gear(e, n, count ? shape->gear_dims + shape->gear_at[n] : NULL, count, why, sizeof why))
            return aex_fail(e, err, 0, "ae_engine_submit_timed", e->nodes[n].name, "%s", why);
    }
    return 0;
}

int aex_check_row_bytes(const ae_engine *e, int t, size_t row_bytes, char *why, size_t why_size)
{
    const ae_tensor_plan *tp = &e->tensors[t];
    if (row_bytes >= 1 && row_bytes <= tp->row_bytes)
        return 0;
    snprintf(why, why_size, "tensor %d: %zu bytes per row, expected 1 to the %zu planned", t, row_bytes,
             tp->row_bytes);
    return -1;
}

int aex_check_gear(const ae_engine *e, int n, const int64_t *values, int count, char *why, size_t why_size)
{
    const ae_node_plan *np = &e->nodes[n];
    int want_min = np->shape.dyn_kind == AE_DYN_HW ? 2 : np->shape.dyn_kind == AE_DYN_DIMS ? 1 : 0;
    int want_max = np->shape.dyn_kind == AE_DYN_HW ? 2 : np->shape.dyn_kind == AE_DYN_DIMS ? AE_MAX_GEAR_DIMS : 0;
    if (count < want_min || count > want_max) {
        snprintf(why, why_size, "node '%s' takes %d to %d gear values per request, got %d", np->name, want_min,
                 want_max, count);
        return -1;
    }
    for (int k = 0; k < count; k++)
        if (values[k] < 1) {
            snprintf(why, why_size, "node '%s': gear value %d is %lld, expected at least 1", np->name, k,
                     (long long)values[k]);
            return -1;
        }
    return 0;
}

/* Count the host time of enqueueing from t0 on, less the waits inside it
 * (wait_ns was wait0 at t0): each of those counts in wait_ns already. */
static void count_enqueue(ae_engine *e, uint64_t t0, uint64_t wait0)
{
    e->stats.enqueue_ns += aex_now_ns() - t0 - (e->stats.wait_ns - wait0);
}

/* Where a timed run_batch writes one execution's times (both NULL when untimed). */
typedef struct request_times {
    int64_t *enqueued;            /* set for the first execution of a request only */
    int64_t *done;                /* overwritten by each execution: the last one's stays */
} request_times;

static const request_times untimed = {NULL, NULL};

/* One request into the next slot (freeing slots first when it is busy).  The
 * caller has checked the rows and shape, made the engine's context current
 * and recovered a wedged engine: once per call, not once per request. */
static int submit_request(ae_engine *e, const void *const *inputs, uint64_t rows, void *const *outputs,
                          uint64_t *out_rows, const ae_request_shape *shape, request_times times,
                          ae_error *err)
{
    const ae_plan *p = &e->plan;
    int s = (int)(e->next_request % (uint64_t)p->depth);
    slot *sl = &e->slots[s];
    if (sl->busy) {
        int rc = aex_make_room(e, err);
        if (rc)
            return rc;
    }
    if (times.enqueued)
        *times.enqueued = (int64_t)aex_now_ns();   /* after any wait for room: the request goes in now */
    if (shape) {
        /* the slot's own copy: its completion reads the sizes again */
        memcpy(sl->row_bytes, shape->row_bytes, (size_t)p->n_tensors * sizeof(size_t));
        for (int n = 0; n < p->n_nodes; n++) {
            sl->gear_count[n] = shape->gear_count[n];
            if (shape->gear_count[n])
                memcpy(sl->gear_dims + (size_t)n * AE_MAX_GEAR_DIMS, shape->gear_dims + shape->gear_at[n],
                       (size_t)shape->gear_count[n] * sizeof(int64_t));
        }
    }
    if (e->img)
        aex_images_take(e, sl);
    sl->rows_of[0] = rows;
    sl->rows = rows;
    sl->request = e->next_request;
    for (int o = 0; o < p->n_outputs; o++)
        sl->user_out[o] = outputs[o];
    sl->user_rows = out_rows;
    sl->time_done = times.done;
    int failed;
    if (e->n_steps) {
        /* the workers enqueue on the same streams; they also read the slot */
        pthread_mutex_lock(&e->step_lock);
        sl->tail_enqueued = sl->step_failed = sl->step_fatal = sl->step_running = 0;
        sl->step_node = -1;
        failed = aex_enqueue_request(e, sl, e->next_request, inputs, rows, err);
        pthread_mutex_unlock(&e->step_lock);
    } else {
        failed = aex_enqueue_request(e, sl, e->next_request, inputs, rows, err);
    }
    if (failed) {
        /* this request never ran; the ones in flight may have been given
         * part of its work on some stream, so they are cancelled too */
        e->stats.failures++;
        if (err)
            err->request = e->next_request;
        aex_drain(e, 0);
        return -1;
    }
    sl->busy = 1;
    e->next_request++;
    e->in_flight++;
    if (e->in_flight > e->stats.in_flight_high_water)
        e->stats.in_flight_high_water = e->in_flight;
    return 0;
}

/* A request's rows, checked against the plan. */
static int check_rows(ae_engine *e, uint64_t rows, ae_error *err)
{
    if (rows >= 1 && rows <= e->plan.max_batch)
        return 0;
    return aex_fail(e, err, 0, "ae_engine_submit_timed", NULL, "a request carries 1 to %llu rows, got %llu",
                    (unsigned long long)e->plan.max_batch, (unsigned long long)rows);
}

int ae_engine_submit_timed(ae_engine *e, const void *const *inputs, uint64_t rows, void *const *outputs,
                           uint64_t *out_rows, const ae_request_shape *shape, int64_t *times, ae_error *err)
{
    if (check_rows(e, rows, err) || check_shape(e, rows, shape, err) || aex_images_check(e, inputs, shape, err))
        return -1;
    if (aex_make_current(e, err) || aex_recover(e, err))
        return -1;
    uint64_t t0 = aex_now_ns(), wait0 = e->stats.wait_ns;
    request_times at = times ? (request_times){times, times + 1} : untimed;
    int rc = submit_request(e, inputs, rows, outputs, out_rows, shape, at, err);
    if (rc == 0)
        count_enqueue(e, t0, wait0);
    return rc;
}

int ae_engine_run_batch_timed(ae_engine *e, const void *const *inputs, uint64_t total_rows, uint64_t batch,
                              void *const *outputs, int64_t *times, ae_error *err)
{
    const ae_plan *p = &e->plan;
    if (batch < 1)
        return aex_fail(e, err, 0, "ae_engine_run_batch_timed", NULL, "batch must be at least 1, got %llu",
                    (unsigned long long)batch);
    if (e->n_steps)
        return aex_fail(e, err, 0, "ae_engine_run_batch_timed", NULL,
                        "a plan with host steps returns results per request: submit them one by one");
    if (p->n_inputs > AE_MAX_IO || p->n_outputs > AE_MAX_IO)
        return aex_fail(e, err, 0, "ae_engine_run_batch_timed", NULL, "more than %d inputs or outputs", AE_MAX_IO);
    if (total_rows == 0)
        return ae_engine_flush(e, err);
    if (e->shaped)
        return check_shape(e, 1, NULL, err);   /* its message: requests need their shapes */
    /* once per call: the context, recovery, and the clock for the statistics */
    if (aex_make_current(e, err) || aex_recover(e, err))
        return -1;
    uint64_t t0 = aex_now_ns(), wait0 = e->stats.wait_ns;
    /* per-request pointers into the caller's whole arrays */
    const void *in_at[AE_MAX_IO];
    void *out_at[AE_MAX_IO];
    int64_t *time_at = times;   /* request k's pair: times + 2k */
    for (uint64_t row = 0; row < total_rows; time_at = time_at ? time_at + 2 : NULL) {
        /* a request of `batch` rows above the plan's largest batch is split */
        uint64_t end = row + (total_rows - row < batch ? total_rows - row : batch);
        request_times at = time_at ? (request_times){time_at, time_at + 1} : untimed;
        while (row < end) {
            uint64_t rows = end - row < p->max_batch ? end - row : p->max_batch;
            for (int i = 0; i < p->n_inputs; i++)
                in_at[i] = (const char *)inputs[i] + row * e->tensors[p->input_tensors[i]].row_bytes;
            for (int o = 0; o < p->n_outputs; o++)
                out_at[o] = (char *)outputs[o] + row * e->tensors[p->output_tensors[o]].row_bytes;
            int rc = submit_request(e, in_at, rows, out_at, NULL, NULL, at, err);
            if (rc)
                return rc;
            at.enqueued = NULL;
            row += rows;
        }
    }
    count_enqueue(e, t0, wait0);
    return ae_engine_flush(e, err);
}
