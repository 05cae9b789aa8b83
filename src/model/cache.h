/* Model call cache: results of chat, embedding and rerank calls in an
 * SQLite file (WAL), keyed by (backend, model, canonical request). */
#ifndef MT_MODEL_CACHE_H
#define MT_MODEL_CACHE_H

#include <stddef.h>

#include "medtrust/status.h"

struct mt_cache;

/* Opens or creates the cache database at 'path' (its folder must exist),
 * or in the PostgreSQL database a postgresql:// URL names (table
 * model_calls, shared by every node that names it).
 * On success *out owns the handle (mtx_cache_close); on failure *out is
 * unchanged. One handle may be used from many threads (calls serialise on
 * a mutex); several processes may share a file (WAL, busy timeout). */
enum mt_status mtx_cache_open(const char *path, struct mt_cache **out,
                              struct mt_error *err);

/* Looks up the value stored for (backend, model, request). On a hit,
 * *val is a copy the caller frees with mt_free (NUL-terminated past *n)
 * and MT_OK is returned; MT_ENOTFOUND on a miss. */
enum mt_status mtx_cache_get(struct mt_cache *c, const char *backend,
                             const char *model, const char *request, char **val,
                             size_t *n, struct mt_error *err);

/* Stores (replacing) the value for (backend, model, request). */
enum mt_status mtx_cache_put(struct mt_cache *c, const char *backend,
                             const char *model, const char *request,
                             const void *val, size_t n, struct mt_error *err);

/* Stores (replacing) n values at once: requests[i] -> vals[i] of lens[i]
 * bytes. In SQLite the n rows are one transaction (all or none, and one
 * commit instead of n); in PostgreSQL each row is its own write. */
enum mt_status mtx_cache_put_many(struct mt_cache *c, const char *backend,
                                  const char *model, size_t n,
                                  const char *const *requests,
                                  const void *const *vals, const size_t *lens,
                                  struct mt_error *err);

/* Number of stored entries, or 0 on error. */
size_t mtx_cache_count(struct mt_cache *c);

/* Closes the database; NULL is allowed. */
void mtx_cache_close(struct mt_cache *c);

#endif
