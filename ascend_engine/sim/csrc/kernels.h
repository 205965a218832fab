/*
 * kernels.h -- the C kernels simulator model ops run.
 *
 * Kernels trust their arguments: sim_model_parse has validated every op, and
 * the executor passes concrete shapes (the batch dimension resolved to the
 * gear).  Float ops compute in float32; float16 operands are converted into
 * the caller's scratch memory first (op->scratch_bytes at the largest gear).
 */
#ifndef ASCEND_SIM_KERNELS_H
#define ASCEND_SIM_KERNELS_H

#include "format.h"

typedef struct sim_view {
    void *data;
    aclDataType dtype;
    uint32_t rank;
    int64_t dims[SIM_MAX_RANK];
} sim_view;

uint64_t sim_view_elems(const sim_view *v);

/* Run one op: in[0..op->n_inputs) -> *out.  Never fails. */
void sim_kernel_run(const sim_op *op, const sim_view *in, const sim_view *out, void *scratch);

/* C[M,N] = A[M,K] @ B[K,N], row-major with leading dimensions; overwrites C. */
void sim_sgemm(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B, size_t ldb, float *C,
               size_t ldc);

#endif /* ASCEND_SIM_KERNELS_H */
