/*
 * visible.c -- ASCEND_RT_VISIBLE_DEVICES: which physical devices the process
 * sees, renumbered from 0.
 *
 * Read once by aclInit.  The rules (docs/simulator.md, "Visible devices"):
 *   - a comma-separated list of physical device ids; logical device i is the
 *     i-th id of the list, so "3" makes physical device 3 the process's
 *     device 0 and the device count 1;
 *   - reading stops at the first character that is neither a digit nor a
 *     comma, and at the first id that is not a device of the machine: the
 *     ids before it stay visible ("1, 2,3" is "1"; "1,3,8" on eight devices
 *     is "1,3");
 *   - the ids must be in ascending order: a list that is not makes no device
 *     visible, and CANN's device calls then fail (aclrtGetDeviceCount with
 *     ACL_ERROR_RT_NO_DEVICE);
 *   - a list whose first id is already invalid makes no device visible too.
 * aclInit itself succeeds in every case, as CANN's does: the setting is only
 * reported when a device is asked for.
 */
#include <stdio.h>
#include <string.h>

#include "sim.h"

/* The variable's value as quoted in messages: long values are cut short. */
static void quote_value(const char *value, char *out, size_t n)
{
    size_t len = strlen(value);
    if (len < n) {
        memcpy(out, value, len + 1);
        return;
    }
    snprintf(out, n, "%.*s...", (int)(n - 4), value);
}

void sim_visible_parse(const char *value, int physical_count, sim_visible *out)
{
    memset(out, 0, sizeof *out);
    if (physical_count > SIM_MAX_DEVICES)
        physical_count = SIM_MAX_DEVICES;
    if (!value || !*value) {
        /* Unset, or empty (treated as unset: docs/simulator.md, "Visible
         * devices"): every physical device is visible under its own id. */
        out->count = physical_count;
        for (int i = 0; i < physical_count; i++)
            out->physical[i] = (int16_t)i;
        return;
    }
    out->set = 1;
    quote_value(value, out->value, sizeof out->value);

    const char *p = value;
    int previous = -1;
    for (;;) {
        const char *start = p;
        long id = 0;
        while (*p >= '0' && *p <= '9') {
            if (id <= SIM_MAX_DEVICES) /* past that it is invalid anyway; stop growing */
                id = id * 10 + (*p - '0');
            p++;
        }
        if (p == start) {
            /* no digit: another character (or an empty entry) ends the list */
            if (out->count == 0)
                snprintf(out->why_none, sizeof out->why_none,
                         "ASCEND_RT_VISIBLE_DEVICES='%s' names no device: it must start with a physical device id "
                         "(a comma-separated list of ids in ascending order, no spaces)",
                         out->value);
            return;
        }
        if (id >= physical_count) {
            if (out->count == 0)
                snprintf(out->why_none, sizeof out->why_none,
                         "ASCEND_RT_VISIBLE_DEVICES='%s' names no device: %.*s is not a physical device id, "
                         "expected 0..%d (ASCEND_SIM_DEVICE_COUNT=%d)",
                         out->value, (int)(p - start) > 12 ? 12 : (int)(p - start), start, physical_count - 1,
                         physical_count);
            return;
        }
        if (id <= previous) {
            out->count = 0;
            snprintf(out->why_none, sizeof out->why_none,
                     "ASCEND_RT_VISIBLE_DEVICES='%s' is not in ascending order (%ld after %d): CANN makes no "
                     "device visible then; list the physical ids in ascending order",
                     out->value, id, previous);
            return;
        }
        out->physical[out->count++] = (int16_t)id;
        previous = (int)id;
        if (*p != ',')
            return; /* end of the value, or another character: the ids so far are the list */
        p++;
    }
}
