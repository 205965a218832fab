/*
 * peer.c -- peer access between devices: which pairs have a P2P link, which
 * directions the program enabled, and the rule cross-device copies follow.
 *
 * The rules, as docs/simulator.md records them ("Peer access between devices"):
 *   - aclrtDeviceCanAccessPeer(&can, a, b) needs no context; a == b is
 *     ACL_ERROR_INVALID_PARAM, an id that is not visible 107001; `can` is 1
 *     when the pair has a link, else 0.
 *   - aclrtDeviceEnablePeerAccess(peer, flags) works on the current context's
 *     device: flags other than 0 are ACL_ERROR_FEATURE_UNSUPPORTED (checked
 *     first), the current device itself is ACL_ERROR_INVALID_PARAM, a pair
 *     without a link ACL_ERROR_RT_FEATURE_NOT_SUPPORT.  Access is one-way:
 *     device 0 enabling peer 1 opens the direction 0 -> 1 only.
 *   - aclrtDeviceDisablePeerAccess(peer) closes that direction again.
 *   - A device-to-device copy between two devices needs the direction from
 *     the source's device to the destination's device enabled.
 *
 * Which pairs lack a link is the simulator's control: ASCEND_SIM_NO_P2P at
 * aclInit or aeSimSetNoP2P() at any time, in physical device ids (the
 * machine's topology does not change when ASCEND_RT_VISIBLE_DEVICES
 * renumbers the devices a process sees).
 */
#include <stdio.h>
#include <string.h>

#include "simrt.h"

#define PAIR_BITS ((size_t)SIM_MAX_DEVICES * SIM_MAX_DEVICES)

/* Both tables are read by copies on any thread and written by the peer
 * calls and the control, so every access takes peer_mu.  Bit (a, b) is at
 * a * SIM_MAX_DEVICES + b; the tables are 128 KiB each, no allocation. */
static pthread_mutex_t peer_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t no_link[PAIR_BITS / 8];   /* physical ids, symmetric */
static int no_link_all;                  /* "all": no pair has a link */
static uint8_t enabled[PAIR_BITS / 8];   /* logical ids, one direction each */

static size_t bit(int a, int b)
{
    return (size_t)a * SIM_MAX_DEVICES + (size_t)b;
}

static int get_bit(const uint8_t *t, size_t i)
{
    return (t[i / 8] >> (i % 8)) & 1;
}

static void set_bit(uint8_t *t, size_t i, int on)
{
    if (on)
        t[i / 8] |= (uint8_t)(1u << (i % 8));
    else
        t[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* ---- the link control -------------------------------------------------------------------------------- */

/* Parses "all", "" or "a-b,c-d,..." (physical ids below physical_count, a != b)
 * into the link table.  On error writes the reason to why and changes nothing. */
static int parse_no_link(const char *spec, int physical_count, char *why, size_t n)
{
    static uint8_t parsed[PAIR_BITS / 8];   /* under peer_mu: the callers hold it */
    memset(parsed, 0, sizeof parsed);
    int all = 0;
    if (spec && strcmp(spec, "all") == 0) {
        all = 1;
    } else if (spec && *spec) {
        const char *p = spec;
        for (;;) {
            long ids[2];
            for (int k = 0; k < 2; k++) {
                const char *start = p;
                long v = 0;
                while (*p >= '0' && *p <= '9') {
                    if (v <= SIM_MAX_DEVICES)
                        v = v * 10 + (*p - '0');
                    p++;
                }
                if (p == start) {
                    snprintf(why, n, "expected a physical device id at offset %d, got '%.8s'", (int)(start - spec),
                             start);
                    return -1;
                }
                if (v >= physical_count) {
                    snprintf(why, n, "device %ld is not a physical device: ids are 0..%d (ASCEND_SIM_DEVICE_COUNT=%d)",
                             v, physical_count - 1, physical_count);
                    return -1;
                }
                ids[k] = v;
                if (k == 0) {
                    if (*p != '-') {
                        snprintf(why, n, "expected '-' after device %ld at offset %d, got '%.8s'", v,
                                 (int)(p - spec), *p ? p : "end of value");
                        return -1;
                    }
                    p++;
                }
            }
            if (ids[0] == ids[1]) {
                snprintf(why, n, "pair %ld-%ld names one device twice: a pair is two different devices", ids[0],
                         ids[1]);
                return -1;
            }
            set_bit(parsed, bit((int)ids[0], (int)ids[1]), 1);
            set_bit(parsed, bit((int)ids[1], (int)ids[0]), 1);
            if (*p == '\0')
                break;
            if (*p != ',') {
                snprintf(why, n, "expected ',' or the end after pair %ld-%ld, got '%.8s'", ids[0], ids[1], p);
                return -1;
            }
            p++;
        }
    }
    memcpy(no_link, parsed, sizeof no_link);
    no_link_all = all;
    return 0;
}

aclError sim_peer_configure(const char *spec, int physical_count)
{
    char why[256];
    pthread_mutex_lock(&peer_mu);
    int bad = parse_no_link(spec, physical_count, why, sizeof why);
    if (!bad)
        memset(enabled, 0, sizeof enabled);   /* a new aclInit starts with no access enabled */
    pthread_mutex_unlock(&peer_mu);
    if (bad)
        return sim_error(ACL_ERROR_INVALID_PARAM, "aclInit",
                         "environment variable ASCEND_SIM_NO_P2P='%s' is invalid: %s; expected 'all' or pairs of "
                         "physical device ids such as '0-1,2-3'",
                         spec, why);
    return ACL_SUCCESS;
}

SIM_EXPORT int aeSimSetNoP2P(const char *spec)
{
    char why[256];
    aclError rc = sim_check_init("aeSimSetNoP2P");
    if (rc)
        return rc;
    pthread_mutex_lock(&peer_mu);
    int bad = parse_no_link(spec, sim_cfg.device_count, why, sizeof why);
    pthread_mutex_unlock(&peer_mu);
    if (bad)
        return sim_error(ACL_ERROR_INVALID_PARAM, "aeSimSetNoP2P",
                         "spec '%s' is invalid: %s; expected NULL or '' (every pair linked), 'all' or pairs of "
                         "physical device ids such as '0-1,2-3'",
                         spec, why);
    return ACL_SUCCESS;
}

/* ---- queries used by the copy checks ---------------------------------------------------------------- */

/* Caller holds peer_mu; ids are visible logical ids. */
static int linked_locked(int32_t a, int32_t b)
{
    if (no_link_all)
        return 0;
    return !get_bit(no_link, bit(sim_cfg.visible.physical[a], sim_cfg.visible.physical[b]));
}

int sim_peer_enabled(int32_t from, int32_t to)
{
    if (from < 0 || to < 0 || from >= SIM_MAX_DEVICES || to >= SIM_MAX_DEVICES)
        return 0;
    pthread_mutex_lock(&peer_mu);
    int on = get_bit(enabled, bit(from, to));
    pthread_mutex_unlock(&peer_mu);
    return on;
}

uint64_t sim_peer_copy_time_ns(size_t bytes)
{
    if (sim_cfg.d2d_gbps <= 0)
        return 0;
    return (uint64_t)((double)bytes / sim_cfg.d2d_gbps); /* bytes / (GB/s) = ns */
}

/* ---- AscendCL ------------------------------------------------------------------------------------------ */

SIM_EXPORT aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId)
{
    SIM_ENTER(aclrtDeviceCanAccessPeer);
    const char *fn = "aclrtDeviceCanAccessPeer";
    aclError rc = sim_check_init(fn);
    if (!rc && deviceId == peerDeviceId)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn,
                       "deviceId and peerDeviceId are both %d: a device is not its own peer; pass two different "
                       "devices",
                       (int)deviceId);
    if (!rc)
        rc = sim_check_device_id(fn, peerDeviceId);
    if (!rc)
        rc = sim_check_device_id(fn, deviceId);
    if (!rc && !canAccessPeer)
        rc = sim_error(ACL_ERROR_RT_PARAM_INVALID, fn, "canAccessPeer is NULL; pass the address of an int32_t");
    if (!rc) {
        pthread_mutex_lock(&peer_mu);
        *canAccessPeer = linked_locked(deviceId, peerDeviceId);
        pthread_mutex_unlock(&peer_mu);
    }
    SIM_RETURN(aclrtDeviceCanAccessPeer, rc, "canAccessPeer=%p, deviceId=%d, peerDeviceId=%d", (void *)canAccessPeer,
               (int)deviceId, (int)peerDeviceId);
}

/* The checks enable and disable share: a current context, a different, visible peer. */
static aclError peer_target(const char *fn, int32_t peer, int32_t *self)
{
    sim_context *ctx;
    aclError rc = sim_check_init(fn);
    if (!rc)
        rc = sim_need_context(fn, &ctx);
    if (rc)
        return rc;
    if (ctx->device_id == peer)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn,
                         "peerDeviceId %d is the current device: pass another device (peer access is between two "
                         "devices, from the current one to the peer)",
                         (int)peer);
    if ((rc = sim_check_device_id(fn, peer)))
        return rc;
    *self = ctx->device_id;
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags)
{
    SIM_ENTER(aclrtDeviceEnablePeerAccess);
    const char *fn = "aclrtDeviceEnablePeerAccess";
    int32_t self = -1;
    aclError rc = sim_check_init(fn);
    if (!rc && flags != 0)
        rc = sim_error(ACL_ERROR_FEATURE_UNSUPPORTED, fn, "flags is %u: the parameter is reserved and must be 0",
                       (unsigned)flags);
    if (!rc)
        rc = peer_target(fn, peerDeviceId, &self);
    if (!rc) {
        pthread_mutex_lock(&peer_mu);
        int linked = linked_locked(self, peerDeviceId);
        if (linked)
            set_bit(enabled, bit(self, peerDeviceId), 1);   /* enabling twice is harmless */
        pthread_mutex_unlock(&peer_mu);
        if (!linked)
            rc = sim_error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                           "devices %d and %d have no peer-to-peer link (aclrtDeviceCanAccessPeer reports 0; "
                           "ASCEND_SIM_NO_P2P); copy between them through host memory",
                           (int)self, (int)peerDeviceId);
    }
    SIM_RETURN(aclrtDeviceEnablePeerAccess, rc, "peerDeviceId=%d, flags=%u", (int)peerDeviceId, (unsigned)flags);
}

SIM_EXPORT aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId)
{
    SIM_ENTER(aclrtDeviceDisablePeerAccess);
    const char *fn = "aclrtDeviceDisablePeerAccess";
    int32_t self = -1;
    aclError rc = peer_target(fn, peerDeviceId, &self);
    if (!rc) {
        pthread_mutex_lock(&peer_mu);
        set_bit(enabled, bit(self, peerDeviceId), 0);   /* disabling what is off is harmless */
        pthread_mutex_unlock(&peer_mu);
    }
    SIM_RETURN(aclrtDeviceDisablePeerAccess, rc, "peerDeviceId=%d", (int)peerDeviceId);
}
