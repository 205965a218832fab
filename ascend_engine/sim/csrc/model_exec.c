/*
 * model_exec.c -- aclmdlExecute and aclmdlExecuteAsync in the simulator: an
 * execution's plan (its buffers checked and captured at call time), the run of
 * the model's ops or its ONNX Runtime session, and the stream task that runs
 * it.  Loading and the model table are in model.c (the comment there says how
 * work memory and weights are owned).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "model.h"

/* ---- execution --------------------------------------------------------------------- */

/* CANN 9.1's GE accepts an input or output buffer this many bytes smaller
 * than the model's (its data alignment slack, docs/simulator.md). */
#define SIM_EXEC_SLACK 64

typedef struct exec_plan {
    int dynamic;                 /* the symbols below are set (any dynamic model) */
    uint64_t sym[SIM_MAX_SYMS];  /* this execution's symbol values: its gear or its shapes */
    uint32_t n_in, n_out;
    void **in, **out;            /* buffer addresses captured at call time */
    size_t *in_len, *out_len;    /* bytes the execution touches in each */
    size_t *in_full, *out_full;  /* bytes the execution computes from / into each: more than the */
    int short_in, short_out;     /* touched ones for a buffer up to 64 bytes short (then staged) */
    void **pins;                 /* aclmdlExecuteAsync: sim_mem_pin tokens of the inputs, outputs, */
                                 /* then the caller's work and weight memory (n_in + n_out + 2) */
    aclTensorDesc **out_desc;    /* ONNX shape-range models: the output dataset's descriptions, which */
    int64_t *out_dims;           /* get each output's shape as run (n_out x SIM_MAX_RANK) */
} exec_plan;

/* Bytes of an input or output at the execution's symbol values (NULL: the
 * static shape).  The synthesized dynamic input keeps its one size. */
static uint64_t io_bytes(const sim_model_info *info, const sim_io *io, const uint64_t *sym)
{
    if (io->tensor == UINT32_MAX || !sym)
        return io->max_bytes;
    int64_t dims[SIM_MAX_RANK];
    sim_io_dims(info, io, sym, dims);
    return sim_shape_elems(dims, io->rank) * aclDataTypeSize(io->dtype);
}

/* "batch 2", "image size 32x48", ...: what the execution runs at, for messages. */
static void shape_note(const sim_model_info *info, const uint64_t *sym, char *buf, size_t n)
{
    if (info->dyn_kind == SIM_DYN_BATCH) {
        snprintf(buf, n, "batch %" PRIu64, sym[0]);
    } else if (info->dyn_kind == SIM_DYN_HW) {
        snprintf(buf, n, "image size %" PRIu64 "x%" PRIu64, sym[0], sym[1]);
    } else {
        size_t used = (size_t)snprintf(buf, n, "%s (",
                                       info->dyn_kind == SIM_DYN_DIMS ? "dims gear" : "shape range values");
        for (uint32_t s = 0; s < info->n_syms && used < n; s++)
            used += (size_t)snprintf(buf + used, n - used, s ? ", %" PRIu64 : "%" PRIu64, sym[s]);
        if (used < n)
            snprintf(buf + used, n - used, ")");
    }
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
        return sim_error(ACL_ERROR_GE_FAILURE, fn,
                         "the %s dataset has %zu buffers, model %u has %u %ss%s", what, ds->count, m->id, n, what,
                         !is_in || !info->n_gears ? ""
                         : info->dyn_kind == SIM_DYN_BATCH ? " (including the dynamic-batch input " ACL_DYNAMIC_TENSOR_NAME ")"
                                                          : " (including the dynamic input " ACL_DYNAMIC_TENSOR_NAME ")");
    return ACL_SUCCESS;
}

/* A model CANN 9.1 checks no buffer size of: a gear model or a dynamic-AIPP one. */
static int sizes_unchecked(const sim_model_info *info)
{
    if (info->n_gears > 0)
        return 1;
    for (uint32_t k = 0; k < info->n_aipp; k++)
        if (info->aipp[k].dynamic)
            return 1;
    return 0;
}

/* aclmdlExecute (sync) with an output buffer whose data is NULL: allocate
 * it with aclrtMalloc at the output's size and store it in the buffer, as
 * CANN 9.1's GE does; the program frees it with aclrtFree. */
static aclError alloc_output(const char *fn, const sim_model *m, aclDataBuffer *b, uint32_t i)
{
    const sim_io *io = &m->meta->info->outputs[i];
    if (!io->size)
        return sim_error(ACL_ERROR_GE_FAILURE, fn, "output %u ('%s'): data buffer with NULL data, and the output "
                         "has no largest size to allocate (a shape range without an upper bound): pass a buffer",
                         i, io->name);
    void *ptr = NULL;
    aclError rc = aclrtMalloc(&ptr, (size_t)io->size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (rc != ACL_SUCCESS)
        return rc;
    b->data = ptr;
    b->size = (size_t)io->size;
    return ACL_SUCCESS;
}

/* Every buffer is live device memory of the model's device.  Its size is
 * checked as CANN 9.1's GE does: at most 64 bytes fewer than the execution
 * at its gear (or its shapes) reads or writes (GE's alignment slack); gear
 * and dynamic-AIPP models are not checked in CANN, and here only under
 * ASCEND_SIM_GEAR_CHECKS=strict (gear_checks.c).  A buffer short of the
 * execution's bytes is staged at run time: the missing input bytes read as
 * zeros, the missing output bytes are not written. */
static aclError check_buffers(const char *fn, const sim_model *m, aclmdlDataset *ds, int is_in, int sync,
                              exec_plan *p)
{
    const sim_model_info *info = m->meta->info;
    const char *what = is_in ? "input" : "output";
    uint32_t n = is_in ? info->n_inputs : info->n_outputs;
    const sim_io *ios = is_in ? info->inputs : info->outputs;
    void **ptrs = is_in ? p->in : p->out;
    size_t *lens = is_in ? p->in_len : p->out_len, *fulls = is_in ? p->in_full : p->out_full;
    int strict = 1, unchecked = sizes_unchecked(info);
    aclError rc = unchecked ? sim_gear_checks(fn, &strict) : ACL_SUCCESS;
    if (rc != ACL_SUCCESS)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        aclDataBuffer *b = ds->buffers[i];
        if (!sim_databuf_ok(b))
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s %u: data buffer %p is not a live data buffer", what, i,
                             (const void *)b);
        if (!is_in && sync && !b->data && (rc = alloc_output(fn, m, b, i)) != ACL_SUCCESS)
            return rc;
        uint64_t need = io_bytes(info, &ios[i], p->dynamic ? p->sym : NULL);
        if ((!unchecked || strict) && (uint64_t)b->size + SIM_EXEC_SLACK < need) {
            char note[256] = "";
            if (need != ios[i].size) {
                char at[160];
                shape_note(info, p->sym, at, sizeof at);
                snprintf(note, sizeof note, " at %s (aclmdlGet%sSizeByIndex reports %" PRIu64 "%s)", at,
                         is_in ? "Input" : "Output", ios[i].size,
                         ios[i].size ? " for the largest gear" : ": the shape range has no largest shape");
            }
            return sim_error(ACL_ERROR_GE_FAILURE, fn, "%s %u ('%s'): buffer of %zu bytes, model %u needs %" PRIu64
                             "%s%s; CANN accepts up to %d bytes fewer%s", what, i, ios[i].name, b->size, m->id, need,
                             note, need == ios[i].size ? is_in ? " (aclmdlGetInputSizeByIndex)"
                                                               : " (aclmdlGetOutputSizeByIndex)" : "",
                             SIM_EXEC_SLACK, unchecked ? " (and does not check gear or dynamic-AIPP models: "
                             "ASCEND_SIM_GEAR_CHECKS=cann)" : "");
        }
        /* an output ONNX Runtime sizes at run time may fill the whole buffer (checked after the run) */
        size_t full = ios[i].shape_after_run ? b->size : (size_t)need;
        size_t touched = b->size < full ? b->size : full;
        if (!b->data || !sim_mem_device_ok(b->data, touched, m->device)) {
            /* The argument's name only for the message: formatting it on
             * every passing call was most of this call's cost. */
            char arg[64 + SIM_MAX_NAME];
            snprintf(arg, sizeof arg, "%s %u ('%s')", what, i, ios[i].name);
            return sim_mem_check_device(fn, arg, b->data, touched ? touched : 1, m->device);
        }
        ptrs[i] = b->data;
        lens[i] = touched;
        fulls[i] = full;
        if (touched < full)
            *(is_in ? &p->short_in : &p->short_out) = 1;
    }
    return ACL_SUCCESS;
}

/* A zeroed plan for model m: the spare one left by its last finished
 * execution when there is one, so that a steady stream of executions does
 * not allocate (every plan of a model has the same size). */
static exec_plan *plan_take(sim_model *m)
{
    const sim_model_info *info = m->meta->info;
    size_t n = (size_t)info->n_inputs + info->n_outputs;
    /* the layout prepare() lays out: buffers, lengths, pins, then the range models' output dims */
    size_t bytes = sizeof(exec_plan) + (2 * sizeof(void *) + 2 * sizeof(size_t)) * n + 2 * sizeof(void *) +
                   info->n_outputs * (sizeof(aclTensorDesc *) + sizeof(int64_t) * SIM_MAX_RANK);
    exec_plan *p = atomic_exchange(&m->spare_plan, NULL);
    if (p)
        memset(p, 0, bytes);
    else
        p = calloc(1, bytes);
    return p;
}

/* Keep p as m's spare, or free it when m has one already (or p has no model). */
static void plan_give_back(sim_model *m, exec_plan *p)
{
    void *none = NULL;
    if (p && !(m && atomic_compare_exchange_strong(&m->spare_plan, &none, p)))
        free(p);
}

static aclError prepare(const char *fn, sim_model *m, const aclmdlDataset *in, aclmdlDataset *out, int sync,
                        exec_plan **plan_out)
{
    const sim_model_info *info = m->meta->info;
    size_t n = (size_t)info->n_inputs + info->n_outputs;
    size_t n_out = info->n_outputs;
    exec_plan *p = plan_take(m);
    if (!p)
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    p->n_in = info->n_inputs;
    p->n_out = info->n_outputs;
    p->in = (void **)(p + 1);
    p->out = p->in + p->n_in;
    p->in_len = (size_t *)(p->out + p->n_out);
    p->out_len = p->in_len + p->n_in;
    p->in_full = p->out_len + p->n_out;
    p->out_full = p->in_full + p->n_in;
    p->pins = (void **)(p->out_full + p->n_out);
    p->out_dims = (int64_t *)(p->pins + n + 2);
    p->out_desc = (aclTensorDesc **)(p->out_dims + n_out * SIM_MAX_RANK);
    aclError rc = check_count(fn, m, in, 1);
    if (rc == ACL_SUCCESS)
        rc = check_count(fn, m, out, 0);
    if (rc == ACL_SUCCESS && info->dyn_kind != SIM_DYN_NONE) {
        p->dynamic = 1;
        rc = sim_exec_syms(fn, m, in, p->sym);
    }
    if (rc == ACL_SUCCESS)
        rc = check_buffers(fn, m, (aclmdlDataset *)in, 1, sync, p);   /* inputs: read only */
    if (rc == ACL_SUCCESS)
        rc = check_buffers(fn, m, out, 0, sync, p);
    if (rc == ACL_SUCCESS && info->dyn_kind == SIM_DYN_RANGE) {
        rc = sim_range_describe_outputs(fn, m, out, p->sym);
        for (uint32_t k = 0; rc == ACL_SUCCESS && k < p->n_out; k++)
            p->out_desc[k] = out->descs[k];
    }
    if (rc != ACL_SUCCESS) {
        plan_give_back(m, p);
        return rc;
    }
    *plan_out = p;
    return ACL_SUCCESS;
}

/* Where each op result of a shape-range model lives for this execution, and
 * the bytes of work memory (results + float16 scratch) it needs. */
static uint64_t range_layout(const sim_model_info *info, const uint64_t *sym, uint64_t *offsets,
                             uint64_t *scratch_at)
{
    uint64_t work = 0, scratch = 0;
    int64_t dims[SIM_MAX_RANK];
    for (uint32_t i = 0; i < info->n_tensors; i++) {
        const sim_tensor *t = &info->tensors[i];
        if (t->kind != SIM_KIND_RESULT)
            continue;
        sim_resolve_dims(t->dims, t->rank, sym, dims);
        offsets[i] = work;
        work = (work + sim_shape_elems(dims, t->rank) * t->elem_size + 63) / 64 * 64;
    }
    for (uint32_t k = 0; k < info->n_ops; k++) {
        const sim_op *op = &info->ops[k];
        int float_op = op->opcode <= SIM_OP_LAYERNORM || op->opcode == SIM_OP_MEAN || op->opcode == SIM_OP_SUM;
        if (!float_op || info->tensors[op->inputs[0]].dtype != ACL_FLOAT16)
            continue;
        uint64_t need = 0;
        for (uint32_t j = 0; j <= op->n_inputs; j++) {
            const sim_tensor *t = &info->tensors[j < op->n_inputs ? op->inputs[j] : op->output];
            sim_resolve_dims(t->dims, t->rank, sym, dims);
            need += (sim_shape_elems(dims, t->rank) * 4 + 63) / 64 * 64;
        }
        if (need > scratch)
            scratch = need;
    }
    *scratch_at = work;
    return work + scratch;
}

/* Fill `tensor` from AIPP input a's source images: with its static settings,
 * or, for dynamic AIPP, each batch image with its entry of the parameter
 * block in the ascend_dynamic_aipp_data input (checked now: the program
 * writes that buffer). */
static aclError apply_aipp(const sim_model_info *info, const exec_plan *p, void *const *src, const sim_aipp *a,
                           void *tensor, char *err, size_t errlen)
{
    const sim_tensor *t = &info->tensors[a->tensor];
    if (!a->dynamic) {
        sim_aipp_apply(a, t->dtype, src[a->input], tensor);
        return ACL_SUCCESS;
    }
    size_t per_image = (size_t)(a->c * a->h * a->w) * t->elem_size;
    const unsigned char *image = src[a->input];
    for (int64_t b = 0; b < a->n; b++) {
        sim_aipp one;
        aclError rc = sim_aipp_from_block(a, src[a->data_input], p->in_full[a->data_input], (uint64_t)b, &one,
                                          err, errlen);
        if (rc != ACL_SUCCESS)
            return rc;
        sim_aipp_apply(&one, t->dtype, image + (uint64_t)b * one.image_bytes, (unsigned char *)tensor + per_image * b);
    }
    return ACL_SUCCESS;
}

/* The inputs the model computes from: the buffers src, except that each
 * AIPP input's source images become the model tensor they feed
 * (aipp_apply.c), in host memory freed by unstage_aipp.  Entries n_in.. of
 * the array (*out) hold those allocations. */
static aclError stage_aipp(const sim_model_info *info, const exec_plan *p, void *const *src, void ***out, char *err,
                           size_t errlen)
{
    void **in = calloc((size_t)p->n_in + info->n_aipp, sizeof *in);
    aclError rc = ACL_SUCCESS;
    if (!in) {
        snprintf(err, errlen, "out of host memory applying the AIPP of model '%s'", info->name);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    memcpy(in, src, sizeof *in * p->n_in);
    for (uint32_t k = 0; k < info->n_aipp && rc == ACL_SUCCESS; k++) {
        const sim_aipp *a = &info->aipp[k];
        void *tensor = malloc(info->tensors[a->tensor].max_bytes);
        if (!tensor) {
            snprintf(err, errlen, "out of host memory applying the AIPP of model '%s'", info->name);
            rc = ACL_ERROR_RT_MODEL_EXECUTE;
            break;
        }
        in[a->input] = in[p->n_in + k] = tensor;
        rc = apply_aipp(info, p, src, a, tensor, err, errlen);
    }
    if (rc != ACL_SUCCESS) {
        for (uint32_t k = 0; k < info->n_aipp; k++)
            free(in[p->n_in + k]);
        free(in);
        return rc;
    }
    *out = in;
    return ACL_SUCCESS;
}

static void unstage_aipp(const sim_model_info *info, const exec_plan *p, void **in)
{
    for (uint32_t k = 0; k < info->n_aipp; k++)
        free(in[p->n_in + k]);
    free(in);
}

/* Run every op of the model for the plan's gear or shapes, from the input
 * buffers `in` into the output buffers `out` (out_full bytes each). */
static aclError run_ops(sim_model *m, const exec_plan *p, void *const *in_bufs, void *const *out, char *err,
                        size_t errlen)
{
    const sim_model_info *info = m->meta->info;
    const uint64_t *sym = p->dynamic ? p->sym : NULL;
    void **ptr = malloc(sizeof(void *) * info->n_tensors);
    uint64_t *offsets = NULL;
    unsigned char *work = m->work, *range_work = NULL;
    uint64_t scratch_at = info->scratch_offset;
    if (ptr && info->dyn_kind == SIM_DYN_RANGE) {
        offsets = malloc(sizeof(uint64_t) * info->n_tensors);
        uint64_t bytes = offsets ? range_layout(info, sym, offsets, &scratch_at) : 0;
        work = range_work = offsets ? malloc(bytes ? bytes : 64) : NULL;
    }
    if (!ptr || !work) {
        snprintf(err, errlen, "out of host memory executing model %u", m->id);
        free(ptr);
        free(offsets);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    for (uint32_t i = 0; i < info->n_tensors; i++) {
        const sim_tensor *t = &info->tensors[i];
        ptr[i] = t->kind == SIM_KIND_CONST ? (void *)(m->weights + t->const_offset)
                 : t->kind == SIM_KIND_RESULT ? (void *)(work + (offsets ? offsets[i] : t->work_offset)) : NULL;
    }
    for (uint32_t i = 0; i < p->n_in; i++)
        if (info->inputs[i].tensor != UINT32_MAX)
            ptr[info->inputs[i].tensor] = in_bufs[i];
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
            memset(v->dims, 0, sizeof v->dims);
            sim_resolve_dims(t->dims, t->rank, sym, v->dims);   /* the kernels compute on the actual shape */
        }
        sim_kernel_run(op, in, &out, work + scratch_at);
    }
    for (uint32_t k = 0; k < info->n_outputs; k++)
        memcpy(out[k], ptr[info->outputs[k].tensor], p->out_full[k]);
    free(ptr);
    free(offsets);
    free(range_work);
    return ACL_SUCCESS;
}

/* The modelled device time of one execution: the gear's own time when the
 * model lists one per gear, else latency_us plus latency_per_item_us per
 * item (a row of dimension 0 of the first input). */
static double device_time_us(const sim_model_info *info, const uint64_t *sym)
{
    uint32_t g = info->gear_latency_us ? sim_gear_index(info, sym) : UINT32_MAX;
    if (g != UINT32_MAX)
        return info->gear_latency_us[g];
    uint64_t items = 1;
    if (sym && info->n_file_inputs > 0 && info->inputs[0].rank > 0 && info->inputs[0].dims[0] < 0)
        items = sym[SIM_SYM(info->inputs[0].dims[0])];
    else if (info->dyn_kind == SIM_DYN_BATCH)
        items = sym[0];
    return info->latency_us + info->latency_per_item_us * (double)items;
}

/* Buffers up to 64 bytes short (check_buffers): n full-size host copies of
 * bufs, each zero past the len[i] bytes copied from the caller's buffer
 * (inputs), or zeroed (outputs); NULL when out of memory. */
static void **stage_short(void *const *bufs, const size_t *len, const size_t *full, uint32_t n, int copy)
{
    void **out = calloc((size_t)n * 2 + 1, sizeof *out);   /* n addresses, then n allocations */
    for (uint32_t i = 0; out && i < n; i++) {
        out[i] = bufs[i];
        if (len[i] >= full[i])
            continue;
        out[n + i] = out[i] = calloc(1, full[i] ? full[i] : 1);
        if (!out[i]) {
            for (uint32_t k = 0; k < i; k++)
                free(out[n + k]);
            free(out);
            return NULL;
        }
        if (copy && len[i])
            memcpy(out[i], bufs[i], len[i]);
    }
    return out;
}

static void unstage_short(void **staged, uint32_t n)
{
    for (uint32_t i = 0; staged && i < n; i++)
        free(staged[n + i]);
    free(staged);
}

/* Run the model for the plan (its ops, or its ONNX graph) and hold the
 * stream (NULL: the synchronous caller) for the modelled device time.
 * Returns 0 or an error code with a message in err. */
static aclError run_plan(sim_stream *s, sim_model *m, const exec_plan *p, char *err, size_t errlen)
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
        sim_task_occupy(s, sim_now_ns(), (uint64_t)stall_ms * 1000000u);
    if (rc != ACL_SUCCESS) {
        snprintf(err, errlen, "execution of model %u failed on the device (injected fault)", m->id);
        atomic_store(&m->busy, 0);
        return rc;
    }
    uint64_t start = sim_now_ns();
    const uint64_t *sym = p->dynamic ? p->sym : NULL;
    /* static AIPP runs first and adds no modelled device time of its own (docs/simulator.md, "Static AIPP") */
    void **src = p->short_in ? stage_short(p->in, p->in_len, p->in_full, p->n_in, 1) : p->in;
    void **out = p->short_out ? stage_short(p->out, p->out_len, p->out_full, p->n_out, 0) : p->out;
    void **in = src;
    if (!src || !out) {
        snprintf(err, errlen, "out of host memory staging the buffers of model %u", m->id);
        rc = ACL_ERROR_RT_MODEL_EXECUTE;
    } else if (info->n_aipp) {
        rc = stage_aipp(info, p, src, &in, err, errlen);
    }
    if (rc != ACL_SUCCESS) {
        in = NULL;
    } else if (info->executor == SIM_EXEC_ONNX) {
        rc = sim_ort_run(m->ort_session, info, sym, in, out, p->out_full, m->skip_compute, p->out_dims, err,
                         errlen);
    } else {
        rc = run_ops(m, p, in, out, err, errlen);
    }
    if (in && in != src)
        unstage_aipp(info, p, in);
    if (out && out != p->out) {   /* the bytes of each short output that its buffer holds */
        for (uint32_t k = 0; rc == ACL_SUCCESS && k < p->n_out; k++)
            if (out[k] != p->out[k])
                memcpy(p->out[k], out[k], p->out_len[k]);
        unstage_short(out, p->n_out);
    }
    if (src && src != p->in)
        unstage_short(src, p->n_in);
    /* the device-time model: the execution occupies its stream at least this long, so it takes
     * max(modelled time, real compute time) */
    if (rc == ACL_SUCCESS && info->executor == SIM_EXEC_ONNX && info->dyn_kind == SIM_DYN_RANGE)
        for (uint32_t k = 0; k < p->n_out; k++)   /* the shapes ONNX Runtime produced, for aclmdlGetDatasetTensorDesc */
            if (info->outputs[k].shape_after_run && p->out_desc[k])
                memcpy(p->out_desc[k]->dims, p->out_dims + (size_t)k * SIM_MAX_RANK,
                       sizeof(int64_t) * info->outputs[k].rank);
    double us = rc == ACL_SUCCESS ? device_time_us(info, sym) : 0;
    if (sim_log_enabled && rc == ACL_SUCCESS) {
        double real_us = (double)(sim_now_ns() - start) / 1000.0;
        sim_log_note("model %u executed: computed in %.1f us, modelled device time %.1f us: bound by %s", m->id,
                     real_us, us, us > real_us ? "the modelled device time" : "the real compute");
    }
    /* the device time: the modelled time, or the real compute where that took longer */
    uint64_t real_ns = sim_now_ns() - start, model_ns = (uint64_t)(us * 1000.0);
    if (model_ns > 0 || s)
        sim_task_occupy(s, start, model_ns > real_ns ? model_ns : real_ns);
    atomic_store(&m->busy, 0);
    return rc;
}

SIM_EXPORT aclError aclmdlExecute(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output)
{
    SIM_ENTER(aclmdlExecute);
    const char *fn = "aclmdlExecute";
    sim_context *ctx;
    exec_plan *p = NULL;
    sim_model *m = NULL;
    aclError rc = sim_check_ge_init(fn);
    if (rc == ACL_SUCCESS)
        rc = sim_need_context(fn, &ctx);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = sim_model_unknown(fn, modelId);
    if (rc == ACL_SUCCESS && ctx->device_id != m->device)
        rc = sim_error(ACL_ERROR_RT_MODEL_CONTEXT, fn, "model %u is loaded on device %d, the current context is on "
                       "device %d", modelId, m->device, ctx->device_id);
    if (rc == ACL_SUCCESS)
        rc = prepare(fn, m, input, output, 1, &p);
    if (rc == ACL_SUCCESS) {
        char err[512];
        rc = run_plan(NULL, m, p, err, sizeof err);
        if (rc != ACL_SUCCESS)
            sim_error(rc, fn, "%s", err);
    }
    plan_give_back(m, p);
    sim_model_unref(m);
    SIM_RETURN(aclmdlExecute, rc, "id %u", modelId);
}

/* "execute model <id>", the task's name in stream messages, written by hand:
 * snprintf costs more than the rest of an enqueue (docs/simulator.md). */
static void task_name(char out[48], uint32_t id)
{
    static const char prefix[] = "execute model ";
    char digits[10];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + id % 10);
        id /= 10;
    } while (id);
    memcpy(out, prefix, sizeof prefix - 1);
    for (size_t i = 0; i < n; i++)
        out[sizeof prefix - 1 + i] = digits[n - 1 - i];
    out[sizeof prefix - 1 + n] = '\0';
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
        rc = run_plan(stream, t->model, t->plan, err, sizeof err);
    if (rc != ACL_SUCCESS) {
        sim_task_error(stream, rc, "aclmdlExecuteAsync: %s", err);
        sim_exception_note_model(t->model->meta->info, t->plan->in, t->plan->out,
                                 t->plan->dynamic ? t->plan->sym : NULL);
    }
    unpin_plan(t->plan);
    plan_give_back(t->model, t->plan);
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
    aclError rc = sim_check_ge_init(fn);
    if (rc == ACL_SUCCESS)
        rc = sim_stream_resolve(fn, stream, &s);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = sim_model_unknown(fn, modelId);
    if (rc == ACL_SUCCESS && sim_stream_device(s) != m->device)
        rc = sim_error(ACL_ERROR_RT_MODEL_CONTEXT, fn, "model %u is loaded on device %d, the stream is on device %d",
                       modelId, m->device, sim_stream_device(s));
    if (rc == ACL_SUCCESS)
        rc = prepare(fn, m, input, output, 0, &p);
    if (rc == ACL_SUCCESS) {
        exec_task t = {m, p};
        char what[48];
        task_name(what, modelId);
        pin_plan(m, p);
        rc = sim_stream_enqueue(s, what, exec_task_run, &t, sizeof t);
        if (rc == ACL_SUCCESS) {
            m = NULL;   /* the task owns the reference, the plan and its pins now */
            p = NULL;
        } else {
            unpin_plan(p);
        }
    }
    plan_give_back(m, p);
    sim_model_unref(m);
    SIM_RETURN(aclmdlExecuteAsync, rc, "id %u stream %p", modelId, stream);
}
