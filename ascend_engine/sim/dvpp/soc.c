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

/* One channel's throughput, as frames of 1920 x 1080 per second. */
#define PIXELS_1080P 2073600.0
#define JPEGD_FPS_1080P 128.0
#define JPEGE_FPS_1080P 128.0
#define VPC_FPS_1080P 360.0
#define TASK_OVERHEAD_NS 20000.0   /* fixed cost of a DVPP task: the AI CPU kernel launch */

static uint64_t time_for(double fps_1080p, uint64_t pixels)
{
    return (uint64_t)(TASK_OVERHEAD_NS + (double)pixels / (PIXELS_1080P * fps_1080p) * 1e9);
}

uint64_t dvpp_jpegd_time_ns(dvpp_soc soc, uint64_t pixels)
{
    (void)soc;
    return time_for(JPEGD_FPS_1080P, pixels);
}

uint64_t dvpp_jpege_time_ns(dvpp_soc soc, uint64_t pixels)
{
    (void)soc;
    return time_for(JPEGE_FPS_1080P, pixels);
}

uint64_t dvpp_vpc_time_ns(dvpp_soc soc, uint64_t reference_pixels)
{
    (void)soc;
    return time_for(VPC_FPS_1080P, reference_pixels);
}
