/*
 * timeline.c -- profile plans: the device time of every node and, while a
 * trace is taken, one timeline row per completed request (see
 * ae_engine_trace_begin in executor.h).
 */
#include "executor_internal.h"

#include <stdlib.h>

/* Offset of `ev` from the trace base in ms, or -1 when it cannot be read. */
static double offset_ms(ae_engine *e, aclrtEvent ev)
{
    float ms = 0.0f;
    if (e->acl->aclrtEventElapsedTime(&ms, e->trace_base, ev) != ACL_SUCCESS)
        return -1.0;
    return (double)ms;
}

/* One timeline row for a completed request, while a trace is being taken. */
static void record_timeline(ae_engine *e, slot *sl, uint64_t request)
{
    if (e->trace_count >= e->trace_capacity)
        return;
    int n_nodes = e->plan.n_nodes;
    double *row = e->trace_rows + e->trace_count * (size_t)AE_TRACE_COLUMNS(n_nodes);
    row[0] = offset_ms(e, sl->copy_in_start);
    row[1] = offset_ms(e, sl->inputs_ready);
    for (int n = 0; n < n_nodes; n++) {
        row[2 + 3 * n] = offset_ms(e, sl->node_wait[n]);
        /* a host step: from its inputs reaching the host to its outputs on the device */
        row[3 + 3 * n] = offset_ms(e, e->nodes[n].kind == AE_NODE_HOST ? sl->step_ready[n] : sl->node_start[n]);
        row[4 + 3 * n] = offset_ms(e, sl->node_done[n]);
    }
    row[2 + 3 * n_nodes] = offset_ms(e, sl->copy_out_wait);
    row[3 + 3 * n_nodes] = offset_ms(e, sl->copy_out_start);
    row[4 + 3 * n_nodes] = offset_ms(e, sl->done);
    e->trace_requests[e->trace_count++] = request;
}

void aex_record_profile(ae_engine *e, slot *sl, uint64_t request)
{
    for (int n = 0; n < e->plan.n_nodes; n++) {
        float ms = 0.0f;
        aclrtEvent start = e->nodes[n].kind == AE_NODE_HOST ? sl->step_ready[n] : sl->node_start[n];
        if (e->acl->aclrtEventElapsedTime(&ms, start, sl->node_done[n]) == ACL_SUCCESS)
            e->node_ms[n] += ms;
    }
    record_timeline(e, sl, request);
}

int ae_engine_trace_begin(ae_engine *e, size_t max_requests, ae_error *err)
{
    if (!e->plan.profile)
        return aex_fail(e, err, 0, "ae_engine_trace_begin", NULL,
                    "timelines need timing events: compile the pipeline with profile=True");
    if (ae_engine_flush(e, err) || aex_make_current(e, err) || aex_recover(e, err))
        return -1;
    size_t columns = (size_t)AE_TRACE_COLUMNS(e->plan.n_nodes);
    double *rows = realloc(e->trace_rows, (max_requests ? max_requests : 1) * columns * sizeof(double));
    if (rows)
        e->trace_rows = rows;
    uint64_t *ids = realloc(e->trace_requests, (max_requests ? max_requests : 1) * sizeof(uint64_t));
    if (ids)
        e->trace_requests = ids;
    if (!rows || !ids)
        return aex_fail(e, err, 0, "ae_engine_trace_begin", NULL, "out of host memory for %zu rows",
                    max_requests);
    e->trace_capacity = max_requests;
    e->trace_count = 0;
    /* every later event is recorded after the base completed: offsets are >= 0 */
    ACL_CALL(e, err, NULL, aclrtRecordEvent, e->trace_base, e->copy_in);
    ACL_CALL(e, err, NULL, aclrtSynchronizeEvent, e->trace_base);
    return 0;
}

size_t ae_engine_trace_end(ae_engine *e, const double **rows, const uint64_t **requests)
{
    *rows = e->trace_rows;
    *requests = e->trace_requests;
    size_t count = e->trace_count;
    e->trace_capacity = 0;
    return count;
}
