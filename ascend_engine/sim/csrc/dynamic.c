/*
 * dynamic.c -- the gear mechanisms: dynamic batch, dynamic image size (HW)
 * and dynamic dims.  The queries list a model's gears; the setters check a
 * gear against them, write it into the buffer of the model's
 * ascend_mbatch_shape_data input (as the runtime does) and record it in the
 * dataset, where the execution finds it (sim_exec_syms).
 *
 * Codes follow GE's executor: a value that is not one of the model's gears --
 * or a setter of another mechanism than the model's, whose gears then never
 * match -- is ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID (145013) for all three;
 * a dynamic input buffer too small for the values, or dims whose count or
 * fixed values disagree with the inputs, ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
 * (145012).  A static (or shape-range) model has no gear either: 145013, as
 * in CANN 9.1.  The index is not checked to be ascend_mbatch_shape_data's:
 * the value goes into the buffer at index, as GE writes it (docs/simulator.md,
 * "Fidelity to CANN 9.1").
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

/* "1, 2, 4" / "32x32, 64x48" / "(1, 20), (1, 40)": a model's gears for messages. */
static void gear_text(const sim_model_info *info, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (uint32_t g = 0; g < info->n_gears && used < n; g++) {
        const uint64_t *v = &info->gear_vals[(size_t)g * info->n_syms];
        if (info->dyn_kind == SIM_DYN_BATCH) {
            used += (size_t)snprintf(buf + used, n - used, g ? ", %" PRIu64 : "%" PRIu64, v[0]);
        } else if (info->dyn_kind == SIM_DYN_HW) {
            used += (size_t)snprintf(buf + used, n - used, g ? ", %" PRIu64 "x%" PRIu64 : "%" PRIu64 "x%" PRIu64,
                                     v[0], v[1]);
        } else {
            used += (size_t)snprintf(buf + used, n - used, g ? ", (" : "(");
            for (uint32_t s = 0; s < info->n_syms && used < n; s++)
                used += (size_t)snprintf(buf + used, n - used, s ? ", %" PRIu64 : "%" PRIu64, v[s]);
            if (used < n)
                used += (size_t)snprintf(buf + used, n - used, ")");
        }
    }
}

static const char *setter_of(uint32_t kind)
{
    return kind == SIM_DYN_BATCH ? "aclmdlSetDynamicBatchSize" : kind == SIM_DYN_HW ? "aclmdlSetDynamicHWSize"
           : kind == SIM_DYN_DIMS ? "aclmdlSetInputDynamicDims" : "aclmdlSetDatasetTensorDesc";
}

/* The gear whose symbol values equal sym, or -1. */
static int find_gear(const sim_model_info *info, const uint64_t *sym)
{
    for (uint32_t g = 0; g < info->n_gears; g++)
        if (!memcmp(&info->gear_vals[(size_t)g * info->n_syms], sym, sizeof(uint64_t) * info->n_syms))
            return (int)g;
    return -1;
}

/* ---- queries ------------------------------------------------------------------ */

SIM_EXPORT aclError aclmdlGetDynamicHW(const aclmdlDesc *modelDesc, size_t index, aclmdlHW *hw)
{
    SIM_ENTER(aclmdlGetDynamicHW);
    const char *fn = "aclmdlGetDynamicHW";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!hw)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "hw is NULL");
    else if (index != (size_t)-1 && index >= info->n_inputs)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the model has %u inputs (or pass -1)",
                       index, info->n_inputs);
    else {
        memset(hw, 0, sizeof *hw);   /* hwCount 0: no dynamic image size */
        if (info->dyn_kind == SIM_DYN_HW) {
            hw->hwCount = info->n_gears;
            for (uint32_t g = 0; g < info->n_gears; g++) {
                hw->hw[g][0] = info->gear_vals[2 * g];
                hw->hw[g][1] = info->gear_vals[2 * g + 1];
            }
        }
    }
    SIM_RETURN(aclmdlGetDynamicHW, rc, "%p index %zu", (const void *)modelDesc, index);
}

SIM_EXPORT aclError aclmdlGetInputDynamicGearCount(const aclmdlDesc *modelDesc, size_t index, size_t *gearCount)
{
    SIM_ENTER(aclmdlGetInputDynamicGearCount);
    const char *fn = "aclmdlGetInputDynamicGearCount";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!gearCount)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "gearCount is NULL");
    else if (index != (size_t)-1)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index is %zu: this argument is unused and must be -1", index);
    else
        *gearCount = info->dyn_kind == SIM_DYN_DIMS ? info->n_gears : 0;
    SIM_RETURN(aclmdlGetInputDynamicGearCount, rc, "%p", (const void *)modelDesc);
}

/* Gear g of a dims model as CANN lists it: every input's shape, in input
 * order, concatenated, with the gear's values in place of the -1s. */
static void dims_gear(const sim_model_info *info, uint32_t g, aclmdlIODims *out)
{
    memset(out, 0, sizeof *out);   /* name: reserved, empty */
    const uint64_t *v = &info->gear_vals[(size_t)g * info->n_syms];
    for (uint32_t i = 0; i < info->n_file_inputs; i++) {
        const sim_io *io = &info->inputs[i];
        sim_resolve_dims(io->dims, io->rank, v, out->dims + out->dimCount);   /* total <= 128 (parser) */
        out->dimCount += io->rank;
    }
}

SIM_EXPORT aclError aclmdlGetInputDynamicDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims,
                                              size_t gearCount)
{
    SIM_ENTER(aclmdlGetInputDynamicDims);
    const char *fn = "aclmdlGetInputDynamicDims";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    size_t have = info && info->dyn_kind == SIM_DYN_DIMS ? info->n_gears : 0;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (index != (size_t)-1)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index is %zu: this argument is unused and must be -1", index);
    else if (gearCount != have)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "gearCount %zu does not match the model's %zu dynamic dims gears "
                       "(aclmdlGetInputDynamicGearCount)", gearCount, have);
    else if (have && !dims)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims is NULL: pass an array of %zu aclmdlIODims", have);
    for (size_t g = 0; rc == ACL_SUCCESS && g < have; g++)
        dims_gear(info, (uint32_t)g, &dims[g]);
    SIM_RETURN(aclmdlGetInputDynamicDims, rc, "%p gears %zu", (const void *)modelDesc, gearCount);
}

/* ---- setters ------------------------------------------------------------------------ */

/* Shared checks, in CANN 9.1's order: the dataset and the buffer at index
 * (any input: GE does not check that it is ascend_mbatch_shape_data), the
 * model, the buffer's length (min_len bytes, 0: checked by the caller), the
 * mechanism.  On success *m_out holds a reference. */
static aclError setter_checks(const char *fn, uint32_t kind, uint32_t modelId, const aclmdlDataset *dataset,
                              size_t index, size_t min_len, sim_model **m_out)
{
    aclError rc = sim_check_init(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    if (!sim_dataset_ok(dataset))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "dataset %p is NULL or not a live dataset",
                         (const void *)dataset);
    if (index >= dataset->count || !sim_databuf_ok(dataset->buffers[index]))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "the dataset has no buffer at index %zu: add the %s input's "
                         "buffer (aclmdlGetInputSizeByIndex bytes) first", index, ACL_DYNAMIC_TENSOR_NAME);
    sim_model *m = sim_model_get(modelId);
    if (!m)
        return sim_model_unknown(fn, modelId);
    *m_out = m;
    const sim_model_info *info = m->meta->info;
    const char *feature = kind == SIM_DYN_BATCH ? "dynamic batch" : kind == SIM_DYN_HW
                          ? "dynamic image size (HW gears)" : "dynamic dims gears";
    if (dataset->buffers[index]->size < min_len)
        return sim_error(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, fn, "the buffer at index %zu holds %zu bytes, "
                         "needs at least %zu for the %s value%s (aclmdlGetInputSizeByIndex of %s)", index,
                         dataset->buffers[index]->size, min_len, feature, min_len > 4 ? "s" : "",
                         ACL_DYNAMIC_TENSOR_NAME);
    if (info->dyn_kind == SIM_DYN_NONE || info->dyn_kind == SIM_DYN_RANGE)
        return sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "model %u ('%s') has no %s: %s, so no gear "
                         "matches", modelId, info->name, feature, info->dyn_kind == SIM_DYN_NONE
                         ? "it is static" : "it has shape ranges, with no gears (describe each input's shape "
                         "with aclmdlSetDatasetTensorDesc)");
    if (info->dyn_kind != kind) {
        char gears[1024];
        gear_text(info, gears, sizeof gears);
        return sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "model %u ('%s') has %s, not %s: no gear "
                         "matches; use %s (gears: %s)", modelId, info->name, sim_dyn_kind_name(info->dyn_kind),
                         feature, setter_of(info->dyn_kind), gears);
    }
    return ACL_SUCCESS;
}

/* The value was accepted: write it to the dynamic input's buffer (n values,
 * 8 bytes each when they fit, else 4, as the runtime does) and record it. */
static aclError set_gear(const char *fn, sim_model *m, aclmdlDataset *ds, size_t index, const uint64_t *sym,
                         const uint64_t *vals, uint32_t n_vals)
{
    const sim_model_info *info = m->meta->info;
    aclDataBuffer *b = ds->buffers[index];
    size_t width = b->size >= 8u * n_vals ? 8 : 4;
    aclError rc = sim_mem_check_device(fn, "dataset buffer of " ACL_DYNAMIC_TENSOR_NAME, b->data,
                                       width * n_vals, m->device);
    if (rc != ACL_SUCCESS)
        return rc;
    for (uint32_t i = 0; i < n_vals; i++) {
        uint32_t v32 = (uint32_t)vals[i];
        memcpy((char *)b->data + width * i, width == 8 ? (const void *)&vals[i] : (const void *)&v32, width);
    }
    ds->dyn_kind = info->dyn_kind;
    memcpy(ds->dyn_vals, sym, sizeof(uint64_t) * info->n_syms);
    pthread_mutex_lock(&m->last_lock);
    memcpy(m->last_syms, sym, sizeof(uint64_t) * info->n_syms);
    m->has_last = 1;
    pthread_mutex_unlock(&m->last_lock);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlSetDynamicBatchSize(uint32_t modelId, aclmdlDataset *dataset, size_t index,
                                              uint64_t batchSize)
{
    SIM_ENTER(aclmdlSetDynamicBatchSize);
    const char *fn = "aclmdlSetDynamicBatchSize";
    sim_model *m = NULL;
    aclError rc = ACL_SUCCESS;
    if (batchSize == 0)   /* CANN 9.1 checks this before anything else */
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "batchSize is 0: expected one of the model's batch gears");
    if (rc == ACL_SUCCESS)
        rc = setter_checks(fn, SIM_DYN_BATCH, modelId, dataset, index, 4, &m);
    if (rc == ACL_SUCCESS && find_gear(m->meta->info, &batchSize) < 0) {
        char gears[1024];
        gear_text(m->meta->info, gears, sizeof gears);
        rc = sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "batch %" PRIu64 " is not a gear of model %u "
                       "(gears: %s)", batchSize, modelId, gears);
    }
    if (rc == ACL_SUCCESS)
        rc = set_gear(fn, m, dataset, index, &batchSize, &batchSize, 1);
    sim_model_unref(m);
    SIM_RETURN(aclmdlSetDynamicBatchSize, rc, "id %u index %zu batch %" PRIu64, modelId, index, batchSize);
}

SIM_EXPORT aclError aclmdlSetDynamicHWSize(uint32_t modelId, aclmdlDataset *dataset, size_t index, uint64_t height,
                                           uint64_t width)
{
    SIM_ENTER(aclmdlSetDynamicHWSize);
    const char *fn = "aclmdlSetDynamicHWSize";
    sim_model *m = NULL;
    uint64_t hw[2] = {height, width};
    aclError rc = setter_checks(fn, SIM_DYN_HW, modelId, dataset, index, 8, &m);
    if (rc == ACL_SUCCESS && find_gear(m->meta->info, hw) < 0) {
        char gears[1024];
        gear_text(m->meta->info, gears, sizeof gears);
        rc = sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "image size %" PRIu64 "x%" PRIu64 " (height x "
                       "width) is not a gear of model %u (gears: %s)", height, width, modelId, gears);
    }
    if (rc == ACL_SUCCESS)
        rc = set_gear(fn, m, dataset, index, hw, hw, 2);
    sim_model_unref(m);
    SIM_RETURN(aclmdlSetDynamicHWSize, rc, "id %u index %zu %" PRIu64 "x%" PRIu64, modelId, index, height, width);
}

/* aclmdlSetInputDynamicDims: every dimension of every input, fixed ones
 * included (GE compares them with the model and keeps the -1 positions). */
static aclError dims_to_syms(const char *fn, const sim_model_info *info, const aclmdlIODims *dims, uint64_t *sym,
                             uint64_t *vals, uint32_t *n_vals)
{
    size_t total = 0, at = 0;
    for (uint32_t i = 0; i < info->n_file_inputs; i++)
        total += info->inputs[i].rank;
    if (dims->dimCount != total)
        return sim_error(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, fn, "dims->dimCount is %zu, the model's inputs "
                         "have %zu dimensions in all: pass every input's full shape, in input order", dims->dimCount,
                         total);
    uint32_t seen = 0;
    *n_vals = 0;
    for (uint32_t i = 0; i < info->n_file_inputs; i++) {
        const sim_io *io = &info->inputs[i];
        for (uint32_t d = 0; d < io->rank; d++, at++) {
            int64_t v = dims->dims[at];
            if (io->dims[d] >= 0 && v != io->dims[d])
                return sim_error(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, fn, "dims->dims[%zu] is %" PRId64 ": "
                                 "dimension %u of input %u ('%s') is fixed at %" PRId64, at, v, d, i, io->name,
                                 io->dims[d]);
            if (io->dims[d] >= 0)
                continue;
            uint32_t s = SIM_SYM(io->dims[d]);
            vals[(*n_vals)++] = v < 0 ? 0 : (uint64_t)v;
            /* a symbol shared by several inputs takes one value; a disagreement matches no gear */
            if ((seen >> s) & 1u && sym[s] != (uint64_t)v)
                sym[s] = 0;
            else if (!((seen >> s) & 1u))
                sym[s] = v < 0 ? 0 : (uint64_t)v;
            seen |= 1u << s;
        }
    }
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlSetInputDynamicDims(uint32_t modelId, aclmdlDataset *dataset, size_t index,
                                              const aclmdlIODims *dims)
{
    SIM_ENTER(aclmdlSetInputDynamicDims);
    const char *fn = "aclmdlSetInputDynamicDims";
    sim_model *m = NULL;
    uint64_t sym[SIM_MAX_SYMS] = {0}, vals[ACL_MAX_DIM_CNT];
    uint32_t n_vals = 0;
    aclError rc = ACL_SUCCESS;
    if (!dims)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims is NULL");
    else if (dims->dimCount == 0 || dims->dimCount > ACL_MAX_DIM_CNT)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims->dimCount %zu out of range 1..%d", dims->dimCount,
                       ACL_MAX_DIM_CNT);
    if (rc == ACL_SUCCESS)
        rc = setter_checks(fn, SIM_DYN_DIMS, modelId, dataset, index, 0, &m);
    const sim_model_info *info = m ? m->meta->info : NULL;
    if (rc == ACL_SUCCESS)
        rc = dims_to_syms(fn, info, dims, sym, vals, &n_vals);
    if (rc == ACL_SUCCESS && find_gear(info, sym) < 0) {
        char gears[1024];
        gear_text(info, gears, sizeof gears);
        rc = sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "the dynamic dims are not a gear of model %u "
                       "(values of its -1 dimensions per gear: %s)", modelId, gears);
    }
    if (rc == ACL_SUCCESS && dataset->buffers[index]->size < 4u * n_vals)
        rc = sim_error(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, fn, "the buffer at index %zu holds %zu bytes, "
                       "needs at least %u for the %u dynamic dimensions (aclmdlGetInputSizeByIndex of %s: %" PRIu64
                       ")", index, dataset->buffers[index]->size, 4u * n_vals, n_vals, ACL_DYNAMIC_TENSOR_NAME,
                       info->inputs[info->n_inputs - 1].size);
    if (rc == ACL_SUCCESS)
        rc = set_gear(fn, m, dataset, index, sym, vals, n_vals);
    sim_model_unref(m);
    /* the call log names the dims, so tests can read which gear every execution ran */
    char text[ACL_MAX_DIM_CNT * 21 + 1] = "";
    size_t used = 0;
    for (size_t k = 0; dims && dims->dimCount <= ACL_MAX_DIM_CNT && k < dims->dimCount; k++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%" PRId64, k ? "," : "", dims->dims[k]);
    SIM_RETURN(aclmdlSetInputDynamicDims, rc, "id %u index %zu dims [%s]", modelId, index, text);
}

/* ---- the execution's symbol values ------------------------------------------------------ */

aclError sim_exec_syms(const char *fn, const sim_model *m, const aclmdlDataset *in, uint64_t *sym)
{
    const sim_model_info *info = m->meta->info;
    if (info->dyn_kind == SIM_DYN_RANGE) {
        if (in->dyn_kind != SIM_DYN_NONE)
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "model %u has shape ranges but the input dataset carries a "
                             "gear set by %s: the dynamic mechanisms are mutually exclusive on one model",
                             m->id, setter_of(in->dyn_kind));
        return sim_range_syms(fn, m, in, sym);
    }
    for (uint32_t i = 0; i < info->n_file_inputs && i < in->n_descs; i++)
        if (in->descs[i])
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u ('%s') has a tensor description "
                             "(aclmdlSetDatasetTensorDesc) but model %u has %s: aclmdlSetDatasetTensorDesc and %s "
                             "are mutually exclusive on one model", i, info->inputs[i].name, m->id,
                             sim_dyn_kind_name(info->dyn_kind), setter_of(info->dyn_kind));
    if (in->dyn_kind == SIM_DYN_NONE) {
        int strict;
        aclError rc = sim_gear_checks(fn, &strict);
        if (rc != ACL_SUCCESS)
            return rc;
        if (!strict)   /* CANN 9.1: the device runs whatever gear the buffer holds */
            return sim_buffer_syms(fn, m, in, sym);
    }
    if (in->dyn_kind != info->dyn_kind || find_gear(info, in->dyn_vals) < 0) {
        char gears[1024];
        gear_text(info, gears, sizeof gears);
        if (info->dyn_kind == SIM_DYN_BATCH)
            return sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn,
                             "model %u has dynamic batch but the input dataset has no valid gear set: call "
                             "aclmdlSetDynamicBatchSize(modelId, dataset, index of %s, batch) with one of the "
                             "gears (%s) before executing (CANN would run whatever gear the buffer holds: "
                             "ASCEND_SIM_GEAR_CHECKS=cann)", m->id, ACL_DYNAMIC_TENSOR_NAME, gears);
        return sim_error(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, fn, "model %u has %s but the input dataset has %s: "
                         "call %s with one of the gears (%s) before executing (CANN would run whatever gear "
                         "the buffer holds: ASCEND_SIM_GEAR_CHECKS=cann)", m->id,
                         sim_dyn_kind_name(info->dyn_kind),
                         in->dyn_kind ? "a gear set by another mechanism's setter" : "no gear set",
                         setter_of(info->dyn_kind), gears);
    }
    memcpy(sym, in->dyn_vals, sizeof(uint64_t) * info->n_syms);
    return ACL_SUCCESS;
}

/* The values gear g writes into the dynamic input, in order (set_gear's). */
static uint32_t gear_values(const sim_model_info *info, uint32_t g, uint64_t *vals)
{
    const uint64_t *v = &info->gear_vals[(size_t)g * info->n_syms];
    uint32_t n = 0;
    if (info->dyn_kind != SIM_DYN_DIMS) {
        for (uint32_t s = 0; s < info->n_syms; s++)
            vals[n++] = v[s];
        return n;
    }
    for (uint32_t i = 0; i < info->n_file_inputs; i++)
        for (uint32_t d = 0; d < info->inputs[i].rank; d++)
            if (info->inputs[i].dims[d] < 0 && n < ACL_MAX_DIM_CNT)
                vals[n++] = v[SIM_SYM(info->inputs[i].dims[d])];
    return n;
}

aclError sim_buffer_syms(const char *fn, const sim_model *m, const aclmdlDataset *in, uint64_t *sym)
{
    const sim_model_info *info = m->meta->info;
    uint32_t at = info->n_inputs - 1;
    const aclDataBuffer *b = at < in->count ? in->buffers[at] : NULL;
    if (!sim_databuf_ok(b))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u (%s): data buffer %p is not a live data buffer", at,
                         ACL_DYNAMIC_TENSOR_NAME, (const void *)b);
    uint64_t want[ACL_MAX_DIM_CNT];
    for (uint32_t g = 0; g < info->n_gears; g++) {
        uint32_t n = gear_values(info, g, want);
        size_t width = b->size >= 8u * n ? 8 : 4;
        if (b->size < width * n || !sim_mem_device_ok(b->data, width * n, m->device))
            break;
        int same = 1;
        for (uint32_t k = 0; k < n && same; k++) {
            uint64_t got = 0;
            if (width == 8) {
                memcpy(&got, (const char *)b->data + 8 * k, 8);
            } else {
                uint32_t v32;
                memcpy(&v32, (const char *)b->data + 4 * k, 4);
                got = v32;
            }
            same = got == want[k];
        }
        if (same) {
            memcpy(sym, &info->gear_vals[(size_t)g * info->n_syms], sizeof(uint64_t) * info->n_syms);
            return ACL_SUCCESS;
        }
    }
    char gears[1024];
    gear_text(info, gears, sizeof gears);
    return sim_error(ACL_ERROR_RT_MODEL_EXECUTE, fn, "model %u has %s, no setter was called and its %s buffer "
                     "(input %u, %zu bytes) holds none of its gears (%s): the device would run an undefined "
                     "branch (ASCEND_SIM_GEAR_CHECKS=cann)", m->id, sim_dyn_kind_name(info->dyn_kind),
                     ACL_DYNAMIC_TENSOR_NAME, at, b->size, gears);
}
