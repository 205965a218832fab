/*
 * simrt.h -- private interface between the simulator's runtime files
 * (errors.c, init.c, registry.c, device.c, stream.c, event.c, memory.c,
 * callback.c).  The model side of the simulator uses sim.h only.
 */
#ifndef ASCEND_SIMRT_H
#define ASCEND_SIMRT_H

#include <stdatomic.h>

#include "sim.h"

#define SIM_MSG_MAX 1024

/* ---- registry.c: live handles ------------------------------------------------
 * Handles given to users (contexts, streams, events) are checked against this
 * table before use, so a stale or foreign pointer is reported instead of being
 * dereferenced.  Each registration gets a serial that is never reused, which
 * lets thread-local references detect that an address was recycled. */
enum { SIM_H_CONTEXT = 1, SIM_H_STREAM = 2, SIM_H_EVENT = 3 };
uint64_t sim_handle_add(void *p, int kind);
void sim_handle_remove(void *p);
int sim_handle_live(const void *p, int kind, uint64_t *serial);
/* Snapshot of the live handles of one kind (malloc'd; caller frees). */
size_t sim_handle_snapshot(int kind, void ***out);

/* ---- errors.c ---------------------------------------------------------------- */
const char *sim_code_name(aclError code);
/* Nonzero when ASCEND_SIM_FAULTS (read at load) was malformed; msg says why. */
int sim_fault_env_error(char *msg, size_t n);

/* ---- init.c --------------------------------------------------------------------- */
int sim_is_initialized(void);

/* ---- device.c ------------------------------------------------------------------- */
aclError sim_devices_create(void);
void sim_devices_destroy(void);
aclError sim_device_reserve_stream(const char *fn, int32_t device_id); /* 207008 past budget */
void sim_device_release_stream(int32_t device_id);
void sim_device_mem_usage(int32_t device_id, size_t *used, size_t *total);

/* ---- stream.c ------------------------------------------------------------------- */
typedef struct sim_task {
    sim_task_fn run;
    uint64_t enqueued_ns;       /* host clock when it was issued: the earliest the device can start it */
    char what[48];
    _Alignas(16) unsigned char arg[SIM_TASK_ARG_MAX];
} sim_task;

struct sim_stream {
    pthread_mutex_t mu;         /* guards the queue, counters and sticky error */
    pthread_cond_t work_cv;     /* worker sleeps here when the queue is empty */
    pthread_cond_t done_cv;     /* synchronizers sleep here */
    sim_task *ring;
    size_t cap, head, count;    /* ring of queued tasks; the running one stays at head */
    uint64_t enqueued, completed;
    int worker_asleep;          /* signal work_cv only when set: no syscall while busy */
    int waiters;                /* broadcast done_cv only when someone waits */
    int stopping;
    aclError sticky;            /* first device-side failure since the last synchronize */
    char sticky_msg[SIM_MSG_MAX];

    /* set at creation, read-only afterwards */
    pthread_t thread;
    sim_context *ctx;
    int32_t device_id;
    uint32_t id;
    int is_default;

    /* touched only by the worker thread */
    aclError task_err;
    char task_msg[SIM_MSG_MAX];
    /* The stream's device clock (docs/simulator.md, "Device time"): when the running task
     * has got to so far, and when the stream's last task ended. */
    uint64_t task_now_ns;
    uint64_t free_at_ns;

    /* guarded by the callback lock in callback.c */
    int cb_subscribed;
    uint64_t cb_thread;
};

aclError sim_stream_create(const char *fn, sim_context *ctx, int is_default, sim_stream **out);
/* Waits for queued work, stops the worker and frees the stream. */
void sim_stream_destroy(sim_stream *s);
/* Destroys every stream owned by ctx (its default stream included). */
void sim_streams_destroy_for_context(sim_context *ctx);
/* The stream's sticky error right now (0 if none), message copied to msg. */
aclError sim_stream_peek_error(sim_stream *s, char *msg, size_t n);
/* Start of a runtime task: applies stall faults, returns an injected code. */
aclError sim_task_begin(sim_stream *s, const char *kind);

/* ---- event.c / memory.c / callback.c: teardown at aclFinalize ------------------- */
void sim_events_destroy_all(void);
void sim_memory_free_all(void);
void sim_cb_stream_gone(sim_stream *s);
void sim_cb_shutdown(void);
void sim_cb_reset(void);

#endif /* ASCEND_SIMRT_H */
