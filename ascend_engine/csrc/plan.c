/*
 * plan.c -- the plan ae_engine_create() is given (see executor.h): checking
 * it, taking the engine's own copy of it, and working out once which events
 * each node and the copy-out stream wait on.
 */
#include "executor_internal.h"

#include <stdlib.h>
#include <string.h>

int aex_check_plan(const ae_plan *p, ae_error *err)
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
             !p->nodes[tp->domain].host.rows_any))
            BAD("tensor %d: its rows come from node %d, which is not a host step with rows \"any\"", t,
                tp->domain);
        uint64_t rows = tp->domain == AE_ROWS_REQUEST ? p->max_batch : p->nodes[tp->domain].host.max_rows;
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
        if (np->kind != AE_NODE_MODEL && np->kind != AE_NODE_HOST && np->kind != AE_NODE_COPY &&
            np->kind != AE_NODE_IMAGE)
            BAD("node '%s' has kind %d", np->name, np->kind);
        if (np->kind == AE_NODE_IMAGE) {
            const ae_node_image *im = &np->image;
            int want_in = im->op == AE_IMAGE_CROP_RESIZE ? 2 : 1;
            if (!p->dvpp)
                BAD("image node '%s' needs the DVPP library (the plan's dvpp table)", np->name);
            if (im->op < AE_IMAGE_DECODE || im->op > AE_IMAGE_CROP_RESIZE || np->n_inputs != want_in ||
                np->n_outputs != 1 || np->instances > 1 || np->model.dyn_index >= 0 || np->device != 0)
                BAD("image node '%s': operation %d with %d inputs and %d outputs on device %d", np->name, im->op,
                    np->n_inputs, np->n_outputs, np->device);
            if (im->width < 16 || im->height < 6 || (im->op != AE_IMAGE_DECODE &&
                                                     (im->width % 16 || im->height % 2)))
                BAD("image node '%s': output %ux%u (width a multiple of 16, height even)", np->name, im->width,
                    im->height);
            if (im->op == AE_IMAGE_CROP_RESIZE && (im->max_boxes < 1 || im->max_boxes > AE_IMAGE_MAX_BOXES))
                BAD("image node '%s': %u boxes at most (1 to %d)", np->name, im->max_boxes, AE_IMAGE_MAX_BOXES);
            if (im->interpolation > 2)
                BAD("image node '%s': interpolation %u (0 to 2)", np->name, im->interpolation);
        }
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
            if (np->n_inputs != 1 || np->n_outputs != 1 || np->instances > 1 || np->model.dyn_index >= 0)
                BAD("copy node '%s' needs one input and one output", np->name);
            if (np->inputs[0] >= 0 && np->inputs[0] < p->n_tensors && np->outputs[0] >= 0 &&
                np->outputs[0] < p->n_tensors &&
                (p->tensors[np->inputs[0]].device == np->device ||
                 p->tensors[np->inputs[0]].row_bytes != p->tensors[np->outputs[0]].row_bytes))
                BAD("copy node '%s' must copy a tensor of another device into one of its own, row for row",
                    np->name);
            if (np->copy.bridge_stream >= p->n_streams ||
                (np->copy.bridge_stream >= 0 && p->n_devices > 1 &&
                 p->stream_devices[np->copy.bridge_stream] != p->tensors[np->inputs[0]].device))
                BAD("copy node '%s': its host bridge needs a stream of the source device", np->name);
        }
        if (np->domain != AE_ROWS_REQUEST &&
            (np->domain < 0 || np->domain >= n || p->nodes[np->domain].kind != AE_NODE_HOST ||
             !p->nodes[np->domain].host.rows_any))
            BAD("node '%s' runs on the rows of node %d, which is not an earlier host step with rows \"any\"",
                np->name, np->domain);
        if (np->n_inputs > AE_MAX_IO || np->n_outputs > AE_MAX_IO)
            BAD("node '%s' has more than %d inputs or outputs", np->name, AE_MAX_IO);
        if (np->kind == AE_NODE_HOST) {
            if (!np->host.fn == !np->host.reshape_fn || np->host.workers < 1 || np->instances > 1 ||
                np->model.dyn_index >= 0)
                BAD("host step '%s' needs one function (host_fn or host_reshape_fn) and at least one "
                    "worker (got %d), and no model settings", np->name, np->host.workers);
            if (np->host.rows_any && np->host.max_rows < 1)
                BAD("host step '%s' with rows \"any\" needs max_rows of at least 1", np->name);
            int rs = np->host.results_stream;
            if (rs < 0 || rs >= p->n_streams ||
                (p->n_devices > 1 && p->stream_devices[rs] != np->device))
                BAD("host step '%s': its results' stream %d is not one of the %d streams of its device",
                    np->name, rs, p->n_streams);
        }
        if (np->stream < 0 || np->stream >= p->n_streams)
            BAD("node '%s' uses stream %d of %d", np->name, np->stream, p->n_streams);
        if (np->instances < 0)
            BAD("node '%s': instances must be 0 or more, got %d", np->name, np->instances);
        if (np->instances > 1) {
            if (!np->model.ids || !np->streams)
                BAD("node '%s': %d instances need model_ids and streams", np->name, np->instances);
            if (np->model.ids[0] != np->model.id || np->streams[0] != np->stream)
                BAD("node '%s': instance 0 (model %u, stream %d) differs from model_id %u / stream %d",
                    np->name, np->model.ids[0], np->streams[0], np->model.id, np->stream);
            for (int k = 0; k < np->instances; k++) {
                if (np->streams[k] < 0 || np->streams[k] >= p->n_streams)
                    BAD("node '%s': instance %d uses stream %d of %d", np->name, k, np->streams[k],
                        p->n_streams);
                /* one model id on two streams could execute twice at once */
                for (int j = 0; j < k; j++)
                    if (np->model.ids[j] == np->model.ids[k])
                        BAD("node '%s': instances %d and %d are the same model id %u", np->name, j, k,
                            np->model.ids[k]);
            }
        }
        if (np->model.dyn_index >= np->n_inputs)
            BAD("node '%s': dynamic input %d of %d inputs", np->name, np->model.dyn_index, np->n_inputs);
        if (np->shape.dyn_kind != AE_DYN_BATCH && np->shape.dyn_kind != AE_DYN_HW &&
            np->shape.dyn_kind != AE_DYN_DIMS)
            BAD("node '%s' has dynamic kind %d", np->name, np->shape.dyn_kind);
        int shaped = np->shape.dyn_kind != AE_DYN_BATCH;
        int row_gears = shaped && np->domain != AE_ROWS_REQUEST && np->model.static_batch < 1;
        if (shaped && (np->kind != AE_NODE_MODEL || np->model.dyn_index < 0 ||
                       (row_gears && np->shape.dyn_kind != AE_DYN_DIMS)))
            BAD("node '%s': a dynamic-shape node must be a model with a dynamic input, on the request's rows "
                "or, with static_batch rows per execution (or dims gears over its rows), on a host step's",
                np->name);
        if (row_gears) {
            if (np->shape.n_dims_gears < 1 || !np->shape.dims_gears || np->shape.dims_count < 1 ||
                np->shape.dims_count > AE_MAX_GEAR_DIMS || np->shape.n_row_dims < 1 || !np->shape.row_dims)
                BAD("node '%s': dims gears over its rows need the gear table and the rows' places", np->name);
            for (int k = 0; k < np->shape.n_row_dims; k++)
                if (np->shape.row_dims[k] < 0 || np->shape.row_dims[k] >= np->shape.dims_count)
                    BAD("node '%s': rows at value %d of %d", np->name, np->shape.row_dims[k],
                        np->shape.dims_count);
        }
        size_t node_region = np->device > 0 ? p->device_slot_bytes[np->device] : p->slot_bytes;
        if (np->model.dyn_index >= 0 &&
            ((!shaped && np->model.n_gears < 1) || np->model.dyn_offset > node_region ||
             np->model.dyn_size > node_region - np->model.dyn_offset))
            BAD("node '%s': dynamic-batch buffer or gears are invalid", np->name);
        for (int i = 0; i < np->n_inputs; i++) {
            int t = np->inputs[i];
            if (i == np->model.dyn_index ? t != -1 : (t < 0 || t >= p->n_tensors))
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
int aex_plan_waits(ae_engine *e, ae_error *err)
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

int aex_copy_plan(ae_engine *e, const ae_plan *p, ae_error *err)
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
        if (src->shape.dyn_kind != AE_DYN_BATCH ||
            (src->kind == AE_NODE_IMAGE && src->image.op == AE_IMAGE_DECODE))
            e->shaped = 1;   /* requests carry their sizes (a decode: its JPEG's bytes) */
        e->node_inputs[n] = aex_calloc((size_t)src->n_inputs, sizeof(int));
        e->node_outputs[n] = aex_calloc((size_t)src->n_outputs, sizeof(int));
        e->node_gears[n] = aex_calloc((size_t)src->model.n_gears, sizeof(uint64_t));
        if (!e->node_inputs[n] || !e->node_outputs[n] || !e->node_gears[n])
            return aex_fail(e, err, 0, "ae_engine_create", src->name, "out of host memory");
        memcpy(e->node_inputs[n], src->inputs, (size_t)src->n_inputs * sizeof(int));
        memcpy(e->node_outputs[n], src->outputs, (size_t)src->n_outputs * sizeof(int));
        if (src->model.n_gears)
            memcpy(e->node_gears[n], src->model.gears, (size_t)src->model.n_gears * sizeof(uint64_t));
        e->nodes[n].inputs = e->node_inputs[n];
        e->nodes[n].outputs = e->node_outputs[n];
        e->nodes[n].model.gears = e->node_gears[n];
        if (src->shape.n_dims_gears > 0 && src->shape.dims_count > 0 && src->shape.n_row_dims > 0) {
            size_t values = (size_t)src->shape.n_dims_gears * (size_t)src->shape.dims_count;
            e->node_dims_gears[n] = aex_calloc(values, sizeof(int64_t));
            e->node_row_dims[n] = aex_calloc((size_t)src->shape.n_row_dims, sizeof(int));
            if (!e->node_dims_gears[n] || !e->node_row_dims[n])
                return aex_fail(e, err, 0, "ae_engine_create", src->name, "out of host memory");
            memcpy(e->node_dims_gears[n], src->shape.dims_gears, values * sizeof(int64_t));
            memcpy(e->node_row_dims[n], src->shape.row_dims, (size_t)src->shape.n_row_dims * sizeof(int));
        }
        e->nodes[n].shape.dims_gears = e->node_dims_gears[n];
        e->nodes[n].shape.row_dims = e->node_row_dims[n];
        if (src->instances > 1) {
            e->node_model_ids[n] = aex_calloc((size_t)src->instances, sizeof(uint32_t));
            e->node_streams[n] = aex_calloc((size_t)src->instances, sizeof(int));
            if (!e->node_model_ids[n] || !e->node_streams[n])
                return aex_fail(e, err, 0, "ae_engine_create", src->name, "out of host memory");
            memcpy(e->node_model_ids[n], src->model.ids, (size_t)src->instances * sizeof(uint32_t));
            memcpy(e->node_streams[n], src->streams, (size_t)src->instances * sizeof(int));
        } else {
            e->nodes[n].instances = 1;
        }
        e->nodes[n].model.ids = e->node_model_ids[n];
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
        if (e->nodes[n].kind != AE_NODE_COPY || e->nodes[n].copy.bridge_stream < 0)
            continue;
        e->bridge_off[n] = e->bridge_bytes;
        e->bridge_bytes += aex_align_up(e->tensors[e->nodes[n].inputs[0]].capacity, AE_ALIGN);
    }
    return 0;
}
