/* The call cache's PostgreSQL engine (model/cache.c dispatches to it for
 * a postgresql:// path): the same table as the SQLite file, model_calls,
 * migrated as component "cache". One connection; the caller serialises. */
#ifndef MTX_CACHE_PG_H
#define MTX_CACHE_PG_H

#include <stddef.h>
#include <stdint.h>

#include "store/pg.h"

enum mt_status mtx_cache_pg_open(const char *url, struct mtx_pg **out,
                                 struct mt_error *err);

/* As mtx_cache_get and mtx_cache_put, with the key's hash computed. */
enum mt_status mtx_cache_pg_get(struct mtx_pg *pg, int64_t hash,
                                const char *backend, const char *model,
                                const char *request, char **val, size_t *n,
                                struct mt_error *err);
enum mt_status mtx_cache_pg_put(struct mtx_pg *pg, int64_t hash,
                                const char *backend, const char *model,
                                const char *request, const void *val, size_t n,
                                struct mt_error *err);
size_t mtx_cache_pg_count(struct mtx_pg *pg);

#endif
