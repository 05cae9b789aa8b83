/* Batch search for the CLI: queries from JSONL, embedded in batches, then
 * searched in parallel through one mt_retriever (which lends each worker
 * thread an index handle), with results delivered in input order. */
#ifndef MT_CLI_BATCH_H
#define MT_CLI_BATCH_H

#include <stddef.h>

#include "medtrust/index.h"
#include "medtrust/retrieve.h"

struct batch_query {
    char *id;
    char *query;
    char **relevant; /* document ids, from "relevant" (may be empty) */
    size_t nrel;
    float *vec; /* the query embedded, for dense and hybrid search */
};

/* Embeds every query with the retriever's embedder in batches (before the
 * parallel search, which then only searches); nothing when it has none. */
enum mt_status batch_embed(struct batch_query *q, size_t n,
                           struct mt_retriever *ret, struct mt_error *err);

/* Reads {"id","query","relevant"?} lines. */
enum mt_status batch_load(const char *path, struct batch_query **out, size_t *n,
                          struct mt_error *err);
void batch_free(struct batch_query *q, size_t n);

/* Called in input order with each query's result (NULL with 'st' set
 * when that query failed). The callee must not free 'res'. */
typedef void (*batch_fn)(const struct batch_query *q, size_t i,
                         const struct mt_search_result *res, enum mt_status st,
                         const struct mt_error *err, void *user);

/* Searches all queries through 'ret' with 'jobs' threads (0 = online
 * CPUs). A failing query is reported to fn and the batch goes on. Returns
 * an error only when the threads cannot start. */
enum mt_status batch_run(struct mt_retriever *ret, const struct batch_query *q,
                         size_t n, const struct mt_search_params *p,
                         unsigned jobs, int progress, batch_fn fn, void *user,
                         struct mt_error *err);

#endif
