/* JSONL reader: one JSON object a line, parsed with jansson. Reads its
 * input in blocks with a bounded line buffer; bad lines are reported as
 * "FILE:LINE: why" or skipped and counted. */
#ifndef MT_CORE_JSONL_H
#define MT_CORE_JSONL_H

#include <stddef.h>

#include <jansson.h>

#include "medtrust/status.h"

struct mt_jsonl;

struct mt_jsonl_params {
    int skip_bad;    /* nonzero: skip bad or over-long lines, count them */
    size_t max_line; /* bytes in one line, default 64 MiB */
    /* With skip_bad, called (when set) for each line skipped with its
     * error, "FILE:LINE: why"; a status other than MT_OK it returns ends
     * the reading with that error (sticky, as any). */
    enum mt_status (*on_bad)(struct mt_error *e, void *user);
    void *bad_user;
};

/* Returns the defaults: skip_bad 0, max_line 64 MiB. */
struct mt_jsonl_params mtx_jsonl_default_params(void);

/* Routes jansson's allocations through mt_malloc/mt_free so that failure
 * injection and the "allocate only through mt_*" rule cover JSON values.
 * jansson's allocator is process-wide; this is safe to call at any time
 * because mt_malloc/mt_free wrap malloc/free. mtx_jsonl_open calls it (once,
 * thread-safely), so callers need not. */
void mtx_jsonl_init_alloc(void);

/* Frees text from json_dumps with jansson's own allocator; NULL is
 * allowed. */
void mtx_json_text_free(char *txt);

/* Opens 'path' ("-" reads stdin, which is not closed). 'params' may be NULL
 * for defaults and is copied. On success *out owns a reader (free with
 * mtx_jsonl_close); on failure *out is unchanged and 'err' (may be NULL)
 * says why: MT_EIO (cannot open), MT_ENOMEM, MT_EINVAL. */
enum mt_status mtx_jsonl_open(const char *path,
                              const struct mt_jsonl_params *params,
                              struct mt_jsonl **out, struct mt_error *err);

/* Reads the next object. On success *obj is the object, owned by the
 * reader and valid until the next call on it or mtx_jsonl_close (take a
 * json_incref to keep it), or NULL at end of input. Blank lines are
 * ignored; CRLF and a UTF-8 BOM on the first line are accepted. Failures:
 * MT_EPARSE "FILE:LINE: why" for a line that is not JSON or not an object,
 * MT_ELIMIT for a line longer than max_line (both skipped and counted
 * instead when skip_bad), MT_ENOMEM, MT_EIO. An error is sticky: later calls
 * return it again. Not thread-safe; use one reader per thread. */
enum mt_status mtx_jsonl_next(struct mt_jsonl *r, json_t **obj,
                              struct mt_error *err);

/* 1-based line number of the object returned last (0 before the first). */
size_t mtx_jsonl_line(const struct mt_jsonl *r);

/* Number of lines skipped as bad so far (only with skip_bad). */
size_t mtx_jsonl_skipped(const struct mt_jsonl *r);

/* Closes the input and frees the reader and its current object. NULL is
 * allowed. */
void mtx_jsonl_close(struct mt_jsonl *r);

#endif
