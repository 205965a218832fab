/*
 * companion.c -- what the companion library libacl_dvpp.so reaches inside the
 * simulator: the per-thread recent error, stream resolution, tasks on a
 * stream and the device-memory checks and pins that every other simulator
 * task uses (ascend_engine/sim/standin/standin.h declares them).  The
 * companion leaves these undefined and takes them from the AscendCL library
 * the program links, as the real libacl_dvpp.so takes its runtime calls from
 * libascendcl.so, so its image tasks queue, order with events and report
 * errors exactly like copies and model executions do.
 */
#include <stdio.h>

#include "simrt.h"
#include "../standin/standin.h"   /* the interface it implements */

SIM_EXPORT aclError aeSimError(aclError code, const char *fn, const char *fmt, ...)
{
    char msg[SIM_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    aclError rc = sim_error(code, fn ? fn : "(unknown function)", "%s", msg);
    if (sim_log_enabled)
        sim_log_call(fn ? fn : "(unknown function)", rc, "%s", msg);
    return rc;
}

SIM_EXPORT aclError aeSimStreamDevice(const char *fn, aclrtStream stream, int32_t *device_id)
{
    sim_stream *s = NULL;
    aclError rc = sim_stream_resolve(fn, stream, &s);
    if (!rc)
        *device_id = sim_stream_device(s);
    return rc;
}

typedef struct {
    aeSimTaskFn run;
    void *job;
} companion_task_arg;

static aclError companion_task(void *arg, sim_stream *s)
{
    companion_task_arg *a = arg;
    char msg[SIM_MSG_MAX];
    msg[0] = '\0';
    /* ASCEND_SIM_FAULTS task:dvpp@N=CODE fails the N-th image task. */
    aclError injected = sim_task_begin(s, "dvpp");
    uint64_t device_ns = 0, wall0 = sim_now_ns();
    aclError rc = a->run(a->job, injected != ACL_SUCCESS, msg, sizeof msg, &device_ns);
    sim_task_occupy(s, wall0, device_ns);
    if (injected)
        return injected;
    if (rc)
        sim_task_error(s, rc, "%s", msg[0] ? msg : "image task failed");
    return rc;
}

SIM_EXPORT aclError aeSimStreamSubmit(const char *fn, aclrtStream stream, const char *what, aeSimTaskFn run, void *job)
{
    sim_stream *s = NULL;
    aclError rc = sim_stream_resolve(fn, stream, &s);
    if (!rc) {
        companion_task_arg a = {run, job};
        rc = sim_stream_enqueue(s, what, companion_task, &a, sizeof a);
    }
    return rc;
}

SIM_EXPORT aclError aeSimMemCheck(const char *fn, const char *arg_name, const void *ptr, size_t len,
                                  int32_t device_id)
{
    return sim_mem_check_device(fn, arg_name, ptr, len, device_id);
}

SIM_EXPORT void *aeSimMemPin(const void *ptr)
{
    return sim_mem_pin(ptr);
}

SIM_EXPORT int aeSimMemPinLive(const void *token)
{
    return sim_mem_pin_live(token);
}

SIM_EXPORT void aeSimMemUnpin(void *token)
{
    sim_mem_unpin(token);
}
