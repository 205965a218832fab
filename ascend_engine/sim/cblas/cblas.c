/*
 * cblas.c -- libacl_cblas.so of a simulator toolkit: the CANN BLAS entry
 * points (acl/ops/acl_cblas.h, which the CANN headers carry) as honest
 * stand-ins.  Programs link -lacl_cblas by name, often without calling it on
 * their main path; with this library they link and start.  Every function
 * reports ACL_ERROR_API_NOT_SUPPORT through the simulator's recent error
 * (aeSimNotSupported, resolved from libascendcl at load time) and touches
 * none of its arguments.  Simulator models do their matrix products inside
 * the model (docs/toolkit.md).
 */
#include <stdint.h>

#include "standin.h"

/* The argument types of the CANN header, in our own words. */
typedef int blas_trans;      /* aclTransType: N, T, NZ, NZ_T */
typedef int blas_compute;    /* aclComputeType: high / low precision */
typedef struct blas_op_handle blas_op_handle;   /* aclopHandle */

#define BLAS_NOT_SIMULATED "CANN BLAS runs single operators on the device, which the simulator does not model"
#define BLAS_UNSUPPORTED(name) return aeSimNotSupported(#name, BLAS_NOT_SIMULATED)

STANDIN_EXPORT aclError aclblasGemvEx(blas_trans transA, int m, int n, const void *alpha, const void *a, int lda,
                                      aclDataType dataTypeA, const void *x, int incx, aclDataType dataTypeX,
                                      const void *beta, void *y, int incy, aclDataType dataTypeY,
                                      blas_compute type, aclrtStream stream)
{
    (void)transA, (void)m, (void)n, (void)alpha, (void)a, (void)lda, (void)dataTypeA, (void)x, (void)incx;
    (void)dataTypeX, (void)beta, (void)y, (void)incy, (void)dataTypeY, (void)type, (void)stream;
    BLAS_UNSUPPORTED(aclblasGemvEx);
}

STANDIN_EXPORT aclError aclblasCreateHandleForGemvEx(blas_trans transA, int m, int n, aclDataType dataTypeA,
                                                     aclDataType dataTypeX, aclDataType dataTypeY,
                                                     blas_compute type, blas_op_handle **handle)
{
    (void)transA, (void)m, (void)n, (void)dataTypeA, (void)dataTypeX, (void)dataTypeY, (void)type, (void)handle;
    BLAS_UNSUPPORTED(aclblasCreateHandleForGemvEx);
}

STANDIN_EXPORT aclError aclblasHgemv(blas_trans transA, int m, int n, const aclFloat16 *alpha, const aclFloat16 *a,
                                     int lda, const aclFloat16 *x, int incx, const aclFloat16 *beta, aclFloat16 *y,
                                     int incy, blas_compute type, aclrtStream stream)
{
    (void)transA, (void)m, (void)n, (void)alpha, (void)a, (void)lda, (void)x, (void)incx, (void)beta, (void)y;
    (void)incy, (void)type, (void)stream;
    BLAS_UNSUPPORTED(aclblasHgemv);
}

STANDIN_EXPORT aclError aclblasCreateHandleForHgemv(blas_trans transA, int m, int n, blas_compute type,
                                                    blas_op_handle **handle)
{
    (void)transA, (void)m, (void)n, (void)type, (void)handle;
    BLAS_UNSUPPORTED(aclblasCreateHandleForHgemv);
}

STANDIN_EXPORT aclError aclblasS8gemv(blas_trans transA, int m, int n, const int32_t *alpha, const int8_t *a,
                                      int lda, const int8_t *x, int incx, const int32_t *beta, int32_t *y,
                                      int incy, blas_compute type, aclrtStream stream)
{
    (void)transA, (void)m, (void)n, (void)alpha, (void)a, (void)lda, (void)x, (void)incx, (void)beta, (void)y;
    (void)incy, (void)type, (void)stream;
    BLAS_UNSUPPORTED(aclblasS8gemv);
}

STANDIN_EXPORT aclError aclblasCreateHandleForS8gemv(blas_trans transA, int m, int n, blas_compute type,
                                                     blas_op_handle **handle)
{
    (void)transA, (void)m, (void)n, (void)type, (void)handle;
    BLAS_UNSUPPORTED(aclblasCreateHandleForS8gemv);
}

STANDIN_EXPORT aclError aclblasGemmEx(blas_trans transA, blas_trans transB, blas_trans transC, int m, int n, int k,
                                      const void *alpha, const void *matrixA, int lda, aclDataType dataTypeA,
                                      const void *matrixB, int ldb, aclDataType dataTypeB, const void *beta,
                                      void *matrixC, int ldc, aclDataType dataTypeC, blas_compute type,
                                      aclrtStream stream)
{
    (void)transA, (void)transB, (void)transC, (void)m, (void)n, (void)k, (void)alpha, (void)matrixA, (void)lda;
    (void)dataTypeA, (void)matrixB, (void)ldb, (void)dataTypeB, (void)beta, (void)matrixC, (void)ldc;
    (void)dataTypeC, (void)type, (void)stream;
    BLAS_UNSUPPORTED(aclblasGemmEx);
}

STANDIN_EXPORT aclError aclblasCreateHandleForGemmEx(blas_trans transA, blas_trans transB, blas_trans transC, int m,
                                                     int n, int k, aclDataType dataTypeA, aclDataType dataTypeB,
                                                     aclDataType dataTypeC, blas_compute type,
                                                     blas_op_handle **handle)
{
    (void)transA, (void)transB, (void)transC, (void)m, (void)n, (void)k, (void)dataTypeA, (void)dataTypeB;
    (void)dataTypeC, (void)type, (void)handle;
    BLAS_UNSUPPORTED(aclblasCreateHandleForGemmEx);
}

STANDIN_EXPORT aclError aclblasHgemm(blas_trans transA, blas_trans transB, blas_trans transC, int m, int n, int k,
                                     const aclFloat16 *alpha, const aclFloat16 *matrixA, int lda,
                                     const aclFloat16 *matrixB, int ldb, const aclFloat16 *beta,
                                     aclFloat16 *matrixC, int ldc, blas_compute type, aclrtStream stream)
{
    (void)transA, (void)transB, (void)transC, (void)m, (void)n, (void)k, (void)alpha, (void)matrixA, (void)lda;
    (void)matrixB, (void)ldb, (void)beta, (void)matrixC, (void)ldc, (void)type, (void)stream;
    BLAS_UNSUPPORTED(aclblasHgemm);
}

STANDIN_EXPORT aclError aclblasCreateHandleForHgemm(blas_trans transA, blas_trans transB, blas_trans transC, int m,
                                                    int n, int k, blas_compute type, blas_op_handle **handle)
{
    (void)transA, (void)transB, (void)transC, (void)m, (void)n, (void)k, (void)type, (void)handle;
    BLAS_UNSUPPORTED(aclblasCreateHandleForHgemm);
}

STANDIN_EXPORT aclError aclblasS8gemm(blas_trans transA, blas_trans transB, blas_trans transC, int m, int n, int k,
                                      const int32_t *alpha, const int8_t *matrixA, int lda, const int8_t *matrixB,
                                      int ldb, const int32_t *beta, int32_t *matrixC, int ldc, blas_compute type,
                                      aclrtStream stream)
{
    (void)transA, (void)transB, (void)transC, (void)m, (void)n, (void)k, (void)alpha, (void)matrixA, (void)lda;
    (void)matrixB, (void)ldb, (void)beta, (void)matrixC, (void)ldc, (void)type, (void)stream;
    BLAS_UNSUPPORTED(aclblasS8gemm);
}

STANDIN_EXPORT aclError aclblasCreateHandleForS8gemm(blas_trans transA, blas_trans transB, blas_trans transC, int m,
                                                     int n, int k, blas_compute type, blas_op_handle **handle)
{
    (void)transA, (void)transB, (void)transC, (void)m, (void)n, (void)k, (void)type, (void)handle;
    BLAS_UNSUPPORTED(aclblasCreateHandleForS8gemm);
}
