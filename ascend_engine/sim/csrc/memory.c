/*
 * memory.c -- device memory, pinned host memory, mem info; copies and memsets are copy.c's.
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
int sim_mem_recently_freed(const void *p, sim_mem_kind *kind)
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
        if (sim_mem_recently_freed(ptr, &fk))
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
    if (ptr && sim_mem_recently_freed(ptr, &fk)) {
        if (why && why_len)
            snprintf(why, why_len, "%p points into %s memory that was already freed", ptr,
                     fk == SIM_MEM_DEVICE ? "device" : "pinned host");
        return ACL_ERROR_INVALID_PARAM;
    }
    return ACL_SUCCESS;
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
    else if (sim_mem_recently_freed(ptr, &fk))
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
