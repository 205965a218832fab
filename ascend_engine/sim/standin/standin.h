/*
 * standin.h -- what the stand-in companion libraries (libacl_dvpp.so,
 * libacl_cblas.so) need from the simulator: aeSimNotSupported, defined in
 * libascendcl (ascend_engine/sim/csrc/standin.c) and resolved at load time.
 */
#ifndef AE_SIM_STANDIN_H
#define AE_SIM_STANDIN_H

#include "ascend_engine/acl.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))

/* Records "fn: fn exists in CANN but is not simulated (what) ..." as the
 * calling thread's recent error and returns ACL_ERROR_API_NOT_SUPPORT. */
aclError aeSimNotSupported(const char *fn, const char *what);

#endif /* AE_SIM_STANDIN_H */
