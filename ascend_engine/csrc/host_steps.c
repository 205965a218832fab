/*
 * host_steps.c -- host-step nodes (see executor.h): the hand-over from the
 * enqueueing thread to a step's workers and back.
 *
 * Why workers and not aclrtLaunchCallback: a step with rows "any" decides
 * how many rows the models after it run, and so their gears and how many
 * executions they need; that must be known when they are enqueued.  So the
 * enqueue of a request stops at a host step (after the D2H of the step's
 * inputs and an event), a worker waits for the event, calls the function and
 * enqueues the rest of the request itself.  No stream ever waits for host
 * code: the device keeps running other requests meanwhile.
 */
#include "executor_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_SLICE_MS 50   /* how often a waiting worker checks for abandonment */

/* ---- layout and lifetime ------------------------------------------------------ */

int aex_steps_create(ae_engine *e, ae_error *err)
{
    const ae_plan *p = &e->plan;
    e->runner_of = aex_calloc((size_t)p->n_nodes, sizeof(int));
    if (!e->runner_of)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    for (int n = 0; n < p->n_nodes; n++) {
        e->runner_of[n] = -1;
        if (e->nodes[n].kind == AE_NODE_HOST)
            e->runner_of[n] = e->n_steps++;
    }
    if (!e->n_steps)
        return 0;
    e->runners = aex_calloc((size_t)e->n_steps, sizeof(step_runner));
    if (!e->runners)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    for (int n = 0; n < p->n_nodes; n++) {
        if (e->runner_of[n] < 0)
            continue;
        const ae_node_plan *np = &e->nodes[n];
        step_runner *r = &e->runners[e->runner_of[n]];
        r->engine = e;
        r->node = n;
        r->queue = aex_calloc((size_t)p->depth, sizeof(step_item));
        r->threads = aex_calloc((size_t)np->host.workers, sizeof(pthread_t));
        r->in_off = aex_calloc((size_t)np->n_inputs, sizeof(size_t));
        r->out_off = aex_calloc((size_t)np->n_outputs, sizeof(size_t));
        if (!r->queue || !r->threads || !r->in_off || !r->out_off)
            return aex_fail(e, err, 0, "ae_engine_create", np->name, "out of host memory");
        /* staging as large as the device buffers: every row they can hold */
        for (int i = 0; i < np->n_inputs; i++) {
            r->in_off[i] = e->host_step_bytes;
            e->host_step_bytes += aex_align_up(e->tensors[np->inputs[i]].capacity, AE_ALIGN);
        }
        for (int i = 0; i < np->n_outputs; i++) {
            r->out_off[i] = e->host_step_bytes;
            e->host_step_bytes += aex_align_up(e->tensors[np->outputs[i]].capacity, AE_ALIGN);
        }
    }
    if (pthread_mutex_init(&e->step_lock, NULL))
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "pthread_mutex_init failed");
    if (pthread_cond_init(&e->step_work, NULL)) {
        pthread_mutex_destroy(&e->step_lock);
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "pthread_cond_init failed");
    }
    if (pthread_cond_init(&e->step_progress, NULL)) {
        pthread_cond_destroy(&e->step_work);
        pthread_mutex_destroy(&e->step_lock);
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "pthread_cond_init failed");
    }
    e->step_lock_ready = 1;
    return 0;
}

static void *worker_main(void *arg);

int aex_steps_start(ae_engine *e, ae_error *err)
{
    for (int k = 0; k < e->n_steps; k++) {
        step_runner *r = &e->runners[k];
        const ae_node_plan *np = &e->nodes[r->node];
        for (int t = 0; t < np->host.workers; t++) {
            int rc = pthread_create(&r->threads[t], NULL, worker_main, r);
            if (rc)
                return aex_fail(e, err, 0, "pthread_create", np->name,
                                "starting worker %d of host step '%s' failed: %s", t + 1, np->name,
                                strerror(rc));
            r->n_threads++;
        }
    }
    return 0;
}

void aex_steps_stop(ae_engine *e)
{
    if (!e->step_lock_ready)
        return;
    pthread_mutex_lock(&e->step_lock);
    e->stopping = 1;
    pthread_cond_broadcast(&e->step_work);
    pthread_mutex_unlock(&e->step_lock);
    pthread_t self = pthread_self();
    for (int k = 0; k < e->n_steps; k++) {
        step_runner *r = &e->runners[k];
        for (int t = 0; t < r->n_threads; t++) {
            if (pthread_equal(r->threads[t], self))
                pthread_detach(self);   /* a step closing its own engine: it ends when it returns */
            else
                pthread_join(r->threads[t], NULL);
        }
        r->n_threads = 0;
    }
}

void aex_steps_free(ae_engine *e)
{
    for (int k = 0; e->runners && k < e->n_steps; k++) {
        free(e->runners[k].queue);
        free(e->runners[k].threads);
        free(e->runners[k].in_off);
        free(e->runners[k].out_off);
    }
    free(e->runners);
    free(e->runner_of);
    if (e->step_lock_ready) {
        pthread_cond_destroy(&e->step_progress);
        pthread_cond_destroy(&e->step_work);
        pthread_mutex_destroy(&e->step_lock);
        e->step_lock_ready = 0;
    }
}

/* ---- the enqueue side (step_lock held) ------------------------------------------ */

/* The step's stream waits for what it reads, copies its inputs' rows to the
 * host, records step_ready and hands the request to the step's workers.  A
 * skipped request (an earlier step failed) only records the step's event
 * and goes on. */
int aex_step_begin(ae_engine *e, slot *sl, uint64_t request, int n, int skip, ae_error *err)
{
    const ae_plan *p = &e->plan;
    const ae_node_plan *np = &e->nodes[n];
    step_runner *r = &e->runners[e->runner_of[n]];
    aclrtStream st = e->streams[np->stream];
    if (aex_begin_node(e, sl, n, st, NULL, err))
        return -1;
    if (skip) {
        sl->rows_of[n + 1] = 0;
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->step_ready[n], st);
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_done[n], st);
        return aex_enqueue_nodes(e, sl, request, n + 1, 1, err);
    }
    for (int i = 0; i < np->n_inputs; i++) {
        const ae_tensor_plan *tp = &e->tensors[np->inputs[i]];
        size_t bytes = aex_row_bytes(e, sl, np->inputs[i]) * aex_rows(sl, tp->domain);
        if (bytes)
            ACL_CALL(e, err, np->name, aclrtMemcpyAsync, sl->host_steps + r->in_off[i], tp->capacity,
                     aex_tensor_addr(e, sl, np->inputs[i]), bytes, ACL_MEMCPY_DEVICE_TO_HOST, st);
    }
    ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->step_ready[n], st);
    if (r->count >= p->depth)   /* one item per slot at most: cannot happen */
        return aex_fail(e, err, 0, "ae_host_step", np->name, "the queue of host step '%s' is full",
                        np->name);
    step_item *it = &r->queue[(r->head + r->count) % p->depth];
    it->slot = (int)(sl - e->slots);
    it->request = request;
    it->generation = sl->generation;
    sl->step_node = n;
    sl->step_running = 0;
    r->count++;
    pthread_cond_broadcast(&e->step_work);
    return aex_use_device(e, 0, err);
}

/* ---- waiting for a request's tail (any thread) --------------------------------- */

static void add_ms(struct timespec *ts, uint64_t ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* The timeout of a request a host step still holds, naming the step
 * (step_lock held).  No AscendCL call failed: no recent-error text. */
static int fail_held(ae_engine *e, const slot *sl, ae_error *err)
{
    const char *name = sl->step_node >= 0 ? e->nodes[sl->step_node].name : NULL;
    if (!name)
        return aex_fail_engine(e, err, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "aclrtSynchronizeEventWithTimeout", NULL,
                               "a request did not complete within %d ms (a host step still holds it)",
                               (int)e->plan.timeout_ms);
    return aex_fail_engine(e, err, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "aclrtSynchronizeEventWithTimeout", name,
                           "a request did not complete within %d ms (a host step still holds it: host step "
                           "'%s' %s)", (int)e->plan.timeout_ms, name,
                           sl->step_running ? "was still running"
                                            : "had not started: its inputs or a free worker were not ready");
}

int aex_wait_tail(ae_engine *e, slot *sl, uint64_t deadline, ae_error *err)
{
    pthread_mutex_lock(&e->step_lock);
    while (!sl->tail_enqueued) {
        uint64_t now = aex_now_ns();
        if (deadline && now >= deadline) {
            int rc = fail_held(e, sl, err);
            pthread_mutex_unlock(&e->step_lock);
            return rc;
        }
        if (err && aex_poll_due(e, now)) {
            pthread_mutex_unlock(&e->step_lock);
            aex_fail(e, err, 0, "ae_engine_wait", NULL, "interrupted while waiting for the device");
            return AE_INTERRUPTED;
        }
        uint64_t slice = (uint64_t)(e->poll && err ? e->poll_ms : WAIT_SLICE_MS);
        if (deadline && (deadline - now) / 1000000u + 1 < slice)
            slice = (deadline - now) / 1000000u + 1;
        struct timespec until;
        add_ms(&until, slice);
        pthread_cond_timedwait(&e->step_progress, &e->step_lock, &until);
    }
    pthread_mutex_unlock(&e->step_lock);
    return 0;
}

int aex_steps_idle(ae_engine *e, uint64_t deadline)
{
    if (!e->n_steps)
        return 0;
    pthread_mutex_lock(&e->step_lock);
    while (e->steps_busy > 0) {
        uint64_t now = aex_now_ns();
        if (deadline && now >= deadline) {
            pthread_mutex_unlock(&e->step_lock);
            return -1;
        }
        struct timespec until;
        add_ms(&until, WAIT_SLICE_MS);
        pthread_cond_timedwait(&e->step_progress, &e->step_lock, &until);
    }
    pthread_mutex_unlock(&e->step_lock);
    return 0;
}

void aex_steps_abandon(ae_engine *e)
{
    if (!e->n_steps)
        return;
    pthread_mutex_lock(&e->step_lock);
    for (int s = 0; s < e->plan.depth; s++)
        e->slots[s].generation++;
    for (int k = 0; k < e->n_steps; k++)
        e->runners[k].count = 0;
    pthread_cond_broadcast(&e->step_progress);
    pthread_mutex_unlock(&e->step_lock);
}

/* ---- the workers ---------------------------------------------------------------- */

/* Whether the item is still wanted (step_lock held). */
static int current(ae_engine *e, const step_item *it)
{
    return !e->stopping && e->slots[it->slot].generation == it->generation;
}

/* Wait for the step's inputs to reach the host, in slices, giving up when
 * the request is abandoned or the engine stops.  Returns the event's code,
 * or -1 when the item is no longer wanted. */
static int wait_ready(ae_engine *e, aclrtEvent ev, const step_item *it)
{
    if (!e->acl->aclrtSynchronizeEventWithTimeout)
        return e->acl->aclrtSynchronizeEvent(ev);
    for (;;) {
        aclError rc = e->acl->aclrtSynchronizeEventWithTimeout(ev, WAIT_SLICE_MS);
        if (rc != ACL_ERROR_RT_EVENT_SYNC_TIMEOUT)
            return rc;
        pthread_mutex_lock(&e->step_lock);
        int wanted = current(e, it);
        pthread_mutex_unlock(&e->step_lock);
        if (!wanted)
            return -1;
    }
}

/* After a step that changes shapes: the sizes it set for the rest of the
 * request must fit the plan (its buffers, its gears' value counts). */
static int check_edit(ae_engine *e, slot *sl, int node, char *message, size_t message_size)
{
    char why[AE_MESSAGE_MAX / 2];   /* room for it inside `message` */
    for (int t = 0; t < e->plan.n_tensors; t++)
        if (aex_check_row_bytes(e, t, sl->row_bytes[t], why, sizeof why))
            goto bad;
    for (int n = node + 1; n < e->plan.n_nodes; n++)
        if (aex_check_gear(e, n, sl->gear_dims + (size_t)n * AE_MAX_GEAR_DIMS, sl->gear_count[n], why, sizeof why))
            goto bad;
    return 0;
bad:
    snprintf(message, message_size, "host step '%s' set shapes the plan cannot hold: %s", e->nodes[node].name,
             why);
    return -1;
}

/* Call the step's function; returns 0 with *rows_out set, or -1 with
 * `message` saying why the request fails. */
static int call_step(ae_engine *e, const step_runner *r, slot *sl, const step_item *it, uint64_t *rows_out,
                     char *message, size_t message_size)
{
    const ae_node_plan *np = &e->nodes[r->node];
    ae_host_tensor in[AE_MAX_IO], out[AE_MAX_IO];
    uint64_t rows = aex_rows(sl, np->domain);
    uint64_t room = np->host.rows_any ? np->host.max_rows : rows;
    for (int i = 0; i < np->n_inputs; i++) {
        const ae_tensor_plan *tp = &e->tensors[np->inputs[i]];
        in[i].data = sl->host_steps + r->in_off[i];
        in[i].rows = aex_rows(sl, tp->domain);
        in[i].row_bytes = aex_row_bytes(e, sl, np->inputs[i]);
    }
    for (int i = 0; i < np->n_outputs; i++) {
        out[i].data = sl->host_steps + r->out_off[i];
        out[i].rows = room;
        out[i].row_bytes = aex_row_bytes(e, sl, np->outputs[i]);
    }
    message[0] = '\0';
    *rows_out = 0;
    int rc;
    if (np->host.reshape_fn) {
        /* the slot's own sizes: nothing else reads them until the tail is enqueued */
        ae_shape_edit edit = {sl->row_bytes, sl->gear_dims, sl->gear_count, e->plan.n_tensors, e->plan.n_nodes};
        rc = np->host.reshape_fn(np->host.ctx, it->request, in, np->n_inputs, out, np->n_outputs, rows_out,
                                 e->shaped ? &edit : NULL, message, message_size);
    } else {
        rc = np->host.fn(np->host.ctx, it->request, in, np->n_inputs, out, np->n_outputs, rows_out, message,
                         message_size);
    }
    if (rc) {
        message[message_size - 1] = '\0';
        if (!message[0])
            snprintf(message, message_size, "host step '%s' failed (its function gave no message)", np->name);
        return -1;
    }
    if (np->host.reshape_fn && e->shaped && check_edit(e, sl, r->node, message, message_size))
        return -1;
    if (*rows_out > room || (!np->host.rows_any && *rows_out != rows)) {
        snprintf(message, message_size, "host step '%s' returned %llu rows; %s %llu", np->name,
                 (unsigned long long)*rows_out, np->host.rows_any ? "its max_rows is" : "rows=\"same\" needs",
                 (unsigned long long)room);
        return -1;
    }
    return 0;
}

/* After the function: copy its rows back to the device, record the step's
 * event and enqueue the rest of the request (step_lock held).  On the step's
 * results stream: its own stream holds the input copies of later requests,
 * queued at their submission, which this request must not wait behind. */
static int resume(ae_engine *e, const step_runner *r, slot *sl, const step_item *it, int skip, ae_error *err)
{
    const ae_node_plan *np = &e->nodes[r->node];
    aclrtStream st = e->streams[np->host.results_stream];
    if (aex_use_device(e, np->device, err))
        return -1;
    for (int i = 0; i < np->n_outputs && !skip; i++) {
        const ae_tensor_plan *tp = &e->tensors[np->outputs[i]];
        size_t bytes = aex_row_bytes(e, sl, np->outputs[i]) * aex_rows(sl, tp->domain);
        if (bytes)
            ACL_CALL(e, err, np->name, aclrtMemcpyAsync, aex_tensor_addr(e, sl, np->outputs[i]), tp->capacity,
                     sl->host_steps + r->out_off[i], bytes, ACL_MEMCPY_HOST_TO_DEVICE, st);
    }
    ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_done[r->node], st);
    return aex_enqueue_nodes(e, sl, it->request, r->node + 1, skip, err);
}

static void run_item(ae_engine *e, const step_runner *r, const step_item *it)
{
    const ae_node_plan *np = &e->nodes[r->node];
    slot *sl = &e->slots[it->slot];
    char message[AE_MESSAGE_MAX];
    uint64_t rows_out = 0;
    int rc = wait_ready(e, sl->step_ready[r->node], it);
    if (rc == -1)
        return;
    /* A device error before the step: the rest is skipped, and the error
     * reaches the completion through the done event's stream. */
    int skip = rc != ACL_SUCCESS;
    if (!skip) {
        pthread_mutex_lock(&e->step_lock);   /* a timeout of the request names what holds it */
        if (current(e, it))
            sl->step_running = 1;
        pthread_mutex_unlock(&e->step_lock);
    }
    int failed = !skip && call_step(e, r, sl, it, &rows_out, message, sizeof message);

    pthread_mutex_lock(&e->step_lock);
    if (current(e, it)) {
        if (failed) {
            sl->step_failed = 1;
            aex_fail(e, &sl->step_error, 0, "ae_host_step", np->name, "%s", message);
            sl->step_error.request = it->request;
            skip = 1;
        }
        sl->rows_of[r->node + 1] = skip ? 0 : np->host.rows_any ? rows_out : aex_rows(sl, np->domain);
        ae_error err;
        if (resume(e, r, sl, it, skip, &err)) {
            /* part of the request is on the streams and its done event may
             * never be recorded: the completion drains the engine */
            sl->step_fatal = 1;
            sl->step_error = err;
            sl->step_error.request = it->request;
            sl->tail_enqueued = 1;
        }
        pthread_cond_broadcast(&e->step_progress);
    }
    pthread_mutex_unlock(&e->step_lock);
}

static void *worker_main(void *arg)
{
    step_runner *r = arg;
    ae_engine *e = r->engine;
    e->acl->aclrtSetCurrentContext(e->plan.context);
    pthread_mutex_lock(&e->step_lock);
    for (;;) {
        while (!e->stopping && r->count == 0)
            pthread_cond_wait(&e->step_work, &e->step_lock);
        if (e->stopping)
            break;
        step_item it = r->queue[r->head];
        r->head = (r->head + 1) % e->plan.depth;
        r->count--;
        e->steps_busy++;
        pthread_mutex_unlock(&e->step_lock);
        run_item(e, r, &it);
        pthread_mutex_lock(&e->step_lock);
        e->steps_busy--;
        pthread_cond_broadcast(&e->step_progress);
    }
    pthread_mutex_unlock(&e->step_lock);
    return NULL;
}
