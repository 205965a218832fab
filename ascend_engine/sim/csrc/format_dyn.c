/*
 * format_dyn.c -- symbolic dimensions in the simulator model file: the
 * dynamic section of a version-2 header (which mechanism, how many symbols,
 * the gear table, the shape ranges), the rules a symbolic dimension obeys in
 * each tensor, and the largest size a tensor reaches over the gears.
 *
 * A version-1 file has at most one symbol, the batch (-1 in dimension 0),
 * with its gears; a version-2 file names the mechanism explicitly:
 *
 *   batch  one symbol, the batch, only ever in dimension 0 (dynamic batch)
 *   hw     two symbols, H and W, in the H and W positions of NCHW / NHWC
 *          inputs (dynamic image size)
 *   dims   any symbols anywhere, each gear gives all of them (dynamic dims)
 *   range  any symbols anywhere, each with [min, max], no gears: the shapes
 *          come with the inputs' tensor descriptions (shape range)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int in_range(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

const char *sim_dyn_kind_name(uint32_t kind)
{
    switch (kind) {
    case SIM_DYN_NONE: return "static";
    case SIM_DYN_BATCH: return "dynamic batch";
    case SIM_DYN_HW: return "dynamic image size";
    case SIM_DYN_DIMS: return "dynamic dims";
    case SIM_DYN_RANGE: return "shape range";
    default: return "unknown";
    }
}

#define FAIL(...)                        \
    do {                                 \
        snprintf(why, n, __VA_ARGS__);   \
        return 0;                        \
    } while (0)

int sim_format_read_dynamic(sim_model_info *m, const unsigned char *b, size_t size, uint32_t version,
                            uint64_t gear_off, char *why, size_t n)
{
    uint64_t range_off = 0;
    why[0] = 0;
    if (version == 1) {
        m->dyn_kind = m->n_gears ? SIM_DYN_BATCH : SIM_DYN_NONE;
        m->n_syms = m->n_gears ? 1 : 0;
    } else {
        m->dyn_kind = rd32(b + 136);
        m->n_syms = rd32(b + 140);
        range_off = rd64(b + 144);
        if (m->dyn_kind >= SIM_DYN_COUNT_)
            FAIL("dynamic kind %u at byte 136 is not 0 (static), 1 (batch), 2 (hw), 3 (dims) or 4 (range)",
                 m->dyn_kind);
        if (m->n_syms > SIM_MAX_SYMS)
            FAIL("symbol count %u at byte 140 is above %d", m->n_syms, SIM_MAX_SYMS);
        uint32_t want = m->dyn_kind == SIM_DYN_BATCH ? 1 : m->dyn_kind == SIM_DYN_HW ? 2 : 0;
        if (m->dyn_kind == SIM_DYN_NONE ? m->n_syms != 0 : want ? m->n_syms != want : m->n_syms < 1)
            FAIL("a %s model cannot have %u symbols (byte 140)", sim_dyn_kind_name(m->dyn_kind), m->n_syms);
    }
    int gear_kind = m->dyn_kind == SIM_DYN_BATCH || m->dyn_kind == SIM_DYN_HW || m->dyn_kind == SIM_DYN_DIMS;
    if (gear_kind ? m->n_gears < 1 : m->n_gears != 0)
        FAIL("a %s model cannot have %u gears (byte 40)", sim_dyn_kind_name(m->dyn_kind), m->n_gears);
    uint64_t n_vals = (uint64_t)m->n_gears * m->n_syms;
    if (!in_range(gear_off, n_vals * 8, size))
        FAIL("gear table (offset %" PRIu64 ", %" PRIu64 " values) lies outside the model", gear_off, n_vals);
    m->gear_vals = calloc(n_vals ? n_vals : 1, sizeof *m->gear_vals);
    if (!m->gear_vals)
        FAIL("out of host memory");
    for (uint64_t i = 0; i < n_vals; i++) {
        uint64_t v = rd64(b + gear_off + 8 * i);
        uint64_t row = i / m->n_syms;
        if (v < 1 || v > SIM_MAX_GEAR_VALUE)
            FAIL("gear %" PRIu64 " (byte %" PRIu64 ") has the value %" PRIu64 ", outside 1..%u", row,
                 gear_off + 8 * i, v, SIM_MAX_GEAR_VALUE);
        if (m->dyn_kind == SIM_DYN_BATCH && row > 0 && v <= m->gear_vals[row - 1])
            FAIL("gear %" PRIu64 " (byte %" PRIu64 ") is %" PRIu64 ": batch gears must increase", row,
                 gear_off + 8 * i, v);
        m->gear_vals[i] = v;
    }
    /* gear rows of HW and dims models are distinct: each names one compiled shape */
    for (uint32_t g = 1; gear_kind && m->dyn_kind != SIM_DYN_BATCH && g < m->n_gears; g++)
        for (uint32_t h = 0; h < g; h++)
            if (!memcmp(&m->gear_vals[(size_t)g * m->n_syms], &m->gear_vals[(size_t)h * m->n_syms],
                        sizeof(uint64_t) * m->n_syms))
                FAIL("gears %u and %u are the same", h, g);
    if (m->dyn_kind == SIM_DYN_BATCH)
        for (uint32_t g = 0; g < m->n_gears; g++)
            m->gears[g] = m->gear_vals[g];
    if (m->dyn_kind == SIM_DYN_RANGE) {
        if (!in_range(range_off, (uint64_t)m->n_syms * 16, size))
            FAIL("range table (offset %" PRIu64 " at byte 144) lies outside the model", range_off);
        for (uint32_t s = 0; s < m->n_syms; s++) {
            int64_t lo = (int64_t)rd64(b + range_off + 16 * s), hi = (int64_t)rd64(b + range_off + 16 * s + 8);
            if (lo < 1 || lo > (int64_t)SIM_MAX_GEAR_VALUE || (hi != -1 && (hi < lo || hi > (int64_t)SIM_MAX_GEAR_VALUE)))
                FAIL("range of symbol %u is [%" PRId64 ", %" PRId64 "]: expected 1 <= min <= max <= %u, or max -1 "
                     "(unbounded)", s, lo, hi, SIM_MAX_GEAR_VALUE);
            m->sym_min[s] = lo;
            m->sym_max[s] = hi;
        }
    }
    return 1;
}

void sim_resolve_dims(const int64_t *dims, uint32_t rank, const uint64_t *sym, int64_t *out)
{
    for (uint32_t i = 0; i < rank; i++)
        out[i] = dims[i] < 0 && sym ? (int64_t)sym[SIM_SYM(dims[i])] : dims[i];
}

uint64_t sim_shape_elems(const int64_t *dims, uint32_t rank)
{
    uint64_t e = 1;
    for (uint32_t i = 0; i < rank; i++)
        if (dims[i] < 1 || __builtin_mul_overflow(e, (uint64_t)dims[i], &e) || e > SIM_MAX_TENSOR_BYTES)
            return 0;
    return e;
}

int sim_format_tensor_dims(const sim_model_info *m, sim_tensor *t, char *why, size_t n)
{
    why[0] = 0;
    t->syms = 0;
    t->batched = 0;
    for (uint32_t d = 0; d < t->rank; d++) {
        int64_t v = t->dims[d];
        if (v >= 1 && (uint64_t)v <= SIM_MAX_TENSOR_BYTES)
            continue;
        if (v >= 0)
            FAIL("dimension %u is %" PRId64 ": expected 1..2^40", d, v);
        if (m->dyn_kind == SIM_DYN_NONE)
            FAIL("dimension %u is %" PRId64 " in a static model (-1 needs batch gears)", d, v);
        if (v < -(int64_t)m->n_syms)
            FAIL("dimension %u is %" PRId64 ": the model has %u symbols (-1..-%u)", d, v, m->n_syms, m->n_syms);
        if (t->kind == SIM_KIND_CONST)
            FAIL("dimension %u is %" PRId64 ": a constant cannot have a dynamic dimension", d, v);
        if (m->dyn_kind == SIM_DYN_BATCH && d != 0)
            FAIL("dimension %u is -1: only dimension 0 may be the batch", d);
        t->syms |= 1u << SIM_SYM(v);
        t->batched |= m->dyn_kind == SIM_DYN_BATCH;
    }
    /* the largest element count over the shapes an execution can have */
    int64_t dims[SIM_MAX_RANK];
    uint64_t best = 0;
    if (!t->syms) {
        best = sim_shape_elems(t->dims, t->rank);
    } else if (m->dyn_kind == SIM_DYN_RANGE) {
        uint64_t hi[SIM_MAX_SYMS];
        int bounded = 1;
        for (uint32_t s = 0; s < m->n_syms; s++) {
            bounded &= !((t->syms >> s) & 1u) || m->sym_max[s] > 0;
            hi[s] = m->sym_max[s] > 0 ? (uint64_t)m->sym_max[s] : 1;
        }
        sim_resolve_dims(t->dims, t->rank, hi, dims);
        if (bounded && !(best = sim_shape_elems(dims, t->rank)))
            FAIL("shape is too large at the upper bounds of its ranges");
        if (!bounded) {
            t->max_elems = t->max_bytes = 0;   /* unbounded: sized per execution */
            return 1;
        }
    } else {
        for (uint32_t g = 0; g < m->n_gears; g++) {
            sim_resolve_dims(t->dims, t->rank, &m->gear_vals[(size_t)g * m->n_syms], dims);
            uint64_t e = sim_shape_elems(dims, t->rank);
            if (!e)
                FAIL("shape is too large at gear %u", g);
            if (e > best)
                best = e;
        }
    }
    if (!best)
        FAIL("shape is too large");
    t->max_elems = best;
    t->max_bytes = best * t->elem_size;
    if (t->max_bytes > SIM_MAX_TENSOR_BYTES)
        FAIL("%" PRIu64 " bytes is too large", t->max_bytes);
    return 1;
}

int sim_format_check_inputs(const sim_model_info *m, char *why, size_t n)
{
    uint32_t seen = 0;
    why[0] = 0;
    for (uint32_t i = 0; i < m->n_file_inputs; i++) {
        const sim_tensor *t = &m->tensors[m->inputs[i].tensor];
        seen |= t->syms;
        if (m->dyn_kind != SIM_DYN_HW || !t->syms)
            continue;
        /* ATC's dynamic image size: -1 exactly at H and W of an NCHW / NHWC input */
        int h = t->format == ACL_FORMAT_NCHW ? 2 : t->format == ACL_FORMAT_NHWC ? 1 : -1;
        int ok = h > 0 && t->rank == 4;
        for (uint32_t d = 0; ok && d < 4; d++)
            ok = (int)d == h ? t->dims[d] == -1 : (int)d == h + 1 ? t->dims[d] == -2 : t->dims[d] >= 1;
        if (!ok)
            FAIL("input %u '%s': a dynamic-image-size input is NCHW or NHWC with H = symbol 0 (-1) and W = "
                 "symbol 1 (-2), nothing else dynamic", i, m->inputs[i].name);
    }
    uint32_t total = 0;
    for (uint32_t i = 0; i < m->n_file_inputs; i++)
        total += m->inputs[i].rank;
    if (m->dyn_kind == SIM_DYN_DIMS && total > ACL_MAX_DIM_CNT)
        FAIL("a dynamic-dims model's inputs have %u dimensions in all, above the %d one aclmdlIODims holds", total,
             ACL_MAX_DIM_CNT);
    uint32_t all = m->n_syms ? (uint32_t)((1ull << m->n_syms) - 1) : 0;
    if (seen != all) {
        if (m->dyn_kind == SIM_DYN_BATCH)
            FAIL("the model has batch gears but no input with a -1 (batch) first dimension");
        for (uint32_t s = 0; s < m->n_syms; s++)
            if (!((seen >> s) & 1u))
                FAIL("symbol %u (dimension value %d) appears in no input: its value could not be known", s,
                     -1 - (int)s);
    }
    return 1;
}
