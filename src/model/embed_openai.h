/* OpenAI-compatible embedder (/v1/embeddings) behind src/model/embed.h. */
#ifndef MT_MODEL_EMBED_OPENAI_H
#define MT_MODEL_EMBED_OPENAI_H

#include "model/embed.h"

/* Opens an embedder for BASE_URL 'url' and 'model' (both copied). The
 * native dimension is learned from one probe request, so a bad URL, key or
 * model fails here with a message naming --embedder. On success *out
 * owns the handle (mt_embedder_close). Embedding calls are thread-safe.
 * Opened through mt_embedder_open ("openai:BASE_URL#MODEL"), it gets the
 * output shape and the call cache params asks for. */
enum mt_status mtx_embedder_open_openai(const char *url, const char *model,
                                        const struct mt_embedder_params *p,
                                        struct mt_embedder **out,
                                        struct mt_error *err);

#endif
