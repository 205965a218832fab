"""The DVPP limits have one home, include/ascend_engine/dvpp_limits.h: the
executor's C includes it and the planner reads it through ascend_engine._dvpp_limits."""

import os
import re

from ascend_engine import _dvpp_limits, spec_images
from ascend_engine.planner import images

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(REPO, "include", "ascend_engine", "dvpp_limits.h")


def header_limits():
    with open(HEADER) as f:
        text = f.read()
    found = re.findall(r"^#define (AE_\w+) (\d+)u?\b", text, re.MULTILINE)
    return {name: int(value) for name, value in found}


def test_the_module_exports_every_limit_of_the_header_with_its_value():
    limits = header_limits()
    assert len(limits) == 11
    assert limits["AE_DVPP_JPEGD_MAX_SIDE"] == 8192 and limits["AE_IMAGE_MAX_BOXES"] == 256
    assert _dvpp_limits.HEADER == limits


def test_the_planner_and_the_spec_read_the_header_values():
    limits = header_limits()
    assert (images.JPEGD_MIN, images.JPEGD_MAX) == (limits["AE_DVPP_JPEGD_MIN_SIDE"],
                                                    limits["AE_DVPP_JPEGD_MAX_SIDE"])
    assert (images.VPC_MIN_W, images.VPC_MIN_H, images.VPC_MAX) == (
        limits["AE_DVPP_VPC_OUT_MIN_W"], limits["AE_DVPP_VPC_OUT_MIN_H"], limits["AE_DVPP_VPC_OUT_MAX_SIDE"])
    assert (images.MAX_UP, images.MAX_DOWN) == (limits["AE_DVPP_VPC_MAX_UP"], limits["AE_DVPP_VPC_MAX_DOWN"])
    assert images.MAX_BOXES == limits["AE_IMAGE_MAX_BOXES"]
    assert spec_images.MAX_SIDE == limits["AE_DVPP_JPEGD_MAX_SIDE"]


def test_no_other_file_writes_a_limit_down_again():
    # the C side: image_steps.c and executor.h define none of them themselves
    for path in ("ascend_engine/csrc/image_steps.c", "include/ascend_engine/executor.h"):
        with open(os.path.join(REPO, path)) as f:
            text = f.read()
        assert re.findall(r"^#define \w*(JPEGD|VPC|MAX_BOXES)\w* ", text, re.MULTILINE) == [], path
    # the Python side: no literal of a side or box limit beside the names
    for path in ("ascend_engine/planner/images.py", "ascend_engine/spec_images.py"):
        with open(os.path.join(REPO, path)) as f:
            text = f.read()
        assert re.findall(r"=\s*(?:8192|4096|256)\b", text) == [], path
