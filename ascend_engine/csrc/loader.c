/*
 * loader.c -- fill the ae_acl_api function table from a shared library.
 *
 * See include/ascend_engine/loader.h for the contract.  Design notes:
 *
 *  - Load once per process.  AscendCL's state is per process and a program
 *    cannot meaningfully switch from one implementation to another once it
 *    has created devices and streams, so the first successful load wins and
 *    later requests are only checked against it.
 *
 *  - Thread safety: `g_lock` serialises every load attempt and guards all of
 *    the g_* state below.  The table itself is published through `g_api`
 *    with release/acquire atomics, so ae_api() -- called on every AscendCL
 *    call path -- never takes the lock.  Once published, the table is never
 *    written again.
 *
 *  - Nothing is dlclose()d after any of its functions has run: a real
 *    AscendCL library registers process-wide state (threads, atexit hooks)
 *    on first use, and unloading it under that state is not safe.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ascend_engine/loader.h"

#define AE_PATH_MAX 4096
#define AE_NOTE_MAX 8192

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ae_acl_api g_table;                 /* filled under g_lock, then published */
static const ae_acl_api *g_api;            /* NULL until published (atomic) */
static ae_backend_kind g_kind = AE_BACKEND_NONE;
static char g_library[AE_PATH_MAX];
static int g_initialized;                  /* the loader called aclInit() itself */
static char g_note[AE_NOTE_MAX];

/* ---- small string helpers ------------------------------------------------ */

/* Append printf-style text to buf (of size cap), truncating safely. */
static void appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strnlen(buf, cap);
    if (len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

static void set_err(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t err_len, const char *fmt, ...)
{
    if (err == NULL || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- table filling ------------------------------------------------------- */

/*
 * Resolve every AE_ACL_FN entry of `handle` into `t`.  Returns 0, or -1 with
 * a message naming the first missing required function and the library.
 */
static int fill_table(void *handle, const char *path, ae_acl_api *t, char *err, size_t err_len)
{
    memset(t, 0, sizeof(*t));
    /* dlsym returns void*; converting it to a function pointer is what POSIX
     * requires to work.  memcpy keeps -Wpedantic quiet about the cast. */
#define AE_ACL_FN(required, ret, name, params)                                                    \
    do {                                                                                          \
        void *sym_ = dlsym(handle, #name);                                                        \
        if (sym_ == NULL && (required)) {                                                         \
            set_err(err, err_len,                                                                 \
                    "%s does not export the required AscendCL function %s; "                      \
                    "it is not a usable AscendCL library for ascend-engine",                     \
                    path, #name);                                                                 \
            return -1;                                                                            \
        }                                                                                         \
        memcpy(&t->name, &sym_, sizeof(sym_));                                                    \
    } while (0);
#include "ascend_engine/acl_functions.h"
#undef AE_ACL_FN
    return 0;
}

/* The file a resolved symbol lives in (the real path behind a bare soname). */
static void library_of(const ae_acl_api *t, const char *fallback, char *out, size_t cap)
{
    Dl_info info;
    void *sym;
    aclError (*fn)(const char *) = t->aclInit;
    memcpy(&sym, &fn, sizeof(sym));
    if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] != '\0')
        snprintf(out, cap, "%s", info.dli_fname);
    else
        snprintf(out, cap, "%s", fallback);
}

/* ---- the real library: candidate paths ----------------------------------- */

#define AE_MAX_CANDIDATES 64

typedef struct candidates {
    char path[AE_MAX_CANDIDATES][AE_PATH_MAX];
    int n;
} candidates;

static void add_candidate(candidates *c, const char *dir, const char *sub)
{
    if (c->n >= AE_MAX_CANDIDATES || dir == NULL || dir[0] == '\0')
        return;
    char buf[AE_PATH_MAX];
    if (sub != NULL)
        snprintf(buf, sizeof(buf), "%s/%s/libascendcl.so", dir, sub);
    else
        snprintf(buf, sizeof(buf), "%s/libascendcl.so", dir);
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->path[i], buf) == 0)
            return;
    snprintf(c->path[c->n++], AE_PATH_MAX, "%s", buf);
}

/*
 * Every place a CANN install puts libascendcl.so, in the order a user would
 * expect: the environment set by CANN's set_env.sh first, then the library
 * path, then the default install prefixes, and last the bare soname (the
 * dynamic linker's own search: ld.so.cache, /etc/ld.so.conf, system dirs).
 */
static void list_candidates(candidates *c)
{
    static const char *env_roots[] = {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"};
    static const char *prefixes[] = {
        "/usr/local/Ascend/ascend-toolkit/latest",
        "/usr/local/Ascend/latest",
        "/usr/local/Ascend/cann/latest",
    };
    c->n = 0;
    for (size_t i = 0; i < sizeof(env_roots) / sizeof(env_roots[0]); i++) {
        const char *root = getenv(env_roots[i]);
        add_candidate(c, root, "lib64");
        add_candidate(c, root, "runtime/lib64");
    }
    const char *ldp = getenv("LD_LIBRARY_PATH");
    if (ldp != NULL) {
        char copy[AE_NOTE_MAX];
        snprintf(copy, sizeof(copy), "%s", ldp);
        char *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save))
            add_candidate(c, dir, NULL);
    }
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        add_candidate(c, prefixes[i], "lib64");
        add_candidate(c, prefixes[i], "runtime/lib64");
    }
    if (c->n < AE_MAX_CANDIDATES)
        snprintf(c->path[c->n++], AE_PATH_MAX, "libascendcl.so");
}

/*
 * Try every candidate; on success fill `t`, set `chosen` and return the
 * handle.  `report` collects one line per path tried, for the error message.
 */
static void *open_real(ae_acl_api *t, char *chosen, size_t chosen_cap, char *report, size_t report_cap,
                       int *seen)
{
    *seen = 0;   /* candidates that exist (or the linker could open): found but maybe unusable */
    candidates *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        appendf(report, report_cap, "  (out of memory listing candidates)\n");
        return NULL;
    }
    list_candidates(c);
    void *found = NULL;
    for (int i = 0; i < c->n && found == NULL; i++) {
        const char *p = c->path[i];
        int bare = strchr(p, '/') == NULL;
        if (!bare && !file_exists(p)) {
            appendf(report, report_cap, "  %s: not found\n", p);
            continue;
        }
        if (!bare)
            (*seen)++;
        dlerror();
        void *h = dlopen(p, RTLD_NOW | RTLD_GLOBAL);
        if (h == NULL) {
            const char *why = dlerror();
            appendf(report, report_cap, "  %s%s: %s\n", p, bare ? " (dynamic linker search)" : "",
                    why ? why : "dlopen failed");
            continue;
        }
        if (bare)
            (*seen)++;
        char why[1024] = "";
        if (fill_table(h, p, t, why, sizeof(why)) != 0) {
            appendf(report, report_cap, "  %s: %s\n", p, why);
            dlclose(h);   /* none of its functions has run yet */
            continue;
        }
        /* A simulator toolkit folder (ascend-engine sim toolkit) installs the
         * simulator as libascendcl.so; it is not the real library.  Only the
         * simulator exports aeSimSetFaults. */
        if (dlsym(h, "aeSimSetFaults") != NULL) {
            appendf(report, report_cap,
                    "  %s: the ascend-engine AscendCL simulator (a toolkit folder), not CANN's library\n", p);
            dlclose(h);
            continue;
        }
        library_of(t, p, chosen, chosen_cap);
        found = h;
    }
    free(c);
    return found;
}

/*
 * auto mode: does the real library see a device?  aclrtGetDeviceCount may
 * need an initialized runtime; if it says so, initialise, ask again, and
 * either keep the initialisation (and tell the runtime layer through
 * ae_backend_initialized()) or undo it with aclFinalize() before falling back.
 */
static int probe_devices(const ae_acl_api *t, char *why, size_t why_cap, int *did_init)
{
    uint32_t count = 0;
    *did_init = 0;
    aclError rc = t->aclrtGetDeviceCount(&count);
    if (rc == ACL_ERROR_UNINITIALIZE) {
        aclError irc = t->aclInit(NULL);
        if (irc == ACL_SUCCESS)
            *did_init = 1;
        else if (irc != ACL_ERROR_REPEAT_INITIALIZE) {
            snprintf(why, why_cap, "aclInit failed with %d", (int)irc);
            return 0;
        }
        count = 0;
        rc = t->aclrtGetDeviceCount(&count);
    }
    if (rc != ACL_SUCCESS || count == 0) {
        if (rc != ACL_SUCCESS)
            snprintf(why, why_cap, "aclrtGetDeviceCount failed with %d", (int)rc);
        else
            snprintf(why, why_cap, "aclrtGetDeviceCount reports no device");
        if (*did_init) {
            t->aclFinalize();
            *did_init = 0;
        }
        return 0;
    }
    return 1;
}

static void publish(const ae_acl_api *t, ae_backend_kind kind, const char *library)
{
    g_table = *t;
    g_kind = kind;
    snprintf(g_library, sizeof(g_library), "%s", library);
    __atomic_store_n(&g_api, &g_table, __ATOMIC_RELEASE);
}

static int load_sim(const char *sim_path, ae_acl_api *t, char *err, size_t err_len)
{
    if (sim_path == NULL || sim_path[0] == '\0') {
        set_err(err, err_len, "no path given for the AscendCL simulator library");
        return -1;
    }
    dlerror();
    void *h = dlopen(sim_path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        set_err(err, err_len, "cannot load the AscendCL simulator %s: %s (is the package built? "
                "try `pip install -e .`)", sim_path, why ? why : "dlopen failed");
        return -1;
    }
    if (fill_table(h, sim_path, t, err, err_len) != 0) {
        dlclose(h);
        return -1;
    }
    char lib[AE_PATH_MAX];
    library_of(t, sim_path, lib, sizeof(lib));
    publish(t, AE_BACKEND_SIM, lib);
    return 0;
}

static const char *kind_name(ae_backend_kind k)
{
    return k == AE_BACKEND_ACL ? "acl" : k == AE_BACKEND_SIM ? "sim" : "none";
}

/* ---- public API ---------------------------------------------------------- */

int ae_load_backend(const char *request, const char *sim_path, char *err, size_t err_len)
{
    if (request == NULL || request[0] == '\0')
        request = "auto";
    ae_backend_kind want;
    if (strcmp(request, "auto") == 0)
        want = AE_BACKEND_NONE;
    else if (strcmp(request, "acl") == 0)
        want = AE_BACKEND_ACL;
    else if (strcmp(request, "sim") == 0)
        want = AE_BACKEND_SIM;
    else {
        set_err(err, err_len, "ASCEND_ENGINE_BACKEND=%s is not a backend; allowed values: auto, acl, sim",
                request);
        return -1;
    }

    pthread_mutex_lock(&g_lock);
    int rc = 0;
    if (g_kind != AE_BACKEND_NONE) {
        if (want != AE_BACKEND_NONE && want != g_kind) {
            set_err(err, err_len,
                    "backend '%s' requested, but '%s' (%s) is already loaded in this process; "
                    "the backend is chosen once per process",
                    request, kind_name(g_kind), g_library);
            rc = -1;
        }
        goto out;
    }

    ae_acl_api *t = calloc(1, sizeof(*t));
    char *report = calloc(1, AE_NOTE_MAX);
    if (t == NULL || report == NULL) {
        set_err(err, err_len, "out of memory while loading AscendCL");
        free(t);
        free(report);
        rc = -1;
        goto out;
    }

    if (want == AE_BACKEND_SIM) {
        rc = load_sim(sim_path, t, err, err_len);
    } else {
        char chosen[AE_PATH_MAX] = "";
        int seen = 0;
        void *h = open_real(t, chosen, sizeof(chosen), report, AE_NOTE_MAX, &seen);
        if (want == AE_BACKEND_ACL) {
            if (h == NULL) {
                set_err(err, err_len,
                        "ASCEND_ENGINE_BACKEND=acl: no usable libascendcl.so (the real AscendCL "
                        "library from a CANN install). Searched:\n%s"
                        "Install CANN and source its set_env.sh (which sets ASCEND_HOME_PATH), or "
                        "use ASCEND_ENGINE_BACKEND=sim for the simulator.",
                        report);
                rc = -1;
            } else {
                publish(t, AE_BACKEND_ACL, chosen);
            }
        } else { /* auto */
            char why[256] = "";
            int did_init = 0;
            if (h != NULL && probe_devices(t, why, sizeof(why), &did_init)) {
                g_initialized = did_init;
                publish(t, AE_BACKEND_ACL, chosen);
            } else {
                /* say why in the warning itself: nothing installed, an unusable
                 * library, or a working library without a device */
                char reason[AE_PATH_MAX + 512];
                if (h != NULL) {
                    appendf(report, AE_NOTE_MAX, "  %s: loaded, but %s\n", chosen, why);
                    snprintf(reason, sizeof(reason), "CANN's libascendcl.so (%s) loaded, but %s",
                             chosen, why);
                } else if (seen == 0) {
                    snprintf(reason, sizeof(reason),
                             "no libascendcl.so found (CANN is not installed, or its set_env.sh was "
                             "not sourced)");
                } else {
                    snprintf(reason, sizeof(reason),
                             "libascendcl.so found but not usable (the paths tried are logged "
                             "at debug level)");
                }
                rc = load_sim(sim_path, t, err, err_len);
                if (rc == 0) {
                    g_note[0] = '\0';
                    appendf(g_note, sizeof(g_note), "ascend-engine: no usable Ascend device: %s; ", reason);
                    appendf(g_note, sizeof(g_note),
                            "using the AscendCL simulator %s. Set ASCEND_ENGINE_BACKEND=sim to silence "
                            "this or =acl to require the real library.\nSearched:\n", g_library);
                    appendf(g_note, sizeof(g_note), "%s", report);
                }
            }
        }
    }
    free(t);
    free(report);
out:
    pthread_mutex_unlock(&g_lock);
    return rc;
}

const ae_acl_api *ae_api(void)
{
    return __atomic_load_n(&g_api, __ATOMIC_ACQUIRE);
}

ae_backend_kind ae_backend(void)
{
    if (ae_api() == NULL)
        return AE_BACKEND_NONE;
    return g_kind;   /* written before g_api was published */
}

const char *ae_backend_name(void)
{
    return kind_name(ae_backend());
}

const char *ae_backend_library(void)
{
    return ae_api() == NULL ? "" : g_library;
}

int ae_backend_initialized(void)
{
    return ae_api() == NULL ? 0 : g_initialized;
}

const char *ae_backend_note(void)
{
    return ae_api() == NULL ? "" : g_note;
}

const char *ae_missing_function_message(const char *name)
{
    /* One message per thread: callers format it into an exception at once. */
    static __thread char msg[AE_PATH_MAX + 1024];
    if (ae_api() == NULL) {
        snprintf(msg, sizeof(msg), "AscendCL function %s: no AscendCL backend is loaded yet",
                 name ? name : "?");
    } else {
        snprintf(msg, sizeof(msg),
                 "AscendCL function %s is not exported by %s (backend '%s'); this feature needs a "
                 "CANN version (or simulator build) that provides it",
                 name ? name : "?", g_library, kind_name(g_kind));
    }
    return msg;
}
