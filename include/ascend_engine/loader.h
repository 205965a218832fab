/*
 * loader.h -- AscendCL reached through a function table filled at run time.
 *
 * Nothing in ascend-engine links against an AscendCL library: the loader
 * dlopen()s either the real libascendcl.so or the simulator and fills one
 * ae_acl_api table with dlsym().  Every native layer above (runtime objects,
 * models, the executor) calls AscendCL only through a `const ae_acl_api *`.
 *
 * Backend selection (ASCEND_ENGINE_BACKEND, passed in as `request`):
 *   "auto"  the real libascendcl.so if it loads, exports every required
 *           function and reports at least one device; otherwise the
 *           simulator (ae_backend_note() then says why, once, for the caller
 *           to show);
 *   "acl"   the real library only; failing that, an error naming every path
 *           that was searched;
 *   "sim"   the simulator shipped inside the package.
 */
#ifndef ASCEND_ENGINE_LOADER_H
#define ASCEND_ENGINE_LOADER_H

#include <stddef.h>

#include "ascend_engine/acl.h"
#include "ascend_engine/acl_dvpp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One pointer per function of acl_functions.h; optional ones may be NULL. */
typedef struct ae_acl_api {
#define AE_ACL_FN(required, ret, name, params) ret (*name) params;
#include "ascend_engine/acl_functions.h"
#undef AE_ACL_FN
} ae_acl_api;

typedef enum ae_backend_kind {
    AE_BACKEND_NONE = 0,
    AE_BACKEND_ACL = 1,   /* the real libascendcl.so from a CANN install */
    AE_BACKEND_SIM = 2    /* libascendcl_sim.so shipped with the package */
} ae_backend_kind;

/*
 * Load a backend.  `request` is "auto", "acl" or "sim" (ASCEND_ENGINE_BACKEND;
 * NULL or "" mean "auto"); `sim_path` is the simulator library's path.
 * Idempotent and thread-safe: once a backend is loaded, later calls return 0
 * if it satisfies the request and -1 (with a message) if it does not.  On
 * failure returns -1 and writes a message (naming every path searched, or the
 * missing symbol and its library) into err.
 */
int ae_load_backend(const char *request, const char *sim_path, char *err, size_t err_len);

/* The loaded table, or NULL before a successful ae_load_backend(). */
const ae_acl_api *ae_api(void);
ae_backend_kind ae_backend(void);
const char *ae_backend_name(void);      /* "acl", "sim" or "none" */
const char *ae_backend_library(void);   /* path of the loaded library */
/*
 * Nonzero when the loader itself called aclInit() successfully while probing
 * the real library (auto mode): the runtime layer must then not call aclInit
 * again, and owns the matching aclFinalize().
 */
int ae_backend_initialized(void);
/*
 * Why "auto" picked the simulator (every path tried and what went wrong), or
 * "" when it did not fall back.  Meant to be shown to the user once.
 */
const char *ae_backend_note(void);
/*
 * DVPP (libacl_dvpp.so), loaded only when an engine has image nodes: the
 * library beside the loaded AscendCL library (the simulator's companion for
 * the simulator), else the dynamic linker's libacl_dvpp.so.  Returns the
 * table (every entry set), or NULL with a message naming the paths tried or
 * the missing function.  Thread-safe; a success is kept for the process.
 */
typedef struct ae_dvpp_api {
#define AE_DVPP_FN(ret, name, params) ret (*name) params;
#include "ascend_engine/dvpp_functions.h"
#undef AE_DVPP_FN
} ae_dvpp_api;

const ae_dvpp_api *ae_load_dvpp(char *err, size_t err_len);

/* Message saying which optional function is missing, for a NULL entry. */
const char *ae_missing_function_message(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* ASCEND_ENGINE_LOADER_H */
