/* Batch search for the CLI: queries from JSONL, searched in parallel by
 * worker threads that each hold their own index handle, with results
 * delivered in input order. */
#ifndef MT_CLI_BATCH_H
#define MT_CLI_BATCH_H

#include <stddef.h>

#include "medtrust/index.h"

struct batch_query {
    char *id;
    char *query;
    char **relevant; /* document ids, from "relevant" (may be empty) */
    size_t nrel;
    float *vec; /* the query embedded, for dense and hybrid search */
};

struct mt_embedder;

/* Embeds every query with 'e' in batches (before the parallel search, so
 * one embedder serves the whole run). */
enum mt_status batch_embed(struct batch_query *q, size_t n,
                           struct mt_embedder *e, struct mt_error *err);

/* Reads {"id","query","relevant"?} lines. */
enum mt_status batch_load(const char *path, struct batch_query **out, size_t *n,
                          struct mt_error *err);
void batch_free(struct batch_query *q, size_t n);

/* Called in input order with each query's result (NULL with 'st' set
 * when that query failed). The callee must not free 'res'. */
typedef void (*batch_fn)(const struct batch_query *q, size_t i,
                         const struct mt_search_result *res, enum mt_status st,
                         const struct mt_error *err, void *user);

/* Searches all queries with 'jobs' threads (0 = online CPUs). A failing
 * query is reported to fn and the batch goes on. Returns an error only
 * when the index cannot be opened. */
enum mt_status batch_run(const char *db, const struct batch_query *q, size_t n,
                         const struct mt_search_params *p, unsigned jobs,
                         int progress, batch_fn fn, void *user,
                         struct mt_error *err);

#endif
