/* The search batch (retrieve layer): queries from JSONL, embedded in
 * batches, then searched in parallel through one mt_retriever (which
 * lends each worker thread an index handle), with results delivered in
 * input order. `medtrust search --queries` and `medtrust retrieval-eval`
 * run on it and keep only their options and printing. Names: mtx_
 * (internal). */
#ifndef MTX_RETRIEVE_SEARCH_BATCH_H
#define MTX_RETRIEVE_SEARCH_BATCH_H

#include <stddef.h>

#include "medtrust/retrieve.h"

/* One query of a batch. */
struct mtx_query {
    char *id;
    char *query;
    char **relevant; /* document ids, from "relevant" (may be empty) */
    size_t nrel;
    float *vec; /* the query embedded, for dense and hybrid search */
};

/* Reads {"id","query","relevant"?} lines ("id" a string or an integer);
 * errors name the file and line. On success *out owns *n queries
 * (mtx_queries_free). */
enum mt_status mtx_queries_load(const char *path, struct mtx_query **out,
                                size_t *n, struct mt_error *err);
void mtx_queries_free(struct mtx_query *q, size_t n);

/* Called in input order, on the caller's thread, with each query's
 * result (NULL with 'st' and 'err' set when that query failed). The
 * callee must not free 'res'. */
typedef void (*mtx_search_batch_fn)(void *user, const struct mtx_query *q,
                                    size_t i,
                                    const struct mt_search_result *res,
                                    enum mt_status st,
                                    const struct mt_error *err);

struct mtx_search_batch_params {
    const struct mt_search_params *search; /* every query's settings (the
                                              vectors are the batch's);
                                              NULL: the defaults */
    unsigned jobs;                         /* threads; 0 = online CPUs */
    mtx_search_batch_fn on_result;         /* may be NULL */
    /* Called after each query is searched (from the worker threads, one
     * call at a time), with the queries searched so far and the batch's
     * size; keep it short. NULL: none. */
    void (*on_progress)(void *user, size_t done, size_t total);
    void *user;
};

/* No callbacks, the default search settings, online CPUs. */
void mtx_search_batch_default_params(struct mtx_search_batch_params *p);

/* Embeds every query with the retriever's embedder in batches (nothing
 * when it has none: each search then says what is missing), then
 * searches them all through 'ret' with p->jobs threads. A failing query
 * is reported to on_result and the batch goes on. Returns an error only
 * when the queries cannot be embedded or the threads cannot start. */
enum mt_status mtx_search_batch_run(struct mt_retriever *ret,
                                    struct mtx_query *q, size_t n,
                                    const struct mtx_search_batch_params *p,
                                    struct mt_error *err);

#endif
