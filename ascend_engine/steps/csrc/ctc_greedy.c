/*
 * ctc_greedy: CTC greedy (best path) decoding (docs/executor.md, "Native steps").
 *
 * inputs[0]: rows of steps x classes float32 (probabilities or logits).
 * Per step the best class (ties: the lower class); repeats collapse, then
 * the blank is dropped.  outputs[0]: rows of `steps` int32 labels, the
 * decoded ones first, -1 after them; outputs[1]: int32 length per row;
 * outputs[2]: float32 score per row, the mean of the kept steps' best
 * values (0 for an empty text).  A NaN fails the request.
 */
#include "steps.h"

#include <math.h>
#include <string.h>

#define KIND "ctc_greedy"

/* The first index of the largest of v[0..n), or -1 when v holds a NaN.  GCC's vector extensions
 * (SSE on x86, NEON on Arm): ACC independent four-lane vectors, so that no step waits for the one
 * before it, keep each lane's running maximum and where it was first seen; the lanes then agree
 * on the largest value, the lowest index on a tie.  A NaN never compares greater: it is counted. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#define ACC 4

static int64_t argmax(const float *v, uint64_t n)
{
    v4f m[ACC];
    v4i at[ACC], idx[ACC], bad = {0, 0, 0, 0};
    const v4i step = {4 * ACC, 4 * ACC, 4 * ACC, 4 * ACC};
    for (int a = 0; a < ACC; a++) {
        m[a] = (v4f){v[0], v[0], v[0], v[0]};
        at[a] = (v4i){0, 0, 0, 0};
        idx[a] = (v4i){4 * a, 4 * a + 1, 4 * a + 2, 4 * a + 3};
    }
    uint64_t k = 0;
    for (; k + 4 * ACC <= n; k += 4 * ACC)
        for (int a = 0; a < ACC; a++) {
            v4f x;
            memcpy(&x, v + k + 4 * a, sizeof x);
            v4i more = x > m[a];
            bad |= x != x;
            m[a] = (v4f)(((v4i)x & more) | ((v4i)m[a] & ~more));
            at[a] = (idx[a] & more) | (at[a] & ~more);
            idx[a] += step;
        }
    int nan = bad[0] | bad[1] | bad[2] | bad[3];
    float best = v[0];
    int32_t best_at = 0;
    for (int a = 0; a < ACC; a++)
        for (int j = 0; j < 4; j++)
            if (m[a][j] > best || (m[a][j] == best && at[a][j] < best_at)) {
                best = m[a][j];
                best_at = at[a][j];
            }
    for (; k < n; k++) {
        nan |= v[k] != v[k];
        if (v[k] > best) {
            best = v[k];
            best_at = (int32_t)k;
        }
    }
    return nan ? -1 : best_at;
}

int ae_step_ctc_greedy(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                       ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                       size_t message_size)
{
    const ae_ctc_ctx *c = ctx;
    (void)request;
    if (!c)
        return ae_step_fail(message, message_size, KIND, "?", "has no context");
    if (!c->steps || !c->classes || c->classes > INT32_MAX || c->blank < 0 || (uint64_t)c->blank >= c->classes)
        return ae_step_fail(message, message_size, KIND, c->name, "its context is incomplete");
    uint64_t in_bytes[1] = {c->steps * c->classes * 4}, out_bytes[3] = {c->steps * 4, 4, 4};
    if (ae_step_check_io(message, message_size, KIND, c->name, inputs, n_inputs, 1, in_bytes, outputs, n_outputs, 3,
                         out_bytes))
        return -1;
    uint64_t rows = inputs[0].rows;
    for (int o = 0; o < 3; o++)
        if (outputs[o].rows < rows)
            return ae_step_fail(message, message_size, KIND, c->name, "%llu rows in, room for %llu",
                                (unsigned long long)rows, (unsigned long long)outputs[o].rows);
    for (uint64_t r = 0; r < rows; r++) {
        const float *x = (const float *)inputs[0].data + r * c->steps * c->classes;
        int32_t *labels = (int32_t *)outputs[0].data + r * c->steps;
        uint64_t n = 0;
        int64_t previous = -1;
        double sum = 0.0;
        for (uint64_t t = 0; t < c->steps; t++) {
            const float *v = x + t * c->classes;
            int64_t found = argmax(v, c->classes);
            if (found < 0) {
                uint64_t k = 0;
                while (k < c->classes && !isnan(v[k]))
                    k++;
                return ae_step_fail(message, message_size, KIND, c->name, "row %llu step %llu class %llu is NaN",
                                    (unsigned long long)r, (unsigned long long)t, (unsigned long long)k);
            }
            uint64_t best = (uint64_t)found;
            if ((int64_t)best != previous && (int64_t)best != c->blank) {
                labels[n++] = (int32_t)best;
                sum += v[best];
            }
            previous = (int64_t)best;
        }
        for (uint64_t t = n; t < c->steps; t++)
            labels[t] = -1;
        ((int32_t *)outputs[1].data)[r] = (int32_t)n;
        ((float *)outputs[2].data)[r] = n ? (float)(sum / (double)n) : 0.0f;
    }
    *rows_out = rows;
    return 0;
}
