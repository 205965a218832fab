/*
 * ascend_sim.h -- extras exported by the AscendCL simulator (libascendcl_sim)
 * only.  The real libascendcl.so does not have these symbols: look them up
 * with dlsym and treat their absence as "not the simulator".
 */
#ifndef ASCEND_ENGINE_ASCEND_SIM_H
#define ASCEND_ENGINE_ASCEND_SIM_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * The physical device behind logical device `deviceId`: the id itself unless
 * ASCEND_RT_VISIBLE_DEVICES renumbered the visible devices at aclInit.
 * Returns 0, ACL_ERROR_UNINITIALIZE (100001) before aclInit,
 * ACL_ERROR_INVALID_PARAM (100000) for a NULL physicalId, or
 * ACL_ERROR_RT_INVALID_DEVICEID (107001) for an id that is not visible.
 */
int aeSimDevicePhysicalId(int32_t deviceId, int32_t *physicalId);

/*
 * Which pairs of devices have no peer-to-peer link, replacing what
 * ASCEND_SIM_NO_P2P set at aclInit: NULL or "" (every pair linked, the
 * default), "all" (none linked) or pairs of physical device ids "0-1,2-3"
 * (each pair unlinked in both directions).  Unlinked pairs report 0 from
 * aclrtDeviceCanAccessPeer and refuse aclrtDeviceEnablePeerAccess; directions
 * already enabled stay enabled.  Returns 0, ACL_ERROR_UNINITIALIZE (100001)
 * before aclInit, or ACL_ERROR_INVALID_PARAM (100000) for a malformed spec,
 * with the reason in aclGetRecentErrMsg(); the previous setting then stays.
 */
int aeSimSetNoP2P(const char *spec);

/*
 * What the simulator knows of host code reading [ptr, ptr+len) (its device
 * memory is host memory too): 0 when the range lies inside one live
 * allocation (aclrtMalloc, aclrtMallocHost, acldvppMalloc) or in memory the
 * simulator never handed out, ACL_ERROR_INVALID_PARAM (100000) when it starts
 * in a live allocation and runs past its end, or points into memory freed
 * recently; the reason then goes to `why` (may be NULL).  Memory the
 * simulator never handed out is not checked: ascend_engine.acl's pointer
 * helpers check that it is mapped (docs/pyacl.md).
 */
int aeSimMemRange(const void *ptr, size_t len, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* ASCEND_ENGINE_ASCEND_SIM_H */
