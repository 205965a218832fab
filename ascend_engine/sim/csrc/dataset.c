/*
 * dataset.c -- aclDataBuffer and aclmdlDataset: host-side wrappers around
 * device pointers.  Nothing here checks the memory itself; execution does
 * (sizes against the descriptor, liveness and device with sim_mem_check_device).
 */
#include <stdlib.h>

#include "model.h"

int sim_databuf_ok(const aclDataBuffer *b)
{
    return b && b->magic == SIM_DATABUF_MAGIC;
}

int sim_dataset_ok(const aclmdlDataset *d)
{
    return d && d->magic == SIM_DATASET_MAGIC;
}

SIM_EXPORT aclDataBuffer *aclCreateDataBuffer(void *data, size_t size)
{
    SIM_ENTER_OR(aclCreateDataBuffer, NULL);
    aclDataBuffer *b = malloc(sizeof *b);
    if (!b) {
        sim_error(ACL_ERROR_BAD_ALLOC, "aclCreateDataBuffer", "out of host memory");
        return NULL;
    }
    b->magic = SIM_DATABUF_MAGIC;
    b->data = data;
    b->size = size;
    SIM_LOG_VAL(aclCreateDataBuffer, ACL_SUCCESS, "data=%p size=%zu -> %p", data, size, (void *)b);
    return b;
}

SIM_EXPORT aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer)
{
    SIM_ENTER(aclDestroyDataBuffer);
    if (!sim_databuf_ok(dataBuffer))
        SIM_RETURN(aclDestroyDataBuffer,
                   sim_error(ACL_ERROR_INVALID_PARAM, "aclDestroyDataBuffer",
                             "dataBuffer %p is NULL or not a live data buffer", (const void *)dataBuffer),
                   "%p", (const void *)dataBuffer);
    aclDataBuffer *b = (aclDataBuffer *)dataBuffer;
    SIM_LOG_VAL(aclDestroyDataBuffer, ACL_SUCCESS, "%p", (void *)b);   /* before free: the pointer dies */
    b->magic = 0;   /* so a second destroy is reported instead of freeing twice (while the memory lasts) */
    free(b);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size)
{
    SIM_ENTER(aclUpdateDataBuffer);
    if (!sim_databuf_ok(dataBuffer))
        SIM_RETURN(aclUpdateDataBuffer,
                   sim_error(ACL_ERROR_INVALID_PARAM, "aclUpdateDataBuffer",
                             "dataBuffer %p is NULL or not a live data buffer", (void *)dataBuffer),
                   "%p", (void *)dataBuffer);
    dataBuffer->data = data;
    dataBuffer->size = size;
    SIM_RETURN(aclUpdateDataBuffer, ACL_SUCCESS, "%p data=%p size=%zu", (void *)dataBuffer, data, size);
}

SIM_EXPORT void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer)
{
    SIM_ENTER_OR(aclGetDataBufferAddr, NULL);
    if (!sim_databuf_ok(dataBuffer)) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclGetDataBufferAddr", "dataBuffer %p is NULL or not a live data buffer",
                  (const void *)dataBuffer);
        return NULL;
    }
    return dataBuffer->data;
}

/* The deprecated 32-bit form (CANN keeps it for old programs).  A size that
 * does not fit in 32 bits reads 0 with a message, never a truncated number. */
SIM_EXPORT uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer)
{
    SIM_ENTER_OR(aclGetDataBufferSize, 0);
    if (!sim_databuf_ok(dataBuffer)) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclGetDataBufferSize", "dataBuffer %p is NULL or not a live data buffer",
                  (const void *)dataBuffer);
        return 0;
    }
    if (dataBuffer->size > UINT32_MAX) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclGetDataBufferSize",
                  "dataBuffer %p holds %zu bytes, more than the 32-bit result can say; use aclGetDataBufferSizeV2",
                  (const void *)dataBuffer, dataBuffer->size);
        return 0;
    }
    return (uint32_t)dataBuffer->size;
}

SIM_EXPORT size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer)
{
    SIM_ENTER_OR(aclGetDataBufferSizeV2, 0);
    if (!sim_databuf_ok(dataBuffer)) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclGetDataBufferSizeV2",
                  "dataBuffer %p is NULL or not a live data buffer", (const void *)dataBuffer);
        return 0;
    }
    return dataBuffer->size;
}

SIM_EXPORT aclmdlDataset *aclmdlCreateDataset(void)
{
    SIM_ENTER_OR(aclmdlCreateDataset, NULL);
    aclmdlDataset *d = calloc(1, sizeof *d);
    if (!d) {
        sim_error(ACL_ERROR_BAD_ALLOC, "aclmdlCreateDataset", "out of host memory");
        return NULL;
    }
    d->magic = SIM_DATASET_MAGIC;
    SIM_LOG_VAL(aclmdlCreateDataset, ACL_SUCCESS, "-> %p", (void *)d);
    return d;
}

SIM_EXPORT aclError aclmdlDestroyDataset(const aclmdlDataset *dataset)
{
    SIM_ENTER(aclmdlDestroyDataset);
    if (!sim_dataset_ok(dataset))
        SIM_RETURN(aclmdlDestroyDataset,
                   sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlDestroyDataset",
                             "dataset %p is NULL or not a live dataset", (const void *)dataset),
                   "%p", (const void *)dataset);
    aclmdlDataset *d = (aclmdlDataset *)dataset;
    SIM_LOG_VAL(aclmdlDestroyDataset, ACL_SUCCESS, "%p", (void *)d);
    d->magic = 0;
    sim_dataset_free_descs(d);   /* copies made by aclmdlSetDatasetTensorDesc */
    free(d->buffers);   /* the buffers belong to the caller, as in AscendCL */
    free(d);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlAddDatasetBuffer(aclmdlDataset *dataset, aclDataBuffer *dataBuffer)
{
    SIM_ENTER(aclmdlAddDatasetBuffer);
    aclError rc = ACL_SUCCESS;
    if (!sim_dataset_ok(dataset))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlAddDatasetBuffer", "dataset %p is NULL or not a live dataset",
                       (void *)dataset);
    else if (!sim_databuf_ok(dataBuffer))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlAddDatasetBuffer",
                       "dataBuffer %p is NULL or not a live data buffer", (void *)dataBuffer);
    else if (dataset->count == dataset->cap) {
        size_t cap = dataset->cap ? dataset->cap * 2 : 8;
        aclDataBuffer **nb = realloc(dataset->buffers, cap * sizeof *nb);
        if (!nb)
            rc = sim_error(ACL_ERROR_BAD_ALLOC, "aclmdlAddDatasetBuffer", "out of host memory");
        else {
            dataset->buffers = nb;
            dataset->cap = cap;
        }
    }
    if (rc == ACL_SUCCESS)
        dataset->buffers[dataset->count++] = dataBuffer;
    SIM_RETURN(aclmdlAddDatasetBuffer, rc, "%p %p", (void *)dataset, (void *)dataBuffer);
}

SIM_EXPORT size_t aclmdlGetDatasetNumBuffers(const aclmdlDataset *dataset)
{
    SIM_ENTER_OR(aclmdlGetDatasetNumBuffers, 0);
    if (!sim_dataset_ok(dataset)) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlGetDatasetNumBuffers", "dataset %p is NULL or not a live dataset",
                  (const void *)dataset);
        return 0;
    }
    return dataset->count;
}

SIM_EXPORT aclDataBuffer *aclmdlGetDatasetBuffer(const aclmdlDataset *dataset, size_t index)
{
    SIM_ENTER_OR(aclmdlGetDatasetBuffer, NULL);
    if (!sim_dataset_ok(dataset)) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlGetDatasetBuffer", "dataset %p is NULL or not a live dataset",
                  (const void *)dataset);
        return NULL;
    }
    if (index >= dataset->count) {
        sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlGetDatasetBuffer", "index %zu out of range: the dataset has %zu buffers",
                  index, dataset->count);
        return NULL;
    }
    return dataset->buffers[index];
}
