# cython: language_level=3
"""The DVPP limits as Python reads them: the constants of
``include/ascend_engine/dvpp_limits.h``, the table the executor's C reads too.

Its own small module with no C sources, so that the planner reads the limits
without importing the executor (docs/executor.md, "The rooms").
"""

cdef extern from "ascend_engine/dvpp_limits.h":
    enum:
        AE_DVPP_JPEGD_MIN_SIDE
        AE_DVPP_JPEGD_MAX_SIDE
        AE_DVPP_JPEGD_HEIGHT_ALIGN
        AE_DVPP_VPC_OUT_MIN_W
        AE_DVPP_VPC_OUT_MIN_H
        AE_DVPP_VPC_OUT_MAX_SIDE
        AE_DVPP_VPC_REGION_MIN_W
        AE_DVPP_VPC_REGION_MIN_H
        AE_DVPP_VPC_MAX_UP
        AE_DVPP_VPC_MAX_DOWN
        AE_IMAGE_MAX_BOXES

JPEGD_MIN_SIDE = AE_DVPP_JPEGD_MIN_SIDE          # JPEGD's input sides, at least
JPEGD_MAX_SIDE = AE_DVPP_JPEGD_MAX_SIDE          # ... at most
JPEGD_HEIGHT_ALIGN = AE_DVPP_JPEGD_HEIGHT_ALIGN  # a decoded picture's height stride
VPC_OUT_MIN_W = AE_DVPP_VPC_OUT_MIN_W            # VPC outputs: width a multiple of 16, at least this
VPC_OUT_MIN_H = AE_DVPP_VPC_OUT_MIN_H            # ... height even, at least this
VPC_OUT_MAX_SIDE = AE_DVPP_VPC_OUT_MAX_SIDE      # ... both sides at most this
VPC_REGION_MIN_W = AE_DVPP_VPC_REGION_MIN_W      # a region VPC reads, at least W x H
VPC_REGION_MIN_H = AE_DVPP_VPC_REGION_MIN_H
VPC_MAX_UP = AE_DVPP_VPC_MAX_UP                  # each side scales from 1/MAX_DOWN to MAX_UP times
VPC_MAX_DOWN = AE_DVPP_VPC_MAX_DOWN
MAX_BOXES = AE_IMAGE_MAX_BOXES                   # regions of one batch crop call at most

# every limit by its header name, for the test that holds this module to the header
HEADER = {
    "AE_DVPP_JPEGD_MIN_SIDE": JPEGD_MIN_SIDE,
    "AE_DVPP_JPEGD_MAX_SIDE": JPEGD_MAX_SIDE,
    "AE_DVPP_JPEGD_HEIGHT_ALIGN": JPEGD_HEIGHT_ALIGN,
    "AE_DVPP_VPC_OUT_MIN_W": VPC_OUT_MIN_W,
    "AE_DVPP_VPC_OUT_MIN_H": VPC_OUT_MIN_H,
    "AE_DVPP_VPC_OUT_MAX_SIDE": VPC_OUT_MAX_SIDE,
    "AE_DVPP_VPC_REGION_MIN_W": VPC_REGION_MIN_W,
    "AE_DVPP_VPC_REGION_MIN_H": VPC_REGION_MIN_H,
    "AE_DVPP_VPC_MAX_UP": VPC_MAX_UP,
    "AE_DVPP_VPC_MAX_DOWN": VPC_MAX_DOWN,
    "AE_IMAGE_MAX_BOXES": MAX_BOXES,
}
