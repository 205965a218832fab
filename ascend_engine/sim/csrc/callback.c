/*
 * callback.c -- host callbacks: aclrtSubscribeReport, aclrtLaunchCallback,
 * aclrtProcessReport, aclrtUnSubscribeReport.
 *
 * A callback is a stream task.  When it becomes due, the stream's worker
 * hands it to the queue of the thread subscribed to that stream; that thread
 * runs it inside aclrtProcessReport.  With ACL_CALLBACK_BLOCK the worker waits
 * until the callback has returned before running later tasks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simrt.h"

typedef struct cb_item {
    struct cb_item *next;
    aclrtCallback fn;
    void *user_data;
    sim_stream *stream;
    int block;    /* the item lives on the worker's stack and the worker waits */
    int done;
    int dropped;  /* never run: the subscription or the runtime went away */
} cb_item;

typedef struct cb_thread {
    struct cb_thread *next;
    uint64_t tid;
    int nstreams;          /* streams subscribed by this thread */
    cb_item *head, *tail;  /* callbacks due, in order */
} cb_thread;

/* Everything below is guarded by cb_lock.  Subscribers sleep on cb_work_cv,
 * blocked workers on cb_done_cv (few threads: broadcasts are fine). */
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_work_cv;
static pthread_cond_t cb_done_cv = PTHREAD_COND_INITIALIZER;
static pthread_once_t cb_once = PTHREAD_ONCE_INIT;
static cb_thread *cb_threads;
static int cb_down;        /* set by aclFinalize: nothing more is delivered */
static uint64_t cb_gen;    /* bumped when the thread table is freed */

static void cb_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cb_work_cv, &a);
    pthread_condattr_destroy(&a);
}

static cb_thread *find_thread(uint64_t tid)
{
    for (cb_thread *t = cb_threads; t; t = t->next)
        if (t->tid == tid)
            return t;
    return NULL;
}

/* Removes the due items of stream s (or all if s is NULL) from t's queue,
 * marking them dropped (caller holds cb_lock). */
static void drop_items(cb_thread *t, sim_stream *s)
{
    cb_item **pp = &t->head;
    t->tail = NULL;
    while (*pp) {
        cb_item *it = *pp;
        if (s && it->stream != s) {
            t->tail = it;
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        if (it->block) {
            it->dropped = 1;
            it->done = 1;
        } else {
            free(it);
        }
    }
    pthread_cond_broadcast(&cb_done_cv);
}

void sim_cb_stream_gone(sim_stream *s)
{
    pthread_once(&cb_once, cb_init);
    pthread_mutex_lock(&cb_lock);
    if (s->cb_subscribed) {
        cb_thread *t = find_thread(s->cb_thread);
        if (t) {
            t->nstreams--;
            drop_items(t, s);
        }
        s->cb_subscribed = 0;
    }
    pthread_mutex_unlock(&cb_lock);
}

void sim_cb_shutdown(void)
{
    pthread_once(&cb_once, cb_init);
    pthread_mutex_lock(&cb_lock);
    cb_down = 1;
    for (cb_thread *t = cb_threads; t; t = t->next)
        drop_items(t, NULL);
    pthread_cond_broadcast(&cb_work_cv);
    pthread_mutex_unlock(&cb_lock);
}

void sim_cb_reset(void)
{
    pthread_mutex_lock(&cb_lock);
    while (cb_threads) {
        cb_thread *t = cb_threads;
        cb_threads = t->next;
        free(t);
    }
    cb_gen++;
    cb_down = 0;
    pthread_mutex_unlock(&cb_lock);
}

/* ---- the stream task ------------------------------------------------------------------------------ */

typedef struct {
    aclrtCallback fn;
    void *user_data;
    int block;
} callback_arg;

static aclError callback_task(void *arg, sim_stream *s)
{
    callback_arg *a = arg;
    aclError rc = sim_task_begin(s, "callback");
    if (rc)
        return rc;
    cb_item stack_item = {0};
    cb_item *it = a->block ? &stack_item : calloc(1, sizeof *it);
    if (!it) {
        sim_task_error(s, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "out of host memory delivering a callback");
        return ACL_ERROR_RT_RESOURCE_ALLOC_FAIL;
    }
    it->fn = a->fn;
    it->user_data = a->user_data;
    it->stream = s;
    it->block = a->block;
    pthread_mutex_lock(&cb_lock);
    cb_thread *t = (!cb_down && s->cb_subscribed) ? find_thread(s->cb_thread) : NULL;
    if (!t) {
        pthread_mutex_unlock(&cb_lock);
        if (!a->block)
            free(it);
        sim_task_error(s, ACL_ERROR_RT_STREAM_NO_CB_REG,
                       "a host callback became due but no thread is subscribed to stream %u any more; it was not run",
                       sim_stream_id(s));
        return ACL_ERROR_RT_STREAM_NO_CB_REG;
    }
    if (t->tail)
        t->tail->next = it;
    else
        t->head = it;
    t->tail = it;
    pthread_cond_broadcast(&cb_work_cv);
    int dropped = 0;
    if (a->block) {
        while (!stack_item.done)
            pthread_cond_wait(&cb_done_cv, &cb_lock);
        dropped = stack_item.dropped;
    }
    pthread_mutex_unlock(&cb_lock);
    if (a->block)   /* the stream stood still until the host function returned */
        sim_task_reach(s, sim_now_ns());
    if (dropped) {
        sim_task_error(s, ACL_ERROR_RT_STREAM_NO_CB_REG,
                       "a blocking host callback on stream %u was dropped before it ran (unsubscribed or finalized)",
                       sim_stream_id(s));
        return ACL_ERROR_RT_STREAM_NO_CB_REG;
    }
    return ACL_SUCCESS;
}

/* ---- AscendCL ---------------------------------------------------------------------------------------------- */

SIM_EXPORT aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream)
{
    SIM_ENTER(aclrtSubscribeReport);
    const char *fn = "aclrtSubscribeReport";
    sim_stream *s;
    pthread_once(&cb_once, cb_init);
    aclError rc = sim_stream_resolve(fn, stream, &s);
    if (!rc) {
        pthread_mutex_lock(&cb_lock);
        cb_thread *t = find_thread(threadId);
        if (s->cb_subscribed) {
            rc = sim_error(ACL_ERROR_RT_STREAM_SUBSCRIBE, fn,
                           "stream %u already has a subscribed thread (%llu); a stream has at most one, unsubscribe "
                           "it first",
                           sim_stream_id(s), (unsigned long long)s->cb_thread);
        } else {
            if (!t && (t = calloc(1, sizeof *t)) != NULL) {
                t->tid = threadId;
                t->next = cb_threads;
                cb_threads = t;
            }
            if (!t) {
                rc = sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
            } else {
                t->nstreams++;
                s->cb_subscribed = 1;
                s->cb_thread = threadId;
            }
        }
        pthread_mutex_unlock(&cb_lock);
    }
    SIM_RETURN(aclrtSubscribeReport, rc, "threadId=%llu, stream=%p", (unsigned long long)threadId, stream);
}

SIM_EXPORT aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream)
{
    SIM_ENTER(aclrtUnSubscribeReport);
    const char *fn = "aclrtUnSubscribeReport";
    sim_stream *s;
    pthread_once(&cb_once, cb_init);
    aclError rc = sim_stream_resolve(fn, stream, &s);
    if (!rc) {
        pthread_mutex_lock(&cb_lock);
        /* CANN 9.1's runtime: an unsubscribed stream is 107011, a stream
         * another thread subscribed is 107012. */
        if (!s->cb_subscribed) {
            rc = sim_error(ACL_ERROR_RT_STREAM_SUBSCRIBE, fn, "stream %u is not subscribed by any thread",
                           sim_stream_id(s));
        } else if (s->cb_thread != threadId) {
            rc = sim_error(ACL_ERROR_RT_THREAD_SUBSCRIBE, fn,
                           "stream %u is subscribed by thread %llu, not by thread %llu", sim_stream_id(s),
                           (unsigned long long)s->cb_thread, (unsigned long long)threadId);
        } else {
            cb_thread *t = find_thread(threadId);
            if (t) {
                t->nstreams--;
                drop_items(t, s);
            }
            s->cb_subscribed = 0;
        }
        pthread_mutex_unlock(&cb_lock);
    }
    SIM_RETURN(aclrtUnSubscribeReport, rc, "threadId=%llu, stream=%p", (unsigned long long)threadId, stream);
}

SIM_EXPORT aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                        aclrtStream stream)
{
    SIM_ENTER(aclrtLaunchCallback);
    const char *name = "aclrtLaunchCallback";
    sim_stream *s;
    pthread_once(&cb_once, cb_init);
    aclError rc = sim_check_init(name);
    /* CANN 9.1: the acl layer checks blockType (100000), the runtime fn (107000). */
    if (!rc && blockType != ACL_CALLBACK_NO_BLOCK && blockType != ACL_CALLBACK_BLOCK)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, name,
                       "blockType %d is invalid: expected ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK (1)",
                       (int)blockType);
    if (!rc && !fn)
        rc = sim_error(ACL_ERROR_RT_PARAM_INVALID, name, "fn is NULL: expected the host function to call");
    if (!rc)
        rc = sim_stream_resolve(name, stream, &s);
    if (!rc) {
        pthread_mutex_lock(&cb_lock);
        int subscribed = s->cb_subscribed;
        pthread_mutex_unlock(&cb_lock);
        if (!subscribed)
            rc = sim_error(ACL_ERROR_RT_STREAM_NO_CB_REG, name,
                           "no thread is subscribed to stream %u; call aclrtSubscribeReport(threadId, stream) first "
                           "and run aclrtProcessReport in that thread",
                           sim_stream_id(s));
    }
    if (!rc) {
        callback_arg a = {fn, userData, blockType == ACL_CALLBACK_BLOCK};
        rc = sim_stream_enqueue(s, "host callback", callback_task, &a, sizeof a);
    }
    SIM_RETURN(aclrtLaunchCallback, rc, "fn=%p, userData=%p, blockType=%s, stream=%p", (void *)(uintptr_t)fn, userData,
               blockType == ACL_CALLBACK_BLOCK ? "BLOCK" : "NO_BLOCK", stream);
}

SIM_EXPORT aclError aclrtProcessReport(int32_t timeout)
{
    SIM_ENTER(aclrtProcessReport);
    const char *fn = "aclrtProcessReport";
    uint64_t tid = (uint64_t)pthread_self();
    int ran = 0;
    pthread_once(&cb_once, cb_init);
    aclError rc = sim_check_init(fn);
    if (!rc && timeout != -1 && timeout <= 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "timeout %d is invalid: expected -1 (wait forever) or > 0 ms",
                       (int)timeout);
    if (!rc) {
        struct timespec dl = {0, 0};
        if (timeout > 0) {
            uint64_t t = sim_now_ns() + (uint64_t)timeout * 1000000ull;
            dl = (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
        }
        pthread_mutex_lock(&cb_lock);
        uint64_t gen = cb_gen;
        cb_thread *t = find_thread(tid);
        if (!t || t->nstreams == 0) {
            rc = sim_error(ACL_ERROR_RT_THREAD_SUBSCRIBE, fn,
                           "the calling thread (%llu) is not subscribed to any stream; call "
                           "aclrtSubscribeReport(<this thread's pthread_t>, stream) first",
                           (unsigned long long)tid);
        } else {
            while (!rc && !cb_down && gen == cb_gen && !t->head) {
                int w = timeout < 0 ? pthread_cond_wait(&cb_work_cv, &cb_lock)
                                    : pthread_cond_timedwait(&cb_work_cv, &cb_lock, &dl);
                if (w == ETIMEDOUT && !cb_down && gen == cb_gen && !t->head)
                    rc = sim_error(ACL_ERROR_RT_REPORT_TIMEOUT, fn, "no callback became due within %d ms",
                                   (int)timeout);
            }
            if (!rc && (cb_down || gen != cb_gen))
                rc = sim_error(ACL_ERROR_RT_THREAD_SUBSCRIBE, fn,
                               "AscendCL was finalized while waiting for callbacks: the subscription is gone");
            /* Run everything due, in order, one at a time outside the lock. */
            while (!rc && t->head) {
                cb_item *it = t->head;
                t->head = it->next;
                if (!t->head)
                    t->tail = NULL;
                pthread_mutex_unlock(&cb_lock);
                it->fn(it->user_data);
                ran++;
                pthread_mutex_lock(&cb_lock);
                if (cb_down || gen != cb_gen) {
                    if (it->block) {
                        it->done = 1;
                        pthread_cond_broadcast(&cb_done_cv);
                    } else {
                        free(it);
                    }
                    break;
                }
                if (it->block) {
                    it->done = 1;
                    pthread_cond_broadcast(&cb_done_cv);
                } else {
                    free(it);
                }
            }
        }
        pthread_mutex_unlock(&cb_lock);
    }
    SIM_RETURN(aclrtProcessReport, rc, "timeout=%d -> ran %d callback(s)", (int)timeout, ran);
}
