/*
 * applog.c -- aclAppLog, the application log of AscendCL programs (the
 * ACL_APP_LOG macro of CANN's headers expands to it).
 *
 * CANN writes these lines to its log files, or to stdout when
 * ASCEND_SLOG_PRINT_TO_STDOUT=1, keeping those at or above
 * ASCEND_GLOBAL_LOG_LEVEL (0 debug .. 3 error, 4 none; default 3).  The
 * simulator keeps the same two variables: a kept line goes to stdout when
 * ASCEND_SLOG_PRINT_TO_STDOUT=1, to stderr otherwise (there are no log files);
 * with ASCEND_SIM_LOG on, every line also goes to the call log
 * (docs/simulator.md, "Application log").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simrt.h"

static int env_level(void)
{
    const char *v = getenv("ASCEND_GLOBAL_LOG_LEVEL");
    if (!v || v[0] < '0' || v[0] > '4' || v[1])
        return ACL_ERROR;   /* CANN's default; an invalid value keeps it */
    return v[0] - '0';
}

SIM_EXPORT void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line, const char *fmt,
                          ...)
{
    static const char *const names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
    int lvl = (int)logLevel;
    const char *name = lvl >= 0 && lvl <= 3 ? names[lvl] : "?";
    char msg[SIM_MSG_MAX];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    } else {
        snprintf(msg, sizeof msg, "(NULL fmt)");
    }
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : (file ? file : "?");
    if (sim_log_enabled)
        sim_log_note("aclAppLog [%s] %s:%u %s: %s", name, base, (unsigned)line, func ? func : "?", msg);
    if (lvl < 0 || lvl > 3 || lvl < env_level())
        return;
    const char *to_stdout = getenv("ASCEND_SLOG_PRINT_TO_STDOUT");
    FILE *out = to_stdout && strcmp(to_stdout, "1") == 0 ? stdout : stderr;
    fprintf(out, "[%s] APP(%d):%s:%u %s: %s\n", name, (int)getpid(), base, (unsigned)line, func ? func : "?", msg);
    fflush(out);
}
