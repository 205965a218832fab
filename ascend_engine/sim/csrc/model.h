/*
 * model.h -- shared internals of the simulator's model API (model.c,
 * model_desc.c, dataset.c): data buffers, datasets, loaded models.
 */
#ifndef ASCEND_SIM_MODEL_H
#define ASCEND_SIM_MODEL_H

#include <stdatomic.h>

#include "format.h"
#include "sim.h"

/* For exported functions that return a pointer, size or enum instead of
 * aclError: an injected fault records its message and returns `failval`. */
#define SIM_ENTER_OR(fn, failval)                                                   \
    do {                                                                            \
        aclError sim_injected_ = sim_fault_on_call(#fn);                            \
        if (sim_injected_ != ACL_SUCCESS) {                                         \
            sim_error(sim_injected_, #fn, "injected fault");                        \
            if (sim_log_enabled)                                                    \
                sim_log_call(#fn, sim_injected_, "injected fault");                 \
            return failval;                                                         \
        }                                                                           \
    } while (0)

/* Log a non-aclError return (rc is what the recent error says, 0 if none). */
#define SIM_LOG_VAL(fn, rc, ...)                                                    \
    do {                                                                            \
        if (sim_log_enabled)                                                        \
            sim_log_call(#fn, (rc), __VA_ARGS__);                                   \
    } while (0)

#define SIM_DATABUF_MAGIC 0x46554244u   /* "DBUF" */
#define SIM_DATASET_MAGIC 0x53415444u   /* "DTAS" */
#define SIM_DESC_MAGIC 0x4353444du      /* "MDSC" */

struct aclDataBuffer {
    uint32_t magic;
    void *data;
    size_t size;
};

struct aclmdlDataset {
    uint32_t magic;
    size_t count, cap;
    aclDataBuffer **buffers;
    uint64_t dyn_batch;          /* gear set by aclmdlSetDynamicBatchSize, 0 = none */
    aclTensorDesc **descs;       /* aclmdlSetDatasetTensorDesc copies, n_descs slots */
    size_t n_descs;
};

int sim_databuf_ok(const aclDataBuffer *b);
int sim_dataset_ok(const aclmdlDataset *d);

/* ---- tensor_desc.c ---------------------------------------------------------
 * Tensor descriptors come singly (aclCreateTensorDesc) or as arrays
 * (aclmdlCreateAndGetOpDesc, walked with aclGetTensorDescByIndex); either way
 * aclDestroyTensorDesc on the first element frees the whole allocation. */
#define SIM_TDESC_MAGIC 0x43534454u     /* "TDSC" */

struct aclTensorDesc {
    uint32_t magic;
    uint32_t pos;                /* index of this element in its array */
    size_t count;                /* elements in the array */
    aclDataType dtype;
    aclFormat format;
    int unknown_rank;            /* created with a single dim of -2 */
    size_t num_dims;
    int64_t dims[ACL_MAX_DIM_CNT];
    void *address;               /* the tensor's device address, when known */
};

/* n zeroed, live descriptors in one allocation (NULL on OOM). */
aclTensorDesc *sim_tensor_desc_array(size_t n);
int sim_tensor_desc_ok(const aclTensorDesc *d);
/* Frees the dataset's descriptor copies (aclmdlDestroyDataset). */
void sim_dataset_free_descs(aclmdlDataset *d);

/* exception.c: on a worker thread, describe the model execution that is
 * about to fail, for aclmdlCreateAndGetOpDesc (consumed by the next
 * sim_exception_report on the same thread). */
void sim_exception_note_model(const sim_model_info *info, void *const *in, void *const *out, uint64_t gear);

/* Parsed model description shared by a loaded model and its descriptors. */
typedef struct sim_meta {
    atomic_int refs;
    sim_model_info *info;
} sim_meta;

void sim_meta_unref(sim_meta *meta);

typedef struct sim_model {
    uint32_t id;
    int32_t device;
    sim_meta *meta;
    unsigned char *weights, *work;
    int own_weights, own_work;
    size_t reserved;             /* bytes reserved against the device's capacity */
    atomic_int refs;             /* the table's + one per queued execution */
    atomic_int busy;             /* an execution is running right now */
    atomic_uint_least64_t last_gear;
} sim_model;

/* Find a loaded model and take a reference (NULL if unknown). */
sim_model *sim_model_get(uint32_t id);
void sim_model_unref(sim_model *m);

struct aclmdlDesc {
    uint32_t magic;
    uint32_t model_id;
    sim_meta *meta;              /* NULL until aclmdlGetDesc */
};

/* The model info behind a filled descriptor (aclmdlGetDesc), or NULL after
 * recording an error naming fn. */
const sim_model_info *sim_desc_info(const char *fn, const aclmdlDesc *d);

#endif /* ASCEND_SIM_MODEL_H */
