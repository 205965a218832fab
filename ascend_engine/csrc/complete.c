/*
 * complete.c -- waiting for requests and delivering them, oldest first:
 * event and stream waits (interruptible through the caller's poll
 * function), finding the stream to blame for a failure, and draining or
 * recovering the engine after one (or, when a request's own JPEG did not
 * decode, failing that request alone and running the others again).
 */
#include "executor_internal.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* The engine's streams: the compute streams, then the copy streams (which
 * are compute stream 0 in a single-stream plan).  Returns how many. */
static int engine_streams(const ae_engine *e, aclrtStream *out)
{
    int n = 0;
    for (int s = 0; s < e->n_created_streams; s++)
        out[n++] = e->streams[s];
    if (!e->plan.single_stream) {
        if (e->copy_in)
            out[n++] = e->copy_in;
        if (e->copy_out)
            out[n++] = e->copy_out;
    }
    return n;
}

/* Synchronize one stream, giving up at `deadline` (0: never). */
static aclError sync_stream(ae_engine *e, aclrtStream st, uint64_t deadline)
{
    if (deadline && e->acl->aclrtSynchronizeStreamWithTimeout)
        return e->acl->aclrtSynchronizeStreamWithTimeout(st, aex_ms_left(deadline));
    return e->acl->aclrtSynchronizeStream(st);
}

/* Wait for every stream of the engine, all within one timeout (the plan's,
 * or none when `bounded` is 0).  Device errors are ignored on purpose: the
 * wait also clears the streams' sticky errors after a failure.  Returns 0
 * when every stream is idle, -1 when one is still busy at the deadline. */
int aex_settle(ae_engine *e, int bounded)
{
    aclrtStream all[e->n_created_streams + 2];
    int n = engine_streams(e, all), busy = 0;
    uint64_t deadline = bounded ? aex_deadline_from_now(e) : 0;
    for (int k = 0; k < n; k++) {
        /* compute streams first, then the copy streams (device 0) */
        aex_use_device(e, k < e->n_created_streams ? e->stream_devices[k] : 0, NULL);
        if (sync_stream(e, all[k], deadline) == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT)
            busy = 1;
    }
    aex_use_device(e, 0, NULL);
    return busy ? -1 : 0;
}

/* Cancel everything in flight after a failure.  After a device error, wait
 * for every stream (within the timeout; this also clears their sticky
 * errors); after a timed-out wait, do not wait again: the requests are
 * abandoned and the engine is wedged until its streams are idle.  The
 * results of the cancelled requests are lost. */
void aex_drain(ae_engine *e, int timed_out)
{
    /* host-step workers drop what they hold for these requests, and none
     * enqueues for them any more */
    aex_steps_abandon(e);
    if (timed_out || aex_settle(e, 1) || aex_steps_idle(e, timed_out ? 1 : aex_deadline_from_now(e)))
        e->wedged = 1;
    for (int s = 0; s < e->plan.depth; s++) {
        if (e->slots[s].busy)
            e->stats.failures++;
        e->slots[s].busy = 0;
        e->slots[s].time_done = NULL;   /* a timed run_batch's array is the caller's no longer */
    }
    e->cancel_begin = e->next_request - (uint64_t)e->in_flight;
    e->cancel_end = e->next_request;
    e->in_flight = 0;
}

/* Before reusing a slot after abandoned work: wait (within the timeout) until
 * the device is idle again. */
int aex_recover(ae_engine *e, ae_error *err)
{
    if (!e->wedged)
        return 0;
    if (aex_settle(e, 1) || aex_steps_idle(e, aex_deadline_from_now(e)))
        return aex_fail(e, err, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "aclrtSynchronizeStreamWithTimeout", NULL,
                    "the device is still running requests abandoned after a timeout (waited %d ms "
                    "more): the engine accepts requests again once they finish, or close() it",
                    (int)e->plan.timeout_ms);
    e->wedged = 0;
    return 0;
}

/* Note a failed stream in err (the first one found is to blame). */
static void blame(ae_engine *e, ae_error *err, aclError rc, const char *node, const char *what)
{
    const char *recent = e->acl->aclGetRecentErrMsg ? e->acl->aclGetRecentErrMsg() : NULL;
    aex_copy_name(err->node, node);
    err->code = rc;
    snprintf(err->message, AE_MESSAGE_MAX, "%s failed on the device: %s", what,
             recent && recent[0] ? recent : "no message");
}

/* After a request failed on the device, find the stream that holds the
 * error, in the order work flows: the copy-in stream, the compute streams in
 * topological order of their nodes (the first failure is where it started;
 * later streams only inherited it through event waits), then copy-out.
 * Returns the node blamed, or -1 (a copy, or no stream found). */
static int blame_stream(ae_engine *e, ae_error *err)
{
    if (!err)
        return -1;
    uint64_t deadline = aex_deadline_from_now(e);
    aclError rc;
    if (!e->plan.single_stream) {
        rc = sync_stream(e, e->copy_in, deadline);
        if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
            aex_copy_name(err->function, "aclrtMemcpyAsync");
            blame(e, err, rc, NULL, "the copy of the request's inputs to the device");
            return -1;
        }
    }
    for (int n = 0; n < e->plan.n_nodes; n++) {
        for (int k = 0; k < e->nodes[n].instances; k++) {
            int st = aex_node_stream(&e->nodes[n], (uint64_t)k);
            aex_use_device(e, e->stream_devices[st], NULL);
            rc = sync_stream(e, e->streams[st], deadline);
            aex_use_device(e, 0, NULL);
            if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
                char what[AE_NAME_MAX + 32];
                if (e->nodes[n].kind == AE_NODE_HOST)
                    snprintf(what, sizeof what, "the copies of host step '%s'", e->nodes[n].name);
                else if (e->nodes[n].kind == AE_NODE_IMAGE)
                    snprintf(what, sizeof what, "image node '%s'", e->nodes[n].name);
                else if (e->nodes[n].kind == AE_NODE_COPY)
                    snprintf(what, sizeof what, "the copy '%s' between devices", e->nodes[n].name);
                else if (e->nodes[n].instances > 1)
                    snprintf(what, sizeof what, "model '%s' (instance %d)", e->nodes[n].name, k);
                else
                    snprintf(what, sizeof what, "model '%s'", e->nodes[n].name);
                aex_copy_name(err->function, e->nodes[n].kind == AE_NODE_MODEL   ? "aclmdlExecuteAsync"
                                             : e->nodes[n].kind == AE_NODE_IMAGE ? "acldvpp (DVPP task)"
                                                                                 : "aclrtMemcpyAsync");
                blame(e, err, rc, e->nodes[n].name, what);
                return n;
            }
        }
    }
    if (!e->plan.single_stream) {
        rc = sync_stream(e, e->copy_out, deadline);
        if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
            aex_copy_name(err->function, "aclrtMemcpyAsync");
            blame(e, err, rc, NULL, "the copy of the request's outputs to the host");
        }
    }
    return -1;
}

/* The oldest request's own JPEG did not decode (decode node n wrote no
 * picture for it: its header read at submission, its scan data is damaged).
 * The decode's sticky error reached, through the streams and the events they
 * wait on, the requests behind it, whose inputs are at no fault: wait for
 * every stream (which clears the errors), fail the oldest alone with an
 * EngineError naming the node, and put the others on the device again from
 * their staged inputs (docs/executor.md, "Image nodes").  Returns
 * AE_REQUEST_FAILED, or -1 after draining the engine when the streams do not
 * settle or a request cannot be enqueued again. */
static int fail_decode_alone(ae_engine *e, uint64_t request, int n, ae_error *err)
{
    slot *failed = &e->slots[request % (uint64_t)e->plan.depth];
    char device_said[AE_MESSAGE_MAX];
    snprintf(device_said, sizeof device_said, "%s", err->message);
    aclError code = err->code;
    aex_steps_abandon(e);
    if (aex_settle(e, 1) || aex_steps_idle(e, aex_deadline_from_now(e))) {
        aex_drain(e, 0);
        return -1;
    }
    snprintf(err->message, AE_MESSAGE_MAX,
             "image node '%s': the request's JPEG did not decode on the device (its header was read at "
             "submission; its data is damaged), DVPP code %d: %.*s", e->nodes[n].name, (int)code,
             AE_MESSAGE_MAX / 2, device_said);
    aex_copy_name(err->function, "acldvppJpegDecodeAsync");
    err->code = 0;   /* the input is at fault, not the device: an EngineError */
    err->request = request;
    failed->busy = 0;
    failed->time_done = NULL;
    e->in_flight--;
    e->stats.failures++;
    e->cancel_begin = request;
    e->cancel_end = request + 1;
    ae_error again;
    for (uint64_t r = request + 1; r < e->next_request; r++) {
        slot *sl = &e->slots[r % (uint64_t)e->plan.depth];
        const void *staged[AE_MAX_IO];
        for (int i = 0; i < e->plan.n_inputs && i < AE_MAX_IO; i++)
            staged[i] = sl->host_in + e->in_stage_off[i];
        int rc;
        if (e->n_steps) {
            pthread_mutex_lock(&e->step_lock);
            sl->tail_enqueued = sl->step_failed = sl->step_fatal = sl->step_running = 0;
            sl->step_node = -1;
            rc = aex_enqueue_request(e, sl, r, staged, sl->rows, &again);
            pthread_mutex_unlock(&e->step_lock);
        } else {
            rc = aex_enqueue_request(e, sl, r, staged, sl->rows, &again);
        }
        if (rc) {
            /* the request behind it are cancelled after all; this one keeps its own error */
            aex_drain(e, 0);
            e->cancel_begin = request;
            return -1;
        }
    }
    return AE_REQUEST_FAILED;
}

/* The wait was stopped by the caller's poll function. */
static int interrupted(ae_engine *e, ae_error *err)
{
    aex_fail(e, err, 0, "ae_engine_wait", NULL, "interrupted while waiting for the device");
    return AE_INTERRUPTED;
}

/* Ask the caller's poll function whether to stop, at most every poll_ms
 * (whether the waits in between were long or short).  Returns 1 to stop.
 * The function runs the caller's code (Python's signal handlers), which may
 * make another context current on this thread: the engine's is made current
 * again, since its callers check the context once per call, not per wait. */
int aex_poll_due(ae_engine *e, uint64_t now)
{
    if (!e->poll || now < e->next_poll_ns)
        return 0;
    e->next_poll_ns = now + (uint64_t)e->poll_ms * 1000000u;
    if (e->poll(e->poll_ctx) != 0)
        return 1;
    aex_make_current(e, NULL);
    return 0;
}

/* Spin mode: poll the event until it completes (then the blocking call below
 * returns at once, and reports any error the event carries), or until the
 * deadline has passed.  Trades a busy core for wake-up latency.  Returns 1
 * when the caller's poll function asked to stop. */
static int spin_until_complete(ae_engine *e, aclrtEvent ev, uint64_t deadline)
{
    for (;;) {
        aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        if (e->acl->aclrtQueryEventStatus(ev, &status) != ACL_SUCCESS ||
            status == ACL_EVENT_RECORDED_STATUS_COMPLETE)
            return 0;
        uint64_t now = aex_now_ns();
        if (deadline && now > deadline)
            return 0;
        if (aex_poll_due(e, now))
            return 1;
        sched_yield();
    }
}

/* Wait for one event until `deadline` (0: none), `now` being the time the
 * caller read last (a wait in a burst of them shares the burst's clock
 * reading: every wait after the first finds its event over already).  With
 * a poll function, wait in slices of poll_ms and ask it in between whether
 * to stop. */
static aclError sync_event(ae_engine *e, aclrtEvent ev, uint64_t now, uint64_t deadline, int *stop)
{
    *stop = 0;
    if (!e->acl->aclrtSynchronizeEventWithTimeout)
        return e->acl->aclrtSynchronizeEvent(ev);
    if (!e->poll)
        return deadline ? e->acl->aclrtSynchronizeEventWithTimeout(ev, aex_ms_until(now, deadline))
                        : e->acl->aclrtSynchronizeEvent(ev);
    for (;;) {
        if (aex_poll_due(e, now)) {
            *stop = 1;
            return ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
        }
        int32_t slice = e->poll_ms, left = aex_ms_until(now, deadline);
        int last = deadline && left <= slice;
        aclError rc = e->acl->aclrtSynchronizeEventWithTimeout(ev, last ? left : slice);
        if (rc != ACL_ERROR_RT_EVENT_SYNC_TIMEOUT || last)
            return rc;
        now = aex_now_ns();
    }
}

static int wait_event(ae_engine *e, aclrtEvent ev, uint64_t now, uint64_t deadline, ae_error *err)
{
    int stop = 0;
    if (e->plan.spin_wait && spin_until_complete(e, ev, deadline))
        return interrupted(e, err);
    aclError rc = sync_event(e, ev, now, deadline, &stop);
    if (stop)
        return interrupted(e, err);
    if (rc == ACL_SUCCESS)
        return 0;
    if (rc == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT)
        return aex_fail(e, err, rc, "aclrtSynchronizeEventWithTimeout", NULL,
                    "a request did not complete within %d ms", (int)e->plan.timeout_ms);
    return aex_fail(e, err, rc, "aclrtSynchronizeEvent", NULL, "waiting for a request");
}

void ae_engine_set_poll(ae_engine *e, ae_poll_fn poll, void *ctx, int poll_ms)
{
    e->poll = poll;
    e->poll_ctx = ctx;
    e->poll_ms = poll_ms > 0 ? poll_ms : 20;
    e->next_poll_ns = aex_now_ns() + (uint64_t)e->poll_ms * 1000000u;
}

/* Deliver the oldest request once its done event is known to be over (or
 * failed with `rc`, a code of wait_event). */
static int finish_oldest(ae_engine *e, int rc, ae_error *err)
{
    const ae_plan *p = &e->plan;
    uint64_t request = e->next_request - (uint64_t)e->in_flight;
    slot *sl = &e->slots[request % (uint64_t)p->depth];
    if (rc == AE_INTERRUPTED) {
        if (err)
            err->request = request;
        aex_drain(e, 0);
        return AE_INTERRUPTED;
    }
    if (rc) {
        int timed_out = err && err->code == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
        int blamed = timed_out ? -1 : blame_stream(e, err);
        if (blamed >= 0 && !sl->step_fatal && e->plan.n_inputs <= AE_MAX_IO &&
            aex_images_decode_failed(e, sl, blamed))
            return fail_decode_alone(e, request, blamed, err);
        if (err)
            err->request = request;
        aex_drain(e, timed_out);
        return -1;
    }
    if (sl->step_failed) {
        /* a host step failed for this request alone: the rest of it was
         * skipped, its done event passed; nothing else is affected */
        if (err) {
            *err = sl->step_error;
            err->request = request;
        }
        sl->time_done = NULL;   /* a failed request has no result time */
        sl->busy = 0;
        e->in_flight--;
        e->stats.failures++;
        e->cancel_begin = request;
        e->cancel_end = request + 1;
        return AE_REQUEST_FAILED;
    }
    if (p->profile)
        aex_record_profile(e, sl, request);
    for (int o = 0; o < p->n_outputs; o++) {
        const ae_tensor_plan *tp = &e->tensors[p->output_tensors[o]];
        uint64_t rows = aex_rows(sl, tp->domain);
        memcpy(sl->user_out[o], sl->host_out + e->out_stage_off[o], aex_row_bytes(e, sl, p->output_tensors[o]) * rows);
        if (sl->user_rows)
            sl->user_rows[o] = rows;
    }
    if (sl->time_done) {
        /* a timed run_batch: the moment its result is in the caller's arrays */
        *sl->time_done = (int64_t)aex_now_ns();
        sl->time_done = NULL;
    }
    sl->busy = 0;
    e->in_flight--;
    e->stats.requests++;
    return 0;
}

/* Wait for the oldest request in flight (until `deadline`, see sync_event
 * for `now`) and deliver it.  The engine's context is current: the public
 * entry points check it once per call, not once per request. */
static int complete_oldest(ae_engine *e, uint64_t now, uint64_t deadline, ae_error *err)
{
    uint64_t request = e->next_request - (uint64_t)e->in_flight;
    slot *sl = &e->slots[request % (uint64_t)e->plan.depth];
    int rc = e->n_steps ? aex_wait_tail(e, sl, deadline, err) : 0;
    if (rc == 0 && sl->step_fatal) {
        if (err)
            *err = sl->step_error;
        rc = -1;
    }
    if (rc == 0)
        rc = wait_event(e, sl->done, now, deadline, err);
    return finish_oldest(e, rc, err);
}

/* complete_oldest with a deadline of its own, its wait counted in the statistics. */
static int complete_timed(ae_engine *e, ae_error *err)
{
    uint64_t t0 = aex_now_ns();
    int rc = complete_oldest(e, t0, aex_deadline_after(e, t0), err);
    if (rc == 0)
        e->stats.wait_ns += aex_now_ns() - t0;
    return rc;
}

int ae_engine_complete_one(ae_engine *e, ae_error *err)
{
    if (e->in_flight == 0)
        return 0;
    if (aex_make_current(e, err))
        return -1;
    return complete_timed(e, err);
}

aclError ae_engine_wait_request(ae_engine *e, uint64_t request)
{
    aclrtContext current = NULL;
    if (e->acl->aclrtGetCurrentContext(&current) != ACL_SUCCESS || current != e->plan.context)
        e->acl->aclrtSetCurrentContext(e->plan.context);
    slot *sl = &e->slots[request % (uint64_t)e->plan.depth];
    aclrtEvent done = sl->done;
    uint64_t deadline = aex_deadline_from_now(e);
    if (e->n_steps && aex_wait_tail(e, sl, deadline, NULL))
        return ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
    if (deadline && e->acl->aclrtSynchronizeEventWithTimeout)
        return e->acl->aclrtSynchronizeEventWithTimeout(done, aex_ms_left(deadline));
    return e->acl->aclrtSynchronizeEvent(done);
}

int ae_engine_complete_waited(ae_engine *e, uint64_t request, aclError wait_rc, ae_error *err)
{
    if (e->in_flight == 0 || request != e->next_request - (uint64_t)e->in_flight)
        return 0;   /* completed meanwhile by another caller */
    if (aex_make_current(e, err))
        return -1;
    if (wait_rc == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT) {
        /* a host step still holding the request is what ran out of time
         * (aex_wait_tail says which, given a deadline already past); else the device */
        if (!e->n_steps || !aex_wait_tail(e, &e->slots[request % (uint64_t)e->plan.depth], 1, err))
            aex_fail(e, err, wait_rc, "aclrtSynchronizeEventWithTimeout", NULL,
                     "a request did not complete within %d ms", (int)e->plan.timeout_ms);
        return finish_oldest(e, -1, err);
    }
    return complete_timed(e, err);
}

int ae_engine_complete_ready(ae_engine *e, ae_error *err)
{
    int done = 0;
    if (e->in_flight > 0 && aex_make_current(e, err))
        return -1;
    while (e->in_flight > 0) {
        uint64_t request = e->next_request - (uint64_t)e->in_flight;
        slot *sl = &e->slots[request % (uint64_t)e->plan.depth];
        if (e->n_steps && aex_wait_tail(e, sl, 1, NULL))
            break;   /* a host step still holds it */
        aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        if (e->acl->aclrtQueryEventStatus(sl->done, &status) != ACL_SUCCESS ||
            status != ACL_EVENT_RECORDED_STATUS_COMPLETE)
            break;
        int rc = complete_timed(e, err);   /* returns at once: the event is complete */
        if (rc)
            return rc;
        done++;
    }
    return done;
}

/*
 * All slots are busy: free some.  Rather than block once per request on the
 * oldest one, block once on the request half the ring ahead of it (done
 * events complete in submission order on the copy-out stream, so every older
 * request is then over too) and deliver all of those without further
 * blocking.  A blocking wait costs a sleep and a wake-up, far more host time
 * than an enqueue; depth/2 requests stay in flight meanwhile, which keeps
 * every stream of the pipeline fed.  The burst reads the clock twice: its
 * one deadline, and its wait for the statistics.
 */
int aex_make_room(ae_engine *e, ae_error *err)
{
    int ahead = e->plan.depth / 2 - 1;   /* 0 for depth 1 to 3: the oldest only */
    if (ahead < 0)
        ahead = 0;
    if (ahead > e->in_flight - 1)
        ahead = e->in_flight - 1;
    uint64_t t0 = aex_now_ns(), deadline = aex_deadline_after(e, t0);
    if (ahead > 0) {
        uint64_t target = e->next_request - (uint64_t)e->in_flight + (uint64_t)ahead;
        slot *sl = &e->slots[target % (uint64_t)e->plan.depth];
        int rc = wait_event(e, sl->done, t0, deadline, err);
        if (rc == AE_INTERRUPTED) {
            if (err)
                err->request = target;
            aex_drain(e, 0);
            return AE_INTERRUPTED;
        }
        if (rc) {
            if (err && err->code == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT) {
                err->request = target;
                aex_drain(e, 1);
                return -1;
            }
            /* Some request up to `target` failed: complete them one by one,
             * so the older ones are delivered and the failure is pinned on
             * the request it belongs to (complete_oldest then drains). */
        }
    }
    for (int k = 0; k <= ahead; k++) {
        int rc = complete_oldest(e, t0, deadline, err);
        if (rc)
            return rc;
    }
    e->stats.wait_ns += aex_now_ns() - t0;
    return 0;
}

int ae_engine_flush(ae_engine *e, ae_error *err)
{
    if (e->in_flight > 0 && aex_make_current(e, err))
        return -1;
    while (e->in_flight > 0) {
        int rc = complete_timed(e, err);
        if (rc)
            return rc;
    }
    return 0;
}
