/*
 * topk, argmax and softmax over the last axis (docs/executor.md, "Native steps").
 *
 * A row is `vectors` vectors of `length` float32 values.  topk writes, per
 * vector, the k largest values (outputs[0], float32) and their indices
 * (outputs[1], int32), largest first, ties by lower index; with one output
 * it writes the indices only (argmax is topk with k = 1).  softmax writes
 * exp(x - max) / sum(exp(x - max)) per vector, float32 (the sum in double).
 * A NaN fails the request, naming the row and the vector.
 */
#include "steps.h"

#include <math.h>
#include <stdlib.h>

#define TOPK "topk"
#define SOFTMAX "softmax"

static int check_ctx(const ae_rowwise_ctx *c, const char *kind, char *message, size_t message_size)
{
    if (!c)
        return ae_step_fail(message, message_size, kind, "?", "has no context");
    if (!c->vectors || !c->length || c->length > INT32_MAX)
        return ae_step_fail(message, message_size, kind, c->name, "its context is incomplete");
    return 0;
}

static int nan_at(const ae_rowwise_ctx *c, const char *kind, const float *v, uint64_t r, uint64_t m, char *message,
                  size_t message_size)
{
    for (uint64_t j = 0; j < c->length; j++)
        if (isnan(v[j]))
            return ae_step_fail(message, message_size, kind, c->name, "row %llu vector %llu holds a NaN at %llu",
                                (unsigned long long)r, (unsigned long long)m, (unsigned long long)j);
    return 0;
}

/* The k best of v (length values, no NaN) into val/idx: an insertion into a sorted list of k, so a
 * value displaces only a strictly smaller one and ties keep the lower index. */
static void top_of(const float *v, uint64_t length, uint64_t k, float *val, int32_t *idx)
{
    uint64_t have = 0;
    for (uint64_t j = 0; j < length; j++) {
        float x = v[j];
        if (have == k && !(x > val[k - 1]))
            continue;
        uint64_t at = have < k ? have++ : k - 1;
        while (at > 0 && x > val[at - 1]) {
            val[at] = val[at - 1];
            idx[at] = idx[at - 1];
            at--;
        }
        val[at] = x;
        idx[at] = (int32_t)j;
    }
}

int ae_step_topk(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                 ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message, size_t message_size)
{
    const ae_rowwise_ctx *c = ctx;
    (void)request;
    if (check_ctx(c, TOPK, message, message_size))
        return -1;
    if (!c->k || c->k > c->length)
        return ae_step_fail(message, message_size, TOPK, c->name, "k=%llu is not within 1 to %llu",
                            (unsigned long long)c->k, (unsigned long long)c->length);
    int with_values = n_outputs == 2;
    uint64_t in_bytes[1] = {c->vectors * c->length * 4};
    uint64_t out_bytes[2] = {c->vectors * c->k * 4, c->vectors * c->k * 4};
    if (ae_step_check_io(message, message_size, TOPK, c->name, inputs, n_inputs, 1, in_bytes, outputs, n_outputs,
                         with_values ? 2 : 1, out_bytes))
        return -1;
    uint64_t rows = inputs[0].rows;
    for (int o = 0; o < n_outputs; o++)
        if (outputs[o].rows < rows)
            return ae_step_fail(message, message_size, TOPK, c->name, "%llu rows in, room for %llu",
                                (unsigned long long)rows, (unsigned long long)outputs[o].rows);
    float *scratch = with_values ? NULL : malloc(c->k * sizeof *scratch);
    if (!with_values && !scratch)
        return ae_step_fail(message, message_size, TOPK, c->name, "out of host memory");
    int rc = 0;
    for (uint64_t r = 0; r < rows && !rc; r++)
        for (uint64_t m = 0; m < c->vectors && !rc; m++) {
            uint64_t vec = r * c->vectors + m;
            const float *v = (const float *)inputs[0].data + vec * c->length;
            if (nan_at(c, TOPK, v, r, m, message, message_size)) {
                rc = -1;
                break;
            }
            int32_t *idx = (int32_t *)outputs[with_values ? 1 : 0].data + vec * c->k;
            float *val = with_values ? (float *)outputs[0].data + vec * c->k : scratch;
            top_of(v, c->length, c->k, val, idx);
        }
    free(scratch);
    if (rc)
        return rc;
    *rows_out = rows;
    return 0;
}

int ae_step_softmax(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                    ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message, size_t message_size)
{
    const ae_rowwise_ctx *c = ctx;
    (void)request;
    if (check_ctx(c, SOFTMAX, message, message_size))
        return -1;
    uint64_t bytes[1] = {c->vectors * c->length * 4};
    if (ae_step_check_io(message, message_size, SOFTMAX, c->name, inputs, n_inputs, 1, bytes, outputs, n_outputs, 1,
                         bytes))
        return -1;
    uint64_t rows = inputs[0].rows;
    if (outputs[0].rows < rows)
        return ae_step_fail(message, message_size, SOFTMAX, c->name, "%llu rows in, room for %llu",
                            (unsigned long long)rows, (unsigned long long)outputs[0].rows);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t m = 0; m < c->vectors; m++) {
            uint64_t vec = r * c->vectors + m;
            const float *v = (const float *)inputs[0].data + vec * c->length;
            float *out = (float *)outputs[0].data + vec * c->length;
            if (nan_at(c, SOFTMAX, v, r, m, message, message_size))
                return -1;
            float top = v[0];
            for (uint64_t j = 1; j < c->length; j++)
                top = v[j] > top ? v[j] : top;
            if (isinf(top))
                return ae_step_fail(message, message_size, SOFTMAX, c->name,
                                    "row %llu vector %llu holds an infinite value", (unsigned long long)r,
                                    (unsigned long long)m);
            double sum = 0.0;
            for (uint64_t j = 0; j < c->length; j++) {
                out[j] = expf(v[j] - top);
                sum += out[j];
            }
            float scale = (float)(1.0 / sum);
            for (uint64_t j = 0; j < c->length; j++)
                out[j] *= scale;
        }
    *rows_out = rows;
    return 0;
}
