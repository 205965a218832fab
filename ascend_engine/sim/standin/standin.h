/*
 * standin.h -- what the companion libraries (libacl_dvpp.so, libacl_cblas.so)
 * need from the simulator, defined in libascendcl (ascend_engine/sim/csrc/
 * standin.c and companion.c) and resolved at load time from the AscendCL
 * library the program links.
 */
#ifndef AE_SIM_STANDIN_H
#define AE_SIM_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#include "ascend_engine/acl.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))

/* Records "fn: fn exists in CANN but is not simulated (what) ..." as the
 * calling thread's recent error and returns ACL_ERROR_API_NOT_SUPPORT. */
aclError aeSimNotSupported(const char *fn, const char *what);

/* Records "fn: <formatted message>" as the calling thread's recent error
 * (aclGetRecentErrMsg) and returns code. */
aclError aeSimError(aclError code, const char *fn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Resolves a stream handle as every stream call does (NULL = the current
 * context's default stream; 107002 without a context, 107017 for a dead
 * handle) and gives the device it belongs to. */
aclError aeSimStreamDevice(const char *fn, aclrtStream stream, int32_t *device_id);

/* A task of a companion library.  It runs on the stream's worker, in order
 * with the stream's other tasks; it returns ACL_SUCCESS or the device-side
 * code, with the reason written to msg.  When skip is nonzero (an injected
 * task fault) it must only release the job.  It always owns job.  It sets
 * *device_ns to the device time the task occupies its stream for (the
 * simulator holds the stream that long: docs/simulator.md, "Device time"). */
typedef aclError (*aeSimTaskFn)(void *job, int skip, char *msg, size_t msg_size, uint64_t *device_ns);

/* Queues run(job) on the stream; on failure nothing is queued and the caller
 * still owns job.  `what` names the task in logs and sticky errors. */
aclError aeSimStreamSubmit(const char *fn, aclrtStream stream, const char *what, aeSimTaskFn run, void *job);

/* [ptr, ptr+len) inside one live device allocation of device_id, or
 * ACL_ERROR_INVALID_PARAM with a message naming arg_name (freed, host
 * memory, another device, out of bounds by N bytes). */
aclError aeSimMemCheck(const char *fn, const char *arg_name, const void *ptr, size_t len, int32_t device_id);

/* Pins for queued work (see sim_mem_pin in ascend_engine/sim/csrc/sim.h):
 * the allocation's bytes stay reserved while pinned; PinLive says whether it
 * is still allocated. */
void *aeSimMemPin(const void *ptr);
int aeSimMemPinLive(const void *token);
void aeSimMemUnpin(void *token);

#endif /* AE_SIM_STANDIN_H */
