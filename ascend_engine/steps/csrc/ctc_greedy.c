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

#define KIND "ctc_greedy"

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
            uint64_t best = 0;
            for (uint64_t k = 0; k < c->classes; k++) {
                if (isnan(v[k]))
                    return ae_step_fail(message, message_size, KIND, c->name,
                                        "row %llu step %llu class %llu is NaN", (unsigned long long)r,
                                        (unsigned long long)t, (unsigned long long)k);
                if (v[k] > v[best])
                    best = k;
            }
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
