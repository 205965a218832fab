/*
 * registry.c -- the table of live handles (contexts, streams, events).
 *
 * A sorted array searched by binary search: lookups happen on every enqueue
 * and take only a read lock; inserts and removals are rare.
 */
#include <stdlib.h>
#include <string.h>

#include "simrt.h"

typedef struct {
    uintptr_t addr;
    int kind;
    uint64_t serial;
} handle_entry;

/* All four guarded by reg_lock. */
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static handle_entry *reg_items;
static size_t reg_count, reg_cap;
static uint64_t reg_next_serial = 1;

/* Index of the first entry with addr >= a (caller holds reg_lock). */
static size_t lower_bound(uintptr_t a)
{
    size_t lo = 0, hi = reg_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (reg_items[mid].addr < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t sim_handle_add(void *p, int kind)
{
    uintptr_t a = (uintptr_t)p;
    uint64_t serial = 0;
    pthread_rwlock_wrlock(&reg_lock);
    if (reg_count == reg_cap) {
        size_t ncap = reg_cap ? reg_cap * 2 : 64;
        handle_entry *n = realloc(reg_items, ncap * sizeof *n);
        if (!n) {
            pthread_rwlock_unlock(&reg_lock);
            return 0;
        }
        reg_items = n;
        reg_cap = ncap;
    }
    size_t i = lower_bound(a);
    memmove(&reg_items[i + 1], &reg_items[i], (reg_count - i) * sizeof *reg_items);
    serial = reg_next_serial++;
    reg_items[i] = (handle_entry){a, kind, serial};
    reg_count++;
    pthread_rwlock_unlock(&reg_lock);
    return serial;
}

void sim_handle_remove(void *p)
{
    uintptr_t a = (uintptr_t)p;
    pthread_rwlock_wrlock(&reg_lock);
    size_t i = lower_bound(a);
    if (i < reg_count && reg_items[i].addr == a) {
        memmove(&reg_items[i], &reg_items[i + 1], (reg_count - i - 1) * sizeof *reg_items);
        reg_count--;
    }
    pthread_rwlock_unlock(&reg_lock);
}

int sim_handle_live(const void *p, int kind, uint64_t *serial)
{
    uintptr_t a = (uintptr_t)p;
    int live = 0;
    if (!p)
        return 0;
    pthread_rwlock_rdlock(&reg_lock);
    size_t i = lower_bound(a);
    if (i < reg_count && reg_items[i].addr == a && reg_items[i].kind == kind) {
        live = 1;
        if (serial)
            *serial = reg_items[i].serial;
    }
    pthread_rwlock_unlock(&reg_lock);
    return live;
}

size_t sim_handle_snapshot(int kind, void ***out)
{
    size_t n = 0;
    pthread_rwlock_rdlock(&reg_lock);
    void **arr = malloc((reg_count + 1) * sizeof *arr);
    if (arr) {
        for (size_t i = 0; i < reg_count; i++)
            if (reg_items[i].kind == kind)
                arr[n++] = (void *)reg_items[i].addr;
    }
    pthread_rwlock_unlock(&reg_lock);
    *out = arr;
    return arr ? n : 0;
}
