/* Reranker backends: cross-encoder relevance scores for (query, document)
 * pairs from llama.cpp rank pooling (gguf:PATH, encoder_llama.c) or an
 * OpenAI-compatible /v1/rerank endpoint (openai:BASE_URL#MODEL,
 * rerank_openai.c), each a struct mtx_model (model/handle.h) whose ops
 * score; the front end (model/rerank.c) adds the call cache. The handle's
 * API is in include/medtrust/model.h. */
#ifndef MT_MODEL_RERANK_H
#define MT_MODEL_RERANK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "medtrust/model.h"
#include "model/handle.h"

/* Backends (the front end, mt_reranker_open, attaches the cache). */
enum mt_status mtx_reranker_open_openai(const char *url, const char *model,
                                        const struct mt_reranker_params *p,
                                        struct mt_reranker **out,
                                        struct mt_error *err);
enum mt_status mtx_reranker_open_llama(const char *path,
                                       const struct mt_reranker_params *p,
                                       struct mt_reranker **out,
                                       struct mt_error *err);

#endif
