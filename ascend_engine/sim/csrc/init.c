/*
 * init.c -- aclInit / aclFinalize / aclFinalizeReference, the runtime's lazy
 * start, configuration from the environment, time.
 *
 * Two states, as in CANN 9.1 (docs/simulator.md, "Fidelity to CANN 9.1"):
 *   - the runtime (devices, contexts, streams) starts on the first call that
 *     needs it, aclInit or any aclrt* call: the runtime has no init gate;
 *   - the acl layer (aclInit's reference count, the model executor) is up
 *     between a successful aclInit and aclFinalize.  A repeated aclInit
 *     answers ACL_ERROR_REPEAT_INITIALIZE and counts one more reference,
 *     which aclFinalizeReference gives back; aclFinalize ignores the count.
 * aclFinalize stops both; the runtime starts again on the next call.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simrt.h"

sim_config sim_cfg;

/* Transitions happen under init_lock; readers load rt_up atomically (acquire
 * pairs with the release store made after sim_cfg and the devices are set). */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int rt_up;        /* the runtime's devices exist */
static atomic_int acl_up;       /* aclInit succeeded and no aclFinalize since */
/* Guarded by init_lock. */
static uint64_t init_refs;      /* aclInit calls since the successful one (aclFinalizeReference) */
static int finalized;           /* aclFinalize ran since the last aclInit: a second one is 100037 */
static int config_recorded;     /* the first successful aclInit's config contents were hashed */
static uint64_t config_hash;    /* ... and this is their hash */
static char config_first_path[256];

/* ---- time ------------------------------------------------------------------------ */

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_sleep_until_ns(uint64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* ---- state ------------------------------------------------------------------------- */

int sim_is_initialized(void)
{
    return atomic_load_explicit(&rt_up, memory_order_acquire);
}

static aclError read_config(const char *fn, sim_config *c);

/* Starts the runtime if it is not up (caller holds init_lock). */
static aclError runtime_start(const char *fn)
{
    if (atomic_load_explicit(&rt_up, memory_order_relaxed))
        return ACL_SUCCESS;
    char msg[SIM_MSG_MAX];
    if (sim_fault_env_error(msg, sizeof msg))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s", msg);
    sim_config c;
    memset(&c, 0, sizeof c);
    aclError rc = read_config(fn, &c);
    if (rc)
        return rc;
    sim_cfg = c;
    rc = sim_devices_create();
    if (!rc)
        atomic_store_explicit(&rt_up, 1, memory_order_release);
    return rc;
}

aclError sim_check_init(const char *fn)
{
    if (atomic_load_explicit(&rt_up, memory_order_acquire))
        return ACL_SUCCESS;
    /* CANN's runtime has no init gate: it starts itself on first use. */
    pthread_mutex_lock(&init_lock);
    aclError rc = runtime_start(fn);
    pthread_mutex_unlock(&init_lock);
    return rc;
}

aclError sim_check_ge_init(const char *fn)
{
    if (atomic_load_explicit(&acl_up, memory_order_acquire))
        return sim_check_init(fn);
    return sim_error(ACL_ERROR_GE_EXEC_NOT_INIT, fn,
                     "the model executor is not initialized: call aclInit first (aclInit starts it, aclFinalize "
                     "stops it; the aclrt* calls do not need it)");
}

/* ---- configuration -------------------------------------------------------------------- */

static aclError bad_env(const char *fn, const char *name, const char *value, const char *expected)
{
    return sim_error(ACL_ERROR_INVALID_PARAM, fn, "environment variable %s='%s' is invalid: expected %s", name,
                     value, expected);
}

static aclError env_int(const char *fn, const char *name, int def, int lo, int hi, int *out)
{
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v)
        return ACL_SUCCESS;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (end == v || *end || errno || x < lo || x > hi) {
        char expected[96];
        snprintf(expected, sizeof expected, "an integer in %d..%d", lo, hi);
        return bad_env(fn, name, v, expected);
    }
    *out = (int)x;
    return ACL_SUCCESS;
}

/* "8GiB", "512MB", "64MiB", "1048576", "1.5G": binary for K/M/G/T, KiB.. ;
 * decimal for KB/MB/GB/TB. */
static aclError env_bytes(const char *fn, const char *name, size_t def, size_t *out)
{
    static const struct {
        const char *suffix;
        double mul;
    } units[] = {
        {"", 1},          {"B", 1},
        {"K", 1024.0},    {"KiB", 1024.0},       {"KB", 1e3},
        {"M", 1048576.0}, {"MiB", 1048576.0},    {"MB", 1e6},
        {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"GB", 1e9},
        {"T", 1099511627776.0}, {"TiB", 1099511627776.0}, {"TB", 1e12},
    };
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v)
        return ACL_SUCCESS;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !isfinite(x) || x <= 0 || !isdigit((unsigned char)v[0]))
        return bad_env(fn, name, v, "a positive size such as 8GiB, 512MB, 64MiB or a number of bytes");
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            double b = x * units[i].mul;
            if (b < 1 || b > 9.0e18)
                break;
            *out = (size_t)b;
            return ACL_SUCCESS;
        }
    }
    return bad_env(fn, name, v, "a positive size such as 8GiB, 512MB, 64MiB or a number of bytes");
}

static aclError env_gbps(const char *fn, const char *name, double *out)
{
    const char *v = getenv(name);
    *out = 0;
    if (!v || !*v)
        return ACL_SUCCESS;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    while (*end == ' ')
        end++;
    if (end == v || *end || errno || !isfinite(x) || x < 0)
        return bad_env(fn, name, v, "a bandwidth in GB/s >= 0 (0 = as fast as memcpy)");
    *out = x;
    return ACL_SUCCESS;
}

/* The SoC the simulator reports (aclrtGetSocName), which selects the
 * per-SoC rules of the DVPP companion (docs/simulator.md, "DVPP"). */
static aclError env_soc(const char *fn, const char *name, char *out, size_t n)
{
    static const char *const socs[] = {"Ascend310", "Ascend310P3", "Ascend910B"};
    const char *v = getenv(name);
    snprintf(out, n, "Ascend910B-sim");
    if (!v || !*v)
        return ACL_SUCCESS;
    for (size_t i = 0; i < sizeof socs / sizeof socs[0]; i++)
        if (strcmp(v, socs[i]) == 0) {
            snprintf(out, n, "%s-sim", socs[i]);
            return ACL_SUCCESS;
        }
    return bad_env(fn, name, v, "one of Ascend310, Ascend310P3, Ascend910B");
}

static aclError read_config(const char *fn, sim_config *c)
{
    aclError rc;
    if ((rc = env_int(fn, "ASCEND_SIM_DEVICE_COUNT", 8, 1, 1024, &c->device_count)) ||
        (rc = env_bytes(fn, "ASCEND_SIM_DEVICE_MEMORY", (size_t)8 << 30, &c->device_memory)) ||
        (rc = env_int(fn, "ASCEND_SIM_MAX_STREAMS", 1024, 1, 1000000, &c->max_streams)) ||
        (rc = env_int(fn, "ASCEND_SIM_MAX_EVENTS", 1023, 1, 1000000, &c->max_events)) ||
        (rc = env_gbps(fn, "ASCEND_SIM_H2D_GBPS", &c->h2d_gbps)) || (rc = env_gbps(fn, "ASCEND_SIM_D2H_GBPS", &c->d2h_gbps)) ||
        (rc = env_gbps(fn, "ASCEND_SIM_D2D_GBPS", &c->d2d_gbps)) ||
        (rc = env_soc(fn, "ASCEND_SIM_SOC_VERSION", c->soc_name, sizeof c->soc_name)) ||
        (rc = sim_peer_configure(getenv("ASCEND_SIM_NO_P2P"), c->device_count)))
        return rc;
    /* Never an aclInit failure: CANN reports a bad list at the device calls. */
    sim_visible_parse(getenv("ASCEND_RT_VISIBLE_DEVICES"), c->device_count, &c->visible);
    if (sim_log_enabled && c->visible.set)
        sim_log_note("ASCEND_RT_VISIBLE_DEVICES='%s': %d of %d physical device(s) visible%s%s", c->visible.value,
                     c->visible.count, c->device_count, c->visible.count ? "" : ": ", c->visible.why_none);
    return ACL_SUCCESS;
}

/* ---- the JSON config file: must hold one JSON object ----------------------------------- */

typedef struct {
    const char *p, *end;
    int depth;
} json_cursor;

static void json_ws(json_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int json_value(json_cursor *c);

static int json_string(json_cursor *c)
{
    if (c->p >= c->end || *c->p != '"')
        return 0;
    c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"')
            return 1;
        if (ch < 0x20)
            return 0;
        if (ch == '\\') {
            if (c->p >= c->end)
                return 0;
            char e = *c->p++;
            if (e == 'u') {
                for (int i = 0; i < 4; i++, c->p++)
                    if (c->p >= c->end || !isxdigit((unsigned char)*c->p))
                        return 0;
            } else if (!strchr("\"\\/bfnrt", e)) {
                return 0;
            }
        }
    }
    return 0;
}

static int json_number(json_cursor *c)
{
    const char *s = c->p;
    if (c->p < c->end && *c->p == '-')
        c->p++;
    if (c->p >= c->end || !isdigit((unsigned char)*c->p))
        return 0;
    if (*c->p == '0')
        c->p++;
    else
        while (c->p < c->end && isdigit((unsigned char)*c->p))
            c->p++;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (c->p >= c->end || !isdigit((unsigned char)*c->p))
            return 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p))
            c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        if (c->p >= c->end || !isdigit((unsigned char)*c->p))
            return 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p))
            c->p++;
    }
    return c->p > s;
}

static int json_literal(json_cursor *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return 0;
    c->p += n;
    return 1;
}

static int json_container(json_cursor *c, char open, char close)
{
    if (++c->depth > 256)
        return 0;
    c->p++; /* open */
    (void)open;
    json_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        c->depth--;
        return 1;
    }
    for (;;) {
        json_ws(c);
        if (close == '}') {
            if (!json_string(c))
                return 0;
            json_ws(c);
            if (c->p >= c->end || *c->p != ':')
                return 0;
            c->p++;
            json_ws(c);
        }
        if (!json_value(c))
            return 0;
        json_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == close) {
            c->p++;
            c->depth--;
            return 1;
        }
        return 0;
    }
}

static int json_value(json_cursor *c)
{
    if (c->p >= c->end)
        return 0;
    switch (*c->p) {
    case '{': return json_container(c, '{', '}');
    case '[': return json_container(c, '[', ']');
    case '"': return json_string(c);
    case 't': return json_literal(c, "true");
    case 'f': return json_literal(c, "false");
    case 'n': return json_literal(c, "null");
    default: return json_number(c);
    }
}

/* FNV-1a over the config's bytes: aclInit after aclFinalize must bring the
 * same contents as the first aclInit (CANN 9.1). */
static uint64_t config_digest(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* Reads and checks the config file; *len and *hash describe its contents.
 * An empty (0-byte or blank) file is accepted, as CANN's parser accepts it. */
static aclError check_config_file(const char *path, size_t *len_out, uint64_t *hash)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_error(ACL_ERROR_INVALID_FILE, "aclInit", "configPath '%s' cannot be opened (%s)", path,
                         strerror(errno));
    long fsize = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        fsize = ftell(f);
    if (fsize < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return sim_error(ACL_ERROR_INVALID_FILE, "aclInit", "configPath '%s' is not a regular readable file", path);
    }
    if (fsize > (64L << 20)) {
        fclose(f);
        return sim_error(ACL_ERROR_INVALID_FILE_SIZE, "aclInit", "configPath '%s' is larger than 64 MiB", path);
    }
    size_t len = (size_t)fsize;
    char *buf = malloc(len + 1);
    if (!buf) {
        fclose(f);
        return sim_error(ACL_ERROR_BAD_ALLOC, "aclInit", "out of host memory reading configPath '%s'", path);
    }
    len = fread(buf, 1, len, f);
    fclose(f);
    json_cursor c = {buf, buf + len, 0};
    json_ws(&c);
    int ok = c.p == c.end || (*c.p == '{' && json_value(&c));
    if (ok) {
        json_ws(&c);
        ok = c.p == c.end;
    }
    aclError rc = ACL_SUCCESS;
    if (!ok)
        rc = sim_error(ACL_ERROR_PARSE_FILE, "aclInit",
                       "configPath '%s' does not hold a JSON object (parse error near byte %zu); '{}' or an empty "
                       "file is the smallest valid config",
                       path, (size_t)(c.p - buf));
    *len_out = len;
    *hash = config_digest(buf, len);
    free(buf);
    return rc;
}

/* ---- aclInit / aclFinalize --------------------------------------------------------------- */

/* Stops the runtime and the acl layer (caller holds init_lock). */
static void finalize_locked(void)
{
    if (atomic_load_explicit(&rt_up, memory_order_relaxed)) {
        /* Order matters: release callback waiters so streams can drain, then
         * contexts and their streams (workers stopped), events, memory. */
        sim_cb_shutdown();
        sim_devices_destroy();
        sim_events_destroy_all();
        sim_memory_free_all();
        sim_cb_reset();
        atomic_store_explicit(&rt_up, 0, memory_order_release);
    }
    atomic_store_explicit(&acl_up, 0, memory_order_release);
    init_refs = 0;
    finalized = 1;
}

SIM_EXPORT aclError aclInit(const char *configPath)
{
    SIM_ENTER(aclInit);
    aclError rc = ACL_SUCCESS;
    size_t len = 0;
    uint64_t hash = 0;
    pthread_mutex_lock(&init_lock);
    if (init_refs > 0) {
        init_refs++;
        rc = sim_error(ACL_ERROR_REPEAT_INITIALIZE, "aclInit",
                       "AscendCL is already initialized in this process (%llu aclInit reference(s) now); call aclInit "
                       "once, or give each extra reference back with aclFinalizeReference",
                       (unsigned long long)init_refs);
    } else if (configPath && *configPath && (rc = check_config_file(configPath, &len, &hash)) != ACL_SUCCESS) {
        /* message already recorded */
    } else if (config_recorded && (len == 0 || hash != config_hash)) {
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclInit",
                       "configPath %s%s%s: its contents differ from the config of the first aclInit in this process "
                       "('%s'); CANN requires the same configuration at every aclInit after aclFinalize",
                       configPath ? "'" : "", configPath ? configPath : "NULL", configPath ? "'" : "",
                       config_first_path);
    } else if ((rc = runtime_start("aclInit")) == ACL_SUCCESS) {
        init_refs = 1;
        finalized = 0;
        if (!config_recorded && len > 0) {
            config_recorded = 1;
            config_hash = hash;
            snprintf(config_first_path, sizeof config_first_path, "%s", configPath);
        }
        atomic_store_explicit(&acl_up, 1, memory_order_release);
    }
    pthread_mutex_unlock(&init_lock);
    SIM_RETURN(aclInit, rc, "configPath=%s%s%s", configPath ? "\"" : "", configPath ? configPath : "NULL",
               configPath ? "\"" : "");
}

SIM_EXPORT aclError aclFinalize(void)
{
    SIM_ENTER(aclFinalize);
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&init_lock);
    /* No init check (CANN 9.1): before any aclInit it finalizes what there is. */
    if (finalized)
        rc = sim_error(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "AscendCL was already finalized");
    else
        finalize_locked();
    pthread_mutex_unlock(&init_lock);
    SIM_RETURN(aclFinalize, rc, "%s", "");
}

SIM_EXPORT aclError aclFinalizeReference(uint64_t *refCount)
{
    SIM_ENTER(aclFinalizeReference);
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&init_lock);
    if (init_refs == 0)
        rc = sim_error(ACL_ERROR_REPEAT_FINALIZE, "aclFinalizeReference",
                       "no aclInit reference is left: AscendCL was not initialized or was already finalized");
    else if (--init_refs == 0)
        finalize_locked();
    uint64_t left = init_refs;
    pthread_mutex_unlock(&init_lock);
    if (refCount)
        *refCount = left;
    SIM_RETURN(aclFinalizeReference, rc, "refCount=%p -> %llu", (void *)refCount, (unsigned long long)left);
}
