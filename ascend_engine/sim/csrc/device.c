/*
 * device.c -- devices, contexts and the per-thread current context.
 *
 * Each device has a reference count of aclrtSetDevice calls; the first one
 * creates the device's default context (with its default stream) and the
 * last aclrtResetDevice destroys it.  Device memory allocations and events
 * are not tied to a context: they survive a reset and are released by
 * aclrtFree / aclrtDestroyEvent or at aclFinalize.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascend_engine/ascend_sim.h"
#include "simrt.h"

typedef struct {
    pthread_mutex_t mu;         /* guards every field below */
    int refcount;               /* aclrtSetDevice calls not yet reset */
    sim_context *default_ctx;
    size_t bytes_used;
    int streams_used;
    int events_used;
} sim_device;

/* Created by aclInit and destroyed by aclFinalize, both under the init lock;
 * every other user runs only while the runtime is initialized. */
static sim_device *devices;
static int device_count;

/* The calling thread's current context, remembered with the serial it had in
 * the handle registry and the context epoch at which that was checked. */
static __thread sim_context *tls_ctx;
static __thread uint64_t tls_serial;
static __thread uint64_t tls_epoch;
/* Bumped (after the registry removal) whenever a context is destroyed, so
 * threads revalidate their current context only when one has gone away. */
static atomic_uint_fast64_t ctx_epoch = 1;


/* ---- current context --------------------------------------------------------------- */

static void set_current(sim_context *ctx)
{
    uint64_t e = atomic_load_explicit(&ctx_epoch, memory_order_acquire);
    tls_ctx = NULL;
    if (ctx && sim_handle_live(ctx, SIM_H_CONTEXT, &tls_serial)) {
        tls_ctx = ctx;
        tls_epoch = e;
    }
}

sim_context *sim_current_context(void)
{
    if (!tls_ctx)
        return NULL;
    uint64_t e = atomic_load_explicit(&ctx_epoch, memory_order_acquire);
    if (e == tls_epoch)
        return tls_ctx;
    uint64_t serial;
    if (sim_handle_live(tls_ctx, SIM_H_CONTEXT, &serial) && serial == tls_serial) {
        tls_epoch = e;
        return tls_ctx;
    }
    tls_ctx = NULL; /* its device was reset or the context destroyed */
    return NULL;
}

aclError sim_need_context(const char *fn, sim_context **out)
{
    aclError rc = sim_check_init(fn);
    if (rc)
        return rc;
    sim_context *ctx = sim_current_context();
    if (!ctx)
        return sim_error(ACL_ERROR_RT_CONTEXT_NULL, fn,
                         "this thread has no current context; call aclrtSetDevice or aclrtSetCurrentContext on "
                         "this thread first (the current context is per thread)");
    if (out)
        *out = ctx;
    return ACL_SUCCESS;
}

aclError sim_check_device_id(const char *fn, int32_t device_id)
{
    const sim_visible *v = &sim_cfg.visible;
    if (device_id >= 0 && device_id < device_count)
        return ACL_SUCCESS;
    if (device_count == 0)
        return sim_error(ACL_ERROR_RT_INVALID_DEVICEID, fn, "deviceId %d: no device is visible: %s", (int)device_id,
                         v->why_none);
    if (v->set)
        return sim_error(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                         "deviceId %d is out of range: %d device(s) are visible, ids 0..%d "
                         "(ASCEND_RT_VISIBLE_DEVICES='%s' renumbers the visible physical devices from 0)",
                         (int)device_id, device_count, device_count - 1, v->value);
    return sim_error(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                     "deviceId %d is out of range: the simulator has %d device(s), ids 0..%d "
                     "(ASCEND_SIM_DEVICE_COUNT)",
                     (int)device_id, device_count, device_count - 1);
}

/* ---- accounting --------------------------------------------------------------------- */

aclError sim_device_reserve_bytes(const char *fn, int32_t device_id, size_t bytes)
{
    sim_device *d = &devices[device_id];
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&d->mu);
    size_t total = sim_cfg.device_memory, free_b = total - d->bytes_used;
    if (bytes > free_b)
        rc = sim_error(ACL_ERROR_RT_MEMORY_ALLOCATION, fn,
                       "out of device memory on device %d: requested %zu bytes (after rounding and padding), "
                       "%zu bytes free of %zu total (ASCEND_SIM_DEVICE_MEMORY)",
                       (int)device_id, bytes, free_b, total);
    else
        d->bytes_used += bytes;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

void sim_device_release_bytes(int32_t device_id, size_t bytes)
{
    sim_device *d = &devices[device_id];
    pthread_mutex_lock(&d->mu);
    d->bytes_used -= bytes;
    pthread_mutex_unlock(&d->mu);
}

void sim_device_mem_usage(int32_t device_id, size_t *used, size_t *total)
{
    sim_device *d = &devices[device_id];
    pthread_mutex_lock(&d->mu);
    *used = d->bytes_used;
    pthread_mutex_unlock(&d->mu);
    *total = sim_cfg.device_memory;
}

aclError sim_device_reserve_event(const char *fn, int32_t device_id)
{
    sim_device *d = &devices[device_id];
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&d->mu);
    if (d->events_used >= sim_cfg.max_events)
        rc = sim_error(ACL_ERROR_RT_NO_EVENT_RESOURCE, fn,
                       "device %d has no event left: all %d events are in use (ASCEND_SIM_MAX_EVENTS); destroy "
                       "events you no longer need or reuse them",
                       (int)device_id, sim_cfg.max_events);
    else
        d->events_used++;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

void sim_device_release_event(int32_t device_id)
{
    sim_device *d = &devices[device_id];
    pthread_mutex_lock(&d->mu);
    d->events_used--;
    pthread_mutex_unlock(&d->mu);
}

aclError sim_device_reserve_stream(const char *fn, int32_t device_id)
{
    sim_device *d = &devices[device_id];
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&d->mu);
    if (d->streams_used >= sim_cfg.max_streams)
        rc = sim_error(ACL_ERROR_RT_NO_STREAM_RESOURCE, fn,
                       "device %d has no stream left: all %d streams are in use, default streams included "
                       "(ASCEND_SIM_MAX_STREAMS); destroy streams you no longer need",
                       (int)device_id, sim_cfg.max_streams);
    else
        d->streams_used++;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

void sim_device_release_stream(int32_t device_id)
{
    sim_device *d = &devices[device_id];
    pthread_mutex_lock(&d->mu);
    d->streams_used--;
    pthread_mutex_unlock(&d->mu);
}

/* ---- contexts -------------------------------------------------------------------------- */

static aclError context_create(const char *fn, int32_t device_id, int is_default, sim_context **out)
{
    sim_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn, "out of host memory creating a context");
    ctx->magic = SIM_CONTEXT_MAGIC;
    ctx->device_id = device_id;
    ctx->is_default = is_default;
    if (!sim_handle_add(ctx, SIM_H_CONTEXT)) {
        free(ctx);
        return sim_error(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn, "out of host memory creating a context");
    }
    aclError rc = sim_stream_create(fn, ctx, 1, &ctx->default_stream);
    if (rc) {
        sim_handle_remove(ctx);
        free(ctx);
        return rc;
    }
    *out = ctx;
    return ACL_SUCCESS;
}

/* Waits for the context's queued work, then frees it and its streams. */
static void context_destroy(sim_context *ctx)
{
    sim_handle_remove(ctx);
    atomic_fetch_add_explicit(&ctx_epoch, 1, memory_order_acq_rel);
    sim_streams_destroy_for_context(ctx);
    ctx->magic = 0;
    free(ctx);
}

/* ---- lifetime ------------------------------------------------------------------------------ */

/* One entry per visible device, indexed by logical id (the id callers use). */
aclError sim_devices_create(void)
{
    int n = sim_cfg.visible.count;
    devices = calloc(n > 0 ? (size_t)n : 1, sizeof *devices);
    if (!devices)
        return sim_error(ACL_ERROR_BAD_ALLOC, "aclInit", "out of host memory");
    for (int i = 0; i < n; i++)
        pthread_mutex_init(&devices[i].mu, NULL);
    device_count = n;
    return ACL_SUCCESS;
}

void sim_devices_destroy(void)
{
    void **ctxs;
    size_t n = sim_handle_snapshot(SIM_H_CONTEXT, &ctxs);
    for (size_t i = 0; i < n; i++)
        context_destroy(ctxs[i]);
    free(ctxs);
    for (int i = 0; i < device_count; i++)
        pthread_mutex_destroy(&devices[i].mu);
    free(devices);
    devices = NULL;
    device_count = 0;
}

/* ---- AscendCL: devices ---------------------------------------------------------------------- */

SIM_EXPORT aclError aclrtSetDevice(int32_t deviceId)
{
    SIM_ENTER(aclrtSetDevice);
    aclError rc = sim_check_init("aclrtSetDevice");
    if (!rc)
        rc = sim_check_device_id("aclrtSetDevice", deviceId);
    if (!rc) {
        sim_device *d = &devices[deviceId];
        pthread_mutex_lock(&d->mu);
        sim_context *ctx = d->default_ctx;
        pthread_mutex_unlock(&d->mu);
        if (!ctx) {
            /* Created outside the device lock (stream creation takes it to
             * count the default stream); the loser of a race discards its own. */
            sim_context *fresh;
            rc = context_create("aclrtSetDevice", deviceId, 1, &fresh);
            if (!rc) {
                pthread_mutex_lock(&d->mu);
                if (!d->default_ctx) {
                    d->default_ctx = fresh;
                    fresh = NULL;
                }
                ctx = d->default_ctx;
                pthread_mutex_unlock(&d->mu);
                if (fresh)
                    context_destroy(fresh);
            }
        }
        if (!rc) {
            pthread_mutex_lock(&d->mu);
            d->refcount++;
            ctx = d->default_ctx;
            pthread_mutex_unlock(&d->mu);
            set_current(ctx);
        }
    }
    SIM_RETURN(aclrtSetDevice, rc, "deviceId=%d", (int)deviceId);
}

SIM_EXPORT aclError aclrtResetDevice(int32_t deviceId)
{
    SIM_ENTER(aclrtResetDevice);
    aclError rc = sim_check_init("aclrtResetDevice");
    if (!rc)
        rc = sim_check_device_id("aclrtResetDevice", deviceId);
    if (!rc) {
        sim_device *d = &devices[deviceId];
        sim_context *doomed = NULL;
        pthread_mutex_lock(&d->mu);
        if (d->refcount == 0) {
            /* CANN 9.1: releasing a primary context that is not held fails in the runtime. */
            rc = sim_error(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, "aclrtResetDevice",
                           "device %d is not set: every aclrtSetDevice(%d) was already matched by a reset",
                           (int)deviceId, (int)deviceId);
        } else if (--d->refcount == 0) {
            doomed = d->default_ctx;
            d->default_ctx = NULL;
        }
        pthread_mutex_unlock(&d->mu);
        if (doomed)
            context_destroy(doomed);
    }
    SIM_RETURN(aclrtResetDevice, rc, "deviceId=%d", (int)deviceId);
}

SIM_EXPORT aclError aclrtGetDevice(int32_t *deviceId)
{
    SIM_ENTER(aclrtGetDevice);
    sim_context *ctx = NULL;
    aclError rc = sim_check_init("aclrtGetDevice");
    if (!rc && !deviceId)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId is NULL; pass the address of an int32_t");
    if (!rc)
        rc = sim_need_context("aclrtGetDevice", &ctx);
    if (!rc)
        *deviceId = ctx->device_id;
    SIM_RETURN(aclrtGetDevice, rc, "deviceId=%p -> %d", (void *)deviceId, rc ? -1 : (int)*deviceId);
}

SIM_EXPORT aclError aclrtGetDeviceCount(uint32_t *count)
{
    SIM_ENTER(aclrtGetDeviceCount);
    aclError rc = sim_check_init("aclrtGetDeviceCount");
    if (!rc && !count)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count is NULL; pass the address of a uint32_t");
    if (!rc && device_count == 0)
        rc = sim_error(ACL_ERROR_RT_NO_DEVICE, "aclrtGetDeviceCount", "no device is visible: %s",
                       sim_cfg.visible.why_none);
    if (!rc)
        *count = (uint32_t)device_count;
    SIM_RETURN(aclrtGetDeviceCount, rc, "count=%p -> %u", (void *)count, rc ? 0u : *count);
}

/* Simulator extra (ascend_sim.h): the physical device behind a logical id. */
SIM_EXPORT int aeSimDevicePhysicalId(int32_t deviceId, int32_t *physicalId)
{
    aclError rc = sim_check_init("aeSimDevicePhysicalId");
    if (!rc && !physicalId)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aeSimDevicePhysicalId",
                       "physicalId is NULL; pass the address of an int32_t");
    if (!rc)
        rc = sim_check_device_id("aeSimDevicePhysicalId", deviceId);
    if (!rc)
        *physicalId = sim_cfg.visible.physical[deviceId];
    return (int)rc;
}

SIM_EXPORT aclError aclrtGetRunMode(aclrtRunMode *runMode)
{
    SIM_ENTER(aclrtGetRunMode);
    aclError rc = ACL_SUCCESS;
    if (!runMode)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode is NULL; pass the address of an aclrtRunMode");
    else
        *runMode = ACL_HOST;
    SIM_RETURN(aclrtGetRunMode, rc, "runMode=%p -> %s", (void *)runMode, rc ? "-" : "ACL_HOST");
}

SIM_EXPORT const char *aclrtGetSocName(void)
{
    aclError rc = sim_check_init("aclrtGetSocName");
    if (rc) {
        if (sim_log_enabled)
            sim_log_call("aclrtGetSocName", rc, "-> NULL");
        return NULL;
    }
    if (sim_log_enabled)
        sim_log_call("aclrtGetSocName", ACL_SUCCESS, "-> \"%s\"", sim_cfg.soc_name);
    return sim_cfg.soc_name;
}

/* ---- AscendCL: contexts -------------------------------------------------------------------- */

SIM_EXPORT aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
    SIM_ENTER(aclrtCreateContext);
    sim_context *ctx = NULL;
    aclError rc = sim_check_init("aclrtCreateContext");
    if (!rc && !context)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext", "context is NULL; pass the address of an aclrtContext");
    if (!rc)
        rc = sim_check_device_id("aclrtCreateContext", deviceId);
    if (!rc)
        rc = context_create("aclrtCreateContext", deviceId, 0, &ctx);
    if (!rc) {
        set_current(ctx);
        *context = ctx;
    }
    SIM_RETURN(aclrtCreateContext, rc, "context=%p, deviceId=%d -> %p", (void *)context, (int)deviceId, (void *)ctx);
}

/* A context handle that is not live answers dead_code: CANN 9.1's runtime
 * gives 107002 to aclrtDestroyContext and 107000 to aclrtSetCurrentContext. */
static aclError check_context(const char *fn, aclrtContext context, aclError dead_code)
{
    if (!context)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "context is NULL");
    if (!sim_handle_live(context, SIM_H_CONTEXT, NULL))
        return sim_error(dead_code, fn,
                         "context %p is not a live context (never created, already destroyed, or its device was reset)",
                         context);
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclrtDestroyContext(aclrtContext context)
{
    SIM_ENTER(aclrtDestroyContext);
    aclError rc = sim_check_init("aclrtDestroyContext");
    if (!rc)
        rc = check_context("aclrtDestroyContext", context, ACL_ERROR_RT_CONTEXT_NULL);
    if (!rc && ((sim_context *)context)->is_default)
        rc = sim_error(ACL_ERROR_RT_CONTEXT_NULL, "aclrtDestroyContext",
                       "context %p is the default context of device %d, created by aclrtSetDevice; release it with "
                       "aclrtResetDevice instead",
                       context, (int)((sim_context *)context)->device_id);
    if (!rc)
        context_destroy(context);
    SIM_RETURN(aclrtDestroyContext, rc, "context=%p", context);
}

SIM_EXPORT aclError aclrtSetCurrentContext(aclrtContext context)
{
    SIM_ENTER(aclrtSetCurrentContext);
    aclError rc = sim_check_init("aclrtSetCurrentContext");
    if (!rc)
        rc = check_context("aclrtSetCurrentContext", context, ACL_ERROR_RT_PARAM_INVALID);
    if (!rc)
        set_current(context);
    SIM_RETURN(aclrtSetCurrentContext, rc, "context=%p", context);
}

SIM_EXPORT aclError aclrtGetCurrentContext(aclrtContext *context)
{
    SIM_ENTER(aclrtGetCurrentContext);
    sim_context *ctx = NULL;
    aclError rc = sim_check_init("aclrtGetCurrentContext");
    if (!rc && !context)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext", "context is NULL; pass the address of an aclrtContext");
    if (!rc)
        rc = sim_need_context("aclrtGetCurrentContext", &ctx);
    if (!rc)
        *context = ctx;
    SIM_RETURN(aclrtGetCurrentContext, rc, "context=%p -> %p", (void *)context, (void *)ctx);
}
