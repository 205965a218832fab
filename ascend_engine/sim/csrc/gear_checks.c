/*
 * gear_checks.c -- ASCEND_SIM_GEAR_CHECKS, the switch for the two checks the
 * simulator makes on gear models (dynamic batch, image size, dims) and
 * dynamic-AIPP models that CANN 9.1 does not make (docs/simulator.md,
 * "Fidelity to CANN 9.1"):
 *
 *   strict (default)  an execution with no aclmdlSet* gear in its input
 *                     dataset fails with 145013, and a buffer more than 64
 *                     bytes smaller than the selected gear's fails with
 *                     500002, as for a static model;
 *   cann              as CANN: the gear is whatever the
 *                     ascend_mbatch_shape_data buffer holds, and buffer
 *                     sizes are not checked.
 *
 * Read at every execution of such a model (not cached), so a program or a
 * test may change it between executions.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

aclError sim_gear_checks(const char *fn, int *strict)
{
    const char *v = getenv("ASCEND_SIM_GEAR_CHECKS");
    *strict = 1;
    if (!v || !v[0] || !strcmp(v, "strict"))
        return ACL_SUCCESS;
    if (!strcmp(v, "cann")) {
        *strict = 0;
        return ACL_SUCCESS;
    }
    return sim_error(ACL_ERROR_INVALID_PARAM, fn, "ASCEND_SIM_GEAR_CHECKS='%s' is invalid: expected 'strict' "
                     "(the default: refuse a gear model executed without a gear set, or with a buffer smaller "
                     "than its gear) or 'cann' (CANN 9.1's behaviour: neither is checked)", v);
}
