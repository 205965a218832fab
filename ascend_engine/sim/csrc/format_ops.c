/*
 * format_ops.c -- the per-op half of the model parser: re-derives each op's
 * output dtype and shape from its inputs and attributes (numpy rules, with
 * symbolic dimensions -- the batch, H and W, dims -- as opaque sizes: one
 * matches itself or 1) so that a model whose declared shapes disagree is
 * rejected at load instead of reaching the kernels.  No op reduces,
 * normalizes, concatenates or takes a softmax / argmax along a symbolic axis.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"

static int is_float(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16; }

static void shape_str(const int64_t *dims, uint32_t rank, char *buf, size_t n)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, n, "(");
    for (uint32_t i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %" PRId64 : "%" PRId64, dims[i]);
    if (used < n)
        snprintf(buf + used, n - used, ")");
}

/* numpy broadcasting where a symbolic dimension only matches itself or 1. */
static int broadcast(const sim_tensor *a, const sim_tensor *b, int64_t *out, uint32_t *out_rank)
{
    uint32_t n = a->rank > b->rank ? a->rank : b->rank;
    for (uint32_t i = 0; i < n; i++) {
        int64_t da = (int64_t)i + a->rank >= n ? a->dims[i + a->rank - n] : 1;
        int64_t db = (int64_t)i + b->rank >= n ? b->dims[i + b->rank - n] : 1;
        if (da == db) out[i] = da;
        else if (da == 1) out[i] = db;
        else if (db == 1) out[i] = da;
        else return 0;
    }
    *out_rank = n;
    return 1;
}

/* Check one op against its inputs and declared output; the text of the
 * problem goes to `why` (empty on success). */
void sim_format_check_op(const sim_model_info *m, const sim_op *op, char *why, size_t n)
{
    const sim_tensor *in[SIM_MAX_OP_INPUTS];
    const sim_tensor *out = &m->tensors[op->output];
    int64_t dims[SIM_MAX_RANK] = {0};
    uint32_t rank = 0;
    aclDataType dtype;
    why[0] = 0;
    for (uint32_t i = 0; i < op->n_inputs; i++)
        in[i] = &m->tensors[op->inputs[i]];
    const sim_tensor *x = in[0];
    dtype = x->dtype;

    /* arity and attribute counts */
    uint32_t want_in = 1, want_ints = 0, want_floats = 0;
    switch (op->opcode) {
    case SIM_OP_MATMUL: case SIM_OP_ADD: case SIM_OP_MUL: want_in = 2; break;
    case SIM_OP_LAYERNORM: want_in = 3; want_floats = 1; break;
    case SIM_OP_SOFTMAX: case SIM_OP_ARGMAX: want_ints = 1; break;
    case SIM_OP_CONCAT: want_in = op->n_inputs; want_ints = 1; break;
    case SIM_OP_TRANSPOSE: want_ints = x->rank; break;
    case SIM_OP_MEAN: case SIM_OP_SUM: want_ints = op->n_ints; break;
    default: break;
    }
    if (op->n_inputs != want_in || op->n_inputs < 1) {
        snprintf(why, n, "takes %u inputs, has %u", want_in, op->n_inputs);
        return;
    }
    if (op->n_ints != want_ints || op->n_floats != want_floats) {
        snprintf(why, n, "takes %u integer and %u float attributes, has %u and %u", want_ints,
                 want_floats, op->n_ints, op->n_floats);
        return;
    }

    switch (op->opcode) {
    case SIM_OP_MATMUL: {
        const sim_tensor *a = in[0], *b = in[1];
        if (!is_float(a->dtype) || a->dtype != b->dtype) {
            snprintf(why, n, "needs two float32 or two float16 operands, got %s and %s",
                     sim_dtype_name(a->dtype), sim_dtype_name(b->dtype));
            return;
        }
        if (a->rank < 2 || b->rank < 2) {
            snprintf(why, n, "needs operands of rank >= 2, got %u and %u", a->rank, b->rank);
            return;
        }
        int64_t k1 = a->dims[a->rank - 1], k2 = b->dims[b->rank - 2];
        if (k1 != k2) {
            snprintf(why, n, "inner dimensions differ: %" PRId64 " vs %" PRId64, k1, k2);
            return;
        }
        if (b->dims[b->rank - 1] < 1 && m->dyn_kind == SIM_DYN_BATCH) {
            snprintf(why, n, "the batch cannot be the N dimension");
            return;
        }
        if (a->rank > 2 || b->rank > 2) {
            sim_tensor ab = *a, bb = *b;
            ab.rank -= 2;
            bb.rank -= 2;
            if (!broadcast(&ab, &bb, dims, &rank)) {
                snprintf(why, n, "batch dimensions do not broadcast");
                return;
            }
        }
        dims[rank++] = a->dims[a->rank - 2];
        dims[rank++] = b->dims[b->rank - 1];
        break;
    }
    case SIM_OP_ADD: case SIM_OP_MUL:
        if (in[0]->dtype != in[1]->dtype) {
            snprintf(why, n, "operands must have one dtype, got %s and %s",
                     sim_dtype_name(in[0]->dtype), sim_dtype_name(in[1]->dtype));
            return;
        }
        if (!broadcast(in[0], in[1], dims, &rank)) {
            snprintf(why, n, "operand shapes do not broadcast");
            return;
        }
        break;
    case SIM_OP_RELU: case SIM_OP_GELU: case SIM_OP_SIGMOID: case SIM_OP_TANH:
    case SIM_OP_SOFTMAX: case SIM_OP_LAYERNORM:
        if (!is_float(x->dtype)) {
            snprintf(why, n, "needs a float32 or float16 input, got %s", sim_dtype_name(x->dtype));
            return;
        }
        rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        if (op->opcode == SIM_OP_SOFTMAX) {
            if (x->rank < 1 || op->ints[0] < 0 || op->ints[0] >= (int64_t)x->rank ||
                x->dims[op->ints[0]] < 0) {
                snprintf(why, n, "axis %" PRId64 " is invalid for rank %u%s", op->ints[0], x->rank,
                         x->batched ? " (axis 0 is the batch)" : " (not along a dynamic dimension)");
                return;
            }
        }
        if (op->opcode == SIM_OP_LAYERNORM) {
            int64_t d = x->rank ? x->dims[x->rank - 1] : -1;
            if (d < 1) {
                snprintf(why, n, "needs a last axis that is not the batch or another dynamic dimension");
                return;
            }
            for (int i = 1; i < 3; i++)
                if (in[i]->dtype != x->dtype || in[i]->rank != 1 || in[i]->dims[0] != d) {
                    snprintf(why, n, "%s must be %s of shape (%" PRId64 ")", i == 1 ? "gamma" : "beta",
                             sim_dtype_name(x->dtype), d);
                    return;
                }
            if (!(op->floats[0] >= 0 && isfinite(op->floats[0]))) {
                snprintf(why, n, "eps must be finite and >= 0");
                return;
            }
        }
        break;
    case SIM_OP_RESHAPE: {
        /* shape comes from the declared output; element counts must agree */
        rank = out->rank;
        memcpy(dims, out->dims, sizeof dims);
        if (x->batched != out->batched) {
            snprintf(why, n, "must keep the batch dimension first on both sides");
            return;
        }
        /* the same symbols on both sides, and the same product of the fixed dims */
        uint64_t a = 1, b = 1;
        int cnt[SIM_MAX_SYMS] = {0};
        for (uint32_t i = 0; i < x->rank; i++) {
            if (x->dims[i] < 0)
                cnt[SIM_SYM(x->dims[i])]++;
            else
                a *= (uint64_t)x->dims[i];   /* <= max_elems <= 2^40 */
        }
        for (uint32_t i = 0; i < out->rank; i++) {
            if (out->dims[i] < 0)
                cnt[SIM_SYM(out->dims[i])]--;
            else
                b *= (uint64_t)out->dims[i];
        }
        for (uint32_t s = 0; s < SIM_MAX_SYMS; s++)
            if (cnt[s]) {
                snprintf(why, n, "the dynamic dimension %d appears %s in the output than in the input", -1 - (int)s,
                         cnt[s] > 0 ? "fewer times" : "more times");
                return;
            }
        if (a != b) {
            snprintf(why, n, "element counts differ: %" PRIu64 " vs %" PRIu64 " per item", a, b);
            return;
        }
        break;
    }
    case SIM_OP_TRANSPOSE: {
        unsigned seen = 0;
        for (uint32_t i = 0; i < x->rank; i++) {
            int64_t p = op->ints[i];
            if (p < 0 || p >= (int64_t)x->rank || (seen >> p) & 1u) {
                snprintf(why, n, "perm is not a permutation of 0..%u", x->rank - 1);
                return;
            }
            seen |= 1u << p;
            dims[i] = x->dims[p];
        }
        if (x->batched && op->ints[0] != 0) {
            snprintf(why, n, "perm[0] must be 0 for a batched input");
            return;
        }
        rank = x->rank;
        break;
    }
    case SIM_OP_CONCAT: {
        int64_t ax = op->ints[0];
        if (x->rank < 1 || ax < 0 || ax >= (int64_t)x->rank) {
            snprintf(why, n, "axis %" PRId64 " is invalid for rank %u", ax, x->rank);
            return;
        }
        rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        dims[ax] = 0;
        for (uint32_t i = 0; i < op->n_inputs; i++) {
            const sim_tensor *t = in[i];
            if (t->dtype != x->dtype || t->rank != x->rank) {
                snprintf(why, n, "input %u differs in dtype or rank from input 0", i);
                return;
            }
            for (uint32_t d = 0; d < x->rank; d++)
                if ((int64_t)d != ax && t->dims[d] != x->dims[d]) {
                    snprintf(why, n, "input %u differs from input 0 in dimension %u", i, d);
                    return;
                }
            if (t->dims[ax] < 1) {
                snprintf(why, n, "cannot concatenate along the batch axis or another dynamic dimension");
                return;
            }
            dims[ax] += t->dims[ax];   /* each <= 2^40, at most 16 of them */
        }
        break;
    }
    case SIM_OP_ARGMAX: {
        int64_t ax = op->ints[0];
        if (x->rank < 1 || ax < 0 || ax >= (int64_t)x->rank || x->dims[ax] < 0) {
            snprintf(why, n, "axis %" PRId64 " is invalid for rank %u%s", ax, x->rank,
                     x->batched ? " (axis 0 is the batch)" : " (not along a dynamic dimension)");
            return;
        }
        for (uint32_t i = 0; i < x->rank; i++)
            if ((int64_t)i != ax)
                dims[rank++] = x->dims[i];
        dtype = ACL_INT32;
        break;
    }
    case SIM_OP_CAST:
        rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        dtype = out->dtype;
        break;
    case SIM_OP_MEAN: case SIM_OP_SUM: {
        if (op->opcode == SIM_OP_MEAN ? !is_float(x->dtype) : x->dtype == ACL_UINT8) {
            snprintf(why, n, "does not support %s", sim_dtype_name(x->dtype));
            return;
        }
        if (op->n_ints < 2 || op->n_ints > SIM_MAX_INTS || (op->ints[0] != 0 && op->ints[0] != 1)) {
            snprintf(why, n, "needs attributes [keepdims 0/1, axis...] with 1..7 axes");
            return;
        }
        unsigned axes = 0;
        for (uint32_t i = 1; i < op->n_ints; i++) {
            int64_t a = op->ints[i];
            if (a < 0 || a >= (int64_t)x->rank || (i > 1 && a <= op->ints[i - 1]) || x->dims[a] < 0) {
                snprintf(why, n, "axes must be increasing, in 0..%d and not the batch axis or another dynamic "
                         "dimension", (int)x->rank - 1);
                return;
            }
            axes |= 1u << a;
        }
        for (uint32_t i = 0; i < x->rank; i++) {
            if ((axes >> i) & 1u) {
                if (op->ints[0])
                    dims[rank++] = 1;
            } else {
                dims[rank++] = x->dims[i];
            }
        }
        break;
    }
    default:
        snprintf(why, n, "unknown opcode");
        return;
    }

    int ok = out->dtype == dtype && out->rank == rank;
    for (uint32_t i = 0; ok && i < rank; i++)
        ok = out->dims[i] == dims[i];
    if (!ok) {
        char want[160], got[160];
        shape_str(dims, rank, want, sizeof want);
        shape_str(out->dims, out->rank, got, sizeof got);
        snprintf(why, n, "output tensor '%s' should be %s %s, is declared %s %s", out->name,
                 sim_dtype_name(dtype), want, sim_dtype_name(out->dtype), got);
    }
}

