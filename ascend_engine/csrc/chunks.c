/*
 * chunks.c -- how a model runs a number of rows that a host step produced
 * (see ae_chunk_next in executor.h).  One rule, used by the executor at run
 * time (its upper policy also picks a request's batch gear, enqueue.c) and by
 * the planner (through ae_chunk_span) to size buffers.
 */
#include "ascend_engine/executor.h"

#include <stdlib.h>

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

/*
 * The most rows the chunks of `rows` rows reach, padding included.  With
 * `known` (the reach of every count below rows), the rows after the first
 * chunk are looked up instead of being chunked again.
 */
static uint64_t reach_of(const uint64_t *gears, int n_gears, int policy, uint64_t rows, const uint64_t *known)
{
    uint64_t most = 0;
    for (uint64_t start = 0; start < rows;) {
        uint64_t gear, take;
        ae_chunk_next(gears, n_gears, policy, rows - start, &gear, &take);
        if (start + gear > most)
            most = start + gear;
        start += take;
        if (known && start < rows) {
            if (start + known[rows - start] > most)
                most = start + known[rows - start];
            break;
        }
    }
    return most;
}

/*
 * The chunks depend only on the rows left, and rows at or above the largest
 * gear G run a chunk of exactly G: the chunks of q*G + r rows (r < G) are q
 * chunks of G, then those of r rows, so they reach q*G + reach(r).  For
 * max_rows = Q*G + R the most is then either Q*G + reach(r) for some r <= R,
 * or (Q-1)*G + reach(r) for some r < G; fewer chunks of G reach less.  So
 * only the counts below min(max_rows + 1, G) are chunked, each once, with
 * the reach of the smaller counts at hand: O(min(max_rows, G) x gears).
 */
uint64_t ae_chunk_span(const uint64_t *gears, int n_gears, int policy, uint64_t max_rows)
{
    if (n_gears < 1 || max_rows == 0 || gears[n_gears - 1] == 0)
        return max_rows;   /* no chunks (a largest gear of 0 rows holds none) */
    uint64_t largest = gears[n_gears - 1];
    uint64_t full = max_rows / largest, rest = max_rows % largest;
    uint64_t below = max_rows < largest ? max_rows : largest - 1;
    /* without memory for the table every count is chunked to the end: slower, the same result */
    uint64_t *known = malloc((size_t)(below + 1) * sizeof *known);
    uint64_t most_rest = 0, most_below = 0;   /* the most reach(r) for r <= rest, for r < G */
    if (known)
        known[0] = 0;
    for (uint64_t r = 1; r <= below; r++) {
        uint64_t reach = reach_of(gears, n_gears, policy, r, known);
        if (known)
            known[r] = reach;
        if (r <= rest && reach > most_rest)
            most_rest = reach;
        if (reach > most_below)
            most_below = reach;
    }
    free(known);
    uint64_t span = max_rows;
    if (full * largest + most_rest > span)
        span = full * largest + most_rest;
    if (full >= 1 && (full - 1) * largest + most_below > span)
        span = (full - 1) * largest + most_below;
    return span;
}
