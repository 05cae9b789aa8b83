/* Status table text, error detail recording and CLI exit codes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/redact.h"
#include "medtrust/status.h"

static const char *const status_text[] = {
#define X(name, text) text,
    MT_STATUS_MAP(X)
#undef X
};

const char *mt_status_str(enum mt_status st)
{
    if ((unsigned)st >= (unsigned)MT_STATUS_COUNT)
        return "unknown status";
    return status_text[st];
}

enum mt_status mt_fail(struct mt_error *err, enum mt_status st, const char *fmt,
                       ...)
{
    va_list ap;

    if (!err)
        return st;
    err->status = st;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    mtx_redact_inplace(err->msg, sizeof err->msg); /* specs, URLs */
    return st;
}

enum mt_status mt_error_prefix(struct mt_error *err, const char *fmt, ...)
{
    char head[MT_ERROR_MSG_MAX];
    char old[MT_ERROR_MSG_MAX];
    va_list ap;

    if (!err)
        return MT_EINTERNAL;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Build in a buffer large enough for both, then truncate on copy. */
    char both[2 * MT_ERROR_MSG_MAX + 4];
    snprintf(both, sizeof both, "%s: %s", head,
             old[0] ? old : mt_status_str(err->status));
    both[MT_ERROR_MSG_MAX - 1] = '\0';
    memcpy(err->msg, both, MT_ERROR_MSG_MAX);
    mtx_redact_inplace(err->msg, sizeof err->msg);
    return err->status;
}

void mt_error_clear(struct mt_error *err)
{
    if (!err)
        return;
    err->status = MT_OK;
    err->msg[0] = '\0';
}

int mt_status_exit_code(enum mt_status st)
{
    switch (st) {
    case MT_OK:
        return 0;
    case MT_EINVAL:
    case MT_EPARSE:
    case MT_ELIMIT:
    case MT_ENOTFOUND:
    case MT_EUNSUPPORTED:
    case MT_EIO:
    case MT_EMODEL:
        return 1;
    case MT_EWRITE:
        return 3;
    default:
        return 2;
    }
}
