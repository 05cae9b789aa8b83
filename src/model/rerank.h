/* Reranker backends: cross-encoder relevance scores for (query, document)
 * pairs from llama.cpp rank pooling (gguf:PATH, encoder_llama.c) or an
 * OpenAI-compatible /v1/rerank endpoint (openai:BASE_URL#MODEL,
 * rerank_openai.c) behind one vtable; the handle's API is in
 * include/medtrust/model.h. */
#ifndef MT_MODEL_RERANK_H
#define MT_MODEL_RERANK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/model.h"

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
