/*
 * executor.c -- what every part of the executor shares (see
 * executor_internal.h for the map of the files): the one error path, the
 * clock and deadlines, making a context current, and the engine's counters.
 */
#include "executor_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t aex_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void aex_copy_name(char *dst, const char *src)
{
    snprintf(dst, AE_NAME_MAX, "%s", src ? src : "");
}

/* Fill err (the message `what`, then `recent` when there is one); -1. */
static int fill_error(ae_error *err, aclError code, const char *function, const char *node, const char *recent,
                      const char *fmt, va_list ap)
{
    err->code = code;
    err->request = AE_NO_REQUEST;
    aex_copy_name(err->function, function);
    aex_copy_name(err->node, node);
    char what[AE_MESSAGE_MAX / 2];
    vsnprintf(what, sizeof what, fmt, ap);
    if (recent && recent[0])
        snprintf(err->message, AE_MESSAGE_MAX, "%s: %s", what, recent);
    else
        snprintf(err->message, AE_MESSAGE_MAX, "%s", what);
    return -1;
}

/* The single error-reporting path: fills err from an AscendCL failure (or an
 * engine-level problem when code is 0) and returns -1. */
int aex_fail(ae_engine *e, ae_error *err, aclError code, const char *function,
             const char *node, const char *fmt, ...)
{
    if (!err)
        return -1;
    const char *recent = NULL;
    if (code != ACL_SUCCESS && e && e->acl && e->acl->aclGetRecentErrMsg)
        recent = e->acl->aclGetRecentErrMsg();
    va_list ap;
    va_start(ap, fmt);
    fill_error(err, code, function, node, recent, fmt, ap);
    va_end(ap);
    return -1;
}

int aex_fail_engine(ae_engine *e, ae_error *err, aclError code, const char *function, const char *node,
                    const char *fmt, ...)
{
    (void)e;
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    fill_error(err, code, function, node, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int aex_make_current(ae_engine *e, ae_error *err)
{
    aclrtContext current = NULL;
    if (e->acl->aclrtGetCurrentContext(&current) == ACL_SUCCESS && current == e->plan.context)
        return 0;
    ACL_CALL(e, err, NULL, aclrtSetCurrentContext, e->plan.context);
    return 0;
}

int aex_use_device(ae_engine *e, int d, ae_error *err)
{
    if (e->n_devices <= 1)
        return 0;
    aclrtContext current = NULL;
    if (e->acl->aclrtGetCurrentContext(&current) == ACL_SUCCESS && current == e->contexts[d])
        return 0;
    ACL_CALL(e, err, NULL, aclrtSetCurrentContext, e->contexts[d]);
    return 0;
}

void *aex_calloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size ? size : 1);
}

/* Milliseconds from `now` until `deadline` (at least 1: some runtimes read
 * 0 as "do not wait"), or -1 for no deadline. */
int32_t aex_ms_until(uint64_t now, uint64_t deadline)
{
    if (!deadline)
        return -1;
    if (now >= deadline)
        return 1;
    uint64_t ms = (deadline - now + 999999u) / 1000000u;
    return ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

int32_t aex_ms_left(uint64_t deadline)
{
    return deadline ? aex_ms_until(aex_now_ns(), deadline) : -1;
}

/* The deadline for a wait starting at `now`: the plan's timeout, 0 for none. */
uint64_t aex_deadline_after(const ae_engine *e, uint64_t now)
{
    return e->plan.timeout_ms >= 0 ? now + (uint64_t)e->plan.timeout_ms * 1000000u : 0;
}

uint64_t aex_deadline_from_now(const ae_engine *e)
{
    return e->plan.timeout_ms >= 0 ? aex_deadline_after(e, aex_now_ns()) : 0;
}

int ae_engine_free_slots(const ae_engine *e)
{
    /* a wedged engine counts its slots free: the next submission finds out
     * (within the timeout) whether the device has caught up */
    return e->plan.depth - e->in_flight;
}

uint64_t ae_engine_submitted(const ae_engine *e)
{
    return e->next_request;
}

uint64_t ae_engine_completed(const ae_engine *e)
{
    return e->next_request - (uint64_t)e->in_flight;
}

void ae_engine_last_cancelled(const ae_engine *e, uint64_t *begin, uint64_t *end)
{
    *begin = e->cancel_begin;
    *end = e->cancel_end;
}

int ae_engine_in_flight(const ae_engine *e)
{
    return e->in_flight;
}

void ae_engine_get_stats(const ae_engine *e, ae_stats *out)
{
    *out = e->stats;
    out->in_flight = e->in_flight;
}

void ae_engine_node_device_ms(const ae_engine *e, double *out)
{
    memcpy(out, e->node_ms, (size_t)e->plan.n_nodes * sizeof(double));
}

size_t ae_engine_arena_bytes(const ae_engine *e)
{
    return e->arena_bytes;
}

size_t ae_engine_host_bytes(const ae_engine *e)
{
    return e->host_bytes;
}
