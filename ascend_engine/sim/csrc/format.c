/*
 * format.c -- parser for the simulator model file (docs/sim-model-format.md).
 *
 * Every length, offset, index, count, dtype, shape and attribute is checked
 * before use, and every op's output shape is re-derived from its inputs, so
 * that the kernels never see an inconsistent graph.  Nothing is read outside
 * [bytes, bytes + size), whatever the input.
 */
#include "format.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define PARSE_FAIL(...)                                                   \
    do {                                                                  \
        rc = sim_error(ACL_ERROR_PARSE_MODEL, fn, "invalid simulator model: " __VA_ARGS__); \
        goto fail;                                                        \
    } while (0)

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static double rdf64(const unsigned char *p)
{
    uint64_t u = rd64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

int sim_model_dtype_ok(int32_t dtype)
{
    return dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_INT32 || dtype == ACL_UINT8 ||
           dtype == ACL_INT64;
}

const char *sim_dtype_name(aclDataType dtype)
{
    switch (dtype) {
    case ACL_FLOAT: return "float32";
    case ACL_FLOAT16: return "float16";
    case ACL_INT32: return "int32";
    case ACL_UINT8: return "uint8";
    case ACL_INT64: return "int64";
    default: return "unsupported";
    }
}

static const char *const op_names[SIM_OP_COUNT_] = {
    "?", "matmul", "add", "mul", "relu", "gelu", "sigmoid", "tanh", "softmax", "layernorm",
    "reshape", "transpose", "concat", "argmax", "cast", "mean", "sum",
};

const char *sim_op_name(uint32_t opcode)
{
    return opcode > 0 && opcode < SIM_OP_COUNT_ ? op_names[opcode] : "unknown";
}

/* A [off, off + len) range inside a buffer of `size` bytes, without overflow. */
static int in_range(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

/* Well-formed UTF-8 without control characters: names end up in messages
 * and in callers' strings, which must be able to decode them. */
static int name_ok(const unsigned char *s, uint32_t len)
{
    for (uint32_t i = 0; i < len;) {
        unsigned char c = s[i];
        uint32_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 4;
        if (n == 4 || (n == 1 && c < 0xc2) || (n == 3 && c > 0xf4) || i + n >= len + (n ? 0 : 1))
            return 0;
        if (n == 0 && (c < 0x20 || c == 0x7f))
            return 0;
        uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1fu) : n == 2 ? (c & 0x0fu) : (c & 0x07u);
        for (uint32_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += n + 1;
    }
    return 1;
}

/* Copy a name out of the string table; returns 0 if invalid. */
static int read_name(const unsigned char *base, uint64_t strings_off, uint64_t strings_size,
                     uint32_t off, uint32_t len, char *out)
{
    if (len < 1 || len > SIM_MAX_NAME || !in_range(off, len, strings_size))
        return 0;
    const unsigned char *s = base + strings_off + off;
    if (!name_ok(s, len))
        return 0;
    memcpy(out, s, len);
    out[len] = 0;
    return 1;
}

static uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

void sim_model_info_free(sim_model_info *info)
{
    if (!info)
        return;
    free(info->tensors);
    free(info->ops);
    free(info->inputs);
    free(info->outputs);
    free(info->gear_vals);
    free(info->out_gear_dims);
    free(info->gear_latency_us);
    free(info->aipp);
    free(info);
}

aclError sim_model_parse(const char *fn, const void *bytes, size_t size, sim_model_info **out)
{
    const unsigned char *b = bytes;
    aclError rc;
    sim_model_info *m = NULL;
    uint8_t *defined = NULL;   /* per tensor: 1 once available to ops */
    uint8_t *listed = NULL;

    if (size < SIM_MODEL_MAGIC_LEN) {
        if (memcmp(b, SIM_MODEL_MAGIC, size) == 0)
            return sim_error(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn,
                             "invalid simulator model: truncated: %zu bytes, the magic number alone is %d", size,
                             SIM_MODEL_MAGIC_LEN);
    }
    if (size < SIM_MODEL_MAGIC_LEN || memcmp(b, SIM_MODEL_MAGIC, SIM_MODEL_MAGIC_LEN) != 0) {
        unsigned char head[4] = {0};
        memcpy(head, b, size < 4 ? size : 4);
        return sim_error(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn,
                         "not a simulator model (the file starts with %02x %02x %02x %02x, expected magic "
                         "\"%s\"): the AscendCL simulator runs only models written by ascend_engine.sim.Graph; "
                         "a real .om model needs the acl backend (ASCEND_ENGINE_BACKEND=acl on a machine "
                         "with CANN)", head[0], head[1], head[2], head[3], SIM_MODEL_MAGIC);
    }
    if (size < 16)
        return sim_error(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn, "invalid simulator model: truncated header: "
                         "%zu bytes", size);
    uint32_t version = rd32(b + 8), header_size = rd32(b + 12);
    if (version < 1 || version > SIM_MODEL_VERSION)
        return sim_error(ACL_ERROR_PARSE_MODEL, fn,
                         "simulator model version %u is not supported (this simulator reads versions 1 to %u; "
                         "rebuild the model with this ascend_engine)", version, SIM_MODEL_VERSION);
    uint32_t want_header = version == 1   ? SIM_HEADER_SIZE
                           : version == 2 ? SIM_HEADER_SIZE_V2
                           : version == 3 ? SIM_HEADER_SIZE_V3
                                          : SIM_HEADER_SIZE_V4;
    if (header_size != want_header)
        return sim_error(ACL_ERROR_PARSE_MODEL, fn,
                         "invalid simulator model: header size %u at byte 12, expected %u for version %u",
                         header_size, want_header, version);
    if (size < want_header)
        return sim_error(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn, "invalid simulator model: truncated header: %zu of %u bytes",
                         size, want_header);

    m = calloc(1, sizeof *m);
    if (!m)
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory parsing the model");

    uint64_t file_size = rd64(b + 16);
    if (file_size != size) {   /* a length problem: CANN 9.1's code for a model of the wrong size */
        rc = sim_error(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn, "invalid simulator model: the header (byte "
                       "16) says %" PRIu64 " bytes, the model has %zu (truncated or corrupted)", file_size, size);
        goto fail;
    }
    m->n_tensors = rd32(b + 24);
    m->n_ops = rd32(b + 28);
    m->n_inputs = rd32(b + 32);
    m->n_outputs = rd32(b + 36);
    m->n_gears = rd32(b + 40);
    uint32_t name_off = rd32(b + 44), name_len = rd32(b + 48);
    uint64_t tensor_off = rd64(b + 56), op_off = rd64(b + 64), io_off = rd64(b + 72), gear_off = rd64(b + 80);
    uint64_t str_off = rd64(b + 88), str_size = rd64(b + 96);
    m->data_off = rd64(b + 104);
    m->data_size = rd64(b + 112);
    m->latency_us = rdf64(b + 120);
    m->latency_per_item_us = rdf64(b + 128);

    if (m->n_tensors < 1 || m->n_tensors > SIM_MAX_TENSORS)
        PARSE_FAIL("tensor count %u at byte 24 is outside 1..%u", m->n_tensors, SIM_MAX_TENSORS);
    if (m->n_ops > SIM_MAX_OPS)
        PARSE_FAIL("op count %u at byte 28 is above %u", m->n_ops, SIM_MAX_OPS);
    if (m->n_inputs > SIM_MAX_IO)
        PARSE_FAIL("input count %u at byte 32 is above %u", m->n_inputs, SIM_MAX_IO);
    if (m->n_outputs < 1 || m->n_outputs > SIM_MAX_IO)
        PARSE_FAIL("output count %u at byte 36 is outside 1..%u", m->n_outputs, SIM_MAX_IO);
    if (m->n_gears > SIM_MAX_GEARS)
        PARSE_FAIL("gear count %u at byte 40 is above %u", m->n_gears, SIM_MAX_GEARS);
    if (!in_range(tensor_off, (uint64_t)m->n_tensors * SIM_TENSOR_RECORD, size))
        PARSE_FAIL("tensor table (offset %" PRIu64 ", %u records) lies outside the %zu-byte model", tensor_off,
                   m->n_tensors, size);
    if (!in_range(op_off, (uint64_t)m->n_ops * SIM_OP_RECORD, size))
        PARSE_FAIL("op table (offset %" PRIu64 ", %u records) lies outside the model", op_off, m->n_ops);
    if (!in_range(io_off, ((uint64_t)m->n_inputs + m->n_outputs) * SIM_IO_RECORD, size))
        PARSE_FAIL("input/output table (offset %" PRIu64 ") lies outside the model", io_off);
    if (!in_range(str_off, str_size, size))
        PARSE_FAIL("string table (offset %" PRIu64 ", %" PRIu64 " bytes) lies outside the model", str_off, str_size);
    if (!in_range(m->data_off, m->data_size, size) || m->data_off % SIM_DATA_ALIGN)
        PARSE_FAIL("data section (offset %" PRIu64 ", %" PRIu64 " bytes) lies outside the model or is not "
                   "%u-byte aligned", m->data_off, m->data_size, SIM_DATA_ALIGN);
    if (!(m->latency_us >= 0 && m->latency_us <= SIM_MAX_LATENCY_US) ||
        !(m->latency_per_item_us >= 0 && m->latency_per_item_us <= SIM_MAX_LATENCY_US))
        PARSE_FAIL("latency_us / latency_per_item_us at bytes 120/128 must be within 0..6e7");
    if (!read_name(b, str_off, str_size, name_off, name_len, m->name))
        PARSE_FAIL("model name (string %u+%u, header byte 44) is empty, too long, outside the string table or "
                   "is not UTF-8 text without control characters", name_off, name_len);

    char dwhy[512];
    if (!sim_format_read_dynamic(m, b, size, version, gear_off, dwhy, sizeof dwhy))
        PARSE_FAIL("%s", dwhy);
    if (version >= 3) {
        /* version 3: the data section is an ONNX graph that ONNX Runtime runs (format_onnx.c);
         * version 4 (static AIPP) holds either kind of model */
        m->executor = rd32(b + 160);
        if (m->executor != SIM_EXEC_ONNX && !(version == 4 && m->executor == SIM_EXEC_OPS))
            PARSE_FAIL("executor %u at byte 160 is not %s", m->executor,
                       version == 3 ? "1 (ONNX graph)" : "0 (simulator ops) or 1 (ONNX graph)");
        if (m->executor == SIM_EXEC_ONNX && m->n_ops != 0)
            PARSE_FAIL("an ONNX model has no simulator ops, the header (byte 28) says %u", m->n_ops);
        if (m->executor == SIM_EXEC_ONNX && m->data_size == 0)
            PARSE_FAIL("the data section of an ONNX model (bytes 104/112) is empty: it holds the ONNX graph");
        if (m->executor == SIM_EXEC_OPS && (rd32(b + 164) || rd64(b + 168) || rd64(b + 176)))
            PARSE_FAIL("a model of simulator ops has no ONNX tables: header bytes 164..183 must be 0");
        if (!in_range(rd32(b + 184), rd32(b + 188), str_size))
            PARSE_FAIL("the conversion command (string %u+%u, header byte 184) lies outside the string table",
                       rd32(b + 184), rd32(b + 188));
    }

    m->tensors = calloc(m->n_tensors, sizeof *m->tensors);
    m->ops = calloc(m->n_ops ? m->n_ops : 1, sizeof *m->ops);
    m->inputs = calloc((size_t)m->n_inputs + 1, sizeof *m->inputs);
    m->outputs = calloc(m->n_outputs, sizeof *m->outputs);
    defined = calloc(m->n_tensors, 1);
    listed = calloc(m->n_tensors, 1);
    if (!m->tensors || !m->ops || !m->inputs || !m->outputs || !defined || !listed) {
        rc = sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory parsing the model");
        goto fail;
    }

    uint64_t work = 0;
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const unsigned char *r = b + tensor_off + (uint64_t)i * SIM_TENSOR_RECORD;
        uint64_t at = tensor_off + (uint64_t)i * SIM_TENSOR_RECORD;
        sim_tensor *t = &m->tensors[i];
        if (!read_name(b, str_off, str_size, rd32(r), rd32(r + 4), t->name))
            PARSE_FAIL("tensor %u (record at byte %" PRIu64 "): bad name reference (outside the string table, empty, longer than 127 bytes or not UTF-8 text)", i, at);
        t->dtype = (aclDataType)(int32_t)rd32(r + 8);
        t->format = (aclFormat)(int32_t)rd32(r + 12);
        t->kind = rd32(r + 16);
        t->rank = rd32(r + 20);
        if (!sim_model_dtype_ok(t->dtype))
            PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): unsupported dtype %d", i, t->name, at + 8, (int)t->dtype);
        if (t->format != ACL_FORMAT_NCHW && t->format != ACL_FORMAT_NHWC && t->format != ACL_FORMAT_ND)
            PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): unsupported format %d", i, t->name, at + 12, (int)t->format);
        if (t->kind > SIM_KIND_GRAPH)
            PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): unknown kind %u", i, t->name, at + 16, t->kind);
        if ((t->kind == SIM_KIND_GRAPH) != (m->executor == SIM_EXEC_ONNX && t->kind != SIM_KIND_INPUT))
            PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): kind %u; %s", i, t->name, at + 16, t->kind,
                       m->executor == SIM_EXEC_ONNX ? "an ONNX model has only inputs (0) and graph outputs (3)"
                                                    : "kind 3 (ONNX graph output) needs a version-3 ONNX model");
        if (t->rank > SIM_MAX_RANK)
            PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): rank %u above %d", i, t->name, at + 20, t->rank, SIM_MAX_RANK);
        t->elem_size = aclDataTypeSize(t->dtype);
        for (uint32_t d = 0; d < SIM_MAX_RANK; d++) {
            int64_t v = (int64_t)rd64(r + 24 + 8 * d);
            if (d >= t->rank && v != 0)
                PARSE_FAIL("tensor %u '%s': unused dimension %u is %" PRId64 ", expected 0", i, t->name, d, v);
            t->dims[d] = v;
        }
        /* graph outputs' shapes come with the ONNX section (sim_format_read_onnx) */
        if (t->kind != SIM_KIND_GRAPH && !sim_format_tensor_dims(m, t, dwhy, sizeof dwhy))
            PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): %s", i, t->name, at + 24, dwhy);
        uint64_t doff = rd64(r + 88), dsize = rd64(r + 96);
        if (t->kind == SIM_KIND_CONST) {
            if (doff < m->data_off || !in_range(doff - m->data_off, dsize, m->data_size) || doff % SIM_DATA_ALIGN ||
                dsize != t->max_bytes)
                PARSE_FAIL("constant %u '%s' (byte %" PRIu64 "): data at %" PRIu64 "+%" PRIu64 " must be %" PRIu64
                           " bytes, %u-byte aligned, inside the data section", i, t->name, at + 88, doff, dsize,
                           t->max_bytes, SIM_DATA_ALIGN);
            t->const_offset = doff - m->data_off;
            defined[i] = 1;
        } else {
            if (doff != 0 || dsize != 0)
                PARSE_FAIL("tensor %u '%s' (byte %" PRIu64 "): only constants have data", i, t->name, at + 88);
            if (t->kind == SIM_KIND_INPUT || t->kind == SIM_KIND_GRAPH) {
                defined[i] = 1;
            } else if (m->dyn_kind != SIM_DYN_RANGE) {
                /* range models lay their work memory out per execution */
                t->work_offset = work;
                work = align64(work + t->max_bytes);   /* <= 65536 * 2^40: no overflow */
            }
        }
    }

    /* inputs and outputs */
    for (uint32_t i = 0; i < m->n_inputs + m->n_outputs; i++) {
        const unsigned char *r = b + io_off + (uint64_t)i * SIM_IO_RECORD;
        int is_in = i < m->n_inputs;
        uint32_t k = is_in ? i : i - m->n_inputs;
        sim_io *io = is_in ? &m->inputs[k] : &m->outputs[k];
        const char *what = is_in ? "input" : "output";
        io->tensor = rd32(r);
        io->format = (aclFormat)(int32_t)rd32(r + 12);
        if (io->tensor >= m->n_tensors)
            PARSE_FAIL("%s %u (byte %" PRIu64 "): tensor index %u out of range (%u tensors)", what, k,
                       io_off + (uint64_t)i * SIM_IO_RECORD, io->tensor, m->n_tensors);
        if (!read_name(b, str_off, str_size, rd32(r + 4), rd32(r + 8), io->name))
            PARSE_FAIL("%s %u: bad name reference", what, k);
        if (io->format != ACL_FORMAT_NCHW && io->format != ACL_FORMAT_NHWC && io->format != ACL_FORMAT_ND)
            PARSE_FAIL("%s %u '%s': unsupported format %d", what, k, io->name, (int)io->format);
        const sim_tensor *t = &m->tensors[io->tensor];
        if (is_in) {
            if (t->kind != SIM_KIND_INPUT || listed[io->tensor])
                PARSE_FAIL("input %u '%s': tensor %u is not an input tensor or is listed twice", k, io->name,
                           io->tensor);
            if (strcmp(io->name, ACL_DYNAMIC_TENSOR_NAME) == 0)
                PARSE_FAIL("input %u: the name %s is reserved", k, ACL_DYNAMIC_TENSOR_NAME);
            listed[io->tensor] = 1;
        }
        for (uint32_t j = 0; j < k; j++)
            if (strcmp((is_in ? m->inputs : m->outputs)[j].name, io->name) == 0)
                PARSE_FAIL("%s %u: name '%s' is used twice", what, k, io->name);
        io->dtype = t->dtype;
        io->rank = t->rank;
        memcpy(io->dims, t->dims, sizeof io->dims);
        io->max_bytes = t->max_bytes;
        /* exact, as CANN reports it (no allocation padding); 0 for -1 dims of a shape range */
        io->size = t->max_bytes;   /* range models: the product of the range maxima (0: unbounded), as CANN 9.1 */
    }
    m->n_file_inputs = m->n_inputs;
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].kind == SIM_KIND_INPUT && !listed[i])
            PARSE_FAIL("tensor %u '%s' is an input tensor but not in the input list", i, m->tensors[i].name);
    if (!sim_format_check_inputs(m, dwhy, sizeof dwhy))
        PARSE_FAIL("%s", dwhy);
    if (m->executor == SIM_EXEC_ONNX && !sim_format_read_onnx(m, b, size, dwhy, sizeof dwhy))
        PARSE_FAIL("%s", dwhy);
    if (version >= 4 && !sim_format_read_aipp(m, b, size, dwhy, sizeof dwhy))
        PARSE_FAIL("%s", dwhy);

    /* ops, in order: every input must be available, every result produced once */
    uint64_t scratch = 0;
    for (uint32_t i = 0; i < m->n_ops; i++) {
        const unsigned char *r = b + op_off + (uint64_t)i * SIM_OP_RECORD;
        uint64_t at = op_off + (uint64_t)i * SIM_OP_RECORD;
        sim_op *op = &m->ops[i];
        op->opcode = rd32(r);
        op->n_inputs = rd32(r + 4);
        op->output = rd32(r + 8);
        op->n_ints = rd32(r + 12);
        op->n_floats = rd32(r + 16);
        if (op->opcode < 1 || op->opcode >= SIM_OP_COUNT_)
            PARSE_FAIL("op %u (byte %" PRIu64 "): unknown opcode %u", i, at, op->opcode);
        const char *oname = sim_op_name(op->opcode);
        if (op->n_inputs < 1 || op->n_inputs > SIM_MAX_OP_INPUTS || op->n_ints > SIM_MAX_INTS ||
            op->n_floats > SIM_MAX_FLOATS)
            PARSE_FAIL("op %u (%s, byte %" PRIu64 "): %u inputs, %u ints, %u floats exceed 1..%d / %d / %d", i, oname,
                       at, op->n_inputs, op->n_ints, op->n_floats, SIM_MAX_OP_INPUTS, SIM_MAX_INTS, SIM_MAX_FLOATS);
        for (uint32_t j = 0; j < op->n_inputs; j++) {
            op->inputs[j] = rd32(r + 24 + 4 * j);
            if (op->inputs[j] >= m->n_tensors || !defined[op->inputs[j]])
                PARSE_FAIL("op %u (%s): input %u is tensor %u, which %s", i, oname, j, op->inputs[j],
                           op->inputs[j] >= m->n_tensors ? "does not exist" : "is not computed before this op");
        }
        for (uint32_t j = 0; j < op->n_ints; j++)
            op->ints[j] = (int64_t)rd64(r + 88 + 8 * j);
        for (uint32_t j = 0; j < op->n_floats; j++)
            op->floats[j] = rdf64(r + 152 + 8 * j);
        if (op->output >= m->n_tensors || m->tensors[op->output].kind != SIM_KIND_RESULT || defined[op->output])
            PARSE_FAIL("op %u (%s): output tensor %u is not an op result or is computed twice", i, oname, op->output);
        char why[640];
        sim_format_check_op(m, op, why, sizeof why);
        if (why[0])
            PARSE_FAIL("op %u (%s, byte %" PRIu64 ") computing '%s': %s", i, oname, at,
                       m->tensors[op->output].name, why);
        defined[op->output] = 1;
        /* float16 ops run on float32 copies of their operands */
        uint64_t need = 0;
        int float_op = op->opcode <= SIM_OP_LAYERNORM || op->opcode == SIM_OP_MEAN || op->opcode == SIM_OP_SUM;
        if (float_op && m->tensors[op->inputs[0]].dtype == ACL_FLOAT16 && m->dyn_kind != SIM_DYN_RANGE) {
            for (uint32_t j = 0; j < op->n_inputs; j++)
                need += align64(m->tensors[op->inputs[j]].max_elems * 4);
            need += align64(m->tensors[op->output].max_elems * 4);
        }
        op->scratch_bytes = need;
        if (need > scratch)
            scratch = need;
    }
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (!defined[i])
            PARSE_FAIL("tensor %u '%s' is an op result that no op computes", i, m->tensors[i].name);

    m->scratch_offset = work;
    m->work_size = work + scratch;
    if (m->executor == SIM_EXEC_ONNX) {
        /* ONNX Runtime keeps its own intermediates; aclmdlQuerySize reports the work memory ATC
         * planned for them (byte 152), never 0 as no real converted model does; a file without
         * one: its inputs' and outputs' bytes */
        m->work_size = rd64(b + 152);
        for (uint32_t i = 0; m->work_size == 0 && i < m->n_tensors; i++)
            m->work_size += align64(m->tensors[i].max_bytes);
        if (m->work_size == 0)
            m->work_size = 64;
    }
    m->weight_size = m->data_size;
    if (m->work_size > SIM_MAX_TENSOR_BYTES)
        PARSE_FAIL("the model needs %" PRIu64 " bytes of work memory, too much", m->work_size);

    /* the gear models' ascend_mbatch_shape_data input, as on the NPU: last, int64, one value per dynamic
     * dimension the setter writes (batch 1, H and W 2, dims: every -1 of the inputs) */
    if (m->n_gears > 0) {
        uint32_t count = m->dyn_kind == SIM_DYN_HW ? 2 : 1;
        if (m->dyn_kind == SIM_DYN_DIMS) {
            count = 0;
            for (uint32_t i = 0; i < m->n_file_inputs; i++)
                for (uint32_t d = 0; d < m->inputs[i].rank; d++)
                    count += m->inputs[i].dims[d] < 0;
        }
        sim_io *d = &m->inputs[m->n_inputs++];
        d->tensor = UINT32_MAX;
        snprintf(d->name, sizeof d->name, "%s", ACL_DYNAMIC_TENSOR_NAME);
        d->format = ACL_FORMAT_ND;
        d->dtype = ACL_INT64;
        d->rank = 1;
        d->dims[0] = count;
        d->max_bytes = 8u * count;
        d->size = d->max_bytes;
    }
    free(defined);
    free(listed);
    *out = m;
    return ACL_SUCCESS;

fail:
    free(defined);
    free(listed);
    sim_model_info_free(m);
    return rc;
}
