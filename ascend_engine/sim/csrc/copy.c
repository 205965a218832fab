/*
 * copy.c -- aclrtMemcpy[Async] and aclrtMemset[Async]: their checks in CANN 9.1's order, the
 * direction found from the addresses, the copy and memset tasks (docs/simulator.md, "Memory").
 *
 * What memory is where (the allocation table, pins, the recently-freed ring) is memory.c's; this
 * file asks it through sim_mem_lookup, sim_mem_recently_freed, sim_mem_check_device and the pins.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simrt.h"

/* The host side of a copy: if it is pinned host memory the range must fit in
 * it.  Other host memory cannot be checked. */
static aclError check_host_side(const char *fn, const char *arg_name, const void *ptr, size_t len)
{
    sim_mem_region r;
    if (!sim_mem_lookup(ptr, &r) || r.kind != SIM_MEM_HOST)
        return ACL_SUCCESS;
    size_t off = (size_t)((const char *)ptr - r.base);
    if (len > r.size - off)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                         "%s %p + %zu bytes is out of bounds by %zu bytes: it starts at offset %zu of a %zu-byte "
                         "aclrtMallocHost allocation",
                         arg_name, ptr, len, len - (r.size - off), off, r.size);
    return ACL_SUCCESS;
}

static const char *kind_name(int kind)
{
    static const char *const names[] = {"ACL_MEMCPY_HOST_TO_HOST",     "ACL_MEMCPY_HOST_TO_DEVICE",
                                        "ACL_MEMCPY_DEVICE_TO_HOST",   "ACL_MEMCPY_DEVICE_TO_DEVICE",
                                        "ACL_MEMCPY_DEFAULT",          "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE",
                                        "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE", "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE"};
    return kind >= 0 && kind < 8 ? names[kind] : "?";
}

uint64_t sim_copy_time_ns(aclrtMemcpyKind kind, size_t bytes)
{
    double gbps = 0;
    if (kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)
        gbps = sim_cfg.h2d_gbps;
    else if (kind == ACL_MEMCPY_DEVICE_TO_HOST)
        gbps = sim_cfg.d2h_gbps;
    if (gbps <= 0)
        return 0;
    return (uint64_t)((double)bytes / gbps); /* bytes / (GB/s * 1e9) s = bytes / GBps ns */
}

/* What a copy's pointer is: device memory, aclrtMallocHost memory, freed
 * memory, or anything else (pageable host memory).  Freed bytes go back to the
 * host's allocator, so an address in a freed allocation may be a new host
 * buffer: it counts as freed only when kind names it device memory. */
typedef enum { SIDE_DEVICE, SIDE_PINNED, SIDE_FREED, SIDE_PAGEABLE } copy_side;

static copy_side side_of(const void *p, int named_device)
{
    sim_mem_region r;
    sim_mem_kind fk;
    if (!sim_mem_lookup(p, &r))
        return named_device && sim_mem_recently_freed(p, &fk) ? SIDE_FREED : SIDE_PAGEABLE;
    return r.kind == SIM_MEM_DEVICE ? SIDE_DEVICE : SIDE_PINNED;
}

/* Whether kind names dst / src as device memory. */
static int kind_dst_device(int kind)
{
    return kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE;
}

static int kind_src_device(int kind)
{
    return kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
}

/* A freed allocation is refused (the driver knows the address, not the
 * memory: 107000) instead of being read or written as host memory. */
static aclError check_not_freed(const char *fn, const char *arg, const void *p, copy_side side)
{
    sim_mem_kind fk;
    if (side != SIDE_FREED)
        return ACL_SUCCESS;
    sim_mem_recently_freed(p, &fk);
    return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn, "%s %p points into %s memory that was already freed", arg, p,
                     fk == SIM_MEM_DEVICE ? "device" : "pinned host");
}

/* The checks both copies make first, in CANN 9.1's order: the acl layer's
 * NULL and kind checks (100000; kinds 6 and 7 are not copy kinds there), then
 * the runtime's count > destMax (107000).  A count of 0 never gets here. */
static aclError check_copy_args(const char *fn, void *dst, size_t destMax, const void *src, size_t count, int kind)
{
    if (!dst)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "dst is NULL");
    if (!src)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "src is NULL");
    if (kind < 0 || kind > ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                         "kind %d (%s) is not a copy kind of aclrtMemcpy/aclrtMemcpyAsync: expected 0..5 "
                         "(ACL_MEMCPY_HOST_TO_HOST .. ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)",
                         kind, kind_name(kind));
    if (count > destMax)
        return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn,
                         "count %zu is larger than destMax %zu (the capacity of dst)", count, destMax);
    return ACL_SUCCESS;
}

/* Checks the sides of a copy whose direction is settled (dst_dev/src_dev):
 * device sides lie in one live allocation (of `device_id`, any device when it
 * is < 0), pinned host sides fit; two devices need peer access.  *cross says
 * whether the copy goes between two devices. */
static aclError check_sides(const char *fn, void *dst, const void *src, size_t count, int dst_dev, int src_dev,
                            int32_t device_id, int *cross)
{
    aclError rc;
    if ((rc = dst_dev ? sim_mem_check_device(fn, "dst", dst, count, device_id) : check_host_side(fn, "dst", dst, count)))
        return rc;
    if ((rc = src_dev ? sim_mem_check_device(fn, "src", src, count, device_id) : check_host_side(fn, "src", src, count)))
        return rc;
    *cross = 0;
    if (dst_dev && src_dev) {
        sim_mem_region rd, rs;
        if (sim_mem_lookup(dst, &rd) && sim_mem_lookup(src, &rs) && rd.device_id != rs.device_id) {
            /* Peer access is one-way: the source's device must have enabled the destination's. */
            if (!sim_peer_enabled(rs.device_id, rd.device_id))
                return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                                 "src %p is on device %d and dst %p on device %d, but peer access from device %d to "
                                 "device %d is not enabled: call aclrtDeviceEnablePeerAccess(%d, 0) with device %d "
                                 "current first (or copy through host memory when aclrtDeviceCanAccessPeer says 0)",
                                 src, (int)rs.device_id, dst, (int)rd.device_id, (int)rs.device_id,
                                 (int)rd.device_id, (int)rd.device_id, (int)rs.device_id);
            *cross = 1;
        }
    }
    return ACL_SUCCESS;
}

static aclrtMemcpyKind kind_of(int dst_dev, int src_dev)
{
    return dst_dev ? (src_dev ? ACL_MEMCPY_DEVICE_TO_DEVICE : ACL_MEMCPY_HOST_TO_DEVICE)
                   : (src_dev ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_HOST);
}

/* Validates a memset target: device memory of the current device or pinned
 * host memory.  count > maxCount is the runtime's 107000 (CANN 9.1). */
static aclError check_memset(const char *fn, void *devPtr, size_t maxCount, size_t count, int32_t device_id)
{
    sim_mem_region r;
    if (!devPtr)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "devPtr is NULL");
    if (count > maxCount)
        return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn, "count %zu is larger than maxCount %zu", count, maxCount);
    if (sim_mem_lookup(devPtr, &r) && r.kind == SIM_MEM_HOST)
        return check_host_side(fn, "devPtr", devPtr, count);
    return sim_mem_check_device(fn, "devPtr", devPtr, count, device_id);
}

/* ---- tasks -------------------------------------------------------------------------------------------------- */

typedef struct {
    void *dst;
    const void *src;
    size_t count;
    aclrtMemcpyKind kind;
    int cross;                 /* between two devices: ASCEND_SIM_D2D_GBPS applies */
    void *pin_dst, *pin_src;   /* sim_mem_pin tokens (NULL: untracked host memory) */
} copy_arg;

/* Copies and holds the stream (NULL: the synchronous caller) for the modelled
 * transfer time; without a bandwidth set, for as long as the memmove took. */
static void do_copy(sim_stream *s, void *dst, const void *src, size_t count, aclrtMemcpyKind kind, int cross)
{
    uint64_t t0 = sim_now_ns();
    memmove(dst, src, count);
    uint64_t need = cross ? sim_peer_copy_time_ns(count) : sim_copy_time_ns(kind, count);
    if (s && !need)
        need = sim_now_ns() - t0;
    sim_task_occupy(s, t0, need);
}

static aclError copy_task(void *arg, sim_stream *s)
{
    copy_arg *a = arg;
    aclError rc = sim_task_begin(s, "memcpy");
    void *const pins[2] = {a->pin_dst, a->pin_src};
    static const char *const names[2] = {"dst", "src"};
    if (!rc)
        rc = sim_task_pins_live(s, ACL_ERROR_RT_COPY_DATA, "an asynchronous copy", pins, names, 2);
    if (!rc)
        do_copy(s, a->dst, a->src, a->count, a->kind, a->cross);
    sim_mem_unpin(a->pin_dst);
    sim_mem_unpin(a->pin_src);
    return rc;
}

typedef struct {
    void *ptr;
    size_t count;
    int value;
    void *pin;
} memset_arg;

static aclError memset_task(void *arg, sim_stream *s)
{
    memset_arg *a = arg;
    aclError rc = sim_task_begin(s, "memset");
    static const char *const names[1] = {"devPtr"};
    if (!rc)
        rc = sim_task_pins_live(s, ACL_ERROR_RT_COPY_DATA, "an asynchronous memset", &a->pin, names, 1);
    if (!rc)
        memset(a->ptr, a->value, a->count);
    sim_mem_unpin(a->pin);
    return rc;
}

/* ---- AscendCL: copies and memsets -------------------------------------------------------------------------------- */

SIM_EXPORT aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    SIM_ENTER(aclrtMemcpy);
    const char *fn = "aclrtMemcpy";
    aclrtMemcpyKind k = kind;
    int cross = 0;
    aclError rc = ACL_SUCCESS;
    /* CANN 9.1: a count of 0 succeeds before any check, context included. */
    if (count == 0)
        SIM_RETURN(aclrtMemcpy, rc, "dst=%p, destMax=%zu, src=%p, count=0, kind=%s", dst, destMax, src,
                   kind_name((int)kind));
    rc = sim_need_context(fn, NULL);
    if (!rc)
        rc = check_copy_args(fn, dst, destMax, src, count, (int)kind);
    if (!rc) {
        /* The synchronous copy ignores kind: the driver finds the direction
         * from the addresses (CANN 9.1, documented as a reserved parameter). */
        copy_side ds = side_of(dst, kind_dst_device((int)kind)), ss = side_of(src, kind_src_device((int)kind));
        int dst_dev = ds == SIDE_DEVICE, src_dev = ss == SIDE_DEVICE;
        k = kind_of(dst_dev, src_dev);
        if (!(rc = check_not_freed(fn, "dst", dst, ds)) && !(rc = check_not_freed(fn, "src", src, ss)))
            rc = check_sides(fn, dst, src, count, dst_dev, src_dev, -1, &cross);
    }
    if (!rc)
        do_copy(NULL, dst, src, count, k, cross);
    SIM_RETURN(aclrtMemcpy, rc, "dst=%p, destMax=%zu, src=%p, count=%zu, kind=%s (as %s)", dst, destMax, src, count,
               kind_name((int)kind), kind_name((int)k));
}

/* Settles an asynchronous copy's direction as CANN 9.1 does: a side that is
 * device or aclrtMallocHost memory is what it is, whatever kind says; a side
 * that is neither (pageable host memory) may not be named device memory by
 * kind (107000).  Host to host, as asked or as found, is 207000. */
static aclError async_direction(const char *fn, void *dst, const void *src, int kind, int *dst_dev, int *src_dev,
                                int *pageable)
{
    if (kind == ACL_MEMCPY_HOST_TO_HOST)
        return sim_error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                         "kind ACL_MEMCPY_HOST_TO_HOST is not supported by the asynchronous copy; use aclrtMemcpy "
                         "(or memcpy) for host-to-host copies");
    int kd = kind_dst_device(kind), ks = kind_src_device(kind);
    copy_side ds = side_of(dst, kd), ss = side_of(src, ks);
    aclError rc;
    if ((rc = check_not_freed(fn, "dst", dst, ds)) || (rc = check_not_freed(fn, "src", src, ss)))
        return rc;
    if (kind == ACL_MEMCPY_DEFAULT) {
        kd = ds == SIDE_DEVICE;
        ks = ss == SIDE_DEVICE;
    }
    if (ds == SIDE_PAGEABLE && kd)
        return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn,
                         "dst %p is pageable host memory (in no live aclrtMalloc/aclrtMallocHost allocation) but "
                         "kind %s names it as device memory",
                         dst, kind_name(kind));
    if (ss == SIDE_PAGEABLE && ks)
        return sim_error(ACL_ERROR_RT_PARAM_INVALID, fn,
                         "src %p is pageable host memory (in no live aclrtMalloc/aclrtMallocHost allocation) but "
                         "kind %s names it as device memory",
                         src, kind_name(kind));
    *dst_dev = ds == SIDE_DEVICE;
    *src_dev = ss == SIDE_DEVICE;
    if (!*dst_dev && !*src_dev)
        return sim_error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                         "dst %p and src %p are both host memory (kind %s): the asynchronous copy does not copy host "
                         "to host; use aclrtMemcpy",
                         dst, src, kind_name(kind));
    *pageable = ds == SIDE_PAGEABLE || ss == SIDE_PAGEABLE;
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                     aclrtStream stream)
{
    SIM_ENTER(aclrtMemcpyAsync);
    const char *fn = "aclrtMemcpyAsync";
    sim_stream *s = NULL;
    aclrtMemcpyKind k = kind;
    int cross = 0, dst_dev = 0, src_dev = 0, pageable = 0;
    aclError rc = ACL_SUCCESS;
    if (count == 0)   /* CANN 9.1: success before any check */
        SIM_RETURN(aclrtMemcpyAsync, rc, "dst=%p, destMax=%zu, src=%p, count=0, kind=%s, stream=%p", dst, destMax,
                   src, kind_name((int)kind), stream);
    rc = check_copy_args(fn, dst, destMax, src, count, (int)kind);
    if (!rc)
        rc = sim_stream_resolve(fn, stream, &s);
    if (!rc)
        rc = async_direction(fn, dst, src, (int)kind, &dst_dev, &src_dev, &pageable);
    if (!rc) {
        k = kind_of(dst_dev, src_dev);
        /* A device-to-device copy may go to a peer device; the others stay on the stream's. */
        rc = check_sides(fn, dst, src, count, dst_dev, src_dev, dst_dev && src_dev ? -1 : sim_stream_device(s), &cross);
    }
    if (!rc && pageable) {
        /* CANN 8.5+: pageable host memory makes the copy synchronous: the
         * stream's queued work first, then the copy, before the call returns. */
        rc = sim_stream_synchronize(fn, s, -1);
        if (!rc)
            do_copy(NULL, dst, src, count, k, cross);
    } else if (!rc) {
        copy_arg a = {dst, src, count, k, cross, sim_mem_pin(dst), sim_mem_pin(src)};
        rc = sim_stream_enqueue(s, "memcpy", copy_task, &a, sizeof a);
        if (rc) {
            sim_mem_unpin(a.pin_dst);
            sim_mem_unpin(a.pin_src);
        }
    }
    SIM_RETURN(aclrtMemcpyAsync, rc, "dst=%p, destMax=%zu, src=%p, count=%zu, kind=%s (as %s%s), stream=%p", dst,
               destMax, src, count, kind_name((int)kind), kind_name((int)k), pageable ? ", pageable: synchronous" : "",
               stream);
}

SIM_EXPORT aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    SIM_ENTER(aclrtMemset);
    const char *fn = "aclrtMemset";
    sim_context *ctx;
    if (count == 0)   /* CANN 9.1: success before any check */
        SIM_RETURN(aclrtMemset, ACL_SUCCESS, "devPtr=%p, maxCount=%zu, value=%d, count=0", devPtr, maxCount,
                   (int)value);
    aclError rc = sim_need_context(fn, &ctx);
    if (!rc)
        rc = check_memset(fn, devPtr, maxCount, count, ctx->device_id);
    if (!rc)
        memset(devPtr, value & 0xff, count);
    SIM_RETURN(aclrtMemset, rc, "devPtr=%p, maxCount=%zu, value=%d, count=%zu", devPtr, maxCount, (int)value, count);
}

SIM_EXPORT aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream)
{
    SIM_ENTER(aclrtMemsetAsync);
    const char *fn = "aclrtMemsetAsync";
    sim_stream *s = NULL;
    if (count == 0)   /* CANN 9.1: success before any check */
        SIM_RETURN(aclrtMemsetAsync, ACL_SUCCESS, "devPtr=%p, maxCount=%zu, value=%d, count=0, stream=%p", devPtr,
                   maxCount, (int)value, stream);
    aclError rc = sim_stream_resolve(fn, stream, &s);
    if (!rc)
        rc = check_memset(fn, devPtr, maxCount, count, sim_stream_device(s));
    if (!rc) {
        memset_arg a = {devPtr, count, value & 0xff, sim_mem_pin(devPtr)};
        rc = sim_stream_enqueue(s, "memset", memset_task, &a, sizeof a);
        if (rc)
            sim_mem_unpin(a.pin);
    }
    SIM_RETURN(aclrtMemsetAsync, rc, "devPtr=%p, maxCount=%zu, value=%d, count=%zu, stream=%p", devPtr, maxCount,
               (int)value, count, stream);
}
