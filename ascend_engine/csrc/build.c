/*
 * build.c -- the engine's AscendCL objects: ae_engine_create() makes every
 * stream, event, arena, staging region and dataset a request needs, once;
 * ae_engine_close() and ae_engine_destroy() release them.
 */
#include "executor_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int new_event(ae_engine *e, ae_error *err, int timing, aclrtEvent *out)
{
    aclError rc;
    *out = NULL;
    if (!timing && e->acl->aclrtCreateEventWithFlag)
        rc = e->acl->aclrtCreateEventWithFlag(out, ACL_EVENT_SYNC);
    else
        rc = e->acl->aclrtCreateEvent(out);
    if (rc != ACL_SUCCESS)
        return aex_fail(e, err, rc, timing ? "aclrtCreateEvent" : "aclrtCreateEventWithFlag", NULL,
                    "creating event %d of the plan's %d (depth %d x (nodes %d + 2)%s); "
                    "the device's event budget is exhausted: lower depth",
                    e->n_events + 1, e->cap_events, e->plan.depth, e->plan.n_nodes,
                    e->plan.profile ? " + profiling events" : "");
    e->event_devices[e->n_events] = e->building_device;
    e->events[e->n_events++] = *out;
    return 0;
}

/* Create the next objects on device d (creation is single-threaded). */
static int build_on(ae_engine *e, int d, ae_error *err)
{
    e->building_device = d;
    return aex_use_device(e, d, err);
}

static int new_buffer(ae_engine *e, ae_error *err, const char *node, void *data, size_t size,
                      aclmdlDataset *set)
{
    aclDataBuffer *buffer = e->acl->aclCreateDataBuffer(data, size);
    if (!buffer)
        return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "aclCreateDataBuffer", node,
                    "could not wrap %zu bytes of device memory", size);
    e->buffers[e->n_buffers++] = buffer;
    ACL_CALL(e, err, node, aclmdlAddDatasetBuffer, set, buffer);
    return 0;
}

static int build_slot(ae_engine *e, int s, ae_error *err)
{
    const ae_plan *p = &e->plan;
    slot *sl = &e->slots[s];
    sl->dev = aex_calloc((size_t)e->n_devices, sizeof(char *));
    if (!sl->dev)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    for (int d = 0; d < e->n_devices; d++)
        sl->dev[d] = (char *)e->arenas[d] + (size_t)s * e->dev_slot_bytes[d];
    sl->device = sl->dev[0];
    sl->host_in = (char *)e->host_arena +
                  (size_t)s * (e->host_in_bytes + e->host_out_bytes + e->host_step_bytes + e->bridge_bytes);
    sl->host_out = sl->host_in + e->host_in_bytes;
    sl->host_steps = sl->host_out + e->host_out_bytes;
    sl->bridge = sl->host_steps + e->host_step_bytes;
    sl->in_sets = aex_calloc((size_t)p->n_nodes, sizeof(aclmdlDataset *));
    sl->out_sets = aex_calloc((size_t)p->n_nodes, sizeof(aclmdlDataset *));
    sl->node_done = aex_calloc((size_t)p->n_nodes, sizeof(aclrtEvent));
    sl->node_start = aex_calloc((size_t)p->n_nodes, sizeof(aclrtEvent));
    sl->node_wait = aex_calloc((size_t)p->n_nodes, sizeof(aclrtEvent));
    sl->step_ready = aex_calloc((size_t)p->n_nodes, sizeof(aclrtEvent));
    sl->bridged = aex_calloc((size_t)p->n_nodes, sizeof(aclrtEvent));
    sl->rows_of = aex_calloc((size_t)p->n_nodes + 1, sizeof(uint64_t));
    sl->user_out = aex_calloc((size_t)p->n_outputs, sizeof(void *));
    if (e->shaped) {
        sl->row_bytes = aex_calloc((size_t)p->n_tensors, sizeof(size_t));
        sl->gear_dims = aex_calloc((size_t)p->n_nodes * AE_MAX_GEAR_DIMS, sizeof(int64_t));
        sl->gear_count = aex_calloc((size_t)p->n_nodes, sizeof(int));
        if (!sl->row_bytes || !sl->gear_dims || !sl->gear_count)
            return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    }
    if (!sl->in_sets || !sl->out_sets || !sl->node_done || !sl->node_start || !sl->node_wait ||
        !sl->step_ready || !sl->bridged || !sl->rows_of || !sl->user_out)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    for (int n = 0; n < p->n_nodes; n++) {
        const ae_node_plan *np = &e->nodes[n];
        if (np->kind == AE_NODE_COPY && np->copy.bridge_stream >= 0) {
            /* recorded on the source device's stream after its D2H */
            if (build_on(e, e->stream_devices[np->copy.bridge_stream], err) ||
                new_event(e, err, p->profile, &sl->bridged[n]))
                return -1;
        }
        if (build_on(e, np->device, err) || new_event(e, err, p->profile, &sl->node_done[n]))
            return -1;
        if (p->profile && new_event(e, err, 1, &sl->node_wait[n]))
            return -1;
        if (np->kind == AE_NODE_HOST) {
            if (new_event(e, err, p->profile, &sl->step_ready[n]))
                return -1;
            continue;
        }
        if (p->profile && new_event(e, err, 1, &sl->node_start[n]))
            return -1;
        if (np->kind == AE_NODE_COPY || np->kind == AE_NODE_IMAGE)
            continue;
        sl->in_sets[n] = e->acl->aclmdlCreateDataset();
        sl->out_sets[n] = e->acl->aclmdlCreateDataset();
        if (!sl->in_sets[n] || !sl->out_sets[n])
            return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "aclmdlCreateDataset", np->name,
                        "could not create a dataset");
        for (int i = 0; i < np->n_inputs; i++) {
            int t = np->inputs[i];
            int rc = i == np->model.dyn_index
                         ? new_buffer(e, err, np->name, sl->dev[np->device] + np->model.dyn_offset,
                                      np->model.dyn_size, sl->in_sets[n])
                         : new_buffer(e, err, np->name, aex_tensor_addr(e, sl, t), e->tensors[t].capacity,
                                      sl->in_sets[n]);
            if (rc)
                return rc;
        }
        for (int i = 0; i < np->n_outputs; i++) {
            int t = np->outputs[i];
            if (new_buffer(e, err, np->name, aex_tensor_addr(e, sl, t), e->tensors[t].capacity, sl->out_sets[n]))
                return -1;
        }
    }
    if (build_on(e, 0, err) || new_event(e, err, p->profile, &sl->inputs_ready) ||
        new_event(e, err, p->profile, &sl->done))
        return -1;
    if (p->profile && (new_event(e, err, 1, &sl->copy_in_start) || new_event(e, err, 1, &sl->copy_out_wait) ||
                       new_event(e, err, 1, &sl->copy_out_start)))
        return -1;
    return 0;
}

int ae_engine_create(const ae_acl_api *api, const ae_plan *plan, ae_engine **out, ae_error *err)
{
    *out = NULL;
    if (!api || !plan)
        return aex_fail(NULL, err, 0, "ae_engine_create", NULL, "no AscendCL table or plan");
    if (aex_check_plan(plan, err))
        return -1;
    ae_engine *e = aex_calloc(1, sizeof *e);
    if (!e)
        return aex_fail(NULL, err, 0, "ae_engine_create", NULL, "out of host memory");
    e->acl = api;
    e->poll_ms = 20;
    if (aex_copy_plan(e, plan, err) || aex_plan_waits(e, err) || aex_make_current(e, err))
        goto failed;
    const ae_plan *p = &e->plan;

    /* host staging layout: inputs then outputs, each buffer 128-aligned */
    e->in_stage_off = aex_calloc((size_t)p->n_inputs, sizeof(size_t));
    e->out_stage_off = aex_calloc((size_t)p->n_outputs, sizeof(size_t));
    if (!e->in_stage_off || !e->out_stage_off) {
        aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
        goto failed;
    }
    for (int i = 0; i < p->n_inputs; i++) {
        e->in_stage_off[i] = e->host_in_bytes;
        e->host_in_bytes += aex_align_up(e->tensors[p->input_tensors[i]].row_bytes * p->max_batch, AE_ALIGN);
    }
    for (int i = 0; i < p->n_outputs; i++) {
        e->out_stage_off[i] = e->host_out_bytes;
        e->host_out_bytes += aex_align_up(e->tensors[p->output_tensors[i]].capacity, AE_ALIGN);
    }
    if (aex_steps_create(e, err))
        goto failed;

    /* streams */
    e->streams = aex_calloc((size_t)p->n_streams, sizeof(aclrtStream));
    if (!e->streams) {
        aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
        goto failed;
    }
    for (int s = 0; s < p->n_streams; s++) {
        if (aex_use_device(e, e->stream_devices[s], err))
            goto failed;
        aclError rc = e->acl->aclrtCreateStream(&e->streams[s]);
        if (rc != ACL_SUCCESS) {
            aex_fail(e, err, rc, "aclrtCreateStream", NULL, "creating compute stream %d of %d", s + 1,
                 p->n_streams);
            goto failed;
        }
        e->n_created_streams++;
    }
    if (aex_use_device(e, 0, err))
        goto failed;
    if (p->single_stream) {
        e->copy_in = e->copy_out = e->streams[0];
    } else {
        aclError rc = e->acl->aclrtCreateStream(&e->copy_in);
        if (rc == ACL_SUCCESS)
            rc = e->acl->aclrtCreateStream(&e->copy_out);
        if (rc != ACL_SUCCESS) {
            aex_fail(e, err, rc, "aclrtCreateStream", NULL, "creating the copy streams");
            goto failed;
        }
    }

    /* one device arena per device and one pinned host region for all slots */
    aclError rc = ACL_SUCCESS;
    for (int d = 0; d < e->n_devices; d++) {
        size_t bytes = e->dev_slot_bytes[d] * (size_t)p->depth;
        if (aex_use_device(e, d, err))
            goto failed;
        /* image nodes: every picture is DVPP memory (docs/simulator.md, "DVPP") */
        int dvpp = d == 0 && p->dvpp;
        rc = dvpp ? p->dvpp->acldvppMalloc(&e->arenas[d], bytes ? bytes : AE_ALIGN)
                  : e->acl->aclrtMalloc(&e->arenas[d], bytes ? bytes : AE_ALIGN, ACL_MEM_MALLOC_HUGE_FIRST);
        if (rc != ACL_SUCCESS) {
            e->arenas[d] = NULL;
            aex_fail(e, err, rc, dvpp ? "acldvppMalloc" : "aclrtMalloc", NULL,
                     "allocating the arena of %zu bytes on device %d (%d slots x %zu bytes)", bytes,
                     (int)e->device_ids[d], p->depth, e->dev_slot_bytes[d]);
            goto failed;
        }
        e->arena_bytes += bytes;
    }
    e->arena = e->arenas[0];
    /* copies between devices: open the direction source -> destination */
    for (int n = 0; n < p->n_nodes; n++) {
        const ae_node_plan *np = &e->nodes[n];
        if (np->kind != AE_NODE_COPY || np->copy.bridge_stream >= 0)
            continue;
        int from = e->tensors[np->inputs[0]].device;
        if (!e->acl->aclrtDeviceEnablePeerAccess) {
            aex_fail(e, err, ACL_ERROR_FEATURE_UNSUPPORTED, "aclrtDeviceEnablePeerAccess", np->name,
                     "the AscendCL library lacks peer access: copy through the host instead");
            goto failed;
        }
        if (aex_use_device(e, from, err))
            goto failed;
        rc = e->acl->aclrtDeviceEnablePeerAccess(e->device_ids[np->device], 0);
        if (rc != ACL_SUCCESS) {
            aex_fail(e, err, rc, "aclrtDeviceEnablePeerAccess", np->name,
                     "opening peer access from device %d to device %d for copy '%s'",
                     (int)e->device_ids[from], (int)e->device_ids[np->device], np->name);
            goto failed;
        }
    }
    if (aex_use_device(e, 0, err))
        goto failed;
    e->host_bytes = (e->host_in_bytes + e->host_out_bytes + e->host_step_bytes + e->bridge_bytes) *
                    (size_t)p->depth;
    rc = e->acl->aclrtMallocHost(&e->host_arena, e->host_bytes ? e->host_bytes : AE_ALIGN);
    if (rc != ACL_SUCCESS) {
        e->host_arena = NULL;
        aex_fail(e, err, rc, "aclrtMallocHost", NULL, "allocating %zu bytes of pinned staging",
             e->host_bytes);
        goto failed;
    }

    /* data buffers and events: counted up front so nothing is reallocated */
    int per_slot_buffers = 0;
    for (int n = 0; n < p->n_nodes; n++)
        if (e->nodes[n].kind == AE_NODE_MODEL)
            per_slot_buffers += e->nodes[n].n_inputs + e->nodes[n].n_outputs;
    e->cap_buffers = per_slot_buffers * p->depth;
    int bridged = 0;
    for (int n = 0; n < p->n_nodes; n++)
        bridged += e->nodes[n].kind == AE_NODE_COPY && e->nodes[n].copy.bridge_stream >= 0;
    e->cap_events = p->depth * ((p->profile ? p->n_nodes * 3 + 5 : p->n_nodes + 2) + e->n_steps + bridged) +
                    (p->profile ? 1 : 0);
    e->buffers = aex_calloc((size_t)e->cap_buffers, sizeof(aclDataBuffer *));
    e->events = aex_calloc((size_t)e->cap_events, sizeof(aclrtEvent));
    e->event_devices = aex_calloc((size_t)e->cap_events, sizeof(int));
    e->slots = aex_calloc((size_t)p->depth, sizeof(slot));
    if (!e->buffers || !e->events || !e->event_devices || !e->slots) {
        aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
        goto failed;
    }
    for (int s = 0; s < p->depth; s++)
        if (build_slot(e, s, err))
            goto failed;
    if (build_on(e, 0, err) || (p->profile && new_event(e, err, 1, &e->trace_base)))
        goto failed;
    if (aex_images_create(e, err))
        goto failed;
    if (aex_steps_start(e, err))
        goto failed;
    *out = e;
    return 0;

failed:
    ae_engine_destroy(e);
    return -1;
}

/* Tear down everything but the engine struct's plan copies.  Returns how
 * many AscendCL releases failed; the first one is described in err. */
static int release_all(ae_engine *e, ae_error *err)
{
    const ae_acl_api *acl = e->acl;
    int failed = 0;
    aex_steps_stop(e);   /* no worker may enqueue while things are destroyed */
    failed += aex_images_release(e, err);
#define RELEASE(call, ...)                                                          \
    do {                                                                            \
        aclError rc_ = acl->call(__VA_ARGS__);                                      \
        if (rc_ != ACL_SUCCESS && failed++ == 0)                                    \
            aex_fail(e, err, rc_, #call, NULL, "%s failed while closing the engine", #call); \
    } while (0)
    if (e->slots) {
        for (int s = 0; s < e->plan.depth; s++) {
            slot *sl = &e->slots[s];
            for (int n = 0; n < e->plan.n_nodes && sl->in_sets; n++) {
                if (sl->in_sets[n])
                    RELEASE(aclmdlDestroyDataset, sl->in_sets[n]);
                if (sl->out_sets[n])
                    RELEASE(aclmdlDestroyDataset, sl->out_sets[n]);
            }
            free(sl->in_sets);
            free(sl->out_sets);
            free(sl->node_done);
            free(sl->node_start);
            free(sl->node_wait);
            free(sl->step_ready);
            free(sl->bridged);
            free(sl->rows_of);
            free(sl->row_bytes);
            free(sl->gear_dims);
            free(sl->gear_count);
            free(sl->user_out);
            free(sl->dev);
        }
        free(e->slots);
        e->slots = NULL;
    }
    for (int i = 0; i < e->n_buffers; i++)
        RELEASE(aclDestroyDataBuffer, e->buffers[i]);
    e->n_buffers = 0;
    for (int i = 0; i < e->n_events; i++) {
        aex_use_device(e, e->event_devices[i], NULL);
        RELEASE(aclrtDestroyEvent, e->events[i]);
    }
    e->n_events = 0;
    aex_use_device(e, 0, NULL);
    if (!e->plan.single_stream) {
        if (e->copy_in)
            RELEASE(aclrtDestroyStream, e->copy_in);
        if (e->copy_out)
            RELEASE(aclrtDestroyStream, e->copy_out);
    }
    e->copy_in = e->copy_out = NULL;
    for (int s = 0; s < e->n_created_streams; s++) {
        aex_use_device(e, e->stream_devices[s], NULL);
        RELEASE(aclrtDestroyStream, e->streams[s]);
    }
    e->n_created_streams = 0;
    for (int d = 0; e->arenas && d < e->n_devices; d++) {
        aex_use_device(e, d, NULL);
        if (e->arenas[d] && d == 0 && e->plan.dvpp) {
            aclError rc_ = e->plan.dvpp->acldvppFree(e->arenas[d]);
            if (rc_ != ACL_SUCCESS && failed++ == 0)
                aex_fail(e, err, rc_, "acldvppFree", NULL, "acldvppFree failed while closing the engine");
        } else if (e->arenas[d]) {
            RELEASE(aclrtFree, e->arenas[d]);
        }
        e->arenas[d] = NULL;
    }
    aex_use_device(e, 0, NULL);
    e->arena = NULL;
    if (e->host_arena)
        RELEASE(aclrtFreeHost, e->host_arena);
    e->host_arena = NULL;
#undef RELEASE
    return failed;
}

/* Free the engine's host memory (after release_all). */
static void free_engine(ae_engine *e)
{
    for (int n = 0; e->nodes && n < e->plan.n_nodes; n++) {
        if (e->node_inputs)
            free(e->node_inputs[n]);
        if (e->node_outputs)
            free(e->node_outputs[n]);
        if (e->node_gears)
            free(e->node_gears[n]);
        if (e->node_dims_gears)
            free(e->node_dims_gears[n]);
        if (e->node_row_dims)
            free(e->node_row_dims[n]);
        if (e->node_waits)
            free(e->node_waits[n]);
        if (e->node_model_ids)
            free(e->node_model_ids[n]);
        if (e->node_streams)
            free(e->node_streams[n]);
    }
    free(e->node_model_ids);
    free(e->node_streams);
    free(e->node_inputs);
    free(e->node_outputs);
    free(e->node_gears);
    free(e->node_dims_gears);
    free(e->node_row_dims);
    free(e->node_waits);
    free(e->node_n_waits);
    free(e->node_reads_input);
    free(e->out_waits);
    free(e->in_stage_off);
    free(e->out_stage_off);
    free(e->streams);
    free(e->buffers);
    free(e->events);
    free(e->tensors);
    free(e->nodes);
    free(e->input_tensors);
    free(e->output_tensors);
    free(e->node_ms);
    free(e->trace_rows);
    free(e->trace_requests);
    free(e->contexts);
    free(e->device_ids);
    free(e->dev_slot_bytes);
    free(e->arenas);
    free(e->stream_devices);
    free(e->event_devices);
    free(e->bridge_off);
    aex_steps_free(e);
    free(e);
}

static void make_context_current(ae_engine *e)
{
    aclrtContext current = NULL;
    if (e->acl->aclrtGetCurrentContext(&current) != ACL_SUCCESS || current != e->plan.context)
        e->acl->aclrtSetCurrentContext(e->plan.context);
}

void ae_engine_destroy(ae_engine *e)
{
    if (!e)
        return;
    make_context_current(e);
    /* wait for everything enqueued before releasing what it uses */
    aex_settle(e, 0);
    release_all(e, NULL);
    free_engine(e);
}

int ae_engine_close(ae_engine *e, ae_error *err)
{
    if (!e)
        return 0;
    make_context_current(e);
    /* Nothing may be released while the device still uses it.  Normally the
     * streams are idle within the timeout; after an abandoned wait they may
     * not be, and then the caller is told to try again later. */
    if (aex_settle(e, 1)) {
        aex_fail(e, err, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "aclrtSynchronizeStreamWithTimeout", NULL,
             "the device is still running work abandoned after a timeout (waited %d ms): nothing "
             "was released; close the engine again once the device is idle",
             (int)e->plan.timeout_ms);
        return 1;
    }
    ae_error first;
    int failed = release_all(e, &first);
    if (failed && err) {
        *err = first;
        size_t used = strlen(err->message);
        if (failed > 1 && used < AE_MESSAGE_MAX - 1)
            snprintf(err->message + used, AE_MESSAGE_MAX - used, " (and %d more releases failed)",
                     failed - 1);
    }
    free_engine(e);
    return failed ? -1 : 0;
}
