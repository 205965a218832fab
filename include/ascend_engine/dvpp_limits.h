/*
 * ascend-engine: the DVPP limits, the one table the executor (C) and the
 * planner (Python, through ascend_engine._dvpp_limits) both read.
 *
 * The sides JPEGD decodes and VPC produces, the regions and scale factors a
 * VPC crop or resize accepts, and the boxes one batch crop call takes
 * (docs/simulator.md, "DVPP"; docs/pipeline.md for the image nodes).
 */
#ifndef ASCEND_ENGINE_DVPP_LIMITS_H
#define ASCEND_ENGINE_DVPP_LIMITS_H

#define AE_DVPP_JPEGD_MIN_SIDE 32u      /* a JPEG decodes when both sides are at least this */
#define AE_DVPP_JPEGD_MAX_SIDE 8192u    /* ... and at most this */
#define AE_DVPP_JPEGD_HEIGHT_ALIGN 16u  /* a decoded picture's height stride */
#define AE_DVPP_VPC_OUT_MIN_W 16u       /* a VPC output: width a multiple of 16, at least 16 */
#define AE_DVPP_VPC_OUT_MIN_H 6u        /* ... height even, at least 6 */
#define AE_DVPP_VPC_OUT_MAX_SIDE 4096u  /* ... both sides at most this */
#define AE_DVPP_VPC_REGION_MIN_W 10u    /* a region VPC reads is at least 10 x 6 */
#define AE_DVPP_VPC_REGION_MIN_H 6u
#define AE_DVPP_VPC_MAX_UP 16u          /* each side scales from 1/32 to 16 times */
#define AE_DVPP_VPC_MAX_DOWN 32u
#define AE_IMAGE_MAX_BOXES 256          /* regions of one batch crop call at most */

#endif
