/*
 * model.c -- aclmdl* in the simulator: load / unload, execute (sync and on a
 * stream), dynamic batch.  Descriptors are in model_desc.c.
 *
 * A loaded model owns one work region (intermediates + float16 scratch, sized
 * for the largest gear) and its weights, both reserved against the device's
 * capacity.  Because the work region is shared by every execution of the
 * model, two executions may not overlap: the second fails on the device with
 * 507011, as the AscendCL documentation forbids running one model on two
 * streams at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "model.h"

/* ---- model table -------------------------------------------------------------- */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_model **table;         /* index = id - 1; ids are never reused */
static size_t table_len, table_cap;

void sim_meta_unref(sim_meta *meta)
{
    if (meta && atomic_fetch_sub(&meta->refs, 1) == 1) {
        sim_model_info_free(meta->info);
        free(meta);
    }
}

sim_model *sim_model_get(uint32_t id)
{
    sim_model *m = NULL;
    pthread_mutex_lock(&table_lock);
    if (id >= 1 && id <= table_len && table[id - 1]) {
        m = table[id - 1];
        atomic_fetch_add(&m->refs, 1);
    }
    pthread_mutex_unlock(&table_lock);
    return m;
}

void sim_model_unref(sim_model *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    if (m->reserved)
        sim_device_release_bytes(m->device, m->reserved);
    if (m->own_work)
        free(m->work);
    if (m->own_weights)
        free(m->weights);
    sim_meta_unref(m->meta);
    free(m);
}

static aclError unknown_model(const char *fn, uint32_t id)
{
    return sim_error(ACL_ERROR_INVALID_MODEL_ID, fn, "modelId %u is not a loaded model", id);
}

/* ---- loading ---------------------------------------------------------------------- */

static aclError read_file(const char *fn, const char *path, unsigned char **out, size_t *size)
{
    if (!path)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelPath is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_error(ACL_ERROR_READ_MODEL_FAILURE, fn, "cannot open model file '%s': %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory reading '%s'", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    int err = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return sim_error(ACL_ERROR_READ_MODEL_FAILURE, fn, "cannot read model file '%s': %s", path, strerror(err));
    }
    *out = buf;
    *size = len;
    return ACL_SUCCESS;
}

/* Parse, place and register a model.  work/weight pointers NULL: the runtime
 * allocates (and reserves) that part itself. */
static aclError load_model(const char *fn, const void *bytes, size_t size, uint32_t *modelId, void *workPtr,
                           size_t workSize, void *weightPtr, size_t weightSize)
{
    sim_context *ctx;
    aclError rc;
    sim_model_info *info = NULL;
    if ((rc = sim_check_init(fn)) != ACL_SUCCESS)
        return rc;
    if (!modelId)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelId is NULL");
    if ((rc = sim_need_context(fn, &ctx)) != ACL_SUCCESS)
        return rc;
    if ((rc = sim_model_parse(fn, bytes, size, &info)) != ACL_SUCCESS)
        return rc;

    int32_t dev = ctx->device_id;
    if (workPtr) {
        if (workSize < info->work_size)
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "workSize %zu is smaller than the %" PRIu64
                           " bytes the model needs (aclmdlQuerySize)", workSize, info->work_size);
        else
            rc = sim_mem_check_device(fn, "workPtr", workPtr, workSize, dev);
    }
    if (rc == ACL_SUCCESS && weightPtr) {
        if (weightSize < info->weight_size)
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "weightSize %zu is smaller than the %" PRIu64
                           " bytes the model needs (aclmdlQuerySize)", weightSize, info->weight_size);
        else
            rc = sim_mem_check_device(fn, "weightPtr", weightPtr, weightSize, dev);
    }
    if (rc != ACL_SUCCESS) {
        sim_model_info_free(info);
        return rc;
    }

    sim_model *m = calloc(1, sizeof *m);
    sim_meta *meta = calloc(1, sizeof *meta);
    if (!m || !meta) {
        free(m);
        free(meta);
        sim_model_info_free(info);
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    }
    atomic_init(&meta->refs, 1);
    meta->info = info;
    m->meta = meta;
    m->device = dev;
    atomic_init(&m->refs, 1);
    atomic_init(&m->busy, 0);
    atomic_init(&m->last_gear, 0);

    size_t need = (workPtr ? 0 : (size_t)info->work_size) + (weightPtr ? 0 : (size_t)info->weight_size);
    if (need && (rc = sim_device_reserve_bytes(fn, dev, need)) != ACL_SUCCESS) {
        sim_model_unref(m);
        return rc;
    }
    m->reserved = need;
    if (workPtr) {
        m->work = workPtr;
    } else {
        /* not zeroed: every intermediate is written before it is read */
        m->work = malloc(info->work_size ? info->work_size : 64);
        m->own_work = 1;
    }
    if (weightPtr) {
        m->weights = weightPtr;
    } else {
        m->weights = malloc(info->weight_size ? info->weight_size : 64);
        m->own_weights = 1;
    }
    if (!m->work || !m->weights) {
        sim_model_unref(m);
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory for the model's %" PRIu64 " + %" PRIu64
                         " bytes", info->work_size, info->weight_size);
    }
    if (info->weight_size)
        memcpy(m->weights, (const unsigned char *)bytes + info->data_off, info->weight_size);

    pthread_mutex_lock(&table_lock);
    if (table_len == table_cap) {
        size_t cap = table_cap ? table_cap * 2 : 64;
        sim_model **nt = realloc(table, cap * sizeof *nt);
        if (!nt) {
            pthread_mutex_unlock(&table_lock);
            sim_model_unref(m);
            return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        }
        table = nt;
        table_cap = cap;
    }
    if (table_len >= UINT32_MAX) {
        pthread_mutex_unlock(&table_lock);
        sim_model_unref(m);
        return sim_error(ACL_ERROR_RT_NO_MODEL_RESOURCE, fn, "no model ids left");
    }
    table[table_len++] = m;
    m->id = (uint32_t)table_len;
    pthread_mutex_unlock(&table_lock);
    *modelId = m->id;
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlLoadFromMem(const void *model, size_t modelSize, uint32_t *modelId)
{
    SIM_ENTER(aclmdlLoadFromMem);
    aclError rc;
    if (!model || modelSize == 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlLoadFromMem", "model is NULL or modelSize is 0");
    else
        rc = load_model("aclmdlLoadFromMem", model, modelSize, modelId, NULL, 0, NULL, 0);
    SIM_RETURN(aclmdlLoadFromMem, rc, "model=%p size=%zu -> id %u", model, modelSize,
               rc == ACL_SUCCESS ? *modelId : 0);
}

static aclError load_file(const char *fn, const char *path, uint32_t *modelId, void *workPtr, size_t workSize,
                          void *weightPtr, size_t weightSize)
{
    unsigned char *buf;
    size_t size;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS)
        rc = read_file(fn, path, &buf, &size);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = load_model(fn, buf, size, modelId, workPtr, workSize, weightPtr, weightSize);
    free(buf);
    return rc;
}

SIM_EXPORT aclError aclmdlLoadFromFile(const char *modelPath, uint32_t *modelId)
{
    SIM_ENTER(aclmdlLoadFromFile);
    aclError rc = load_file("aclmdlLoadFromFile", modelPath, modelId, NULL, 0, NULL, 0);
    SIM_RETURN(aclmdlLoadFromFile, rc, "'%s' -> id %u", modelPath ? modelPath : "(null)",
               rc == ACL_SUCCESS ? *modelId : 0);
}

SIM_EXPORT aclError aclmdlLoadFromFileWithMem(const char *modelPath, uint32_t *modelId, void *workPtr,
                                              size_t workSize, void *weightPtr, size_t weightSize)
{
    SIM_ENTER(aclmdlLoadFromFileWithMem);
    aclError rc = load_file("aclmdlLoadFromFileWithMem", modelPath, modelId, workPtr, workSize, weightPtr, weightSize);
    SIM_RETURN(aclmdlLoadFromFileWithMem, rc, "'%s' work=%p/%zu weight=%p/%zu -> id %u",
               modelPath ? modelPath : "(null)", workPtr, workSize, weightPtr, weightSize,
               rc == ACL_SUCCESS ? *modelId : 0);
}

SIM_EXPORT aclError aclmdlQuerySize(const char *fileName, size_t *workSize, size_t *weightSize)
{
    SIM_ENTER(aclmdlQuerySize);
    const char *fn = "aclmdlQuerySize";
    unsigned char *buf;
    size_t size;
    sim_model_info *info;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && (!workSize || !weightSize))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "workSize or weightSize is NULL");
    if (rc == ACL_SUCCESS && (rc = read_file(fn, fileName, &buf, &size)) == ACL_SUCCESS) {
        rc = sim_model_parse(fn, buf, size, &info);
        free(buf);
        if (rc == ACL_SUCCESS) {
            *workSize = info->work_size;
            *weightSize = info->weight_size;
            sim_model_info_free(info);
        }
    }
    SIM_RETURN(aclmdlQuerySize, rc, "'%s'", fileName ? fileName : "(null)");
}

SIM_EXPORT aclError aclmdlUnload(uint32_t modelId)
{
    SIM_ENTER(aclmdlUnload);
    aclError rc = sim_check_init("aclmdlUnload");
    sim_model *m = NULL;
    if (rc == ACL_SUCCESS) {
        pthread_mutex_lock(&table_lock);
        if (modelId >= 1 && modelId <= table_len && table[modelId - 1]) {
            m = table[modelId - 1];
            table[modelId - 1] = NULL;
        }
        pthread_mutex_unlock(&table_lock);
        if (!m)
            rc = unknown_model("aclmdlUnload", modelId);
        else
            sim_model_unref(m);   /* queued executions keep it alive until they finish */
    }
    SIM_RETURN(aclmdlUnload, rc, "id %u", modelId);
}

/* ---- execution --------------------------------------------------------------------- */

typedef struct exec_plan {
    uint64_t gear;               /* 0 for a static model */
    uint32_t n_in, n_out;
    void **in, **out;            /* buffer addresses captured at call time */
    size_t *in_len, *out_len;    /* bytes the execution touches in each */
    void **pins;                 /* aclmdlExecuteAsync: sim_mem_pin tokens of the inputs, outputs, */
                                 /* then the caller's work and weight memory (n_in + n_out + 2) */
} exec_plan;

static int gear_ok(const sim_model_info *info, uint64_t g)
{
    for (uint32_t i = 0; i < info->n_gears; i++)
        if (info->gears[i] == g)
            return 1;
    return 0;
}

static void gear_list(const sim_model_info *info, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < info->n_gears && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %" PRIu64 : "%" PRIu64, info->gears[i]);
}

/* Bytes of an input or output at batch `gear` (0: static model): a batched
 * tensor scales with the gear, anything else keeps its one size. */
static uint64_t io_bytes(const sim_model_info *info, const sim_io *io, uint64_t gear)
{
    if (!gear || !info->n_gears || io->rank == 0 || io->dims[0] != -1)
        return io->max_bytes;
    return io->max_bytes / info->gears[info->n_gears - 1] * gear;
}

/* The dataset is live and holds one buffer per model input (output). */
static aclError check_count(const char *fn, const sim_model *m, const aclmdlDataset *ds, int is_in)
{
    const sim_model_info *info = m->meta->info;
    const char *what = is_in ? "input" : "output";
    uint32_t n = is_in ? info->n_inputs : info->n_outputs;
    if (!sim_dataset_ok(ds))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s dataset %p is NULL or not a live dataset", what,
                         (const void *)ds);
    if (ds->count != n)
        return sim_error(is_in ? ACL_ERROR_MODEL_INPUT_NOT_MATCH : ACL_ERROR_MODEL_OUTPUT_NOT_MATCH, fn,
                         "the %s dataset has %zu buffers, model %u has %u %ss%s", what, ds->count, m->id, n, what,
                         is_in && info->n_gears ? " (including the dynamic-batch input " ACL_DYNAMIC_TENSOR_NAME ")"
                                                : "");
    return ACL_SUCCESS;
}

/* Every buffer is live device memory of the model's device and holds at
 * least the bytes the execution at `gear` reads or writes (CANN measures
 * against the selected gear, not against the descriptor's largest-gear size). */
static aclError check_buffers(const char *fn, const sim_model *m, const aclmdlDataset *ds, int is_in, uint64_t gear,
                              void **ptrs, size_t *lens)
{
    const sim_model_info *info = m->meta->info;
    const char *what = is_in ? "input" : "output";
    aclError mismatch = is_in ? ACL_ERROR_MODEL_INPUT_NOT_MATCH : ACL_ERROR_MODEL_OUTPUT_NOT_MATCH;
    uint32_t n = is_in ? info->n_inputs : info->n_outputs;
    const sim_io *ios = is_in ? info->inputs : info->outputs;
    for (uint32_t i = 0; i < n; i++) {
        const aclDataBuffer *b = ds->buffers[i];
        if (!sim_databuf_ok(b))
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s %u: data buffer %p is not a live data buffer", what, i,
                             (const void *)b);
        uint64_t need = io_bytes(info, &ios[i], gear);
        if (b->size < need) {
            if (need != ios[i].size)
                return sim_error(mismatch, fn, "%s %u ('%s'): buffer of %zu bytes, model %u needs %" PRIu64
                                 " at batch %" PRIu64 " (aclmdlGet%sSizeByIndex reports %" PRIu64
                                 " for the largest gear)", what, i, ios[i].name, b->size, m->id, need, gear,
                                 is_in ? "Input" : "Output", ios[i].size);
            return sim_error(mismatch, fn, "%s %u ('%s'): buffer of %zu bytes, model %u needs %" PRIu64
                             " (aclmdlGet%sSizeByIndex)", what, i, ios[i].name, b->size, m->id, need,
                             is_in ? "Input" : "Output");
        }
        char arg[64 + SIM_MAX_NAME];
        snprintf(arg, sizeof arg, "%s %u ('%s')", what, i, ios[i].name);
        aclError rc = sim_mem_check_device(fn, arg, b->data, b->size, m->device);
        if (rc != ACL_SUCCESS)
            return rc;
        ptrs[i] = b->data;
        lens[i] = (size_t)need;
    }
    return ACL_SUCCESS;
}

static aclError prepare(const char *fn, sim_model *m, const aclmdlDataset *in, const aclmdlDataset *out,
                        exec_plan **plan_out)
{
    const sim_model_info *info = m->meta->info;
    size_t n = (size_t)info->n_inputs + info->n_outputs;
    exec_plan *p = calloc(1, sizeof *p + (2 * sizeof(void *) + sizeof(size_t)) * n + 2 * sizeof(void *));
    if (!p)
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    p->n_in = info->n_inputs;
    p->n_out = info->n_outputs;
    p->in = (void **)(p + 1);
    p->out = p->in + p->n_in;
    p->in_len = (size_t *)(p->out + p->n_out);
    p->out_len = p->in_len + p->n_in;
    p->pins = (void **)(p->out_len + p->n_out);
    aclError rc = check_count(fn, m, in, 1);
    if (rc == ACL_SUCCESS)
        rc = check_count(fn, m, out, 0);
    if (rc == ACL_SUCCESS && info->n_gears) {
        p->gear = in->dyn_batch;
        if (!gear_ok(info, p->gear)) {
            char gears[1024];
            gear_list(info, gears, sizeof gears);
            rc = sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn,
                           "model %u has dynamic batch but the input dataset has no valid gear set: call "
                           "aclmdlSetDynamicBatchSize(modelId, dataset, index of %s, batch) with one of the "
                           "gears (%s) before executing", m->id, ACL_DYNAMIC_TENSOR_NAME, gears);
        }
    }
    if (rc == ACL_SUCCESS)
        rc = check_buffers(fn, m, in, 1, p->gear, p->in, p->in_len);
    if (rc == ACL_SUCCESS)
        rc = check_buffers(fn, m, out, 0, p->gear, p->out, p->out_len);
    if (rc != ACL_SUCCESS) {
        free(p);
        return rc;
    }
    *plan_out = p;
    return ACL_SUCCESS;
}

/* Run every op of the model for the plan's gear.  Returns 0 or an error code
 * with a message in err. */
static aclError run_plan(sim_model *m, const exec_plan *p, char *err, size_t errlen)
{
    const sim_model_info *info = m->meta->info;
    if (atomic_exchange(&m->busy, 1)) {
        snprintf(err, errlen, "model %u is already executing (on another stream or thread): one loaded model "
                 "cannot execute concurrently; load it once per stream", m->id);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    int stall_ms = 0;
    aclError rc = sim_fault_on_task("execute", &stall_ms);
    if (stall_ms > 0)
        sim_sleep_until_ns(sim_now_ns() + (uint64_t)stall_ms * 1000000u);
    if (rc != ACL_SUCCESS) {
        snprintf(err, errlen, "execution of model %u failed on the device (injected fault)", m->id);
        atomic_store(&m->busy, 0);
        return rc;
    }
    uint64_t start = sim_now_ns();
    uint64_t batch = p->gear;
    void **ptr = malloc(sizeof(void *) * info->n_tensors);
    if (!ptr) {
        snprintf(err, errlen, "out of host memory executing model %u", m->id);
        atomic_store(&m->busy, 0);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    for (uint32_t i = 0; i < info->n_tensors; i++) {
        const sim_tensor *t = &info->tensors[i];
        ptr[i] = t->kind == SIM_KIND_CONST ? (void *)(m->weights + t->const_offset)
                 : t->kind == SIM_KIND_RESULT ? (void *)(m->work + t->work_offset) : NULL;
    }
    for (uint32_t i = 0; i < p->n_in; i++)
        if (info->inputs[i].tensor != UINT32_MAX)
            ptr[info->inputs[i].tensor] = p->in[i];
    for (uint32_t k = 0; k < info->n_ops; k++) {
        const sim_op *op = &info->ops[k];
        sim_view in[SIM_MAX_OP_INPUTS], out;
        for (uint32_t j = 0; j <= op->n_inputs; j++) {
            uint32_t ti = j < op->n_inputs ? op->inputs[j] : op->output;
            const sim_tensor *t = &info->tensors[ti];
            sim_view *v = j < op->n_inputs ? &in[j] : &out;
            v->data = ptr[ti];
            v->dtype = t->dtype;
            v->rank = t->rank;
            memcpy(v->dims, t->dims, sizeof v->dims);
            if (t->batched)
                v->dims[0] = (int64_t)batch;
        }
        sim_kernel_run(op, in, &out, m->work + info->scratch_offset);
    }
    for (uint32_t k = 0; k < info->n_outputs; k++) {
        const sim_tensor *t = &info->tensors[info->outputs[k].tensor];
        uint64_t bytes = t->batched ? t->max_bytes / info->gears[info->n_gears - 1] * batch : t->max_bytes;
        memcpy(p->out[k], ptr[info->outputs[k].tensor], bytes);
    }
    free(ptr);
    /* the device-time model: the execution occupies its stream at least this long */
    double us = info->latency_us + info->latency_per_item_us * (double)(batch ? batch : 1);
    if (us > 0)
        sim_sleep_until_ns(start + (uint64_t)(us * 1000.0));
    atomic_store(&m->busy, 0);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlExecute(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output)
{
    SIM_ENTER(aclmdlExecute);
    const char *fn = "aclmdlExecute";
    sim_context *ctx;
    exec_plan *p = NULL;
    sim_model *m = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS)
        rc = sim_need_context(fn, &ctx);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = unknown_model(fn, modelId);
    if (rc == ACL_SUCCESS && ctx->device_id != m->device)
        rc = sim_error(ACL_ERROR_RT_MODEL_CONTEXT, fn, "model %u is loaded on device %d, the current context is on "
                       "device %d", modelId, m->device, ctx->device_id);
    if (rc == ACL_SUCCESS)
        rc = prepare(fn, m, input, output, &p);
    if (rc == ACL_SUCCESS) {
        char err[512];
        rc = run_plan(m, p, err, sizeof err);
        if (rc != ACL_SUCCESS)
            sim_error(rc, fn, "%s", err);
    }
    free(p);
    sim_model_unref(m);
    SIM_RETURN(aclmdlExecute, rc, "id %u", modelId);
}

typedef struct exec_task {
    sim_model *model;
    exec_plan *plan;
} exec_task;

/* Pin what a queued execution will touch, so a free before it runs cannot
 * hand the addresses out again (memory.c). */
static void pin_plan(const sim_model *m, exec_plan *p)
{
    uint32_t n = p->n_in + p->n_out;
    for (uint32_t i = 0; i < n; i++)
        p->pins[i] = sim_mem_pin(i < p->n_in ? p->in[i] : p->out[i - p->n_in]);
    p->pins[n] = m->own_work ? NULL : sim_mem_pin(m->work);
    p->pins[n + 1] = m->own_weights ? NULL : sim_mem_pin(m->weights);
}

static void unpin_plan(exec_plan *p)
{
    for (uint32_t i = 0; i < p->n_in + p->n_out + 2; i++)
        sim_mem_unpin(p->pins[i]);
}

/* Fails the execution when memory it uses was freed after it was queued. */
static aclError plan_memory_live(const sim_model *m, const exec_plan *p, char *err, size_t errlen)
{
    const sim_model_info *info = m->meta->info;
    uint32_t n = p->n_in + p->n_out;
    for (uint32_t i = 0; i < n + 2; i++) {
        if (sim_mem_pin_live(p->pins[i]))
            continue;
        char what[64 + SIM_MAX_NAME];
        if (i < n) {
            int is_in = i < p->n_in;
            const sim_io *io = is_in ? &info->inputs[i] : &info->outputs[i - p->n_in];
            snprintf(what, sizeof what, "the buffer of %s %u ('%s')", is_in ? "input" : "output",
                     is_in ? i : i - p->n_in, io->name);
        } else {
            snprintf(what, sizeof what, "its %s memory (aclmdlLoadFromFileWithMem)", i == n ? "work" : "weight");
        }
        snprintf(err, errlen, "model %u: %s, allocation %p, was freed while the execution was queued; aclrtFree "
                 "frees at once and does not wait for queued work: synchronize the stream before freeing memory "
                 "it uses", m->id, what, p->pins[i]);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    return ACL_SUCCESS;
}

static aclError exec_task_run(void *arg, sim_stream *stream)
{
    exec_task *t = arg;
    char err[512];
    aclError rc = plan_memory_live(t->model, t->plan, err, sizeof err);
    if (rc == ACL_SUCCESS)
        rc = run_plan(t->model, t->plan, err, sizeof err);
    if (rc != ACL_SUCCESS) {
        sim_task_error(stream, rc, "aclmdlExecuteAsync: %s", err);
        sim_exception_note_model(t->model->meta->info, t->plan->in, t->plan->out, t->plan->gear);
    }
    unpin_plan(t->plan);
    free(t->plan);
    sim_model_unref(t->model);
    return rc;
}

SIM_EXPORT aclError aclmdlExecuteAsync(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output,
                                       aclrtStream stream)
{
    SIM_ENTER(aclmdlExecuteAsync);
    const char *fn = "aclmdlExecuteAsync";
    sim_stream *s = NULL;
    exec_plan *p = NULL;
    sim_model *m = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS)
        rc = sim_stream_resolve(fn, stream, &s);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = unknown_model(fn, modelId);
    if (rc == ACL_SUCCESS && sim_stream_device(s) != m->device)
        rc = sim_error(ACL_ERROR_RT_MODEL_CONTEXT, fn, "model %u is loaded on device %d, the stream is on device %d",
                       modelId, m->device, sim_stream_device(s));
    if (rc == ACL_SUCCESS)
        rc = prepare(fn, m, input, output, &p);
    if (rc == ACL_SUCCESS) {
        exec_task t = {m, p};
        char what[48];
        snprintf(what, sizeof what, "execute model %u", modelId);
        pin_plan(m, p);
        rc = sim_stream_enqueue(s, what, exec_task_run, &t, sizeof t);
        if (rc == ACL_SUCCESS) {
            m = NULL;   /* the task owns the reference, the plan and its pins now */
            p = NULL;
        } else {
            unpin_plan(p);
        }
    }
    free(p);
    sim_model_unref(m);
    SIM_RETURN(aclmdlExecuteAsync, rc, "id %u stream %p", modelId, stream);
}

/* ---- dynamic batch ------------------------------------------------------------------ */

SIM_EXPORT aclError aclmdlSetDynamicBatchSize(uint32_t modelId, aclmdlDataset *dataset, size_t index,
                                              uint64_t batchSize)
{
    SIM_ENTER(aclmdlSetDynamicBatchSize);
    const char *fn = "aclmdlSetDynamicBatchSize";
    sim_model *m = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = unknown_model(fn, modelId);
    const sim_model_info *info = m ? m->meta->info : NULL;
    if (rc == ACL_SUCCESS && info->n_gears == 0)
        rc = sim_error(ACL_ERROR_MODEL_NOT_DYNAMIC, fn, "model %u has no dynamic batch (it was saved without "
                       "batch_sizes)", modelId);
    if (rc == ACL_SUCCESS && !sim_dataset_ok(dataset))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dataset %p is NULL or not a live dataset", (void *)dataset);
    if (rc == ACL_SUCCESS && index != (size_t)info->n_inputs - 1)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu is not the dynamic-batch input: %s is input %u "
                       "(aclmdlGetInputIndexByName)", index, ACL_DYNAMIC_TENSOR_NAME, info->n_inputs - 1);
    if (rc == ACL_SUCCESS && !gear_ok(info, batchSize)) {
        char gears[1024];
        gear_list(info, gears, sizeof gears);
        rc = sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "batch %" PRIu64 " is not a gear of model %u "
                       "(gears: %s)", batchSize, modelId, gears);
    }
    if (rc == ACL_SUCCESS && (index >= dataset->count || !sim_databuf_ok(dataset->buffers[index])))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "the dataset has no buffer at index %zu: add the %s input's "
                       "buffer (aclmdlGetInputSizeByIndex bytes) before setting the batch", index,
                       ACL_DYNAMIC_TENSOR_NAME);
    if (rc == ACL_SUCCESS) {
        aclDataBuffer *b = dataset->buffers[index];
        rc = sim_mem_check_device(fn, "dataset buffer of " ACL_DYNAMIC_TENSOR_NAME, b->data,
                                  b->size < 8 ? (b->size ? b->size : 1) : 8, m->device);
        if (rc == ACL_SUCCESS && b->size < 8)
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "the %s buffer holds %zu bytes, needs %" PRIu64,
                           ACL_DYNAMIC_TENSOR_NAME, b->size, info->inputs[index].size);
        if (rc == ACL_SUCCESS) {
            int64_t v = (int64_t)batchSize;   /* what the device reads: the batch as int64 */
            memcpy(b->data, &v, sizeof v);
            dataset->dyn_batch = batchSize;
            atomic_store(&m->last_gear, batchSize);
        }
    }
    sim_model_unref(m);
    SIM_RETURN(aclmdlSetDynamicBatchSize, rc, "id %u index %zu batch %" PRIu64, modelId, index, batchSize);
}
