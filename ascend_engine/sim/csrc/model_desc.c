/*
 * model_desc.c -- aclmdlDesc: what a loaded model looks like from outside
 * (inputs/outputs, names, dims with -1 for the batch, dtypes, formats,
 * sizes, batch gears).  Sizes are exact, as CANN reports them: shape x dtype,
 * at the largest gear for a dynamic-batch input or output (the allocation
 * padding of aclrtMalloc is not part of them).  A descriptor keeps its own reference
 * to the parsed model, so names stay valid after the model is unloaded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

SIM_EXPORT aclmdlDesc *aclmdlCreateDesc(void)
{
    SIM_ENTER_OR(aclmdlCreateDesc, NULL);
    aclmdlDesc *d = calloc(1, sizeof *d);
    if (!d) {
        sim_error(ACL_ERROR_BAD_ALLOC, "aclmdlCreateDesc", "out of host memory");
        return NULL;
    }
    d->magic = SIM_DESC_MAGIC;
    SIM_LOG_VAL(aclmdlCreateDesc, ACL_SUCCESS, "-> %p", (void *)d);
    return d;
}

SIM_EXPORT aclError aclmdlDestroyDesc(aclmdlDesc *modelDesc)
{
    SIM_ENTER(aclmdlDestroyDesc);
    if (!modelDesc || modelDesc->magic != SIM_DESC_MAGIC)
        SIM_RETURN(aclmdlDestroyDesc,
                   sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlDestroyDesc", "modelDesc %p is NULL or not a live "
                             "model description", (void *)modelDesc), "%p", (void *)modelDesc);
    SIM_LOG_VAL(aclmdlDestroyDesc, ACL_SUCCESS, "%p", (void *)modelDesc);
    modelDesc->magic = 0;
    sim_meta_unref(modelDesc->meta);
    free(modelDesc);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlGetDesc(aclmdlDesc *modelDesc, uint32_t modelId)
{
    SIM_ENTER(aclmdlGetDesc);
    const char *fn = "aclmdlGetDesc";
    aclError rc = sim_check_init(fn);
    sim_model *m = NULL;
    if (rc == ACL_SUCCESS && (!modelDesc || modelDesc->magic != SIM_DESC_MAGIC))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelDesc %p is NULL or not from aclmdlCreateDesc",
                       (void *)modelDesc);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = sim_model_unknown(fn, modelId);
    if (rc == ACL_SUCCESS) {
        atomic_fetch_add(&m->meta->refs, 1);
        sim_meta_unref(modelDesc->meta);
        modelDesc->meta = m->meta;
        modelDesc->model_id = modelId;
    }
    sim_model_unref(m);
    SIM_RETURN(aclmdlGetDesc, rc, "%p id %u", (void *)modelDesc, modelId);
}

/* The filled descriptor's model info, or NULL after recording an error. */
const sim_model_info *sim_desc_info(const char *fn, const aclmdlDesc *d)
{
    if (!d || d->magic != SIM_DESC_MAGIC) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelDesc %p is NULL or not a live model description",
                  (const void *)d);
        return NULL;
    }
    if (!d->meta) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelDesc %p is empty: call aclmdlGetDesc first", (const void *)d);
        return NULL;
    }
    return d->meta->info;
}

/* The input (is_in) or output `index`, or NULL after recording an error. */
static const sim_io *desc_io(const char *fn, const aclmdlDesc *d, size_t index, int is_in)
{
    const sim_model_info *info = sim_desc_info(fn, d);
    if (!info)
        return NULL;
    uint32_t n = is_in ? info->n_inputs : info->n_outputs;
    if (index >= n) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the model has %u %ss", index, n,
                  is_in ? "input" : "output");
        return NULL;
    }
    return is_in ? &info->inputs[index] : &info->outputs[index];
}

SIM_EXPORT size_t aclmdlGetNumInputs(aclmdlDesc *modelDesc)
{
    SIM_ENTER_OR(aclmdlGetNumInputs, 0);
    const sim_model_info *info = sim_desc_info("aclmdlGetNumInputs", modelDesc);
    return info ? info->n_inputs : 0;
}

SIM_EXPORT size_t aclmdlGetNumOutputs(aclmdlDesc *modelDesc)
{
    SIM_ENTER_OR(aclmdlGetNumOutputs, 0);
    const sim_model_info *info = sim_desc_info("aclmdlGetNumOutputs", modelDesc);
    return info ? info->n_outputs : 0;
}

SIM_EXPORT size_t aclmdlGetInputSizeByIndex(aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetInputSizeByIndex, 0);
    const sim_io *io = desc_io("aclmdlGetInputSizeByIndex", modelDesc, index, 1);
    return io ? (size_t)io->size : 0;
}

SIM_EXPORT size_t aclmdlGetOutputSizeByIndex(aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetOutputSizeByIndex, 0);
    const sim_io *io = desc_io("aclmdlGetOutputSizeByIndex", modelDesc, index, 0);
    return io ? (size_t)io->size : 0;
}

/* The gear at which output `io` is largest (a gear model's "maximum shape"). */
static const uint64_t *largest_gear(const sim_model_info *info, const sim_io *io)
{
    const uint64_t *best = NULL;
    uint64_t best_e = 0;
    int64_t dims[SIM_MAX_RANK];
    for (uint32_t g = 0; g < info->n_gears; g++) {
        const uint64_t *v = &info->gear_vals[(size_t)g * info->n_syms];
        sim_io_dims(info, io, v, dims);
        uint64_t e = sim_shape_elems(dims, io->rank);
        if (!best || e > best_e) {
            best = v;
            best_e = e;
        }
    }
    return best;
}

aclError sim_fill_dims(const char *fn, const aclmdlDesc *d, size_t index, int is_in, aclmdlIODims *dims,
                       int current)
{
    const sim_io *io = desc_io(fn, d, index, is_in);
    if (!io)
        return ACL_ERROR_INVALID_PARAM;
    if (!dims)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims is NULL");
    memset(dims, 0, sizeof *dims);
    snprintf(dims->name, sizeof dims->name, "%s", io->name);
    dims->dimCount = io->rank;
    const sim_model_info *info = d->meta->info;
    uint64_t last[SIM_MAX_SYMS];
    const uint64_t *sym = NULL;
    if (current && io->tensor != UINT32_MAX && info->n_gears) {
        /* the shape for the gear last set on this model, else the largest */
        sim_model *m = sim_model_get(d->model_id);
        if (m) {
            if (m->meta == d->meta && sim_model_last_syms(m, last))
                sym = last;
            sim_model_unref(m);
        }
        if (!sym)
            sym = largest_gear(info, io);
    }
    if (io->tensor == UINT32_MAX) {
        dims->dims[0] = io->dims[0];   /* ascend_mbatch_shape_data: its value count */
        return ACL_SUCCESS;
    }
    sim_io_dims(info, io, sym, dims->dims);
    for (uint32_t i = 0; i < io->rank; i++)
        dims->dims[i] = dims->dims[i] < 0 ? -1 : dims->dims[i];   /* every dynamic dimension reads -1 */
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlGetInputDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims)
{
    SIM_ENTER(aclmdlGetInputDims);
    aclError rc = sim_fill_dims("aclmdlGetInputDims", modelDesc, index, 1, dims, 0);
    const sim_aipp *aipp = rc == ACL_SUCCESS ? modelDesc->meta->info->inputs[index].aipp : NULL;
    if (aipp)   /* the source image's n, h, w, c; aclmdlGetInputDimsV2 gives the dims of its bytes */
        sim_aipp_image_dims(aipp, dims->dims);
    SIM_RETURN(aclmdlGetInputDims, rc, "index %zu", index);
}

SIM_EXPORT aclError aclmdlGetOutputDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims)
{
    SIM_ENTER(aclmdlGetOutputDims);
    SIM_RETURN(aclmdlGetOutputDims, sim_fill_dims("aclmdlGetOutputDims", modelDesc, index, 0, dims, 0), "index %zu",
               index);
}

SIM_EXPORT aclError aclmdlGetCurOutputDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims)
{
    SIM_ENTER(aclmdlGetCurOutputDims);
    SIM_RETURN(aclmdlGetCurOutputDims, sim_fill_dims("aclmdlGetCurOutputDims", modelDesc, index, 0, dims, 1),
               "index %zu", index);
}

SIM_EXPORT aclDataType aclmdlGetInputDataType(const aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetInputDataType, ACL_DT_UNDEFINED);
    const sim_io *io = desc_io("aclmdlGetInputDataType", modelDesc, index, 1);
    return io ? io->dtype : ACL_DT_UNDEFINED;
}

SIM_EXPORT aclDataType aclmdlGetOutputDataType(const aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetOutputDataType, ACL_DT_UNDEFINED);
    const sim_io *io = desc_io("aclmdlGetOutputDataType", modelDesc, index, 0);
    return io ? io->dtype : ACL_DT_UNDEFINED;
}

SIM_EXPORT aclFormat aclmdlGetInputFormat(const aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetInputFormat, ACL_FORMAT_UNDEFINED);
    const sim_io *io = desc_io("aclmdlGetInputFormat", modelDesc, index, 1);
    return io ? io->format : ACL_FORMAT_UNDEFINED;
}

SIM_EXPORT aclFormat aclmdlGetOutputFormat(const aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetOutputFormat, ACL_FORMAT_UNDEFINED);
    const sim_io *io = desc_io("aclmdlGetOutputFormat", modelDesc, index, 0);
    return io ? io->format : ACL_FORMAT_UNDEFINED;
}

SIM_EXPORT const char *aclmdlGetInputNameByIndex(const aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetInputNameByIndex, NULL);
    const sim_io *io = desc_io("aclmdlGetInputNameByIndex", modelDesc, index, 1);
    return io ? io->name : NULL;
}

SIM_EXPORT const char *aclmdlGetOutputNameByIndex(const aclmdlDesc *modelDesc, size_t index)
{
    SIM_ENTER_OR(aclmdlGetOutputNameByIndex, NULL);
    const sim_io *io = desc_io("aclmdlGetOutputNameByIndex", modelDesc, index, 0);
    return io ? io->name : NULL;
}

static aclError index_by_name(const char *fn, const aclmdlDesc *d, const char *name, size_t *index, int is_in)
{
    const sim_model_info *info = sim_desc_info(fn, d);
    if (!info)
        return ACL_ERROR_INVALID_PARAM;
    if (!name || !index)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "name or index is NULL");
    uint32_t n = is_in ? info->n_inputs : info->n_outputs;
    const sim_io *ios = is_in ? info->inputs : info->outputs;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(ios[i].name, name) == 0) {
            *index = i;
            return ACL_SUCCESS;
        }
    char names[1024];
    size_t used = 0;
    names[0] = 0;
    for (uint32_t i = 0; i < n && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, i ? ", '%s'" : "'%s'", ios[i].name);
    return sim_error(ACL_ERROR_INVALID_PARAM, fn, "the model has no %s named '%s' (its %ss: %s)",
                     is_in ? "input" : "output", name, is_in ? "input" : "output", names);
}

SIM_EXPORT aclError aclmdlGetInputIndexByName(const aclmdlDesc *modelDesc, const char *name, size_t *index)
{
    SIM_ENTER(aclmdlGetInputIndexByName);
    SIM_RETURN(aclmdlGetInputIndexByName, index_by_name("aclmdlGetInputIndexByName", modelDesc, name, index, 1),
               "'%s'", name ? name : "(null)");
}

SIM_EXPORT aclError aclmdlGetOutputIndexByName(const aclmdlDesc *modelDesc, const char *name, size_t *index)
{
    SIM_ENTER(aclmdlGetOutputIndexByName);
    SIM_RETURN(aclmdlGetOutputIndexByName, index_by_name("aclmdlGetOutputIndexByName", modelDesc, name, index, 0),
               "'%s'", name ? name : "(null)");
}

SIM_EXPORT aclError aclmdlGetDynamicBatch(const aclmdlDesc *modelDesc, aclmdlBatch *batch)
{
    SIM_ENTER(aclmdlGetDynamicBatch);
    const sim_model_info *info = sim_desc_info("aclmdlGetDynamicBatch", modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!batch)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlGetDynamicBatch", "batch is NULL");
    else {
        memset(batch, 0, sizeof *batch);
        uint32_t n = info->dyn_kind == SIM_DYN_BATCH ? info->n_gears : 0;   /* 0: no dynamic batch */
        batch->batchCount = n;
        for (uint32_t i = 0; i < n; i++)
            batch->batch[i] = info->gears[i];
    }
    SIM_RETURN(aclmdlGetDynamicBatch, rc, "%p", (const void *)modelDesc);
}
