/*
 * stream.c -- streams: ordered task queues, one worker thread each.
 *
 * Enqueueing copies the task into a per-stream ring (no allocation unless the
 * ring has to grow) under a mutex only the worker competes for, and signals
 * the worker only when it is asleep, so issuing work to a busy stream costs
 * no system call.  Synchronizers sleep on a condition variable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "simrt.h"

static atomic_uint next_stream_id;  /* ids shown in messages and logs */

static void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

static struct timespec deadline_after_ms(int32_t ms)
{
    uint64_t t = sim_now_ns() + (uint64_t)ms * 1000000ull;
    return (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
}

/* ---- the worker ---------------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    sim_stream *s = arg;
    sim_task t;
    /* Device time is modelled by sleeping: a 1 us timer slack (instead of
     * Linux's default 50 us) keeps each modelled execution close to its
     * declared latency. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    /* Named, so that a profiler or a benchmark tells the simulated device's
     * work (copies, kernels, DVPP pixels) from the host's (docs/simulator.md,
     * "Streams"). */
    prctl(PR_SET_NAME, "ae-sim-stream", 0, 0, 0);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->count == 0 && !s->stopping) {
            s->worker_asleep = 1;
            pthread_cond_wait(&s->work_cv, &s->mu);
            s->worker_asleep = 0;
        }
        if (s->count == 0)
            break; /* stopping, and everything queued has run */
        /* Copy out: the ring may be reallocated by enqueuers while we run. */
        t = s->ring[s->head];
        pthread_mutex_unlock(&s->mu);

        s->task_err = ACL_SUCCESS;
        s->task_msg[0] = '\0';
        s->task_now_ns = t.enqueued_ns > s->free_at_ns ? t.enqueued_ns : s->free_at_ns;
        aclError rc = t.run(t.arg, s);
        s->free_at_ns = s->task_now_ns;
        if (rc != ACL_SUCCESS && s->task_msg[0] == '\0')
            snprintf(s->task_msg, sizeof s->task_msg, "failed with %d %s", rc, sim_code_name(rc));
        if (rc != ACL_SUCCESS)   /* task id: its 0-based position on this stream (only we write completed) */
            sim_exception_report(s->device_id, s->id, (uint32_t)s->completed, rc);

        pthread_mutex_lock(&s->mu);
        s->head = (s->head + 1) % s->cap;
        s->count--;
        s->completed++;
        if (rc != ACL_SUCCESS && s->sticky == ACL_SUCCESS) {
            s->sticky = rc;
            snprintf(s->sticky_msg, sizeof s->sticky_msg, "task '%s' on stream %u: %.900s", t.what, s->id, s->task_msg);
        }
        if (s->waiters)
            pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void sim_task_error(sim_stream *stream, aclError code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(stream->task_msg, sizeof stream->task_msg, fmt, ap);
    va_end(ap);
    stream->task_err = code;
    sim_log_note("device-side failure on stream %u: %d %s: %s", stream->id, code, sim_code_name(code),
                 stream->task_msg);
}

uint64_t sim_task_now(const sim_stream *s)
{
    return s->task_now_ns;
}

void sim_task_reach(sim_stream *s, uint64_t t_ns)
{
    if (t_ns > s->task_now_ns)
        s->task_now_ns = t_ns;
}

void sim_task_occupy(sim_stream *s, uint64_t wall_start_ns, uint64_t busy_ns)
{
    if (!s) {
        if (busy_ns)
            sim_sleep_until_ns(wall_start_ns + busy_ns);
        return;
    }
    s->task_now_ns += busy_ns;
    /* A worker that ran late finds its device time already past: it does not
     * sleep, and the device catches up with the host without stretching. */
    if (s->task_now_ns > sim_now_ns())
        sim_sleep_until_ns(s->task_now_ns);
}

aclError sim_task_begin(sim_stream *s, const char *kind)
{
    int stall_ms = 0;
    aclError rc = sim_fault_on_task(kind, &stall_ms);
    if (stall_ms > 0) {
        sim_log_note("stream %u: %s task stalled %d ms (ASCEND_SIM_FAULTS stall:%s)", s->id, kind, stall_ms, kind);
        sim_task_occupy(s, 0, (uint64_t)stall_ms * 1000000ull);
    }
    if (rc)
        sim_task_error(s, rc, "%s task failed on the device: injected fault %d %s (ASCEND_SIM_FAULTS task:%s)", kind,
                       rc, sim_code_name(rc), kind);
    return rc;
}

/* ---- lifetime ---------------------------------------------------------------------------------- */

aclError sim_stream_create(const char *fn, sim_context *ctx, int is_default, sim_stream **out)
{
    aclError rc = sim_device_reserve_stream(fn, ctx->device_id);
    if (rc)
        return rc;
    sim_stream *s = calloc(1, sizeof *s);
    if (s) {
        s->cap = 16;
        s->ring = malloc(s->cap * sizeof *s->ring);
    }
    if (!s || !s->ring) {
        if (s)
            free(s);
        sim_device_release_stream(ctx->device_id);
        return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn, "out of host memory creating a stream");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    cond_init_monotonic(&s->done_cv);
    s->ctx = ctx;
    s->device_id = ctx->device_id;
    s->id = atomic_fetch_add(&next_stream_id, 1) + 1;
    s->is_default = is_default;
    int err = pthread_create(&s->thread, NULL, worker_main, s);
    if (err || !sim_handle_add(s, SIM_H_STREAM)) {
        if (!err) {
            pthread_mutex_lock(&s->mu);
            s->stopping = 1;
            pthread_cond_signal(&s->work_cv);
            pthread_mutex_unlock(&s->mu);
            pthread_join(s->thread, NULL);
        }
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        pthread_mutex_destroy(&s->mu);
        free(s->ring);
        free(s);
        sim_device_release_stream(ctx->device_id);
        return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn, "cannot start the stream's worker thread (%s)",
                         strerror(err ? err : ENOMEM));
    }
    *out = s;
    return ACL_SUCCESS;
}

void sim_stream_destroy(sim_stream *s)
{
    sim_handle_remove(s);
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL); /* the worker leaves once the queue is empty */
    sim_cb_stream_gone(s);
    sim_device_release_stream(s->device_id);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    free(s->ring);
    free(s);
}

void sim_streams_destroy_for_context(sim_context *ctx)
{
    void **all;
    size_t n = sim_handle_snapshot(SIM_H_STREAM, &all);
    for (size_t i = 0; i < n; i++) {
        sim_stream *s = all[i];
        if (s->ctx == ctx && s != ctx->default_stream)
            sim_stream_destroy(s);
    }
    free(all);
    if (ctx->default_stream)
        sim_stream_destroy(ctx->default_stream);
    ctx->default_stream = NULL;
}

/* ---- sim.h interface ------------------------------------------------------------------------------ */

/* same_context: the stream must belong to the current context itself (CANN
 * 9.1 compares contexts for the calls that put work on a stream or destroy
 * it); otherwise its device is enough (synchronize, query). */
static aclError resolve(const char *fn, aclrtStream handle, int same_context, sim_stream **out)
{
    sim_context *ctx;
    aclError rc = sim_need_context(fn, &ctx);
    if (rc)
        return rc;
    if (!handle) {
        *out = ctx->default_stream;
        return ACL_SUCCESS;
    }
    if (!sim_handle_live(handle, SIM_H_STREAM, NULL))
        return sim_error(ACL_ERROR_RT_INVALID_HANDLE, fn,
                         "stream %p is not a live stream (never created, already destroyed, or its context is gone)",
                         handle);
    sim_stream *s = handle;
    if (s->device_id != ctx->device_id)
        return sim_error(ACL_ERROR_RT_STREAM_CONTEXT, fn,
                         "stream %p (stream %u) belongs to device %d but this thread's current context is on device "
                         "%d; make that stream's context current first",
                         handle, s->id, (int)s->device_id, (int)ctx->device_id);
    if (same_context && s->ctx != ctx)
        return sim_error(ACL_ERROR_RT_STREAM_CONTEXT, fn,
                         "stream %p (stream %u) belongs to context %p, not to this thread's current context %p (both "
                         "on device %d); make that stream's context current first",
                         handle, s->id, (void *)s->ctx, (void *)ctx, (int)ctx->device_id);
    *out = s;
    return ACL_SUCCESS;
}

aclError sim_stream_resolve(const char *fn, aclrtStream handle, sim_stream **out)
{
    return resolve(fn, handle, 1, out);
}

aclError sim_stream_enqueue(sim_stream *s, const char *what, sim_task_fn run, const void *arg, size_t arg_size)
{
    if (arg_size > SIM_TASK_ARG_MAX)
        return sim_error(ACL_ERROR_INTERNAL_ERROR, what, "task arguments of %zu bytes exceed SIM_TASK_ARG_MAX", arg_size);
    int wake = 0;
    uint64_t now = sim_now_ns();
    pthread_mutex_lock(&s->mu);
    if (s->count == s->cap) {
        size_t ncap = s->cap * 2;
        sim_task *n = malloc(ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->mu);
            return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, what, "out of host memory growing stream %u's queue",
                             s->id);
        }
        for (size_t i = 0; i < s->count; i++)
            n[i] = s->ring[(s->head + i) % s->cap];
        free(s->ring);
        s->ring = n;
        s->head = 0;
        s->cap = ncap;
    }
    sim_task *t = &s->ring[(s->head + s->count) % s->cap];
    t->run = run;
    t->enqueued_ns = now;
    size_t len = what ? strnlen(what, sizeof t->what - 1) : 0;   /* a byte loop cost 70 instructions */
    memcpy(t->what, what ? what : "", len);
    t->what[len] = '\0';
    if (arg_size)
        memcpy(t->arg, arg, arg_size);
    s->count++;
    s->enqueued++;
    if (s->worker_asleep) {
        s->worker_asleep = 0; /* one signal is enough */
        wake = 1;
    }
    pthread_mutex_unlock(&s->mu);
    if (wake)
        pthread_cond_signal(&s->work_cv);
    return ACL_SUCCESS;
}

int32_t sim_stream_device(const sim_stream *stream)
{
    return stream->device_id;
}

uint32_t sim_stream_id(const sim_stream *stream)
{
    return stream->id;
}

aclError sim_stream_peek_error(sim_stream *s, char *msg, size_t n)
{
    pthread_mutex_lock(&s->mu);
    aclError rc = s->sticky;
    if (rc && msg)
        snprintf(msg, n, "%s", s->sticky_msg);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

aclError sim_stream_synchronize(const char *fn, sim_stream *s, int32_t timeout_ms)
{
    struct timespec dl;
    if (timeout_ms > 0)
        dl = deadline_after_ms(timeout_ms);
    int timed_out = 0;
    char msg[SIM_MSG_MAX];
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enqueued;
    s->waiters++;
    while (s->completed < target) {
        if (timeout_ms == 0) {
            timed_out = 1;
            break;
        }
        if (timeout_ms < 0) {
            pthread_cond_wait(&s->done_cv, &s->mu);
        } else if (pthread_cond_timedwait(&s->done_cv, &s->mu, &dl) == ETIMEDOUT && s->completed < target) {
            timed_out = 1;
            break;
        }
    }
    s->waiters--;
    if (timed_out) {
        uint64_t left = target - s->completed;
        snprintf(msg, sizeof msg, "%s", s->count ? s->ring[s->head].what : "?");
        pthread_mutex_unlock(&s->mu);
        return sim_error(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, fn,
                         "stream %u did not finish within %d ms: %llu task(s) still pending, the running one is '%s'",
                         s->id, (int)timeout_ms, (unsigned long long)left, msg);
    }
    aclError rc = s->sticky;
    if (rc) {
        snprintf(msg, sizeof msg, "%s", s->sticky_msg);
        s->sticky = ACL_SUCCESS; /* reported once, then the stream is clean again */
    }
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return sim_error(rc, fn, "device-side failure reported by stream %u: %s", s->id, msg);
    return ACL_SUCCESS;
}

/* ---- AscendCL ------------------------------------------------------------------------------------------ */

SIM_EXPORT aclError aclrtCreateStream(aclrtStream *stream)
{
    SIM_ENTER(aclrtCreateStream);
    sim_context *ctx;
    sim_stream *s = NULL;
    aclError rc = sim_check_init("aclrtCreateStream");
    if (!rc && !stream)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream is NULL; pass the address of an aclrtStream");
    if (!rc)
        rc = sim_need_context("aclrtCreateStream", &ctx);
    if (!rc)
        rc = sim_stream_create("aclrtCreateStream", ctx, 0, &s);
    if (!rc)
        *stream = s;
    SIM_RETURN(aclrtCreateStream, rc, "stream=%p -> %p (id %u)", (void *)stream, (void *)s, s ? s->id : 0u);
}

SIM_EXPORT aclError aclrtDestroyStream(aclrtStream stream)
{
    SIM_ENTER(aclrtDestroyStream);
    sim_stream *s = NULL;
    aclError rc = sim_check_init("aclrtDestroyStream");
    if (!rc && !stream)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream",
                       "stream is NULL: the default stream cannot be destroyed (it goes with its context)");
    if (!rc)
        rc = sim_stream_resolve("aclrtDestroyStream", stream, &s);
    if (!rc && s->is_default)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream", "stream %p is a default stream and cannot be destroyed",
                       stream);
    if (!rc)
        sim_stream_destroy(s); /* waits for the work already queued */
    SIM_RETURN(aclrtDestroyStream, rc, "stream=%p", stream);
}

SIM_EXPORT aclError aclrtSynchronizeStream(aclrtStream stream)
{
    SIM_ENTER(aclrtSynchronizeStream);
    sim_stream *s;
    aclError rc = resolve("aclrtSynchronizeStream", stream, 0, &s);
    if (!rc)
        rc = sim_stream_synchronize("aclrtSynchronizeStream", s, -1);
    SIM_RETURN(aclrtSynchronizeStream, rc, "stream=%p", stream);
}

SIM_EXPORT aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    SIM_ENTER(aclrtSynchronizeStreamWithTimeout);
    sim_stream *s;
    aclError rc = ACL_SUCCESS;
    /* CANN 9.1: the runtime refuses 0 as well as < -1 (there is no poll). */
    if (timeout < -1 || timeout == 0)
        rc = sim_error(ACL_ERROR_RT_PARAM_INVALID, "aclrtSynchronizeStreamWithTimeout",
                       "timeout %d is invalid: expected -1 (wait forever) or a positive number of ms (0 is refused)",
                       (int)timeout);
    if (!rc)
        rc = resolve("aclrtSynchronizeStreamWithTimeout", stream, 0, &s);
    if (!rc)
        rc = sim_stream_synchronize("aclrtSynchronizeStreamWithTimeout", s, timeout);
    SIM_RETURN(aclrtSynchronizeStreamWithTimeout, rc, "stream=%p, timeout=%d", stream, (int)timeout);
}

SIM_EXPORT aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status)
{
    SIM_ENTER(aclrtStreamQuery);
    sim_stream *s;
    aclError rc = ACL_SUCCESS;
    if (!status)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtStreamQuery", "status is NULL; pass the address of an aclrtStreamStatus");
    if (!rc)
        rc = resolve("aclrtStreamQuery", stream, 0, &s);
    if (!rc) {
        pthread_mutex_lock(&s->mu);
        *status = s->completed == s->enqueued ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
        pthread_mutex_unlock(&s->mu);
    }
    SIM_RETURN(aclrtStreamQuery, rc, "stream=%p -> %s", stream,
               rc ? "-" : (*status == ACL_STREAM_STATUS_COMPLETE ? "COMPLETE" : "NOT_READY"));
}
