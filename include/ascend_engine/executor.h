/*
 * executor.h -- the pipelined multi-stream executor's C interface.
 *
 * Python (pipeline.py) validates the graph and plans everything: which
 * stream each model runs on, where every tensor lives inside a slot's device
 * region, how large each buffer must be.  It hands the result over as an
 * ae_plan; ae_engine_create() turns it into AscendCL objects once (streams,
 * events, one device arena, pinned host staging, datasets), and the run
 * functions only enqueue work on them: no allocation, no Python, no GIL.
 *
 * Request r runs in slot r % depth.  Per request: inputs are copied into the
 * slot's pinned staging, H2D on the copy-in stream, then every node (on the
 * stream of its instance r % instances) waits on the events of its
 * producers that run on other streams, sets its gear,
 * executes and records its event; the copy-out stream waits for the output
 * producers, copies D2H and records the slot's done event.  Results are
 * delivered in submission order, only after the done event completed.
 *
 * An engine is not re-entrant; callers serialize (the Cython layer holds a
 * lock).  Every entry point makes the plan's context current first.
 */
#ifndef ASCEND_ENGINE_EXECUTOR_H
#define ASCEND_ENGINE_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "ascend_engine/acl.h"
#include "ascend_engine/loader.h"
#include "ascend_engine/dvpp_limits.h"   /* AE_IMAGE_MAX_BOXES and the other DVPP limits */

#ifdef __cplusplus
extern "C" {
#endif

#define AE_NAME_MAX 64
#define AE_MESSAGE_MAX 1024
#define AE_MAX_IO 64          /* pipeline inputs or outputs at most */
#define AE_NO_REQUEST UINT64_MAX  /* ae_error.request when no request is to blame */
#define AE_INTERRUPTED (-2)       /* returned when the caller's poll function stopped a wait */
#define AE_REQUEST_FAILED (-3)    /* the completed request failed on its own (a host step):
                                     err names it; nothing else was cancelled */
#define AE_ROWS_REQUEST (-1)      /* a tensor's rows are the request's rows (see ae_tensor_plan) */

/* Node kinds. */
#define AE_NODE_MODEL 0
#define AE_NODE_HOST 1
#define AE_NODE_COPY 2            /* a tensor copied to another device (see ae_node_copy) */
#define AE_NODE_IMAGE 3           /* DVPP work on pictures (see ae_node_image) */

/* What an image node does (ae_node_image.op). */
#define AE_IMAGE_DECODE 0         /* JPEG bytes (a pipeline input) -> NV12 picture */
#define AE_IMAGE_RESIZE 1         /* NV12 picture -> NV12 picture of width x height */
#define AE_IMAGE_CROP_RESIZE 2    /* NV12 picture + boxes (a host step's rows) -> one picture per box */

/* How a model picks its gear for a number of rows between two gears (rows
 * produced by a host step; see ae_chunk_next). */
#define AE_GEAR_UPPER 0           /* pad up to the smallest gear that fits */
#define AE_GEAR_LOWER 1           /* run the largest gear that fits, then the rest */
#define AE_GEAR_NEAREST 2         /* whichever of the two is closer (upper on a tie) */

/* The dynamic mechanism of a model node (ae_node_plan.shape.dyn_kind). */
#define AE_DYN_BATCH 0            /* dynamic batch (or static): gears are batch sizes */
#define AE_DYN_HW 1               /* dynamic image size: per request (height, width) */
#define AE_DYN_DIMS 2             /* dynamic dims: per request the flattened dims of a gear */

/* What went wrong, for the Python layer to turn into an exception. */
typedef struct ae_error {
    aclError code;                 /* AscendCL code, or 0 for engine-level errors */
    char function[AE_NAME_MAX];    /* the AscendCL call that failed */
    char node[AE_NAME_MAX];        /* the pipeline node it was for, "" if none */
    char message[AE_MESSAGE_MAX];  /* what the engine and AscendCL said */
    uint64_t request;              /* the request that failed, or AE_NO_REQUEST */
} ae_error;

/* A tensor of the pipeline (a pipeline input or a node output). */
typedef struct ae_tensor_plan {
    size_t row_bytes;   /* bytes of one batch row (dims[1:] x item size) */
    size_t offset;      /* byte offset inside a slot's device region */
    size_t capacity;    /* bytes reserved there (>= every user's descriptor size) */
    /* Whose rows it carries: AE_ROWS_REQUEST (the request's), or the index
     * of the host step with rows "any" that produced its row count. */
    int domain;
    int device;         /* index into the plan's devices of the device holding it */
} ae_tensor_plan;

/*
 * Host steps.  A host node runs a function on the host between models: the
 * executor copies the rows of its inputs to pinned host memory (D2H on the
 * step's own stream, after the producers' events), one of the step's worker
 * threads calls the function, and the rows it wrote are copied back (H2D)
 * for the nodes that read them; the nodes after the step are enqueued only
 * then (by the worker), so a model after a step with rows "any" picks its
 * gear from the rows the step produced.
 *
 * The function's contract (native steps implement it in C; Python steps go
 * through the Cython layer's trampoline):
 *   inputs[i].data holds inputs[i].rows rows of inputs[i].row_bytes bytes;
 *   outputs[o].data has room for outputs[o].rows rows (the step's max_rows,
 *   or the input rows for a step with rows "same"); the function writes
 *   every output's rows and stores their count (the same for every output)
 *   in *rows_out.  Returns 0, or nonzero with a message (NUL-terminated, at
 *   most message_size bytes) which fails this request alone.  It runs on an
 *   engine-owned thread with the plan's context current, never with the
 *   engine's lock held, and may run for several requests at once when the
 *   step has several workers.
 */
typedef struct ae_host_tensor {
    void *data;
    uint64_t rows;
    size_t row_bytes;
} ae_host_tensor;

typedef int (*ae_host_fn)(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                          ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                          size_t message_size);

/*
 * The host step the planner inserts before a crop_resize whose boxes are a
 * model output (docs/executor.md, "Image nodes"): inputs[0] holds rows of K
 * boxes of 4 values (row_bytes = K * 16, int32 or float32, copied as they
 * are); the function writes them as rows * K output rows of 4 values and
 * sets *rows_out.  More boxes than outputs[0].rows (the step's max_rows, the
 * crop's max_boxes) fail the request with a message naming the node; ctx is
 * that node's name (a NUL-terminated string, or NULL).
 */
int ae_rows_to_boxes(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                     ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                     size_t message_size);

/*
 * A step that changes shapes.  In a plan with dynamic-shape nodes (see
 * ae_request_shape) a step may read tensors whose size changes per request
 * and write outputs whose trailing dimensions it chooses per request (crops
 * resized to a recognizer's width gear, say).  Such a step has an
 * ae_host_reshape_fn (host.reshape_fn) instead of an ae_host_fn (host.fn):
 * the same contract, plus `shape`, the request's sizes as its slot holds them (NULL in a plan without
 * dynamic-shape nodes).  The function sets the bytes per row of its outputs
 * and of every tensor after it, and the gear of every node after it; it
 * writes each output's rows at the bytes per row it set.  Before going on
 * the executor checks every value against the plan: one that does not fit
 * fails this request alone.
 */
#define AE_MAX_GEAR_DIMS 128      /* values of one node's gear at most (ACL_MAX_DIM_CNT) */
typedef struct ae_shape_edit {
    size_t *row_bytes;            /* n_tensors: this request's bytes per row of each tensor */
    int64_t *gear_dims;           /* node n's gear: gear_count[n] values from n * AE_MAX_GEAR_DIMS */
    int *gear_count;              /* n_nodes */
    int n_tensors;
    int n_nodes;
} ae_shape_edit;

typedef int (*ae_host_reshape_fn)(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                                  ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out,
                                  ae_shape_edit *shape, char *message, size_t message_size);

/* A model node (AE_NODE_MODEL): the model it executes and how its gear is
 * set.  dyn_index is -1 for every other node (its inputs are all tensors). */
typedef struct ae_node_model {
    uint32_t id;                /* the model id of instance 0 */
    const uint32_t *ids;        /* instances > 1: every instance's (ids[0] == id) */
    int dyn_index;              /* index of ACL_DYNAMIC_TENSOR_NAME among the inputs, or -1 */
    size_t dyn_offset;          /* its buffer inside a slot's device region */
    size_t dyn_size;
    int n_gears;                /* ascending gears of a dynamic model */
    const uint64_t *gears;
    uint64_t static_batch;      /* batch a static model was built for (0: dynamic) */
} ae_node_model;

/* A host step (AE_NODE_HOST): its function (the ae_host_fn contract above),
 * one of fn and reshape_fn, and the rows it returns.  Its inputs and outputs are
 * tensors; the node's stream is the step's own copy stream for its inputs
 * (D2H, queued when the request is submitted), results_stream the one for its
 * results (H2D, queued once the function has run): on one stream a result
 * would wait behind the input copies of every later request already queued
 * (docs/executor.md, "Host steps"). */
typedef struct ae_node_host {
    ae_host_fn fn;
    ae_host_reshape_fn reshape_fn;  /* set instead of fn for a step that changes shapes */
    void *ctx;
    int rows_any;               /* the step sets its outputs' row count (up to max_rows) */
    uint64_t max_rows;          /* rows_any: most rows it may return */
    int workers;                /* threads running the step (at least 1) */
    int results_stream;         /* compute stream of its results' copies and its event */
} ae_node_host;

/* A copy between devices (AE_NODE_COPY): inputs[0] (on another device) into
 * outputs[0] (on the node's device) on its stream, device to device with peer
 * access; or, when bridge_stream >= 0, through pinned host memory: D2H on
 * bridge_stream (a stream of the source device), then H2D on its own stream. */
typedef struct ae_node_copy {
    int bridge_stream;
} ae_node_copy;

/*
 * An image node (AE_NODE_IMAGE): DVPP work on its own stream and channel.
 * inputs[0] is the picture it reads (for a decode: a pipeline input holding
 * one JPEG, whose bytes are the request's row bytes of that tensor), and a
 * crop_resize reads its boxes from inputs[1], rows of four int32 pixels or
 * float32 fractions (x0, y0, x1, y1; x1, y1 excluded) written by a host step:
 * the executor reads them from the step's staging when it enqueues the node.
 * outputs[0] is NV12 (YUV420SP) at width x height, width a multiple of 16 and
 * height even, so the layout is the VPC's and the AIPP's alike; a crop_resize
 * writes one such picture per box (rows of its output, in the boxes' domain).
 * A decode writes the JPEG's own size (width x height here are the largest
 * it accepts); requests whose JPEG is unreadable, of another kind, larger or
 * not whole fail at submission, naming the node.  Pictures, regions and
 * configurations are created per slot at compile; the arena is DVPP memory.
 */
typedef struct ae_node_image {
    int op;                     /* AE_IMAGE_* */
    uint32_t width, height;     /* the output picture's size (a decode: the largest JPEG) */
    uint32_t max_boxes;         /* crop_resize: boxes per request at most (<= AE_IMAGE_MAX_BOXES) */
    int boxes_float;            /* crop_resize: boxes are float32 fractions (else int32 pixels) */
    uint32_t interpolation;     /* acldvppSetResizeConfigInterpolation: 0 default, 1 bilinear, 2 nearest */
} ae_node_image;

/* A model node's dynamic shapes.  An AE_DYN_HW or AE_DYN_DIMS node
 * ("shaped") takes its gear per request from ae_engine_submit_timed
 * (model.n_gears may be 0), or from the step before it that changed the
 * request's shapes; plans with such nodes take requests through that call
 * only.  A shaped node running rows a step with rows "any" produced executes
 * model.static_batch rows at a time (its model's fixed first dimension),
 * every chunk at the gear.
 *
 * An AE_DYN_DIMS node running a host step's rows whose first dimension is
 * itself a dims gear dimension (static_batch 0) has dims gears over its rows:
 * every gear of the model, dims_count values each (the flattened dims of its
 * inputs, as the request's gear gives them), and where the inputs' rows sit
 * among those values.  Each chunk runs a gear that agrees with the request's
 * gear everywhere but the rows, at the rows ae_chunk_next picks from those
 * gears' rows (under gear_policy). */
typedef struct ae_node_shape {
    int dyn_kind;               /* AE_DYN_* */
    int n_dims_gears;
    int dims_count;
    const int64_t *dims_gears;  /* n_dims_gears x dims_count */
    int n_row_dims;
    const int *row_dims;
} ae_node_shape;

/* One node of the pipeline: what every kind has, then one part per kind
 * (only the part of its kind is read, but model.dyn_index, which is -1 for
 * the others).
 *
 * A model node may run on several instances of its model (loaded k times,
 * sharing one copy of the weights), each bound to its own compute stream:
 * request r runs on instance r % instances, so no model id ever executes on
 * two streams.  model.id and stream are instance 0; with instances > 1,
 * model.ids / streams list every instance (the first equal to them). */
typedef struct ae_node_plan {
    char name[AE_NAME_MAX];
    int kind;                   /* AE_NODE_* */
    int stream;                 /* index of its compute stream */
    int instances;              /* 0 or 1: one instance; k > 1: model.ids/streams hold k */
    const int *streams;
    int n_inputs;               /* a model's inputs include the dynamic-batch input */
    const int *inputs;          /* tensor per input; -1 at model.dyn_index */
    int n_outputs;
    const int *outputs;         /* tensor per output */
    int domain;                 /* whose rows the node runs on (AE_ROWS_REQUEST or a host step) */
    /* The device (index into the plan's devices) the node runs on: its
     * stream, event and buffers are that device's. */
    int device;
    ae_node_model model;
    ae_node_host host;
    ae_node_copy copy;
    ae_node_shape shape;
    ae_node_image image;
} ae_node_plan;

typedef struct ae_plan {
    aclrtContext context;       /* every object is created in this context */
    int32_t device_id;
    int depth;                  /* request slots */
    int n_streams;              /* compute streams */
    int single_stream;          /* copies share compute stream 0 (for comparison) */
    int profile;                /* time every node with timing events */
    int32_t timeout_ms;         /* longest wait for one request; -1 forever */
    int n_tensors;
    const ae_tensor_plan *tensors;
    int n_nodes;                /* in topological order */
    const ae_node_plan *nodes;
    int n_inputs;
    const int *input_tensors;
    int n_outputs;
    const int *output_tensors;
    size_t slot_bytes;          /* device bytes of one slot's region */
    uint64_t max_batch;         /* largest batch one request may carry */
    int spin_wait;              /* poll for completion instead of sleeping (burns a core) */
    int unsafe_skip_waits;      /* testing only: drop cross-stream waits */
    int gear_policy;            /* AE_GEAR_*, for models after a host step with rows "any" */
    /* Devices: 0 or 1 means one (context, device_id, slot_bytes).  k > 1:
     * the lists below, index 0 equal to those; pipeline inputs arrive on and
     * outputs leave from device 0 (the copy streams are its). */
    int n_devices;
    const aclrtContext *contexts;
    const int32_t *device_ids;
    const size_t *device_slot_bytes;
    const int *stream_devices;  /* per compute stream: its device index */
    /* DVPP (ae_load_dvpp), required by a plan with image nodes: device 0's
     * arena then comes from acldvppMalloc, so every picture is DVPP memory. */
    const ae_dvpp_api *dvpp;
} ae_plan;

typedef struct ae_engine ae_engine;

typedef struct ae_stats {
    uint64_t requests;          /* completed requests */
    uint64_t failures;          /* requests lost to errors */
    int in_flight;
    int in_flight_high_water;
    uint64_t enqueue_ns;        /* wall time spent enqueueing requests */
    uint64_t wait_ns;           /* wall time spent waiting for results */
} ae_stats;

int ae_engine_create(const ae_acl_api *api, const ae_plan *plan, ae_engine **out, ae_error *err);
/* Release everything, waiting for the device without a bound first (for a
 * collector that cannot report anything). */
void ae_engine_destroy(ae_engine *engine);
/* Release everything the engine holds.  Returns 0 and frees the engine;
 * 1 when the device is still running work abandoned after a timeout (nothing
 * was released: call again later); or -1 when some releases failed (the
 * engine is freed all the same; err names the first failure and the count). */
int ae_engine_close(ae_engine *engine, ae_error *err);

/*
 * Requests of a plan with dynamic-shape nodes (shape.dyn_kind AE_DYN_HW or
 * AE_DYN_DIMS).  Their tensors' sizes change per request: row_bytes[t]
 * (n_tensors values) gives every tensor's bytes per row for this request
 * (at most its planned row_bytes, so it fits the slot's buffers), and node
 * n's gear is gear_dims[gear_at[n] .. gear_at[n] + gear_count[n]): (height,
 * width) for AE_DYN_HW, the flattened dims of a gear for AE_DYN_DIMS;
 * gear_count[n] is 0 for every other node.  Every copy of the request (in,
 * between devices, through host steps, out) moves row_bytes[t] x rows.
 */
typedef struct ae_request_shape {
    const size_t *row_bytes;      /* n_tensors */
    const int64_t *gear_dims;
    const int *gear_at;           /* n_nodes */
    const int *gear_count;        /* n_nodes */
} ae_request_shape;

/* Enqueue one request of `rows` rows.  inputs[i] holds rows x row_bytes of
 * pipeline input i; outputs[j] receives rows x row_bytes of output j when the
 * request completes.  Blocks (completing the oldest requests) when all slots
 * are busy.  Returns 0, or -1 with err filled and the engine drained.
 *
 * out_rows (n_outputs values, or NULL) receives, when the request completes,
 * the rows of each output (they differ from `rows` for outputs after a host
 * step with rows "any"; outputs[j] must then have room for the step's
 * max_rows rows).  shape: the request's shape (above; the slot keeps its own
 * copy); a plan without dynamic-shape nodes takes NULL, a plan with them
 * needs one.  times (or NULL: no clock read): the request's times
 * (CLOCK_MONOTONIC ns) in times[0] (when it is enqueued, after any wait for a
 * free slot) and times[1] (when its outputs are in the caller's arrays), as
 * ae_engine_run_batch_timed does; times must stay valid until the request is
 * delivered or cancelled.
 *
 * Failures: err->request names the request that failed (this one when it
 * could not be enqueued, an older one when completing it failed, or
 * AE_NO_REQUEST); every request in flight at that moment is cancelled
 * (ae_engine_last_cancelled).  A wait that times out abandons the requests in
 * flight: the device may still be running them, so the engine accepts new
 * requests only once its streams are idle again (each entry point checks,
 * within the plan's timeout, and fails with ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
 * while they are not). */
int ae_engine_submit_timed(ae_engine *engine, const void *const *inputs, uint64_t rows,
                           void *const *outputs, uint64_t *out_rows, const ae_request_shape *shape,
                           int64_t *times, ae_error *err);
/* Wait for the oldest request in flight and deliver its outputs. */
int ae_engine_complete_one(ae_engine *engine, ae_error *err);
/* Complete everything in flight. */
int ae_engine_flush(ae_engine *engine, ae_error *err);
/* Split total_rows into requests of `batch` rows (not for plans with host
 * steps: their results are per request; submit them one by one) (the last may
 * be smaller; one above the plan's max_batch is split further), run them
 * pipelined and deliver all outputs; inputs/outputs are whole arrays.
 * times (or NULL: no clock read per request): each request's times
 * (CLOCK_MONOTONIC ns), 2 per request of `batch` rows (ceil(total_rows /
 * batch) of them): [0] when its first execution is enqueued (after any wait
 * for a free slot), [1] when its last execution's outputs are in the
 * caller's arrays. */
int ae_engine_run_batch_timed(ae_engine *engine, const void *const *inputs, uint64_t total_rows,
                              uint64_t batch, void *const *outputs, int64_t *times, ae_error *err);

/*
 * Interruptible waits.  While the calling thread waits for the device, the
 * engine calls poll(ctx) about every poll_ms milliseconds; when it returns
 * nonzero the wait stops, the requests in flight are drained and cancelled
 * (ae_engine_last_cancelled), and the call returns AE_INTERRUPTED.  The
 * Python layer uses it to honour Ctrl-C during long GIL-free calls.  NULL
 * turns it off (the default).  Set it under the caller's lock, per call.
 */
typedef int (*ae_poll_fn)(void *ctx);
void ae_engine_set_poll(ae_engine *engine, ae_poll_fn poll, void *ctx, int poll_ms);

/*
 * For a completion thread that waits outside the caller's lock: wait until
 * request `request` is over, or the plan's timeout passed, and return the
 * code of the wait.  It reads nothing that submissions change (a request's
 * done event is fixed per slot), so it may run while another thread submits;
 * if the request was completed meanwhile and its slot reused, it waits for
 * the newer request, which is harmless.  Then, under the lock, call
 * ae_engine_complete_waited() with the code.
 */
aclError ae_engine_wait_request(ae_engine *engine, uint64_t request);
/* Complete the oldest request after ae_engine_wait_request() returned
 * `wait_rc` for it: as ae_engine_complete_one(), except that a wait that
 * already timed out is not waited again. */
int ae_engine_complete_waited(ae_engine *engine, uint64_t request, aclError wait_rc, ae_error *err);
/* Deliver, oldest first, every request whose done event has already
 * completed, without blocking; returns how many, or -1 / AE_INTERRUPTED
 * as ae_engine_complete_one() when delivering one failed. */
int ae_engine_complete_ready(ae_engine *engine, ae_error *err);
/* Slots free for a submission that would not block (depth - in flight). */
int ae_engine_free_slots(const ae_engine *engine);

int ae_engine_in_flight(const ae_engine *engine);
/* Requests are numbered from 0 in submission order. */
uint64_t ae_engine_submitted(const ae_engine *engine);   /* the next request's number */
uint64_t ae_engine_completed(const ae_engine *engine);   /* every request below is over */
/* The requests [begin, end) that the last failure cancelled. */
void ae_engine_last_cancelled(const ae_engine *engine, uint64_t *begin, uint64_t *end);
void ae_engine_get_stats(const ae_engine *engine, ae_stats *out);
/* Device milliseconds accumulated per node (profile plans only); n_nodes values. */
void ae_engine_node_device_ms(const ae_engine *engine, double *out);
size_t ae_engine_arena_bytes(const ae_engine *engine);

/*
 * Timelines (profile plans only).  ae_engine_trace_begin() completes what is
 * in flight, records a base event and starts keeping one row per completed
 * request (up to max_requests).  A row holds AE_TRACE_COLUMNS(n_nodes)
 * millisecond offsets from the base, -1 where a time could not be read:
 *   [0] copy-in start, [1] copy-in end,
 *   per node n: [2+3n] wait start, [3+3n] execute start, [4+3n] execute end,
 *   then copy-out wait start, copy-out start, copy-out end.
 * ae_engine_trace_end() stops recording and returns the rows (owned by the
 * engine, valid until the next trace or destruction).
 */
#define AE_TRACE_COLUMNS(n_nodes) (5 + 3 * (n_nodes))
int ae_engine_trace_begin(ae_engine *engine, size_t max_requests, ae_error *err);
size_t ae_engine_trace_end(ae_engine *engine, const double **rows, const uint64_t **requests);
size_t ae_engine_host_bytes(const ae_engine *engine);

/*
 * Gears for rows produced by a host step.  A model running `rows` rows in
 * one request executes in chunks: ae_chunk_next() gives the next chunk's
 * gear and the rows it covers (gear >= take; the rows between take and gear
 * are padding) for `left` rows still to run, under `policy` (AE_GEAR_*).
 * A static model has one gear: its batch.  ae_chunk_span() is the most rows
 * any chunk sequence for 1..max_rows rows reaches (padding included): a
 * buffer of that many rows is never overrun.
 */
void ae_chunk_next(const uint64_t *gears, int n_gears, int policy, uint64_t left, uint64_t *gear,
                   uint64_t *take);
uint64_t ae_chunk_span(const uint64_t *gears, int n_gears, int policy, uint64_t max_rows);

#ifdef __cplusplus
}
#endif

#endif /* ASCEND_ENGINE_EXECUTOR_H */
