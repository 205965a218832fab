/*
 * dvpp_loader.c -- the DVPP function table (loader.h, ae_load_dvpp), loaded
 * on first use by an engine with image nodes, never by other engines.
 *
 * CANN ships DVPP in libacl_dvpp.so beside libascendcl.so; the simulator
 * ships its companion beside libascendcl_sim.so.  The companion's own calls
 * into the runtime (streams, memory) resolve from the AscendCL library in the
 * global scope, as they do for a program linked to both: a simulator loaded
 * privately is therefore promoted to the global scope first (RTLD_NOLOAD).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ascend_engine/loader.h"

#define AE_DVPP_PATH_MAX 4096

static pthread_mutex_t g_dvpp_lock = PTHREAD_MUTEX_INITIALIZER;
static ae_dvpp_api g_dvpp;
static const ae_dvpp_api *g_dvpp_api;   /* set once loaded */

static int fill_dvpp(void *handle, const char *path, ae_dvpp_api *t, char *err, size_t err_len)
{
    memset(t, 0, sizeof(*t));
#define AE_DVPP_FN(ret, name, params)                                                                 \
    do {                                                                                              \
        void *sym_ = dlsym(handle, #name);                                                            \
        if (sym_ == NULL) {                                                                           \
            snprintf(err, err_len, "%s does not export the DVPP function %s, which image nodes need", \
                     path, #name);                                                                    \
            return -1;                                                                                \
        }                                                                                             \
        memcpy(&t->name, &sym_, sizeof(sym_));                                                        \
    } while (0);
#include "ascend_engine/dvpp_functions.h"
#undef AE_DVPP_FN
    return 0;
}

const ae_dvpp_api *ae_load_dvpp(char *err, size_t err_len)
{
    pthread_mutex_lock(&g_dvpp_lock);
    const ae_dvpp_api *out = g_dvpp_api;
    if (out) {
        pthread_mutex_unlock(&g_dvpp_lock);
        return out;
    }
    const char *lib = ae_backend_library();
    if (ae_api() == NULL || lib[0] == '\0') {
        snprintf(err, err_len, "no AscendCL backend is loaded: load one before DVPP");
        pthread_mutex_unlock(&g_dvpp_lock);
        return NULL;
    }
    if (ae_backend() == AE_BACKEND_SIM)
        dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);   /* the companion's runtime calls */
    char beside[AE_DVPP_PATH_MAX];
    const char *slash = strrchr(lib, '/');
    snprintf(beside, sizeof beside, "%.*slibacl_dvpp.so", slash ? (int)(slash - lib + 1) : 0, lib);
    const char *tried[2] = {beside, "libacl_dvpp.so"};
    char report[2 * AE_DVPP_PATH_MAX] = "";
    for (int i = 0; i < 2 && !out; i++) {
        dlerror();
        void *h = dlopen(tried[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *why = dlerror();
            size_t len = strlen(report);
            snprintf(report + len, sizeof report - len, "  %s: %s\n", tried[i], why ? why : "dlopen failed");
            continue;
        }
        char why[1024];
        if (fill_dvpp(h, tried[i], &g_dvpp, why, sizeof why)) {
            size_t len = strlen(report);
            snprintf(report + len, sizeof report - len, "  %s\n", why);
            dlclose(h);
            continue;
        }
        out = g_dvpp_api = &g_dvpp;
    }
    if (!out)
        snprintf(err, err_len,
                 "the backend '%s' (%s) has no usable DVPP library (libacl_dvpp.so), which image nodes "
                 "(jpeg_decode, resize, crop_resize) need; tried:\n%s",
                 ae_backend_name(), lib, report);
    pthread_mutex_unlock(&g_dvpp_lock);
    return out;
}
