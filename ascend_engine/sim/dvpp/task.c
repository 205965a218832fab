/*
 * task.c -- image tasks on a stream.  A call that submits work copies what
 * the task needs (picture layouts, regions), takes a reference on every
 * handle the task will write (the channel, output picture descriptions) and
 * pins every buffer it will read or write, then queues the task through the
 * simulator (aeSimStreamSubmit), so it runs in order with the stream's copies,
 * model executions and event records.  When it runs, the task checks that its
 * channel and buffers are still there, does the pixel work, and hands back
 * the modelled device time of its module (soc.c), which the simulator holds
 * the stream for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dvpp_internal.h"

dvpp_job *dvpp_job_new_locked(const char *fn, acldvppChannelDesc *channel)
{
    dvpp_job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    job->fn = fn;
    job->channel = channel;
    job->channel_generation = channel->generation;
    dvpp_obj_ref_locked(&channel->h);
    return job;
}

int dvpp_job_ref_locked(dvpp_job *job, dvpp_obj *o)
{
    /* A picture of a batch lives as long as its batch. */
    if (o->kind == DVPP_OBJ_PIC && ((acldvppPicDesc *)o)->batch)
        o = &((acldvppPicDesc *)o)->batch->h;
    if (job->n_refs == job->cap_refs) {
        size_t cap = job->cap_refs ? job->cap_refs * 2 : 4;
        dvpp_obj **r = realloc(job->refs, cap * sizeof *r);
        if (!r)
            return -1;
        job->refs = r;
        job->cap_refs = cap;
    }
    dvpp_obj_ref_locked(o);
    job->refs[job->n_refs++] = o;
    return 0;
}

int dvpp_job_pin(dvpp_job *job, const void *ptr, const char *name)
{
    if (job->n_pins == job->cap_pins) {
        size_t cap = job->cap_pins ? job->cap_pins * 2 : 4;
        void **p = realloc(job->pins, cap * sizeof *p);
        if (!p)
            return -1;
        job->pins = p;
        const char **n = realloc(job->pin_names, cap * sizeof *n);
        if (!n)
            return -1;
        job->pin_names = n;
        job->cap_pins = cap;
    }
    job->pins[job->n_pins] = aeSimMemPin(ptr);
    job->pin_names[job->n_pins] = name;
    job->n_pins++;
    return 0;
}

void dvpp_job_free(dvpp_job *job)
{
    if (!job)
        return;
    for (size_t i = 0; i < job->n_pins; i++)
        aeSimMemUnpin(job->pins[i]);
    dvpp_lock();
    for (size_t i = 0; i < job->n_refs; i++)
        dvpp_obj_unref_locked(job->refs[i]);
    if (job->channel)
        dvpp_obj_unref_locked(&job->channel->h);
    dvpp_unlock();
    free(job->refs);
    free(job->pins);
    free(job->pin_names);
    free(job->payload);
    free(job);
}

aclError dvpp_decode_submit_locked(const char *fn, aclError rc, const dvpp_decode_task *t, aclrtStream stream)
{
    dvpp_job *job = NULL;
    if (!rc) {
        job = dvpp_job_new_locked(fn, t->channel);
        void *payload = job ? malloc(t->payload_size) : NULL;
        if (payload) {
            memcpy(payload, t->payload, t->payload_size);
            job->payload = payload;   /* freed with the job */
        }
        if (!payload || dvpp_job_ref_locked(job, &t->output->h))
            rc = aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory queueing the decode");
    }
    dvpp_unlock();
    if (!rc && (dvpp_job_pin(job, t->data, "data") || dvpp_job_pin(job, t->out_data, "outputDesc data")))
        rc = aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory queueing the decode");
    if (rc) {
        dvpp_job_free(job);
        return rc;
    }
    job->work = t->work;
    job->device_ns = t->device_ns;
    return dvpp_job_submit(job, stream, t->what);
}

/* Why the task cannot run, or ACL_SUCCESS. */
static aclError job_still_valid(dvpp_job *job, char *msg, size_t n)
{
    dvpp_lock();
    int channel_gone = !job->channel->created || job->channel->generation != job->channel_generation;
    dvpp_unlock();
    if (channel_gone) {
        snprintf(msg, n, "%s: its DVPP channel was destroyed (acldvppDestroyChannel) while the task was queued; "
                 "synchronize the stream before destroying the channel", job->fn);
        return DVPP_TASK_FAILED;
    }
    for (size_t i = 0; i < job->n_pins; i++)
        if (!aeSimMemPinLive(job->pins[i])) {
            snprintf(msg, n, "%s: %s (allocation %p) was freed while the task was queued; synchronize the stream "
                     "before freeing memory it uses", job->fn, job->pin_names[i], job->pins[i]);
            return DVPP_TASK_FAILED;
        }
    return ACL_SUCCESS;
}

static aclError job_run(void *p, int skip, char *msg, size_t n, uint64_t *device_ns)
{
    dvpp_job *job = p;
    aclError rc = ACL_SUCCESS;
    *device_ns = 0;
    if (!skip) {
        rc = job_still_valid(job, msg, n);
        if (!rc)
            rc = job->work(job, msg, n);
        if (!rc)
            *device_ns = job->device_ns;   /* the simulator holds the stream this long */
    }
    dvpp_job_free(job);
    return rc;
}

aclError dvpp_job_submit(dvpp_job *job, aclrtStream stream, const char *what)
{
    aclError rc = aeSimStreamSubmit(job->fn, stream, what, job_run, job);
    if (rc)
        dvpp_job_free(job);
    return rc;
}
