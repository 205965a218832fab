/*
 * shape_range.c -- shape-range models (ATC's --input_shape_range): inputs
 * with -1 dimensions that take any size within [min, max] (max -1:
 * unbounded).  There are no gears and no ascend_mbatch_shape_data input:
 * before executing, the caller describes each input's actual shape with
 * aclmdlSetDatasetTensorDesc on the input dataset (only the shape counts),
 * and after executing reads each output's shape with
 * aclmdlGetDatasetTensorDesc on the output dataset.  The descriptor reports
 * a tensor with -1 dimensions at the product of its range maxima, as CANN 9.1
 * does (0 for an unbounded range); an execution checks the buffers against
 * the shapes it runs at.
 *
 * Also here: aclmdlGetInputDimsV2 and aclmdlGetInputDimsRange, the queries
 * that show -1 dimensions and their ranges.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

static void shape_str(const int64_t *dims, size_t rank, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "(");
    for (size_t i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %" PRId64 : "%" PRId64, dims[i]);
    if (used < n)
        snprintf(buf + used, n - used, ")");
}

/* "(1, 3, 16~64, 16~-1)": an input's shape with its ranges, for messages. */
static void range_str(const sim_model_info *info, const sim_io *io, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "(");
    for (uint32_t i = 0; i < io->rank && used < n; i++) {
        if (i)
            used += (size_t)snprintf(buf + used, n - used, ", ");
        if (used >= n)
            break;
        if (io->dims[i] >= 0) {
            used += (size_t)snprintf(buf + used, n - used, "%" PRId64, io->dims[i]);
        } else {
            uint32_t s = SIM_SYM(io->dims[i]);
            used += (size_t)snprintf(buf + used, n - used, "%" PRId64 "~%" PRId64, info->sym_min[s],
                                     info->sym_max[s]);
        }
    }
    if (used < n)
        snprintf(buf + used, n - used, ")");
}

aclError sim_range_syms(const char *fn, const sim_model *m, const aclmdlDataset *in, uint64_t *sym)
{
    const sim_model_info *info = m->meta->info;
    uint32_t seen = 0;
    for (uint32_t i = 0; i < info->n_file_inputs; i++) {
        const sim_io *io = &info->inputs[i];
        const aclTensorDesc *d = i < in->n_descs ? in->descs[i] : NULL;
        char want[512], got[512];
        range_str(info, io, want, sizeof want);
        if (!d) {
            if (!info->tensors[io->tensor].syms)
                continue;   /* a fixed shape needs no description */
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u ('%s') of model %u has the shape range %s: "
                             "describe its actual shape with aclmdlSetDatasetTensorDesc(dataset, desc, %u) before "
                             "executing", i, io->name, m->id, want, i);
        }
        shape_str(d->dims, d->unknown_rank ? 0 : d->num_dims, got, sizeof got);
        if (d->unknown_rank || d->num_dims != io->rank)
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u ('%s'): the tensor description has %s dims %s, "
                             "the model's input is %s", i, io->name, d->unknown_rank ? "unknown" : "the", got, want);
        for (uint32_t k = 0; k < io->rank; k++) {
            int64_t v = d->dims[k];
            if (io->dims[k] >= 0) {
                if (v != io->dims[k])
                    return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u ('%s'): dimension %u of the tensor "
                                     "description %s is %" PRId64 ", the model fixes it at %" PRId64 " %s", i,
                                     io->name, k, got, v, io->dims[k], want);
                continue;
            }
            uint32_t s = SIM_SYM(io->dims[k]);
            if (v < info->sym_min[s] || (info->sym_max[s] > 0 && v > info->sym_max[s]))
                return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u ('%s'): dimension %u of the tensor "
                                 "description %s is %" PRId64 ", outside the model's range %" PRId64 "~%" PRId64
                                 " %s", i, io->name, k, got, v, info->sym_min[s], info->sym_max[s], want);
            if ((seen >> s) & 1u && sym[s] != (uint64_t)v)
                return sim_error(ACL_ERROR_INVALID_PARAM, fn, "input %u ('%s'): dimension %u of the tensor "
                                 "description %s is %" PRId64 ", but the same dynamic dimension is %" PRIu64
                                 " in an earlier input: the model computes them together", i, io->name, k, got, v,
                                 sym[s]);
            sym[s] = (uint64_t)v;
            seen |= 1u << s;
        }
    }
    /* the actual shapes must fit in memory: each tensor at most 2^40 bytes */
    int64_t dims[SIM_MAX_RANK];
    for (uint32_t t = 0; t < info->n_tensors; t++) {
        const sim_tensor *x = &info->tensors[t];
        if (x->kind == SIM_KIND_GRAPH)
            continue;   /* ONNX outputs: ONNX Runtime decides their shape, checked after the run (ort_exec.c) */
        sim_resolve_dims(x->dims, x->rank, sym, dims);
        uint64_t e = sim_shape_elems(dims, x->rank);
        if (!e || e > SIM_MAX_TENSOR_BYTES / x->elem_size)
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "model %u: tensor '%s' would exceed 2^40 bytes at the "
                             "described input shapes", m->id, x->name);
    }
    return ACL_SUCCESS;
}

aclError sim_range_describe_outputs(const char *fn, const sim_model *m, aclmdlDataset *out, const uint64_t *sym)
{
    const sim_model_info *info = m->meta->info;
    aclError rc = sim_dataset_desc_slots(fn, out);
    for (uint32_t i = 0; rc == ACL_SUCCESS && i < info->n_outputs; i++) {
        const sim_io *io = &info->outputs[i];
        aclTensorDesc *d = sim_tensor_desc_array(1);
        if (!d)
            return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        d->dtype = io->dtype;
        d->format = io->format;
        d->num_dims = io->rank;
        sim_io_dims(info, io, sym, d->dims);   /* -1 until an ONNX model's run gives the shape */
        if (out->descs[i])
            aclDestroyTensorDesc(out->descs[i]);
        out->descs[i] = d;
    }
    return rc;
}

SIM_EXPORT aclError aclmdlGetInputDimsV2(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims)
{
    SIM_ENTER(aclmdlGetInputDimsV2);
    /* V2 differs from aclmdlGetInputDims only for static-AIPP inputs: their dims are those of the
     * image's bytes (YUV420SP: n, h x 1.5, w, 1), which sim_fill_dims reports (format_aipp.c) */
    SIM_RETURN(aclmdlGetInputDimsV2, sim_fill_dims("aclmdlGetInputDimsV2", modelDesc, index, 1, dims, 0),
               "index %zu", index);
}

SIM_EXPORT aclError aclmdlGetInputDimsRange(const aclmdlDesc *modelDesc, size_t index, aclmdlIODimsRange *dimsRange)
{
    SIM_ENTER(aclmdlGetInputDimsRange);
    const char *fn = "aclmdlGetInputDimsRange";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!dimsRange)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dimsRange is NULL");
    else if (index >= info->n_inputs)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the model has %u inputs", index,
                       info->n_inputs);
    if (rc == ACL_SUCCESS) {
        const sim_io *io = &info->inputs[index];
        memset(dimsRange, 0, sizeof *dimsRange);
        dimsRange->rangeCount = io->rank;
        for (uint32_t k = 0; k < io->rank; k++) {
            int64_t lo = io->dims[k], hi = io->dims[k];
            if (io->tensor != UINT32_MAX && io->dims[k] < 0) {
                uint32_t s = SIM_SYM(io->dims[k]);
                if (info->dyn_kind == SIM_DYN_RANGE) {
                    lo = info->sym_min[s];
                    hi = info->sym_max[s];
                } else {   /* a gear model: the smallest and largest gear value */
                    lo = INT64_MAX;
                    hi = 0;
                    for (uint32_t g = 0; g < info->n_gears; g++) {
                        int64_t v = (int64_t)info->gear_vals[(size_t)g * info->n_syms + s];
                        lo = v < lo ? v : lo;
                        hi = v > hi ? v : hi;
                    }
                }
            }
            dimsRange->range[k][0] = lo;
            dimsRange->range[k][1] = hi;
        }
    }
    SIM_RETURN(aclmdlGetInputDimsRange, rc, "%p index %zu", (const void *)modelDesc, index);
}
