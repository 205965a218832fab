/*
 * objects.c -- the live handles of the library.  Every handle a Create call
 * returns is registered here, and every call checks its handles against the
 * table before touching them, so a destroyed or foreign pointer is reported
 * ("not a live acldvppPicDesc") instead of being dereferenced.  A handle is
 * freed when its last reference goes: the user's (dropped by Destroy) and one
 * per queued task that reads or writes it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "dvpp_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Open addressing over pointer values; TOMB marks a removed slot. */
#define TOMB ((dvpp_obj *)1)
static dvpp_obj **slots;
static size_t n_slots, n_used; /* n_used counts live entries and tombstones */

void dvpp_lock(void)
{
    pthread_mutex_lock(&lock);
}

void dvpp_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

static size_t slot_of(const void *p, size_t n)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 7) & (n - 1);
}

static long find_slot(const void *p)
{
    if (!n_slots)
        return -1;
    for (size_t i = slot_of(p, n_slots), k = 0; k < n_slots; i = (i + 1) & (n_slots - 1), k++) {
        if (!slots[i])
            return -1;
        if (slots[i] == p)
            return (long)i;
    }
    return -1;
}

static int grow(void)
{
    size_t n = n_slots ? n_slots * 2 : 256;
    dvpp_obj **fresh = calloc(n, sizeof *fresh);
    if (!fresh)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < n_slots; i++)
        if (slots[i] && slots[i] != TOMB) {
            size_t j = slot_of(slots[i], n);
            while (fresh[j])
                j = (j + 1) & (n - 1);
            fresh[j] = slots[i];
            used++;
        }
    free(slots);
    slots = fresh;
    n_slots = n;
    n_used = used;
    return 0;
}

int dvpp_obj_add(dvpp_obj *o, dvpp_kind kind, void (*free_fn)(dvpp_obj *))
{
    o->kind = kind;
    o->refs = 1;
    o->free_fn = free_fn;
    dvpp_lock();
    int rc = 0;
    if ((n_used + 1) * 2 > n_slots)
        rc = grow();
    if (!rc) {
        size_t j = slot_of(o, n_slots);
        while (slots[j] && slots[j] != TOMB)
            j = (j + 1) & (n_slots - 1);
        if (!slots[j])
            n_used++;
        slots[j] = o;
    }
    dvpp_unlock();
    return rc;
}

int dvpp_obj_live_locked(const void *p, dvpp_kind kind)
{
    long i = p ? find_slot(p) : -1;
    return i >= 0 && slots[i]->kind == kind;
}

const char *dvpp_kind_name(dvpp_kind kind)
{
    switch (kind) {
    case DVPP_OBJ_CHANNEL: return "acldvppChannelDesc";
    case DVPP_OBJ_PIC: return "acldvppPicDesc";
    case DVPP_OBJ_BATCH: return "acldvppBatchPicDesc";
    case DVPP_OBJ_ROI: return "acldvppRoiConfig";
    case DVPP_OBJ_RESIZE: return "acldvppResizeConfig";
    case DVPP_OBJ_BORDER: return "acldvppBorderConfig";
    case DVPP_OBJ_JPEGE: return "acldvppJpegeConfig";
    }
    return "DVPP handle";
}

static const char *creator_of(dvpp_kind kind)
{
    switch (kind) {
    case DVPP_OBJ_CHANNEL: return "acldvppCreateChannelDesc";
    case DVPP_OBJ_PIC: return "acldvppCreatePicDesc or acldvppGetPicDesc";
    case DVPP_OBJ_BATCH: return "acldvppCreateBatchPicDesc";
    case DVPP_OBJ_ROI: return "acldvppCreateRoiConfig";
    case DVPP_OBJ_RESIZE: return "acldvppCreateResizeConfig";
    case DVPP_OBJ_BORDER: return "acldvppCreateBorderConfig";
    case DVPP_OBJ_JPEGE: return "acldvppCreateJpegeConfig";
    }
    return "its Create call";
}

aclError dvpp_obj_check_locked(const char *fn, const char *arg, const void *p, dvpp_kind kind)
{
    if (!p)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL; expected an %s from %s", arg,
                          dvpp_kind_name(kind), creator_of(kind));
    if (!dvpp_obj_live_locked(p, kind))
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "%s %p is not a live %s (already destroyed, or not made by %s)", arg, p,
                          dvpp_kind_name(kind), creator_of(kind));
    return ACL_SUCCESS;
}

void dvpp_obj_remove_locked(dvpp_obj *o)
{
    long i = find_slot(o);
    if (i >= 0)
        slots[i] = TOMB;
    dvpp_obj_unref_locked(o);
}

void dvpp_obj_ref_locked(dvpp_obj *o)
{
    o->refs++;
}

void dvpp_obj_unref_locked(dvpp_obj *o)
{
    if (--o->refs == 0 && o->free_fn)
        o->free_fn(o);
}
