/* Reranker interface: cross-encoder relevance scores for (query, document)
 * pairs, from llama.cpp rank pooling (gguf:PATH) or an OpenAI-compatible
 * /v1/rerank endpoint (openai:BASE_URL#MODEL), with an optional cache. */
#ifndef MT_MODEL_RERANK_H
#define MT_MODEL_RERANK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/status.h"

struct mt_reranker;

struct mt_reranker_params {
    uint32_t threads;         /* llama.cpp threads, 0 = online CPUs */
    uint32_t n_ctx;           /* llama.cpp context, 0 = min(model, 4096) */
    double timeout_s;         /* per HTTP call (default 120) */
    uint32_t max_retries;     /* HTTP retries (default 4) */
    uint32_t max_concurrency; /* HTTP requests in flight (default 4) */
    const char *cache_path;   /* call cache file, NULL = none; copied */
};

/* Fills 'p' with the defaults (timeout from MEDTRUST_LLM_TIMEOUT). */
void mt_reranker_default_params(struct mt_reranker_params *p);

/* Backend operations; 'self' is the backend's state. */
struct mt_reranker_ops {
    const char *name; /* "gguf", "openai" */
    /* Writes one score per document into scores (higher = more relevant). */
    enum mt_status (*score)(void *self, struct mt_str query,
                            const struct mt_str *docs, size_t n, float *scores,
                            struct mt_error *err);
    const char *(*model)(const void *self);
    void (*free)(void *self);
};

/* Wraps backend state; takes ownership of 'self' (freed with ops->free
 * even on failure) and opens p->cache_path when set. */
enum mt_status mt_reranker_new_take(const struct mt_reranker_ops *ops,
                                    void *self,
                                    const struct mt_reranker_params *p,
                                    struct mt_reranker **out,
                                    struct mt_error *err);

/* Opens "openai:BASE_URL#MODEL" or "gguf:PATH"; 'p' may be NULL and is
 * copied. On success *out owns the handle (mt_reranker_free); on failure
 * *out is unchanged and 'err' names --reranker. */
enum mt_status mt_reranker_open(const char *spec,
                                const struct mt_reranker_params *p,
                                struct mt_reranker **out, struct mt_error *err);

/* Scores n documents against 'query' into scores[0..n). Thread-safe (the
 * gguf backend serialises calls). */
enum mt_status mt_reranker_score(struct mt_reranker *r, const char *query,
                                 const struct mt_str *docs, size_t n,
                                 float *scores, struct mt_error *err);

const char *mt_reranker_name(const struct mt_reranker *r);

/* The index's rerank callback (mt_index_rerank_fn) over a reranker given
 * as 'user': lets mt_index_search run its rerank stage through any
 * backend. Thread-safe as mt_reranker_score is. */
enum mt_status mt_reranker_index_fn(void *user, const char *query,
                                    const char *const *texts,
                                    const size_t *lens, size_t n, float *scores,
                                    struct mt_error *err);

/* Frees the handle; NULL is allowed. */
void mt_reranker_free(struct mt_reranker *r);

/* Backends. */
enum mt_status mt_reranker_open_openai(const char *url, const char *model,
                                       const struct mt_reranker_params *p,
                                       struct mt_reranker **out,
                                       struct mt_error *err);
enum mt_status mt_reranker_open_llama(const char *path,
                                      const struct mt_reranker_params *p,
                                      struct mt_reranker **out,
                                      struct mt_error *err);

#endif
