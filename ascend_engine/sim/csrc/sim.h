/*
 * sim.h -- internal interface of the AscendCL simulator (libascendcl_sim).
 *
 * The simulator is split by concern; each .c file owns one part and the
 * others reach it only through the functions declared here:
 *
 *   errors.c    recent-error messages (per thread), the call log, fault injection
 *   init.c      aclInit / aclFinalize / aclFinalizeReference, the runtime's lazy
 *               start, configuration from the environment
 *   applog.c    aclAppLog, the application log
 *   device.c    devices, contexts (per-thread current context), run mode, SoC name
 *   visible.c   ASCEND_RT_VISIBLE_DEVICES: visible physical devices, renumbered
 *   stream.c    streams: ordered task queues, one worker thread each
 *   event.c     events: record / wait / query / synchronize / elapsed time
 *   memory.c    device and pinned host memory, copies, memsets, mem info
 *   peer.c      peer access between devices (P2P links, enabled directions)
 *   callback.c  host callbacks: launch, subscribe, process report
 *   dtype.c     data-type sizes, float16 conversion
 *   dataset.c   data buffers and datasets
 *   format.c    the simulator model file parser (bounds-checked)
 *   kernels.c   the C kernels the model ops run
 *   model.c     aclmdl*: the model table, load, unload (model_exec.c: execute, sync and on a stream)
 *   tensor_desc.c, aipp.c, dynamic.c, exception.c, satmode.c: the wider API
 *               (tensor descriptions, AIPP sets, dynamic HW/dims, device
 *               exceptions, saturation mode)
 *
 * Conventions every exported function follows:
 *   - It starts with SIM_ENTER(name): counts the call for fault injection and
 *     returns the injected code when a fault rule matches.
 *   - Every failure goes through sim_error(), which records the per-thread
 *     recent-error message (aclGetRecentErrMsg) naming the call, the argument
 *     and what was expected, and returns the code.
 *   - It returns through SIM_RETURN(name, rc, fmt, args...), which writes the
 *     call to the call log (ASCEND_SIM_LOG) when logging is on.
 *   - Functions that need the runtime call sim_check_init(), which starts it
 *     on first use (CANN's runtime has no init gate); model-executor calls
 *     use sim_check_ge_init() (145001 outside aclInit..aclFinalize); those
 *     that need a current context call sim_need_context().
 */
#ifndef ASCEND_SIM_H
#define ASCEND_SIM_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "ascend_engine/acl.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- errors.c: recent error, call log, faults ---------------------------- */

/* Record "fn: message" as the calling thread's recent error and return code. */
aclError sim_error(aclError code, const char *fn, const char *fmt, ...) SIM_PRINTF(3, 4);
/* Replace the calling thread's recent error with a ready-made message. */
void sim_set_recent_error(const char *msg);

/* Nonzero when ASCEND_SIM_LOG is set (read once at library load). */
extern int sim_log_enabled;
void sim_log_call(const char *fn, aclError rc, const char *fmt, ...) SIM_PRINTF(3, 4);
/* Free-form log line (task execution, device-side failures). */
void sim_log_note(const char *fmt, ...) SIM_PRINTF(1, 2);

/* Fault injection: returns the injected code for this call of `fn`, or 0.
 * Rules come from ASCEND_SIM_FAULTS at load time or aeSimSetFaults(). */
aclError sim_fault_on_call(const char *fn);
/* Device-side faults, checked by tasks when they run on a stream worker
 * (`what` is "execute", "memcpy", ...).  Returns the code to fail with, or 0.
 * *stall_ms receives a stall to apply before the task runs (0 for none). */
aclError sim_fault_on_task(const char *what, int *stall_ms);

#define SIM_ENTER(fn)                                        \
    do {                                                     \
        aclError sim_injected_ = sim_fault_on_call(#fn);     \
        if (sim_injected_ != ACL_SUCCESS) {                  \
            if (sim_log_enabled)                             \
                sim_log_call(#fn, sim_injected_, "injected fault"); \
            return sim_injected_;                            \
        }                                                    \
    } while (0)

#define SIM_RETURN(fn, rc, ...)                              \
    do {                                                     \
        aclError sim_rc_ = (rc);                             \
        if (sim_log_enabled) sim_log_call(#fn, sim_rc_, __VA_ARGS__); \
        return sim_rc_;                                      \
    } while (0)

/* ---- init.c: process state and configuration ---------------------------- */

/* Starts the runtime if needed (reading the configuration); fails only when
 * the environment's configuration is invalid. */
aclError sim_check_init(const char *fn);
/* The model executor: 145001 ACL_ERROR_GE_EXEC_NOT_INIT unless aclInit
 * succeeded and aclFinalize has not run since. */
aclError sim_check_ge_init(const char *fn);

#define SIM_MAX_DEVICES 1024   /* the largest ASCEND_SIM_DEVICE_COUNT */

/* The devices the process sees (visible.c).  Logical device i, the id every
 * AscendCL call takes, is physical device physical[i]. */
typedef struct sim_visible {
    int set;                          /* ASCEND_RT_VISIBLE_DEVICES was given (non-empty) */
    int count;                        /* visible devices; 0 when the setting names none */
    int16_t physical[SIM_MAX_DEVICES];
    char value[96];                   /* the setting as quoted in messages */
    char why_none[384];               /* when set and count == 0: why no device is visible */
} sim_visible;

/* Reads ASCEND_RT_VISIBLE_DEVICES (NULL when unset) as CANN does; never fails:
 * an invalid list leaves fewer (or no) devices visible, reported by the
 * device calls. */
void sim_visible_parse(const char *value, int physical_count, sim_visible *out);

typedef struct sim_config {
    int device_count;          /* ASCEND_SIM_DEVICE_COUNT (physical devices), default 8 */
    sim_visible visible;       /* ASCEND_RT_VISIBLE_DEVICES over those */
    size_t device_memory;      /* ASCEND_SIM_DEVICE_MEMORY per device, default 8 GiB */
    int max_streams;           /* ASCEND_SIM_MAX_STREAMS per device, default 1024 */
    int max_events;            /* ASCEND_SIM_MAX_EVENTS per device, default 1023 */
    double h2d_gbps;           /* ASCEND_SIM_H2D_GBPS, 0 = as fast as memcpy */
    double d2h_gbps;           /* ASCEND_SIM_D2H_GBPS, 0 = as fast as memcpy */
    double d2d_gbps;           /* ASCEND_SIM_D2D_GBPS: copies between two devices, 0 = as fast as memcpy */
    char soc_name[32];         /* aclrtGetSocName: ASCEND_SIM_SOC_VERSION + "-sim", default Ascend910B-sim */
} sim_config;
extern sim_config sim_cfg;   /* written only by aclInit, before any other call can use it */

/* ---- time ------------------------------------------------------------------ */
uint64_t sim_now_ns(void);                       /* CLOCK_MONOTONIC */
void sim_sleep_until_ns(uint64_t deadline_ns);   /* sleeps, never spins */

/* ---- device.c: devices and contexts ------------------------------------------ */

typedef struct sim_stream sim_stream;

typedef struct sim_context {
    uint32_t magic;              /* SIM_CONTEXT_MAGIC while alive */
    int32_t device_id;
    int is_default;              /* created by aclrtSetDevice; cannot be destroyed */
    sim_stream *default_stream;  /* the context's stream for NULL stream arguments */
} sim_context;
#define SIM_CONTEXT_MAGIC 0x43545854u

/* The calling thread's current context, or NULL. */
sim_context *sim_current_context(void);
/* Like sim_current_context but fails with 107002 and a message naming fn. */
aclError sim_need_context(const char *fn, sim_context **out);
/* Validates a (logical) device id against the visible devices (107001 / message). */
aclError sim_check_device_id(const char *fn, int32_t device_id);

/* Per-device resource accounting (streams, events, memory bytes). */
aclError sim_device_reserve_bytes(const char *fn, int32_t device_id, size_t bytes); /* 207001 past capacity */
void sim_device_release_bytes(int32_t device_id, size_t bytes);
aclError sim_device_reserve_event(const char *fn, int32_t device_id);   /* 207007 past budget */
void sim_device_release_event(int32_t device_id);

/* ---- stream.c: streams and tasks -------------------------------------------- */

/* A task runs on the stream's worker thread, in order.  It returns
 * ACL_SUCCESS or a device-side error code; on failure it should have called
 * sim_task_error() to say what went wrong.  A failed task makes the stream's
 * error sticky until aclrtSynchronizeStream reports it; the stream keeps
 * running later tasks (ACL_CONTINUE_ON_FAILURE).  An event recorded on a
 * stream with a sticky error carries the error, and a stream that waits on
 * such an event inherits it, so failures follow data dependencies. */
typedef aclError (*sim_task_fn)(void *arg, sim_stream *stream);

#define SIM_TASK_ARG_MAX 192   /* task arguments are copied inline: no malloc per task */

/* Resolve a stream handle (NULL = default stream of the current context),
 * checking it is alive (107017) and belongs to the current context itself,
 * not only its device (107003, CANN 9.1).  Needs a current context. */
aclError sim_stream_resolve(const char *fn, aclrtStream handle, sim_stream **out);
/* Enqueue a task; `arg` (arg_size <= SIM_TASK_ARG_MAX bytes) is copied.
 * `what` names the task in logs and messages ("execute model 3"). */
aclError sim_stream_enqueue(sim_stream *stream, const char *what,
                            sim_task_fn run, const void *arg, size_t arg_size);
int32_t sim_stream_device(const sim_stream *stream);
uint32_t sim_stream_id(const sim_stream *stream);
/* Inside a running task: record the device-side error message. */
void sim_task_error(sim_stream *stream, aclError code, const char *fmt, ...) SIM_PRINTF(3, 4);

/* The device-time model (docs/simulator.md, "Device time").  A task starts on
 * the device when its stream is free and the host has issued it, not when the
 * stream's worker thread happens to be scheduled; it then occupies the stream
 * for its modelled time.  Timestamps (events) read this clock, so a loaded
 * host delays results but does not stretch the device's own figures. */
/* Where the running task's device clock is. */
uint64_t sim_task_now(const sim_stream *s);
/* The task cannot get on before device time t (an event it waited for). */
void sim_task_reach(sim_stream *s, uint64_t t_ns);
/* The task occupies its stream for busy_ns more of device time; returns once
 * the host clock has got there.  s NULL: a synchronous call, busy from
 * wall_start_ns on the caller's thread. */
void sim_task_occupy(sim_stream *s, uint64_t wall_start_ns, uint64_t busy_ns);
/* Block the caller until everything queued on the stream so far has run
 * (timeout_ms: -1 forever, 0 poll; 507046 on timeout).  Reports and clears
 * the stream's sticky error, as aclrtSynchronizeStream does, under name fn. */
aclError sim_stream_synchronize(const char *fn, sim_stream *stream, int32_t timeout_ms);

/* ---- memory.c: allocations ------------------------------------------------ */

typedef enum { SIM_MEM_DEVICE = 1, SIM_MEM_HOST = 2 } sim_mem_kind;

typedef struct sim_mem_region {
    char *base;          /* start of the allocation */
    size_t size;         /* usable bytes (the rounded, padded size) */
    int32_t device_id;   /* owner device for SIM_MEM_DEVICE */
    sim_mem_kind kind;
} sim_mem_region;

/* Find the live allocation (device or pinned host) that contains ptr. */
int sim_mem_lookup(const void *ptr, sim_mem_region *out);
/* 1 when p points into memory freed recently (the ring memory.c keeps), its kind in *kind. */
int sim_mem_recently_freed(const void *p, sim_mem_kind *kind);
/* Check that [ptr, ptr+len) lies inside one live device allocation owned by
 * device_id (any device if device_id < 0).  On failure: records a message
 * naming fn and arg_name (freed pointer, host pointer, other device, out of
 * bounds by N bytes) and returns ACL_ERROR_INVALID_PARAM. */
aclError sim_mem_check_device(const char *fn, const char *arg_name,
                              const void *ptr, size_t len, int32_t device_id);
/* Whether sim_mem_check_device would pass, with nothing formatted: for
 * callers whose argument name costs a snprintf, so that they format it only
 * when the check fails. */
int sim_mem_device_ok(const void *ptr, size_t len, int32_t device_id);

/* Pins for stream tasks.  At enqueue, a task pins each allocation it will
 * touch: sim_mem_pin returns a token (NULL for memory the simulator does not
 * track, such as plain host memory).  An allocation freed while pinned keeps
 * its bytes (the address is not reused) until the last sim_mem_unpin, which
 * the task calls when it has run, whatever its outcome.  sim_mem_pin_live
 * says whether the token's allocation is still allocated (true for NULL). */
void *sim_mem_pin(const void *ptr);
int sim_mem_pin_live(const void *token);
void sim_mem_unpin(void *token);
/* In a running task: fails the task with `code` and a message naming
 * names[i] if tokens[i]'s allocation was freed since it was pinned. */
aclError sim_task_pins_live(sim_stream *s, aclError code, const char *task, void *const *tokens,
                            const char *const *names, size_t n);

/* Device-time model for copies: nanoseconds a copy of `bytes` should take. */
uint64_t sim_copy_time_ns(aclrtMemcpyKind kind, size_t bytes);

/* ---- peer.c: peer access between devices -------------------------------------------- */

/* Reads the pairs without a P2P link (ASCEND_SIM_NO_P2P, physical ids) and
 * clears every enabled direction; called by aclInit.  A malformed value is
 * ACL_ERROR_INVALID_PARAM with a message naming the variable. */
aclError sim_peer_configure(const char *spec, int physical_count);
/* Whether logical device `from` enabled peer access to `to` (from -> to). */
int sim_peer_enabled(int32_t from, int32_t to);
/* Nanoseconds a copy of `bytes` between two devices takes (ASCEND_SIM_D2D_GBPS). */
uint64_t sim_peer_copy_time_ns(size_t bytes);

/* ---- exception.c: device exceptions -------------------------------------------- */

/* A task failed on a stream: remember it for aclmdlCreateAndGetOpDesc and
 * call the aclrtSetExceptionInfoCallback callback (on the calling thread). */
void sim_exception_report(int32_t device_id, uint32_t stream_id, uint32_t task_id, aclError code);

/* ---- dtype.c ---------------------------------------------------------------- */
float sim_half_to_float(uint16_t h);
uint16_t sim_float_to_half(float f);

#endif /* ASCEND_SIM_H */
