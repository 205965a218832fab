/*
 * event.c -- events: record, stream wait, reset, query, synchronize, elapsed time.
 *
 * Every aclrtRecordEvent call numbers its record (a generation).  A wait, a
 * host synchronize or a query refers to the most recent record enqueued
 * before the call.  An event never recorded since its creation is refused by
 * aclrtStreamWaitEvent (107000) and reads NOT_READY, as CANN 9.1's events do;
 * one whose records were all reset away counts as complete and does not
 * block (docs/simulator.md, "Events").
 * A record carries the sticky error its stream had when it ran; a stream
 * waiting on it inherits that error, so failures follow the data dependencies.
 *
 * Events are reference counted: the handle holds one reference and every
 * queued task that names the event holds one, so destroying an event with
 * work still queued does not free memory a worker is about to touch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simrt.h"

#define EVENT_KNOWN_FLAGS \
    (ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE | ACL_EVENT_DEVICE_USE_ONLY)

/* A stream waiting for record g goes on at the device time record g ran;
 * the last few generations' times are kept for a waiter that runs after the
 * event was recorded again (older ones: the oldest kept, a later time). */
#define SIM_EVENT_TS_KEPT 4

typedef struct sim_event {
    pthread_mutex_t mu;  /* guards every mutable field below */
    pthread_cond_t cv;   /* waiters for a record to complete or a reset */
    int waiters;
    int refs;
    uint64_t recorded;   /* generations handed out by aclrtRecordEvent */
    uint64_t completed;  /* highest generation whose record task has run */
    uint64_t reset_gen;  /* records up to this generation were reset away */
    uint64_t ts_ns;      /* when the latest completed record ran (device clock) */
    uint64_t gen_ts_ns[SIM_EVENT_TS_KEPT];   /* when record generation g ran, at g % SIM_EVENT_TS_KEPT */
    aclError err;        /* sticky error carried by the latest completed record */
    char errmsg[SIM_MSG_MAX];
    /* fixed at creation */
    uint32_t flags;
    int32_t device_id;
    uint32_t id;
} sim_event;

static atomic_uint next_event_id; /* ids shown in messages */

static void event_unref(sim_event *ev)
{
    pthread_mutex_lock(&ev->mu);
    int left = --ev->refs;
    pthread_mutex_unlock(&ev->mu);
    if (left == 0) {
        pthread_cond_destroy(&ev->cv);
        pthread_mutex_destroy(&ev->mu);
        free(ev);
    }
}

static aclError resolve_event(const char *fn, const char *arg, aclrtEvent handle, sim_event **out)
{
    if (!handle)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL", arg);
    if (!sim_handle_live(handle, SIM_H_EVENT, NULL))
        return sim_error(ACL_ERROR_RT_INVALID_HANDLE, fn, "%s %p is not a live event (never created or already destroyed)",
                         arg, handle);
    *out = handle;
    return ACL_SUCCESS;
}

/* Whether aclrtRecordEvent was ever called on the event (CANN's events leave
 * their initial state only then). */
static int recorded_ever(sim_event *ev)
{
    pthread_mutex_lock(&ev->mu);
    int r = ev->recorded > 0;
    pthread_mutex_unlock(&ev->mu);
    return r;
}

/* Never recorded since creation or the last reset (caller holds ev->mu). */
static int never_recorded(const sim_event *ev)
{
    return ev->recorded <= ev->reset_gen;
}

/* ---- stream tasks ------------------------------------------------------------------------------ */

typedef struct {
    sim_event *ev;
    uint64_t gen;
} event_task_arg;

static aclError record_task(void *arg, sim_stream *s)
{
    event_task_arg *a = arg;
    sim_event *ev = a->ev;
    aclError rc = sim_task_begin(s, "record");
    char msg[SIM_MSG_MAX];
    aclError carried = rc ? rc : sim_stream_peek_error(s, msg, sizeof msg);
    if (rc)
        snprintf(msg, sizeof msg, "record on stream %u failed: %.900s", sim_stream_id(s), s->task_msg);
    uint64_t now = sim_task_now(s);   /* the stream's device clock, not the worker's wake-up */
    pthread_mutex_lock(&ev->mu);
    ev->gen_ts_ns[a->gen % SIM_EVENT_TS_KEPT] = now;
    if (a->gen > ev->completed) {
        ev->completed = a->gen;
        ev->ts_ns = now;
        ev->err = carried;
        if (carried)
            snprintf(ev->errmsg, sizeof ev->errmsg, "%s", msg);
    }
    if (ev->waiters)
        pthread_cond_broadcast(&ev->cv);
    pthread_mutex_unlock(&ev->mu);
    event_unref(ev);
    return rc;
}

static aclError wait_task(void *arg, sim_stream *s)
{
    event_task_arg *a = arg;
    sim_event *ev = a->ev;
    aclError rc = sim_task_begin(s, "wait");
    aclError inherited = ACL_SUCCESS;
    char msg[SIM_MSG_MAX];
    if (!rc && a->gen) {
        pthread_mutex_lock(&ev->mu);
        while (ev->completed < a->gen && ev->reset_gen < a->gen) {
            ev->waiters++;
            pthread_cond_wait(&ev->cv, &ev->mu);
            ev->waiters--;
        }
        if (ev->completed >= a->gen && ev->err) {
            inherited = ev->err;
            snprintf(msg, sizeof msg, "%s", ev->errmsg);
        }
        if (ev->completed >= a->gen)        /* the device goes on once the record has happened */
            sim_task_reach(s, ev->gen_ts_ns[(ev->completed - a->gen < SIM_EVENT_TS_KEPT ? a->gen : ev->completed + 1)
                                            % SIM_EVENT_TS_KEPT]);
        pthread_mutex_unlock(&ev->mu);
    }
    uint32_t id = ev->id;
    event_unref(ev);
    if (inherited) {
        sim_task_error(s, inherited, "inherited through event %u from an earlier failure: %s", id, msg);
        return inherited;
    }
    return rc;
}

static aclError reset_task(void *arg, sim_stream *s)
{
    event_task_arg *a = arg;
    sim_event *ev = a->ev;
    aclError rc = sim_task_begin(s, "reset");
    if (!rc) {
        pthread_mutex_lock(&ev->mu);
        if (a->gen > ev->reset_gen)
            ev->reset_gen = a->gen;
        if (never_recorded(ev)) {
            ev->ts_ns = 0;
            ev->err = ACL_SUCCESS;
        }
        if (ev->waiters)
            pthread_cond_broadcast(&ev->cv);
        pthread_mutex_unlock(&ev->mu);
    }
    event_unref(ev);
    return rc;
}

/* Takes a reference and the current generation, then enqueues. */
static aclError enqueue_event_task(sim_event *ev, sim_stream *s, const char *what, sim_task_fn fn, int new_record,
                                   int skip_if_never)
{
    event_task_arg a = {ev, 0};
    pthread_mutex_lock(&ev->mu);
    if (new_record)
        a.gen = ++ev->recorded;
    else if (!(skip_if_never && never_recorded(ev)))
        a.gen = ev->recorded;
    ev->refs++;
    pthread_mutex_unlock(&ev->mu);
    aclError rc = sim_stream_enqueue(s, what, fn, &a, sizeof a);
    if (rc)
        event_unref(ev);
    return rc;
}

/* ---- teardown ------------------------------------------------------------------------------------------ */

void sim_events_destroy_all(void)
{
    void **all;
    size_t n = sim_handle_snapshot(SIM_H_EVENT, &all);
    for (size_t i = 0; i < n; i++) {
        sim_handle_remove(all[i]);
        event_unref(all[i]);
    }
    free(all);
}

/* ---- AscendCL --------------------------------------------------------------------------------------------- */

static aclError create_event(const char *fn, aclrtEvent *event, uint32_t flag, sim_event **out)
{
    sim_context *ctx;
    aclError rc = sim_check_init(fn);
    if (rc)
        return rc;
    if (!event)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "event is NULL; pass the address of an aclrtEvent");
    /* CANN 9.1: the runtime refuses a flag of 0 and bits it does not know (107000). */
    if (flag == 0)
        return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn,
                         "flag 0 is invalid: expected at least one of ACL_EVENT_SYNC (0x1), "
                         "ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), ACL_EVENT_TIME_LINE (0x8), "
                         "ACL_EVENT_DEVICE_USE_ONLY (0x10)");
    if (flag & ~EVENT_KNOWN_FLAGS)
        return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn,
                         "flag 0x%x has bits 0x%x the simulator does not know: expected a combination of "
                         "ACL_EVENT_SYNC (0x1), ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), ACL_EVENT_TIME_LINE (0x8) "
                         "and ACL_EVENT_DEVICE_USE_ONLY (0x10)",
                         flag, flag & ~EVENT_KNOWN_FLAGS);
    if ((rc = sim_need_context(fn, &ctx)))
        return rc;
    if ((rc = sim_device_reserve_event(fn, ctx->device_id)))
        return rc;
    sim_event *ev = calloc(1, sizeof *ev);
    if (!ev) {
        sim_device_release_event(ctx->device_id);
        return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn, "out of host memory creating an event");
    }
    pthread_mutex_init(&ev->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->cv, &ca);
    pthread_condattr_destroy(&ca);
    ev->refs = 1;
    ev->flags = flag;
    ev->device_id = ctx->device_id;
    ev->id = atomic_fetch_add(&next_event_id, 1) + 1;
    if (!sim_handle_add(ev, SIM_H_EVENT)) {
        event_unref(ev);
        sim_device_release_event(ctx->device_id);
        return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn, "out of host memory creating an event");
    }
    *event = ev;
    *out = ev;
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclrtCreateEvent(aclrtEvent *event)
{
    SIM_ENTER(aclrtCreateEvent);
    sim_event *ev = NULL;
    aclError rc = create_event("aclrtCreateEvent", event, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE, &ev);
    SIM_RETURN(aclrtCreateEvent, rc, "event=%p -> %p (id %u)", (void *)event, (void *)ev, ev ? ev->id : 0u);
}

SIM_EXPORT aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    SIM_ENTER(aclrtCreateEventWithFlag);
    sim_event *ev = NULL;
    aclError rc = create_event("aclrtCreateEventWithFlag", event, flag, &ev);
    SIM_RETURN(aclrtCreateEventWithFlag, rc, "event=%p, flag=0x%x -> %p (id %u)", (void *)event, flag, (void *)ev,
               ev ? ev->id : 0u);
}

SIM_EXPORT aclError aclrtDestroyEvent(aclrtEvent event)
{
    SIM_ENTER(aclrtDestroyEvent);
    sim_event *ev = NULL;
    aclError rc = sim_check_init("aclrtDestroyEvent");
    if (!rc)
        rc = resolve_event("aclrtDestroyEvent", "event", event, &ev);
    if (!rc) {
        sim_handle_remove(ev);
        sim_device_release_event(ev->device_id);
        event_unref(ev);
    }
    SIM_RETURN(aclrtDestroyEvent, rc, "event=%p", event);
}

SIM_EXPORT aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    SIM_ENTER(aclrtRecordEvent);
    sim_event *ev = NULL;
    sim_stream *s;
    aclError rc = sim_check_init("aclrtRecordEvent");
    if (!rc)
        rc = resolve_event("aclrtRecordEvent", "event", event, &ev);
    if (!rc)
        rc = sim_stream_resolve("aclrtRecordEvent", stream, &s);
    if (!rc)
        rc = enqueue_event_task(ev, s, "record event", record_task, 1, 0);
    SIM_RETURN(aclrtRecordEvent, rc, "event=%p, stream=%p", event, stream);
}

SIM_EXPORT aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)
{
    SIM_ENTER(aclrtStreamWaitEvent);
    sim_event *ev = NULL;
    sim_stream *s;
    aclError rc = sim_check_init("aclrtStreamWaitEvent");
    if (!rc)
        rc = resolve_event("aclrtStreamWaitEvent", "event", event, &ev);
    if (!rc && !(ev->flags & ACL_EVENT_SYNC))
        rc = sim_error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "aclrtStreamWaitEvent",
                       "event %p (flags 0x%x) was created without ACL_EVENT_SYNC, so streams cannot wait on it", event,
                       ev->flags);
    if (!rc && !recorded_ever(ev))
        rc = sim_error(ACL_ERROR_RT_PARAM_INVALID, "aclrtStreamWaitEvent",
                       "event %p (event %u) has not been recorded: call aclrtRecordEvent before a stream waits on it",
                       event, ev->id);
    if (!rc)
        rc = sim_stream_resolve("aclrtStreamWaitEvent", stream, &s);
    if (!rc)
        rc = enqueue_event_task(ev, s, "wait event", wait_task, 0, 1);
    SIM_RETURN(aclrtStreamWaitEvent, rc, "stream=%p, event=%p", stream, event);
}

SIM_EXPORT aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream)
{
    SIM_ENTER(aclrtResetEvent);
    sim_event *ev = NULL;
    sim_stream *s;
    aclError rc = sim_check_init("aclrtResetEvent");
    if (!rc)
        rc = resolve_event("aclrtResetEvent", "event", event, &ev);
    if (!rc)
        rc = sim_stream_resolve("aclrtResetEvent", stream, &s);
    if (!rc)
        rc = enqueue_event_task(ev, s, "reset event", reset_task, 0, 0);
    SIM_RETURN(aclrtResetEvent, rc, "event=%p, stream=%p", event, stream);
}

SIM_EXPORT aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    SIM_ENTER(aclrtQueryEventStatus);
    sim_event *ev = NULL;
    aclError rc = sim_check_init("aclrtQueryEventStatus");
    if (!rc && !status)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventStatus",
                       "status is NULL; pass the address of an aclrtEventRecordedStatus");
    if (!rc)
        rc = resolve_event("aclrtQueryEventStatus", "event", event, &ev);
    if (!rc) {
        pthread_mutex_lock(&ev->mu);
        /* Never recorded: NOT_READY (CANN 9.1, the event's initial state);
         * every record reset away: complete. */
        int done = ev->recorded > 0 && (never_recorded(ev) || ev->completed >= ev->recorded);
        pthread_mutex_unlock(&ev->mu);
        *status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    }
    SIM_RETURN(aclrtQueryEventStatus, rc, "event=%p -> %s", event,
               rc ? "-" : (*status == ACL_EVENT_RECORDED_STATUS_COMPLETE ? "COMPLETE" : "NOT_READY"));
}

static aclError sync_event(const char *fn, sim_event *ev, int32_t timeout_ms)
{
    struct timespec dl = {0, 0};
    if (timeout_ms > 0) {
        uint64_t t = sim_now_ns() + (uint64_t)timeout_ms * 1000000ull;
        dl = (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    }
    aclError carried = ACL_SUCCESS;
    char msg[SIM_MSG_MAX];
    int timed_out = 0;
    pthread_mutex_lock(&ev->mu);
    uint64_t target = never_recorded(ev) ? 0 : ev->recorded;
    while (target && ev->completed < target && ev->reset_gen < target) {
        if (timeout_ms == 0) {
            timed_out = 1;
            break;
        }
        ev->waiters++;
        int w = timeout_ms < 0 ? pthread_cond_wait(&ev->cv, &ev->mu) : pthread_cond_timedwait(&ev->cv, &ev->mu, &dl);
        ev->waiters--;
        if (w == ETIMEDOUT && ev->completed < target && ev->reset_gen < target) {
            timed_out = 1;
            break;
        }
    }
    if (!timed_out && target && ev->completed >= target && ev->err) {
        carried = ev->err;
        snprintf(msg, sizeof msg, "%s", ev->errmsg);
    }
    pthread_mutex_unlock(&ev->mu);
    if (timed_out)
        return sim_error(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, fn,
                         "event %u was not completed within %d ms (its record is still queued behind other work)",
                         ev->id, (int)timeout_ms);
    if (carried)
        return sim_error(carried, fn, "event %u completed after a device-side failure on its stream: %s", ev->id, msg);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    SIM_ENTER(aclrtSynchronizeEvent);
    sim_event *ev = NULL;
    aclError rc = sim_check_init("aclrtSynchronizeEvent");
    if (!rc)
        rc = resolve_event("aclrtSynchronizeEvent", "event", event, &ev);
    if (!rc)
        rc = sync_event("aclrtSynchronizeEvent", ev, -1);
    SIM_RETURN(aclrtSynchronizeEvent, rc, "event=%p", event);
}

SIM_EXPORT aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout)
{
    SIM_ENTER(aclrtSynchronizeEventWithTimeout);
    sim_event *ev = NULL;
    aclError rc = sim_check_init("aclrtSynchronizeEventWithTimeout");
    if (!rc && (timeout < -1 || timeout == 0))   /* CANN 9.1: 107000 for both, there is no poll */
        rc = sim_error(ACL_ERROR_RT_PARAM_INVALID, "aclrtSynchronizeEventWithTimeout",
                       "timeout %d is invalid: expected -1 (wait forever) or a positive number of ms (0 is refused)",
                       (int)timeout);
    if (!rc)
        rc = resolve_event("aclrtSynchronizeEventWithTimeout", "event", event, &ev);
    if (!rc)
        rc = sync_event("aclrtSynchronizeEventWithTimeout", ev, timeout);
    SIM_RETURN(aclrtSynchronizeEventWithTimeout, rc, "event=%p, timeout=%d", event, (int)timeout);
}

/* Timestamp of a timing event whose latest record has completed. */
static aclError event_time(const char *fn, const char *arg, sim_event *ev, uint64_t *ts)
{
    if (!(ev->flags & ACL_EVENT_TIME_LINE))
        return sim_error(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, fn,
                         "%s (event %u, flags 0x%x) was created without ACL_EVENT_TIME_LINE, so it has no timestamp",
                         arg, ev->id, ev->flags);
    pthread_mutex_lock(&ev->mu);
    int never = never_recorded(ev), done = ev->completed >= ev->recorded;
    *ts = ev->ts_ns;
    pthread_mutex_unlock(&ev->mu);
    if (never)   /* CANN 9.1: no recorder yet is the runtime's internal error */
        return sim_error(ACL_ERROR_RT_INTERNAL_ERROR, fn, "%s (event %u) has not been recorded", arg, ev->id);
    if (!done)
        return sim_error(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, fn,
                         "%s (event %u) is recorded but not complete yet; synchronize it first", arg, ev->id);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)
{
    SIM_ENTER(aclrtEventElapsedTime);
    sim_event *a = NULL, *b = NULL;
    uint64_t t0 = 0, t1 = 0;
    aclError rc = sim_check_init("aclrtEventElapsedTime");
    if (!rc && !ms)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime", "ms is NULL; pass the address of a float");
    if (!rc)
        rc = resolve_event("aclrtEventElapsedTime", "startEvent", startEvent, &a);
    if (!rc)
        rc = resolve_event("aclrtEventElapsedTime", "endEvent", endEvent, &b);
    if (!rc)
        rc = event_time("aclrtEventElapsedTime", "startEvent", a, &t0);
    if (!rc)
        rc = event_time("aclrtEventElapsedTime", "endEvent", b, &t1);
    /* End before start is a negative time, not an error (CANN 9.1). */
    if (!rc)
        *ms = (float)(((double)t1 - (double)t0) / 1e6);
    SIM_RETURN(aclrtEventElapsedTime, rc, "ms=%p, startEvent=%p, endEvent=%p -> %.3f", (void *)ms, startEvent,
               endEvent, rc ? 0.0 : (double)*ms);
}
