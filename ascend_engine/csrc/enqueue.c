/*
 * enqueue.c -- putting one request's work on the streams: the copy of its
 * inputs to the device, every node (a model's gear and executions, a copy
 * between devices) with its cross-stream waits, and the copy-out with the
 * slot's done event.  Only AscendCL calls on objects made at creation: no
 * allocation.
 */
#include "executor_internal.h"

#include <string.h>

/* The model id of the instance that runs request r (r % instances). */
static uint32_t node_model(const ae_node_plan *np, uint64_t r)
{
    return np->instances > 1 ? np->model.ids[r % (uint64_t)np->instances] : np->model.id;
}

/* The gear a request of `rows` rows runs at: the smallest holding them, as
 * ae_chunk_next's upper rule picks it (chunks.c); 0 when rows exceed the
 * largest gear (the request's rows run in one execution, never in chunks). */
static uint64_t pick_gear(const ae_node_plan *np, uint64_t rows)
{
    uint64_t gear, take;
    if (np->model.n_gears < 1 || rows > np->model.gears[np->model.n_gears - 1])
        return 0;
    ae_chunk_next(np->model.gears, np->model.n_gears, AE_GEAR_UPPER, rows, &gear, &take);
    return gear;
}

int aex_wait_inputs(ae_engine *e, slot *sl, int n, aclrtStream st, ae_error *err)
{
    const ae_plan *p = &e->plan;
    const ae_node_plan *np = &e->nodes[n];
    if (p->unsafe_skip_waits)
        return 0;
    if (e->node_reads_input[n] && !p->single_stream)
        ACL_CALL(e, err, np->name, aclrtStreamWaitEvent, st, sl->inputs_ready);
    for (int w = 0; w < e->node_n_waits[n]; w++)
        ACL_CALL(e, err, np->name, aclrtStreamWaitEvent, st, sl->node_done[e->node_waits[n][w]]);
    return 0;
}

int aex_begin_node(ae_engine *e, slot *sl, int n, aclrtStream st, aclrtEvent instead, ae_error *err)
{
    const ae_node_plan *np = &e->nodes[n];
    if (aex_use_device(e, np->device, err))
        return -1;
    if (e->plan.profile)
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_wait[n], st);
    if (instead) {
        ACL_CALL(e, err, np->name, aclrtStreamWaitEvent, st, instead);
        return 0;
    }
    return aex_wait_inputs(e, sl, n, st, err);
}

/* Point every data buffer of node n's datasets `start` rows into its tensor
 * (a chunk of a request after a host step), checking that a chunk of `gear`
 * rows stays inside each tensor's buffer. */
static int point_chunk(ae_engine *e, slot *sl, int n, uint64_t start, uint64_t gear, ae_error *err)
{
    const ae_node_plan *np = &e->nodes[n];
    for (int k = 0; k < np->n_inputs + np->n_outputs; k++) {
        int is_in = k < np->n_inputs;
        int i = is_in ? k : k - np->n_inputs;
        if (is_in && i == np->model.dyn_index)
            continue;
        int t = is_in ? np->inputs[i] : np->outputs[i];
        const ae_tensor_plan *tp = &e->tensors[t];
        size_t row_bytes = aex_row_bytes(e, sl, t);   /* this request's: shapes may change per request */
        size_t at = (size_t)start * row_bytes;
        if ((start + gear) * row_bytes > tp->capacity)
            return aex_fail(e, err, 0, "aclUpdateDataBuffer", np->name,
                            "a chunk of rows [%llu, +%llu) overruns the %zu-byte buffer of %s %d",
                            (unsigned long long)start, (unsigned long long)gear, tp->capacity,
                            is_in ? "input" : "output", i);
        aclDataBuffer *b = e->acl->aclmdlGetDatasetBuffer(is_in ? sl->in_sets[n] : sl->out_sets[n], (size_t)i);
        if (!e->acl->aclUpdateDataBuffer)
            return aex_fail(e, err, ACL_ERROR_FEATURE_UNSUPPORTED, "aclUpdateDataBuffer", np->name,
                            "the AscendCL library lacks aclUpdateDataBuffer, needed to run rows after a "
                            "host step in chunks");
        char *base = aex_tensor_addr(e, sl, t);
        ACL_CALL(e, err, np->name, aclUpdateDataBuffer, b, base + at, tp->capacity - at);
    }
    return 0;
}

/* The gear of a dynamic-shape node for the slot's request: its image size
 * or its dims, as the request's shape gave them (with `rows`, when not 0,
 * in place of the inputs' rows: a chunk of a dims gear over the rows). */
static int set_shape_gear(ae_engine *e, slot *sl, int n, uint32_t model_id, uint64_t rows, ae_error *err)
{
    const ae_node_plan *np = &e->nodes[n];
    const int64_t *v = sl->gear_dims + (size_t)n * AE_MAX_GEAR_DIMS;
    int count = sl->gear_count[n];
    if (np->shape.dyn_kind == AE_DYN_HW) {
        if (!e->acl->aclmdlSetDynamicHWSize)
            return aex_fail(e, err, ACL_ERROR_FEATURE_UNSUPPORTED, "aclmdlSetDynamicHWSize", np->name,
                            "the AscendCL library lacks aclmdlSetDynamicHWSize, needed by model '%s'", np->name);
        ACL_CALL(e, err, np->name, aclmdlSetDynamicHWSize, model_id, sl->in_sets[n], (size_t)np->model.dyn_index,
                 (uint64_t)v[0], (uint64_t)v[1]);
        return 0;
    }
    if (!e->acl->aclmdlSetInputDynamicDims)
        return aex_fail(e, err, ACL_ERROR_FEATURE_UNSUPPORTED, "aclmdlSetInputDynamicDims", np->name,
                        "the AscendCL library lacks aclmdlSetInputDynamicDims, needed by model '%s'", np->name);
    aclmdlIODims dims;
    memset(&dims, 0, sizeof dims);
    dims.dimCount = (size_t)count;
    for (int k = 0; k < count; k++)
        dims.dims[k] = v[k];
    for (int k = 0; rows && k < np->shape.n_row_dims; k++)
        if (np->shape.row_dims[k] < count)
            dims.dims[np->shape.row_dims[k]] = (int64_t)rows;
    ACL_CALL(e, err, np->name, aclmdlSetInputDynamicDims, model_id, sl->in_sets[n], (size_t)np->model.dyn_index,
             &dims);
    return 0;
}

/* The rows of node n's dims gears that agree with `want` (count values)
 * everywhere but at the rows, ascending and unique, into out (at most
 * AE_MAX_GEAR_DIMS); returns how many. */
static int rows_of_like_gears(const ae_node_plan *np, const int64_t *want, int count, uint64_t *out)
{
    int n_out = 0;
    if (count != np->shape.dims_count)
        return 0;
    for (int g = 0; g < np->shape.n_dims_gears; g++) {
        const int64_t *v = np->shape.dims_gears + (size_t)g * (size_t)np->shape.dims_count;
        int like = 1;
        for (int k = 0; k < count && like; k++) {
            int is_row = 0;
            for (int r = 0; r < np->shape.n_row_dims; r++)
                is_row |= np->shape.row_dims[r] == k;
            like = is_row || v[k] == want[k];
        }
        uint64_t rows = (uint64_t)v[np->shape.row_dims[0]];
        if (!like || rows < 1)
            continue;
        int at = 0;   /* insertion sort: a model has a handful of gears */
        while (at < n_out && out[at] < rows)
            at++;
        if (at < n_out && out[at] == rows)
            continue;
        if (n_out == AE_MAX_GEAR_DIMS)
            break;
        memmove(out + at + 1, out + at, (size_t)(n_out - at) * sizeof *out);
        out[at] = rows;
        n_out++;
    }
    return n_out;
}

/* One model node of a request: its waits, then its executions (one, or one
 * per chunk when it runs rows a host step produced), then its event. */
static int enqueue_model(ae_engine *e, slot *sl, uint64_t request, int n, int skip, ae_error *err)
{
    const ae_plan *p = &e->plan;
    const ae_node_plan *np = &e->nodes[n];
    aclrtStream st = e->streams[aex_node_stream(np, request)];
    uint32_t model_id = node_model(np, request);
    uint64_t rows = aex_rows(sl, np->domain);
    if (aex_begin_node(e, sl, n, st, NULL, err))
        return -1;
    if (p->profile)
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_start[n], st);
    if (skip || rows == 0) {
        /* nothing to run: the event still marks the node's place in the request */
    } else if (np->domain == AE_ROWS_REQUEST) {
        if (np->model.dyn_index < 0 && np->model.static_batch && rows != np->model.static_batch)
            return aex_fail(e, err, 0, "aclmdlExecuteAsync", np->name,
                            "model '%s' was built for a batch of %llu, the request has %llu rows",
                            np->name, (unsigned long long)np->model.static_batch, (unsigned long long)rows);
        if (np->shape.dyn_kind != AE_DYN_BATCH) {
            if (set_shape_gear(e, sl, n, model_id, 0, err))
                return -1;
        } else if (np->model.dyn_index >= 0) {
            uint64_t gear = pick_gear(np, rows);
            if (gear == 0)
                return aex_fail(e, err, 0, "aclmdlSetDynamicBatchSize", np->name,
                                "a request of %llu rows exceeds the largest gear of model '%s'",
                                (unsigned long long)rows, np->name);
            ACL_CALL(e, err, np->name, aclmdlSetDynamicBatchSize, model_id, sl->in_sets[n],
                     (size_t)np->model.dyn_index, gear);
        }
        ACL_CALL(e, err, np->name, aclmdlExecuteAsync, model_id, sl->in_sets[n], sl->out_sets[n], st);
    } else {
        /* rows from a host step: as many executions as the gears need (a
         * dynamic-shape node: static_batch rows each, all at its gear; or,
         * dims gears over its rows, the rows of the gears like the request's) */
        int shaped = np->shape.dyn_kind != AE_DYN_BATCH;
        int row_gears = shaped && np->model.static_batch == 0;
        uint64_t like[AE_MAX_GEAR_DIMS];
        const uint64_t *gears = np->model.dyn_index >= 0 && !shaped ? np->model.gears : &np->model.static_batch;
        int n_gears = np->model.dyn_index >= 0 && !shaped ? np->model.n_gears : 1;
        if (row_gears) {
            n_gears = rows_of_like_gears(np, sl->gear_dims + (size_t)n * AE_MAX_GEAR_DIMS, sl->gear_count[n], like);
            gears = like;
            if (n_gears == 0)
                return aex_fail(e, err, 0, "aclmdlSetInputDynamicDims", np->name,
                                "model '%s' has no dims gear like the request's at any rows", np->name);
        } else if (shaped && set_shape_gear(e, sl, n, model_id, 0, err)) {
            return -1;
        }
        for (uint64_t start = 0; start < rows;) {
            uint64_t gear, take;
            ae_chunk_next(gears, n_gears, p->gear_policy, rows - start, &gear, &take);
            if (point_chunk(e, sl, n, start, gear, err))
                return -1;
            if (row_gears && set_shape_gear(e, sl, n, model_id, gear, err))
                return -1;
            if (np->model.dyn_index >= 0 && !shaped)
                ACL_CALL(e, err, np->name, aclmdlSetDynamicBatchSize, model_id, sl->in_sets[n],
                         (size_t)np->model.dyn_index, gear);
            ACL_CALL(e, err, np->name, aclmdlExecuteAsync, model_id, sl->in_sets[n], sl->out_sets[n], st);
            start += take;
        }
    }
    ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_done[n], st);
    return 0;
}

/* The copy-out of a request and its done event. */
static int enqueue_copy_out(ae_engine *e, slot *sl, int skip, ae_error *err)
{
    const ae_plan *p = &e->plan;
    if (aex_use_device(e, 0, err))
        return -1;
    if (p->profile)
        ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->copy_out_wait, e->copy_out);
    if (!p->unsafe_skip_waits) {
        if (e->out_reads_input && !p->single_stream)
            ACL_CALL(e, err, NULL, aclrtStreamWaitEvent, e->copy_out, sl->inputs_ready);
        for (int w = 0; w < e->n_out_waits; w++)
            ACL_CALL(e, err, NULL, aclrtStreamWaitEvent, e->copy_out, sl->node_done[e->out_waits[w]]);
    }
    if (p->profile)
        ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->copy_out_start, e->copy_out);
    for (int o = 0; o < p->n_outputs && !skip; o++) {
        const ae_tensor_plan *tp = &e->tensors[p->output_tensors[o]];
        size_t bytes = aex_row_bytes(e, sl, p->output_tensors[o]) * aex_rows(sl, tp->domain);
        if (bytes)
            ACL_CALL(e, err, NULL, aclrtMemcpyAsync, sl->host_out + e->out_stage_off[o], bytes,
                     aex_tensor_addr(e, sl, p->output_tensors[o]), bytes, ACL_MEMCPY_DEVICE_TO_HOST, e->copy_out);
    }
    ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->done, e->copy_out);
    return 0;
}

/* A tensor copied to another device (see ae_node_plan): device to device
 * on the node's stream, or through pinned host memory when the devices have
 * no peer link.  A stream may wait on another device's event (CANN issues a
 * remote event wait), so the waits need no bridge. */
static int enqueue_copy(ae_engine *e, slot *sl, int n, int skip, ae_error *err)
{
    const ae_plan *p = &e->plan;
    const ae_node_plan *np = &e->nodes[n];
    int src = np->inputs[0], dst = np->outputs[0];
    const ae_tensor_plan *tp = &e->tensors[src];
    size_t bytes = skip ? 0 : aex_row_bytes(e, sl, src) * aex_rows(sl, tp->domain);
    aclrtStream st = e->streams[np->stream];
    char *from = aex_tensor_addr(e, sl, src);
    aclrtMemcpyKind kind = ACL_MEMCPY_DEVICE_TO_DEVICE;
    aclrtEvent bridged = NULL;
    if (np->copy.bridge_stream >= 0) {
        /* out of the source device first: a stream of its own waits, copies
         * the rows to pinned staging and marks them there */
        aclrtStream out = e->streams[np->copy.bridge_stream];
        char *stage = sl->bridge + e->bridge_off[n];
        if (aex_use_device(e, tp->device, err) || aex_wait_inputs(e, sl, n, out, err))
            return -1;
        if (bytes)
            ACL_CALL(e, err, np->name, aclrtMemcpyAsync, stage, tp->capacity, from, bytes,
                     ACL_MEMCPY_DEVICE_TO_HOST, out);
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->bridged[n], out);
        from = stage;
        kind = ACL_MEMCPY_HOST_TO_DEVICE;
        bridged = sl->bridged[n];
    }
    if (aex_begin_node(e, sl, n, st, bridged, err))
        return -1;
    if (p->profile)
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_start[n], st);
    if (bytes)
        ACL_CALL(e, err, np->name, aclrtMemcpyAsync, aex_tensor_addr(e, sl, dst), e->tensors[dst].capacity, from,
                 bytes, kind, st);
    ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_done[n], st);
    return 0;
}

int aex_enqueue_nodes(ae_engine *e, slot *sl, uint64_t request, int from, int skip, ae_error *err)
{
    for (int n = from; n < e->plan.n_nodes; n++) {
        int kind = e->nodes[n].kind;
        if (kind == AE_NODE_HOST)
            return aex_step_begin(e, sl, request, n, skip, err);   /* its worker goes on */
        if (kind == AE_NODE_IMAGE ? aex_images_enqueue(e, sl, n, skip, err)
            : kind == AE_NODE_COPY ? enqueue_copy(e, sl, n, skip, err)
                                   : enqueue_model(e, sl, request, n, skip, err))
            return -1;
    }
    if (enqueue_copy_out(e, sl, skip, err))
        return -1;
    if (e->n_steps)
        sl->tail_enqueued = 1;   /* step_lock is held: see ae_engine_submit_timed and host_steps.c */
    return 0;
}

int aex_enqueue_request(ae_engine *e, slot *sl, uint64_t request, const void *const *inputs, uint64_t rows,
                        ae_error *err)
{
    const ae_plan *p = &e->plan;

    if (p->profile)
        ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->copy_in_start, e->copy_in);
    for (int i = 0; i < p->n_inputs; i++) {
        const ae_tensor_plan *tp = &e->tensors[p->input_tensors[i]];
        size_t bytes = aex_row_bytes(e, sl, p->input_tensors[i]) * rows;
        char *stage = sl->host_in + e->in_stage_off[i];
        if (inputs[i] != stage)   /* a request run again after a failure comes from its staging */
            memcpy(stage, inputs[i], bytes);
        if (e->img && aex_images_reads_input(e, i)) {
            /* a JPEG: on the device before its decode is enqueued (the simulator's JPEGD reads the
             * header at submission, docs/simulator.md "DVPP") */
            ACL_CALL(e, err, NULL, aclrtMemcpy, aex_tensor_addr(e, sl, p->input_tensors[i]), tp->capacity, stage,
                     bytes, ACL_MEMCPY_HOST_TO_DEVICE);
            continue;
        }
        ACL_CALL(e, err, NULL, aclrtMemcpyAsync, aex_tensor_addr(e, sl, p->input_tensors[i]), tp->capacity,
                 stage, bytes,
                 ACL_MEMCPY_HOST_TO_DEVICE, e->copy_in);
    }
    ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->inputs_ready, e->copy_in);
    return aex_enqueue_nodes(e, sl, request, 0, 0, err);
}
