/*
 * tensor_desc.c -- aclTensorDesc: a data type, a format, a shape and
 * (sometimes) a device address.  Users create them to describe dataset slots
 * (aclmdlSetDatasetTensorDesc); the runtime hands out arrays of them for the
 * op that failed in a device exception (aclmdlCreateAndGetOpDesc).
 *
 * Shapes follow CANN: a dim of -1 is unknown, a single dim of -2 is an
 * unknown rank (aclGetTensorDescNumDims then says ACL_UNKNOWN_RANK), and the
 * byte size of a shape with unknown dims is 0.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

int sim_tensor_desc_ok(const aclTensorDesc *d)
{
    return d && d->magic == SIM_TDESC_MAGIC && d->pos < d->count;
}

aclTensorDesc *sim_tensor_desc_array(size_t n)
{
    if (n == 0 || n > SIZE_MAX / sizeof(aclTensorDesc))
        return NULL;
    aclTensorDesc *a = calloc(n, sizeof *a);
    if (!a)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        a[i].magic = SIM_TDESC_MAGIC;
        a[i].pos = (uint32_t)i;
        a[i].count = n;
        a[i].dtype = ACL_DT_UNDEFINED;
        a[i].format = ACL_FORMAT_UNDEFINED;
    }
    return a;
}

static void tensor_desc_free(aclTensorDesc *first)
{
    for (size_t i = 0; i < first->count; i++)
        first[i].magic = 0;
    free(first);
}

/* Records "desc is not live" for fn; returns NULL-friendly failure. */
static int need_desc(const char *fn, const aclTensorDesc *d)
{
    if (sim_tensor_desc_ok(d))
        return 1;
    sim_error(ACL_ERROR_INVALID_PARAM, fn, "desc %p is NULL or not a live tensor description", (const void *)d);
    return 0;
}

SIM_EXPORT aclTensorDesc *aclCreateTensorDesc(aclDataType dataType, int numDims, const int64_t *dims,
                                              aclFormat format)
{
    SIM_ENTER_OR(aclCreateTensorDesc, NULL);
    const char *fn = "aclCreateTensorDesc";
    if (numDims < 0 || numDims > ACL_MAX_DIM_CNT) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "numDims %d out of range: expected 0..%d", numDims, ACL_MAX_DIM_CNT);
        return NULL;
    }
    if (numDims > 0 && !dims) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims is NULL with numDims %d", numDims);
        return NULL;
    }
    for (int i = 0; i < numDims; i++) {
        /* -2 (unknown rank) is only meaningful as the sole dim */
        if (dims[i] < -2 || (dims[i] == -2 && numDims != 1)) {
            sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims[%d] = %" PRId64 ": expected >= 0, -1 (unknown) or a "
                      "single -2 (unknown rank)", i, dims[i]);
            return NULL;
        }
    }
    aclTensorDesc *d = sim_tensor_desc_array(1);
    if (!d) {
        sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        return NULL;
    }
    d->dtype = dataType;
    d->format = format;
    d->unknown_rank = numDims == 1 && dims[0] == -2;
    d->num_dims = (size_t)numDims;
    if (numDims > 0)
        memcpy(d->dims, dims, sizeof(int64_t) * (size_t)numDims);
    SIM_LOG_VAL(aclCreateTensorDesc, ACL_SUCCESS, "dtype %d dims %d format %d -> %p", (int)dataType, numDims,
                (int)format, (void *)d);
    return d;
}

SIM_EXPORT void aclDestroyTensorDesc(const aclTensorDesc *desc)
{
    if (sim_fault_on_call("aclDestroyTensorDesc") != ACL_SUCCESS)
        return;
    if (!desc)
        return;   /* as free(NULL) */
    if (!need_desc("aclDestroyTensorDesc", desc))
        return;
    if (desc->pos != 0) {
        /* an element inside an array: the array is freed through its first element */
        sim_error(ACL_ERROR_INVALID_PARAM, "aclDestroyTensorDesc", "desc %p is element %u of an array from "
                  "aclmdlCreateAndGetOpDesc: destroy the array (element 0) instead", (const void *)desc, desc->pos);
        return;
    }
    SIM_LOG_VAL(aclDestroyTensorDesc, ACL_SUCCESS, "%p", (const void *)desc);
    tensor_desc_free((aclTensorDesc *)desc);
}

SIM_EXPORT aclDataType aclGetTensorDescType(const aclTensorDesc *desc)
{
    SIM_ENTER_OR(aclGetTensorDescType, ACL_DT_UNDEFINED);
    return need_desc("aclGetTensorDescType", desc) ? desc->dtype : ACL_DT_UNDEFINED;
}

SIM_EXPORT aclFormat aclGetTensorDescFormat(const aclTensorDesc *desc)
{
    SIM_ENTER_OR(aclGetTensorDescFormat, ACL_FORMAT_UNDEFINED);
    return need_desc("aclGetTensorDescFormat", desc) ? desc->format : ACL_FORMAT_UNDEFINED;
}

/* Element count; 0 when a dim (or the rank) is unknown or the count overflows. */
static size_t element_count(const aclTensorDesc *d)
{
    if (d->unknown_rank)
        return 0;
    size_t n = 1;
    for (size_t i = 0; i < d->num_dims; i++) {
        if (d->dims[i] < 0)
            return 0;
        if (d->dims[i] != 0 && n > SIZE_MAX / (size_t)d->dims[i])
            return 0;
        n *= (size_t)d->dims[i];
    }
    return n;
}

SIM_EXPORT size_t aclGetTensorDescElementCount(const aclTensorDesc *desc)
{
    SIM_ENTER_OR(aclGetTensorDescElementCount, 0);
    return need_desc("aclGetTensorDescElementCount", desc) ? element_count(desc) : 0;
}

SIM_EXPORT size_t aclGetTensorDescSize(const aclTensorDesc *desc)
{
    SIM_ENTER_OR(aclGetTensorDescSize, 0);
    if (!need_desc("aclGetTensorDescSize", desc))
        return 0;
    size_t n = element_count(desc), es = aclDataTypeSize(desc->dtype);
    return es && n <= SIZE_MAX / es ? n * es : 0;
}

SIM_EXPORT size_t aclGetTensorDescNumDims(const aclTensorDesc *desc)
{
    SIM_ENTER_OR(aclGetTensorDescNumDims, 0);
    if (!need_desc("aclGetTensorDescNumDims", desc))
        return 0;
    return desc->unknown_rank ? (size_t)ACL_UNKNOWN_RANK : desc->num_dims;
}

SIM_EXPORT aclError aclGetTensorDescDimV2(const aclTensorDesc *desc, size_t index, int64_t *dimSize)
{
    SIM_ENTER(aclGetTensorDescDimV2);
    const char *fn = "aclGetTensorDescDimV2";
    aclError rc = ACL_SUCCESS;
    if (!need_desc(fn, desc))
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!dimSize)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dimSize is NULL");
    else if (desc->unknown_rank)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "the tensor has an unknown rank (-2): it has no dim %zu", index);
    else if (index >= desc->num_dims)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the tensor has %zu dims", index,
                       desc->num_dims);
    else
        *dimSize = desc->dims[index];
    SIM_RETURN(aclGetTensorDescDimV2, rc, "%p index %zu", (const void *)desc, index);
}

SIM_EXPORT void *aclGetTensorDescAddress(const aclTensorDesc *desc)
{
    SIM_ENTER_OR(aclGetTensorDescAddress, NULL);
    /* NULL without an error for a descriptor that describes no placed tensor */
    return need_desc("aclGetTensorDescAddress", desc) ? desc->address : NULL;
}

SIM_EXPORT aclTensorDesc *aclGetTensorDescByIndex(aclTensorDesc *desc, size_t index)
{
    SIM_ENTER_OR(aclGetTensorDescByIndex, NULL);
    const char *fn = "aclGetTensorDescByIndex";
    if (!need_desc(fn, desc))
        return NULL;
    size_t left = desc->count - desc->pos;
    if (index >= left) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the array has %zu descriptions from %p", index,
                  left, (void *)desc);
        return NULL;
    }
    return desc + index;
}

/* ---- descriptors attached to dataset slots ------------------------------------------ */

void sim_dataset_free_descs(aclmdlDataset *d)
{
    for (size_t i = 0; i < d->n_descs; i++)
        if (d->descs[i])
            tensor_desc_free(d->descs[i]);
    free(d->descs);
    d->descs = NULL;
    d->n_descs = 0;
}

aclError sim_dataset_desc_slots(const char *fn, aclmdlDataset *d)
{
    if (d->n_descs >= d->count)
        return ACL_SUCCESS;
    aclTensorDesc **nd = realloc(d->descs, sizeof *nd * d->count);
    if (!nd)
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    memset(nd + d->n_descs, 0, sizeof *nd * (d->count - d->n_descs));
    d->descs = nd;
    d->n_descs = d->count;
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlSetDatasetTensorDesc(aclmdlDataset *dataset, aclTensorDesc *tensorDesc, size_t index)
{
    SIM_ENTER(aclmdlSetDatasetTensorDesc);
    const char *fn = "aclmdlSetDatasetTensorDesc";
    aclError rc = ACL_SUCCESS;
    aclTensorDesc *copy = NULL;
    if (!sim_dataset_ok(dataset))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dataset %p is NULL or not a live dataset", (void *)dataset);
    else if (tensorDesc && !sim_tensor_desc_ok(tensorDesc))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "tensorDesc %p is not a live tensor description",
                       (void *)tensorDesc);
    else if (index >= dataset->count)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the dataset has %zu buffers (add the "
                       "buffer first)", index, dataset->count);
    if (rc == ACL_SUCCESS && dataset->n_descs <= index)
        rc = sim_dataset_desc_slots(fn, dataset);
    /* The dataset keeps its own copy, so the caller may destroy theirs at once. */
    if (rc == ACL_SUCCESS && tensorDesc) {
        copy = sim_tensor_desc_array(1);
        if (!copy)
            rc = sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        else {
            *copy = *tensorDesc;
            copy->pos = 0;
            copy->count = 1;
        }
    }
    if (rc == ACL_SUCCESS) {
        if (dataset->descs[index])
            tensor_desc_free(dataset->descs[index]);
        dataset->descs[index] = copy;
    }
    SIM_RETURN(aclmdlSetDatasetTensorDesc, rc, "%p %p index %zu", (void *)dataset, (void *)tensorDesc, index);
}

SIM_EXPORT aclTensorDesc *aclmdlGetDatasetTensorDesc(const aclmdlDataset *dataset, size_t index)
{
    SIM_ENTER_OR(aclmdlGetDatasetTensorDesc, NULL);
    const char *fn = "aclmdlGetDatasetTensorDesc";
    if (!sim_dataset_ok(dataset)) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "dataset %p is NULL or not a live dataset", (const void *)dataset);
        return NULL;
    }
    if (index >= dataset->count) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the dataset has %zu buffers", index,
                  dataset->count);
        return NULL;
    }
    if (index >= dataset->n_descs || !dataset->descs[index]) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "no tensor description is set at index %zu "
                  "(aclmdlSetDatasetTensorDesc)", index);
        return NULL;
    }
    return dataset->descs[index];
}
