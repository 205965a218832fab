/*
 * standin.c -- the one place the companion stand-in libraries (libacl_dvpp.so,
 * libacl_cblas.so of a simulator toolkit) report a function that exists in
 * CANN but is not simulated.  They leave aeSimNotSupported undefined and take
 * it from the AscendCL library the program links, so the message lands in the
 * same per-thread recent error that aclGetRecentErrMsg() reads.
 */
#include "sim.h"

SIM_EXPORT aclError aeSimNotSupported(const char *fn, const char *what)
{
    const char *name = fn ? fn : "(unknown function)";
    aclError rc = sim_error(ACL_ERROR_API_NOT_SUPPORT, name,
                            "%s exists in CANN but is not simulated (%s); the AscendCL simulator answers "
                            "ACL_ERROR_API_NOT_SUPPORT (200001). Run this part of the program on an Ascend device",
                            name, what ? what : "no CPU model of it");
    if (sim_log_enabled)
        sim_log_call(name, rc, "not simulated");
    return rc;
}
