/*
 * format.h -- the simulator model file: parsed, validated form.
 *
 * The byte layout is documented in docs/sim-model-format.md.  sim_model_parse
 * checks every field before it is used; once it returns ACL_SUCCESS, the
 * kernels can trust every shape, dtype, index and attribute in the result.
 */
#ifndef ASCEND_SIM_FORMAT_H
#define ASCEND_SIM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "ascend_engine/acl.h"

#define SIM_MODEL_MAGIC "AESIMMDL"
#define SIM_MODEL_MAGIC_LEN 8
#define SIM_MODEL_VERSION 4u      /* the newest version read; versions 1 to 3 are read too */

#define SIM_HEADER_SIZE 136u      /* version 1 */
#define SIM_HEADER_SIZE_V2 160u   /* version 2: + the dynamic section fields */
#define SIM_HEADER_SIZE_V3 192u   /* version 3: + the ONNX executor fields */
#define SIM_HEADER_SIZE_V4 208u   /* version 4: + the static AIPP table */
#define SIM_AIPP_RECORD 176u
/* The dynamic AIPP parameter block in the ascend_dynamic_aipp_data input:
 * a 64-byte head (format, switches, source size, matrix, biases) and one
 * 96-byte entry per batch image (crop, padding, mean, min, var_reci), the
 * layout of the AIPP op's parameters (docs/sim-model-format.md, "Version 4:
 * AIPP"); written by aclmdlSetInputAIPP (aipp.c), read at execution
 * (aipp_apply.c). */
#define SIM_AIPP_BLOCK_HEAD 64u
#define SIM_AIPP_BLOCK_BATCH 96u
#define SIM_TENSOR_RECORD 104u
#define SIM_OP_RECORD 192u
#define SIM_IO_RECORD 16u
#define SIM_DATA_ALIGN 64u

#define SIM_MAX_RANK 8
#define SIM_MAX_OP_INPUTS 16
#define SIM_MAX_INTS 8
#define SIM_MAX_FLOATS 4
#define SIM_MAX_NAME 127
#define SIM_MAX_GEARS 128
#define SIM_MAX_GEAR_VALUE (1u << 20)
#define SIM_MAX_TENSORS 65536u
#define SIM_MAX_OPS 65536u
#define SIM_MAX_IO 4096u
#define SIM_MAX_TENSOR_BYTES ((uint64_t)1 << 40)
#define SIM_MAX_LATENCY_US 60e6
#define SIM_MAX_SYMS 32           /* symbolic dimensions of one model */

/* How a model's symbolic dimensions get their values for one execution:
 * one mechanism per model, as ATC builds them (mutually exclusive options). */
enum { SIM_DYN_NONE = 0, SIM_DYN_BATCH = 1, SIM_DYN_HW = 2, SIM_DYN_DIMS = 3, SIM_DYN_RANGE = 4, SIM_DYN_COUNT_ };

/* A dimension below 0 is symbolic: -1 - s stands for symbol s.  The
 * descriptor reports every symbolic dimension as -1. */
#define SIM_SYM(d) ((uint32_t)(-1 - (d)))

/* SIM_KIND_GRAPH: an output of the ONNX graph a version-3 model carries
 * (computed by ONNX Runtime, not by the simulator's ops). */
enum { SIM_KIND_INPUT = 0, SIM_KIND_CONST = 1, SIM_KIND_RESULT = 2, SIM_KIND_GRAPH = 3 };

/* How a model computes: the simulator's own ops, or ONNX Runtime running the
 * ONNX graph stored in the data section (version 3). */
enum { SIM_EXEC_OPS = 0, SIM_EXEC_ONNX = 1 };

enum {
    SIM_OP_MATMUL = 1, SIM_OP_ADD, SIM_OP_MUL, SIM_OP_RELU, SIM_OP_GELU,
    SIM_OP_SIGMOID, SIM_OP_TANH, SIM_OP_SOFTMAX, SIM_OP_LAYERNORM, SIM_OP_RESHAPE,
    SIM_OP_TRANSPOSE, SIM_OP_CONCAT, SIM_OP_ARGMAX, SIM_OP_CAST, SIM_OP_MEAN,
    SIM_OP_SUM, SIM_OP_COUNT_
};

typedef struct sim_tensor {
    char name[SIM_MAX_NAME + 1];
    aclDataType dtype;
    aclFormat format;
    uint32_t kind;
    uint32_t rank;
    int64_t dims[SIM_MAX_RANK];   /* < 0: symbolic (SIM_SYM); -1 is the batch of a batch model */
    int batched;                  /* dims[0] is the batch of a dynamic-batch model */
    uint32_t syms;                /* bit s set: symbol s appears in the shape */
    size_t elem_size;
    uint64_t max_elems;           /* the largest element count over the gears (range models: */
    uint64_t max_bytes;           /* the upper bounds, 0 when a range is unbounded) */
    uint64_t const_offset;        /* constants: offset inside the data section */
    uint64_t work_offset;         /* results: offset inside the work memory */
} sim_tensor;

typedef struct sim_op {
    uint32_t opcode;
    uint32_t n_inputs;
    uint32_t inputs[SIM_MAX_OP_INPUTS];
    uint32_t output;
    uint32_t n_ints, n_floats;
    int64_t ints[SIM_MAX_INTS];
    double floats[SIM_MAX_FLOATS];
    uint64_t scratch_bytes;       /* float32 scratch this op needs at the largest gear */
} sim_op;

/* One input's static AIPP (docs/sim-model-format.md, "Version 4: AIPP"): the
 * uint8 source image the input takes, and how the AIPP unit turns it into
 * the model tensor it feeds (aipp_apply.c). */
typedef struct sim_aipp {
    uint32_t input;               /* the file input it belongs to */
    uint32_t tensor;              /* the model tensor the AIPP output fills */
    aclAippInputFormat format;    /* ACL_YUV420SP_U8, ACL_XRGB8888_U8, ACL_RGB888_U8 or ACL_YUV400_U8 */
    int32_t src_w, src_h;
    int8_t crop, padding, csc, rbuv_swap, ax_swap;
    int32_t crop_x, crop_y, crop_w, crop_h;
    int32_t pad_left, pad_right, pad_top, pad_bottom;
    int32_t matrix[9], in_bias[3], out_bias[3], mean[4];
    float min[4], var_reci[4], pad_value;
    int nhwc;                     /* the model tensor's layout */
    int64_t n, c, h, w;           /* the model tensor's dims */
    uint64_t image_bytes;         /* one source image */
    int dynamic;                  /* mode 2: the settings come from the parameter block at run time */
    uint64_t max_src_bytes;       /* dynamic: the input's bytes (max_src_image_size) */
    uint32_t data_input;          /* dynamic: the index of the ascend_dynamic_aipp_data input */
} sim_aipp;

typedef struct sim_io {
    uint32_t tensor;              /* UINT32_MAX for the synthesized ascend_mbatch_shape_data input */
    char name[SIM_MAX_NAME + 1];
    aclFormat format;
    aclDataType dtype;
    uint32_t rank;
    int64_t dims[SIM_MAX_RANK];
    uint64_t max_bytes;           /* shape x dtype at the largest gear */
    uint64_t size;                /* what the descriptor reports: max_bytes, exact; 0 with a shape range */
    const int64_t *gear_dims;     /* ONNX gear models' outputs: n_gears rows of rank dims (the */
                                  /* output shape at each gear), else NULL */
    int shape_after_run;          /* ONNX shape-range models' outputs with -1 dims: the shape is */
                                  /* known only once ONNX Runtime has run (ort_exec.c) */
    const sim_aipp *aipp;         /* inputs with static AIPP: dtype, dims and size are the source */
                                  /* image's (aclmdlGetInputDimsV2's NHWC dims), else NULL */
} sim_io;

typedef struct sim_model_info {
    char name[SIM_MAX_NAME + 1];
    uint32_t n_tensors, n_ops, n_inputs, n_outputs, n_gears;
    sim_tensor *tensors;
    sim_op *ops;
    sim_io *inputs;               /* n_inputs entries, the dynamic input last when n_gears > 0 */
    sim_io *outputs;
    uint32_t n_file_inputs;       /* inputs stored in the file (without ascend_mbatch_shape_data) */
    uint32_t dyn_kind;            /* SIM_DYN_* */
    uint32_t n_syms;              /* symbols 0..n_syms-1 */
    uint64_t gears[SIM_MAX_GEARS];   /* batch models: the batch gears */
    uint64_t *gear_vals;          /* gear models: n_gears rows of n_syms symbol values */
    int64_t sym_min[SIM_MAX_SYMS], sym_max[SIM_MAX_SYMS];   /* range models; max -1: unbounded */
    double latency_us, latency_per_item_us;
    uint64_t data_off, data_size; /* the constants section in the file */
    uint64_t work_size;           /* results + scratch at the largest gear (range models: 0, */
                                  /* their work memory is sized per execution) */
    uint64_t scratch_offset;      /* scratch area inside the work memory */
    uint64_t weight_size;         /* = data_size */
    uint32_t executor;            /* SIM_EXEC_*: ONNX models keep the ONNX graph in the data section */
    int64_t *out_gear_dims;       /* ONNX gear models: the output shapes per gear (sim_io.gear_dims) */
    double *gear_latency_us;      /* n_gears device times, one per gear, or NULL */
    sim_aipp *aipp;               /* version 4: n_aipp static AIPP inputs, else NULL */
    uint32_t n_aipp;
} sim_model_info;

/* Parse and validate a model image.  On failure returns 145006 (not a
 * simulator model: bad magic, or truncated, as CANN 9.1 answers for a bad
 * magic or length) or 100013 (unsupported version / malformed) after
 * recording a message naming `fn`; *out is untouched. */
aclError sim_model_parse(const char *fn, const void *bytes, size_t size, sim_model_info **out);
void sim_model_info_free(sim_model_info *info);
/* format_ops.c: check one op of a partly parsed model (its inputs and output
 * tensors already validated); the problem goes to `why`, empty if none. */
void sim_format_check_op(const sim_model_info *m, const sim_op *op, char *why, size_t n);

/* format_dyn.c: the dynamic section of a version-2 header (kind, symbols,
 * gears, ranges) -- fills m->dyn_kind, n_syms, gear_vals, sym_min/max and,
 * for batch models, gears.  On failure: the problem in `why`, 0 returned. */
int sim_format_read_dynamic(sim_model_info *m, const unsigned char *b, size_t size, uint32_t version,
                            uint64_t gear_off, char *why, size_t n);
/* Checks a tensor's symbolic dims against the model's kind and computes its
 * largest element count (max_elems: over the gears, or the range bounds). */
int sim_format_tensor_dims(const sim_model_info *m, sim_tensor *t, char *why, size_t n);
/* After the tensors are read: every symbol must appear in an input, and the
 * inputs of a dynamic-image-size model carry the H and W symbols. */
int sim_format_check_inputs(const sim_model_info *m, char *why, size_t n);
/* The concrete shape of a tensor for symbol values `sym` (NULL: static). */
void sim_resolve_dims(const int64_t *dims, uint32_t rank, const uint64_t *sym, int64_t *out);
/* Elements of a concrete shape; 0 when it overflows SIM_MAX_TENSOR_BYTES. */
uint64_t sim_shape_elems(const int64_t *dims, uint32_t rank);
const char *sim_dyn_kind_name(uint32_t kind);

/* format_onnx.c: the ONNX section of a version-3 header (after the inputs and
 * outputs are read): checks the output shape table and the per-gear device
 * times and fills the outputs' sizes.  On failure: the problem in `why`, 0. */
int sim_format_read_onnx(sim_model_info *m, const unsigned char *b, size_t size, char *why, size_t n);
/* The gear row index of symbol values `sym` (UINT32_MAX: not a gear). */
uint32_t sim_gear_index(const sim_model_info *m, const uint64_t *sym);
/* An input's or output's shape at symbol values `sym`: the gear's row for
 * table outputs (the largest gear's when sym is no gear); sym NULL: the
 * record's dims, symbolic ones negative. */
void sim_io_dims(const sim_model_info *m, const sim_io *io, const uint64_t *sym, int64_t *out);

/* format_aipp.c: the static AIPP table of a version-4 header (after the
 * inputs are read): checks every record against ATC's rules and the model
 * tensor it feeds, then describes each AIPP input as its source image.  On
 * failure: the problem in `why`, 0 returned. */
int sim_format_read_aipp(sim_model_info *m, const unsigned char *b, size_t size, char *why, size_t n);
/* The model-side view of input `io`: the tensor an AIPP input feeds (for
 * ONNX Runtime); a copy of *io for any other input. */
void sim_aipp_model_io(const sim_model_info *m, const sim_io *io, sim_io *out);
/* The settings of a (or of one batch image of a dynamic) AIPP against its
 * tensor (a->n, c, h, w set): ranges, the crop inside the source, the even
 * YUV420SP rules, the channels and the output size; sets image_bytes.  On
 * failure: the rule in `why`, 0 returned. */
int sim_aipp_check(sim_aipp *a, char *why, size_t n);
/* aipp_apply.c: batch image `b`'s settings from a dynamic parameter block of
 * `len` bytes, checked against the tensor of `model` (sim_aipp_check).
 * ACL_ERROR_GE_AIPP_BATCH_EMPTY when aclmdlSetInputAIPP never wrote it,
 * ACL_ERROR_GE_PARAM_INVALID for another problem (in err). */
aclError sim_aipp_from_block(const sim_aipp *model, const unsigned char *block, size_t len, uint64_t b,
                             sim_aipp *out, char *err, size_t n);
/* aclmdlGetInputDims' dims of an AIPP input: the image's n, h, w, channels. */
void sim_aipp_image_dims(const sim_aipp *a, int64_t dims[4]);
/* aipp_apply.c: the model tensor (a->n x c x h x w, float32 or float16 in
 * the tensor's layout) from the source images at `image`. */
void sim_aipp_apply(const sim_aipp *a, aclDataType dtype, const unsigned char *image, void *out);

/* The dtypes model tensors may have (float32, float16, int32, uint8, int64). */
int sim_model_dtype_ok(int32_t dtype);
const char *sim_dtype_name(aclDataType dtype);
const char *sim_op_name(uint32_t opcode);

#endif /* ASCEND_SIM_FORMAT_H */
