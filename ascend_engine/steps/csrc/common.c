/* What every native step shares: its one error path and the check of its tensors (steps.h). */
#include "steps.h"

#include <stdarg.h>
#include <stdio.h>

int ae_step_fail(char *message, size_t message_size, const char *kind, const char *node, const char *fmt, ...)
{
    if (!message || !message_size)
        return -1;
    int used = snprintf(message, message_size, "%s '%s': ", kind, node);
    if (used < 0 || (size_t)used >= message_size)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message + used, message_size - (size_t)used, fmt, ap);
    va_end(ap);
    return -1;
}

int ae_step_check_io(char *message, size_t message_size, const char *kind, const char *node,
                     const ae_host_tensor *inputs, int n_inputs, int want_inputs, const uint64_t *in_bytes,
                     const ae_host_tensor *outputs, int n_outputs, int want_outputs, const uint64_t *out_bytes)
{
    if (n_inputs != want_inputs || n_outputs != want_outputs || !inputs || !outputs)
        return ae_step_fail(message, message_size, kind, node, "takes %d input(s) and %d output(s), got %d and %d",
                            want_inputs, want_outputs, n_inputs, n_outputs);
    for (int i = 0; i < n_inputs; i++)
        if (in_bytes[i] && inputs[i].row_bytes != in_bytes[i])
            return ae_step_fail(message, message_size, kind, node,
                                "input %d has %zu bytes per row, the plan says %llu", i, inputs[i].row_bytes,
                                (unsigned long long)in_bytes[i]);
    for (int o = 0; o < n_outputs; o++)
        if (out_bytes[o] && outputs[o].row_bytes != out_bytes[o])
            return ae_step_fail(message, message_size, kind, node,
                                "output %d has %zu bytes per row, the plan says %llu", o, outputs[o].row_bytes,
                                (unsigned long long)out_bytes[o]);
    return 0;
}
