/*
 * loader.h -- AscendCL reached through a function table filled at run time.
 *
 * Nothing in ascend-engine links against an AscendCL library: the loader
 * dlopen()s either the real libascendcl.so or the simulator and fills one
 * ae_acl_api table with dlsym().  Every native layer above (runtime objects,
 * models, the executor) calls AscendCL only through a `const ae_acl_api *`.
 */
#ifndef ASCEND_ENGINE_LOADER_H
#define ASCEND_ENGINE_LOADER_H

#include <stddef.h>

#include "ascend_engine/acl.h"

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
 * Load a backend.  `request` is "auto", "acl" or "sim" (ASCEND_ENGINE_BACKEND);
 * `sim_path` is the simulator library's path.  Idempotent: once a backend is
 * loaded, later calls return 0 if it satisfies the request.  On failure
 * returns -1 and writes a message (naming every path searched, or the
 * missing symbol) into err.
 */
int ae_load_backend(const char *request, const char *sim_path, char *err, size_t err_len);

/* The loaded table, or NULL before a successful ae_load_backend(). */
const ae_acl_api *ae_api(void);
ae_backend_kind ae_backend(void);
const char *ae_backend_library(void);   /* path of the loaded library */
/* Message saying which optional function is missing, for a NULL entry. */
const char *ae_missing_function_message(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* ASCEND_ENGINE_LOADER_H */
