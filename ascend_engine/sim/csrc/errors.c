/*
 * errors.c -- per-thread recent-error messages, the call log
 * (ASCEND_SIM_LOG) and fault injection (ASCEND_SIM_FAULTS, aeSimSetFaults).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ascend_engine/ascend_sim.h"
#include "simrt.h"

/* ---- recent error ------------------------------------------------------------ */

/* Per thread: no lock needed. */
static __thread char tls_msg[SIM_MSG_MAX + 256]; /* room for "fn: " + body */
static __thread int tls_has_msg;

void sim_set_recent_error(const char *msg)
{
    snprintf(tls_msg, sizeof tls_msg, "%s", msg ? msg : "");
    tls_has_msg = 1;
}

aclError sim_error(aclError code, const char *fn, const char *fmt, ...)
{
    char body[SIM_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(tls_msg, sizeof tls_msg, "%s: %s", fn, body);
    tls_has_msg = 1;
    return code;
}

SIM_EXPORT const char *aclGetRecentErrMsg(void)
{
    return tls_has_msg ? tls_msg : NULL;
}

/* Numeric literals rather than the ACL_ERROR_* names: with the CANN headers
 * those are `static const int`, which cannot initialize a static table. */
static const struct {
    int code;
    const char *name;
} code_names[] = {
    {0, "ACL_SUCCESS"},
    {100000, "ACL_ERROR_INVALID_PARAM"},
    {100001, "ACL_ERROR_UNINITIALIZE"},
    {100002, "ACL_ERROR_REPEAT_INITIALIZE"},
    {100003, "ACL_ERROR_INVALID_FILE"},
    {100004, "ACL_ERROR_WRITE_FILE"},
    {100005, "ACL_ERROR_INVALID_FILE_SIZE"},
    {100006, "ACL_ERROR_PARSE_FILE"},
    {100007, "ACL_ERROR_FILE_MISSING_ATTR"},
    {100008, "ACL_ERROR_FILE_ATTR_INVALID"},
    {100011, "ACL_ERROR_INVALID_MODEL_ID"},
    {100012, "ACL_ERROR_DESERIALIZE_MODEL"},
    {100013, "ACL_ERROR_PARSE_MODEL"},
    {100014, "ACL_ERROR_READ_MODEL_FAILURE"},
    {100015, "ACL_ERROR_MODEL_SIZE_INVALID"},
    {100016, "ACL_ERROR_MODEL_MISSING_ATTR"},
    {100017, "ACL_ERROR_MODEL_INPUT_NOT_MATCH"},
    {100018, "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH"},
    {100019, "ACL_ERROR_MODEL_NOT_DYNAMIC"},
    {100026, "ACL_ERROR_UNSUPPORTED_DATA_TYPE"},
    {100027, "ACL_ERROR_FORMAT_NOT_MATCH"},
    {100033, "ACL_ERROR_REPEAT_SUBSCRIBE"},
    {100034, "ACL_ERROR_STREAM_NOT_SUBSCRIBE"},
    {100035, "ACL_ERROR_THREAD_NOT_SUBSCRIBE"},
    {100036, "ACL_ERROR_WAIT_CALLBACK_TIMEOUT"},
    {100037, "ACL_ERROR_REPEAT_FINALIZE"},
    {200000, "ACL_ERROR_BAD_ALLOC"},
    {200001, "ACL_ERROR_API_NOT_SUPPORT"},
    {200002, "ACL_ERROR_INVALID_DEVICE"},
    {200003, "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED"},
    {200004, "ACL_ERROR_RESOURCE_NOT_MATCH"},
    {200005, "ACL_ERROR_INVALID_RESOURCE_HANDLE"},
    {200006, "ACL_ERROR_FEATURE_UNSUPPORTED"},
    {300000, "ACL_ERROR_STORAGE_OVER_LIMIT"},
    {500000, "ACL_ERROR_INTERNAL_ERROR"},
    {500001, "ACL_ERROR_FAILURE"},
    {500002, "ACL_ERROR_GE_FAILURE"},
    {500003, "ACL_ERROR_RT_FAILURE"},
    {500004, "ACL_ERROR_DRV_FAILURE"},
    {107000, "ACL_ERROR_RT_PARAM_INVALID"},
    {107001, "ACL_ERROR_RT_INVALID_DEVICEID"},
    {107002, "ACL_ERROR_RT_CONTEXT_NULL"},
    {107003, "ACL_ERROR_RT_STREAM_CONTEXT"},
    {107004, "ACL_ERROR_RT_MODEL_CONTEXT"},
    {107006, "ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID"},
    {107007, "ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL"},
    {107008, "ACL_ERROR_RT_ADDR_UNALIGNED"},
    {107011, "ACL_ERROR_RT_STREAM_SUBSCRIBE"},
    {107012, "ACL_ERROR_RT_THREAD_SUBSCRIBE"},
    {107015, "ACL_ERROR_RT_STREAM_NO_CB_REG"},
    {107016, "ACL_ERROR_RT_INVALID_MEMORY_TYPE"},
    {107017, "ACL_ERROR_RT_INVALID_HANDLE"},
    {107018, "ACL_ERROR_RT_INVALID_MALLOC_TYPE"},
    {107019, "ACL_ERROR_RT_WAIT_TIMEOUT"},
    {107020, "ACL_ERROR_RT_TASK_TIMEOUT"},
    {207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT"},
    {207001, "ACL_ERROR_RT_MEMORY_ALLOCATION"},
    {207002, "ACL_ERROR_RT_MEMORY_FREE"},
    {207004, "ACL_ERROR_RT_NO_DEVICE"},
    {207005, "ACL_ERROR_RT_RESOURCE_ALLOC_FAIL"},
    {207007, "ACL_ERROR_RT_NO_EVENT_RESOURCE"},
    {207008, "ACL_ERROR_RT_NO_STREAM_RESOURCE"},
    {207010, "ACL_ERROR_RT_NO_MODEL_RESOURCE"},
    {207012, "ACL_ERROR_RT_OVER_LIMIT"},
    {207018, "ACL_ERROR_RT_DEVICE_OOM"},
    {507000, "ACL_ERROR_RT_INTERNAL_ERROR"},
    {507004, "ACL_ERROR_RT_STREAM_NOT_COMPLETE"},
    {507006, "ACL_ERROR_RT_EVENT_NOT_COMPLETE"},
    {507007, "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR"},
    {507011, "ACL_ERROR_RT_MODEL_EXECUTE"},
    {507012, "ACL_ERROR_RT_REPORT_TIMEOUT"},
    {507015, "ACL_ERROR_RT_AICORE_EXCEPTION"},
    {507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"},
    {507047, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT"},
    {507052, "ACL_ERROR_RT_COPY_DATA"},
    {145000, "ACL_ERROR_GE_PARAM_INVALID"},
    {145001, "ACL_ERROR_GE_EXEC_NOT_INIT"},
    {145002, "ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID"},
    {145003, "ACL_ERROR_GE_EXEC_MODEL_ID_INVALID"},
    {145006, "ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID"},
    {145013, "ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID"},
    {145021, "ACL_ERROR_GE_SHAPE_INVALID"},
    {145022, "ACL_ERROR_GE_DATATYPE_INVALID"},
    {245000, "ACL_ERROR_GE_MEMORY_ALLOCATION"},
    {545001, "ACL_ERROR_GE_LOAD_MODEL"},
};

const char *sim_code_name(aclError code)
{
    for (size_t i = 0; i < sizeof code_names / sizeof code_names[0]; i++)
        if (code_names[i].code == code)
            return code_names[i].name;
    return "unknown code";
}

/* ---- call log ------------------------------------------------------------------ */

int sim_log_enabled;            /* written once by the load-time constructor */
static FILE *log_file;          /* idem; lines are written under log_lock */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t log_t0;         /* idem: time of library load */
static __thread long tls_tid;   /* per thread: cached kernel thread id */

static long thread_id(void)
{
    if (!tls_tid)
        tls_tid = (long)syscall(SYS_gettid);
    return tls_tid;
}

static void log_line(const char *text)
{
    double t = (double)(sim_now_ns() - log_t0) / 1e9;
    char line[SIM_MSG_MAX * 3];
    snprintf(line, sizeof line, "[ascend-sim %10.6f tid=%ld] %s\n", t, thread_id(), text);
    pthread_mutex_lock(&log_lock);
    fputs(line, log_file);
    fflush(log_file);
    pthread_mutex_unlock(&log_lock);
}

void sim_log_call(const char *fn, aclError rc, const char *fmt, ...)
{
    if (!sim_log_enabled)
        return;
    char args[SIM_MSG_MAX];
    char text[SIM_MSG_MAX * 2 + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (rc == ACL_SUCCESS)
        snprintf(text, sizeof text, "%s(%s) = 0", fn, args);
    else
        snprintf(text, sizeof text, "%s(%s) = %d %s: %.1100s", fn, args, rc, sim_code_name(rc),
                 tls_has_msg ? tls_msg : "(no message)");
    log_line(text);
}

void sim_log_note(const char *fmt, ...)
{
    if (!sim_log_enabled)
        return;
    char text[SIM_MSG_MAX * 2];
    int n = snprintf(text, sizeof text, "note: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text + n, sizeof text - (size_t)n, fmt, ap);
    va_end(ap);
    log_line(text);
}

/* ---- fault injection -------------------------------------------------------------- */

enum { RULE_CALL = 1, RULE_TASK = 2, RULE_STALL = 3 };

typedef struct {
    int type;
    char name[64];       /* function name, or task kind */
    uint64_t n;          /* 1-based index of the first matching call/task */
    int every;           /* "@N+=": every match from the N-th on */
    long value;          /* code to return, or stall in ms */
    uint64_t seen;       /* matches counted since the rule was set */
    char text[128];      /* the rule as written, for messages */
} fault_rule;

/* fault_rules / fault_count are guarded by fault_lock.  fault_active mirrors
 * "fault_count > 0" so the common no-rules path is one relaxed atomic load. */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static fault_rule *fault_rules;
static size_t fault_count;
static atomic_int fault_active;
/* Written once by the constructor: why ASCEND_SIM_FAULTS was rejected. */
static char fault_env_msg[SIM_MSG_MAX];

static const char *const known_functions[] = {
#define AE_ACL_FN(required, ret, name, params) #name,
#include "ascend_engine/acl_functions.h"
#undef AE_ACL_FN
};

static const char *const task_kinds[] = {"execute", "memcpy", "memset", "record", "wait", "reset", "callback", "dvpp"};

static int is_known(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno)
        return 0;
    *out = v;
    return 1;
}

static int parse_code(const char *s, long *out)
{
    if (parse_long(s, out))
        return 1;
    for (size_t i = 0; i < sizeof code_names / sizeof code_names[0]; i++)
        if (strcmp(code_names[i].name, s) == 0) {
            *out = code_names[i].code;
            return 1;
        }
    return 0;
}

/* Parses one rule; on failure writes the reason to err. */
static int parse_rule(const char *text, fault_rule *r, char *err, size_t errn)
{
    char buf[256];
    memset(r, 0, sizeof *r);
    if (strlen(text) >= sizeof buf || strlen(text) >= sizeof r->text) {
        snprintf(err, errn, "rule '%.40s...' is too long", text);
        return 0;
    }
    strcpy(buf, text);
    strcpy(r->text, text);
    char *name = buf;
    r->type = RULE_CALL;
    if (strncmp(buf, "task:", 5) == 0) {
        r->type = RULE_TASK;
        name += 5;
    } else if (strncmp(buf, "stall:", 6) == 0) {
        r->type = RULE_STALL;
        name += 6;
    }
    char *at = strchr(name, '@');
    char *eq = at ? strchr(at, '=') : NULL;
    if (!at || !eq) {
        snprintf(err, errn,
                 "rule '%s' is not of the form FUNC@N=CODE, FUNC@N+=CODE, task:KIND@N=CODE or stall:KIND@N=MS",
                 text);
        return 0;
    }
    *at = '\0';
    *eq = '\0';
    char *count = at + 1, *value = eq + 1;
    size_t clen = strlen(count);
    if (clen && count[clen - 1] == '+') {
        r->every = 1;
        count[clen - 1] = '\0';
    }
    if (r->type == RULE_CALL) {
        if (!is_known(name, known_functions, sizeof known_functions / sizeof known_functions[0])) {
            snprintf(err, errn, "rule '%s': '%s' is not an AscendCL function the simulator exports", text, name);
            return 0;
        }
    } else if (!is_known(name, task_kinds, sizeof task_kinds / sizeof task_kinds[0])) {
        snprintf(err, errn,
                 "rule '%s': unknown task kind '%s' (expected execute, memcpy, memset, record, wait, reset, callback or dvpp)",
                 text, name);
        return 0;
    }
    snprintf(r->name, sizeof r->name, "%.63s", name);
    long n;
    if (!parse_long(count, &n) || n < 1) {
        snprintf(err, errn, "rule '%s': the count after '@' must be an integer >= 1, got '%s'", text, count);
        return 0;
    }
    r->n = (uint64_t)n;
    if (r->type == RULE_STALL) {
        if (!parse_long(value, &r->value) || r->value < 0 || r->value > 3600000) {
            snprintf(err, errn, "rule '%s': the stall must be milliseconds in 0..3600000, got '%s'", text, value);
            return 0;
        }
    } else if (!parse_code(value, &r->value) || r->value == 0 || r->value < -2147483647L ||
               r->value > 2147483647L) {
        snprintf(err, errn, "rule '%s': the code must be a non-zero error number or ACL_ERROR_* name, got '%s'",
                 text, value);
        return 0;
    }
    return 1;
}

/* Parses a whole spec into a new array.  Returns 1 on success. */
static int parse_spec(const char *spec, fault_rule **rules, size_t *count, char *err, size_t errn)
{
    *rules = NULL;
    *count = 0;
    if (!spec || !*spec)
        return 1;
    size_t cap = 1;
    for (const char *p = spec; *p; p++)
        cap += (*p == ',');
    fault_rule *arr = calloc(cap, sizeof *arr);
    char *copy = strdup(spec);
    if (!arr || !copy) {
        free(arr);
        free(copy);
        snprintf(err, errn, "out of host memory");
        return 0;
    }
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (!*tok)
            continue;
        if (!parse_rule(tok, &arr[n], err, errn)) {
            free(arr);
            free(copy);
            return 0;
        }
        n++;
    }
    free(copy);
    *rules = arr;
    *count = n;
    return 1;
}

static void install_rules(fault_rule *rules, size_t count)
{
    pthread_mutex_lock(&fault_lock);
    free(fault_rules);
    fault_rules = rules;
    fault_count = count;
    atomic_store_explicit(&fault_active, count > 0, memory_order_relaxed);
    pthread_mutex_unlock(&fault_lock);
}

SIM_EXPORT int aeSimSetFaults(const char *spec)
{
    fault_rule *rules;
    size_t count;
    char err[SIM_MSG_MAX];
    if (!parse_spec(spec, &rules, &count, err, sizeof err)) {
        aclError rc = sim_error(ACL_ERROR_INVALID_PARAM, "aeSimSetFaults", "%s", err);
        if (sim_log_enabled)
            sim_log_call("aeSimSetFaults", rc, "spec=\"%s\"", spec);
        return rc;
    }
    install_rules(rules, count);
    if (sim_log_enabled)
        sim_log_call("aeSimSetFaults", ACL_SUCCESS, "spec=\"%s\"", spec ? spec : "");
    return ACL_SUCCESS;
}

int sim_fault_env_error(char *msg, size_t n)
{
    if (!fault_env_msg[0])
        return 0;
    snprintf(msg, n, "%s", fault_env_msg);
    return 1;
}

aclError sim_fault_on_call(const char *fn)
{
    if (!atomic_load_explicit(&fault_active, memory_order_relaxed))
        return ACL_SUCCESS;
    long code = 0;
    char rule[128] = "";
    pthread_mutex_lock(&fault_lock);
    for (size_t i = 0; i < fault_count; i++) {
        fault_rule *r = &fault_rules[i];
        if (r->type != RULE_CALL || strcmp(r->name, fn) != 0)
            continue;
        r->seen++;
        if (!code && (r->every ? r->seen >= r->n : r->seen == r->n)) {
            code = r->value;
            snprintf(rule, sizeof rule, "%s", r->text);
        }
    }
    pthread_mutex_unlock(&fault_lock);
    if (!code)
        return ACL_SUCCESS;
    return sim_error((aclError)code, fn, "injected fault %ld %s (ASCEND_SIM_FAULTS rule '%s'); nothing was done",
                     code, sim_code_name((aclError)code), rule);
}

aclError sim_fault_on_task(const char *what, int *stall_ms)
{
    if (stall_ms)
        *stall_ms = 0;
    if (!atomic_load_explicit(&fault_active, memory_order_relaxed))
        return ACL_SUCCESS;
    long code = 0, stall = 0;
    pthread_mutex_lock(&fault_lock);
    for (size_t i = 0; i < fault_count; i++) {
        fault_rule *r = &fault_rules[i];
        if (r->type == RULE_CALL || strcmp(r->name, what) != 0)
            continue;
        r->seen++;
        if (!(r->every ? r->seen >= r->n : r->seen == r->n))
            continue;
        if (r->type == RULE_TASK && !code)
            code = r->value;
        else if (r->type == RULE_STALL && r->value > stall)
            stall = r->value;
    }
    pthread_mutex_unlock(&fault_lock);
    if (stall_ms)
        *stall_ms = (int)stall;
    return (aclError)code;
}

/* ---- load-time configuration ------------------------------------------------------ */

__attribute__((constructor)) static void sim_errors_load(void)
{
    log_t0 = sim_now_ns();
    const char *log = getenv("ASCEND_SIM_LOG");
    if (log && *log && strcmp(log, "0") != 0) {
        if (strcmp(log, "stderr") == 0 || strcmp(log, "1") == 0) {
            log_file = stderr;
        } else {
            log_file = fopen(log, "a");
            if (!log_file)
                fprintf(stderr, "ascend-sim: cannot open ASCEND_SIM_LOG file '%s' (%s); logging to stderr\n",
                        log, strerror(errno));
            if (!log_file)
                log_file = stderr;
        }
        sim_log_enabled = 1;
    }
    const char *faults = getenv("ASCEND_SIM_FAULTS");
    if (faults && *faults) {
        fault_rule *rules;
        size_t count;
        char err[SIM_MSG_MAX];
        if (parse_spec(faults, &rules, &count, err, sizeof err))
            install_rules(rules, count);
        else
            snprintf(fault_env_msg, sizeof fault_env_msg, "ASCEND_SIM_FAULTS='%.200s' is invalid: %.700s", faults, err);
    }
}
