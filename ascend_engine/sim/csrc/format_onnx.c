/*
 * format_onnx.c -- the ONNX section of a version-3 simulator model
 * (docs/sim-model-format.md, "Version 3: ONNX models").
 *
 * A version-3 model is what `ascend-engine sim atc` writes: its inputs and
 * outputs are described exactly as for the simulator's own models (gears,
 * ascend_mbatch_shape_data, sizes at the largest gear), its data section is
 * an ONNX graph that ONNX Runtime computes (ort_exec.c), and its outputs'
 * shapes at every gear come from a table, because an ONNX graph's output
 * dimensions need not equal a symbol (a stride-4 convolution makes H / 4).
 * A shape-range model has no table: its outputs' -1 dimensions are learnt
 * from each execution (shape_after_run, ort_exec.c).
 */
#include <inttypes.h>
#include <math.h>
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

#define FAIL(...)                        \
    do {                                 \
        snprintf(why, n, __VA_ARGS__);   \
        return 0;                        \
    } while (0)

uint32_t sim_gear_index(const sim_model_info *m, const uint64_t *sym)
{
    if (!sym || !m->gear_vals)
        return UINT32_MAX;
    for (uint32_t g = 0; g < m->n_gears; g++)
        if (memcmp(&m->gear_vals[(size_t)g * m->n_syms], sym, sizeof *sym * m->n_syms) == 0)
            return g;
    return UINT32_MAX;
}

/* The gear at which a table output is largest (the first on ties). */
static uint32_t largest_row(const sim_model_info *m, const sim_io *io)
{
    uint32_t best = 0;
    uint64_t best_e = 0;
    for (uint32_t g = 0; g < m->n_gears; g++) {
        uint64_t e = sim_shape_elems(io->gear_dims + (size_t)g * io->rank, io->rank);
        if (g == 0 || e > best_e) {
            best = g;
            best_e = e;
        }
    }
    return best;
}

void sim_io_dims(const sim_model_info *m, const sim_io *io, const uint64_t *sym, int64_t *out)
{
    if (io->shape_after_run) {
        memcpy(out, io->dims, sizeof *out * io->rank);   /* -1: known after the run */
        return;
    }
    if (!io->gear_dims || !sym) {
        sim_resolve_dims(io->dims, io->rank, sym, out);
        return;
    }
    uint32_t g = sim_gear_index(m, sym);
    if (g == UINT32_MAX)
        g = largest_row(m, io);
    memcpy(out, io->gear_dims + (size_t)g * io->rank, sizeof *out * io->rank);
}

/* A graph output of a shape-range model: fixed dims, or -1 where ONNX
 * Runtime decides the size at run time (the descriptor reports 0 bytes). */
static int range_output(sim_io *io, sim_tensor *t, char *why, size_t n)
{
    io->shape_after_run = 0;
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] == -1)
            io->shape_after_run = 1;
        else if (t->dims[d] < 1)
            FAIL("output '%s': dimension %u is %" PRId64 "; a shape-range ONNX model's outputs have dimensions "
                 ">= 1 or -1 (known after the run)", io->name, d, t->dims[d]);
    }
    t->max_elems = io->shape_after_run ? 0 : sim_shape_elems(t->dims, t->rank);
    if (!io->shape_after_run && t->max_elems == 0 && t->rank > 0)
        FAIL("output '%s' is larger than 2^40 bytes", io->name);
    t->max_bytes = t->max_elems * t->elem_size;
    io->max_bytes = io->size = t->max_bytes;
    memcpy(io->dims, t->dims, sizeof io->dims);
    return 1;
}

/* A graph output of a static model: its dims are its shape. */
static int static_output(sim_tensor *t, const char *name, char *why, size_t n)
{
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->dims[d] < 1)
            FAIL("output '%s': dimension %u is %" PRId64 "; a static ONNX model's outputs have fixed dimensions",
                 name, d, t->dims[d]);
    t->max_elems = sim_shape_elems(t->dims, t->rank);
    if (t->max_elems == 0 && t->rank > 0)
        FAIL("output '%s' is larger than 2^40 bytes", name);
    t->max_bytes = t->max_elems * t->elem_size;
    return 1;
}

int sim_format_read_onnx(sim_model_info *m, const unsigned char *b, size_t size, char *why, size_t n)
{
    uint64_t shape_off = rd64(b + 168), latency_off = rd64(b + 176);
    why[0] = 0;
    if (rd32(b + 164) != 0)
        FAIL("the reserved field at byte 164 must be 0");
    uint64_t n_dims = 0;
    for (uint32_t k = 0; k < m->n_outputs; k++) {
        const sim_tensor *t = &m->tensors[m->outputs[k].tensor];
        if (t->kind != SIM_KIND_GRAPH)
            FAIL("output %u '%s' is tensor '%s', which is not an ONNX graph output (kind 3)", k,
                 m->outputs[k].name, t->name);
        for (uint32_t j = 0; j < k; j++)
            if (m->outputs[j].tensor == m->outputs[k].tensor)
                FAIL("outputs %u and %u name the same graph output tensor '%s'", j, k, t->name);
        n_dims += t->rank;
    }
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        int listed = 0;
        for (uint32_t k = 0; k < m->n_outputs && !listed; k++)
            listed = m->outputs[k].tensor == i;
        if (m->tensors[i].kind == SIM_KIND_GRAPH && !listed)
            FAIL("tensor %u '%s' is a graph output but not in the output list", i, m->tensors[i].name);
    }

    if (m->n_gears == 0) {
        if (shape_off != 0 || latency_off != 0)
            FAIL("a static or shape-range ONNX model has no output shape table or gear times (bytes 168/176 must "
                 "be 0)");
        for (uint32_t k = 0; k < m->n_outputs; k++) {
            sim_io *io = &m->outputs[k];
            sim_tensor *t = &m->tensors[io->tensor];
            if (m->dyn_kind == SIM_DYN_RANGE) {
                if (!range_output(io, t, why, n))
                    return 0;
                continue;
            }
            if (!static_output(t, io->name, why, n))
                return 0;
            io->max_bytes = io->size = t->max_bytes;
        }
        return 1;
    }

    /* gear models: per output, in order, n_gears rows of its dims */
    uint64_t table_bytes = (uint64_t)m->n_gears * n_dims * 8;
    if (!in_range(shape_off, table_bytes, size))
        FAIL("output shape table (byte 168: offset %" PRIu64 ", %u gears x %" PRIu64 " dims) lies outside the model",
             shape_off, m->n_gears, n_dims);
    m->out_gear_dims = malloc(table_bytes ? table_bytes : 8);
    if (!m->out_gear_dims)
        FAIL("out of host memory reading the output shape table");
    for (uint64_t i = 0; i < (uint64_t)m->n_gears * n_dims; i++)
        m->out_gear_dims[i] = (int64_t)rd64(b + shape_off + 8 * i);
    uint64_t at = 0;
    for (uint32_t k = 0; k < m->n_outputs; k++) {
        sim_io *io = &m->outputs[k];
        sim_tensor *t = &m->tensors[io->tensor];
        io->gear_dims = m->out_gear_dims + at;
        at += (uint64_t)m->n_gears * t->rank;
        t->max_elems = 0;
        for (uint32_t g = 0; g < m->n_gears; g++) {
            const int64_t *row = io->gear_dims + (size_t)g * t->rank;
            for (uint32_t d = 0; d < t->rank; d++) {
                if (row[d] < 1)
                    FAIL("output '%s' at gear %u: dimension %u is %" PRId64 ", expected >= 1", io->name, g, d, row[d]);
                if (t->dims[d] >= 1 ? row[d] != t->dims[d] : t->dims[d] != -1)
                    FAIL("output '%s' at gear %u: dimension %u is %" PRId64 " where the tensor record says %" PRId64
                         " (-1: depends on the gear)", io->name, g, d, row[d], t->dims[d]);
            }
            uint64_t e = sim_shape_elems(row, t->rank);
            if (e == 0 && t->rank > 0)
                FAIL("output '%s' at gear %u is larger than 2^40 bytes", io->name, g);
            if (e > t->max_elems)
                t->max_elems = e;
        }
        t->max_bytes = t->max_elems * t->elem_size;
        if (t->max_bytes > SIM_MAX_TENSOR_BYTES)
            FAIL("output '%s' is larger than 2^40 bytes", io->name);
        io->max_bytes = io->size = t->max_bytes;
        memcpy(io->dims, t->dims, sizeof io->dims);
    }

    if (latency_off != 0) {
        if (!in_range(latency_off, (uint64_t)m->n_gears * 8, size))
            FAIL("gear time table (byte 176: offset %" PRIu64 ", %u values) lies outside the model", latency_off,
                 m->n_gears);
        m->gear_latency_us = malloc(sizeof(double) * m->n_gears);
        if (!m->gear_latency_us)
            FAIL("out of host memory reading the gear time table");
        for (uint32_t g = 0; g < m->n_gears; g++) {
            uint64_t u = rd64(b + latency_off + 8 * (uint64_t)g);
            double v;
            memcpy(&v, &u, sizeof v);
            if (!(v >= 0 && v <= SIM_MAX_LATENCY_US))
                FAIL("device time of gear %u (table at byte %" PRIu64 ") must be within 0..6e7 microseconds", g,
                     latency_off);
            m->gear_latency_us[g] = v;
        }
    }
    return 1;
}
