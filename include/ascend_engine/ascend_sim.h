/*
 * ascend_sim.h -- extras exported by the AscendCL simulator (libascendcl_sim)
 * only.  The real libascendcl.so does not have these symbols: look them up
 * with dlsym and treat their absence as "not the simulator".
 */
#ifndef ASCEND_ENGINE_ASCEND_SIM_H
#define ASCEND_ENGINE_ASCEND_SIM_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Replace the simulator's fault-injection rules (the same grammar as the
 * ASCEND_SIM_FAULTS environment variable; see docs/simulator.md):
 *
 *     FUNC@N=CODE        the N-th call of FUNC returns CODE and does nothing
 *     FUNC@N+=CODE       every call of FUNC from the N-th on does so
 *     task:KIND@N=CODE   the N-th task of KIND fails on the device
 *     stall:KIND@N=MS    the N-th task of KIND holds its stream MS ms first
 *
 * Rules are separated by ','; counting starts when the rules are set.  NULL
 * or "" removes every rule.  Returns 0, or ACL_ERROR_INVALID_PARAM (100000)
 * for a malformed spec, with the reason in aclGetRecentErrMsg(); the previous
 * rules then stay in force.
 */
int aeSimSetFaults(const char *spec);

#ifdef __cplusplus
}
#endif

#endif /* ASCEND_ENGINE_ASCEND_SIM_H */
