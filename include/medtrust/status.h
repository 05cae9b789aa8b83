/* medtrust status codes and error detail: one X-macro table yields the enum
 * and the message text, so codes and messages can never drift apart. */
#ifndef MEDTRUST_STATUS_H
#define MEDTRUST_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_STATUS_MAP(X)                                                       \
    X(OK, "success")                                                           \
    X(ENOMEM, "out of memory")                                                 \
    X(EINVAL, "invalid argument")                                              \
    X(EPARSE, "malformed input")                                               \
    X(ELIMIT, "size or count limit exceeded")                                  \
    X(EIO, "input/output error")                                               \
    X(ENOTFOUND, "not found")                                                  \
    X(EDB, "database error")                                                   \
    X(EUNSUPPORTED, "unsupported")                                             \
    X(ECANCELED, "canceled")                                                   \
    X(EMODEL, "the model calls failed")                                        \
    X(EINTERNAL, "internal error")                                             \
    X(EWRITE, "out of space or I/O error")

enum mt_status {
#define X(name, text) MT_##name,
    MT_STATUS_MAP(X)
#undef X
        MT_STATUS_COUNT
};

/* Size of the message buffer in struct mt_error. */
#define MT_ERROR_MSG_MAX 512

/* Detail of a failure, filled by the function that failed. Callers own it
 * (usually on the stack); functions accept NULL when no detail is wanted. */
struct mt_error {
    enum mt_status status;
    char msg[MT_ERROR_MSG_MAX];
};

/* Returns the static text for 'st'; never NULL. Thread-safe. */
const char *mt_status_str(enum mt_status st);

/* Records 'st' and a printf-style message in 'err' (may be NULL) and returns
 * 'st', so an error site is one line: return mt_fail(err, MT_EPARSE, ...). */
enum mt_status mt_fail(struct mt_error *err, enum mt_status st, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in 'err' with a printf-style context, e.g.
 * the file name. Returns err->status (or MT_EINTERNAL when err is NULL). */
enum mt_status mt_error_prefix(struct mt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears 'err' to MT_OK with an empty message. NULL is allowed. */
void mt_error_clear(struct mt_error *err);

/* Exit status for the CLI convention: 0 ok, 1 bad input or request,
 * 2 internal failure, 3 a file or standard output could not be written
 * (MT_EWRITE: out of space or an I/O error). */
int mt_status_exit_code(enum mt_status st);

#ifdef __cplusplus
}
#endif
#endif
