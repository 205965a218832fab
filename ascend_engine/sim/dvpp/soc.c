/*
 * soc.c -- what depends on the SoC the simulator reports (aclrtGetSocName,
 * chosen with ASCEND_SIM_SOC_VERSION): the JPEGD output alignment and the
 * modelled device time of each module.  Figures and their sources are in
 * docs/simulator.md ("DVPP").
 */
#include <string.h>

#include "dvpp_internal.h"

dvpp_soc dvpp_current_soc(void)
{
    const char *name = aclrtGetSocName();
    if (name && strstr(name, "310P"))
        return DVPP_SOC_310P;
    if (name && strstr(name, "310"))
        return DVPP_SOC_310;
    return DVPP_SOC_910B;
}

const char *dvpp_soc_name(dvpp_soc soc)
{
    switch (soc) {
    case DVPP_SOC_310: return "Ascend310";
    case DVPP_SOC_310P: return "Ascend310P";
    case DVPP_SOC_910B: return "Ascend910B";
    }
    return "Ascend910B";
}

uint32_t dvpp_jpegd_width_align(dvpp_soc soc)
{
    return soc == DVPP_SOC_310 ? 128u : 64u;
}

/* One channel's throughput, as frames of 1920 x 1080 per second (docs/simulator.md,
 * "DVPP": the per-product tables of CANN's JPEGD and VPC performance pages). */
#define PIXELS_1080P 2073600.0
#define TASK_OVERHEAD_NS 20000.0   /* fixed cost of a DVPP task: the AI CPU kernel launch */

static double jpegd_fps_1080p(dvpp_soc soc)
{
    return soc == DVPP_SOC_910B ? 512.0 : 128.0;
}

static double vpc_fps_1080p(dvpp_soc soc)
{
    return soc == DVPP_SOC_910B ? 1440.0 : 360.0;
}

static uint64_t time_for(double fps_1080p, uint64_t pixels)
{
    return (uint64_t)(TASK_OVERHEAD_NS + (double)pixels / (PIXELS_1080P * fps_1080p) * 1e9);
}

uint64_t dvpp_jpegd_time_ns(dvpp_soc soc, uint64_t pixels)
{
    return time_for(jpegd_fps_1080p(soc), pixels);
}

/* CANN gives no JPEGE table next to these; encoding is modelled at the decoder's rate. */
uint64_t dvpp_jpege_time_ns(dvpp_soc soc, uint64_t pixels)
{
    return time_for(jpegd_fps_1080p(soc), pixels);
}

uint64_t dvpp_vpc_time_ns(dvpp_soc soc, uint64_t reference_pixels)
{
    return time_for(vpc_fps_1080p(soc), reference_pixels);
}
