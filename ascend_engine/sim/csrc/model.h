/*
 * model.h -- shared internals of the simulator's model API (model.c, model_exec.c,
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
    uint32_t dyn_kind;           /* SIM_DYN_* of the last successful dynamic setter, 0 = none */
    uint64_t dyn_vals[SIM_MAX_SYMS];   /* the gear's symbol values */
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
void sim_exception_note_model(const sim_model_info *info, void *const *in, void *const *out, const uint64_t *sym);

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
    pthread_mutex_t last_lock;
    int has_last;                /* a dynamic setter succeeded: last_syms holds its gear */
    uint64_t last_syms[SIM_MAX_SYMS];
    void *ort_session;           /* ONNX models: the ONNX Runtime session (ort_exec.c) */
    int skip_compute;            /* ONNX models loaded with ASCEND_SIM_COMPUTE=skip */
    _Atomic(void *) spare_plan;  /* a finished execution's plan, reused by the next one (model_exec.c) */
} sim_model;

/* ---- ort_exec.c: ONNX models computed by ONNX Runtime -------------------------
 * A session for the ONNX graph `onnx` (the model's weights), or the error
 * (recorded under fn): ONNX Runtime missing, or the graph rejected. */
aclError sim_ort_session_create(const char *fn, const sim_model_info *info, const void *onnx, size_t size,
                                void **session);
void sim_ort_session_release(void *session);
/* ASCEND_SIM_COMPUTE=skip: executions write zeros instead of computing. */
int sim_ort_skip_compute(void);
/* Run the graph at symbol values sym (NULL: static) from the input buffers
 * into the output buffers (out_len bytes each; zeros when skip).  out_dims
 * (n_outputs x SIM_MAX_RANK) receives each output's shape as run: for a
 * shape-range output (shape_after_run) ONNX Runtime chooses it, and a buffer
 * too small for it fails with ACL_ERROR_GE_FAILURE (500002).  Returns 0
 * or an error code with the message in err. */
aclError sim_ort_run(void *session, const sim_model_info *info, const uint64_t *sym, void *const *in,
                     void *const *out, const size_t *out_len, int skip, int64_t *out_dims, char *err,
                     size_t errlen);

/* The symbol values of the gear last set on model m (aclmdlGetCurOutputDims);
 * 0 when none was set. */
int sim_model_last_syms(sim_model *m, uint64_t *out);
/* ACL_ERROR_GE_EXEC_MODEL_ID_INVALID (145003) for fn, naming the id (model.c) */
aclError sim_model_unknown(const char *fn, uint32_t id);

/* gear_checks.c: ASCEND_SIM_GEAR_CHECKS, read now: *strict is 1 for
 * "strict" (the default), 0 for "cann"; another value is an error. */
aclError sim_gear_checks(const char *fn, int *strict);

/* ---- dynamic.c / shape_range.c: the symbol values of one execution --------------
 * Gear models (batch, HW, dims): the gear the input dataset was set to, which
 * must be one of this model's.  Shape-range models: the shapes of the input
 * tensor descriptions (aclmdlSetDatasetTensorDesc), within the ranges.  Mixing
 * the two on one execution fails.  Writes n_syms values to sym; returns
 * ACL_SUCCESS or the error (recorded under fn). */
aclError sim_exec_syms(const char *fn, const sim_model *m, const aclmdlDataset *in, uint64_t *sym);
/* dynamic.c: the gear a gear model runs at when no setter was called
 * (ASCEND_SIM_GEAR_CHECKS=cann): the values in its ascend_mbatch_shape_data
 * buffer, as the device reads them; 507011 when they name no gear. */
aclError sim_buffer_syms(const char *fn, const sim_model *m, const aclmdlDataset *in, uint64_t *sym);
/* shape_range.c: the symbol values of a shape-range execution, from the
 * input dataset's tensor descriptions. */
aclError sim_range_syms(const char *fn, const sim_model *m, const aclmdlDataset *in, uint64_t *sym);
/* tensor_desc.c: make room for one description per buffer of the dataset. */
aclError sim_dataset_desc_slots(const char *fn, aclmdlDataset *d);
/* After a shape-range execution is accepted: describe each output's actual
 * shape in the output dataset (aclmdlGetDatasetTensorDesc). */
aclError sim_range_describe_outputs(const char *fn, const sim_model *m, aclmdlDataset *out, const uint64_t *sym);

/* Find a loaded model and take a reference (NULL if unknown). */
sim_model *sim_model_get(uint32_t id);
void sim_model_unref(sim_model *m);

struct aclmdlDesc {
    uint32_t magic;
    uint32_t model_id;
    sim_meta *meta;              /* NULL until aclmdlGetDesc */
};

/* aclmdlGet{Input,Output}Dims (current 0) and aclmdlGetCurOutputDims (1). */
aclError sim_fill_dims(const char *fn, const aclmdlDesc *d, size_t index, int is_in, aclmdlIODims *dims,
                       int current);

/* The model info behind a filled descriptor (aclmdlGetDesc), or NULL after
 * recording an error naming fn. */
const sim_model_info *sim_desc_info(const char *fn, const aclmdlDesc *d);

#endif /* ASCEND_SIM_MODEL_H */
