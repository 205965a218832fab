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
 */
#include <stdatomic.h>

#include "sim.h"

#define SIM_SAT_DEVICES 1024   /* the largest ASCEND_SIM_DEVICE_COUNT */

/* 0 = never set (report INFNAN), otherwise mode + 1 */
static atomic_int sat_mode[SIM_SAT_DEVICES];

SIM_EXPORT aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode)
{
    SIM_ENTER(aclrtSetDeviceSatMode);
    const char *fn = "aclrtSetDeviceSatMode";
    sim_context *ctx = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && mode != ACL_RT_OVERFLOW_MODE_SATURATION && mode != ACL_RT_OVERFLOW_MODE_INFNAN)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "mode %d: expected ACL_RT_OVERFLOW_MODE_SATURATION (0) or "
                       "ACL_RT_OVERFLOW_MODE_INFNAN (1)", (int)mode);
    if (rc == ACL_SUCCESS)
        rc = sim_need_context(fn, &ctx);
    if (rc == ACL_SUCCESS && ctx->device_id >= 0 && ctx->device_id < SIM_SAT_DEVICES)
        atomic_store(&sat_mode[ctx->device_id], (int)mode + 1);
    SIM_RETURN(aclrtSetDeviceSatMode, rc, "mode %d", (int)mode);
}

SIM_EXPORT aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode)
{
    SIM_ENTER(aclrtGetDeviceSatMode);
    const char *fn = "aclrtGetDeviceSatMode";
    sim_context *ctx = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && !mode)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "mode is NULL");
    if (rc == ACL_SUCCESS)
        rc = sim_need_context(fn, &ctx);
    if (rc == ACL_SUCCESS) {
        int v = ctx->device_id >= 0 && ctx->device_id < SIM_SAT_DEVICES ? atomic_load(&sat_mode[ctx->device_id]) : 0;
        *mode = v ? (aclrtFloatOverflowMode)(v - 1) : ACL_RT_OVERFLOW_MODE_INFNAN;
    }
    SIM_RETURN(aclrtGetDeviceSatMode, rc, "%s", "query");
}
