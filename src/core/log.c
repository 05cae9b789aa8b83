/* Logging through one process-wide callback; the library never prints. */
#include <stdarg.h>
#include <stdio.h>

#include "core/redact.h"
#include "medtrust/core.h"

static mt_log_fn log_fn;
static void *log_user;
static enum mt_log_level log_threshold = MT_LOG_INFO;

const char *mt_version(void)
{
    return MT_VERSION_STRING;
}

void mt_log_set(mt_log_fn fn, void *user, enum mt_log_level threshold)
{
    log_fn = fn;
    log_user = user;
    log_threshold = threshold;
}

void mt_log(enum mt_log_level level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (!log_fn || level < log_threshold)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mtx_redact_inplace(msg, sizeof msg); /* no spec or URL shows a secret */
    log_fn(level, msg, log_user);
}

const char *mt_log_level_str(enum mt_log_level level)
{
    switch (level) {
    case MT_LOG_DEBUG:
        return "debug";
    case MT_LOG_INFO:
        return "info";
    case MT_LOG_WARN:
        return "warn";
    default:
        return "error";
    }
}
