/*
 * executor_internal.h -- what the executor's source files share (not part
 * of the public interface in executor.h): the slot and engine structures,
 * the one error path and the functions one file calls in another.
 *
 * The executor is split by concern; each file owns one part:
 *
 *   executor.c    the error path, clocks and deadlines, contexts, the engine's counters
 *   plan.c        checking the plan, the engine's copy of it, the waits each node needs
 *   build.c       creating the AscendCL objects (ae_engine_create), releasing them (close, destroy)
 *   submit.c      taking requests: their checks, a free slot, ae_engine_run_batch_timed
 *   enqueue.c     one request's work on the streams: copy-in, nodes, gears, copy-out
 *   host_steps.c  host-step nodes: their worker threads and hand-over
 *   chunks.c      the gear rule for rows a host step produced (shared with the planner)
 *   complete.c    waits and polling, delivering requests oldest first, drain and recovery
 *   timeline.c    profile plans: node device times and timeline rows
 *   image_steps.c image nodes: DVPP channels, pictures and regions per slot, their checks and enqueue
 *
 * One request: ae_engine_submit_timed (submit.c) checks it, takes slot
 * r % depth (aex_make_room in complete.c frees one when all are busy) and
 * calls aex_enqueue_request (enqueue.c), which copies the inputs in and
 * enqueues the nodes up to the first host step; that step's worker
 * (host_steps.c) runs it and enqueues the rest (aex_enqueue_nodes), ending
 * with the copy-out and the slot's done event.  ae_engine_complete_one
 * (complete.c) waits for that event and delivers the outputs, recording the
 * request's times on the way in a profile plan (timeline.c).
 */
#ifndef ASCEND_ENGINE_EXECUTOR_INTERNAL_H
#define ASCEND_ENGINE_EXECUTOR_INTERNAL_H

#include <pthread.h>

#include "ascend_engine/executor.h"

/* Host staging is carved like device memory: each buffer 128-byte aligned. */
#define AE_ALIGN 128u

static inline size_t aex_align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

typedef struct slot {
    char *device;                 /* this slot's region of device 0's arena (dev[0]) */
    char **dev;                   /* per device: this slot's region of its arena */
    char *bridge;                 /* pinned staging of the copies through the host */
    aclrtEvent *bridged;          /* per copy node through the host: its D2H is done */
    char *host_in;                /* pinned staging for pipeline inputs */
    char *host_out;               /* pinned staging for pipeline outputs */
    char *host_steps;             /* pinned staging of the host steps' inputs and outputs */
    aclmdlDataset **in_sets;      /* per node */
    aclmdlDataset **out_sets;     /* per node */
    aclrtEvent *node_done;        /* per node: recorded after its execution */
    aclrtEvent *step_ready;       /* per host node: its inputs are on the host */
    aclrtEvent inputs_ready;      /* after the H2D copies */
    aclrtEvent done;              /* after the D2H copies: the request is over */
    /* profile plans only: timing events marking every step of the timeline */
    aclrtEvent *node_wait;        /* per node: before its cross-stream waits */
    aclrtEvent *node_start;       /* per node: after the waits, before executing */
    aclrtEvent copy_in_start;     /* before the H2D copies */
    aclrtEvent copy_out_wait;     /* before the copy-out stream's waits */
    aclrtEvent copy_out_start;    /* after them, before the D2H copies */
    /* the request occupying the slot */
    int busy;
    uint64_t request;
    uint64_t rows;
    void **user_out;              /* n_outputs destinations */
    uint64_t *user_rows;          /* where to report each output's rows, or NULL */
    int64_t *time_done;           /* where to write the time its outputs were delivered, or NULL */
    /* Rows per domain: [0] the request's, [1 + h] those host step h produced. */
    uint64_t *rows_of;
    /* A request of a plan with dynamic-shape nodes: its bytes per row of
     * every tensor, and per node its gear (gear_count[n] values from
     * gear_dims + n * AE_MAX_GEAR_DIMS).  NULL for other plans. */
    size_t *row_bytes;
    int64_t *gear_dims;
    int *gear_count;
    /* Host steps (guarded by the engine's step_lock): the last nodes of the
     * request are enqueued by a step's worker, so the done event means
     * something only once tail_enqueued is set.  A step that failed skips
     * the rest of the request (events are still recorded, nothing runs) and
     * leaves its message here; an enqueue that failed on a worker is fatal
     * (the streams hold part of the request) and drains the engine. */
    int tail_enqueued;
    int step_node;                /* until then: the host step holding the request (-1 before the first) */
    int step_running;             /* and whether its function has been called */
    int step_failed;
    int step_fatal;
    uint64_t generation;          /* bumped when the slot's request is abandoned */
    ae_error step_error;
    /* Image nodes (image_steps.c): per node, DVPP objects made at compile and
     * the picture the node wrote for this request. */
    struct image_slot *images;
} slot;

/* One request handed to a host step's workers. */
typedef struct step_item {
    int slot;
    uint64_t request;
    uint64_t generation;
} step_item;

/* The queue and threads of one host step. */
typedef struct step_runner {
    struct ae_engine *engine;
    int node;
    step_item *queue;             /* ring of depth items */
    int head, count;
    pthread_t *threads;
    int n_threads;                /* started */
    size_t *in_off, *out_off;     /* staging offsets inside a slot's host_steps */
} step_runner;

struct ae_engine {
    const ae_acl_api *acl;
    ae_plan plan;                 /* scalars only; arrays below are our copies */
    ae_tensor_plan *tensors;
    ae_node_plan *nodes;
    int *input_tensors;
    int *output_tensors;
    int **node_inputs;            /* copies of nodes[i].inputs */
    int **node_outputs;
    uint64_t **node_gears;
    int64_t **node_dims_gears;    /* copies of nodes[i].shape.dims_gears */
    int **node_row_dims;          /* copies of nodes[i].shape.row_dims */
    uint32_t **node_model_ids;    /* copies of nodes[i].model.ids (instances > 1) */
    int **node_streams;
    /* per node: nodes on other streams it must wait for (unique), and whether
     * it reads a pipeline input (so waits for the H2D copies) */
    int **node_waits;
    int *node_n_waits;
    int *node_reads_input;
    int *out_waits;               /* producers of outputs the copy-out stream waits for */
    int n_out_waits;
    int out_reads_input;
    size_t *in_stage_off;         /* offsets inside a slot's host_in */
    size_t *out_stage_off;
    size_t host_in_bytes, host_out_bytes, host_step_bytes;

    /* Devices (n_devices >= 1; plans of one device fill them from the plan's
     * context, device_id and slot_bytes).  Every object is created, used
     * and destroyed with its device's context current (aex_use_device). */
    int n_devices;
    aclrtContext *contexts;
    int32_t *device_ids;
    size_t *dev_slot_bytes;
    int *stream_devices;          /* per compute stream */
    void **arenas;                /* per device: depth slot regions */
    int *event_devices;           /* per entry of events[] */
    int building_device;          /* the device ae_engine_create is creating objects on */
    size_t *bridge_off;           /* per node: offset of a host-bridged copy's staging in slot.bridge */
    size_t bridge_bytes;

    aclrtStream *streams;         /* compute streams (and the host steps' copy streams) */
    aclrtStream copy_in, copy_out;
    int n_created_streams;
    void *arena;
    void *host_arena;
    size_t arena_bytes, host_bytes;
    aclDataBuffer **buffers;      /* every data buffer, for destruction */
    int n_buffers, cap_buffers;
    aclrtEvent *events;           /* every event, for destruction */
    int n_events, cap_events;

    slot *slots;
    uint64_t next_request;        /* sequence number of the next submission */
    uint64_t cancel_begin, cancel_end;  /* requests the last failure cancelled */
    int in_flight;
    /* A wait timed out and the requests in flight were abandoned while the
     * device may still be running them: no slot may be reused (and nothing
     * released) until every stream is idle again. */
    int wedged;
    /* interruptible waits (ae_engine_set_poll): set per call by the caller */
    ae_poll_fn poll;
    void *poll_ctx;
    int poll_ms;
    uint64_t next_poll_ns;        /* when poll is due again */
    ae_stats stats;
    double *node_ms;
    /* timeline recording (profile plans): one row of AE_TRACE_COLUMNS(n)
     * millisecond offsets from trace_base per completed request */
    aclrtEvent trace_base;
    double *trace_rows;
    uint64_t *trace_requests;     /* request number of each row */
    size_t trace_capacity, trace_count;

    /* Host steps (host_steps.c).  step_lock guards the runners' queues, the
     * slots' step fields above, steps_busy and stopping, and serializes every
     * enqueue of a plan with host steps (the submitting thread's and the
     * workers'), since both put work on the same streams. */
    int shaped;                   /* some node has dyn_kind AE_DYN_HW or AE_DYN_DIMS */
    int n_steps;
    step_runner *runners;         /* n_steps */
    int *runner_of;               /* per node: its runner, or -1 */
    pthread_mutex_t step_lock;
    pthread_cond_t step_work;     /* a runner's queue got an item, or stopping */
    pthread_cond_t step_progress; /* a slot's tail was enqueued, or a worker went idle */
    int steps_busy;               /* items taken by workers and not yet finished */
    int stopping;
    int step_lock_ready;

    /* Image nodes (image_steps.c): NULL without them. */
    struct image_engine *img;
};

/* executor.c */

/* The single error-reporting path: fills err (when not NULL) and returns -1. */
int aex_fail(ae_engine *e, ae_error *err, aclError code, const char *function, const char *node,
             const char *fmt, ...);
/* The same for a failure the engine found itself and reports under an
 * AscendCL code (a deadline it measured): no AscendCL call failed, so the
 * thread's recent-error text, which belongs to some earlier call, is left out. */
int aex_fail_engine(ae_engine *e, ae_error *err, aclError code, const char *function, const char *node,
                    const char *fmt, ...);

#define ACL_CALL(e, err, node, call, ...)                                          \
    do {                                                                           \
        aclError rc_ = (e)->acl->call(__VA_ARGS__);                                \
        if (rc_ != ACL_SUCCESS)                                                    \
            return aex_fail((e), (err), rc_, #call, (node), "%s failed", #call);   \
    } while (0)

/* A name into an AE_NAME_MAX field ("" for NULL). */
void aex_copy_name(char *dst, const char *src);
uint64_t aex_now_ns(void);
/* Deadlines are absolute aex_now_ns() times, 0 for none; a burst of waits
 * reads the clock once and passes `now` along (see aex_make_room). */
uint64_t aex_deadline_from_now(const ae_engine *e);
uint64_t aex_deadline_after(const ae_engine *e, uint64_t now);
int32_t aex_ms_left(uint64_t deadline);
int32_t aex_ms_until(uint64_t now, uint64_t deadline);
void *aex_calloc(size_t n, size_t size);
int aex_make_current(ae_engine *e, ae_error *err);
/* Make device d's context current (a no-op for plans of one device, whose
 * context the entry points made current already). */
int aex_use_device(ae_engine *e, int d, ae_error *err);

/* Where tensor t lives in a slot. */
static inline char *aex_tensor_addr(const ae_engine *e, const slot *sl, int t)
{
    return sl->dev[e->tensors[t].device] + e->tensors[t].offset;
}

/* Bytes of one row of tensor t in the slot's request (see ae_request_shape). */
static inline size_t aex_row_bytes(const ae_engine *e, const slot *sl, int t)
{
    return sl->row_bytes ? sl->row_bytes[t] : e->tensors[t].row_bytes;
}

/* Rows of a domain (AE_ROWS_REQUEST or a host step's node index) in a slot. */
static inline uint64_t aex_rows(const slot *sl, int domain)
{
    return sl->rows_of[domain + 1];
}

/* The stream of the instance that runs request r (r % instances). */
static inline int aex_node_stream(const ae_node_plan *np, uint64_t r)
{
    return np->instances > 1 ? np->streams[r % (uint64_t)np->instances] : np->stream;
}

/* plan.c: the checks of ae_engine_create, the engine's copy of the plan
 * (its arrays owned by the engine) and the waits of every node. */
int aex_check_plan(const ae_plan *p, ae_error *err);
int aex_copy_plan(ae_engine *e, const ae_plan *p, ae_error *err);
int aex_plan_waits(ae_engine *e, ae_error *err);

/* submit.c: a request's bytes per row of tensor t, and node n's gear values,
 * checked against the plan: 0, or -1 with `why` saying what is wrong. */
int aex_check_row_bytes(const ae_engine *e, int t, size_t row_bytes, char *why, size_t why_size);
int aex_check_gear(const ae_engine *e, int n, const int64_t *values, int count, char *why, size_t why_size);

/* enqueue.c */

/* A request's work from the copy of its inputs (staged from `inputs`) on. */
int aex_enqueue_request(ae_engine *e, slot *sl, uint64_t request, const void *const *inputs, uint64_t rows,
                        ae_error *err);
/* Make stream st wait for what node n reads in this request: the copy of
 * the pipeline inputs and the events of its producers on other streams. */
int aex_wait_inputs(ae_engine *e, slot *sl, int n, aclrtStream st, ae_error *err);
/* Node n starts on stream st: its device current, the profile's wait mark,
 * then its waits (or, when `instead` is given, a wait on that event only). */
int aex_begin_node(ae_engine *e, slot *sl, int n, aclrtStream st, aclrtEvent instead, ae_error *err);

/* Enqueue nodes from `from` on: until a host step, which is handed to its
 * workers, or to the end and the copy-out.  With `skip`, the nodes only
 * record their events (a step failed: nothing more runs). */
int aex_enqueue_nodes(ae_engine *e, slot *sl, uint64_t request, int from, int skip, ae_error *err);

/* host_steps.c */
int aex_steps_create(ae_engine *e, ae_error *err);     /* staging layout, queues */
int aex_steps_start(ae_engine *e, ae_error *err);      /* the worker threads */
void aex_steps_stop(ae_engine *e);                     /* join them (idempotent) */
int aex_step_begin(ae_engine *e, slot *sl, uint64_t request, int node, int skip, ae_error *err);
int aex_wait_tail(ae_engine *e, slot *sl, uint64_t deadline, ae_error *err);
int aex_steps_idle(ae_engine *e, uint64_t deadline);  /* 0 once no worker holds a request */
void aex_steps_abandon(ae_engine *e);                  /* slots' requests will not be resumed */
void aex_steps_free(ae_engine *e);

/* complete.c */

/* Wait for every stream (within the plan's timeout when `bounded`): 0 once
 * all are idle, -1 when one is still busy. */
int aex_settle(ae_engine *e, int bounded);
/* Cancel every request in flight after a failure (`timed_out`: a wait gave
 * up and the device may still run them: the engine is wedged). */
void aex_drain(ae_engine *e, int timed_out);
/* A wedged engine: 0 once the device is idle again, or -1 with err. */
int aex_recover(ae_engine *e, ae_error *err);
/* All slots are busy: complete the oldest requests to free some. */
int aex_make_room(ae_engine *e, ae_error *err);
/* The caller's poll function is due at `now` and asks to stop: 1. */
int aex_poll_due(ae_engine *e, uint64_t now);

/* image_steps.c: channels and per-slot pictures; a request's JPEGs checked
 * (and their sizes noted for the slot it gets); one image node enqueued. */
int aex_images_create(ae_engine *e, ae_error *err);
int aex_images_check(ae_engine *e, const void *const *inputs, const ae_request_shape *shape, ae_error *err);
int aex_images_enqueue(ae_engine *e, slot *sl, int n, int skip, ae_error *err);
int aex_images_release(ae_engine *e, ae_error *err);   /* returns how many releases failed */
void aex_images_take(ae_engine *e, slot *sl);                /* the checked sizes into the request's slot */
int aex_images_reads_input(const ae_engine *e, int input);  /* pipeline input `input` is a decode's JPEG */
int aex_images_decode_failed(const ae_engine *e, const slot *sl, int n); /* decode n's picture for the
                                                                        slot's request was not written */

/* timeline.c: a completed request's node device times and timeline row */
void aex_record_profile(ae_engine *e, slot *sl, uint64_t request);

#endif /* ASCEND_ENGINE_EXECUTOR_INTERNAL_H */
