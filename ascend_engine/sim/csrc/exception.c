/*
 * exception.c -- device exceptions: aclrtSetExceptionInfoCallback, the
 * aclrtGet*FromExceptionInfo accessors and aclmdlCreateAndGetOpDesc.
 *
 * When a task fails on a stream (a model execution, a copy, an injected
 * `task:KIND@N=CODE` fault), the stream's worker thread calls the registered
 * callback with the failing task's device id, stream id (the id shown in
 * simulator messages), task id (the task's 0-based position among the tasks
 * the stream has run since it was created), the worker's thread id and the
 * error code, as the NPU's runtime does from its own thread.  The callback is
 * process-wide; the last registration wins and NULL removes it.
 *
 * The last SIM_EXC_KEEP failures are remembered so that
 * aclmdlCreateAndGetOpDesc can describe them.  The simulator runs a whole
 * model as one task, so the "op" of a failed model execution is the model:
 * its name, and one tensor description per input and output with the shape
 * of the executed batch and the device address of the buffer that was used.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

struct rtExceptionInfo {
    uint32_t taskid;
    uint32_t streamid;
    uint32_t tid;
    uint32_t deviceid;
    uint32_t retcode;
};

/* What a failed model execution looked like, kept for aclmdlCreateAndGetOpDesc. */
typedef struct exc_op {
    char name[SIM_MAX_NAME + 1];
    size_t n_in, n_out;
    aclTensorDesc *in, *out;    /* arrays from sim_tensor_desc_array, or NULL */
} exc_op;

typedef struct exc_record {
    int used;
    uint32_t device, stream, task;
    exc_op op;
} exc_record;

#define SIM_EXC_KEEP 64

static pthread_mutex_t exc_mu = PTHREAD_MUTEX_INITIALIZER;
static aclrtExceptionInfoCallback exc_callback;   /* guarded by exc_mu */
static exc_record exc_ring[SIM_EXC_KEEP];          /* guarded by exc_mu */
static size_t exc_next;

/* Set by the model code on the worker thread just before its task fails. */
static _Thread_local exc_op pending_op;
static _Thread_local int pending_set;

static void op_clear(exc_op *op)
{
    if (op->in)
        free(op->in);
    if (op->out)
        free(op->out);
    memset(op, 0, sizeof *op);
}

/* Descriptions of a model's inputs or outputs as they were executed. */
static aclTensorDesc *io_descs(const sim_model_info *info, const sim_io *ios, uint32_t n, void *const *ptrs,
                               const uint64_t *sym)
{
    aclTensorDesc *a = n ? sim_tensor_desc_array(n) : NULL;
    for (uint32_t i = 0; a && i < n; i++) {
        a[i].dtype = ios[i].dtype;
        a[i].format = ios[i].format;
        a[i].num_dims = ios[i].rank;
        if (ios[i].tensor == UINT32_MAX) {
            memcpy(a[i].dims, ios[i].dims, sizeof(int64_t) * ios[i].rank);   /* ascend_mbatch_shape_data */
        } else {
            sim_io_dims(info, &ios[i], sym, a[i].dims);
            for (uint32_t k = 0; k < ios[i].rank; k++)
                a[i].dims[k] = a[i].dims[k] < 0 ? -1 : a[i].dims[k];   /* no values: -1, unknown (docs/toolkit.md) */
        }
        a[i].address = ptrs ? ptrs[i] : NULL;
    }
    return a;
}

void sim_exception_note_model(const sim_model_info *info, void *const *in, void *const *out, const uint64_t *sym)
{
    if (pending_set)
        op_clear(&pending_op);
    snprintf(pending_op.name, sizeof pending_op.name, "%s", info->name);
    pending_op.in = io_descs(info, info->inputs, info->n_inputs, in, sym);
    pending_op.n_in = pending_op.in ? info->n_inputs : 0;
    pending_op.out = io_descs(info, info->outputs, info->n_outputs, out, sym);
    pending_op.n_out = pending_op.out ? info->n_outputs : 0;
    pending_set = 1;
}

void sim_exception_report(int32_t device_id, uint32_t stream_id, uint32_t task_id, aclError code)
{
    struct rtExceptionInfo info = {
        .taskid = task_id,
        .streamid = stream_id,
        .tid = (uint32_t)gettid(),
        .deviceid = (uint32_t)device_id,
        .retcode = (uint32_t)code,
    };
    pthread_mutex_lock(&exc_mu);
    exc_record *r = &exc_ring[exc_next];
    exc_next = (exc_next + 1) % SIM_EXC_KEEP;
    op_clear(&r->op);
    r->used = 1;
    r->device = info.deviceid;
    r->stream = stream_id;
    r->task = task_id;
    if (pending_set) {
        r->op = pending_op;   /* the record takes the arrays */
        memset(&pending_op, 0, sizeof pending_op);
        pending_set = 0;
    }
    aclrtExceptionInfoCallback cb = exc_callback;
    pthread_mutex_unlock(&exc_mu);
    sim_log_note("device exception: device %u stream %u task %u code %d", info.deviceid, stream_id, task_id, code);
    if (cb)
        cb(&info);   /* outside the lock: the callback may call back into the runtime */
}

SIM_EXPORT aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback)
{
    SIM_ENTER(aclrtSetExceptionInfoCallback);
    aclError rc = sim_check_init("aclrtSetExceptionInfoCallback");
    if (rc == ACL_SUCCESS) {
        pthread_mutex_lock(&exc_mu);
        exc_callback = callback;
        pthread_mutex_unlock(&exc_mu);
    }
    SIM_RETURN(aclrtSetExceptionInfoCallback, rc, "%s", callback ? "set" : "cleared");
}

/* The accessors return 0xFFFFFFFF for a NULL info (docs/toolkit.md, "Device exceptions"). */
SIM_EXPORT uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info)
{
    return info ? info->taskid : 0xFFFFFFFFu;
}

SIM_EXPORT uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info)
{
    return info ? info->streamid : 0xFFFFFFFFu;
}

SIM_EXPORT uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info)
{
    return info ? info->tid : 0xFFFFFFFFu;
}

SIM_EXPORT uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info)
{
    return info ? info->deviceid : 0xFFFFFFFFu;
}

SIM_EXPORT uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info)
{
    return info ? info->retcode : 0xFFFFFFFFu;
}

static aclTensorDesc *copy_descs(const aclTensorDesc *src, size_t n)
{
    aclTensorDesc *a = sim_tensor_desc_array(n);
    if (a)
        for (size_t i = 0; i < n; i++) {
            a[i] = src[i];
            a[i].pos = (uint32_t)i;
            a[i].count = n;
        }
    return a;
}

SIM_EXPORT aclError aclmdlCreateAndGetOpDesc(uint32_t deviceId, uint32_t streamId, uint32_t taskId, char *opName,
                                             size_t opNameLen, aclTensorDesc **inputDesc, size_t *numInputs,
                                             aclTensorDesc **outputDesc, size_t *numOutputs)
{
    SIM_ENTER(aclmdlCreateAndGetOpDesc);
    const char *fn = "aclmdlCreateAndGetOpDesc";
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && (!opName || opNameLen == 0 || !inputDesc || !numInputs || !outputDesc || !numOutputs))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "opName (with opNameLen > 0), inputDesc, numInputs, outputDesc "
                       "and numOutputs must all be given");
    if (rc == ACL_SUCCESS) {
        pthread_mutex_lock(&exc_mu);
        const exc_record *found = NULL;
        for (size_t i = 0; i < SIM_EXC_KEEP; i++) {
            const exc_record *r = &exc_ring[i];
            if (r->used && r->device == deviceId && r->stream == streamId && r->task == taskId)
                found = r;
        }
        if (!found)
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "no failed task with device %u stream %u task %u (the ids "
                           "come from the exception callback; the last %d failures are kept)", deviceId, streamId,
                           taskId, SIM_EXC_KEEP);
        else if (!found->op.name[0])
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "task %u on stream %u was not a model execution: it has no op "
                           "description", taskId, streamId);
        else if (strlen(found->op.name) >= opNameLen)
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "opNameLen %zu is too small for op name '%s' (%zu bytes with "
                           "the terminator)", opNameLen, found->op.name, strlen(found->op.name) + 1);
        else {
            aclTensorDesc *in = found->op.n_in ? copy_descs(found->op.in, found->op.n_in) : NULL;
            aclTensorDesc *out = found->op.n_out ? copy_descs(found->op.out, found->op.n_out) : NULL;
            if ((found->op.n_in && !in) || (found->op.n_out && !out)) {
                free(in);
                free(out);
                rc = sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
            } else {
                snprintf(opName, opNameLen, "%s", found->op.name);
                *inputDesc = in;
                *numInputs = found->op.n_in;
                *outputDesc = out;
                *numOutputs = found->op.n_out;
            }
        }
        pthread_mutex_unlock(&exc_mu);
    }
    SIM_RETURN(aclmdlCreateAndGetOpDesc, rc, "device %u stream %u task %u", deviceId, streamId, taskId);
}
