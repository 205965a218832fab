/*
 * kernels.c -- float32 kernels (float16 through float32 copies), integer
 * elementwise ops, and layout ops that move bytes of any dtype.
 *
 * Matmul is cache-blocked (K by KC, N by NC), packs each B block into
 * 16-column strips, and runs 4x16 / 4x8 register tiles written with GCC
 * vector extensions (leftover rows stream B row by row), so the inner loops
 * are vector code at -O2 whatever the cost model.  On x86-64 the same body is
 * also compiled for AVX2+FMA and chosen at run time when the CPU has it.
 */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define AI __attribute__((always_inline)) inline

uint64_t sim_view_elems(const sim_view *v)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < v->rank; i++)
        n *= (uint64_t)v->dims[i];
    return n;
}

/* ---- matmul ---------------------------------------------------------------- */

typedef float v8f __attribute__((vector_size(32)));

#define LD8(v, p) memcpy(&(v), (p), 32)
#define ST8(p, v) memcpy((p), &(v), 32)

enum { KC = 256, NC = 256 };

/* C[4 rows, 16 or 8 cols] += A[4, kc] @ B[kc, 16 or 8]: accumulators stay in registers. */
static AI void tile_4x16(size_t kc, const float *restrict A, size_t lda, const float *restrict B, size_t ldb,
                         float *restrict C, size_t ldc)
{
    v8f c00, c01, c10, c11, c20, c21, c30, c31;
    LD8(c00, C); LD8(c01, C + 8);
    LD8(c10, C + ldc); LD8(c11, C + ldc + 8);
    LD8(c20, C + 2 * ldc); LD8(c21, C + 2 * ldc + 8);
    LD8(c30, C + 3 * ldc); LD8(c31, C + 3 * ldc + 8);
    for (size_t k = 0; k < kc; k++) {
        v8f b0, b1;
        LD8(b0, B + k * ldb);
        LD8(b1, B + k * ldb + 8);
        float a0 = A[k], a1 = A[lda + k], a2 = A[2 * lda + k], a3 = A[3 * lda + k];
        c00 += a0 * b0; c01 += a0 * b1;
        c10 += a1 * b0; c11 += a1 * b1;
        c20 += a2 * b0; c21 += a2 * b1;
        c30 += a3 * b0; c31 += a3 * b1;
    }
    ST8(C, c00); ST8(C + 8, c01);
    ST8(C + ldc, c10); ST8(C + ldc + 8, c11);
    ST8(C + 2 * ldc, c20); ST8(C + 2 * ldc + 8, c21);
    ST8(C + 3 * ldc, c30); ST8(C + 3 * ldc + 8, c31);
}

static AI void tile_4x8(size_t kc, const float *restrict A, size_t lda, const float *restrict B, size_t ldb,
                        float *restrict C, size_t ldc)
{
    v8f c0, c1, c2, c3;
    LD8(c0, C); LD8(c1, C + ldc); LD8(c2, C + 2 * ldc); LD8(c3, C + 3 * ldc);
    for (size_t k = 0; k < kc; k++) {
        v8f b0;
        LD8(b0, B + k * ldb);
        c0 += A[k] * b0;
        c1 += A[lda + k] * b0;
        c2 += A[2 * lda + k] * b0;
        c3 += A[3 * lda + k] * b0;
    }
    ST8(C, c0); ST8(C + ldc, c1); ST8(C + 2 * ldc, c2); ST8(C + 3 * ldc, c3);
}

/* One row of A against a block of B, streaming B's rows (contiguous) into a
 * C row that stays in L1: the shape of GEMV, where tiles would walk B by column. */
static AI void row_axpy(size_t kc, const float *restrict a, const float *restrict B, size_t ldb,
                        float *restrict c, size_t width)
{
    size_t w8 = width / 8 * 8;
    for (size_t k = 0; k < kc; k++) {
        const float *b = B + k * ldb;
        float av = a[k];
        for (size_t j = 0; j < w8; j += 8) {
            v8f bv, cv;
            LD8(bv, b + j);
            LD8(cv, c + j);
            cv += av * bv;
            ST8(c + j, cv);
        }
        for (size_t j = w8; j < width; j++)
            c[j] += av * b[j];
    }
}

/* Copy B[0:kc, 0:w16] into 16-column strips, each kc x 16 contiguous, so the
 * 4x16 tile reads B sequentially. */
static AI void pack_b(size_t kc, size_t w16, const float *restrict B, size_t ldb, float *restrict P)
{
    for (size_t j = 0; j < w16; j += 16)
        for (size_t k = 0; k < kc; k++)
            memcpy(P + j * kc + k * 16, B + k * ldb + j, 16 * sizeof(float));
}

static AI void gemm_body(size_t M, size_t N, size_t K, const float *restrict A, size_t lda,
                         const float *restrict B, size_t ldb, float *restrict C, size_t ldc,
                         float *restrict pack)
{
    for (size_t i = 0; i < M; i++)
        memset(C + i * ldc, 0, N * sizeof(float));
    for (size_t k0 = 0; k0 < K; k0 += KC) {
        size_t kc = K - k0 < KC ? K - k0 : KC;
        for (size_t j0 = 0; j0 < N; j0 += NC) {
            size_t jend = N - j0 < NC ? N : j0 + NC;
            const float *bblk = B + k0 * ldb;
            size_t w16 = (jend - j0) / 16 * 16;
            size_t i = 0;
            if (pack && M >= 4 && w16)
                pack_b(kc, w16, bblk + j0, ldb, pack);
            for (; i + 4 <= M; i += 4) {
                const float *a = A + i * lda + k0;
                float *c = C + i * ldc;
                size_t j = j0;
                if (pack) {
                    for (; j + 16 <= j0 + w16; j += 16)
                        tile_4x16(kc, a, lda, pack + (j - j0) * kc, 16, c + j, ldc);
                } else {
                    for (; j + 16 <= jend; j += 16)
                        tile_4x16(kc, a, lda, bblk + j, ldb, c + j, ldc);
                }
                for (; j + 8 <= jend; j += 8)
                    tile_4x8(kc, a, lda, bblk + j, ldb, c + j, ldc);
                for (; j < jend; j++)
                    for (size_t r = 0; r < 4; r++) {
                        float s = c[r * ldc + j];
                        for (size_t k = 0; k < kc; k++)
                            s += a[r * lda + k] * bblk[k * ldb + j];
                        c[r * ldc + j] = s;
                    }
            }
            for (; i < M; i++)
                row_axpy(kc, A + i * lda + k0, bblk + j0, ldb, C + i * ldc + j0, jend - j0);
        }
    }
}

static void gemm_generic(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B, size_t ldb,
                         float *C, size_t ldc, float *pack)
{
    gemm_body(M, N, K, A, lda, B, ldb, C, ldc, pack);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIM_HAVE_AVX2_GEMM 1
__attribute__((target("avx2,fma"))) static void gemm_avx2(size_t M, size_t N, size_t K, const float *A, size_t lda,
                                                          const float *B, size_t ldb, float *C, size_t ldc,
                                                          float *pack)
{
    gemm_body(M, N, K, A, lda, B, ldb, C, ldc, pack);
}
#endif

void sim_sgemm(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B, size_t ldb, float *C,
               size_t ldc)
{
    /* packing pays off once several 4-row tiles reuse a block; without
     * memory for it the unpacked path computes the same result */
    float *pack = M >= 8 ? malloc(sizeof(float) * KC * NC) : NULL;
#ifdef SIM_HAVE_AVX2_GEMM
    static int use_avx2 = -1;   /* racing first calls compute the same answer */
    if (use_avx2 < 0) {
        __builtin_cpu_init();
        use_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    if (use_avx2)
        gemm_avx2(M, N, K, A, lda, B, ldb, C, ldc, pack);
    else
#endif
        gemm_generic(M, N, K, A, lda, B, ldb, C, ldc, pack);
    free(pack);
}

/* Element strides of the batch dims of a matrix stack, broadcast to `rank` dims. */
static void bcast_strides(const sim_view *v, uint32_t lead, uint32_t rank, const int64_t *out_dims, int64_t *st,
                          int64_t inner)
{
    int64_t s = inner;
    for (int i = (int)rank - 1; i >= 0; i--) {
        int src = i - (int)rank + (int)lead;
        if (src < 0 || v->dims[src] == 1 || out_dims[i] == 1) {
            st[i] = 0;
        } else {
            st[i] = s;
        }
        if (src >= 0)
            s *= v->dims[src];
    }
}

static void k_matmul(const sim_view *a, const sim_view *b, const sim_view *o)
{
    const float *A = a->data, *B = b->data;
    float *C = o->data;
    size_t K = (size_t)a->dims[a->rank - 1], N = (size_t)b->dims[b->rank - 1];
    size_t M = (size_t)a->dims[a->rank - 2];
    if (b->rank == 2) {
        /* one weight matrix: fold every leading dim of A into M */
        size_t rows = (size_t)(sim_view_elems(a) / K);
        sim_sgemm(rows, N, K, A, K, B, N, C, N);
        return;
    }
    uint32_t lead = o->rank - 2;
    int64_t sa[SIM_MAX_RANK], sb[SIM_MAX_RANK], idx[SIM_MAX_RANK] = {0};
    bcast_strides(a, a->rank - 2, lead, o->dims, sa, (int64_t)(M * K));
    bcast_strides(b, b->rank - 2, lead, o->dims, sb, (int64_t)(K * N));
    uint64_t count = 1;
    for (uint32_t i = 0; i < lead; i++)
        count *= (uint64_t)o->dims[i];
    for (uint64_t m = 0; m < count; m++) {
        int64_t oa = 0, ob = 0;
        for (uint32_t i = 0; i < lead; i++) {
            oa += idx[i] * sa[i];
            ob += idx[i] * sb[i];
        }
        sim_sgemm(M, N, K, A + oa, K, B + ob, N, C + m * M * N, N);
        for (int i = (int)lead - 1; i >= 0; i--) {
            if (++idx[i] < o->dims[i])
                break;
            idx[i] = 0;
        }
    }
}

/* ---- elementwise binary with numpy broadcasting ---------------------------- */

enum { BIN_ADD, BIN_MUL };

#define BIN_LOOP(T, UT)                                                                    \
    do {                                                                                   \
        const T *pa = (const T *)a->data + oa, *pb = (const T *)b->data + ob;              \
        T *po = (T *)o->data + row * n;                                                    \
        if (kind == BIN_ADD)                                                               \
            for (int64_t j = 0; j < n; j++)                                                \
                po[j] = (T)((UT)pa[j * ia] + (UT)pb[j * ib]);                              \
        else                                                                               \
            for (int64_t j = 0; j < n; j++)                                                \
                po[j] = (T)((UT)pa[j * ia] * (UT)pb[j * ib]);                              \
    } while (0)

static void k_binary(int kind, const sim_view *a, const sim_view *b, const sim_view *o)
{
    uint32_t R = o->rank;
    int64_t sa[SIM_MAX_RANK], sb[SIM_MAX_RANK], idx[SIM_MAX_RANK] = {0};
    bcast_strides(a, a->rank, R, o->dims, sa, 1);
    bcast_strides(b, b->rank, R, o->dims, sb, 1);
    int64_t n = R ? o->dims[R - 1] : 1;
    int64_t ia = R ? (sa[R - 1] ? 1 : 0) : 0, ib = R ? (sb[R - 1] ? 1 : 0) : 0;
    uint64_t rows = sim_view_elems(o) / (uint64_t)n;
    for (uint64_t row = 0; row < rows; row++) {
        int64_t oa = 0, ob = 0;
        for (uint32_t i = 0; i + 1 < R; i++) {
            oa += idx[i] * sa[i];
            ob += idx[i] * sb[i];
        }
        switch (o->dtype) {
        case ACL_FLOAT: BIN_LOOP(float, float); break;
        case ACL_INT32: BIN_LOOP(int32_t, uint32_t); break;
        case ACL_INT64: BIN_LOOP(int64_t, uint64_t); break;
        case ACL_UINT8: BIN_LOOP(uint8_t, uint32_t); break;
        default: break;
        }
        for (int i = (int)R - 2; i >= 0; i--) {
            if (++idx[i] < o->dims[i])
                break;
            idx[i] = 0;
        }
    }
}

/* ---- unary, softmax, layernorm ------------------------------------------- */

static void k_unary(uint32_t opcode, const float *restrict x, float *restrict y, uint64_t n)
{
    const float c = 0.7978845608028654f;   /* sqrt(2 / pi) */
    switch (opcode) {
    case SIM_OP_RELU:
        for (uint64_t i = 0; i < n; i++)
            y[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);
        break;
    case SIM_OP_GELU:
        for (uint64_t i = 0; i < n; i++) {
            float v = x[i];
            y[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
        }
        break;
    case SIM_OP_SIGMOID:
        for (uint64_t i = 0; i < n; i++)
            y[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case SIM_OP_TANH:
        for (uint64_t i = 0; i < n; i++)
            y[i] = tanhf(x[i]);
        break;
    default:
        break;
    }
}

/* Split dims around `axis` into outer x len x inner. */
static void split_axis(const sim_view *v, uint32_t axis, uint64_t *outer, uint64_t *len, uint64_t *inner)
{
    *outer = *inner = 1;
    for (uint32_t i = 0; i < axis; i++)
        *outer *= (uint64_t)v->dims[i];
    *len = (uint64_t)v->dims[axis];
    for (uint32_t i = axis + 1; i < v->rank; i++)
        *inner *= (uint64_t)v->dims[i];
}

static void k_softmax(const sim_view *x, const sim_view *y, uint32_t axis)
{
    uint64_t outer, len, inner;
    split_axis(x, axis, &outer, &len, &inner);
    const float *X = x->data;
    float *Y = y->data;
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t in = 0; in < inner; in++) {
            const float *px = X + o * len * inner + in;
            float *py = Y + o * len * inner + in;
            float m = px[0];
            for (uint64_t k = 1; k < len; k++)
                if (px[k * inner] > m || px[k * inner] != px[k * inner])
                    m = px[k * inner];
            float s = 0.0f;
            for (uint64_t k = 0; k < len; k++) {
                float e = expf(px[k * inner] - m);
                py[k * inner] = e;
                s += e;
            }
            for (uint64_t k = 0; k < len; k++)
                py[k * inner] /= s;
        }
}

static void k_layernorm(const sim_view *x, const float *g, const float *b, const sim_view *y, double eps)
{
    uint64_t d = (uint64_t)x->dims[x->rank - 1], rows = sim_view_elems(x) / d;
    const float *X = x->data;
    float *Y = y->data;
    for (uint64_t r = 0; r < rows; r++) {
        const float *px = X + r * d;
        float *py = Y + r * d;
        double s = 0.0, ss = 0.0;
        for (uint64_t k = 0; k < d; k++)
            s += px[k];
        double mu = s / (double)d;
        for (uint64_t k = 0; k < d; k++)
            ss += (px[k] - mu) * (px[k] - mu);
        float inv = (float)(1.0 / sqrt(ss / (double)d + eps));
        float fmu = (float)mu;
        for (uint64_t k = 0; k < d; k++)
            py[k] = (px[k] - fmu) * inv * g[k] + b[k];
    }
}

/* ---- reductions --------------------------------------------------------------- */

static void k_reduce(const sim_op *op, const sim_view *x, const sim_view *y)
{
    int64_t st[SIM_MAX_RANK];
    int64_t s = 1;
    for (int i = (int)x->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->dims[i];
    }
    unsigned axes = 0;
    for (uint32_t i = 1; i < op->n_ints; i++)
        axes |= 1u << op->ints[i];
    uint32_t kept[SIM_MAX_RANK], red[SIM_MAX_RANK], nk = 0, nr = 0;
    uint64_t count = 1;
    for (uint32_t i = 0; i < x->rank; i++) {
        if ((axes >> i) & 1u) {
            red[nr++] = i;
            count *= (uint64_t)x->dims[i];
        } else {
            kept[nk++] = i;
        }
    }
    uint64_t outs = sim_view_elems(y);
    int64_t ki[SIM_MAX_RANK] = {0};
    for (uint64_t o = 0; o < outs; o++) {
        int64_t base = 0;
        for (uint32_t i = 0; i < nk; i++)
            base += ki[i] * st[kept[i]];
        int64_t ri[SIM_MAX_RANK] = {0};
        double acc = 0.0;
        uint64_t iacc = 0;
        for (uint64_t c = 0; c < count; c++) {
            int64_t off = base;
            for (uint32_t i = 0; i < nr; i++)
                off += ri[i] * st[red[i]];
            switch (x->dtype) {
            case ACL_FLOAT: acc += ((const float *)x->data)[off]; break;
            case ACL_INT32: iacc += (uint64_t)(int64_t)((const int32_t *)x->data)[off]; break;
            case ACL_INT64: iacc += (uint64_t)((const int64_t *)x->data)[off]; break;
            default: break;
            }
            for (int i = (int)nr - 1; i >= 0; i--) {
                if (++ri[i] < x->dims[red[i]])
                    break;
                ri[i] = 0;
            }
        }
        switch (x->dtype) {
        case ACL_FLOAT:
            ((float *)y->data)[o] = (float)(op->opcode == SIM_OP_MEAN ? acc / (double)count : acc);
            break;
        case ACL_INT32: ((int32_t *)y->data)[o] = (int32_t)(uint32_t)iacc; break;
        case ACL_INT64: ((int64_t *)y->data)[o] = (int64_t)iacc; break;
        default: break;
        }
        for (int i = (int)nk - 1; i >= 0; i--) {
            if (++ki[i] < x->dims[kept[i]])
                break;
            ki[i] = 0;
        }
    }
}

/* ---- element access for cast and argmax ----------------------------------------- */

static int dt_is_float(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16; }

static float load_f(const void *p, aclDataType dt, uint64_t i)
{
    return dt == ACL_FLOAT ? ((const float *)p)[i] : sim_half_to_float(((const uint16_t *)p)[i]);
}

static int64_t load_i(const void *p, aclDataType dt, uint64_t i)
{
    switch (dt) {
    case ACL_INT32: return ((const int32_t *)p)[i];
    case ACL_INT64: return ((const int64_t *)p)[i];
    case ACL_UINT8: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}

static void store_i(void *p, aclDataType dt, uint64_t i, int64_t v)
{
    switch (dt) {
    case ACL_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case ACL_INT64: ((int64_t *)p)[i] = v; break;
    case ACL_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    default: break;
    }
}

/* float -> integer: truncate toward zero, NaN -> 0, saturate (C leaves it undefined). */
static int64_t f_to_int(float f, aclDataType dt)
{
    double v = f;
    double lo = dt == ACL_INT32 ? -2147483648.0 : dt == ACL_UINT8 ? 0.0 : -9223372036854775808.0;
    double hi = dt == ACL_INT32 ? 2147483647.0 : dt == ACL_UINT8 ? 255.0 : 9223372036854774784.0;
    if (v != v)
        return 0;
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    return (int64_t)trunc(v);
}

static void k_cast(const sim_view *x, const sim_view *y)
{
    uint64_t n = sim_view_elems(x);
    aclDataType s = x->dtype, d = y->dtype;
    if (s == d) {
        memcpy(y->data, x->data, n * aclDataTypeSize(s));
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (dt_is_float(s)) {
            float v = load_f(x->data, s, i);
            if (d == ACL_FLOAT) ((float *)y->data)[i] = v;
            else if (d == ACL_FLOAT16) ((uint16_t *)y->data)[i] = sim_float_to_half(v);
            else store_i(y->data, d, i, f_to_int(v, d));
        } else {
            int64_t v = load_i(x->data, s, i);
            if (d == ACL_FLOAT) ((float *)y->data)[i] = (float)v;
            else if (d == ACL_FLOAT16) ((uint16_t *)y->data)[i] = sim_float_to_half((float)v);
            else store_i(y->data, d, i, v);
        }
    }
}

static void k_argmax(const sim_view *x, const sim_view *y, uint32_t axis)
{
    uint64_t outer, len, inner;
    split_axis(x, axis, &outer, &len, &inner);
    int32_t *Y = y->data;
    int fl = dt_is_float(x->dtype);
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t in = 0; in < inner; in++) {
            uint64_t base = o * len * inner + in, best = 0;
            if (fl) {
                float m = load_f(x->data, x->dtype, base);
                for (uint64_t k = 1; k < len && m == m; k++) {   /* first NaN wins, as numpy */
                    float v = load_f(x->data, x->dtype, base + k * inner);
                    if (v > m || v != v) {
                        m = v;
                        best = k;
                    }
                }
            } else {
                int64_t m = load_i(x->data, x->dtype, base);
                for (uint64_t k = 1; k < len; k++) {
                    int64_t v = load_i(x->data, x->dtype, base + k * inner);
                    if (v > m) {
                        m = v;
                        best = k;
                    }
                }
            }
            Y[o * inner + in] = (int32_t)best;
        }
}

/* ---- layout ops --------------------------------------------------------------------- */

static void k_transpose(const sim_view *x, const sim_view *y, const int64_t *perm)
{
    size_t es = aclDataTypeSize(x->dtype);
    uint32_t R = x->rank;
    uint64_t n = sim_view_elems(x);
    if (R == 0) {
        memcpy(y->data, x->data, es);
        return;
    }
    int64_t xs[SIM_MAX_RANK], ps[SIM_MAX_RANK], idx[SIM_MAX_RANK] = {0};
    int64_t s = 1;
    for (int i = (int)R - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->dims[i];
    }
    for (uint32_t i = 0; i < R; i++)
        ps[i] = xs[perm[i]];
    const char *X = x->data;
    char *Y = y->data;
    int64_t last = y->dims[R - 1], step = ps[R - 1];
    for (uint64_t o = 0; o < n; o += (uint64_t)last) {
        int64_t off = 0;
        for (uint32_t i = 0; i + 1 < R; i++)
            off += idx[i] * ps[i];
        switch (es) {
        case 1: for (int64_t j = 0; j < last; j++) Y[o + j] = X[off + j * step]; break;
        case 2: for (int64_t j = 0; j < last; j++) ((uint16_t *)Y)[o + j] = ((const uint16_t *)X)[off + j * step]; break;
        case 4: for (int64_t j = 0; j < last; j++) ((uint32_t *)Y)[o + j] = ((const uint32_t *)X)[off + j * step]; break;
        default: for (int64_t j = 0; j < last; j++) ((uint64_t *)Y)[o + j] = ((const uint64_t *)X)[off + j * step]; break;
        }
        for (int i = (int)R - 2; i >= 0; i--) {
            if (++idx[i] < y->dims[i])
                break;
            idx[i] = 0;
        }
    }
}

static void k_concat(const sim_op *op, const sim_view *in, const sim_view *y)
{
    size_t es = aclDataTypeSize(y->dtype);
    uint32_t axis = (uint32_t)op->ints[0];
    uint64_t outer = 1;
    for (uint32_t i = 0; i < axis; i++)
        outer *= (uint64_t)y->dims[i];
    char *dst = y->data;
    for (uint64_t o = 0; o < outer; o++)
        for (uint32_t j = 0; j < op->n_inputs; j++) {
            uint64_t chunk = sim_view_elems(&in[j]) / outer * es;
            memcpy(dst, (const char *)in[j].data + o * chunk, chunk);
            dst += chunk;
        }
}

/* ---- dispatch ------------------------------------------------------------------------ */

static void run_float(const sim_op *op, const sim_view *in, const sim_view *out)
{
    switch (op->opcode) {
    case SIM_OP_MATMUL: k_matmul(&in[0], &in[1], out); break;
    case SIM_OP_ADD: k_binary(BIN_ADD, &in[0], &in[1], out); break;
    case SIM_OP_MUL: k_binary(BIN_MUL, &in[0], &in[1], out); break;
    case SIM_OP_RELU: case SIM_OP_GELU: case SIM_OP_SIGMOID: case SIM_OP_TANH:
        k_unary(op->opcode, in[0].data, out->data, sim_view_elems(out));
        break;
    case SIM_OP_SOFTMAX: k_softmax(&in[0], out, (uint32_t)op->ints[0]); break;
    case SIM_OP_LAYERNORM: k_layernorm(&in[0], in[1].data, in[2].data, out, op->floats[0]); break;
    case SIM_OP_MEAN: case SIM_OP_SUM: k_reduce(op, &in[0], out); break;
    default: break;
    }
}

void sim_kernel_run(const sim_op *op, const sim_view *in, const sim_view *out, void *scratch)
{
    switch (op->opcode) {
    case SIM_OP_RESHAPE:
        if (out->data != in[0].data)
            memcpy(out->data, in[0].data, sim_view_elems(out) * aclDataTypeSize(out->dtype));
        return;
    case SIM_OP_TRANSPOSE: k_transpose(&in[0], out, op->ints); return;
    case SIM_OP_CONCAT: k_concat(op, in, out); return;
    case SIM_OP_ARGMAX: k_argmax(&in[0], out, (uint32_t)op->ints[0]); return;
    case SIM_OP_CAST: k_cast(&in[0], out); return;
    default: break;
    }
    if (in[0].dtype != ACL_FLOAT16) {
        run_float(op, in, out);   /* float32, or integer add/mul/sum */
        return;
    }
    /* float16: compute on float32 copies, round the result once */
    char *s = scratch;
    sim_view fin[SIM_MAX_OP_INPUTS], fout = *out;
    for (uint32_t j = 0; j < op->n_inputs; j++) {
        uint64_t n = sim_view_elems(&in[j]);
        fin[j] = in[j];
        fin[j].dtype = ACL_FLOAT;
        fin[j].data = s;
        for (uint64_t i = 0; i < n; i++)
            ((float *)s)[i] = sim_half_to_float(((const uint16_t *)in[j].data)[i]);
        s += (n * 4 + 63) / 64 * 64;
    }
    fout.dtype = ACL_FLOAT;
    fout.data = s;
    run_float(op, fin, &fout);
    uint64_t n = sim_view_elems(out);
    for (uint64_t i = 0; i < n; i++)
        ((uint16_t *)out->data)[i] = sim_float_to_half(((float *)s)[i]);
}
