/*
 * chunks.c -- how a model runs a number of rows that a host step produced
 * (see ae_chunk_next in executor.h).  One rule, used by the executor at run
 * time and by the planner (through ae_chunk_span) to size buffers.
 */
#include "ascend_engine/executor.h"

void ae_chunk_next(const uint64_t *gears, int n_gears, int policy, uint64_t left, uint64_t *gear,
                   uint64_t *take)
{
    uint64_t largest = gears[n_gears - 1];
    if (left >= largest) {
        *gear = *take = largest;
        return;
    }
    /* upper: the smallest gear holding every row left; lower: the largest
     * gear that rows fill completely (none when left is below every gear) */
    uint64_t upper = largest, lower = 0;
    for (int g = 0; g < n_gears; g++) {
        if (gears[g] >= left && gears[g] < upper)
            upper = gears[g];
        if (gears[g] <= left && gears[g] > lower)
            lower = gears[g];
    }
    int use_lower = lower && (policy == AE_GEAR_LOWER ||
                              (policy == AE_GEAR_NEAREST && left - lower < upper - left));
    if (use_lower) {
        *gear = *take = lower;
    } else {
        *gear = upper;
        *take = left;
    }
}

uint64_t ae_chunk_span(const uint64_t *gears, int n_gears, int policy, uint64_t max_rows)
{
    uint64_t span = max_rows;
    if (n_gears < 1)
        return span;
    for (uint64_t rows = 1; rows <= max_rows; rows++) {
        uint64_t start = 0;
        while (start < rows) {
            uint64_t gear, take;
            ae_chunk_next(gears, n_gears, policy, rows - start, &gear, &take);
            if (start + gear > span)
                span = start + gear;
            start += take;
        }
    }
    return span;
}
