"""AscendCL constants the tests use, written once: return codes, copy kinds,
data types and the dynamic-batch input's name.

The values are CANN's (acl_base.h, acl_rt.h, acl_mdl.h, ge_error_codes.h),
written out here rather than read from the package, so that a test checks the
package against CANN and not against itself.
"""

import numpy as np

ACL_SUCCESS = 0
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_INVALID_PARAM = 100000
# a malformed simulator model (its own format: CANN has no such file)
ACL_ERROR_PARSE_MODEL = 100013
# the graph engine's codes, which CANN 9.1's model calls return (docs/simulator.md, "Fidelity to CANN 9.1")
ACL_ERROR_GE_PARAM_INVALID = 145000
ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID = 145002
ACL_ERROR_GE_EXEC_MODEL_ID_INVALID = 145003
ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID = 145006
ACL_ERROR_GE_FAILURE = 500002
# GE's data alignment slack: an execution's buffer may be this many bytes short
EXEC_SLACK = 64
ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID = 145012
ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID = 145013
ACL_ERROR_RT_MODEL_EXECUTE = 507011
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_MEMCPY_DEFAULT = 4
# the input a dynamic-batch or dynamic-shape model takes its gear in (ACL_DYNAMIC_TENSOR_NAME)
DYNAMIC_NAME = "ascend_mbatch_shape_data"

# aclDataType -> numpy, for the types the model tests use
ACL_DTYPES = {0: np.float32, 1: np.float16, 3: np.int32, 4: np.uint8, 9: np.int64}
