/*
 * executor.c -- the pipelined multi-stream executor (see executor.h).
 *
 * Everything a request needs is created in ae_engine_create(); the run path
 * (submit / complete) only copies rows into pinned staging and enqueues
 * AscendCL work, so its cost is a handful of calls per node.
 */
#include "executor_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

/* ---- small helpers ------------------------------------------------------ */

uint64_t aex_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

static void copy_name(char *dst, const char *src)
{
    snprintf(dst, AE_NAME_MAX, "%s", src ? src : "");
}

/* The single error-reporting path: fills err from an AscendCL failure (or an
 * engine-level problem when code is 0) and returns -1. */
int aex_fail(ae_engine *e, ae_error *err, aclError code, const char *function,
                const char *node, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    err->request = AE_NO_REQUEST;
    copy_name(err->function, function);
    copy_name(err->node, node);
    char what[AE_MESSAGE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *recent = NULL;
    if (code != ACL_SUCCESS && e && e->acl && e->acl->aclGetRecentErrMsg)
        recent = e->acl->aclGetRecentErrMsg();
    if (recent && recent[0])
        snprintf(err->message, AE_MESSAGE_MAX, "%s: %s", what, recent);
    else
        snprintf(err->message, AE_MESSAGE_MAX, "%s", what);
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

/* ---- creation ------------------------------------------------------------ */

static int check_plan(const ae_plan *p, ae_error *err)
{
#define BAD(...) return aex_fail(NULL, err, 0, "ae_engine_create", NULL, __VA_ARGS__)
    if (p->depth < 1)
        BAD("depth must be at least 1, got %d", p->depth);
    if (p->n_streams < 1)
        BAD("a plan needs at least one compute stream, got %d", p->n_streams);
    if (p->n_nodes < 1 || p->n_inputs < 1 || p->n_outputs < 1)
        BAD("a plan needs nodes, inputs and outputs (got %d, %d, %d)", p->n_nodes, p->n_inputs,
            p->n_outputs);
    if (p->max_batch < 1)
        BAD("max_batch must be at least 1");
    int n_dev = p->n_devices > 1 ? p->n_devices : 1;
    if (p->n_devices > 1) {
        if (!p->contexts || !p->device_ids || !p->device_slot_bytes || !p->stream_devices)
            BAD("a plan of %d devices needs contexts, device ids, slot sizes and stream devices", p->n_devices);
        if (p->contexts[0] != p->context || p->device_ids[0] != p->device_id ||
            p->device_slot_bytes[0] != p->slot_bytes)
            BAD("device 0 of the plan's list differs from its context, device id or slot size");
        for (int s = 0; s < p->n_streams; s++)
            if (p->stream_devices[s] < 0 || p->stream_devices[s] >= n_dev)
                BAD("compute stream %d is on device %d of %d", s, p->stream_devices[s], n_dev);
    }
    for (int t = 0; t < p->n_tensors; t++) {
        const ae_tensor_plan *tp = &p->tensors[t];
        if (tp->device < 0 || tp->device >= n_dev)
            BAD("tensor %d is on device %d of %d", t, tp->device, n_dev);
        size_t region = tp->device ? p->device_slot_bytes[tp->device] : p->slot_bytes;
        if (tp->offset > region || tp->capacity > region - tp->offset)
            BAD("tensor %d [%zu, +%zu) lies outside the slot region of %zu bytes", t, tp->offset,
                tp->capacity, region);
        if (tp->domain != AE_ROWS_REQUEST &&
            (tp->domain < 0 || tp->domain >= p->n_nodes || p->nodes[tp->domain].kind != AE_NODE_HOST ||
             !p->nodes[tp->domain].rows_any))
            BAD("tensor %d: its rows come from node %d, which is not a host step with rows \"any\"", t,
                tp->domain);
        uint64_t rows = tp->domain == AE_ROWS_REQUEST ? p->max_batch : p->nodes[tp->domain].max_rows;
        if (tp->row_bytes == 0 || tp->row_bytes * rows > tp->capacity)
            BAD("tensor %d: %llu rows of %zu bytes do not fit its %zu bytes", t,
                (unsigned long long)rows, tp->row_bytes, tp->capacity);
    }
    for (int i = 0; i < p->n_inputs; i++)
        if (p->input_tensors[i] < 0 || p->input_tensors[i] >= p->n_tensors)
            BAD("pipeline input %d refers to tensor %d of %d", i, p->input_tensors[i], p->n_tensors);
    for (int i = 0; i < p->n_outputs; i++)
        if (p->output_tensors[i] < 0 || p->output_tensors[i] >= p->n_tensors)
            BAD("pipeline output %d refers to tensor %d of %d", i, p->output_tensors[i],
                p->n_tensors);
    for (int n = 0; n < p->n_nodes; n++) {
        const ae_node_plan *np = &p->nodes[n];
        if (np->kind != AE_NODE_MODEL && np->kind != AE_NODE_HOST && np->kind != AE_NODE_COPY)
            BAD("node '%s' has kind %d", np->name, np->kind);
        if (np->device < 0 || np->device >= n_dev)
            BAD("node '%s' is on device %d of %d", np->name, np->device, n_dev);
        for (int k = 0; k < (np->instances > 1 ? np->instances : 1); k++) {
            int st = np->instances > 1 && np->streams ? np->streams[k] : np->stream;
            if (p->n_devices > 1 && st >= 0 && st < p->n_streams && p->stream_devices[st] != np->device)
                BAD("node '%s' on device %d uses stream %d of device %d", np->name, np->device, st,
                    p->stream_devices[st]);
        }
        for (int i = 0; i < np->n_outputs; i++) {
            int t = np->outputs[i];
            if (t >= 0 && t < p->n_tensors && p->tensors[t].device != np->device)
                BAD("node '%s' on device %d writes tensor %d of device %d", np->name, np->device, t,
                    p->tensors[t].device);
        }
        for (int i = 0; i < np->n_inputs && np->kind != AE_NODE_COPY; i++) {
            int t = np->inputs[i];
            if (t >= 0 && t < p->n_tensors && p->tensors[t].device != np->device)
                BAD("node '%s' on device %d reads tensor %d of device %d: copy it first", np->name,
                    np->device, t, p->tensors[t].device);
        }
        if (np->kind == AE_NODE_COPY) {
            if (np->n_inputs != 1 || np->n_outputs != 1 || np->instances > 1 || np->dyn_index >= 0)
                BAD("copy node '%s' needs one input and one output", np->name);
            if (np->inputs[0] >= 0 && np->inputs[0] < p->n_tensors && np->outputs[0] >= 0 &&
                np->outputs[0] < p->n_tensors &&
                (p->tensors[np->inputs[0]].device == np->device ||
                 p->tensors[np->inputs[0]].row_bytes != p->tensors[np->outputs[0]].row_bytes))
                BAD("copy node '%s' must copy a tensor of another device into one of its own, row for row",
                    np->name);
            if (np->bridge_stream >= p->n_streams ||
                (np->bridge_stream >= 0 && p->n_devices > 1 &&
                 p->stream_devices[np->bridge_stream] != p->tensors[np->inputs[0]].device))
                BAD("copy node '%s': its host bridge needs a stream of the source device", np->name);
        }
        if (np->domain != AE_ROWS_REQUEST &&
            (np->domain < 0 || np->domain >= n || p->nodes[np->domain].kind != AE_NODE_HOST ||
             !p->nodes[np->domain].rows_any))
            BAD("node '%s' runs on the rows of node %d, which is not an earlier host step with rows \"any\"",
                np->name, np->domain);
        if (np->n_inputs > AE_MAX_IO || np->n_outputs > AE_MAX_IO)
            BAD("node '%s' has more than %d inputs or outputs", np->name, AE_MAX_IO);
        if (np->kind == AE_NODE_HOST) {
            if (!np->host_fn == !np->host_reshape_fn || np->workers < 1 || np->instances > 1 ||
                np->dyn_index >= 0)
                BAD("host step '%s' needs one function (host_fn or host_reshape_fn) and at least one "
                    "worker (got %d), and no model settings", np->name, np->workers);
            if (np->rows_any && np->max_rows < 1)
                BAD("host step '%s' with rows \"any\" needs max_rows of at least 1", np->name);
        }
        if (np->stream < 0 || np->stream >= p->n_streams)
            BAD("node '%s' uses stream %d of %d", np->name, np->stream, p->n_streams);
        if (np->instances < 0)
            BAD("node '%s': instances must be 0 or more, got %d", np->name, np->instances);
        if (np->instances > 1) {
            if (!np->model_ids || !np->streams)
                BAD("node '%s': %d instances need model_ids and streams", np->name, np->instances);
            if (np->model_ids[0] != np->model_id || np->streams[0] != np->stream)
                BAD("node '%s': instance 0 (model %u, stream %d) differs from model_id %u / stream %d",
                    np->name, np->model_ids[0], np->streams[0], np->model_id, np->stream);
            for (int k = 0; k < np->instances; k++) {
                if (np->streams[k] < 0 || np->streams[k] >= p->n_streams)
                    BAD("node '%s': instance %d uses stream %d of %d", np->name, k, np->streams[k],
                        p->n_streams);
                /* one model id on two streams could execute twice at once */
                for (int j = 0; j < k; j++)
                    if (np->model_ids[j] == np->model_ids[k])
                        BAD("node '%s': instances %d and %d are the same model id %u", np->name, j, k,
                            np->model_ids[k]);
            }
        }
        if (np->dyn_index >= np->n_inputs)
            BAD("node '%s': dynamic input %d of %d inputs", np->name, np->dyn_index, np->n_inputs);
        if (np->dyn_kind != AE_DYN_BATCH && np->dyn_kind != AE_DYN_HW && np->dyn_kind != AE_DYN_DIMS)
            BAD("node '%s' has dynamic kind %d", np->name, np->dyn_kind);
        int shaped = np->dyn_kind != AE_DYN_BATCH;
        int row_gears = shaped && np->domain != AE_ROWS_REQUEST && np->static_batch < 1;
        if (shaped && (np->kind != AE_NODE_MODEL || np->dyn_index < 0 ||
                       (row_gears && np->dyn_kind != AE_DYN_DIMS)))
            BAD("node '%s': a dynamic-shape node must be a model with a dynamic input, on the request's rows "
                "or, with static_batch rows per execution (or dims gears over its rows), on a host step's",
                np->name);
        if (row_gears) {
            if (np->n_dims_gears < 1 || !np->dims_gears || np->dims_count < 1 ||
                np->dims_count > AE_MAX_GEAR_DIMS || np->n_row_dims < 1 || !np->row_dims)
                BAD("node '%s': dims gears over its rows need the gear table and the rows' places", np->name);
            for (int k = 0; k < np->n_row_dims; k++)
                if (np->row_dims[k] < 0 || np->row_dims[k] >= np->dims_count)
                    BAD("node '%s': rows at value %d of %d", np->name, np->row_dims[k], np->dims_count);
        }
        size_t node_region = np->device > 0 ? p->device_slot_bytes[np->device] : p->slot_bytes;
        if (np->dyn_index >= 0 && ((!shaped && np->n_gears < 1) || np->dyn_offset > node_region ||
                                   np->dyn_size > node_region - np->dyn_offset))
            BAD("node '%s': dynamic-batch buffer or gears are invalid", np->name);
        for (int i = 0; i < np->n_inputs; i++) {
            int t = np->inputs[i];
            if (i == np->dyn_index ? t != -1 : (t < 0 || t >= p->n_tensors))
                BAD("node '%s' input %d refers to tensor %d", np->name, i, t);
        }
        for (int i = 0; i < np->n_outputs; i++)
            if (np->outputs[i] < 0 || np->outputs[i] >= p->n_tensors)
                BAD("node '%s' output %d refers to tensor %d", np->name, i, np->outputs[i]);
    }
    return 0;
#undef BAD
}

/* producer[t] = node writing tensor t, or -1 for pipeline inputs */
static int *tensor_producers(const ae_plan *p)
{
    int *producer = aex_calloc((size_t)p->n_tensors, sizeof *producer);
    if (!producer)
        return NULL;
    for (int t = 0; t < p->n_tensors; t++)
        producer[t] = -1;
    for (int n = 0; n < p->n_nodes; n++)
        for (int i = 0; i < p->nodes[n].n_outputs; i++)
            producer[p->nodes[n].outputs[i]] = n;
    return producer;
}

static int add_unique(int *list, int *count, int value)
{
    for (int i = 0; i < *count; i++)
        if (list[i] == value)
            return 0;
    list[(*count)++] = value;
    return 1;
}

/* Work out, once, which events each node and the copy-out stream wait on. */
static int plan_waits(ae_engine *e, ae_error *err)
{
    const ae_plan *p = &e->plan;
    int *producer = tensor_producers(p);
    e->node_waits = aex_calloc((size_t)p->n_nodes, sizeof *e->node_waits);
    e->node_n_waits = aex_calloc((size_t)p->n_nodes, sizeof *e->node_n_waits);
    e->node_reads_input = aex_calloc((size_t)p->n_nodes, sizeof *e->node_reads_input);
    e->out_waits = aex_calloc((size_t)p->n_nodes, sizeof *e->out_waits);
    if (!producer || !e->node_waits || !e->node_n_waits || !e->node_reads_input || !e->out_waits) {
        free(producer);
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    }
    for (int n = 0; n < p->n_nodes; n++) {
        const ae_node_plan *np = &e->nodes[n];
        e->node_waits[n] = aex_calloc((size_t)np->n_inputs, sizeof(int));
        if (!e->node_waits[n]) {
            free(producer);
            return aex_fail(e, err, 0, "ae_engine_create", np->name, "out of host memory");
        }
        for (int i = 0; i < np->n_inputs; i++) {
            int t = np->inputs[i];
            if (t < 0)
                continue;
            int src = producer[t];
            if (src < 0)
                e->node_reads_input[n] = 1;
            else if (src >= n) {
                free(producer);
                return aex_fail(e, err, 0, "ae_engine_create", np->name,
                            "nodes are not in topological order");
            } else if (p->single_stream || e->nodes[src].stream != np->stream ||
                       e->nodes[src].instances > 1 || np->instances > 1)
                /* an instanced node's stream changes per request: always wait */
                add_unique(e->node_waits[n], &e->node_n_waits[n], src);
        }
        if (p->single_stream)
            e->node_n_waits[n] = 0;   /* one stream orders everything */
    }
    for (int o = 0; o < p->n_outputs; o++) {
        int src = producer[p->output_tensors[o]];
        if (src < 0)
            e->out_reads_input = 1;
        else if (!p->single_stream)
            add_unique(e->out_waits, &e->n_out_waits, src);
    }
    /* The done event must also follow every node that nothing reads (its
     * outputs reach no pipeline output): otherwise it may still be running,
     * reading this slot's inputs or writing its buffers, when the slot is
     * reused by the next request. */
    for (int n = 0; n < p->n_nodes && !p->single_stream; n++) {
        int read = 0;
        for (int m = n + 1; m < p->n_nodes && !read; m++)
            for (int i = 0; i < e->nodes[m].n_inputs && !read; i++)
                read = e->nodes[m].inputs[i] >= 0 && producer[e->nodes[m].inputs[i]] == n;
        if (!read)
            add_unique(e->out_waits, &e->n_out_waits, n);
    }
    free(producer);
    return 0;
}

static int copy_plan(ae_engine *e, const ae_plan *p, ae_error *err)
{
    e->plan = *p;
    e->tensors = aex_calloc((size_t)p->n_tensors, sizeof *e->tensors);
    e->nodes = aex_calloc((size_t)p->n_nodes, sizeof *e->nodes);
    e->input_tensors = aex_calloc((size_t)p->n_inputs, sizeof(int));
    e->output_tensors = aex_calloc((size_t)p->n_outputs, sizeof(int));
    e->node_inputs = aex_calloc((size_t)p->n_nodes, sizeof(int *));
    e->node_outputs = aex_calloc((size_t)p->n_nodes, sizeof(int *));
    e->node_gears = aex_calloc((size_t)p->n_nodes, sizeof(uint64_t *));
    e->node_dims_gears = aex_calloc((size_t)p->n_nodes, sizeof(int64_t *));
    e->node_row_dims = aex_calloc((size_t)p->n_nodes, sizeof(int *));
    e->node_ms = aex_calloc((size_t)p->n_nodes, sizeof(double));
    e->node_model_ids = aex_calloc((size_t)p->n_nodes, sizeof(uint32_t *));
    e->node_streams = aex_calloc((size_t)p->n_nodes, sizeof(int *));
    if (!e->tensors || !e->nodes || !e->input_tensors || !e->output_tensors || !e->node_inputs ||
        !e->node_outputs || !e->node_gears || !e->node_ms || !e->node_model_ids || !e->node_streams ||
        !e->node_dims_gears || !e->node_row_dims)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    memcpy(e->tensors, p->tensors, (size_t)p->n_tensors * sizeof *e->tensors);
    memcpy(e->input_tensors, p->input_tensors, (size_t)p->n_inputs * sizeof(int));
    memcpy(e->output_tensors, p->output_tensors, (size_t)p->n_outputs * sizeof(int));
    for (int n = 0; n < p->n_nodes; n++) {
        const ae_node_plan *src = &p->nodes[n];
        e->nodes[n] = *src;
        if (src->dyn_kind != AE_DYN_BATCH)
            e->shaped = 1;
        e->node_inputs[n] = aex_calloc((size_t)src->n_inputs, sizeof(int));
        e->node_outputs[n] = aex_calloc((size_t)src->n_outputs, sizeof(int));
        e->node_gears[n] = aex_calloc((size_t)src->n_gears, sizeof(uint64_t));
        if (!e->node_inputs[n] || !e->node_outputs[n] || !e->node_gears[n])
            return aex_fail(e, err, 0, "ae_engine_create", src->name, "out of host memory");
        memcpy(e->node_inputs[n], src->inputs, (size_t)src->n_inputs * sizeof(int));
        memcpy(e->node_outputs[n], src->outputs, (size_t)src->n_outputs * sizeof(int));
        if (src->n_gears)
            memcpy(e->node_gears[n], src->gears, (size_t)src->n_gears * sizeof(uint64_t));
        e->nodes[n].inputs = e->node_inputs[n];
        e->nodes[n].outputs = e->node_outputs[n];
        e->nodes[n].gears = e->node_gears[n];
        if (src->n_dims_gears > 0 && src->dims_count > 0 && src->n_row_dims > 0) {
            size_t values = (size_t)src->n_dims_gears * (size_t)src->dims_count;
            e->node_dims_gears[n] = aex_calloc(values, sizeof(int64_t));
            e->node_row_dims[n] = aex_calloc((size_t)src->n_row_dims, sizeof(int));
            if (!e->node_dims_gears[n] || !e->node_row_dims[n])
                return aex_fail(e, err, 0, "ae_engine_create", src->name, "out of host memory");
            memcpy(e->node_dims_gears[n], src->dims_gears, values * sizeof(int64_t));
            memcpy(e->node_row_dims[n], src->row_dims, (size_t)src->n_row_dims * sizeof(int));
        }
        e->nodes[n].dims_gears = e->node_dims_gears[n];
        e->nodes[n].row_dims = e->node_row_dims[n];
        if (src->instances > 1) {
            e->node_model_ids[n] = aex_calloc((size_t)src->instances, sizeof(uint32_t));
            e->node_streams[n] = aex_calloc((size_t)src->instances, sizeof(int));
            if (!e->node_model_ids[n] || !e->node_streams[n])
                return aex_fail(e, err, 0, "ae_engine_create", src->name, "out of host memory");
            memcpy(e->node_model_ids[n], src->model_ids, (size_t)src->instances * sizeof(uint32_t));
            memcpy(e->node_streams[n], src->streams, (size_t)src->instances * sizeof(int));
        } else {
            e->nodes[n].instances = 1;
        }
        e->nodes[n].model_ids = e->node_model_ids[n];
        e->nodes[n].streams = e->node_streams[n];
    }
    e->plan.tensors = e->tensors;
    e->plan.nodes = e->nodes;
    e->plan.input_tensors = e->input_tensors;
    e->plan.output_tensors = e->output_tensors;

    /* devices: a plan of one device has them in its scalars */
    e->n_devices = p->n_devices > 1 ? p->n_devices : 1;
    e->contexts = aex_calloc((size_t)e->n_devices, sizeof(aclrtContext));
    e->device_ids = aex_calloc((size_t)e->n_devices, sizeof(int32_t));
    e->dev_slot_bytes = aex_calloc((size_t)e->n_devices, sizeof(size_t));
    e->arenas = aex_calloc((size_t)e->n_devices, sizeof(void *));
    e->stream_devices = aex_calloc((size_t)p->n_streams, sizeof(int));
    e->bridge_off = aex_calloc((size_t)p->n_nodes, sizeof(size_t));
    if (!e->contexts || !e->device_ids || !e->dev_slot_bytes || !e->arenas || !e->stream_devices ||
        !e->bridge_off)
        return aex_fail(e, err, 0, "ae_engine_create", NULL, "out of host memory");
    for (int d = 0; d < e->n_devices; d++) {
        e->contexts[d] = p->n_devices > 1 ? p->contexts[d] : p->context;
        e->device_ids[d] = p->n_devices > 1 ? p->device_ids[d] : p->device_id;
        e->dev_slot_bytes[d] = p->n_devices > 1 ? p->device_slot_bytes[d] : p->slot_bytes;
    }
    for (int st = 0; st < p->n_streams; st++)
        e->stream_devices[st] = p->n_devices > 1 ? p->stream_devices[st] : 0;
    e->plan.contexts = e->contexts;
    e->plan.device_ids = e->device_ids;
    e->plan.device_slot_bytes = e->dev_slot_bytes;
    e->plan.stream_devices = e->stream_devices;
    /* pinned staging of the copies through the host, one per such copy node */
    for (int n = 0; n < p->n_nodes; n++) {
        if (e->nodes[n].kind != AE_NODE_COPY || e->nodes[n].bridge_stream < 0)
            continue;
        e->bridge_off[n] = e->bridge_bytes;
        e->bridge_bytes += align_up(e->tensors[e->nodes[n].inputs[0]].capacity, AE_ALIGN);
    }
    return 0;
}

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
        if (np->kind == AE_NODE_COPY && np->bridge_stream >= 0) {
            /* recorded on the source device's stream after its D2H */
            if (build_on(e, e->stream_devices[np->bridge_stream], err) ||
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
        if (np->kind == AE_NODE_COPY)
            continue;
        sl->in_sets[n] = e->acl->aclmdlCreateDataset();
        sl->out_sets[n] = e->acl->aclmdlCreateDataset();
        if (!sl->in_sets[n] || !sl->out_sets[n])
            return aex_fail(e, err, ACL_ERROR_BAD_ALLOC, "aclmdlCreateDataset", np->name,
                        "could not create a dataset");
        for (int i = 0; i < np->n_inputs; i++) {
            int t = np->inputs[i];
            int rc = i == np->dyn_index
                         ? new_buffer(e, err, np->name, sl->dev[np->device] + np->dyn_offset, np->dyn_size,
                                      sl->in_sets[n])
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
    if (check_plan(plan, err))
        return -1;
    ae_engine *e = aex_calloc(1, sizeof *e);
    if (!e)
        return aex_fail(NULL, err, 0, "ae_engine_create", NULL, "out of host memory");
    e->acl = api;
    e->poll_ms = 20;
    if (copy_plan(e, plan, err) || plan_waits(e, err) || aex_make_current(e, err))
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
        e->host_in_bytes += align_up(e->tensors[p->input_tensors[i]].row_bytes * p->max_batch, AE_ALIGN);
    }
    for (int i = 0; i < p->n_outputs; i++) {
        e->out_stage_off[i] = e->host_out_bytes;
        e->host_out_bytes += align_up(e->tensors[p->output_tensors[i]].capacity, AE_ALIGN);
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
        rc = e->acl->aclrtMalloc(&e->arenas[d], bytes ? bytes : AE_ALIGN, ACL_MEM_MALLOC_HUGE_FIRST);
        if (rc != ACL_SUCCESS) {
            e->arenas[d] = NULL;
            aex_fail(e, err, rc, "aclrtMalloc", NULL,
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
        if (np->kind != AE_NODE_COPY || np->bridge_stream >= 0)
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
        bridged += e->nodes[n].kind == AE_NODE_COPY && e->nodes[n].bridge_stream >= 0;
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
    if (aex_steps_start(e, err))
        goto failed;
    *out = e;
    return 0;

failed:
    ae_engine_destroy(e);
    return -1;
}

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

/* Milliseconds left until `deadline` (at least 1: some runtimes read 0 as
 * "do not wait"), or -1 for no deadline. */
int32_t aex_ms_left(uint64_t deadline)
{
    if (!deadline)
        return -1;
    uint64_t now = aex_now_ns();
    if (now >= deadline)
        return 1;
    uint64_t ms = (deadline - now + 999999u) / 1000000u;
    return ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

/* The deadline for a wait starting now: the plan's timeout, 0 for none. */
uint64_t aex_deadline_from_now(const ae_engine *e)
{
    return e->plan.timeout_ms >= 0 ? aex_now_ns() + (uint64_t)e->plan.timeout_ms * 1000000u : 0;
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
static int settle(ae_engine *e, int bounded)
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

/* Tear down everything but the engine struct's plan copies.  Returns how
 * many AscendCL releases failed; the first one is described in err. */
static int release_all(ae_engine *e, ae_error *err)
{
    const ae_acl_api *acl = e->acl;
    int failed = 0;
    aex_steps_stop(e);   /* no worker may enqueue while things are destroyed */
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
        if (e->arenas[d])
            RELEASE(aclrtFree, e->arenas[d]);
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
    settle(e, 0);
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
    if (settle(e, 1)) {
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

/* ---- running -------------------------------------------------------------- */

/* Cancel everything in flight after a failure.  After a device error, wait
 * for every stream (within the timeout; this also clears their sticky
 * errors); after a timed-out wait, do not wait again: the requests are
 * abandoned and the engine is wedged until its streams are idle.  The
 * results of the cancelled requests are lost. */
static void drain(ae_engine *e, int timed_out)
{
    /* host-step workers drop what they hold for these requests, and none
     * enqueues for them any more */
    aex_steps_abandon(e);
    if (timed_out || settle(e, 1) || aex_steps_idle(e, timed_out ? 1 : aex_deadline_from_now(e)))
        e->wedged = 1;
    for (int s = 0; s < e->plan.depth; s++) {
        if (e->slots[s].busy)
            e->stats.failures++;
        e->slots[s].busy = 0;
    }
    e->cancel_begin = e->next_request - (uint64_t)e->in_flight;
    e->cancel_end = e->next_request;
    e->in_flight = 0;
}

/* Before reusing a slot after abandoned work: wait (within the timeout) until
 * the device is idle again. */
static int recover(ae_engine *e, ae_error *err)
{
    if (!e->wedged)
        return 0;
    if (settle(e, 1) || aex_steps_idle(e, aex_deadline_from_now(e)))
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
    copy_name(err->node, node);
    err->code = rc;
    snprintf(err->message, AE_MESSAGE_MAX, "%s failed on the device: %s", what,
             recent && recent[0] ? recent : "no message");
}

/* The stream and model id of the instance that runs request r (r % instances). */
static int node_stream(const ae_node_plan *np, uint64_t r)
{
    return np->instances > 1 ? np->streams[r % (uint64_t)np->instances] : np->stream;
}

static uint32_t node_model(const ae_node_plan *np, uint64_t r)
{
    return np->instances > 1 ? np->model_ids[r % (uint64_t)np->instances] : np->model_id;
}

/* After a request failed on the device, find the stream that holds the
 * error, in the order work flows: the copy-in stream, the compute streams in
 * topological order of their nodes (the first failure is where it started;
 * later streams only inherited it through event waits), then copy-out. */
static void blame_stream(ae_engine *e, ae_error *err)
{
    if (!err)
        return;
    uint64_t deadline = aex_deadline_from_now(e);
    aclError rc;
    if (!e->plan.single_stream) {
        rc = sync_stream(e, e->copy_in, deadline);
        if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
            copy_name(err->function, "aclrtMemcpyAsync");
            blame(e, err, rc, NULL, "the copy of the request's inputs to the device");
            return;
        }
    }
    for (int n = 0; n < e->plan.n_nodes; n++) {
        for (int k = 0; k < e->nodes[n].instances; k++) {
            int st = node_stream(&e->nodes[n], (uint64_t)k);
            aex_use_device(e, e->stream_devices[st], NULL);
            rc = sync_stream(e, e->streams[st], deadline);
            aex_use_device(e, 0, NULL);
            if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
                char what[AE_NAME_MAX + 32];
                if (e->nodes[n].kind == AE_NODE_HOST)
                    snprintf(what, sizeof what, "the copies of host step '%s'", e->nodes[n].name);
                else if (e->nodes[n].kind == AE_NODE_COPY)
                    snprintf(what, sizeof what, "the copy '%s' between devices", e->nodes[n].name);
                else if (e->nodes[n].instances > 1)
                    snprintf(what, sizeof what, "model '%s' (instance %d)", e->nodes[n].name, k);
                else
                    snprintf(what, sizeof what, "model '%s'", e->nodes[n].name);
                copy_name(err->function, e->nodes[n].kind == AE_NODE_MODEL ? "aclmdlExecuteAsync"
                                                                             : "aclrtMemcpyAsync");
                blame(e, err, rc, e->nodes[n].name, what);
                return;
            }
        }
    }
    if (!e->plan.single_stream) {
        rc = sync_stream(e, e->copy_out, deadline);
        if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
            copy_name(err->function, "aclrtMemcpyAsync");
            blame(e, err, rc, NULL, "the copy of the request's outputs to the host");
        }
    }
}

static uint64_t pick_gear(const ae_node_plan *np, uint64_t rows)
{
    for (int g = 0; g < np->n_gears; g++)
        if (np->gears[g] >= rows)
            return np->gears[g];
    return 0;
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
        if (is_in && i == np->dyn_index)
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
    if (np->dyn_kind == AE_DYN_HW) {
        if (!e->acl->aclmdlSetDynamicHWSize)
            return aex_fail(e, err, ACL_ERROR_FEATURE_UNSUPPORTED, "aclmdlSetDynamicHWSize", np->name,
                            "the AscendCL library lacks aclmdlSetDynamicHWSize, needed by model '%s'", np->name);
        ACL_CALL(e, err, np->name, aclmdlSetDynamicHWSize, model_id, sl->in_sets[n], (size_t)np->dyn_index,
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
    for (int k = 0; rows && k < np->n_row_dims; k++)
        if (np->row_dims[k] < count)
            dims.dims[np->row_dims[k]] = (int64_t)rows;
    ACL_CALL(e, err, np->name, aclmdlSetInputDynamicDims, model_id, sl->in_sets[n], (size_t)np->dyn_index, &dims);
    return 0;
}

/* The rows of node n's dims gears that agree with `want` (count values)
 * everywhere but at the rows, ascending and unique, into out (at most
 * AE_MAX_GEAR_DIMS); returns how many. */
static int rows_of_like_gears(const ae_node_plan *np, const int64_t *want, int count, uint64_t *out)
{
    int n_out = 0;
    if (count != np->dims_count)
        return 0;
    for (int g = 0; g < np->n_dims_gears; g++) {
        const int64_t *v = np->dims_gears + (size_t)g * (size_t)np->dims_count;
        int like = 1;
        for (int k = 0; k < count && like; k++) {
            int is_row = 0;
            for (int r = 0; r < np->n_row_dims; r++)
                is_row |= np->row_dims[r] == k;
            like = is_row || v[k] == want[k];
        }
        uint64_t rows = (uint64_t)v[np->row_dims[0]];
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
    aclrtStream st = e->streams[node_stream(np, request)];
    uint32_t model_id = node_model(np, request);
    uint64_t rows = aex_rows(sl, np->domain);
    if (aex_begin_node(e, sl, n, st, NULL, err))
        return -1;
    if (p->profile)
        ACL_CALL(e, err, np->name, aclrtRecordEvent, sl->node_start[n], st);
    if (skip || rows == 0) {
        /* nothing to run: the event still marks the node's place in the request */
    } else if (np->domain == AE_ROWS_REQUEST) {
        if (np->dyn_index < 0 && np->static_batch && rows != np->static_batch)
            return aex_fail(e, err, 0, "aclmdlExecuteAsync", np->name,
                            "model '%s' was built for a batch of %llu, the request has %llu rows",
                            np->name, (unsigned long long)np->static_batch, (unsigned long long)rows);
        if (np->dyn_kind != AE_DYN_BATCH) {
            if (set_shape_gear(e, sl, n, model_id, 0, err))
                return -1;
        } else if (np->dyn_index >= 0) {
            uint64_t gear = pick_gear(np, rows);
            if (gear == 0)
                return aex_fail(e, err, 0, "aclmdlSetDynamicBatchSize", np->name,
                                "a request of %llu rows exceeds the largest gear of model '%s'",
                                (unsigned long long)rows, np->name);
            ACL_CALL(e, err, np->name, aclmdlSetDynamicBatchSize, model_id, sl->in_sets[n],
                     (size_t)np->dyn_index, gear);
        }
        ACL_CALL(e, err, np->name, aclmdlExecuteAsync, model_id, sl->in_sets[n], sl->out_sets[n], st);
    } else {
        /* rows from a host step: as many executions as the gears need (a
         * dynamic-shape node: static_batch rows each, all at its gear; or,
         * dims gears over its rows, the rows of the gears like the request's) */
        int shaped = np->dyn_kind != AE_DYN_BATCH;
        int row_gears = shaped && np->static_batch == 0;
        uint64_t like[AE_MAX_GEAR_DIMS];
        const uint64_t *gears = np->dyn_index >= 0 && !shaped ? np->gears : &np->static_batch;
        int n_gears = np->dyn_index >= 0 && !shaped ? np->n_gears : 1;
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
            if (np->dyn_index >= 0 && !shaped)
                ACL_CALL(e, err, np->name, aclmdlSetDynamicBatchSize, model_id, sl->in_sets[n],
                         (size_t)np->dyn_index, gear);
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
    if (np->bridge_stream >= 0) {
        /* out of the source device first: a stream of its own waits, copies
         * the rows to pinned staging and marks them there */
        aclrtStream out = e->streams[np->bridge_stream];
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
        if (kind == AE_NODE_COPY ? enqueue_copy(e, sl, n, skip, err)
                                 : enqueue_model(e, sl, request, n, skip, err))
            return -1;
    }
    if (enqueue_copy_out(e, sl, skip, err))
        return -1;
    if (e->n_steps)
        sl->tail_enqueued = 1;   /* step_lock is held: see ae_engine_submit_rows and host_steps.c */
    return 0;
}

static int enqueue(ae_engine *e, slot *sl, uint64_t request, const void *const *inputs, uint64_t rows,
                   ae_error *err)
{
    const ae_plan *p = &e->plan;

    if (p->profile)
        ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->copy_in_start, e->copy_in);
    for (int i = 0; i < p->n_inputs; i++) {
        const ae_tensor_plan *tp = &e->tensors[p->input_tensors[i]];
        size_t bytes = aex_row_bytes(e, sl, p->input_tensors[i]) * rows;
        char *stage = sl->host_in + e->in_stage_off[i];
        memcpy(stage, inputs[i], bytes);
        ACL_CALL(e, err, NULL, aclrtMemcpyAsync, aex_tensor_addr(e, sl, p->input_tensors[i]), tp->capacity,
                 stage, bytes,
                 ACL_MEMCPY_HOST_TO_DEVICE, e->copy_in);
    }
    ACL_CALL(e, err, NULL, aclrtRecordEvent, sl->inputs_ready, e->copy_in);
    return aex_enqueue_nodes(e, sl, request, 0, 0, err);
}

/* The wait was stopped by the caller's poll function. */
static int interrupted(ae_engine *e, ae_error *err)
{
    aex_fail(e, err, 0, "ae_engine_wait", NULL, "interrupted while waiting for the device");
    return AE_INTERRUPTED;
}

/* Ask the caller's poll function whether to stop, at most every poll_ms
 * (whether the waits in between were long or short).  Returns 1 to stop. */
int aex_poll_due(ae_engine *e)
{
    if (!e->poll)
        return 0;
    uint64_t now = aex_now_ns();
    if (now < e->next_poll_ns)
        return 0;
    e->next_poll_ns = now + (uint64_t)e->poll_ms * 1000000u;
    return e->poll(e->poll_ctx) != 0;
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
        if (deadline && aex_now_ns() > deadline)
            return 0;
        if (aex_poll_due(e))
            return 1;
        sched_yield();
    }
}

/* Wait for one event within the plan's timeout.  With a poll function, wait
 * in slices of poll_ms and ask it in between whether to stop. */
static aclError sync_event(ae_engine *e, aclrtEvent ev, uint64_t deadline, int *stop)
{
    *stop = 0;
    if (!e->acl->aclrtSynchronizeEventWithTimeout)
        return e->acl->aclrtSynchronizeEvent(ev);
    if (!e->poll)
        return deadline ? e->acl->aclrtSynchronizeEventWithTimeout(ev, aex_ms_left(deadline))
                        : e->acl->aclrtSynchronizeEvent(ev);
    for (;;) {
        if (aex_poll_due(e)) {
            *stop = 1;
            return ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
        }
        int32_t slice = e->poll_ms, left = aex_ms_left(deadline);
        int last = deadline && left <= slice;
        aclError rc = e->acl->aclrtSynchronizeEventWithTimeout(ev, last ? left : slice);
        if (rc != ACL_ERROR_RT_EVENT_SYNC_TIMEOUT || last)
            return rc;
    }
}

static int wait_event(ae_engine *e, aclrtEvent ev, ae_error *err)
{
    uint64_t deadline = aex_deadline_from_now(e);
    int stop = 0;
    if (e->plan.spin_wait && spin_until_complete(e, ev, deadline))
        return interrupted(e, err);
    aclError rc = sync_event(e, ev, deadline, &stop);
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

/* Offset of `ev` from the trace base in ms, or -1 when it cannot be read. */
static double offset_ms(ae_engine *e, aclrtEvent ev)
{
    float ms = 0.0f;
    if (e->acl->aclrtEventElapsedTime(&ms, e->trace_base, ev) != ACL_SUCCESS)
        return -1.0;
    return (double)ms;
}

/* One timeline row for a completed request, while a trace is being taken. */
static void record_timeline(ae_engine *e, slot *sl, uint64_t request)
{
    if (e->trace_count >= e->trace_capacity)
        return;
    int n_nodes = e->plan.n_nodes;
    double *row = e->trace_rows + e->trace_count * (size_t)AE_TRACE_COLUMNS(n_nodes);
    row[0] = offset_ms(e, sl->copy_in_start);
    row[1] = offset_ms(e, sl->inputs_ready);
    for (int n = 0; n < n_nodes; n++) {
        row[2 + 3 * n] = offset_ms(e, sl->node_wait[n]);
        /* a host step: from its inputs reaching the host to its outputs on the device */
        row[3 + 3 * n] = offset_ms(e, e->nodes[n].kind == AE_NODE_HOST ? sl->step_ready[n] : sl->node_start[n]);
        row[4 + 3 * n] = offset_ms(e, sl->node_done[n]);
    }
    row[2 + 3 * n_nodes] = offset_ms(e, sl->copy_out_wait);
    row[3 + 3 * n_nodes] = offset_ms(e, sl->copy_out_start);
    row[4 + 3 * n_nodes] = offset_ms(e, sl->done);
    e->trace_requests[e->trace_count++] = request;
}

int ae_engine_trace_begin(ae_engine *e, size_t max_requests, ae_error *err)
{
    if (!e->plan.profile)
        return aex_fail(e, err, 0, "ae_engine_trace_begin", NULL,
                    "timelines need timing events: compile the pipeline with profile=True");
    if (ae_engine_flush(e, err) || aex_make_current(e, err) || recover(e, err))
        return -1;
    size_t columns = (size_t)AE_TRACE_COLUMNS(e->plan.n_nodes);
    double *rows = realloc(e->trace_rows, (max_requests ? max_requests : 1) * columns * sizeof(double));
    if (rows)
        e->trace_rows = rows;
    uint64_t *ids = realloc(e->trace_requests, (max_requests ? max_requests : 1) * sizeof(uint64_t));
    if (ids)
        e->trace_requests = ids;
    if (!rows || !ids)
        return aex_fail(e, err, 0, "ae_engine_trace_begin", NULL, "out of host memory for %zu rows",
                    max_requests);
    e->trace_capacity = max_requests;
    e->trace_count = 0;
    /* every later event is recorded after the base completed: offsets are >= 0 */
    ACL_CALL(e, err, NULL, aclrtRecordEvent, e->trace_base, e->copy_in);
    ACL_CALL(e, err, NULL, aclrtSynchronizeEvent, e->trace_base);
    return 0;
}

size_t ae_engine_trace_end(ae_engine *e, const double **rows, const uint64_t **requests)
{
    *rows = e->trace_rows;
    *requests = e->trace_requests;
    size_t count = e->trace_count;
    e->trace_capacity = 0;
    return count;
}

/* Deliver the oldest request once its done event is known to be over (or
 * failed with `rc`, a code of wait_event). */
static int finish_oldest(ae_engine *e, int rc, uint64_t t0, ae_error *err)
{
    const ae_plan *p = &e->plan;
    uint64_t request = e->next_request - (uint64_t)e->in_flight;
    slot *sl = &e->slots[request % (uint64_t)p->depth];
    if (rc == AE_INTERRUPTED) {
        if (err)
            err->request = request;
        drain(e, 0);
        return AE_INTERRUPTED;
    }
    if (rc) {
        int timed_out = err && err->code == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
        if (!timed_out)
            blame_stream(e, err);
        if (err)
            err->request = request;
        drain(e, timed_out);
        return -1;
    }
    if (sl->step_failed) {
        /* a host step failed for this request alone: the rest of it was
         * skipped, its done event passed; nothing else is affected */
        if (err) {
            *err = sl->step_error;
            err->request = request;
        }
        sl->busy = 0;
        e->in_flight--;
        e->stats.failures++;
        e->cancel_begin = request;
        e->cancel_end = request + 1;
        return AE_REQUEST_FAILED;
    }
    if (p->profile) {
        for (int n = 0; n < p->n_nodes; n++) {
            float ms = 0.0f;
            aclrtEvent start = e->nodes[n].kind == AE_NODE_HOST ? sl->step_ready[n] : sl->node_start[n];
            if (e->acl->aclrtEventElapsedTime(&ms, start, sl->node_done[n]) == ACL_SUCCESS)
                e->node_ms[n] += ms;
        }
        record_timeline(e, sl, request);
    }
    for (int o = 0; o < p->n_outputs; o++) {
        const ae_tensor_plan *tp = &e->tensors[p->output_tensors[o]];
        uint64_t rows = aex_rows(sl, tp->domain);
        memcpy(sl->user_out[o], sl->host_out + e->out_stage_off[o], aex_row_bytes(e, sl, p->output_tensors[o]) * rows);
        if (sl->user_rows)
            sl->user_rows[o] = rows;
    }
    sl->busy = 0;
    e->in_flight--;
    e->stats.requests++;
    e->stats.wait_ns += aex_now_ns() - t0;
    return 0;
}

int ae_engine_complete_one(ae_engine *e, ae_error *err)
{
    if (e->in_flight == 0)
        return 0;
    if (aex_make_current(e, err))
        return -1;
    uint64_t request = e->next_request - (uint64_t)e->in_flight;
    slot *sl = &e->slots[request % (uint64_t)e->plan.depth];
    uint64_t t0 = aex_now_ns();
    int rc = e->n_steps ? aex_wait_tail(e, sl, aex_deadline_from_now(e), err) : 0;
    if (rc == 0 && sl->step_fatal) {
        if (err)
            *err = sl->step_error;
        rc = -1;
    }
    if (rc == 0)
        rc = wait_event(e, sl->done, err);
    return finish_oldest(e, rc, t0, err);
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
        int held = e->n_steps && aex_wait_tail(e, &e->slots[request % (uint64_t)e->plan.depth], 1, NULL);
        aex_fail(e, err, wait_rc, "aclrtSynchronizeEventWithTimeout", NULL,
                 "a request did not complete within %d ms%s", (int)e->plan.timeout_ms,
                 held ? " (a host step still holds it)" : "");
        return finish_oldest(e, -1, aex_now_ns(), err);
    }
    return ae_engine_complete_one(e, err);
}

int ae_engine_complete_ready(ae_engine *e, ae_error *err)
{
    int done = 0;
    while (e->in_flight > 0) {
        uint64_t request = e->next_request - (uint64_t)e->in_flight;
        slot *sl = &e->slots[request % (uint64_t)e->plan.depth];
        if (e->n_steps && aex_wait_tail(e, sl, 1, NULL))
            break;   /* a host step still holds it */
        aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        if (e->acl->aclrtQueryEventStatus(sl->done, &status) != ACL_SUCCESS ||
            status != ACL_EVENT_RECORDED_STATUS_COMPLETE)
            break;
        int rc = ae_engine_complete_one(e, err);   /* returns at once: the event is complete */
        if (rc)
            return rc;
        done++;
    }
    return done;
}

int ae_engine_free_slots(const ae_engine *e)
{
    /* a wedged engine counts its slots free: the next submission finds out
     * (within the timeout) whether the device has caught up */
    return e->plan.depth - e->in_flight;
}

/*
 * All slots are busy: free some.  Rather than block once per request on the
 * oldest one, block once on the request half the ring ahead of it (done
 * events complete in submission order on the copy-out stream, so every older
 * request is then over too) and deliver all of those without further
 * blocking.  A blocking wait costs a sleep and a wake-up, far more host time
 * than an enqueue; depth/2 requests stay in flight meanwhile, which keeps
 * every stream of the pipeline fed.
 */
static int make_room(ae_engine *e, ae_error *err)
{
    int ahead = e->plan.depth / 2 - 1;   /* 0 for depth 1 to 3: the oldest only */
    if (ahead < 0)
        ahead = 0;
    if (ahead > e->in_flight - 1)
        ahead = e->in_flight - 1;
    if (ahead > 0) {
        uint64_t target = e->next_request - (uint64_t)e->in_flight + (uint64_t)ahead;
        slot *sl = &e->slots[target % (uint64_t)e->plan.depth];
        uint64_t t0 = aex_now_ns();
        int rc = wait_event(e, sl->done, err);
        if (rc == AE_INTERRUPTED) {
            if (err)
                err->request = target;
            drain(e, 0);
            return AE_INTERRUPTED;
        }
        if (rc) {
            if (err && err->code == ACL_ERROR_RT_EVENT_SYNC_TIMEOUT) {
                err->request = target;
                drain(e, 1);
                return -1;
            }
            /* Some request up to `target` failed: complete them one by one,
             * so the older ones are delivered and the failure is pinned on
             * the request it belongs to (complete_one then drains). */
        }
        e->stats.wait_ns += aex_now_ns() - t0;
    }
    for (int k = 0; k <= ahead; k++) {
        int rc = ae_engine_complete_one(e, err);
        if (rc)
            return rc;
    }
    return 0;
}

int ae_engine_submit(ae_engine *e, const void *const *inputs, uint64_t rows, void *const *outputs,
                     ae_error *err)
{
    return ae_engine_submit_rows(e, inputs, rows, outputs, NULL, err);
}

int ae_engine_submit_rows(ae_engine *e, const void *const *inputs, uint64_t rows, void *const *outputs,
                          uint64_t *out_rows, ae_error *err)
{
    return ae_engine_submit_shaped(e, inputs, rows, outputs, out_rows, NULL, err);
}

/* Check a request's shape against the plan (every size must fit its buffer,
 * every gear have the values its kind takes); 0 or -1 with err filled. */
static int check_shape(ae_engine *e, uint64_t rows, const ae_request_shape *shape, ae_error *err)
{
    const ae_plan *p = &e->plan;
    if (!e->shaped) {
        if (shape)
            return aex_fail(e, err, 0, "ae_engine_submit_shaped", NULL,
                            "the plan has no dynamic-shape nodes: submit without a request shape");
        return 0;
    }
    if (!shape || !shape->row_bytes || !shape->gear_dims || !shape->gear_at || !shape->gear_count)
        return aex_fail(e, err, 0, "ae_engine_submit_shaped", NULL,
                        "the plan has dynamic-shape nodes: every request needs its shape (row bytes and gears)");
    char why[AE_MESSAGE_MAX];
    for (int t = 0; t < p->n_tensors; t++) {
        const ae_tensor_plan *tp = &e->tensors[t];
        if (aex_check_row_bytes(e, t, shape->row_bytes[t], why, sizeof why) ||
            (tp->domain == AE_ROWS_REQUEST && shape->row_bytes[t] * rows > tp->capacity))
            return aex_fail(e, err, 0, "ae_engine_submit_shaped", NULL,
                            "tensor %d: %llu rows of %zu bytes do not fit its buffer (%zu bytes per row planned, "
                            "%zu bytes)", t, (unsigned long long)rows, shape->row_bytes[t], tp->row_bytes,
                            tp->capacity);
    }
    for (int n = 0; n < p->n_nodes; n++) {
        int count = shape->gear_count[n];
        if (count && shape->gear_at[n] < 0)
            return aex_fail(e, err, 0, "ae_engine_submit_shaped", e->nodes[n].name,
                            "node '%s': its gear is at %d", e->nodes[n].name, shape->gear_at[n]);
        if (aex_check_gear(e, n, count ? shape->gear_dims + shape->gear_at[n] : NULL, count, why, sizeof why))
            return aex_fail(e, err, 0, "ae_engine_submit_shaped", e->nodes[n].name, "%s", why);
    }
    return 0;
}

int aex_check_row_bytes(const ae_engine *e, int t, size_t row_bytes, char *why, size_t why_size)
{
    const ae_tensor_plan *tp = &e->tensors[t];
    if (row_bytes >= 1 && row_bytes <= tp->row_bytes)
        return 0;
    snprintf(why, why_size, "tensor %d: %zu bytes per row, expected 1 to the %zu planned", t, row_bytes,
             tp->row_bytes);
    return -1;
}

int aex_check_gear(const ae_engine *e, int n, const int64_t *values, int count, char *why, size_t why_size)
{
    const ae_node_plan *np = &e->nodes[n];
    int want_min = np->dyn_kind == AE_DYN_HW ? 2 : np->dyn_kind == AE_DYN_DIMS ? 1 : 0;
    int want_max = np->dyn_kind == AE_DYN_HW ? 2 : np->dyn_kind == AE_DYN_DIMS ? AE_MAX_GEAR_DIMS : 0;
    if (count < want_min || count > want_max) {
        snprintf(why, why_size, "node '%s' takes %d to %d gear values per request, got %d", np->name, want_min,
                 want_max, count);
        return -1;
    }
    for (int k = 0; k < count; k++)
        if (values[k] < 1) {
            snprintf(why, why_size, "node '%s': gear value %d is %lld, expected at least 1", np->name, k,
                     (long long)values[k]);
            return -1;
        }
    return 0;
}

int ae_engine_submit_shaped(ae_engine *e, const void *const *inputs, uint64_t rows, void *const *outputs,
                            uint64_t *out_rows, const ae_request_shape *shape, ae_error *err)
{
    const ae_plan *p = &e->plan;
    if (rows < 1 || rows > p->max_batch)
        return aex_fail(e, err, 0, "ae_engine_submit", NULL,
                    "a request carries 1 to %llu rows, got %llu", (unsigned long long)p->max_batch,
                    (unsigned long long)rows);
    if (check_shape(e, rows, shape, err))
        return -1;
    if (aex_make_current(e, err) || recover(e, err))
        return -1;
    int s = (int)(e->next_request % (uint64_t)p->depth);
    slot *sl = &e->slots[s];
    if (sl->busy) {
        int rc = make_room(e, err);
        if (rc)
            return rc;
    }
    uint64_t t0 = aex_now_ns();
    if (shape) {
        /* the slot's own copy: its completion reads the sizes again */
        memcpy(sl->row_bytes, shape->row_bytes, (size_t)p->n_tensors * sizeof(size_t));
        for (int n = 0; n < p->n_nodes; n++) {
            sl->gear_count[n] = shape->gear_count[n];
            if (shape->gear_count[n])
                memcpy(sl->gear_dims + (size_t)n * AE_MAX_GEAR_DIMS, shape->gear_dims + shape->gear_at[n],
                       (size_t)shape->gear_count[n] * sizeof(int64_t));
        }
    }
    sl->rows_of[0] = rows;
    sl->rows = rows;
    sl->request = e->next_request;
    for (int o = 0; o < p->n_outputs; o++)
        sl->user_out[o] = outputs[o];
    sl->user_rows = out_rows;
    int failed;
    if (e->n_steps) {
        /* the workers enqueue on the same streams; they also read the slot */
        pthread_mutex_lock(&e->step_lock);
        sl->tail_enqueued = sl->step_failed = sl->step_fatal = 0;
        failed = enqueue(e, sl, e->next_request, inputs, rows, err);
        pthread_mutex_unlock(&e->step_lock);
    } else {
        failed = enqueue(e, sl, e->next_request, inputs, rows, err);
    }
    if (failed) {
        /* this request never ran; the ones in flight may have been given
         * part of its work on some stream, so they are cancelled too */
        e->stats.failures++;
        if (err)
            err->request = e->next_request;
        drain(e, 0);
        return -1;
    }
    sl->busy = 1;
    e->next_request++;
    e->in_flight++;
    if (e->in_flight > e->stats.in_flight_high_water)
        e->stats.in_flight_high_water = e->in_flight;
    e->stats.enqueue_ns += aex_now_ns() - t0;
    return 0;
}

int ae_engine_flush(ae_engine *e, ae_error *err)
{
    while (e->in_flight > 0) {
        int rc = ae_engine_complete_one(e, err);
        if (rc)
            return rc;
    }
    return 0;
}

int ae_engine_run_batch(ae_engine *e, const void *const *inputs, uint64_t total_rows, uint64_t batch,
                        void *const *outputs, ae_error *err)
{
    const ae_plan *p = &e->plan;
    if (batch < 1)
        return aex_fail(e, err, 0, "ae_engine_run_batch", NULL, "batch must be at least 1, got %llu",
                    (unsigned long long)batch);
    if (e->n_steps)
        return aex_fail(e, err, 0, "ae_engine_run_batch", NULL,
                        "a plan with host steps returns results per request: submit them one by one");
    if (p->n_inputs > AE_MAX_IO || p->n_outputs > AE_MAX_IO)
        return aex_fail(e, err, 0, "ae_engine_run_batch", NULL, "more than %d inputs or outputs", AE_MAX_IO);
    /* per-request pointers into the caller's whole arrays */
    const void *in_at[AE_MAX_IO];
    void *out_at[AE_MAX_IO];
    for (uint64_t row = 0; row < total_rows;) {
        /* a request of `batch` rows above the plan's largest batch is split */
        uint64_t end = row + (total_rows - row < batch ? total_rows - row : batch);
        while (row < end) {
            uint64_t rows = end - row < p->max_batch ? end - row : p->max_batch;
            for (int i = 0; i < p->n_inputs; i++)
                in_at[i] = (const char *)inputs[i] + row * e->tensors[p->input_tensors[i]].row_bytes;
            for (int o = 0; o < p->n_outputs; o++)
                out_at[o] = (char *)outputs[o] + row * e->tensors[p->output_tensors[o]].row_bytes;
            int rc = ae_engine_submit(e, in_at, rows, out_at, err);
            if (rc)
                return rc;
            row += rows;
        }
    }
    return ae_engine_flush(e, err);
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
