/*
 * satmode.c -- aclrtSetDeviceSatMode / aclrtGetDeviceSatMode: the device's
 * float overflow mode (saturate to the largest finite value, or produce
 * inf/nan as IEEE 754 does).
 *
 * The mode is stored per device and reported back.  The simulator's kernels
 * compute in IEEE float32 whatever the mode, so the default reported is
 * ACL_RT_OVERFLOW_MODE_INFNAN, which is what they actually do; a program that
 * selects saturation still runs, with inf/nan results where the NPU would
 * saturate (docs/simulator.md).
 *
 * Since CANN 8.0 the mode belongs to "the current Device" (earlier versions:
 * the device of the current context; docs/simulator.md, fidelity sweep), and
 * benchmark tools call aclrtSetDeviceSatMode right after aclInit, before any
 * aclrtSetDevice.  So a thread without a current context sets (and reads) the process-wide default
 * that every device reports until it is given its own mode.
 */
#include <stdatomic.h>

#include "sim.h"

#define SIM_SAT_DEVICES 1024   /* the largest ASCEND_SIM_DEVICE_COUNT */

/* 0 = never set (report the default), otherwise mode + 1 */
static atomic_int sat_mode[SIM_SAT_DEVICES];
static atomic_int sat_default;   /* set without a current context */

SIM_EXPORT aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode)
{
    SIM_ENTER(aclrtSetDeviceSatMode);
    const char *fn = "aclrtSetDeviceSatMode";
    sim_context *ctx = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && mode != ACL_RT_OVERFLOW_MODE_SATURATION && mode != ACL_RT_OVERFLOW_MODE_INFNAN)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "mode %d: expected ACL_RT_OVERFLOW_MODE_SATURATION (0) or "
                       "ACL_RT_OVERFLOW_MODE_INFNAN (1)", (int)mode);
    if (rc == ACL_SUCCESS) {
        ctx = sim_current_context();
        if (!ctx)
            atomic_store(&sat_default, (int)mode + 1);
        else if (ctx->device_id >= 0 && ctx->device_id < SIM_SAT_DEVICES)
            atomic_store(&sat_mode[ctx->device_id], (int)mode + 1);
    }
    SIM_RETURN(aclrtSetDeviceSatMode, rc, "mode %d (%s)", (int)mode, ctx ? "current device" : "process default");
}

SIM_EXPORT aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode)
{
    SIM_ENTER(aclrtGetDeviceSatMode);
    const char *fn = "aclrtGetDeviceSatMode";
    sim_context *ctx = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && !mode)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "mode is NULL");
    if (rc == ACL_SUCCESS) {
        ctx = sim_current_context();
        int v = ctx && ctx->device_id >= 0 && ctx->device_id < SIM_SAT_DEVICES ? atomic_load(&sat_mode[ctx->device_id])
                                                                              : 0;
        if (!v)
            v = atomic_load(&sat_default);
        *mode = v ? (aclrtFloatOverflowMode)(v - 1) : ACL_RT_OVERFLOW_MODE_INFNAN;
    }
    SIM_RETURN(aclrtGetDeviceSatMode, rc, "%s", "query");
}
