/*
 * memory.c -- device memory, pinned host memory, copies, memsets, mem info.
 *
 * Device memory is host memory tagged with its device and size.  Every live
 * allocation sits in a table sorted by address (binary search under a read
 * lock), so each copy can check that its device side lies inside one live
 * allocation of the right device.  New memory is filled with a junk pattern
 * (every 32-bit word reads 0xFFADBEEF, a float32 NaN) so that reading what was
 * never written shows up instead of looking like zeros.
 *
 * aclrtFree / aclrtFreeHost free at once (docs/simulator.md, fidelity
 * sweep): they never wait for streams (so a host callback may call them).
 * Stream tasks that will touch an allocation pin it when they are enqueued;
 * an allocation freed while pinned leaves the table (new calls see it as
 * freed, its capacity is returned) but its bytes stay reserved until the last
 * pinning task has run, so the address cannot be handed out again under
 * queued work.  Such a task finds its memory freed when it runs and fails on
 * the device instead of touching it (docs/simulator.md, "Memory").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simrt.h"

#define DEVICE_ALIGN 128
#define JUNK_WORD 0xFFADBEEFu

typedef struct {
    char *base;
    size_t size;       /* usable bytes: rounded and padded for device memory */
    size_t requested;  /* what the caller asked for */
    int32_t device_id; /* -1 for pinned host memory */
    sim_mem_kind kind;
    size_t pins;       /* queued tasks that will touch it (atomic under the read lock) */
} mem_entry;

/* Freed while pinned: the bytes wait here for the last unpin. */
typedef struct parked_block {
    struct parked_block *next;
    char *base;
    size_t pins;
} parked_block;

/* The table and the recently-freed ring are guarded by mem_lock. */
static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;
static mem_entry *mem_items;
static size_t mem_count, mem_cap;
#define FREED_RING 512
static struct {
    uintptr_t base;
    size_t size;
    sim_mem_kind kind;
} freed_ring[FREED_RING];
static size_t freed_pos;
static parked_block *parked;   /* guarded by mem_lock (write) */

/* Last entry whose base <= p, or -1 (caller holds mem_lock). */
static long find_entry(uintptr_t p)
{
    size_t lo = 0, hi = mem_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)mem_items[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const mem_entry *e = &mem_items[lo - 1];
    return p < (uintptr_t)e->base + e->size ? (long)(lo - 1) : -1;
}

int sim_mem_lookup(const void *ptr, sim_mem_region *out)
{
    int found = 0;
    pthread_rwlock_rdlock(&mem_lock);
    long i = find_entry((uintptr_t)ptr);
    if (i >= 0) {
        found = 1;
        if (out)
            *out = (sim_mem_region){mem_items[i].base, mem_items[i].size, mem_items[i].device_id, mem_items[i].kind};
    }
    pthread_rwlock_unlock(&mem_lock);
    return found;
}

/* Whether p lies in something freed recently (for a better message). */
static int recently_freed(const void *p, sim_mem_kind *kind)
{
    int hit = 0;
    uintptr_t a = (uintptr_t)p;
    pthread_rwlock_rdlock(&mem_lock);
    for (size_t i = 0; i < FREED_RING && !hit; i++)
        if (freed_ring[i].size && a >= freed_ring[i].base && a < freed_ring[i].base + freed_ring[i].size) {
            hit = 1;
            *kind = freed_ring[i].kind;
        }
    pthread_rwlock_unlock(&mem_lock);
    return hit;
}

static aclError insert_entry(const mem_entry *e)
{
    aclError rc = ACL_SUCCESS;
    pthread_rwlock_wrlock(&mem_lock);
    if (mem_count == mem_cap) {
        size_t ncap = mem_cap ? mem_cap * 2 : 256;
        mem_entry *n = realloc(mem_items, ncap * sizeof *n);
        if (!n)
            rc = ACL_ERROR_BAD_ALLOC;
        else {
            mem_items = n;
            mem_cap = ncap;
        }
    }
    if (!rc) {
        size_t lo = 0, hi = mem_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (mem_items[mid].base < e->base)
                lo = mid + 1;
            else
                hi = mid;
        }
        memmove(&mem_items[lo + 1], &mem_items[lo], (mem_count - lo) * sizeof *mem_items);
        mem_items[lo] = *e;
        mem_count++;
        /* an address handed out again is no longer "freed" */
        for (size_t i = 0; i < FREED_RING; i++)
            if (freed_ring[i].size && freed_ring[i].base < (uintptr_t)e->base + e->size &&
                (uintptr_t)e->base < freed_ring[i].base + freed_ring[i].size)
                freed_ring[i].size = 0;
    }
    pthread_rwlock_unlock(&mem_lock);
    return rc;
}

static void fill_junk(char *p, size_t n)
{
    uint32_t w = JUNK_WORD;
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        memcpy(p + i, &w, 4);
    for (; i < n; i++)
        p[i] = (char)0xEF;
}

void sim_memory_free_all(void)
{
    pthread_rwlock_wrlock(&mem_lock);
    for (size_t i = 0; i < mem_count; i++)
        free(mem_items[i].base);
    while (parked) {   /* the streams are gone: nothing will unpin these */
        parked_block *b = parked;
        parked = b->next;
        free(b->base);
        free(b);
    }
    free(mem_items);
    mem_items = NULL;
    mem_count = mem_cap = 0;
    memset(freed_ring, 0, sizeof freed_ring);
    freed_pos = 0;
    pthread_rwlock_unlock(&mem_lock);
}

/* ---- pins: queued tasks keep freed bytes reserved ------------------------------------------------------ */

void *sim_mem_pin(const void *ptr)
{
    void *token = NULL;
    pthread_rwlock_rdlock(&mem_lock);
    long i = find_entry((uintptr_t)ptr);
    if (i >= 0) {
        __atomic_add_fetch(&mem_items[i].pins, 1, __ATOMIC_RELAXED);
        token = mem_items[i].base;
    }
    pthread_rwlock_unlock(&mem_lock);
    return token;
}

int sim_mem_pin_live(const void *token)
{
    if (!token)
        return 1;
    pthread_rwlock_rdlock(&mem_lock);
    long i = find_entry((uintptr_t)token);
    int live = i >= 0 && mem_items[i].base == token;
    pthread_rwlock_unlock(&mem_lock);
    return live;
}

aclError sim_task_pins_live(sim_stream *s, aclError code, const char *task, void *const *tokens,
                            const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!sim_mem_pin_live(tokens[i])) {
            sim_task_error(s, code, "%s on stream %u: %s (allocation %p) was freed while the task was queued; "
                           "aclrtFree/aclrtFreeHost free at once and do not wait for queued work: synchronize the "
                           "stream before freeing memory it uses",
                           task, sim_stream_id(s), names[i], tokens[i]);
            return code;
        }
    return ACL_SUCCESS;
}

void sim_mem_unpin(void *token)
{
    if (!token)
        return;
    pthread_rwlock_rdlock(&mem_lock);
    long i = find_entry((uintptr_t)token);
    if (i >= 0 && mem_items[i].base == token) {
        __atomic_sub_fetch(&mem_items[i].pins, 1, __ATOMIC_RELAXED);
        pthread_rwlock_unlock(&mem_lock);
        return;
    }
    pthread_rwlock_unlock(&mem_lock);
    /* Freed since it was pinned: it is parked (a parked address is never
     * handed out again, so the token cannot name a newer allocation). */
    char *release = NULL;
    pthread_rwlock_wrlock(&mem_lock);
    for (parked_block **pp = &parked; *pp; pp = &(*pp)->next) {
        parked_block *b = *pp;
        if (b->base == token) {
            if (--b->pins == 0) {
                *pp = b->next;
                release = b->base;
                free(b);
            }
            break;
        }
    }
    pthread_rwlock_unlock(&mem_lock);
    free(release);
}

/* ---- checks ------------------------------------------------------------------------------------------- */

/* What sim_mem_check_device finds, without formatting anything: the passing
 * path of every enqueue runs through here, the message only on a failure. */
typedef enum {
    DEV_OK,
    DEV_NULL,
    DEV_NOT_ALLOCATED,
    DEV_PINNED_HOST,
    DEV_OTHER_DEVICE,
    DEV_OUT_OF_BOUNDS
} device_verdict;

static device_verdict judge_device(const void *ptr, size_t len, int32_t device_id, sim_mem_region *r)
{
    if (!ptr)
        return DEV_NULL;
    if (!sim_mem_lookup(ptr, r))
        return DEV_NOT_ALLOCATED;
    if (r->kind != SIM_MEM_DEVICE)
        return DEV_PINNED_HOST;
    if (device_id >= 0 && r->device_id != device_id)
        return DEV_OTHER_DEVICE;
    size_t off = (size_t)((const char *)ptr - r->base);
    return len > r->size - off ? DEV_OUT_OF_BOUNDS : DEV_OK;
}

int sim_mem_device_ok(const void *ptr, size_t len, int32_t device_id)
{
    sim_mem_region r;
    return judge_device(ptr, len, device_id, &r) == DEV_OK;
}

aclError sim_mem_check_device(const char *fn, const char *arg_name, const void *ptr, size_t len, int32_t device_id)
{
    sim_mem_region r;
    sim_mem_kind fk;
    size_t off;
    switch (judge_device(ptr, len, device_id, &r)) {
    case DEV_OK:
        return ACL_SUCCESS;
    case DEV_NULL:
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL", arg_name);
    case DEV_NOT_ALLOCATED:
        if (recently_freed(ptr, &fk))
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s %p points into %s memory that was already freed", arg_name,
                             ptr, fk == SIM_MEM_DEVICE ? "device" : "pinned host");
        return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                         "%s %p is not device memory: it lies in no live aclrtMalloc allocation (a host pointer, "
                         "or never allocated)",
                         arg_name, ptr);
    case DEV_PINNED_HOST:
        return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                         "%s %p is pinned host memory from aclrtMallocHost, not device memory", arg_name, ptr);
    case DEV_OTHER_DEVICE:
        return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                         "%s %p belongs to device %d, but the current context is on device %d", arg_name, ptr,
                         (int)r.device_id, (int)device_id);
    case DEV_OUT_OF_BOUNDS:
        break;
    }
    off = (size_t)((const char *)ptr - r.base);
    return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                     "%s %p + %zu bytes is out of bounds by %zu bytes: it starts at offset %zu of a %zu-byte "
                     "device allocation at %p",
                     arg_name, ptr, len, len - (r.size - off), off, r.size, (void *)r.base);
}

/* ascend_sim.h: what the simulator knows of a host read of [ptr, ptr+len). */
SIM_EXPORT int aeSimMemRange(const void *ptr, size_t len, char *why, size_t why_len)
{
    sim_mem_region r;
    sim_mem_kind fk;
    if (why && why_len)
        why[0] = '\0';
    if (sim_mem_lookup(ptr, &r)) {
        size_t off = (size_t)((const char *)ptr - r.base);
        if (len <= r.size - off)
            return ACL_SUCCESS;
        if (why && why_len)
            snprintf(why, why_len,
                     "%p + %zu bytes runs %zu bytes past the end of a %zu-byte %s allocation at %p", ptr, len,
                     len - (r.size - off), r.size, r.kind == SIM_MEM_DEVICE ? "device" : "pinned host",
                     (void *)r.base);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (ptr && recently_freed(ptr, &fk)) {
        if (why && why_len)
            snprintf(why, why_len, "%p points into %s memory that was already freed", ptr,
                     fk == SIM_MEM_DEVICE ? "device" : "pinned host");
        return ACL_ERROR_INVALID_PARAM;
    }
    return ACL_SUCCESS;
}

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
        return named_device && recently_freed(p, &fk) ? SIDE_FREED : SIDE_PAGEABLE;
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
    recently_freed(p, &fk);
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

/* ---- AscendCL: allocation ------------------------------------------------------------------------------------------ */

SIM_EXPORT aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    SIM_ENTER(aclrtMalloc);
    const char *fn = "aclrtMalloc";
    sim_context *ctx;
    void *p = NULL;
    size_t real = 0;
    unsigned pol = (unsigned)policy;
    aclError rc = sim_check_init(fn);
    if (!rc && !devPtr)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "devPtr is NULL; pass the address of a void *");
    if (!rc && size == 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "size is 0; expected at least 1 byte");
    /* Any policy is accepted: CANN 9.1 takes an unknown one as the default. */
    if (!rc && size > SIZE_MAX - 128)
        rc = sim_error(ACL_ERROR_RT_MEMORY_ALLOCATION, fn, "size %zu is too large", size);
    if (!rc)
        rc = sim_need_context(fn, &ctx);
    if (!rc) {
        real = (size + 31) / 32 * 32 + 32; /* CANN rounds up to 32 and adds 32 bytes of padding */
        rc = sim_device_reserve_bytes(fn, ctx->device_id, real);
        if (!rc) {
            if (posix_memalign(&p, DEVICE_ALIGN, real) != 0) {
                p = NULL;
                rc = sim_error(ACL_ERROR_RT_MEMORY_ALLOCATION, fn,
                               "the host has no memory left to simulate %zu bytes of device memory", real);
            } else {
                fill_junk(p, real);
                mem_entry e = {p, real, size, ctx->device_id, SIM_MEM_DEVICE, 0};
                if (insert_entry(&e)) {
                    free(p);
                    p = NULL;
                    rc = sim_error(ACL_ERROR_RT_MEMORY_ALLOCATION, fn, "out of host memory tracking allocations");
                }
            }
            if (rc)
                sim_device_release_bytes(ctx->device_id, real);
        }
    }
    if (!rc)
        *devPtr = p;
    SIM_RETURN(aclrtMalloc, rc, "devPtr=%p, size=%zu, policy=0x%x -> %p (%zu bytes reserved)", (void *)devPtr, size,
               pol, p, real);
}

SIM_EXPORT aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    SIM_ENTER(aclrtMallocHost);
    const char *fn = "aclrtMallocHost";
    void *p = NULL;
    aclError rc = sim_check_init(fn);
    if (!rc && !hostPtr)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "hostPtr is NULL; pass the address of a void *");
    if (!rc && size == 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "size is 0; expected at least 1 byte");
    if (!rc) {
        if (size > SIZE_MAX - 128 || posix_memalign(&p, 64, size) != 0) {
            p = NULL;
            rc = sim_error(ACL_ERROR_BAD_ALLOC, fn, "cannot allocate %zu bytes of host memory", size);
        } else {
            fill_junk(p, size);
            mem_entry e = {p, size, size, -1, SIM_MEM_HOST, 0};
            if (insert_entry(&e)) {
                free(p);
                p = NULL;
                rc = sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory tracking allocations");
            }
        }
    }
    if (!rc)
        *hostPtr = p;
    SIM_RETURN(aclrtMallocHost, rc, "hostPtr=%p, size=%zu -> %p", (void *)hostPtr, size, p);
}

/* Removes the allocation starting exactly at ptr, of the expected kind; any
 * other pointer is refused with bad_code. */
static aclError remove_allocation(const char *fn, const char *arg, void *ptr, sim_mem_kind want, aclError bad_code,
                                  mem_entry *out)
{
    aclError rc = ACL_SUCCESS;
    pthread_rwlock_wrlock(&mem_lock);
    long i = find_entry((uintptr_t)ptr);
    if (i >= 0 && mem_items[i].base == ptr && mem_items[i].kind == want) {
        *out = mem_items[i];
        size_t pins = __atomic_load_n(&mem_items[i].pins, __ATOMIC_RELAXED);
        parked_block *b = pins ? malloc(sizeof *b) : NULL;
        if (pins && !b) {
            pthread_rwlock_unlock(&mem_lock);
            return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        }
        memmove(&mem_items[i], &mem_items[i + 1], (mem_count - (size_t)i - 1) * sizeof *mem_items);
        mem_count--;
        freed_ring[freed_pos].base = (uintptr_t)out->base;
        freed_ring[freed_pos].size = out->size;
        freed_ring[freed_pos].kind = out->kind;
        freed_pos = (freed_pos + 1) % FREED_RING;
        if (b) {   /* queued work will still touch it: keep the bytes until it has run */
            *b = (parked_block){parked, out->base, pins};
            parked = b;
            out->base = NULL;
        }
        pthread_rwlock_unlock(&mem_lock);
        return ACL_SUCCESS;
    }
    mem_entry e = {0};
    if (i >= 0)
        e = mem_items[i];
    pthread_rwlock_unlock(&mem_lock);
    sim_mem_kind fk;
    const char *other = want == SIM_MEM_DEVICE ? "aclrtFreeHost" : "aclrtFree";
    if (i >= 0 && e.kind != want)
        rc = sim_error(bad_code, fn, "%s %p was allocated by %s; free it with %s", arg, ptr,
                       e.kind == SIM_MEM_DEVICE ? "aclrtMalloc" : "aclrtMallocHost", other);
    else if (i >= 0)
        rc = sim_error(bad_code, fn,
                       "%s %p points %zu bytes into the allocation at %p; pass the pointer the allocation returned",
                       arg, ptr, (size_t)((char *)ptr - e.base), (void *)e.base);
    else if (recently_freed(ptr, &fk))
        rc = sim_error(bad_code, fn, "%s %p was already freed", arg, ptr);
    else
        rc = sim_error(bad_code, fn, "%s %p was not allocated by %s (unknown pointer)", arg, ptr,
                       want == SIM_MEM_DEVICE ? "aclrtMalloc" : "aclrtMallocHost");
    return rc;
}

SIM_EXPORT aclError aclrtFree(void *devPtr)
{
    SIM_ENTER(aclrtFree);
    const char *fn = "aclrtFree";
    mem_entry e;
    aclError rc = sim_check_init(fn);
    if (!rc && !devPtr)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "devPtr is NULL");
    if (!rc)
        /* CANN 9.1: the driver refuses the pointer, the runtime answers 107000. */
        rc = remove_allocation(fn, "devPtr", devPtr, SIM_MEM_DEVICE, ACL_ERROR_RT_PARAM_INVALID, &e);
    if (!rc) {
        /* CANN frees at once, without synchronizing anything; parked bytes
         * (e.base NULL) go when the last queued task using them has run. */
        free(e.base);
        sim_device_release_bytes(e.device_id, e.size);
    }
    SIM_RETURN(aclrtFree, rc, "devPtr=%p", devPtr);
}

SIM_EXPORT aclError aclrtFreeHost(void *hostPtr)
{
    SIM_ENTER(aclrtFreeHost);
    const char *fn = "aclrtFreeHost";
    mem_entry e;
    aclError rc = sim_check_init(fn);
    if (!rc && !hostPtr)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "hostPtr is NULL");
    if (!rc)
        rc = remove_allocation(fn, "hostPtr", hostPtr, SIM_MEM_HOST, ACL_ERROR_INVALID_PARAM, &e);
    if (!rc)
        free(e.base);   /* NULL when parked for queued work, as in aclrtFree */
    SIM_RETURN(aclrtFreeHost, rc, "hostPtr=%p", hostPtr);
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

SIM_EXPORT aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free_bytes, size_t *total)
{
    SIM_ENTER(aclrtGetMemInfo);
    const char *fn = "aclrtGetMemInfo";
    sim_context *ctx;
    size_t used = 0, tot = 0;
    aclError rc = sim_check_init(fn);
    if (!rc && ((int)attr < 0 || (int)attr > 17))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "attr %d is not an aclrtMemAttr (expected 0..17)", (int)attr);
    if (!rc && !free_bytes)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "free is NULL; pass the address of a size_t");
    if (!rc && !total)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "total is NULL; pass the address of a size_t");
    if (!rc)
        rc = sim_need_context(fn, &ctx);
    if (!rc) {
        /* One memory pool per simulated device: every attr reports it. */
        sim_device_mem_usage(ctx->device_id, &used, &tot);
        *free_bytes = tot - used;
        *total = tot;
    }
    SIM_RETURN(aclrtGetMemInfo, rc, "attr=%d -> free=%zu, total=%zu", (int)attr, tot - used, tot);
}
